/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera command processor: hardware queues, jobs, completion.
 *
 * A queue's worker takes descriptors from the ring in order.  For each it
 * opens the job's context, fetches the command buffer through the MMU,
 * runs the commands, then writes the completion record, the fence, and
 * raises the queue's interrupt.  A failing job stops at its failing
 * command and the queue goes on with the next job.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <endian.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera-internal.h"

/* Fixed cost of starting a job: descriptor fetch, context switch. */
#define TSR_JOB_LAUNCH_CYCLES 500

bool tsr_queue_aborted(TsrCore *core, unsigned int queue, uint32_t generation)
{
    bool aborted;

    pthread_mutex_lock(&core->lock);
    aborted = core->queue[queue].generation != generation ||
              !(core->queue[queue].control & TSR_QCTRL_ENABLE) ||
              core->fatal;
    pthread_mutex_unlock(&core->lock);
    return aborted;
}

bool tsr_job_write_begin(TsrCore *core, unsigned int queue,
                         uint32_t generation)
{
    bool live;

    pthread_mutex_lock(&core->write_lock[queue]);
    pthread_mutex_lock(&core->lock);
    live = core->queue[queue].generation == generation;
    pthread_mutex_unlock(&core->lock);
    if (!live) {
        pthread_mutex_unlock(&core->write_lock[queue]);
    }
    return live;
}

void tsr_job_write_end(TsrCore *core, unsigned int queue)
{
    pthread_mutex_unlock(&core->write_lock[queue]);
}

void tsr_queue_fence_writes(TsrCore *core, unsigned int queue)
{
    pthread_mutex_lock(&core->write_lock[queue]);
    pthread_mutex_unlock(&core->write_lock[queue]);
}

bool tsr_mem_aborted(TsrMem *mem)
{
    return tsr_queue_aborted(mem->core, mem->queue, mem->generation);
}

bool tsr_core_queue_pending(TsrCore *core, unsigned int queue)
{
    TsrQueue *qu = &core->queue[queue];
    bool pending;

    pthread_mutex_lock(&core->lock);
    pending = (qu->control & TSR_QCTRL_ENABLE) && qu->ring_size &&
              qu->head != qu->tail && !core->fatal &&
              !(core->faults.hang_queues & (1u << queue));
    pthread_mutex_unlock(&core->lock);
    return pending;
}

static bool job_trace_valid(const struct tsr_job_desc *d)
{
    if (!(d->flags & TSR_JOB_TRACE)) {
        return !d->trace_va && !d->trace_size;
    }
    return d->trace_va % 8 == 0 && d->trace_size % 8 == 0 &&
           d->trace_size >= sizeof(struct tsr_trace_header) &&
           d->trace_size <= TSR_TRACE_MAX_SIZE;
}

static bool job_desc_valid(const struct tsr_job_desc *d)
{
    return !(d->flags & ~TSR_JOB_FLAGS_ALL) && job_trace_valid(d) &&
           !d->reserved[0] && !d->reserved[1] &&
           d->cmdbuf_size && d->cmdbuf_size % 8 == 0 &&
           d->cmdbuf_size <= TSR_MAX_CMDBUF_SIZE;
}

/* Where a traced job's records go (TSR_JOB_TRACE). */
typedef struct TsrTrace {
    uint64_t va;            /* 0: the job is not traced */
    uint32_t capacity;
    uint32_t records;
    uint32_t dropped;
} TsrTrace;

/*
 * Append the record of command @index, which ran from @start to @end and
 * ended with @err, to the job's trace; -1 if the write failed.
 */
static int trace_command(TsrMem *mem, TsrTrace *trace,
                         const struct tsr_cmd_header *hdr, uint32_t index,
                         uint64_t start, uint64_t end, uint32_t err)
{
    struct tsr_trace_record r = {
        .index = htole32(index),
        .opcode = hdr->opcode,
        .engine = tsr_cmd_engine(hdr->opcode),
        .port = mem->ici_port,
        .error = htole32(err),
        .start_cycle = htole64(start),
        .end_cycle = htole64(end),
        .mem_bytes = htole64(mem->host_bytes + mem->hbm_bytes),
        .link_bytes = htole64(mem->link_bytes),
        .link_start_cycle = htole64(mem->link_start),
        .link_end_cycle = htole64(mem->link_end),
    };
    const TsrCore *core = mem->core;
    uint64_t va;

    if (hdr->opcode == TSR_OP_ICI_WRITE) {
        memcpy(r.dst, ((const struct tsr_cmd_ici_write *)hdr)->dst,
               sizeof(r.dst));
    }
    if (core->ops->trace_command) {
        core->ops->trace_command(core->opaque, mem->queue, mem->context, &r);
    }
    if (!trace->va) {
        return 0;
    }
    if (trace->records == trace->capacity) {
        trace->dropped++;
        return 0;
    }
    va = trace->va + sizeof(struct tsr_trace_header) +
         (uint64_t)trace->records * sizeof(r);
    if (tsr_mem_write(mem, va, &r, sizeof(r))) {
        return -1;
    }
    trace->records++;
    return 0;
}

