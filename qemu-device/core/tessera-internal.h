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

#include "drm/tessera_chip.h"
#include "tessera-core.h"

/* Semaphore signals whose modeled time the chip remembers. */
#define TSR_SEM_TIMES 64

/* Entries of a job's page-walk cache. */
#define TSR_WALK_CACHE 4

/* Largest command buffer a job may name. */
#define TSR_MAX_CMDBUF_SIZE (16u << 20)

typedef struct TsrQueue {
    uint64_t ring_base;
    uint32_t ring_size;
    uint32_t control;
    uint32_t head;
    uint32_t tail;
    uint64_t fence_addr;
    uint64_t fence;
    uint32_t jobs_done;
    uint32_t jobs_failed;
    uint32_t irq_status;
    uint32_t irq_enable;
    uint32_t last_error;
    /* Bumped by a queue or chip reset: a job that sees it change stops. */
    uint32_t generation;
    bool running;
    /* Modeled clock of this queue's timeline, in cycles. */
    uint64_t clock;
} TsrQueue;

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
    TsrQueue queue[TSR_MAX_QUEUES];
    TsrFaults faults;

    /*
     * Semaphore commands: sem_lock makes read-modify-write atomic between
     * queues; sem_cond wakes queues waiting on a semaphore.
     */
    pthread_mutex_t sem_lock;
    pthread_cond_t sem_cond;
    /*
     * When recent SEM_SIGNAL/SEM_INC commands ran, on the modeled clock, by
     * (context, VA): a wait they satisfy ends no earlier (sem_lock).
     */
    struct {
        uint32_t context;
        uint64_t va;
        uint64_t cycle;
    } sem_times[TSR_SEM_TIMES];
    unsigned int sem_times_next;
};

/* A queue's job should stop: the queue or the chip was reset. */
bool tsr_queue_aborted(TsrCore *core, unsigned int queue,
                       uint32_t generation);

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
 * Device memory as one job sees it: the job's context, and where the
 * first fault happened.
 */
typedef struct TsrMem {
    TsrCore *core;
    uint32_t context;
    uint64_t root;          /* bus address of the level-2 table */
    uint64_t fault_va;
    uint32_t error;         /* TSR_ERR_* of the first failure */
    /* Bytes moved, for the timing model; the caller resets them. */
    uint64_t host_bytes;
    uint64_t hbm_bytes;
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

/* Look up @context; TSR_ERR_NONE or TSR_ERR_BAD_CONTEXT/TSR_ERR_DMA. */
uint32_t tsr_mmu_open(TsrCore *core, uint32_t context, TsrMem *mem);
/*
 * Copy between a job's VA space and a host buffer.  On failure set
 * mem->error and mem->fault_va (first failure only) and return -1.
 */
int tsr_mem_read(TsrMem *mem, uint64_t va, void *buf, uint64_t len);
int tsr_mem_write(TsrMem *mem, uint64_t va, const void *buf, uint64_t len);
/*
 * A host pointer to [va, va + len) if the range is mapped (with write
 * permission when @write) to contiguous HBM, else NULL.  The bytes are
 * counted once for the timing model.
 */
uint8_t *tsr_mem_hbm_view(TsrMem *mem, uint64_t va, uint64_t len, bool write);
/* Copy between two VAs of the job; @bounce serves system-to-system pieces. */
int tsr_mem_copy(TsrMem *mem, uint64_t dst, uint64_t src, uint64_t len,
                 uint8_t *bounce, uint64_t bounce_len);

/* Modeled cost of a job's commands, in cycles, by engine. */
typedef struct TsrCost {
    uint64_t start;     /* device clock when the first command began */
    uint64_t mxu;
    uint64_t vpu;
    uint64_t dma;
    uint64_t other;
} TsrCost;

static inline uint64_t tsr_cost_now(const TsrCost *c)
{
    return c->start + c->mxu + c->vpu + c->dma + c->other;
}

/*
 * Run one command of @size bytes at @cmd (already fetched).  Returns
 * TSR_ERR_NONE or the error that fails the job; adds the command's
 * modeled cycles to @cost.  @queue is the queue running the job.
 */
uint32_t tsr_cmd_execute(TsrMem *mem, unsigned int queue,
                         uint32_t generation, const void *cmd, uint32_t size,
                         TsrCost *cost);

/* Cycles to move @bytes at @gbps on a chip clocked at @clock_mhz. */
uint64_t tsr_cycles_for_bytes(const TsrConfig *cfg, uint64_t bytes,
                              uint32_t gbps);
/* Cycles the memory traffic counted in @mem takes (the slower side). */
uint64_t tsr_mem_cycles(const TsrMem *mem);

/* Tensors (tessera-cmd.c). @dtypes is a mask of TSR_DTYPE_MASK() bits. */
uint32_t tsr_tensor_check(const struct tsr_tensor *t, uint32_t dtypes);
bool tsr_tensor_is_zero(const struct tsr_tensor *t);
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

/* Engines. */
uint32_t tsr_cmd_matmul(TsrMem *mem, const struct tsr_cmd_matmul *c,
                        TsrCost *cost);
uint32_t tsr_cmd_vpu(TsrMem *mem, const struct tsr_cmd_vpu *c, TsrCost *cost);
uint32_t tsr_cmd_reduce(TsrMem *mem, const struct tsr_cmd_reduce *c,
                        TsrCost *cost);
uint32_t tsr_cmd_cast(TsrMem *mem, const struct tsr_cmd_unary_copy *c,
                      TsrCost *cost);
uint32_t tsr_cmd_transpose(TsrMem *mem, const struct tsr_cmd_unary_copy *c,
                           TsrCost *cost);

/* C (m x n) = op(A) x op(B) (+ C), dense row-major f32 on the host. */
void tsr_mxu_sgemm(bool ta, bool tb, uint64_t m, uint64_t n, uint64_t k,
                   const float *a, const float *b, float *c, bool accumulate);


#endif /* TESSERA_INTERNAL_H */
