/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera chip core internals, shared by the core's source files only.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_INTERNAL_H
#define TESSERA_INTERNAL_H

#include <pthread.h>

/* Commands and tables are little-endian; the core runs on such hosts. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the Tessera chip core needs a little-endian host");

#include "tessera/chip.h"
#include "tessera-core.h"
#include "tessera-ici.h"

/*
 * Semaphores whose signals' modeled times the chip remembers: more than a
 * collective's rank 0 signals on a slice of 256 chips (one per rank, ~80
 * more), so none is pushed out while in use, in whatever order the host
 * signalled them first.
 */
#define TSR_SEM_TIMES 512
/* Signals of one semaphore it remembers: the latest on the modeled clock. */
#define TSR_SEM_HISTORY 8

/* Entries of a job's page-walk cache. */
#define TSR_WALK_CACHE 4

/* Largest command buffer a job may name. */
#define TSR_MAX_CMDBUF_SIZE (16u << 20)

/*
 * Writers whose writes a reset must cut off: each hardware queue, and the
 * ICI engine writing what other chips send.
 */
#define TSR_ICI_WRITER TSR_MAX_QUEUES
#define TSR_WRITERS (TSR_MAX_QUEUES + 1)

/* A semaphore's signal: what it added, and when on the modeled clock. */
typedef struct TsrSemSignal {
    uint64_t add;
    uint64_t cycle;
} TsrSemSignal;

typedef struct TsrQueue {
    uint64_t ring_base;
    uint32_t ring_size;
    uint32_t control;
    uint32_t head;
    uint32_t tail;
    /* One past the last job taken; HEAD once that job has ended. */
    uint32_t started;
    uint64_t fence_addr;
    uint64_t fence;
    uint32_t jobs_done;
    uint32_t jobs_failed;
    uint32_t irq_status;
    uint32_t irq_enable;
    uint32_t last_error;
    /*
     * Bumped by a queue or chip reset: a job that sees it change stops,
     * and may no longer write anything (see tsr_job_write_begin()).
     */
    uint32_t generation;
    /* A job of this generation is in flight: the ring must not change. */
    bool running;
    /* Modeled clock of this queue's timeline, in cycles. */
    uint64_t clock;
} TsrQueue;

/* A queue waiting on a semaphore; the core's wake_lock. */
typedef struct TsrSemWaiter {
    pthread_cond_t cond;
    bool waiting;
    bool woken;                 /* since the queue last looked */
    bool sleeping;
    uint64_t wakeups;           /* for tests */
    uint32_t context;
    uint64_t va;
    uint64_t abort_va;          /* 0: none */
} TsrSemWaiter;

/* Counters, in the order of the counters block. */
enum {
    TSR_CNT_MXU_BUSY,
    TSR_CNT_VPU_BUSY,
    TSR_CNT_DMA_BUSY,
    TSR_CNT_JOBS,
    TSR_CNT_COMMANDS,
    TSR_CNT_HBM_READ,
    TSR_CNT_HBM_WRITE,
    TSR_CNT_ECC_CE,
    TSR_CNT_ECC_UE,
    TSR_CNT_RESETS,
    TSR_CNT_SC_BUSY,
    TSR_CNT_COUNT
};

struct TsrCore {
    TsrConfig cfg;
    uint8_t *hbm;
    const TsrCoreOps *ops;
    void *opaque;

    /* Protects everything below. */
    pthread_mutex_t lock;

    uint32_t scratch;
    uint32_t irq_status;
    uint32_t irq_enable;
    bool ping_pending;
    uint32_t ping_cookie;
    uint32_t ping_ack;
    uint32_t ping_count;
    bool fatal;
    /* High halves latched by reading a 64-bit register's low half. */
    uint32_t latched_hi;

    uint64_t mmu_ctx_table;
    uint32_t mmu_ctx_count;
    uint32_t mmu_fault_context;
    uint64_t mmu_fault_va;
    uint32_t mmu_fault_reason;
    uint32_t mmu_fault_count;
    /* Bumped by every MMU_INVALIDATE; walk caches older than it are dropped. */
    uint32_t mmu_generation;

    uint64_t counters[TSR_CNT_COUNT];
    /* The hardware queues, and the ICI engine's writer (TSR_ICI_WRITER). */
    TsrQueue queue[TSR_WRITERS];
    TsrFaults faults;
    /* Bumped by every chip reset; semaphore times of older epochs are void. */
    uint32_t epoch;

