// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera hardware queues: the rings the chip reads, hardware fences,
 * completion records and the status each job ends with.
 *
 * run_job writes a job's descriptor to its queue's ring and rings the
 * doorbell.  The chip writes the job's completion record into the
 * context's record area and the job's fence number to the queue's fence
 * word, then raises the queue's interrupt; the handler retires every job
 * up to that number, in ring order.
 *
 * run_job puts a whole group (the jobs of one batch on one queue and
 * priority, one scheduler job) on the ring behind one doorbell.  Each job
 * of a group keeps its own ring slot, hardware fence, record and status,
 * and signals its own out-fence when it ends; the group's scheduler job
 * ends with its last job's hardware fence.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/iopoll.h>
#include <linux/slab.h>

#include <drm/drm_print.h>

#include "tessera_hw.h"
#include "tessera_job.h"
#include "tessera_reset.h"
#include "tessera_trace.h"

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

/* Number @job's hardware fence on its queue's timeline; q->lock held. */
static void tessera_job_fence_init_locked(struct tessera_job *job)
{
	struct tessera_queue *q = job->q;

	lockdep_assert_held(&q->lock);
	dma_fence_init(job->hw_fence, &tessera_fence_ops, &q->fence_lock,
		       q->fence_context, ++q->seqno);
}

/**
 * tessera_job_done_init() - number a grouped job's out-fence
 * @job: the job, about to be pushed
 * @context: its entity's group fence context
 * @seqno: its number there, one more than the entity's previous grouped job
 */
void tessera_job_done_init(struct tessera_job *job, u64 context, u64 seqno)
{
	dma_fence_init(job->done, &tessera_fence_ops, &job->q->fence_lock,
		       context, seqno);
}

/* ----------------------------------------------------------- job status */

/**
 * tessera_job_record_end() - record how a job ended, for JOB_STATUS
 * @job: the job
 * @rec: its completion record, if the chip wrote one
 * @hw_error: the chip's TSR_ERR_* code
 * @err: the errno its fence gets, 0 for success
 */
void tessera_job_record_end(struct tessera_job *job,
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
	st = tessera_job_status_slot(ctx, job->seq);
	if (st->seq == job->seq) {
		st->state = err ? DRM_TESSERA_JOB_FAILED : DRM_TESSERA_JOB_DONE;
		st->error = hw_error;
		st->fence_error = err;
		st->failed_cmd = rec ? le32_to_cpu(rec->failed_cmd) :
				       TSR_NO_COMMAND;
		st->fault_va = rec ? le64_to_cpu(rec->fault_va) : 0;
		st->start_cycle = rec ? le64_to_cpu(rec->start_cycle) : 0;
		st->end_cycle = rec ? le64_to_cpu(rec->end_cycle) : 0;
		st->mxu_cycles = rec ? le64_to_cpu(rec->mxu_cycles) : 0;
		st->vpu_cycles = rec ? le64_to_cpu(rec->vpu_cycles) : 0;
		st->dma_cycles = rec ? le64_to_cpu(rec->dma_cycles) : 0;
		st->duration_ns = ns;
	}
	spin_unlock_irqrestore(&ctx->status_lock, flags);

	atomic64_add(ns, &ctx->engine_ns[job->q->index]);
	atomic64_inc(&ctx->jobs);
	tessera_count(job->tdev, err ? TESSERA_CNT_JOBS_FAILED :
		      TESSERA_CNT_JOBS_COMPLETED);
}

/*
 * Signal @job's fences with @err: its out-fence if grouped, then its
 * hardware fence, the last thing done with it (the last job's ends its
 * group, which the scheduler may free right after).
 */
static void tessera_job_signal(struct tessera_job *job, int err)
{
	job->ended = true;
	job->group->progress = ktime_get();
	if (job->done) {
		if (err)
			dma_fence_set_error(job->done, err);
		dma_fence_signal(job->done);
	}
	if (err)
		dma_fence_set_error(job->hw_fence, err);
	dma_fence_signal(job->hw_fence);
}

/**
 * tessera_job_fail_unrun() - end a job that will not reach the ring
 * @job: a job of a group the scheduler killed (its file was closed)
 * @err: the errno it ends with
 *
 * Its hardware fence was never numbered, and stays so.
 */
void tessera_job_fail_unrun(struct tessera_job *job, int err)
{
	job->start = 0;
	job->ended = true;
	tessera_job_record_end(job, NULL, TSR_ERR_NONE, err);
	if (job->done) {
		dma_fence_set_error(job->done, err);
		dma_fence_signal(job->done);
	}
}

