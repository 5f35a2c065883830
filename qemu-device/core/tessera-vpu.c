/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera VPU: element-wise operations, reductions, casts, transposes.
 *
 * Operands are widened to f32, computed in f32, and narrowed on store.
 * The VPU works on sublanes x lanes elements per cycle per TensorCore;
 * transcendental operations and division take TSR_VPU_SLOW_CYCLES.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-internal.h"
#include "tessera-numerics.h"

#define TSR_VPU_LATENCY_CYCLES 100
#define TSR_VPU_SLOW_CYCLES 4

#define FLOAT_DTYPES (TSR_DTYPE_MASK(TSR_DTYPE_F32) | \
                      TSR_DTYPE_MASK(TSR_DTYPE_BF16))

static uint64_t elems(const struct tsr_tensor *t)
{
    return (uint64_t)t->rows * t->cols;
}

static void charge(TsrMem *mem, TsrCost *cost, uint64_t n, unsigned int per)
{
    const TsrConfig *cfg = &mem->core->cfg;
    uint64_t lanes = (uint64_t)cfg->vpu_sublanes * cfg->vpu_lanes *
                     cfg->tensorcores;
    uint64_t compute = (n + lanes - 1) / lanes * per;
    uint64_t memory = tsr_mem_cycles(mem);

    cost->vpu += TSR_VPU_LATENCY_CYCLES + (compute > memory ? compute : memory);
}

static float gelu(float x)
{
    /*
     * The tanh approximation, as used by most TPU models:
     * 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) (x + 0.044715 x^3).  It is
     * evaluated as x / (1 + exp(-2u)), the same value without the
     * cancellation of 1 + tanh(u) for negative x, in double and rounded
     * once.  At -inf the formula gives -inf / inf; the limit is -0.
     */
    const double k = 0.7978845608028654; /* sqrt(2 / pi) */
    double u = k * (x + 0.044715 * (double)x * x * x);

    if (isinf(x)) {
        return x > 0.0f ? x : -0.0f;
    }
    return (float)(x / (1.0 + exp(-2.0 * u)));
}

static bool unary_op(uint32_t op)
{
    return op >= TSR_VPU_NEG && op <= TSR_VPU_RSQRT;
}

static bool binary_op(uint32_t op)
{
    return op >= TSR_VPU_ADD && op <= TSR_VPU_CMP_LE;
}

static bool slow_op(uint32_t op)
{
    return op == TSR_VPU_EXP || op == TSR_VPU_LOG || op == TSR_VPU_TANH ||
           op == TSR_VPU_SIGMOID || op == TSR_VPU_GELU ||
           op == TSR_VPU_SQRT || op == TSR_VPU_RSQRT || op == TSR_VPU_DIV;
}

static float apply1(uint32_t op, float x)
{
    switch (op) {
    case TSR_VPU_NEG:
        return -x;
    case TSR_VPU_ABS:
        return fabsf(x);
    case TSR_VPU_EXP:
        return expf(x);
    case TSR_VPU_LOG:
        return logf(x);
    case TSR_VPU_TANH:
        return tanhf(x);
    case TSR_VPU_SIGMOID:
        return 1.0f / (1.0f + expf(-x));
    case TSR_VPU_RELU:
        return tsr_maxf(x, 0.0f);
    case TSR_VPU_GELU:
        return gelu(x);
    case TSR_VPU_SQRT:
        return sqrtf(x);
    default: /* TSR_VPU_RSQRT */
        return 1.0f / sqrtf(x);
    }
}

static float apply2(uint32_t op, float x, float y)
{
    switch (op) {
    case TSR_VPU_ADD:
        return x + y;
    case TSR_VPU_SUB:
        return x - y;
    case TSR_VPU_MUL:
        return x * y;
    case TSR_VPU_DIV:
        return x / y;
    case TSR_VPU_MAX:
        return tsr_maxf(x, y);
    case TSR_VPU_MIN:
        return tsr_minf(x, y);
    case TSR_VPU_CMP_EQ:
        return x == y ? 1.0f : 0.0f;
    case TSR_VPU_CMP_LT:
        return x < y ? 1.0f : 0.0f;
    default: /* TSR_VPU_CMP_LE */
        return x <= y ? 1.0f : 0.0f;
    }
}

/* @b is the shape of @out, one row of it, or one column of it. */
static uint32_t check_broadcast(const struct tsr_tensor *b,
                                const struct tsr_tensor *out)
{
    if ((b->rows == out->rows || b->rows == 1) &&
        (b->cols == out->cols || b->cols == 1) &&
        (b->rows == out->rows || b->cols == out->cols)) {
        return TSR_ERR_NONE;
    }
    return TSR_ERR_BAD_SHAPE;
}

/* Element (r, c) of a dense operand that may be broadcast. */
static float at(const float *v, const struct tsr_tensor *t, uint32_t r,
                uint32_t c)
{
    return v[(uint64_t)(t->rows == 1 ? 0 : r) * t->cols +
             (t->cols == 1 ? 0 : c)];
}

