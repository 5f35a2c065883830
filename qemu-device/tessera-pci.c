/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera virtual AI accelerator: QEMU PCIe glue.
 *
 * This file only connects the chip core (core/) to QEMU: the PCI function
 * and its capabilities, BAR0 with the register file and the MSI-X table,
 * the HBM BAR, a worker thread per hardware queue, properties, reset and
 * tracing.  The chip's behaviour lives in the core.
 *
 * Queue workers never take the BQL, and nothing under the BQL waits for
 * a worker: interrupts raised by the core (from any thread) are collected
 * in a bitmap and delivered by a bottom half; the workers' DMA reaches RAM
 * only, so it never re-enters a device; and a reset needs no drain, since
 * the core itself cuts off the writes of the jobs a reset aborts.
 *
 * ICI ports are chardevs.  The chip's link layer runs under its own lock
 * in whatever thread feeds it; what it sends goes to a per-port buffer
 * that a bottom half writes to the chardev, so that the chardev is only
 * touched from the main loop and never with the ICI lock held.  Between
 * two chips on one host the socket first hands over a shared-memory ring
 * each way (core/tessera-ring.c), which then carries the frames: the
 * socket is left with one-byte doorbells and the peer's hang-up.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "qemu/osdep.h"
#include <sys/resource.h>
#include "qemu/log.h"
#include "qemu/main-loop.h"
#include "qemu/module.h"
#include "qemu/rcu.h"
#include "qemu/thread.h"
#include "qemu/units.h"
#include "qapi/error.h"
#include "qapi/visitor.h"
#include "hw/pci/pci_device.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "hw/qdev-properties-system.h"
#include "chardev/char-fe.h"
#include "crypto/hmac.h"
#include "crypto/random.h"
#include "crypto/secret_common.h"
#include "qemu/cutils.h"
#include "qemu/fifo8.h"
#include "qemu/keyval.h"
#include "qapi/qobject-input-visitor.h"
#include "qobject/qdict.h"
#include "qemu/timer.h"
#include "migration/vmstate.h"
#include "qom/object.h"

#include "tessera/chip.h"
#include "core/tessera-core.h"
#include "core/tessera-ici.h"
#include "core/tessera-ring.h"
#include "trace.h"

#define TYPE_TESSERA "tessera"
OBJECT_DECLARE_SIMPLE_TYPE(TesseraState, TESSERA)

/* Config-space offset of the PCI Express capability. */
#define TESSERA_PCIE_CAP_OFFSET 0x80
/* Extended config-space offset of the AER capability, the first there. */
#define TESSERA_AER_OFFSET 0x100
/* Config-space offset of the power management capability; its states. */
#define TESSERA_PM_CAP_OFFSET 0x60
#define TESSERA_PM_D0 0
#define TESSERA_PM_D3HOT 3
#define TESSERA_DEFAULT_PRESET "v4"

/* Bytes an ICI port holds for its chardev before the link waits. */
#define TESSERA_PORT_BUF (1 * MiB)
/* The ICI timers run at least this often. */
#define TESSERA_ICI_TICK_NS (50 * SCALE_MS)
/* Data bytes of a port's outgoing ring. */
#define TESSERA_RING_SIZE (4 * MiB)
/* Bytes the main loop takes from a ring before it lets others run. */
#define TESSERA_RING_BUDGET (4 * MiB)
/* The receive thread's longest sleep: what a peer that never wakes costs. */
#define TESSERA_RX_SLEEP_NS (100 * SCALE_MS)

/*
 * Where a port's connection is, in order: the handshake's phases first
 * (Documentation/ici.md, "Transports").
 */
typedef enum TesseraLinkPhase {
    TESSERA_PHASE_HELLO,        /* connected; the peer's HELLO to come */
    TESSERA_PHASE_CHALLENGE,    /* its CHALLENGE to come (a key) */
    TESSERA_PHASE_PROOF,        /* its PROOF to come (a key) */
    TESSERA_PHASE_READY,        /* its READY to come */
    TESSERA_PHASE_SOCKET,       /* frames on the socket */
    TESSERA_PHASE_RING,         /* frames in the rings, doorbells on it */
    TESSERA_PHASE_CLOSED,       /* hung up: bytes until the next are dropped */
} TesseraLinkPhase;

typedef struct TesseraPort {
    struct TesseraState *s;
    unsigned int index;
    CharBackend chr;
    bool wired;
    /*
     * Bytes the link layer sent, waiting for the chardev; out_lock.  A
     * ring, so that a chardev taking part of them moves none.
     */
    QemuMutex out_lock;
    Fifo8 out;
    bool out_made;
    guint watch;                /* main loop only */

    /* The transport.  phase and rx: main loop; tx: out_lock. */
    TesseraLinkPhase phase;
    struct tsr_ici_hello hello; /* the peer's message being read */
    struct tsr_ici_auth auth;   /* the peer's CHALLENGE or PROOF */
    size_t hello_len;           /* bytes of the message being read */
    uint8_t nonce[TSR_ICI_NONCE_SIZE];  /* ours, this connection's */
    uint8_t peer_nonce[TSR_ICI_NONCE_SIZE];
    int peer_fd;                /* its ring's memfd, until mapped */
    TsrRing *tx;                /* ours, offered in our HELLO */
    TsrRing *rx;                /* the peer's */
    bool ring_broken;           /* a producer found tx broken; out_lock */
    bool lends;                 /* tx lent to the link; out_lock */
    QEMUBH *rx_bh;              /* a ring with more than a budget to read */
    /*
     * Futex doorbells (TSR_ICI_HELLO_FUTEX), and then the chip's receive
     * thread reads rx too.  futex: set by the main loop, under out_lock;
     * peer_futex: the peer's HELLO offered them.  A reader of rx, the
     * thread or the main loop, holds rx_lock; rx_live (the thread may
     * read rx) and rx_watch are the thread's, changed under rx_lock and
     * the thread's sleep_lock both.
     */
    bool futex;
    bool peer_futex;
    QemuMutex rx_lock;
    bool rx_live;
    TsrRingWatch rx_watch;
    /*
     * Connections after the first (main loop): each one the link resumes
     * on if it comes back within its deadline (a TCP connection lost).
     */
    bool opened;
    uint64_t reconnects;
    uint64_t auth_refused;      /* peers refused by the handshake */
} TesseraPort;

typedef struct TesseraWorker {
    struct TesseraState *s;
    unsigned int queue;
    QemuThread thread;
    QemuMutex lock;
    QemuCond cond;
    bool kicked;
    bool quit;
} TesseraWorker;

struct TesseraState {
    PCIDevice parent_obj;

    MemoryRegion bar0;
    MemoryRegion regs;
    MemoryRegion hbm;
    QEMUBH *run_bh;
    QEMUBH *irq_bh;
    uint32_t irq_pending;       /* bitmap of MSI-X vectors, atomic */

    TsrCore *core;
    TesseraWorker workers[TSR_MAX_QUEUES];
    unsigned int nr_workers;

    /* ICI: ports, their writer and the links' timer. */
    TesseraPort ports[TSR_ICI_MAX_PORTS];
    QEMUBH *ici_bh;
    QEMUTimer *ici_timer;
    int64_t ici_swept_at;       /* when the tick last read every ring */

    /* Served by the process's receive thread (TesseraRx), on its list. */
    bool rx_started;
    QLIST_ENTRY(TesseraState) rx_next;
    bool rx_stall;              /* x-ici-rx-stall: a starved thread */

    /* Properties: a preset, then overrides (0 keeps the preset's value). */
    char *preset;
    TsrConfig over;
    uint32_t slice_id;
    char *slice_dims;
    char *coords;
    char *wrap;
    uint32_t worker_nice;       /* the queue workers' nice (see below) */
    uint32_t ici_retransmit_us; /* 0: the chip's own */
    uint32_t ici_keepalive_ms;  /* UINT32_MAX: the chip's own */
    char *ici_transport;        /* "auto" or "socket" */
    bool ici_rx_thread;         /* futex doorbells and the receive thread */
    char *ici_secret;           /* the id of the slice's key, a secret */

    /* The slice's key (none: NULL), and what a PROOF says we are. */
    uint8_t *ici_key;
    size_t ici_key_len;
    uint8_t ici_coords[TSR_ICI_MAX_DIMS];

    /* The chip in trace events: its id, or its QOM name without one. */
    char *trace_name;
};

/* ------------------------------------------------------- core callbacks */

/*
 * The chip's DMA reaches RAM only (MemTxAttrs.memory): workers run
 * without the BQL, holding core locks, and a transfer that landed in MMIO
 * (the chip's own BAR0 or MSI-X table, or another device) would re-enter a
 * device from the wrong thread and could deadlock.  Such a transfer fails
 * with TSR_ERR_DMA instead, and QEMU logs it as an invalid access.
 */
static int tessera_dma(TesseraState *s, uint64_t addr, void *buf, size_t len,
                       DMADirection dir)
{
    MemTxAttrs attrs = { .memory = 1 };

    return pci_dma_rw(PCI_DEVICE(s), addr, buf, len, dir, attrs) == MEMTX_OK
           ? 0 : -1;
}

static int tessera_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    return tessera_dma(opaque, addr, buf, len, DMA_DIRECTION_TO_DEVICE);
}

static int tessera_dma_write(void *opaque, uint64_t addr, const void *buf,
                             size_t len)
{
    return tessera_dma(opaque, addr, (void *)buf, len,
                       DMA_DIRECTION_FROM_DEVICE);
}

static void tessera_raise_irq(void *opaque, unsigned int vector)
{
    TesseraState *s = opaque;

    qatomic_or(&s->irq_pending, 1u << vector);
    qemu_bh_schedule(s->irq_bh);
}

static void tessera_schedule(void *opaque)
{
    TesseraState *s = opaque;

    qemu_bh_schedule(s->run_bh);
}

static void tessera_kick_queue(void *opaque, unsigned int queue)
{
    TesseraState *s = opaque;
    TesseraWorker *w = &s->workers[queue];

    trace_tessera_queue_kick(queue);
    qemu_mutex_lock(&w->lock);
    w->kicked = true;
    qemu_cond_signal(&w->cond);
    qemu_mutex_unlock(&w->lock);
}

static void tessera_guest_error(void *opaque, const char *msg)
{
    trace_tessera_guest_error(msg);
    qemu_log_mask(LOG_GUEST_ERROR, "tessera: %s\n", msg);
}

/* A doorbell for the peer if it sleeps, after writing; out_lock held. */
static void tessera_ring_written(TesseraPort *p)
{
    if (!tsr_ring_data_doorbell(p->tx)) {
        /* Awake: it reads on. */
    } else if (p->futex) {
        tsr_ring_wake_data(p->tx);
    } else if (fifo8_num_free(&p->out)) {
        fifo8_push(&p->out, TSR_ICI_DOORBELL_DATA);
    }
    p->ring_broken |= tsr_ring_broken(p->tx);
}

/*
 * Into the ring; out_lock held.  A full ring asks the peer to ring back
 * when it has made room.
 */
static size_t tessera_ring_put(TesseraPort *p, const uint8_t *buf,
                               size_t len)
{
    size_t n = tsr_ring_write(p->tx, buf, len);

    if (n < len && tsr_ring_wait_room(p->tx)) {
        n += tsr_ring_write(p->tx, buf + n, len - n);
    }
    tessera_ring_written(p);
    return n;
}

/*
 * The link layer sends: keep the bytes for the writer bottom half.  Bytes
 * already waiting have the bottom half scheduled, or a watch on the
 * socket that schedules it (tessera_port_drain() leaves one whenever it
 * leaves bytes, under out_lock): only the first bytes need to wake it.
 */
