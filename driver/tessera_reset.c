// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera recovery: job timeouts, fatal chip errors, context bans, unplug.
 *
 * A job that outlives the job_timeout module parameter is stopped by
 * resetting its queue alone: jobs on other queues never notice.  A fatal
 * chip error resets the whole chip.  Either way the schedulers of the
 * queues concerned are stopped, jobs the chip finished before the reset
 * are retired normally, the guilty job (if any) fails with -ETIMEDOUT,
 * any other job the reset interrupted fails with -ECANCELED (it may have
 * taken effect in part, here and on other chips), the jobs that never
 * started are put back on the rings with the hardware fences they had
 * (tessera_sched_restart(), as panthor does, not run_job again), and the
 * schedulers restart.  Every reset is counted and announced with a
 * uevent.  Timeouts and resets, the PCI core's included (function-level
 * resets, PCIe errors), run one at a time on tdev->reset_wq.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/kobject.h>

#include <drm/drm_drv.h>
#include <drm/drm_print.h>

#include "tessera_coredump.h"
#include "tessera_hw.h"
#include "tessera_job.h"
#include "tessera_mmu.h"
#include "tessera_pm.h"
#include "tessera_reset.h"
#include "tessera_sysfs.h"
#include "tessera_trace.h"

/**
 * tessera_ctx_fault() - count a hang or MMU fault against a context
 * @ctx: the context whose job it was
 *
 * After tessera_ban_threshold of them the context is banned: its queued
 * jobs and later submits fail with -ECANCELED.
 */
void tessera_ctx_fault(struct tessera_ctx *ctx)
{
	int faults = atomic_inc_return(&ctx->faults);

	if (!tessera_ban_threshold || faults < tessera_ban_threshold ||
	    xchg(&ctx->banned, true))
		return;
	tessera_count(ctx->tdev, TESSERA_CNT_BANNED_CONTEXTS);
	drm_info(&ctx->tdev->drm, "context %u (pid %d) banned after %d faults\n",
		 ctx->id, ctx->pid, faults);
}

static void tessera_reset_uevent(struct tessera_device *tdev, const char *kind,
				 int queue)
{
	char event[32], q[32];
	char *envp[3] = { event, q, NULL };

	snprintf(event, sizeof(event), "TESSERA_RESET=%s", kind);
	snprintf(q, sizeof(q), "TESSERA_QUEUE=%d", queue);
	kobject_uevent_env(&tdev->drm.dev->kobj, KOBJ_CHANGE, envp);
}

/*
 * First half of a recovery: stop the schedulers of the queues in @mask, let
 * the chip start no more jobs on them, and note in @started where each
 * queue's started jobs end.  @hung is the job a timeout found hung, for a
 * queue reset.
 */
static void tessera_recover_stop(struct tessera_device *tdev,
				 unsigned long mask, u32 *started,
				 struct tessera_job *hung)
{
	unsigned int i;
	bool wait_end;

	lockdep_assert_held(&tdev->reset_lock);

	for_each_set_bit(i, &mask, tdev->num_queues)
		drm_sched_wqueue_stop(&tdev->queues[i].sched);
	wait_end = tessera_inject(&tdev->inject_stop_wait_end);
	/* The hung job ends at the last moment and its queue takes the next. */
	if (wait_end && hung)
		tessera_queue_wait_next(hung);
	for_each_set_bit(i, &mask, tdev->num_queues)
		started[i] = tessera_queue_stop(&tdev->queues[i], wait_end);
}

/*
 * Second half, once the queues in @mask (the whole chip if @chip) are
 * reset: retire, fail and requeue their jobs by what tessera_recover_stop()
 * noted in @started, and restart them.  @bad is the job whose timeout led
 * here, off its scheduler's pending list (the scheduler took it off to
 * report the timeout) and marked if guilty; it goes back with the others.
 */