static uint32_t vpu_check(const struct tsr_cmd_vpu *c, unsigned int *nargs)
{
    uint32_t err;

    if (c->hdr.flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->hdr.reserved || c->reserved) {
        return TSR_ERR_RESERVED;
    }
    if (unary_op(c->op)) {
        *nargs = 1;
    } else if (binary_op(c->op)) {
        *nargs = 2;
    } else if (c->op == TSR_VPU_SELECT) {
        *nargs = 3;
    } else {
        return TSR_ERR_BAD_OP;
    }
    err = tsr_tensor_check(&c->out, FLOAT_DTYPES);
    if (!err) {
        err = tsr_tensor_check(&c->a, FLOAT_DTYPES);
    }
    if (!err && (c->a.rows != c->out.rows || c->a.cols != c->out.cols)) {
        err = TSR_ERR_BAD_SHAPE;
    }
    if (!err && *nargs >= 2) {
        err = tsr_tensor_check(&c->b, FLOAT_DTYPES);
        err = err ? err : check_broadcast(&c->b, &c->out);
    } else if (!err && !tsr_tensor_is_zero(&c->b)) {
        err = TSR_ERR_RESERVED;
    }
    if (!err && *nargs == 3) {
        err = tsr_tensor_check(&c->c, FLOAT_DTYPES);
        err = err ? err : check_broadcast(&c->c, &c->out);
    } else if (!err && !tsr_tensor_is_zero(&c->c)) {
        err = TSR_ERR_RESERVED;
    }
    if (!err && elems(&c->out) > TSR_MAX_ELEMENTS) {
        err = TSR_ERR_TOO_LARGE;
    }
    return err;
}

uint32_t tsr_cmd_vpu(TsrMem *mem, const struct tsr_cmd_vpu *c, TsrCost *cost)
{
    unsigned int nargs = 0;
    uint32_t err = vpu_check(c, &nargs);
    float *a = NULL, *b = NULL, *s = NULL, *out = NULL;
    uint32_t r, col;

    if (err) {
        return err;
    }
    a = malloc(elems(&c->a) * sizeof(float));
    b = nargs >= 2 ? malloc(elems(&c->b) * sizeof(float)) : NULL;
    s = nargs == 3 ? malloc(elems(&c->c) * sizeof(float)) : NULL;
    out = malloc(elems(&c->out) * sizeof(float));
    if (!a || !out || (nargs >= 2 && !b) || (nargs == 3 && !s)) {
        err = TSR_ERR_TOO_LARGE;
        goto out;
    }
    if (tsr_tensor_load_f32(mem, &c->a, a) ||
        (b && tsr_tensor_load_f32(mem, &c->b, b)) ||
        (s && tsr_tensor_load_f32(mem, &c->c, s))) {
        err = mem->error;
        goto out;
    }
    for (r = 0; r < c->out.rows; r++) {
        for (col = 0; col < c->out.cols; col++) {
            uint64_t i = (uint64_t)r * c->out.cols + col;

            if (nargs == 1) {
                out[i] = apply1(c->op, a[i]);
            } else if (nargs == 2) {
                out[i] = apply2(c->op, a[i], at(b, &c->b, r, col));
            } else {
                out[i] = a[i] != 0.0f ? at(b, &c->b, r, col)
                                      : at(s, &c->c, r, col);
            }
        }
    }
    if (tsr_tensor_store_f32(mem, &c->out, out)) {
        err = mem->error;
    }
out:
    free(a);
    free(b);
    free(s);
    free(out);
    charge(mem, cost, elems(&c->out), slow_op(c->op) ? TSR_VPU_SLOW_CYCLES : 1);
    return err;
}

static uint32_t reduce_check(const struct tsr_cmd_reduce *c)
{
    uint32_t err;

    if (c->hdr.flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->hdr.reserved) {
        return TSR_ERR_RESERVED;
    }
    if (c->op < TSR_REDUCE_SUM || c->op > TSR_REDUCE_MIN || c->axis > 1) {
        return TSR_ERR_BAD_OP;
    }
    err = tsr_tensor_check(&c->in, FLOAT_DTYPES);
    err = err ? err : tsr_tensor_check(&c->out, FLOAT_DTYPES);
    if (err) {
        return err;
    }
    if (c->axis == 0 ? c->out.rows != 1 || c->out.cols != c->in.cols
                     : c->out.cols != 1 || c->out.rows != c->in.rows) {
        return TSR_ERR_BAD_SHAPE;
    }
    return elems(&c->in) > TSR_MAX_ELEMENTS ? TSR_ERR_TOO_LARGE
                                             : TSR_ERR_NONE;
}

/* Sums run in index order, so that results are reproducible. */
static float combine(uint32_t op, float acc, float x)
{
    switch (op) {
    case TSR_REDUCE_SUM:
        return acc + x;
    case TSR_REDUCE_MAX:
        return tsr_maxf(acc, x);
    default:
        return tsr_minf(acc, x);
    }
}

