/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A host for the Tessera chip core in unit tests: system memory as a host
 * buffer (bus address = offset), HBM, page tables built on demand, and
 * helpers that submit jobs through a real ring and read the completion.
 */
#ifndef TESSERA_TEST_CHIP_H
#define TESSERA_TEST_CHIP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera/chip.h"
#include "tessera-core.h"

/* A user (the benchmarks) may ask for more before including this. */
#ifndef SYSMEM_SIZE
#define SYSMEM_SIZE (96ull << 20)
#endif
#ifndef HBM_SIZE
#define HBM_SIZE (16ull << 20)
#endif
/* Fixed places in system memory. */
#define CTX_TABLE_ADDR 0x1000ull
#define RING_ADDR 0x2000ull
#define FENCE_ADDR(q) (0x3000ull + 8 * (q))
#define PT_POOL_START 0x100000ull
#define PT_POOL_END 0x400000ull
#define DATA_START 0x400000ull
#define RING_SIZE 16

struct test_chip {
    TsrCore *core;
    TsrConfig cfg;
    uint8_t *sysmem;
    uint8_t *hbm;
    uint64_t pt_next;
    uint64_t data_next;
    uint32_t irqs[TSR_MSIX_VECTORS];    /* raise_irq calls per vector */
    uint32_t kicks[TSR_MAX_QUEUES];
    uint32_t schedules;
    uint32_t fail_dma_from;             /* 0: never fail */
    uint32_t pt_reads;                  /* reads of page-table pages */
    uint32_t tail[TSR_MAX_QUEUES];
    uint32_t guest_errors;              /* guest_error calls */
    char guest_error[256];              /* the last one */
    uint64_t dma_reads;                 /* dma_read calls */
    /* A transfer at hold_addr waits until released (chip_hold()). */
    pthread_mutex_t hold_lock;
    pthread_cond_t hold_cond;
    uint64_t hold_addr;                 /* 0: none */
    bool hold_after;                    /* once its bytes have moved */
    bool held;
    bool released;
    /* Where ICI port bytes go (tests/host/tessera_ici_test.c). */
    size_t (*ici_out)(struct test_chip *c, unsigned int port,
                      const void *buf, size_t len);
    void *ici_ctx;
};

/*
 * The next transfer at bus address @addr waits for chip_release(), before
 * its bytes move, or with @after once they have; later ones go through.
 */
static inline void chip_hold_at(struct test_chip *c, uint64_t addr, bool after)
{
    pthread_mutex_lock(&c->hold_lock);
    c->held = false;
    c->released = false;
    c->hold_after = after;
    __atomic_store_n(&c->hold_addr, addr, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&c->hold_lock);
}

static inline void chip_hold(struct test_chip *c, uint64_t addr)
{
    chip_hold_at(c, addr, false);
}

/* Wait until the chip is inside the held transfer. */
static inline void chip_wait_held(struct test_chip *c)
{
    pthread_mutex_lock(&c->hold_lock);
    while (!c->held) {
        pthread_cond_wait(&c->hold_cond, &c->hold_lock);
    }
    pthread_mutex_unlock(&c->hold_lock);
}

static inline void chip_release(struct test_chip *c)
{
    pthread_mutex_lock(&c->hold_lock);
    c->released = true;
    __atomic_store_n(&c->hold_addr, 0, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&c->hold_cond);
    pthread_mutex_unlock(&c->hold_lock);
}

static inline void chip_dma_hold(struct test_chip *c, uint64_t addr,
                                 bool after)
{
    if (__atomic_load_n(&c->hold_addr, __ATOMIC_ACQUIRE) != addr) {
        return;
    }
    pthread_mutex_lock(&c->hold_lock);
    if (c->hold_addr && addr == c->hold_addr && c->hold_after == after) {
        __atomic_store_n(&c->hold_addr, 0, __ATOMIC_RELEASE);
        c->held = true;
        pthread_cond_broadcast(&c->hold_cond);
        while (!c->released) {
            pthread_cond_wait(&c->hold_cond, &c->hold_lock);
        }
    }
    pthread_mutex_unlock(&c->hold_lock);
}

