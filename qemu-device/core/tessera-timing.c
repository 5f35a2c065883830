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

/* ----------------------------------------------------------- SparseCore */

/* Cycles to start a SparseCore command on every tile. */
#define TSR_SC_LATENCY_CYCLES 100
/* Passes over the ids of a partition: dedup, count and route, write. */
#define TSR_SC_PARTITION_PASSES 3

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

uint64_t tsr_sc_lanes(const TsrConfig *cfg, uint32_t dtype)
{
    uint64_t simd = dtype == TSR_DTYPE_BF16 ? cfg->sc_simd_bf16
                                            : cfg->sc_simd_f32;

    return (uint64_t)cfg->sparsecores * cfg->sc_tiles * simd;
}

uint64_t tsr_sc_row_bytes(uint64_t bytes)
{
    return div_up(bytes, TSR_SC_HBM_GRANULE) * TSR_SC_HBM_GRANULE;
}

/* Compute overlaps memory; the memory streams share HBM and add up. */
static uint64_t sc_cycles(uint64_t compute, uint64_t memory)
{
    return TSR_SC_LATENCY_CYCLES + tsr_max(compute, memory);
}

uint64_t tsr_sc_partition_cycles(const TsrConfig *cfg, uint64_t ids,
                                 uint64_t stream)
{
    uint64_t compute = TSR_SC_PARTITION_PASSES *
                       div_up(ids, tsr_sc_lanes(cfg, TSR_DTYPE_F32));

    return sc_cycles(compute, stream);
}

uint64_t tsr_sc_gather_bytes(uint32_t dtype, uint64_t ids, uint64_t dim)
{
    return ids * tsr_sc_row_bytes(dim * tsr_dtype_size(dtype));
}

uint64_t tsr_sc_scatter_bytes(uint32_t dtype, uint32_t grad_dtype,
                              uint64_t ids, uint64_t unique, uint64_t dim)
{
    return tsr_sc_gather_bytes(grad_dtype, ids, dim) +
           2 * tsr_sc_gather_bytes(dtype, unique, dim);
}

uint64_t tsr_sc_lookup_cycles(const TsrConfig *cfg, uint32_t dtype,
                              uint64_t ids, uint64_t rows, uint64_t dim,
                              uint64_t row_bytes, uint64_t stream)
{
    uint64_t lanes = tsr_sc_lanes(cfg, dtype);
    uint64_t compute = div_up(ids * dim, lanes) + div_up(rows * dim, lanes);

    return sc_cycles(compute, tsr_cycles_for_bytes(cfg, row_bytes,
                                                   cfg->hbm_gbps) + stream);
}