static size_t tessera_ici_write(void *opaque, unsigned int port,
                                const void *buf, size_t len)
{
    TesseraState *s = opaque;
    TesseraPort *p = &s->ports[port];
    bool was_empty;

    qemu_mutex_lock(&p->out_lock);
    was_empty = fifo8_is_empty(&p->out);
    if (p->tx && p->phase == TESSERA_PHASE_RING) {
        len = tessera_ring_put(p, buf, len);
    } else {
        len = MIN(len, fifo8_num_free(&p->out));
        fifo8_push_all(&p->out, buf, len);
    }
    if (was_empty && (!fifo8_is_empty(&p->out) || p->ring_broken)) {
        qemu_bh_schedule(s->ici_bh);
    }
    qemu_mutex_unlock(&p->out_lock);
    return len;
}

/*
 * The port's ring lent to its link (TsrIciLender): frames built in it,
 * kept there until acknowledged.  All run with the ICI lock held, which
 * tessera_ring_drop() takes (tsr_ici_reclaim(), which also waits for the
 * chunks being read into a held frame) before the ring goes: a
 * reservation is always committed, and filled, into a ring still there.
 */
static uint8_t *tessera_ring_reserve(void *opaque, unsigned int port,
                                     size_t len)
{
    TesseraPort *p = &((TesseraState *)opaque)->ports[port];
    uint8_t *at = NULL;

    qemu_mutex_lock(&p->out_lock);
    if (p->lends && !p->ring_broken) {
        at = tsr_ring_reserve(p->tx, len);
    }
    qemu_mutex_unlock(&p->out_lock);
    return at;
}

/*
 * tessera_ring_written(), and the writer bottom half woken if that put
 * the first byte in the port's buffer; out_lock held.
 */
static void tessera_ring_shown(TesseraPort *p)
{
    bool was_empty = fifo8_is_empty(&p->out);

    tessera_ring_written(p);
    if (was_empty && !fifo8_is_empty(&p->out)) {
        qemu_bh_schedule(p->s->ici_bh);
    }
}

static uint64_t tessera_ring_commit(void *opaque, unsigned int port,
                                    size_t len)
{
    TesseraPort *p = &((TesseraState *)opaque)->ports[port];
    uint64_t pos;

    qemu_mutex_lock(&p->out_lock);
    pos = tsr_ring_commit(p->tx, len, true);
    tessera_ring_shown(p);
    qemu_mutex_unlock(&p->out_lock);
    return pos;
}

static const uint8_t *tessera_ring_kept(void *opaque, unsigned int port,
                                        uint64_t pos, size_t len)
{
    TesseraPort *p = &((TesseraState *)opaque)->ports[port];
    const uint8_t *kept;

    qemu_mutex_lock(&p->out_lock);
    kept = p->tx ? tsr_ring_kept(p->tx, pos, len) : NULL;
    qemu_mutex_unlock(&p->out_lock);
    return kept;
}

static void tessera_ring_release(void *opaque, unsigned int port,
                                 uint64_t pos)
{
    TesseraPort *p = &((TesseraState *)opaque)->ports[port];

    qemu_mutex_lock(&p->out_lock);
    if (p->tx) {
        tsr_ring_release(p->tx, pos);
    }
    qemu_mutex_unlock(&p->out_lock);
}

static void tessera_ring_hold(void *opaque, unsigned int port)
{
    TesseraPort *p = &((TesseraState *)opaque)->ports[port];

    qemu_mutex_lock(&p->out_lock);
    tsr_ring_hold(p->tx);
    qemu_mutex_unlock(&p->out_lock);
}

/* The last one shows the peer what came meanwhile: ring if it sleeps. */
static void tessera_ring_unhold(void *opaque, unsigned int port)
{
    TesseraPort *p = &((TesseraState *)opaque)->ports[port];

    qemu_mutex_lock(&p->out_lock);
    tsr_ring_unhold(p->tx);
    tessera_ring_shown(p);
    qemu_mutex_unlock(&p->out_lock);
}

static const TsrIciLender tessera_ring_lender = {
    .reserve = tessera_ring_reserve,
    .commit = tessera_ring_commit,
    .kept = tessera_ring_kept,
    .release = tessera_ring_release,
    .hold = tessera_ring_hold,
    .unhold = tessera_ring_unhold,
};

static void tessera_trace_command(void *opaque, unsigned int queue,
                                  uint32_t context,
                                  const struct tsr_trace_record *r)
{
    TesseraState *s = opaque;
    uint64_t start = le64_to_cpu(r->start_cycle);
    uint64_t end = le64_to_cpu(r->end_cycle);

    trace_tessera_command(s->trace_name, queue, context,
                          le32_to_cpu(r->index), r->opcode,
                          le32_to_cpu(r->error), start, end, end - start,
                          le64_to_cpu(r->mem_bytes));
}

static void tessera_trace_job(void *opaque, unsigned int queue, uint32_t slot,
                              uint32_t context,
                              const struct tsr_completion *comp)
{
    TesseraState *s = opaque;

    trace_tessera_job(s->trace_name, queue, slot, context, comp->fence,
                      comp->error, comp->start_cycle, comp->end_cycle,
                      comp->end_cycle - comp->start_cycle);
}

static const TsrCoreOps tessera_core_ops = {
    .dma_read = tessera_dma_read,
    .dma_write = tessera_dma_write,
    .raise_irq = tessera_raise_irq,
    .schedule = tessera_schedule,
    .kick_queue = tessera_kick_queue,
    .guest_error = tessera_guest_error,
    .ici_write = tessera_ici_write,
    .trace_command = tessera_trace_command,
    .trace_job = tessera_trace_job,
};

static void tessera_irq_bh(void *opaque)
{
    TesseraState *s = opaque;
    PCIDevice *pdev = PCI_DEVICE(s);
    uint32_t pending = qatomic_xchg(&s->irq_pending, 0);
    unsigned int v;

    for (v = 0; v < TSR_MSIX_VECTORS; v++) {
        if (!(pending & (1u << v))) {
            continue;
        }
        if (!msix_enabled(pdev)) {
            trace_tessera_irq_msix_disabled(v);
            continue;
        }
        trace_tessera_irq(v);
        msix_notify(pdev, v);
    }
}

static void tessera_run_bh(void *opaque)
{
    TesseraState *s = opaque;

    tsr_core_run(s->core);
}

/* ---------------------------------------------------------- workers */

/*
 * With worker-nice, a queue worker yields to the main loop and the vCPUs,
 * which carry its chip's links: a link whose owner waits behind compute
 * past its peer's deadline goes down (0.955 s), while a job only takes
 * longer on the host's clock, never on the modeled one.  SCHED_BATCH: a
 * worker waking from a semaphore does not preempt the thread it woke on;
 * the nice value weighs the workers below the rest of their QEMU (its
 * autogroup), as a share, never starved: a worker holding a frame it fills
 * (lend_chunk()) still finishes soon.  0, the default, leaves them as
 * QEMU's other threads, since a worker also reads remote writes into its
 * links' rings (chip.md has what each costs).
 */
static void tessera_worker_yield(TesseraWorker *w)
{
    struct sched_param sp = { .sched_priority = 0 };
    int tid = qemu_get_thread_id(), base, nice = w->s->worker_nice;

    if (!nice) {
        return;
    }
    /*
     * Below the thread that made it (QEMU's main thread, whose nice it
     * inherited): a QEMU started under nice 5 runs its workers at 15.
     */
    errno = 0;
    base = getpriority(PRIO_PROCESS, tid);
    if (errno) {
        base = 0;
    }
    nice = MIN(base + nice, 19);
    if (pthread_setschedparam(pthread_self(), SCHED_BATCH, &sp) ||
        setpriority(PRIO_PROCESS, tid, nice)) {
        trace_tessera_worker_priority_refused(w->queue, nice, errno);
    }
}

static void *tessera_worker_thread(void *opaque)
{
    TesseraWorker *w = opaque;

    /* DMA walks the memory map under RCU: the thread must be a reader. */
    rcu_register_thread();
    tessera_worker_yield(w);
    qemu_mutex_lock(&w->lock);
    for (;;) {
        while (!w->kicked && !w->quit) {
            qemu_cond_wait(&w->cond, &w->lock);
        }
        if (w->quit) {
            break;
        }
        w->kicked = false;
        qemu_mutex_unlock(&w->lock);

        tsr_core_queue_run(w->s->core, w->queue);

        qemu_mutex_lock(&w->lock);
    }
    qemu_mutex_unlock(&w->lock);
    rcu_unregister_thread();
    return NULL;
}

static void tessera_workers_start(TesseraState *s)
{
    unsigned int q;

    s->nr_workers = tsr_core_config(s->core)->num_queues;
    for (q = 0; q < s->nr_workers; q++) {
        TesseraWorker *w = &s->workers[q];
        char name[32];

        w->s = s;
        w->queue = q;
        qemu_mutex_init(&w->lock);
        qemu_cond_init(&w->cond);
        snprintf(name, sizeof(name), "tessera-q%u", q);
        qemu_thread_create(&w->thread, name, tessera_worker_thread, w,
                           QEMU_THREAD_JOINABLE);
    }
}

static void tessera_workers_stop(TesseraState *s)
{
    unsigned int q;

    for (q = 0; q < s->nr_workers; q++) {
        TesseraWorker *w = &s->workers[q];

        qemu_mutex_lock(&w->lock);
        w->quit = true;
        qemu_cond_signal(&w->cond);
        qemu_mutex_unlock(&w->lock);
        qemu_thread_join(&w->thread);
        qemu_cond_destroy(&w->cond);
        qemu_mutex_destroy(&w->lock);
    }
    s->nr_workers = 0;
}

/* ------------------------------------------------------------ ICI */

static TsrIci *tessera_ici(TesseraState *s)
{
    return tsr_core_ici(s->core);
}

static void tessera_ring_read(TesseraPort *p);
static void tessera_ring_broken(TesseraPort *p, const char *what);

static gboolean tessera_port_writable(void *do_not_use, GIOCondition cond,
                                      void *opaque)
{
    TesseraPort *p = opaque;

    p->watch = 0;
    qemu_bh_schedule(p->s->ici_bh);
    return G_SOURCE_REMOVE;
}

/*
 * Write what port @p holds; true if its buffer has room again.  The lock
 * is not held across the write: the link's threads only add bytes behind
 * the ones being written, and only the main loop takes bytes out (here)
 * or empties the ring (tessera_port_event()).
 */
static bool tessera_port_drain(TesseraPort *p)
{
    bool drained = false;

    qemu_mutex_lock(&p->out_lock);
    /* At most twice: the ring's end, then its start. */
    while (!fifo8_is_empty(&p->out)) {
        uint32_t len;
        const uint8_t *buf = fifo8_peek_bufptr(&p->out,
                                               fifo8_num_used(&p->out), &len);
        int n;

        qemu_mutex_unlock(&p->out_lock);
        n = qemu_chr_fe_write(&p->chr, buf, len);
        qemu_mutex_lock(&p->out_lock);
        if (n < 0 && errno != EAGAIN) {
            /* Gone: the link retrains and resends once it is back. */
            n = len;
        }
        n = MAX(n, 0);
        fifo8_drop(&p->out, n);
        drained |= n > 0;
        if ((uint32_t)n < len) {
            break;
        }
    }
    if (!fifo8_is_empty(&p->out) && !p->watch) {
        p->watch = qemu_chr_fe_add_watch(&p->chr, G_IO_OUT | G_IO_HUP,
                                         tessera_port_writable, p);
    }
    qemu_mutex_unlock(&p->out_lock);
    return drained;
}

/*
 * The links' timer, moved only when their deadline comes before it: one
 * set later fires early and finds nothing due, and the tick arms again.
 * Called after every ring read: reading the deadline takes no lock.
 */
static void tessera_ici_arm(TesseraState *s)
{
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    uint64_t d = tsr_ici_deadline(tessera_ici(s));
    int64_t at = timer_expire_time_ns(s->ici_timer);
    uint64_t when = MIN(d, (uint64_t)now + TESSERA_ICI_TICK_NS);

    if (at < 0 || (uint64_t)at > when) {
        timer_mod(s->ici_timer, when);
    }
}

