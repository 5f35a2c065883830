// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera job submission: the SUBMIT ioctl, one drm_sched scheduler per
 * hardware queue, the rings the chip reads, completion and job status.
 *
 * A job's life: SUBMIT checks everything, takes references on its buffers
 * and their mappings, adds syncobj and implicit dependencies and pushes the
 * job to the file's entity for the queue.  Once its dependencies signal,
 * run_job writes a descriptor to the ring and rings the doorbell.  The chip
 * writes the job's completion record into the context's record area and
 * the job's fence number to the queue's fence word, then raises the queue's
 * interrupt; the handler retires every job up to that number, in order.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/capability.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <drm/drm_syncobj.h>
#include <drm/tessera_accel.h>

#include "tessera_gem.h"
#include "tessera_hw.h"
#include "tessera_job.h"
#include "tessera_mmu.h"
#include "tessera_reset.h"

static inline struct tessera_job *to_tessera_job(struct drm_sched_job *job)
{
	return container_of(job, struct tessera_job, base);
}

/* ------------------------------------------------------ hardware fences */

static const char *tessera_fence_driver_name(struct dma_fence *fence)
{
	return DRIVER_NAME;
}

static const char *tessera_fence_timeline_name(struct dma_fence *fence)
{
	struct tessera_queue *q = container_of(fence->lock, struct tessera_queue,
					       fence_lock);

	return q->name;
}

static const struct dma_fence_ops tessera_fence_ops = {
	.get_driver_name = tessera_fence_driver_name,
	.get_timeline_name = tessera_fence_timeline_name,
};

/* ----------------------------------------------------------- job status */

static struct drm_tessera_job_status *history_slot(struct tessera_ctx *ctx,
						   u64 seq)
{
	return &ctx->history[seq % DRM_TESSERA_JOB_HISTORY];
}

/* Record how job @job ended; @rec is its completion record, if any. */
static void job_record_end(struct tessera_job *job,
			   const struct tsr_completion *rec, u32 hw_error,
			   int err)
{
	struct tessera_ctx *ctx = job->ctx;
	struct drm_tessera_job_status *st;
	unsigned long flags;
	u64 ns = 0;

	if (job->start)
		ns = ktime_to_ns(ktime_sub(ktime_get(), job->start));

	spin_lock_irqsave(&ctx->status_lock, flags);
	st = history_slot(ctx, job->seq);
	if (st->seq == job->seq) {
		st->state = err ? DRM_TESSERA_JOB_FAILED : DRM_TESSERA_JOB_DONE;
		st->error = hw_error;
		st->fence_error = err;
		st->failed_cmd = rec ? rec->failed_cmd : TSR_NO_COMMAND;
		st->fault_va = rec ? rec->fault_va : 0;
		st->start_cycle = rec ? rec->start_cycle : 0;
		st->end_cycle = rec ? rec->end_cycle : 0;
		st->mxu_cycles = rec ? rec->mxu_cycles : 0;
		st->vpu_cycles = rec ? rec->vpu_cycles : 0;
		st->dma_cycles = rec ? rec->dma_cycles : 0;
		st->duration_ns = ns;
	}
	spin_unlock_irqrestore(&ctx->status_lock, flags);

	atomic64_add(ns, &ctx->engine_ns[job->q->index]);
	atomic64_inc(&ctx->jobs);
	tessera_count(job->tdev, err ? TESSERA_CNT_JOBS_FAILED :
		      TESSERA_CNT_JOBS_COMPLETED);
}

/* The errno a job's fence carries for a chip error code. */
static int tsr_error_to_errno(u32 error)
{
	switch (error) {
	case TSR_ERR_NONE:
		return 0;
	case TSR_ERR_MMU_UNMAPPED:
	case TSR_ERR_MMU_PERMISSION:
		return -EFAULT;
	case TSR_ERR_DMA:
	case TSR_ERR_ECC:
		return -EIO;
	case TSR_ERR_ABORTED:
		return -ECANCELED;
	case TSR_ERR_TOO_LARGE:
		return -E2BIG;
	default:
		return -EINVAL;
	}
}

