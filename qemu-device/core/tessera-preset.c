/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Chip presets, after the public figures of Google's TPU generations
 * (the TPUv2/v3 CACM paper, the JAX scaling book and Google's SparseCore
 * guide: v4 and v5p have 4 SparseCores, v6e 2, each of 16 tiles with 8
 * f32 lanes, 16 bf16 lanes on v6e).  Per chip:
 * peak bf16 FLOP/s = 2 * tensorcores * mxus_per_core * mxu_dim^2 * clock.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <string.h>

#include "tessera/chip.h"
#include "tessera-core.h"

#define MIB (1024ull * 1024)

/* HBM size defaults small, so that sixteen chips fit on one host. */
#define DEFAULT_HBM_SIZE (256 * MIB)
#define DEFAULT_QUEUES 4
/* PCIe 4.0 x16, one way. */
#define DEFAULT_HOST_DMA_GBPS 32

static const struct {
    const char *name;
    TsrConfig cfg;
} presets[] = {
    { "v2", {
        .preset = TSR_PRESET_V2, .tensorcores = 2, .mxus_per_core = 1,
        .mxu_dim = 128, .vpu_sublanes = 8, .vpu_lanes = 128,
        .vmem_mib = 16, .clock_mhz = 700, .hbm_gbps = 700,
        .ici_ports = 4, .ici_link_gbps = 62, .ici_link_latency_ns = 1000,
        .sparsecores = 0, .sc_tiles = 16, .sc_simd_f32 = 8,
        .sc_simd_bf16 = 8, .sc_spmem_kib = 2560,
    } },
    { "v3", {
        .preset = TSR_PRESET_V3, .tensorcores = 2, .mxus_per_core = 2,
        .mxu_dim = 128, .vpu_sublanes = 8, .vpu_lanes = 128,
        .vmem_mib = 16, .clock_mhz = 940, .hbm_gbps = 900,
        .ici_ports = 4, .ici_link_gbps = 82, .ici_link_latency_ns = 1000,
        .sparsecores = 0, .sc_tiles = 16, .sc_simd_f32 = 8,
        .sc_simd_bf16 = 8, .sc_spmem_kib = 2560,
    } },
    { "v4", {
        .preset = TSR_PRESET_V4, .tensorcores = 2, .mxus_per_core = 4,
        .mxu_dim = 128, .vpu_sublanes = 8, .vpu_lanes = 128,
        .vmem_mib = 16, .clock_mhz = 1050, .hbm_gbps = 1200,
        .ici_ports = 6, .ici_link_gbps = 45, .ici_link_latency_ns = 1000,
        .sparsecores = 4, .sc_tiles = 16, .sc_simd_f32 = 8,
        .sc_simd_bf16 = 8, .sc_spmem_kib = 2560,
    } },
    { "v5e", {
        .preset = TSR_PRESET_V5E, .tensorcores = 1, .mxus_per_core = 4,
        .mxu_dim = 128, .vpu_sublanes = 8, .vpu_lanes = 128,
        .vmem_mib = 128, .clock_mhz = 1500, .hbm_gbps = 819,
        .ici_ports = 4, .ici_link_gbps = 45, .ici_link_latency_ns = 1000,
        .sparsecores = 0, .sc_tiles = 16, .sc_simd_f32 = 8,
        .sc_simd_bf16 = 8, .sc_spmem_kib = 2560,
    } },
    { "v5p", {
        .preset = TSR_PRESET_V5P, .tensorcores = 2, .mxus_per_core = 4,
        .mxu_dim = 128, .vpu_sublanes = 8, .vpu_lanes = 128,
        .vmem_mib = 95, .clock_mhz = 1750, .hbm_gbps = 2765,
        .ici_ports = 6, .ici_link_gbps = 90, .ici_link_latency_ns = 1000,
        .sparsecores = 4, .sc_tiles = 16, .sc_simd_f32 = 8,
        .sc_simd_bf16 = 8, .sc_spmem_kib = 2560,
    } },
    { "v6e", {
        .preset = TSR_PRESET_V6E, .tensorcores = 1, .mxus_per_core = 4,
        .mxu_dim = 256, .vpu_sublanes = 8, .vpu_lanes = 128,
        .vmem_mib = 128, .clock_mhz = 1750, .hbm_gbps = 1640,
        .ici_ports = 4, .ici_link_gbps = 90, .ici_link_latency_ns = 1000,
        .sparsecores = 2, .sc_tiles = 16, .sc_simd_f32 = 8,
        .sc_simd_bf16 = 16, .sc_spmem_kib = 2560,
    } },
};