uint32_t tsr_cmd_reduce(TsrMem *mem, const struct tsr_cmd_reduce *c,
                        TsrCost *cost)
{
    uint32_t err = reduce_check(c);
    float *in, *out;
    uint32_t r, col;

    if (err) {
        return err;
    }
    in = malloc(elems(&c->in) * sizeof(float));
    out = malloc(elems(&c->out) * sizeof(float));
    if (!in || !out) {
        err = TSR_ERR_TOO_LARGE;
    } else if (tsr_tensor_load_f32(mem, &c->in, in)) {
        err = mem->error;
    } else {
        for (r = 0; r < c->in.rows; r++) {
            for (col = 0; col < c->in.cols; col++) {
                float x = in[(uint64_t)r * c->in.cols + col];
                float *acc = &out[c->axis == 0 ? col : r];

                *acc = (c->axis == 0 ? r : col) ? combine(c->op, *acc, x) : x;
            }
        }
        if (tsr_tensor_store_f32(mem, &c->out, out)) {
            err = mem->error;
        }
    }
    free(in);
    free(out);
    charge(mem, cost, elems(&c->in), 1);
    return err;
}

static uint32_t unary_copy_check(const struct tsr_cmd_unary_copy *c,
                                 uint32_t dtypes)
{
    uint32_t err;

    if (c->hdr.flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->hdr.reserved) {
        return TSR_ERR_RESERVED;
    }
    err = tsr_tensor_check(&c->in, dtypes);
    err = err ? err : tsr_tensor_check(&c->out, dtypes);
    if (!err && elems(&c->in) > TSR_MAX_ELEMENTS) {
        err = TSR_ERR_TOO_LARGE;
    }
    return err;
}

uint32_t tsr_cmd_cast(TsrMem *mem, const struct tsr_cmd_unary_copy *c,
                      TsrCost *cost)
{
    uint32_t err = unary_copy_check(c, FLOAT_DTYPES |
                                       TSR_DTYPE_MASK(TSR_DTYPE_I32));
    uint64_t n = elems(&c->in);
    void *raw = NULL, *conv = NULL;

    if (!err && (c->out.rows != c->in.rows || c->out.cols != c->in.cols)) {
        err = TSR_ERR_BAD_SHAPE;
    }
    if (err) {
        return err;
    }
    raw = malloc(n * sizeof(float));
    conv = malloc(n * sizeof(float));
    if (!raw || !conv) {
        err = TSR_ERR_TOO_LARGE;
    } else if (tsr_tensor_load_raw(mem, &c->in, raw)) {
        err = mem->error;
    } else {
        if (c->in.dtype == c->out.dtype) {
            memcpy(conv, raw, n * tsr_dtype_size(c->in.dtype));
        } else {
            /* Through f32: i32 to bf16 rounds twice, as documented. */
            float *f = malloc(n * sizeof(float));

            if (!f) {
                err = TSR_ERR_TOO_LARGE;
                goto out;
            }
            tsr_convert_to_f32(c->in.dtype, raw, f, n);
            tsr_convert_from_f32(c->out.dtype, f, conv, n);
            free(f);
        }
        if (tsr_tensor_store_raw(mem, &c->out, conv)) {
            err = mem->error;
        }
    }
out:
    free(raw);
    free(conv);
    charge(mem, cost, n, 1);
    return err;
}

uint32_t tsr_cmd_transpose(TsrMem *mem, const struct tsr_cmd_unary_copy *c,
                           TsrCost *cost)
{
    uint32_t all = FLOAT_DTYPES | TSR_DTYPE_MASK(TSR_DTYPE_I32) |
                   TSR_DTYPE_MASK(TSR_DTYPE_I8);
    uint32_t err = unary_copy_check(c, all);
    unsigned int esize = tsr_dtype_size(c->in.dtype);
    uint8_t *in = NULL, *out = NULL;
    uint32_t r, col;

    if (!err && c->out.dtype != c->in.dtype) {
        err = TSR_ERR_BAD_DTYPE;
    }
    if (!err && (c->out.rows != c->in.cols || c->out.cols != c->in.rows)) {
        err = TSR_ERR_BAD_SHAPE;
    }
    if (err) {
        return err;
    }
    in = malloc(elems(&c->in) * esize);
    out = malloc(elems(&c->in) * esize);
    if (!in || !out) {
        err = TSR_ERR_TOO_LARGE;
    } else if (tsr_tensor_load_raw(mem, &c->in, in)) {
        err = mem->error;
    } else {
        for (r = 0; r < c->in.rows; r++) {
            for (col = 0; col < c->in.cols; col++) {
                memcpy(out + ((uint64_t)col * c->in.rows + r) * esize,
                       in + ((uint64_t)r * c->in.cols + col) * esize, esize);
            }
        }
        if (tsr_tensor_store_raw(mem, &c->out, out)) {
            err = mem->error;
        }
    }
    free(in);
    free(out);
    charge(mem, cost, elems(&c->in), 1);
    return err;
}
