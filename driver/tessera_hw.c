// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera chip bring-up, interrupts and resets.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/interrupt.h>
#include <linux/ktime.h>
#include <linux/pci.h>

#include <drm/drm_drv.h>
#include <drm/drm_print.h>

#include "tessera_hw.h"
#include "tessera_ici.h"
#include "tessera_job.h"
#include "tessera_mmu.h"
#include "tessera_pm.h"
#include "tessera_reset.h"

/* Device-level causes the driver handles. */
#define TESSERA_IRQ_HANDLED	(TSR_IRQ_PING | TSR_IRQ_FATAL | \
				 TSR_IRQ_MMU_FAULT | TSR_IRQ_ECC_CORRECTABLE | \
				 TSR_IRQ_ECC_UNCORRECTABLE)

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
		u32 ack = tessera_reg_read(tdev, TSR_REG_PING_ACK);

		/*
		 * An older ping's answer, asked again across a reset, is not
		 * this one's: it is only taken for the ping it was checked
		 * against.
		 */
		spin_lock(&tdev->ping_irq_lock);
		if (tdev->ping_waiting && ack == tdev->ping_cookie) {
			tdev->ping_ack = ack;
			complete(&tdev->ping_done);
		}
		spin_unlock(&tdev->ping_irq_lock);
	}
	if (status & TSR_IRQ_ECC_CORRECTABLE)
		tessera_count(tdev, TESSERA_CNT_ECC_CORRECTABLE);
	if (status & TSR_IRQ_ECC_UNCORRECTABLE)
		tessera_count(tdev, TESSERA_CNT_ECC_UNCORRECTABLE);
	/* MMU faults reach the job through its completion record. */
	if (status & TSR_IRQ_FATAL)
		tessera_schedule_fatal_recovery(tdev);
	return IRQ_HANDLED;
}

static irqreturn_t tessera_queue_irq(int irq, void *arg)
{
	struct tessera_queue *q = arg;
	struct tessera_device *tdev = q->tdev;
	u32 reg = TSR_QUEUE_BASE(q->index) + TSR_QREG_IRQ_STATUS;
	u32 status;

	status = tessera_reg_read(tdev, reg);
	if (!status)
		return IRQ_NONE;
	tessera_reg_write(tdev, reg, status);
	atomic64_inc(&tdev->irq_count);
	tessera_queue_reap(q, true);
	return IRQ_HANDLED;
}

/*
 * Enable the causes the driver handles; after probe and every chip reset,
 * with window_lock held (tessera_ici_hw_enable()).
 */
static void tessera_hw_enable(struct tessera_device *tdev)
{
	unsigned int i;

	tessera_mmu_hw_init(tdev);
	for (i = 0; i < tdev->num_queues; i++)
		tessera_queue_hw_init(&tdev->queues[i]);
	tessera_reg_write(tdev, TSR_REG_IRQ_STATUS, TSR_IRQ_ALL);
	tessera_reg_write(tdev, TSR_REG_IRQ_ENABLE, TESSERA_IRQ_HANDLED);
	tessera_ici_hw_enable(tdev);
}

/**
 * tessera_hw_reset_locked() - reset the chip and program it again
 * @tdev: the device; the caller holds reset_lock and the ICI window_lock
 *
 * The reset zeroes the window table's address and count: a window closing
 * meanwhile must not set the count before the address is back, or the chip
 * would read entries at bus address 0.  The PCI core's resets zero them
 * too, so the PCI reset path holds window_lock across them.
 */
void tessera_hw_reset_locked(struct tessera_device *tdev)
{
	lockdep_assert_held(&tdev->reset_lock);
	lockdep_assert_held(&tdev->ici.window_lock);

	/* The write returns once no job is inside the chip any more. */
	tessera_reg_write(tdev, TSR_REG_RESET, TSR_RESET_MAGIC);
	tessera_hw_enable(tdev);
	/* The reset forgot a ping in flight: its waiter still wants the answer. */
	if (READ_ONCE(tdev->ping_waiting))
		tessera_reg_write(tdev, TSR_REG_PING, READ_ONCE(tdev->ping_cookie));
}