static struct tsr_completion *job_record(struct tessera_job *job)
{
	return job->ctx->records[job->q->index] +
	       job->slot * TESSERA_RECORD_STRIDE;
}

static bool job_aborted(struct tessera_job *job)
{
	const struct tsr_completion *rec = job_record(job);

	return READ_ONCE(rec->status) == TSR_JOB_STATUS_ERROR &&
	       READ_ONCE(rec->error) == TSR_ERR_ABORTED &&
	       READ_ONCE(rec->fence) == job->hw_fence->seqno;
}

/* Retire @job, whose fence the chip has written; q->lock held. */
static void job_retire(struct tessera_job *job)
{
	struct tsr_completion rec;
	u32 hw_error;
	int err;

	memcpy(&rec, job_record(job), sizeof(rec));
	if (rec.status == TSR_JOB_STATUS_DONE && rec.fence == job->hw_fence->seqno) {
		hw_error = TSR_ERR_NONE;
	} else if (rec.status == TSR_JOB_STATUS_ERROR &&
		   rec.fence == job->hw_fence->seqno) {
		hw_error = rec.error;
	} else {
		/*
		 * No record: the chip could not read the descriptor or write
		 * the record, both system-memory transfers.
		 */
		hw_error = TSR_ERR_DMA;
		memset(&rec, 0, sizeof(rec));
		rec.failed_cmd = TSR_NO_COMMAND;
	}
	err = tsr_error_to_errno(hw_error);
	if (err == -EFAULT) {
		tessera_count(job->tdev, TESSERA_CNT_MMU_FAULTS);
		tessera_ctx_fault(job->ctx);
	}
	job_record_end(job, &rec, hw_error, err);
	if (err)
		dma_fence_set_error(job->hw_fence, err);
	dma_fence_signal(job->hw_fence);
}

/**
 * tessera_queue_reap() - retire every job the chip has finished
 * @q: the queue
 * @use_head: also trust the queue's HEAD register, which passes a job even
 *	when the chip could not write its fence (a descriptor it failed to
 *	read); not after a reset, which zeroes HEAD
 *
 * Called from the queue's interrupt, and by recovery to find jobs whose
 * interrupt was lost or that finished just before a reset.  Jobs retire in
 * ring order.
 */
void tessera_queue_reap(struct tessera_queue *q, bool use_head)
{
	struct tessera_job *job, *tmp;
	unsigned long flags;
	u32 passed = 0;
	u64 done;

	spin_lock_irqsave(&q->lock, flags);
	done = le64_to_cpu(READ_ONCE(*q->fence_cpu));
	job = list_first_entry_or_null(&q->inflight, struct tessera_job, link);
	if (job && use_head) {
		u32 head = tessera_reg_read(q->tdev, TSR_QUEUE_BASE(q->index) +
					    TSR_QREG_HEAD);

		/* Fewer jobs than slots are in flight: no ambiguity. */
		if (head < TESSERA_RING_SIZE)
			passed = (head - job->slot) % TESSERA_RING_SIZE;
	}
	list_for_each_entry_safe(job, tmp, &q->inflight, link) {
		if (!passed && job->hw_fence->seqno > done)
			break;
		/* The chip gave up on it for a fatal error: recovery re-runs it. */
		if (job_aborted(job))
			break;
		if (passed)
			passed--;
		list_del_init(&job->link);
		job_retire(job);
	}
	spin_unlock_irqrestore(&q->lock, flags);
}

/**
 * tessera_queue_cancel() - fail every job on the ring without running it
 * @q: the queue, whose hardware is stopped or gone
 * @error: the errno their fences get
 */
void tessera_queue_cancel(struct tessera_queue *q, int error)
{
	struct tessera_job *job, *tmp;
	unsigned long flags;

	spin_lock_irqsave(&q->lock, flags);
	list_for_each_entry_safe(job, tmp, &q->inflight, link) {
		list_del_init(&job->link);
		job_record_end(job, NULL, TSR_ERR_NONE, error);
		dma_fence_set_error(job->hw_fence, error);
		dma_fence_signal(job->hw_fence);
	}
	spin_unlock_irqrestore(&q->lock, flags);
}

/* ------------------------------------------------------------ scheduler */

