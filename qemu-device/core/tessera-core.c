/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera chip core: register file and device-level interrupts.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <string.h>

#include "drm/tessera_chip.h"
#include "tessera-core.h"

void tsr_core_init(TsrCore *core, const TsrCoreOps *ops, void *opaque)
{
    memset(core, 0, sizeof(*core));
    core->ops = ops;
    core->opaque = opaque;
    tsr_core_reset(core);
}

void tsr_core_reset(TsrCore *core)
{
    core->scratch = 0;
    core->irq_status = 0;
    core->irq_enable = 0;
    core->ping_pending = false;
    core->ping_cookie = 0;
    core->ping_ack = 0;
    core->ping_count = 0;
}

/* Latch @bits in IRQ_STATUS and signal the vector if any of them is enabled. */
static void tsr_core_set_irq(TsrCore *core, uint32_t bits)
{
    core->irq_status |= bits;
    if (core->irq_enable & bits) {
        core->ops->raise_irq(core->opaque, TSR_MSIX_VEC_DEVICE);
    }
}

uint32_t tsr_core_reg_read(TsrCore *core, uint32_t offset)
{
    switch (offset) {
    case TSR_REG_CHIP_ID:
        return TSR_CHIP_ID;
    case TSR_REG_DEVICE_VERSION:
        return TSR_VERSION(TSR_DEVICE_VERSION_MAJOR, TSR_DEVICE_VERSION_MINOR);
    case TSR_REG_CAPS:
        return 0;
    case TSR_REG_SCRATCH:
        return core->scratch;
    case TSR_REG_IRQ_STATUS:
        return core->irq_status;
    case TSR_REG_IRQ_ENABLE:
        return core->irq_enable;
    case TSR_REG_PING_ACK:
        return core->ping_ack;
    case TSR_REG_PING_COUNT:
        return core->ping_count;
    default:
        return 0;
    }
}

void tsr_core_reg_write(TsrCore *core, uint32_t offset, uint32_t value)
{
    switch (offset) {
    case TSR_REG_SCRATCH:
        core->scratch = value;
        break;
    case TSR_REG_IRQ_STATUS:
        core->irq_status &= ~value;
        break;
    case TSR_REG_IRQ_ENABLE:
        core->irq_enable = value & TSR_IRQ_ALL;
        /* A cause latched while disabled is delivered once enabled. */
        if (core->irq_status & core->irq_enable) {
            core->ops->raise_irq(core->opaque, TSR_MSIX_VEC_DEVICE);
        }
        break;
    case TSR_REG_PING:
        /* Like a real doorbell: the write returns, the interrupt follows. */
        core->ping_cookie = value;
        core->ping_pending = true;
        core->ops->schedule(core->opaque);
        break;
    default:
        break;
    }
}

void tsr_core_run(TsrCore *core)
{
    if (core->ping_pending) {
        core->ping_pending = false;
        core->ping_ack = core->ping_cookie;
        core->ping_count++;
        tsr_core_set_irq(core, TSR_IRQ_PING);
    }
}