/* Reset the chip and program it again; the caller holds reset_lock. */
void tessera_hw_reset(struct tessera_device *tdev)
{
	mutex_lock(&tdev->ici.window_lock);
	tessera_hw_reset_locked(tdev);
	mutex_unlock(&tdev->ici.window_lock);
}

/*
 * Whether the chip has lost the driver's settings in a reset the driver did
 * not make (a function-level reset by the host, unannounced): the interrupt
 * enables are set from probe on, except while one of the driver's own
 * resets holds reset_lock.
 */
bool tessera_hw_lost(struct tessera_device *tdev)
{
	lockdep_assert_held(&tdev->reset_lock);

	return tessera_reg_read(tdev, TSR_REG_IRQ_ENABLE) != TESSERA_IRQ_HANDLED;
}

/* Reset one queue: its running job aborts, queued descriptors are dropped. */
void tessera_hw_queue_reset(struct tessera_queue *q)
{
	tessera_reg_write(q->tdev, TSR_QUEUE_BASE(q->index) + TSR_QREG_CONTROL,
			  TSR_QCTRL_RESET);
}

/* Identity check and the chip's configuration; no interrupts yet. */
int tessera_hw_init(struct tessera_device *tdev)
{
	u32 id, version;

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
	tdev->num_queues = tessera_reg_read(tdev, TSR_REG_NUM_QUEUES);
	if (!tdev->num_queues || tdev->num_queues > TSR_MAX_QUEUES) {
		drm_err(&tdev->drm, "chip reports %u queues (1 to %u expected)\n",
			tdev->num_queues, TSR_MAX_QUEUES);
		return -ENODEV;
	}
	/* Start from a known state whatever the last owner left behind. */
	tessera_reg_write(tdev, TSR_REG_RESET, TSR_RESET_MAGIC);
	return 0;
}

/* MSI-X vectors and handlers, then the chip's interrupt sources. */
int tessera_hw_irq_init(struct tessera_device *tdev)
{
	struct pci_dev *pdev = to_pci_dev_tdev(tdev);
	unsigned int i;
	int ret;

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
	for (i = 0; i < tdev->num_queues; i++) {
		struct tessera_queue *q = &tdev->queues[i];

		ret = devm_request_irq(&pdev->dev,
				       pci_irq_vector(pdev, TSR_MSIX_VEC_QUEUE(i)),
				       tessera_queue_irq, 0, q->name, q);
		if (ret) {
			drm_err(&tdev->drm, "cannot request the interrupt of queue %u: %d\n",
				i, ret);
			return ret;
		}
	}
	ret = tessera_ici_irq_init(tdev);
	if (ret)
		return ret;

	mutex_lock(&tdev->ici.window_lock);
	tessera_hw_enable(tdev);
	mutex_unlock(&tdev->ici.window_lock);
	drm_info(&tdev->drm, "Tessera chip, device model %u.%u, %u queues, %llu MiB HBM, %u MSI-X vectors\n",
		 TSR_VERSION_MAJOR(tessera_reg_read(tdev, TSR_REG_DEVICE_VERSION)),
		 TSR_VERSION_MINOR(tessera_reg_read(tdev, TSR_REG_DEVICE_VERSION)),
		 tdev->num_queues, tdev->hbm_size >> 20, tdev->msix_vectors);
	return 0;
}

/*
 * No interrupt from the chip any more, and no handler still running: the
 * chip is about to be reset, or to go.
 */
