// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera devcoredump: what a hung job's queue looked like, for the user
 * to read after the reset (/sys/class/devcoredump/devcd<N>/data).
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/devcoredump.h>
#include <linux/fs.h>
#include <linux/slab.h>

#include "tessera_coredump.h"
#include "tessera_hw.h"
#include "tessera_job.h"

#define TESSERA_COREDUMP_SIZE	SZ_16K

/* Registers of the queue, as the chip had them when the job hung. */
static const struct {
	const char *name;
	u32 reg;
} tessera_coredump_qregs[] = {
	{ "CONTROL", TSR_QREG_CONTROL },
	{ "STATUS", TSR_QREG_STATUS },
	{ "HEAD", TSR_QREG_HEAD },
	{ "STARTED", TSR_QREG_STARTED },
	{ "TAIL", TSR_QREG_TAIL },
	{ "FENCE_LO", TSR_QREG_FENCE_LO },
	{ "JOBS_DONE", TSR_QREG_JOBS_DONE },
	{ "JOBS_FAILED", TSR_QREG_JOBS_FAILED },
	{ "LAST_ERROR", TSR_QREG_LAST_ERROR },
	{ "IRQ_STATUS", TSR_QREG_IRQ_STATUS },
};

static ssize_t tessera_coredump_read(char *buffer, loff_t offset,
				     size_t count, void *data, size_t datalen)
{
	return memory_read_from_buffer(buffer, count, &offset, data, datalen);
}

static void tessera_coredump_free(void *data)
{
	kfree(data);
}

static void tessera_coredump_fini(void *dev)
{
	dev_coredump_put(dev);
}

/**
 * tessera_coredump_init() - delete the device's dump when it unbinds
 * @tdev: the device, probing
 *
 * A dump holds no reference on the module (see tessera_coredump()): it
 * goes with the device, as xe's do, before the module can.
 *
 * Return: 0, or a negative errno.
 */
int tessera_coredump_init(struct tessera_device *tdev)
{
	return devm_add_action_or_reset(tdev->drm.dev, tessera_coredump_fini,
					tdev->drm.dev);
}

/**
 * tessera_coredump() - record the state of a hung job's queue
 * @job: the job that timed out, before its queue is reset
 *
 * The dump names the queue and the job, and holds the queue's registers
 * and the jobs on its ring.  The devcoredump core keeps one dump per
 * device until it is read and deleted, or for five minutes; later ones
 * are dropped meanwhile.
 *
 * It runs in the timeout handler, on the way to signalling the fences of
 * every job on the queue: nothing here may wait for memory reclaim, which
 * may itself wait for those fences (a shrinker).  Allocations do not
 * sleep (GFP_NOWAIT); without memory there is no dump, and the reset goes
 * on.
 */
void tessera_coredump(struct tessera_job *job)
{
	struct tessera_device *tdev = job->tdev;
	struct tessera_queue *q = job->q;
	u32 base = TSR_QUEUE_BASE(q->index);
	struct tessera_job *other;
	unsigned long flags;
	size_t len = 0;
	unsigned int i;
	char *buf;

	lockdep_assert_held(&tdev->reset_lock);

	buf = kzalloc(TESSERA_COREDUMP_SIZE, GFP_NOWAIT | __GFP_NOWARN);
	if (!buf)
		return;
#define DUMP(...) (len += scnprintf(buf + len, TESSERA_COREDUMP_SIZE - len, __VA_ARGS__))
	DUMP("Tessera devcoredump\n");
	DUMP("device: %s\n", dev_name(tdev->drm.dev));
	DUMP("reason: job timed out\n");
	DUMP("queue: %u\n", q->index);
	DUMP("job: seq %llu context %u pid %d slot %u commands %u bytes\n",
	     job->seq, job->ctx->id, job->ctx->pid, job->slot,
	     job->cmdbuf_size);
	DUMP("running for: %lld ms\n",
	     job->start ? ktime_ms_delta(ktime_get(), job->start) : 0);
	for (i = 0; i < ARRAY_SIZE(tessera_coredump_qregs); i++)
		DUMP("register %s: 0x%08x\n", tessera_coredump_qregs[i].name,
		     tessera_reg_read(tdev, base + tessera_coredump_qregs[i].reg));
	DUMP("device STATUS: 0x%08x\n", tessera_reg_read(tdev, TSR_REG_STATUS));
	spin_lock_irqsave(&q->lock, flags);
	DUMP("ring tail: %u\n", q->tail);
	list_for_each_entry(other, &q->inflight, link)
		DUMP("on the ring: seq %llu context %u slot %u fence %llu\n",
		     other->seq, other->ctx->id, other->slot,
		     other->hw_fence->seqno);
	spin_unlock_irqrestore(&q->lock, flags);
#undef DUMP
	/*
	 * No module reference (owner NULL): one would keep rmmod from ever
	 * unbinding the device whose unbind deletes the dump.
	 */
	dev_coredumpm(tdev->drm.dev, NULL, buf, len,
		      GFP_NOWAIT | __GFP_NOWARN, tessera_coredump_read,
		      tessera_coredump_free);
}
