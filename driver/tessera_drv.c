// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera virtual AI accelerator: PCI probe, the DRM accel device, files
 * and the information ioctls.
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

#include "tessera_ctx.h"
#include "tessera_debugfs.h"
#include "tessera_drv.h"
#include "tessera_gem.h"
#include "tessera_hw.h"
#include "tessera_ici.h"
#include "tessera_job.h"
#include "tessera_mmu.h"
#include "tessera_pci.h"
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

static int tessera_ioctl_get_info(struct drm_device *drm, void *data,
				  struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct tessera_file *tfile = file->driver_priv;
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

	info->preset = tessera_reg_read(tdev, TSR_REG_PRESET);
	info->tensorcores = tessera_reg_read(tdev, TSR_REG_TENSORCORES);
	info->mxus_per_core = tessera_reg_read(tdev, TSR_REG_MXUS_PER_CORE);
	info->mxu_dim = tessera_reg_read(tdev, TSR_REG_MXU_DIM);
	info->vpu_sublanes = tessera_reg_read(tdev, TSR_REG_VPU_SUBLANES);
	info->vpu_lanes = tessera_reg_read(tdev, TSR_REG_VPU_LANES);
	info->vmem_mib = tessera_reg_read(tdev, TSR_REG_VMEM_MIB);
	info->clock_mhz = tessera_reg_read(tdev, TSR_REG_CLOCK_MHZ);
	info->hbm_gbps = tessera_reg_read(tdev, TSR_REG_HBM_GBPS);
	info->host_dma_gbps = tessera_reg_read(tdev, TSR_REG_HOST_DMA_GBPS);
	info->num_queues = tdev->num_queues;
	info->max_contexts = tdev->max_contexts - 1;
	info->hbm_size = tdev->hbm_size;
	info->hbm_free = tessera_hbm_free(tdev);
	info->ici_ports = tessera_reg_read(tdev, TSR_REG_ICI_PORTS);
	info->ici_link_gbps = tessera_reg_read(tdev, TSR_REG_ICI_LINK_GBPS);
	tessera_ici_fill_info(tdev, info);
	info->context_id = tfile->ctx->id;
	info->sparsecores = tessera_reg_read(tdev, TSR_REG_SC_CORES);
	info->sc_tiles = tessera_reg_read(tdev, TSR_REG_SC_TILES);
	info->sc_simd_f32 = tessera_reg_read(tdev, TSR_REG_SC_SIMD_F32);
	info->sc_simd_bf16 = tessera_reg_read(tdev, TSR_REG_SC_SIMD_BF16);
	info->sc_spmem_kib = tessera_reg_read(tdev, TSR_REG_SC_SPMEM_KIB);

	drm_dev_exit(idx);
	return 0;
}

static int tessera_ioctl_ping(struct drm_device *drm, void *data,
			      struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct drm_tessera_ping *ping = data;
	unsigned int timeout_ms = ping->timeout_ms;

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
	return tessera_hw_ping(tdev, ping->cookie, timeout_ms, &ping->echo,
			       &ping->latency_ns);
}

static int tessera_ioctl_get_counters(struct drm_device *drm, void *data,
				      struct drm_file *file)
{
	struct tessera_device *tdev = to_tessera_device(drm);
	struct drm_tessera_counters *c = data;
	int idx;

	if (c->flags || c->pad) {
		drm_dbg(drm, "GET_COUNTERS: flags and pad must be zero\n");
		return -EINVAL;
	}
	if (!drm_dev_enter(drm, &idx))
		return -ENODEV;