int tsr_preset_lookup(const char *name, TsrConfig *cfg)
{
    size_t i;

    for (i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
        if (strcmp(presets[i].name, name) == 0) {
            *cfg = presets[i].cfg;
            cfg->host_dma_gbps = DEFAULT_HOST_DMA_GBPS;
            cfg->num_queues = DEFAULT_QUEUES;
            cfg->hbm_size = DEFAULT_HBM_SIZE;
            cfg->debug_regs = false;
            return 0;
        }
    }
    return -1;
}

static bool in_range(uint32_t v, uint32_t lo, uint32_t hi)
{
    return v >= lo && v <= hi;
}

static bool sc_config_ok(const TsrConfig *cfg)
{
    uint32_t simd = cfg->sc_simd_f32;

    return cfg->sparsecores <= 8 && in_range(cfg->sc_tiles, 1, 64) &&
           in_range(simd, 4, 64) && !(simd & (simd - 1)) &&
           (cfg->sc_simd_bf16 == simd || cfg->sc_simd_bf16 == 2 * simd) &&
           in_range(cfg->sc_spmem_kib, 64, 65536);
}

int tsr_config_check(const TsrConfig *cfg, const char **why)
{
    if (!in_range(cfg->tensorcores, 1, 4)) {
        *why = "tensorcores must be 1 to 4";
    } else if (!in_range(cfg->mxus_per_core, 1, 8)) {
        *why = "mxus-per-core must be 1 to 8";
    } else if (cfg->mxu_dim != 128 && cfg->mxu_dim != 256) {
        *why = "mxu-dim must be 128 or 256";
    } else if (!in_range(cfg->vpu_sublanes, 1, 64) ||
               !in_range(cfg->vpu_lanes, 8, 1024)) {
        *why = "vpu-sublanes must be 1 to 64 and vpu-lanes 8 to 1024";
    } else if (!in_range(cfg->vmem_mib, 1, 1024)) {
        *why = "vmem-mib must be 1 to 1024";
    } else if (!in_range(cfg->clock_mhz, 100, 10000)) {
        *why = "clock-mhz must be 100 to 10000";
    } else if (!in_range(cfg->hbm_gbps, 1, 100000) ||
               !in_range(cfg->host_dma_gbps, 1, 10000)) {
        *why = "hbm-gbps must be 1 to 100000 and host-dma-gbps 1 to 10000";
    } else if (cfg->ici_ports != 0 && cfg->ici_ports != 4 &&
               cfg->ici_ports != 6) {
        *why = "ici-ports must be 0, 4 or 6";
    } else if (!in_range(cfg->ici_link_gbps, 1, 10000) ||
               cfg->ici_link_latency_ns > 1000000) {
        *why = "ici-link-gbps must be 1 to 10000, "
               "ici-link-latency-ns at most 1000000";
    } else if (!sc_config_ok(cfg)) {
        *why = "sparsecores must be 0 to 8, sc-tiles 1 to 64, sc-simd 4 to "
               "64 (a power of two), sc-simd-bf16 sc-simd or twice it, "
               "sc-spmem-kib 64 to 65536";
    } else if (!in_range(cfg->num_queues, 1, TSR_MAX_QUEUES)) {
        *why = "queues must be 1 to 8";
    } else if (cfg->hbm_size < 16 * MIB || cfg->hbm_size > 64 * 1024 * MIB ||
               (cfg->hbm_size & (cfg->hbm_size - 1))) {
        *why = "hbm-size must be a power of two from 16 MiB to 64 GiB";
    } else {
        return 0;
    }
    return -1;
}

double tsr_config_peak_flops(const TsrConfig *cfg)
{
    return 2.0 * cfg->tensorcores * cfg->mxus_per_core *
           (double)cfg->mxu_dim * cfg->mxu_dim * cfg->clock_mhz * 1e6;
}