static void tessera_ici_bh(void *opaque)
{
    TesseraState *s = opaque;
    unsigned int i;

    for (i = 0; i < TSR_ICI_MAX_PORTS; i++) {
        TesseraPort *p = &s->ports[i];
        bool broken;

        if (!p->wired) {
            continue;
        }
        qemu_mutex_lock(&p->out_lock);
        broken = p->ring_broken;
        qemu_mutex_unlock(&p->out_lock);
        if (broken) {
            tessera_ring_broken(p, "wrote a tail no consumer writes");
        } else if (tessera_port_drain(p) && p->phase == TESSERA_PHASE_SOCKET) {
            tsr_ici_writable(tessera_ici(s), i);
        }
    }
}

/*
 * The links' timers (CLOCK_MONOTONIC, as QEMU_CLOCK_REALTIME); and bytes
 * left without a watch (the socket refused one) are tried again.
 */
static void tessera_ici_tick(void *opaque)
{
    TesseraState *s = opaque;
    int64_t now = qemu_clock_get_ns(QEMU_CLOCK_REALTIME);
    unsigned int i;

    tessera_ici_bh(s);
    /*
     * Rings too, whatever their doorbells did, when a link's timer is due
     * and at least every TESSERA_ICI_TICK_NS: a peer may not ring, and the
     * receive thread may be starved.  Nothing the peer wrote is left in
     * our ring when its silence is judged below.  A timer that fired
     * before a deadline that moved later since (under traffic, ~90% of its
     * firings) leaves the rings to the receive thread, which would
     * otherwise wait for the main loop's pass on each of them.
     */
    if (tsr_ici_deadline(tessera_ici(s)) <= (uint64_t)now ||
        now - s->ici_swept_at >= TESSERA_ICI_TICK_NS) {
        s->ici_swept_at = now;
        for (i = 0; i < TSR_ICI_MAX_PORTS; i++) {
            if (s->ports[i].phase == TESSERA_PHASE_RING) {
                tessera_ring_read(&s->ports[i]);
                tsr_ici_writable(tessera_ici(s), i);
            }
        }
    }
    tsr_ici_poll(tessera_ici(s));
    tessera_ici_arm(s);
}

static int tessera_port_can_receive(void *opaque)
{
    return 64 * KiB;
}

/* Put a doorbell (or any few bytes) on the socket, from the main loop. */
static void tessera_port_send(TesseraPort *p, const void *buf, size_t len)
{
    qemu_mutex_lock(&p->out_lock);
    if (fifo8_num_free(&p->out) >= len) {
        fifo8_push_all(&p->out, buf, len);
    }
    qemu_mutex_unlock(&p->out_lock);
    tessera_port_drain(p);
}

/* ------------------------------------------------ the receive thread */

typedef enum TesseraRingTaken {
    TESSERA_RING_EMPTY,         /* all read */
    TESSERA_RING_MORE,          /* a budget read, more to come */
    TESSERA_RING_BROKEN,        /* tessera_ring_broken() is due */
} TesseraRingTaken;

static TesseraRingTaken tessera_ring_take(TesseraPort *p);

/*
 * The receive thread (tessera-ici-rx), one a process, reads the rings of
 * every chip's ports on futex doorbells without the BQL, all in one
 * wake-up as the main loop's poll does.  It sleeps holding sleep_lock
 * and reads holding read_lock.  The main loop (under the BQL) changes
 * what it watches by counting itself in waiters and kicking ctl before it
 * takes sleep_lock (tessera_rx_lock()), and, having taken a chip off the
 * list, takes read_lock once: the pass that may still read its ports has
 * ended, and no later pass reads them.
 */
typedef struct TesseraRx {
    QemuThread thread;
    QemuMutex sleep_lock;
    QemuMutex read_lock;
    QemuCond cond;
    uint32_t ctl;
    int waiters;
    bool quit;
    QLIST_HEAD(, TesseraState) chips;   /* sleep_lock, and the BQL */
    unsigned int nr_chips;              /* BQL */
} TesseraRx;

static TesseraRx tessera_rx;

/* At most this many rings are slept on (futex_waitv()'s 128, less ctl). */
#define TESSERA_RX_WATCH_MAX 127

static void tessera_rx_lock(void)
{
    qatomic_inc(&tessera_rx.waiters);
    tsr_ring_kick(&tessera_rx.ctl);
    qemu_mutex_lock(&tessera_rx.sleep_lock);
}

static void tessera_rx_unlock(void)
{
    qatomic_dec(&tessera_rx.waiters);
    qemu_cond_broadcast(&tessera_rx.cond);
    qemu_mutex_unlock(&tessera_rx.sleep_lock);
}

/*
 * Let port @p's ring be read by the receive thread (@live) or no longer:
 * once this returns false, the thread neither reads nor sleeps on it, and
 * the main loop may free it.
 */
static void tessera_rx_set(TesseraPort *p, bool live)
{
    /* Only the main loop makes it live: false here is false. */
    if (!p->s->rx_started || (!live && !qatomic_read(&p->rx_live))) {
        return;
    }
    tessera_rx_lock();
    qemu_mutex_lock(&p->rx_lock);
    p->rx_live = live && p->rx;
    p->rx_watch.ring = p->rx_live ? p->rx : NULL;
    p->rx_watch.futile = 0;
    p->rx_watch.quiet_until = 0;
    qemu_mutex_unlock(&p->rx_lock);
    tessera_rx_unlock();
    trace_tessera_ici_rx_live(p->index, p->rx_live);
}

/* One port's ring, from the thread. */
static void tessera_rx_read(TesseraPort *p)
{
    qemu_mutex_lock(&p->rx_lock);
    if (p->rx_live && tessera_ring_take(p) == TESSERA_RING_BROKEN) {
        /* The main loop hangs up (tessera_ring_read() finds it broken). */
        p->rx_live = false;
        qemu_bh_schedule(p->rx_bh);
    }
    qemu_mutex_unlock(&p->rx_lock);
    tessera_ici_arm(p->s);
}

/*
 * Sleep on the rings of every chip's ports on futex doorbells (and ctl),
 * then read each.  The control word is read before quit and waiters, and
 * the main loop changes those before it kicks: a kick that came after the
 * look finds the word changed, and the sleep ends at once.
 */
static void *tessera_rx_thread(void *opaque)
{
    TesseraRx *rx = opaque;
    TsrRingWatch w[TESSERA_RX_WATCH_MAX];
    TesseraPort *at[TESSERA_RX_WATCH_MAX];
    TesseraState *s;
    unsigned int i, n;
    uint32_t ctl;

    /* What a frame brings may be DMA: the thread must be an RCU reader. */
    rcu_register_thread();
    qemu_mutex_lock(&rx->sleep_lock);
    for (;;) {
        ctl = qatomic_load_acquire(&rx->ctl);
        /* The word before the flags (see above): pairs with the kick's. */
        smp_mb();
        if (qatomic_read(&rx->quit)) {
            break;
        }
        if (qatomic_read(&rx->waiters)) {
            qemu_cond_wait(&rx->cond, &rx->sleep_lock);
            continue;
        }
        n = 0;
        QLIST_FOREACH(s, &rx->chips, rx_next) {
            for (i = 0; i < TSR_ICI_MAX_PORTS && n < TESSERA_RX_WATCH_MAX;
                 i++) {
                if (s->ports[i].rx_live && !qatomic_read(&s->rx_stall)) {
                    w[n] = s->ports[i].rx_watch;
                    at[n++] = &s->ports[i];
                }
            }
        }
        tsr_ring_sleep(w, n, &rx->ctl, ctl, TESSERA_RX_SLEEP_NS);
        for (i = 0; i < n; i++) {
            at[i]->rx_watch = w[i];
        }
        qemu_mutex_lock(&rx->read_lock);
        qemu_mutex_unlock(&rx->sleep_lock);
        for (i = 0; i < n; i++) {
            tessera_rx_read(at[i]);
        }
        qemu_mutex_unlock(&rx->read_lock);
        qemu_mutex_lock(&rx->sleep_lock);
    }
    qemu_mutex_unlock(&rx->sleep_lock);
    rcu_unregister_thread();
    return NULL;
}

/* Chip @s's rings to the process's receive thread, started by the first. */
static void tessera_rx_start(TesseraState *s)
{
    TesseraRx *rx = &tessera_rx;

    if (!s->ici_rx_thread || !tsr_ring_futex_works()) {
        return;
    }
    if (!rx->nr_chips++) {
        qemu_mutex_init(&rx->sleep_lock);
        qemu_mutex_init(&rx->read_lock);
        qemu_cond_init(&rx->cond);
        QLIST_INIT(&rx->chips);
        rx->quit = false;
        qemu_thread_create(&rx->thread, "tessera-ici-rx", tessera_rx_thread,
                           rx, QEMU_THREAD_JOINABLE);
    }
    tessera_rx_lock();
    QLIST_INSERT_HEAD(&rx->chips, s, rx_next);
    tessera_rx_unlock();
    s->rx_started = true;
}

/* Off the thread: it reads none of @s's rings from now on. */
static void tessera_rx_stop(TesseraState *s)
{
    TesseraRx *rx = &tessera_rx;

    if (!s->rx_started) {
        return;
    }
    tessera_rx_lock();
    QLIST_REMOVE(s, rx_next);
    tessera_rx_unlock();
    qemu_mutex_lock(&rx->read_lock);
    qemu_mutex_unlock(&rx->read_lock);
    s->rx_started = false;
    if (--rx->nr_chips) {
        return;
    }
    qatomic_set(&rx->quit, true);
    tsr_ring_kick(&rx->ctl);
    qemu_thread_join(&rx->thread);
    qemu_cond_destroy(&rx->cond);
    qemu_mutex_destroy(&rx->read_lock);
    qemu_mutex_destroy(&rx->sleep_lock);
}

/*
 * Drop both rings; the connection goes back to the handshake.  What the
 * link keeps in ours for replay is copied back first.
 */
static void tessera_ring_drop(TesseraPort *p)
{
    tessera_rx_set(p, false);
    qemu_mutex_lock(&p->out_lock);
    p->lends = false;
    p->futex = false;
    qemu_mutex_unlock(&p->out_lock);
    if (p->tx) {
        tsr_ici_reclaim(tessera_ici(p->s), p->index);
    }
    qemu_mutex_lock(&p->out_lock);
    tsr_ring_free(p->tx);
    p->tx = NULL;
    p->ring_broken = false;
    qemu_mutex_unlock(&p->out_lock);
    tsr_ring_free(p->rx);
    p->rx = NULL;
    if (p->peer_fd >= 0) {
        close(p->peer_fd);
        p->peer_fd = -1;
    }
}

/*
 * The peer wrote into shared memory what no correct peer writes: count it
 * and hang up, so that both ends start again from the handshake (the
 * client end reconnects) with new rings; the link resumes where it was.
 */
static void tessera_ring_broken(TesseraPort *p, const char *what)
{
    trace_tessera_ici_ring_broken(p->index, what);
    tessera_rx_set(p, false);
    tsr_ici_transport_error(tessera_ici(p->s), p->index);
    tessera_ring_drop(p);
    p->phase = TESSERA_PHASE_HELLO;
    qemu_chr_fe_disconnect(&p->chr);
}

/*
 * A room doorbell for the peer, with rx_lock held: the bh sends it (a
 * write to the chardev may hang up, and the hang-up takes rx_lock).
 */
static void tessera_port_queue(TesseraPort *p, uint8_t bell)
{
    qemu_mutex_lock(&p->out_lock);
    if (fifo8_num_free(&p->out)) {
        fifo8_push(&p->out, bell);
    }
    qemu_mutex_unlock(&p->out_lock);
    qemu_bh_schedule(p->s->ici_bh);
}

/*
 * Feed the link what waits in the peer's ring, where it lies, up to a
 * budget, and ring back if the peer waits for room.  On socket doorbells,
 * sleep (ask to be rung) once it is empty; on futex ones the receive
 * thread does (tsr_ring_sleep()), and rx_lock is held.
 */
