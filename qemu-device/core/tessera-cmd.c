/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera commands: decoding and validation, the DMA engine, semaphores,
 * timestamps and interrupts.  The MXU and VPU engines are in
 * tessera-mxu.c and tessera-vpu.c.
 *
 * Every field is checked before anything is touched; an invalid command
 * fails its job with a precise TSR_ERR_* code.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera-internal.h"
#include "tessera-numerics.h"

/* Fixed latencies, in cycles. */
#define TSR_DMA_LATENCY_CYCLES 500
#define TSR_SEM_CYCLES 100
#define TSR_MISC_CYCLES 10

/* Largest piece a DMA moves through the host at once. */
#define TSR_DMA_CHUNK (1u << 20)

/* How often a semaphore wait re-reads memory the CPU may have written. */
#define TSR_SEM_POLL_NS 200000

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

uint32_t tsr_tensor_check(const struct tsr_tensor *t, uint32_t dtypes)
{
    unsigned int esize = tsr_dtype_size(t->dtype);
    uint64_t elems, bytes, last;

    if (t->reserved) {
        return TSR_ERR_RESERVED;
    }
    if (!esize || !(dtypes & TSR_DTYPE_MASK(t->dtype))) {
        return TSR_ERR_BAD_DTYPE;
    }
    if (!t->rows || !t->cols || t->rows > TSR_MAX_DIM ||
        t->cols > TSR_MAX_DIM) {
        return TSR_ERR_BAD_SHAPE;
    }
    if (t->stride < t->cols) {
        return TSR_ERR_BAD_STRIDE;
    }
    if (t->va % esize) {
        return TSR_ERR_BAD_ALIGNMENT;
    }
    /* No row may wrap around the end of the address space. */
    if (!tsr_span(t->rows, t->stride, t->cols, &elems) ||
        !tsr_mul(elems, esize, &bytes) || !tsr_add(t->va, bytes - 1, &last)) {
        return TSR_ERR_BAD_STRIDE;
    }
    return TSR_ERR_NONE;
}

struct tsr_tensor tsr_tensor_block(const struct tsr_tensor *t, uint32_t row,
                                   uint32_t rows, uint32_t col,
                                   uint32_t cols)
{
    struct tsr_tensor b = *t;

    /* Inside a checked tensor: no overflow. */
    b.va += ((uint64_t)row * t->stride + col) * tsr_dtype_size(t->dtype);
    b.rows = rows;
    b.cols = cols;
    return b;
}

uint32_t tsr_block_rows(const struct tsr_tensor *t, uint64_t elems)
{
    uint64_t rows = elems / t->cols;

    rows = rows < t->rows ? rows : t->rows;
    return rows ? rows : 1;
}

bool tsr_tensor_is_zero(const struct tsr_tensor *t)
{
    static const struct tsr_tensor zero;

    return memcmp(t, &zero, sizeof(zero)) == 0;
}

/* Move a tensor between device memory and a dense host copy. */
static int tensor_rows(TsrMem *mem, const struct tsr_tensor *t, void *dense,
                       bool write)
{
    unsigned int esize = tsr_dtype_size(t->dtype);
    uint64_t row_bytes = (uint64_t)t->cols * esize;
    uint64_t pitch = (uint64_t)t->stride * esize;
    uint8_t *p = dense;
    uint32_t r;

    if (t->stride == t->cols) {
        uint64_t len = row_bytes * t->rows;

        return write ? tsr_mem_write(mem, t->va, p, len)
                     : tsr_mem_read(mem, t->va, p, len);
    }
    for (r = 0; r < t->rows; r++, p += row_bytes) {
        int ret = write ? tsr_mem_write(mem, t->va + r * pitch, p, row_bytes)
                        : tsr_mem_read(mem, t->va + r * pitch, p, row_bytes);
        if (ret) {
            return ret;
        }
    }
    return 0;
}

int tsr_tensor_load_raw(TsrMem *mem, const struct tsr_tensor *t, void *dense)
{
    return tensor_rows(mem, t, dense, false);
}

int tsr_tensor_store_raw(TsrMem *mem, const struct tsr_tensor *t,
                         const void *dense)
{
    return tensor_rows(mem, t, (void *)dense, true);
}

