// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera job submission: the SUBMIT and JOB_STATUS ioctls and a job's
 * lifetime.
 *
 * SUBMIT copies its arrays in, checks everything, takes references on the
 * buffers and their mappings, adds syncobj and implicit dependencies and
 * pushes the job to the file's entity for the queue (tessera_sched.c).  A
 * job is reference-counted: the scheduler may run and free its share as
 * soon as it is pushed, and SUBMIT holds its own until it is done.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/capability.h>
#include <linux/dma-resv.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_print.h>
#include <drm/drm_syncobj.h>
#include <drm/tessera_accel.h>

#include "tessera_gem.h"
#include "tessera_hw.h"
#include "tessera_job.h"
#include "tessera_trace.h"

/* ------------------------------------------------------------ lifetime */

static void tessera_job_release(struct kref *ref)
{
	struct tessera_job *job = container_of(ref, struct tessera_job, ref);
	unsigned int i;

	for (i = 0; i < job->bo_count; i++) {
		if (job->maps[i])
			tessera_mapping_put(job->maps[i]);
		if (job->bos[i])
			drm_gem_object_put(job->bos[i]);
	}
	kvfree(job->bos);
	if (job->hw_fence)
		dma_fence_put(job->hw_fence);
	kfree(job->prealloc);
	atomic_dec(&job->ctx->jobs_queued);
	tessera_ctx_put(job->ctx);
	kfree(job);
}

void tessera_job_put(struct tessera_job *job)
{
	kref_put(&job->ref, tessera_job_release);
}

/* A job of @tfile's context, within the file's bound on queued jobs. */
static struct tessera_job *tessera_job_create(struct tessera_file *tfile,
					      u32 queue)
{
	struct tessera_device *tdev = tfile->tdev;
	struct tessera_ctx *ctx = tfile->ctx;
	struct tessera_job *job;

	if (atomic_inc_return(&ctx->jobs_queued) > tessera_max_jobs_per_file) {
		atomic_dec(&ctx->jobs_queued);
		drm_dbg(&tdev->drm, "SUBMIT: %u jobs of context %u are queued already (max_jobs_per_file)\n",
			tessera_max_jobs_per_file, ctx->id);
		return ERR_PTR(-EBUSY);
	}
	job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);
	if (!job) {
		atomic_dec(&ctx->jobs_queued);
		return ERR_PTR(-ENOMEM);
	}
	kref_init(&job->ref);
	job->tdev = tdev;
	job->ctx = tessera_ctx_get(ctx);
	job->q = &tdev->queues[queue];
	INIT_LIST_HEAD(&job->link);
	job->prealloc = kzalloc(sizeof(*job->prealloc), GFP_KERNEL_ACCOUNT);
	if (!job->prealloc) {
		tessera_job_put(job);
		return ERR_PTR(-ENOMEM);
	}
	return job;
}

/* ------------------------------------------------------------- checks */

static int tessera_submit_check_trace(struct tessera_device *tdev,
				      const struct drm_tessera_submit *args)
{
	struct drm_device *drm = &tdev->drm;

	if (!(args->flags & DRM_TESSERA_SUBMIT_TRACE)) {
		if (args->trace_handle || args->trace_size || args->trace_offset) {
			drm_dbg(drm, "SUBMIT: trace fields set without DRM_TESSERA_SUBMIT_TRACE\n");
			return -EINVAL;
		}
		return 0;
	}
	if (args->trace_size < sizeof(struct tsr_trace_header) ||
	    args->trace_size > TSR_TRACE_MAX_SIZE ||
	    !IS_ALIGNED(args->trace_size, 8) ||
	    !IS_ALIGNED(args->trace_offset, 8)) {
		drm_dbg(drm, "SUBMIT: trace offset %llu size %u: an 8-aligned offset and a size that is a multiple of 8 from %zu to %u\n",
			args->trace_offset, args->trace_size,
			sizeof(struct tsr_trace_header), TSR_TRACE_MAX_SIZE);
		return -EINVAL;
	}
	return 0;
}

