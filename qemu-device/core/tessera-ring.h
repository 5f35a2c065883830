/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera ICI shared-memory transport: one direction of a link between two
 * chips on one host, as a byte ring in a sealed memfd (Documentation/ici.md,
 * "Transports").
 *
 * The ring carries the link layer's byte stream exactly as a socket would:
 * the link layer above does not know which one it runs on.  The producer
 * copies bytes in and moves @head; the consumer reads them where they lie
 * and moves @tail.  The data is mapped twice, back to back, so that any
 * run of up to @size bytes is contiguous whatever the wrap.
 *
 * The other end is another process and may write anything at any time:
 * each side keeps its own count, reads the other's once per use, and a
 * count more than @size away from its own breaks the ring (never a read or
 * write outside it).  A sealed memfd cannot shrink under its mapping.
 *
 * Wake-ups are suppressed as vhost's are: a side about to sleep says so in
 * the header, and the other rings a doorbell only then: a byte on the
 * port's socket (the owner's business), or a futex wake on the word
 * itself (tsr_ring_wake_data(), tsr_ring_sleep()).
 *
 * A ring's producer calls must not overlap, nor its consumer calls; one of
 * each may run at once.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_RING_H
#define TESSERA_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tessera/chip.h"

typedef struct TsrRing TsrRing;

/*
 * A new ring of @size data bytes (a power of two from TSR_ICI_RING_MIN to
 * TSR_ICI_RING_MAX) to produce into; *@fd is its memfd, for the peer
 * (the ring keeps its own copy).  NULL with errno set on failure.
 */
TsrRing *tsr_ring_create(uint32_t size, int *fd);
/*
 * The peer's ring to consume from: its memfd @fd (taken over, closed on
 * failure) of @size data bytes, as its HELLO said.  NULL, with *@why
 * saying what is wrong, unless the memfd is sealed against shrinking and
 * growing, of exactly that size, and its header agrees.
 */
TsrRing *tsr_ring_open(int fd, uint32_t size, const char **why);
void tsr_ring_free(TsrRing *r);
/* The ring's memfd (the ring's own: dup() it to keep it). */
int tsr_ring_fd(const TsrRing *r);
/* The other end wrote a count no correct peer writes: the ring is dead. */
bool tsr_ring_broken(const TsrRing *r);

/* Producer: copy up to @len bytes in; how many were taken. */
size_t tsr_ring_write(TsrRing *r, const void *buf, size_t len);
/*
 * Producer, building in place: @len contiguous bytes at the head to write
 * a frame into, or NULL if the ring has no room for them now (bytes the
 * consumer has not read, or kept ones).  Nothing is sent until
 * tsr_ring_commit(); a reservation not committed is forgotten.
 */
uint8_t *tsr_ring_reserve(TsrRing *r, size_t len);
/*
 * Producer: send the @len bytes reserved; with @keep, keep them until
 * tsr_ring_release() (a link's replay buffer, so that a frame built in
 * the ring needs no copy of its own).  Returns their position, for
 * tsr_ring_kept() and tsr_ring_release().
 */
uint64_t tsr_ring_commit(TsrRing *r, size_t len, bool keep);
/*
 * Producer: while held, what is committed or written stays unseen by the
 * consumer (its head is not moved), so that a frame committed in the
 * ring can be filled afterwards, by another thread, with what follows it
 * still behind it; the last tsr_ring_unhold() shows it all at once.
 * Holds nest; the producer's calls still must not overlap.
 */
void tsr_ring_hold(TsrRing *r);
void tsr_ring_unhold(TsrRing *r);
/*
 * Producer: kept bytes [@pos, @pos + @len), contiguous, or NULL if they
 * are not all kept.  The peer may have rewritten them: they are data only.
 */
const uint8_t *tsr_ring_kept(TsrRing *r, uint64_t pos, size_t len);
/* Producer: the bytes before @pos need not be kept any more. */
void tsr_ring_release(TsrRing *r, uint64_t pos);
/*
 * Producer, after writing: whether the consumer sleeps and must be rung
 * (TSR_ICI_DOORBELL_DATA).  Clears its flag: one ring per sleep.  Never
 * while held: there is nothing new to see.
 */
bool tsr_ring_data_doorbell(TsrRing *r);
/*
 * Producer, the ring full: ask to be rung when there is room.  Returns
 * true if there is room already (write again instead of waiting).
 */
bool tsr_ring_wait_room(TsrRing *r);

/*
 * Consumer: the bytes waiting, all contiguous (*@len of them, 0 if none),
 * or NULL if the ring is broken.  They stay the peer's to scribble on:
 * read each once, as input.
 */
const uint8_t *tsr_ring_peek(TsrRing *r, size_t *len);
/* Consumer: @n bytes of those peeked are done with. */
void tsr_ring_consume(TsrRing *r, size_t n);
/* Consumer, after consuming: whether the producer waits to be rung. */
bool tsr_ring_room_doorbell(TsrRing *r);
/*
 * Consumer, nothing to read: ask to be rung when there is.  Returns true
 * if bytes came meanwhile (read again instead of sleeping).
 */
bool tsr_ring_wait_data(TsrRing *r);

/*
 * Futex doorbells (TSR_ICI_HELLO_FUTEX): the waiting words are futexes
 * shared by both processes.  The side that took the other's flag
 * (tsr_ring_data_doorbell(), tsr_ring_room_doorbell()) wakes its sleeper;
 * this never blocks, whatever the peer does.
 */
void tsr_ring_wake_data(TsrRing *r);
void tsr_ring_wake_room(TsrRing *r);
/* Whether this kernel has futex_waitv() (Linux 5.16). */
bool tsr_ring_futex_works(void);

/*
 * A consumer sleeping on the peers' rings of several ports at once.  The
 * peer writes the word slept on: a word it keeps clearing (futex_waitv()
 * returns at once) or wakes for nothing costs a bounded number of
 * wake-ups, counted, never a spin: TSR_RING_FUTILE_MAX in a row that find
 * no bytes, and the ring is not slept on for TSR_RING_QUIET_NS, only read
 * every TSR_RING_POLL_NS.  A peer that never wakes costs the timeout.
 */
#define TSR_RING_FUTILE_MAX     16
#define TSR_RING_QUIET_NS       (100 * 1000 * 1000ull)
#define TSR_RING_POLL_NS        (1000 * 1000ull)

typedef struct TsrRingWatch {
    TsrRing *ring;              /* the peer's, to consume; NULL: none */
    unsigned int futile;        /* wake-ups in a row with nothing read */
    uint64_t quiet_until;       /* CLOCK_MONOTONIC ns: polled until then */
    uint64_t futile_wakeups;    /* ever */
} TsrRingWatch;

/*
 * Sleep until one of the @n watched rings has bytes (tsr_ring_wait_data()
 * is asked of each, so bytes already there end it at once), *@ctl (a
 * word private to this process) is no longer @ctl_val, or @timeout_ns
 * passes.  The caller then reads every watched ring.
 */
void tsr_ring_sleep(TsrRingWatch *w, unsigned int n, const uint32_t *ctl,
                    uint32_t ctl_val, uint64_t timeout_ns);
/* Change *@ctl and wake its sleeper. */
void tsr_ring_kick(uint32_t *ctl);

#endif /* TESSERA_RING_H */
