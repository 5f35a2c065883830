// SPDX-License-Identifier: MIT
/* Jobs: submission with dependencies, fences, waiting, status. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/sync_file.h>

#include <xf86drm.h>
#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#include <accel/accel.h>

#include "internal.h"

struct accel_job {
	struct accel_device *dev;
	uint32_t syncobj;		/* signalled when the job ends */
	uint64_t seq;
	uint32_t queue;
	unsigned int stream;		/* accel_stream() */
	/* Under dev->lock: once the job has ended, how it went. */
	bool ended;
	struct accel_job_status status;
};

/* What accel_job_wait() says of a job whose fence has this error. */
static int result_of(int fence_error)
{
	switch (-fence_error) {
	case 0:
		return ACCEL_OK;
	case EFAULT:
	case EIO:
	case EINVAL:
	case E2BIG:
	case ERANGE:
	case EOVERFLOW:
	case ENOSPC:
		return ACCEL_ERR_JOB_FAILED;
	case ETIMEDOUT:
		return ACCEL_ERR_JOB_HUNG;
	case ECANCELED:
		return ACCEL_ERR_CANCELED;
	case ENODEV:
		return ACCEL_ERR_DEVICE_LOST;
	case ENOLINK:
		return ACCEL_ERR_LINK_DOWN;
	case EACCES:
		return ACCEL_ERR_REMOTE_ACCESS;
	case EHOSTUNREACH:
		return ACCEL_ERR_NO_ROUTE;
	case ECONNABORTED:
		return ACCEL_ERR_PEER_ABORT;
	default:
		return ACCEL_ERR_IO;
	}
}

static uint32_t drm_priority(enum accel_priority priority)
{
	switch (priority) {
	case ACCEL_PRIORITY_NORMAL:
		return DRM_TESSERA_PRIORITY_NORMAL;
	case ACCEL_PRIORITY_LOW:
		return DRM_TESSERA_PRIORITY_LOW;
	case ACCEL_PRIORITY_HIGH:
		return DRM_TESSERA_PRIORITY_HIGH;
	default:
		return UINT32_MAX;
	}
}

/* A new syncobj of @dev holding the fence of sync file @fd. */
static int import_fence(struct accel_device *dev, int fd, uint32_t *syncobj)
{
	if (drmSyncobjCreate(dev->fd, 0, syncobj))
		return accel_error_from_errno(errno);
	if (drmSyncobjImportSyncFile(dev->fd, *syncobj, fd)) {
		int ret = accel_error_from_errno(errno);

		drmSyncobjDestroy(dev->fd, *syncobj);
		return ret;
	}
	return ACCEL_OK;
}

/* A syncobj of @dev for @job's fence; @job may be of another device. */
static int job_fence(struct accel_device *dev, struct accel_job *job,
		     uint32_t *syncobj, bool *temporary)
{
	int fd, ret;

	*temporary = job->dev != dev;
	if (!*temporary) {
		*syncobj = job->syncobj;
		return ACCEL_OK;
	}
	ret = accel_job_export_sync_file(job, &fd);
	if (ret)
		return ret;
	ret = import_fence(dev, fd, syncobj);
	close(fd);
	return ret;
}

/*
 * A job's syncs: what it waits for, then (last) its own syncobj, which the
 * driver signals when the job ends.
 */
struct deps {
	struct drm_tessera_sync syncs[ACCEL_MAX_DEPENDENCIES + 1];
	unsigned int count;
	uint32_t temporary[ACCEL_MAX_DEPENDENCIES];
	unsigned int temporaries;
};

/* The in-syncs for @opts' dependencies; release with deps_release(). */
static int deps_gather(struct accel_device *dev,
		       const struct accel_submit_opts *opts, struct deps *d)
{
	unsigned int i;
	bool temporary;
	int ret;

	for (i = 0; i < opts->wait_job_count; i++) {
		uint32_t *h = &d->syncs[d->count].handle;

		ret = job_fence(dev, opts->wait_jobs[i], h, &temporary);
		if (ret)
			return ret;
		d->count++;
		if (temporary)
			d->temporary[d->temporaries++] = *h;
	}
	for (i = 0; i < opts->wait_sync_file_count; i++) {
		uint32_t *h = &d->syncs[d->count].handle;

		ret = import_fence(dev, opts->wait_sync_files[i], h);
		if (ret)
			return ret;
		d->count++;
		d->temporary[d->temporaries++] = *h;
	}
	return ACCEL_OK;
}

