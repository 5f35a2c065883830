// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera buffer objects: system memory through the GEM shmem helpers,
 * HBM from a drm_mm allocator over the chip's memory, and their mappings
 * into device contexts.
 *
 * A buffer is mapped into a context when a file of that context first gets
 * a handle to it (creation, PRIME import) and unmapped when the last handle
 * is closed and no job of the context still uses it.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/dma-mapping.h>
#include <linux/dma-resv.h>
#include <linux/fs.h>
#include <linux/io.h>
#include <linux/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/user.h>
#include <linux/shmem_fs.h>
#include <linux/shrinker.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_managed.h>
#include <drm/drm_prime.h>
#include <drm/drm_print.h>
#include <drm/drm_vma_manager.h>
#include <drm/tessera_accel.h>

#include "tessera_drv.h"
#include "tessera_gem.h"
#include "tessera_mmu.h"
#include "tessera_pm.h"

/* Buffers of at least this size start on a 2 MiB boundary (large pages). */
#define TESSERA_LARGE_ALIGN_MIN		TSR_LARGE_PAGE_SIZE

static u64 tessera_bo_alignment(u64 size)
{
	return size >= TESSERA_LARGE_ALIGN_MIN ? TSR_LARGE_PAGE_SIZE : PAGE_SIZE;
}

/* ------------------------------------------------------------ mappings */

static struct tessera_mapping *tessera_mapping_find(struct tessera_bo *bo,
						    struct tessera_ctx *ctx)
{
	struct tessera_mapping *map;

	lockdep_assert_held(&bo->lock);
	list_for_each_entry(map, &bo->mappings, bo_link)
		if (map->ctx == ctx)
			return map;
	return NULL;
}

/*
 * Map @bo into @ctx, whose pages (for a system-memory buffer) are pinned
 * in @sgt.  Only this buffer's lock is held: mapping a large buffer holds
 * up no other buffer's users.
 */
static struct tessera_mapping *tessera_mapping_create(struct tessera_bo *bo,
						      struct tessera_ctx *ctx,
						      struct sg_table *sgt)
{
	u64 size = bo->base.base.size, prot = TESSERA_MAP_READ;
	struct tessera_mapping *map;
	int ret;

	lockdep_assert_held(&bo->lock);

	if (!bo->device_read_only)
		prot |= TESSERA_MAP_WRITE;
	map = kzalloc(sizeof(*map), GFP_KERNEL_ACCOUNT);
	if (!map)
		return ERR_PTR(-ENOMEM);
	kref_init(&map->ref);
	map->bo = bo;

	/* One unmapped guard page after each buffer catches overruns. */
	mutex_lock(&ctx->lock);
	ret = drm_mm_insert_node_generic(&ctx->va, &map->va, size + PAGE_SIZE,
					 tessera_bo_alignment(size), 0,
					 DRM_MM_INSERT_BEST);
	mutex_unlock(&ctx->lock);
	if (ret) {
		kfree(map);
		return ERR_PTR(ret == -ENOSPC ? -ENOMEM : ret);
	}

	/* A failure point where the page tables' allocation may fail. */
	if (should_fail(&tessera_fail_bo_map, size))
		ret = -ENOMEM;
	else if (bo->hbm)
		ret = tessera_mmu_map_hbm(ctx, map->va.start, bo->hbm_node.start,
					  size, prot);
	else
		ret = tessera_mmu_map_sgt(ctx, map->va.start, sgt, size, prot);

	mutex_lock(&ctx->lock);
	if (ret)
		drm_mm_remove_node(&map->va);
	else
		list_add_tail(&map->ctx_link, &ctx->mappings);
	mutex_unlock(&ctx->lock);
	if (ret) {
		kfree(map);
		return ERR_PTR(ret);
	}

	map->ctx = tessera_ctx_get(ctx);
	list_add_tail(&map->bo_link, &bo->mappings);
	return map;
}

/* The last reference is gone; called by kref_put_mutex() with bo->lock. */
static void tessera_mapping_release(struct kref *ref)
{
	struct tessera_mapping *map = container_of(ref, struct tessera_mapping,
						   ref);
	struct tessera_ctx *ctx = map->ctx;

	list_del(&map->bo_link);
	mutex_unlock(&map->bo->lock);

	mutex_lock(&ctx->lock);
	list_del(&map->ctx_link);
	tessera_mmu_unmap_locked(ctx, map->va.start, map->bo->base.base.size);
	drm_mm_remove_node(&map->va);
	mutex_unlock(&ctx->lock);
	tessera_mmu_invalidate(ctx->tdev, ctx->id);

	tessera_ctx_put(ctx);
	kfree(map);
}

