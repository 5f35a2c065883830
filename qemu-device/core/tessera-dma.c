/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera DMA engine: DMA_COPY and DMA_FILL, up to three dimensions, with
 * every size and stride checked before anything moves.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-internal.h"

/* Fixed latency of a DMA command, in cycles. */
#define TSR_DMA_LATENCY_CYCLES 500

/* Largest piece a DMA moves through the host at once. */
#define TSR_DMA_CHUNK (1u << 20)

/*
 * The bytes one side of a DMA spans from its address: size[1] rows
 * @stride[0] apart in each of size[2] planes @stride[1] apart.  Strides
 * are unsigned; one that would step backwards wraps, and fails here.
 */
static bool dma_span(const struct tsr_cmd_dma *c, uint64_t row_stride,
                     uint64_t plane_stride, uint64_t *rows, uint64_t *span)
{
    return tsr_span(c->size[1], row_stride, c->size[0], rows) &&
           tsr_span(c->size[2], plane_stride, *rows, span);
}

/*
 * One side's bytes lie in the address space, in order: no wrap-around.
 * Sets @rows to the bytes one plane spans.
 */
static bool dma_side_ok(const struct tsr_cmd_dma *c, uint64_t va,
                        uint64_t row_stride, uint64_t plane_stride,
                        uint64_t *rows)
{
    uint64_t span, last;

    return dma_span(c, row_stride, plane_stride, rows, &span) &&
           tsr_add(va, span - 1, &last);
}

static uint32_t dma_check(const struct tsr_cmd_dma *c, bool fill)
{
    uint64_t total, src_rows, dst_rows;
    int i;

    if (c->hdr.flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->hdr.reserved || c->reserved || (fill && (c->src >> 32)) ||
        (fill && (c->src_stride[0] || c->src_stride[1]))) {
        return TSR_ERR_RESERVED;
    }
    for (i = 0; i < 3; i++) {
        if (!c->size[i]) {
            return TSR_ERR_BAD_SHAPE;
        }
    }
    if (fill && c->size[0] % 4) {
        return TSR_ERR_BAD_SHAPE;
    }
    if (!tsr_mul(c->size[0], c->size[1], &total) ||
        !tsr_mul(total, c->size[2], &total) || total > TSR_MAX_TRANSFER) {
        return TSR_ERR_TOO_LARGE;
    }
    if ((!fill && !dma_side_ok(c, c->src, c->src_stride[0],
                               c->src_stride[1], &src_rows)) ||
        !dma_side_ok(c, c->dst, c->dst_stride[0], c->dst_stride[1],
                     &dst_rows)) {
        return TSR_ERR_BAD_STRIDE;
    }
    /* Destination rows and planes must not overlap each other. */
    if ((c->size[1] > 1 && c->dst_stride[0] < c->size[0]) ||
        (c->size[2] > 1 && c->dst_stride[1] < dst_rows)) {
        return TSR_ERR_BAD_STRIDE;
    }
    if (fill && (c->dst % 4 || c->dst_stride[0] % 4 || c->dst_stride[1] % 4)) {
        return TSR_ERR_BAD_ALIGNMENT;
    }
    return TSR_ERR_NONE;
}

/* One row, a chunk at a time, stopping early when the job is aborted. */
static uint32_t dma_row(TsrMem *mem, const struct tsr_cmd_dma *c, bool fill,
                        uint8_t *buf, uint64_t src, uint64_t dst)
{
    uint64_t done, n;
    int ret;

    for (done = 0; done < c->size[0]; done += n) {
        n = c->size[0] - done;
        n = n < TSR_DMA_CHUNK ? n : TSR_DMA_CHUNK;
        if (tsr_mem_aborted(mem)) {
            return TSR_ERR_ABORTED;
        }
        ret = fill ? tsr_mem_write(mem, dst + done, buf, n)
                   : tsr_mem_copy(mem, dst + done, src + done, n, buf,
                                  TSR_DMA_CHUNK);
        if (ret) {
            return mem->error;
        }
    }
    return TSR_ERR_NONE;
}

uint32_t tsr_cmd_dma(TsrMem *mem, const struct tsr_cmd_dma *c, bool fill,
                     TsrCost *cost)
{
    uint32_t err = dma_check(c, fill);
    uint64_t chunk = TSR_DMA_CHUNK;
    uint32_t row, plane;
    uint8_t *buf;

    if (err) {
        return err;
    }
    buf = malloc(chunk);
    if (!buf) {
        return TSR_ERR_TOO_LARGE;
    }
    if (fill) {
        uint32_t pattern = htole32((uint32_t)c->src);
        uint64_t i;

        for (i = 0; i < chunk; i += 4) {
            memcpy(buf + i, &pattern, 4);
        }
    }
    /* Every address below lies inside a side dma_check() accepted. */
    for (plane = 0; plane < c->size[2] && !err; plane++) {
        for (row = 0; row < c->size[1] && !err; row++) {
            uint64_t src = c->src + plane * c->src_stride[1] +
                           row * c->src_stride[0];
            uint64_t dst = c->dst + plane * c->dst_stride[1] +
                           row * c->dst_stride[0];

            err = dma_row(mem, c, fill, buf, src, dst);
        }
    }
    free(buf);
    cost->dma += TSR_DMA_LATENCY_CYCLES + tsr_mem_cycles(mem);
    return err;
}
