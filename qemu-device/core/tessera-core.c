/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera chip core: the register file, device-level interrupts, reset.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-internal.h"

TsrCore *tsr_core_new(const TsrConfig *cfg, uint8_t *hbm,
                      const TsrCoreOps *ops, void *opaque)
{
    pthread_condattr_t attr;
    const char *why;
    TsrCore *core;
    unsigned int q;

    if (tsr_config_check(cfg, &why) || !hbm) {
        return NULL;
    }
    core = calloc(1, sizeof(*core));
    if (!core) {
        return NULL;
    }
    core->cfg = *cfg;
    core->hbm = hbm;
    core->ops = ops;
    core->opaque = opaque;
    core->ici = tsr_ici_new(core, &(TsrSlice){
        .topo = { .dims = { 1, 1, 1 } } });
    if (!core->ici) {
        free(core);
        return NULL;
    }
    pthread_mutex_init(&core->lock, NULL);
    for (q = 0; q < TSR_WRITERS; q++) {
        pthread_mutex_init(&core->write_lock[q], NULL);
    }
    pthread_mutex_init(&core->sem_lock, NULL);
    pthread_mutex_init(&core->wake_lock, NULL);
    /* Re-reads keep their pace if the wall clock is set back. */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    for (q = 0; q < TSR_MAX_QUEUES; q++) {
        pthread_cond_init(&core->sem_waiter[q].cond, &attr);
    }
    pthread_condattr_destroy(&attr);
    tsr_core_reset(core);
    core->counters[TSR_CNT_RESETS] = 0;
    return core;
}

void tsr_core_free(TsrCore *core)
{
    unsigned int q;

    if (core) {
        for (q = 0; q < TSR_MAX_QUEUES; q++) {
            pthread_cond_destroy(&core->sem_waiter[q].cond);
        }
        pthread_mutex_destroy(&core->wake_lock);
        tsr_ici_free(core->ici);
        pthread_mutex_destroy(&core->sem_lock);
        for (q = 0; q < TSR_WRITERS; q++) {
            pthread_mutex_destroy(&core->write_lock[q]);
        }
        pthread_mutex_destroy(&core->lock);
        free(core);
    }
}

const TsrConfig *tsr_core_config(const TsrCore *core)
{
    return &core->cfg;
}

TsrIci *tsr_core_ici(TsrCore *core)
{
    return core->ici;
}

void tsr_core_reset(TsrCore *core)
{
    uint64_t resets;
    unsigned int q;

    pthread_mutex_lock(&core->lock);
    resets = core->counters[TSR_CNT_RESETS] + 1;
    core->scratch = 0;
    core->irq_status = 0;
    core->irq_enable = 0;
    core->ping_pending = false;
    core->ping_cookie = 0;
    core->ping_ack = 0;
    core->ping_count = 0;
    core->fatal = false;
    core->latched_hi = 0;
    core->mmu_ctx_table = 0;
    core->mmu_ctx_count = 0;
    core->mmu_fault_context = 0;
    core->mmu_fault_va = 0;
    core->mmu_fault_reason = 0;
    core->mmu_fault_count = 0;
    memset(core->counters, 0, sizeof(core->counters));
    memset(&core->faults, 0, sizeof(core->faults));
    core->counters[TSR_CNT_RESETS] = resets;
    core->epoch++;
    for (q = 0; q < TSR_WRITERS; q++) {
        uint32_t generation = core->queue[q].generation + 1;

        memset(&core->queue[q], 0, sizeof(core->queue[q]));
        core->queue[q].generation = generation;
    }
    pthread_mutex_unlock(&core->lock);
    for (q = 0; q < TSR_WRITERS; q++) {
        tsr_queue_fence_writes(core, q);
    }
    tsr_ici_reset(core->ici);
    /* Semaphore waiters see the reset at once. */
    tsr_core_wake_waiters(core);
}

/* Every queue waiting on a semaphore looks again: a reset, a fatal error. */
void tsr_core_wake_waiters(TsrCore *core)
{
    unsigned int q;

    pthread_mutex_lock(&core->wake_lock);
    for (q = 0; q < TSR_MAX_QUEUES; q++) {
        if (core->sem_waiter[q].waiting) {
            core->sem_waiter[q].woken = true;
            core->sem_waiter[q].wakeups++;
            pthread_cond_signal(&core->sem_waiter[q].cond);
        }
    }
    pthread_mutex_unlock(&core->wake_lock);
}

/*
 * The semaphore at @va of @context changed: the queues of that context
 * waiting on it look again, and every queue waiting in another context,
 * where a buffer shared between processes may put the same semaphore at
 * another address.  (One mapped twice in one context is seen by its
 * waiters' re-reads, as a CPU's write is.)
 */