static TesseraRingTaken tessera_ring_feed(TesseraPort *p)
{
    size_t budget = TESSERA_RING_BUDGET;
    uint8_t bell = TSR_ICI_DOORBELL_ROOM;

    while (p->rx) {
        size_t n;
        const uint8_t *buf = tsr_ring_peek(p->rx, &n);
        bool room;

        if (!buf) {
            return TESSERA_RING_BROKEN;
        }
        if (!n) {
            if (p->futex || !tsr_ring_wait_data(p->rx)) {
                break;
            }
            continue;
        }
        n = MIN(n, budget);
        tsr_ici_receive(tessera_ici(p->s), p->index, buf, n);
        tsr_ring_consume(p->rx, n);
        room = tsr_ring_room_doorbell(p->rx);
        if (room && p->futex) {
            tessera_port_queue(p, bell);
        } else if (room) {
            tessera_port_send(p, &bell, 1);
        }
        budget -= n;
        if (!budget) {
            return TESSERA_RING_MORE;
        }
    }
    return TESSERA_RING_EMPTY;
}

/*
 * tessera_ring_feed(), its acknowledgements half a window at a time: each
 * may wake the peer's receive thread, and the frames come faster than
 * that costs.
 */
static TesseraRingTaken tessera_ring_take(TesseraPort *p)
{
    TsrIci *ici = tessera_ici(p->s);
    TesseraRingTaken taken;

    tsr_ici_hold_acks(ici, p->index, true);
    taken = tessera_ring_feed(p);
    tsr_ici_hold_acks(ici, p->index, false);
    return taken;
}

/*
 * From the main loop.  A ring the receive thread reads is read here too
 * (the links' tick, a stray doorbell): if the thread holds it, it is
 * reading, and we wait for it to be done, so that what the peer wrote
 * reaches the link before the link judges the peer.
 */
static void tessera_ring_read(TesseraPort *p)
{
    TesseraRingTaken taken;

    if (p->futex && qemu_mutex_trylock(&p->rx_lock)) {
        trace_tessera_ici_rx_busy(p->index);
        qemu_mutex_lock(&p->rx_lock);
    }
    taken = tessera_ring_take(p);
    if (p->futex) {
        qemu_mutex_unlock(&p->rx_lock);
    }
    if (taken == TESSERA_RING_BROKEN) {
        tessera_ring_broken(p, "wrote a head no producer writes");
        return;
    }
    if (taken == TESSERA_RING_MORE) {
        qemu_bh_schedule(p->rx_bh);
    }
    tessera_ici_arm(p->s);
}

static void tessera_ring_read_bh(void *opaque)
{
    tessera_ring_read(opaque);
}

/*
 * Send a HELLO (@magic TSR_ICI_HELLO_MAGIC, offering our ring if we have
 * one and the socket passes descriptors) or a READY (saying whether we
 * mapped the peer's).
 */
static void tessera_send_hello(TesseraPort *p, uint32_t magic, bool ring)
{
    struct tsr_ici_hello h = {
        .magic = cpu_to_le32(magic),
        .version = cpu_to_le16(TSR_ICI_HELLO_VERSION),
    };
    uint16_t flags = 0;
    int fd = -1;

    if (magic == TSR_ICI_HELLO_MAGIC && p->tx) {
        fd = tsr_ring_fd(p->tx);
        ring = qemu_chr_fe_set_msgfds(&p->chr, &fd, 1) == 0;
    }
    if (ring) {
        flags |= TSR_ICI_HELLO_RING;
        h.ring_size = cpu_to_le32(TESSERA_RING_SIZE);
    }
    /* Futex doorbells: offered with a ring, agreed to if offered. */
    if (ring && p->s->rx_started &&
        (magic == TSR_ICI_HELLO_MAGIC || p->peer_futex)) {
        flags |= TSR_ICI_HELLO_FUTEX;
    }
    if (magic == TSR_ICI_HELLO_MAGIC && p->s->ici_key) {
        flags |= TSR_ICI_HELLO_AUTH;
    }
    h.flags = cpu_to_le16(flags);
    /* The first bytes on a fresh socket: the kernel takes them whole. */
    if (qemu_chr_fe_write_all(&p->chr, (const uint8_t *)&h, sizeof(h)) !=
        sizeof(h)) {
        trace_tessera_ici_transport(p->index,
                                    "the handshake could not be sent");
    }
}

/*
 * The connection runs on @phase from now on (on a ring, with @futex
 * doorbells, read by the receive thread): the link trains.
 */
static void tessera_transport_chosen(TesseraPort *p, TesseraLinkPhase phase,
                                     bool futex)
{
    if (phase == TESSERA_PHASE_SOCKET) {
        tessera_ring_drop(p);
    }
    qemu_mutex_lock(&p->out_lock);
    p->phase = phase;
    p->lends = phase == TESSERA_PHASE_RING;
    p->futex = futex && phase == TESSERA_PHASE_RING;
    qemu_mutex_unlock(&p->out_lock);
    trace_tessera_ici_transport(p->index, phase == TESSERA_PHASE_SOCKET ?
                                "socket" : p->futex ?
                                "ring, futex doorbells" : "ring");
    tsr_ici_set_transport(tessera_ici(p->s), p->index,
                          phase == TESSERA_PHASE_RING ?
                          TSR_ICI_TRANSPORT_RING : TSR_ICI_TRANSPORT_SOCKET);
    tsr_ici_connected(tessera_ici(p->s), p->index);
    if (phase == TESSERA_PHASE_RING) {
        tessera_ring_read(p);
    }
    if (p->futex) {
        tessera_rx_set(p, true);
    }
    tessera_ici_arm(p->s);
}

/* The peer's HELLO, whole: map its ring if it offers one, and say so. */
static void tessera_take_hello(TesseraPort *p)
{
    const char *why = "we offered none";
    bool ring = le16_to_cpu(p->hello.flags) & TSR_ICI_HELLO_RING;

    p->peer_futex = le16_to_cpu(p->hello.flags) & TSR_ICI_HELLO_FUTEX;
    if (ring && p->tx && p->peer_fd >= 0) {
        p->rx = tsr_ring_open(p->peer_fd, le32_to_cpu(p->hello.ring_size),
                              &why);
        p->peer_fd = -1;
    } else if (ring && p->tx) {
        why = "its HELLO came without a descriptor";
    }
    if (ring && !p->rx) {
        trace_tessera_ici_ring_refused(p->index, why);
    }
    tessera_send_hello(p, TSR_ICI_READY_MAGIC, p->rx);
    p->phase = TESSERA_PHASE_READY;
}

/*
 * Authentication (Documentation/ici.md, "Authentication").  The peer is
 * refused: counted, hung up on, and what it sent until it connects again
 * dropped, so that none of it reaches the link.
 */
static void tessera_auth_refuse(TesseraPort *p, const char *why)
{
    trace_tessera_ici_auth_refused(p->index, why);
    p->auth_refused++;
    p->phase = TESSERA_PHASE_CLOSED;
    p->hello_len = 0;
    qemu_chr_fe_disconnect(&p->chr);
}

/*
 * A PROOF's MAC: HMAC-SHA256 with the slice's key of the PROOF's magic,
 * coordinates and port, the prover's nonce, then the verifier's.
 */
static bool tessera_auth_mac(TesseraState *s, const struct tsr_ici_auth *a,
                             const uint8_t *prover, const uint8_t *verifier,
                             uint8_t mac[TSR_ICI_MAC_SIZE])
{
    g_autoptr(QCryptoHmac) hmac =
        qcrypto_hmac_new(QCRYPTO_HASH_ALGO_SHA256, s->ici_key, s->ici_key_len,
                         NULL);
    struct iovec iov[] = {
        { (void *)a, offsetof(struct tsr_ici_auth, nonce) },
        { (void *)prover, TSR_ICI_NONCE_SIZE },
        { (void *)verifier, TSR_ICI_NONCE_SIZE },
    };
    size_t len = TSR_ICI_MAC_SIZE;

    return hmac && qcrypto_hmac_bytesv(hmac, iov, ARRAY_SIZE(iov), &mac, &len,
                                       NULL) == 0;
}

static void tessera_auth_send(TesseraPort *p, struct tsr_ici_auth *a)
{
    if (qemu_chr_fe_write_all(&p->chr, (const uint8_t *)a, sizeof(*a)) !=
        sizeof(*a)) {
        trace_tessera_ici_transport(p->index,
                                    "the handshake could not be sent");
    }
}

/* Our CHALLENGE: a fresh nonce, so that no old PROOF answers it. */
static bool tessera_send_challenge(TesseraPort *p)
{
    struct tsr_ici_auth a = { .magic = cpu_to_le32(TSR_ICI_CHALLENGE_MAGIC) };
    Error *err = NULL;

    if (qcrypto_random_bytes(p->nonce, sizeof(p->nonce), &err)) {
        error_report_err(err);
        return false;
    }
    memcpy(a.nonce, p->nonce, sizeof(a.nonce));
    tessera_auth_send(p, &a);
    return true;
}

/* The peer's CHALLENGE came: answer it with our PROOF. */
static void tessera_send_proof(TesseraPort *p)
{
    struct tsr_ici_auth a = {
        .magic = cpu_to_le32(TSR_ICI_PROOF_MAGIC),
        .port = p->index,
    };

    memcpy(a.coords, p->s->ici_coords, sizeof(a.coords));
    if (!tessera_auth_mac(p->s, &a, p->nonce, p->peer_nonce, a.mac)) {
        tessera_auth_refuse(p, "no MAC could be made");
        return;
    }
    tessera_auth_send(p, &a);
    p->phase = TESSERA_PHASE_PROOF;
}

/*
 * The peer's PROOF: its MAC over our nonce of this connection, by a chip
 * that is not this one (our own PROOF reflected proves nothing).
 */
static bool tessera_proof_holds(TesseraPort *p, const struct tsr_ici_auth *a)
{
    uint8_t mac[TSR_ICI_MAC_SIZE];
    uint8_t diff = 0;
    size_t i;

    if (le32_to_cpu(a->magic) != TSR_ICI_PROOF_MAGIC ||
        !memcmp(a->coords, p->s->ici_coords, sizeof(a->coords)) ||
        !tessera_auth_mac(p->s, a, p->peer_nonce, p->nonce, mac)) {
        return false;
    }
    for (i = 0; i < sizeof(mac); i++) {
        diff |= mac[i] ^ a->mac[i];
    }
    return !diff;
}

/* CHALLENGE and PROOF bytes; returns how many of @buf it took. */
static size_t tessera_auth_read(TesseraPort *p, const uint8_t *buf,
                                size_t size)
{
    struct tsr_ici_auth *a = &p->auth;
    size_t n = MIN(size, sizeof(*a) - p->hello_len);

    memcpy((uint8_t *)a + p->hello_len, buf, n);
    p->hello_len += n;
    if (p->hello_len < sizeof(*a)) {
        return n;
    }
    p->hello_len = 0;
    if (p->phase == TESSERA_PHASE_CHALLENGE) {
        if (le32_to_cpu(a->magic) != TSR_ICI_CHALLENGE_MAGIC ||
            !memcmp(a->nonce, p->nonce, sizeof(p->nonce))) {
            tessera_auth_refuse(p, "a CHALLENGE that is not one, or ours");
            return n;
        }
        memcpy(p->peer_nonce, a->nonce, sizeof(p->peer_nonce));
        tessera_send_proof(p);
    } else if (!tessera_proof_holds(p, a)) {
        tessera_auth_refuse(p, "its PROOF does not hold");
    } else {
        trace_tessera_ici_transport(p->index, "the peer holds the key");
        tessera_take_hello(p);
    }
    return n;
}

/*
 * Handshake bytes; returns how many of @buf it took.  A peer that does
 * not start with a HELLO speaks frames at once (an older Tessera): the
 * port runs on the socket.
 */
