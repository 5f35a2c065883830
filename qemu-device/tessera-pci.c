/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera virtual AI accelerator: QEMU PCIe glue.
 *
 * This file only connects the chip core (core/tessera-core.c) to QEMU:
 * the PCI function and its capabilities, BAR0 with the register file and
 * the MSI-X table, a bottom half that runs the core's deferred work, reset
 * and tracing.  The chip's behaviour lives in the core.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "qom/object.h"

#include "drm/tessera_chip.h"
#include "core/tessera-core.h"
#include "trace.h"

#define TYPE_TESSERA "tessera"
OBJECT_DECLARE_SIMPLE_TYPE(TesseraState, TESSERA)

/* Config-space offset of the PCI Express capability. */
#define TESSERA_PCIE_CAP_OFFSET 0x80

struct TesseraState {
    PCIDevice parent_obj;

    MemoryRegion bar0;
    MemoryRegion regs;
    QEMUBH *run_bh;

    TsrCore core;
};

static void tessera_raise_irq(void *opaque, unsigned int vector)
{
    TesseraState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);

    if (!msix_enabled(pdev)) {
        trace_tessera_irq_msix_disabled(vector);
        return;
    }
    trace_tessera_irq(vector);
    msix_notify(pdev, vector);
}

static void tessera_schedule(void *opaque)
{
    TesseraState *s = opaque;

    qemu_bh_schedule(s->run_bh);
}

static const TsrCoreOps tessera_core_ops = {
    .raise_irq = tessera_raise_irq,
    .schedule = tessera_schedule,
};

static void tessera_run_bh(void *opaque)
{
    TesseraState *s = opaque;

    tsr_core_run(&s->core);
}

static uint64_t tessera_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    TesseraState *s = opaque;
    uint32_t val = tsr_core_reg_read(&s->core, addr);

    trace_tessera_mmio_read(addr, val);
    return val;
}

static void tessera_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                               unsigned size)
{
    TesseraState *s = opaque;

    trace_tessera_mmio_write(addr, val);
    tsr_core_reg_write(&s->core, addr, val);
}

static const MemoryRegionOps tessera_mmio_ops = {
    .read = tessera_mmio_read,
    .write = tessera_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
        .unaligned = false,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

static void tessera_realize(PCIDevice *pdev, Error **errp)
{
    TesseraState *s = TESSERA(pdev);
    unsigned int v;

    pci_config_set_interrupt_pin(pdev->config, 1);
    if (pci_is_express(pdev)) {
        pcie_endpoint_cap_init(pdev, TESSERA_PCIE_CAP_OFFSET);
        pcie_cap_flr_init(pdev);
    }

    tsr_core_init(&s->core, &tessera_core_ops, s);
    s->run_bh = qemu_bh_new_guarded(tessera_run_bh, s,
                                    &DEVICE(pdev)->mem_reentrancy_guard);

    memory_region_init(&s->bar0, OBJECT(s), "tessera-bar0", TSR_BAR0_SIZE);
    memory_region_init_io(&s->regs, OBJECT(s), &tessera_mmio_ops, s,
                          "tessera-regs", TSR_BAR0_REGS_SIZE);
    memory_region_add_subregion(&s->bar0, 0, &s->regs);
    pci_register_bar(pdev, 0, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar0);

    if (msix_init(pdev, TSR_MSIX_VECTORS,
                  &s->bar0, 0, TSR_BAR0_MSIX_TABLE,
                  &s->bar0, 0, TSR_BAR0_MSIX_PBA, 0, errp)) {
        qemu_bh_delete(s->run_bh);
        return;
    }
    for (v = 0; v < TSR_MSIX_VECTORS; v++) {
        msix_vector_use(pdev, v);
    }
}

static void tessera_exit(PCIDevice *pdev)
{
    TesseraState *s = TESSERA(pdev);

    msix_uninit(pdev, &s->bar0, &s->bar0);
    qemu_bh_delete(s->run_bh);
}

static void tessera_reset_hold(Object *obj, ResetType type)
{
    TesseraState *s = TESSERA(obj);

    trace_tessera_reset();
    tsr_core_reset(&s->core);
}

static void tessera_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    k->realize = tessera_realize;
    k->exit = tessera_exit;
    k->vendor_id = TSR_PCI_VENDOR_ID;
    k->device_id = TSR_PCI_DEVICE_ID;
    k->revision = TSR_PCI_REVISION;
    k->class_id = TSR_PCI_CLASS >> 8;
    rc->phases.hold = tessera_reset_hold;
    dc->desc = "Tessera virtual AI accelerator (experimental)";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo tessera_info = {
    .name = TYPE_TESSERA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(TesseraState),
    .class_init = tessera_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void tessera_register_types(void)
{
    type_register_static(&tessera_info);
}

type_init(tessera_register_types)