void tsr_core_wake_sem(TsrCore *core, uint32_t context, uint64_t va)
{
    unsigned int q;

    pthread_mutex_lock(&core->wake_lock);
    for (q = 0; q < TSR_MAX_QUEUES; q++) {
        TsrSemWaiter *w = &core->sem_waiter[q];

        if (w->waiting && (w->context != context || w->va == va ||
                           w->abort_va == va)) {
            w->woken = true;
            w->wakeups++;
            pthread_cond_signal(&w->cond);
        }
    }
    pthread_mutex_unlock(&core->wake_lock);
}

void tsr_core_guest_error(TsrCore *core, const char *fmt, ...)
{
    char msg[TSR_GUEST_ERROR_LEN];
    va_list ap;

    if (!core->ops->guest_error) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    core->ops->guest_error(core->opaque, msg);
}

void tsr_core_irq(TsrCore *core, unsigned int vector)
{
    bool drop;

    pthread_mutex_lock(&core->lock);
    drop = core->faults.drop_irqs > 0;
    if (drop) {
        core->faults.drop_irqs--;
    }
    pthread_mutex_unlock(&core->lock);
    if (!drop) {
        core->ops->raise_irq(core->opaque, vector);
    }
}

static bool take_dma_failure(TsrCore *core)
{
    bool fail;

    pthread_mutex_lock(&core->lock);
    fail = core->faults.fail_dma > 0;
    if (fail) {
        core->faults.fail_dma--;
    }
    pthread_mutex_unlock(&core->lock);
    return fail;
}

/* A transfer that would wrap around the bus address space fails. */
static bool dma_fails(TsrCore *core, uint64_t addr, size_t len)
{
    uint64_t end;

    return !tsr_add(addr, len, &end) || take_dma_failure(core);
}

int tsr_core_dma_read(TsrCore *core, uint64_t addr, void *buf, size_t len)
{
    if (dma_fails(core, addr, len)) {
        return -1;
    }
    return core->ops->dma_read(core->opaque, addr, buf, len);
}

int tsr_core_dma_write(TsrCore *core, uint64_t addr, const void *buf,
                       size_t len)
{
    if (dma_fails(core, addr, len)) {
        return -1;
    }
    return core->ops->dma_write(core->opaque, addr, buf, len);
}

static bool poisoned_locked(TsrCore *core, uint64_t addr, uint64_t len)
{
    const TsrFaults *f = &core->faults;

    return f->poison_size &&
           addr < tsr_add_sat(f->poison_addr, f->poison_size) &&
           f->poison_addr < tsr_add_sat(addr, len);
}

bool tsr_core_hbm_poisoned(TsrCore *core, uint64_t addr, uint64_t len)
{
    bool poisoned;

    pthread_mutex_lock(&core->lock);
    poisoned = poisoned_locked(core, addr, len);
    pthread_mutex_unlock(&core->lock);
    return poisoned;
}

int tsr_core_hbm_read_check(TsrCore *core, uint64_t addr, uint64_t len,
                            uint64_t *bad)
{
    TsrFaults *f = &core->faults;
    bool ue = false, irq = false;

    pthread_mutex_lock(&core->lock);
    if (poisoned_locked(core, addr, len)) {
        ue = true;
        *bad = f->poison_addr > addr ? f->poison_addr - addr : 0;
        core->counters[TSR_CNT_ECC_UE]++;
        irq = tsr_core_latch_irq_locked(core, TSR_IRQ_ECC_UNCORRECTABLE);
    } else if (f->ecc_correctable) {
        f->ecc_correctable--;
        core->counters[TSR_CNT_ECC_CE]++;
        irq = tsr_core_latch_irq_locked(core, TSR_IRQ_ECC_CORRECTABLE);
    }
    pthread_mutex_unlock(&core->lock);
    if (irq) {
        tsr_core_irq(core, TSR_MSIX_VEC_DEVICE);
    }
    return ue ? -1 : 0;
}

void tsr_core_get_faults(TsrCore *core, TsrFaults *faults)
{
    pthread_mutex_lock(&core->lock);
    *faults = core->faults;
    pthread_mutex_unlock(&core->lock);
}

void tsr_core_set_faults(TsrCore *core, const TsrFaults *faults)
{
    uint32_t released;
    unsigned int q;

    pthread_mutex_lock(&core->lock);
    released = core->faults.hang_queues & ~faults->hang_queues;
    core->faults = *faults;
    core->faults.hang_queues &= (1u << core->cfg.num_queues) - 1;
    pthread_mutex_unlock(&core->lock);
    for (q = 0; q < core->cfg.num_queues; q++) {
        if (released & (1u << q)) {
            core->ops->kick_queue(core->opaque, q);
        }
    }
}

/*
 * Running jobs abort at their next step and still write their ABORTED
 * records and fences (the generation stays): the driver re-runs them after
 * the chip reset.  HEAD and the counters no longer move.
 */