static void tessera_recover_restart(struct tessera_device *tdev,
				    unsigned long mask, bool chip,
				    const u32 *started, struct tessera_job *bad)
{
	struct tessera_job *job, *tmp;
	unsigned long flags;
	unsigned int i;

	lockdep_assert_held(&tdev->reset_lock);

	/*
	 * Counted first: whoever a job's end below wakes sees the reset that
	 * ended it, or let it through, in the counters.  The uevent, which
	 * allocates, waits until no job is left for this handler to signal.
	 */
	trace_tessera_reset(tdev, chip ? -1 : (int)__ffs(mask));
	if (chip) {
		tessera_chip_counters_clear(tdev);
		tessera_count(tdev, TESSERA_CNT_DEVICE_RESETS);
	} else {
		tessera_count(tdev, TESSERA_CNT_QUEUE_RESETS);
	}

	/* The chip is quiet now: retire what it finished before the reset. */
	for_each_set_bit(i, &mask, tdev->num_queues) {
		tessera_queue_reap(&tdev->queues[i], false);
		tessera_queue_fail_started(&tdev->queues[i], started[i]);
	}

	for_each_set_bit(i, &mask, tdev->num_queues) {
		struct tessera_queue *q = &tdev->queues[i];

		/*
		 * Detach the hardware fences of every job still pending, @bad
		 * included; one that has finished is freed, @bad only once its
		 * timeout handler returns.
		 */
		drm_sched_stop(&q->sched, bad ? &bad->base : NULL);

		spin_lock_irqsave(&q->lock, flags);
		list_for_each_entry_safe(job, tmp, &q->inflight, link) {
			list_del_init(&job->link);
			if (++job->resets > tessera_max_resets_per_job &&
			    !job->error)
				job->error = -EIO;
		}
		q->tail = 0;
		spin_unlock_irqrestore(&q->lock, flags);
		tessera_queue_hw_init(q);
	}

	/* Guilty, marked and banned jobs fail; the others run again. */
	for_each_set_bit(i, &mask, tdev->num_queues)
		tessera_sched_restart(&tdev->queues[i]);

	if (chip)
		tessera_reset_uevent(tdev, "chip", -1);
	else
		tessera_reset_uevent(tdev, "queue", (int)__ffs(mask));
}

/*
 * Reset the queues in @mask (the whole chip if @chip) and restart them;
 * @bad as for tessera_recover_restart(), @hung the job of it a timeout
 * found hung (for a queue reset), or NULL.  The caller holds reset_lock.
 */
static void tessera_recover(struct tessera_device *tdev, unsigned long mask,
			    bool chip, struct tessera_job *bad,
			    struct tessera_job *hung)
{
	u32 started[TSR_MAX_QUEUES];
	unsigned int i;

	tessera_recover_stop(tdev, mask, started, hung);
	if (chip)
		tessera_hw_reset(tdev);
	else
		for_each_set_bit(i, &mask, tdev->num_queues)
			tessera_hw_queue_reset(&tdev->queues[i]);
	tessera_recover_restart(tdev, mask, chip, started, bad);
}

/*
 * The chip was reset under the driver (a function-level reset by the host,
 * unannounced) and a timeout found it: it lost its registers, STARTED
 * included, and the job each queue ran, and raised no interrupt.  Recover
 * it as after a fatal error, each queue's oldest unfinished job taken as
 * started.  @bad as for tessera_recover_restart(), and not guilty.
 */
static void tessera_recover_lost(struct tessera_device *tdev,
				 struct tessera_job *bad)
{
	unsigned long all = GENMASK(tdev->num_queues - 1, 0);
	u32 started[TSR_MAX_QUEUES];
	unsigned int i;

	lockdep_assert_held(&tdev->reset_lock);

	for_each_set_bit(i, &all, tdev->num_queues)
		drm_sched_wqueue_stop(&tdev->queues[i].sched);
	for_each_set_bit(i, &all, tdev->num_queues)
		started[i] = tessera_queue_started_lost(&tdev->queues[i]);
	tessera_hw_reset(tdev);
	tessera_recover_restart(tdev, all, true, started, bad);
}

/*
 * The timed-out @job finished, but its interrupt never came: retire it
 * without a reset.  Or it has not, but a job of its group ended within the
 * timeout (tessera_group_progressed()), or hang checks are off (debugfs
 * hangcheck): leave it running.  Either way the job goes back to the
 * scheduler, which re-arms the timer.  The scheduler is stopped so that it
 * cannot free the job, which the reap signals, before it is back on the
 * pending list.
 */