static int tessera_submit_check(struct tessera_device *tdev,
				const struct drm_tessera_submit *args)
{
	struct drm_device *drm = &tdev->drm;

	if (args->flags & ~DRM_TESSERA_SUBMIT_FLAGS_ALL) {
		drm_dbg(drm, "SUBMIT: unknown flags 0x%x\n", args->flags);
		return -EINVAL;
	}
	if (args->pad || args->out_sync.flags) {
		drm_dbg(drm, "SUBMIT: reserved fields must be zero\n");
		return -EINVAL;
	}
	if (!(args->flags & DRM_TESSERA_SUBMIT_OUT_SYNC) &&
	    (args->out_sync.handle || args->out_sync.point)) {
		drm_dbg(drm, "SUBMIT: out_sync set without DRM_TESSERA_SUBMIT_OUT_SYNC\n");
		return -EINVAL;
	}
	if (args->queue >= tdev->num_queues) {
		drm_dbg(drm, "SUBMIT: queue %u, the chip has %u\n", args->queue,
			tdev->num_queues);
		return -EINVAL;
	}
	if (args->priority >= TESSERA_PRIORITIES) {
		drm_dbg(drm, "SUBMIT: unknown priority %u\n", args->priority);
		return -EINVAL;
	}
	if (args->priority == DRM_TESSERA_PRIORITY_HIGH &&
	    !capable(CAP_SYS_NICE)) {
		drm_dbg(drm, "SUBMIT: high priority needs CAP_SYS_NICE\n");
		return -EPERM;
	}
	if (!args->cmdbuf_size || !IS_ALIGNED(args->cmdbuf_size, 8) ||
	    args->cmdbuf_size > DRM_TESSERA_MAX_CMDBUF_SIZE ||
	    !IS_ALIGNED(args->cmdbuf_offset, 8)) {
		drm_dbg(drm, "SUBMIT: command buffer offset %llu size %u\n",
			args->cmdbuf_offset, args->cmdbuf_size);
		return -EINVAL;
	}
	if (args->bo_count > DRM_TESSERA_MAX_BOS ||
	    args->in_sync_count > DRM_TESSERA_MAX_SYNCS) {
		drm_dbg(drm, "SUBMIT: %u buffers, %u syncs: too many\n",
			args->bo_count, args->in_sync_count);
		return -EINVAL;
	}
	return tessera_submit_check_trace(tdev, args);
}

/**
 * struct tessera_submit_arrays - SUBMIT's arrays, copied from user space
 * @bos: args->bo_count buffer entries
 * @syncs: args->in_sync_count in-syncs
 *
 * Copied before drm_dev_enter(): a copy from user space may wait on a
 * page fault for as long as user space likes, and must not hold off an
 * unplug meanwhile.
 */
struct tessera_submit_arrays {
	struct drm_tessera_submit_bo *bos;
	struct drm_tessera_sync *syncs;
};

static void tessera_submit_arrays_free(struct tessera_submit_arrays *a)
{
	kvfree(a->bos);
	kvfree(a->syncs);
}

static int tessera_submit_arrays_copy(struct tessera_submit_arrays *a,
				      const struct drm_tessera_submit *args)
{
	void *bos, *syncs;

	bos = vmemdup_array_user(u64_to_user_ptr(args->bos), args->bo_count,
				 sizeof(*a->bos));
	if (IS_ERR(bos))
		return PTR_ERR(bos);
	syncs = vmemdup_array_user(u64_to_user_ptr(args->in_syncs),
				   args->in_sync_count, sizeof(*a->syncs));
	if (IS_ERR(syncs)) {
		kvfree(bos);
		return PTR_ERR(syncs);
	}
	a->bos = bos;
	a->syncs = syncs;
	return 0;
}

/* ------------------------------------------------------------ buffers */