void tsr_core_raise_fatal(TsrCore *core)
{
    bool irq;

    pthread_mutex_lock(&core->lock);
    core->fatal = true;
    irq = tsr_core_latch_irq_locked(core, TSR_IRQ_FATAL);
    pthread_mutex_unlock(&core->lock);
    tsr_core_wake_waiters(core);
    if (irq) {
        tsr_core_irq(core, TSR_MSIX_VEC_DEVICE);
    }
}

/*
 * What a register write leaves to do once the lock is dropped, and the
 * value it rejected, for the log.
 */
typedef struct TsrRegEffects {
    int kick;                   /* queue to kick, or -1 */
    int queue_event;            /* queue whose interrupt state changed */
    bool queue_reset;           /* ... or that was reset */
    bool device_irq;
    bool ping;
    bool reset;
    bool fatal;
    bool set_faults;
    TsrFaults faults;
    char rejected[TSR_GUEST_ERROR_LEN];
} TsrRegEffects;

static void __attribute__((format(printf, 2, 3)))
reject(TsrRegEffects *e, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(e->rejected, sizeof(e->rejected), fmt, ap);
    va_end(ap);
}

static void reject_write(TsrRegEffects *e, uint32_t offset, uint32_t value)
{
    reject(e, "write 0x%" PRIx32 " to read-only or reserved register 0x%"
           PRIx32 " ignored", value, offset);
}

static uint32_t debug_reg_read(TsrCore *core, uint32_t offset)
{
    const TsrFaults *f = &core->faults;

    if (!core->cfg.debug_regs) {
        return 0;
    }
    switch (offset) {
    case TSR_REG_DBG_HANG_QUEUES:
        return f->hang_queues;
    case TSR_REG_DBG_FAIL_DMA:
        return f->fail_dma;
    case TSR_REG_DBG_POISON_LO:
        return (uint32_t)f->poison_addr;
    case TSR_REG_DBG_POISON_HI:
        return f->poison_addr >> 32;
    case TSR_REG_DBG_POISON_SIZE:
        return (uint32_t)f->poison_size;
    case TSR_REG_DBG_ECC_CORRECTABLE:
        return f->ecc_correctable;
    case TSR_REG_DBG_DROP_IRQS:
        return f->drop_irqs;
    case TSR_REG_DBG_HANG_AFTER:
        return f->hang_after;
    default:
        return 0;
    }
}

/* Whether the debug block is there (debug-regs=on) to take a write. */
static bool debug_regs_on(TsrCore *core, uint32_t offset, uint32_t value,
                          TsrRegEffects *e)
{
    if (!core->cfg.debug_regs) {
        reject(e, "write 0x%" PRIx32 " to debug register 0x%" PRIx32
               " ignored: the debug block is off (debug-regs)",
               value, offset);
    }
    return core->cfg.debug_regs;
}

static void debug_reg_write(TsrCore *core, uint32_t offset, uint32_t value,
                            TsrRegEffects *e)
{
    TsrFaults *f = &e->faults;

    if (!debug_regs_on(core, offset, value, e)) {
        return;
    }
    *f = core->faults;
    e->set_faults = true;
    switch (offset) {
    case TSR_REG_DBG_HANG_QUEUES:
        f->hang_queues = value;
        break;
    case TSR_REG_DBG_FAIL_DMA:
        f->fail_dma = value;
        break;
    case TSR_REG_DBG_POISON_LO:
        f->poison_addr = (f->poison_addr & ~0xffffffffull) | value;
        break;
    case TSR_REG_DBG_POISON_HI:
        f->poison_addr = (f->poison_addr & 0xffffffffull) |
                         (uint64_t)value << 32;
        break;
    case TSR_REG_DBG_POISON_SIZE:
        f->poison_size = value;
        break;
    case TSR_REG_DBG_ECC_CORRECTABLE:
        f->ecc_correctable = value;
        break;
    case TSR_REG_DBG_DROP_IRQS:
        f->drop_irqs = value;
        break;
    case TSR_REG_DBG_HANG_AFTER:
        f->hang_after = value;
        break;
    case TSR_REG_DBG_FATAL:
        e->set_faults = false;
        e->fatal = value != 0;
        break;
    default:
        e->set_faults = false;
        reject_write(e, offset, value);
        break;
    }
}

/*
 * The link fault registers of the debug block.  The faults belong to the
 * links, under the ICI's lock, which is never taken inside the core's: these
 * registers are reached without the core's lock.
 */
#define DBG_LINK_STRIDE (TSR_REG_DBG_LINK_BASE(1) - TSR_REG_DBG_LINK_BASE(0))

static bool debug_link_block(uint32_t offset)
{
    return offset >= TSR_REG_DBG_LINK_BASE(0) &&
           offset < TSR_REG_DBG_LINK_BASE(TSR_ICI_MAX_PORTS);
}

static unsigned int debug_link_port(uint32_t offset)
{
    return (offset - TSR_REG_DBG_LINK_BASE(0)) / DBG_LINK_STRIDE;
}

static uint32_t debug_link_reg(uint32_t offset)
{
    return (offset - TSR_REG_DBG_LINK_BASE(0)) % DBG_LINK_STRIDE;
}

