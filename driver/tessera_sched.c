// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera job scheduling: one drm_sched scheduler per hardware queue, and
 * each file's entities on them, one per queue and priority.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/dma-mapping.h>
#include <linux/slab.h>

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <drm/tessera_accel.h>

#include "tessera_job.h"
#include "tessera_reset.h"
#include "tessera_trace.h"

/*
 * Put @group on its ring, @again after a reset, or fail its jobs that have
 * not ended: all of them if its scheduler fence carries an error, its
 * context is banned or the device is gone; a job marked with an error
 * (tessera_queue_run()) fails in its place.
 */
static void tessera_group_run(struct tessera_job *group, bool again)
{
	int err = group->base.s_fence->finished.error;
	int idx;

	if (!err && READ_ONCE(group->ctx->banned))
		err = -ECANCELED;
	if (err || !drm_dev_enter(&group->tdev->drm, &idx)) {
		tessera_queue_run(group, err ?: -ENODEV, again);
		return;
	}
	tessera_queue_run(group, 0, again);
	drm_dev_exit(idx);
}

/*
 * Nothing is allocated here, in the fence-signalling path: the hardware
 * fences were allocated at submit, and a reset runs the jobs again with
 * the same fences (tessera_sched_restart()), not through run_job.
 */
static struct dma_fence *tessera_run_job(struct drm_sched_job *sched_job)
{
	struct tessera_job *group = to_tessera_job(sched_job);

	tessera_group_run(group, false);
	return dma_fence_get(group->last->hw_fence);
}

static enum drm_gpu_sched_stat tessera_timedout_job(struct drm_sched_job *sched_job)
{
	return tessera_job_timedout(to_tessera_job(sched_job));
}

/**
 * tessera_sched_requeue() - give a timed-out job back to its scheduler
 * @job: the job the scheduler took off its pending list to report a
 *	timeout that turned out not to be a hang
 *
 * The scheduler may free the job as soon as it is back: this is the last
 * thing the caller does with it.
 */
void tessera_sched_requeue(struct tessera_job *job)
{
	struct drm_gpu_scheduler *sched = job->base.sched;

	spin_lock(&sched->job_list_lock);
	list_add(&job->base.list, &sched->pending_list);
	spin_unlock(&sched->job_list_lock);
}

/**
 * tessera_sched_restart() - run a reset queue's pending jobs again
 * @q: the queue, its scheduler stopped with drm_sched_stop() (which has
 *	detached the hardware fences of its pending jobs and freed the jobs
 *	that had ended), and its ring empty and programmed again
 *
 * As panthor's queue_start(), not drm_sched_resubmit_jobs(), which calls
 * run_job again: each pending group keeps its jobs' hardware fences, goes
 * back on the ring in the scheduler's order (or fails, as in run_job), and
 * has its scheduler fence attached to its last job's hardware fence again
 * before the scheduler restarts.
 */
void tessera_sched_restart(struct tessera_queue *q)
{
	struct drm_gpu_scheduler *sched = &q->sched;
	struct drm_sched_job *sched_job;

	lockdep_assert_held(&q->tdev->reset_lock);

	/*
	 * Stopped, the scheduler neither adds nor frees pending jobs, and
	 * timeouts wait on reset_wq: the list holds still.  A job that ends
	 * meanwhile signals a fence nobody waits on yet; drm_sched_start()
	 * finds it signalled.
	 */
	list_for_each_entry(sched_job, &sched->pending_list, list) {
		struct tessera_job *group = to_tessera_job(sched_job);

		tessera_group_run(group, true);
		sched_job->s_fence->parent = dma_fence_get(group->last->hw_fence);
	}
	drm_sched_start(sched);
}

static void tessera_free_job(struct drm_sched_job *sched_job)
{
	struct tessera_job *group = to_tessera_job(sched_job);
	int error = sched_job->s_fence->finished.error;
	struct tessera_job *job, *next;

	for (job = group; job; job = job->next) {
		/* Never run: killed with its entity when the file was closed. */
		if (!job->ended)
			tessera_job_fail_unrun(job, error ?: -ESRCH);
		trace_tessera_job_done(job, job->done ? job->done->error : error);
	}
	drm_sched_job_cleanup(sched_job);
	for (job = group; job; job = next) {
		next = job->next;
		tessera_job_put(job);
	}
}

static const struct drm_sched_backend_ops tessera_sched_ops = {
	.run_job = tessera_run_job,
	.timedout_job = tessera_timedout_job,
	.free_job = tessera_free_job,
};

/**
 * tessera_sched_free_rings() - free the rings and fence words
 * @tdev: the device, unplugged, its queues cancelled (or failing probe)
 *
 * Coherent memory belongs to the bound device and goes at unbind; the
 * schedulers live on for files still open, and fail every job.
 */
void tessera_sched_free_rings(struct tessera_device *tdev)
{
	struct device *dev = tdev->drm.dev;
	unsigned int i;

	for (i = 0; i < tdev->num_queues; i++) {
		struct tessera_queue *q = &tdev->queues[i];

		if (q->ring)
			dma_free_coherent(dev, TESSERA_RING_SIZE * sizeof(*q->ring),
					  q->ring, q->ring_dma);
		if (q->fence_cpu)
			dma_free_coherent(dev, sizeof(*q->fence_cpu),
					  q->fence_cpu, q->fence_dma);
		q->ring = NULL;
		q->fence_cpu = NULL;
	}
}

static void tessera_sched_release(struct drm_device *drm, void *arg)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	unsigned int i;

	for (i = 0; i < tdev->num_queues; i++)
		if (tdev->queues[i].sched_ready)
			drm_sched_fini(&tdev->queues[i].sched);
	tessera_sched_free_rings(tdev);
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
			kfree(container_of(tfile->entities[q][p],
					   struct tessera_entity, base));
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

/**
 * tessera_file_entity() - the file's entity for a queue and priority
 * @tfile: the file, whose lock the caller holds
 * @queue: hardware queue
 * @priority: DRM_TESSERA_PRIORITY_*
 *
 * Entities are made on first use, each with the fence context of its
 * grouped jobs' out-fences.
 *
 * Return: the entity, or an ERR_PTR().
 */
struct drm_sched_entity *tessera_file_entity(struct tessera_file *tfile,
					     u32 queue, u32 priority)
{
	struct drm_sched_entity **slot = &tfile->entities[queue][priority];
	struct drm_gpu_scheduler *sched = &tfile->tdev->queues[queue].sched;
	struct tessera_entity *entity;
	int ret;

	lockdep_assert_held(&tfile->lock);

	if (*slot)
		return *slot;
	entity = kzalloc(sizeof(*entity), GFP_KERNEL_ACCOUNT);
	if (!entity)
		return ERR_PTR(-ENOMEM);
	ret = drm_sched_entity_init(&entity->base, tessera_priorities[priority],
				    &sched, 1, NULL);
	if (ret) {
		kfree(entity);
		return ERR_PTR(ret);
	}
	entity->group_context = dma_fence_context_alloc(1);
	*slot = &entity->base;
	return *slot;
}