void tessera_hw_irq_off(struct tessera_device *tdev)
{
	struct pci_dev *pdev = to_pci_dev_tdev(tdev);
	unsigned int i;

	tessera_reg_write(tdev, TSR_REG_IRQ_ENABLE, 0);
	if (tdev->ici.ports)
		tessera_reg_write(tdev, TSR_REG_ICI_IRQ_ENABLE, 0);
	for (i = 0; i < tdev->num_queues; i++)
		tessera_reg_write(tdev, TSR_QUEUE_BASE(i) + TSR_QREG_IRQ_ENABLE, 0);
	if (!tdev->msix_vectors)
		return;
	synchronize_irq(pci_irq_vector(pdev, TSR_MSIX_VEC_DEVICE));
	for (i = 0; i < tdev->num_queues; i++)
		synchronize_irq(pci_irq_vector(pdev, TSR_MSIX_VEC_QUEUE(i)));
	synchronize_irq(pci_irq_vector(pdev, TSR_MSIX_VEC_LINK));
}

/*
 * Quiet the chip before the memory it reads goes: no interrupts, no job
 * running, and no table in use.  Files may outlive the device with windows
 * open, but once the reset has zeroed the chip's window table and context
 * table registers, no remote write walks their freed tables.
 */
void tessera_hw_fini(struct tessera_device *tdev)
{
	tessera_hw_irq_off(tdev);
	/* Returns once no job and no remote write is inside the chip. */
	tessera_reg_write(tdev, TSR_REG_RESET, TSR_RESET_MAGIC);
	/* A ping waiting for the chip's answer waits no more. */
	complete_all(&tdev->ping_done);
}

/**
 * tessera_hw_ping() - ask the chip to echo a cookie and time its answer
 * @tdev: the device
 * @cookie: the value to echo
 * @timeout_ms: how long to wait for the answer
 * @echo: the cookie the chip acknowledged
 * @latency_ns: the round trip
 *
 * Only the doorbell write is inside drm_dev_enter(): the wait is as long as
 * user space asks, and must not hold off an unplug, which wakes it.
 *
 * Return: 0, -ETIMEDOUT, -ENODEV once the device is gone, -ERESTARTSYS.
 */
int tessera_hw_ping(struct tessera_device *tdev, u32 cookie,
		    unsigned int timeout_ms, u32 *echo, u64 *latency_ns)
{
	ktime_t start;
	int ret = 0, idx;
	long left;

	if (mutex_lock_interruptible(&tdev->ping_lock))
		return -ERESTARTSYS;
	if (!drm_dev_enter(&tdev->drm, &idx)) {
		ret = -ENODEV;
		goto out;
	}
	ret = tessera_pm_get(tdev);
	if (ret) {
		drm_dev_exit(idx);
		goto out;
	}
	spin_lock_irq(&tdev->ping_irq_lock);
	reinit_completion(&tdev->ping_done);
	WRITE_ONCE(tdev->ping_cookie, cookie);
	WRITE_ONCE(tdev->ping_waiting, true);
	spin_unlock_irq(&tdev->ping_irq_lock);
	start = ktime_get();
	tessera_reg_write(tdev, TSR_REG_PING, cookie);
	drm_dev_exit(idx);

	left = wait_for_completion_interruptible_timeout(&tdev->ping_done,
							 msecs_to_jiffies(timeout_ms));
	spin_lock_irq(&tdev->ping_irq_lock);
	WRITE_ONCE(tdev->ping_waiting, false);
	spin_unlock_irq(&tdev->ping_irq_lock);
	tessera_pm_put(tdev);
	if (left < 0) {
		ret = left;
	} else if (drm_dev_is_unplugged(&tdev->drm)) {
		ret = -ENODEV;
	} else if (left == 0) {
		dev_warn_ratelimited(tdev->drm.dev,
				     "ping 0x%08x not acknowledged within %u ms\n",
				     cookie, timeout_ms);
		ret = -ETIMEDOUT;
	} else {
		*latency_ns = ktime_to_ns(ktime_sub(ktime_get(), start));
		*echo = READ_ONCE(tdev->ping_ack);
	}
out:
	mutex_unlock(&tdev->ping_lock);
	return ret;
}
