/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera MXU: matrix multiplication.
 *
 * Results are computed on the host with OpenBLAS sgemm: bf16 widens
 * exactly to f32, and the products accumulate in f32 as on the chip.
 * int8 products summed over at most TSR_MXU_EXACT_K terms stay below 2^24
 * in magnitude, so sgemm adds them exactly; the int32 accumulators then
 * wrap as the chip's do.  Time is modeled separately from the systolic
 * arrays' geometry.
 *
 * A command runs in tiles of C, each the product of a block of A's rows
 * and a panel of B's columns over at most a block of K: the command holds
 * a few tens of MiB of host memory whatever its size, and notices an abort
 * between tiles.  Tiling along M and N leaves every element's sum as one
 * sgemm would compute it; K is split only beyond TSR_MXU_BLOCK_K.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* Elements of a block of A or B, and of a tile of C. */
#define TSR_MXU_BLOCK (2u << 20)
#define TSR_MXU_TILE TSR_BLOCK_ELEMS
/* K per block: f32 sums are split no finer; int8 sums stay exact. */
#define TSR_MXU_BLOCK_K 4096
#define TSR_MXU_EXACT_K 1024
/* Multiply-adds between two abort checks: some milliseconds. */
#define TSR_MXU_TILE_MACS (1ull << 30)

/*
 * Scratch buffers, one set per worker thread, kept between commands: a
 * fresh buffer per operand costs more in page faults than the conversion
 * it holds.  Their size is bounded by the tiling.
 */
enum { SCRATCH_A, SCRATCH_B, SCRATCH_C, SCRATCH_SUM, TSR_MXU_SCRATCH };

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

static bool dense(const struct tsr_tensor *t)
{
    return t->stride == t->cols;
}

static uint64_t tensor_bytes(const struct tsr_tensor *t)
{
    return (uint64_t)t->rows * t->cols * tsr_dtype_size(t->dtype);
}

/* The shape of the product and of its tiles. */
typedef struct MxuPlan {
    uint64_t m, n, k;
    uint64_t mb, nb, kb;
} MxuPlan;

static void mxu_plan(MxuPlan *p, bool int8)
{
    uint64_t macs;

    p->kb = tsr_min(p->k, int8 ? TSR_MXU_EXACT_K : TSR_MXU_BLOCK_K);
    p->nb = tsr_min(tsr_min(p->n, TSR_MXU_BLOCK / p->kb), TSR_MXU_TILE);
    macs = TSR_MXU_TILE_MACS / (p->nb * p->kb);
    p->mb = tsr_min(tsr_min(p->m, TSR_MXU_BLOCK / p->kb), TSR_MXU_TILE / p->nb);
    p->mb = tsr_min(p->mb, macs ? macs : 1);
}

/*
 * An operand as the MXU reads it, op(t): blocks of it are widened to f32
 * in its scratch buffer, or read in place from HBM when it is dense f32
 * there.  The last block loaded is kept, for the next tile that needs it.
 */
typedef struct MxuOperand {
    const struct tsr_tensor *t;
    bool trans;
    int slot;
    const uint8_t *view;
    const float *block;
    uint64_t row, col, rows, cols, ld;
} MxuOperand;

static void operand_init(TsrMem *mem, MxuOperand *o,
                         const struct tsr_tensor *t, bool trans, int slot)
{
    memset(o, 0, sizeof(*o));
    o->t = t;
    o->trans = trans;
    o->slot = slot;
    o->view = dense(t) ? tsr_mem_read_view(mem, t->va, tensor_bytes(t))
                       : NULL;
}

/* Widen stored rows of the HBM view into @buf. */
static void convert_view(const MxuOperand *o, uint64_t row, uint64_t rows,
                         uint64_t col, uint64_t cols, float *buf)
{
    const struct tsr_tensor *t = o->t;
    unsigned int esize = tsr_dtype_size(t->dtype);
    uint64_t r;

    for (r = 0; r < rows; r++) {
        tsr_convert_to_f32(t->dtype,
                           o->view + ((row + r) * t->stride + col) * esize,
                           buf + r * cols, cols);
    }
}

/*
 * Rows [@row, @row + @rows) x columns [@col, @col + @cols) of op(t), as
 * stored (transposed if o->trans), with o->ld elements between stored
 * rows.  @first says whether these bytes are read for the first time, for
 * the timing model.  NULL with mem->error set on failure.
 */
static const float *operand_block(TsrMem *mem, MxuOperand *o, uint64_t row,
                                  uint64_t rows, uint64_t col, uint64_t cols,
                                  bool first)
{
    const struct tsr_tensor *t = o->t;
    uint64_t srow = o->trans ? col : row, scol = o->trans ? row : col;
    uint64_t srows = o->trans ? cols : rows, scols = o->trans ? rows : cols;
    struct tsr_tensor block;
    float *buf;
    int ret;

    if (o->block && o->row == row && o->col == col && o->rows == rows &&
        o->cols == cols) {
        return o->block;
    }
    o->block = NULL;
    if (o->view && t->dtype == TSR_DTYPE_F32) {
        o->ld = t->stride;
        o->block = (const float *)o->view + srow * t->stride + scol;
    } else {
        o->ld = scols;
        buf = scratch_get(o->slot, srows * scols * sizeof(float));
        if (!buf) {
            mem->error = mem->error ? mem->error : TSR_ERR_TOO_LARGE;
            return NULL;
        }
        if (o->view) {
            convert_view(o, srow, srows, scol, scols, buf);
        } else {
            block = tsr_tensor_block(t, srow, srows, scol, scols);
            mem->reread = !first;
            ret = tsr_tensor_load_f32(mem, &block, buf);
            mem->reread = false;
            if (ret) {
                return NULL;
            }
        }
        o->block = buf;
    }
    o->row = row;
    o->col = col;
    o->rows = rows;
    o->cols = cols;
    return o->block;
}