/* Look up the command buffer and the listed buffers with their mappings. */
static int tessera_submit_lookup_bos(struct tessera_job *job,
				     struct drm_file *file,
				     const struct drm_tessera_submit *args,
				     const struct drm_tessera_submit_bo *ubos)
{
	struct drm_device *drm = &job->tdev->drm;
	u32 n = args->bo_count, i, cmd = 0;
	bool cmd_listed = false;

	for (i = 0; i < n; i++) {
		if (!ubos[i].flags ||
		    ubos[i].flags & ~(DRM_TESSERA_BO_READ | DRM_TESSERA_BO_WRITE)) {
			drm_dbg(drm, "SUBMIT: buffer %u: bad flags 0x%x\n", i,
				ubos[i].flags);
			return -EINVAL;
		}
		if (ubos[i].handle == args->cmdbuf_handle) {
			cmd_listed = true;
			cmd = i;
		}
	}

	/* The command buffer is entry 0 unless the list names it. */
	job->bos = kvcalloc(n + !cmd_listed, sizeof(*job->bos) +
			    sizeof(*job->maps) + sizeof(*job->bo_write),
			    GFP_KERNEL_ACCOUNT);
	if (!job->bos)
		return -ENOMEM;
	job->bo_count = n + !cmd_listed;
	job->maps = (struct tessera_mapping **)(job->bos + job->bo_count);
	job->bo_write = (bool *)(job->maps + job->bo_count);

	for (i = 0; i < job->bo_count; i++) {
		u32 handle = cmd_listed ? ubos[i].handle :
			     i ? ubos[i - 1].handle : args->cmdbuf_handle;
		u32 flags = cmd_listed ? ubos[i].flags :
			    i ? ubos[i - 1].flags : DRM_TESSERA_BO_READ;

		job->bos[i] = drm_gem_object_lookup(file, handle);
		if (!job->bos[i]) {
			drm_dbg(drm, "SUBMIT: no buffer with handle %u\n", handle);
			return -ENOENT;
		}
		job->bo_write[i] = flags & DRM_TESSERA_BO_WRITE;
		/* No mapping: the handle was closed since the lookup. */
		job->maps[i] = tessera_mapping_get(to_tessera_bo(job->bos[i]),
						   job->ctx);
		if (!job->maps[i]) {
			drm_dbg(drm, "SUBMIT: handle %u was closed\n", handle);
			return -ENOENT;
		}
	}

	/* The commands must lie inside the command buffer. */
	if (args->cmdbuf_offset > job->bos[cmd]->size ||
	    args->cmdbuf_size > job->bos[cmd]->size - args->cmdbuf_offset) {
		drm_dbg(drm, "SUBMIT: commands at %llu+%u outside a %zu-byte buffer\n",
			args->cmdbuf_offset, args->cmdbuf_size,
			job->bos[cmd]->size);
		return -EINVAL;
	}
	job->cmdbuf_va = job->maps[cmd]->va.start + args->cmdbuf_offset;
	job->cmdbuf_size = args->cmdbuf_size;
	return 0;
}

/*
 * Find the trace's buffer among the listed ones (which lookup_bos has
 * checked and taken): it must be written, and hold the whole trace.
 */
static int tessera_submit_lookup_trace(struct tessera_job *job,
				       const struct drm_tessera_submit *args,
				       const struct drm_tessera_submit_bo *ubos)
{
	struct drm_device *drm = &job->tdev->drm;
	u32 first = job->bo_count - args->bo_count, i;
	struct drm_gem_object *bo;

	if (!(args->flags & DRM_TESSERA_SUBMIT_TRACE))
		return 0;
	if (!(tessera_reg_read(job->tdev, TSR_REG_CAPS) & TSR_CAP_TRACE)) {
		drm_dbg(drm, "SUBMIT: the chip writes no traces (no TSR_CAP_TRACE)\n");
		return -EOPNOTSUPP;
	}
	for (i = 0; i < args->bo_count; i++)
		if (ubos[i].handle == args->trace_handle)
			break;
	if (i == args->bo_count || !(ubos[i].flags & DRM_TESSERA_BO_WRITE)) {
		drm_dbg(drm, "SUBMIT: the trace's buffer (handle %u) must be listed in bos with DRM_TESSERA_BO_WRITE\n",
			args->trace_handle);
		return -EINVAL;
	}
	bo = job->bos[first + i];
	if (to_tessera_bo(bo)->device_read_only) {
		drm_dbg(drm, "SUBMIT: the trace's buffer (handle %u) is read-only to the device\n",
			args->trace_handle);
		return -EINVAL;
	}
	if (args->trace_offset > bo->size ||
	    args->trace_size > bo->size - args->trace_offset) {
		drm_dbg(drm, "SUBMIT: trace at %llu+%u outside a %zu-byte buffer\n",
			args->trace_offset, args->trace_size, bo->size);
		return -EINVAL;
	}
	job->trace_va = job->maps[first + i]->va.start + args->trace_offset;
	job->trace_size = args->trace_size;
	return 0;
}

/* Lock the job's buffers and depend on the fences already on them. */
static int tessera_submit_reserve(struct tessera_job *job,
				  struct ww_acquire_ctx *acquire)
{
	unsigned int i;
	int ret;

	ret = drm_gem_lock_reservations(job->bos, job->bo_count, acquire);
	if (ret == -EALREADY) {
		drm_dbg(&job->tdev->drm, "SUBMIT: a buffer is listed twice\n");
		return -EINVAL;
	}
	if (ret)
		return ret;
	for (i = 0; i < job->bo_count; i++) {
		ret = dma_resv_reserve_fences(job->bos[i]->resv, 1);
		if (!ret)
			ret = drm_sched_job_add_implicit_dependencies(&job->base,
								      job->bos[i],
								      job->bo_write[i]);
		if (ret) {
			drm_gem_unlock_reservations(job->bos, job->bo_count,
						    acquire);
			return ret;
		}
	}
	return 0;
}

