// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera contexts: one per open file, each with its own device address
 * space (tessera_mmu.c), completion records and job history.
 *
 * A context lives as long as anything refers to it: its file, the
 * mappings of buffers into it and the jobs it submitted.  It is numbered
 * in the chip's context table from its creation to its release.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/dma-mapping.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include <drm/drm_managed.h>
#include <drm/drm_print.h>

#include "tessera_ctx.h"
#include "tessera_gem.h"
#include "tessera_mmu.h"

static void tessera_ctx_free_records(struct tessera_ctx *ctx)
{
	unsigned int q;

	for (q = 0; q < TSR_MAX_QUEUES; q++) {
		if (ctx->records[q])
			dma_free_coherent(ctx->tdev->drm.dev,
					  TESSERA_RECORDS_PER_QUEUE_SIZE,
					  ctx->records[q], ctx->records_dma[q]);
		ctx->records[q] = NULL;
	}
}

/* Completion records for every queue, mapped where the rings expect them. */
static int tessera_ctx_alloc_records(struct tessera_ctx *ctx)
{
	struct tessera_device *tdev = ctx->tdev;
	unsigned int q;
	int ret;

	for (q = 0; q < tdev->num_queues; q++) {
		ctx->records[q] = dma_alloc_coherent(tdev->drm.dev,
						     TESSERA_RECORDS_PER_QUEUE_SIZE,
						     &ctx->records_dma[q],
						     GFP_KERNEL);
		if (!ctx->records[q])
			return -ENOMEM;
		ret = tessera_mmu_map_dma(ctx, TESSERA_VA_RECORDS +
					  q * TESSERA_RECORDS_PER_QUEUE_SIZE,
					  ctx->records_dma[q],
					  TESSERA_RECORDS_PER_QUEUE_SIZE,
					  TESSERA_MAP_READ | TESSERA_MAP_WRITE);
		if (ret)
			return ret;
	}
	return 0;
}

static void tessera_ctx_release(struct kref *ref)
{
	struct tessera_ctx *ctx = container_of(ref, struct tessera_ctx, ref);
	struct tessera_device *tdev = ctx->tdev;

	mutex_lock(&tdev->ctx_lock);
	list_del(&ctx->link);
	mutex_unlock(&tdev->ctx_lock);

	tessera_mmu_ctx_disable(ctx);
	WARN_ON(!list_empty(&ctx->mappings));
	drm_mm_takedown(&ctx->va);
	tessera_mmu_root_destroy(tdev, ctx->root);
	tessera_ctx_free_records(ctx);
	ida_free(&tdev->ctx_ids, ctx->id);
	kvfree(ctx->history);
	mutex_destroy(&ctx->lock);
	kfree(ctx);
}

void tessera_ctx_put(struct tessera_ctx *ctx)
{
	kref_put(&ctx->ref, tessera_ctx_release);
}

/**
 * tessera_ctx_create() - a new context with its own address space
 * @tdev: the device
 *
 * Return: the context, or ERR_PTR(-ENOSPC) when every context number is in
 * use, ERR_PTR(-ENOMEM).
 */
struct tessera_ctx *tessera_ctx_create(struct tessera_device *tdev)
{
	struct tessera_ctx *ctx;
	int ret;

	ctx = kzalloc(sizeof(*ctx), GFP_KERNEL_ACCOUNT);
	if (!ctx)
		return ERR_PTR(-ENOMEM);
	kref_init(&ctx->ref);
	ctx->tdev = tdev;
	mutex_init(&ctx->lock);
	spin_lock_init(&ctx->status_lock);
	init_waitqueue_head(&ctx->jobs_room);
	INIT_LIST_HEAD(&ctx->mappings);
	INIT_LIST_HEAD(&ctx->link);
	ctx->next_seq = 1;
	ctx->pid = task_tgid_nr(current);
	drm_mm_init(&ctx->va, TESSERA_VA_USER_START,
		    TESSERA_VA_END - TESSERA_VA_USER_START);

	ret = ida_alloc_range(&tdev->ctx_ids, 1, tdev->max_contexts - 1,
			      GFP_KERNEL);
	if (ret < 0) {
		if (ret == -ENOSPC)
			drm_dbg(&tdev->drm, "all %u contexts in use\n",
				tdev->max_contexts - 1);
		goto err_free;
	}
	ctx->id = ret;

	ret = -ENOMEM;
	ctx->history = kvcalloc(DRM_TESSERA_JOB_HISTORY, sizeof(*ctx->history),
				GFP_KERNEL_ACCOUNT);
	if (!ctx->history)
		goto err_ida;
	ctx->root = tessera_mmu_root_create(tdev);
	if (!ctx->root)
		goto err_history;
	ret = tessera_ctx_alloc_records(ctx);
	if (ret)
		goto err_tables;

	tessera_mmu_ctx_enable(ctx);
	mutex_lock(&tdev->ctx_lock);
	list_add_tail(&ctx->link, &tdev->contexts);
	mutex_unlock(&tdev->ctx_lock);
	return ctx;

err_tables:
	tessera_ctx_free_records(ctx);
	tessera_mmu_root_destroy(tdev, ctx->root);
err_history:
	kvfree(ctx->history);
err_ida:
	ida_free(&tdev->ctx_ids, ctx->id);
err_free:
	drm_mm_takedown(&ctx->va);
	mutex_destroy(&ctx->lock);
	kfree(ctx);
	return ERR_PTR(ret);
}

/**
 * tessera_ctx_unplug() - free every context's DMA memory
 * @tdev: the device, unplugged, its queues cancelled
 *
 * DMA memory belongs to the bound device and goes at unbind: the page
 * tables, the completion records and the DMA mappings of the buffers
 * mapped into each context.  The contexts of files still open live on
 * without them, and every later use fails or does nothing.
 */
void tessera_ctx_unplug(struct tessera_device *tdev)
{
	struct tessera_mapping *map;
	struct tessera_ctx *ctx;

	mutex_lock(&tdev->ctx_lock);
	list_for_each_entry(ctx, &tdev->contexts, link) {
		mutex_lock(&ctx->lock);
		list_for_each_entry(map, &ctx->mappings, ctx_link)
			tessera_bo_unplug(map->bo);
		tessera_mmu_root_destroy(tdev, ctx->root);
		ctx->root = NULL;
		tessera_ctx_free_records(ctx);
		mutex_unlock(&ctx->lock);
	}
	mutex_unlock(&tdev->ctx_lock);
}

static void tessera_ctx_ids_release(struct drm_device *drm, void *arg)
{
	ida_destroy(&to_tessera_device(drm)->ctx_ids);
}

/* Context numbers; after tessera_mmu_init() has sized the context table. */
int tessera_ctx_init(struct tessera_device *tdev)
{
	int ret;

	ret = drmm_mutex_init(&tdev->drm, &tdev->ctx_lock);
	if (ret)
		return ret;
	ida_init(&tdev->ctx_ids);
	INIT_LIST_HEAD(&tdev->contexts);
	return drmm_add_action_or_reset(&tdev->drm, tessera_ctx_ids_release,
					NULL);
}