/* The job holds its fences from SUBMIT on: the syncobjs can go. */
static void deps_release(struct accel_device *dev, struct deps *d)
{
	unsigned int i;

	for (i = 0; i < d->temporaries; i++)
		drmSyncobjDestroy(dev->fd, d->temporary[i]);
}

static int check_opts(struct accel_device *dev, struct accel_cmdbuf *cb,
		      const struct accel_submit_opts *opts)
{
	unsigned int i;

	if (opts->queue >= dev->num_queues)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "submit: queue %u; the chip has %u queues",
					 opts->queue, dev->num_queues);
	if (drm_priority(opts->priority) == UINT32_MAX)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "submit: priority %u is no enum accel_priority",
					 opts->priority);
	if ((opts->wait_job_count && !opts->wait_jobs) ||
	    (opts->wait_sync_file_count && !opts->wait_sync_files))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "submit: a dependency count without its array");
	if (opts->wait_job_count > ACCEL_MAX_DEPENDENCIES ||
	    opts->wait_sync_file_count >
	    ACCEL_MAX_DEPENDENCIES - opts->wait_job_count)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_TOO_LARGE,
					 "submit: %u jobs and %u sync files to wait for; at most %u in all",
					 opts->wait_job_count,
					 opts->wait_sync_file_count,
					 ACCEL_MAX_DEPENDENCIES);
	for (i = 0; i < opts->wait_job_count; i++)
		if (!opts->wait_jobs[i])
			return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
						 "submit: wait_jobs[%u] is NULL", i);
	return ACCEL_OK;
}

/* SUBMIT's list of the buffers @cb recorded, and the @trace buffer. */
static int buffer_list(struct accel_cmdbuf *cb, struct accel_buffer *trace,
		       struct drm_tessera_submit_bo **list)
{
	unsigned int i, n = accel_cmdbuf_buffer_count(cb);

	*list = NULL;
	if (!n && !trace)
		return ACCEL_OK;
	*list = calloc(n + !!trace, sizeof(**list));
	if (!*list)
		return ACCEL_ERR_NO_MEMORY;
	if (trace) {
		(*list)[n].handle = trace->handle;
		(*list)[n].flags = DRM_TESSERA_BO_WRITE;
	}
	for (i = 0; i < n; i++) {
		uint32_t use;

		accel_cmdbuf_buffer_at(cb, i, &(*list)[i].handle, &use);
		if (use & ACCEL_USE_EXPLICIT)
			use = ACCEL_USE_READ;
		(*list)[i].flags = (use & ACCEL_USE_READ ? DRM_TESSERA_BO_READ : 0) |
				   (use & ACCEL_USE_WRITE ? DRM_TESSERA_BO_WRITE : 0);
	}
	return ACCEL_OK;
}

/* A syncobj for a job's fence: one a destroyed job left, or a new one. */
static int syncobj_get(struct accel_device *dev, uint32_t *syncobj)
{
	bool pooled;

	pthread_mutex_lock(&dev->lock);
	pooled = dev->syncobjs_free > 0;
	if (pooled)
		*syncobj = dev->syncobjs[--dev->syncobjs_free];
	pthread_mutex_unlock(&dev->lock);
	if (!pooled && drmSyncobjCreate(dev->fd, 0, syncobj))
		return accel_error_from_errno(errno);
	return ACCEL_OK;
}

/*
 * @syncobj's job is gone: its next SUBMIT replaces the fence it holds, so
 * it may serve another job (a trace keeps a copy of a job's fence).
 */
static void syncobj_put(struct accel_device *dev, uint32_t syncobj)
{
	bool pooled;

	pthread_mutex_lock(&dev->lock);
	pooled = dev->syncobjs_free < ACCEL_SYNCOBJ_POOL;
	if (pooled)
		dev->syncobjs[dev->syncobjs_free++] = syncobj;
	pthread_mutex_unlock(&dev->lock);
	if (!pooled)
		drmSyncobjDestroy(dev->fd, syncobj);
}

/*
 * One job on its way to the driver: the SUBMIT struct and everything it
 * points at, and what to undo if the job is not queued.
 */
struct pending {
	struct drm_tessera_submit submit;
	struct drm_tessera_ext_trace trace_ext;
	struct drm_tessera_submit_bo *bos;
	struct accel_buffer *trace;
	struct deps deps;
	struct accel_job *job;
};