static struct dma_fence *tessera_run_job(struct drm_sched_job *sched_job)
{
	struct tessera_job *job = to_tessera_job(sched_job);
	struct tessera_device *tdev = job->tdev;
	struct tessera_queue *q = job->q;
	struct tsr_job_desc *desc;
	struct dma_fence *fence;
	unsigned long flags;
	int err, idx;

	/* A re-run after a reset needs a fresh fence; the old one is dropped. */
	fence = job->prealloc;
	job->prealloc = NULL;
	if (!fence) {
		fence = kzalloc(sizeof(*fence), GFP_NOWAIT);
		if (!fence) {
			job->start = 0;
			job_record_end(job, NULL, TSR_ERR_NONE, -ENOMEM);
			return ERR_PTR(-ENOMEM);
		}
	}
	if (job->hw_fence)
		dma_fence_put(job->hw_fence);
	job->hw_fence = fence;

	err = job->error ?: sched_job->s_fence->finished.error;
	if (!err && READ_ONCE(job->ctx->banned))
		err = -ECANCELED;
	if (!err && !drm_dev_enter(&tdev->drm, &idx))
		err = -ENODEV;

	spin_lock_irqsave(&q->lock, flags);
	dma_fence_init(fence, &tessera_fence_ops, &q->fence_lock,
		       q->fence_context, ++q->seqno);
	if (err) {
		spin_unlock_irqrestore(&q->lock, flags);
		job->start = 0;
		job_record_end(job, NULL, TSR_ERR_NONE, err);
		dma_fence_set_error(fence, err);
		dma_fence_signal(fence);
		return dma_fence_get(fence);
	}

	job->slot = q->tail;
	memset(job_record(job), 0, TESSERA_RECORD_STRIDE);
	desc = &q->ring[job->slot];
	desc->context = job->ctx->id;
	desc->flags = TSR_JOB_IRQ;
	desc->cmdbuf_va = job->cmdbuf_va;
	desc->cmdbuf_size = job->cmdbuf_size;
	desc->reserved0 = 0;
	desc->completion_va = TESSERA_VA_RECORDS +
		q->index * TESSERA_RECORDS_PER_QUEUE_SIZE +
		job->slot * TESSERA_RECORD_STRIDE;
	desc->fence = fence->seqno;
	memset(desc->reserved, 0, sizeof(desc->reserved));
	list_add_tail(&job->link, &q->inflight);
	job->start = ktime_get();
	q->tail = (q->tail + 1) % TESSERA_RING_SIZE;
	/* writel() orders the descriptor before the doorbell. */
	tessera_reg_write(tdev, TSR_QUEUE_BASE(q->index) + TSR_QREG_TAIL, q->tail);
	spin_unlock_irqrestore(&q->lock, flags);

	drm_dev_exit(idx);
	return dma_fence_get(fence);
}

/* Put a timed-out job back where the scheduler keeps it (not a hang). */
static void tessera_sched_skip_reset(struct drm_sched_job *sched_job)
{
	struct drm_gpu_scheduler *sched = sched_job->sched;

	spin_lock(&sched->job_list_lock);
	list_add(&sched_job->list, &sched->pending_list);
	spin_unlock(&sched->job_list_lock);
}

static enum drm_gpu_sched_stat tessera_timedout_job(struct drm_sched_job *sched_job)
{
	struct tessera_job *job = to_tessera_job(sched_job);

	/* Recovery treats the job like any other pending one. */
	tessera_sched_skip_reset(sched_job);
	return tessera_job_timedout(job);
}

/* Drop everything a job holds, and the job. */
static void job_release(struct tessera_job *job)
{
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
	tessera_ctx_put(job->ctx);
	kfree(job);
}

static void tessera_free_job(struct drm_sched_job *sched_job)
{
	struct tessera_job *job = to_tessera_job(sched_job);

	/* Never run: killed with its entity when the file was closed. */
	if (!job->hw_fence)
		job_record_end(job, NULL, TSR_ERR_NONE,
			       sched_job->s_fence->finished.error ?: -ESRCH);
	drm_sched_job_cleanup(sched_job);
	job_release(job);
}