static uint32_t debug_link_read(TsrCore *core, uint32_t offset)
{
    TsrLinkFaults f;

    if (!core->cfg.debug_regs ||
        tsr_ici_get_faults(core->ici, debug_link_port(offset), &f)) {
        return 0;
    }
    switch (debug_link_reg(offset)) {
    case TSR_DREG_LINK_DROP_NEXT:
        return f.drop_next;
    case TSR_DREG_LINK_DROP_PPM:
        return f.drop_ppm;
    case TSR_DREG_LINK_CORRUPT_NEXT:
        return f.corrupt_next;
    case TSR_DREG_LINK_CORRUPT_PPM:
        return f.corrupt_ppm;
    case TSR_DREG_LINK_DROP_ACKS:
        return f.drop_acks_next;
    case TSR_DREG_LINK_DELAY_US:
        /* The host may have set a hold the register cannot show. */
        return tsr_min(f.delay_ns / 1000, UINT32_MAX);
    case TSR_DREG_LINK_SEED:
        return (uint32_t)f.seed;
    default:
        return 0;
    }
}

/* Set one field of a port's link faults. */
static void debug_link_write(TsrCore *core, uint32_t offset, uint32_t value,
                             TsrRegEffects *e)
{
    unsigned int port = debug_link_port(offset);
    TsrLinkFaults f = { 0 };
    unsigned int field;

    if (!debug_regs_on(core, offset, value, e)) {
        return;
    }
    switch (debug_link_reg(offset)) {
    case TSR_DREG_LINK_DROP_NEXT:
        f.drop_next = value;
        field = TSR_LINK_FAULT_DROP_NEXT;
        break;
    case TSR_DREG_LINK_DROP_PPM:
        f.drop_ppm = value;
        field = TSR_LINK_FAULT_DROP_PPM;
        break;
    case TSR_DREG_LINK_CORRUPT_NEXT:
        f.corrupt_next = value;
        field = TSR_LINK_FAULT_CORRUPT_NEXT;
        break;
    case TSR_DREG_LINK_CORRUPT_PPM:
        f.corrupt_ppm = value;
        field = TSR_LINK_FAULT_CORRUPT_PPM;
        break;
    case TSR_DREG_LINK_DROP_ACKS:
        f.drop_acks_next = value;
        field = TSR_LINK_FAULT_DROP_ACKS_NEXT;
        break;
    case TSR_DREG_LINK_DELAY_US:
        f.delay_ns = value * 1000ull;
        field = TSR_LINK_FAULT_DELAY;
        break;
    case TSR_DREG_LINK_SEED:
        f.seed = value;
        field = TSR_LINK_FAULT_SEED;
        break;
    default:
        reject_write(e, offset, value);
        return;
    }
    if ((field & (TSR_LINK_FAULT_DROP_PPM | TSR_LINK_FAULT_CORRUPT_PPM)) &&
        value > TSR_LINK_FAULT_MAX_PPM) {
        reject(e, "ICI port %u: link fault register 0x%" PRIx32 " <- %"
               PRIu32 " ignored: a rate is at most %u per million", port,
               offset, value, TSR_LINK_FAULT_MAX_PPM);
        return;
    }
    if (tsr_ici_set_faults(core->ici, port, &f, field)) {
        reject(e, "ICI port %u: link fault register 0x%" PRIx32 " <- 0x%"
               PRIx32 " ignored: the port has no socket", port, offset,
               value);
    }
}

bool tsr_core_latch_irq_locked(TsrCore *core, uint32_t bits)
{
    core->irq_status |= bits;
    return (core->irq_enable & bits) != 0;
}

uint64_t tsr_core_clock_locked(TsrCore *core)
{
    uint64_t clock = 0;
    unsigned int q;

    for (q = 0; q < core->cfg.num_queues; q++) {
        if (core->queue[q].clock > clock) {
            clock = core->queue[q].clock;
        }
    }
    return clock;
}

/* Read the low half of a 64-bit value and latch its high half. */
static uint32_t read_lo_latch(TsrCore *core, uint64_t value)
{
    core->latched_hi = value >> 32;
    return (uint32_t)value;
}

/* The SparseCore block: all zero on a chip without SparseCores. */
static uint32_t sc_config_reg(const TsrConfig *cfg, uint32_t offset, bool *hit)
{
    bool present = cfg->sparsecores;

    *hit = true;
    switch (offset) {
    case TSR_REG_SC_CORES:
        return cfg->sparsecores;
    case TSR_REG_SC_TILES:
        return present ? cfg->sc_tiles : 0;
    case TSR_REG_SC_SIMD_F32:
        return present ? cfg->sc_simd_f32 : 0;
    case TSR_REG_SC_SIMD_BF16:
        return present ? cfg->sc_simd_bf16 : 0;
    case TSR_REG_SC_SPMEM_KIB:
        return present ? cfg->sc_spmem_kib : 0;
    default:
        *hit = false;
        return 0;
    }
}