/**
 * tessera_mapping_get() - a reference to @bo's mapping in @ctx
 * @bo: the buffer
 * @ctx: the context
 *
 * Return: the mapping, or NULL if @ctx holds no handle to @bo.
 */
struct tessera_mapping *tessera_mapping_get(struct tessera_bo *bo,
					    struct tessera_ctx *ctx)
{
	struct tessera_mapping *map;

	mutex_lock(&bo->lock);
	map = tessera_mapping_find(bo, ctx);
	if (map)
		kref_get(&map->ref);
	mutex_unlock(&bo->lock);
	return map;
}

void tessera_mapping_put(struct tessera_mapping *map)
{
	kref_put_mutex(&map->ref, tessera_mapping_release, &map->bo->lock);
}

/* ------------------------------------------------------- object hooks */

/*
 * A purged buffer's contents are gone: whatever would map or share them
 * (a handle in another context, mmap, PRIME, vmap, an ICI window) fails
 * with -EFAULT, the fence error of a job that touches it, rather than
 * finding fresh zeroed pages where its data was.  A purge takes the
 * buffer's resv and lock: under either, the answer holds.
 */
static int tessera_bo_refuse_purged(struct tessera_bo *bo, const char *what)
{
	if (READ_ONCE(bo->base.madv) >= 0)
		return 0;
	drm_dbg(bo->base.base.dev, "%s: the buffer was purged (BO_MADVISE)\n",
		what);
	return -EFAULT;
}

static void tessera_shmem_purge(struct drm_gem_shmem_object *shmem);

/*
 * A purge that came between tessera_bo_open()'s first look and its
 * drm_gem_shmem_get_pages_sgt() left pages the shmem helper allocated and
 * pinned afresh, which nothing will use and no charge covers: purged
 * again, they go back at once rather than when the buffer is freed.
 */
static void tessera_bo_repurge(struct tessera_bo *bo)
{
	struct drm_gem_shmem_object *shmem = &bo->base;

	dma_resv_lock(shmem->base.resv, NULL);
	if (shmem->madv < 0 && shmem->sgt)
		tessera_shmem_purge(shmem);
	dma_resv_unlock(shmem->base.resv);
}

/*
 * A handle to the buffer is being made for @file: map the buffer into the
 * file's context, or take another reference to the mapping it has.  The
 * handle is published only once this returns (drm_gem_handle_create_tail),
 * so every handle a lookup finds has its mapping.
 */
static int tessera_bo_open(struct drm_gem_object *obj, struct drm_file *file)
{
	struct tessera_file *tfile = file->driver_priv;
	struct tessera_bo *bo = to_tessera_bo(obj);
	struct tessera_mapping *map;
	struct sg_table *sgt = NULL;
	int ret = 0;

	/* Purged: no pages to map (checked again under bo->lock). */
	ret = tessera_bo_refuse_purged(bo, "a handle");
	if (ret)
		return ret;
	/* Pinning takes a while for a large buffer; no lock of ours is held. */
	if (!bo->hbm) {
		sgt = drm_gem_shmem_get_pages_sgt(&bo->base);
		if (IS_ERR(sgt))
			return PTR_ERR(sgt);
	}

	mutex_lock(&bo->lock);
	map = tessera_mapping_find(bo, tfile->ctx);
	if (map) {
		kref_get(&map->ref);
	} else if (bo->base.madv < 0) {
		/* Purged (under bo->lock) since @sgt was taken: no pages. */
		ret = tessera_bo_refuse_purged(bo, "a handle");
	} else {
		map = tessera_mapping_create(bo, tfile->ctx, sgt);
		if (IS_ERR(map))
			ret = PTR_ERR(map);
	}
	mutex_unlock(&bo->lock);
	if (ret == -EFAULT && sgt)
		tessera_bo_repurge(bo);
	return ret;
}

static void tessera_bo_close(struct drm_gem_object *obj, struct drm_file *file)
{
	struct tessera_file *tfile = file->driver_priv;
	struct tessera_bo *bo = to_tessera_bo(obj);
	struct tessera_mapping *map;

	mutex_lock(&bo->lock);
	map = tessera_mapping_find(bo, tfile->ctx);
	mutex_unlock(&bo->lock);
	/* The handle's own reference keeps @map alive until this put. */
	if (!WARN_ON(!map))
		tessera_mapping_put(map);
}

/**
 * tessera_bo_unplug() - give back the DMA mapping of a buffer's pages
 * @bo: a buffer of an unplugged device
 *
 * DMA mappings belong to the bound device and go at unbind.  The pages
 * stay pinned (user mappings still use them) until the buffer is freed,
 * which then finds no mapping to undo.
 */
