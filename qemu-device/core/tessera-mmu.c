/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera device MMU: per-context page tables owned by the driver, walked
 * for every device VA a command names.  See "Device MMU" in
 * Documentation/chip.md for the format.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <endian.h>
#include <string.h>

#include "tessera-internal.h"

void tsr_mem_init(TsrMem *mem, TsrCore *core, unsigned int queue,
                  uint32_t generation)
{
    memset(mem, 0, sizeof(*mem));
    mem->core = core;
    mem->queue = queue;
    mem->generation = generation;
}

uint32_t tsr_mmu_open(TsrMem *mem, uint32_t context)
{
    TsrCore *core = mem->core;
    struct tsr_context_entry entry;
    uint64_t table, root;
    uint32_t count;

    mem->context = context;

    pthread_mutex_lock(&core->lock);
    table = core->mmu_ctx_table;
    count = core->mmu_ctx_count;
    pthread_mutex_unlock(&core->lock);

    if (!table || context >= count) {
        return TSR_ERR_BAD_CONTEXT;
    }
    if (tsr_core_dma_read(core, table + context * sizeof(entry),
                            &entry, sizeof(entry))) {
        return TSR_ERR_DMA;
    }
    root = le64toh(entry.root);
    if (!(root & TSR_CTX_VALID)) {
        return TSR_ERR_BAD_CONTEXT;
    }
    mem->root = root & TSR_PTE_ADDR_MASK;
    return TSR_ERR_NONE;
}

/* A translated piece of a VA range. */
typedef struct TsrXlate {
    uint64_t addr;      /* bus address, or HBM offset */
    uint64_t len;       /* bytes until the end of the page */
    bool hbm;
} TsrXlate;

/* Read entry @index of the table at bus address @table. */
static uint32_t read_pte(TsrMem *mem, uint64_t table, unsigned int index,
                         uint64_t *pte)
{
    uint64_t raw;

    if (tsr_core_dma_read(mem->core, table + index * 8, &raw, sizeof(raw))) {
        return TSR_ERR_DMA;
    }
    *pte = le64toh(raw);
    return (*pte & TSR_PTE_VALID) ? TSR_ERR_NONE : TSR_ERR_MMU_UNMAPPED;
}

/*
 * Find the leaf entry for @va: from the walk cache when @va lies in a
 * 2 MiB region walked before in this job and no MMU_INVALIDATE came since
 * (the level-0 entry is still read, so that validity and permissions are
 * those of the tables), else by a full walk.
 */
static uint32_t find_leaf(TsrMem *mem, uint64_t va, uint64_t *pte,
                          uint64_t *page_size)
{
    uint64_t tag = (va >> TSR_LARGE_PAGE_SHIFT) + 1;
    uint32_t generation;
    unsigned int i;
    uint64_t l2, l1;
    uint32_t err;

    /* A driver that changed live tables says so with MMU_INVALIDATE. */
    generation = __atomic_load_n(&mem->core->mmu_generation, __ATOMIC_ACQUIRE);
    if (generation != mem->walk_generation) {
        for (i = 0; i < TSR_WALK_CACHE; i++) {
            mem->walk[i].tag = 0;
        }
        mem->walk_generation = generation;
    }
    for (i = 0; i < TSR_WALK_CACHE && mem->walk[i].tag != tag; i++) {
        continue;
    }
    if (i == TSR_WALK_CACHE) {
        err = read_pte(mem, mem->root, TSR_PT_INDEX(va, 2), &l2);
        err = err ? err : read_pte(mem, l2 & TSR_PTE_ADDR_MASK,
                                   TSR_PT_INDEX(va, 1), &l1);
        if (err) {
            return err;
        }
        i = mem->walk_next++ % TSR_WALK_CACHE;
        mem->walk[i].tag = tag;
        mem->walk[i].leaf = (l1 & TSR_PTE_LEAF) ? l1 : 0;
        mem->walk[i].l0 = l1 & TSR_PTE_ADDR_MASK;
    }
    if (mem->walk[i].leaf) {
        *pte = mem->walk[i].leaf;
        *page_size = TSR_LARGE_PAGE_SIZE;
        return TSR_ERR_NONE;
    }
    *page_size = TSR_PAGE_SIZE;
    return read_pte(mem, mem->walk[i].l0, TSR_PT_INDEX(va, 0), pte);
}

static uint32_t translate(TsrMem *mem, uint64_t va, bool write,
                          TsrXlate *x)
{
    uint64_t pte, page_size;
    uint32_t err;

    if (va >> TSR_VA_BITS) {
        return TSR_ERR_MMU_UNMAPPED;
    }
    err = find_leaf(mem, va, &pte, &page_size);
    if (err) {
        return err;
    }
    if (!(pte & (write ? TSR_PTE_WRITE : TSR_PTE_READ))) {
        return TSR_ERR_MMU_PERMISSION;
    }
    x->hbm = pte & TSR_PTE_HBM;
    x->addr = (pte & TSR_PTE_ADDR_MASK & ~(page_size - 1)) +
              (va & (page_size - 1));
    x->len = page_size - (va & (page_size - 1));
    if (x->hbm && x->addr + x->len > mem->core->cfg.hbm_size) {
        /* A mapping past the end of HBM is a mapping of nothing. */
        return TSR_ERR_MMU_UNMAPPED;
    }
    return TSR_ERR_NONE;
}

