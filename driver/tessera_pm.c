// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera's power management: system sleep and runtime PM.
 *
 * System sleep is a PCI reset around the sleep (tessera_reset_prepare(),
 * _done()): after S3 the chip comes back with its registers wiped, its
 * HBM kept; the job the suspend interrupted fails with -ECANCELED, the
 * queued ones run after the resume.
 *
 * Runtime PM suspends an idle chip after the autosuspend delay.  Every
 * job holds a reference from its creation to its release
 * (tessera_pm_get(), _put()), so a suspended chip has no job on a ring:
 * suspending turns its interrupts off, resuming resets it and programs it
 * again (context table, queues, interrupts) as a system resume does; the
 * chip's counters, which that reset restarts, are saved at the suspend and
 * go on from there (tessera_chip_counters_save()).  Queries do not wake it:
 * GET_PARAM answers from what probe read, LINK_INFO and sysfs from what
 * the suspend saved (tessera_ici_ports_save()).  So
 * does every CPU mapping of HBM (BAR 2), from mmap() to munmap(): user
 * space may touch the chip's memory at any time through it.  A
 * chip with a peer on any of its ICI links does not suspend: the peer may
 * write into its HBM at any time.  As for most PCI devices, user space
 * allows it (power/control "auto"); the chip saves no power on QEMU.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/pci.h>
#include <linux/pm_runtime.h>

#include <drm/drm_print.h>

#include "tessera_drv.h"
#include "tessera_hw.h"
#include "tessera_ici.h"
#include "tessera_pm.h"
#include "tessera_reset.h"
#include "tessera_sysfs.h"

#define TESSERA_AUTOSUSPEND_MS	1000

static struct tessera_device *tessera_pm_tdev(struct device *dev)
{
	return pci_get_drvdata(to_pci_dev(dev));
}

static int tessera_pm_suspend(struct device *dev)
{
	tessera_reset_prepare(tessera_pm_tdev(dev));
	return 0;
}

static int tessera_pm_resume(struct device *dev)
{
	struct tessera_device *tdev = tessera_pm_tdev(dev);

	drm_info(&tdev->drm, "resumed; the chip is reset\n");
	tessera_reset_done(tdev);
	return 0;
}

/* Whether a peer is on one of the chip's links (up, training or not). */
static bool tessera_pm_has_peer(struct tessera_device *tdev)
{
	unsigned int p;

	for (p = 0; p < tdev->ici.ports; p++)
		if (READ_ONCE(tdev->ici.state[p]) != TSR_ICI_STATE_DISCONNECTED)
			return true;
	return false;
}

static int tessera_pm_runtime_suspend(struct device *dev)
{
	struct tessera_device *tdev = tessera_pm_tdev(dev);

	if (tessera_pm_has_peer(tdev))
		return -EBUSY;
	mutex_lock(&tdev->reset_lock);
	tessera_hw_irq_off(tdev);
	/* The ports first: once the counters are saved, no register is read. */
	tessera_ici_ports_save(tdev);
	tessera_chip_counters_save(tdev);
	mutex_unlock(&tdev->reset_lock);
	drm_dbg(&tdev->drm, "runtime suspended\n");
	return 0;
}

static int tessera_pm_runtime_resume(struct device *dev)
{
	struct tessera_device *tdev = tessera_pm_tdev(dev);
	unsigned long flags;
	unsigned int i;

	mutex_lock(&tdev->reset_lock);
	/* No job is on a ring: each queue starts again at slot 0. */
	for (i = 0; i < tdev->num_queues; i++) {
		spin_lock_irqsave(&tdev->queues[i].lock, flags);
		tdev->queues[i].tail = 0;
		spin_unlock_irqrestore(&tdev->queues[i].lock, flags);
	}
	tessera_hw_reset(tdev);
	tessera_chip_counters_resumed(tdev);
	mutex_unlock(&tdev->reset_lock);
	drm_dbg(&tdev->drm, "runtime resumed; the chip is reset\n");
	return 0;
}

const struct dev_pm_ops tessera_pm_ops = {
	SYSTEM_SLEEP_PM_OPS(tessera_pm_suspend, tessera_pm_resume)
	RUNTIME_PM_OPS(tessera_pm_runtime_suspend, tessera_pm_runtime_resume,
		       NULL)
};

/* At the end of probe: the PCI core's reference becomes autosuspend's. */
void tessera_pm_init(struct tessera_device *tdev)
{
	struct device *dev = tdev->drm.dev;

	pm_runtime_set_autosuspend_delay(dev, TESSERA_AUTOSUSPEND_MS);
	pm_runtime_use_autosuspend(dev);
	pm_runtime_mark_last_busy(dev);
	pm_runtime_put_autosuspend(dev);
}

/* At remove, which the PCI core entered with the chip resumed. */
void tessera_pm_fini(struct tessera_device *tdev)
{
	pm_runtime_get_noresume(tdev->drm.dev);
	pm_runtime_dont_use_autosuspend(tdev->drm.dev);
}

/* The chip resumed for a job (or another use of it) until tessera_pm_put(). */
int tessera_pm_get(struct tessera_device *tdev)
{
	return pm_runtime_resume_and_get(tdev->drm.dev);
}

/*
 * One more reference beside one that is held, so the chip is resumed
 * already (a CPU mapping of HBM copied by fork() or mremap()).
 */
void tessera_pm_get_noresume(struct tessera_device *tdev)
{
	pm_runtime_get_noresume(tdev->drm.dev);
}

void tessera_pm_put(struct tessera_device *tdev)
{
	pm_runtime_mark_last_busy(tdev->drm.dev);
	pm_runtime_put_autosuspend(tdev->drm.dev);
}