void tessera_bo_unplug(struct tessera_bo *bo)
{
	struct drm_gem_shmem_object *shmem = &bo->base;

	if (bo->hbm || shmem->base.import_attach)
		return;
	dma_resv_lock(shmem->base.resv, NULL);
	if (shmem->sgt) {
		dma_unmap_sgtable(shmem->base.dev->dev, shmem->sgt,
				  DMA_BIDIRECTIONAL, 0);
		sg_free_table(shmem->sgt);
		kfree(shmem->sgt);
		shmem->sgt = NULL;
	}
	dma_resv_unlock(shmem->base.resv);
}

/* ------------------------------------------------------- pinned memory */

/* System memory pinned by every buffer of every Tessera device. */
static atomic64_t tessera_pinned_bytes = ATOMIC64_INIT(0);

static u64 tessera_pinned_limit(void)
{
	if (tessera_max_pinned_mb)
		return (u64)tessera_max_pinned_mb << 20;
	return (u64)totalram_pages() * PAGE_SIZE / 2;
}

/*
 * Charge @size bytes of a new system-memory buffer against the limit.  Its
 * pages stay pinned while it is mapped, where neither reclaim nor the OOM
 * killer's accounting of its owner can see them: past the limit the
 * allocation fails, rather than a bystander being killed later.
 */
static int tessera_pin_charge(struct tessera_device *tdev, u64 size)
{
	u64 limit = tessera_pinned_limit();

	if (atomic64_add_return(size, &tessera_pinned_bytes) <= limit)
		return 0;
	atomic64_sub(size, &tessera_pinned_bytes);
	drm_dbg(&tdev->drm, "BO_CREATE: %llu bytes more would pass the %llu-byte limit on pinned memory (max_pinned_mb)\n",
		size, limit);
	return -ENOMEM;
}

static void tessera_pin_uncharge(u64 size)
{
	atomic64_sub(size, &tessera_pinned_bytes);
}

/*
 * Charge @bo's @size bytes to the calling user's locked memory, against
 * RLIMIT_MEMLOCK, as io_uring and RDMA charge the pages they pin: so one
 * user cannot take the whole device-wide limit from the others.
 * CAP_IPC_LOCK lifts the limit, as it does for mlock().
 */
static int tessera_pin_charge_user(struct tessera_device *tdev,
				   struct tessera_bo *bo, u64 size)
{
	unsigned long pages = size >> PAGE_SHIFT, limit, locked;
	struct user_struct *user = current_user();

	if (capable(CAP_IPC_LOCK))
		return 0;
	limit = rlimit(RLIMIT_MEMLOCK) >> PAGE_SHIFT;
	locked = atomic_long_read(&user->locked_vm);
	do {
		if (locked + pages > limit) {
			drm_dbg(&tdev->drm, "BO_CREATE: %llu bytes more would pass the user's %lu-byte RLIMIT_MEMLOCK\n",
				size, limit << PAGE_SHIFT);
			return -ENOMEM;
		}
	} while (!atomic_long_try_cmpxchg(&user->locked_vm, &locked,
					  locked + pages));
	bo->user = get_uid(user);
	return 0;
}

static void tessera_pin_uncharge_user(struct tessera_bo *bo)
{
	if (!bo->user)
		return;
	atomic_long_sub(bo->pinned >> PAGE_SHIFT, &bo->user->locked_vm);
	free_uid(bo->user);
}

/* ----------------------------------------------------- system memory */

static void tessera_shmem_free(struct drm_gem_object *obj)
{
	struct tessera_device *tdev = to_tessera_device(obj->dev);
	struct tessera_bo *bo = to_tessera_bo(obj);

	WARN_ON(!list_empty(&bo->mappings));
	mutex_lock(&tdev->shrinker_lock);
	list_del(&bo->shrink_link);
	mutex_unlock(&tdev->shrinker_lock);
	tessera_pin_uncharge_user(bo);
	tessera_pin_uncharge(bo->pinned);
	mutex_destroy(&bo->lock);
	drm_gem_shmem_free(&bo->base);
}

static enum drm_gem_object_status tessera_shmem_status(struct drm_gem_object *obj)
{
	struct drm_gem_shmem_object *shmem = to_drm_gem_shmem_obj(obj);
	enum drm_gem_object_status status = 0;

	if (shmem->pages)
		status |= DRM_GEM_OBJECT_RESIDENT;
	if (shmem->madv > 0)
		status |= DRM_GEM_OBJECT_PURGEABLE;
	return status;
}

/*
 * A dma-buf attachment (another device's import) pins the pages: never a
 * purged buffer's new ones, and the buffer is not purged while attached.
 * drm_gem_shmem_is_purgeable() sees an export only while the buffer has
 * handles; the attachment outlives them.
 */
