// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera chip bring-up and device-level interrupts.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/interrupt.h>
#include <linux/ktime.h>
#include <linux/pci.h>

#include <drm/drm_print.h>

#include "tessera_hw.h"

static irqreturn_t tessera_device_irq(int irq, void *arg)
{
	struct tessera_device *tdev = arg;
	u32 status;

	status = tessera_reg_read(tdev, TSR_REG_IRQ_STATUS);
	if (!status)
		return IRQ_NONE;
	/* Acknowledge first, so a cause raised while we work is not lost. */
	tessera_reg_write(tdev, TSR_REG_IRQ_STATUS, status);
	atomic64_inc(&tdev->irq_count);

	if (status & TSR_IRQ_PING) {
		WRITE_ONCE(tdev->ping_ack,
			   tessera_reg_read(tdev, TSR_REG_PING_ACK));
		complete(&tdev->ping_done);
	}
	return IRQ_HANDLED;
}

int tessera_hw_init(struct tessera_device *tdev)
{
	struct pci_dev *pdev = to_pci_dev_tdev(tdev);
	u32 id, version;
	int ret;

	id = tessera_reg_read(tdev, TSR_REG_CHIP_ID);
	if (id != TSR_CHIP_ID) {
		drm_err(&tdev->drm, "chip ID 0x%08x is not a Tessera chip (0x%08x)\n",
			id, TSR_CHIP_ID);
		return -ENODEV;
	}
	version = tessera_reg_read(tdev, TSR_REG_DEVICE_VERSION);
	if (TSR_VERSION_MAJOR(version) != TSR_DEVICE_VERSION_MAJOR) {
		drm_err(&tdev->drm, "device model %u.%u is not supported (need %u.x)\n",
			TSR_VERSION_MAJOR(version), TSR_VERSION_MINOR(version),
			TSR_DEVICE_VERSION_MAJOR);
		return -ENODEV;
	}

	ret = pci_alloc_irq_vectors(pdev, TSR_MSIX_VECTORS, TSR_MSIX_VECTORS,
				    PCI_IRQ_MSIX);
	if (ret < 0) {
		drm_err(&tdev->drm, "cannot enable %u MSI-X vectors: %d\n",
			TSR_MSIX_VECTORS, ret);
		return ret;
	}
	tdev->msix_vectors = ret;

	ret = devm_request_irq(&pdev->dev,
			       pci_irq_vector(pdev, TSR_MSIX_VEC_DEVICE),
			       tessera_device_irq, 0, DRIVER_NAME, tdev);
	if (ret) {
		drm_err(&tdev->drm, "cannot request the device interrupt: %d\n",
			ret);
		return ret;
	}

	tessera_reg_write(tdev, TSR_REG_IRQ_STATUS, TSR_IRQ_ALL);
	tessera_reg_write(tdev, TSR_REG_IRQ_ENABLE, TSR_IRQ_ALL);
	drm_info(&tdev->drm, "Tessera chip, device model %u.%u, %u MSI-X vectors\n",
		 TSR_VERSION_MAJOR(version), TSR_VERSION_MINOR(version),
		 tdev->msix_vectors);
	return 0;
}

void tessera_hw_fini(struct tessera_device *tdev)
{
	tessera_reg_write(tdev, TSR_REG_IRQ_ENABLE, 0);
	synchronize_irq(pci_irq_vector(to_pci_dev_tdev(tdev),
				       TSR_MSIX_VEC_DEVICE));
}

int tessera_hw_ping(struct tessera_device *tdev, u32 cookie,
		    unsigned int timeout_ms, u32 *echo, u64 *latency_ns)
{
	long left;
	ktime_t start;
	int ret = 0;

	if (mutex_lock_interruptible(&tdev->ping_lock))
		return -ERESTARTSYS;

	reinit_completion(&tdev->ping_done);
	start = ktime_get();
	tessera_reg_write(tdev, TSR_REG_PING, cookie);
	left = wait_for_completion_interruptible_timeout(&tdev->ping_done,
							 msecs_to_jiffies(timeout_ms));
	if (left < 0) {
		ret = left;
	} else if (left == 0) {
		drm_warn(&tdev->drm, "ping 0x%08x not acknowledged within %u ms\n",
			 cookie, timeout_ms);
		ret = -ETIMEDOUT;
	} else {
		*latency_ns = ktime_to_ns(ktime_sub(ktime_get(), start));
		*echo = READ_ONCE(tdev->ping_ack);
	}

	mutex_unlock(&tdev->ping_lock);
	return ret;
}
