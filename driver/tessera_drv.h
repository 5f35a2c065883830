/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __TESSERA_DRV_H__
#define __TESSERA_DRV_H__

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/mutex.h>
#include <linux/pci.h>
#include <drm/drm_device.h>

#define DRIVER_NAME	"tessera"
#define DRIVER_DESC	"Tessera virtual AI accelerator"
#define DRIVER_MAJOR	0
#define DRIVER_MINOR	1
#define DRIVER_PATCH	0

/**
 * struct tessera_device - one Tessera chip
 * @drm: the DRM device, embedded
 * @regs: BAR0 register space
 * @msix_vectors: MSI-X vectors enabled
 * @irq_count: device interrupts handled
 * @ping_lock: serialises pings; the chip has one ping register
 * @ping_done: completed by the interrupt handler when a ping is acknowledged
 * @ping_ack: cookie the chip acknowledged, valid once @ping_done completes
 */
struct tessera_device {
	struct drm_device drm;
	void __iomem *regs;
	unsigned int msix_vectors;
	atomic64_t irq_count;

	/* serialises pings: the chip has one ping register */
	struct mutex ping_lock;
	struct completion ping_done;
	u32 ping_ack;
};

static inline struct tessera_device *to_tessera_device(struct drm_device *drm)
{
	return container_of(drm, struct tessera_device, drm);
}

static inline struct pci_dev *to_pci_dev_tdev(struct tessera_device *tdev)
{
	return to_pci_dev(tdev->drm.dev);
}

#endif /* __TESSERA_DRV_H__ */
