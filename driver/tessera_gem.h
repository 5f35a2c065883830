/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_GEM_H__
#define __TESSERA_GEM_H__

#include <linux/kref.h>
#include <drm/drm_gem_shmem_helper.h>
#include <drm/drm_mm.h>

#include "tessera_ctx.h"

/**
 * struct tessera_bo - a buffer object in system memory or HBM
 * @base: shmem object; for HBM buffers only its GEM object is used
 * @hbm: the buffer lives in HBM at @hbm_node
 * @device_read_only: mapped into contexts without TSR_PTE_WRITE
 * @hbm_node: the buffer's range of HBM
 * @pinned: bytes of system memory charged to the pinned-memory limit
 * @user: the user whose locked memory (RLIMIT_MEMLOCK) @pinned is charged
 *	to (a reference), or NULL when not charged (CAP_IPC_LOCK)
 * @lock: protects @mappings
 * @mappings: its mappings into contexts
 * @shrink_link: entry in tdev->shrinker_list while marked
 *	DRM_TESSERA_MADV_DONTNEED (tdev->shrinker_lock)
 * @attachments: dma-buf attachments pinning its pages (under its resv)
 */
struct tessera_bo {
	struct drm_gem_shmem_object base;
	bool hbm;
	bool device_read_only;
	struct drm_mm_node hbm_node;
	u64 pinned;
	struct user_struct *user;
	/* protects mappings and windows */
	struct mutex lock;
	struct list_head mappings;
	/* ICI windows open on the buffer: never purged while other chips may write */
	unsigned int windows;
	struct list_head shrink_link;
	unsigned int attachments;
};

/**
 * struct tessera_mapping - a buffer object mapped into one context
 * @ref: held by each handle of the buffer in the context's file and by
 *	each job that uses it
 * @bo: the buffer (not a reference: every holder of @ref holds one)
 * @ctx: the context (a reference)
 * @va: the range of device VA, one guard page longer than the buffer
 * @bo_link: entry in bo->mappings (bo->lock)
 * @ctx_link: entry in ctx->mappings (ctx->lock)
 */
struct tessera_mapping {
	struct kref ref;
	struct tessera_bo *bo;
	struct tessera_ctx *ctx;
	struct drm_mm_node va;
	struct list_head bo_link;
	struct list_head ctx_link;
};

static inline struct tessera_bo *to_tessera_bo(struct drm_gem_object *obj)
{
	return container_of(to_drm_gem_shmem_obj(obj), struct tessera_bo, base);
}

struct drm_gem_object *tessera_gem_create_object(struct drm_device *drm,
						 size_t size);
struct tessera_mapping *tessera_mapping_get(struct tessera_bo *bo,
					    struct tessera_ctx *ctx);
void tessera_mapping_put(struct tessera_mapping *map);
void tessera_bo_unplug(struct tessera_bo *bo);

int tessera_hbm_init(struct tessera_device *tdev);
u64 tessera_hbm_free(struct tessera_device *tdev);

int tessera_ioctl_bo_create(struct drm_device *drm, void *data,
			    struct drm_file *file);
int tessera_ioctl_bo_info(struct drm_device *drm, void *data,
			  struct drm_file *file);
int tessera_ioctl_bo_madvise(struct drm_device *drm, void *data,
			     struct drm_file *file);
int tessera_shrinker_init(struct tessera_device *tdev);
int tessera_bo_window_hold(struct tessera_bo *bo);
void tessera_bo_window_release(struct tessera_bo *bo);

#endif /* __TESSERA_GEM_H__ */
