/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_HW_H__
#define __TESSERA_HW_H__

#include <linux/io.h>

#include <tessera/chip.h>
#include "tessera_drv.h"

static inline u32 tessera_reg_read(struct tessera_device *tdev, u32 reg)
{
	return readl(tdev->regs + reg);
}

static inline void tessera_reg_write(struct tessera_device *tdev, u32 reg,
				     u32 val)
{
	writel(val, tdev->regs + reg);
}

/*
 * A 64-bit register pair.  Reading LO latches HI in the chip's one latch,
 * shared by every register, so no other read of a pair may come between.
 */
static inline u64 tessera_reg_read64(struct tessera_device *tdev, u32 reg)
{
	unsigned long flags;
	u64 val;

	spin_lock_irqsave(&tdev->reg64_lock, flags);
	val = tessera_reg_read(tdev, reg);
	val |= (u64)tessera_reg_read(tdev, reg + 4) << 32;
	spin_unlock_irqrestore(&tdev->reg64_lock, flags);
	return val;
}

int tessera_hw_init(struct tessera_device *tdev);
int tessera_hw_irq_init(struct tessera_device *tdev);
void tessera_hw_fini(struct tessera_device *tdev);
void tessera_hw_irq_off(struct tessera_device *tdev);
void tessera_hw_reset(struct tessera_device *tdev);
bool tessera_hw_lost(struct tessera_device *tdev);
void tessera_hw_reset_locked(struct tessera_device *tdev);
void tessera_hw_queue_reset(struct tessera_queue *q);
int tessera_hw_ping(struct tessera_device *tdev, u32 cookie,
		    unsigned int timeout_ms, u32 *echo, u64 *latency_ns);

#endif /* __TESSERA_HW_H__ */
