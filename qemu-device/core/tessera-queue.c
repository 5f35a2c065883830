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
#include <stdlib.h>
#include <string.h>

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

static bool job_desc_valid(const struct tsr_job_desc *d)
{
    return !(d->flags & ~TSR_JOB_FLAGS_ALL) && !d->reserved0 &&
           !d->reserved[0] && !d->reserved[1] && !d->reserved[2] &&
           d->cmdbuf_size && d->cmdbuf_size % 8 == 0 &&
           d->cmdbuf_size <= TSR_MAX_CMDBUF_SIZE;
}

/* Run the commands of a job; fills the error fields of @comp. */
static void run_commands(TsrMem *mem, unsigned int queue, uint32_t generation,
                         const uint8_t *buf, uint32_t size, TsrCost *cost,
                         struct tsr_completion *comp)
{
    uint32_t off = 0, index = 0;

    while (off < size) {
        const struct tsr_cmd_header *hdr = (const void *)(buf + off);
        uint32_t len = hdr->size_qw * 8u;
        uint32_t err;

        if (!len || len > size - off) {
            err = TSR_ERR_BAD_SIZE;
        } else if (tsr_queue_aborted(mem->core, queue, generation)) {
            err = TSR_ERR_ABORTED;
        } else {
            mem->host_bytes = 0;
            mem->hbm_bytes = 0;
            err = tsr_cmd_execute(mem, queue, generation, hdr, len, cost);
        }
        if (err) {
            comp->error = err;
            comp->failed_cmd = index;
            comp->fault_va = mem->fault_va;
            return;
        }
        off += len;
        index++;
    }
    pthread_mutex_lock(&mem->core->lock);
    mem->core->counters[TSR_CNT_COMMANDS] += index;
    pthread_mutex_unlock(&mem->core->lock);
}

/*
 * Run job @d and fill @comp.  @mem is left open on the job's context when
 * the context is valid, for writing the completion record.
 */
static void run_job(TsrCore *core, unsigned int queue, uint32_t generation,
                    const struct tsr_job_desc *d, TsrMem *mem,
                    TsrCost *cost, struct tsr_completion *comp)
{
    uint32_t err;
    uint8_t *buf;

    comp->failed_cmd = TSR_NO_COMMAND;
    /* The context first: with it, even a bad descriptor gets its record. */
    err = tsr_mmu_open(core, d->context, mem);
    if (err) {
        comp->error = err;
        return;
    }
    if (!job_desc_valid(d)) {
        comp->error = TSR_ERR_BAD_JOB;
        return;
    }
    buf = malloc(d->cmdbuf_size);
    if (!buf) {
        comp->error = TSR_ERR_TOO_LARGE;
        return;
    }
    if (tsr_mem_read(mem, d->cmdbuf_va, buf, d->cmdbuf_size)) {
        comp->error = mem->error;
        comp->fault_va = mem->fault_va;
    } else {
        run_commands(mem, queue, generation, buf, d->cmdbuf_size, cost,
                     comp);
    }
    free(buf);
}

static void desc_from_le(struct tsr_job_desc *d)
{
    d->context = le32toh(d->context);
    d->flags = le32toh(d->flags);
    d->cmdbuf_va = le64toh(d->cmdbuf_va);
    d->cmdbuf_size = le32toh(d->cmdbuf_size);
    d->completion_va = le64toh(d->completion_va);
    d->fence = le64toh(d->fence);
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

/*
 * Account for a finished job and publish it; returns the vectors to raise.
 * @d is NULL when the descriptor could not be read.
 */
static unsigned int finish_job(TsrCore *core, unsigned int queue,
                               uint32_t generation, uint32_t index,
                               const struct tsr_job_desc *d,
                               const struct tsr_completion *comp,
                               const TsrCost *cost)
{
    TsrQueue *qu = &core->queue[queue];
    unsigned int vectors = 0;
    uint32_t causes = 0;

    pthread_mutex_lock(&core->lock);
    if (qu->generation != generation) {
        /* The queue was reset under the job: it is gone without trace. */
        pthread_mutex_unlock(&core->lock);
        return 0;
    }
    qu->head = (index + 1) % qu->ring_size;
    qu->clock = comp->end_cycle;
    if (d) {
        qu->fence = d->fence;
    }
    core->counters[TSR_CNT_JOBS]++;
    core->counters[TSR_CNT_MXU_BUSY] += cost->mxu;
    core->counters[TSR_CNT_VPU_BUSY] += cost->vpu;
    core->counters[TSR_CNT_DMA_BUSY] += cost->dma;
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
        vectors |= 1u << TSR_MSIX_VEC_QUEUE(queue);
    }
    pthread_mutex_unlock(&core->lock);
    return vectors;
}

/* Run the job at ring slot @index and publish its outcome. */
static void process_one(TsrCore *core, unsigned int queue, uint32_t generation,
                        uint64_t ring_base, uint32_t index, uint64_t start,
                        uint64_t fence_addr)
{
    struct tsr_completion comp = { 0 };
    struct tsr_job_desc d = { 0 };
    TsrCost cost = { .start = start + TSR_JOB_LAUNCH_CYCLES };
    unsigned int vectors, v;
    TsrMem mem = { .core = core };
    bool have_desc = false;

    if (tsr_core_dma_read(core, ring_base + index * sizeof(d),
                          &d, sizeof(d))) {
        /* Without its descriptor the job has no fence and no record. */
        comp.error = TSR_ERR_DMA;
        comp.failed_cmd = TSR_NO_COMMAND;
    } else {
        have_desc = true;
        desc_from_le(&d);
        run_job(core, queue, generation, &d, &mem, &cost, &comp);
    }

    comp.status = comp.error ? TSR_JOB_STATUS_ERROR : TSR_JOB_STATUS_DONE;
    comp.fence = d.fence;
    comp.start_cycle = start;
    comp.end_cycle = tsr_cost_now(&cost);
    comp.mxu_cycles = cost.mxu;
    comp.vpu_cycles = cost.vpu;
    comp.dma_cycles = cost.dma;

    /* Completion record, then fence, then interrupt: in that order. */
    if (d.completion_va && mem.root) {
        struct tsr_completion le = comp;

        completion_to_le(&le);
        mem.error = 0;
        tsr_mem_write(&mem, d.completion_va, &le, sizeof(le));
    }
    if (fence_addr && have_desc) {
        uint64_t fence = htole64(d.fence);

        tsr_core_dma_write(core, fence_addr, &fence, sizeof(fence));
    }
    vectors = finish_job(core, queue, generation, index,
                         have_desc ? &d : NULL, &comp, &cost);
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
        uint64_t ring_base, start, fence_addr;
        uint32_t generation, index;

        pthread_mutex_lock(&core->lock);
        if (!(qu->control & TSR_QCTRL_ENABLE) || !qu->ring_size ||
            qu->head == qu->tail || core->fatal ||
            (core->faults.hang_queues & (1u << queue))) {
            qu->running = false;
            pthread_mutex_unlock(&core->lock);
            return;
        }
        qu->running = true;
        generation = qu->generation;
        ring_base = qu->ring_base;
        index = qu->head;
        start = qu->clock;
        fence_addr = qu->fence_addr;
        pthread_mutex_unlock(&core->lock);

        process_one(core, queue, generation, ring_base, index, start,
                    fence_addr);
    }
}
