// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera sysfs: the driver's counters, in the "tessera" directory of the
 * PCI device (/sys/bus/pci/devices/<address>/tessera/).
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/device.h>
#include <linux/sysfs.h>

#include <drm/drm_drv.h>

#include "tessera_drv.h"
#include "tessera_gem.h"
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
	&dev_attr_hbm_free.attr,
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