static const struct drm_sched_backend_ops tessera_sched_ops = {
	.run_job = tessera_run_job,
	.timedout_job = tessera_timedout_job,
	.free_job = tessera_free_job,
};

/* Program queue @q's ring into the chip and enable it. */
void tessera_queue_hw_init(struct tessera_queue *q)
{
	struct tessera_device *tdev = q->tdev;
	u32 base = TSR_QUEUE_BASE(q->index);

	tessera_reg_write(tdev, base + TSR_QREG_CONTROL, 0);
	tessera_reg_write(tdev, base + TSR_QREG_RING_BASE_LO,
			  lower_32_bits(q->ring_dma));
	tessera_reg_write(tdev, base + TSR_QREG_RING_BASE_HI,
			  upper_32_bits(q->ring_dma));
	tessera_reg_write(tdev, base + TSR_QREG_RING_SIZE, TESSERA_RING_SIZE);
	tessera_reg_write(tdev, base + TSR_QREG_FENCE_ADDR_LO,
			  lower_32_bits(q->fence_dma));
	tessera_reg_write(tdev, base + TSR_QREG_FENCE_ADDR_HI,
			  upper_32_bits(q->fence_dma));
	tessera_reg_write(tdev, base + TSR_QREG_IRQ_STATUS, TSR_QIRQ_ALL);
	tessera_reg_write(tdev, base + TSR_QREG_IRQ_ENABLE,
			  TSR_QIRQ_JOB_DONE | TSR_QIRQ_JOB_ERROR);
	tessera_reg_write(tdev, base + TSR_QREG_CONTROL, TSR_QCTRL_ENABLE);
}

static void tessera_sched_release(struct drm_device *drm, void *arg)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	unsigned int i;

	for (i = 0; i < tdev->num_queues; i++) {
		struct tessera_queue *q = &tdev->queues[i];

		if (q->sched_ready)
			drm_sched_fini(&q->sched);
		if (q->ring)
			dma_free_coherent(drm->dev, TESSERA_RING_SIZE *
					  sizeof(*q->ring), q->ring, q->ring_dma);
		if (q->fence_cpu)
			dma_free_coherent(drm->dev, sizeof(*q->fence_cpu),
					  q->fence_cpu, q->fence_dma);
	}
	if (tdev->reset_wq)
		destroy_workqueue(tdev->reset_wq);
}

/*
 * Rings, fence words and schedulers live as long as the DRM device: files
 * that outlive an unplug still hold entities on the schedulers.
 */
int tessera_sched_init(struct tessera_device *tdev)
{
	struct drm_device *drm = &tdev->drm;
	unsigned int i;
	int ret;

	ret = drmm_add_action(drm, tessera_sched_release, NULL);
	if (ret)
		return ret;
	tdev->reset_wq = alloc_ordered_workqueue("tessera-reset", 0);
	if (!tdev->reset_wq)
		return -ENOMEM;

	for (i = 0; i < tdev->num_queues; i++) {
		struct tessera_queue *q = &tdev->queues[i];
		const struct drm_sched_init_args args = {
			.ops = &tessera_sched_ops,
			.timeout_wq = tdev->reset_wq,
			.num_rqs = DRM_SCHED_PRIORITY_COUNT,
			.credit_limit = TESSERA_RING_JOBS,
			.timeout = tessera_job_timeout_ms ?
				   msecs_to_jiffies(tessera_job_timeout_ms) :
				   MAX_SCHEDULE_TIMEOUT,
			.name = q->name,
			.dev = drm->dev,
		};

		q->tdev = tdev;
		q->index = i;
		spin_lock_init(&q->lock);
		spin_lock_init(&q->fence_lock);
		INIT_LIST_HEAD(&q->inflight);
		snprintf(q->name, sizeof(q->name), "tessera-q%u", i);
		q->fence_context = dma_fence_context_alloc(1);
		q->ring = dma_alloc_coherent(drm->dev, TESSERA_RING_SIZE *
					     sizeof(*q->ring), &q->ring_dma,
					     GFP_KERNEL);
		q->fence_cpu = dma_alloc_coherent(drm->dev, sizeof(*q->fence_cpu),
						  &q->fence_dma, GFP_KERNEL);
		if (!q->ring || !q->fence_cpu)
			return -ENOMEM;

		ret = drm_sched_init(&q->sched, &args);
		if (ret) {
			drm_err(drm, "cannot start the scheduler of queue %u: %d\n",
				i, ret);
			return ret;
		}
		q->sched_ready = true;
	}
	return 0;
}

