/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera ICI link layer: one end of one link, in plain C.
 *
 * The socket under a link is reliable; the modeled link is not.  After
 * PCIe's data link layer and InfiniBand's reliable connections, this layer
 * turns a byte stream that may lose, corrupt or delay frames (faults are
 * injected here, deterministically) into an ordered, exactly-once stream
 * of payloads on two virtual channels:
 *
 * - training: both ends exchange slice id, coordinates and port, and a
 *   link whose peer is not the neighbour this port faces stays down;
 * - frames carry a sequence number, a CRC32C of header and payload (of
 *   the header alone on a wire that cannot damage them), the
 *   cumulative acknowledgement and the credits of the other direction;
 *   ACK and NAK frames also say which frames behind a gap are held (SACK);
 * - the receiver hands payloads on in order, keeps frames that arrive
 *   behind a gap, discards duplicates, and asks for a resend (NAK) when a
 *   gap opens or a frame is corrupt;
 * - the sender keeps every unacknowledged frame in a replay buffer (or
 *   where it built it, in the memory a wire lends: tsr_link_lend()),
 *   resends on a NAK or SACK only the frames the peer misses, and the
 *   oldest alone when the retransmit timer fires (the answer says what
 *   else is missing); the timer adapts to the measured round trip (RFC
 *   6298) and stays above the longest of the last second or so; a peer
 *   silent for as long as the retry limit takes at the configured
 *   interval takes the link down;
 * - credits: a receiver whose user is slow holds frames and grants no
 *   more; the sender waits (a credit stall) and never overruns it.
 *
 * No I/O and no threads: the owner feeds received bytes in, drains the
 * bytes to send through a callback, and calls tsr_link_poll() by the
 * deadline tsr_link_deadline() gives.  Times are the owner's nanoseconds.
 * Calls on one link must not overlap.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_LINK_H
#define TESSERA_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "tessera/chip.h"

typedef struct TsrLink TsrLink;

/* CRC32C (Castagnoli), as in iSCSI and ext4: check value 0xe3069283. */
uint32_t tsr_crc32c(uint32_t crc, const void *buf, size_t len);
/* CRC32C of bytes A then B, from crc(A), crc(B) and B's length. */
uint32_t tsr_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b);

/* Who is at one end of a link. */
typedef struct TsrLinkId {
    uint32_t slice_id;
    uint8_t coords[TSR_ICI_MAX_DIMS];
    uint8_t port;
} TsrLinkId;

typedef struct TsrLinkConfig {
    TsrLinkId self;
    /* The peer this port must face; anything else is refused. */
    TsrLinkId peer;
    /* Frames sent and not yet acknowledged, a power of two <= 1024. */
    unsigned int window;
    /* Frames per virtual channel the receiver holds for a slow user. */
    unsigned int rx_slots;
    /* Frames per virtual channel queued for sending. */
    unsigned int tx_slots;
    /*
     * Resend what is unacknowledged after this long without progress, at
     * least: the interval adapts to the measured round trip, up to
     * TSR_LINK_BACKOFF_MAX doublings of this.
     */
    uint64_t retransmit_ns;
    /*
     * The link goes down when the peer shows no sign of life for as long
     * as this many timeouts in a row plus one take at retransmit_ns, each
     * doubling the interval, up to TSR_LINK_BACKOFF_MAX times.
     */
    unsigned int retry_limit;
    /*
     * While up, a peer not heard from for this long is probed (an ACK
     * asking for one back), and one heard from in none of the time a
     * silent peer is given goes down, whether or not anything is in
     * flight: a neighbour that stopped is noticed by a link that only
     * waits for it.  0: no keepalive.
     */
    uint64_t keepalive_ns;
    /*
     * While the user holds acknowledgements (tsr_link_hold_acks()) or
     * the link delays them (ack_delay_ns), an ACK that only acknowledges
     * waits until this many frames have come since the last frame that
     * carried one; 0 or 1: it never waits.
     */
    unsigned int ack_every;
    /*
     * Delayed acknowledgement (as TCP's): not holding, such an ACK still
     * waits for ack_every frames, but at most this long (the link's
     * deadline then includes it); 0: it goes at once.  Keep it well
     * below an eighth of retransmit_ns, the peer's earliest tail probe.
     */
    uint64_t ack_delay_ns;
    /* First sequence number sent (tests start near the wrap). */
    uint32_t isn;
} TsrLinkConfig;