static uint32_t config_reg(const TsrConfig *cfg, uint32_t offset, bool *hit)
{
    *hit = true;
    switch (offset) {
    case TSR_REG_PRESET:
        return cfg->preset;
    case TSR_REG_TENSORCORES:
        return cfg->tensorcores;
    case TSR_REG_MXUS_PER_CORE:
        return cfg->mxus_per_core;
    case TSR_REG_MXU_DIM:
        return cfg->mxu_dim;
    case TSR_REG_VPU_SUBLANES:
        return cfg->vpu_sublanes;
    case TSR_REG_VPU_LANES:
        return cfg->vpu_lanes;
    case TSR_REG_VMEM_MIB:
        return cfg->vmem_mib;
    case TSR_REG_CLOCK_MHZ:
        return cfg->clock_mhz;
    case TSR_REG_HBM_SIZE_LO:
        return (uint32_t)cfg->hbm_size;
    case TSR_REG_HBM_SIZE_HI:
        return cfg->hbm_size >> 32;
    case TSR_REG_HBM_GBPS:
        return cfg->hbm_gbps;
    case TSR_REG_HOST_DMA_GBPS:
        return cfg->host_dma_gbps;
    case TSR_REG_NUM_QUEUES:
        return cfg->num_queues;
    case TSR_REG_MAX_CONTEXTS:
        return TSR_MAX_CONTEXTS;
    case TSR_REG_ICI_PORTS:
        return cfg->ici_ports;
    case TSR_REG_ICI_LINK_GBPS:
        return cfg->ici_link_gbps;
    case TSR_REG_ICI_LINK_LATENCY_NS:
        return cfg->ici_link_latency_ns;
    default:
        return sc_config_reg(cfg, offset, hit);
    }
}

static uint32_t queue_reg_read(TsrCore *core, uint32_t offset)
{
    unsigned int q = (offset - TSR_BLOCK_QUEUE) / TSR_QUEUE_STRIDE;
    TsrQueue *qu;

    if (q >= core->cfg.num_queues) {
        return 0;
    }
    qu = &core->queue[q];
    switch ((offset - TSR_BLOCK_QUEUE) % TSR_QUEUE_STRIDE) {
    case TSR_QREG_RING_BASE_LO:
        return (uint32_t)qu->ring_base;
    case TSR_QREG_RING_BASE_HI:
        return qu->ring_base >> 32;
    case TSR_QREG_RING_SIZE:
        return qu->ring_size;
    case TSR_QREG_CONTROL:
        return qu->control;
    case TSR_QREG_TAIL:
        return qu->tail;
    case TSR_QREG_HEAD:
        return qu->head;
    case TSR_QREG_STARTED:
        return qu->started;
    case TSR_QREG_STATUS:
        if (!(qu->control & TSR_QCTRL_ENABLE)) {
            return TSR_QSTATUS_DISABLED;
        }
        if (!qu->ring_size) {
            return TSR_QSTATUS_BAD_RING;
        }
        if (core->faults.hang_queues & (1u << q)) {
            return TSR_QSTATUS_HUNG;
        }
        return qu->running || qu->head != qu->tail ? TSR_QSTATUS_RUNNING
                                                   : TSR_QSTATUS_IDLE;
    case TSR_QREG_FENCE_ADDR_LO:
        return (uint32_t)qu->fence_addr;
    case TSR_QREG_FENCE_ADDR_HI:
        return qu->fence_addr >> 32;
    case TSR_QREG_FENCE_LO:
        return read_lo_latch(core, qu->fence);
    case TSR_QREG_FENCE_HI:
        return core->latched_hi;
    case TSR_QREG_JOBS_DONE:
        return qu->jobs_done;
    case TSR_QREG_JOBS_FAILED:
        return qu->jobs_failed;
    case TSR_QREG_IRQ_STATUS:
        return qu->irq_status;
    case TSR_QREG_IRQ_ENABLE:
        return qu->irq_enable;
    case TSR_QREG_LAST_ERROR:
        return qu->last_error;
    default:
        return 0;
    }
}

static bool valid_ring_size(uint32_t size)
{
    return size >= TSR_RING_SIZE_MIN && size <= TSR_RING_SIZE_MAX &&
           !(size & (size - 1));
}

/*
 * The ring cannot change while the queue is enabled or still runs a job
 * (a job of the current generation: one a reset aborted no longer counts),
 * so a running job always finds the ring it started from.
 */
