// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera virtual AI accelerator: PCI probe, DRM accel device and ioctls.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/module.h>
#include <linux/pci.h>

#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_managed.h>
#include <drm/drm_print.h>
#include <drm/tessera_accel.h>

#include "tessera_drv.h"
#include "tessera_hw.h"

static int tessera_ioctl_get_info(struct drm_device *drm, void *data,
				  struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct pci_dev *pdev = to_pci_dev(drm->dev);
	struct drm_tessera_info *info = data;
	int idx;

	if (info->flags) {
		drm_dbg(drm, "GET_INFO: flags 0x%x must be zero\n", info->flags);
		return -EINVAL;
	}
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;

	memset(info, 0, sizeof(*info));
	info->chip_id = tessera_reg_read(tdev, TSR_REG_CHIP_ID);
	info->device_version = tessera_reg_read(tdev, TSR_REG_DEVICE_VERSION);
	info->caps = tessera_reg_read(tdev, TSR_REG_CAPS);
	info->uapi_version = DRM_TESSERA_UAPI_VERSION;
	info->msix_vectors = tdev->msix_vectors;
	info->pci_vendor = pdev->vendor;
	info->pci_device = pdev->device;
	info->pci_revision = pdev->revision;
	info->irq_count = atomic64_read(&tdev->irq_count);

	drm_dev_exit(idx);
	return 0;
}

static int tessera_ioctl_ping(struct drm_device *drm, void *data,
			      struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct drm_tessera_ping *ping = data;
	unsigned int timeout_ms = ping->timeout_ms;
	int idx, ret;

	if (ping->flags) {
		drm_dbg(drm, "PING: flags 0x%x must be zero\n", ping->flags);
		return -EINVAL;
	}
	if (timeout_ms > DRM_TESSERA_PING_MAX_TIMEOUT_MS) {
		drm_dbg(drm, "PING: timeout %u ms above %u\n", timeout_ms,
			DRM_TESSERA_PING_MAX_TIMEOUT_MS);
		return -EINVAL;
	}
	if (!timeout_ms)
		timeout_ms = DRM_TESSERA_PING_DEFAULT_TIMEOUT_MS;
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;

	ret = tessera_hw_ping(tdev, ping->cookie, timeout_ms, &ping->echo,
			      &ping->latency_ns);

	drm_dev_exit(idx);
	return ret;
}

static const struct drm_ioctl_desc tessera_ioctls[] = {
	DRM_IOCTL_DEF_DRV(TESSERA_GET_INFO, tessera_ioctl_get_info, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_PING, tessera_ioctl_ping, 0),
};

DEFINE_DRM_ACCEL_FOPS(tessera_fops);

static const struct drm_driver tessera_drm_driver = {
	.driver_features = DRIVER_COMPUTE_ACCEL,
	.fops = &tessera_fops,
	.ioctls = tessera_ioctls,
	.num_ioctls = ARRAY_SIZE(tessera_ioctls),
	.name = DRIVER_NAME,
	.desc = DRIVER_DESC,
	.major = DRIVER_MAJOR,
	.minor = DRIVER_MINOR,
	.patchlevel = DRIVER_PATCH,
};

static int tessera_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct tessera_device *tdev;
	int ret;

	tdev = devm_drm_dev_alloc(&pdev->dev, &tessera_drm_driver,
				  struct tessera_device, drm);
	if (IS_ERR(tdev))
		return PTR_ERR(tdev);
	pci_set_drvdata(pdev, tdev);

	ret = drmm_mutex_init(&tdev->drm, &tdev->ping_lock);
	if (ret)
		return ret;
	init_completion(&tdev->ping_done);

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);

	tdev->regs = pcim_iomap_region(pdev, 0, DRIVER_NAME);
	if (IS_ERR(tdev->regs)) {
		drm_err(&tdev->drm, "cannot map BAR0: %pe\n", tdev->regs);
		return PTR_ERR(tdev->regs);
	}

	ret = tessera_hw_init(tdev);
	if (ret)
		return ret;

	ret = drm_dev_register(&tdev->drm, 0);
	if (ret)
		goto err_hw_fini;
	return 0;

err_hw_fini:
	tessera_hw_fini(tdev);
	return ret;
}

static void tessera_remove(struct pci_dev *pdev)
{
	struct tessera_device *tdev = pci_get_drvdata(pdev);

	drm_dev_unplug(&tdev->drm);
	tessera_hw_fini(tdev);
}

static const struct pci_device_id tessera_pci_ids[] = {
	{ PCI_DEVICE(TSR_PCI_VENDOR_ID, TSR_PCI_DEVICE_ID) },
	{ }
};
MODULE_DEVICE_TABLE(pci, tessera_pci_ids);

static struct pci_driver tessera_pci_driver = {
	.name = DRIVER_NAME,
	.id_table = tessera_pci_ids,
	.probe = tessera_probe,
	.remove = tessera_remove,
};
module_pci_driver(tessera_pci_driver);

MODULE_DESCRIPTION(DRIVER_DESC);
MODULE_AUTHOR("The Tessera Authors");
MODULE_LICENSE("GPL");
