/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_CTX_H__
#define __TESSERA_CTX_H__

#include <linux/kref.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <drm/drm_mm.h>

#include <drm/tessera_accel.h>

#include "tessera_drv.h"

/*
 * Device VA layout of every context.  The first 2 MiB stay unmapped so that
 * a null device pointer faults; the driver's completion records follow;
 * buffer objects are placed from TESSERA_VA_USER_START up.
 */
#define TESSERA_VA_RECORDS		SZ_2M
#define TESSERA_RECORD_STRIDE		128
#define TESSERA_RECORDS_PER_QUEUE_SIZE	(TESSERA_RING_SIZE * TESSERA_RECORD_STRIDE)
#define TESSERA_VA_USER_START		SZ_16M
#define TESSERA_VA_END			BIT_ULL(TSR_VA_BITS)

struct tessera_pt;

/**
 * struct tessera_ctx - a device context: one address space, one context
 * table entry
 * @ref: held by the file, each buffer mapping and each job
 * @tdev: owning device
 * @id: context number in the chip's context table
 * @lock: protects @va, the page tables and @mappings
 * @va: allocator of the device VA space
 * @root: level-2 page table
 * @records: completion records, one array per queue, indexed by ring slot
 * @records_dma: bus addresses of @records
 * @mappings: buffer objects mapped into this context
 * @status_lock: protects @history and @next_seq
 * @history: status of the last DRM_TESSERA_JOB_HISTORY jobs
 * @next_seq: sequence number of the next job
 * @jobs_queued: jobs submitted and not yet freed, and places taken for
 *	jobs being submitted, bounded by the max_jobs_per_file module
 *	parameter
 * @jobs_room: woken when @jobs_queued falls, for submitters that wait
 * @faults: jobs of this context that hung or faulted
 * @banned: later submits fail with -ECANCELED
 * @engine_ns: time jobs of this context spent on each queue
 * @jobs: jobs that ended, successfully or not, for debugfs
 * @link: entry in the device's context list (tdev->ctx_lock)
 * @pid: process that opened the file, for debugfs
 */
struct tessera_ctx {
	struct kref ref;
	struct tessera_device *tdev;
	u32 id;

	/* protects va, the page tables and mappings */
	struct mutex lock;
	struct drm_mm va;
	struct tessera_pt *root;
	void *records[TSR_MAX_QUEUES];
	dma_addr_t records_dma[TSR_MAX_QUEUES];
	struct list_head mappings;

	/* protects history and next_seq */
	spinlock_t status_lock;
	struct drm_tessera_job_status *history;
	u64 next_seq;

	atomic_t jobs_queued;
	wait_queue_head_t jobs_room;
	atomic_t faults;
	bool banned;
	atomic64_t engine_ns[TSR_MAX_QUEUES];
	atomic64_t jobs;
	struct list_head link;
	pid_t pid;
};

struct tessera_ctx *tessera_ctx_create(struct tessera_device *tdev);
void tessera_ctx_put(struct tessera_ctx *ctx);

static inline struct tessera_ctx *tessera_ctx_get(struct tessera_ctx *ctx)
{
	kref_get(&ctx->ref);
	return ctx;
}

int tessera_ctx_init(struct tessera_device *tdev);
void tessera_ctx_unplug(struct tessera_device *tdev);

#endif /* __TESSERA_CTX_H__ */
