// SPDX-License-Identifier: GPL-2.0-only
/*
 * Tessera and the PCI core: function-level resets and PCIe errors (AER);
 * system sleep is tessera_pm.c's.
 *
 * A reset the PCI core makes (echo 1 > /sys/bus/pci/devices/.../reset, or
 * the bus reset of an uncorrectable PCIe error) wipes the chip's
 * registers.  The driver quiets the chip before it and recovers it after,
 * as after a fatal chip error (tessera_reset_prepare(), _done()): the job
 * the reset interrupted fails with -ECANCELED, the others run again.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <linux/pci.h>

#include <drm/drm_print.h>

#include "tessera_drv.h"
#include "tessera_pci.h"
#include "tessera_reset.h"

static void tessera_pci_reset_prepare(struct pci_dev *pdev)
{
	struct tessera_device *tdev = pci_get_drvdata(pdev);

	drm_info(&tdev->drm, "PCI function reset; the chip is reset with it\n");
	tessera_reset_prepare(tdev);
}

static void tessera_pci_reset_done(struct pci_dev *pdev)
{
	tessera_reset_done(pci_get_drvdata(pdev));
}

/*
 * An uncorrectable error: for a fatal one the PCI core resets the link
 * next, for a non-fatal one only the driver resets the chip.  Either way
 * tessera_pci_slot_reset() recovers it.
 */
static pci_ers_result_t tessera_pci_error_detected(struct pci_dev *pdev,
						   pci_channel_state_t state)
{
	struct tessera_device *tdev = pci_get_drvdata(pdev);

	tessera_count(tdev, TESSERA_CNT_PCIE_ERRORS);
	if (state == pci_channel_io_perm_failure) {
		drm_err(&tdev->drm, "PCIe error: the chip is lost\n");
		return PCI_ERS_RESULT_DISCONNECT;
	}
	drm_err(&tdev->drm, "%s PCIe error; resetting the chip\n",
		state == pci_channel_io_frozen ? "fatal" : "non-fatal");
	tessera_reset_prepare(tdev);
	return PCI_ERS_RESULT_NEED_RESET;
}

static pci_ers_result_t tessera_pci_slot_reset(struct pci_dev *pdev)
{
	struct tessera_device *tdev = pci_get_drvdata(pdev);

	/* A bus reset wiped the config space: BARs, bus mastering, MSI-X. */
	pci_restore_state(pdev);
	pci_save_state(pdev);
	tessera_reset_done(tdev);
	return PCI_ERS_RESULT_RECOVERED;
}

static void tessera_pci_resume(struct pci_dev *pdev)
{
	struct tessera_device *tdev = pci_get_drvdata(pdev);

	drm_info(&tdev->drm, "recovered from the PCIe error\n");
}

/* The PCI core logs a correctable error and clears it: only count it. */
static void tessera_pci_cor_error_detected(struct pci_dev *pdev)
{
	tessera_count(pci_get_drvdata(pdev), TESSERA_CNT_PCIE_CORRECTABLE);
}

const struct pci_error_handlers tessera_pci_err_handlers = {
	.error_detected = tessera_pci_error_detected,
	.slot_reset = tessera_pci_slot_reset,
	.resume = tessera_pci_resume,
	.reset_prepare = tessera_pci_reset_prepare,
	.reset_done = tessera_pci_reset_done,
	.cor_error_detected = tessera_pci_cor_error_detected,
};
