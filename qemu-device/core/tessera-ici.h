/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera ICI engine: a chip's ports, the messages that cross them, its
 * windows, and the ICI_WRITE command (Documentation/ici.md).
 *
 * Each wired port runs a link layer (tessera-link.c).  Messages are
 * routed dimension by dimension (tessera-route.c): a chip on the way
 * forwards them from port to port without touching its memory; at the
 * destination a WRITE is checked against the window table and written
 * through the window's context, and the target answers the sender.
 *
 * One lock (TsrIci.lock) covers the links and everything here; link
 * callbacks run under it.  The one long thing not done under it: a queue
 * reads a chunk into the frame it committed in a lent ring, held from the
 * peer meanwhile (TsrIciLender).  Lock order: the ICI lock, then the
 * core's sem_lock or a writer's write_lock; never the other way round.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_ICI_H
#define TESSERA_ICI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera-link.h"
#include "tessera-route.h"

typedef struct TsrCore TsrCore;
typedef struct TsrIci TsrIci;

/* A chip's place in its slice. */
typedef struct TsrSlice {
    uint32_t slice_id;
    TsrTopology topo;
    uint8_t coords[TSR_ICI_MAX_DIMS];
} TsrSlice;

TsrIci *tsr_ici_new(TsrCore *core, const TsrSlice *slice);
void tsr_ici_free(TsrIci *ici);
/* Chip reset: windows, interrupts and violations cleared; links kept. */
void tsr_ici_reset(TsrIci *ici);

/*
 * A link's window, in frames sent and not yet acknowledged (each channel
 * gets all of it as credit, and half of it as send queue).  A port whose
 * frames may move to a shared-memory ring keeps the ring's: a ring holds
 * what is unacknowledged, and half of its 4 MiB stays free for a resend.
 * A port whose frames stay on its socket for good (TCP,
 * ici-transport=socket) covers the round trip of two event loops and a
 * socket instead: 4 MiB.
 */
#define TSR_ICI_WINDOW_RING     64
#define TSR_ICI_WINDOW_SOCKET   128

/*
 * Port @port has a socket; its link's window is @window frames
 * (TSR_ICI_WINDOW_*; a power of two).  Fails (-1) if the slice has no
 * neighbour there (the edge of a mesh, or a dimension of one chip).
 */
int tsr_ici_attach(TsrIci *ici, unsigned int port, unsigned int window);
void tsr_ici_connected(TsrIci *ici, unsigned int port);
void tsr_ici_disconnected(TsrIci *ici, unsigned int port);
void tsr_ici_receive(TsrIci *ici, unsigned int port, const void *buf,
                     size_t len);
/*
 * The transport is about to feed @port what its ring holds, in several
 * tsr_ici_receive() calls (@hold), or is done (!@hold): the link
 * acknowledges half its window at a time meanwhile, not each
 * call, and what is owed when done (tsr_link_hold_acks()).
 */
void tsr_ici_hold_acks(TsrIci *ici, unsigned int port, bool hold);
/* The longest a socket port's link delays a bare ACK (cfg.ack_delay_ns). */
#define TSR_ICI_ACK_DELAY_NS    (200 * 1000ull)
/* The port's socket can take bytes again. */
void tsr_ici_writable(TsrIci *ici, unsigned int port);
/* Timers of every port; call at or after tsr_ici_deadline(). */
void tsr_ici_poll(TsrIci *ici);
/*
 * CLOCK_MONOTONIC nanoseconds of the next timer, UINT64_MAX if none, as
 * the lock was last dropped; without taking it.
 */
uint64_t tsr_ici_deadline(TsrIci *ici);

/*
 * Faults of port @port (host properties and the guest debug block): set
 * the fields of @faults that @fields (TSR_LINK_FAULT_*) names, or get
 * what is left of them.  Both fail (-1) if the port has no socket.  A chip
 * reset keeps them: they belong to the link.
 */
int tsr_ici_set_faults(TsrIci *ici, unsigned int port,
                       const TsrLinkFaults *faults, unsigned int fields);
int tsr_ici_get_faults(TsrIci *ici, unsigned int port, TsrLinkFaults *faults);
uint32_t tsr_ici_port_state(TsrIci *ici, unsigned int port);
/*
 * Port @port's state (enum tsr_ici_state) and, if it has heard a TRAIN
 * frame, the peer that sent the last one (MISWIRED, FOREIGN: whom it
 * claims to be), read together.  Returns whether @peer was set.
 */