void tsr_convert_to_f32(uint32_t dtype, const void *src, float *dst,
                        size_t n)
{
    size_t i;

    switch (dtype) {
    case TSR_DTYPE_F32:
        memmove(dst, src, n * sizeof(float));
        break;
    case TSR_DTYPE_BF16:
        for (i = 0; i < n; i++) {
            dst[i] = tsr_bf16_to_f32(((const uint16_t *)src)[i]);
        }
        break;
    case TSR_DTYPE_I32:
        for (i = 0; i < n; i++) {
            dst[i] = (float)((const int32_t *)src)[i];
        }
        break;
    case TSR_DTYPE_I8:
        for (i = 0; i < n; i++) {
            dst[i] = (float)((const int8_t *)src)[i];
        }
        break;
    }
}

void tsr_convert_from_f32(uint32_t dtype, const float *src, void *dst,
                          size_t n)
{
    size_t i;

    switch (dtype) {
    case TSR_DTYPE_F32:
        memmove(dst, src, n * sizeof(float));
        break;
    case TSR_DTYPE_BF16:
        for (i = 0; i < n; i++) {
            ((uint16_t *)dst)[i] = tsr_f32_to_bf16(src[i]);
        }
        break;
    case TSR_DTYPE_I32:
        for (i = 0; i < n; i++) {
            ((int32_t *)dst)[i] = tsr_f32_to_i32(src[i]);
        }
        break;
    }
}

int tsr_tensor_load_f32(TsrMem *mem, const struct tsr_tensor *t, float *dst)
{
    size_t n = (size_t)t->rows * t->cols;

    if (t->dtype == TSR_DTYPE_F32) {
        return tsr_tensor_load_raw(mem, t, dst);
    }
    /* Narrower types load into the tail of @dst, then widen in place. */
    {
        unsigned int esize = tsr_dtype_size(t->dtype);
        uint8_t *tail = (uint8_t *)dst + n * (sizeof(float) - esize);

        if (tsr_tensor_load_raw(mem, t, tail)) {
            return -1;
        }
        tsr_convert_to_f32(t->dtype, tail, dst, n);
    }
    return 0;
}

int tsr_tensor_store_f32(TsrMem *mem, const struct tsr_tensor *t,
                         const float *src)
{
    size_t n = (size_t)t->rows * t->cols;
    void *buf;
    int ret;

    if (t->dtype == TSR_DTYPE_F32) {
        return tsr_tensor_store_raw(mem, t, src);
    }
    buf = malloc(n * tsr_dtype_size(t->dtype));
    if (!buf) {
        mem->error = mem->error ? mem->error : TSR_ERR_TOO_LARGE;
        return -1;
    }
    tsr_convert_from_f32(t->dtype, src, buf, n);
    ret = tsr_tensor_store_raw(mem, t, buf);
    free(buf);
    return ret;
}

/* ------------------------------------------------------------- DMA */

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

