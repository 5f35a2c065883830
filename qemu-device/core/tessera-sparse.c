/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera SparseCore: embedding ids in COO form, partitioned, gathered
 * into combined rows and scattered back as gradients
 * (Documentation/chip.md, "SparseCore").
 *
 * Every command reads its ids whole (at most TSR_SC_MAX_ENTRIES) and
 * checks them before it writes anything.  Work that depends on an id's
 * value runs in an order fixed by the ids alone (sorted by sample or by
 * embedding id, then by position), so results are the same run after run.
 * Rows move one at a time through the job's MMU; gathers accumulate one
 * block of samples at a time, so that a command holds a bounded amount of
 * host memory and notices an abort between blocks.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-internal.h"
#include "tessera-numerics.h"

#define FLOAT_DTYPES (TSR_DTYPE_MASK(TSR_DTYPE_F32) | \
                      TSR_DTYPE_MASK(TSR_DTYPE_BF16))

/* Most multiply-adds (ids x row width) of one gather or scatter. */
#define TSR_SC_MAX_WORK (1ull << 30)

/* Ids between two looks at an abort. */
#define TSR_SC_ABORT_ROWS 4096

/* A command's ids, read into host memory. */
typedef struct ScIds {
    uint32_t n;
    uint32_t *rows;
    uint32_t *cols;
    float *weights;
} ScIds;

static void sc_ids_free(ScIds *ids)
{
    free(ids->rows);
    free(ids->cols);
    free(ids->weights);
}

/* Each array of @coo holds @count u32 or f32, aligned, without wrapping. */
static uint32_t sc_coo_check(const struct tsr_sc_coo *coo, uint32_t count)
{
    const uint64_t vas[] = { coo->row_ids, coo->col_ids, coo->weights };
    uint64_t last;
    unsigned int i;

    for (i = 0; i < 3; i++) {
        if (vas[i] % 4) {
            return TSR_ERR_BAD_ALIGNMENT;
        }
        if (count && !tsr_add(vas[i], (uint64_t)count * 4 - 1, &last)) {
            return TSR_ERR_BAD_STRIDE;
        }
    }
    return TSR_ERR_NONE;
}

static uint32_t sc_ids_load(TsrMem *mem, const struct tsr_sc_coo *coo,
                            uint32_t count, ScIds *ids)
{
    size_t size = (size_t)(count ? count : 1) * 4;
    uint32_t i;

    ids->n = count;
    ids->rows = malloc(size);
    ids->cols = malloc(size);
    ids->weights = malloc(size);
    if (!ids->rows || !ids->cols || !ids->weights) {
        return TSR_ERR_TOO_LARGE;
    }
    if (!count) {
        return TSR_ERR_NONE;
    }
    if (tsr_mem_read(mem, coo->row_ids, ids->rows, size) ||
        tsr_mem_read(mem, coo->col_ids, ids->cols, size) ||
        (coo->weights &&
         tsr_mem_read(mem, coo->weights, ids->weights, size))) {
        return mem->error;
    }
    if (!coo->weights) {
        for (i = 0; i < count; i++) {
            ids->weights[i] = 1.0f;
        }
    }
    return TSR_ERR_NONE;
}

/*
 * Every sample id below @samples (or TSR_SC_PAD if @pad), every embedding
 * id of a used entry below @vocab; else TSR_ERR_ID_RANGE at the first.
 */
static uint32_t sc_ids_check(TsrMem *mem, const struct tsr_sc_coo *coo,
                             const ScIds *ids, uint32_t samples,
                             uint32_t vocab, bool pad)
{
    uint32_t i;

    for (i = 0; i < ids->n; i++) {
        if (pad && ids->rows[i] == TSR_SC_PAD) {
            continue;
        }
        if (ids->rows[i] >= samples) {
            mem->fault_va = coo->row_ids + (uint64_t)i * 4;
            return TSR_ERR_ID_RANGE;
        }
        if (ids->cols[i] >= vocab) {
            mem->fault_va = coo->col_ids + (uint64_t)i * 4;
            return TSR_ERR_ID_RANGE;
        }
    }
    return TSR_ERR_NONE;
}