static int tessera_shmem_pin(struct drm_gem_object *obj)
{
	struct tessera_bo *bo = to_tessera_bo(obj);
	int ret;

	dma_resv_assert_held(obj->resv);
	ret = tessera_bo_refuse_purged(bo, "dma-buf attach") ?:
	      drm_gem_shmem_object_pin(obj);
	if (!ret)
		bo->attachments++;
	return ret;
}

static void tessera_shmem_unpin(struct drm_gem_object *obj)
{
	dma_resv_assert_held(obj->resv);
	to_tessera_bo(obj)->attachments--;
	drm_gem_shmem_object_unpin(obj);
}

static int tessera_shmem_vmap(struct drm_gem_object *obj,
			      struct iosys_map *map)
{
	dma_resv_assert_held(obj->resv);
	return tessera_bo_refuse_purged(to_tessera_bo(obj), "vmap") ?:
	       drm_gem_shmem_object_vmap(obj, map);
}

/*
 * A new CPU mapping of a purged buffer fails.  Its pages are held from the
 * check until the mapping holds them itself, so a purge in between leaves
 * a mapping that raises SIGBUS, as one made before the purge does, never
 * one of fresh zeroed pages.
 */
static int tessera_shmem_mmap(struct drm_gem_object *obj,
			      struct vm_area_struct *vma)
{
	int ret;

	/* An import maps through its exporter, whose pages they are. */
	if (obj->import_attach)
		return drm_gem_shmem_object_mmap(obj, vma);
	dma_resv_lock(obj->resv, NULL);
	ret = tessera_bo_refuse_purged(to_tessera_bo(obj), "mmap") ?:
	      drm_gem_shmem_object_pin(obj);
	dma_resv_unlock(obj->resv);
	if (ret)
		return ret;
	ret = drm_gem_shmem_object_mmap(obj, vma);
	dma_resv_lock(obj->resv, NULL);
	drm_gem_shmem_object_unpin(obj);
	dma_resv_unlock(obj->resv);
	return ret;
}

/*
 * Once exported, a buffer is not purged (drm_gem_shmem_is_purgeable());
 * one purged before is not exported.  Should a purge come between this
 * check and the export, an importer's attachment (tessera_shmem_pin) and
 * mapping still fail.
 */
static struct dma_buf *tessera_shmem_export(struct drm_gem_object *obj,
					    int flags)
{
	int ret;

	dma_resv_lock(obj->resv, NULL);
	ret = tessera_bo_refuse_purged(to_tessera_bo(obj), "PRIME export");
	dma_resv_unlock(obj->resv);
	return ret ? ERR_PTR(ret) : drm_gem_prime_export(obj, flags);
}

static const struct drm_gem_object_funcs tessera_shmem_funcs = {
	.free = tessera_shmem_free,
	.open = tessera_bo_open,
	.close = tessera_bo_close,
	.print_info = drm_gem_shmem_object_print_info,
	.export = tessera_shmem_export,
	.pin = tessera_shmem_pin,
	.unpin = tessera_shmem_unpin,
	.get_sg_table = drm_gem_shmem_object_get_sg_table,
	.vmap = tessera_shmem_vmap,
	.vunmap = drm_gem_shmem_object_vunmap,
	.mmap = tessera_shmem_mmap,
	.status = tessera_shmem_status,
	.vm_ops = &drm_gem_shmem_vm_ops,
};

/* drm_driver.gem_create_object: system-memory buffers, made or imported. */
struct drm_gem_object *tessera_gem_create_object(struct drm_device *drm,
						 size_t size)
{
	struct tessera_bo *bo;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	mutex_init(&bo->lock);
	INIT_LIST_HEAD(&bo->mappings);
	INIT_LIST_HEAD(&bo->shrink_link);
	bo->base.base.funcs = &tessera_shmem_funcs;
	return &bo->base.base;
}

/* --------------------------------------------------------------- HBM */

static void tessera_hbm_bo_free(struct drm_gem_object *obj)
{
	struct tessera_device *tdev = to_tessera_device(obj->dev);
	struct tessera_bo *bo = to_tessera_bo(obj);

	WARN_ON(!list_empty(&bo->mappings));
	mutex_destroy(&bo->lock);
	mutex_lock(&tdev->hbm_lock);
	drm_mm_remove_node(&bo->hbm_node);
	tdev->hbm_used -= obj->size;
	mutex_unlock(&tdev->hbm_lock);
	drm_gem_object_release(obj);
	kfree(bo);
}

static int tessera_hbm_mmap(struct drm_gem_object *obj,
			    struct vm_area_struct *vma)
{
	struct tessera_device *tdev = to_tessera_device(obj->dev);
	struct tessera_bo *bo = to_tessera_bo(obj);
	int idx, ret;