static size_t tessera_handshake(TesseraPort *p, const uint8_t *buf,
                                size_t size)
{
    size_t n = MIN(size, sizeof(p->hello) - p->hello_len);
    uint32_t magic;
    bool auth;
    int fd;

    if (p->phase == TESSERA_PHASE_CHALLENGE ||
        p->phase == TESSERA_PHASE_PROOF) {
        return tessera_auth_read(p, buf, size);
    }
    if (p->phase == TESSERA_PHASE_HELLO && p->peer_fd < 0 &&
        qemu_chr_fe_get_msgfds(&p->chr, &fd, 1) == 1) {
        p->peer_fd = fd;
    }
    memcpy((uint8_t *)&p->hello + p->hello_len, buf, n);
    p->hello_len += n;
    if (p->hello_len < sizeof(magic)) {
        return n;
    }
    magic = le32_to_cpu(p->hello.magic);
    if (p->phase == TESSERA_PHASE_HELLO && magic != TSR_ICI_HELLO_MAGIC &&
        p->s->ici_key) {
        tessera_auth_refuse(p, "frames from a peer without the key");
        return n;
    }
    if (p->phase == TESSERA_PHASE_HELLO && magic != TSR_ICI_HELLO_MAGIC) {
        /* Frames: give them to the link, from the first byte. */
        size_t had = p->hello_len - n;

        tessera_transport_chosen(p, TESSERA_PHASE_SOCKET, false);
        tsr_ici_receive(tessera_ici(p->s), p->index, &p->hello, had);
        return 0;
    }
    if (p->hello_len < sizeof(p->hello)) {
        return n;
    }
    p->hello_len = 0;
    auth = le16_to_cpu(p->hello.flags) & TSR_ICI_HELLO_AUTH;
    if (p->phase == TESSERA_PHASE_HELLO && auth != !!p->s->ici_key) {
        /* Both ends hold the key or neither. */
        tessera_auth_refuse(p, auth ? "a peer with a key, we have none" :
                            "a peer without the key");
    } else if (p->phase == TESSERA_PHASE_HELLO && p->s->ici_key &&
               le16_to_cpu(p->hello.version) != TSR_ICI_HELLO_VERSION) {
        tessera_auth_refuse(p, "a HELLO of another version");
    } else if (p->phase == TESSERA_PHASE_HELLO && p->s->ici_key) {
        p->phase = TESSERA_PHASE_CHALLENGE;
    } else if (p->phase == TESSERA_PHASE_HELLO &&
               le16_to_cpu(p->hello.version) == TSR_ICI_HELLO_VERSION) {
        tessera_take_hello(p);
    } else if (p->phase == TESSERA_PHASE_HELLO) {
        /* A HELLO of another version: agree on the socket. */
        tessera_send_hello(p, TSR_ICI_READY_MAGIC, false);
        p->phase = TESSERA_PHASE_READY;
    } else if (magic == TSR_ICI_READY_MAGIC) {
        uint16_t flags = le16_to_cpu(p->hello.flags);

        /* Futex doorbells if both READYs say so (ours did if it offered). */
        tessera_transport_chosen(p, p->rx && (flags & TSR_ICI_HELLO_RING) ?
                                 TESSERA_PHASE_RING : TESSERA_PHASE_SOCKET,
                                 p->s->rx_started && p->peer_futex &&
                                 (flags & TSR_ICI_HELLO_FUTEX));
    } else {
        trace_tessera_ici_transport(p->index, "a READY that is not one");
        tsr_ici_transport_error(tessera_ici(p->s), p->index);
        qemu_chr_fe_disconnect(&p->chr);
    }
    return n;
}

/* On a ring, the socket carries doorbells only. */
static void tessera_doorbells(TesseraPort *p, const uint8_t *buf, size_t size)
{
    bool data = false, room = false;
    size_t i;

    for (i = 0; i < size; i++) {
        data |= buf[i] == TSR_ICI_DOORBELL_DATA;
        room |= buf[i] == TSR_ICI_DOORBELL_ROOM;
        if (buf[i] != TSR_ICI_DOORBELL_DATA &&
            buf[i] != TSR_ICI_DOORBELL_ROOM) {
            tsr_ici_transport_error(tessera_ici(p->s), p->index);
        }
    }
    if (data) {
        tessera_ring_read(p);
    }
    if (room) {
        tsr_ici_writable(tessera_ici(p->s), p->index);
    }
}

static void tessera_port_receive(void *opaque, const uint8_t *buf, int size)
{
    TesseraPort *p = opaque;
    size_t n;

    /* The handshake's phases come before SOCKET. */
    while (size && p->phase < TESSERA_PHASE_SOCKET) {
        n = tessera_handshake(p, buf, size);
        buf += n;
        size -= n;
        if (!n && p->phase == TESSERA_PHASE_SOCKET) {
            break;
        }
    }
    if (!size || p->phase == TESSERA_PHASE_CLOSED) {
        return;
    }
    if (p->phase == TESSERA_PHASE_RING) {
        tessera_doorbells(p, buf, size);
        return;
    }
    tsr_ici_receive(tessera_ici(p->s), p->index, buf, size);
    tessera_ici_arm(p->s);
}

/*
 * Whether @p offers its peer a ring: only where descriptors pass (a UNIX
 * socket).  Over TCP the peer may be another machine, and frames go on
 * the socket.
 */
static bool tessera_port_may_ring(TesseraPort *p)
{
    return strcmp(p->s->ici_transport, "socket") &&
           qemu_chr_has_feature(qemu_chr_fe_get_driver(&p->chr),
                                QEMU_CHAR_FEATURE_FD_PASS);
}

/* @p's link window: a ring's, or the socket's where frames stay there. */
static unsigned int tessera_port_window(TesseraPort *p)
{
    return tessera_port_may_ring(p) ? TSR_ICI_WINDOW_RING :
                                      TSR_ICI_WINDOW_SOCKET;
}

static void tessera_port_event(void *opaque, QEMUChrEvent event)
{
    TesseraPort *p = opaque;
    int fd;

    trace_tessera_ici_port_event(p->index, event);
    if (event == CHR_EVENT_OPENED) {
        p->reconnects += p->opened;
        p->opened = true;
        tessera_ring_drop(p);
        p->phase = TESSERA_PHASE_HELLO;
        p->hello_len = 0;
        p->peer_futex = false;
        if (tessera_port_may_ring(p)) {
            qemu_mutex_lock(&p->out_lock);
            p->tx = tsr_ring_create(TESSERA_RING_SIZE, &fd);
            qemu_mutex_unlock(&p->out_lock);
        }
        tessera_send_hello(p, TSR_ICI_HELLO_MAGIC, false);
        if (p->s->ici_key && !tessera_send_challenge(p)) {
            tessera_auth_refuse(p, "no nonce could be drawn");
        }
    } else if (event == CHR_EVENT_CLOSED) {
        /* The thread gives nothing more to a link going down. */
        tessera_rx_set(p, false);
        qemu_mutex_lock(&p->out_lock);
        fifo8_reset(&p->out);
        qemu_mutex_unlock(&p->out_lock);
        tsr_ici_disconnected(tessera_ici(p->s), p->index);
        tsr_ici_set_transport(tessera_ici(p->s), p->index,
                              TSR_ICI_TRANSPORT_NONE);
        tessera_ring_drop(p);
        p->phase = TESSERA_PHASE_CLOSED;
        p->hello_len = 0;
    }
}

/*
 * Up to three numbers joined by @sep, each @min to 255; dimensions not
 * given are @min.
 */
static bool tessera_parse_list(const char *text, char sep, unsigned int min,
                               uint8_t out[TSR_ICI_MAX_DIMS], unsigned int *n)
{
    char seps[2] = { sep, 0 };
    g_auto(GStrv) parts = g_strsplit(text, seps, -1);
    unsigned int i;

    *n = g_strv_length(parts);
    if (!*n || *n > TSR_ICI_MAX_DIMS) {
        return false;
    }
    for (i = 0; i < TSR_ICI_MAX_DIMS; i++) {
        uint64_t v = min;

        if (i < *n && (qemu_strtou64(parts[i], NULL, 10, &v) || v < min ||
                       v > 255)) {
            return false;
        }
        out[i] = v;
    }
    return true;
}

/* The slice identity properties. */
static bool tessera_slice(TesseraState *s, TsrSlice *sl, Error **errp)
{
    unsigned int dims = 1, n;
    const char *w;

    *sl = (TsrSlice){ .slice_id = s->slice_id,
                      .topo = { .dims = { 1, 1, 1 } } };
    if (s->slice_dims &&
        !tessera_parse_list(s->slice_dims, 'x', 1, sl->topo.dims, &dims)) {
        error_setg(errp, "tessera: slice-dims '%s' is not 1 to 3 sizes of "
                   "1 to 255 joined by 'x' (e.g. 4, 2x2, 4x4x4)",
                   s->slice_dims);
        return false;
    }
    if (s->coords &&
        (!tessera_parse_list(s->coords, ',', 0, sl->coords, &n) ||
         n > dims || !tsr_topology_has(&sl->topo, sl->coords))) {
        error_setg(errp, "tessera: coords '%s' is not a chip of a %s slice "
                   "(one number per dimension, from 0)", s->coords,
                   s->slice_dims ? s->slice_dims : "1");
        return false;
    }
    for (w = s->wrap ? s->wrap : ""; *w; w++) {
        if (*w < 'x' || *w > 'z' || (unsigned int)(*w - 'x') >= dims) {
            error_setg(errp, "tessera: wrap '%s': each letter must name a "
                       "dimension of the slice (x, y, z)", s->wrap);
            return false;
        }
        sl->topo.wrap[*w - 'x'] = true;
    }
    return true;
}

/* Wire every port that has a chardev into the chip's ICI engine. */
static bool tessera_ici_realize(TesseraState *s, Error **errp)
{
    TsrIci *ici = tessera_ici(s);
    TsrSlice sl;
    unsigned int i;

    for (i = 0; i < TSR_ICI_MAX_PORTS; i++) {
        TesseraPort *p = &s->ports[i];

        p->s = s;
        p->index = i;
        p->peer_fd = -1;
        p->rx_bh = qemu_bh_new(tessera_ring_read_bh, p);
        qemu_mutex_init(&p->out_lock);
        qemu_mutex_init(&p->rx_lock);
        fifo8_create(&p->out, TESSERA_PORT_BUF);
        p->out_made = true;
    }
    s->ici_bh = qemu_bh_new(tessera_ici_bh, s);
    s->ici_timer = timer_new_ns(QEMU_CLOCK_REALTIME, tessera_ici_tick, s);
    if (!tessera_slice(s, &sl, errp)) {
        return false;
    }
    memcpy(s->ici_coords, sl.coords, sizeof(s->ici_coords));
    if (s->ici_secret &&
        qcrypto_secret_lookup(s->ici_secret, &s->ici_key, &s->ici_key_len,
                              errp)) {
        return false;
    }
    if (s->ici_secret && !s->ici_key_len) {
        error_setg(errp, "tessera: ici-secret '%s' is empty", s->ici_secret);
        return false;
    }
    if (tsr_ici_set_slice(ici, &sl)) {
        error_setg(errp, "tessera: invalid slice");
        return false;
    }
    tsr_ici_set_lender(ici, &tessera_ring_lender, s);
    if (s->ici_retransmit_us) {
        tsr_ici_set_retransmit(ici, (uint64_t)s->ici_retransmit_us * SCALE_US);
    }
    if (s->ici_keepalive_ms != UINT32_MAX) {
        tsr_ici_set_keepalive(ici, (uint64_t)s->ici_keepalive_ms * SCALE_MS);
    }
    if (!s->ici_transport) {
        s->ici_transport = g_strdup("auto");
    }
    if (strcmp(s->ici_transport, "auto") &&
        strcmp(s->ici_transport, "socket")) {
        error_setg(errp, "tessera: ici-transport '%s' is not 'auto' (a "
                   "shared-memory ring where both ends can) or 'socket'",
                   s->ici_transport);
        return false;
    }
    tessera_rx_start(s);
    for (i = 0; i < TSR_ICI_MAX_PORTS; i++) {
        TesseraPort *p = &s->ports[i];

        if (!qemu_chr_fe_backend_connected(&p->chr)) {
            continue;
        }
        if (tsr_ici_attach(ici, i, tessera_port_window(p))) {
            error_setg(errp, "tessera: ici%u: the chip at %s has no "
                       "neighbour that way (the edge of a mesh, or a "
                       "dimension of one chip)", i,
                       s->coords ? s->coords : "0");
            return false;
        }
        p->wired = true;
        qemu_chr_fe_set_handlers(&p->chr, tessera_port_can_receive,
                                 tessera_port_receive, tessera_port_event,
                                 NULL, p, NULL, true);
    }
    tessera_ici_arm(s);
    return true;
}