static bool tessera_timeout_no_hang(struct tessera_job *job)
{
	struct tessera_queue *q = job->q;
	bool done, keep;

	drm_sched_wqueue_stop(&q->sched);
	tessera_queue_reap(q, true);
	/*
	 * debugfs timeout_wait_free: give the scheduler's free worker the
	 * chance to free the job the reap has signalled, which it has only if
	 * the job is back on the pending list too early (a use-after-free the
	 * debug kernel's KASAN reports).
	 */
	if (tessera_inject(&q->tdev->inject_timeout_wait_free))
		flush_work(&q->sched.work_free_job);
	done = dma_fence_is_signaled(job->last->hw_fence);
	if (done) {
		tessera_count(q->tdev, TESSERA_CNT_LOST_IRQS);
		drm_dbg(&q->tdev->drm, "queue %u: job %llu of context %u finished without an interrupt\n",
			q->index, job->last->seq, job->ctx->id);
	}
	keep = done || tessera_group_progressed(job) ||
	       !READ_ONCE(q->tdev->hangcheck);
	if (keep)
		tessera_sched_requeue(job);
	drm_sched_wqueue_start(&q->sched);
	return keep;
}

/**
 * tessera_job_timedout() - a job outlived the timeout
 * @job: the oldest job (or group) of its queue, which the scheduler has
 *	taken off its pending list for the duration of this call
 *
 * Every path gives the job back to the scheduler (tessera_sched_requeue()
 * or drm_sched_stop()) and touches it no more after that.
 *
 * Return: DRM_GPU_SCHED_STAT_NOMINAL, or DRM_GPU_SCHED_STAT_ENODEV once
 * the device is gone.
 */
enum drm_gpu_sched_stat tessera_job_timedout(struct tessera_job *job)
{
	struct tessera_device *tdev = job->tdev;
	struct tessera_queue *q = job->q;
	struct tessera_job *hung;
	int idx;

	if (!drm_dev_enter(&tdev->drm, &idx)) {
		tessera_sched_requeue(job);
		return DRM_GPU_SCHED_STAT_ENODEV;
	}
	mutex_lock(&tdev->reset_lock);

	if (tessera_hw_lost(tdev)) {
		drm_err(&tdev->drm, "the chip was reset behind the driver's back (a function-level reset by the host?); recovering it\n");
		tessera_recover_lost(tdev, job);
		goto out;
	}

	/* A fatal error whose interrupt was lost: reset the chip, blame no one. */
	if (tessera_reg_read(tdev, TSR_REG_STATUS) & TSR_STATUS_FATAL) {
		drm_err(&tdev->drm, "chip in a fatal state, found by a timeout; resetting the chip\n");
		tessera_count(tdev, TESSERA_CNT_FATAL_ERRORS);
		tessera_recover(tdev, GENMASK(tdev->num_queues - 1, 0), true, job,
				NULL);
		goto out;
	}

	if (tessera_timeout_no_hang(job))
		goto out;

	/* The group's jobs before the hung one have ended: it alone is guilty. */
	hung = tessera_group_hung(job) ?: job->last;
	/* User space can make jobs time out at will: keep the log readable. */
	dev_warn_ratelimited(tdev->drm.dev,
			     "queue %u: job %llu of context %u (pid %d) timed out; resetting the queue\n",
			     q->index, hung->seq, job->ctx->id, job->ctx->pid);
	tessera_count(tdev, TESSERA_CNT_TIMEOUTS);
	tessera_coredump(hung);
	hung->error = -ETIMEDOUT;
	tessera_ctx_fault(job->ctx);
	tessera_recover(tdev, BIT(q->index), false, job, hung);
out:
	mutex_unlock(&tdev->reset_lock);
	drm_dev_exit(idx);
	return DRM_GPU_SCHED_STAT_NOMINAL;
}

/* Reset the whole chip; runs on reset_wq, after or before any timeout. */
static void tessera_chip_reset_work(struct work_struct *work)
{
	struct tessera_device *tdev = container_of(work, struct tessera_device,
						   chip_reset_work);
	int idx;

	if (!drm_dev_enter(&tdev->drm, &idx))
		return;
	mutex_lock(&tdev->reset_lock);
	tessera_recover(tdev, GENMASK(tdev->num_queues - 1, 0), true, NULL,
			NULL);
	mutex_unlock(&tdev->reset_lock);
	drm_dev_exit(idx);
}

/* From the device interrupt: the chip reported a fatal error. */
void tessera_schedule_fatal_recovery(struct tessera_device *tdev)
{
	tessera_count(tdev, TESSERA_CNT_FATAL_ERRORS);
	drm_err(&tdev->drm, "fatal chip error; resetting the chip\n");
	queue_work(tdev->reset_wq, &tdev->chip_reset_work);
}

