// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera device MMU: page tables and the context table.
 *
 * Each context (one per open file, tessera_ctx.c) owns a three-level page
 * table in coherent system memory and an entry in the chip's context
 * table.  Tables are allocated as mappings need them and freed with the
 * context.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/dma-mapping.h>
#include <linux/mm.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include <drm/drm_drv.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>

#include "tessera_hw.h"
#include "tessera_mmu.h"

/**
 * struct tessera_pt - one 4 KiB page table
 * @entries: the table, as the chip reads it
 * @dma: bus address of @entries
 * @children: next-level tables by index; absent for level 0
 */
struct tessera_pt {
	__le64 *entries;
	dma_addr_t dma;
	struct tessera_pt *children[];
};

static struct tessera_pt *tessera_pt_alloc(struct tessera_device *tdev,
					   unsigned int level)
{
	struct tessera_pt *pt;

	pt = kzalloc(struct_size(pt, children, level ? TSR_PT_ENTRIES : 0),
		     GFP_KERNEL_ACCOUNT);
	if (!pt)
		return NULL;
	pt->entries = dma_alloc_coherent(tdev->drm.dev, TSR_PAGE_SIZE, &pt->dma,
					 GFP_KERNEL);
	if (!pt->entries) {
		kfree(pt);
		return NULL;
	}
	return pt;
}

static void tessera_pt_free(struct tessera_device *tdev, struct tessera_pt *pt,
			    unsigned int level)
{
	unsigned int i;

	if (!pt)
		return;
	if (level)
		for (i = 0; i < TSR_PT_ENTRIES; i++)
			tessera_pt_free(tdev, pt->children[i], level - 1);
	dma_free_coherent(tdev->drm.dev, TSR_PAGE_SIZE, pt->entries, pt->dma);
	kfree(pt);
}

static void tessera_pt_set(struct tessera_pt *pt, unsigned int idx, u64 entry)
{
	WRITE_ONCE(pt->entries[idx], cpu_to_le64(entry));
}

static u64 tessera_pt_get(struct tessera_pt *pt, unsigned int idx)
{
	return le64_to_cpu(READ_ONCE(pt->entries[idx]));
}

/* The table below @pt at @idx, made if needed; @level is the child's. */
static struct tessera_pt *tessera_pt_child(struct tessera_ctx *ctx,
					   struct tessera_pt *pt,
					   unsigned int idx, unsigned int level)
{
	struct tessera_pt *child = pt->children[idx];

	if (!child) {
		child = tessera_pt_alloc(ctx->tdev, level);
		if (!child)
			return NULL;
		pt->children[idx] = child;
	}
	/* A 2 MiB leaf that was here has been unmapped; point at the table. */
	tessera_pt_set(pt, idx, child->dma | TSR_PTE_VALID);
	return child;
}

/* Drop cached translations of context @id; a no-op once the chip is gone. */
void tessera_mmu_invalidate(struct tessera_device *tdev, u32 id)
{
	int idx;

	if (!drm_dev_enter(&tdev->drm, &idx))
		return;
	tessera_reg_write(tdev, TSR_REG_MMU_INVALIDATE, id);
	drm_dev_exit(idx);
}

/*
 * Map @size bytes at @va to the contiguous range at @addr (a bus address,
 * or an HBM offset when @prot has TSR_PTE_HBM), with 2 MiB pages where both
 * sides are aligned.
 */
static int tessera_mmu_map_contig_locked(struct tessera_ctx *ctx, u64 va,
					 u64 addr, u64 size, u64 prot)
{
	lockdep_assert_held(&ctx->lock);

	while (size) {
		struct tessera_pt *l1, *l0;

		l1 = tessera_pt_child(ctx, ctx->root, TSR_PT_INDEX(va, 2), 1);
		if (!l1)
			return -ENOMEM;
		if (IS_ALIGNED(va | addr, TSR_LARGE_PAGE_SIZE) &&
		    size >= TSR_LARGE_PAGE_SIZE) {
			tessera_pt_set(l1, TSR_PT_INDEX(va, 1),
				       addr | prot | TSR_PTE_VALID | TSR_PTE_LEAF);
			va += TSR_LARGE_PAGE_SIZE;
			addr += TSR_LARGE_PAGE_SIZE;
			size -= TSR_LARGE_PAGE_SIZE;
			continue;
		}
		l0 = tessera_pt_child(ctx, l1, TSR_PT_INDEX(va, 1), 0);
		if (!l0)
			return -ENOMEM;
		tessera_pt_set(l0, TSR_PT_INDEX(va, 0), addr | prot | TSR_PTE_VALID);
		va += TSR_PAGE_SIZE;
		addr += TSR_PAGE_SIZE;
		size -= TSR_PAGE_SIZE;
	}
	return 0;
}

