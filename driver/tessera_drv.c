// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera virtual AI accelerator: PCI probe, the DRM accel device, files
 * and GET_PARAM.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/dma-mapping.h>
#include <linux/module.h>
#include <linux/pci.h>

#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_managed.h>
#include <drm/drm_prime.h>
#include <drm/drm_print.h>
#include <drm/tessera_accel.h>

#include "tessera_coredump.h"
#include "tessera_ctx.h"
#include "tessera_debugfs.h"
#include "tessera_drv.h"
#include "tessera_gem.h"
#include "tessera_hw.h"
#include "tessera_ici.h"
#include "tessera_job.h"
#include "tessera_mmu.h"
#include "tessera_pci.h"
#include "tessera_pm.h"
#include "tessera_reset.h"
#include "tessera_sysfs.h"

unsigned int tessera_job_timeout_ms = 5000;
module_param_named(job_timeout_ms, tessera_job_timeout_ms, uint, 0444);
MODULE_PARM_DESC(job_timeout_ms,
		 "Time a job may run before its queue is reset, ms, 0 never (default 5000)");

unsigned int tessera_ban_threshold = 3;
module_param_named(ban_threshold, tessera_ban_threshold, uint, 0644);
MODULE_PARM_DESC(ban_threshold,
		 "Hangs and MMU faults after which a context is banned, 0 never (default 3)");

unsigned int tessera_max_resets_per_job = 2;
module_param_named(max_resets_per_job, tessera_max_resets_per_job, uint, 0644);
MODULE_PARM_DESC(max_resets_per_job,
		 "Resets an innocent job may be caught in before it fails (default 2)");

unsigned int tessera_max_jobs_per_file = 1024;
module_param_named(max_jobs_per_file, tessera_max_jobs_per_file, uint, 0644);
MODULE_PARM_DESC(max_jobs_per_file,
		 "Jobs one file may have submitted and not yet retired; SUBMIT fails with EBUSY beyond (default 1024)");

unsigned int tessera_max_pinned_mb;
module_param_named(max_pinned_mb, tessera_max_pinned_mb, uint, 0644);
MODULE_PARM_DESC(max_pinned_mb,
		 "System memory all buffers together may pin, MiB; 0 is half of RAM (default 0)");

/*
 * Parameters that mirror a register of the chip: fixed by the chip's make
 * and configuration, read once at probe, since a runtime suspended chip
 * answers nothing on its BARs and a query must not wake it.
 */
static const struct {
	u32 param;
	u32 reg;
} tessera_param_regs[] = {
	{ DRM_TESSERA_PARAM_CHIP_ID, TSR_REG_CHIP_ID },
	{ DRM_TESSERA_PARAM_DEVICE_VERSION, TSR_REG_DEVICE_VERSION },
	{ DRM_TESSERA_PARAM_CAPS, TSR_REG_CAPS },
	{ DRM_TESSERA_PARAM_PRESET, TSR_REG_PRESET },
	{ DRM_TESSERA_PARAM_TENSORCORES, TSR_REG_TENSORCORES },
	{ DRM_TESSERA_PARAM_MXUS_PER_CORE, TSR_REG_MXUS_PER_CORE },
	{ DRM_TESSERA_PARAM_MXU_DIM, TSR_REG_MXU_DIM },
	{ DRM_TESSERA_PARAM_VPU_SUBLANES, TSR_REG_VPU_SUBLANES },
	{ DRM_TESSERA_PARAM_VPU_LANES, TSR_REG_VPU_LANES },
	{ DRM_TESSERA_PARAM_VMEM_MIB, TSR_REG_VMEM_MIB },
	{ DRM_TESSERA_PARAM_CLOCK_MHZ, TSR_REG_CLOCK_MHZ },
	{ DRM_TESSERA_PARAM_HBM_GBPS, TSR_REG_HBM_GBPS },
	{ DRM_TESSERA_PARAM_HOST_DMA_GBPS, TSR_REG_HOST_DMA_GBPS },
	{ DRM_TESSERA_PARAM_ICI_PORTS, TSR_REG_ICI_PORTS },
	{ DRM_TESSERA_PARAM_ICI_LINK_GBPS, TSR_REG_ICI_LINK_GBPS },
	{ DRM_TESSERA_PARAM_SPARSECORES, TSR_REG_SC_CORES },
	{ DRM_TESSERA_PARAM_SC_TILES, TSR_REG_SC_TILES },
	{ DRM_TESSERA_PARAM_SC_SIMD_F32, TSR_REG_SC_SIMD_F32 },
	{ DRM_TESSERA_PARAM_SC_SIMD_BF16, TSR_REG_SC_SIMD_BF16 },
	{ DRM_TESSERA_PARAM_SC_SPMEM_KIB, TSR_REG_SC_SPMEM_KIB },
};