/* Fill @p->submit for the commands of @cb, run as @opts says. */
static int pending_prepare(struct accel_device *dev, struct accel_cmdbuf *cb,
			   const struct accel_submit_opts *opts,
			   struct pending *p)
{
	static const struct accel_submit_opts defaults;
	struct drm_tessera_submit *s = &p->submit;
	struct drm_tessera_sync *own;
	uint64_t offset;
	int ret;

	opts = opts ? opts : &defaults;
	if (accel_cmdbuf_device(cb) != dev)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_WRONG_DEVICE,
					 "submit: the command buffer belongs to another device");
	ret = check_opts(dev, cb, opts);
	if (ret)
		return ret;
	p->job = calloc(1, sizeof(*p->job));
	if (!p->job)
		return ACCEL_ERR_NO_MEMORY;
	ret = accel_cmdbuf_upload(cb, &s->cmdbuf_handle, &offset,
				  &s->cmdbuf_size);
	s->cmdbuf_offset = offset;
	if (!ret && accel_trace_of(dev)) {
		ret = accel_trace_buffer(dev, accel_cmdbuf_count(cb), &p->trace,
					 &p->trace_ext.size);
		p->trace_ext.base.name = DRM_TESSERA_EXT_TRACE;
		p->trace_ext.handle = p->trace ? p->trace->handle : 0;
		s->extensions = (uintptr_t)&p->trace_ext;
	}
	if (!ret)
		ret = buffer_list(cb, p->trace, &p->bos);
	if (!ret)
		ret = deps_gather(dev, opts, &p->deps);
	if (!ret)
		ret = syncobj_get(dev, &p->job->syncobj);
	if (ret)
		return ret;
	own = &p->deps.syncs[p->deps.count];
	own->handle = p->job->syncobj;
	own->flags = DRM_TESSERA_SYNC_SIGNAL;

	s->queue = opts->queue;
	s->priority = drm_priority(opts->priority);
	s->bo_count = accel_cmdbuf_buffer_count(cb) + !!p->trace;
	s->bos = (uintptr_t)p->bos;
	s->bo_stride = sizeof(*p->bos);
	s->sync_count = p->deps.count + 1;
	s->syncs = (uintptr_t)p->deps.syncs;
	s->sync_stride = sizeof(p->deps.syncs[0]);
	return ACCEL_OK;
}

/* The driver queued @p's job as @seq: hand it out as *@out. */
static void pending_queued(struct accel_device *dev, struct accel_cmdbuf *cb,
			   struct pending *p, uint64_t seq,
			   struct accel_job **out)
{
	p->job->dev = dev;
	p->job->seq = seq;
	p->job->queue = p->submit.queue;
	p->job->stream = accel_stream(p->submit.queue, p->submit.priority);
	accel_cmdbuf_submitted(cb, p->job->stream, seq);
	/* The job is queued: a trace that cannot keep it only misses it. */
	if (p->trace)
		accel_trace_submitted(dev, p->trace, seq, p->job->syncobj);
	p->trace = NULL;
	*out = p->job;
	p->job = NULL;
}

/* Free what @p holds; a job not handed out is undone. */
static void pending_release(struct accel_device *dev, struct pending *p)
{
	deps_release(dev, &p->deps);
	accel_buffer_destroy(p->trace);
	free(p->bos);
	if (p->job && p->job->syncobj)
		syncobj_put(dev, p->job->syncobj);
	free(p->job);
}

int accel_submit(struct accel_device *dev, struct accel_cmdbuf *cb,
		 const struct accel_submit_opts *opts, struct accel_job **out)
{
	struct pending p = { .bos = NULL };
	int ret;

	if (!dev || !cb || !out)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = pending_prepare(dev, cb, opts, &p);
	/* A file with its fill of queued jobs waits for room, never fails. */
	p.submit.flags = DRM_TESSERA_SUBMIT_WAIT_ROOM;
	if (!ret && drmIoctl(dev->fd, DRM_IOCTL_TESSERA_SUBMIT, &p.submit))
		ret = accel_error_from_errno(errno);
	if (!ret)
		pending_queued(dev, cb, &p, p.submit.seq, out);
	pending_release(dev, &p);
	return ret;
}

_Static_assert(ACCEL_MAX_BATCH == DRM_TESSERA_MAX_BATCH,
	       "accel_submit_many() makes one SUBMIT_BATCH");

static int check_many(struct accel_device *dev, unsigned int count,
		      struct accel_cmdbuf *const *cbs, struct accel_job **jobs)
{
	unsigned int i, j;