static void ring_reg_write(TsrCore *core, unsigned int q, uint32_t reg,
                           uint32_t value, TsrRegEffects *e)
{
    TsrQueue *qu = &core->queue[q];

    if ((qu->control & TSR_QCTRL_ENABLE) || qu->running) {
        reject(e, "queue %u: ring register 0x%02" PRIx32 " <- 0x%" PRIx32
               " ignored: the queue is %s", q, reg, value,
               qu->running ? "running a job" : "enabled");
        return;
    }
    switch (reg) {
    case TSR_QREG_RING_BASE_LO:
        if (value & (TSR_RING_ALIGN - 1)) {
            reject(e, "queue %u: RING_BASE_LO 0x%" PRIx32 " is not %u-byte "
                   "aligned; low bits dropped", q, value, TSR_RING_ALIGN);
        }
        qu->ring_base = (qu->ring_base & ~0xffffffffull) |
                        (value & ~(uint32_t)(TSR_RING_ALIGN - 1));
        break;
    case TSR_QREG_RING_BASE_HI:
        qu->ring_base = (qu->ring_base & 0xffffffffull) |
                        (uint64_t)value << 32;
        break;
    default: /* TSR_QREG_RING_SIZE */
        if (!valid_ring_size(value)) {
            reject(e, "queue %u: RING_SIZE %" PRIu32 " is not a power of two "
                   "from %u to %u; the ring is invalid", q, value,
                   TSR_RING_SIZE_MIN, TSR_RING_SIZE_MAX);
        }
        qu->ring_size = valid_ring_size(value) ? value : 0;
        break;
    }
}

static void queue_control_write(TsrCore *core, unsigned int q, uint32_t value,
                                TsrRegEffects *e)
{
    TsrQueue *qu = &core->queue[q];

    if (value & ~(TSR_QCTRL_ENABLE | TSR_QCTRL_RESET)) {
        reject(e, "queue %u: CONTROL 0x%" PRIx32 " has unknown bits", q,
               value);
    }
    if (value & TSR_QCTRL_RESET) {
        core->faults.hang_queues &= ~(1u << q);
        qu->generation++;
        qu->head = 0;
        qu->tail = 0;
        qu->started = 0;
        qu->running = false;
        e->queue_event = q;
        e->queue_reset = true;
    }
    qu->control = value & TSR_QCTRL_ENABLE;
    if (qu->control && !qu->ring_size) {
        reject(e, "queue %u enabled without a valid ring (RING_SIZE 0)", q);
    }
    e->kick = qu->control ? (int)q : -1;
}

static void queue_reg_write(TsrCore *core, uint32_t offset, uint32_t value,
                            TsrRegEffects *e)
{
    unsigned int q = (offset - TSR_BLOCK_QUEUE) / TSR_QUEUE_STRIDE;
    uint32_t reg = (offset - TSR_BLOCK_QUEUE) % TSR_QUEUE_STRIDE;
    TsrQueue *qu;

    if (q >= core->cfg.num_queues) {
        reject(e, "write 0x%" PRIx32 " to register 0x%" PRIx32 " of queue %u "
               "ignored: the chip has %u queues", value, offset, q,
               core->cfg.num_queues);
        return;
    }
    qu = &core->queue[q];
    switch (reg) {
    case TSR_QREG_RING_BASE_LO:
    case TSR_QREG_RING_BASE_HI:
    case TSR_QREG_RING_SIZE:
        ring_reg_write(core, q, reg, value, e);
        break;
    case TSR_QREG_CONTROL:
        queue_control_write(core, q, value, e);
        break;
    case TSR_QREG_TAIL:
        if (value >= qu->ring_size) {
            reject(e, "queue %u: TAIL %" PRIu32 " ignored: RING_SIZE is %"
                   PRIu32, q, value, qu->ring_size);
            break;
        }
        qu->tail = value;
        e->kick = (qu->control & TSR_QCTRL_ENABLE) ? (int)q : -1;
        break;
    case TSR_QREG_FENCE_ADDR_LO:
        if (value & 7) {
            reject(e, "queue %u: FENCE_ADDR_LO 0x%" PRIx32 " is not 8-byte "
                   "aligned; low bits dropped", q, value);
        }
        qu->fence_addr = (qu->fence_addr & ~0xffffffffull) | (value & ~7u);
        break;
    case TSR_QREG_FENCE_ADDR_HI:
        qu->fence_addr = (qu->fence_addr & 0xffffffffull) |
                         (uint64_t)value << 32;
        break;
    case TSR_QREG_IRQ_STATUS:
        qu->irq_status &= ~value;
        break;
    case TSR_QREG_IRQ_ENABLE:
        qu->irq_enable = value & TSR_QIRQ_ALL;
        e->queue_event = q;
        break;
    default:
        reject_write(e, offset, value);
        break;
    }
}

static uint32_t mmu_reg_read(TsrCore *core, uint32_t offset)
{
    switch (offset) {
    case TSR_REG_MMU_CTX_TABLE_LO:
        return (uint32_t)core->mmu_ctx_table;
    case TSR_REG_MMU_CTX_TABLE_HI:
        return core->mmu_ctx_table >> 32;
    case TSR_REG_MMU_CTX_COUNT:
        return core->mmu_ctx_count;
    case TSR_REG_MMU_FAULT_CONTEXT:
        return core->mmu_fault_context;
    case TSR_REG_MMU_FAULT_VA_LO:
        return (uint32_t)core->mmu_fault_va;
    case TSR_REG_MMU_FAULT_VA_HI:
        return core->mmu_fault_va >> 32;
    case TSR_REG_MMU_FAULT_REASON:
        return core->mmu_fault_reason;
    case TSR_REG_MMU_FAULT_COUNT:
        return core->mmu_fault_count;
    default:
        return 0;
    }
}