static uint32_t sc_load(TsrMem *mem, const struct tsr_sc_coo *coo,
                        uint32_t count, uint32_t samples, uint32_t vocab,
                        bool pad, ScIds *ids)
{
    uint32_t err = sc_ids_load(mem, coo, count, ids);

    return err ? err : sc_ids_check(mem, coo, ids, samples, vocab, pad);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

/*
 * The used entries ordered by @keys[i] (a sample or embedding id), then
 * by position: key << 32 | position.  Returns how many; NULL if memory
 * runs out.
 */
static uint64_t *sc_order(const ScIds *ids, const uint32_t *keys,
                          uint32_t *n)
{
    uint64_t *order = malloc((size_t)(ids->n ? ids->n : 1) * 8);
    uint32_t i;

    if (!order) {
        return NULL;
    }
    *n = 0;
    for (i = 0; i < ids->n; i++) {
        if (ids->rows[i] != TSR_SC_PAD) {
            order[(*n)++] = (uint64_t)keys[i] << 32 | i;
        }
    }
    qsort(order, *n, 8, cmp_u64);
    return order;
}

/* ------------------------------------------------------------ partition */

typedef struct ScPart {
    const struct tsr_cmd_sc_partition *c;
    ScIds ids;
    bool *kept;                 /* first of its (sample, id) */
    uint32_t *rank;             /* the kept entry's distinct embedding id */
    struct tsr_sc_counts *counts;
} ScPart;

static uint32_t partition_check(const TsrConfig *cfg,
                                const struct tsr_cmd_sc_partition *c)
{
    uint64_t spmem = (uint64_t)c->max_ids * TSR_SC_SPMEM_ID_BYTES +
                     (uint64_t)c->max_unique_ids * TSR_SC_SPMEM_UNIQUE_BYTES;
    uint64_t last;
    uint32_t err;

    if (c->hdr.flags & ~TSR_SC_PARTITION_FLAGS_ALL) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->hdr.reserved) {
        return TSR_ERR_RESERVED;
    }
    if (!c->partitions || c->partitions > TSR_SC_MAX_PARTITIONS ||
        !c->samples || c->samples > TSR_MAX_DIM || !c->vocab ||
        !c->max_ids || c->max_ids > TSR_SC_MAX_ENTRIES ||
        !c->max_unique_ids || c->max_unique_ids > c->max_ids) {
        return TSR_ERR_BAD_SHAPE;
    }
    if (c->count > TSR_SC_MAX_ENTRIES ||
        (uint64_t)c->partitions * c->max_ids > TSR_SC_MAX_SLOTS) {
        return TSR_ERR_TOO_LARGE;
    }
    if (spmem > (uint64_t)cfg->sc_spmem_kib * 1024) {
        return TSR_ERR_SPMEM;
    }
    err = sc_coo_check(&c->in, c->count);
    err = err ? err : sc_coo_check(&c->out, c->partitions * c->max_ids);
    if (!err && c->counts % 4) {
        err = TSR_ERR_BAD_ALIGNMENT;
    }
    if (!err && !tsr_add(c->counts, (uint64_t)c->partitions *
                         sizeof(struct tsr_sc_counts) - 1, &last)) {
        err = TSR_ERR_BAD_STRIDE;
    }
    return err;
}

typedef struct ScEntry {
    uint32_t row, col, at;
} ScEntry;

static int cmp_entry(const void *a, const void *b)
{
    const ScEntry *x = a, *y = b;

    if (x->row != y->row) {
        return x->row < y->row ? -1 : 1;
    }
    if (x->col != y->col) {
        return x->col < y->col ? -1 : 1;
    }
    return x->at < y->at ? -1 : x->at > y->at;
}

/*
 * Keep the first entry of each (sample, embedding id), weighing the sum
 * of its duplicates' weights (added in input order), then rank the kept
 * entries' embedding ids.  Returns false when memory runs out.
 */
static bool partition_dedup(ScPart *p)
{
    ScIds *ids = &p->ids;
    ScEntry *e = malloc((size_t)(ids->n ? ids->n : 1) * sizeof(*e));
    uint64_t *order;
    uint32_t i, n = 0, first = 0, rank = 0;

    if (!e) {
        return false;
    }
    for (i = 0; i < ids->n; i++) {
        e[i] = (ScEntry){ ids->rows[i], ids->cols[i], i };
        p->kept[i] = false;
    }
    qsort(e, ids->n, sizeof(*e), cmp_entry);
    for (i = 0; i < ids->n; i++) {
        if (i && e[i].row == e[first].row && e[i].col == e[first].col) {
            ids->weights[e[first].at] += ids->weights[e[i].at];
            continue;
        }
        first = i;
        p->kept[e[i].at] = true;
    }
    free(e);
    order = malloc((size_t)(ids->n ? ids->n : 1) * 8);
    if (!order) {
        return false;
    }
    for (i = 0; i < ids->n; i++) {
        if (p->kept[i]) {
            order[n++] = (uint64_t)ids->cols[i] << 32 | i;
        }
    }
    qsort(order, n, 8, cmp_u64);
    for (i = 0; i < n; i++) {
        rank += i && order[i] >> 32 != order[i - 1] >> 32;
        p->rank[(uint32_t)order[i]] = rank;
    }
    free(order);
    return true;
}