    /*
     * Every write a job makes to system memory or HBM holds its queue's
     * write_lock, and checks under it that the queue's generation is still
     * the job's.  A reset bumps the generation, then takes and drops the
     * lock: once it returns, the jobs it aborted have written their last
     * byte, without the resetting thread ever waiting for a job to end.
     * Held only across one piece of a transfer, to RAM or HBM.
     */
    pthread_mutex_t write_lock[TSR_WRITERS];

    /*
     * sem_lock makes the read-modify-write of semaphore commands atomic
     * between queues and protects sem_times.  It is held across the
     * semaphore's DMA, so only queue workers take it, never the register
     * path.
     */
    pthread_mutex_t sem_lock;
    /*
     * The latest signals (SEM_SIGNAL, SEM_INC, remote increments) of
     * recently signalled semaphores, by (context, VA): what each added and
     * when, on the modeled clock, the latest on that clock kept, in its
     * order.  A wait ends no earlier than the modeled time its value was
     * reached (tessera-sync.c).
     */
    struct {
        uint32_t epoch;
        uint32_t context;
        uint64_t va;
        unsigned int count;         /* signals kept */
        TsrSemSignal signal[TSR_SEM_HISTORY];
    } sem_times[TSR_SEM_TIMES];
    unsigned int sem_times_next;
    /*
     * Signals recorded so far: a wait that read its semaphore before one
     * landed reads it again, so that the value it took and the signals it
     * times it by agree.
     */
    uint64_t sem_signals;
    /*
     * The queues waiting on a semaphore (tessera-sync.c), each on its own
     * condition: a signal wakes those of its context waiting on the
     * semaphore it changed (or on it as their abort semaphore) and those
     * waiting in other contexts (tsr_core_wake_sem()), a reset or a fatal
     * error all of them.  A waiter is registered before it first reads
     * the semaphore and sleeps only while not @woken since it last looked,
     * so no wake-up falls between its reading and its sleeping.
     * wake_lock is held only around these, never across a transfer.
     */
    pthread_mutex_t wake_lock;
    TsrSemWaiter sem_waiter[TSR_MAX_QUEUES];
    uint64_t sem_poll_ns;           /* tsr_core_set_sem_poll(); 0: own */

    /* The ICI ports, windows and remote writes; its own lock. */
    TsrIci *ici;
};

/*
 * Checked arithmetic for the sizes, strides and addresses a guest
 * chooses: false when the result does not fit in 64 bits.
 */
static inline bool tsr_add(uint64_t a, uint64_t b, uint64_t *res)
{
    return !__builtin_add_overflow(a, b, res);
}

static inline bool tsr_mul(uint64_t a, uint64_t b, uint64_t *res)
{
    return !__builtin_mul_overflow(a, b, res);
}