static inline int chip_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    struct test_chip *c = opaque;

    if (c->fail_dma_from && addr >= c->fail_dma_from) {
        return -1;
    }
    if (addr > SYSMEM_SIZE || len > SYSMEM_SIZE - addr) {
        return -1;
    }
    if (addr >= PT_POOL_START && addr < PT_POOL_END) {
        c->pt_reads++;
    }
    __atomic_add_fetch(&c->dma_reads, 1, __ATOMIC_SEQ_CST);
    chip_dma_hold(c, addr, false);
    memcpy(buf, c->sysmem + addr, len);
    chip_dma_hold(c, addr, true);
    return 0;
}

static inline int chip_dma_write(void *opaque, uint64_t addr, const void *buf,
                          size_t len)
{
    struct test_chip *c = opaque;

    if (c->fail_dma_from && addr >= c->fail_dma_from) {
        return -1;
    }
    if (addr > SYSMEM_SIZE || len > SYSMEM_SIZE - addr) {
        return -1;
    }
    chip_dma_hold(c, addr, false);
    memcpy(c->sysmem + addr, buf, len);
    chip_dma_hold(c, addr, true);
    return 0;
}

static inline void chip_raise_irq(void *opaque, unsigned int vector)
{
    struct test_chip *c = opaque;

    __atomic_add_fetch(&c->irqs[vector], 1, __ATOMIC_SEQ_CST);
}

static inline void chip_schedule(void *opaque)
{
    struct test_chip *c = opaque;

    c->schedules++;
}

static inline void chip_kick(void *opaque, unsigned int queue)
{
    struct test_chip *c = opaque;

    __atomic_add_fetch(&c->kicks[queue], 1, __ATOMIC_SEQ_CST);
}

static inline void chip_guest_error(void *opaque, const char *msg)
{
    struct test_chip *c = opaque;

    snprintf(c->guest_error, sizeof(c->guest_error), "%s", msg);
    __atomic_add_fetch(&c->guest_errors, 1, __ATOMIC_SEQ_CST);
}

static inline size_t chip_ici_write(void *opaque, unsigned int port,
                                    const void *buf, size_t len)
{
    struct test_chip *c = opaque;

    return c->ici_out ? c->ici_out(c, port, buf, len) : len;
}

static const TsrCoreOps chip_ops = {
    .dma_read = chip_dma_read,
    .dma_write = chip_dma_write,
    .raise_irq = chip_raise_irq,
    .schedule = chip_schedule,
    .kick_queue = chip_kick,
    .guest_error = chip_guest_error,
    .ici_write = chip_ici_write,
};

static inline void wr(struct test_chip *c, uint32_t reg, uint32_t v)
{
    tsr_core_reg_write(c->core, reg, v);
}

static inline uint32_t rd(struct test_chip *c, uint32_t reg)
{
    return tsr_core_reg_read(c->core, reg);
}

static inline uint32_t qrd(struct test_chip *c, unsigned int q, uint32_t r)
{
    return rd(c, TSR_QUEUE_BASE(q) + r);
}

static inline void qwr(struct test_chip *c, unsigned int q, uint32_t r,
                       uint32_t v)
{
    wr(c, TSR_QUEUE_BASE(q) + r, v);
}

static inline uint64_t alloc_pt_page(struct test_chip *c)
{
    uint64_t a = c->pt_next;

    c->pt_next += TSR_PAGE_SIZE;
    memset(c->sysmem + a, 0, TSR_PAGE_SIZE);
    return a;
}

static inline uint64_t *pte_at(struct test_chip *c, uint64_t table, uint64_t va,
                        int level)
{
    return (uint64_t *)(c->sysmem + table) + TSR_PT_INDEX(va, level);
}

/* Give context @ctx a fresh, empty address space. */
static inline void chip_context(struct test_chip *c, uint32_t ctx)
{
    struct tsr_context_entry *e =
        (struct tsr_context_entry *)(c->sysmem + CTX_TABLE_ADDR) + ctx;

    e->root = alloc_pt_page(c) | TSR_CTX_VALID;
    e->reserved = 0;
}

/* Map [va, va + len) of @ctx to @addr (a bus address, or HBM offset). */
static inline void chip_map(struct test_chip *c, uint32_t ctx, uint64_t va,
                     uint64_t addr, uint64_t len, uint64_t flags)
{
    struct tsr_context_entry *e =
        (struct tsr_context_entry *)(c->sysmem + CTX_TABLE_ADDR) + ctx;
    uint64_t off;

    for (off = 0; off < len; off += TSR_PAGE_SIZE) {
        uint64_t table = e->root & TSR_PTE_ADDR_MASK;
        int level;

        for (level = 2; level > 0; level--) {
            uint64_t *pte = pte_at(c, table, va + off, level);

            if (!(*pte & TSR_PTE_VALID)) {
                *pte = alloc_pt_page(c) | TSR_PTE_VALID;
            }
            table = *pte & TSR_PTE_ADDR_MASK;
        }
        *pte_at(c, table, va + off, 0) =
            ((addr + off) & TSR_PTE_ADDR_MASK) | flags | TSR_PTE_VALID;
    }
}

