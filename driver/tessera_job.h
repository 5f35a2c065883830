/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_JOB_H__
#define __TESSERA_JOB_H__

#include <linux/dma-fence.h>
#include <linux/ktime.h>
#include <drm/gpu_scheduler.h>

#include "tessera_drv.h"

struct tessera_mapping;

/**
 * struct tessera_job - one SUBMIT
 * @base: the scheduler's job
 * @tdev: the device
 * @ctx: the submitting context (a reference)
 * @q: the hardware queue it runs on
 * @seq: sequence number in the context
 * @cmdbuf_va: device VA of the first command
 * @cmdbuf_size: bytes of commands
 * @bo_count: entries in @bos, @bo_write and @maps
 * @bos: buffers the job uses (references), command buffer included
 * @bo_write: whether the job writes each buffer
 * @maps: their mappings in @ctx (references)
 * @prealloc: the first run's hardware fence, allocated at submit
 * @hw_fence: hardware fence of the current run
 * @link: entry in the queue's in-flight list while on the ring
 * @slot: ring slot of the current run
 * @error: the driver's verdict when the job must not run again
 * @resets: chip or queue resets the job has been caught in
 * @start: when the current run was put on the ring
 */
struct tessera_job {
	struct drm_sched_job base;
	struct tessera_device *tdev;
	struct tessera_ctx *ctx;
	struct tessera_queue *q;
	u64 seq;
	u64 cmdbuf_va;
	u32 cmdbuf_size;
	u32 bo_count;
	struct drm_gem_object **bos;
	bool *bo_write;
	struct tessera_mapping **maps;
	struct dma_fence *prealloc;
	struct dma_fence *hw_fence;
	struct list_head link;
	u32 slot;
	int error;
	unsigned int resets;
	ktime_t start;
};

int tessera_sched_init(struct tessera_device *tdev);
void tessera_queue_hw_init(struct tessera_queue *q);
void tessera_queue_reap(struct tessera_queue *q, bool use_head);
void tessera_queue_cancel(struct tessera_queue *q, int error);

int tessera_file_init(struct tessera_file *tfile);
void tessera_file_fini(struct tessera_file *tfile);

int tessera_ioctl_submit(struct drm_device *drm, void *data,
			 struct drm_file *file);
int tessera_ioctl_job_status(struct drm_device *drm, void *data,
			     struct drm_file *file);

#endif /* __TESSERA_JOB_H__ */