static void tessera_ici_unrealize(TesseraState *s)
{
    unsigned int i;

    /* First: then only the main loop touches the rings. */
    tessera_rx_stop(s);
    for (i = 0; i < TSR_ICI_MAX_PORTS; i++) {
        TesseraPort *p = &s->ports[i];

        if (p->watch) {
            g_source_remove(p->watch);
            p->watch = 0;
        }
        qemu_chr_fe_deinit(&p->chr, false);
        if (p->rx_bh) {
            qemu_bh_delete(p->rx_bh);
            p->rx_bh = NULL;
        }
        if (p->out_made) {
            tessera_ring_drop(p);
            qemu_mutex_destroy(&p->out_lock);
            qemu_mutex_destroy(&p->rx_lock);
            fifo8_destroy(&p->out);
            p->out_made = false;
        }
    }
    g_free(s->ici_key);
    s->ici_key = NULL;
    if (s->ici_timer) {
        timer_free(s->ici_timer);
        s->ici_timer = NULL;
    }
    if (s->ici_bh) {
        qemu_bh_delete(s->ici_bh);
        s->ici_bh = NULL;
    }
}

/* ------------------------------------------------------------- BAR0 */

static uint64_t tessera_mmio_read(void *opaque, hwaddr addr, unsigned size)
{
    TesseraState *s = opaque;
    uint32_t val = tsr_core_reg_read(s->core, addr);

    trace_tessera_mmio_read(addr, val);
    return val;
}

/*
 * A chip or queue reset is complete when the write returns: the core has
 * cut off the aborted jobs' writes by then, without waiting for them.
 */
static void tessera_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                               unsigned size)
{
    TesseraState *s = opaque;

    trace_tessera_mmio_write(addr, val);
    if (addr == TSR_REG_RESET && val == TSR_RESET_MAGIC) {
        trace_tessera_reset();
    }
    tsr_core_reg_write(s->core, addr, val);
}

static const MemoryRegionOps tessera_mmio_ops = {
    .read = tessera_mmio_read,
    .write = tessera_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 4,
        .max_access_size = 4,
        .unaligned = false,
    },
    .impl = {
        .min_access_size = 4,
        .max_access_size = 4,
    },
};

/* ------------------------------------------------------ configuration */

/* The sparsecores property's default: as many as the preset has. */
#define TESSERA_PRESET_SPARSECORES UINT32_MAX

static bool tessera_config(TesseraState *s, TsrConfig *cfg, Error **errp)
{
    const TsrConfig *o = &s->over;
    const char *why;

    if (tsr_preset_lookup(s->preset, cfg)) {
        error_setg(errp, "tessera: unknown preset '%s' "
                   "(known: v2, v3, v4, v5e, v5p, v6e)", s->preset);
        return false;
    }
#define OVERRIDE(field) do { if (o->field) cfg->field = o->field; } while (0)
    OVERRIDE(tensorcores);
    OVERRIDE(mxus_per_core);
    OVERRIDE(mxu_dim);
    OVERRIDE(vpu_sublanes);
    OVERRIDE(vpu_lanes);
    OVERRIDE(vmem_mib);
    OVERRIDE(clock_mhz);
    OVERRIDE(hbm_gbps);
    OVERRIDE(host_dma_gbps);
    OVERRIDE(ici_ports);
    OVERRIDE(ici_link_gbps);
    OVERRIDE(ici_link_latency_ns);
    OVERRIDE(num_queues);
    OVERRIDE(hbm_size);
    OVERRIDE(sc_tiles);
    /* A new f32 width keeps the preset's bf16 packing unless given too. */
    if (o->sc_simd_f32 && !o->sc_simd_bf16) {
        cfg->sc_simd_bf16 = o->sc_simd_f32 *
                            (cfg->sc_simd_bf16 / cfg->sc_simd_f32);
    }
    OVERRIDE(sc_simd_f32);
    OVERRIDE(sc_simd_bf16);
    OVERRIDE(sc_spmem_kib);
#undef OVERRIDE
    /* 0 is a valid count: the property's default means the preset's. */
    if (o->sparsecores != TESSERA_PRESET_SPARSECORES) {
        cfg->sparsecores = o->sparsecores;
    }
    cfg->debug_regs = o->debug_regs;
    if (s->worker_nice > 19) {
        error_setg(errp, "tessera: worker-nice %u is not 0 (as the main "
                   "loop) to 19", s->worker_nice);
        return false;
    }
    if (tsr_config_check(cfg, &why)) {
        error_setg(errp, "tessera: %s", why);
        return false;
    }
    return true;
}

/* Undo the chip core and its bottom halves (realize failing, or exit). */
static void tessera_core_free(TesseraState *s)
{
    qemu_bh_delete(s->irq_bh);
    qemu_bh_delete(s->run_bh);
    tsr_core_free(s->core);
    s->core = NULL;
}

static void tessera_aer_exit(PCIDevice *pdev)
{
    if (pci_is_express(pdev)) {
        pcie_aer_exit(pdev);
    }
}

/*
 * D0 and D3hot, as the PCI PM spec has every function: in D3hot the BARs
 * answer nothing (QEMU unmaps them outside D0), and the way back to D0 is
 * an internal reset (No_Soft_Reset clear: the function keeps nothing but
 * its PM state), after which the OS restores config space and the driver
 * programs the chip afresh.
 */
static bool tessera_pm_init(PCIDevice *pdev, Error **errp)
{
    if (pci_pm_init(pdev, TESSERA_PM_CAP_OFFSET, errp) < 0) {
        return false;
    }
    pci_set_word(pdev->config + TESSERA_PM_CAP_OFFSET + PCI_PM_PMC,
                 PCI_PM_CAP_VER_1_2);
    pci_set_word(pdev->wmask + TESSERA_PM_CAP_OFFSET + PCI_PM_CTRL,
                 PCI_PM_CTRL_STATE_MASK);
    return true;
}

static uint8_t tessera_pm_state(PCIDevice *pdev)
{
    return pci_get_word(pdev->config + TESSERA_PM_CAP_OFFSET + PCI_PM_CTRL) &
           PCI_PM_CTRL_STATE_MASK;
}

static void tessera_realize(PCIDevice *pdev, Error **errp)
{
    TesseraState *s = TESSERA(pdev);
    TsrConfig cfg;
    unsigned int v;

    if (!tessera_config(s, &cfg, errp)) {
        return;
    }
    pci_config_set_interrupt_pin(pdev->config, 1);
    if (!tessera_pm_init(pdev, errp)) {
        return;
    }
    /* On a conventional PCI bus (-M pc) the chip has neither FLR nor AER. */
    if (pci_is_express(pdev)) {
        pcie_endpoint_cap_init(pdev, TESSERA_PCIE_CAP_OFFSET);
        pcie_cap_flr_init(pdev);
        /*
         * Error reporting the guest enables, and AER: pcie_aer_inject_error
         * in QEMU's monitor reaches the guest through the root port.
         */
        pcie_cap_deverr_init(pdev);
        if (pcie_aer_init(pdev, PCI_ERR_VER, TESSERA_AER_OFFSET,
                          PCI_ERR_SIZEOF, errp) < 0) {
            return;
        }
    }

    if (!memory_region_init_ram(&s->hbm, OBJECT(s), "tessera-hbm",
                                cfg.hbm_size, errp)) {
        tessera_aer_exit(pdev);
        return;
    }
    s->core = tsr_core_new(&cfg, memory_region_get_ram_ptr(&s->hbm),
                           &tessera_core_ops, s);
    if (!s->core) {
        error_setg(errp, "tessera: cannot create the chip core");
        tessera_aer_exit(pdev);
        return;
    }
    s->run_bh = qemu_bh_new_guarded(tessera_run_bh, s,
                                    &DEVICE(pdev)->mem_reentrancy_guard);
    s->irq_bh = qemu_bh_new_guarded(tessera_irq_bh, s,
                                    &DEVICE(pdev)->mem_reentrancy_guard);

    memory_region_init(&s->bar0, OBJECT(s), "tessera-bar0", TSR_BAR0_SIZE);
    memory_region_init_io(&s->regs, OBJECT(s), &tessera_mmio_ops, s,
                          "tessera-regs", TSR_BAR0_REGS_SIZE);
    memory_region_add_subregion(&s->bar0, 0, &s->regs);
    pci_register_bar(pdev, TSR_BAR_REGS, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar0);
    pci_register_bar(pdev, TSR_BAR_HBM, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64 |
                     PCI_BASE_ADDRESS_MEM_PREFETCH, &s->hbm);

    if (msix_init(pdev, TSR_MSIX_VECTORS,
                  &s->bar0, TSR_BAR_REGS, TSR_BAR0_MSIX_TABLE,
                  &s->bar0, TSR_BAR_REGS, TSR_BAR0_MSIX_PBA, 0, errp)) {
        tessera_core_free(s);
        tessera_aer_exit(pdev);
        return;
    }
    for (v = 0; v < TSR_MSIX_VECTORS; v++) {
        msix_vector_use(pdev, v);
    }
    if (!tessera_ici_realize(s, errp)) {
        tessera_ici_unrealize(s);
        msix_uninit(pdev, &s->bar0, &s->bar0);
        tessera_core_free(s);
        tessera_aer_exit(pdev);
        return;
    }
    s->trace_name = g_strdup(DEVICE(s)->id ? DEVICE(s)->id :
                             object_get_canonical_path_component(OBJECT(s)));
    tessera_workers_start(s);
}

static void tessera_exit(PCIDevice *pdev)
{
    TesseraState *s = TESSERA(pdev);

    tsr_core_reset(s->core);
    tessera_workers_stop(s);
    tessera_ici_unrealize(s);
    msix_uninit(pdev, &s->bar0, &s->bar0);
    tessera_core_free(s);
    tessera_aer_exit(pdev);
    g_free(s->trace_name);
    s->trace_name = NULL;
}

static void tessera_write_config(PCIDevice *pdev, uint32_t addr,
                                 uint32_t val, int len)
{
    uint8_t was = tessera_pm_state(pdev), now;

    pci_default_write_config(pdev, addr, val, len);
    now = tessera_pm_state(pdev);
    if (now != was) {
        trace_tessera_pm_state(was, now);
        if (was == TESSERA_PM_D3HOT && now == TESSERA_PM_D0) {
            /* The internal reset of a function without No_Soft_Reset. */
            pci_device_reset(pdev);
            return;
        }
    }
    if (pci_is_express(pdev)) {
        pcie_cap_flr_write_config(pdev, addr, val, len);
        pcie_aer_write_config(pdev, addr, val, len);
    }
}

static void tessera_reset_hold(Object *obj, ResetType type)
{
    TesseraState *s = TESSERA(obj);

    trace_tessera_reset();
    tsr_core_reset(s->core);
    qatomic_set(&s->irq_pending, 0);
    if (pci_is_express(PCI_DEVICE(obj))) {
        pcie_cap_deverr_reset(PCI_DEVICE(obj));
    }
}

/* ------------------------------------------------- fault injection */