	/* A private copy of device memory would silently miss the device. */
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;
	if (!drm_dev_enter(obj->dev, &idx))
		return -ENODEV;
	/*
	 * User space may touch HBM through the mapping at any time: the chip
	 * stays resumed until the mapping's last VMA is closed
	 * (tessera_hbm_vm_close()).  On a failure here no close follows.
	 */
	ret = tessera_pm_get(tdev);
	if (ret)
		goto out;
	/* drm_gem_mmap_obj() has checked the size; the offset is the object's. */
	vm_flags_set(vma, VM_PFNMAP | VM_IO | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot = pgprot_writecombine(vm_get_page_prot(vma->vm_flags));
	ret = io_remap_pfn_range(vma, vma->vm_start,
				 (tdev->hbm_bus + bo->hbm_node.start) >> PAGE_SHIFT,
				 vma->vm_end - vma->vm_start, vma->vm_page_prot);
	if (ret)
		tessera_pm_put(tdev);
out:
	drm_dev_exit(idx);
	return ret;
}

/* A copy of the VMA (fork(), mremap(), a split): its own PM reference. */
static void tessera_hbm_vm_open(struct vm_area_struct *vma)
{
	struct drm_gem_object *obj = vma->vm_private_data;

	tessera_pm_get_noresume(to_tessera_device(obj->dev));
	drm_gem_vm_open(vma);
}

static void tessera_hbm_vm_close(struct vm_area_struct *vma)
{
	struct drm_gem_object *obj = vma->vm_private_data;

	tessera_pm_put(to_tessera_device(obj->dev));
	drm_gem_vm_close(vma);
}

static struct dma_buf *tessera_hbm_export(struct drm_gem_object *obj,
					  int flags)
{
	drm_dbg(obj->dev, "HBM buffers cannot be exported\n");
	return ERR_PTR(-EOPNOTSUPP);
}

static void tessera_hbm_print_info(struct drm_printer *p, unsigned int indent,
				   const struct drm_gem_object *obj)
{
	const struct tessera_bo *bo =
		container_of(obj, struct tessera_bo, base.base);

	drm_printf_indent(p, indent, "hbm_offset=0x%llx\n", bo->hbm_node.start);
}

static enum drm_gem_object_status tessera_hbm_status(struct drm_gem_object *obj)
{
	return DRM_GEM_OBJECT_RESIDENT;
}

static const struct vm_operations_struct tessera_hbm_vm_ops = {
	.open = tessera_hbm_vm_open,
	.close = tessera_hbm_vm_close,
};

static const struct drm_gem_object_funcs tessera_hbm_funcs = {
	.free = tessera_hbm_bo_free,
	.open = tessera_bo_open,
	.close = tessera_bo_close,
	.print_info = tessera_hbm_print_info,
	.export = tessera_hbm_export,
	.mmap = tessera_hbm_mmap,
	.status = tessera_hbm_status,
	.vm_ops = &tessera_hbm_vm_ops,
};

/*
 * No buffer sees what the previous owner of its HBM left there.  The chip
 * is resumed to be written, as for a CPU mapping.
 */
static int tessera_hbm_clear(struct tessera_device *tdev, u64 offset,
			     u64 size)
{
	int ret = tessera_pm_get(tdev);

	if (ret)
		return ret;
	memset_io(tdev->hbm + offset, 0, size);
	tessera_pm_put(tdev);
	return 0;
}

static struct drm_gem_object *tessera_hbm_bo_create(struct tessera_device *tdev,
						    u64 size)
{
	struct tessera_bo *bo;
	struct drm_gem_object *obj;
	int ret;

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	mutex_init(&bo->lock);
	INIT_LIST_HEAD(&bo->mappings);
	INIT_LIST_HEAD(&bo->shrink_link);
	bo->hbm = true;
	obj = &bo->base.base;

	mutex_lock(&tdev->hbm_lock);
	ret = drm_mm_insert_node_generic(&tdev->hbm_mm, &bo->hbm_node, size,
					 tessera_bo_alignment(size), 0,
					 DRM_MM_INSERT_BEST);
	if (!ret)
		tdev->hbm_used += size;
	mutex_unlock(&tdev->hbm_lock);
	if (ret) {
		drm_dbg(&tdev->drm, "no %llu bytes of HBM free\n", size);
		mutex_destroy(&bo->lock);
		kfree(bo);
		return ERR_PTR(-ENOMEM);
	}

	obj->funcs = &tessera_hbm_funcs;
	drm_gem_private_object_init(&tdev->drm, obj, size);
	ret = tessera_hbm_clear(tdev, bo->hbm_node.start, size) ?:
	      drm_gem_create_mmap_offset(obj);
	if (ret) {
		drm_gem_object_put(obj);
		return ERR_PTR(ret);
	}
	return obj;
}

u64 tessera_hbm_free(struct tessera_device *tdev)
{
	u64 used;

	mutex_lock(&tdev->hbm_lock);
	used = tdev->hbm_used;
	mutex_unlock(&tdev->hbm_lock);
	return tdev->hbm_size - used;
}

static void tessera_hbm_release(struct drm_device *drm, void *arg)
{
	struct tessera_device *tdev = to_tessera_device(drm);

	drm_mm_takedown(&tdev->hbm_mm);
}

int tessera_hbm_init(struct tessera_device *tdev)
{
	int ret;

	ret = drmm_mutex_init(&tdev->drm, &tdev->hbm_lock);
	if (ret)
		return ret;
	drm_mm_init(&tdev->hbm_mm, 0, tdev->hbm_size);
	return drmm_add_action_or_reset(&tdev->drm, tessera_hbm_release, NULL);
}

/* ------------------------------------------------------------ shrinker */

/**
 * tessera_bo_window_hold() - an ICI window is being opened on @bo
 * @bo: the buffer
 *
 * Other chips may write the buffer through the window at any time: while
 * one is open the shrinker leaves the buffer (tessera_bo_try_purge()).
 *
 * Return: 0, or -EFAULT if the buffer was purged.
 */
int tessera_bo_window_hold(struct tessera_bo *bo)
{
	int ret;

	mutex_lock(&bo->lock);
	ret = tessera_bo_refuse_purged(bo, "WINDOW_OPEN");
	if (!ret)
		bo->windows++;
	mutex_unlock(&bo->lock);
	return ret;
}

/* The window tessera_bo_window_hold() counted is closed. */
void tessera_bo_window_release(struct tessera_bo *bo)
{
	mutex_lock(&bo->lock);
	bo->windows--;
	mutex_unlock(&bo->lock);
}

/* Undo the ctx->lock trylocks of @bo's mappings before @last. */
static void tessera_bo_unlock_ctxs(struct tessera_bo *bo,
				   struct tessera_mapping *last)
{
	struct tessera_mapping *map;

