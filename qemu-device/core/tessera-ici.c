/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera ICI engine (see tessera-ici.h).
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera-ici.h"
#include "tessera-internal.h"

/*
 * Writes a queue may have out at once, waiting for their answers: the
 * queue goes on past a write once its data has left, and learns of a
 * refusal at a later write or at the job's end.
 */
#define ICI_QUEUE_REQS 4
#define ICI_REQS (TSR_MAX_QUEUES * ICI_QUEUE_REQS)
/*
 * Without an answer for this long after the last chunk left: LINK_DOWN.
 * The timeouts nest from the wire up (Documentation/ici.md, "When a
 * peer fails"): a link whose peer is silent goes down within
 * ICI_LINK_DEAD_NS, and a chip on the way whose next link is down
 * answers at once; this covers a target that stopped after its link
 * took the last chunk.  All of them end well inside the driver's job
 * timeout (2 s in the tests, 5 s by default), so the link, not the
 * watchdog, fails the job.
 */
#define ICI_ANSWER_TIMEOUT_NS 1500000000ull
/*
 * Resend what is unacknowledged after this long: long beside the jitter of
 * host threads and sockets, so that a resend is a modeled fault's doing.
 */
#define ICI_RETRANSMIT_NS 5000000ull
/*
 * Timeouts in a row that take a port down: with the backoff, a peer that
 * stops answering or reading is given up after 5 + 10 + ... + 320 + 320
 * ms = 0.955 s (ICI_LINK_DEAD_NS).
 */
#define ICI_RETRY_LIMIT 7
/*
 * A peer not heard from for this long is probed, so that a link with
 * nothing in flight notices a neighbour that stopped (SIGSTOP) within
 * the same 0.955 s: the waits fed by it (SEM_WAIT_LINKS) then end.
 */
#define ICI_KEEPALIVE_NS 100000000ull
/*
 * Answers waiting for room on their way back.  Each requester has at most
 * ICI_REQS requests out, so a slice of 256 chips needs at most 256 times
 * that; a hostile peer that asks more loses its answers and times out.
 */
#define ICI_PENDING_ANSWERS (256 * ICI_REQS)
/*
 * Requests whose next chunk a target awaits: every request a slice of 256
 * chips can have out to it at once, as ICI_PENDING_ANSWERS.  More (a
 * hostile peer's requests never finished) evict one, which then fails at
 * its next chunk: conservatively, never silently.
 */
#define ICI_STREAMS (256 * ICI_REQS)
/* Twice the slots, so that a probe stays short however full. */
#define ICI_STREAM_SLOTS (2 * ICI_STREAMS)
/* Cycles the queue spends handing an ICI_WRITE to its ICI DMA. */
#define TSR_ICI_ISSUE_CYCLES 10
/* How long a waiting sender sleeps before checking for an abort again. */
#define ICI_WAIT_SLICE_NS 1000000ull
/*
 * Frames a worker waiting to build chunks in a ring is woken for: a few
 * per wake-up, not one per acknowledgement.
 */
#define ICI_LEND_BATCH 4
/*
 * The number a chunk whose source could not be read is sent under, its
 * frame already committed (lend_chunk()): never the one its target
 * awaits, so that its request is refused there from it on, landing none
 * of it.
 */
#define ICI_CHUNK_UNREAD UINT32_MAX
typedef struct IciPort {
    TsrLink *link;
    TsrIci *ici;
    unsigned int index;
    /*
     * Modeled time of the outgoing direction, in cycles: until when each
     * queue of this chip has its latest frame on the link (see depart()).
     */
    uint64_t busy_until[TSR_MAX_QUEUES];
    /* Bytes of faulted frames already charged to the timeline. */
    uint64_t charged_faults;
    /*
     * Queue workers waiting for room to send on this port (ici->lock).
     * They are woken once a send queue is half empty, not at each frame
     * that leaves it: a worker then queues several chunks per wake-up.
     */
    pthread_cond_t room;
    unsigned int room_waiters[TSR_ICI_VCS];
    /*
     * Workers waiting to build chunks in the transport's memory (see
     * lend_chunk()), woken once ICI_LEND_BATCH frames can go.
     */
    unsigned int lend_waiters[TSR_ICI_VCS];
    /*
     * Chunks being read into frames held in the transport's memory,
     * outside the lock (lend_chunk()); tsr_ici_reclaim() waits for them
     * on ici->cond.
     */
    unsigned int building;
    bool reclaiming;
    /*
     * Where in the transport the frame each queue's worker is filling
     * lies, [filling, filling_end) (equal: none); committing: the queue
     * whose frame is being committed, or -1.
     */
    uint64_t filling[TSR_MAX_QUEUES];
    uint64_t filling_end[TSR_MAX_QUEUES];
    int committing;
    uint32_t transport;     /* enum tsr_ici_transport */
} IciPort;

/* A request being written here: the number of the chunk it sends next. */
typedef struct IciStream {
    uint64_t id;            /* request_id() */
    uint32_t next;
    bool used;
} IciStream;

typedef struct IciReq {
    bool busy;
    bool answered;
    bool minus;             /* the write's TSR_ICI_MSG_MINUS */
    uint8_t dst[TSR_ICI_MAX_DIMS];
    uint32_t number;
    uint32_t status;
    uint32_t command;       /* the write's index in its job */
    uint64_t deadline;      /* ns: LINK_DOWN without an answer by then */
    uint64_t epoch;         /* its first hop's link's, when it began */
} IciReq;

struct TsrIci {
    TsrCore *core;
    TsrSlice slice;
    pthread_mutex_t lock;
    /* Broadcast when links send or answers arrive. */
    pthread_cond_t cond;
    IciPort port[TSR_ICI_MAX_PORTS];
    uint32_t wired;
    uint64_t retransmit_ns;
    uint64_t keepalive_ns;
    IciReq req[TSR_MAX_QUEUES][ICI_QUEUE_REQS];
    /*
     * The chunk each queue's worker builds outside the lock: the copy
     * from HBM and its CRC do not hold up the links.  The worker's own.
     */
    TsrLinkBuf *stage[TSR_MAX_QUEUES];
    /* A transport that lends its memory to the links, if any. */
    const TsrIciLender *lender;
    void *lender_opaque;
    uint32_t next_req;
    /*
     * What a queue looks at each time it wakes, without the lock (a wait
     * on a semaphore must not queue behind the receive path, nor the
     * receive path behind the waits): written under the lock with atomic
     * stores, by publish() before the lock is dropped and take_answer().
     * calm_until[q]: before then (ns), queue q has nothing to learn under
     * the lock (no answer came, no link changed, no answer is late);
     * links_live: the wired ports that are up or resuming; links_epochs:
     * the sum of their links' epochs; deadline: the links' next timer.
     */
    uint64_t calm_until[TSR_MAX_QUEUES];
    uint32_t links_live;
    uint64_t links_epochs;
    uint64_t deadline;
    uint64_t window_table;
    uint32_t window_count;
    uint32_t irq_status;
    uint32_t irq_enable;
    uint32_t ports_changed;
    uint32_t latched_hi;
    /*
     * Requests this chip failed lately, as their target (refused) or on
     * their way (the next link down), answered once: packed source,
     * number.  Their later chunks are dropped.
     */
    uint64_t failed[ICI_REQS];
    unsigned int failed_next;
    /*
     * The requests of several chunks this chip is the target of, between
     * their first chunk and their last (open addressing, linear probing).
     */
    IciStream *streams;
    unsigned int nstreams;
    uint32_t violations;
    uint32_t viol_source;
    uint32_t viol_window;
    uint32_t viol_reason;
    /* Answers that found their channel full, oldest first (a ring). */
    struct tsr_ici_msg *pending;
    unsigned int pending_head;
    unsigned int pending_count;
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint32_t pack_coords(const uint8_t c[3])
{
    return c[0] | c[1] << 8 | c[2] << 16;
}

/* --------------------------------------------------------- interrupts */

/*
 * Latch @causes; interrupt only for an enabled cause not already pending.
 * Until the driver clears it, more of the same (a storm of refused
 * requests, a flapping link) raise nothing more: the counters say how
 * many there were.
 */
static void raise_causes(TsrIci *ici, uint32_t causes)
{
    uint32_t fresh = causes & ~ici->irq_status;

    ici->irq_status |= causes;
    if (fresh & ici->irq_enable) {
        tsr_core_irq(ici->core, TSR_MSIX_VEC_LINK);
    }
}

/* ------------------------------------------------------------- timing */

/* Cycles one frame of @payload bytes takes on a link. */
static uint64_t frame_cycles(TsrIci *ici, uint64_t wire_bytes)
{
    const TsrConfig *cfg = &ici->core->cfg;

    return tsr_cycles_for_bytes(cfg, wire_bytes, cfg->ici_link_gbps);
}

static uint64_t hop_cycles(TsrIci *ici)
{
    const TsrConfig *cfg = &ici->core->cfg;

    return (uint64_t)cfg->ici_link_latency_ns * cfg->clock_mhz / 1000;
}

/*
 * Message @msg, ready at cycle @ready, leaves by @p for the next chip:
 * when it arrives there (Documentation/ici.md, "Timing").  @queue is the
 * queue of this chip that sends it, or TSR_MAX_QUEUES for a message this
 * chip forwards or answers.
 *
 * - The frames of one queue follow each other on the link, each for its
 *   serialization; a message without data too, after the queue's frame on
 *   the wire, so that an increment never arrives before the data sent
 *   ahead of it.
 * - A frame this chip forwards goes on as it arrives (cut-through): one
 *   hop later.  An answer's time feeds nothing modeled.
 * - Frames the link layer sent again since the last call hold the next
 *   message back by their serialization and the round trip of the NAK
 *   that asked for them.
 *
 * Streams sharing a link do not slow each other: which of two would go
 * first is decided by the order the host runs them in, and the modeled
 * clock must not depend on it (design decision 7).  Each message's time
 * depends only on its own stream's program.
 */
static uint64_t depart(IciPort *p, uint64_t ready,
                       const struct tsr_ici_msg *msg, unsigned int queue)
{
    uint64_t wire = sizeof(struct tsr_ici_frame_hdr) + sizeof(*msg) +
                    msg->len + 4;
    uint64_t ser = frame_cycles(p->ici, wire), hop = hop_cycles(p->ici);
    uint64_t faults = tsr_link_fault_bytes(p->link), resend = 0, start;

    if (faults > p->charged_faults) {
        uint64_t frames = (faults - p->charged_faults + wire - 1) / wire;

        resend = frame_cycles(p->ici, faults - p->charged_faults) +
                 frames * 2 * hop;
        p->charged_faults = faults;
    }
    if (queue >= TSR_MAX_QUEUES) {
        return ready + resend + hop;
    }
    start = tsr_max(ready, p->busy_until[queue]) + resend;
    if (msg->len) {
        p->busy_until[queue] = start + ser;
    }
    return start + ser + hop;
}

/* ------------------------------------------------------------ routing */

/*
 * Whether wired port @port carries messages, or will again: up, or its
 * connection lost and not yet given up on (tsr_link_resuming(): a TCP
 * connection cut and re-established within the link's deadline resumes
 * where it was).  What goes by a resuming port waits for it: a write's
 * chunks, a message in transit, an answer, a wait on the links.
 */
static bool port_live(TsrIci *ici, unsigned int port)
{
    TsrLink *link = ici->port[port].link;

    return tsr_link_state(link) == TSR_ICI_STATE_UP ||
           tsr_link_resuming(link);
}

/*
 * Every queue with writes out looks under the lock at its next wake-up
 * (tsr_ici_check()); one without has nothing to learn.
 */
static void stir_queues(TsrIci *ici)
{
    unsigned int q;

    for (q = 0; q < TSR_MAX_QUEUES; q++) {
        if (ici->calm_until[q] != UINT64_MAX) {
            __atomic_store_n(&ici->calm_until[q], 0, __ATOMIC_RELAXED);
        }
    }
}

/*
 * Publish the links' summary that the queues read without the lock (see
 * TsrIci.calm_until); under the lock, after link calls, before dropping
 * it.  A port going down or a link starting afresh stirs every queue and
 * wakes the semaphore waiters: their looks after that wake see the new
 * summary, since the stores come before the wake's wake_lock, which the
 * woken thread takes before it looks (release, then acquire).
 */
static void publish(TsrIci *ici)
{
    uint64_t sum = 0, d = UINT64_MAX;
    uint32_t live = 0;
    unsigned int p;

    for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
        TsrLink *link = ici->port[p].link;

        if (!link) {
            continue;
        }
        live |= port_live(ici, p) ? 1u << p : 0;
        sum += tsr_link_epoch(link);
        d = tsr_min(d, tsr_link_deadline(link));
    }
    __atomic_store_n(&ici->deadline, d, __ATOMIC_RELAXED);
    if (live == ici->links_live && sum == ici->links_epochs) {
        return;
    }
    __atomic_store_n(&ici->links_live, live, __ATOMIC_RELAXED);
    __atomic_store_n(&ici->links_epochs, sum, __ATOMIC_RELAXED);
    stir_queues(ici);
    tsr_core_wake_waiters(ici->core);
    pthread_cond_broadcast(&ici->cond);
}

