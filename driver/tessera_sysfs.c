// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera sysfs: the chip's and the driver's counters, in the "tessera"
 * directory of the PCI device (/sys/bus/pci/devices/<address>/tessera/).
 * They change under every program, so they are here rather than in
 * GET_PARAM, which holds what is fixed while the driver is bound.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/device.h>
#include <linux/sysfs.h>

#include <drm/drm_drv.h>

#include "tessera_drv.h"
#include "tessera_gem.h"
#include "tessera_hw.h"
#include "tessera_sysfs.h"

struct tessera_counter_attr {
	struct device_attribute attr;
	enum tessera_counter counter;
};

static ssize_t tessera_counter_show(struct device *dev,
				    struct device_attribute *attr, char *buf)
{
	struct tessera_device *tdev = pci_get_drvdata(to_pci_dev(dev));
	struct tessera_counter_attr *ca =
		container_of(attr, struct tessera_counter_attr, attr);

	return sysfs_emit(buf, "%llu\n", tessera_counter(tdev, ca->counter));
}

#define TESSERA_COUNTER_ATTR(_name, _counter) \
	static struct tessera_counter_attr dev_attr_##_name = { \
		.attr = __ATTR(_name, 0444, tessera_counter_show, NULL), \
		.counter = _counter, \
	}

TESSERA_COUNTER_ATTR(jobs_submitted, TESSERA_CNT_JOBS_SUBMITTED);
TESSERA_COUNTER_ATTR(jobs_completed, TESSERA_CNT_JOBS_COMPLETED);
TESSERA_COUNTER_ATTR(jobs_failed, TESSERA_CNT_JOBS_FAILED);
TESSERA_COUNTER_ATTR(mmu_faults, TESSERA_CNT_MMU_FAULTS);
TESSERA_COUNTER_ATTR(ecc_correctable, TESSERA_CNT_ECC_CORRECTABLE);
TESSERA_COUNTER_ATTR(ecc_uncorrectable, TESSERA_CNT_ECC_UNCORRECTABLE);
TESSERA_COUNTER_ATTR(timeouts, TESSERA_CNT_TIMEOUTS);
TESSERA_COUNTER_ATTR(lost_irqs, TESSERA_CNT_LOST_IRQS);
TESSERA_COUNTER_ATTR(queue_resets, TESSERA_CNT_QUEUE_RESETS);
TESSERA_COUNTER_ATTR(device_resets, TESSERA_CNT_DEVICE_RESETS);
TESSERA_COUNTER_ATTR(fatal_errors, TESSERA_CNT_FATAL_ERRORS);
TESSERA_COUNTER_ATTR(banned_contexts, TESSERA_CNT_BANNED_CONTEXTS);
TESSERA_COUNTER_ATTR(remote_access_refused, TESSERA_CNT_REMOTE_ACCESS);
TESSERA_COUNTER_ATTR(link_downs, TESSERA_CNT_LINK_DOWNS);
TESSERA_COUNTER_ATTR(link_ups, TESSERA_CNT_LINK_UPS);
TESSERA_COUNTER_ATTR(link_events_suppressed, TESSERA_CNT_LINK_EVENTS_SUPPRESSED);
TESSERA_COUNTER_ATTR(pcie_errors, TESSERA_CNT_PCIE_ERRORS);
TESSERA_COUNTER_ATTR(pcie_correctable_errors, TESSERA_CNT_PCIE_CORRECTABLE);
TESSERA_COUNTER_ATTR(purged_buffers, TESSERA_CNT_PURGED_BOS);
TESSERA_COUNTER_ATTR(purged_bytes, TESSERA_CNT_PURGED_BYTES);

/* The chip's counters: 64-bit registers, by enum tessera_chip_counter. */
static const u32 tessera_chip_counter_regs[TESSERA_CHIP_COUNTERS] = {
	[TESSERA_CHIP_MXU_BUSY] = TSR_REG_CNT_MXU_BUSY_LO,
	[TESSERA_CHIP_VPU_BUSY] = TSR_REG_CNT_VPU_BUSY_LO,
	[TESSERA_CHIP_DMA_BUSY] = TSR_REG_CNT_DMA_BUSY_LO,
	[TESSERA_CHIP_SC_BUSY] = TSR_REG_CNT_SC_BUSY_LO,
	[TESSERA_CHIP_JOBS] = TSR_REG_CNT_JOBS_LO,
	[TESSERA_CHIP_COMMANDS] = TSR_REG_CNT_COMMANDS_LO,
	[TESSERA_CHIP_HBM_READ] = TSR_REG_CNT_HBM_READ_LO,
	[TESSERA_CHIP_HBM_WRITE] = TSR_REG_CNT_HBM_WRITE_LO,
	[TESSERA_CHIP_CLOCK] = TSR_REG_CLOCK_LO,
};

/**
 * tessera_chip_counters_save() - the chip is runtime suspending
 * @tdev: the device, idle
 *
 * Its counters are added to what earlier suspends saved: the resume resets
 * the chip, and a suspended chip's registers are not read.
 */
void tessera_chip_counters_save(struct tessera_device *tdev)
{
	unsigned int i;

	spin_lock(&tdev->chip_counter_lock);
	for (i = 0; i < TESSERA_CHIP_COUNTERS; i++)
		tdev->chip_counter_base[i] +=
			tessera_reg_read64(tdev, tessera_chip_counter_regs[i]);
	tdev->chip_counters_saved = true;
	spin_unlock(&tdev->chip_counter_lock);
}

/* The chip is resumed and reset: its counters go on from the saved ones. */
void tessera_chip_counters_resumed(struct tessera_device *tdev)
{
	spin_lock(&tdev->chip_counter_lock);
	tdev->chip_counters_saved = false;
	spin_unlock(&tdev->chip_counter_lock);
}