	memset(c, 0, sizeof(*c));
	c->mxu_busy_cycles = tessera_reg_read64(tdev, TSR_REG_CNT_MXU_BUSY_LO);
	c->vpu_busy_cycles = tessera_reg_read64(tdev, TSR_REG_CNT_VPU_BUSY_LO);
	c->dma_busy_cycles = tessera_reg_read64(tdev, TSR_REG_CNT_DMA_BUSY_LO);
	c->chip_jobs = tessera_reg_read64(tdev, TSR_REG_CNT_JOBS_LO);
	c->chip_commands = tessera_reg_read64(tdev, TSR_REG_CNT_COMMANDS_LO);
	c->hbm_read_bytes = tessera_reg_read64(tdev, TSR_REG_CNT_HBM_READ_LO);
	c->hbm_write_bytes = tessera_reg_read64(tdev, TSR_REG_CNT_HBM_WRITE_LO);
	c->clock_cycles = tessera_reg_read64(tdev, TSR_REG_CLOCK_LO);
	c->sc_busy_cycles = tessera_reg_read64(tdev, TSR_REG_CNT_SC_BUSY_LO);
	drm_dev_exit(idx);

	c->jobs_submitted = tessera_counter(tdev, TESSERA_CNT_JOBS_SUBMITTED);
	c->jobs_completed = tessera_counter(tdev, TESSERA_CNT_JOBS_COMPLETED);
	c->jobs_failed = tessera_counter(tdev, TESSERA_CNT_JOBS_FAILED);
	c->mmu_faults = tessera_counter(tdev, TESSERA_CNT_MMU_FAULTS);
	c->ecc_correctable = tessera_counter(tdev, TESSERA_CNT_ECC_CORRECTABLE);
	c->ecc_uncorrectable = tessera_counter(tdev, TESSERA_CNT_ECC_UNCORRECTABLE);
	c->timeouts = tessera_counter(tdev, TESSERA_CNT_TIMEOUTS);
	c->lost_irqs = tessera_counter(tdev, TESSERA_CNT_LOST_IRQS);
	c->queue_resets = tessera_counter(tdev, TESSERA_CNT_QUEUE_RESETS);
	c->device_resets = tessera_counter(tdev, TESSERA_CNT_DEVICE_RESETS);
	c->fatal_errors = tessera_counter(tdev, TESSERA_CNT_FATAL_ERRORS);
	c->banned_contexts = tessera_counter(tdev, TESSERA_CNT_BANNED_CONTEXTS);
	c->remote_access_refused = tessera_counter(tdev, TESSERA_CNT_REMOTE_ACCESS);
	c->link_downs = tessera_counter(tdev, TESSERA_CNT_LINK_DOWNS);
	c->link_ups = tessera_counter(tdev, TESSERA_CNT_LINK_UPS);
	return 0;
}

static const struct drm_ioctl_desc tessera_ioctls[] = {
	DRM_IOCTL_DEF_DRV(TESSERA_GET_INFO, tessera_ioctl_get_info, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_PING, tessera_ioctl_ping, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_BO_CREATE, tessera_ioctl_bo_create, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_BO_INFO, tessera_ioctl_bo_info, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_SUBMIT, tessera_ioctl_submit, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_JOB_STATUS, tessera_ioctl_job_status, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_GET_COUNTERS, tessera_ioctl_get_counters, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_WINDOW_OPEN, tessera_ioctl_window_open, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_WINDOW_CLOSE, tessera_ioctl_window_close, 0),
	DRM_IOCTL_DEF_DRV(TESSERA_LINK_INFO, tessera_ioctl_link_info, 0),
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
		if (obj->funcs->status(obj) & DRM_GEM_OBJECT_RESIDENT)
			s->resident += obj->size;
	}
	spin_unlock(&file->table_lock);
	drm_print_memory_stats(p, &stats[0], DRM_GEM_OBJECT_RESIDENT, "host");
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
	ret = tessera_ici_init(tdev);
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
	return 0;

err_hw_fini:
	tessera_hw_fini(tdev);
	return ret;
}

static void tessera_remove(struct pci_dev *pdev)
{
	struct tessera_device *tdev = pci_get_drvdata(pdev);

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
	.driver.pm = pm_sleep_ptr(&tessera_pm_ops),
};
module_pci_driver(tessera_pci_driver);

MODULE_DESCRIPTION(DRIVER_DESC);
MODULE_AUTHOR("The Tessera Authors");
MODULE_LICENSE("GPL");
MODULE_IMPORT_NS(DMA_BUF);