static void ici_unlock(TsrIci *ici)
{
    publish(ici);
    pthread_mutex_unlock(&ici->lock);
}

/*
 * The port towards @dst (ties round a ring the minus way if @minus),
 * TSR_ROUTE_HERE, or TSR_ROUTE_NONE with *err set (NO_ROUTE, or
 * LINK_DOWN when the port is neither up nor resuming: see port_live()).
 */
static int route(TsrIci *ici, const uint8_t dst[3], bool minus,
                 uint32_t *err)
{
    int port = tsr_route_port_way(&ici->slice.topo, ici->slice.coords, dst,
                                  minus);

    if (port == TSR_ROUTE_HERE) {
        return port;
    }
    if (port == TSR_ROUTE_NONE || !(ici->wired & (1u << port))) {
        *err = TSR_ERR_NO_ROUTE;
        return TSR_ROUTE_NONE;
    }
    if (!port_live(ici, port)) {
        *err = TSR_ERR_LINK_DOWN;
        return TSR_ROUTE_NONE;
    }
    return port;
}

/*
 * Whether link @port (< 0: none, the chip itself) has started afresh
 * since @epoch (tsr_link_epoch()): what a write sent by it before is gone
 * with the old streams, so its answer never comes, and its later chunks
 * must not land alone, perhaps in the windows of a program that came
 * after it.  An end that is up restarts without going down when its peer
 * gave up and was retrained, so the link's state alone does not say so.
 */
static bool restarted(TsrIci *ici, int port, uint64_t epoch)
{
    return port >= 0 && tsr_link_epoch(ici->port[port].link) != epoch;
}

/* The first hop of write @r's chunk @m, as route(); see restarted(). */
static int write_route(TsrIci *ici, const struct tsr_ici_msg *m,
                       const IciReq *r, uint32_t *err)
{
    int port = route(ici, m->dst, m->flags & TSR_ICI_MSG_MINUS, err);

    if (restarted(ici, port, r->epoch)) {
        *err = TSR_ERR_LINK_DOWN;
        return TSR_ROUTE_NONE;
    }
    return port;
}

/*
 * Queue @msg (with its data) on @port, on the channel a frame arriving
 * along @in_dim on @in_vc takes, timed as @queue's (see depart()); false
 * if that channel has no room.  The data is @data, or, with @staged, the sealed
 * buffer *@staged already holds behind the header.
 */
static bool send_msg(TsrIci *ici, unsigned int port, unsigned int in_dim,
                     unsigned int in_vc, struct tsr_ici_msg *msg,
                     const void *data, TsrLinkBuf **staged,
                     unsigned int queue)
{
    IciPort *p = &ici->port[port];
    unsigned int vc = tsr_route_vc(&ici->slice.topo, ici->slice.coords, port,
                                   in_dim, in_vc);
    struct iovec iov[2] = {
        { .iov_base = msg, .iov_len = sizeof(*msg) },
        { .iov_base = (void *)data, .iov_len = msg->len },
    };

    if (!tsr_link_can_send(p->link, vc)) {
        return false;
    }
    msg->arrival = depart(p, msg->arrival, msg, queue);
    if (staged) {
        return tsr_link_send_buf(p->link, vc, staged, msg, now_ns()) == 0;
    }
    return tsr_link_sendv(p->link, vc, iov, 2, now_ns()) == 0;
}

/* ------------------------------------------------------------ windows */

static uint64_t request_id(const struct tsr_ici_msg *m)
{
    return (uint64_t)pack_coords(m->src) << 32 | m->req;
}

/* Whether the request of @m has been failed here already. */
static bool failed_before(TsrIci *ici, const struct tsr_ici_msg *m)
{
    unsigned int i;

    for (i = 0; i < ICI_REQS; i++) {
        if (ici->failed[i] == request_id(m)) {
            return true;
        }
    }
    return false;
}

static void remember_failed(TsrIci *ici, const struct tsr_ici_msg *m)
{
    ici->failed[ici->failed_next++ % ICI_REQS] = request_id(m);
}

static unsigned int stream_home(uint64_t id)
{
    return (id * 0x9e3779b97f4a7c15ull) >> 32 & (ICI_STREAM_SLOTS - 1);
}

static unsigned int stream_next(unsigned int i)
{
    return (i + 1) & (ICI_STREAM_SLOTS - 1);
}

/* The slot of request @id in the table, or the free slot it would take. */
static IciStream *stream_slot(TsrIci *ici, uint64_t id)
{
    unsigned int i = stream_home(id);

    while (ici->streams[i].used && ici->streams[i].id != id) {
        i = stream_next(i);
    }
    return &ici->streams[i];
}

/* Forget @e, moving up the entries that probed past it. */
static void stream_drop(TsrIci *ici, IciStream *e)
{
    unsigned int hole = e - ici->streams, i = hole;

    e->used = false;
    ici->nstreams--;
    for (i = stream_next(i); ici->streams[i].used; i = stream_next(i)) {
        unsigned int home = stream_home(ici->streams[i].id);

        /* It may fill the hole unless its home lies after the hole. */
        if (((i - home) & (ICI_STREAM_SLOTS - 1)) >=
            ((i - hole) & (ICI_STREAM_SLOTS - 1))) {
            ici->streams[hole] = ici->streams[i];
            ici->streams[i].used = false;
            hole = i;
        }
    }
}

