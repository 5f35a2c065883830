/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera MXU: matrix multiplication.
 *
 * Results are computed on the host with OpenBLAS: bf16 and f32 operands
 * through sgemm (bf16 widens exactly to f32, and the products accumulate
 * in f32 as on the chip), int8 through dgemm (exact for every int32 sum).
 * Time is modeled separately from the systolic arrays' geometry.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>

#include "tessera-internal.h"
#include "tessera-numerics.h"

/*
 * Each MXU holds one mxu_dim x mxu_dim tile of B and streams the M rows
 * of A through it, one row per cycle.  Tiles are spread over all MXUs of
 * all TensorCores; weight loads are double-buffered, so the array fills
 * and drains (2 * mxu_dim cycles) once per command.  f32 operands take
 * three bf16 passes (bf16x3).
 */
uint64_t tsr_mxu_cycles(const TsrConfig *cfg, uint64_t m, uint64_t n,
                        uint64_t k, uint32_t dtype)
{
    uint64_t dim = cfg->mxu_dim;
    uint64_t mxus = (uint64_t)cfg->tensorcores * cfg->mxus_per_core;
    uint64_t tiles = ((k + dim - 1) / dim) * ((n + dim - 1) / dim);
    uint64_t rounds = (tiles + mxus - 1) / mxus;
    uint64_t passes = dtype == TSR_DTYPE_F32 ? 3 : 1;

    return passes * rounds * m + 2 * dim;
}

static uint32_t matmul_check(const struct tsr_cmd_matmul *c, uint64_t *m,
                             uint64_t *n, uint64_t *k)
{
    bool ta = c->hdr.flags & TSR_MATMUL_TRANSPOSE_A;
    bool tb = c->hdr.flags & TSR_MATMUL_TRANSPOSE_B;
    uint32_t in = TSR_DTYPE_MASK(TSR_DTYPE_BF16) |
                  TSR_DTYPE_MASK(TSR_DTYPE_F32) | TSR_DTYPE_MASK(TSR_DTYPE_I8);
    uint32_t out, err;
    uint64_t k2;

    if (c->hdr.flags & ~TSR_MATMUL_FLAGS_ALL) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->hdr.reserved) {
        return TSR_ERR_RESERVED;
    }
    err = tsr_tensor_check(&c->a, in);
    if (!err) {
        err = tsr_tensor_check(&c->b, TSR_DTYPE_MASK(c->a.dtype));
    }
    if (err) {
        return err;
    }
    out = c->a.dtype == TSR_DTYPE_I8 ? TSR_DTYPE_MASK(TSR_DTYPE_I32)
                                     : TSR_DTYPE_MASK(TSR_DTYPE_F32) |
                                       TSR_DTYPE_MASK(TSR_DTYPE_BF16);
    err = tsr_tensor_check(&c->c, out);
    if (err) {
        return err;
    }
    *m = ta ? c->a.cols : c->a.rows;
    *k = ta ? c->a.rows : c->a.cols;
    k2 = tb ? c->b.cols : c->b.rows;
    *n = tb ? c->b.rows : c->b.cols;
    if (*k != k2 || c->c.rows != *m || c->c.cols != *n) {
        return TSR_ERR_BAD_SHAPE;
    }
    if (*m * *k > TSR_MAX_ELEMENTS || *k * *n > TSR_MAX_ELEMENTS ||
        *m * *n > TSR_MAX_ELEMENTS) {
        return TSR_ERR_TOO_LARGE;
    }
    return TSR_ERR_NONE;
}

/*
 * Scratch buffers, one set per worker thread, kept between commands: a
 * fresh 16 MiB buffer per operand costs more in page faults than the
 * conversion it holds.  Buffers above TSR_MXU_KEEP are freed after use.
 */
#define TSR_MXU_SCRATCH 3
#define TSR_MXU_KEEP (256u << 20)