/* The errno a job's fence carries for a chip error code. */
static int tessera_errno_of(u32 error)
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
	case TSR_ERR_LINK_DOWN:
		return -ENOLINK;
	case TSR_ERR_REMOTE_ACCESS:
		return -EACCES;
	case TSR_ERR_NO_ROUTE:
		return -EHOSTUNREACH;
	case TSR_ERR_PEER_ABORT:
		return -ECONNABORTED;
	case TSR_ERR_ID_RANGE:
		return -ERANGE;
	case TSR_ERR_MAX_IDS:
	case TSR_ERR_MAX_UNIQUE_IDS:
		return -EOVERFLOW;
	case TSR_ERR_SPMEM:
		return -ENOSPC;
	default:
		return -EINVAL;
	}
}

static struct tsr_completion *tessera_job_record(struct tessera_job *job)
{
	return job->ctx->records[job->q->index] +
	       job->slot * TESSERA_RECORD_STRIDE;
}

static bool tessera_job_aborted(struct tessera_job *job)
{
	const struct tsr_completion *rec = tessera_job_record(job);

	return le32_to_cpu(READ_ONCE(rec->status)) == TSR_JOB_STATUS_ERROR &&
	       le32_to_cpu(READ_ONCE(rec->error)) == TSR_ERR_ABORTED &&
	       le64_to_cpu(READ_ONCE(rec->fence)) == job->hw_fence->seqno;
}

/*
 * Retire @job, whose fence the chip has written, or which a chip reset
 * interrupted.  @no_record is the error it ends with if the chip wrote no
 * record for it.  Signalling its fence is the last thing done with it: the
 * scheduler may free it right after.
 */
static void tessera_job_retire(struct tessera_job *job, u32 no_record)
{
	struct tsr_completion rec;
	u32 hw_error, status;
	bool ours;
	int err;

	lockdep_assert_held(&job->q->lock);

	memcpy(&rec, tessera_job_record(job), sizeof(rec));
	status = le32_to_cpu(rec.status);
	ours = le64_to_cpu(rec.fence) == job->hw_fence->seqno;
	if (ours && status == TSR_JOB_STATUS_DONE) {
		hw_error = TSR_ERR_NONE;
	} else if (ours && status == TSR_JOB_STATUS_ERROR) {
		hw_error = le32_to_cpu(rec.error);
	} else {
		hw_error = no_record;
		memset(&rec, 0, sizeof(rec));
		rec.failed_cmd = cpu_to_le32(TSR_NO_COMMAND);
	}
	err = tessera_errno_of(hw_error);
	if (err == -EFAULT) {
		tessera_count(job->tdev, TESSERA_CNT_MMU_FAULTS);
		tessera_ctx_fault(job->ctx);
	}
	tessera_job_record_end(job, &rec, hw_error, err);
	tessera_job_signal(job, err);
}

/* ---------------------------------------------------------------- rings */

/* Write @job's descriptor at the ring's tail; q->lock held. */
static void tessera_queue_put_locked(struct tessera_queue *q,
				     struct tessera_job *job)
{
	struct tsr_job_desc *desc;

	lockdep_assert_held(&q->lock);
	job->slot = q->tail;
	memset(tessera_job_record(job), 0, TESSERA_RECORD_STRIDE);
	desc = &q->ring[job->slot];
	desc->context = cpu_to_le32(job->ctx->id);
	desc->flags = cpu_to_le32(TSR_JOB_IRQ |
				  (job->trace_size ? TSR_JOB_TRACE : 0));
	desc->cmdbuf_va = cpu_to_le64(job->cmdbuf_va);
	desc->cmdbuf_size = cpu_to_le32(job->cmdbuf_size);
	desc->trace_size = cpu_to_le32(job->trace_size);
	desc->trace_va = cpu_to_le64(job->trace_va);
	desc->completion_va = cpu_to_le64(TESSERA_VA_RECORDS +
		q->index * TESSERA_RECORDS_PER_QUEUE_SIZE +
		job->slot * TESSERA_RECORD_STRIDE);
	desc->fence = cpu_to_le64(job->hw_fence->seqno);
	memset(desc->reserved, 0, sizeof(desc->reserved));
	list_add_tail(&job->link, &q->inflight);
	job->start = ktime_get();
	q->tail = (q->tail + 1) % TESSERA_RING_SIZE;
}