static void mmu_reg_write(TsrCore *core, uint32_t offset, uint32_t value,
                          TsrRegEffects *e)
{
    switch (offset) {
    case TSR_REG_MMU_CTX_TABLE_LO:
        if (value & 0xfff) {
            reject(e, "MMU_CTX_TABLE_LO 0x%" PRIx32 " is not 4 KiB aligned; "
                   "low bits dropped", value);
        }
        core->mmu_ctx_table = (core->mmu_ctx_table & ~0xffffffffull) |
                              (value & ~0xfffu);
        break;
    case TSR_REG_MMU_CTX_TABLE_HI:
        core->mmu_ctx_table = (core->mmu_ctx_table & 0xffffffffull) |
                              (uint64_t)value << 32;
        break;
    case TSR_REG_MMU_CTX_COUNT:
        if (value > TSR_MAX_CONTEXTS) {
            reject(e, "MMU_CTX_COUNT %" PRIu32 " is above %u; no context is "
                   "valid", value, TSR_MAX_CONTEXTS);
        }
        core->mmu_ctx_count = value <= TSR_MAX_CONTEXTS ? value : 0;
        break;
    case TSR_REG_MMU_INVALIDATE:
        /*
         * Every running job drops its walk cache at its next translation;
         * dropping other contexts' too is allowed, and simpler.
         */
        __atomic_add_fetch(&core->mmu_generation, 1, __ATOMIC_RELEASE);
        break;
    default:
        reject_write(e, offset, value);
        break;
    }
}

static uint32_t global_reg_read(TsrCore *core, uint32_t offset)
{
    bool hit;
    uint32_t v = config_reg(&core->cfg, offset, &hit);

    if (hit) {
        return v;
    }
    switch (offset) {
    case TSR_REG_CHIP_ID:
        return TSR_CHIP_ID;
    case TSR_REG_DEVICE_VERSION:
        return TSR_VERSION(TSR_DEVICE_VERSION_MAJOR, TSR_DEVICE_VERSION_MINOR);
    case TSR_REG_CAPS:
        return TSR_CAP_BF16 | TSR_CAP_INT8 | TSR_CAP_ICI | TSR_CAP_VPU_I32 |
               TSR_CAP_TRACE | TSR_CAP_SEM_ABORT | TSR_CAP_SEM_LINKS |
               (core->cfg.sparsecores ? TSR_CAP_SPARSECORE : 0) |
               (core->cfg.debug_regs ? TSR_CAP_DEBUG_REGS : 0);
    case TSR_REG_SCRATCH:
        return core->scratch;
    case TSR_REG_STATUS:
        return core->fatal ? TSR_STATUS_FATAL : TSR_STATUS_READY;
    case TSR_REG_CLOCK_LO:
        return read_lo_latch(core, tsr_core_clock_locked(core));
    case TSR_REG_CLOCK_HI:
        return core->latched_hi;
    default:
        return 0;
    }
}

/* The ICI block has its own lock, taken before the core's, never inside. */
static bool ici_block(uint32_t offset)
{
    return offset >= TSR_BLOCK_ICI && offset < TSR_BLOCK_SPARSECORE;
}

uint32_t tsr_core_reg_read(TsrCore *core, uint32_t offset)
{
    uint32_t v = 0;

    if (ici_block(offset)) {
        return tsr_ici_reg_read(core->ici, offset);
    }
    if (debug_link_block(offset)) {
        return debug_link_read(core, offset);
    }
    pthread_mutex_lock(&core->lock);
    if (offset < TSR_BLOCK_IRQ) {
        v = global_reg_read(core, offset);
    } else if (offset < TSR_BLOCK_QUEUE) {
        switch (offset) {
        case TSR_REG_IRQ_STATUS:
            v = core->irq_status;
            break;
        case TSR_REG_IRQ_ENABLE:
            v = core->irq_enable;
            break;
        case TSR_REG_PING_ACK:
            v = core->ping_ack;
            break;
        case TSR_REG_PING_COUNT:
            v = core->ping_count;
            break;
        }
    } else if (offset < TSR_BLOCK_MMU) {
        v = queue_reg_read(core, offset);
    } else if (offset < TSR_BLOCK_COUNTERS) {
        v = mmu_reg_read(core, offset);
    } else if (offset < TSR_BLOCK_COUNTERS + 8 * TSR_CNT_COUNT) {
        unsigned int i = (offset - TSR_BLOCK_COUNTERS) / 8;

        v = offset % 8 ? core->latched_hi
                       : read_lo_latch(core, core->counters[i]);
    } else if (offset >= TSR_BLOCK_DEBUG && offset < TSR_BLOCK_DEBUG + 0x1000) {
        v = debug_reg_read(core, offset);
    } else if (offset >= TSR_BLOCK_SPARSECORE) {
        bool hit;

        v = sc_config_reg(&core->cfg, offset, &hit);
    }
    pthread_mutex_unlock(&core->lock);
    return v;
}