typedef struct MxuScratch {
    void *buf[TSR_MXU_SCRATCH];
    size_t size[TSR_MXU_SCRATCH];
} MxuScratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void *p)
{
    MxuScratch *s = p;
    int i;

    for (i = 0; i < TSR_MXU_SCRATCH; i++) {
        free(s->buf[i]);
    }
    free(s);
}

static void scratch_init(void)
{
    pthread_key_create(&scratch_key, scratch_free);
}

static void *scratch_get(int slot, size_t size)
{
    MxuScratch *s;

    pthread_once(&scratch_once, scratch_init);
    s = pthread_getspecific(scratch_key);
    if (!s) {
        s = calloc(1, sizeof(*s));
        if (!s || pthread_setspecific(scratch_key, s)) {
            free(s);
            return NULL;
        }
    }
    if (s->size[slot] < size) {
        free(s->buf[slot]);
        s->buf[slot] = malloc(size);
        s->size[slot] = s->buf[slot] ? size : 0;
    }
    return s->buf[slot];
}

static void scratch_trim(void)
{
    MxuScratch *s = pthread_getspecific(scratch_key);
    int i;

    for (i = 0; s && i < TSR_MXU_SCRATCH; i++) {
        if (s->size[i] > TSR_MXU_KEEP) {
            free(s->buf[i]);
            s->buf[i] = NULL;
            s->size[i] = 0;
        }
    }
}

static bool dense(const struct tsr_tensor *t)
{
    return t->stride == t->cols;
}

static uint64_t tensor_bytes(const struct tsr_tensor *t)
{
    return (uint64_t)t->rows * t->cols * tsr_dtype_size(t->dtype);
}

/*
 * An f32 copy of operand @t in scratch @slot, or, for a dense f32 tensor
 * in contiguous HBM, the HBM itself.  NULL with mem->error set on failure.
 */
static const float *operand_f32(TsrMem *mem, const struct tsr_tensor *t,
                                int slot)
{
    size_t n = (size_t)t->rows * t->cols;
    const uint8_t *view = dense(t) ? tsr_mem_hbm_view(mem, t->va,
                                                      tensor_bytes(t), false)
                                   : NULL;
    float *buf;

    if (view && t->dtype == TSR_DTYPE_F32) {
        return (const float *)view;
    }
    buf = scratch_get(slot, n * sizeof(float));
    if (!buf) {
        mem->error = TSR_ERR_TOO_LARGE;
        return NULL;
    }
    if (view) {
        tsr_convert_to_f32(t->dtype, view, buf, n);
    } else if (tsr_tensor_load_f32(mem, t, buf)) {
        return NULL;
    }
    return buf;
}

static bool overlaps(const void *p, uint64_t plen, const void *q,
                     uint64_t qlen)
{
    const uint8_t *a = p, *b = q;

    return a < b + qlen && b < a + plen;
}

static uint32_t matmul_float(TsrMem *mem, const struct tsr_cmd_matmul *c,
                             uint64_t m, uint64_t n, uint64_t k)
{
    bool ta = c->hdr.flags & TSR_MATMUL_TRANSPOSE_A;
    bool tb = c->hdr.flags & TSR_MATMUL_TRANSPOSE_B;
    bool acc = c->hdr.flags & TSR_MATMUL_ACCUMULATE;
    const float *a = operand_f32(mem, &c->a, 0);
    const float *b = a ? operand_f32(mem, &c->b, 1) : NULL;
    float *out = NULL;
    uint32_t err = TSR_ERR_NONE;

    if (!a || !b) {
        return mem->error;
    }
    /*
     * A dense f32 result in HBM is written in place, unless it overlaps an
     * operand that is read in place.
     */
    if (c->c.dtype == TSR_DTYPE_F32 && dense(&c->c)) {
        out = (float *)tsr_mem_hbm_view(mem, c->c.va, tensor_bytes(&c->c),
                                        true);
        if (out && (overlaps(out, tensor_bytes(&c->c), a,
                             tensor_bytes(&c->a)) ||
                    overlaps(out, tensor_bytes(&c->c), b,
                             tensor_bytes(&c->b)))) {
            mem->hbm_bytes -= tensor_bytes(&c->c);
            out = NULL;
        }
    }
    if (out) {
        if (acc) {
            mem->hbm_bytes += tensor_bytes(&c->c);
        }
        tsr_mxu_sgemm(ta, tb, m, n, k, a, b, out, acc);
    } else {
        out = scratch_get(2, m * n * sizeof(float));
        if (!out) {
            err = TSR_ERR_TOO_LARGE;
        } else if (acc && tsr_tensor_load_f32(mem, &c->c, out)) {
            err = mem->error;
        } else {
            tsr_mxu_sgemm(ta, tb, m, n, k, a, b, out, acc);
            if (tsr_tensor_store_f32(mem, &c->c, out)) {
                err = mem->error;
            }
        }
    }
    scratch_trim();
    return err;
}

