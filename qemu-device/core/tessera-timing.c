/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera timing model: cycles for memory traffic (Documentation/chip.md,
 * "Timing model").  The engines charge their own compute cycles.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include "tessera-internal.h"

uint64_t tsr_cycles_for_bytes(const TsrConfig *cfg, uint64_t bytes,
                              uint32_t gbps)
{
    /* bytes / (gbps * 1e9 B/s) * (clock_mhz * 1e6 cycles/s), rounded up */
    uint64_t num = bytes * (uint64_t)cfg->clock_mhz;
    uint64_t den = (uint64_t)gbps * 1000;

    return (num + den - 1) / den;
}

uint64_t tsr_mem_cycles(const TsrMem *mem)
{
    const TsrConfig *cfg = &mem->core->cfg;
    uint64_t host = tsr_cycles_for_bytes(cfg, mem->host_bytes,
                                         cfg->host_dma_gbps);
    uint64_t hbm = tsr_cycles_for_bytes(cfg, mem->hbm_bytes, cfg->hbm_gbps);

    return host > hbm ? host : hbm;
}