/* Observed counts, before any id is dropped. */
static bool partition_count(ScPart *p)
{
    const struct tsr_cmd_sc_partition *c = p->c;
    bool *seen = calloc(p->ids.n ? p->ids.n : 1, 1);
    uint32_t i;

    if (!seen) {
        return false;
    }
    for (i = 0; i < p->ids.n; i++) {
        struct tsr_sc_counts *k;

        if (!p->kept[i]) {
            continue;
        }
        k = &p->counts[p->ids.cols[i] % c->partitions];
        k->ids++;
        k->unique_ids += !seen[p->rank[i]];
        seen[p->rank[i]] = true;
    }
    free(seen);
    return true;
}

/* The first partition over a limit, as TSR_ERR_MAX_*; @part its index. */
static uint32_t partition_over(const ScPart *p, uint32_t *part)
{
    uint32_t i;

    for (i = 0; i < p->c->partitions; i++) {
        *part = i;
        if (p->counts[i].ids > p->c->max_ids) {
            return TSR_ERR_MAX_IDS;
        }
        if (p->counts[i].unique_ids > p->c->max_unique_ids) {
            return TSR_ERR_MAX_UNIQUE_IDS;
        }
    }
    return TSR_ERR_NONE;
}

/*
 * Fill the output slots, partition by partition in input order; with
 * TSR_SC_DROP, an id that would take its partition over a limit is
 * dropped and counted.
 */
static void partition_fill(ScPart *p, uint32_t *rows, uint32_t *cols,
                           float *weights, uint32_t *ids, uint32_t *unique,
                           bool *taken)
{
    const struct tsr_cmd_sc_partition *c = p->c;
    size_t slots = (size_t)c->partitions * c->max_ids, slot;
    uint32_t i, part;

    for (slot = 0; slot < slots; slot++) {
        rows[slot] = TSR_SC_PAD;
        cols[slot] = 0;
        weights[slot] = 0.0f;
    }
    for (i = 0; i < p->ids.n; i++) {
        bool fresh = !taken[p->rank[i]];

        if (!p->kept[i]) {
            continue;
        }
        part = p->ids.cols[i] % c->partitions;
        if (ids[part] == c->max_ids ||
            (fresh && unique[part] == c->max_unique_ids)) {
            p->counts[part].dropped++;
            continue;
        }
        slot = (size_t)part * c->max_ids + ids[part]++;
        unique[part] += fresh;
        taken[p->rank[i]] = true;
        rows[slot] = p->ids.rows[i];
        cols[slot] = p->ids.cols[i] / c->partitions;
        weights[slot] = p->ids.weights[i];
    }
}

static uint32_t partition_write(TsrMem *mem, ScPart *p)
{
    const struct tsr_cmd_sc_partition *c = p->c;
    uint64_t bytes = (uint64_t)c->partitions * c->max_ids * 4;
    uint32_t *rows = malloc(bytes), *cols = malloc(bytes);
    float *weights = malloc(bytes);
    uint32_t *ids = calloc(c->partitions, 4);
    uint32_t *unique = calloc(c->partitions, 4);
    bool *taken = calloc(p->ids.n ? p->ids.n : 1, 1);
    uint32_t err = TSR_ERR_TOO_LARGE;

    if (rows && cols && weights && ids && unique && taken) {
        partition_fill(p, rows, cols, weights, ids, unique, taken);
        if (tsr_mem_aborted(mem)) {
            err = TSR_ERR_ABORTED;
        } else if (tsr_mem_write(mem, c->out.row_ids, rows, bytes) ||
                   tsr_mem_write(mem, c->out.col_ids, cols, bytes) ||
                   (c->out.weights &&
                    tsr_mem_write(mem, c->out.weights, weights, bytes))) {
            err = mem->error;
        } else {
            err = TSR_ERR_NONE;
        }
    }
    free(rows);
    free(cols);
    free(weights);
    free(ids);
    free(unique);
    free(taken);
    return err;
}