/* The trace's header, last: it says the records before it are complete. */
static void trace_finish(TsrMem *mem, const TsrTrace *trace,
                         const struct tsr_completion *comp)
{
    struct tsr_trace_header h = {
        .records = htole32(trace->records),
        .dropped = htole32(trace->dropped),
        .record_size = htole32(sizeof(struct tsr_trace_record)),
        .queue = htole32(mem->queue),
        .start_cycle = htole64(comp->start_cycle),
        .end_cycle = htole64(comp->end_cycle),
    };

    if (trace->va && mem->root) {
        mem->error = 0;
        tsr_mem_write(mem, trace->va, &h, sizeof(h));
    }
}

/*
 * Command @index failed with @err: the job's error, unless a write before
 * it turns out to have failed first.
 */
static void fail_command(TsrMem *mem, struct tsr_completion *comp,
                         uint32_t err, uint32_t index)
{
    uint32_t earlier;

    comp->error = err;
    comp->failed_cmd = mem->failed_cmd != TSR_NO_COMMAND ?
                       mem->failed_cmd : index;
    comp->fault_va = mem->fault_va;
    mem->failed_cmd = TSR_NO_COMMAND;
    earlier = tsr_ici_job_end(mem);
    if (earlier && mem->failed_cmd < comp->failed_cmd) {
        comp->error = earlier;
        comp->failed_cmd = mem->failed_cmd;
        comp->fault_va = 0;
    }
}

/*
 * The fault hang-after: the job makes no more progress, as if a command
 * never ended, until a reset or a fatal error aborts it.  Polled: a hung
 * worker costs a wake-up a millisecond.
 */
static void hang(TsrMem *mem)
{
    const struct timespec ms = { .tv_nsec = 1000000 };

    while (!tsr_mem_aborted(mem)) {
        nanosleep(&ms, NULL);
    }
}

/*
 * Run the commands of a job; fills the error fields of @comp.  A job
 * given the hang-after fault hangs before its command @hang_at (after
 * @hang_at commands), or before it ends if it has no more commands.
 */
static void run_commands(TsrMem *mem, const uint8_t *buf, uint32_t size,
                         uint32_t hang_at, TsrCost *cost, TsrTrace *trace,
                         struct tsr_completion *comp)
{
    TsrCore *core = mem->core;
    uint32_t off = 0, index = 0, err;

    while (off < size) {
        const struct tsr_cmd_header *hdr = (const void *)(buf + off);
        uint32_t len = hdr->size_qw * 8u;
        uint64_t start = tsr_cost_now(cost);

        mem->command = index;
        mem->failed_cmd = TSR_NO_COMMAND;
        mem->host_bytes = 0;
        mem->hbm_bytes = 0;
        mem->ici_port = TSR_TRACE_NO_PORT;
        mem->link_bytes = 0;
        mem->link_start = mem->link_end = 0;
        if (hang_at && index == hang_at) {
            hang(mem);
        }
        if (!len || len > size - off) {
            err = TSR_ERR_BAD_SIZE;
        } else if (tsr_mem_aborted(mem)) {
            err = TSR_ERR_ABORTED;
        } else {
            err = tsr_cmd_execute(mem, hdr, len, cost);
        }
        if (trace_command(mem, trace, hdr, index, start, tsr_cost_now(cost),
                          err) && !err) {
            err = mem->error;
        }
        if (err) {
            fail_command(mem, comp, err, index);
            return;
        }
        off += len;
        index++;
    }
    if (hang_at && index <= hang_at) {
        hang(mem);
        comp->error = TSR_ERR_ABORTED;
        return;
    }
    /* Writes the queue went on past: wait for their answers. */
    err = tsr_ici_job_end(mem);
    if (err) {
        comp->error = err;
        comp->failed_cmd = mem->failed_cmd;
        return;
    }
    pthread_mutex_lock(&core->lock);
    if (core->queue[mem->queue].generation == mem->generation) {
        core->counters[TSR_CNT_COMMANDS] += index;
    }
    pthread_mutex_unlock(&core->lock);
}