/* -------------------------------------------------------------- syncs */

static int tessera_submit_add_in_syncs(struct tessera_job *job,
				       struct drm_file *file,
				       const struct drm_tessera_submit *args,
				       const struct drm_tessera_sync *syncs)
{
	struct dma_fence *fence;
	u32 i;
	int ret;

	for (i = 0; i < args->in_sync_count; i++) {
		if (syncs[i].flags) {
			drm_dbg(&job->tdev->drm, "SUBMIT: in_syncs[%u].flags 0x%x\n",
				i, syncs[i].flags);
			return -EINVAL;
		}
		/* Not drm_sched_job_add_syncobj_dependency(): its point is 32-bit. */
		ret = drm_syncobj_find_fence(file, syncs[i].handle,
					     syncs[i].point, 0, &fence);
		if (!ret)
			ret = drm_sched_job_add_dependency(&job->base, fence);
		if (ret) {
			drm_dbg(&job->tdev->drm, "SUBMIT: in_syncs[%u] (handle %u point %llu): %d\n",
				i, syncs[i].handle, syncs[i].point, ret);
			return ret;
		}
	}
	return 0;
}

/**
 * struct tessera_out_sync - where SUBMIT publishes the job's fence
 * @syncobj: the syncobj, or NULL
 * @chain: the timeline point's chain node, when a point is named
 * @point: the timeline point
 */
struct tessera_out_sync {
	struct drm_syncobj *syncobj;
	struct dma_fence_chain *chain;
	u64 point;
};

static int tessera_out_sync_get(struct tessera_out_sync *out,
				struct drm_file *file,
				const struct drm_tessera_submit *args)
{
	if (!(args->flags & DRM_TESSERA_SUBMIT_OUT_SYNC))
		return 0;
	out->syncobj = drm_syncobj_find(file, args->out_sync.handle);
	if (!out->syncobj) {
		drm_dbg(file->minor->dev, "SUBMIT: no syncobj with handle %u\n",
			args->out_sync.handle);
		return -ENOENT;
	}
	out->point = args->out_sync.point;
	if (out->point) {
		out->chain = dma_fence_chain_alloc();
		if (!out->chain)
			return -ENOMEM;
	}
	return 0;
}

/* Publish @fence, or (with a NULL @fence) just drop what was prepared. */
static void tessera_out_sync_put(struct tessera_out_sync *out,
				 struct dma_fence *fence)
{
	if (!out->syncobj)
		return;
	if (fence && out->chain)
		drm_syncobj_add_point(out->syncobj, out->chain, fence, out->point);
	else if (fence)
		drm_syncobj_replace_fence(out->syncobj, fence);
	else
		dma_fence_chain_free(out->chain);
	drm_syncobj_put(out->syncobj);
}

/* ------------------------------------------------------------- SUBMIT */

/*
 * Give @job its number, fence its buffers and push it.  Nothing fails from
 * here on.  The scheduler owns a reference from the push; the caller keeps
 * its own.
 */
static struct dma_fence *tessera_submit_push(struct tessera_job *job,
					     u32 queue)
{
	struct tessera_ctx *ctx = job->ctx;
	struct dma_fence *finished;
	unsigned int i;

	spin_lock_irq(&ctx->status_lock);
	job->seq = ctx->next_seq++;
	*tessera_job_status_slot(ctx, job->seq) = (struct drm_tessera_job_status) {
		.seq = job->seq,
		.state = DRM_TESSERA_JOB_PENDING,
		.failed_cmd = TSR_NO_COMMAND,
		.queue = queue,
	};
	spin_unlock_irq(&ctx->status_lock);

	drm_sched_job_arm(&job->base);
	finished = dma_fence_get(&job->base.s_fence->finished);
	for (i = 0; i < job->bo_count; i++)
		dma_resv_add_fence(job->bos[i]->resv, finished,
				   job->bo_write[i] ? DMA_RESV_USAGE_WRITE :
						      DMA_RESV_USAGE_READ);
	trace_tessera_job_submit(job);
	kref_get(&job->ref);
	drm_sched_entity_push_job(&job->base);
	tessera_count(job->tdev, TESSERA_CNT_JOBS_SUBMITTED);
	return finished;
}

/*
 * debugfs submit_wait_done: return only once the job has run and the
 * scheduler has had the chance to free it, so that any use of the job
 * after the push touches freed memory (which KASAN reports).
 */