static uint32_t partition_run(TsrMem *mem, ScPart *p)
{
    const struct tsr_cmd_sc_partition *c = p->c;
    uint32_t err, part = 0;

    err = sc_load(mem, &c->in, c->count, c->samples, c->vocab, false,
                  &p->ids);
    if (err) {
        return err;
    }
    p->kept = malloc(c->count ? c->count : 1);
    p->rank = malloc((size_t)(c->count ? c->count : 1) * 4);
    p->counts = calloc(c->partitions, sizeof(*p->counts));
    if (!p->kept || !p->rank || !p->counts || !partition_dedup(p) ||
        !partition_count(p)) {
        return TSR_ERR_TOO_LARGE;
    }
    if (tsr_mem_aborted(mem)) {
        return TSR_ERR_ABORTED;
    }
    err = c->hdr.flags & TSR_SC_DROP ? TSR_ERR_NONE : partition_over(p, &part);
    if (!err) {
        err = partition_write(mem, p);
    }
    if (err && err != TSR_ERR_MAX_IDS && err != TSR_ERR_MAX_UNIQUE_IDS) {
        return err;
    }
    if (tsr_mem_write(mem, c->counts, p->counts,
                      (uint64_t)c->partitions * sizeof(*p->counts))) {
        return mem->error;
    }
    if (err) {
        mem->fault_va = c->counts + (uint64_t)part * sizeof(*p->counts);
    }
    return err;
}

uint32_t tsr_cmd_sc_partition(TsrMem *mem,
                              const struct tsr_cmd_sc_partition *c,
                              TsrCost *cost)
{
    const TsrConfig *cfg = &mem->core->cfg;
    ScPart p = { .c = c };
    uint32_t err = partition_check(cfg, c);

    if (err) {
        return err;
    }
    err = partition_run(mem, &p);
    sc_ids_free(&p.ids);
    free(p.kept);
    free(p.rank);
    free(p.counts);
    cost->sc += tsr_sc_partition_cycles(cfg, c->count, tsr_mem_cycles(mem));
    return err;
}

/* ------------------------------------------------- gather, scatter-add */

/* A table: F32 or BF16 rows, padded and aligned to TSR_SC_ROW_ALIGN. */
static uint32_t sc_table_check(const struct tsr_tensor *t)
{
    uint32_t err = tsr_tensor_check(t, FLOAT_DTYPES);

    if (err) {
        return err;
    }
    if (t->va % TSR_SC_ROW_ALIGN) {
        return TSR_ERR_BAD_ALIGNMENT;
    }
    if ((uint64_t)t->stride * tsr_dtype_size(t->dtype) % TSR_SC_ROW_ALIGN) {
        return TSR_ERR_BAD_STRIDE;
    }
    return TSR_ERR_NONE;
}

static uint32_t sc_lookup_check(const struct tsr_cmd_header *hdr,
                                uint32_t count, uint32_t combiner,
                                const struct tsr_sc_coo *in,
                                const struct tsr_tensor *table,
                                const struct tsr_tensor *rows)
{
    uint32_t err;

    if (hdr->flags) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (hdr->reserved) {
        return TSR_ERR_RESERVED;
    }
    if (combiner < TSR_SC_SUM || combiner > TSR_SC_SQRTN) {
        return TSR_ERR_BAD_OP;
    }
    err = sc_table_check(table);
    err = err ? err : tsr_tensor_check(rows, FLOAT_DTYPES);
    if (err) {
        return err;
    }
    if (rows->cols != table->cols) {
        return TSR_ERR_BAD_SHAPE;
    }
    if (count > TSR_SC_MAX_ENTRIES ||
        (uint64_t)count * table->cols > TSR_SC_MAX_WORK ||
        (uint64_t)rows->rows * rows->cols > TSR_MAX_ELEMENTS) {
        return TSR_ERR_TOO_LARGE;
    }
    return sc_coo_check(in, count);
}

/*
 * What each entry's row is multiplied by: its weight, over its sample's
 * sum of weights (MEAN) or the root of its sum of squares (SQRTN), both
 * summed in input order; 0 when that divisor is 0.
 */