/* Largest run of contiguous pages one piece of a transfer may cover. */
#define TSR_MAX_RUN (2u << 20)

/*
 * Translate @va, then extend the piece over following pages that map
 * contiguously to the same kind of memory with the same permission, up to
 * @want bytes (at most TSR_MAX_RUN): one large copy instead of many small.
 */
static uint32_t translate_run(TsrMem *mem, uint64_t va, uint64_t want,
                              bool write, TsrXlate *x)
{
    uint32_t err = translate(mem, va, write, x);

    want = want < TSR_MAX_RUN ? want : TSR_MAX_RUN;
    while (!err && x->len < want) {
        TsrXlate next;

        if (translate(mem, va + x->len, write, &next) ||
            next.hbm != x->hbm || next.addr != x->addr + x->len) {
            break;
        }
        x->len += next.len;
    }
    return err;
}

static int fail(TsrMem *mem, uint32_t error, uint64_t va)
{
    if (!mem->error) {
        mem->error = error;
        mem->fault_va = va;
    }
    return -1;
}

/* Count @host and @hbm bytes moved, unless they are a re-read. */
static void count_bytes(TsrMem *mem, uint64_t host, uint64_t hbm)
{
    if (!mem->reread) {
        mem->host_bytes += host;
        mem->hbm_bytes += hbm;
    }
}

/* Count HBM traffic in the chip's counters, unless the job is stale. */
static void count_hbm(TsrMem *mem, uint64_t bytes, bool write)
{
    TsrCore *core = mem->core;

    if (!bytes || mem->reread) {
        return;
    }
    pthread_mutex_lock(&core->lock);
    if (core->queue[mem->queue].generation == mem->generation) {
        core->counters[write ? TSR_CNT_HBM_WRITE : TSR_CNT_HBM_READ] += bytes;
    }
    pthread_mutex_unlock(&core->lock);
}

/*
 * Write one translated piece; TSR_ERR_NONE, TSR_ERR_DMA, or
 * TSR_ERR_ABORTED when a reset has made the job stale.
 */
static uint32_t write_piece(TsrMem *mem, const TsrXlate *x, const void *p,
                            uint64_t n)
{
    TsrCore *core = mem->core;
    int ret = 0;

    if (!tsr_job_write_begin(core, mem->queue, mem->generation)) {
        return TSR_ERR_ABORTED;
    }
    if (x->hbm) {
        memcpy(core->hbm + x->addr, p, n);
    } else {
        ret = tsr_core_dma_write(core, x->addr, p, n);
    }
    tsr_job_write_end(core, mem->queue);
    return ret ? TSR_ERR_DMA : TSR_ERR_NONE;
}

static uint32_t read_piece(TsrMem *mem, const TsrXlate *x, void *p,
                           uint64_t n)
{
    if (x->hbm) {
        memcpy(p, mem->core->hbm + x->addr, n);
        return TSR_ERR_NONE;
    }
    return tsr_core_dma_read(mem->core, x->addr, p, n) ? TSR_ERR_DMA
                                                       : TSR_ERR_NONE;
}

static int mem_access(TsrMem *mem, uint64_t va, void *buf, uint64_t len,
                      bool write)
{
    TsrCore *core = mem->core;
    uint8_t *p = buf;
    uint64_t hbm_bytes = 0, bad, end;

    if (!tsr_add(va, len, &end)) {
        return fail(mem, TSR_ERR_MMU_UNMAPPED, va);
    }
    while (len) {
        TsrXlate x;
        uint32_t err = translate_run(mem, va, len, write, &x);
        uint64_t n;

        if (err) {
            return fail(mem, err, va);
        }
        n = len < x.len ? len : x.len;
        if (x.hbm && !write &&
            tsr_core_hbm_read_check(core, x.addr, n, &bad)) {
            return fail(mem, TSR_ERR_ECC, va + bad);
        }
        err = write ? write_piece(mem, &x, p, n) : read_piece(mem, &x, p, n);
        if (err) {
            return fail(mem, err, va);
        }
        if (x.hbm) {
            hbm_bytes += n;
        }
        count_bytes(mem, x.hbm ? 0 : n, x.hbm ? n : 0);
        va += n;
        p += n;
        len -= n;
    }
    count_hbm(mem, hbm_bytes, write);
    return 0;
}

/*
 * Copy one piece of which at least one side is HBM, straight from or
 * into HBM; a reset cuts it off like any write.  Returns TSR_ERR_NONE, or
 * the error with @source set when the source side failed.
 */