/* Doublings of the retransmit interval after timeouts in a row, at most. */
#define TSR_LINK_BACKOFF_MAX    6

typedef struct TsrLinkOps {
    /*
     * Send wire bytes; return how many were taken (0 to @len).  The link
     * keeps the rest for its next call, after tsr_link_flush().
     */
    size_t (*wire_write)(void *opaque, const void *buf, size_t len);
    /*
     * A payload arrived, in order, on virtual channel @vc.  Return false
     * if it cannot be taken now: the link holds it, stops granting credit
     * on @vc, and offers it again from tsr_link_rx_ready().
     */
    bool (*deliver)(void *opaque, unsigned int vc, const void *payload,
                    size_t len);
    /* The link changed state (enum tsr_ici_state). */
    void (*state_changed)(void *opaque, uint32_t state);
    /*
     * Optional, for a wire that lends its own memory (a shared-memory
     * ring, tessera-ring.h), so that a payload is built where the peer
     * reads it and replayed from there (tsr_link_lend()):
     * @len contiguous bytes behind those written, or NULL if it has no
     * room for them now.
     */
    uint8_t *(*wire_reserve)(void *opaque, size_t len);
    /* Send the @len bytes reserved, kept until released; where they are. */
    uint64_t (*wire_commit)(void *opaque, size_t len);
    /* Kept bytes at @pos (data only: the peer may write there), or NULL. */
    const uint8_t *(*wire_kept)(void *opaque, uint64_t pos, size_t len);
    /* The bytes before @pos need not be kept. */
    void (*wire_release)(void *opaque, uint64_t pos);
} TsrLinkOps;

/* Per-link counters; the chip exports them per port. */
typedef struct TsrLinkCounters {
    uint64_t frames_tx;
    uint64_t frames_rx;
    uint64_t bytes_tx;          /* wire bytes, resent frames included */
    uint64_t bytes_rx;
    uint64_t crc_errors;        /* frames (or bytes before a frame) refused */
    uint64_t seq_errors;        /* DATA frames behind a gap or duplicated */
    uint64_t naks;              /* NAKs received: resends asked for */
    uint64_t replays;           /* DATA frames sent again */
    uint64_t timeouts;          /* retransmit timer or credit probe expiries */
    uint64_t credit_stalls;     /* times a frame waited for credit */
    uint64_t link_downs;
    uint64_t protocol_errors;   /* frames no correct peer would send */
    uint64_t tail_probes;       /* TAIL frames sent */
    uint64_t tail_losses;       /* probes the peer answered with a NAK */
} TsrLinkCounters;

/*
 * Injected faults, applied to the frames this end sends.  Counts apply to
 * the next frames of any kind; rates (per million) apply to DATA frames
 * when first sent, chosen by sequence number and @seed, so that the same
 * frames are hit in every run.
 */
typedef struct TsrLinkFaults {
    uint32_t drop_next;         /* lose the next N frames */
    uint32_t drop_ppm;
    uint32_t corrupt_next;      /* flip one bit in each of the next N */
    uint32_t corrupt_ppm;
    uint32_t drop_acks_next;    /* lose the next N ACKs (not probes) */
    uint64_t delay_ns;          /* hold the wire this long, once */
    uint64_t seed;
} TsrLinkFaults;

/*
 * Fields of TsrLinkFaults, for tsr_link_set_faults() to change some and
 * keep the others (what is left of them: a count may be hitting frames
 * meanwhile).
 */
#define TSR_LINK_FAULT_DROP_NEXT        0x01u
#define TSR_LINK_FAULT_DROP_PPM         0x02u
#define TSR_LINK_FAULT_CORRUPT_NEXT     0x04u
#define TSR_LINK_FAULT_CORRUPT_PPM      0x08u
#define TSR_LINK_FAULT_DROP_ACKS_NEXT   0x10u
#define TSR_LINK_FAULT_DELAY            0x20u
#define TSR_LINK_FAULT_SEED             0x40u
#define TSR_LINK_FAULT_ALL              0x7fu