static void global_reg_write(TsrCore *core, uint32_t offset, uint32_t value,
                             TsrRegEffects *e)
{
    switch (offset) {
    case TSR_REG_SCRATCH:
        core->scratch = value;
        break;
    case TSR_REG_RESET:
        e->reset = value == TSR_RESET_MAGIC;
        if (!e->reset) {
            reject(e, "RESET 0x%" PRIx32 " ignored: not the magic value",
                   value);
        }
        break;
    case TSR_REG_IRQ_STATUS:
        core->irq_status &= ~value;
        break;
    case TSR_REG_IRQ_ENABLE:
        core->irq_enable = value & TSR_IRQ_ALL;
        /* A cause latched while disabled is delivered once enabled. */
        e->device_irq = (core->irq_status & core->irq_enable) != 0;
        break;
    case TSR_REG_PING:
        /* Like a real doorbell: the write returns, the interrupt follows. */
        core->ping_cookie = value;
        core->ping_pending = true;
        e->ping = true;
        break;
    default:
        reject_write(e, offset, value);
        break;
    }
}

/* A queue's interrupt state or generation changed. */
static void queue_event(TsrCore *core, unsigned int q, bool reset)
{
    bool raise;

    if (reset) {
        tsr_queue_fence_writes(core, q);
    }
    pthread_mutex_lock(&core->lock);
    raise = core->queue[q].irq_status & core->queue[q].irq_enable;
    pthread_mutex_unlock(&core->lock);
    if (raise) {
        tsr_core_irq(core, TSR_MSIX_VEC_QUEUE(q));
    }
    /* A queue reset must reach a job blocked on a semaphore. */
    if (reset) {
        tsr_core_wake_waiters(core);
    }
}

/* The registers under the core's lock. */
static void core_reg_write(TsrCore *core, uint32_t offset, uint32_t value,
                           TsrRegEffects *e)
{
    pthread_mutex_lock(&core->lock);
    if (offset < TSR_BLOCK_QUEUE) {
        global_reg_write(core, offset, value, e);
    } else if (offset < TSR_BLOCK_MMU) {
        queue_reg_write(core, offset, value, e);
    } else if (offset < TSR_BLOCK_COUNTERS) {
        mmu_reg_write(core, offset, value, e);
    } else if (offset >= TSR_BLOCK_DEBUG &&
               offset < TSR_BLOCK_DEBUG + 0x1000) {
        debug_reg_write(core, offset, value, e);
    } else {
        reject_write(e, offset, value);
    }
    pthread_mutex_unlock(&core->lock);
}

void tsr_core_reg_write(TsrCore *core, uint32_t offset, uint32_t value)
{
    TsrRegEffects e = { .kick = -1, .queue_event = -1 };

    if (ici_block(offset)) {
        if (!tsr_ici_reg_write(core->ici, offset, value)) {
            tsr_core_guest_error(core, "ICI register 0x%x: write 0x%x refused "
                                 "(read-only, reserved, unknown bits or no "
                                 "port)", offset, value);
        }
        return;
    }
    if (debug_link_block(offset)) {
        debug_link_write(core, offset, value, &e);
    } else {
        core_reg_write(core, offset, value, &e);
    }

    if (e.rejected[0]) {
        tsr_core_guest_error(core, "%s", e.rejected);
    }
    if (e.set_faults) {
        tsr_core_set_faults(core, &e.faults);
    }
    if (e.fatal) {
        tsr_core_raise_fatal(core);
    }
    if (e.reset) {
        tsr_core_reset(core);
    }
    if (e.device_irq) {
        tsr_core_irq(core, TSR_MSIX_VEC_DEVICE);
    }
    if (e.queue_event >= 0) {
        queue_event(core, e.queue_event, e.queue_reset);
    }
    if (e.ping) {
        core->ops->schedule(core->opaque);
    }
    if (e.kick >= 0) {
        core->ops->kick_queue(core->opaque, e.kick);
    }
}

void tsr_core_run(TsrCore *core)
{
    bool irq = false;

    pthread_mutex_lock(&core->lock);
    if (core->ping_pending) {
        core->ping_pending = false;
        core->ping_ack = core->ping_cookie;
        core->ping_count++;
        irq = tsr_core_latch_irq_locked(core, TSR_IRQ_PING);
    }
    pthread_mutex_unlock(&core->lock);
    if (irq) {
        tsr_core_irq(core, TSR_MSIX_VEC_DEVICE);
    }
}