/* Make room for one more: forget the first request found from @id's home. */
static void stream_evict(TsrIci *ici, uint64_t id)
{
    unsigned int i = stream_home(id);

    while (!ici->streams[i].used) {
        i = stream_next(i);
    }
    stream_drop(ici, &ici->streams[i]);
}

/* Forget @m's request, refused whole. */
static void stream_forget(TsrIci *ici, const struct tsr_ici_msg *m)
{
    IciStream *e = stream_slot(ici, request_id(m));

    if (e->used) {
        stream_drop(ici, e);
    }
}

/*
 * Whether chunk @m of its request is the one expected next here (see
 * struct tsr_ici_msg): a first chunk starts the request afresh, any other
 * must follow the last one taken.  Keeps the table: a request leaves it
 * at its last chunk or at a gap, and is failed then by the caller.
 */
static bool chunk_in_order(TsrIci *ici, const struct tsr_ici_msg *m)
{
    uint64_t id = request_id(m);
    IciStream *e = stream_slot(ici, id);
    bool last = m->flags & TSR_ICI_MSG_LAST;

    if (m->status == 0) {
        if (last) {
            if (e->used) {
                stream_drop(ici, e);
            }
            return true;
        }
        if (!e->used) {
            if (ici->nstreams == ICI_STREAMS) {
                stream_evict(ici, id);
                e = stream_slot(ici, id);
            }
            *e = (IciStream){ .id = id, .used = true };
            ici->nstreams++;
        }
        e->next = 1;
        return true;
    }
    if (!e->used || e->next != m->status) {
        if (e->used) {
            stream_drop(ici, e);
        }
        return false;
    }
    if (last) {
        stream_drop(ici, e);
    } else {
        e->next++;
    }
    return true;
}

/*
 * Refuse a write: count the request once, latch who and why, interrupt.
 * Its later chunks are refused without a count.
 */
static uint32_t refuse(TsrIci *ici, const struct tsr_ici_msg *m,
                       uint32_t reason)
{
    if (failed_before(ici, m)) {
        return TSR_ERR_REMOTE_ACCESS;
    }
    remember_failed(ici, m);
    ici->violations++;
    ici->viol_source = pack_coords(m->src);
    ici->viol_window = m->window;
    ici->viol_reason = reason;
    raise_causes(ici, TSR_ICI_IRQ_REMOTE_ACCESS);
    return TSR_ERR_REMOTE_ACCESS;
}

