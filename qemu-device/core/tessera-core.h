/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera chip core: the chip's behaviour in plain C, free of QEMU headers.
 *
 * The core owns the register file and the chip state.  Its host (the QEMU
 * glue, or a unit test) supplies a narrow set of callbacks: raising an
 * MSI-X vector and asking for deferred work to be run outside the MMIO
 * path.  The host then calls tsr_core_run() from its own context (a bottom
 * half in QEMU), which is where the chip does its work.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_CORE_H
#define TESSERA_CORE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct TsrCoreOps {
    /* Raise MSI-X vector @vector. */
    void (*raise_irq)(void *opaque, unsigned int vector);
    /* Ask the host to call tsr_core_run() soon, outside the MMIO path. */
    void (*schedule)(void *opaque);
} TsrCoreOps;

typedef struct TsrCore {
    const TsrCoreOps *ops;
    void *opaque;

    uint32_t scratch;
    uint32_t irq_status;
    uint32_t irq_enable;

    bool ping_pending;
    uint32_t ping_cookie;
    uint32_t ping_ack;
    uint32_t ping_count;
} TsrCore;

void tsr_core_init(TsrCore *core, const TsrCoreOps *ops, void *opaque);
/* Return every register to its documented reset value. */
void tsr_core_reset(TsrCore *core);

/*
 * Register access.  @offset is a byte offset into BAR0's register space;
 * accesses are 32 bits wide and aligned (the glue enforces this).
 * Reserved offsets read as zero and ignore writes.
 */
uint32_t tsr_core_reg_read(TsrCore *core, uint32_t offset);
void tsr_core_reg_write(TsrCore *core, uint32_t offset, uint32_t value);

/* Run the work the chip has pending; called by the host after schedule(). */
void tsr_core_run(TsrCore *core);

#endif /* TESSERA_CORE_H */