	list_for_each_entry(map, &bo->mappings, bo_link) {
		if (map == last)
			break;
		mutex_unlock(&map->ctx->lock);
	}
}

/*
 * drm_gem_shmem_purge() but for its drm_gem_free_mmap_offset(): the mmap
 * offset stays the purged buffer's, where an mmap fails
 * (tessera_shmem_mmap()).  Freed, it would go to the next buffer that
 * asks BO_INFO for one, and an mmap at the offset a program kept would
 * map that other buffer as if it were this one.
 */
static void tessera_shmem_purge(struct drm_gem_shmem_object *shmem)
{
	struct drm_gem_object *obj = &shmem->base;
	struct inode *inode = file_inode(obj->filp);

	dma_resv_assert_held(obj->resv);
	dma_unmap_sgtable(obj->dev->dev, shmem->sgt, DMA_BIDIRECTIONAL, 0);
	sg_free_table(shmem->sgt);
	kfree(shmem->sgt);
	shmem->sgt = NULL;
	drm_gem_shmem_put_pages(shmem);
	shmem->madv = -1;
	drm_vma_node_unmap(&obj->vma_node, obj->dev->anon_inode->i_mapping);
	/* Back to the system now: reclaim asked for it. */
	shmem_truncate_range(inode, 0, (loff_t)-1);
	invalidate_mapping_pages(inode->i_mapping, 0, (loff_t)-1);
}

/*
 * Drop an idle DONTNEED buffer's pages: every context's PTEs and TLB first,
 * then the pages.  The VA ranges stay reserved, so a job that still touches
 * the buffer faults rather than reaching another buffer.  Reclaim may hold
 * any of these locks: each is only tried.
 *
 * Return: the pages given back to the system: none if the buffer was not
 * purged, or if a CPU mapping still holds them.
 */
static unsigned long tessera_bo_try_purge(struct tessera_device *tdev,
					  struct tessera_bo *bo)
{
	struct drm_gem_shmem_object *shmem = &bo->base;
	struct tessera_mapping *map;
	unsigned long freed = 0;

	lockdep_assert_held(&tdev->shrinker_lock);
	if (!mutex_trylock(&bo->lock))
		return false;
	if (!dma_resv_trylock(shmem->base.resv))
		goto out_bo;
	if (!drm_gem_shmem_is_purgeable(shmem) || bo->windows ||
	    bo->attachments ||
	    !dma_resv_test_signaled(shmem->base.resv, DMA_RESV_USAGE_BOOKKEEP))
		goto out_resv;