static uint32_t cmd_dma(TsrMem *mem, const struct tsr_cmd_dma *c, bool fill,
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

/* ------------------------------------------------------- semaphores */

static uint32_t sem_check(const struct tsr_cmd_sem *c)
{
    if (c->hdr.flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->hdr.reserved) {
        return TSR_ERR_RESERVED;
    }
    if (c->va % 8) {
        return TSR_ERR_BAD_ALIGNMENT;
    }
    return TSR_ERR_NONE;
}

static uint32_t current_epoch(TsrCore *core)
{
    uint32_t epoch;

    pthread_mutex_lock(&core->lock);
    epoch = core->epoch;
    pthread_mutex_unlock(&core->lock);
    return epoch;
}

/* The sem_times entry of (@context, @va) this epoch, or -1; sem_lock held. */
static int sem_time_find(TsrCore *core, uint32_t epoch, uint32_t context,
                         uint64_t va)
{
    int i;

    for (i = 0; i < TSR_SEM_TIMES; i++) {
        if (core->sem_times[i].epoch == epoch &&
            core->sem_times[i].context == context &&
            core->sem_times[i].va == va) {
            return i;
        }
    }
    return -1;
}

/* Remember when (@context, @va) was last signalled; sem_lock held. */
static void sem_time_record(TsrCore *core, uint32_t context, uint64_t va,
                            uint64_t cycle)
{
    uint32_t epoch = current_epoch(core);
    int i = sem_time_find(core, epoch, context, va);

    if (i < 0) {
        i = core->sem_times_next++ % TSR_SEM_TIMES;
        core->sem_times[i].epoch = epoch;
        core->sem_times[i].context = context;
        core->sem_times[i].va = va;
    }
    core->sem_times[i].cycle = cycle;
}

/* The modeled time (@context, @va) was last signalled since reset, or 0. */
static uint64_t sem_time_lookup(TsrCore *core, uint32_t context, uint64_t va)
{
    uint32_t epoch = current_epoch(core);
    uint64_t cycle;
    int i;

    pthread_mutex_lock(&core->sem_lock);
    i = sem_time_find(core, epoch, context, va);
    cycle = i < 0 ? 0 : core->sem_times[i].cycle;
    pthread_mutex_unlock(&core->sem_lock);
    return cycle;
}

static uint32_t cmd_sem_update(TsrMem *mem, const struct tsr_cmd_sem *c,
                               bool add, TsrCost *cost)
{
    TsrCore *core = mem->core;
    uint32_t err = sem_check(c);
    uint64_t v;

    if (err) {
        return err;
    }
    pthread_mutex_lock(&core->sem_lock);
    if (add && tsr_mem_read(mem, c->va, &v, sizeof(v)) == 0) {
        v = htole64(le64toh(v) + c->value);
    } else {
        v = htole64(c->value);
    }
    cost->other += TSR_SEM_CYCLES;
    if (!mem->error) {
        tsr_mem_write(mem, c->va, &v, sizeof(v));
    }
    if (!mem->error) {
        sem_time_record(core, mem->context, c->va, tsr_cost_now(cost));
    }
    pthread_mutex_unlock(&core->sem_lock);
    tsr_core_wake_waiters(core);
    return mem->error;
}

static uint32_t cmd_sem_wait(TsrMem *mem, const struct tsr_cmd_sem *c,
                             TsrCost *cost)
{
    TsrCore *core = mem->core;
    uint32_t err = sem_check(c);
    uint64_t v;

    if (err) {
        return err;
    }
    cost->other += TSR_SEM_CYCLES;
    for (;;) {
        struct timespec until;

        if (tsr_mem_read(mem, c->va, &v, sizeof(v))) {
            return mem->error;
        }
        if (le64toh(v) >= c->value) {
            /* A signal from another queue ends the wait at its own time. */
            uint64_t signalled = sem_time_lookup(core, mem->context, c->va);

            if (signalled > tsr_cost_now(cost)) {
                cost->other += signalled - tsr_cost_now(cost);
            }
            return TSR_ERR_NONE;
        }
        if (tsr_mem_aborted(mem)) {
            return TSR_ERR_ABORTED;
        }
        /* Woken by another queue's signal, or re-read for the CPU's. */
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += TSR_SEM_POLL_NS;
        if (until.tv_nsec >= 1000000000) {
            until.tv_nsec -= 1000000000;
            until.tv_sec++;
        }
        pthread_mutex_lock(&core->wake_lock);
        pthread_cond_timedwait(&core->sem_cond, &core->wake_lock, &until);
        pthread_mutex_unlock(&core->wake_lock);
    }
}

/* ------------------------------------------- timestamp, interrupt, nop */

static uint32_t cmd_timestamp(TsrMem *mem, const struct tsr_cmd_timestamp *c,
                              TsrCost *cost)
{
    uint64_t now;

    if (c->hdr.flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->hdr.reserved) {
        return TSR_ERR_RESERVED;
    }
    if (c->va % 8) {
        return TSR_ERR_BAD_ALIGNMENT;
    }
    cost->other += TSR_MISC_CYCLES;
    now = htole64(tsr_cost_now(cost));
    tsr_mem_write(mem, c->va, &now, sizeof(now));
    return mem->error;
}

static uint32_t cmd_interrupt(TsrMem *mem, const struct tsr_cmd_header *c,
                              TsrCost *cost)
{
    TsrCore *core = mem->core;
    TsrQueue *qu = &core->queue[mem->queue];
    bool raise = false;

    if (c->flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->reserved) {
        return TSR_ERR_RESERVED;
    }
    pthread_mutex_lock(&core->lock);
    /* A job a reset aborted raises nothing any more. */
    if (qu->generation == mem->generation) {
        qu->irq_status |= TSR_QIRQ_USER;
        raise = qu->irq_enable & TSR_QIRQ_USER;
    }
    pthread_mutex_unlock(&core->lock);
    if (raise) {
        tsr_core_irq(core, TSR_MSIX_VEC_QUEUE(mem->queue));
    }
    cost->other += TSR_MISC_CYCLES;
    return TSR_ERR_NONE;
}

static uint32_t cmd_nop(const struct tsr_cmd_header *c, TsrCost *cost)
{
    if (c->flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->reserved) {
        return TSR_ERR_RESERVED;
    }
    cost->other += 1;
    return TSR_ERR_NONE;
}

/* ---------------------------------------------------------- dispatch */

/* Command sizes in 8-byte words, indexed by opcode; 0 for unknown. */
static uint32_t cmd_size_qw(uint8_t opcode)
{
    switch (opcode) {
    case TSR_OP_NOP:
    case TSR_OP_INTERRUPT:
        return sizeof(struct tsr_cmd_header) / 8;
    case TSR_OP_DMA_COPY:
    case TSR_OP_DMA_FILL:
        return sizeof(struct tsr_cmd_dma) / 8;
    case TSR_OP_MATMUL:
        return sizeof(struct tsr_cmd_matmul) / 8;
    case TSR_OP_VPU:
        return sizeof(struct tsr_cmd_vpu) / 8;
    case TSR_OP_REDUCE:
        return sizeof(struct tsr_cmd_reduce) / 8;
    case TSR_OP_CAST:
    case TSR_OP_TRANSPOSE:
        return sizeof(struct tsr_cmd_unary_copy) / 8;
    case TSR_OP_SEM_WAIT:
    case TSR_OP_SEM_SIGNAL:
    case TSR_OP_SEM_INC:
        return sizeof(struct tsr_cmd_sem) / 8;
    case TSR_OP_TIMESTAMP:
        return sizeof(struct tsr_cmd_timestamp) / 8;
    default:
        return 0;
    }
}

uint32_t tsr_cmd_execute(TsrMem *mem, const void *cmd, uint32_t size,
                         TsrCost *cost)
{
    const struct tsr_cmd_header *hdr = cmd;
    uint32_t want = cmd_size_qw(hdr->opcode);

    if (!want) {
        return TSR_ERR_BAD_OPCODE;
    }
    if (size != want * 8) {
        return TSR_ERR_BAD_SIZE;
    }
    switch (hdr->opcode) {
    case TSR_OP_NOP:
        return cmd_nop(hdr, cost);
    case TSR_OP_DMA_COPY:
        return cmd_dma(mem, cmd, false, cost);
    case TSR_OP_DMA_FILL:
        return cmd_dma(mem, cmd, true, cost);
    case TSR_OP_MATMUL:
        return tsr_cmd_matmul(mem, cmd, cost);
    case TSR_OP_VPU:
        return tsr_cmd_vpu(mem, cmd, cost);
    case TSR_OP_REDUCE:
        return tsr_cmd_reduce(mem, cmd, cost);
    case TSR_OP_CAST:
        return tsr_cmd_cast(mem, cmd, cost);
    case TSR_OP_TRANSPOSE:
        return tsr_cmd_transpose(mem, cmd, cost);
    case TSR_OP_SEM_WAIT:
        return cmd_sem_wait(mem, cmd, cost);
    case TSR_OP_SEM_SIGNAL:
        return cmd_sem_update(mem, cmd, false, cost);
    case TSR_OP_SEM_INC:
        return cmd_sem_update(mem, cmd, true, cost);
    case TSR_OP_TIMESTAMP:
        return cmd_timestamp(mem, cmd, cost);
    case TSR_OP_INTERRUPT:
        return cmd_interrupt(mem, hdr, cost);
    default:
        return TSR_ERR_BAD_OPCODE;
    }
}