/* debugfs force_recovery: reset the chip as if it had failed, and wait. */
void tessera_force_recovery(struct tessera_device *tdev)
{
	drm_info(&tdev->drm, "recovery forced through debugfs\n");
	/* A suspended chip is resumed first: the reset needs its interrupts. */
	if (tessera_pm_get(tdev))
		return;
	queue_work(tdev->reset_wq, &tdev->chip_reset_work);
	flush_work(&tdev->chip_reset_work);
	tessera_pm_put(tdev);
}

/*
 * A reset the PCI core makes (a function-level reset, a bus reset after a
 * PCIe error) wipes the chip's registers: rings, context table, interrupt
 * enables.  It runs on reset_wq like every other recovery, so that no
 * timeout handler runs in the middle: the chip is quieted, the PCI core
 * resets it, then the chip is reset once more from a known point and
 * recovered as after a fatal error (the started jobs fail with
 * -ECANCELED, the others run again).
 */
static void tessera_pci_reset_work(struct work_struct *work)
{
	struct tessera_device *tdev = container_of(work, struct tessera_device,
						   pci_reset_work);
	unsigned long all = GENMASK(tdev->num_queues - 1, 0);
	u32 started[TSR_MAX_QUEUES];

	mutex_lock(&tdev->reset_lock);
	tessera_recover_stop(tdev, all, started, NULL);
	tessera_hw_irq_off(tdev);
	/* The reset zeroes the window table's registers, as tessera_hw_reset's. */
	mutex_lock(&tdev->ici.window_lock);
	complete(&tdev->pci_quiet);
	wait_for_completion(&tdev->pci_reset_over);
	tessera_hw_reset_locked(tdev);
	mutex_unlock(&tdev->ici.window_lock);
	tessera_recover_restart(tdev, all, true, started, NULL);
	mutex_unlock(&tdev->reset_lock);
}

/**
 * tessera_reset_prepare() - the PCI core is about to reset the chip
 * @tdev: the device
 *
 * Returns once the chip is quiet: no scheduler feeds it, no queue starts
 * a job, no interrupt comes.  tessera_reset_done() must follow.
 */
void tessera_reset_prepare(struct tessera_device *tdev)
{
	reinit_completion(&tdev->pci_quiet);
	reinit_completion(&tdev->pci_reset_over);
	queue_work(tdev->reset_wq, &tdev->pci_reset_work);
	wait_for_completion(&tdev->pci_quiet);
}

/**
 * tessera_reset_done() - the PCI core has reset the chip (or given up)
 * @tdev: the device, after tessera_reset_prepare()
 *
 * Returns once the chip is programmed again and its queues run.
 */
void tessera_reset_done(struct tessera_device *tdev)
{
	complete(&tdev->pci_reset_over);
	flush_work(&tdev->pci_reset_work);
}

void tessera_reset_init(struct tessera_device *tdev)
{
	tdev->hangcheck = true;
	INIT_WORK(&tdev->chip_reset_work, tessera_chip_reset_work);
	INIT_WORK(&tdev->pci_reset_work, tessera_pci_reset_work);
	init_completion(&tdev->pci_quiet);
	init_completion(&tdev->pci_reset_over);
}

/**
 * tessera_reset_unplug() - the device is gone: fail every job
 * @tdev: the device, already unplugged from DRM (drm_dev_enter() fails)
 *
 * Jobs on the rings fail with -ENODEV now; jobs still waiting in the
 * schedulers fail with -ENODEV in run_job.  The schedulers themselves live
 * until the last file is closed.
 */
void tessera_reset_unplug(struct tessera_device *tdev)
{
	unsigned int i;

	cancel_work_sync(&tdev->chip_reset_work);
	mutex_lock(&tdev->reset_lock);
	for (i = 0; i < tdev->num_queues; i++)
		drm_sched_wqueue_stop(&tdev->queues[i].sched);
	/* Jobs the chip finished before it went keep their results. */
	for (i = 0; i < tdev->num_queues; i++) {
		tessera_queue_reap(&tdev->queues[i], false);
		tessera_queue_cancel(&tdev->queues[i], -ENODEV);
	}
	for (i = 0; i < tdev->num_queues; i++)
		drm_sched_wqueue_start(&tdev->queues[i].sched);
	mutex_unlock(&tdev->reset_lock);
}