/**
 * tessera_mmu_unmap_locked() - remove a range from a context's page tables
 * @ctx: the context, whose lock the caller holds
 * @va: device VA the range was mapped at
 * @size: bytes
 *
 * The caller invalidates the chip's cached translations once it has
 * dropped the lock (tessera_mmu_invalidate()); the next job of the context
 * then no longer reaches the range.
 */
void tessera_mmu_unmap_locked(struct tessera_ctx *ctx, u64 va, u64 size)
{
	u64 end = va + size;

	lockdep_assert_held(&ctx->lock);
	/* Unplugged: the tables are gone with the device. */
	if (!ctx->root)
		return;

	while (va < end) {
		struct tessera_pt *l1, *l0;
		unsigned int i1;

		l1 = ctx->root->children[TSR_PT_INDEX(va, 2)];
		i1 = TSR_PT_INDEX(va, 1);
		if (l1 && (tessera_pt_get(l1, i1) & TSR_PTE_LEAF)) {
			tessera_pt_set(l1, i1, 0);
			va = ALIGN_DOWN(va, TSR_LARGE_PAGE_SIZE) + TSR_LARGE_PAGE_SIZE;
			continue;
		}
		l0 = l1 ? l1->children[i1] : NULL;
		if (l0)
			tessera_pt_set(l0, TSR_PT_INDEX(va, 0), 0);
		va += TSR_PAGE_SIZE;
	}
}

/**
 * tessera_mmu_map_sgt() - map a scatter list into a context
 * @ctx: the context
 * @va: device VA, page-aligned
 * @sgt: DMA-mapped pages
 * @size: bytes to map, page-aligned
 * @prot: TESSERA_MAP_* permissions
 *
 * Return: 0, or -ENOMEM with nothing left mapped.
 */
int tessera_mmu_map_sgt(struct tessera_ctx *ctx, u64 va, struct sg_table *sgt,
			u64 size, u64 prot)
{
	struct scatterlist *sg;
	u64 done = 0;
	int ret = 0;
	unsigned int i;

	mutex_lock(&ctx->lock);
	if (!ctx->root) {
		mutex_unlock(&ctx->lock);
		return -ENODEV;
	}
	for_each_sgtable_dma_sg(sgt, sg, i) {
		u64 len = min_t(u64, sg_dma_len(sg), size - done);

		if (!len)
			break;
		ret = tessera_mmu_map_contig_locked(ctx, va + done,
						    sg_dma_address(sg), len,
						    prot);
		if (ret)
			break;
		done += len;
	}
	if (!ret && done != size)
		ret = -EINVAL;
	if (ret)
		tessera_mmu_unmap_locked(ctx, va, size);
	mutex_unlock(&ctx->lock);
	return ret;
}

/**
 * tessera_mmu_map_dma() - map contiguous system memory into a context
 * @ctx: the context
 * @va: device VA, page-aligned
 * @addr: bus address, page-aligned
 * @size: bytes, page-aligned
 * @prot: TESSERA_MAP_* permissions
 *
 * Return: 0, or -ENOMEM with nothing left mapped.
 */
int tessera_mmu_map_dma(struct tessera_ctx *ctx, u64 va, dma_addr_t addr,
			u64 size, u64 prot)
{
	int ret = -ENODEV;

	mutex_lock(&ctx->lock);
	if (ctx->root)
		ret = tessera_mmu_map_contig_locked(ctx, va, addr, size, prot);
	if (ret)
		tessera_mmu_unmap_locked(ctx, va, size);
	mutex_unlock(&ctx->lock);
	return ret;
}