bool tsr_ici_port_peer(TsrIci *ici, unsigned int port, uint32_t *state,
                       TsrLinkId *peer);
/*
 * What the port's CONTROL register does (TSR_ICI_CTRL_RETRAIN or _DOWN);
 * false if refused: unknown bits, or a port without a socket.
 */
bool tsr_ici_port_control(TsrIci *ici, unsigned int port, uint32_t control);

/*
 * Where the chip is in its slice; before any port is attached.  Returns
 * -1 if the coordinates are not in the topology.
 */
int tsr_ici_set_slice(TsrIci *ici, const TsrSlice *slice);
/*
 * How long a port waits without progress before it resends (5 ms unless
 * set); before any port is attached.  Tests that count timeouts lengthen
 * it, so that a busy host's are not taken for a fault's.
 */
int tsr_ici_set_retransmit(TsrIci *ici, uint64_t ns);
/*
 * How long a port lets its peer be quiet before it probes it (100 ms
 * unless set; 0: never, and an idle link never notices a stopped peer);
 * before any port is attached.  For test peers that do not answer.
 */
int tsr_ici_set_keepalive(TsrIci *ici, uint64_t ns);

/*
 * What carries port @port's frames now (enum tsr_ici_transport), for its
 * TRANSPORT register: the owner chooses it before each connection.
 */
void tsr_ici_set_transport(TsrIci *ici, unsigned int port,
                           uint32_t transport);
/*
 * The port's transport broke (a peer that wrote what no correct peer
 * writes into shared memory): counted with the port's protocol errors.
 */
void tsr_ici_transport_error(TsrIci *ici, unsigned int port);

/*
 * A transport that lends its memory (a shared-memory ring, tessera-ring.h)
 * to port @port's link, as TsrLinkOps' wire_reserve, wire_commit,
 * wire_kept and wire_release say: a chunk of a remote write is then read
 * from HBM straight into the frame the peer reads, which stays there for
 * replay until acknowledged.  reserve may return NULL (no room, or no such
 * transport now); the others are called only after a reservation.
 *
 * The chunk is read from HBM without the ICI lock: its frame is committed
 * first, between hold and unhold, which keep it and everything sent
 * behind it on the port from the peer until the last unhold (as
 * tsr_ring_hold()); all of them run with the ICI lock held.
 */
typedef struct TsrIciLender {
    uint8_t *(*reserve)(void *opaque, unsigned int port, size_t len);
    uint64_t (*commit)(void *opaque, unsigned int port, size_t len);
    const uint8_t *(*kept)(void *opaque, unsigned int port, uint64_t pos,
                           size_t len);
    void (*release)(void *opaque, unsigned int port, uint64_t pos);
    void (*hold)(void *opaque, unsigned int port);
    void (*unhold)(void *opaque, unsigned int port);
} TsrIciLender;

/* Before any port is attached. */
void tsr_ici_set_lender(TsrIci *ici, const TsrIciLender *lender,
                        void *opaque);
/*
 * Port @port's transport stops lending, its memory about to go: chunks
 * being read into it are waited for, and what the link keeps there is
 * copied back (tsr_link_reclaim()).  Once this returns, nothing is
 * reserved in it, written into it, nor read from it.
 */
void tsr_ici_reclaim(TsrIci *ici, unsigned int port);

/*
 * Whether a wired port is neither up nor resuming, or a link's streams
 * started afresh since the first call, which set *@epochs (UINT64_MAX
 * before it): its peer then lost what it was sending (a chip reset, a
 * QEMU restarted), and a wait with SEM_WAIT_LINKS would never end.
 * Without taking the lock: a change wakes the semaphore waiters
 * (tsr_core_wake_waiters()) once this sees it.
 */
bool tsr_ici_links_down(TsrIci *ici, uint64_t *epochs);

/* The ICI register block; call without the core's lock held. */
uint32_t tsr_ici_reg_read(TsrIci *ici, uint32_t offset);
/* False when the write was refused: a read-only register, unknown bits. */
bool tsr_ici_reg_write(TsrIci *ici, uint32_t offset, uint32_t value);

#endif /* TESSERA_ICI_H */