	list_for_each_entry(map, &bo->mappings, bo_link) {
		if (!mutex_trylock(&map->ctx->lock)) {
			tessera_bo_unlock_ctxs(bo, map);
			goto out_resv;
		}
	}
	list_for_each_entry(map, &bo->mappings, bo_link) {
		tessera_mmu_unmap_locked(map->ctx, map->va.start,
					 shmem->base.size);
		mutex_unlock(&map->ctx->lock);
		tessera_mmu_invalidate(tdev, map->ctx->id);
	}

	tessera_shmem_purge(shmem);
	tessera_count(tdev, TESSERA_CNT_PURGED_BOS);
	atomic64_add(shmem->base.size,
		     &tdev->counters[TESSERA_CNT_PURGED_BYTES]);
	/*
	 * The pages are gone unless a CPU mapping still holds them (its PTEs
	 * are zapped, but the pages go only when it is unmapped): their
	 * charge goes with them, or stays until the buffer is freed, so that
	 * mapping and purging again and again cannot pin past the caps.
	 */
	if (!shmem->pages_use_count) {
		tessera_pin_uncharge(bo->pinned);
		if (bo->user)
			atomic_long_sub(bo->pinned >> PAGE_SHIFT,
					&bo->user->locked_vm);
		bo->pinned = 0;
		freed = shmem->base.size >> PAGE_SHIFT;
	}
	list_del_init(&bo->shrink_link);
out_resv:
	dma_resv_unlock(shmem->base.resv);
out_bo:
	mutex_unlock(&bo->lock);
	return freed;
}

static unsigned long tessera_shrinker_count(struct shrinker *shrinker,
					    struct shrink_control *sc)
{
	struct tessera_device *tdev = shrinker->private_data;
	unsigned long count = 0;
	struct tessera_bo *bo;

	if (!mutex_trylock(&tdev->shrinker_lock))
		return 0;
	list_for_each_entry(bo, &tdev->shrinker_list, shrink_link)
		if (drm_gem_shmem_is_purgeable(&bo->base))
			count += bo->base.base.size >> PAGE_SHIFT;
	mutex_unlock(&tdev->shrinker_lock);
	return count ?: SHRINK_EMPTY;
}

static unsigned long tessera_shrinker_scan(struct shrinker *shrinker,
					   struct shrink_control *sc)
{
	struct tessera_device *tdev = shrinker->private_data;
	struct tessera_bo *bo, *next;
	unsigned long freed = 0;

	if (!mutex_trylock(&tdev->shrinker_lock))
		return SHRINK_STOP;
	list_for_each_entry_safe(bo, next, &tdev->shrinker_list, shrink_link) {
		if (freed >= sc->nr_to_scan)
			break;
		freed += tessera_bo_try_purge(tdev, bo);
	}
	mutex_unlock(&tdev->shrinker_lock);
	return freed ?: SHRINK_STOP;
}

static void tessera_shrinker_release(struct drm_device *drm, void *arg)
{
	shrinker_free(to_tessera_device(drm)->shrinker);
}

int tessera_shrinker_init(struct tessera_device *tdev)
{
	int ret;

	ret = drmm_mutex_init(&tdev->drm, &tdev->shrinker_lock);
	if (ret)
		return ret;
	INIT_LIST_HEAD(&tdev->shrinker_list);
	tdev->shrinker = shrinker_alloc(0, "drm-tessera:%s",
					dev_name(tdev->drm.dev));
	if (!tdev->shrinker)
		return -ENOMEM;
	tdev->shrinker->count_objects = tessera_shrinker_count;
	tdev->shrinker->scan_objects = tessera_shrinker_scan;
	tdev->shrinker->private_data = tdev;
	shrinker_register(tdev->shrinker);
	return drmm_add_action_or_reset(&tdev->drm, tessera_shrinker_release,
					NULL);
}

/* -------------------------------------------------------------- ioctls */

/*
 * A system-memory buffer, charged to the pinned-memory limit and to its
 * user's.
 */
static struct drm_gem_object *tessera_shmem_bo_create(struct tessera_device *tdev,
						      u64 size)
{
	struct drm_gem_shmem_object *shmem;
	struct tessera_bo *bo;
	int ret;

	ret = tessera_pin_charge(tdev, size);
	if (ret)
		return ERR_PTR(ret);
	shmem = drm_gem_shmem_create(&tdev->drm, size);
	if (IS_ERR(shmem)) {
		tessera_pin_uncharge(size);
		return ERR_CAST(shmem);
	}
	bo = to_tessera_bo(&shmem->base);
	bo->pinned = size;
	ret = tessera_pin_charge_user(tdev, bo, size);
	if (ret) {
		/* Freeing it gives the device-wide charge back. */
		drm_gem_object_put(&shmem->base);
		return ERR_PTR(ret);
	}
	return &shmem->base;
}

int tessera_ioctl_bo_create(struct drm_device *drm, void *data,
			    struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct drm_tessera_bo_create *args = data;
	struct drm_gem_object *obj;
	u64 size;
	int idx, ret;

	if (args->flags & ~DRM_TESSERA_BO_FLAGS_ALL) {
		drm_dbg(drm, "BO_CREATE: unknown flags 0x%x\n", args->flags);
		return -EINVAL;
	}
	if (!args->size || args->size > DRM_TESSERA_BO_MAX_SIZE) {
		drm_dbg(drm, "BO_CREATE: size %llu not in 1..%llu\n", args->size,
			DRM_TESSERA_BO_MAX_SIZE);
		return -EINVAL;
	}
	size = PAGE_ALIGN(args->size);
	/* Only HBM needs the chip; system memory is the kernel's. */
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	if (args->flags & DRM_TESSERA_BO_HBM)
		obj = tessera_hbm_bo_create(tdev, size);
	else
		obj = tessera_shmem_bo_create(tdev, size);
	drm_dev_exit(idx);
	if (IS_ERR(obj))
		return PTR_ERR(obj);
	to_tessera_bo(obj)->device_read_only =
		args->flags & DRM_TESSERA_BO_DEVICE_READ_ONLY;

	/* Pins and maps the buffer (tessera_bo_open) outside drm_dev_enter. */
	ret = drm_gem_handle_create(file, obj, &args->handle);
	drm_gem_object_put(obj);
	return ret;
}

int tessera_ioctl_bo_info(struct drm_device *drm, void *data,
			  struct drm_file *file)
{
	struct tessera_file *tfile = file->driver_priv;
	struct drm_tessera_bo_info *args = data;
	struct tessera_mapping *map;
	struct drm_gem_object *obj;
	struct tessera_bo *bo;
	int ret;

