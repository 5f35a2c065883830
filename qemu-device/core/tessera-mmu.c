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

uint32_t tsr_mmu_open(TsrCore *core, uint32_t context, TsrMem *mem)
{
    struct tsr_context_entry entry;
    uint64_t table, root;
    uint32_t count;

    memset(mem, 0, sizeof(*mem));
    mem->core = core;
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

static uint32_t translate(TsrMem *mem, uint64_t va, bool write,
                          TsrXlate *x)
{
    TsrCore *core = mem->core;
    uint64_t table = mem->root, pte = 0, page_size = TSR_PAGE_SIZE;
    int level;

    if (va >> TSR_VA_BITS) {
        return TSR_ERR_MMU_UNMAPPED;
    }
    for (level = 2; level >= 0; level--) {
        uint64_t raw;

        if (tsr_core_dma_read(core, table + TSR_PT_INDEX(va, level) * 8,
                              &raw, sizeof(raw))) {
            return TSR_ERR_DMA;
        }
        pte = le64toh(raw);
        if (!(pte & TSR_PTE_VALID)) {
            return TSR_ERR_MMU_UNMAPPED;
        }
        if (level == 1 && (pte & TSR_PTE_LEAF)) {
            page_size = TSR_LARGE_PAGE_SIZE;
            break;
        }
        if (level > 0) {
            /* Tables live in system memory. */
            table = pte & TSR_PTE_ADDR_MASK;
        }
    }
    if (!(pte & (write ? TSR_PTE_WRITE : TSR_PTE_READ))) {
        return TSR_ERR_MMU_PERMISSION;
    }
    x->hbm = pte & TSR_PTE_HBM;
    x->addr = (pte & TSR_PTE_ADDR_MASK & ~(page_size - 1)) +
              (va & (page_size - 1));
    x->len = page_size - (va & (page_size - 1));
    if (x->hbm && x->addr + x->len > core->cfg.hbm_size) {
        /* A mapping past the end of HBM is a mapping of nothing. */
        return TSR_ERR_MMU_UNMAPPED;
    }
    return TSR_ERR_NONE;
}

static int fail(TsrMem *mem, uint32_t error, uint64_t va)
{
    if (!mem->error) {
        mem->error = error;
        mem->fault_va = va;
    }
    return -1;
}

static int mem_access(TsrMem *mem, uint64_t va, void *buf, uint64_t len,
                      bool write)
{
    TsrCore *core = mem->core;
    uint8_t *p = buf;
    uint64_t hbm_bytes = 0, bad;

    if (va + len < va) {
        return fail(mem, TSR_ERR_MMU_UNMAPPED, va);
    }
    while (len) {
        TsrXlate x;
        uint32_t err = translate(mem, va, write, &x);
        uint64_t n;

        if (err) {
            return fail(mem, err, va);
        }
        n = len < x.len ? len : x.len;
        if (x.hbm && !write &&
            tsr_core_hbm_read_check(core, x.addr, n, &bad)) {
            return fail(mem, TSR_ERR_ECC, va + bad);
        }
        if (x.hbm) {
            if (write) {
                memcpy(core->hbm + x.addr, p, n);
            } else {
                memcpy(p, core->hbm + x.addr, n);
            }
            hbm_bytes += n;
            mem->hbm_bytes += n;
        } else if (write ? tsr_core_dma_write(core, x.addr, p, n)
                         : tsr_core_dma_read(core, x.addr, p, n)) {
            return fail(mem, TSR_ERR_DMA, va);
        } else {
            mem->host_bytes += n;
        }
        va += n;
        p += n;
        len -= n;
    }
    if (hbm_bytes) {
        pthread_mutex_lock(&core->lock);
        core->counters[write ? TSR_CNT_HBM_WRITE : TSR_CNT_HBM_READ] +=
            hbm_bytes;
        pthread_mutex_unlock(&core->lock);
    }
    return 0;
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
    uint64_t bad;

    if (src + len < src || dst + len < dst) {
        return fail(mem, TSR_ERR_MMU_UNMAPPED, src + len < src ? src : dst);
    }
    while (len) {
        TsrXlate s, d;
        uint32_t err = translate(mem, src, false, &s);
        uint64_t n;
        int ret;

        if (err) {
            return fail(mem, err, src);
        }
        err = translate(mem, dst, true, &d);
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
            ret = tsr_mem_read(mem, src, bounce, n) ||
                  tsr_mem_write(mem, dst, bounce, n);
            if (ret) {
                return -1;
            }
        } else if (s.hbm && d.hbm) {
            memmove(core->hbm + d.addr, core->hbm + s.addr, n);
            mem->hbm_bytes += 2 * n;
        } else if (d.hbm) {
            if (tsr_core_dma_read(core, s.addr, core->hbm + d.addr,
                                    n)) {
                return fail(mem, TSR_ERR_DMA, src);
            }
            mem->host_bytes += n;
            mem->hbm_bytes += n;
        } else {
            if (tsr_core_dma_write(core, d.addr, core->hbm + s.addr,
                                     n)) {
                return fail(mem, TSR_ERR_DMA, dst);
            }
            mem->host_bytes += n;
            mem->hbm_bytes += n;
        }
        src += n;
        dst += n;
        len -= n;
    }
    return 0;
}

uint8_t *tsr_mem_hbm_view(TsrMem *mem, uint64_t va, uint64_t len, bool write)
{
    uint64_t start = 0, off = 0, bad;

    if (!len || va + len < va) {
        return NULL;
    }
    while (off < len) {
        TsrXlate x;

        if (translate(mem, va + off, write, &x) || !x.hbm) {
            return NULL;
        }
        if (!off) {
            start = x.addr;
        } else if (x.addr != start + off) {
            return NULL;
        }
        off += x.len;
    }
    /* Poisoned HBM: the caller's copy path reports the error with its VA. */
    if (!write && (tsr_core_hbm_poisoned(mem->core, start, len) ||
                   tsr_core_hbm_read_check(mem->core, start, len, &bad))) {
        return NULL;
    }
    mem->hbm_bytes += len;
    return mem->core->hbm + start;
}

int tsr_mem_read(TsrMem *mem, uint64_t va, void *buf, uint64_t len)
{
    return mem_access(mem, va, buf, len, false);
}

int tsr_mem_write(TsrMem *mem, uint64_t va, const void *buf, uint64_t len)
{
    return mem_access(mem, va, (void *)buf, len, true);
}