static bool inside(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

/* Check the whole request @m against its window; fill @w. */
static uint32_t check_window(TsrIci *ici, const struct tsr_ici_msg *m,
                             struct tsr_ici_window *w)
{
    uint64_t addr;

    if (m->window >= ici->window_count) {
        return refuse(ici, m, TSR_ICI_VIOL_NO_WINDOW);
    }
    addr = ici->window_table + (uint64_t)m->window * sizeof(*w);
    if (tsr_core_dma_read(ici->core, addr, w, sizeof(*w)) ||
        !(w->flags & TSR_ICI_WINDOW_VALID)) {
        return refuse(ici, m, TSR_ICI_VIOL_NO_WINDOW);
    }
    if (w->key != m->key) {
        return refuse(ici, m, TSR_ICI_VIOL_KEY);
    }
    if (!(w->flags & TSR_ICI_WINDOW_WRITE)) {
        return refuse(ici, m, TSR_ICI_VIOL_PERMISSION);
    }
    if (m->req_end < m->req_offset ||
        !inside(m->req_offset, m->req_end - m->req_offset, w->size) ||
        m->offset < m->req_offset ||
        !inside(m->offset - m->req_offset, m->len,
                m->req_end - m->req_offset) ||
        ((m->flags & TSR_ICI_MSG_SEM) &&
         (m->sem_offset % 8 || !inside(m->sem_offset, 8, w->size)))) {
        return refuse(ici, m, TSR_ICI_VIOL_RANGE);
    }
    return TSR_ERR_NONE;
}

/* Write a WRITE chunk at its window, and add to the semaphore if asked. */
static uint32_t apply_write(TsrIci *ici, const struct tsr_ici_msg *m,
                            const uint8_t *data)
{
    TsrCore *core = ici->core;
    struct tsr_ici_window w;
    uint32_t err = check_window(ici, m, &w);
    TsrMem mem;
    uint64_t v;

    if (err) {
        return err;
    }
    pthread_mutex_lock(&core->lock);
    tsr_mem_init(&mem, core, TSR_ICI_WRITER,
                 core->queue[TSR_ICI_WRITER].generation);
    pthread_mutex_unlock(&core->lock);
    if (tsr_mmu_open(&mem, w.context) ||
        (m->len && tsr_mem_write(&mem, w.va + m->offset, data, m->len))) {
        return refuse(ici, m, TSR_ICI_VIOL_FAULT);
    }
    if (!(m->flags & TSR_ICI_MSG_SEM) || !(m->flags & TSR_ICI_MSG_LAST)) {
        return TSR_ERR_NONE;
    }
    /* After the data, which every earlier chunk has written already. */
    pthread_mutex_lock(&core->sem_lock);
    if (!tsr_mem_read(&mem, w.va + m->sem_offset, &v, sizeof(v))) {
        v = htole64(le64toh(v) + m->sem_add);
        tsr_mem_write(&mem, w.va + m->sem_offset, &v, sizeof(v));
    }
    if (!mem.error) {
        tsr_sem_time_record_locked(core, w.context, w.va + m->sem_offset,
                                   false, m->sem_add, m->arrival);
    }
    pthread_mutex_unlock(&core->sem_lock);
    tsr_core_wake_sem(core, w.context, w.va + m->sem_offset);
    return mem.error ? refuse(ici, m, TSR_ICI_VIOL_FAULT) : TSR_ERR_NONE;
}

/* ----------------------------------------------------------- messages */

static bool same_chip(const uint8_t a[3], const uint8_t b[3])
{
    return !memcmp(a, b, TSR_ICI_MAX_DIMS);
}

/*
 * Whether @m may answer request @r: it comes from the chip asked, or it
 * is a LINK_DOWN from a chip on the way there, whose next link is down.
 */
static bool answer_fits(TsrIci *ici, const IciReq *r,
                        const struct tsr_ici_msg *m)
{
    if (same_chip(m->src, r->dst)) {
        return true;
    }
    return m->status == TSR_ERR_LINK_DOWN &&
           tsr_route_arrival_port(&ici->slice.topo, ici->slice.coords, r->dst,
                                  r->minus, m->src) >= 0;
}

/*
 * Take the answer @m to one of this chip's requests; false if it names a
 * request out but cannot be its answer (forged: ignored).  An answer to a
 * request no longer out (one forgotten after a failure) is ignored.
 */
static bool take_answer(TsrIci *ici, const struct tsr_ici_msg *m)
{
    unsigned int i;

    for (i = 0; i < ICI_REQS; i++) {
        IciReq *r = &ici->req[i / ICI_QUEUE_REQS][i % ICI_QUEUE_REQS];

        if (r->busy && !r->answered && r->number == m->req) {
            if (!answer_fits(ici, r, m)) {
                return false;
            }
            r->answered = true;
            r->status = m->status;
            __atomic_store_n(&ici->calm_until[i / ICI_QUEUE_REQS], 0,
                             __ATOMIC_RELAXED);
            pthread_cond_broadcast(&ici->cond);
            if (m->status) {
                /* A wait that hangs on the write ends now. */
                tsr_core_wake_waiters(ici->core);
            }
            return true;
        }
    }
    return true;
}

/* Send the answers that wait, in order, while their channels have room. */
static void flush_answers(TsrIci *ici)
{
    while (ici->pending_count) {
        struct tsr_ici_msg *a = &ici->pending[ici->pending_head];
        int port = tsr_route_port(&ici->slice.topo, ici->slice.coords,
                                  a->dst);

        if (port >= 0 && (ici->wired & (1u << port)) &&
            port_live(ici, port) &&
            !send_msg(ici, port, TSR_ICI_MAX_DIMS, 0, a, NULL, NULL,
                      TSR_MAX_QUEUES)) {
            return;     /* no room, or its link resuming: it waits */
        }
        /* Sent, or its way is down: its requester fails with LINK_DOWN. */
        ici->pending_head = (ici->pending_head + 1) % ICI_PENDING_ANSWERS;
        ici->pending_count--;
    }
}

/*
 * Answer a request.  A chip always takes the messages addressed to it,
 * whatever its outgoing channels hold: were it to wait for room for the
 * answer, two chips writing to each other would each wait for the other
 * to drain (a message-dependent deadlock).  An answer without room waits
 * here instead, behind the answers before it.
 */
static void answer(TsrIci *ici, struct tsr_ici_msg *ans)
{
    int port = tsr_route_port(&ici->slice.topo, ici->slice.coords, ans->dst);

    if (port == TSR_ROUTE_HERE) {
        take_answer(ici, ans);
        return;
    }
    if (port < 0) {
        return;
    }
    flush_answers(ici);
    if (!ici->pending_count &&
        send_msg(ici, port, TSR_ICI_MAX_DIMS, 0, ans, NULL, NULL,
                 TSR_MAX_QUEUES)) {
        return;
    }
    if (ici->pending_count == ICI_PENDING_ANSWERS) {
        return;     /* more requests than any correct slice makes */
    }
    ici->pending[(ici->pending_head + ici->pending_count++) %
                 ICI_PENDING_ANSWERS] = *ans;
}

/*
 * A message for this chip: always taken, so that it never blocks a link.
 * @in is the port it came by, NULL for a chip's write to itself.
 */
static void take_local(TsrIci *ici, IciPort *in, struct tsr_ici_msg *m,
                       const uint8_t *data)
{
    struct tsr_ici_msg ans;
    uint32_t err = TSR_ERR_NONE;

    if (m->type == TSR_ICI_MSG_ANSWER) {
        if (!take_answer(ici, m) && in) {
            tsr_link_count_protocol_error(in->link);
        }
        return;
    }
    if (m->type != TSR_ICI_MSG_WRITE) {
        if (in) {
            tsr_link_count_protocol_error(in->link);
        }
        return;         /* nothing a correct peer sends: dropped */
    }
    if (failed_before(ici, m)) {
        return;         /* answered at its first refused chunk */
    }
    if (!chunk_in_order(ici, m)) {
        /* Cut on its way: what follows the gap must not land either. */
        remember_failed(ici, m);
        err = TSR_ERR_LINK_DOWN;
    } else {
        err = apply_write(ici, m, data);
        if (err) {
            stream_forget(ici, m);
        }
    }
    if (!err && !(m->flags & TSR_ICI_MSG_LAST)) {
        return;
    }
    ans = (struct tsr_ici_msg){
        .type = TSR_ICI_MSG_ANSWER, .req = m->req, .status = err,
        .arrival = m->arrival,
    };
    memcpy(ans.src, ici->slice.coords, sizeof(ans.src));
    memcpy(ans.dst, m->src, sizeof(ans.dst));
    answer(ici, &ans);
}

/*
 * A write for a chip beyond a link that is neither up nor resuming (see
 * port_live()): dropped, and its requester told at once (LINK_DOWN, from
 * this chip), so that it fails now rather than at its answer timeout, and
 * the link the write came by goes on carrying everything else.
 */
static void fail_in_transit(TsrIci *ici, const struct tsr_ici_msg *m)
{
    struct tsr_ici_msg ans = {
        .type = TSR_ICI_MSG_ANSWER, .req = m->req,
        .status = TSR_ERR_LINK_DOWN, .arrival = m->arrival,
    };

    if (m->type != TSR_ICI_MSG_WRITE || failed_before(ici, m)) {
        return;
    }
    remember_failed(ici, m);
    memcpy(ans.src, ici->slice.coords, sizeof(ans.src));
    memcpy(ans.dst, m->src, sizeof(ans.dst));
    answer(ici, &ans);
}

/*
 * Whether message @m, @len bytes with its data, is one a correct
 * neighbour sends on port @in: whole, from a chip whose route to its
 * destination comes in by @in (a neighbour cannot speak for chips whose
 * messages it never carries).
 */
static bool msg_valid(TsrIci *ici, const IciPort *in,
                      const struct tsr_ici_msg *m, size_t len)
{
    return m->len == len - sizeof(*m) &&
           tsr_route_arrival_port(&ici->slice.topo, m->src, m->dst,
                                  m->flags & TSR_ICI_MSG_MINUS,
                                  ici->slice.coords) == (int)in->index;
}

static bool deliver(void *opaque, unsigned int vc, const void *payload,
                    size_t len)
{
    IciPort *in = opaque;
    TsrIci *ici = in->ici;
    struct tsr_ici_msg m;
    unsigned int in_dim = TSR_ICI_PORT_DIM(TSR_ICI_PORT_OPPOSITE(in->index));
    int port;

    if (len < sizeof(m)) {
        tsr_link_count_protocol_error(in->link);
        return true;
    }
    memcpy(&m, payload, sizeof(m));
    if (!msg_valid(ici, in, &m, len)) {
        tsr_link_count_protocol_error(in->link);
        return true;
    }
    if (m.arrival > TSR_ICI_ARRIVAL_MAX) {
        /* It would wrap the modeled clocks it feeds: a peer's lie. */
        tsr_link_count_protocol_error(in->link);
        m.arrival = TSR_ICI_ARRIVAL_MAX;
    }
    port = tsr_route_port_way(&ici->slice.topo, ici->slice.coords, m.dst,
                              m.flags & TSR_ICI_MSG_MINUS);
    if (port == TSR_ROUTE_HERE) {
        take_local(ici, in, &m, (const uint8_t *)payload + sizeof(m));
        return true;
    }
    if (port < 0 || !(ici->wired & (1u << port))) {
        return true;    /* no such chip: dropped, its sender times out */
    }
    if (m.type == TSR_ICI_MSG_WRITE && failed_before(ici, &m)) {
        return true;    /* failed on its way here: the rest goes no further */
    }
    if (!port_live(ici, port)) {
        fail_in_transit(ici, &m);
        return true;
    }
    /*
     * In transit: on to the next chip, untouched; held by the link it
     * came by while the next has no room or is resuming.
     */
    return send_msg(ici, port, in_dim, vc, &m,
                    (const uint8_t *)payload + sizeof(m), NULL,
                    TSR_MAX_QUEUES);
}

static size_t wire_write(void *opaque, const void *buf, size_t len)
{
    IciPort *p = opaque;
    TsrCore *core = p->ici->core;

    return core->ops->ici_write ?
           core->ops->ici_write(core->opaque, p->index, buf, len) : len;
}

static void state_changed(void *opaque, uint32_t state)
{
    IciPort *p = opaque;
    TsrIci *ici = p->ici;

    ici->ports_changed |= 1u << p->index;
    if (state == TSR_ICI_STATE_UP) {
        raise_causes(ici, TSR_ICI_IRQ_LINK_UP);
    } else if (state == TSR_ICI_STATE_DOWN ||
               (state == TSR_ICI_STATE_DISCONNECTED &&
                !tsr_link_resuming(p->link)) ||
               state == TSR_ICI_STATE_MISWIRED ||
               state == TSR_ICI_STATE_FOREIGN) {
        /*
         * A lost connection that resumes is no news for the driver: the
         * port goes DOWN, and says so, only if it is given up on.
         */
        raise_causes(ici, TSR_ICI_IRQ_LINK_DOWN);
    }
    /* Waits with SEM_WAIT_LINKS end now, not at their next look. */
    publish(ici);
}

static uint8_t *wire_reserve(void *opaque, size_t len)
{
    IciPort *p = opaque;
    TsrIci *ici = p->ici;

    return ici->lender ?
           ici->lender->reserve(ici->lender_opaque, p->index, len) : NULL;
}

static uint64_t wire_commit(void *opaque, size_t len)
{
    IciPort *p = opaque;
    uint64_t pos = p->ici->lender->commit(p->ici->lender_opaque, p->index,
                                          len);

    if (p->committing >= 0) {
        p->filling[p->committing] = pos;
        p->filling_end[p->committing] = pos + len;
    }
    return pos;
}

/*
 * A frame sent again is copied from where it is kept, but not one whose
 * chunk is still being read into it (fill_chunk()): the copy could be
 * half filled, and the peer would take it if it had refused the
 * original.  The link sends it at its next timeout instead.
 */
static const uint8_t *wire_kept(void *opaque, uint64_t pos, size_t len)
{
    IciPort *p = opaque;
    unsigned int q;

    for (q = 0; p->building && q < TSR_MAX_QUEUES; q++) {
        if (pos < p->filling_end[q] && p->filling[q] < pos + len) {
            return NULL;
        }
    }
    return p->ici->lender->kept(p->ici->lender_opaque, p->index, pos, len);
}

static void wire_release(void *opaque, uint64_t pos)
{
    IciPort *p = opaque;

    p->ici->lender->release(p->ici->lender_opaque, p->index, pos);
}

static const TsrLinkOps ici_link_ops = {
    .wire_write = wire_write,
    .deliver = deliver,
    .state_changed = state_changed,
    .wire_reserve = wire_reserve,
    .wire_commit = wire_commit,
    .wire_kept = wire_kept,
    .wire_release = wire_release,
};

/* After link activity: offer held messages again, wake senders. */
static void settle(TsrIci *ici)
{
    uint64_t now = now_ns();
    unsigned int p, vc;

    flush_answers(ici);
    for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
        IciPort *port = &ici->port[p];

        if (!port->link) {
            continue;
        }
        tsr_link_rx_ready(port->link, now);
        for (vc = 0; vc < TSR_ICI_VCS; vc++) {
            if ((port->room_waiters[vc] &&
                 (tsr_link_half_empty(port->link, vc) ||
                  tsr_link_state(port->link) != TSR_ICI_STATE_UP)) ||
                (port->lend_waiters[vc] &&
                 (tsr_link_lend_room(port->link, vc) >= ICI_LEND_BATCH ||
                  !tsr_link_lend_waits(port->link, vc)))) {
                pthread_cond_broadcast(&port->room);
            }
        }
    }
}

/* ---------------------------------------------------------- lifecycle */