/**
 * tessera_mmu_map_hbm() - map a range of HBM into a context
 * @ctx: the context
 * @va: device VA, page-aligned
 * @hbm_offset: offset in HBM, page-aligned
 * @size: bytes, page-aligned
 * @prot: TESSERA_MAP_* permissions
 *
 * Return: 0, or -ENOMEM with nothing left mapped.
 */
int tessera_mmu_map_hbm(struct tessera_ctx *ctx, u64 va, u64 hbm_offset,
			u64 size, u64 prot)
{
	int ret = -ENODEV;

	mutex_lock(&ctx->lock);
	if (ctx->root)
		ret = tessera_mmu_map_contig_locked(ctx, va, hbm_offset, size,
						    prot | TSR_PTE_HBM);
	if (ret)
		tessera_mmu_unmap_locked(ctx, va, size);
	mutex_unlock(&ctx->lock);
	return ret;
}

/* A page-table root for a new context. */
struct tessera_pt *tessera_mmu_root_create(struct tessera_device *tdev)
{
	return tessera_pt_alloc(tdev, 2);
}

void tessera_mmu_root_destroy(struct tessera_device *tdev,
			      struct tessera_pt *root)
{
	tessera_pt_free(tdev, root, 2);
}

/* Point @ctx's context table entry at its page tables. */
void tessera_mmu_ctx_enable(struct tessera_ctx *ctx)
{
	WRITE_ONCE(ctx->tdev->ctx_table[TESSERA_CTX_ROOT(ctx->id)],
		   cpu_to_le64(ctx->root->dma | TSR_CTX_VALID));
	tessera_mmu_invalidate(ctx->tdev, ctx->id);
}

/* Jobs naming @ctx's number fault from now on; nothing once unplugged. */
void tessera_mmu_ctx_disable(struct tessera_ctx *ctx)
{
	if (!ctx->tdev->ctx_table)
		return;
	WRITE_ONCE(ctx->tdev->ctx_table[TESSERA_CTX_ROOT(ctx->id)], 0);
	tessera_mmu_invalidate(ctx->tdev, ctx->id);
}

/* Point the chip at the context table; after probe and every chip reset. */
void tessera_mmu_hw_init(struct tessera_device *tdev)
{
	tessera_reg_write(tdev, TSR_REG_MMU_CTX_TABLE_LO,
			  lower_32_bits(tdev->ctx_table_dma));
	tessera_reg_write(tdev, TSR_REG_MMU_CTX_TABLE_HI,
			  upper_32_bits(tdev->ctx_table_dma));
	tessera_reg_write(tdev, TSR_REG_MMU_CTX_COUNT, tdev->max_contexts);
	tessera_reg_write(tdev, TSR_REG_MMU_INVALIDATE, TSR_MMU_INVALIDATE_ALL);
}

/**
 * tessera_mmu_fini() - free the context table
 * @tdev: the device, unplugged or failing its probe
 *
 * Coherent memory belongs to the bound device: it is freed at unbind,
 * even though files (and their contexts) may outlive it.
 */
void tessera_mmu_fini(struct tessera_device *tdev)
{
	if (!tdev->ctx_table)
		return;
	dma_free_coherent(tdev->drm.dev, TSR_PAGE_SIZE, tdev->ctx_table,
			  tdev->ctx_table_dma);
	tdev->ctx_table = NULL;
}

static void tessera_mmu_release(struct drm_device *drm, void *arg)
{
	tessera_mmu_fini(to_tessera_device(drm));
}

/* The context table; tessera_mmu_fini() at unbind frees it. */
int tessera_mmu_init(struct tessera_device *tdev)
{
	u32 chip_max = tessera_reg_read(tdev, TSR_REG_MAX_CONTEXTS);

	tdev->max_contexts = min_t(u32, chip_max, TSR_PAGE_SIZE /
				   sizeof(struct tsr_context_entry));
	if (tdev->max_contexts < 2) {
		drm_err(&tdev->drm, "chip offers %u contexts\n", chip_max);
		return -ENODEV;
	}
	tdev->ctx_table = dma_alloc_coherent(tdev->drm.dev, TSR_PAGE_SIZE,
					     &tdev->ctx_table_dma, GFP_KERNEL);
	if (!tdev->ctx_table)
		return -ENOMEM;
	return drmm_add_action_or_reset(&tdev->drm, tessera_mmu_release, NULL);
}