/* --------------------------------------------------------------- files */

int tessera_file_init(struct tessera_file *tfile)
{
	struct tessera_ctx *ctx;

	ctx = tessera_ctx_create(tfile->tdev);
	if (IS_ERR(ctx))
		return PTR_ERR(ctx);
	tfile->ctx = ctx;
	mutex_init(&tfile->lock);
	return 0;
}

void tessera_file_fini(struct tessera_file *tfile)
{
	unsigned int q, p;

	for (q = 0; q < TSR_MAX_QUEUES; q++) {
		for (p = 0; p < TESSERA_PRIORITIES; p++) {
			if (!tfile->entities[q][p])
				continue;
			drm_sched_entity_destroy(tfile->entities[q][p]);
			kfree(tfile->entities[q][p]);
		}
	}
	mutex_destroy(&tfile->lock);
	tessera_ctx_put(tfile->ctx);
}

static const enum drm_sched_priority tessera_priorities[TESSERA_PRIORITIES] = {
	[DRM_TESSERA_PRIORITY_NORMAL] = DRM_SCHED_PRIORITY_NORMAL,
	[DRM_TESSERA_PRIORITY_LOW] = DRM_SCHED_PRIORITY_LOW,
	[DRM_TESSERA_PRIORITY_HIGH] = DRM_SCHED_PRIORITY_HIGH,
};

/* The file's entity for (@queue, @priority); tfile->lock held. */
static struct drm_sched_entity *file_entity(struct tessera_file *tfile,
					    u32 queue, u32 priority)
{
	struct drm_sched_entity **slot = &tfile->entities[queue][priority];
	struct drm_gpu_scheduler *sched = &tfile->tdev->queues[queue].sched;
	struct drm_sched_entity *entity;
	int ret;

	if (*slot)
		return *slot;
	entity = kzalloc(sizeof(*entity), GFP_KERNEL);
	if (!entity)
		return ERR_PTR(-ENOMEM);
	ret = drm_sched_entity_init(entity, tessera_priorities[priority],
				    &sched, 1, NULL);
	if (ret) {
		kfree(entity);
		return ERR_PTR(ret);
	}
	*slot = entity;
	return entity;
}

/* ------------------------------------------------------------- SUBMIT */

static int submit_check(struct tessera_device *tdev,
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
	return 0;
}

/* Look up the command buffer and the listed buffers with their mappings. */
static int submit_lookup_bos(struct tessera_job *job, struct drm_file *file,
			     const struct drm_tessera_submit *args)
{
	struct drm_device *drm = &job->tdev->drm;
	struct drm_tessera_submit_bo *ubos;
	u32 n = args->bo_count, i, cmd = 0;
	bool cmd_listed = false;
	int ret;

	ubos = kvmalloc_array(max(n, 1u), sizeof(*ubos), GFP_KERNEL);
	if (!ubos)
		return -ENOMEM;
	if (copy_from_user(ubos, u64_to_user_ptr(args->bos), n * sizeof(*ubos))) {
		ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (!ubos[i].flags ||
		    ubos[i].flags & ~(DRM_TESSERA_BO_READ | DRM_TESSERA_BO_WRITE)) {
			drm_dbg(drm, "SUBMIT: buffer %u: bad flags 0x%x\n", i,
				ubos[i].flags);
			ret = -EINVAL;
			goto out;
		}
		if (ubos[i].handle == args->cmdbuf_handle) {
			cmd_listed = true;
			cmd = i;
		}
	}

	/* The command buffer is entry 0 unless the list names it. */
	job->bos = kvcalloc(n + !cmd_listed, sizeof(*job->bos) +
			    sizeof(*job->maps) + sizeof(*job->bo_write),
			    GFP_KERNEL);
	if (!job->bos) {
		ret = -ENOMEM;
		goto out;
	}
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
			ret = -ENOENT;
			goto out;
		}
		job->bo_write[i] = flags & DRM_TESSERA_BO_WRITE;
		/* Not mapped yet: a handle still being created (see BO_INFO). */
		job->maps[i] = tessera_mapping_get(to_tessera_bo(job->bos[i]),
						   job->ctx);
		if (!job->maps[i]) {
			drm_dbg(drm, "SUBMIT: handle %u is not ready\n", handle);
			ret = -ENOENT;
			goto out;
		}
	}

	/* The commands must lie inside the command buffer. */
	if (!cmd_listed)
		cmd = 0;
	if (args->cmdbuf_offset > job->bos[cmd]->size ||
	    args->cmdbuf_size > job->bos[cmd]->size - args->cmdbuf_offset) {
		drm_dbg(drm, "SUBMIT: commands at %llu+%u outside a %zu-byte buffer\n",
			args->cmdbuf_offset, args->cmdbuf_size,
			job->bos[cmd]->size);
		ret = -EINVAL;
		goto out;
	}
	job->cmdbuf_va = job->maps[cmd]->va.start + args->cmdbuf_offset;
	job->cmdbuf_size = args->cmdbuf_size;
	ret = 0;