static uint32_t matmul_int8(TsrMem *mem, const struct tsr_cmd_matmul *c,
                            uint64_t m, uint64_t n, uint64_t k)
{
    bool ta = c->hdr.flags & TSR_MATMUL_TRANSPOSE_A;
    bool tb = c->hdr.flags & TSR_MATMUL_TRANSPOSE_B;
    bool acc = c->hdr.flags & TSR_MATMUL_ACCUMULATE;
    int8_t *raw = malloc(m * k > k * n ? m * k : k * n);
    double *a = malloc(m * k * sizeof(double));
    double *b = malloc(k * n * sizeof(double));
    double *out = malloc(m * n * sizeof(double));
    int32_t *c32 = malloc(m * n * sizeof(int32_t));
    uint32_t err = TSR_ERR_NONE;
    uint64_t i;

    if (!raw || !a || !b || !out || !c32) {
        err = TSR_ERR_TOO_LARGE;
        goto out;
    }
    if (tsr_tensor_load_raw(mem, &c->a, raw)) {
        err = mem->error;
        goto out;
    }
    for (i = 0; i < m * k; i++) {
        a[i] = raw[i];
    }
    if (tsr_tensor_load_raw(mem, &c->b, raw)) {
        err = mem->error;
        goto out;
    }
    for (i = 0; i < k * n; i++) {
        b[i] = raw[i];
    }
    if (acc && tsr_tensor_load_raw(mem, &c->c, c32)) {
        err = mem->error;
        goto out;
    }
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0,
                a, ta ? m : k, b, tb ? k : n, 0.0, out, n);
    /* int32 accumulators wrap, as the chip's do. */
    for (i = 0; i < m * n; i++) {
        uint32_t sum = (uint32_t)(int64_t)out[i];

        c32[i] = (int32_t)(acc ? sum + (uint32_t)c32[i] : sum);
    }
    if (tsr_tensor_store_raw(mem, &c->c, c32)) {
        err = mem->error;
    }
out:
    free(raw);
    free(a);
    free(b);
    free(out);
    free(c32);
    return err;
}

void tsr_mxu_sgemm(bool ta, bool tb, uint64_t m, uint64_t n, uint64_t k,
                   const float *a, const float *b, float *c, bool accumulate)
{
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
                tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                a, ta ? m : k, b, tb ? k : n, accumulate ? 1.0f : 0.0f,
                c, n);
}

uint32_t tsr_cmd_matmul(TsrMem *mem, const struct tsr_cmd_matmul *c,
                        TsrCost *cost)
{
    uint64_t m, n, k, compute, memory;
    uint32_t err = matmul_check(c, &m, &n, &k);

    if (err) {
        return err;
    }
    err = c->a.dtype == TSR_DTYPE_I8 ? matmul_int8(mem, c, m, n, k)
                                     : matmul_float(mem, c, m, n, k);
    compute = tsr_mxu_cycles(&mem->core->cfg, m, n, k, c->a.dtype);
    memory = tsr_mem_cycles(mem);
    cost->mxu += compute > memory ? compute : memory;
    return err;
}