static void tessera_submit_wait_done(struct drm_gpu_scheduler *sched,
				     struct dma_fence *finished)
{
	if (dma_fence_wait(finished, true))
		return;
	/* free_job is queued right after the finished fence signals. */
	flush_work(&sched->work_free_job);
	flush_work(&sched->work_free_job);
}

int tessera_ioctl_submit(struct drm_device *drm, void *data,
			 struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct tessera_file *tfile = file->driver_priv;
	struct drm_tessera_submit *args = data;
	struct tessera_submit_arrays arrays;
	struct tessera_out_sync out = { };
	struct drm_sched_entity *entity;
	struct ww_acquire_ctx acquire;
	struct dma_fence *finished;
	struct tessera_job *job;
	int ret, idx;

	ret = tessera_submit_check(tdev, args);
	if (ret)
		return ret;
	if (READ_ONCE(tfile->ctx->banned)) {
		drm_dbg(drm, "SUBMIT: context %u is banned\n", tfile->ctx->id);
		return -ECANCELED;
	}
	ret = tessera_submit_arrays_copy(&arrays, args);
	if (ret)
		return ret;
	if (!drm_dev_enter(drm, &idx)) {
		ret = -ENODEV;
		goto out_free;
	}

	job = tessera_job_create(tfile, args->queue);
	if (IS_ERR(job)) {
		ret = PTR_ERR(job);
		goto out_exit;
	}
	ret = tessera_submit_lookup_bos(job, file, args, arrays.bos) ?:
	      tessera_submit_lookup_trace(job, args, arrays.bos) ?:
	      tessera_out_sync_get(&out, file, args);
	if (ret)
		goto out_put;

	mutex_lock(&tfile->lock);
	entity = tessera_file_entity(tfile, args->queue, args->priority);
	if (IS_ERR(entity)) {
		ret = PTR_ERR(entity);
		goto out_unlock;
	}
	ret = drm_sched_job_init(&job->base, entity, 1, tfile->ctx,
				 file->client_id);
	if (ret)
		goto out_unlock;
	ret = tessera_submit_add_in_syncs(job, file, args, arrays.syncs) ?:
	      tessera_submit_reserve(job, &acquire);
	if (!ret && should_fail(&tessera_fail_submit, 1)) {
		drm_dbg(drm, "SUBMIT: injected failure\n");
		drm_gem_unlock_reservations(job->bos, job->bo_count, &acquire);
		ret = -ENOMEM;
	}
	if (ret) {
		drm_sched_job_cleanup(&job->base);
		goto out_unlock;
	}

	finished = tessera_submit_push(job, args->queue);
	drm_gem_unlock_reservations(job->bos, job->bo_count, &acquire);
	mutex_unlock(&tfile->lock);

	tessera_out_sync_put(&out, finished);
	if (tessera_inject(&tdev->inject_submit_wait_done))
		tessera_submit_wait_done(&tdev->queues[args->queue].sched,
					 finished);
	dma_fence_put(finished);
	args->seq = job->seq;
	tessera_job_put(job);
	drm_dev_exit(idx);
	tessera_submit_arrays_free(&arrays);
	return 0;

out_unlock:
	mutex_unlock(&tfile->lock);
out_put:
	tessera_out_sync_put(&out, NULL);
	tessera_job_put(job);
out_exit:
	drm_dev_exit(idx);
out_free:
	tessera_submit_arrays_free(&arrays);
	return ret;
}

int tessera_ioctl_job_status(struct drm_device *drm, void *data,
			     struct drm_file *file)
{
	struct tessera_file *tfile = file->driver_priv;
	struct drm_tessera_job_status *args = data;
	struct tessera_ctx *ctx = tfile->ctx;
	u64 seq = args->seq;
	int ret = 0;

	if (args->flags) {
		drm_dbg(drm, "JOB_STATUS: flags 0x%x must be zero\n", args->flags);
		return -EINVAL;
	}
	spin_lock_irq(&ctx->status_lock);
	if (!seq || seq >= ctx->next_seq) {
		ret = -EINVAL;
	} else if (tessera_job_status_slot(ctx, seq)->seq != seq) {
		ret = -ENOENT;
	} else {
		*args = *tessera_job_status_slot(ctx, seq);
		args->flags = 0;
	}
	spin_unlock_irq(&ctx->status_lock);
	if (ret == -EINVAL)
		drm_dbg(drm, "JOB_STATUS: job %llu was never submitted\n", seq);
	return ret;
}