static float *sc_factors(const ScIds *ids, uint32_t combiner,
                         uint32_t samples)
{
    float *div = calloc(samples, sizeof(float));
    float *f = malloc((size_t)(ids->n ? ids->n : 1) * sizeof(float));
    uint32_t i;

    if (!div || !f) {
        free(div);
        free(f);
        return NULL;
    }
    for (i = 0; i < ids->n; i++) {
        float w = ids->weights[i];

        if (ids->rows[i] != TSR_SC_PAD) {
            div[ids->rows[i]] += combiner == TSR_SC_SQRTN ? w * w : w;
        }
    }
    for (i = 0; i < ids->n; i++) {
        float d = 1.0f;

        if (ids->rows[i] == TSR_SC_PAD) {
            continue;
        }
        if (combiner != TSR_SC_SUM) {
            d = div[ids->rows[i]];
            d = combiner == TSR_SC_SQRTN ? sqrtf(d) : d;
        }
        f[i] = d == 0.0f ? 0.0f : ids->weights[i] / d;
    }
    free(div);
    return f;
}

/*
 * Move row @row of @t, widened to f32, out of @buf or into it.  Rows are
 * timed as whole HBM granules (tsr_sc_gather_bytes()), so the job's
 * memory traffic leaves them out until the command is charged.
 */
static int sc_row(TsrMem *mem, const struct tsr_tensor *t, uint32_t row,
                  float *buf, bool store)
{
    struct tsr_tensor r = tsr_tensor_block(t, row, 1, 0, t->cols);
    uint64_t host = mem->host_bytes, hbm = mem->hbm_bytes;
    int ret = store ? tsr_tensor_store_f32(mem, &r, buf)
                    : tsr_tensor_load_f32(mem, &r, buf);

    mem->host_bytes = host;
    mem->hbm_bytes = hbm;
    return ret;
}

/*
 * Charge a gather or scatter-add; then count its rows' @row_bytes with
 * its traffic, for the job's trace.
 */
static void sc_lookup_charge(TsrMem *mem, TsrCost *cost, uint32_t dtype,
                             uint64_t ids, uint64_t rows, uint64_t dim,
                             uint64_t row_bytes)
{
    cost->sc += tsr_sc_lookup_cycles(&mem->core->cfg, dtype, ids, rows, dim,
                                     row_bytes, tsr_mem_cycles(mem));
    mem->hbm_bytes += row_bytes;
}

static void sc_axpy(float *acc, float f, const float *x, uint32_t n)
{
    uint32_t k;

    for (k = 0; k < n; k++) {
        acc[k] += f * x[k];
    }
}

/* Samples [@s0, @s0 + @n) of a gather, from the entries at *@next on. */
static uint32_t gather_block(TsrMem *mem, const struct tsr_cmd_sc_gather *c,
                             const ScIds *ids, const float *f,
                             const uint64_t *order, uint32_t used,
                             uint32_t *next, uint32_t s0, uint32_t n,
                             float *acc, float *row)
{
    uint32_t dim = c->table.cols;
    struct tsr_tensor out = tsr_tensor_block(&c->out, s0, n, 0, dim);

    memset(acc, 0, (size_t)n * dim * sizeof(float));
    for (; *next < used && order[*next] >> 32 < (uint64_t)s0 + n; (*next)++) {
        uint32_t at = (uint32_t)order[*next];

        if (*next % TSR_SC_ABORT_ROWS == 0 && tsr_mem_aborted(mem)) {
            return TSR_ERR_ABORTED;
        }
        if (sc_row(mem, &c->table, ids->cols[at], row, false)) {
            return mem->error;
        }
        sc_axpy(acc + (uint64_t)(ids->rows[at] - s0) * dim, f[at], row, dim);
    }
    return tsr_tensor_store_f32(mem, &out, acc) ? mem->error : TSR_ERR_NONE;
}

static uint32_t gather_run(TsrMem *mem, const struct tsr_cmd_sc_gather *c,
                           const ScIds *ids, uint32_t *used)
{
    uint32_t block = tsr_block_rows(&c->out, TSR_BLOCK_ELEMS);
    float *f = sc_factors(ids, c->combiner, c->out.rows);
    uint64_t *order = sc_order(ids, ids->rows, used);
    float *acc = malloc((size_t)block * c->out.cols * sizeof(float));
    float *row = malloc((size_t)c->table.cols * sizeof(float));
    uint32_t err = TSR_ERR_NONE, s0, n, next = 0;

    if (!f || !order || !acc || !row) {
        err = TSR_ERR_TOO_LARGE;
    }
    for (s0 = 0; !err && s0 < c->out.rows; s0 += n) {
        n = tsr_min(block, c->out.rows - s0);
        err = tsr_mem_aborted(mem) ? TSR_ERR_ABORTED
                                   : gather_block(mem, c, ids, f, order,
                                                  *used, &next, s0, n, acc,
                                                  row);
    }
    free(f);
    free(order);
    free(acc);
    free(row);
    return err;
}