/*
 * Mark job @d's completion record RUNNING before its first command: memory
 * outlives a reset that wipes the chip's registers, STARTED included, so a
 * driver recovering from one it did not make can still tell a job that
 * had started from one the queue never took.  A record the chip cannot
 * write is no fault of the job's: the record at its end fails again and
 * says so.
 */
static void record_start(TsrMem *mem, const struct tsr_job_desc *d)
{
    struct tsr_completion rec = {
        .status = htole32(TSR_JOB_STATUS_RUNNING),
        .failed_cmd = htole32(TSR_NO_COMMAND),
        .fence = htole64(d->fence),
    };

    if (!d->completion_va) {
        return;
    }
    tsr_mem_write(mem, d->completion_va, &rec, sizeof(rec));
    mem->error = 0;
    mem->fault_va = 0;
    mem->host_bytes = 0;
    mem->hbm_bytes = 0;
}

/*
 * Run job @d and fill @comp.  @mem is left open on the job's context when
 * the context is valid, for writing the completion record.  @hang_at: as
 * for run_commands().
 */
static void run_job(const struct tsr_job_desc *d, TsrMem *mem,
                    uint32_t hang_at, TsrCost *cost, TsrTrace *trace,
                    struct tsr_completion *comp)
{
    uint32_t err;
    uint8_t *buf;

    comp->failed_cmd = TSR_NO_COMMAND;
    /* The context first: with it, even a bad descriptor gets its record. */
    err = tsr_mmu_open(mem, d->context);
    if (err) {
        comp->error = err;
        return;
    }
    if (!job_desc_valid(d)) {
        comp->error = TSR_ERR_BAD_JOB;
        return;
    }
    /* A trace buffer the chip could not write fails the job up front. */
    if ((d->flags & TSR_JOB_TRACE) &&
        tsr_mem_check_write(mem, d->trace_va, d->trace_size)) {
        comp->error = mem->error;
        comp->fault_va = mem->fault_va;
        return;
    }
    if (d->flags & TSR_JOB_TRACE) {
        trace->va = d->trace_va;
        trace->capacity = TSR_TRACE_CAPACITY(d->trace_size);
    }
    record_start(mem, d);
    buf = malloc(d->cmdbuf_size);
    if (!buf) {
        comp->error = TSR_ERR_TOO_LARGE;
        return;
    }
    if (tsr_mem_read(mem, d->cmdbuf_va, buf, d->cmdbuf_size)) {
        comp->error = mem->error;
        comp->fault_va = mem->fault_va;
    } else {
        run_commands(mem, buf, d->cmdbuf_size, hang_at, cost, trace, comp);
    }
    free(buf);
}

static void desc_from_le(struct tsr_job_desc *d)
{
    d->context = le32toh(d->context);
    d->flags = le32toh(d->flags);
    d->cmdbuf_va = le64toh(d->cmdbuf_va);
    d->cmdbuf_size = le32toh(d->cmdbuf_size);
    d->trace_size = le32toh(d->trace_size);
    d->completion_va = le64toh(d->completion_va);
    d->fence = le64toh(d->fence);
    d->trace_va = le64toh(d->trace_va);
}

static void completion_to_le(struct tsr_completion *c)
{
    c->status = htole32(c->status);
    c->error = htole32(c->error);
    c->failed_cmd = htole32(c->failed_cmd);
    c->fault_va = htole64(c->fault_va);
    c->fence = htole64(c->fence);
    c->start_cycle = htole64(c->start_cycle);
    c->end_cycle = htole64(c->end_cycle);
    c->mxu_cycles = htole64(c->mxu_cycles);
    c->vpu_cycles = htole64(c->vpu_cycles);
    c->dma_cycles = htole64(c->dma_cycles);
}

static bool is_memory_error(uint32_t err)
{
    return err == TSR_ERR_MMU_UNMAPPED || err == TSR_ERR_MMU_PERMISSION;
}

/* Where the job stood in its queue when it started. */
typedef struct TsrSlot {
    unsigned int queue;
    uint32_t generation;
    uint64_t ring_base;
    uint32_t ring_size;
    uint32_t index;
    uint64_t start;         /* the queue's clock */
    uint64_t fence_addr;
    uint32_t hang_at;       /* the fault hang-after, taken by this job */
} TsrSlot;

/*
 * Account for a finished job and publish it; returns the vectors to raise.
 * @d is NULL when the descriptor could not be read.  Sets @published
 * unless a reset or a fatal error came first: then the job is gone
 * without trace.
 */
