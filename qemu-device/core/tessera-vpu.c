/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera VPU: element-wise operations, reductions, casts, transposes.
 *
 * Operands are widened to f32, computed in f32, and narrowed on store;
 * the integer operations (all operands I32) compute in 32 bits.
 * The VPU works on sublanes x lanes elements per cycle per TensorCore;
 * transcendental operations and division take TSR_VPU_SLOW_CYCLES.
 *
 * Commands run a block of rows at a time (TSR_BLOCK_ELEMS elements per
 * operand; transposes in square-ish tiles), so that one holds a bounded
 * amount of host memory and notices an abort between blocks.  Every
 * element is computed as it would be in one pass.
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

/* The binary operations that also take I32 operands. */
static bool int_op(uint32_t op)
{
    return op == TSR_VPU_ADD || op == TSR_VPU_SUB || op == TSR_VPU_MUL ||
           op == TSR_VPU_MAX || op == TSR_VPU_MIN;
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

/* Two's complement: sums and products wrap, as on the hardware. */
static int32_t apply2_i32(uint32_t op, int32_t x, int32_t y)
{
    switch (op) {
    case TSR_VPU_ADD:
        return (int32_t)((uint32_t)x + (uint32_t)y);
    case TSR_VPU_SUB:
        return (int32_t)((uint32_t)x - (uint32_t)y);
    case TSR_VPU_MUL:
        return (int32_t)((uint32_t)x * (uint32_t)y);
    case TSR_VPU_MAX:
        return x > y ? x : y;
    default: /* TSR_VPU_MIN */
        return x < y ? x : y;
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

static bool int_command(const struct tsr_cmd_vpu *c)
{
    return c->out.dtype == TSR_DTYPE_I32;
}

static uint32_t vpu_check(const struct tsr_cmd_vpu *c, unsigned int *nargs)
{
    uint32_t dtypes = int_command(c) ? TSR_DTYPE_MASK(TSR_DTYPE_I32)
                                     : FLOAT_DTYPES;
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
    if (int_command(c) && !int_op(c->op)) {
        return TSR_ERR_BAD_DTYPE;
    }
    err = tsr_tensor_check(&c->out, dtypes);
    if (!err) {
        err = tsr_tensor_check(&c->a, dtypes);
    }
    if (!err && (c->a.rows != c->out.rows || c->a.cols != c->out.cols)) {
        err = TSR_ERR_BAD_SHAPE;
    }
    if (!err && *nargs >= 2) {
        err = tsr_tensor_check(&c->b, dtypes);
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

/*
 * One block of rows of each operand, dense f32: widened copies, or rows
 * of the operands read in place (views: dense f32 tensors in HBM).
 */
typedef struct VpuBlock {
    float *a, *b, *c, *out;
    const float *view_a, *view_b, *view_c;
    float *view_out;    /* same_shape_in_place()'s output, or NULL */
} VpuBlock;

/*
 * Elements a loop of apply2_same_shape() takes at a time: an inner loop
 * whose trip count the compiler knows, which -O2 turns into vector
 * instructions (four f32 at a time with SSE), where a loop over @n
 * elements stays scalar.  The order of the elements' operations does not
 * matter: each is computed alone, as apply2() would.
 */
#define VPU_LANES 8

/* Run @stmt for @k from 0 to @n - 1, VPU_LANES at a time. */
#define VPU_FOR_EACH(n, k, stmt)                                        \
    do {                                                                \
        uint64_t block_ = 0, k;                                         \
                                                                        \
        for (; block_ + VPU_LANES <= (n); block_ += VPU_LANES) {        \
            for (k = block_; k < block_ + VPU_LANES; k++) {             \
                stmt;                                                   \
            }                                                           \
        }                                                               \
        for (k = block_; k < (n); k++) {                                \
            stmt;                                                       \
        }                                                               \
    } while (0)

/*
 * out = a (op) b over @n elements of operands of one shape, the common
 * case (collectives' reductions, residual adds), in loops of nothing but
 * the operation.  Each element is what apply2() gives.  False for the
 * operations it leaves to the general loop.
 */
static bool apply2_same_shape(uint32_t op, const float *restrict a,
                              const float *restrict b, float *restrict out,
                              uint64_t n)
{
    switch (op) {
    case TSR_VPU_ADD:
        VPU_FOR_EACH(n, i, out[i] = a[i] + b[i]);
        return true;
    case TSR_VPU_SUB:
        VPU_FOR_EACH(n, i, out[i] = a[i] - b[i]);
        return true;
    case TSR_VPU_MUL:
        VPU_FOR_EACH(n, i, out[i] = a[i] * b[i]);
        return true;
    case TSR_VPU_MAX:
        VPU_FOR_EACH(n, i, out[i] = tsr_maxf(a[i], b[i]));
        return true;
    case TSR_VPU_MIN:
        VPU_FOR_EACH(n, i, out[i] = tsr_minf(a[i], b[i]));
        return true;
    default:
        return false;
    }
}

/*
 * acc = acc (op) b, as apply2_same_shape() with out and a the same
 * array (restrict forbids passing one array as both): each element read
 * before it is written, as there.
 */
static void accumulate_same_shape(uint32_t op, float *restrict acc,
                                  const float *restrict b, uint64_t n)
{
    switch (op) {
    case TSR_VPU_ADD:
        VPU_FOR_EACH(n, i, acc[i] = acc[i] + b[i]);
        break;
    case TSR_VPU_SUB:
        VPU_FOR_EACH(n, i, acc[i] = acc[i] - b[i]);
        break;
    case TSR_VPU_MUL:
        VPU_FOR_EACH(n, i, acc[i] = acc[i] * b[i]);
        break;
    case TSR_VPU_MAX:
        VPU_FOR_EACH(n, i, acc[i] = tsr_maxf(acc[i], b[i]));
        break;
    case TSR_VPU_MIN:
        VPU_FOR_EACH(n, i, acc[i] = tsr_minf(acc[i], b[i]));
        break;
    }
}

/* The operations apply2_same_shape() runs. */
static bool same_shape_op(uint32_t op)
{
    return op == TSR_VPU_ADD || op == TSR_VPU_SUB || op == TSR_VPU_MUL ||
           op == TSR_VPU_MAX || op == TSR_VPU_MIN;
}

/*
 * Load rows [@row, @row + @rows) of operand @t, broadcast like @b, into
 * @buf: a row broadcast down the rows is the same for every block, and
 * loaded once.
 */
static int load_operand_rows(TsrMem *mem, const struct tsr_tensor *t,
                             uint32_t row, uint32_t rows, float *buf)
{
    struct tsr_tensor block = *t;

    if (t->rows == 1 && row) {
        return 0;
    }
    if (t->rows != 1) {
        block = tsr_tensor_block(t, row, rows, 0, t->cols);
    }
    /* I32 operands stay integers, in the same 4 bytes an f32 takes. */
    return t->dtype == TSR_DTYPE_I32 ? tsr_tensor_load_raw(mem, &block, buf)
                                     : tsr_tensor_load_f32(mem, &block, buf);
}

/*
 * Operand @t of a command writing @out in place, if it is dense f32 in
 * HBM (its bytes counted as read); NULL if not, and its blocks are loaded
 * instead.  A row broadcast down several rows is always loaded: it is
 * read once, before any block is stored, and @out may overlap it.
 */
static const float *operand_view(TsrMem *mem, const struct tsr_tensor *t,
                                 const struct tsr_tensor *out)
{
    if (t->dtype != TSR_DTYPE_F32 || t->stride != t->cols ||
        (t->rows == 1 && out->rows != 1)) {
        return NULL;
    }
    return (const float *)tsr_mem_read_view(mem, t->va,
                                            elems(t) * sizeof(float));
}

/*
 * Rows [@row, @row + @rows) of an operand, broadcast like
 * load_operand_rows(): from its view, or loaded into @buf.  NULL with
 * mem->error set if loading failed.
 */
static const float *operand_rows(TsrMem *mem, const struct tsr_tensor *t,
                                 const float *view, uint32_t row,
                                 uint32_t rows, float *buf)
{
    if (view) {
        return t->rows == 1 ? view : view + (uint64_t)row * t->cols;
    }
    return load_operand_rows(mem, t, row, rows, buf) ? NULL : buf;
}

/*
 * The output of a same-shape f32 operation (apply2_same_shape()), where
 * it can be computed in place: dense f32 in HBM, mapped writable, and
 * disjoint from both operands (read in place), or exactly the first and
 * disjoint from the second (an accumulation, out = out (op) b), so that
 * no element is written before another reads it.  NULL if not: the
 * blocks are computed aside and stored, as for every other command.
 */
static float *output_view(TsrMem *mem, const struct tsr_cmd_vpu *c,
                          unsigned int nargs, const VpuBlock *v)
{
    const struct tsr_tensor *t = &c->out;
    uint64_t bytes = elems(t) * sizeof(float);
    const float *ops[2] = { v->view_a, v->view_b };
    const uint8_t *out;
    unsigned int i;

    if (nargs != 2 || !same_shape_op(c->op) || int_command(c) ||
        t->dtype != TSR_DTYPE_F32 ||
        t->stride != t->cols || c->b.rows != t->rows ||
        c->b.cols != t->cols || !v->view_a || !v->view_b) {
        return NULL;
    }
    out = tsr_mem_write_view(mem, t->va, bytes);
    for (i = 0; out && i < 2; i++) {
        const uint8_t *op = (const uint8_t *)ops[i];
        bool accumulates = i == 0 && op == out;

        if (!accumulates && op < out + bytes && out < op + bytes) {
            return NULL;
        }
    }
    return (float *)out;
}

/*
 * Block rows [@row, @row + @rows) of a same-shape operation computed
 * straight into its output's HBM (output_view()): no block aside, no
 * copy of it.  Cut off by a reset as any write.
 */
static uint32_t same_shape_in_place(TsrMem *mem, const struct tsr_cmd_vpu *c,
                                    uint32_t row, uint64_t n,
                                    const float *va, const float *vb,
                                    const VpuBlock *v)
{
    float *out = v->view_out + (uint64_t)row * c->out.cols;

    if (!tsr_job_write_begin(mem->core, mem->queue, mem->generation)) {
        return TSR_ERR_ABORTED;
    }
    if (out == va) {
        accumulate_same_shape(c->op, out, vb, n);
    } else {
        apply2_same_shape(c->op, va, vb, out, n);
    }
    tsr_job_write_end(mem->core, mem->queue);
    tsr_mem_count_written(mem, n * sizeof(float));
    return TSR_ERR_NONE;
}

/* Element (r, c) of a dense I32 operand that may be broadcast. */
static int32_t at_i32(const float *v, const struct tsr_tensor *t, uint32_t r,
                      uint32_t c)
{
    int32_t x;

    memcpy(&x, &v[(uint64_t)(t->rows == 1 ? 0 : r) * t->cols +
                  (t->cols == 1 ? 0 : c)], sizeof(x));
    return x;
}

static void compute_i32(const struct tsr_cmd_vpu *c, uint32_t rows,
                        const float *va, const float *vb, float *out)
{
    struct tsr_tensor a = c->a;
    uint32_t r, col;

    a.rows = rows;
    for (r = 0; r < rows; r++) {
        for (col = 0; col < c->out.cols; col++) {
            int32_t y = apply2_i32(c->op, at_i32(va, &a, r, col),
                                   at_i32(vb, &c->b, r, col));

            memcpy(&out[(uint64_t)r * c->out.cols + col], &y, sizeof(y));
        }
    }
}

static uint32_t vpu_block(TsrMem *mem, const struct tsr_cmd_vpu *c,
                          unsigned int nargs, uint32_t row, uint32_t rows,
                          const VpuBlock *v)
{
    struct tsr_tensor out = tsr_tensor_block(&c->out, row, rows, 0,
                                             c->out.cols);
    uint64_t n = (uint64_t)rows * c->out.cols;
    const float *va, *vb = NULL, *vc = NULL;
    uint32_t r, col;

    if (tsr_mem_aborted(mem)) {
        return TSR_ERR_ABORTED;
    }
    va = operand_rows(mem, &c->a, v->view_a, row, rows, v->a);
    if (va && nargs >= 2) {
        vb = operand_rows(mem, &c->b, v->view_b, row, rows, v->b);
    }
    if (vb && nargs == 3) {
        vc = operand_rows(mem, &c->c, v->view_c, row, rows, v->c);
    }
    if (!va || (nargs >= 2 && !vb) || (nargs == 3 && !vc)) {
        return mem->error;
    }
    if (int_command(c)) {
        compute_i32(c, rows, va, vb, v->out);
        return tsr_tensor_store_raw(mem, &out, v->out) ? mem->error
                                                        : TSR_ERR_NONE;
    }
    if (v->view_out) {
        return same_shape_in_place(mem, c, row, n, va, vb, v);
    }
    if (nargs == 2 && c->b.rows == c->out.rows && c->b.cols == c->out.cols &&
        apply2_same_shape(c->op, va, vb, v->out, n)) {
        return tsr_tensor_store_f32(mem, &out, v->out) ? mem->error
                                                      : TSR_ERR_NONE;
    }
    for (r = 0; r < rows; r++) {
        for (col = 0; col < c->out.cols; col++) {
            uint64_t i = (uint64_t)r * c->out.cols + col;

            if (nargs == 1) {
                v->out[i] = apply1(c->op, va[i]);
            } else if (nargs == 2) {
                v->out[i] = apply2(c->op, va[i], at(vb, &c->b, r, col));
            } else {
                v->out[i] = va[i] != 0.0f ? at(vb, &c->b, r, col)
                                          : at(vc, &c->c, r, col);
            }
        }
    }
    return tsr_tensor_store_f32(mem, &out, v->out) ? mem->error
                                                  : TSR_ERR_NONE;
}

static uint32_t vpu_run(TsrMem *mem, const struct tsr_cmd_vpu *c,
                        unsigned int nargs)
{
    uint32_t block = tsr_block_rows(&c->out, TSR_BLOCK_ELEMS);
    size_t size = (size_t)block * c->out.cols * sizeof(float);
    VpuBlock v = {
        .view_a = operand_view(mem, &c->a, &c->out),
        .view_b = nargs >= 2 ? operand_view(mem, &c->b, &c->out) : NULL,
        .view_c = nargs == 3 ? operand_view(mem, &c->c, &c->out) : NULL,
    };
    uint32_t err = TSR_ERR_NONE, row, rows;

    v.view_out = output_view(mem, c, nargs, &v);
    v.out = v.view_out ? NULL : malloc(size);

    v.a = v.view_a ? NULL : malloc(size);
    v.b = nargs < 2 || v.view_b ? NULL : malloc(size);
    v.c = nargs < 3 || v.view_c ? NULL : malloc(size);
    if ((!v.view_out && !v.out) || (!v.view_a && !v.a) ||
        (nargs >= 2 && !v.view_b && !v.b) ||
        (nargs == 3 && !v.view_c && !v.c)) {
        err = TSR_ERR_TOO_LARGE;
    }
    for (row = 0; !err && row < c->out.rows; row += rows) {
        rows = tsr_min(block, c->out.rows - row);
        err = vpu_block(mem, c, nargs, row, rows, &v);
    }
    free(v.a);
    free(v.b);
    free(v.c);
    free(v.out);
    return err;
}

uint32_t tsr_cmd_vpu(TsrMem *mem, const struct tsr_cmd_vpu *c, TsrCost *cost)
{
    unsigned int nargs = 0;
    uint32_t err = vpu_check(c, &nargs);

    if (err) {
        return err;
    }
    err = vpu_run(mem, c, nargs);
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

/*
 * Rows [@row, @row + @rows) of the input into @out: along axis 0 into one
 * accumulator per column, kept across blocks; along axis 1 into one per
 * row of the block, stored with it.
 */
static uint32_t reduce_block(TsrMem *mem, const struct tsr_cmd_reduce *c,
                             uint32_t row, uint32_t rows, float *in,
                             float *out)
{
    struct tsr_tensor block = tsr_tensor_block(&c->in, row, rows, 0,
                                               c->in.cols);
    struct tsr_tensor sums;
    uint32_t r, col;

    if (tsr_mem_aborted(mem)) {
        return TSR_ERR_ABORTED;
    }
    if (tsr_tensor_load_f32(mem, &block, in)) {
        return mem->error;
    }
    for (r = 0; r < rows; r++) {
        for (col = 0; col < c->in.cols; col++) {
            float x = in[(uint64_t)r * c->in.cols + col];
            float *acc = &out[c->axis == 0 ? col : r];

            *acc = (c->axis == 0 ? row + r : col) ? combine(c->op, *acc, x)
                                                  : x;
        }
    }
    if (c->axis == 1) {
        sums = tsr_tensor_block(&c->out, row, rows, 0, 1);
        if (tsr_tensor_store_f32(mem, &sums, out)) {
            return mem->error;
        }
    }
    return TSR_ERR_NONE;
}

uint32_t tsr_cmd_reduce(TsrMem *mem, const struct tsr_cmd_reduce *c,
                        TsrCost *cost)
{
    uint32_t err = reduce_check(c);
    float *in, *out;
    uint32_t block, row, rows;

    if (err) {
        return err;
    }
    /* Only now are the dimensions known to be non-zero. */
    block = tsr_block_rows(&c->in, TSR_BLOCK_ELEMS);
    in = malloc((size_t)block * c->in.cols * sizeof(float));
    out = malloc((c->axis == 0 ? c->in.cols : block) * sizeof(float));
    if (!in || !out) {
        err = TSR_ERR_TOO_LARGE;
    }
    for (row = 0; !err && row < c->in.rows; row += rows) {
        rows = tsr_min(block, c->in.rows - row);
        err = reduce_block(mem, c, row, rows, in, out);
    }
    if (!err && c->axis == 0 && tsr_tensor_store_f32(mem, &c->out, out)) {
        err = mem->error;
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

/* Rows [@row, @row + @rows); @f is NULL when the dtypes are the same. */
static uint32_t cast_block(TsrMem *mem, const struct tsr_cmd_unary_copy *c,
                           uint32_t row, uint32_t rows, void *raw, void *conv,
                           float *f)
{
    struct tsr_tensor in = tsr_tensor_block(&c->in, row, rows, 0, c->in.cols);
    struct tsr_tensor out = tsr_tensor_block(&c->out, row, rows, 0,
                                             c->out.cols);
    size_t n = (size_t)rows * c->in.cols;

    if (tsr_mem_aborted(mem)) {
        return TSR_ERR_ABORTED;
    }
    if (tsr_tensor_load_raw(mem, &in, raw)) {
        return mem->error;
    }
    if (f) {
        /* Through f32: i32 to bf16 rounds twice, as documented. */
        tsr_convert_to_f32(c->in.dtype, raw, f, n);
        tsr_convert_from_f32(c->out.dtype, f, conv, n);
    }
    return tsr_tensor_store_raw(mem, &out, f ? conv : raw) ? mem->error
                                                          : TSR_ERR_NONE;
}

uint32_t tsr_cmd_cast(TsrMem *mem, const struct tsr_cmd_unary_copy *c,
                      TsrCost *cost)
{
    uint32_t err = unary_copy_check(c, FLOAT_DTYPES |
                                       TSR_DTYPE_MASK(TSR_DTYPE_I32));
    bool convert = c->in.dtype != c->out.dtype;
    void *raw = NULL, *conv = NULL;
    float *f = NULL;
    uint32_t block, row, rows;
    size_t size;

    if (!err && (c->out.rows != c->in.rows || c->out.cols != c->in.cols)) {
        err = TSR_ERR_BAD_SHAPE;
    }
    if (err) {
        return err;
    }
    block = tsr_block_rows(&c->in, TSR_BLOCK_ELEMS);
    size = (size_t)block * c->in.cols * sizeof(float);
    raw = malloc(size);
    conv = convert ? malloc(size) : NULL;
    f = convert ? malloc(size) : NULL;
    if (!raw || (convert && (!conv || !f))) {
        err = TSR_ERR_TOO_LARGE;
    }
    for (row = 0; !err && row < c->in.rows; row += rows) {
        rows = tsr_min(block, c->in.rows - row);
        err = cast_block(mem, c, row, rows, raw, conv, f);
    }
    free(raw);
    free(conv);
    free(f);
    charge(mem, cost, elems(&c->in), 1);
    return err;
}

/* Input rows per transpose tile; its columns fill TSR_BLOCK_ELEMS. */
#define TSR_TRANSPOSE_TILE_ROWS 1024

/*
 * The tile of rows [@row, @row + @rows) x columns [@col, @col + @cols) of
 * the input, written as the same columns x rows of the output.
 */
static uint32_t transpose_tile(TsrMem *mem,
                               const struct tsr_cmd_unary_copy *c,
                               uint32_t row, uint32_t rows, uint32_t col,
                               uint32_t cols, uint8_t *in, uint8_t *out)
{
    unsigned int esize = tsr_dtype_size(c->in.dtype);
    struct tsr_tensor src = tsr_tensor_block(&c->in, row, rows, col, cols);
    struct tsr_tensor dst = tsr_tensor_block(&c->out, col, cols, row, rows);
    uint32_t r, k;

    if (tsr_mem_aborted(mem)) {
        return TSR_ERR_ABORTED;
    }
    if (tsr_tensor_load_raw(mem, &src, in)) {
        return mem->error;
    }
    for (r = 0; r < rows; r++) {
        for (k = 0; k < cols; k++) {
            memcpy(out + ((uint64_t)k * rows + r) * esize,
                   in + ((uint64_t)r * cols + k) * esize, esize);
        }
    }
    return tsr_tensor_store_raw(mem, &dst, out) ? mem->error : TSR_ERR_NONE;
}

uint32_t tsr_cmd_transpose(TsrMem *mem, const struct tsr_cmd_unary_copy *c,
                           TsrCost *cost)
{
    uint32_t all = FLOAT_DTYPES | TSR_DTYPE_MASK(TSR_DTYPE_I32) |
                   TSR_DTYPE_MASK(TSR_DTYPE_I8);
    uint32_t err = unary_copy_check(c, all);
    unsigned int esize = tsr_dtype_size(c->in.dtype);
    uint32_t trows, tcols, row, rows, col, cols;
    uint8_t *in = NULL, *out = NULL;

    if (!err && c->out.dtype != c->in.dtype) {
        err = TSR_ERR_BAD_DTYPE;
    }
    if (!err && (c->out.rows != c->in.cols || c->out.cols != c->in.rows)) {
        err = TSR_ERR_BAD_SHAPE;
    }
    if (err) {
        return err;
    }
    trows = tsr_min(c->in.rows, TSR_TRANSPOSE_TILE_ROWS);
    tcols = tsr_min(c->in.cols, TSR_BLOCK_ELEMS / trows);
    in = malloc((size_t)trows * tcols * esize);
    out = malloc((size_t)trows * tcols * esize);
    if (!in || !out) {
        err = TSR_ERR_TOO_LARGE;
    }
    for (row = 0; !err && row < c->in.rows; row += rows) {
        rows = tsr_min(trows, c->in.rows - row);
        for (col = 0; !err && col < c->in.cols; col += cols) {
            cols = tsr_min(tcols, c->in.cols - col);
            err = transpose_tile(mem, c, row, rows, col, cols, in, out);
        }
    }
    free(in);
    free(out);
    charge(mem, cost, elems(&c->in), 1);
    return err;
}