TsrIci *tsr_ici_new(TsrCore *core, const TsrSlice *slice)
{
    TsrIci *ici;
    unsigned int p;

    if (!tsr_topology_valid(&slice->topo) ||
        !tsr_topology_has(&slice->topo, slice->coords)) {
        return NULL;
    }
    ici = calloc(1, sizeof(*ici));
    if (!ici) {
        return NULL;
    }
    pthread_mutex_init(&ici->lock, NULL);
    pthread_cond_init(&ici->cond, NULL);
    for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
        pthread_cond_init(&ici->port[p].room, NULL);
    }
    ici->pending = calloc(ICI_PENDING_ANSWERS, sizeof(*ici->pending));
    ici->streams = calloc(ICI_STREAM_SLOTS, sizeof(*ici->streams));
    for (p = 0; p < TSR_MAX_QUEUES; p++) {
        ici->stage[p] = tsr_link_buf_new();
        if (!ici->stage[p]) {
            break;
        }
    }
    if (!ici->pending || !ici->streams || p < TSR_MAX_QUEUES) {
        tsr_ici_free(ici);
        return NULL;
    }
    ici->core = core;
    ici->slice = *slice;
    for (p = 0; p < TSR_MAX_QUEUES; p++) {
        ici->calm_until[p] = UINT64_MAX;   /* no writes out */
    }
    ici->deadline = UINT64_MAX;
    ici->retransmit_ns = ICI_RETRANSMIT_NS;
    ici->keepalive_ns = ICI_KEEPALIVE_NS;
    for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
        ici->port[p].ici = ici;
        ici->port[p].index = p;
        ici->port[p].committing = -1;
    }
    return ici;
}

void tsr_ici_free(TsrIci *ici)
{
    unsigned int p;

    if (!ici) {
        return;
    }
    for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
        tsr_link_free(ici->port[p].link);
        pthread_cond_destroy(&ici->port[p].room);
    }
    for (p = 0; p < TSR_MAX_QUEUES; p++) {
        tsr_link_buf_free(ici->stage[p]);
    }
    pthread_cond_destroy(&ici->cond);
    pthread_mutex_destroy(&ici->lock);
    free(ici->pending);
    free(ici->streams);
    free(ici);
}

int tsr_ici_set_slice(TsrIci *ici, const TsrSlice *slice)
{
    if (ici->wired || !tsr_topology_valid(&slice->topo) ||
        !tsr_topology_has(&slice->topo, slice->coords)) {
        return -1;
    }
    ici->slice = *slice;
    return 0;
}

int tsr_ici_set_retransmit(TsrIci *ici, uint64_t ns)
{
    if (ici->wired || !ns) {
        return -1;
    }
    ici->retransmit_ns = ns;
    return 0;
}

int tsr_ici_set_keepalive(TsrIci *ici, uint64_t ns)
{
    if (ici->wired) {
        return -1;
    }
    ici->keepalive_ns = ns;
    return 0;
}

void tsr_ici_reset(TsrIci *ici)
{
    pthread_mutex_lock(&ici->lock);
    ici->window_table = 0;
    ici->window_count = 0;
    ici->irq_status = 0;
    ici->irq_enable = 0;
    ici->ports_changed = 0;
    ici->violations = 0;
    ici->viol_source = ici->viol_window = ici->viol_reason = 0;
    /* The rest of a write begun before the reset lands nothing. */
    memset(ici->streams, 0, ICI_STREAM_SLOTS * sizeof(*ici->streams));
    ici->nstreams = 0;
    pthread_cond_broadcast(&ici->cond);
    ici_unlock(ici);
}

int tsr_ici_attach(TsrIci *ici, unsigned int port, unsigned int window)
{
    uint8_t peer[3];
    /*
     * Each channel's credit is the window: one stream alone can fill it,
     * and go on with the frames behind a lost one while it is asked for
     * again.  A frame is acknowledged once it has come, taken by the chip
     * or not, so a channel whose frames the chip does not take holds its
     * credit, never the window: the other channel still moves.  Held
     * acknowledgements (a ring's) go half a window at a time, so that the
     * sender still has half its credit when one leaves.
     */
    TsrLinkConfig cfg = {
        .window = window, .rx_slots = window, .tx_slots = window / 2,
        .retransmit_ns = ici->retransmit_ns, .retry_limit = ICI_RETRY_LIMIT,
        .keepalive_ns = ici->keepalive_ns, .ack_every = window / 2,
    };

    /*
     * A port whose frames stay on its socket delays its bare ACKs for up
     * to TSR_ICI_ACK_DELAY_NS, each a system call at both ends; a ring's
     * reader holds them over what the ring holds instead.
     */
    if (window == TSR_ICI_WINDOW_SOCKET) {
        cfg.ack_delay_ns = tsr_min(ici->retransmit_ns / 16,
                                   TSR_ICI_ACK_DELAY_NS);
    }

    if (port >= TSR_ICI_MAX_PORTS || ici->port[port].link ||
        !tsr_route_neighbour(&ici->slice.topo, ici->slice.coords, port,
                             peer)) {
        return -1;
    }
    cfg.self.slice_id = cfg.peer.slice_id = ici->slice.slice_id;
    memcpy(cfg.self.coords, ici->slice.coords, sizeof(cfg.self.coords));
    memcpy(cfg.peer.coords, peer, sizeof(cfg.peer.coords));
    cfg.self.port = port;
    cfg.peer.port = TSR_ICI_PORT_OPPOSITE(port);
    ici->port[port].link = tsr_link_new(&cfg, &ici_link_ops,
                                        &ici->port[port]);
    if (!ici->port[port].link) {
        return -1;
    }
    ici->wired |= 1u << port;
    return 0;
}

static TsrLink *port_link(TsrIci *ici, unsigned int port)
{
    return port < TSR_ICI_MAX_PORTS ? ici->port[port].link : NULL;
}

void tsr_ici_connected(TsrIci *ici, unsigned int port)
{
    TsrLink *link = port_link(ici, port);

    if (link) {
        pthread_mutex_lock(&ici->lock);
        tsr_link_connected(link, now_ns());
        ici_unlock(ici);
    }
}

void tsr_ici_disconnected(TsrIci *ici, unsigned int port)
{
    TsrLink *link = port_link(ici, port);

    if (link) {
        pthread_mutex_lock(&ici->lock);
        tsr_link_disconnected(link);
        pthread_cond_broadcast(&ici->cond);
        ici_unlock(ici);
    }
}

void tsr_ici_receive(TsrIci *ici, unsigned int port, const void *buf,
                     size_t len)
{
    TsrLink *link = port_link(ici, port);

    if (link) {
        pthread_mutex_lock(&ici->lock);
        tsr_link_receive(link, buf, len, now_ns());
        settle(ici);
        ici_unlock(ici);
    }
}

void tsr_ici_hold_acks(TsrIci *ici, unsigned int port, bool hold)
{
    TsrLink *link = port_link(ici, port);

    if (link) {
        pthread_mutex_lock(&ici->lock);
        tsr_link_hold_acks(link, hold, now_ns());
        if (!hold) {
            settle(ici);
        }
        ici_unlock(ici);
    }
}

void tsr_ici_writable(TsrIci *ici, unsigned int port)
{
    TsrLink *link = port_link(ici, port);

    if (link) {
        pthread_mutex_lock(&ici->lock);
        tsr_link_flush(link, now_ns());
        settle(ici);
        ici_unlock(ici);
    }
}

void tsr_ici_poll(TsrIci *ici)
{
    uint64_t now;
    unsigned int p;

    /*
     * The time once the lock is ours: a receive that took it meanwhile
     * (QEMU's receive thread) heard the peer after any time read before
     * it, and a link polled at a time before it last heard its peer
     * finds it silent for ever (now - heard_at wraps) and goes down.
     */
    pthread_mutex_lock(&ici->lock);
    now = now_ns();
    for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
        TsrLink *link = ici->port[p].link;

        if (link && tsr_link_deadline(link) <= now) {
            tsr_link_poll(link, now);
        }
    }
    settle(ici);
    ici_unlock(ici);
}

uint64_t tsr_ici_deadline(TsrIci *ici)
{
    return __atomic_load_n(&ici->deadline, __ATOMIC_RELAXED);
}

int tsr_ici_set_faults(TsrIci *ici, unsigned int port,
                       const TsrLinkFaults *faults, unsigned int fields)
{
    TsrLink *link = port_link(ici, port);

    if (!link) {
        return -1;
    }
    pthread_mutex_lock(&ici->lock);
    tsr_link_set_faults(link, faults, fields);
    ici_unlock(ici);
    return 0;
}

int tsr_ici_get_faults(TsrIci *ici, unsigned int port, TsrLinkFaults *faults)
{
    TsrLink *link = port_link(ici, port);

    if (!link) {
        return -1;
    }
    pthread_mutex_lock(&ici->lock);
    tsr_link_get_faults(link, faults);
    ici_unlock(ici);
    return 0;
}

uint32_t tsr_ici_port_state(TsrIci *ici, unsigned int port)
{
    TsrLink *link = port_link(ici, port);
    uint32_t state;

    if (!link) {
        return TSR_ICI_STATE_DISCONNECTED;
    }
    pthread_mutex_lock(&ici->lock);
    state = tsr_link_state(link);
    ici_unlock(ici);
    return state;
}

bool tsr_ici_port_peer(TsrIci *ici, unsigned int port, uint32_t *state,
                       TsrLinkId *peer)
{
    TsrLink *link = port_link(ici, port);
    bool known;

    *state = TSR_ICI_STATE_DISCONNECTED;
    if (!link) {
        return false;
    }
    pthread_mutex_lock(&ici->lock);
    *state = tsr_link_state(link);
    known = tsr_link_peer(link, peer);
    ici_unlock(ici);
    return known;
}