/* A chip reset that counts (device_resets): the chip's counters restart. */
void tessera_chip_counters_clear(struct tessera_device *tdev)
{
	spin_lock(&tdev->chip_counter_lock);
	memset(tdev->chip_counter_base, 0, sizeof(tdev->chip_counter_base));
	spin_unlock(&tdev->chip_counter_lock);
}

struct tessera_chip_counter_attr {
	struct device_attribute attr;
	enum tessera_chip_counter index;
};

/*
 * A 64-bit counter of the chip, from its last counted reset on; a runtime
 * suspended chip is not woken to be read.
 */
static ssize_t tessera_chip_counter_show(struct device *dev,
					 struct device_attribute *attr, char *buf)
{
	struct tessera_device *tdev = pci_get_drvdata(to_pci_dev(dev));
	struct tessera_chip_counter_attr *ca =
		container_of(attr, struct tessera_chip_counter_attr, attr);
	u64 value;
	int idx;

	if (!drm_dev_enter(&tdev->drm, &idx))
		return -ENODEV;
	spin_lock(&tdev->chip_counter_lock);
	value = tdev->chip_counter_base[ca->index];
	if (!tdev->chip_counters_saved)
		value += tessera_reg_read64(tdev,
					    tessera_chip_counter_regs[ca->index]);
	spin_unlock(&tdev->chip_counter_lock);
	drm_dev_exit(idx);
	return sysfs_emit(buf, "%llu\n", value);
}

#define TESSERA_CHIP_COUNTER_ATTR(_name, _index) \
	static struct tessera_chip_counter_attr dev_attr_##_name = { \
		.attr = __ATTR(_name, 0444, tessera_chip_counter_show, NULL), \
		.index = _index, \
	}

TESSERA_CHIP_COUNTER_ATTR(mxu_busy_cycles, TESSERA_CHIP_MXU_BUSY);
TESSERA_CHIP_COUNTER_ATTR(vpu_busy_cycles, TESSERA_CHIP_VPU_BUSY);
TESSERA_CHIP_COUNTER_ATTR(dma_busy_cycles, TESSERA_CHIP_DMA_BUSY);
TESSERA_CHIP_COUNTER_ATTR(sc_busy_cycles, TESSERA_CHIP_SC_BUSY);
TESSERA_CHIP_COUNTER_ATTR(chip_jobs, TESSERA_CHIP_JOBS);
TESSERA_CHIP_COUNTER_ATTR(chip_commands, TESSERA_CHIP_COMMANDS);
TESSERA_CHIP_COUNTER_ATTR(hbm_read_bytes, TESSERA_CHIP_HBM_READ);
TESSERA_CHIP_COUNTER_ATTR(hbm_write_bytes, TESSERA_CHIP_HBM_WRITE);
TESSERA_CHIP_COUNTER_ATTR(clock_cycles, TESSERA_CHIP_CLOCK);

static ssize_t irq_count_show(struct device *dev, struct device_attribute *attr,
			      char *buf)
{
	struct tessera_device *tdev = pci_get_drvdata(to_pci_dev(dev));

	return sysfs_emit(buf, "%lld\n", atomic64_read(&tdev->irq_count));
}
static DEVICE_ATTR_RO(irq_count);

static ssize_t hbm_free_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	struct tessera_device *tdev = pci_get_drvdata(to_pci_dev(dev));

	return sysfs_emit(buf, "%llu\n", tessera_hbm_free(tdev));
}
static DEVICE_ATTR_RO(hbm_free);

static struct attribute *tessera_attrs[] = {
	&dev_attr_jobs_submitted.attr.attr,
	&dev_attr_jobs_completed.attr.attr,
	&dev_attr_jobs_failed.attr.attr,
	&dev_attr_mmu_faults.attr.attr,
	&dev_attr_ecc_correctable.attr.attr,
	&dev_attr_ecc_uncorrectable.attr.attr,
	&dev_attr_timeouts.attr.attr,
	&dev_attr_lost_irqs.attr.attr,
	&dev_attr_queue_resets.attr.attr,
	&dev_attr_device_resets.attr.attr,
	&dev_attr_fatal_errors.attr.attr,
	&dev_attr_banned_contexts.attr.attr,
	&dev_attr_remote_access_refused.attr.attr,
	&dev_attr_link_downs.attr.attr,
	&dev_attr_link_ups.attr.attr,
	&dev_attr_link_events_suppressed.attr.attr,
	&dev_attr_pcie_errors.attr.attr,
	&dev_attr_pcie_correctable_errors.attr.attr,
	&dev_attr_purged_buffers.attr.attr,
	&dev_attr_purged_bytes.attr.attr,
	&dev_attr_hbm_free.attr,
	&dev_attr_irq_count.attr,
	&dev_attr_mxu_busy_cycles.attr.attr,
	&dev_attr_vpu_busy_cycles.attr.attr,
	&dev_attr_dma_busy_cycles.attr.attr,
	&dev_attr_sc_busy_cycles.attr.attr,
	&dev_attr_chip_jobs.attr.attr,
	&dev_attr_chip_commands.attr.attr,
	&dev_attr_hbm_read_bytes.attr.attr,
	&dev_attr_hbm_write_bytes.attr.attr,
	&dev_attr_clock_cycles.attr.attr,
	NULL
};

static const struct attribute_group tessera_attr_group = {
	.name = "tessera",
	.attrs = tessera_attrs,
};

int tessera_sysfs_init(struct tessera_device *tdev)
{
	return devm_device_add_group(tdev->drm.dev, &tessera_attr_group);
}