	if (!dev || !cbs || !jobs || !count)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (count > ACCEL_MAX_BATCH)
		return ACCEL_ERR_TOO_LARGE;
	for (i = 0; i < count; i++) {
		if (!cbs[i])
			return ACCEL_ERR_INVALID_ARGUMENT;
		for (j = 0; j < i; j++)
			if (cbs[j] == cbs[i])
				return accel_cmdbuf_fail(cbs[i], ACCEL_ERR_INVALID_ARGUMENT,
							 "submit: command buffer %u of the batch is also number %u",
							 i, j);
	}
	return ACCEL_OK;
}

int accel_submit_many(struct accel_device *dev, unsigned int count,
		      struct accel_cmdbuf *const *cbs,
		      const struct accel_submit_opts *const *opts,
		      struct accel_job **jobs)
{
	struct drm_tessera_submit_batch batch = {
		.flags = DRM_TESSERA_SUBMIT_WAIT_ROOM, .count = count,
	};
	struct drm_tessera_submit *submits = NULL;
	struct pending *p;
	unsigned int i;
	int ret;

	ret = check_many(dev, count, cbs, jobs);
	if (ret)
		return ret;
	p = calloc(count, sizeof(*p));
	submits = calloc(count, sizeof(*submits));
	if (!p || !submits) {
		ret = ACCEL_ERR_NO_MEMORY;
		goto out;
	}
	for (i = 0; i < count && !ret; i++) {
		ret = pending_prepare(dev, cbs[i], opts ? opts[i] : NULL, &p[i]);
		submits[i] = p[i].submit;
	}
	batch.jobs = (uintptr_t)submits;
	batch.stride = sizeof(*submits);
	if (!ret && drmIoctl(dev->fd, DRM_IOCTL_TESSERA_SUBMIT_BATCH, &batch)) {
		int err = errno;

		ret = accel_error_from_errno(err);
		if (batch.error_index < count)
			accel_cmdbuf_fail(cbs[batch.error_index], ret,
					  "submit: the driver refused job %u of the batch (%s); none was queued",
					  batch.error_index, strerror(err));
	}
	for (i = 0; i < count && !ret; i++)
		pending_queued(dev, cbs[i], &p[i], submits[i].seq, &jobs[i]);
out:
	for (i = 0; p && i < count; i++)
		pending_release(dev, &p[i]);
	free(submits);
	free(p);
	return ret;
}

/* An absolute CLOCK_MONOTONIC deadline @timeout_ns from now. */
static int64_t deadline_after(uint64_t timeout_ns)
{
	struct timespec now;
	uint64_t t;

	clock_gettime(CLOCK_MONOTONIC, &now);
	t = (uint64_t)now.tv_sec * 1000000000ull + now.tv_nsec;
	return timeout_ns > (uint64_t)INT64_MAX - t ? INT64_MAX :
	       (int64_t)(t + timeout_ns);
}

int accel_sync_wait(struct accel_device *dev, uint32_t syncobj,
		    uint64_t timeout_ns)
{
	int64_t deadline = deadline_after(timeout_ns);

	/*
	 * The kernel counts the timeout in jiffies, which can run ahead of
	 * CLOCK_MONOTONIC (in a VM under TCG, say): a wait that ends before
	 * the deadline by the clock waits again.
	 */
	while (drmSyncobjWait(dev->fd, &syncobj, 1, deadline, 0, NULL)) {
		if (errno != ETIME || deadline_after(0) >= deadline)
			return accel_error_from_errno(errno);
	}
	return ACCEL_OK;
}

static bool job_ended(struct accel_job *job, struct accel_job_status *status)
{
	bool ended;

	pthread_mutex_lock(&job->dev->lock);
	ended = job->ended;
	if (ended && status)
		*status = job->status;
	pthread_mutex_unlock(&job->dev->lock);
	return ended;
}

int accel_job_wait(struct accel_job *job, uint64_t timeout_ns)
{
	struct accel_job_status status;
	int ret;

	if (!job)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (!job_ended(job, NULL)) {
		ret = accel_sync_wait(job->dev, job->syncobj, timeout_ns);
		if (ret)
			return ret;
	}
	ret = accel_job_status(job, &status);
	if (ret)
		return ret;
	return status.state == ACCEL_JOB_PENDING ? ACCEL_ERR_IO : status.result;
}