bool tsr_ici_links_down(TsrIci *ici, uint64_t *epochs)
{
    uint64_t sum = __atomic_load_n(&ici->links_epochs, __ATOMIC_RELAXED);
    uint32_t live = __atomic_load_n(&ici->links_live, __ATOMIC_RELAXED);

    if (*epochs == UINT64_MAX) {
        *epochs = sum;
    }
    return live != ici->wired || sum != *epochs;
}

void tsr_ici_set_transport(TsrIci *ici, unsigned int port,
                           uint32_t transport)
{
    if (port < TSR_ICI_MAX_PORTS) {
        pthread_mutex_lock(&ici->lock);
        ici->port[port].transport = transport;
        if (ici->port[port].link) {
            /* A ring hands over what was written or breaks (tessera-ring.h). */
            tsr_link_set_intact(ici->port[port].link,
                                transport == TSR_ICI_TRANSPORT_RING);
        }
        ici_unlock(ici);
    }
}

void tsr_ici_set_lender(TsrIci *ici, const TsrIciLender *lender,
                        void *opaque)
{
    ici->lender = lender;
    ici->lender_opaque = opaque;
}

void tsr_ici_reclaim(TsrIci *ici, unsigned int port)
{
    TsrLink *link = port_link(ici, port);
    IciPort *p;

    if (!link) {
        return;
    }
    p = &ici->port[port];
    pthread_mutex_lock(&ici->lock);
    /* A frame being filled is kept whole, and freed memory never written. */
    p->reclaiming = true;
    while (p->building) {
        publish(ici);
        pthread_cond_wait(&ici->cond, &ici->lock);
    }
    p->reclaiming = false;
    tsr_link_reclaim(link);
    ici_unlock(ici);
}

void tsr_ici_transport_error(TsrIci *ici, unsigned int port)
{
    TsrLink *link = port_link(ici, port);

    if (link) {
        pthread_mutex_lock(&ici->lock);
        tsr_link_count_protocol_error(link);
        ici_unlock(ici);
    }
}

/* ---------------------------------------------------------- registers */

static uint64_t port_counter(TsrLink *link, unsigned int i)
{
    TsrLinkCounters c;
    const uint64_t *v = &c.frames_tx;

    _Static_assert(sizeof(c) == TSR_ICI_CNT_COUNT * sizeof(uint64_t),
                   "link counters are the ICI counter block");
    tsr_link_get_counters(link, &c);
    return v[i];
}

static uint32_t port_reg_read(TsrIci *ici, unsigned int p, uint32_t reg)
{
    TsrLink *link = ici->port[p].link;
    TsrLinkId peer;

    if (!link) {
        return reg == TSR_IREG_STATE ? TSR_ICI_STATE_DISCONNECTED : 0;
    }
    if (reg >= TSR_IREG_CNT_LO(0) && reg < TSR_IREG_CNT_LO(TSR_ICI_CNT_COUNT)) {
        uint64_t v;

        if (reg % 8) {
            return ici->latched_hi;
        }
        v = port_counter(link, (reg - TSR_IREG_CNT_LO(0)) / 8);
        ici->latched_hi = v >> 32;
        return (uint32_t)v;
    }
    switch (reg) {
    case TSR_IREG_STATE:
        return tsr_link_state(link);
    case TSR_IREG_TRANSPORT:
        return ici->port[p].transport;
    case TSR_IREG_PEER:
        return tsr_link_peer(link, &peer) ?
               pack_coords(peer.coords) | (uint32_t)peer.port << 24 : 0;
    case TSR_IREG_PEER_SLICE:
        return tsr_link_peer(link, &peer) ? peer.slice_id : 0;
    default:
        return 0;
    }
}

uint32_t tsr_ici_reg_read(TsrIci *ici, uint32_t offset)
{
    const TsrTopology *t = &ici->slice.topo;
    uint32_t v = 0;

    pthread_mutex_lock(&ici->lock);
    if (offset >= TSR_ICI_PORT_BASE(0) &&
        offset < TSR_ICI_PORT_BASE(TSR_ICI_MAX_PORTS)) {
        unsigned int p = (offset - TSR_ICI_PORT_BASE(0)) / 0x100;

        v = port_reg_read(ici, p, (offset - TSR_ICI_PORT_BASE(0)) % 0x100);
    } else {
        switch (offset) {
        case TSR_REG_ICI_SLICE_ID:
            v = ici->slice.slice_id;
            break;
        case TSR_REG_ICI_DIMS:
            v = pack_coords(t->dims);
            break;
        case TSR_REG_ICI_COORDS:
            v = pack_coords(ici->slice.coords);
            break;
        case TSR_REG_ICI_WRAP:
            v = t->wrap[0] | t->wrap[1] << 1 | t->wrap[2] << 2;
            break;
        case TSR_REG_ICI_PORTS_WIRED:
            v = ici->wired;
            break;
        case TSR_REG_ICI_IRQ_STATUS:
            v = ici->irq_status;
            break;
        case TSR_REG_ICI_IRQ_ENABLE:
            v = ici->irq_enable;
            break;
        case TSR_REG_ICI_PORTS_CHANGED:
            v = ici->ports_changed;
            break;
        case TSR_REG_ICI_WINDOW_TABLE_LO:
            v = (uint32_t)ici->window_table;
            break;
        case TSR_REG_ICI_WINDOW_TABLE_HI:
            v = ici->window_table >> 32;
            break;
        case TSR_REG_ICI_WINDOW_COUNT:
            v = ici->window_count;
            break;
        case TSR_REG_ICI_VIOLATIONS:
            v = ici->violations;
            break;
        case TSR_REG_ICI_VIOL_SOURCE:
            v = ici->viol_source;
            break;
        case TSR_REG_ICI_VIOL_WINDOW:
            v = ici->viol_window;
            break;
        case TSR_REG_ICI_VIOL_REASON:
            v = ici->viol_reason;
            break;
        }
    }
    ici_unlock(ici);
    return v;
}

static bool port_control(TsrIci *ici, unsigned int p, uint32_t value)
{
    TsrLink *link = port_link(ici, p);

    if (!link || (value & ~(TSR_ICI_CTRL_DOWN | TSR_ICI_CTRL_RETRAIN))) {
        return false;
    }
    if (value & TSR_ICI_CTRL_DOWN) {
        tsr_link_down(link);
    } else if (value & TSR_ICI_CTRL_RETRAIN) {
        tsr_link_retrain(link, now_ns());
    }
    pthread_cond_broadcast(&ici->cond);
    return true;
}

bool tsr_ici_port_control(TsrIci *ici, unsigned int port, uint32_t control)
{
    bool taken;

    pthread_mutex_lock(&ici->lock);
    taken = port_control(ici, port, control);
    ici_unlock(ici);
    return taken;
}

bool tsr_ici_reg_write(TsrIci *ici, uint32_t offset, uint32_t value)
{
    bool taken = true;

    pthread_mutex_lock(&ici->lock);
    if (offset >= TSR_ICI_PORT_BASE(0) &&
        offset < TSR_ICI_PORT_BASE(TSR_ICI_MAX_PORTS)) {
        taken = (offset - TSR_ICI_PORT_BASE(0)) % 0x100 == TSR_IREG_CONTROL &&
                port_control(ici, (offset - TSR_ICI_PORT_BASE(0)) / 0x100,
                             value);
    } else {
        switch (offset) {
        case TSR_REG_ICI_IRQ_STATUS:
            ici->irq_status &= ~value;
            break;
        case TSR_REG_ICI_IRQ_ENABLE:
            taken = !(value & ~TSR_ICI_IRQ_ALL);
            ici->irq_enable = value & TSR_ICI_IRQ_ALL;
            /* Causes pending while disabled interrupt once enabled. */
            if (ici->irq_status & ici->irq_enable) {
                tsr_core_irq(ici->core, TSR_MSIX_VEC_LINK);
            }
            break;
        case TSR_REG_ICI_PORTS_CHANGED:
            ici->ports_changed &= ~value;
            break;
        case TSR_REG_ICI_WINDOW_TABLE_LO:
            ici->window_table = (ici->window_table & ~0xffffffffull) | value;
            break;
        case TSR_REG_ICI_WINDOW_TABLE_HI:
            ici->window_table = (ici->window_table & 0xffffffffull) |
                                (uint64_t)value << 32;
            break;
        case TSR_REG_ICI_WINDOW_COUNT:
            ici->window_count = value;
            break;
        default:
            taken = false;
            break;
        }
    }
    ici_unlock(ici);
    return taken;
}

/* ---------------------------------------------------------- ICI_WRITE */