static_assert(ARRAY_SIZE(tessera_param_regs) == TESSERA_PARAM_REGS);

static void tessera_param_regs_read(struct tessera_device *tdev)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tessera_param_regs); i++)
		tdev->param_regs[i] = tessera_reg_read(tdev,
						       tessera_param_regs[i].reg);
}

/* The value of @param; the caller is inside drm_dev_enter(). */
static int tessera_get_param(struct tessera_device *tdev,
			     struct tessera_file *tfile,
			     const struct drm_tessera_get_param *args, u64 *value)
{
	u32 param = args->param;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tessera_param_regs); i++) {
		if (tessera_param_regs[i].param == param) {
			*value = tdev->param_regs[i];
			return args->index ? -EINVAL : 0;
		}
	}
	switch (param) {
	case DRM_TESSERA_PARAM_NUM_QUEUES:
		*value = tdev->num_queues;
		break;
	case DRM_TESSERA_PARAM_MAX_CONTEXTS:
		*value = tdev->max_contexts - 1;
		break;
	case DRM_TESSERA_PARAM_HBM_SIZE:
		*value = tdev->hbm_size;
		break;
	case DRM_TESSERA_PARAM_CONTEXT_ID:
		*value = tfile->ctx->id;
		break;
	default:
		return tessera_ici_get_param(tdev, param, args->index, value);
	}
	return args->index ? -EINVAL : 0;
}

static int tessera_ioctl_get_param(struct drm_device *drm, void *data,
				   struct drm_file *file)
{
	struct drm_tessera_get_param *args = data;
	u64 value = 0;
	int ret, idx;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = tessera_get_param(to_tessera_device(drm), file->driver_priv,
				args, &value);
	drm_dev_exit(idx);
	if (ret) {
		drm_dbg(drm, "GET_PARAM: no parameter %u index %u\n",
			args->param, args->index);
		return ret;
	}
	args->value = value;
	return 0;
}

static const struct drm_ioctl_desc tessera_ioctls[] = {
	DRM_IOCTL_DEF_DRV(TESSERA_GET_PARAM, tessera_ioctl_get_param, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_BO_CREATE, tessera_ioctl_bo_create, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_BO_INFO, tessera_ioctl_bo_info, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_SUBMIT, tessera_ioctl_submit, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_JOB_STATUS, tessera_ioctl_job_status, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_WINDOW_OPEN, tessera_ioctl_window_open, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_WINDOW_CLOSE, tessera_ioctl_window_close, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_LINK_INFO, tessera_ioctl_link_info, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_SUBMIT_BATCH, tessera_ioctl_submit_batch, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_BO_MADVISE, tessera_ioctl_bo_madvise, 0),
};

static int tessera_open(struct drm_device *drm, struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct tessera_file *tfile;
	int idx, ret;

	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;
	ret = -ENOMEM;
	tfile = kzalloc(sizeof(*tfile), GFP_KERNEL);
	if (!tfile)
		goto out;
	tfile->tdev = tdev;
	ret = tessera_file_init(tfile);
	if (ret) {
		kfree(tfile);
		goto out;
	}
	file->driver_priv = tfile;
out:
	drm_dev_exit(idx);
	return ret;
}