static uint32_t copy_piece(TsrMem *mem, const TsrXlate *d, const TsrXlate *s,
                           uint64_t n, bool *source)
{
    TsrCore *core = mem->core;
    int ret = 0;

    if (!tsr_job_write_begin(core, mem->queue, mem->generation)) {
        *source = false;
        return TSR_ERR_ABORTED;
    }
    if (s->hbm && d->hbm) {
        memmove(core->hbm + d->addr, core->hbm + s->addr, n);
    } else if (d->hbm) {
        ret = tsr_core_dma_read(core, s->addr, core->hbm + d->addr, n);
        *source = true;
    } else {
        ret = tsr_core_dma_write(core, d->addr, core->hbm + s->addr, n);
        *source = false;
    }
    tsr_job_write_end(core, mem->queue);
    return ret ? TSR_ERR_DMA : TSR_ERR_NONE;
}

/*
 * Copy @len bytes from @src to @dst, both VAs of the job.  A piece whose
 * source or destination is in HBM moves once, straight from or into HBM;
 * system memory to system memory goes through @bounce (@bounce_len bytes).
 */
int tsr_mem_copy(TsrMem *mem, uint64_t dst, uint64_t src, uint64_t len,
                 uint8_t *bounce, uint64_t bounce_len)
{
    TsrCore *core = mem->core;
    uint64_t bad, end;

    if (!tsr_add(src, len, &end)) {
        return fail(mem, TSR_ERR_MMU_UNMAPPED, src);
    }
    if (!tsr_add(dst, len, &end)) {
        return fail(mem, TSR_ERR_MMU_UNMAPPED, dst);
    }
    while (len) {
        TsrXlate s, d;
        uint32_t err = translate_run(mem, src, len, false, &s);
        uint64_t n;

        if (err) {
            return fail(mem, err, src);
        }
        err = translate_run(mem, dst, len, true, &d);
        if (err) {
            return fail(mem, err, dst);
        }
        n = len < s.len ? len : s.len;
        n = n < d.len ? n : d.len;
        if (s.hbm && tsr_core_hbm_read_check(core, s.addr, n, &bad)) {
            return fail(mem, TSR_ERR_ECC, src + bad);
        }
        if (!s.hbm && !d.hbm) {
            n = n < bounce_len ? n : bounce_len;
            if (tsr_mem_read(mem, src, bounce, n) ||
                tsr_mem_write(mem, dst, bounce, n)) {
                return -1;
            }
        } else {
            bool source;

            err = copy_piece(mem, &d, &s, n, &source);
            if (err) {
                return fail(mem, err, source ? src : dst);
            }
            count_bytes(mem, s.hbm && d.hbm ? 0 : n,
                        s.hbm && d.hbm ? 2 * n : n);
        }
        src += n;
        dst += n;
        len -= n;
    }
    return 0;
}

/*
 * Where [va, va + len) lies in HBM if it is mapped (writable, for
 * @write) to one contiguous range of it; -1 if not.
 */
static int64_t hbm_range(TsrMem *mem, uint64_t va, uint64_t len, bool write)
{
    uint64_t start = 0, off = 0, end;

    if (!len || !tsr_add(va, len, &end)) {
        return -1;
    }
    while (off < len) {
        TsrXlate x;

        if (translate(mem, va + off, write, &x) || !x.hbm) {
            return -1;
        }
        if (!off) {
            start = x.addr;
        } else if (x.addr != start + off) {
            return -1;
        }
        off += x.len;
    }
    return start;
}

static const uint8_t *hbm_view(TsrMem *mem, uint64_t va, uint64_t len)
{
    int64_t start = hbm_range(mem, va, len, false);
    uint64_t bad;

    /* Poisoned HBM: the caller's copy path reports the error with its VA. */
    if (start < 0 || tsr_core_hbm_poisoned(mem->core, start, len) ||
        tsr_core_hbm_read_check(mem->core, start, len, &bad)) {
        return NULL;
    }
    count_bytes(mem, 0, len);
    return mem->core->hbm + start;
}

const uint8_t *tsr_mem_read_view(TsrMem *mem, uint64_t va, uint64_t len)
{
    const uint8_t *p = hbm_view(mem, va, len);

    if (p) {
        count_hbm(mem, len, false);
    }
    return p;
}

uint8_t *tsr_mem_write_view(TsrMem *mem, uint64_t va, uint64_t len)
{
    int64_t start = hbm_range(mem, va, len, true);

    return start < 0 ? NULL : mem->core->hbm + start;
}

void tsr_mem_count_written(TsrMem *mem, uint64_t len)
{
    count_bytes(mem, 0, len);
    count_hbm(mem, len, true);
}

int tsr_mem_read(TsrMem *mem, uint64_t va, void *buf, uint64_t len)
{
    return mem_access(mem, va, buf, len, false);
}

int tsr_mem_write(TsrMem *mem, uint64_t va, const void *buf, uint64_t len)
{
    return mem_access(mem, va, (void *)buf, len, true);
}

int tsr_mem_check_write(TsrMem *mem, uint64_t va, uint64_t len)
{
    uint64_t end;

    if (!tsr_add(va, len, &end)) {
        return fail(mem, TSR_ERR_MMU_UNMAPPED, va);
    }
    while (va < end) {
        TsrXlate x;
        uint32_t err = translate(mem, va, true, &x);

        if (err) {
            return fail(mem, err, va);
        }
        va += tsr_min(x.len, end - va);
    }
    return 0;
}