/*
 * Map [va, va + len) of @ctx (whole GiBs) onto the same 2 MiB of HBM at
 * @hbm, with level-1 leaves: the chip's largest operands in a small test.
 */
static inline void chip_map_aliased(struct test_chip *c, uint32_t ctx,
                                    uint64_t va, uint64_t len, uint64_t hbm)
{
    struct tsr_context_entry *e =
        (struct tsr_context_entry *)(c->sysmem + CTX_TABLE_ADDR) + ctx;
    uint64_t gib;
    int i;

    for (gib = va >> 30; gib < (va + len) >> 30; gib++) {
        uint64_t l1 = alloc_pt_page(c);

        for (i = 0; i < TSR_PT_ENTRIES; i++) {
            ((uint64_t *)(c->sysmem + l1))[i] =
                hbm | TSR_PTE_VALID | TSR_PTE_READ | TSR_PTE_WRITE |
                TSR_PTE_HBM | TSR_PTE_LEAF;
        }
        *pte_at(c, e->root & TSR_PTE_ADDR_MASK, gib << 30, 2) =
            l1 | TSR_PTE_VALID;
    }
}

/* Carve @len bytes of system memory, mapped RW at the same VA in @ctx. */
static inline uint64_t chip_buffer(struct test_chip *c, uint32_t ctx, uint64_t len)
{
    uint64_t a = c->data_next;

    len = (len + TSR_PAGE_SIZE - 1) & ~(TSR_PAGE_SIZE - 1);
    c->data_next += len;
    memset(c->sysmem + a, 0, len);
    chip_map(c, ctx, a, a, len, TSR_PTE_READ | TSR_PTE_WRITE);
    return a;
}

static inline void *host_ptr(struct test_chip *c, uint64_t addr)
{
    return c->sysmem + addr;
}

/* A chip of configuration @cfg (its HBM size aside). */
static inline struct test_chip *chip_new_config(const TsrConfig *cfg)
{
    struct test_chip *c = calloc(1, sizeof(*c));
    unsigned int q;

    c->sysmem = calloc(1, SYSMEM_SIZE);
    c->hbm = calloc(1, HBM_SIZE);
    pthread_mutex_init(&c->hold_lock, NULL);
    pthread_cond_init(&c->hold_cond, NULL);
    c->cfg = *cfg;
    c->cfg.hbm_size = HBM_SIZE;
    c->core = tsr_core_new(&c->cfg, c->hbm, &chip_ops, c);
    if (!c->core) {
        abort();
    }
    c->pt_next = PT_POOL_START;
    c->data_next = DATA_START;
    wr(c, TSR_REG_MMU_CTX_TABLE_LO, (uint32_t)CTX_TABLE_ADDR);
    wr(c, TSR_REG_MMU_CTX_TABLE_HI, 0);
    wr(c, TSR_REG_MMU_CTX_COUNT, 16);
    for (q = 0; q < c->cfg.num_queues; q++) {
        uint64_t ring = RING_ADDR + q * 0x400;

        qwr(c, q, TSR_QREG_RING_BASE_LO, (uint32_t)ring);
        qwr(c, q, TSR_QREG_RING_SIZE, RING_SIZE);
        qwr(c, q, TSR_QREG_FENCE_ADDR_LO, (uint32_t)FENCE_ADDR(q));
        qwr(c, q, TSR_QREG_IRQ_ENABLE, TSR_QIRQ_ALL);
        qwr(c, q, TSR_QREG_CONTROL, TSR_QCTRL_ENABLE);
    }
    chip_context(c, 1);
    return c;
}

static inline struct test_chip *chip_new(const char *preset)
{
    TsrConfig cfg;

    if (tsr_preset_lookup(preset, &cfg)) {
        abort();
    }
    return chip_new_config(&cfg);
}