static unsigned int finish_job(TsrCore *core, const TsrSlot *slot,
                               const struct tsr_job_desc *d,
                               const struct tsr_completion *comp,
                               const TsrCost *cost, bool *published)
{
    TsrQueue *qu = &core->queue[slot->queue];
    unsigned int vectors = 0;
    uint32_t causes = 0;

    pthread_mutex_lock(&core->lock);
    *published = qu->generation == slot->generation && !core->fatal;
    if (!*published) {
        pthread_mutex_unlock(&core->lock);
        return 0;
    }
    /* The ring size the job came from: the register may be 0 by now. */
    qu->head = (slot->index + 1) % slot->ring_size;
    qu->clock = comp->end_cycle;
    if (d) {
        qu->fence = d->fence;
    }
    core->counters[TSR_CNT_JOBS]++;
    core->counters[TSR_CNT_MXU_BUSY] += cost->mxu;
    core->counters[TSR_CNT_VPU_BUSY] += cost->vpu;
    core->counters[TSR_CNT_DMA_BUSY] += cost->dma;
    core->counters[TSR_CNT_SC_BUSY] += cost->sc;
    if (comp->error) {
        qu->jobs_failed++;
        qu->last_error = comp->error;
        causes = TSR_QIRQ_JOB_ERROR;
        if (d && is_memory_error(comp->error)) {
            core->mmu_fault_context = d->context;
            core->mmu_fault_va = comp->fault_va;
            core->mmu_fault_reason = comp->error;
            core->mmu_fault_count++;
            if (tsr_core_latch_irq_locked(core, TSR_IRQ_MMU_FAULT)) {
                vectors |= 1u << TSR_MSIX_VEC_DEVICE;
            }
        }
    } else {
        qu->jobs_done++;
        if (d->flags & TSR_JOB_IRQ) {
            causes = TSR_QIRQ_JOB_DONE;
        }
    }
    qu->irq_status |= causes;
    if (qu->irq_enable & causes) {
        vectors |= 1u << TSR_MSIX_VEC_QUEUE(slot->queue);
    }
    pthread_mutex_unlock(&core->lock);
    return vectors;
}

static const char *error_name(uint32_t error)
{
    static const char *const names[TSR_ERR_COUNT] = {
        [TSR_ERR_BAD_OPCODE] = "BAD_OPCODE",
        [TSR_ERR_BAD_SIZE] = "BAD_SIZE",
        [TSR_ERR_BAD_FLAGS] = "BAD_FLAGS",
        [TSR_ERR_RESERVED] = "RESERVED",
        [TSR_ERR_BAD_DTYPE] = "BAD_DTYPE",
        [TSR_ERR_BAD_SHAPE] = "BAD_SHAPE",
        [TSR_ERR_BAD_STRIDE] = "BAD_STRIDE",
        [TSR_ERR_BAD_ALIGNMENT] = "BAD_ALIGNMENT",
        [TSR_ERR_BAD_OP] = "BAD_OP",
        [TSR_ERR_MMU_UNMAPPED] = "MMU_UNMAPPED",
        [TSR_ERR_MMU_PERMISSION] = "MMU_PERMISSION",
        [TSR_ERR_BAD_CONTEXT] = "BAD_CONTEXT",
        [TSR_ERR_DMA] = "DMA",
        [TSR_ERR_ECC] = "ECC",
        [TSR_ERR_BAD_JOB] = "BAD_JOB",
        [TSR_ERR_ABORTED] = "ABORTED",
        [TSR_ERR_TOO_LARGE] = "TOO_LARGE",
        [TSR_ERR_ID_RANGE] = "ID_RANGE",
        [TSR_ERR_MAX_IDS] = "MAX_IDS",
        [TSR_ERR_MAX_UNIQUE_IDS] = "MAX_UNIQUE_IDS",
        [TSR_ERR_SPMEM] = "SPMEM",
    };

    return error < TSR_ERR_COUNT && names[error] ? names[error] : "?";
}

static void report_failure(TsrCore *core, const TsrSlot *slot,
                           const struct tsr_completion *comp)
{
    char where[32] = "before its first command";

    if (comp->failed_cmd != TSR_NO_COMMAND) {
        snprintf(where, sizeof(where), "at command %" PRIu32,
                 comp->failed_cmd);
    }
    tsr_core_guest_error(core, "queue %u: job in ring slot %" PRIu32
                         " failed with %s (%" PRIu32 ") %s, VA 0x%" PRIx64,
                         slot->queue, slot->index, error_name(comp->error),
                         comp->error, where, (uint64_t)comp->fault_va);
}

