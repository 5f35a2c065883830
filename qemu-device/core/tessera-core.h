/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera chip core: the chip's behaviour in plain C, free of QEMU headers.
 *
 * The core owns the register file, the HBM contents (a buffer its host
 * provides), the hardware queues, the device MMU, the engines and the
 * timing model.  Its host (the QEMU glue, or a unit test) supplies a
 * narrow set of callbacks: reading and writing system memory by bus
 * address, signalling an MSI-X vector, waking a queue's worker, and
 * reporting what a guest did wrong.
 *
 * Threads: register accesses come from the host's MMIO path; each
 * hardware queue runs in a worker thread of the host's, which calls
 * tsr_core_queue_run() after being woken.  The core locks its own state;
 * none of its callbacks is called with that lock held.  A register access
 * never waits for a job: at most for one piece of a transfer in progress
 * (up to 2 MiB, to RAM or HBM).
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_CORE_H
#define TESSERA_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct TsrCore TsrCore;
struct tsr_completion;
struct tsr_trace_record;

typedef struct TsrCoreOps {
    /*
     * Copy @len bytes of system memory at bus address @addr; 0 or -1.
     * Called from queue workers with core locks held: a transfer must
     * neither block for long nor re-enter the core, so the host refuses
     * (returns -1 for) addresses that are not RAM.
     */
    int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
    int (*dma_write)(void *opaque, uint64_t addr, const void *buf,
                     size_t len);
    /* Signal MSI-X vector @vector.  May be called from any thread. */
    void (*raise_irq)(void *opaque, unsigned int vector);
    /* Ask the host to call tsr_core_run() soon, outside the MMIO path. */
    void (*schedule)(void *opaque);
    /* Wake the worker of queue @queue: it should call tsr_core_queue_run. */
    void (*kick_queue)(void *opaque, unsigned int queue);
    /*
     * The guest did something wrong: @msg (one line, no newline) names a
     * rejected register value or a failed job.  May be called from any
     * thread; may be NULL.
     */
    void (*guest_error)(void *opaque, const char *msg);
    /*
     * Send @len bytes on ICI port @port's socket without blocking; return
     * how many were taken.  The host calls tsr_ici_writable() when the
     * socket can take more.  Called with the ICI lock held.  May be NULL
     * for a chip with no ports.
     */
    size_t (*ici_write)(void *opaque, unsigned int port, const void *buf,
                        size_t len);
    /*
     * For the host's trace events; either may be NULL.  Called from the
     * queue's worker with no core lock held, for every job, traced
     * (TSR_JOB_TRACE) or not.  @trace_command: a command of a job in
     * @context ran; @r is its record as a job trace has it (little-endian).
     * @trace_job: the job in ring slot @slot ended with @comp (host byte
     * order); @context is 0 when its descriptor could not be read.
     */
    void (*trace_command)(void *opaque, unsigned int queue, uint32_t context,
                          const struct tsr_trace_record *r);
    void (*trace_job)(void *opaque, unsigned int queue, uint32_t slot,
                      uint32_t context, const struct tsr_completion *comp);
} TsrCoreOps;

/* What the chip is: a preset, then any overrides.  See tessera-preset.c. */
typedef struct TsrConfig {
    uint32_t preset;            /* TSR_PRESET_* */
    uint32_t tensorcores;
    uint32_t mxus_per_core;
    uint32_t mxu_dim;
    uint32_t vpu_sublanes;
    uint32_t vpu_lanes;
    uint32_t vmem_mib;
    uint32_t clock_mhz;
    uint32_t hbm_gbps;          /* HBM bandwidth, GB/s */
    uint32_t host_dma_gbps;     /* system memory <-> chip, GB/s */
    uint32_t ici_ports;
    uint32_t ici_link_gbps;     /* one-way, per link */
    uint32_t ici_link_latency_ns;
    uint32_t num_queues;
    uint32_t sparsecores;       /* 0: none */
    uint32_t sc_tiles;          /* per SparseCore */
    uint32_t sc_simd_f32;       /* SIMD lanes per tile, f32 */
    uint32_t sc_simd_bf16;      /* and bf16 */
    uint32_t sc_spmem_kib;      /* SPMEM per SparseCore */
    uint64_t hbm_size;          /* bytes; a power of two */
    bool debug_regs;            /* guest fault-injection block */
} TsrConfig;