/**
 * tessera_queue_run() - put a group's jobs on their queue's ring
 * @group: the group (a job alone is a group of one)
 * @err: 0 to run the jobs, else the errno they signal with now (the
 *	group's scheduler fence failed, its context is banned, the device
 *	is gone)
 * @again: the group runs again after a reset, its jobs with the hardware
 *	fences their first run numbered; else this is the first run, which
 *	numbers them (in ring order, as the chip writes them)
 *
 * A job that has ended (before a reset that put its group back) is
 * skipped; one marked with an error (the one a timeout found hung, or
 * one caught in too many resets) fails with it, in its place, whatever
 * @err says: it is the job's own cause (a hung job whose reset banned its
 * context still timed out).  One doorbell tells the chip of them all.
 */
void tessera_queue_run(struct tessera_job *group, int err, bool again)
{
	struct tessera_queue *q = group->q;
	struct tessera_job *job, *next;
	unsigned long flags;
	bool ring = false;

	spin_lock_irqsave(&q->lock, flags);
	group->progress = 0;
	for (job = group; job; job = next) {
		int job_err = job->error ?: err;

		/* The last job's fence may end the group: read on first. */
		next = job->next;
		if (job->ended)
			continue;
		if (!again)
			tessera_job_fence_init_locked(job);
		if (job_err) {
			job->start = 0;
			tessera_job_record_end(job, NULL, TSR_ERR_NONE, job_err);
			tessera_job_signal(job, job_err);
			continue;
		}
		trace_tessera_job_run(job);
		tessera_queue_put_locked(q, job);
		ring = true;
	}
	/* writel() orders the descriptors before the doorbell. */
	if (ring)
		tessera_reg_write(q->tdev, TSR_QUEUE_BASE(q->index) +
				  TSR_QREG_TAIL, q->tail);
	spin_unlock_irqrestore(&q->lock, flags);
}

/**
 * tessera_group_hung() - the job of a timed-out group that hangs
 * @group: the group, the oldest of its queue, reaped
 *
 * Return: its first job that has not ended (the jobs before it have, in
 * ring order), or NULL if they all have.
 */
struct tessera_job *tessera_group_hung(struct tessera_job *group)
{
	struct tessera_job *job;
	unsigned long flags;

	spin_lock_irqsave(&group->q->lock, flags);
	for (job = group; job && job->ended; job = job->next)
		;
	spin_unlock_irqrestore(&group->q->lock, flags);
	return job;
}

/**
 * tessera_group_progressed() - whether a timed-out group is still moving
 * @group: the group, reaped
 *
 * A group's jobs each get the job timeout, as separate jobs would: a job
 * of it that ended within the timeout means the one running now has not
 * had its time yet.  The scheduler re-arms the whole timeout, so a hang
 * is found between one and two timeouts after the last job ended.
 *
 * Return: true if a job of the group (of more than one) ended less than
 * the job timeout ago.
 */
bool tessera_group_progressed(struct tessera_job *group)
{
	unsigned long flags;
	ktime_t last;

	if (!group->next)
		return false;
	spin_lock_irqsave(&group->q->lock, flags);
	last = group->progress;
	spin_unlock_irqrestore(&group->q->lock, flags);
	return last && ktime_ms_delta(ktime_get(), last) <
		       (s64)tessera_job_timeout_ms;
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
		/*
		 * The chip gave up on it, for a fatal error or for a chip
		 * reset that disabled its queue: recovery fails it.
		 */
		if (tessera_job_aborted(job))
			break;
		if (passed)
			passed--;
		list_del_init(&job->link);
		/*
		 * No record: the chip could not read the descriptor or write
		 * the record, both system-memory transfers.
		 */
		tessera_job_retire(job, TSR_ERR_DMA);
	}
	spin_unlock_irqrestore(&q->lock, flags);
}

/**
 * tessera_queue_stop() - let the chip start no more jobs on a queue
 * @q: the queue, about to be reset alone or with the whole chip
 * @wait_end: let the job the queue runs end first (debugfs stop_wait_end):
 *	the disable aborts it, often before the reset, sometimes after
 *
 * Return: STARTED, one past the ring slot of the last job the queue took,
 * final once the queue is disabled.  Not HEAD: a job the disable aborts
 * ends and moves HEAD past it, as if it had never been taken.
 */
