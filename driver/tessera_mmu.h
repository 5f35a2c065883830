/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_MMU_H__
#define __TESSERA_MMU_H__

#include <linux/scatterlist.h>

#include "tessera_ctx.h"
#include "tessera_drv.h"

/* The context table as the chip reads it: struct tsr_context_entry. */
#define TESSERA_CTX_ENTRY_QWORDS	(sizeof(struct tsr_context_entry) / 8)
#define TESSERA_CTX_ROOT(id)		((id) * TESSERA_CTX_ENTRY_QWORDS)

/* Page-table permissions of a mapping. */
#define TESSERA_MAP_READ	TSR_PTE_READ
#define TESSERA_MAP_WRITE	TSR_PTE_WRITE

struct tessera_pt *tessera_mmu_root_create(struct tessera_device *tdev);
void tessera_mmu_root_destroy(struct tessera_device *tdev,
			      struct tessera_pt *root);
void tessera_mmu_ctx_enable(struct tessera_ctx *ctx);
void tessera_mmu_ctx_disable(struct tessera_ctx *ctx);

int tessera_mmu_map_dma(struct tessera_ctx *ctx, u64 va, dma_addr_t addr,
			u64 size, u64 prot);
int tessera_mmu_map_sgt(struct tessera_ctx *ctx, u64 va, struct sg_table *sgt,
			u64 size, u64 prot);
int tessera_mmu_map_hbm(struct tessera_ctx *ctx, u64 va, u64 hbm_offset,
			u64 size, u64 prot);
void tessera_mmu_unmap_locked(struct tessera_ctx *ctx, u64 va, u64 size);
void tessera_mmu_invalidate(struct tessera_device *tdev, u32 id);

void tessera_mmu_hw_init(struct tessera_device *tdev);
int tessera_mmu_init(struct tessera_device *tdev);
void tessera_mmu_fini(struct tessera_device *tdev);

#endif /* __TESSERA_MMU_H__ */
