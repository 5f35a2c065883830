/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_JOB_H__
#define __TESSERA_JOB_H__

#include <linux/dma-fence.h>
#include <linux/kref.h>
#include <linux/ktime.h>
#include <drm/gpu_scheduler.h>

#include "tessera_ctx.h"
#include "tessera_drv.h"

struct tessera_mapping;

/**
 * struct tessera_job - one job of a SUBMIT or SUBMIT_BATCH
 * @base: the scheduler's job; only a group's first job's is used
 * @ref: held by the scheduler from the push until free_job, and by SUBMIT
 *	until it is done with the job
 * @tdev: the device
 * @ctx: the submitting context (a reference)
 * @q: the hardware queue it runs on
 * @seq: sequence number in the context
 * @cmdbuf_va: device VA of the first command
 * @cmdbuf_size: bytes of commands
 * @trace_va: device VA of the job's trace, with @trace_size
 * @trace_size: bytes of the trace, 0 when the job is not traced
 * @bo_count: entries in @bos, @bo_write and @maps
 * @bos: buffers the job uses (references), command buffer included
 * @bo_write: whether the job writes each buffer
 * @maps: their mappings in @ctx (references)
 * @hw_fence: its hardware fence, allocated at submit, numbered on its
 *	queue's timeline by its first run and kept for its life: a run again
 *	after a reset signals the same fence
 * @link: entry in the queue's in-flight list while on the ring
 * @slot: ring slot of the current run
 * @error: the driver's verdict when the job must not run again
 * @resets: chip or queue resets the job has been caught in
 * @start: when the current run was put on the ring
 * @pm_held: the job holds a runtime PM reference (tessera_pm_get())
 * @group: the job whose @base runs this one: itself, or the first job of
 *	its group (consecutive jobs of one batch on one queue and priority)
 * @next: the group's next job, in ring order; the scheduler's reference
 *	on it is the group's
 * @last: in a group's first job, its last job, whose hardware fence is
 *	the one run_job returns
 * @done: a grouped job's own out-fence, on its entity's group timeline;
 *	NULL for a job alone, whose out-fence is the scheduler's
 * @ended: its fences have signalled, or it failed without running (under
 *	its queue's lock once run)
 * @progress: in a group's first job, when a job of the group last ended
 *	(0: none since run_job), for the timeout
 */
struct tessera_job {
	struct drm_sched_job base;
	struct kref ref;
	struct tessera_device *tdev;
	struct tessera_ctx *ctx;
	struct tessera_queue *q;
	u64 seq;
	u64 cmdbuf_va;
	u32 cmdbuf_size;
	u32 trace_size;
	u64 trace_va;
	u32 bo_count;
	struct drm_gem_object **bos;
	bool *bo_write;
	struct tessera_mapping **maps;
	struct dma_fence *hw_fence;
	struct list_head link;
	u32 slot;
	int error;
	unsigned int resets;
	ktime_t start;
	bool pm_held;
	struct tessera_job *group;
	struct tessera_job *next;
	struct tessera_job *last;
	struct dma_fence *done;
	bool ended;
	ktime_t progress;
};

/**
 * struct tessera_entity - a file's scheduler entity for a queue and priority
 * @base: the scheduler's entity
 * @group_context: the fence context of its grouped jobs' out-fences, which
 *	signal in their submission order (ring order), apart from its single
 *	jobs' scheduler fences
 * @group_seqno: the last number given on @group_context, under the
 *	file's lock
 */
struct tessera_entity {
	struct drm_sched_entity base;
	u64 group_context;
	u64 group_seqno;
};

static inline struct tessera_job *to_tessera_job(struct drm_sched_job *job)
{
	return container_of(job, struct tessera_job, base);
}

static inline struct drm_tessera_job_status *
tessera_job_status_slot(struct tessera_ctx *ctx, u64 seq)
{
	return &ctx->history[seq % DRM_TESSERA_JOB_HISTORY];
}

/* tessera_submit.c: a job's lifetime and the ioctls. */
void tessera_job_put(struct tessera_job *job);
int tessera_ioctl_submit(struct drm_device *drm, void *data,
			 struct drm_file *file);
int tessera_ioctl_submit_batch(struct drm_device *drm, void *data,
			       struct drm_file *file);
int tessera_ioctl_job_status(struct drm_device *drm, void *data,
			     struct drm_file *file);

/* tessera_sched.c: the schedulers and the files' entities. */
int tessera_sched_init(struct tessera_device *tdev);
void tessera_sched_free_rings(struct tessera_device *tdev);
int tessera_file_init(struct tessera_file *tfile);
void tessera_file_fini(struct tessera_file *tfile);
struct drm_sched_entity *tessera_file_entity(struct tessera_file *tfile,
					     u32 queue, u32 priority);
void tessera_sched_requeue(struct tessera_job *job);
void tessera_sched_restart(struct tessera_queue *q);

/* tessera_ring.c: the rings the chip reads, hardware fences, job ends. */
void tessera_queue_hw_init(struct tessera_queue *q);
void tessera_job_done_init(struct tessera_job *job, u64 context, u64 seqno);
void tessera_job_fail_unrun(struct tessera_job *job, int err);
void tessera_queue_run(struct tessera_job *group, int err, bool again);
struct tessera_job *tessera_group_hung(struct tessera_job *group);
bool tessera_group_progressed(struct tessera_job *group);
void tessera_queue_reap(struct tessera_queue *q, bool use_head);
u32 tessera_queue_stop(struct tessera_queue *q, bool wait_end);
void tessera_queue_wait_next(struct tessera_job *job);
u32 tessera_queue_started_lost(struct tessera_queue *q);
void tessera_queue_fail_started(struct tessera_queue *q, u32 started);
void tessera_queue_cancel(struct tessera_queue *q, int error);
void tessera_job_record_end(struct tessera_job *job,
			    const struct tsr_completion *rec, u32 hw_error,
			    int err);

#endif /* __TESSERA_JOB_H__ */