/* int8 results: add one K block's exact sums, wrapping as int32 does. */
static void add_wrapping(int32_t *sum, const float *part, uint64_t n)
{
    uint64_t i;

    for (i = 0; i < n; i++) {
        sum[i] = (int32_t)((uint32_t)sum[i] + (uint32_t)(int32_t)part[i]);
    }
}

static void mxu_sgemm(const MxuOperand *a, const MxuOperand *b, uint64_t m,
                      uint64_t n, uint64_t k, float beta, float *c)
{
    cblas_sgemm(CblasRowMajor, a->trans ? CblasTrans : CblasNoTrans,
                b->trans ? CblasTrans : CblasNoTrans, m, n, k, 1.0f,
                a->block, a->ld, b->block, b->ld, beta, c, n);
}

/* The tile of C at rows [i0, i0 + mb) and columns [j0, j0 + nb). */
static uint32_t matmul_tile(TsrMem *mem, const struct tsr_cmd_matmul *c,
                            const MxuPlan *p, MxuOperand *a, MxuOperand *b,
                            uint64_t i0, uint64_t mb, uint64_t j0,
                            uint64_t nb)
{
    bool int8 = c->a.dtype == TSR_DTYPE_I8;
    bool acc = c->hdr.flags & TSR_MATMUL_ACCUMULATE;
    struct tsr_tensor tile = tsr_tensor_block(&c->c, i0, mb, j0, nb);
    float *out = scratch_get(SCRATCH_C, mb * nb * sizeof(float));
    int32_t *sum = int8 ? scratch_get(SCRATCH_SUM, mb * nb * 4) : NULL;
    uint64_t l0, kb;

    if (!out || (int8 && !sum)) {
        return TSR_ERR_TOO_LARGE;
    }
    if (acc && (int8 ? tsr_tensor_load_raw(mem, &tile, sum)
                     : tsr_tensor_load_f32(mem, &tile, out))) {
        return mem->error;
    }
    if (int8 && !acc) {
        memset(sum, 0, mb * nb * 4);
    }
    for (l0 = 0; l0 < p->k; l0 += kb) {
        kb = tsr_min(p->kb, p->k - l0);
        if (tsr_mem_aborted(mem)) {
            return TSR_ERR_ABORTED;
        }
        if (!operand_block(mem, a, i0, mb, l0, kb, j0 == 0) ||
            !operand_block(mem, b, l0, kb, j0, nb, i0 == 0)) {
            return mem->error;
        }
        mxu_sgemm(a, b, mb, nb, kb, !int8 && (acc || l0) ? 1.0f : 0.0f, out);
        if (int8) {
            add_wrapping(sum, out, mb * nb);
        }
    }
    if (int8 ? tsr_tensor_store_raw(mem, &tile, sum)
             : tsr_tensor_store_f32(mem, &tile, out)) {
        return mem->error;
    }
    return TSR_ERR_NONE;
}

/*
 * Column panels of C, each down its row blocks: a panel of B is loaded
 * once when K fits one block; A is read again for each panel.
 */
static uint32_t matmul_run(TsrMem *mem, const struct tsr_cmd_matmul *c,
                           const MxuPlan *p)
{
    MxuOperand a, b;
    uint64_t i0, j0, mb, nb;
    uint32_t err;

    operand_init(mem, &a, &c->a, c->hdr.flags & TSR_MATMUL_TRANSPOSE_A,
                 SCRATCH_A);
    operand_init(mem, &b, &c->b, c->hdr.flags & TSR_MATMUL_TRANSPOSE_B,
                 SCRATCH_B);
    for (j0 = 0; j0 < p->n; j0 += nb) {
        nb = tsr_min(p->nb, p->n - j0);
        for (i0 = 0; i0 < p->m; i0 += mb) {
            mb = tsr_min(p->mb, p->m - i0);
            err = matmul_tile(mem, c, p, &a, &b, i0, mb, j0, nb);
            if (err) {
                return err;
            }
        }
    }
    return TSR_ERR_NONE;
}

uint32_t tsr_cmd_matmul(TsrMem *mem, const struct tsr_cmd_matmul *c,
                        TsrCost *cost)
{
    MxuPlan p;
    uint64_t compute, memory;
    uint32_t err = matmul_check(c, &p.m, &p.n, &p.k);

    if (err) {
        return err;
    }
    mxu_plan(&p, c->a.dtype == TSR_DTYPE_I8);
    err = matmul_run(mem, c, &p);
    compute = tsr_mxu_cycles(&mem->core->cfg, p.m, p.n, p.k, c->a.dtype);
    memory = tsr_mem_cycles(mem);
    cost->mxu += compute > memory ? compute : memory;
    return err;
}