static inline uint64_t tsr_min(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static inline uint64_t tsr_max(uint64_t a, uint64_t b)
{
    return a > b ? a : b;
}

/* @a + @b, or UINT64_MAX when that overflows: the end of a range. */
static inline uint64_t tsr_add_sat(uint64_t a, uint64_t b)
{
    uint64_t sum;

    return tsr_add(a, b, &sum) ? sum : UINT64_MAX;
}

/*
 * The extent of @count items @stride apart, the last @len long:
 * (@count - 1) x @stride + @len, for @count >= 1.
 */
static inline bool tsr_span(uint64_t count, uint64_t stride, uint64_t len,
                            uint64_t *span)
{
    uint64_t steps;

    return tsr_mul(count - 1, stride, &steps) && tsr_add(steps, len, span);
}

/* Longest guest-error message, with its terminating NUL. */
#define TSR_GUEST_ERROR_LEN 160

/* Report what the guest did wrong; call without the lock held. */
void tsr_core_guest_error(TsrCore *core, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Wake every job waiting on a semaphore; call without sem_lock held. */
void tsr_core_wake_waiters(TsrCore *core);
/* The semaphore at @va of @context changed; the same. */
void tsr_core_wake_sem(TsrCore *core, uint32_t context, uint64_t va);

/*
 * A queue's job should stop: the queue or the chip was reset, the queue
 * was disabled, or the chip took a fatal error.
 */
bool tsr_queue_aborted(TsrCore *core, unsigned int queue,
                       uint32_t generation);
/*
 * Bracket a write of a job of @queue (see write_lock): begin returns false,
 * holding nothing, when a reset has made the job stale.
 */
bool tsr_job_write_begin(TsrCore *core, unsigned int queue,
                         uint32_t generation);
void tsr_job_write_end(TsrCore *core, unsigned int queue);
/* After bumping @queue's generation: wait out a write in progress. */
void tsr_queue_fence_writes(TsrCore *core, unsigned int queue);

/*
 * The chip's side of its host callbacks, where injected faults apply:
 * a dropped interrupt, a failed transfer.  Call without the lock held.
 */
void tsr_core_irq(TsrCore *core, unsigned int vector);
int tsr_core_dma_read(TsrCore *core, uint64_t addr, void *buf, size_t len);
int tsr_core_dma_write(TsrCore *core, uint64_t addr, const void *buf,
                       size_t len);
/*
 * An HBM read of [addr, addr + len): -1 if it touches poisoned HBM (an
 * uncorrectable error, counted and signalled); 0 otherwise, counting and
 * signalling an injected correctable error.
 */
int tsr_core_hbm_read_check(TsrCore *core, uint64_t addr, uint64_t len,
                            uint64_t *bad);
/* Whether [addr, addr + len) of HBM is poisoned; counts nothing. */
bool tsr_core_hbm_poisoned(TsrCore *core, uint64_t addr, uint64_t len);

/* Latch device-level causes and signal vector 0 if enabled; lock held. */
bool tsr_core_latch_irq_locked(TsrCore *core, uint32_t bits);
/* Device clock: the furthest any queue's timeline has got; lock held. */
uint64_t tsr_core_clock_locked(TsrCore *core);

/*
 * Device memory as one job sees it: the job's queue and context, and
 * where the first fault happened.
 */
typedef struct TsrMem {
    TsrCore *core;
    unsigned int queue;
    uint32_t generation;    /* of the queue, when the job started */
    uint32_t context;
    uint64_t root;          /* bus address of the level-2 table */
    uint64_t fault_va;
    uint32_t error;         /* TSR_ERR_* of the first failure */
    uint32_t command;       /* the index of the command running */
    /*
     * An earlier command that failed, found while another ran (an
     * ICI_WRITE refused after the queue went on), or TSR_NO_COMMAND.
     */
    uint32_t failed_cmd;
    /* Bytes moved, for the timing model; the caller resets them. */
    uint64_t host_bytes;
    uint64_t hbm_bytes;
    /*
     * An ICI_WRITE's first port, data bytes, and when it was on the link,
     * for the job's trace.
     */
    uint8_t ici_port;
    uint64_t link_bytes;
    uint64_t link_start;
    uint64_t link_end;
    /*
     * The engine is reading again what it has read before (a tile of an
     * operand): the bytes were counted the first time.
     */
    bool reread;
    /*
     * Walk cache, for this job only: 2 MiB regions recently translated
     * (tag VA >> 21 plus one, so that 0 means empty), each with its
     * level-0 table or, for a large page, its leaf entry.  Copies
     * alternate between source and destination, hence several entries.
     */
    struct {
        uint64_t tag;
        uint64_t l0;
        uint64_t leaf;
    } walk[TSR_WALK_CACHE];
    unsigned int walk_next;
    uint32_t walk_generation;   /* core->mmu_generation the cache is of */
} TsrMem;

/* Start @mem for a job of @queue at @generation, with no context yet. */
void tsr_mem_init(TsrMem *mem, TsrCore *core, unsigned int queue,
                  uint32_t generation);
/* Whether the job of @mem should stop (tsr_queue_aborted()). */
bool tsr_mem_aborted(TsrMem *mem);
/* Look up @context; TSR_ERR_NONE or TSR_ERR_BAD_CONTEXT/TSR_ERR_DMA. */
uint32_t tsr_mmu_open(TsrMem *mem, uint32_t context);
/*
 * Copy between a job's VA space and a host buffer.  On failure set
 * mem->error and mem->fault_va (first failure only) and return -1.
 */
int tsr_mem_read(TsrMem *mem, uint64_t va, void *buf, uint64_t len);
int tsr_mem_write(TsrMem *mem, uint64_t va, const void *buf, uint64_t len);
/*
 * Check that [va, va + len) is mapped for writing, touching nothing; on
 * failure set mem->error and mem->fault_va as a write would and return -1.
 */
int tsr_mem_check_write(TsrMem *mem, uint64_t va, uint64_t len);
/*
 * A host pointer to [va, va + len) if the range is mapped readable to
 * contiguous, unpoisoned HBM, else NULL (then tsr_mem_read() names what
 * is wrong).  For a read the caller makes itself: the bytes are counted
 * as tsr_mem_read() counts them (timing model, HBM_READ), so read the
 * range once.  Writes go through tsr_mem_write(), which a reset can cut
 * off.
 */
const uint8_t *tsr_mem_read_view(TsrMem *mem, uint64_t va, uint64_t len);
/*
 * A host pointer to [va, va + len) if the range is mapped writable to
 * contiguous HBM, else NULL (then tsr_mem_write() names what is wrong).
 * Write through it only between tsr_job_write_begin() and
 * tsr_job_write_end(), which a reset cuts off, as tsr_mem_write() does,
 * and count each write with tsr_mem_count_written().
 */
uint8_t *tsr_mem_write_view(TsrMem *mem, uint64_t va, uint64_t len);
void tsr_mem_count_written(TsrMem *mem, uint64_t len);
/* Copy between two VAs of the job; @bounce serves system-to-system pieces. */
int tsr_mem_copy(TsrMem *mem, uint64_t dst, uint64_t src, uint64_t len,
                 uint8_t *bounce, uint64_t bounce_len);

/* Modeled cost of a job's commands, in cycles, by engine. */
typedef struct TsrCost {
    uint64_t start;     /* device clock when the first command began */
    uint64_t mxu;
    uint64_t vpu;
    uint64_t dma;
    uint64_t sc;        /* the SparseCores */
    uint64_t other;
    /*
     * Until when each of the queue's ICI DMAs (one per port, and one for
     * writes to the chip itself) sends what the job's last ICI_WRITE by
     * it posted: the next ICI_WRITE by it, and the job's end, wait for it.
     */
    uint64_t ici_until[TSR_ICI_MAX_PORTS + 1];
} TsrCost;

static inline uint64_t tsr_cost_now(const TsrCost *c)
{
    return c->start + c->mxu + c->vpu + c->dma + c->sc + c->other;
}

/* When the job's last posted ICI_WRITE has left. */
static inline uint64_t tsr_cost_ici_end(const TsrCost *c)
{
    uint64_t end = 0;
    unsigned int i;

    for (i = 0; i <= TSR_ICI_MAX_PORTS; i++) {
        end = c->ici_until[i] > end ? c->ici_until[i] : end;
    }
    return end;
}

/*
 * Run one command of @size bytes at @cmd (already fetched).  Returns
 * TSR_ERR_NONE or the error that fails the job; adds the command's
 * modeled cycles to @cost.
 */
uint32_t tsr_cmd_execute(TsrMem *mem, const void *cmd, uint32_t size,
                         TsrCost *cost);
/* The engine (enum tsr_engine) whose busy cycles a command counts in. */
uint8_t tsr_cmd_engine(uint8_t opcode);

/* Timing (tessera-timing.c): cycles to move @bytes at @gbps. */
uint64_t tsr_cycles_for_bytes(const TsrConfig *cfg, uint64_t bytes,
                              uint32_t gbps);
/* Cycles the memory traffic counted in @mem takes (the slower side). */
uint64_t tsr_mem_cycles(const TsrMem *mem);

/*
 * Engines work on operands in blocks of at most this many elements, so
 * that one command holds a bounded amount of host memory (a few tens of
 * MiB) whatever its size, and checks for an abort between blocks.
 */
#define TSR_BLOCK_ELEMS (1u << 20)

/* Tensors (tessera-tensor.c). @dtypes is a mask of TSR_DTYPE_MASK() bits. */
uint32_t tsr_tensor_check(const struct tsr_tensor *t, uint32_t dtypes);
bool tsr_tensor_is_zero(const struct tsr_tensor *t);
/* Rows [@row, @row + @rows) and columns [@col, @col + @cols) of @t. */
struct tsr_tensor tsr_tensor_block(const struct tsr_tensor *t, uint32_t row,
                                   uint32_t rows, uint32_t col,
                                   uint32_t cols);
/* Rows of @t's width that fit in @elems elements; at least one. */
uint32_t tsr_block_rows(const struct tsr_tensor *t, uint64_t elems);
int tsr_tensor_load_raw(TsrMem *mem, const struct tsr_tensor *t, void *dense);
int tsr_tensor_store_raw(TsrMem *mem, const struct tsr_tensor *t,
                         const void *dense);
/* Dense rows x cols f32 copies, converting from and to t->dtype. */
int tsr_tensor_load_f32(TsrMem *mem, const struct tsr_tensor *t, float *dst);
int tsr_tensor_store_f32(TsrMem *mem, const struct tsr_tensor *t,
                         const float *src);
void tsr_convert_to_f32(uint32_t dtype, const void *src, float *dst,
                        size_t n);
void tsr_convert_from_f32(uint32_t dtype, const float *src, void *dst,
                          size_t n);

/* Engines: DMA (tessera-dma.c), MXU, VPU and the other tensor engines. */
uint32_t tsr_cmd_dma(TsrMem *mem, const struct tsr_cmd_dma *c, bool fill,
                     TsrCost *cost);
uint32_t tsr_cmd_matmul(TsrMem *mem, const struct tsr_cmd_matmul *c,
                        TsrCost *cost);
uint32_t tsr_cmd_vpu(TsrMem *mem, const struct tsr_cmd_vpu *c, TsrCost *cost);
uint32_t tsr_cmd_reduce(TsrMem *mem, const struct tsr_cmd_reduce *c,
                        TsrCost *cost);
uint32_t tsr_cmd_cast(TsrMem *mem, const struct tsr_cmd_unary_copy *c,
                      TsrCost *cost);
uint32_t tsr_cmd_transpose(TsrMem *mem, const struct tsr_cmd_unary_copy *c,
                           TsrCost *cost);

/*
 * SparseCore timing (tessera-timing.c, Documentation/chip.md "SparseCore
 * timing"): lanes working at once on @dtype, the bytes a row of @bytes
 * moves in HBM granules, the bytes of the rows a gather or scatter-add
 * moves, and each command's cycles from its work and the cycles of its
 * other memory traffic (@stream).  A gather combines @rows samples, a
 * scatter-add @rows distinct ids.
 */
uint64_t tsr_sc_lanes(const TsrConfig *cfg, uint32_t dtype);
uint64_t tsr_sc_row_bytes(uint64_t bytes);
uint64_t tsr_sc_gather_bytes(uint32_t dtype, uint64_t ids, uint64_t dim);
uint64_t tsr_sc_scatter_bytes(uint32_t dtype, uint32_t grad_dtype,
                              uint64_t ids, uint64_t unique, uint64_t dim);
uint64_t tsr_sc_partition_cycles(const TsrConfig *cfg, uint64_t ids,
                                 uint64_t stream);
uint64_t tsr_sc_lookup_cycles(const TsrConfig *cfg, uint32_t dtype,
                              uint64_t ids, uint64_t rows, uint64_t dim,
                              uint64_t row_bytes, uint64_t stream);

/* SparseCore commands (tessera-sparse.c). */
uint32_t tsr_cmd_sc_partition(TsrMem *mem,
                              const struct tsr_cmd_sc_partition *c,
                              TsrCost *cost);
uint32_t tsr_cmd_sc_gather(TsrMem *mem, const struct tsr_cmd_sc_gather *c,
                           TsrCost *cost);
uint32_t tsr_cmd_sc_scatter_add(TsrMem *mem,
                                const struct tsr_cmd_sc_scatter_add *c,
                                TsrCost *cost);

/* Remote writes (tessera-ici.c). */
/*
 * The job of @mem ends: wait for the answers to its ICI_WRITEs; the first
 * failure, with its command in mem->failed_cmd, or TSR_ERR_NONE.
 */
uint32_t tsr_ici_job_end(TsrMem *mem);
/*
 * Whether an ICI_WRITE of @mem's job has failed since the queue went on
 * past it (mem->failed_cmd names it); does not wait.
 */
uint32_t tsr_ici_check(TsrMem *mem);
uint32_t tsr_cmd_ici_write(TsrMem *mem, const struct tsr_cmd_ici_write *c,
                           TsrCost *cost);

/*
 * Remember that (@context, @va) was signalled at modeled @cycle: @add
 * added to it, or with @set the value set to @add.  A SEM_WAIT ends no
 * earlier than the modeled time its value was reached; sem_lock held.
 */
void tsr_sem_time_record_locked(TsrCore *core, uint32_t context,
                                uint64_t va, bool set, uint64_t add,
                                uint64_t cycle);

/* Synchronisation (tessera-sync.c): semaphores, TIMESTAMP, INTERRUPT. */
uint32_t tsr_cmd_sem_wait(TsrMem *mem, const struct tsr_cmd_sem *c,
                          TsrCost *cost);
uint32_t tsr_cmd_sem_wait_abort(TsrMem *mem,
                                const struct tsr_cmd_sem_wait_abort *c,
                                TsrCost *cost);
uint32_t tsr_cmd_sem_update(TsrMem *mem, const struct tsr_cmd_sem *c,
                            bool add, TsrCost *cost);
uint32_t tsr_cmd_timestamp(TsrMem *mem, const struct tsr_cmd_timestamp *c,
                           TsrCost *cost);
uint32_t tsr_cmd_interrupt(TsrMem *mem, const struct tsr_cmd_header *c,
                           TsrCost *cost);

#endif /* TESSERA_INTERNAL_H */