static void tessera_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct tessera_file *tfile = file->driver_priv;

	tessera_ici_file_fini(tfile);
	tessera_file_fini(tfile);
	kfree(tfile);
}

/* Memory per placement and time per queue, per Documentation/gpu/drm-usage-stats.rst. */
static void tessera_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(file->minor->dev);
	struct tessera_file *tfile = file->driver_priv;
	struct drm_memory_stats stats[2] = { };
	enum drm_gem_object_status status;
	struct drm_gem_object *obj;
	unsigned int q;
	int id;

	spin_lock(&file->table_lock);
	idr_for_each_entry(&file->object_idr, obj, id) {
		struct drm_memory_stats *s = &stats[to_tessera_bo(obj)->hbm];

		if (obj->handle_count > 1 || obj->dma_buf)
			s->shared += obj->size;
		else
			s->private += obj->size;
		status = obj->funcs->status(obj);
		if (status & DRM_GEM_OBJECT_RESIDENT)
			s->resident += obj->size;
		if (status & DRM_GEM_OBJECT_PURGEABLE)
			s->purgeable += obj->size;
	}
	spin_unlock(&file->table_lock);
	drm_print_memory_stats(p, &stats[0], DRM_GEM_OBJECT_RESIDENT |
			       DRM_GEM_OBJECT_PURGEABLE, "host");
	drm_print_memory_stats(p, &stats[1], DRM_GEM_OBJECT_RESIDENT, "hbm");

	for (q = 0; q < tdev->num_queues; q++)
		drm_printf(p, "drm-engine-q%u:\t%lld ns\n", q,
			   atomic64_read(&tfile->ctx->engine_ns[q]));
}

static const struct file_operations tessera_fops = {
	.owner = THIS_MODULE,
	DRM_ACCEL_FOPS,
	.show_fdinfo = drm_show_fdinfo,
};

static const struct drm_driver tessera_drm_driver = {
	.driver_features = DRIVER_COMPUTE_ACCEL | DRIVER_GEM |
			   DRIVER_SYNCOBJ | DRIVER_SYNCOBJ_TIMELINE,
	.open = tessera_open,
	.postclose = tessera_postclose,
	.gem_create_object = tessera_gem_create_object,
	.gem_prime_import_sg_table = drm_gem_shmem_prime_import_sg_table,
	.show_fdinfo = tessera_show_fdinfo,
	.fops = &tessera_fops,
	.ioctls = tessera_ioctls,
	.num_ioctls = ARRAY_SIZE(tessera_ioctls),
	.name = DRIVER_NAME,
	.desc = DRIVER_DESC,
	.major = DRIVER_MAJOR,
	.minor = DRIVER_MINOR,
	.patchlevel = DRIVER_PATCH,
};

/* BAR2, the chip's HBM, mapped write-combined for the kernel's own use. */
static int tessera_map_hbm(struct tessera_device *tdev)
{
	struct pci_dev *pdev = to_pci_dev_tdev(tdev);
	int ret;

	tdev->hbm_size = tessera_reg_read64(tdev, TSR_REG_HBM_SIZE_LO);
	if (!tdev->hbm_size || !IS_ALIGNED(tdev->hbm_size, SZ_2M) ||
	    tdev->hbm_size > pci_resource_len(pdev, TSR_BAR_HBM)) {
		drm_err(&tdev->drm, "HBM of %llu bytes does not fit BAR2 (%llu bytes)\n",
			tdev->hbm_size,
			(u64)pci_resource_len(pdev, TSR_BAR_HBM));
		return -ENODEV;
	}
	ret = pcim_request_region(pdev, TSR_BAR_HBM, DRIVER_NAME);
	if (ret) {
		drm_err(&tdev->drm, "cannot claim BAR2: %d\n", ret);
		return ret;
	}
	tdev->hbm_bus = pci_resource_start(pdev, TSR_BAR_HBM);
	tdev->hbm = devm_ioremap_wc(&pdev->dev, tdev->hbm_bus, tdev->hbm_size);
	if (!tdev->hbm) {
		drm_err(&tdev->drm, "cannot map BAR2\n");
		return -ENOMEM;
	}
	return 0;
}