	if (args->flags) {
		drm_dbg(drm, "BO_INFO: flags 0x%x must be zero\n", args->flags);
		return -EINVAL;
	}
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_tessera_bo(obj);

	ret = drm_gem_create_mmap_offset(obj);
	if (ret)
		goto out;
	/*
	 * Gone if the handle was closed since the lookup (the object lives on
	 * in our reference, its mapping does not): as if it never existed.
	 */
	map = tessera_mapping_get(bo, tfile->ctx);
	if (!map) {
		ret = -ENOENT;
		goto out;
	}
	args->device_va = map->va.start;
	tessera_mapping_put(map);

	args->mmap_offset = drm_vma_node_offset_addr(&obj->vma_node);
	args->size = obj->size;
	args->placement = bo->hbm ? DRM_TESSERA_BO_HBM : 0;
	args->pad = 0;
out:
	drm_gem_object_put(obj);
	return ret;
}

int tessera_ioctl_bo_madvise(struct drm_device *drm, void *data,
			     struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct drm_tessera_bo_madvise *args = data;
	struct drm_gem_object *obj;
	struct tessera_bo *bo;
	int ret;

	if (args->flags) {
		drm_dbg(drm, "BO_MADVISE: flags 0x%x must be zero\n",
			args->flags);
		return -EINVAL;
	}
	if (args->madv != DRM_TESSERA_MADV_WILLNEED &&
	    args->madv != DRM_TESSERA_MADV_DONTNEED) {
		drm_dbg(drm, "BO_MADVISE: unknown madv %u\n", args->madv);
		return -EINVAL;
	}
	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_tessera_bo(obj);
	if (bo->hbm) {
		drm_dbg(drm, "BO_MADVISE: handle %u is in HBM, which is never reclaimed\n",
			args->handle);
		ret = -EINVAL;
		goto out;
	}

	ret = dma_resv_lock_interruptible(obj->resv, NULL);
	if (ret)
		goto out;
	mutex_lock(&tdev->shrinker_lock);
	args->retained = drm_gem_shmem_madvise(&bo->base, args->madv);
	/* Only buffers whose pages are ours are worth a look (imports not). */
	if (args->retained && !obj->import_attach) {
		if (args->madv == DRM_TESSERA_MADV_DONTNEED)
			list_move_tail(&bo->shrink_link, &tdev->shrinker_list);
		else
			list_del_init(&bo->shrink_link);
	}
	mutex_unlock(&tdev->shrinker_lock);
	dma_resv_unlock(obj->resv);
out:
	drm_gem_object_put(obj);
	return ret;
}