/* Fill @cfg with preset @name ("v2", "v3", "v4", "v5e", "v5p", "v6e"). */
int tsr_preset_lookup(const char *name, TsrConfig *cfg);
/* Check a configuration; on error return -1 and point @why at the reason. */
int tsr_config_check(const TsrConfig *cfg, const char **why);
/* Peak dense bf16 FLOP/s of a configuration. */
double tsr_config_peak_flops(const TsrConfig *cfg);
/* Modeled MXU cycles of an M x K by K x N product (TSR_DTYPE_* inputs). */
uint64_t tsr_mxu_cycles(const TsrConfig *cfg, uint64_t m, uint64_t n,
                        uint64_t k, uint32_t dtype);

/*
 * Create a chip.  @hbm is the host buffer holding the chip's HBM
 * (cfg->hbm_size bytes), shared with the host's HBM BAR.  Returns NULL if
 * the configuration is invalid or memory runs out.
 */
TsrCore *tsr_core_new(const TsrConfig *cfg, uint8_t *hbm,
                      const TsrCoreOps *ops, void *opaque);
void tsr_core_free(TsrCore *core);
const TsrConfig *tsr_core_config(const TsrCore *core);
/* The chip's ICI engine (tessera-ici.h): ports, slice identity, faults. */
struct TsrIci *tsr_core_ici(TsrCore *core);

/*
 * Return every register and queue to its reset state.  Jobs in flight are
 * aborted: they stop at their next block of work, and once this returns
 * they can write nothing any more (no data, record or fence), although
 * their workers may still be on their way out of tsr_core_queue_run().
 */
void tsr_core_reset(TsrCore *core);

/*
 * Register access.  @offset is a byte offset into BAR0's register space;
 * accesses are 32 bits wide and aligned (the glue enforces this).
 */
uint32_t tsr_core_reg_read(TsrCore *core, uint32_t offset);
void tsr_core_reg_write(TsrCore *core, uint32_t offset, uint32_t value);

/* Device-level work deferred from register writes (the ping). */
void tsr_core_run(TsrCore *core);

/*
 * Run queue @queue until its ring is empty, it is disabled, or it hangs.
 * Called from the queue's worker thread.
 */
void tsr_core_queue_run(TsrCore *core, unsigned int queue);

/* Whether queue @queue has work its worker should run now. */
bool tsr_core_queue_pending(TsrCore *core, unsigned int queue);

/*
 * Fault injection, shared by the host's properties and the guest's debug
 * block.  All faults are cleared by tsr_core_reset().
 */
typedef struct TsrFaults {
    uint32_t hang_queues;       /* mask: these queues stop taking jobs */
    uint32_t fail_dma;          /* the next N system-memory transfers fail */
    uint64_t poison_addr;       /* HBM [addr, addr + size) reads fail ECC */
    uint64_t poison_size;
    uint32_t ecc_correctable;   /* the next N HBM reads correct an error */
    uint32_t drop_irqs;         /* the next N interrupts are lost */
    uint32_t hang_after;        /* the next job hangs after N commands */
} TsrFaults;

void tsr_core_get_faults(TsrCore *core, TsrFaults *faults);
/* Replace the injected faults; kicks queues a hang no longer holds. */
void tsr_core_set_faults(TsrCore *core, const TsrFaults *faults);
/*
 * For tests: semaphore waits re-read memory every @ns instead of the
 * chip's 200 us doubling up to 10 ms (0 restores that); an hour shows
 * that a wait ended on its signal, not on a re-read.
 */
void tsr_core_set_sem_poll(TsrCore *core, uint64_t ns);
/*
 * For tests: whether queue @queue's job sleeps in a semaphore wait now,
 * and how often its waits were woken so far.
 */
void tsr_core_sem_waiter(TsrCore *core, unsigned int queue, bool *sleeping,
                         uint64_t *wakeups);
/* A fatal error: every queue stops and STATUS says FATAL until reset. */
void tsr_core_raise_fatal(TsrCore *core);

#endif /* TESSERA_CORE_H */