TsrLink *tsr_link_new(const TsrLinkConfig *cfg, const TsrLinkOps *ops,
                      void *opaque);
void tsr_link_free(TsrLink *link);

/*
 * Whether the byte stream below hands the peer exactly what this end
 * wrote, or breaks (as a shared-memory ring does), a property its
 * transport reports: frames then carry no payload CRC (0 in its place,
 * neither taken nor checked), while injected corruption still costs the
 * frame and is counted as on any wire.  Set before the link trains, alike
 * at both ends.  Not by default.
 */
void tsr_link_set_intact(TsrLink *link, bool intact);
bool tsr_link_intact(const TsrLink *link);

/* The byte stream is there (socket connected): train. */
void tsr_link_connected(TsrLink *link, uint64_t now);
/*
 * The byte stream is gone; frames in flight stay for the next training.
 * A link that had trained resumes when the stream is back
 * (tsr_link_resuming()), unless its peer has by then been silent for as
 * long as a silent peer is given: it then goes down (by tsr_link_poll(),
 * by tsr_link_deadline()), afresh, as for a peer that stopped.
 */
void tsr_link_disconnected(TsrLink *link);
/* Train again, keeping what is in flight (the port's RETRAIN control). */
void tsr_link_retrain(TsrLink *link, uint64_t now);
/* Take the link down until retrained (the port's DOWN control). */
void tsr_link_down(TsrLink *link);
uint32_t tsr_link_state(const TsrLink *link);
/*
 * Whether the link lost its connection with its streams kept, and waits
 * to resume them (DISCONNECTED, then TRAINING again) within its deadline:
 * what its user sends meanwhile should wait, not fail.
 */
bool tsr_link_resuming(const TsrLink *link);
/*
 * How many times the link's streams have started afresh: taken down, or
 * trained FRESH with a peer that lost its state, which an end that is up
 * does without going down.  Nothing sent before reaches the peer after,
 * so a user that began sending before (a remote write's chunks, a request
 * awaiting its answer) must give up, not go on in the new streams.  A
 * connection lost and back (a resume) keeps the epoch.
 */
uint64_t tsr_link_epoch(const TsrLink *link);
/* The peer's identity, once it has trained (MISWIRED: whom it claims). */
bool tsr_link_peer(const TsrLink *link, TsrLinkId *peer);

/* Bytes from the wire, in any pieces. */
void tsr_link_receive(TsrLink *link, const void *buf, size_t len,
                      uint64_t now);

/*
 * Queue a payload of at most TSR_ICI_MAX_PAYLOAD bytes on virtual channel
 * @vc.  Returns 0, or -1 when that channel's queue is full (try again
 * after the link has sent some) or the link is not up.
 */
int tsr_link_send(TsrLink *link, unsigned int vc, const void *payload,
                  size_t len, uint64_t now);
/* The same, the payload gathered from @iovcnt pieces. */
int tsr_link_sendv(TsrLink *link, unsigned int vc, const struct iovec *iov,
                   unsigned int iovcnt, uint64_t now);
/*
 * A payload built outside the link, without the lock that guards it:
 * write it at tsr_link_buf_data(), seal it (which takes its CRC), then
 * tsr_link_send_buf() queues it without a copy, writing the first @head
 * bytes only then (a message header that must be completed under the
 * lock).  The buffer is traded for an empty one of the link's.
 */
typedef struct TsrLinkBuf TsrLinkBuf;

TsrLinkBuf *tsr_link_buf_new(void);
void tsr_link_buf_free(TsrLinkBuf *b);
/* TSR_ICI_MAX_PAYLOAD bytes. */
uint8_t *tsr_link_buf_data(TsrLinkBuf *b);
/*
 * The payload is @len bytes (1 to TSR_ICI_MAX_PAYLOAD), of which bytes
 * @head on are written; with @crc, take their CRC now (for a wire that is
 * not intact: tsr_link_intact()), else when a frame needs it.  -1 if the
 * sizes are wrong.
 */