uint32_t tsr_cmd_sc_gather(TsrMem *mem, const struct tsr_cmd_sc_gather *c,
                           TsrCost *cost)
{
    uint32_t err = sc_lookup_check(&c->hdr, c->count, c->combiner, &c->in,
                                   &c->table, &c->out);
    ScIds ids = { 0 };
    uint32_t used = 0;

    if (err) {
        return err;
    }
    err = sc_load(mem, &c->in, c->count, c->out.rows, c->table.rows, true,
                  &ids);
    if (!err) {
        err = gather_run(mem, c, &ids, &used);
    }
    sc_ids_free(&ids);
    sc_lookup_charge(mem, cost, c->table.dtype, used, c->out.rows,
                     c->table.cols,
                     tsr_sc_gather_bytes(c->table.dtype, used, c->table.cols));
    return err;
}

/*
 * The entries of one embedding id, order[*@next] on: their rows of grad
 * summed in @acc, then added, times the scale, to the id's row of dst.
 */
static uint32_t scatter_row(TsrMem *mem, const struct tsr_cmd_sc_scatter_add *c,
                            const ScIds *ids, const float *f,
                            const uint64_t *order, uint32_t used,
                            uint32_t *next, float *acc, float *row)
{
    uint32_t dim = c->dst.cols, id = order[*next] >> 32;
    float scale = tsr_bits_f32(c->scale);
    uint32_t k;

    memset(acc, 0, (size_t)dim * sizeof(float));
    for (; *next < used && order[*next] >> 32 == id; (*next)++) {
        uint32_t at = (uint32_t)order[*next];

        if (*next % TSR_SC_ABORT_ROWS == 0 && tsr_mem_aborted(mem)) {
            return TSR_ERR_ABORTED;
        }
        if (sc_row(mem, &c->grad, ids->rows[at], row, false)) {
            return mem->error;
        }
        sc_axpy(acc, f[at], row, dim);
    }
    if (sc_row(mem, &c->dst, id, row, false)) {
        return mem->error;
    }
    for (k = 0; k < dim; k++) {
        row[k] += scale * acc[k];
    }
    return sc_row(mem, &c->dst, id, row, true) ? mem->error : TSR_ERR_NONE;
}

static uint32_t scatter_run(TsrMem *mem,
                            const struct tsr_cmd_sc_scatter_add *c,
                            const ScIds *ids, uint32_t *used,
                            uint32_t *unique)
{
    float *f = sc_factors(ids, c->combiner, c->grad.rows);
    uint64_t *order = sc_order(ids, ids->cols, used);
    float *acc = malloc((size_t)c->dst.cols * sizeof(float));
    float *row = malloc((size_t)c->dst.cols * sizeof(float));
    uint32_t err = TSR_ERR_NONE, next = 0;

    if (!f || !order || !acc || !row) {
        err = TSR_ERR_TOO_LARGE;
    }
    while (!err && next < *used) {
        err = scatter_row(mem, c, ids, f, order, *used, &next, acc, row);
        (*unique)++;
    }
    free(f);
    free(order);
    free(acc);
    free(row);
    return err;
}

uint32_t tsr_cmd_sc_scatter_add(TsrMem *mem,
                                const struct tsr_cmd_sc_scatter_add *c,
                                TsrCost *cost)
{
    uint32_t err = sc_lookup_check(&c->hdr, c->count, c->combiner, &c->in,
                                   &c->dst, &c->grad);
    ScIds ids = { 0 };
    uint32_t used = 0, unique = 0;

    if (!err && c->reserved) {
        err = TSR_ERR_RESERVED;
    }
    if (err) {
        return err;
    }
    err = sc_load(mem, &c->in, c->count, c->grad.rows, c->dst.rows, true,
                  &ids);
    if (!err) {
        err = scatter_run(mem, c, &ids, &used, &unique);
    }
    sc_ids_free(&ids);
    sc_lookup_charge(mem, cost, c->dst.dtype, used, unique, c->dst.cols,
                     tsr_sc_scatter_bytes(c->dst.dtype, c->grad.dtype, used,
                                          unique, c->dst.cols));
    return err;
}