/*
 * Faults the host injects at run time, e.g.
 *   qom-set /machine/peripheral/tessera0 fault-fail-dma 3
 * Each is a field of the core's TsrFaults; reading gives what is still
 * pending.  "fault-fatal" raises a fatal error when set to true.
 */
typedef struct TesseraFaultProp {
    const char *name;
    bool wide;                  /* uint64 rather than uint32 */
    size_t offset;              /* in TsrFaults */
    const char *desc;
} TesseraFaultProp;

static const TesseraFaultProp tessera_fault_props[] = {
    { "fault-hang-queues", false, offsetof(TsrFaults, hang_queues),
      "mask of queues that stop taking jobs (until reset)" },
    { "fault-fail-dma", false, offsetof(TsrFaults, fail_dma),
      "fail the next N system-memory transfers" },
    { "fault-poison-addr", true, offsetof(TsrFaults, poison_addr),
      "start of the HBM range whose reads fail with an ECC error" },
    { "fault-poison-size", true, offsetof(TsrFaults, poison_size),
      "size of that range, 0 for none" },
    { "fault-ecc-correctable", false, offsetof(TsrFaults, ecc_correctable),
      "the next N HBM reads correct an error" },
    { "fault-drop-irqs", false, offsetof(TsrFaults, drop_irqs),
      "lose the next N interrupts" },
    { "fault-hang-after", false, offsetof(TsrFaults, hang_after),
      "the next job to start hangs after N commands (until a reset)" },
};

static bool tessera_fault_ready(TesseraState *s, Error **errp)
{
    if (!s->core) {
        error_setg(errp, "tessera: faults can be injected once realized");
        return false;
    }
    return true;
}

static void tessera_get_fault(Object *obj, Visitor *v, const char *name,
                              void *opaque, Error **errp)
{
    const TesseraFaultProp *p = opaque;
    TesseraState *s = TESSERA(obj);
    TsrFaults f = { 0 };
    uint64_t val;

    if (s->core) {
        tsr_core_get_faults(s->core, &f);
    }
    if (p->wide) {
        val = *(uint64_t *)((uint8_t *)&f + p->offset);
        visit_type_uint64(v, name, &val, errp);
    } else {
        uint32_t v32 = *(uint32_t *)((uint8_t *)&f + p->offset);

        visit_type_uint32(v, name, &v32, errp);
    }
}

static void tessera_set_fault(Object *obj, Visitor *v, const char *name,
                              void *opaque, Error **errp)
{
    const TesseraFaultProp *p = opaque;
    TesseraState *s = TESSERA(obj);
    uint64_t val;
    uint32_t v32;
    TsrFaults f;

    if (p->wide ? !visit_type_uint64(v, name, &val, errp)
                : !visit_type_uint32(v, name, &v32, errp)) {
        return;
    }
    if (!tessera_fault_ready(s, errp)) {
        return;
    }
    trace_tessera_fault(name, p->wide ? val : v32);
    tsr_core_get_faults(s->core, &f);
    if (p->wide) {
        *(uint64_t *)((uint8_t *)&f + p->offset) = val;
    } else {
        *(uint32_t *)((uint8_t *)&f + p->offset) = v32;
    }
    tsr_core_set_faults(s->core, &f);
}

static void tessera_get_fatal(Object *obj, Visitor *v, const char *name,
                              void *opaque, Error **errp)
{
    TesseraState *s = TESSERA(obj);
    bool fatal = s->core &&
                 (tsr_core_reg_read(s->core, TSR_REG_STATUS) &
                  TSR_STATUS_FATAL);

    visit_type_bool(v, name, &fatal, errp);
}

static void tessera_set_fatal(Object *obj, Visitor *v, const char *name,
                              void *opaque, Error **errp)
{
    TesseraState *s = TESSERA(obj);
    bool fatal;

    if (!visit_type_bool(v, name, &fatal, errp) ||
        !tessera_fault_ready(s, errp)) {
        return;
    }
    if (fatal) {
        trace_tessera_fault(name, 1);
        tsr_core_raise_fatal(s->core);
    }
}

/*
 * "flr": a function-level reset the host makes behind the guest's back, as
 * a hypervisor resets a function it passes through (VFIO_DEVICE_RESET):
 * the chip loses its registers and the jobs it ran, keeps its HBM, and the
 * config space the guest set (BARs, bus mastering, MSI-X) stays, as the
 * host saves and restores it around the reset.  No one tells the guest:
 * its driver finds the chip reset under it (Documentation/driver.md).
 */
static void tessera_set_flr(Object *obj, Visitor *v, const char *name,
                            void *opaque, Error **errp)
{
    TesseraState *s = TESSERA(obj);
    bool flr;

    if (!visit_type_bool(v, name, &flr, errp) ||
        !tessera_fault_ready(s, errp)) {
        return;
    }
    if (flr) {
        trace_tessera_fault(name, 1);
        tsr_core_reset(s->core);
        qatomic_set(&s->irq_pending, 0);
    }
}

/*
 * Link faults of ICI port N, from the host: the string property iciN-faults,
 * e.g.
 *   qom-set /machine/peripheral/tessera0 ici0-faults drop-ppm=1000,seed=7
 * Keys not named keep their value; reading gives every key, counts as
 * what is left of them.  The actions down=on and retrain=on do what the
 * port's CONTROL register does, after the faults are set.
 */
typedef struct TesseraLinkFaultKey {
    const char *key;
    unsigned int field;         /* TSR_LINK_FAULT_* */
    size_t offset;              /* in TsrLinkFaults */
    bool wide;                  /* uint64 rather than uint32 */
    uint64_t max;               /* in the key's unit */
    uint64_t scale;             /* TsrLinkFaults units per key unit */
} TesseraLinkFaultKey;

static const TesseraLinkFaultKey tessera_link_fault_keys[] = {
    { "drop-next", TSR_LINK_FAULT_DROP_NEXT,
      offsetof(TsrLinkFaults, drop_next), false, UINT32_MAX, 1 },
    { "drop-ppm", TSR_LINK_FAULT_DROP_PPM,
      offsetof(TsrLinkFaults, drop_ppm), false, TSR_LINK_FAULT_MAX_PPM, 1 },
    { "corrupt-next", TSR_LINK_FAULT_CORRUPT_NEXT,
      offsetof(TsrLinkFaults, corrupt_next), false, UINT32_MAX, 1 },
    { "corrupt-ppm", TSR_LINK_FAULT_CORRUPT_PPM,
      offsetof(TsrLinkFaults, corrupt_ppm), false, TSR_LINK_FAULT_MAX_PPM, 1 },
    { "drop-acks", TSR_LINK_FAULT_DROP_ACKS_NEXT,
      offsetof(TsrLinkFaults, drop_acks_next), false, UINT32_MAX, 1 },
    { "delay-us", TSR_LINK_FAULT_DELAY,
      offsetof(TsrLinkFaults, delay_ns), true, UINT64_MAX / SCALE_US,
      SCALE_US },
    { "seed", TSR_LINK_FAULT_SEED,
      offsetof(TsrLinkFaults, seed), true, UINT64_MAX, 1 },
};

static uint64_t tessera_link_fault_get(const TsrLinkFaults *f,
                                       const TesseraLinkFaultKey *k)
{
    const uint8_t *p = (const uint8_t *)f + k->offset;

    return (k->wide ? *(const uint64_t *)p : *(const uint32_t *)p) / k->scale;
}

static void tessera_link_fault_put(TsrLinkFaults *f,
                                   const TesseraLinkFaultKey *k, uint64_t val)
{
    uint8_t *p = (uint8_t *)f + k->offset;

    if (k->wide) {
        *(uint64_t *)p = val * k->scale;
    } else {
        *(uint32_t *)p = val;
    }
}

/* The members of a parsed iciN-faults value: faults, then actions. */
static bool tessera_link_faults_visit(Visitor *v, TsrLinkFaults *f,
                                      unsigned int *fields, bool *down,
                                      bool *retrain, Error **errp)
{
    bool present;
    size_t i;

    for (i = 0; i < ARRAY_SIZE(tessera_link_fault_keys); i++) {
        const TesseraLinkFaultKey *k = &tessera_link_fault_keys[i];
        uint64_t val;

        if (!visit_optional(v, k->key, &present)) {
            continue;
        }
        if (!visit_type_uint64(v, k->key, &val, errp)) {
            return false;
        }
        if (val > k->max) {
            error_setg(errp, "%s=%" PRIu64 " is out of range (at most %"
                       PRIu64 ")", k->key, val, k->max);
            return false;
        }
        tessera_link_fault_put(f, k, val);
        *fields |= k->field;
    }
    if (visit_optional(v, "down", &present) &&
        !visit_type_bool(v, "down", down, errp)) {
        return false;
    }
    if (visit_optional(v, "retrain", &present) &&
        !visit_type_bool(v, "retrain", retrain, errp)) {
        return false;
    }
    return visit_check_struct(v, errp);
}

static bool tessera_link_faults_parse(const char *text, TsrLinkFaults *f,
                                      unsigned int *fields, bool *down,
                                      bool *retrain, Error **errp)
{
    g_autoptr(QDict) args = keyval_parse(text, NULL, NULL, errp);
    Visitor *v;
    bool ok;

    if (!args) {
        return false;
    }
    v = qobject_input_visitor_new_keyval(QOBJECT(args));
    ok = visit_start_struct(v, NULL, NULL, 0, errp);
    if (ok) {
        ok = tessera_link_faults_visit(v, f, fields, down, retrain, errp);
        visit_end_struct(v, NULL);
    }
    visit_free(v);
    return ok;
}

/* The port an iciN-faults property names, if it has a chardev. */
static bool tessera_link_faults_port(TesseraState *s, void *opaque,
                                     unsigned int *port, Error **errp)
{
    *port = (TesseraPort *)opaque - s->ports;
    if (!tessera_fault_ready(s, errp)) {
        return false;
    }
    if (!s->ports[*port].wired) {
        error_setg(errp, "tessera: ici%u-faults: port %u has no chardev "
                   "(property ici%u)", *port, *port, *port);
        return false;
    }
    return true;
}

static void tessera_get_link_faults(Object *obj, Visitor *v, const char *name,
                                    void *opaque, Error **errp)
{
    TesseraState *s = TESSERA(obj);
    g_autoptr(GString) text = g_string_new(NULL);
    TsrLinkFaults f;
    unsigned int port;
    size_t i;
    char *str;

    if (!tessera_link_faults_port(s, opaque, &port, errp)) {
        return;
    }
    tsr_ici_get_faults(tessera_ici(s), port, &f);
    for (i = 0; i < ARRAY_SIZE(tessera_link_fault_keys); i++) {
        const TesseraLinkFaultKey *k = &tessera_link_fault_keys[i];

        g_string_append_printf(text, "%s%s=%" PRIu64, i ? "," : "", k->key,
                               tessera_link_fault_get(&f, k));
    }
    str = text->str;
    visit_type_str(v, name, &str, errp);
}

static void tessera_set_link_faults(Object *obj, Visitor *v, const char *name,
                                    void *opaque, Error **errp)
{
    TesseraState *s = TESSERA(obj);
    g_autofree char *text = NULL;
    TsrLinkFaults f = { 0 };
    unsigned int port, fields = 0;
    bool down = false, retrain = false;
    Error *err = NULL;

    if (!visit_type_str(v, name, &text, errp) ||
        !tessera_link_faults_port(s, opaque, &port, errp)) {
        return;
    }
    if (!tessera_link_faults_parse(text, &f, &fields, &down, &retrain,
                                   &err)) {
        error_propagate_prepend(errp, err, "tessera: %s: ", name);
        return;
    }
    trace_tessera_ici_faults(port, text);
    tsr_ici_set_faults(tessera_ici(s), port, &f, fields);
    if (down) {
        tsr_ici_port_control(tessera_ici(s), port, TSR_ICI_CTRL_DOWN);
    }
    if (retrain) {
        tsr_ici_port_control(tessera_ici(s), port, TSR_ICI_CTRL_RETRAIN);
    }
    tessera_ici_arm(s);
}