static int tessera_probe(struct pci_dev *pdev, const struct pci_device_id *id)
{
	struct tessera_device *tdev;
	int ret;

	tdev = devm_drm_dev_alloc(&pdev->dev, &tessera_drm_driver,
				  struct tessera_device, drm);
	if (IS_ERR(tdev))
		return PTR_ERR(tdev);
	pci_set_drvdata(pdev, tdev);

	ret = drmm_mutex_init(&tdev->drm, &tdev->ping_lock) ?:
	      drmm_mutex_init(&tdev->drm, &tdev->reset_lock);
	if (ret)
		return ret;
	init_completion(&tdev->ping_done);
	spin_lock_init(&tdev->ping_irq_lock);
	spin_lock_init(&tdev->reg64_lock);
	spin_lock_init(&tdev->chip_counter_lock);

	ret = pcim_enable_device(pdev);
	if (ret)
		return ret;
	pci_set_master(pdev);
	/* Page-table entries hold 52-bit bus addresses. */
	ret = dma_set_mask_and_coherent(&pdev->dev, DMA_BIT_MASK(52));
	if (ret) {
		drm_err(&tdev->drm, "no usable DMA mask: %d\n", ret);
		return ret;
	}

	tdev->regs = pcim_iomap_region(pdev, TSR_BAR_REGS, DRIVER_NAME);
	if (IS_ERR(tdev->regs)) {
		drm_err(&tdev->drm, "cannot map BAR0: %pe\n", tdev->regs);
		return PTR_ERR(tdev->regs);
	}

	ret = tessera_hw_init(tdev);
	if (ret)
		return ret;
	tessera_param_regs_read(tdev);
	ret = tessera_map_hbm(tdev);
	if (ret)
		return ret;
	ret = tessera_mmu_init(tdev);
	if (ret)
		return ret;
	ret = tessera_ctx_init(tdev);
	if (ret)
		return ret;
	ret = tessera_hbm_init(tdev);
	if (ret)
		return ret;
	ret = tessera_shrinker_init(tdev);
	if (ret)
		return ret;
	ret = tessera_ici_init(tdev);
	if (ret)
		return ret;
	ret = tessera_coredump_init(tdev);
	if (ret)
		return ret;
	tessera_reset_init(tdev);
	ret = tessera_sched_init(tdev);
	if (ret)
		return ret;
	ret = tessera_hw_irq_init(tdev);
	if (ret)
		goto err_hw_fini;
	ret = tessera_sysfs_init(tdev);
	if (ret)
		goto err_hw_fini;
	tessera_debugfs_init(tdev);

	ret = drm_dev_register(&tdev->drm, 0);
	if (ret)
		goto err_hw_fini;
	/* What slot_reset restores after a PCIe error's bus reset. */
	pci_save_state(pdev);
	tessera_pm_init(tdev);
	return 0;

err_hw_fini:
	tessera_hw_fini(tdev);
	return ret;
}

static void tessera_remove(struct pci_dev *pdev)
{
	struct tessera_device *tdev = pci_get_drvdata(pdev);

	tessera_pm_fini(tdev);
	/* New ioctls fail with -ENODEV; those in progress have finished. */
	drm_dev_unplug(&tdev->drm);
	/* Nothing reaches the chip's BARs from user space any more. */
	unmap_mapping_range(tdev->drm.anon_inode->i_mapping, 0, 0, 1);
	tessera_hw_fini(tdev);
	tessera_ici_unplug(tdev);
	tessera_reset_unplug(tdev);
	/* DMA memory belongs to the bound device: it goes now. */
	tessera_ctx_unplug(tdev);
	tessera_sched_free_rings(tdev);
	tessera_mmu_fini(tdev);
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
	.err_handler = &tessera_pci_err_handlers,
	.driver.pm = pm_ptr(&tessera_pm_ops),
};
module_pci_driver(tessera_pci_driver);

MODULE_DESCRIPTION(DRIVER_DESC);
MODULE_AUTHOR("The Tessera Authors");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