static void status_from_driver(const struct drm_tessera_job_status *js,
			       struct accel_job_status *st)
{
	memset(st, 0, sizeof(*st));
	st->state = js->state == DRM_TESSERA_JOB_DONE ? ACCEL_JOB_DONE :
		    js->state == DRM_TESSERA_JOB_FAILED ? ACCEL_JOB_FAILED :
		    ACCEL_JOB_PENDING;
	st->fence_error = js->fence_error;
	st->result = st->state == ACCEL_JOB_PENDING ? ACCEL_OK :
		     result_of(js->fence_error);
	/* Stopped by a chip reset, not canceled for a ban: a chip error. */
	if (js->error == TSR_ERR_ABORTED)
		st->result = ACCEL_ERR_JOB_FAILED;
	st->chip_error = js->error;
	st->chip_error_name = accel_chip_error_name(js->error);
	st->failed_command = js->failed_cmd;
	st->queue = js->queue;
	st->fault_va = js->fault_va;
	st->start_cycle = js->start_cycle;
	st->end_cycle = js->end_cycle;
	st->mxu_cycles = js->mxu_cycles;
	st->vpu_cycles = js->vpu_cycles;
	st->dma_cycles = js->dma_cycles;
	st->duration_ns = js->duration_ns;
}

/*
 * How a job went, from its fence alone: for a job the driver no longer
 * keeps the status of.  A sync file tells the fence's error.
 */
static int status_from_fence(struct accel_job *job, struct accel_job_status *st)
{
	struct sync_file_info info = { .num_fences = 0 };
	int fd, ret;

	ret = accel_job_export_sync_file(job, &fd);
	if (ret)
		return ret;
	ret = drmIoctl(fd, SYNC_IOC_FILE_INFO, &info) ?
	      accel_error_from_errno(errno) : ACCEL_OK;
	close(fd);
	if (ret)
		return ret;
	memset(st, 0, sizeof(*st));
	st->state = info.status > 0 ? ACCEL_JOB_DONE :
		    info.status < 0 ? ACCEL_JOB_FAILED : ACCEL_JOB_PENDING;
	st->fence_error = info.status < 0 ? info.status : 0;
	st->result = result_of(st->fence_error);
	st->chip_error_name = accel_chip_error_name(TSR_ERR_NONE);
	st->failed_command = TSR_NO_COMMAND;
	st->queue = job->queue;
	return ACCEL_OK;
}

int accel_job_status(struct accel_job *job, struct accel_job_status *status)
{
	struct drm_tessera_job_status js = { 0 };
	int ret = ACCEL_OK;

	if (!job || !status)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (job_ended(job, status))
		return ACCEL_OK;
	js.seq = job->seq;
	if (!drmIoctl(job->dev->fd, DRM_IOCTL_TESSERA_JOB_STATUS, &js))
		status_from_driver(&js, status);
	else if (errno == ENOENT)
		ret = status_from_fence(job, status);
	else
		ret = accel_error_from_errno(errno);
	if (ret || status->state == ACCEL_JOB_PENDING)
		return ret;
	pthread_mutex_lock(&job->dev->lock);
	job->ended = true;
	job->status = *status;
	job->dev->ended_seqs[job->dev->ended_next++ % ACCEL_ENDED_SEQS] = job->seq;
	pthread_mutex_unlock(&job->dev->lock);
	/* Its stream's jobs before it have ended too (cmd_arena.c). */
	accel_arena_ended(job->dev, job->stream, job->seq);
	return ACCEL_OK;
}

static bool seen_ended(struct accel_device *dev, uint64_t seq)
{
	bool seen = false;
	unsigned int i;

	pthread_mutex_lock(&dev->lock);
	for (i = 0; i < ACCEL_ENDED_SEQS && !seen; i++)
		seen = dev->ended_seqs[i] == seq;
	pthread_mutex_unlock(&dev->lock);
	return seen;
}

bool accel_job_may_be_pending(struct accel_device *dev, uint64_t seq)
{
	struct drm_tessera_job_status js = { .seq = seq };

	/* A job whose end its caller has read (its collective's, say). */
	if (seen_ended(dev, seq))
		return false;
	if (drmIoctl(dev->fd, DRM_IOCTL_TESSERA_JOB_STATUS, &js))
		return true;
	return js.state == DRM_TESSERA_JOB_PENDING;
}

int accel_job_export_sync_file(struct accel_job *job, int *fd)
{
	if (!job || !fd)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (drmSyncobjExportSyncFile(job->dev->fd, job->syncobj, fd))
		return accel_error_from_errno(errno);
	return ACCEL_OK;
}

void accel_job_destroy(struct accel_job *job)
{
	if (!job)
		return;
	syncobj_put(job->dev, job->syncobj);
	free(job);
}