out:
	kvfree(ubos);
	return ret;
}

static int submit_add_in_syncs(struct tessera_job *job, struct drm_file *file,
			       const struct drm_tessera_submit *args)
{
	struct drm_tessera_sync *syncs;
	u32 i, n = args->in_sync_count;
	struct dma_fence *fence;
	int ret = 0;

	if (!n)
		return 0;
	syncs = kmalloc_array(n, sizeof(*syncs), GFP_KERNEL);
	if (!syncs)
		return -ENOMEM;
	if (copy_from_user(syncs, u64_to_user_ptr(args->in_syncs),
			   n * sizeof(*syncs))) {
		ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < n; i++) {
		if (syncs[i].flags) {
			drm_dbg(&job->tdev->drm, "SUBMIT: in_syncs[%u].flags 0x%x\n",
				i, syncs[i].flags);
			ret = -EINVAL;
			goto out;
		}
		/* Not drm_sched_job_add_syncobj_dependency(): its point is 32-bit. */
		ret = drm_syncobj_find_fence(file, syncs[i].handle,
					     syncs[i].point, 0, &fence);
		if (!ret)
			ret = drm_sched_job_add_dependency(&job->base, fence);
		if (ret) {
			drm_dbg(&job->tdev->drm, "SUBMIT: in_syncs[%u] (handle %u point %llu): %d\n",
				i, syncs[i].handle, syncs[i].point, ret);
			goto out;
		}
	}
out:
	kfree(syncs);
	return ret;
}

/* Drop a job that never reached the scheduler. */
static void submit_abandon(struct tessera_job *job, bool sched_inited)
{
	if (sched_inited)
		drm_sched_job_cleanup(&job->base);
	job_release(job);
}