static uint32_t write_check(const struct tsr_cmd_ici_write *c,
                            uint64_t *total)
{
    uint64_t span;

    if (c->hdr.flags & ~TSR_ICI_WRITE_FLAGS_ALL) {
        return TSR_ERR_BAD_FLAGS;
    }
    if (c->hdr.reserved || c->reserved0) {
        return TSR_ERR_RESERVED;
    }
    if (!c->rows != !c->row_bytes ||
        (!c->rows && !(c->hdr.flags & TSR_ICI_WRITE_SEM))) {
        return TSR_ERR_BAD_SHAPE;
    }
    if (!(c->hdr.flags & TSR_ICI_WRITE_SEM) && (c->sem_offset || c->sem_add)) {
        return TSR_ERR_RESERVED;
    }
    if ((c->hdr.flags & TSR_ICI_WRITE_SEM) && c->sem_offset % 8) {
        return TSR_ERR_BAD_ALIGNMENT;
    }
    if (!tsr_mul(c->rows, c->row_bytes, total) ||
        *total > TSR_MAX_TRANSFER) {
        return TSR_ERR_TOO_LARGE;
    }
    if (c->rows > 1 && (c->src_stride < c->row_bytes ||
                        c->dst_stride < c->row_bytes)) {
        return TSR_ERR_BAD_STRIDE;
    }
    /* Neither the last byte read nor where it lands in the window wraps. */
    if (c->rows && (!tsr_span(c->rows, c->dst_stride, c->row_bytes, &span) ||
                    c->offset + span < c->offset ||
                    !tsr_span(c->rows, c->src_stride, c->row_bytes, &span) ||
                    c->src + span < c->src)) {
        return TSR_ERR_BAD_STRIDE;
    }
    return TSR_ERR_NONE;
}

/* A free request of queue @q, or NULL; under the lock. */
static IciReq *req_get(TsrIci *ici, unsigned int q)
{
    unsigned int i;

    for (i = 0; i < ICI_QUEUE_REQS; i++) {
        if (!ici->req[q][i].busy) {
            ici->req[q][i] = (IciReq){ .busy = true,
                                       .number = ++ici->next_req };
            /* Out from now on: looked at until reaped (calm_queue()). */
            __atomic_store_n(&ici->calm_until[q], 0, __ATOMIC_RELAXED);
            return &ici->req[q][i];
        }
    }
    return NULL;
}

/* Wait on @cond, under the lock, for a little; then look again. */
static void wait_a_little(TsrIci *ici, pthread_cond_t *cond)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += ICI_WAIT_SLICE_NS;
    if (until.tv_nsec >= 1000000000) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000;
    }
    publish(ici);
    pthread_cond_timedwait(cond, &ici->lock, &until);
}

/*
 * A chunk of a write of this chip to itself lands as the job's own
 * write would: not once a reset has made the job stale.  Under the lock.
 */
static uint32_t write_here(TsrIci *ici, TsrMem *mem,
                           const struct tsr_ici_msg *m, const uint8_t *data)
{
    struct tsr_ici_msg copy = *m;

    if (!tsr_job_write_begin(ici->core, mem->queue, mem->generation)) {
        return TSR_ERR_ABORTED;
    }
    take_local(ici, NULL, &copy, data);
    tsr_job_write_end(ici->core, mem->queue);
    return TSR_ERR_NONE;
}

/*
 * Send one chunk of write @r, sealed in *@staged with its data at @data;
 * under the lock.  Waits while the channel is full; fails with LINK_DOWN
 * if the way goes down or its first link starts afresh, ABORTED if the
 * job is reset.
 */
static uint32_t send_chunk(TsrIci *ici, TsrMem *mem, const IciReq *r,
                           struct tsr_ici_msg *m, TsrLinkBuf **staged,
                           const uint8_t *data)
{
    uint32_t err = TSR_ERR_NONE;
    unsigned int vc;

    for (;;) {
        int port = write_route(ici, m, r, &err);

        if (port == TSR_ROUTE_HERE) {
            return write_here(ici, mem, m, data);
        }
        if (port == TSR_ROUTE_NONE) {
            return err;
        }
        if (send_msg(ici, port, TSR_ICI_MAX_DIMS, 0, m, NULL, staged,
                     mem->queue)) {
            return TSR_ERR_NONE;
        }
        ici_unlock(ici);
        if (tsr_mem_aborted(mem)) {
            pthread_mutex_lock(&ici->lock);
            return TSR_ERR_ABORTED;
        }
        pthread_mutex_lock(&ici->lock);
        vc = tsr_route_vc(&ici->slice.topo, ici->slice.coords, port,
                          TSR_ICI_MAX_DIMS, 0);
        ici->port[port].room_waiters[vc]++;
        wait_a_little(ici, &ici->port[port].room);
        ici->port[port].room_waiters[vc]--;
    }
}

/*
 * Until when queue @q has nothing to learn under the lock, as its
 * requests stand (see TsrIci.calm_until): the first deadline of those
 * out; take_answer() and publish() stir it sooner.  Under the lock.
 */
static void calm_queue(TsrIci *ici, unsigned int q)
{
    uint64_t until = UINT64_MAX;
    unsigned int i;

    for (i = 0; i < ICI_QUEUE_REQS; i++) {
        const IciReq *r = &ici->req[q][i];

        if (r->busy) {
            until = tsr_min(until, r->answered ? 0 : r->deadline);
        }
    }
    __atomic_store_n(&ici->calm_until[q], until, __ATOMIC_RELAXED);
}

/*
 * The first failure among the answered requests of @mem's queue, or
 * TSR_ERR_NONE; forgets the answered ones, and on a failure all of them
 * (later answers are then ignored).  Under the lock.
 */
static uint32_t reap(TsrIci *ici, TsrMem *mem, unsigned int *out)
{
    IciReq *req = ici->req[mem->queue], *bad = NULL;
    uint32_t err = TSR_ERR_NONE;
    unsigned int i;

    *out = 0;
    for (i = 0; i < ICI_QUEUE_REQS; i++) {
        IciReq *r = &req[i];
        uint32_t why = r->status;

        if (!r->busy) {
            continue;
        }
        if (!r->answered) {
            int port = route(ici, r->dst, r->minus, &why);

            if (port == TSR_ROUTE_NONE && why == TSR_ERR_LINK_DOWN) {
                r->answered = true;     /* its way went down */
            } else if (restarted(ici, port, r->epoch)) {
                r->answered = true;     /* its answer went with it */
                why = TSR_ERR_LINK_DOWN;
            } else if (now_ns() > r->deadline) {
                r->answered = true;     /* a peer further on is gone */
                why = TSR_ERR_LINK_DOWN;
            } else {
                (*out)++;
                continue;
            }
        }
        if (why && (!bad || r->command < bad->command)) {
            bad = r;
            err = why;
        }
        r->busy = r->answered = false;
    }
    if (bad) {
        mem->failed_cmd = bad->command;
        for (i = 0; i < ICI_QUEUE_REQS; i++) {
            req[i].busy = false;
        }
        *out = 0;
    }
    calm_queue(ici, mem->queue);
    return err;
}

/*
 * Wait until at most @keep of @mem's queue's writes are out; the first
 * failure among them, with its command in mem->failed_cmd.  Under the
 * lock.
 */
static uint32_t settle_queue(TsrIci *ici, TsrMem *mem, unsigned int keep)
{
    for (;;) {
        unsigned int out;
        uint32_t err = reap(ici, mem, &out);
        unsigned int i;

        if (err || out <= keep) {
            return err;
        }
        ici_unlock(ici);
        if (tsr_mem_aborted(mem)) {
            pthread_mutex_lock(&ici->lock);
            for (i = 0; i < ICI_QUEUE_REQS; i++) {
                ici->req[mem->queue][i].busy = false;
            }
            return TSR_ERR_ABORTED;
        }
        pthread_mutex_lock(&ici->lock);
        wait_a_little(ici, &ici->cond);
    }
}

/* settle_queue() for a job's queue, outside the lock. */
static uint32_t settle_job(TsrMem *mem, unsigned int keep)
{
    TsrIci *ici = mem->core->ici;
    uint32_t err;

    if (!ici || mem->queue >= TSR_MAX_QUEUES ||
        __atomic_load_n(&ici->calm_until[mem->queue], __ATOMIC_RELAXED) ==
        UINT64_MAX) {
        return TSR_ERR_NONE;    /* no writes out (only this thread says so) */
    }
    pthread_mutex_lock(&ici->lock);
    err = settle_queue(ici, mem, keep);
    ici_unlock(ici);
    return err;
}

/*
 * Called at each wake-up of a waiting queue: the lock only when there is
 * news for it.  A stale calm_until delays the news to the next wake-up,
 * never loses it: a failure's answer and a link's change wake the waiter
 * after they stirred it (see publish() for the order).
 */
uint32_t tsr_ici_check(TsrMem *mem)
{
    TsrIci *ici = mem->core->ici;

    if (ici && mem->queue < TSR_MAX_QUEUES &&
        now_ns() < __atomic_load_n(&ici->calm_until[mem->queue],
                                   __ATOMIC_RELAXED)) {
        return TSR_ERR_NONE;
    }
    return settle_job(mem, ICI_QUEUE_REQS);
}

uint32_t tsr_ici_job_end(TsrMem *mem)
{
    return settle_job(mem, 0);
}

/*
 * Whether the job may read a chunk: then it is live until
 * tsr_job_write_end(), since a reset (or a disabled queue) waits for the
 * read, which stops a write within one chunk; once the reset has returned
 * no read of the job's is under way, so that a context the driver tears
 * down after it is never walked again.
 */
static bool chunk_begin(TsrMem *mem)
{
    return !tsr_mem_aborted(mem) &&
           tsr_job_write_begin(mem->core, mem->queue, mem->generation);
}

/* Copy a chunk's @n bytes at @va into @data; between chunk_begin() and end. */
static uint32_t copy_chunk(TsrMem *mem, uint64_t va, uint8_t *data,
                           uint64_t n)
{
    const void *view;

    if (!n) {
        return TSR_ERR_NONE;
    }
    view = tsr_mem_read_view(mem, va, n);
    if (view) {
        memcpy(data, view, n);
    } else if (tsr_mem_read(mem, va, data, n)) {
        return mem->error;
    }
    return TSR_ERR_NONE;
}