static void tessera_add_link_fault_props(Object *obj)
{
    TesseraState *s = TESSERA(obj);
    unsigned int i;

    for (i = 0; i < TSR_ICI_MAX_PORTS; i++) {
        g_autofree char *name = g_strdup_printf("ici%u-faults", i);

        object_property_add(obj, name, "str", tessera_get_link_faults,
                            tessera_set_link_faults, NULL, &s->ports[i]);
        object_property_set_description(obj, name,
            "link faults of the port, e.g. drop-next=1,drop-ppm=1000,"
            "corrupt-next=0,corrupt-ppm=0,drop-acks=0,delay-us=0,seed=7; "
            "actions down=on, retrain=on");
    }
}

static const char *const tessera_link_state_names[] = TSR_ICI_STATE_NAMES;

/*
 * The wired ports' states and peers, for launchers that wait for a slice
 * to come up: the read-only string property ici-links, a space-separated
 * list of PORT:STATE, then :X,Y,Z:PEERPORT once the port has heard its
 * peer, and :SLICE when the peer's slice is not this chip's:
 *
 *   qom-get /machine/peripheral/tessera0 ici-links
 *   "0:up:1,0,0:1 1:training 2:miswired:0,1,0:2 3:foreign:0,1,0:3:7"
 */
static void tessera_get_ici_links(Object *obj, Visitor *v, const char *name,
                                  void *opaque, Error **errp)
{
    TesseraState *s = TESSERA(obj);
    g_autoptr(GString) text = g_string_new(NULL);
    unsigned int i;
    char *str;

    for (i = 0; s->core && i < TSR_ICI_MAX_PORTS; i++) {
        TsrLinkId peer;
        uint32_t state;
        bool known;

        if (!s->ports[i].wired) {
            continue;
        }
        known = tsr_ici_port_peer(tessera_ici(s), i, &state, &peer);
        g_string_append_printf(text, "%s%u:%s", text->len ? " " : "", i,
                               state < ARRAY_SIZE(tessera_link_state_names) ?
                               tessera_link_state_names[state] : "unknown");
        if (!known) {
            continue;
        }
        g_string_append_printf(text, ":%u,%u,%u:%u", peer.coords[0],
                               peer.coords[1], peer.coords[2], peer.port);
        if (peer.slice_id != s->slice_id) {
            g_string_append_printf(text, ":%" PRIu32, peer.slice_id);
        }
    }
    str = text->str;
    visit_type_str(v, name, &str, errp);
}

/*
 * ici-reconnects, ici-auth-refused: PORT:COUNT of every wired port,
 * space-separated; @opaque the count's offset in TesseraPort.
 */
static void tessera_get_port_counts(Object *obj, Visitor *v, const char *name,
                                    void *opaque, Error **errp)
{
    TesseraState *s = TESSERA(obj);
    g_autoptr(GString) text = g_string_new(NULL);
    unsigned int i;
    char *str;

    for (i = 0; i < TSR_ICI_MAX_PORTS; i++) {
        if (s->ports[i].wired) {
            g_string_append_printf(text, "%s%u:%" PRIu64, text->len ? " " : "",
                                   i, *(uint64_t *)((char *)&s->ports[i] +
                                                    (uintptr_t)opaque));
        }
    }
    str = text->str;
    visit_type_str(v, name, &str, errp);
}

static bool tessera_get_rx_stall(Object *obj, Error **errp)
{
    return qatomic_read(&TESSERA(obj)->rx_stall);
}

static void tessera_set_rx_stall(Object *obj, bool stall, Error **errp)
{
    TesseraState *s = TESSERA(obj);

    qatomic_set(&s->rx_stall, stall);
    tsr_ring_kick(&tessera_rx.ctl);
}

static void tessera_add_fault_props(Object *obj)
{
    size_t i;

    for (i = 0; i < ARRAY_SIZE(tessera_fault_props); i++) {
        const TesseraFaultProp *p = &tessera_fault_props[i];

        object_property_add(obj, p->name, p->wide ? "uint64" : "uint32",
                            tessera_get_fault, tessera_set_fault, NULL,
                            (void *)p);
        object_property_set_description(obj, p->name, p->desc);
    }
    object_property_add(obj, "fault-fatal", "bool", tessera_get_fatal,
                        tessera_set_fatal, NULL, NULL);
    object_property_set_description(obj, "fault-fatal",
                                    "raise a fatal error (needs a reset)");
    object_property_add(obj, "flr", "bool", NULL, tessera_set_flr, NULL,
                        NULL);
    object_property_set_description(obj, "flr",
        "write true: a function-level reset by the host, unannounced to "
        "the guest (config space kept)");
    tessera_add_link_fault_props(obj);
    object_property_add(obj, "ici-links", "str", tessera_get_ici_links,
                        NULL, NULL, NULL);
    object_property_set_description(obj, "ici-links",
        "the wired ICI ports' states and peers, read-only: "
        "PORT:STATE[:X,Y,Z:PEERPORT[:SLICE]], space-separated");
    object_property_add(obj, "ici-reconnects", "str",
                        tessera_get_port_counts, NULL, NULL,
                        (void *)offsetof(TesseraPort, reconnects));
    object_property_set_description(obj, "ici-reconnects",
        "connections of each wired ICI port after its first, read-only: "
        "PORT:COUNT, space-separated");
    object_property_add(obj, "ici-auth-refused", "str",
                        tessera_get_port_counts, NULL, NULL,
                        (void *)offsetof(TesseraPort, auth_refused));
    object_property_set_description(obj, "ici-auth-refused",
        "peers each wired ICI port refused for want of the slice's key, "
        "read-only: PORT:COUNT, space-separated");
    object_property_add(obj, "ici-futile-wakeups", "str",
                        tessera_get_port_counts, NULL, NULL,
                        (void *)offsetof(TesseraPort,
                                         rx_watch.futile_wakeups));
    object_property_set_description(obj, "ici-futile-wakeups",
        "wake-ups of the receive thread by each wired ICI port's peer with "
        "nothing in its ring, read-only: PORT:COUNT, space-separated");
    object_property_add_bool(obj, "x-ici-rx-stall", tessera_get_rx_stall,
                             tessera_set_rx_stall);
    object_property_set_description(obj, "x-ici-rx-stall",
        "for tests: the receive thread reads no ring, as if starved");
}

static const Property tessera_properties[] = {
    DEFINE_PROP_STRING("preset", TesseraState, preset),
    DEFINE_PROP_UINT32("tensorcores", TesseraState, over.tensorcores, 0),
    DEFINE_PROP_UINT32("mxus-per-core", TesseraState, over.mxus_per_core, 0),
    DEFINE_PROP_UINT32("mxu-dim", TesseraState, over.mxu_dim, 0),
    DEFINE_PROP_UINT32("vpu-sublanes", TesseraState, over.vpu_sublanes, 0),
    DEFINE_PROP_UINT32("vpu-lanes", TesseraState, over.vpu_lanes, 0),
    DEFINE_PROP_UINT32("vmem-mib", TesseraState, over.vmem_mib, 0),
    DEFINE_PROP_UINT32("clock-mhz", TesseraState, over.clock_mhz, 0),
    DEFINE_PROP_UINT32("hbm-gbps", TesseraState, over.hbm_gbps, 0),
    DEFINE_PROP_UINT32("host-dma-gbps", TesseraState, over.host_dma_gbps, 0),
    DEFINE_PROP_UINT32("ici-ports", TesseraState, over.ici_ports, 0),
    DEFINE_PROP_UINT32("ici-link-gbps", TesseraState, over.ici_link_gbps, 0),
    DEFINE_PROP_UINT32("ici-link-latency-ns", TesseraState,
                       over.ici_link_latency_ns, 0),
    DEFINE_PROP_UINT32("queues", TesseraState, over.num_queues, 0),
    DEFINE_PROP_SIZE("hbm-size", TesseraState, over.hbm_size, 0),
    DEFINE_PROP_UINT32("sparsecores", TesseraState, over.sparsecores,
                       TESSERA_PRESET_SPARSECORES),
    DEFINE_PROP_UINT32("sc-tiles", TesseraState, over.sc_tiles, 0),
    DEFINE_PROP_UINT32("sc-simd", TesseraState, over.sc_simd_f32, 0),
    DEFINE_PROP_UINT32("sc-simd-bf16", TesseraState, over.sc_simd_bf16, 0),
    DEFINE_PROP_UINT32("sc-spmem-kib", TesseraState, over.sc_spmem_kib, 0),
    DEFINE_PROP_BOOL("debug-regs", TesseraState, over.debug_regs, false),
    DEFINE_PROP_UINT32("slice-id", TesseraState, slice_id, 0),
    DEFINE_PROP_STRING("slice-dims", TesseraState, slice_dims),
    DEFINE_PROP_STRING("coords", TesseraState, coords),
    DEFINE_PROP_STRING("wrap", TesseraState, wrap),
    /* The queue workers' nice, 1-19, under the main loop's; 0: the same. */
    DEFINE_PROP_UINT32("worker-nice", TesseraState, worker_nice, 0),
    /* For tests: a retransmit timer no busy host fires by itself. */
    DEFINE_PROP_UINT32("x-ici-retransmit-us", TesseraState, ici_retransmit_us,
                       0),
    /* For test peers that never answer a probe: 0 turns it off. */
    DEFINE_PROP_UINT32("x-ici-keepalive-ms", TesseraState, ici_keepalive_ms,
                       UINT32_MAX),
    /* auto: a shared-memory ring pair where both ends can; or socket. */
    DEFINE_PROP_STRING("ici-transport", TesseraState, ici_transport),
    /* Futex doorbells and the receive thread where both ends have them. */
    DEFINE_PROP_BOOL("ici-rx-thread", TesseraState, ici_rx_thread, true),
    /* The id of a secret object: the slice's key, which its peers prove. */
    DEFINE_PROP_STRING("ici-secret", TesseraState, ici_secret),
    DEFINE_PROP_CHR("ici0", TesseraState, ports[0].chr),
    DEFINE_PROP_CHR("ici1", TesseraState, ports[1].chr),
    DEFINE_PROP_CHR("ici2", TesseraState, ports[2].chr),
    DEFINE_PROP_CHR("ici3", TesseraState, ports[3].chr),
    DEFINE_PROP_CHR("ici4", TesseraState, ports[4].chr),
    DEFINE_PROP_CHR("ici5", TesseraState, ports[5].chr),
};

static void tessera_instance_init(Object *obj)
{
    TesseraState *s = TESSERA(obj);

    s->preset = g_strdup(TESSERA_DEFAULT_PRESET);
    tessera_add_fault_props(obj);
}

/* Jobs, rings and HBM live outside any VMState: not migratable yet. */
static const VMStateDescription tessera_vmstate = {
    .name = TYPE_TESSERA,
    .unmigratable = 1,
};

static void tessera_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);
    ResettableClass *rc = RESETTABLE_CLASS(klass);

    k->realize = tessera_realize;
    k->exit = tessera_exit;
    k->config_write = tessera_write_config;
    k->vendor_id = TSR_PCI_VENDOR_ID;
    k->device_id = TSR_PCI_DEVICE_ID;
    k->revision = TSR_PCI_REVISION;
    k->class_id = TSR_PCI_CLASS >> 8;
    rc->phases.hold = tessera_reset_hold;
    device_class_set_props(dc, tessera_properties);
    dc->vmsd = &tessera_vmstate;
    dc->desc = "Tessera virtual AI accelerator (experimental)";
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static const TypeInfo tessera_info = {
    .name = TYPE_TESSERA,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(TesseraState),
    .instance_init = tessera_instance_init,
    .class_init = tessera_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { }
    },
};

static void tessera_register_types(void)
{
    type_register_static(&tessera_info);
}

type_init(tessera_register_types)