int tessera_ioctl_submit(struct drm_device *drm, void *data,
			 struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct tessera_file *tfile = file->driver_priv;
	struct drm_tessera_submit *args = data;
	struct dma_fence_chain *chain = NULL;
	struct drm_syncobj *out_sync = NULL;
	struct drm_sched_entity *entity;
	struct ww_acquire_ctx acquire;
	struct dma_fence *finished;
	struct tessera_job *job;
	bool sched_inited = false;
	unsigned int i;
	int ret, idx;

	ret = submit_check(tdev, args);
	if (ret)
		return ret;
	if (READ_ONCE(tfile->ctx->banned)) {
		drm_dbg(drm, "SUBMIT: context %u is banned\n", tfile->ctx->id);
		return -ECANCELED;
	}
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;

	ret = -ENOMEM;
	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job)
		goto out_exit;
	job->tdev = tdev;
	job->ctx = tessera_ctx_get(tfile->ctx);
	job->q = &tdev->queues[args->queue];
	INIT_LIST_HEAD(&job->link);
	job->prealloc = kzalloc(sizeof(*job->prealloc), GFP_KERNEL);
	if (!job->prealloc)
		goto out_abandon;

	ret = submit_lookup_bos(job, file, args);
	if (ret)
		goto out_abandon;

	if (args->flags & DRM_TESSERA_SUBMIT_OUT_SYNC) {
		out_sync = drm_syncobj_find(file, args->out_sync.handle);
		if (!out_sync) {
			drm_dbg(drm, "SUBMIT: no syncobj with handle %u\n",
				args->out_sync.handle);
			ret = -ENOENT;
			goto out_abandon;
		}
		if (args->out_sync.point) {
			chain = dma_fence_chain_alloc();
			if (!chain) {
				ret = -ENOMEM;
				goto out_abandon;
			}
		}
	}

	mutex_lock(&tfile->lock);
	entity = file_entity(tfile, args->queue, args->priority);
	if (IS_ERR(entity)) {
		ret = PTR_ERR(entity);
		goto out_unlock;
	}
	ret = drm_sched_job_init(&job->base, entity, 1, tfile->ctx,
				 file->client_id);
	if (ret)
		goto out_unlock;
	sched_inited = true;

	ret = submit_add_in_syncs(job, file, args);
	if (ret)
		goto out_unlock;

	ret = drm_gem_lock_reservations(job->bos, job->bo_count, &acquire);
	if (ret) {
		if (ret == -EALREADY) {
			drm_dbg(drm, "SUBMIT: a buffer is listed twice\n");
			ret = -EINVAL;
		}
		goto out_unlock;
	}
	for (i = 0; i < job->bo_count; i++) {
		ret = dma_resv_reserve_fences(job->bos[i]->resv, 1);
		if (ret)
			goto out_unlock_resv;
		ret = drm_sched_job_add_implicit_dependencies(&job->base,
							      job->bos[i],
							      job->bo_write[i]);
		if (ret)
			goto out_unlock_resv;
	}
	if (tessera_inject(&tdev->inject_submit_failures)) {
		drm_dbg(drm, "SUBMIT: injected failure\n");
		ret = -ENOMEM;
		goto out_unlock_resv;
	}

	/* From here on nothing fails: the job gets its number and runs. */
	spin_lock_irq(&tfile->ctx->status_lock);
	job->seq = tfile->ctx->next_seq++;
	*history_slot(tfile->ctx, job->seq) = (struct drm_tessera_job_status) {
		.seq = job->seq,
		.state = DRM_TESSERA_JOB_PENDING,
		.failed_cmd = TSR_NO_COMMAND,
		.queue = args->queue,
	};
	spin_unlock_irq(&tfile->ctx->status_lock);

	drm_sched_job_arm(&job->base);
	finished = dma_fence_get(&job->base.s_fence->finished);
	for (i = 0; i < job->bo_count; i++)
		dma_resv_add_fence(job->bos[i]->resv, finished,
				   job->bo_write[i] ? DMA_RESV_USAGE_WRITE :
						      DMA_RESV_USAGE_READ);
	drm_sched_entity_push_job(&job->base);
	tessera_count(tdev, TESSERA_CNT_JOBS_SUBMITTED);
	drm_gem_unlock_reservations(job->bos, job->bo_count, &acquire);
	mutex_unlock(&tfile->lock);

	if (out_sync) {
		if (chain)
			drm_syncobj_add_point(out_sync, chain, finished,
					      args->out_sync.point);
		else
			drm_syncobj_replace_fence(out_sync, finished);
		drm_syncobj_put(out_sync);
	}
	dma_fence_put(finished);
	args->seq = job->seq;
	drm_dev_exit(idx);
	return 0;

out_unlock_resv:
	drm_gem_unlock_reservations(job->bos, job->bo_count, &acquire);
out_unlock:
	mutex_unlock(&tfile->lock);
out_abandon:
	dma_fence_chain_free(chain);
	if (out_sync)
		drm_syncobj_put(out_sync);
	submit_abandon(job, sched_inited);
out_exit:
	drm_dev_exit(idx);
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
	} else if (history_slot(ctx, seq)->seq != seq) {
		ret = -ENOENT;
	} else {
		*args = *history_slot(ctx, seq);
		args->flags = 0;
	}
	spin_unlock_irq(&ctx->status_lock);
	if (ret == -EINVAL)
		drm_dbg(drm, "JOB_STATUS: job %llu was never submitted\n", seq);
	return ret;
}