/* Read a chunk's @n bytes at @va into @data, as long as the job is live. */
static uint32_t read_chunk(TsrMem *mem, uint64_t va, uint8_t *data,
                           uint64_t n)
{
    uint32_t err;

    if (!chunk_begin(mem)) {
        return TSR_ERR_ABORTED;
    }
    err = copy_chunk(mem, va, data, n);
    tsr_job_write_end(mem->core, mem->queue);
    return err;
}

/*
 * Fill the frame committed at @at with the chunk's data, outside the
 * lock (see TsrIciLender): the lender holds it, and what follows it on
 * the port, from the peer meanwhile.  A source that cannot be read turns
 * the chunk into one its target refuses (ICI_CHUNK_UNREAD).  Called and
 * returns with the lock held.
 */
static uint32_t fill_chunk(TsrIci *ici, TsrMem *mem, IciPort *p,
                           uint8_t *at, uint64_t va, uint64_t n)
{
    struct tsr_ici_msg *m = (struct tsr_ici_msg *)at;
    uint32_t err, unread = ICI_CHUNK_UNREAD;

    p->building++;
    ici_unlock(ici);
    err = copy_chunk(mem, va, at + sizeof(*m), n);
    tsr_job_write_end(mem->core, mem->queue);
    if (err) {
        memcpy(&m->status, &unread, sizeof(unread));
    }
    pthread_mutex_lock(&ici->lock);
    ici->lender->unhold(ici->lender_opaque, p->index);
    p->filling_end[mem->queue] = p->filling[mem->queue];
    if (!--p->building && p->reclaiming) {
        pthread_cond_broadcast(&ici->cond);
    }
    return err;
}

/*
 * Send a chunk of @n bytes at @va built straight in the wire of its first
 * hop, if that link lends it one now (a ring): the source is read once,
 * into the frame the peer reads and the link replays from, not into a
 * buffer first, and without the lock (fill_chunk()).  Under the lock;
 * *@sent says whether it went (if not, the caller sends it the usual way).
 */
static uint32_t lend_chunk(TsrIci *ici, TsrMem *mem, const IciReq *r,
                           struct tsr_ici_msg *m, uint64_t va, uint64_t n,
                           bool *sent)
{
    uint32_t err = TSR_ERR_NONE;
    unsigned int vc;
    IciPort *p;
    uint8_t *at;
    int port;

    *sent = false;
    for (;;) {
        port = write_route(ici, m, r, &err);
        if (port < 0) {
            return TSR_ERR_NONE;    /* here, or nowhere: send_chunk() says */
        }
        p = &ici->port[port];
        vc = tsr_route_vc(&ici->slice.topo, ici->slice.coords, port,
                          TSR_ICI_MAX_DIMS, 0);
        at = tsr_link_lend(p->link, vc, sizeof(*m) + n, now_ns());
        if (at || !tsr_link_lend_waits(p->link, vc)) {
            break;
        }
        /*
         * Acknowledgements open the window soon: wait for them rather
         * than queue a copy that the main loop would copy again.
         */
        ici_unlock(ici);
        if (tsr_mem_aborted(mem)) {
            pthread_mutex_lock(&ici->lock);
            return TSR_ERR_ABORTED;
        }
        pthread_mutex_lock(&ici->lock);
        p->lend_waiters[vc]++;
        wait_a_little(ici, &p->room);
        p->lend_waiters[vc]--;
    }
    if (!at) {
        return TSR_ERR_NONE;
    }
    /* Not committed (nothing sent) unless the job may read the chunk. */
    if (!chunk_begin(mem)) {
        return TSR_ERR_ABORTED;
    }
    m->arrival = depart(p, m->arrival, m, mem->queue);
    memcpy(at, m, sizeof(*m));
    /*
     * Committed now, in its place among the link's frames (its sequence,
     * credit and replay slot), but held from the peer until filled.
     */
    ici->lender->hold(ici->lender_opaque, port);
    p->committing = mem->queue;
    tsr_link_commit(p->link, now_ns());
    p->committing = -1;
    *sent = true;
    return fill_chunk(ici, mem, p, at, va, n);
}

uint32_t tsr_cmd_ici_write(TsrMem *mem, const struct tsr_cmd_ici_write *c,
                           TsrCost *cost)
{
    TsrIci *ici = mem->core->ici;
    uint64_t total, row, done, start, left, va;
    uint32_t chunk = 0;
    TsrLinkBuf **stage = &ici->stage[mem->queue];
    uint8_t *data;
    uint32_t err = write_check(c, &total);
    struct tsr_ici_msg m = {
        .type = TSR_ICI_MSG_WRITE, .window = c->window, .key = c->key,
    };
    uint64_t *until;
    IciReq *r;
    bool crc, sent;
    int port;

    if (err) {
        return err;
    }
    memcpy(m.src, ici->slice.coords, sizeof(m.src));
    memcpy(m.dst, c->dst, sizeof(m.dst));
    /* Every chunk names the semaphore, so that each is checked whole. */
    if (c->hdr.flags & TSR_ICI_WRITE_MINUS) {
        m.flags = TSR_ICI_MSG_MINUS;
    }
    if (c->hdr.flags & TSR_ICI_WRITE_SEM) {
        m.flags |= TSR_ICI_MSG_SEM;
        m.sem_offset = c->sem_offset;
        m.sem_add = c->sem_add;
    }
    m.req_offset = c->offset;
    m.req_end = c->offset + (c->rows ? (uint64_t)(c->rows - 1) *
                             c->dst_stride + c->row_bytes : 0);

    pthread_mutex_lock(&ici->lock);
    port = route(ici, c->dst, m.flags & TSR_ICI_MSG_MINUS, &err);
    if (port == TSR_ROUTE_NONE) {
        ici_unlock(ici);
        return err;
    }
    /*
     * Each of the queue's ICI DMAs (one per port) takes one write at a
     * time; writes by other ports, such as a credit going back while data
     * goes on, do not wait for it.
     */
    until = &cost->ici_until[port >= 0 ? port : TSR_ICI_MAX_PORTS];
    if (*until > tsr_cost_now(cost)) {
        cost->dma += *until - tsr_cost_now(cost);
    }
    start = left = tsr_cost_now(cost);
    /* For the job's trace: the first hop, and the data sent. */
    mem->ici_port = port >= 0 ? port : TSR_TRACE_NO_PORT;
    mem->link_bytes = total;
    /* Its CRC is taken as the chunk is built, unless no wire needs it. */
    crc = port >= 0 && !tsr_link_intact(ici->port[port].link);
    /* Room for this write among the queue's, and news of earlier ones. */
    err = settle_queue(ici, mem, ICI_QUEUE_REQS - 1);
    if (err) {
        ici_unlock(ici);
        return err;
    }
    r = req_get(ici, mem->queue);
    r->command = mem->command;
    r->minus = m.flags & TSR_ICI_MSG_MINUS;
    r->epoch = port >= 0 ? tsr_link_epoch(ici->port[port].link) : 0;
    memcpy(r->dst, c->dst, sizeof(r->dst));
    m.req = r->number;
    for (row = 0; !err && row <= (c->rows ? c->rows - 1 : 0); row++) {
        for (done = 0; !err && (done < c->row_bytes || !c->rows); ) {
            uint64_t n = c->row_bytes - done;

            n = n < TSR_ICI_MSG_MAX_DATA ? n : TSR_ICI_MSG_MAX_DATA;
            m.len = n;
            m.status = chunk++;
            m.offset = c->offset + row * c->dst_stride + done;
            m.arrival = start;
            if (done + n == c->row_bytes && row + 1 >= c->rows) {
                m.flags |= TSR_ICI_MSG_LAST;
            }
            va = c->src + row * c->src_stride + done;
            err = lend_chunk(ici, mem, r, &m, va, n, &sent);
            if (!err && !sent) {
                /* Built without the lock (see TsrIci.stage). */
                ici_unlock(ici);
                data = tsr_link_buf_data(*stage) + sizeof(m);
                err = read_chunk(mem, va, data, n);
                tsr_link_buf_seal(*stage, sizeof(m), sizeof(m) + n, crc);
                pthread_mutex_lock(&ici->lock);
                if (!err) {
                    err = send_chunk(ici, mem, r, &m, stage, data);
                }
            }
            if (!err && port >= 0) {
                left = tsr_max(left, m.arrival - hop_cycles(ici));
            }
            if (r->answered && r->status) {
                err = r->status;    /* refused early: stop sending */
            }
            done += n;
            if (!c->rows) {
                break;
            }
        }
    }
    if (err) {
        r->busy = false;
    } else {
        /* The answer is awaited at a later write or the job's end. */
        r->deadline = now_ns() + ICI_ANSWER_TIMEOUT_NS;
    }
    pthread_cond_broadcast(&ici->cond);
    ici_unlock(ici);
    /*
     * Posted: the queue goes on while its ICI DMA reads the source and
     * sends it (the slower of the two counts); the target's semaphore,
     * timed at the data's arrival, tells the target.
     */
    *until = tsr_max(left, start + tsr_mem_cycles(mem));
    cost->dma += TSR_ICI_ISSUE_CYCLES;
    mem->link_start = start;
    mem->link_end = *until;
    return err;
}