u32 tessera_queue_stop(struct tessera_queue *q, bool wait_end)
{
	u32 base = TSR_QUEUE_BASE(q->index);
	u32 started, head;

	tessera_reg_write(q->tdev, base + TSR_QREG_CONTROL, 0);
	started = tessera_reg_read(q->tdev, base + TSR_QREG_STARTED);
	if (wait_end)
		read_poll_timeout(tessera_reg_read, head, head == started,
				  USEC_PER_MSEC, USEC_PER_SEC, false, q->tdev,
				  base + TSR_QREG_HEAD);
	return started;
}

/**
 * tessera_queue_wait_next() - wait until a hung job's queue takes the next
 * @job: the job a timeout found hung
 *
 * For debugfs stop_wait_end: the job ends just after the timeout looked at
 * it, and its queue starts the job behind it before the reset stops the
 * queue.  Gives up after 10 s: the test releases the job meanwhile.
 */
void tessera_queue_wait_next(struct tessera_job *job)
{
	struct tessera_queue *q = job->q;
	u32 next = (job->slot + 1) % TESSERA_RING_SIZE;
	u32 started;

	read_poll_timeout(tessera_reg_read, started, started != next,
			  USEC_PER_MSEC, 10 * USEC_PER_SEC, false, q->tdev,
			  TSR_QUEUE_BASE(q->index) + TSR_QREG_STARTED);
}

/**
 * tessera_queue_started_lost() - STARTED of a queue the chip forgot
 * @q: the queue, whose chip a reset the driver did not make has wiped
 *	(STARTED reads 0)
 *
 * Retires what the chip finished (the fence word is in system memory, and
 * survives), then looks at the jobs left, newest first: a queue runs one
 * job at a time, in order, so the newest job whose record is its own (the
 * chip marks it RUNNING, in memory, before its first command) is the last
 * that may have started, and every job before it was taken.  A job whose
 * record is still the blank the driver wrote had not started, unless a
 * later one had: one the chip could not read records nothing.
 *
 * Return: one past the last job's ring slot that may have started, as
 * tessera_queue_stop() would have returned.
 */
u32 tessera_queue_started_lost(struct tessera_queue *q)
{
	const struct tsr_completion *rec;
	struct tessera_job *job;
	unsigned long flags;
	u32 started = 0;

	tessera_queue_reap(q, false);
	spin_lock_irqsave(&q->lock, flags);
	job = list_first_entry_or_null(&q->inflight, struct tessera_job, link);
	if (job)
		started = job->slot;
	list_for_each_entry_reverse(job, &q->inflight, link) {
		rec = tessera_job_record(job);
		if (READ_ONCE(rec->status) &&
		    le64_to_cpu(READ_ONCE(rec->fence)) == job->hw_fence->seqno) {
			started = (job->slot + 1) % TESSERA_RING_SIZE;
			break;
		}
	}
	spin_unlock_irqrestore(&q->lock, flags);
	return started;
}

/**
 * tessera_queue_fail_started() - fail the jobs a reset interrupted
 * @q: the queue, reset alone or with the chip, and reaped
 * @started: what tessera_queue_stop() returned before the reset
 *
 * A job that has started has taken effect in part, on this chip and
 * through its remote writes on others: it must not run again from its
 * first command.  Every job the queue took and did not finish fails with
 * TSR_ERR_ABORTED (-ECANCELED), or with the ABORTED record the chip wrote
 * for it when it stopped the job; a job already marked (the one a timeout
 * found guilty) fails with its mark when its group goes back on the ring
 * (tessera_sched_restart()) instead.  Jobs behind them
 * never started and run again.
 */
void tessera_queue_fail_started(struct tessera_queue *q, u32 started)
{
	struct tessera_job *job, *tmp;
	unsigned long flags;
	u32 n = 0;

	spin_lock_irqsave(&q->lock, flags);
	job = list_first_entry_or_null(&q->inflight, struct tessera_job, link);
	/* Fewer jobs than slots are in flight: no ambiguity. */
	if (job)
		n = (started - job->slot) % TESSERA_RING_SIZE;
	list_for_each_entry_safe(job, tmp, &q->inflight, link) {
		if (!n)
			break;
		n--;
		if (job->error)
			continue;
		list_del_init(&job->link);
		drm_dbg(&q->tdev->drm, "queue %u: job %llu of context %u interrupted by the reset\n",
			q->index, job->seq, job->ctx->id);
		tessera_job_retire(job, TSR_ERR_ABORTED);
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
		tessera_job_record_end(job, NULL, TSR_ERR_NONE, error);
		tessera_job_signal(job, error);
	}
	spin_unlock_irqrestore(&q->lock, flags);
}

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