static inline void chip_free(struct test_chip *c)
{
    tsr_core_free(c->core);
    pthread_cond_destroy(&c->hold_cond);
    pthread_mutex_destroy(&c->hold_lock);
    free(c->sysmem);
    free(c->hbm);
    free(c);
}

/* Queue a job of @len bytes of commands at @cmds on queue @q (no run). */
static inline struct tsr_completion *chip_queue_job(struct test_chip *c,
                                             unsigned int q, uint32_t ctx,
                                             const void *cmds, uint32_t len,
                                             uint64_t fence)
{
    uint64_t buf = chip_buffer(c, ctx, len + sizeof(struct tsr_completion));
    uint64_t ring = RING_ADDR + q * 0x400;
    struct tsr_job_desc *d =
        (struct tsr_job_desc *)host_ptr(c, ring) + c->tail[q];

    memcpy(host_ptr(c, buf), cmds, len);
    memset(d, 0, sizeof(*d));
    d->context = ctx;
    d->flags = TSR_JOB_IRQ;
    d->cmdbuf_va = buf;
    d->cmdbuf_size = len;
    d->completion_va = buf + len;
    d->fence = fence;
    c->tail[q] = (c->tail[q] + 1) % RING_SIZE;
    qwr(c, q, TSR_QREG_TAIL, c->tail[q]);
    return host_ptr(c, buf + len);
}

/* Run a job to completion on queue 0 of context 1; returns its record. */
static inline struct tsr_completion *chip_run(struct test_chip *c, const void *cmds,
                                       uint32_t len)
{
    static uint64_t fence = 100;
    struct tsr_completion *comp;

    comp = chip_queue_job(c, 0, 1, cmds, len, ++fence);
    tsr_core_queue_run(c->core, 0);
    return comp;
}

/* Run a job on queue @q of context 1 to its end; returns its record. */
static inline struct tsr_completion *chip_run_on(struct test_chip *c,
                                                 unsigned int q,
                                                 const void *cmds,
                                                 uint32_t len)
{
    static uint64_t fence = 1000;
    struct tsr_completion *comp = chip_queue_job(c, q, 1, cmds, len, ++fence);

    tsr_core_queue_run(c->core, q);
    return comp;
}

/*
 * Run a job on queue 0 of context 1 with its trace (TSR_JOB_TRACE) at @va,
 * @size bytes; returns its record.
 */
static inline struct tsr_completion *chip_run_traced(struct test_chip *c,
                                                     const void *cmds,
                                                     uint32_t len, uint64_t va,
                                                     uint32_t size)
{
    struct tsr_completion *comp = chip_queue_job(c, 0, 1, cmds, len, 1);
    unsigned int slot = (c->tail[0] + RING_SIZE - 1) % RING_SIZE;
    struct tsr_job_desc *d = (struct tsr_job_desc *)host_ptr(c, RING_ADDR) +
                             slot;

    d->flags |= TSR_JOB_TRACE;
    d->trace_va = va;
    d->trace_size = size;
    tsr_core_queue_run(c->core, 0);
    return comp;
}

/* A queue's worker, in a thread of its own: pthread_create(run_queue). */
struct runner {
    struct test_chip *c;
    unsigned int queue;
};

static inline void *run_queue(void *arg)
{
    struct runner *r = arg;

    tsr_core_queue_run(r->c->core, r->queue);
    return NULL;
}

/*
 * Until queue @q's job sleeps in a semaphore wait: its wake-ups so far
 * (tsr_core_sem_waiter()), or -1 if it did not within @ms.
 */
static inline int64_t chip_until_sem_sleeping(struct test_chip *c,
                                              unsigned int q, int ms)
{
    struct timespec tick = { 0, 1000000 };
    uint64_t wakeups;
    bool sleeping;

    for (;;) {
        tsr_core_sem_waiter(c->core, q, &sleeping, &wakeups);
        if (sleeping) {
            return (int64_t)wakeups;
        }
        if (!ms--) {
            return -1;
        }
        nanosleep(&tick, NULL);
    }
}

#define HDR(op, type) ((struct tsr_cmd_header){ \
    .opcode = (op), .size_qw = sizeof(type) / 8 })

static inline struct tsr_tensor tensor(uint64_t va, uint32_t rows,
                                       uint32_t cols, uint16_t dtype)
{
    return (struct tsr_tensor){ .va = va, .rows = rows, .cols = cols,
                                .stride = cols, .dtype = dtype };
}

#endif /* TESSERA_TEST_CHIP_H */