int tsr_link_buf_seal(TsrLinkBuf *b, size_t head, size_t len, bool crc);
/*
 * Queue sealed *@b on @vc, its first bytes copied from @head; *@b becomes
 * an empty buffer to build the next payload in.  -1 (nothing queued, *@b
 * kept) if it is not sealed or @vc has no room.
 */
int tsr_link_send_buf(TsrLink *link, unsigned int vc, TsrLinkBuf **b,
                      const void *head, uint64_t now);
/*
 * A payload of @len bytes on @vc built in the wire's own memory and sent
 * from there, one copy fewer than through a buffer: where to write it,
 * if it can go at once (the wire lends memory and is intact, nothing waits
 * before it on @vc, window and credit allow, and no injected fault is due
 * to hit it); else NULL, and the caller sends it another way.  Write all
 * @len bytes, then tsr_link_commit() sends it; without a commit nothing
 * is sent.  No other call on the link in between.
 */
uint8_t *tsr_link_lend(TsrLink *link, unsigned int vc, size_t len,
                       uint64_t now);
void tsr_link_commit(TsrLink *link, uint64_t now);
/*
 * New frames tsr_link_lend() could send on @vc now, as the window and the
 * peer's credit allow; 0 if the wire lends nothing or frames wait in the
 * queue of @vc.  Its user waits for some rather than queue a copy.
 */
unsigned int tsr_link_lend_room(const TsrLink *link, unsigned int vc);
/*
 * Whether only the window or the peer's credit keep tsr_link_lend() from
 * lending on @vc: acknowledgements will open it.
 */
bool tsr_link_lend_waits(const TsrLink *link, unsigned int vc);
/*
 * The wire is going (its memory with it): what the link keeps there for
 * replay is copied into the link's own buffers first.
 */
void tsr_link_reclaim(TsrLink *link);
/* Whether tsr_link_send() would take a payload on @vc now. */
bool tsr_link_can_send(const TsrLink *link, unsigned int vc);
/* Whether @vc's send queue is at most half full. */
bool tsr_link_half_empty(const TsrLink *link, unsigned int vc);
/* Payloads queued or unacknowledged. */
unsigned int tsr_link_pending(const TsrLink *link);

/* The user can take held payloads again. */
void tsr_link_rx_ready(TsrLink *link, uint64_t now);
/* The wire can take bytes again: send what is waiting. */
void tsr_link_flush(TsrLink *link, uint64_t now);
/*
 * The user is about to feed a batch of bytes in several
 * tsr_link_receive() calls (what a ring holds, read as it comes): hold
 * bare acknowledgements, one per cfg.ack_every frames rather than one per
 * call (each may wake the peer); releasing them (@hold false, once the
 * batch is read) sends what is owed.  A NAK, an ACK that says what a gap
 * holds, and the acknowledgement every frame carries never wait.
 */
void tsr_link_hold_acks(TsrLink *link, bool hold, uint64_t now);
/*
 * Timers: call at or after tsr_link_deadline().  Besides resending, they
 * give up on a silent peer: unacknowledged frames, a wire it does not
 * read, or credit probes it does not answer, for as long as
 * cfg.retry_limit + 1 configured intervals in a row take (with their
 * backoff), take the link down.
 */
void tsr_link_poll(TsrLink *link, uint64_t now);
/* When tsr_link_poll() is next needed; UINT64_MAX if not. */
uint64_t tsr_link_deadline(const TsrLink *link);

void tsr_link_get_counters(const TsrLink *link, TsrLinkCounters *c);
/*
 * The user found a payload no correct peer sends (a forged or malformed
 * message): count it with the link's protocol errors.
 */
void tsr_link_count_protocol_error(TsrLink *link);
/*
 * Wire bytes of DATA frames the injected faults lost or corrupted: the
 * timing model charges their resending, deterministically (resends the
 * host's own timing causes are not charged).
 */
uint64_t tsr_link_fault_bytes(const TsrLink *link);
/* Set the fields of @faults that @fields (TSR_LINK_FAULT_*) names. */
void tsr_link_set_faults(TsrLink *link, const TsrLinkFaults *faults,
                         unsigned int fields);
/* The faults still to come: counts give what is left of them. */
void tsr_link_get_faults(const TsrLink *link, TsrLinkFaults *faults);

#endif /* TESSERA_LINK_H */