/* Write the fence, unless a reset made the job stale. */
static void write_fence(TsrCore *core, const TsrSlot *slot, uint64_t fence)
{
    uint64_t le = htole64(fence);

    if (tsr_job_write_begin(core, slot->queue, slot->generation)) {
        tsr_core_dma_write(core, slot->fence_addr, &le, sizeof(le));
        tsr_job_write_end(core, slot->queue);
    }
}

/* The descriptor of @slot's job; -1 when it cannot be read. */
static int read_desc(TsrCore *core, const TsrSlot *slot,
                     struct tsr_job_desc *d)
{
    uint64_t addr;

    if (!tsr_add(slot->ring_base, (uint64_t)slot->index * sizeof(*d), &addr) ||
        tsr_core_dma_read(core, addr, d, sizeof(*d))) {
        return -1;
    }
    desc_from_le(d);
    return 0;
}

/* Run the job in @slot and publish its outcome. */
static void process_one(TsrCore *core, const TsrSlot *slot)
{
    struct tsr_completion comp = { 0 };
    struct tsr_job_desc d = { 0 };
    TsrCost cost = { .start = slot->start + TSR_JOB_LAUNCH_CYCLES };
    TsrTrace trace = { 0 };
    unsigned int vectors, v;
    TsrMem mem;
    bool have_desc = false, published;

    tsr_mem_init(&mem, core, slot->queue, slot->generation);
    if (read_desc(core, slot, &d)) {
        /* Without its descriptor the job has no fence and no record. */
        comp.error = TSR_ERR_DMA;
        comp.failed_cmd = TSR_NO_COMMAND;
    } else {
        have_desc = true;
        run_job(&d, &mem, slot->hang_at, &cost, &trace, &comp);
    }

    comp.status = comp.error ? TSR_JOB_STATUS_ERROR : TSR_JOB_STATUS_DONE;
    comp.fence = d.fence;
    comp.start_cycle = slot->start;
    /* A job ends once what its ICI_WRITEs posted has left, too. */
    comp.end_cycle = tsr_max(tsr_cost_now(&cost), tsr_cost_ici_end(&cost));
    comp.mxu_cycles = cost.mxu;
    comp.vpu_cycles = cost.vpu;
    comp.dma_cycles = cost.dma;

    /*
     * Trace header, completion record, then fence, then interrupt: in that
     * order.  The writes are cut off by a reset (tsr_job_write_begin()).
     */
    trace_finish(&mem, &trace, &comp);
    if (d.completion_va && mem.root) {
        struct tsr_completion le = comp;

        completion_to_le(&le);
        mem.error = 0;
        tsr_mem_write(&mem, d.completion_va, &le, sizeof(le));
    }
    if (slot->fence_addr && have_desc) {
        write_fence(core, slot, d.fence);
    }
    vectors = finish_job(core, slot, have_desc ? &d : NULL, &comp, &cost,
                         &published);
    if (published && comp.error) {
        report_failure(core, slot, &comp);
    }
    if (core->ops->trace_job) {
        core->ops->trace_job(core->opaque, slot->queue, slot->index,
                             d.context, &comp);
    }
    for (v = 0; v < TSR_MSIX_VECTORS; v++) {
        if (vectors & (1u << v)) {
            tsr_core_irq(core, v);
        }
    }
}

void tsr_core_queue_run(TsrCore *core, unsigned int queue)
{
    TsrQueue *qu = &core->queue[queue];

    for (;;) {
        TsrSlot slot = { .queue = queue };

        pthread_mutex_lock(&core->lock);
        if (!(qu->control & TSR_QCTRL_ENABLE) || !qu->ring_size ||
            qu->head == qu->tail || core->fatal ||
            (core->faults.hang_queues & (1u << queue))) {
            qu->running = false;
            pthread_mutex_unlock(&core->lock);
            return;
        }
        qu->running = true;
        slot.generation = qu->generation;
        slot.ring_base = qu->ring_base;
        slot.ring_size = qu->ring_size;
        slot.index = qu->head;
        qu->started = (qu->head + 1) % qu->ring_size;
        slot.start = qu->clock;
        slot.fence_addr = qu->fence_addr;
        slot.hang_at = core->faults.hang_after;
        core->faults.hang_after = 0;
        pthread_mutex_unlock(&core->lock);

        process_one(core, &slot);
    }
}
