/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera ICI link layer (see tessera-link.h and Documentation/chip.md,
 * "ICI links").
 *
 * Sequence numbers and credit counts are 32-bit and wrap; they are
 * compared as serial numbers (RFC 1982).  The replay ring holds the frames
 * [snd_una, snd_end): [snd_una, snd_nxt) have been sent and wait for an
 * acknowledgement, [snd_nxt, snd_end) wait to be sent, again after a
 * go-back.  snd_max is one past the highest number ever sent, so that a
 * frame sent below it is a replay.  Frames of the ring the peer reported
 * holding (SACK) are not sent again; those it reported missing wait
 * (MARK_QUEUED) in front of everything else.
 *
 * The receiver keeps frames that arrive behind a gap in a reorder ring of
 * its own, [rcv_next, rcv_next + window), and hands them on in order once
 * the gap is filled; rcv_high is one past the highest number it holds.
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include <isa-l/crc.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tessera-link.h"

#define HDR_SIZE sizeof(struct tsr_ici_frame_hdr)
#define CRC_SIZE sizeof(uint32_t)
#define FRAME_MAX (HDR_SIZE + TSR_ICI_MAX_PAYLOAD + CRC_SIZE)
/* Bytes of frames waiting for the wire: enough to keep it busy. */
#define WBUF_SIZE (4 * FRAME_MAX)

_Static_assert(HDR_SIZE == 28, "the ICI frame header is 28 bytes");

/* ------------------------------------------------------------- CRC32C */

/* Castagnoli's polynomial, bit-reflected. */
#define CRC32C_POLY 0x82f63b78u

/*
 * ISA-L's crc32_iscsi() is CRC32C that neither inverts the state it is
 * given nor the one it returns: the conditioning is the caller's.  It
 * picks the fastest code for the CPU it runs on (PCLMULQDQ folding where
 * there is one): 63 GB/s here, where three interleaved streams of SSE4.2's
 * crc32 instruction made 27.
 */
uint32_t tsr_crc32c(uint32_t crc, const void *buf, size_t len)
{
    while (len > INT_MAX) {
        crc = ~crc32_iscsi((unsigned char *)buf, INT_MAX, ~crc);
        buf = (const uint8_t *)buf + INT_MAX;
        len -= INT_MAX;
    }
    return ~crc32_iscsi((unsigned char *)buf, (int)len, ~crc);
}

/*
 * Joining two CRCs: crc(A B) = crc(A) x^(8 |B|) + crc(B), mod P, for the
 * conditioned (inverted) CRCs as well, since the conditioning of A's end
 * and B's start cancel.  Polynomials are bit-reflected, as the CRC state
 * is: bit 31 is x^0.
 */
static uint32_t crc32c_x8n[32];     /* x^(8 * 2^k) mod P */
static pthread_once_t crc32c_once = PTHREAD_ONCE_INIT;

static uint32_t crc32c_mul(uint32_t a, uint32_t b)
{
    uint32_t m, p = 0;

    for (m = 1u << 31; m; m >>= 1) {
        if (a & m) {
            p ^= b;
        }
        b = b & 1 ? (b >> 1) ^ CRC32C_POLY : b >> 1;
    }
    return p;
}

static void crc32c_combine_init(void)
{
    unsigned int k;

    crc32c_x8n[0] = 1u << (31 - 8);
    for (k = 1; k < 32; k++) {
        crc32c_x8n[k] = crc32c_mul(crc32c_x8n[k - 1], crc32c_x8n[k - 1]);
    }
}

uint32_t tsr_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b)
{
    /* A thread joins parts of one length over and over: keep its shift. */
    static __thread size_t last_len;
    static __thread uint32_t last_shift = 1u << 31;     /* x^0 */
    uint32_t shift = 1u << 31;
    size_t n = len_b;
    unsigned int k;

    if (len_b == last_len) {
        return crc32c_mul(last_shift, crc_a) ^ crc_b;
    }
    pthread_once(&crc32c_once, crc32c_combine_init);
    for (k = 0; n; k++, n >>= 1) {
        if (n & 1) {
            shift = crc32c_mul(shift, crc32c_x8n[k]);
        }
    }
    last_len = len_b;
    last_shift = shift;
    return crc32c_mul(shift, crc_a) ^ crc_b;
}

/* ------------------------------------------------------------ helpers */

static bool seq_lt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

static bool seq_le(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) <= 0;
}

/*
 * A payload: in a send queue, the replay ring, the receive hold, or a
 * user's hands (tsr_link_buf_new()).
 */
struct TsrLinkBuf {
    uint16_t len;
    uint8_t vc;
    /* In the replay ring: MARK_*. */
    uint8_t mark;
    /* Sealed by a user: the first @head bytes are still to be written. */
    uint16_t head;
    /*
     * With @has_crc: of data[head, len) once sealed, of all of it once
     * queued.  An intact wire needs none (see TsrLink.intact).
     */
    bool has_crc;
    uint32_t crc;
    /*
     * In the replay ring: the payload is not in @data but kept by the
     * wire, in the frame built there at @pos (tsr_link_lend()).
     */
    bool lent;
    uint64_t pos;
    /*
     * In the replay ring: when it was sent, while its round trip may
     * still be measured (sent once, not yet acknowledged); else 0.
     */
    uint64_t sent_at;
    uint8_t data[TSR_ICI_MAX_PAYLOAD];
};

/* What the sender knows of a frame in its replay ring. */
#define MARK_SACKED     0x01    /* the peer holds it */
#define MARK_RESENT     0x02    /* sent more than once */
#define MARK_QUEUED     0x04    /* the peer misses it: to resend */

/*
 * @count slots, each holding a payload buffer of its own.  The send
 * queues, the replay ring and users' buffers trade buffers rather than
 * copy 32 KiB payloads (see admit_one() and tsr_link_send_buf()), so a
 * buffer may end up in another's slot; each is always in exactly one, and
 * is freed from there.
 */
typedef struct Slots {
    TsrLinkBuf **slot;
    unsigned int count;
} Slots;

static bool slots_init(Slots *s, unsigned int count)
{
    unsigned int i;

    s->count = count;
    s->slot = calloc(count, sizeof(*s->slot));
    if (!s->slot) {
        return false;
    }
    for (i = 0; i < count; i++) {
        s->slot[i] = calloc(1, sizeof(TsrLinkBuf));
        if (!s->slot[i]) {
            return false;
        }
    }
    return true;
}

static void slots_free(Slots *s)
{
    unsigned int i;

    for (i = 0; s->slot && i < s->count; i++) {
        free(s->slot[i]);
    }
    free(s->slot);
}

/* A FIFO of payloads. */
typedef struct Fifo {
    Slots s;
    unsigned int cap;
    unsigned int head;
    unsigned int count;
} Fifo;

static bool fifo_init(Fifo *f, unsigned int cap)
{
    f->cap = cap;
    f->head = f->count = 0;
    return slots_init(&f->s, cap);
}

static TsrLinkBuf *fifo_front(Fifo *f)
{
    return f->s.slot[f->head];
}

static TsrLinkBuf **fifo_push_slot(Fifo *f)
{
    return &f->s.slot[(f->head + f->count++) % f->cap];
}

static TsrLinkBuf *fifo_push(Fifo *f)
{
    return *fifo_push_slot(f);
}

static void fifo_pop(Fifo *f)
{
    f->head = (f->head + 1) % f->cap;
    f->count--;
}

struct TsrLink {
    TsrLinkConfig cfg;
    const TsrLinkOps *ops;
    void *opaque;
    uint32_t state;
    /* Trained since creation: sequence state survives a retraining. */
    bool trained;
    /* The streams started afresh this many times (tsr_link_epoch()). */
    uint64_t epoch;
    /* Taken down by tsr_link_down(): not revived by the peer's training. */
    bool held_down;
    /*
     * Its connection was lost while its streams were kept: it waits for
     * the connection and then resumes, unless the peer stays silent past
     * the deadline (tsr_link_resuming()).
     */
    bool resuming;
    /* This training has heard a valid TRAIN from the peer. */
    bool peer_seen;
    bool peer_known;
    TsrLinkId peer;

    /* Sending. */
    Slots ring;
    uint32_t snd_una;
    uint32_t snd_nxt;
    uint32_t snd_end;
    uint32_t snd_max;
    Fifo txq[TSR_ICI_VCS];
    uint32_t sent_new[TSR_ICI_VCS];
    uint32_t peer_credit[TSR_ICI_VCS];
    bool stalled[TSR_ICI_VCS];
    unsigned int next_vc;
    /* Frames marked MARK_QUEUED, none below rxt_next. */
    unsigned int rxt_count;
    uint32_t rxt_next;
    uint64_t rto_deadline;          /* 0: not armed */
    uint64_t probe_deadline;        /* credit stall: 0, not armed */
    uint64_t tail_deadline;         /* tail-loss probe: 0, not armed */
    bool tail_asked;                /* a TAIL frame awaits its answer */
    unsigned int retries;
    /* The peer last showed it is alive (see give_up_at()). */
    uint64_t progress_at;
    uint64_t give_up_ns;            /* give_up_ns(&cfg) */
    /* The round trip (RFC 6298): frame rtt_seq, sent at rtt_start. */
    bool rtt_timing;
    uint32_t rtt_seq;
    uint64_t rtt_start;
    uint64_t srtt;                  /* 0: no sample yet */
    uint64_t rttvar;
    /*
     * The longest round trip of each of the last two periods of
     * give_up_ns, the newer first; the newer began at rtt_max_since.
     */
    uint64_t rtt_max[2];
    uint64_t rtt_max_since;
    /* A valid frame came from the peer since the last probe. */
    bool heard;
    /* When a valid frame last came from the peer; the keepalive's timer. */
    uint64_t heard_at;
    uint64_t keepalive_deadline;    /* 0: not armed */
    uint64_t train_deadline;        /* 0: not training */
    /* When a late poll last did nothing (overslept()); 0: never. */
    uint64_t overslept_at;

    /* Receiving. */
    uint32_t rcv_next;
    uint32_t rcv_high;
    Slots reorder;                  /* by sequence number; len 0: empty */
    unsigned int reordered[TSR_ICI_VCS];
    uint32_t consumed[TSR_ICI_VCS];
    Fifo held[TSR_ICI_VCS];
    bool ack_due;
    /*
     * tsr_link_hold_acks(); rcv_next when a frame last acknowledged; when
     * a delayed bare ACK must go (cfg.ack_delay_ns; 0: none waits).
     */
    bool acks_held;
    uint32_t acked;
    uint64_t ack_deadline;
    /* NAK: a frame failed its CRC; frames before one that came were lost. */
    bool nak_due;
    bool gap_due;
    bool resyncing;
    uint8_t rbuf[2 * FRAME_MAX];
    size_t rlen;

    /* The wire. */
    /*
     * It hands the peer what this end wrote, or breaks: frames carry no
     * payload CRC (tsr_link_set_intact()).
     */
    bool intact;
    /* A frame being built in the wire (tsr_link_lend()): where, what. */
    uint8_t *lend_at;
    size_t lend_len;
    unsigned int lend_vc;
    uint8_t wbuf[WBUF_SIZE];
    size_t wlen;
    uint64_t hold_until;

    TsrLinkCounters cnt;
    uint64_t fault_bytes;
    TsrLinkFaults faults;
    uint64_t rng;
};

static void set_state(TsrLink *link, uint32_t state)
{
    if (link->state == state) {
        return;
    }
    link->state = state;
    if (state != TSR_ICI_STATE_DISCONNECTED &&
        state != TSR_ICI_STATE_TRAINING) {
        link->resuming = false;     /* back up, or given up on */
    }
    if (link->ops->state_changed) {
        link->ops->state_changed(link->opaque, state);
    }
}

/* splitmix64's finaliser: a well-mixed function of @z. */
static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t next_random(TsrLink *link)
{
    return mix(link->rng += 0x9e3779b97f4a7c15ull);
}

static bool take_count(uint32_t *next)
{
    if (!*next) {
        return false;
    }
    (*next)--;
    return true;
}

/*
 * Whether a rate fault (@ppm per million, @kind telling drop from
 * corruption) hits DATA frame @seq.  Decided for a frame's first sending,
 * by its number and the seed: the same frames are hit in every run,
 * whatever the timing of acknowledgements and resends.
 */
static bool rate_hit(const TsrLink *link, uint32_t ppm, uint32_t seq,
                     uint64_t kind)
{
    return ppm && mix(link->faults.seed ^ (uint64_t)seq << 8 ^ kind) %
                  1000000 < ppm;
}

/*
 * The longest round trip measured within the last one or two periods of
 * give_up_ns at @now (a windowed maximum, as BBR keeps of its bandwidth).
 */
static uint64_t rtt_max(const TsrLink *link, uint64_t now)
{
    uint64_t age = now - link->rtt_max_since;

    if (age >= 2 * link->give_up_ns) {
        return 0;
    }
    if (age >= link->give_up_ns) {
        return link->rtt_max[0];
    }
    return link->rtt_max[0] > link->rtt_max[1] ? link->rtt_max[0] :
                                                 link->rtt_max[1];
}

/*
 * The retransmit interval, as TCP computes it (RFC 6298): the smoothed
 * round trip plus four times its variation, so that a peer whose host is
 * busy is not taken for a lossy one; and at least a quarter more than the
 * longest round trip of the last second or so (rtt_max()).  The variation
 * forgets a stall of the peer within a few samples, a few round trips of
 * a running peer, while a busy host stalls it again and again: with the
 * interval back at its floor the next stall fired it (0.4-1.3% of the
 * frames resent on unfaulted links).  At least the configured interval
 * and at most TSR_LINK_BACKOFF_MAX doublings of it; doubled for each
 * timeout in a row, up to that maximum.
 */
static uint64_t rto(const TsrLink *link, uint64_t now)
{
    uint64_t min = link->cfg.retransmit_ns;
    uint64_t max = min << TSR_LINK_BACKOFF_MAX;
    uint64_t t = link->srtt + 4 * link->rttvar;
    uint64_t longest = rtt_max(link, now);
    unsigned int shift = link->retries < TSR_LINK_BACKOFF_MAX ?
                         link->retries : TSR_LINK_BACKOFF_MAX;

    longest += longest / 4;
    t = t < longest ? longest : t;
    t = t < min ? min : t > max ? max : t;
    t <<= shift;
    return t < max ? t : max;
}

/*
 * Ring frame @p is acknowledged (or SACKed) at @now: if for the first
 * time, was its round trip the longest of the period?  Every frame sent once
 * is measured, not only the one timed: the frame timed is often the
 * oldest in flight, which a timeout resends, and the longest round trips
 * (a stall of the peer longer than the interval) would never be seen.
 * Not a frame sent before a late poll (overslept()): its time includes
 * this end's own.
 */
static void rtt_max_sample(TsrLink *link, TsrLinkBuf *p, uint64_t now)
{
    uint64_t age = now - link->rtt_max_since, r = now - p->sent_at;

    if (!p->sent_at || p->sent_at < link->overslept_at) {
        return;
    }
    p->sent_at = 0;
    if (age >= 2 * link->give_up_ns) {
        link->rtt_max[0] = link->rtt_max[1] = 0;
        link->rtt_max_since = now;
    } else if (age >= link->give_up_ns) {
        link->rtt_max[1] = link->rtt_max[0];
        link->rtt_max[0] = 0;
        link->rtt_max_since += link->give_up_ns;
    }
    if (r > link->rtt_max[0]) {
        link->rtt_max[0] = r;
    }
}

/*
 * A round trip of @r ns was measured (RFC 6298, 2.2 and 2.3).  Timed
 * frames are never ones sent twice (Karn): an acknowledgement after a
 * resend may answer either copy.
 */
static void rtt_sample(TsrLink *link, uint64_t r)
{
    uint64_t dev;

    link->rtt_timing = false;
    link->retries = 0;
    r = r ? r : 1;
    if (!link->srtt) {
        link->srtt = r;
        link->rttvar = r / 2;
        return;
    }
    dev = link->srtt > r ? link->srtt - r : r - link->srtt;
    if (dev > link->rttvar) {
        link->rttvar = dev;
    } else {
        link->rttvar -= (link->rttvar - dev) / 8;
    }
    link->srtt = (7 * link->srtt + r) / 8;
}

/*
 * How long a peer that shows no sign of life is given: as long as
 * cfg.retry_limit + 1 timeouts in a row take at the configured interval,
 * with their backoff, i.e. retransmit x (2^(MAX+1) - 1 + (limit - MAX) x
 * 2^MAX) (0.955 s for the ICI's 5 ms and 7).  A deadline, not a count of
 * timeouts: however far the measured round trip has stretched the
 * interval, a dead peer is given up on as soon.
 */
static uint64_t give_up_ns(const TsrLinkConfig *cfg)
{
    uint64_t total = 0;
    unsigned int i;

    for (i = 0; i <= cfg->retry_limit; i++) {
        total += cfg->retransmit_ns << (i < TSR_LINK_BACKOFF_MAX ?
                                        i : TSR_LINK_BACKOFF_MAX);
    }
    return total;
}

/*
 * The tail-loss probe's timeout (RFC 8985's PTO): twice the smoothed round
 * trip.  The peer answers every frame at once (no delayed ACK), so by
 * then a frame that arrived has been acknowledged unless the peer did not
 * run; and a probe that comes too early costs a header, not a replay
 * (tail_probe()).  At least an eighth of the configured interval: a round
 * trip of a few microseconds between two ends that both run says nothing
 * of the peer's next wake-up, and a probe at every burst's end would
 * double the ACKs.
 */
static uint64_t pto(const TsrLink *link)
{
    uint64_t t = 2 * link->srtt, min = link->cfg.retransmit_ns / 8;

    return t < min ? min : t;
}

/*
 * Something new was sent or acknowledged at @now: the tail-loss probe is
 * due a PTO on while frames are unacknowledged, if that comes before the
 * retransmit timer.  Without a round trip measured yet, the timer alone.
 */
static void arm_tail_probe(TsrLink *link, uint64_t now)
{
    uint64_t at = now + pto(link);

    link->tail_deadline = link->srtt && link->snd_una != link->snd_nxt &&
                          (!link->rto_deadline || at < link->rto_deadline) ?
                          at : 0;
}

/*
 * Time from @then to @now, 0 if @then is later: a caller whose @now was
 * read before another thread heard the peer costs the link nothing.
 */
static uint64_t since(uint64_t then, uint64_t now)
{
    return now > then ? now - then : 0;
}

/* When a timer armed at @now fires: an interval on, or when we give up. */
static uint64_t timer_at(const TsrLink *link, uint64_t now)
{
    uint64_t at = now + rto(link, now);
    uint64_t end = link->progress_at + link->give_up_ns;

    return at < end ? at : end;
}

/* A timer fired, and nothing since progress_at says the peer is alive. */
static bool timed_out(TsrLink *link, uint64_t now)
{
    link->cnt.timeouts++;
    link->retries++;
    return since(link->progress_at, now) >= link->give_up_ns;
}

/* ------------------------------------------------------------ the wire */

static void wire_flush(TsrLink *link, uint64_t now)
{
    size_t n;

    if (!link->wlen || now < link->hold_until) {
        return;
    }
    if (link->hold_until) {
        /*
         * What the hold kept leaves now: time the resend from now, or a
         * hold ending just before the timer would look like a loss.
         */
        link->hold_until = 0;
        if (link->rto_deadline) {
            link->progress_at = now;
            link->rto_deadline = timer_at(link, now);
        }
    }
    n = link->ops->wire_write(link->opaque, link->wbuf, link->wlen);
    if (n > link->wlen) {
        n = link->wlen;
    }
    memmove(link->wbuf, link->wbuf + n, link->wlen - n);
    link->wlen -= n;
}

static bool wire_has_room(const TsrLink *link)
{
    return link->wlen + FRAME_MAX <= WBUF_SIZE;
}

/* Queue @len bytes behind the frames already waiting for the wire. */
static void wbuf_put(TsrLink *link, const void *p, size_t len)
{
    if (!len) {
        return;     /* @p may be NULL */
    }
    memcpy(link->wbuf + link->wlen, p, len);
    link->wlen += len;
}

/* A frame's header as it leaves now, counted; its bytes on the wire. */
static size_t frame_header(TsrLink *link, struct tsr_ici_frame_hdr *h,
                           uint8_t type, uint8_t flags, uint32_t seq,
                           uint16_t len)
{
    size_t total = HDR_SIZE + (len ? len + CRC_SIZE : 0);
    unsigned int vc;

    *h = (struct tsr_ici_frame_hdr) {
        .magic = TSR_ICI_FRAME_MAGIC, .type = type, .flags = flags,
        .len = len, .seq = seq, .ack = link->rcv_next,
    };
    for (vc = 0; vc < TSR_ICI_VCS; vc++) {
        h->credit[vc] = link->consumed[vc] + link->cfg.rx_slots;
    }
    h->hdr_crc = tsr_crc32c(0, h, offsetof(struct tsr_ici_frame_hdr,
                                           hdr_crc));
    link->ack_due = false;
    link->acked = link->rcv_next;
    link->ack_deadline = 0;
    link->cnt.frames_tx++;
    link->cnt.bytes_tx += total;
    return total;
}

/*
 * Put a frame on the wire, where the injected faults apply: it may be
 * lost, have one bit flipped, or be held back.  When nothing waits before
 * it, its pieces go straight to the wire; what the wire does not take
 * waits in wbuf.
 */
static void emit(TsrLink *link, uint8_t type, uint8_t flags, uint32_t seq,
                 const void *payload, uint16_t len, uint32_t payload_crc,
                 bool first, uint64_t now)
{
    struct tsr_ici_frame_hdr h;
    size_t total = frame_header(link, &h, type, flags, seq, len);
    uint32_t crc = link->intact ? 0 : payload_crc;
    const struct iovec piece[3] = {
        { .iov_base = &h, .iov_len = HDR_SIZE },
        { .iov_base = (void *)payload, .iov_len = len },
        { .iov_base = &crc, .iov_len = len ? CRC_SIZE : 0 },
    };
    unsigned int i;

    if (link->faults.delay_ns) {
        link->hold_until = now + link->faults.delay_ns;
        link->faults.delay_ns = 0;
        /* The round trip being timed now includes the hold. */
        link->rtt_timing = false;
    }
    /* Acknowledgements, that is: probes are asked, not answers. */
    if (type == TSR_ICI_FRAME_ACK && !(flags & TSR_ICI_FRAME_PROBE) &&
        take_count(&link->faults.drop_acks_next)) {
        return;
    }
    if (take_count(&link->faults.drop_next) ||
        (first && rate_hit(link, link->faults.drop_ppm, seq, 1))) {
        link->fault_bytes += type == TSR_ICI_FRAME_DATA ? total : 0;
        return;
    }
    if (take_count(&link->faults.corrupt_next) ||
        (first && rate_hit(link, link->faults.corrupt_ppm, seq, 2))) {
        uint64_t bit = next_random(link) % (total * 8);
        uint8_t *f = link->wbuf + link->wlen;

        /*
         * On an intact wire a payload CRC other than 0 says a frame was
         * damaged: one flipped bit leaves ~0 far from 0, so the peer
         * refuses the frame wherever the bit falls, as a CRC would.
         */
        crc = link->intact ? ~0u : crc;

        for (i = 0; i < 3; i++) {
            wbuf_put(link, piece[i].iov_base, piece[i].iov_len);
        }
        f[bit / 8] ^= 1u << (bit % 8);
        link->fault_bytes += type == TSR_ICI_FRAME_DATA ? total : 0;
        return;
    }
    for (i = 0; i < 3; i++) {
        const uint8_t *p = piece[i].iov_base;
        size_t n = 0;

        if (!link->wlen && now >= link->hold_until && piece[i].iov_len) {
            n = link->ops->wire_write(link->opaque, p, piece[i].iov_len);
            n = n < piece[i].iov_len ? n : piece[i].iov_len;
        }
        wbuf_put(link, p + n, piece[i].iov_len - n);
    }
}

static void send_train(TsrLink *link, uint64_t now)
{
    struct tsr_ici_train t = {
        .version = TSR_ICI_VERSION,
        .slice_id = link->cfg.self.slice_id,
        .port = link->cfg.self.port,
        .flags = (link->peer_seen ? TSR_ICI_TRAIN_PEER_SEEN : 0) |
                 (link->trained ? 0 : TSR_ICI_TRAIN_FRESH),
        .snd_una = link->snd_una,
        .rcv_next = link->rcv_next,
    };

    memcpy(t.coords, link->cfg.self.coords, sizeof(t.coords));
    if (wire_has_room(link)) {
        emit(link, TSR_ICI_FRAME_TRAIN, 0, 0, &t, sizeof(t),
             link->intact ? 0 : tsr_crc32c(0, &t, sizeof(t)), false, now);
    }
    link->train_deadline = now + link->cfg.retransmit_ns;
    wire_flush(link, now);
}

/* ------------------------------------------------------------ sending */

static TsrLinkBuf **ring_slot(TsrLink *link, uint32_t seq)
{
    return &link->ring.slot[seq & (link->cfg.window - 1)];
}

/* Move one queued payload into the ring, if room and credit allow. */
static bool admit_one(TsrLink *link)
{
    TsrLinkBuf **slot, *free_buf;
    unsigned int i;

    if (link->snd_end - link->snd_una >= link->cfg.window) {
        return false;
    }
    for (i = 0; i < TSR_ICI_VCS; i++) {
        unsigned int vc = (link->next_vc + i) % TSR_ICI_VCS;
        Fifo *q = &link->txq[vc];

        if (!q->count) {
            continue;
        }
        if (!seq_lt(link->sent_new[vc], link->peer_credit[vc])) {
            if (!link->stalled[vc]) {
                link->stalled[vc] = true;
                link->cnt.credit_stalls++;
            }
            continue;
        }
        link->stalled[vc] = false;
        /* The ring's slot is free (acknowledged): trade buffers. */
        slot = ring_slot(link, link->snd_end++);
        free_buf = *slot;
        *slot = q->s.slot[q->head];
        (*slot)->mark = 0;
        (*slot)->lent = false;
        q->s.slot[q->head] = free_buf;
        fifo_pop(q);
        link->sent_new[vc]++;
        link->next_vc = vc + 1;
        return true;
    }
    return false;
}

/* Frames wait for credit, and none are in flight. */
static bool credit_stalled(const TsrLink *link)
{
    unsigned int vc;

    if (link->snd_una != link->snd_end) {
        return false;
    }
    for (vc = 0; vc < TSR_ICI_VCS; vc++) {
        if (link->txq[vc].count &&
            !seq_lt(link->sent_new[vc], link->peer_credit[vc])) {
            return true;
        }
    }
    return false;
}

/* Bit i: the frame rcv_next + 1 + i is held behind a gap (SACK). */
static uint32_t sack_bits(TsrLink *link)
{
    uint32_t held = link->rcv_high - link->rcv_next, bits = 0, i;

    for (i = 1; i < held && i <= 32; i++) {
        if (link->reorder.slot[(link->rcv_next + i) &
                               (link->cfg.window - 1)]->len) {
            bits |= 1u << (i - 1);
        }
    }
    return bits;
}

/*
 * Ring frame @seq, in @p, leaves for the first time or again: time it, or
 * count the replay.  Whether it is the first time.
 */
static bool data_leaves(TsrLink *link, uint32_t seq, TsrLinkBuf *p,
                        uint64_t now)
{
    bool first = !seq_lt(seq, link->snd_max);

    p->sent_at = first && now >= link->hold_until ? now : 0;
    if (first) {
        link->snd_max = seq + 1;
        if (!link->rtt_timing && now >= link->hold_until) {
            link->rtt_timing = true;
            link->rtt_seq = seq;
            link->rtt_start = now;
        }
    } else {
        link->cnt.replays++;
        p->mark |= MARK_RESENT;
        if (link->rtt_seq == seq) {
            /* Karn: which copy an acknowledgement answers is unknown. */
            link->rtt_timing = false;
        }
    }
    return first;
}

/*
 * Data has left, new if @first: the peer owes an acknowledgement from now,
 * if none yet, and the tail is a new one.
 */
static void data_left(TsrLink *link, bool first, uint64_t now)
{
    if (!link->rto_deadline) {
        /* Nothing was in flight: the peer owes nothing yet. */
        link->progress_at = now;
        link->rto_deadline = timer_at(link, now);
    }
    if (first) {
        arm_tail_probe(link, now);
    }
}

/* Send ring frame @seq, for the first time or again. */
static void send_data(TsrLink *link, uint32_t seq, uint64_t now)
{
    TsrLinkBuf *p = *ring_slot(link, seq);
    bool first = data_leaves(link, seq, p, now);
    const uint8_t *payload = p->data;

    if (p->lent) {
        /* Kept by the wire until acknowledged or reclaimed: never gone. */
        payload = link->ops->wire_kept(link->opaque, p->pos + HDR_SIZE,
                                       p->len);
        if (!payload) {
            return;
        }
    }
    if (!link->intact && !p->has_crc) {
        /* Queued while the wire was intact (before a reconnection). */
        p->crc = tsr_crc32c(0, p->data, p->len);
        p->has_crc = true;
    }
    emit(link, TSR_ICI_FRAME_DATA, p->vc ? TSR_ICI_FRAME_VC1 : 0, seq,
         payload, p->len, p->crc, first, now);
    data_left(link, first, now);
}

/* Resend the oldest frame the peer was found to miss (MARK_QUEUED). */
static void resend_queued(TsrLink *link, uint64_t now)
{
    uint32_t seq = seq_lt(link->rxt_next, link->snd_una) ? link->snd_una :
                   link->rxt_next;

    for (; seq_lt(seq, link->snd_nxt); seq++) {
        TsrLinkBuf *p = *ring_slot(link, seq);

        if (p->mark & MARK_QUEUED) {
            p->mark &= ~MARK_QUEUED;
            link->rxt_count--;
            link->rxt_next = seq + 1;
            send_data(link, seq, now);
            return;
        }
    }
    /* The rest were acknowledged meanwhile. */
    link->rxt_count = 0;
}

/*
 * Whether a bare ACK owed waits for more frames: while the user holds
 * them (tsr_link_hold_acks()), or up to cfg.ack_delay_ns from @now, the
 * first time it is asked.
 */
static bool ack_waits(TsrLink *link, uint64_t now)
{
    if (link->rcv_next - link->acked >= link->cfg.ack_every) {
        return false;
    }
    if (link->acks_held) {
        return true;
    }
    if (!link->cfg.ack_delay_ns) {
        return false;
    }
    if (!link->ack_deadline) {
        link->ack_deadline = now + link->cfg.ack_delay_ns;
    }
    return now < link->ack_deadline;
}

/*
 * Send what can be sent: a NAK, or an ACK that says which frames are held
 * behind a gap (DATA frames carry no SACK); frames the peer misses; ring
 * frames; new frames; an ACK.
 */
static void pump(TsrLink *link, uint64_t now)
{
    while (link->state == TSR_ICI_STATE_UP && wire_has_room(link)) {
        bool gap = link->rcv_high != link->rcv_next;

        if (link->nak_due || (link->gap_due && gap)) {
            link->nak_due = link->gap_due = false;
            emit(link, TSR_ICI_FRAME_NAK, 0, sack_bits(link), NULL, 0, 0,
                 false, now);
        } else if (link->ack_due && gap) {
            emit(link, TSR_ICI_FRAME_ACK, 0, sack_bits(link), NULL, 0, 0,
                 false, now);
        } else if (link->rxt_count) {
            resend_queued(link, now);
        } else if (link->snd_nxt != link->snd_end) {
            uint32_t seq = link->snd_nxt++;

            /* Going back: what the peer holds is not sent again. */
            if (!seq_lt(seq, link->snd_max) ||
                !((*ring_slot(link, seq))->mark & MARK_SACKED)) {
                send_data(link, seq, now);
            }
        } else if (!admit_one(link)) {
            if (link->ack_due && !ack_waits(link, now)) {
                emit(link, TSR_ICI_FRAME_ACK, 0, 0, NULL, 0, 0, false, now);
            }
            break;
        }
    }
    /*
     * Credit comes back on the peer's frames; the one that carried it
     * may be lost, and a stalled sender has nothing in flight whose
     * timer would notice.  So a stall arms a timer of its own.
     */
    if (credit_stalled(link) && !link->probe_deadline) {
        link->probe_deadline = now + link->cfg.retransmit_ns;
        /* The first probe is not judged: nothing was asked before it. */
        link->heard = true;
    }
    wire_flush(link, now);
}

/*
 * Frames [@from, @to) of the replay ring are done with: what the wire kept
 * of theirs is released.
 */
static void unlend(TsrLink *link, uint32_t from, uint32_t to)
{
    uint64_t end = 0;
    bool kept = false;

    for (; seq_lt(from, to); from++) {
        TsrLinkBuf *p = *ring_slot(link, from);

        if (p->lent) {
            p->lent = false;
            end = p->pos + HDR_SIZE + p->len + CRC_SIZE;
            kept = true;
        }
    }
    if (kept) {
        /* Lent frames lie in the wire in the order of their numbers. */
        link->ops->wire_release(link->opaque, end);
    }
}

/* The peer has everything before @ack; false if it cannot. */
static bool take_ack(TsrLink *link, uint32_t ack, uint64_t now)
{
    uint32_t seq;

    if (!seq_le(ack, link->snd_max)) {
        link->cnt.protocol_errors++;
        return false;
    }
    if (!seq_lt(link->snd_una, ack)) {
        return true;
    }
    if (link->rtt_timing && seq_lt(link->rtt_seq, ack)) {
        rtt_sample(link, now - link->rtt_start);
    }
    for (seq = link->snd_una; seq_lt(seq, ack); seq++) {
        rtt_max_sample(link, *ring_slot(link, seq), now);
    }
    unlend(link, link->snd_una, ack);
    link->snd_una = ack;
    /*
     * The peer took something new: whatever timed out got through, so
     * the backoff ends, sample or not (RFC 6298, 5.7 allows it).
     */
    link->retries = 0;
    if (seq_lt(link->snd_nxt, ack)) {
        link->snd_nxt = ack;
    }
    link->progress_at = now;
    link->rto_deadline = link->snd_una == link->snd_nxt ? 0 :
                         timer_at(link, now);
    arm_tail_probe(link, now);
    return true;
}

/* Whether every frame @sack names (bit i: @ack + 1 + i) was sent. */
static bool sack_sent(const TsrLink *link, uint32_t ack, uint32_t sack)
{
    return !sack || seq_lt(ack + 32 - __builtin_clz(sack), link->snd_max);
}

/*
 * The peer holds the frames @sack names (bit i: @ack + 1 + i; each sent,
 * sack_sent()): they are not sent again.  Returns the highest, or @ack if
 * none.
 */
static uint32_t take_sack(TsrLink *link, uint32_t ack, uint32_t sack,
                          uint64_t now)
{
    uint32_t high = ack, seq;
    unsigned int i;

    for (i = 0; i < 32; i++) {
        if (!(sack >> i & 1)) {
            continue;
        }
        seq = ack + 1 + i;
        high = seq;
        if (seq_lt(seq, link->snd_una)) {
            continue;
        }
        (*ring_slot(link, seq))->mark |= MARK_SACKED;
        rtt_max_sample(link, *ring_slot(link, seq), now);
        if (link->rtt_timing && link->rtt_seq == seq) {
            rtt_sample(link, now - link->rtt_start);
        }
    }
    return high;
}

/*
 * The peer misses the frames of [@from, @to) that it does not hold: resend
 * each once (the wire keeps order, so they were lost, not overtaken).  A
 * resend that is lost too is the retransmit timer's.
 */
static void resend_missing(TsrLink *link, uint32_t from, uint32_t to,
                           uint64_t now)
{
    uint32_t seq = seq_lt(from, link->snd_una) ? link->snd_una : from;
    bool queued = false;

    for (; seq_lt(seq, to) && seq_lt(seq, link->snd_nxt); seq++) {
        TsrLinkBuf *p = *ring_slot(link, seq);

        if (p->mark & (MARK_SACKED | MARK_RESENT | MARK_QUEUED)) {
            continue;
        }
        p->mark |= MARK_QUEUED;
        if (!link->rxt_count || seq_lt(seq, link->rxt_next)) {
            link->rxt_next = seq;
        }
        link->rxt_count++;
        queued = true;
    }
    if (queued) {
        /* Give the resends a whole interval. */
        link->rto_deadline = timer_at(link, now);
    }
}

static void take_credit(TsrLink *link, const struct tsr_ici_frame_hdr *h)
{
    unsigned int vc;

    for (vc = 0; vc < TSR_ICI_VCS; vc++) {
        if (seq_lt(link->peer_credit[vc], h->credit[vc])) {
            link->peer_credit[vc] = h->credit[vc];
            link->probe_deadline = 0;
        }
    }
}

/*
 * Resend everything unacknowledged that the peer is not known to hold,
 * oldest first (go-back-N, after a retraining, from what the peer's TRAIN
 * says it expects; a timeout resends less, resend_oldest()).  With nothing
 * unacknowledged (a timeout raced with the last acknowledgement) there is
 * nothing to time: a timer armed then would count timeouts that no
 * acknowledgement can end, and take a healthy link down.
 */
static void go_back(TsrLink *link, uint64_t now)
{
    uint32_t seq;

    for (seq = link->snd_una; seq_lt(seq, link->snd_nxt); seq++) {
        (*ring_slot(link, seq))->mark &= ~MARK_QUEUED;
    }
    link->rxt_count = 0;
    link->snd_nxt = link->snd_una;
    link->rto_deadline = link->snd_una == link->snd_end ? 0 :
                         timer_at(link, now);
}

/*
 * The retransmit timer fired: resend the oldest unacknowledged frame
 * alone.  A timeout cannot tell a lost frame (the last of a burst, a
 * resend, lost answers) from a peer that did not run for an interval, and
 * on a busy host it is mostly the latter: going back resent the whole
 * window each time, where the peer's answer to this one frame says what
 * it misses (its SACK, take_frame()).  Resends of the others had an
 * interval to arrive: the answer may ask for them again.
 */
static void resend_oldest(TsrLink *link, uint64_t now)
{
    TsrLinkBuf *p;
    uint32_t seq;

    if (link->snd_una == link->snd_nxt) {
        /* Raced with the last acknowledgement (see go_back()). */
        link->rto_deadline = 0;
        return;
    }
    for (seq = link->snd_una + 1; seq_lt(seq, link->snd_nxt); seq++) {
        (*ring_slot(link, seq))->mark &= ~MARK_RESENT;
    }
    p = *ring_slot(link, link->snd_una);
    if (!(p->mark & MARK_QUEUED)) {
        p->mark |= MARK_QUEUED;
        link->rxt_count++;
    }
    link->rxt_next = link->snd_una;
    link->rto_deadline = timer_at(link, now);
}

static void reset_streams(TsrLink *link);

/*
 * Down until retrained, and then afresh: what was in flight or queued
 * belonged to writes that have failed for it already (a link goes down
 * well before anything waiting on it gives up), and must not land once
 * the link is back, perhaps for a program that came after them.  Only a
 * connection lost and back before that (DISCONNECTED) resumes.
 */
static void go_down(TsrLink *link)
{
    link->cnt.link_downs++;
    link->train_deadline = 0;
    link->peer_seen = false;
    reset_streams(link);
    link->trained = false;
    set_state(link, TSR_ICI_STATE_DOWN);
}

/* ---------------------------------------------------------- receiving */

/* Offer held payloads of @vc to the user, oldest first. */
static void deliver_held(TsrLink *link, unsigned int vc)
{
    Fifo *q = &link->held[vc];

    while (q->count) {
        TsrLinkBuf *p = fifo_front(q);

        if (!link->ops->deliver(link->opaque, vc, p->data, p->len)) {
            return;
        }
        fifo_pop(q);
        link->consumed[vc]++;
        link->ack_due = true;   /* with fresh credit */
    }
}

static TsrLinkBuf **reorder_slot(TsrLink *link, uint32_t seq)
{
    return &link->reorder.slot[seq & (link->cfg.window - 1)];
}

/*
 * The payload of frame rcv_next, @len bytes on @vc, at @payload: offer it
 * to the user, or hold it.  @kept, if not NULL, is the reorder slot that
 * holds it: its buffer is traded into the hold rather than copied.
 */
static void take_in_order(TsrLink *link, unsigned int vc,
                          const uint8_t *payload, uint16_t len,
                          TsrLinkBuf **kept)
{
    Fifo *q = &link->held[vc];
    TsrLinkBuf **slot, *p;

    link->rcv_next++;
    /* Nothing held before it: offer it where it lies. */
    if (!q->count && link->ops->deliver(link->opaque, vc, payload, len)) {
        link->consumed[vc]++;
        if (kept) {
            (*kept)->len = 0;
        }
        return;
    }
    slot = fifo_push_slot(q);
    p = *slot;
    if (kept) {
        *slot = *kept;
        *kept = p;
        p->len = 0;
    } else {
        p->len = len;
        p->vc = vc;
        memcpy(p->data, payload, len);
    }
    if (q->count > 1) {
        deliver_held(link, vc);
    }
}

static void take_data(TsrLink *link, const struct tsr_ici_frame_hdr *h,
                      const uint8_t *payload)
{
    unsigned int vc = h->flags & TSR_ICI_FRAME_VC1 ? 1 : 0;
    uint32_t ahead = h->seq - link->rcv_next;
    TsrLinkBuf **slot = reorder_slot(link, h->seq), *p;

    link->ack_due = true;
    if (ahead >= link->cfg.window) {
        link->cnt.seq_errors++;
        if (!seq_lt(h->seq, link->rcv_next)) {
            /* Beyond the window: ask for what the peer thinks it sent. */
            link->nak_due = true;
        }
        /* Or a duplicate, acknowledged again: its ACK was lost. */
        return;
    }
    if (ahead) {
        /* Behind a gap: kept until the gap is filled. */
        link->cnt.seq_errors++;
        if ((*slot)->len) {
            return;                 /* a duplicate of one kept */
        }
    }
    if (!h->len || link->held[vc].count + link->reordered[vc] >=
                   link->cfg.rx_slots) {
        /* Empty, or more than the credit granted: no correct peer. */
        link->cnt.protocol_errors++;
        return;
    }
    if (ahead) {
        if (seq_lt(link->rcv_high, h->seq)) {
            link->gap_due = true;   /* the frames before it were lost */
        }
        if (!seq_lt(h->seq, link->rcv_high)) {
            link->rcv_high = h->seq + 1;
        }
        p = *slot;
        p->len = h->len;
        p->vc = vc;
        memcpy(p->data, payload, h->len);
        link->reordered[vc]++;
        return;
    }
    take_in_order(link, vc, payload, h->len, NULL);
    /* Then what waited behind it. */
    while ((p = *(slot = reorder_slot(link, link->rcv_next)))->len) {
        link->reordered[p->vc]--;
        take_in_order(link, p->vc, p->data, p->len, slot);
    }
    if (seq_lt(link->rcv_high, link->rcv_next)) {
        link->rcv_high = link->rcv_next;
    }
}

/* Drop what frames of the peer's were kept behind a gap. */
static void reorder_clear(TsrLink *link)
{
    unsigned int i;

    for (i = 0; i < link->reorder.count; i++) {
        link->reorder.slot[i]->len = 0;
    }
    link->reordered[0] = link->reordered[1] = 0;
    link->rcv_high = link->rcv_next;
}

static void reset_streams(TsrLink *link)
{
    unsigned int vc;

    link->epoch++;
    unlend(link, link->snd_una, link->snd_end);
    link->snd_una = link->snd_nxt = link->snd_end = link->snd_max =
        link->cfg.isn;
    link->rto_deadline = link->tail_deadline = 0;
    link->tail_asked = false;
    link->retries = 0;
    link->rxt_count = 0;
    link->rtt_timing = false;
    for (vc = 0; vc < TSR_ICI_VCS; vc++) {
        link->sent_new[vc] = 0;
        link->peer_credit[vc] = 0;
        link->consumed[vc] = 0;
        link->held[vc].head = link->held[vc].count = 0;
        /* What was queued was for the peer's old incarnation. */
        link->txq[vc].head = link->txq[vc].count = 0;
        link->stalled[vc] = false;
    }
    reorder_clear(link);
    link->nak_due = link->gap_due = false;
}

static bool id_equal(const TsrLinkId *a, const TsrLinkId *b)
{
    return a->slice_id == b->slice_id && a->port == b->port &&
           !memcmp(a->coords, b->coords, sizeof(a->coords));
}

static void take_train(TsrLink *link, const struct tsr_ici_frame_hdr *h,
                       const uint8_t *payload, uint64_t now)
{
    struct tsr_ici_train t;
    bool fresh;

    if (h->len != sizeof(t)) {
        link->cnt.protocol_errors++;
        return;
    }
    memcpy(&t, payload, sizeof(t));
    link->peer.slice_id = t.slice_id;
    link->peer.port = t.port;
    memcpy(link->peer.coords, t.coords, sizeof(t.coords));
    link->peer_known = true;

    if (link->state == TSR_ICI_STATE_DISCONNECTED) {
        return;
    }
    if (link->state == TSR_ICI_STATE_DOWN) {
        if (link->held_down || t.version != TSR_ICI_VERSION ||
            t.slice_id != link->cfg.self.slice_id ||
            !id_equal(&link->peer, &link->cfg.peer)) {
            return;
        }
        /*
         * Its peer retrains: a link that gave up on its peer is retrained
         * from either end, and this end follows, afresh (its streams were
         * reset when it went down).  One taken down here stays down.
         */
        link->peer_seen = false;
        set_state(link, TSR_ICI_STATE_TRAINING);
    }
    if (t.version != TSR_ICI_VERSION ||
        t.slice_id != link->cfg.self.slice_id) {
        link->train_deadline = 0;
        set_state(link, TSR_ICI_STATE_FOREIGN);
        return;
    }
    if (!id_equal(&link->peer, &link->cfg.peer)) {
        link->train_deadline = 0;
        set_state(link, TSR_ICI_STATE_MISWIRED);
        return;
    }
    if (link->state == TSR_ICI_STATE_UP &&
        !(t.flags & TSR_ICI_TRAIN_PEER_SEEN)) {
        /* The peer trains again: so do we. */
        link->peer_seen = false;
        set_state(link, TSR_ICI_STATE_TRAINING);
    }
    if (link->state != TSR_ICI_STATE_TRAINING) {
        /* UP already (a late copy of its TRAIN), or refused. */
        return;
    }

    fresh = !link->trained || (t.flags & TSR_ICI_TRAIN_FRESH);
    if (fresh) {
        /* A new peer, or one that lost its state: start both streams. */
        if (link->trained) {
            reset_streams(link);
            link->trained = false;
        }
        link->rcv_next = link->rcv_high = t.snd_una;
        link->peer_credit[0] = h->credit[0];
        link->peer_credit[1] = h->credit[1];
    } else {
        /* Resume: resend whatever the peer has not got. */
        take_ack(link, t.rcv_next, now);
        take_credit(link, h);
        go_back(link, now);
    }
    link->peer_seen = true;
    if (!(t.flags & TSR_ICI_TRAIN_PEER_SEEN)) {
        send_train(link, now);
        return;
    }
    link->trained = true;
    link->train_deadline = 0;
    link->retries = 0;
    link->progress_at = now;
    link->heard_at = now;
    link->keepalive_deadline = link->cfg.keepalive_ns ?
                               now + link->cfg.keepalive_ns : 0;
    link->rto_deadline = link->snd_una == link->snd_end ? 0 :
                         timer_at(link, now);
    set_state(link, TSR_ICI_STATE_UP);
    /* Tell the peer, which may still wait for our PEER_SEEN. */
    send_train(link, now);
    link->train_deadline = 0;
}

/*
 * The peer's tail-loss probe: it has sent everything before @next.  The
 * wire keeps order, so what is missing below it was lost: a NAK asks for
 * it (@ack, and the gaps below the highest held), else an ACK answers.
 */
static void take_tail(TsrLink *link, uint32_t next)
{
    if (seq_lt(link->rcv_next, next) &&
        next - link->rcv_next > link->cfg.window) {
        link->cnt.protocol_errors++;
    } else if (seq_lt(link->rcv_next, next)) {
        link->nak_due = true;
    } else {
        link->ack_due = true;
    }
}

static void take_frame(TsrLink *link, const struct tsr_ici_frame_hdr *h,
                       const uint8_t *payload, uint64_t now)
{
    uint32_t high;
    bool acked;

    if (h->reserved) {
        link->cnt.protocol_errors++;
        return;
    }
    if (h->type == TSR_ICI_FRAME_TRAIN) {
        take_train(link, h, payload, now);
        return;
    }
    if (h->type < TSR_ICI_FRAME_DATA || h->type > TSR_ICI_FRAME_TAIL ||
        (h->type != TSR_ICI_FRAME_DATA && h->len)) {
        link->cnt.protocol_errors++;
        return;
    }
    if (link->state != TSR_ICI_STATE_UP) {
        return;
    }
    link->heard = true;
    link->heard_at = now;
    if ((h->type == TSR_ICI_FRAME_ACK || h->type == TSR_ICI_FRAME_NAK) &&
        !sack_sent(link, h->ack, h->seq)) {
        /*
         * It claims to hold frames never sent: none of it is taken, or
         * the frames below those it names would be resent for nothing
         * and the rest never again.
         */
        link->cnt.protocol_errors++;
        return;
    }
    acked = take_ack(link, h->ack, now);
    take_credit(link, h);
    if (h->type == TSR_ICI_FRAME_DATA) {
        take_data(link, h, payload);
        return;
    }
    if (h->type == TSR_ICI_FRAME_TAIL) {
        take_tail(link, h->seq);
        return;
    }
    if (link->tail_asked) {
        /*
         * The peer answers at once, on a wire that keeps order: the first
         * ACK or NAK after a probe is its answer, and a NAK a loss found.
         */
        link->tail_asked = false;
        link->cnt.tail_losses += h->type == TSR_ICI_FRAME_NAK;
    }
    high = acked ? take_sack(link, h->ack, h->seq, now) : h->ack;
    if (h->type == TSR_ICI_FRAME_NAK) {
        /* It misses @ack, and what it does not hold below its highest. */
        link->cnt.naks++;
        if (acked) {
            resend_missing(link, h->ack, high == h->ack ? high + 1 : high,
                           now);
        }
        return;
    }
    if (high != h->ack) {
        /*
         * An ACK with a SACK: what it does not hold below its highest was
         * lost too (its NAK was, or it answers a timeout's resend).
         */
        resend_missing(link, h->ack, high, now);
    }
    if (h->flags & TSR_ICI_FRAME_PROBE) {
        /* A stalled peer asks for our credit again. */
        link->ack_due = true;
    }
}

/* Copy the header at @p (any alignment) into @h; whether it is valid. */
static bool read_header(const uint8_t *p, struct tsr_ici_frame_hdr *h)
{
    memcpy(h, p, HDR_SIZE);
    return h->magic == TSR_ICI_FRAME_MAGIC &&
           h->hdr_crc == tsr_crc32c(0, h, offsetof(struct tsr_ici_frame_hdr,
                                                   hdr_crc)) &&
           h->len <= TSR_ICI_MAX_PAYLOAD;
}

/*
 * Take every whole frame in the @len bytes at @buf; return how many bytes
 * they took (with any skipped looking for a header).  What is left is less
 * than a header, or a valid header and part of its frame.
 */
static size_t parse(TsrLink *link, const uint8_t *buf, size_t len,
                    uint64_t now)
{
    size_t off = 0;

    while (len - off >= HDR_SIZE) {
        const uint8_t *p = buf + off;
        struct tsr_ici_frame_hdr h;
        uint32_t crc;
        size_t total;

        if (!read_header(p, &h)) {
            /* Lost framing: look for the next header byte by byte. */
            if (!link->resyncing) {
                link->resyncing = true;
                link->cnt.crc_errors++;
                if (link->state == TSR_ICI_STATE_UP) {
                    link->nak_due = true;
                }
            }
            off++;
            continue;
        }
        total = HDR_SIZE + (h.len ? h.len + CRC_SIZE : 0);
        if (len - off < total) {
            break;
        }
        link->resyncing = false;
        off += total;
        link->cnt.frames_rx++;
        link->cnt.bytes_rx += total;
        if (h.len) {
            memcpy(&crc, p + HDR_SIZE + h.len, CRC_SIZE);
            if (link->intact ? crc != 0 :
                crc != tsr_crc32c(0, p + HDR_SIZE, h.len)) {
                link->cnt.crc_errors++;
                if (link->state == TSR_ICI_STATE_UP) {
                    link->nak_due = true;
                }
                continue;
            }
        }
        take_frame(link, &h, p + HDR_SIZE, now);
    }
    return off;
}

/* Bytes that complete the frame begun in rbuf (see parse()). */
static size_t rbuf_need(const TsrLink *link)
{
    struct tsr_ici_frame_hdr h;

    if (link->resyncing) {
        /* Any byte may start the next header: look at many. */
        return sizeof(link->rbuf) - link->rlen;
    }
    if (link->rlen < HDR_SIZE) {
        return HDR_SIZE - link->rlen;
    }
    if (!read_header(link->rbuf, &h)) {
        return sizeof(link->rbuf) - link->rlen;
    }
    return HDR_SIZE + (h.len ? h.len + CRC_SIZE : 0) - link->rlen;
}

/* ----------------------------------------------------------------- API */

TsrLink *tsr_link_new(const TsrLinkConfig *cfg, const TsrLinkOps *ops,
                      void *opaque)
{
    TsrLink *link;
    unsigned int vc;
    bool ok;

    if (!cfg->window || cfg->window > 1024 ||
        (cfg->window & (cfg->window - 1)) || !cfg->rx_slots ||
        !cfg->tx_slots || !cfg->retransmit_ns || !ops->wire_write ||
        !ops->deliver) {
        return NULL;
    }
    link = calloc(1, sizeof(*link));
    if (!link) {
        return NULL;
    }
    link->cfg = *cfg;
    link->ops = ops;
    link->opaque = opaque;
    link->give_up_ns = give_up_ns(cfg);
    ok = slots_init(&link->ring, cfg->window);
    ok &= slots_init(&link->reorder, cfg->window);
    for (vc = 0; vc < TSR_ICI_VCS; vc++) {
        ok &= fifo_init(&link->txq[vc], cfg->tx_slots);
        ok &= fifo_init(&link->held[vc], cfg->rx_slots);
    }
    if (!ok) {
        tsr_link_free(link);
        return NULL;
    }
    reset_streams(link);
    link->state = TSR_ICI_STATE_DISCONNECTED;
    return link;
}

void tsr_link_free(TsrLink *link)
{
    unsigned int vc;

    if (!link) {
        return;
    }
    for (vc = 0; vc < TSR_ICI_VCS; vc++) {
        slots_free(&link->txq[vc].s);
        slots_free(&link->held[vc].s);
    }
    slots_free(&link->ring);
    slots_free(&link->reorder);
    free(link);
}

static void start_training(TsrLink *link, uint64_t now)
{
    link->held_down = false;
    link->peer_seen = false;
    link->rlen = 0;
    link->resyncing = false;
    link->rto_deadline = link->tail_deadline = 0;
    link->tail_asked = false;
    link->rtt_timing = false;
    set_state(link, TSR_ICI_STATE_TRAINING);
    send_train(link, now);
}

void tsr_link_connected(TsrLink *link, uint64_t now)
{
    link->wlen = 0;
    link->hold_until = 0;
    start_training(link, now);
}

void tsr_link_disconnected(TsrLink *link)
{
    /* Told before the state changes, for its user's state_changed(). */
    link->resuming = link->trained;
    link->peer_seen = false;
    link->rlen = 0;
    link->wlen = 0;
    link->rto_deadline = link->tail_deadline = 0;
    link->tail_asked = false;
    link->train_deadline = 0;
    set_state(link, TSR_ICI_STATE_DISCONNECTED);
}

void tsr_link_retrain(TsrLink *link, uint64_t now)
{
    if (link->state != TSR_ICI_STATE_DISCONNECTED) {
        start_training(link, now);
    }
}

void tsr_link_down(TsrLink *link)
{
    if (link->state != TSR_ICI_STATE_DISCONNECTED &&
        link->state != TSR_ICI_STATE_DOWN) {
        go_down(link);
    }
    /* Taken down on purpose: it stays so until retrained here. */
    link->held_down = true;
}

uint32_t tsr_link_state(const TsrLink *link)
{
    return link->state;
}

bool tsr_link_resuming(const TsrLink *link)
{
    return link->resuming;
}

/*
 * When a link whose connection was lost gives up on its peer: as the
 * keepalive does, once the peer has been silent for as long as a silent
 * peer is given (its last frame heard before the connection went, or the
 * lateness of a starved end added, see overslept()).
 */
static uint64_t resume_deadline(const TsrLink *link)
{
    return link->resuming ? link->heard_at + link->give_up_ns : UINT64_MAX;
}

uint64_t tsr_link_epoch(const TsrLink *link)
{
    return link->epoch;
}

bool tsr_link_peer(const TsrLink *link, TsrLinkId *peer)
{
    if (link->peer_known) {
        *peer = link->peer;
    }
    return link->peer_known;
}

void tsr_link_receive(TsrLink *link, const void *buf, size_t len,
                      uint64_t now)
{
    const uint8_t *p = buf;
    size_t n;

    if (link->state == TSR_ICI_STATE_DISCONNECTED) {
        return;
    }
    while (len) {
        if (!link->rlen) {
            /* Whole frames where they lie; keep the rest. */
            n = parse(link, p, len, now);
            p += n;
            len -= n;
            memcpy(link->rbuf, p, len);
            link->rlen = len;
            break;
        }
        /* First the frame begun by an earlier call. */
        n = rbuf_need(link);
        n = n < len ? n : len;
        memcpy(link->rbuf + link->rlen, p, n);
        link->rlen += n;
        p += n;
        len -= n;
        n = parse(link, link->rbuf, link->rlen, now);
        memmove(link->rbuf, link->rbuf + n, link->rlen - n);
        link->rlen -= n;
    }
    pump(link, now);
}

int tsr_link_sendv(TsrLink *link, unsigned int vc, const struct iovec *iov,
                   unsigned int iovcnt, uint64_t now)
{
    size_t len = 0;
    unsigned int i;
    TsrLinkBuf *p;
    uint8_t *at;

    for (i = 0; i < iovcnt; i++) {
        if (iov[i].iov_len > TSR_ICI_MAX_PAYLOAD - len) {
            return -1;
        }
        len += iov[i].iov_len;
    }
    if (vc >= TSR_ICI_VCS || !len || !tsr_link_can_send(link, vc)) {
        return -1;
    }
    at = tsr_link_lend(link, vc, len, now);
    if (at) {
        for (i = 0; i < iovcnt; at += iov[i++].iov_len) {
            if (iov[i].iov_len) {
                memcpy(at, iov[i].iov_base, iov[i].iov_len);
            }
        }
        tsr_link_commit(link, now);
        return 0;
    }
    p = fifo_push(&link->txq[vc]);
    p->len = len;
    p->vc = vc;
    for (len = 0, i = 0; i < iovcnt; len += iov[i++].iov_len) {
        if (iov[i].iov_len) {
            memcpy(p->data + len, iov[i].iov_base, iov[i].iov_len);
        }
    }
    p->has_crc = !link->intact;
    p->crc = p->has_crc ? tsr_crc32c(0, p->data, p->len) : 0;
    pump(link, now);
    return 0;
}

/*
 * Whether new frame @seq on @vc could go into the wire now, untouched:
 * nothing that pump() would send first waits (an acknowledgement owed
 * rides on it, as on any frame), and no fault is due to hit it.
 */
static bool can_lend(TsrLink *link, unsigned int vc, uint32_t seq,
                     uint64_t now)
{
    const TsrLinkFaults *f = &link->faults;
    bool gap = link->rcv_high != link->rcv_next;

    return link->ops->wire_reserve && link->intact &&
           link->state == TSR_ICI_STATE_UP && !link->txq[vc].count &&
           !link->wlen && now >= link->hold_until && !link->rxt_count &&
           link->snd_nxt == link->snd_end && !link->nak_due &&
           !(gap && (link->gap_due || link->ack_due)) &&
           link->snd_end - link->snd_una < link->cfg.window &&
           seq_lt(link->sent_new[vc], link->peer_credit[vc]) &&
           /* A frame a fault hits goes the usual way, as on any wire. */
           !f->drop_next && !f->corrupt_next && !f->delay_ns &&
           !rate_hit(link, f->drop_ppm, seq, 1) &&
           !rate_hit(link, f->corrupt_ppm, seq, 2);
}

uint8_t *tsr_link_lend(TsrLink *link, unsigned int vc, size_t len,
                       uint64_t now)
{
    link->lend_at = NULL;
    if (vc >= TSR_ICI_VCS || !len || len > TSR_ICI_MAX_PAYLOAD) {
        return NULL;
    }
    if (!can_lend(link, vc, link->snd_end, now)) {
        return NULL;
    }
    link->lend_at = link->ops->wire_reserve(link->opaque,
                                            HDR_SIZE + len + CRC_SIZE);
    link->lend_len = len;
    link->lend_vc = vc;
    return link->lend_at ? link->lend_at + HDR_SIZE : NULL;
}

void tsr_link_commit(TsrLink *link, uint64_t now)
{
    uint32_t seq = link->snd_end, crc = 0;
    TsrLinkBuf *p = *ring_slot(link, seq);
    struct tsr_ici_frame_hdr h;
    size_t total;

    if (!link->lend_at) {
        return;
    }
    /* The ring's slot is free (acknowledged): its buffer stays empty. */
    link->snd_end++;
    link->snd_nxt = link->snd_end;
    link->sent_new[link->lend_vc]++;
    link->next_vc = link->lend_vc + 1;
    p->len = link->lend_len;
    p->vc = link->lend_vc;
    p->mark = 0;
    p->has_crc = false;
    data_leaves(link, seq, p, now);
    total = frame_header(link, &h, TSR_ICI_FRAME_DATA,
                         p->vc ? TSR_ICI_FRAME_VC1 : 0, seq, p->len);
    memcpy(link->lend_at, &h, HDR_SIZE);
    memcpy(link->lend_at + HDR_SIZE + p->len, &crc, CRC_SIZE);
    p->pos = link->ops->wire_commit(link->opaque, total);
    p->lent = true;
    link->lend_at = NULL;
    data_left(link, true, now);
}

/* Whether @vc could lend but for the window and credit. */
static bool lendable(const TsrLink *link, unsigned int vc)
{
    return link->ops->wire_reserve && link->intact && vc < TSR_ICI_VCS &&
           link->state == TSR_ICI_STATE_UP && !link->txq[vc].count;
}

unsigned int tsr_link_lend_room(const TsrLink *link, unsigned int vc)
{
    uint32_t window = link->cfg.window - (link->snd_end - link->snd_una);
    uint32_t credit;

    if (!lendable(link, vc) ||
        !seq_lt(link->sent_new[vc], link->peer_credit[vc])) {
        return 0;
    }
    credit = link->peer_credit[vc] - link->sent_new[vc];
    return window < credit ? window : credit;
}

bool tsr_link_lend_waits(const TsrLink *link, unsigned int vc)
{
    return lendable(link, vc) && !tsr_link_lend_room(link, vc);
}

void tsr_link_reclaim(TsrLink *link)
{
    uint32_t seq;

    for (seq = link->snd_una; seq_lt(seq, link->snd_end); seq++) {
        TsrLinkBuf *p = *ring_slot(link, seq);
        const uint8_t *kept;

        if (!p->lent) {
            continue;
        }
        kept = link->ops->wire_kept(link->opaque, p->pos + HDR_SIZE, p->len);
        if (kept) {
            memcpy(p->data, kept, p->len);
        }
    }
    unlend(link, link->snd_una, link->snd_end);
}

TsrLinkBuf *tsr_link_buf_new(void)
{
    return calloc(1, sizeof(TsrLinkBuf));
}

void tsr_link_buf_free(TsrLinkBuf *b)
{
    free(b);
}

uint8_t *tsr_link_buf_data(TsrLinkBuf *b)
{
    return b->data;
}

int tsr_link_buf_seal(TsrLinkBuf *b, size_t head, size_t len, bool crc)
{
    if (!len || len > TSR_ICI_MAX_PAYLOAD || head > len) {
        return -1;
    }
    b->len = len;
    b->head = head;
    b->has_crc = crc;
    b->crc = crc ? tsr_crc32c(0, b->data + head, len - head) : 0;
    return 0;
}

int tsr_link_send_buf(TsrLink *link, unsigned int vc, TsrLinkBuf **b,
                      const void *head, uint64_t now)
{
    TsrLinkBuf *p = *b, **slot;

    if (!p->len || !tsr_link_can_send(link, vc)) {
        return -1;
    }
    if (p->head) {
        memcpy(p->data, head, p->head);
    }
    if (p->head && p->has_crc) {
        p->crc = tsr_crc32c_combine(tsr_crc32c(0, p->data, p->head), p->crc,
                                    p->len - p->head);
    }
    p->head = 0;
    p->vc = vc;
    /* The queue's slot is free: trade buffers. */
    slot = fifo_push_slot(&link->txq[vc]);
    *b = *slot;
    (*b)->len = 0;
    *slot = p;
    pump(link, now);
    return 0;
}

int tsr_link_send(TsrLink *link, unsigned int vc, const void *payload,
                  size_t len, uint64_t now)
{
    struct iovec iov = { .iov_base = (void *)payload, .iov_len = len };

    return tsr_link_sendv(link, vc, &iov, 1, now);
}

bool tsr_link_can_send(const TsrLink *link, unsigned int vc)
{
    return link->state == TSR_ICI_STATE_UP && vc < TSR_ICI_VCS &&
           link->txq[vc].count < link->txq[vc].cap;
}

bool tsr_link_half_empty(const TsrLink *link, unsigned int vc)
{
    return vc < TSR_ICI_VCS &&
           2 * link->txq[vc].count <= link->txq[vc].cap;
}

unsigned int tsr_link_pending(const TsrLink *link)
{
    return link->snd_end - link->snd_una + link->txq[0].count +
           link->txq[1].count;
}

void tsr_link_rx_ready(TsrLink *link, uint64_t now)
{
    unsigned int vc;

    for (vc = 0; vc < TSR_ICI_VCS; vc++) {
        deliver_held(link, vc);
    }
    pump(link, now);
}

void tsr_link_hold_acks(TsrLink *link, bool hold, uint64_t now)
{
    link->acks_held = hold;
    if (!hold) {
        pump(link, now);
    }
}

void tsr_link_flush(TsrLink *link, uint64_t now)
{
    wire_flush(link, now);
    pump(link, now);
}

/*
 * Still stalled a retransmit interval later: ask for credit.  A peer that
 * only holds its frames answers with the credit it has; one that has not
 * been heard since the last probe counts a timeout, so a stalled sender
 * facing a peer that stopped (or whose wire is backed up) goes down after
 * as long as a sender of lost frames would.  Returns whether it did.
 */
static bool probe(TsrLink *link, uint64_t now)
{
    link->probe_deadline = 0;
    if (!credit_stalled(link)) {
        return false;
    }
    if (link->heard) {
        link->retries = 0;
        link->progress_at = now;
    } else if (timed_out(link, now)) {
        go_down(link);
        return true;
    }
    link->heard = false;
    if (!link->wlen) {
        emit(link, TSR_ICI_FRAME_ACK, TSR_ICI_FRAME_PROBE, 0, NULL, 0,
             0, false, now);
    }
    link->probe_deadline = timer_at(link, now);
    return false;
}

/*
 * Nothing was sent or acknowledged for a PTO while frames are in flight:
 * the last of a burst may be lost, with nothing behind it to show the gap,
 * which the retransmit timer alone would find (an interval that stays
 * above the longest round trip of the last second).  A TAIL frame names
 * the next sequence number, and the peer's answer, a NAK, asks for what it
 * misses.  Resending the newest frame instead would need no new frame,
 * but each time the peer merely did not run for a PTO (often, on a busy
 * host) it would be a replay, where this costs a header; and it would not
 * recover a loss before the newest.  Once per tail: only new data or a
 * new acknowledgement arms it again.  Not while resends wait or the wire
 * is backed up or held: the peer is not reading what came before.
 */
static void tail_probe(TsrLink *link, uint64_t now)
{
    link->tail_deadline = 0;
    if (link->snd_una == link->snd_nxt || link->rxt_count || link->wlen ||
        now < link->hold_until) {
        return;
    }
    emit(link, TSR_ICI_FRAME_TAIL, 0, link->snd_nxt, NULL, 0, 0, false, now);
    link->cnt.tail_probes++;
    link->tail_asked = true;
}

/*
 * The keepalive: a peer quiet for an interval is asked for a frame; one
 * quiet for as long as a silent peer is given is gone.  Returns whether
 * the link went down.
 */
static bool keepalive(TsrLink *link, uint64_t now)
{
    uint64_t quiet = since(link->heard_at, now);

    if (quiet >= link->give_up_ns && now >= link->hold_until) {
        link->cnt.timeouts++;
        go_down(link);
        return true;
    }
    if (quiet >= link->cfg.keepalive_ns && !link->wlen) {
        emit(link, TSR_ICI_FRAME_ACK, TSR_ICI_FRAME_PROBE, 0, NULL, 0, 0,
             false, now);
    }
    link->keepalive_deadline = now + link->cfg.keepalive_ns;
    if (quiet < link->give_up_ns &&
        link->heard_at + link->give_up_ns < link->keepalive_deadline) {
        link->keepalive_deadline = link->heard_at + link->give_up_ns;
    }
    return false;
}

/* @t moved on by @by, not past @now. */
static void move_on(uint64_t *t, uint64_t by, uint64_t now)
{
    *t = *t + by < now ? *t + by : now;
}

/*
 * A poll long after the deadline it was asked for: this end did not run
 * meanwhile (its process starved on a busy host, or stopped), and what
 * the peer sent may wait unread.  A silence this end could not hear is
 * not the peer's, so it is not counted against it: the timers and the
 * peer's last sign of life move on by the lateness (a peer is given up on
 * after as long as this end ran without hearing it), the round trip being
 * timed is not sampled, and nothing is resent before what waits has been
 * read.  Returns whether it was so; never for a deadline that was due by
 * the last such poll, so that on a host where every poll is late the
 * timers still run, on this end's time.
 */
static bool overslept(TsrLink *link, uint64_t now)
{
    uint64_t due = tsr_link_deadline(link), late;

    if (due == UINT64_MAX || now < due ||
        now - due <= link->cfg.retransmit_ns || due <= link->overslept_at) {
        return false;
    }
    late = now - due;
    move_on(&link->progress_at, late, now);
    move_on(&link->heard_at, late, now);
    if (link->rto_deadline) {
        link->rto_deadline += late;
    }
    if (link->probe_deadline) {
        link->probe_deadline += late;
    }
    if (link->tail_deadline) {
        link->tail_deadline += late;
    }
    if (link->keepalive_deadline) {
        link->keepalive_deadline += late;
    }
    link->rtt_timing = false;
    link->overslept_at = now;
    return true;
}

void tsr_link_poll(TsrLink *link, uint64_t now)
{
    if (overslept(link, now)) {
        pump(link, now);
        return;
    }
    if (now >= resume_deadline(link)) {
        link->cnt.timeouts++;
        go_down(link);
        return;
    }
    if (link->train_deadline && now >= link->train_deadline &&
        link->state == TSR_ICI_STATE_TRAINING) {
        send_train(link, now);
    }
    if (link->rto_deadline && now >= link->rto_deadline &&
        link->state == TSR_ICI_STATE_UP && now < link->hold_until) {
        /* The wire is held by an injected delay: nothing is lost. */
        link->progress_at = now;
        link->rto_deadline = timer_at(link, now);
    } else if (link->rto_deadline && now >= link->rto_deadline &&
               link->state == TSR_ICI_STATE_UP) {
        /*
         * No acknowledgement for a whole interval.  If the wire is still
         * backed up the peer is not even reading: that counts towards the
         * retry limit as a lost frame does, but resending would only add
         * to the backlog.
         */
        if (timed_out(link, now)) {
            go_down(link);
            return;
        }
        if (link->wlen) {
            link->rto_deadline = timer_at(link, now);
        } else {
            resend_oldest(link, now);
        }
    }
    if (link->tail_deadline && now >= link->tail_deadline &&
        link->state == TSR_ICI_STATE_UP) {
        tail_probe(link, now);
    }
    if (link->probe_deadline && now >= link->probe_deadline &&
        link->state == TSR_ICI_STATE_UP && probe(link, now)) {
        return;
    }
    if (link->keepalive_deadline && now >= link->keepalive_deadline &&
        link->state == TSR_ICI_STATE_UP && keepalive(link, now)) {
        return;
    }
    pump(link, now);
}

uint64_t tsr_link_deadline(const TsrLink *link)
{
    uint64_t d = UINT64_MAX;

    if (link->state == TSR_ICI_STATE_TRAINING && link->train_deadline) {
        d = link->train_deadline;
    }
    if (link->state == TSR_ICI_STATE_UP && link->rto_deadline &&
        link->rto_deadline < d) {
        d = link->rto_deadline;
    }
    if (link->state == TSR_ICI_STATE_UP && link->probe_deadline &&
        link->probe_deadline < d) {
        d = link->probe_deadline;
    }
    if (link->state == TSR_ICI_STATE_UP && link->tail_deadline &&
        link->tail_deadline < d) {
        d = link->tail_deadline;
    }
    if (link->state == TSR_ICI_STATE_UP && link->keepalive_deadline &&
        link->keepalive_deadline < d) {
        d = link->keepalive_deadline;
    }
    if (link->wlen && link->hold_until && link->hold_until < d) {
        d = link->hold_until;
    }
    if (link->state == TSR_ICI_STATE_UP && link->ack_due &&
        link->ack_deadline && link->ack_deadline < d) {
        d = link->ack_deadline;
    }
    if (resume_deadline(link) < d) {
        d = resume_deadline(link);
    }
    return d;
}

void tsr_link_get_counters(const TsrLink *link, TsrLinkCounters *c)
{
    *c = link->cnt;
}

void tsr_link_count_protocol_error(TsrLink *link)
{
    link->cnt.protocol_errors++;
}

void tsr_link_set_intact(TsrLink *link, bool intact)
{
    link->intact = intact;
}

bool tsr_link_intact(const TsrLink *link)
{
    return link->intact;
}

uint64_t tsr_link_fault_bytes(const TsrLink *link)
{
    return link->fault_bytes;
}

void tsr_link_set_faults(TsrLink *link, const TsrLinkFaults *faults,
                         unsigned int fields)
{
    TsrLinkFaults *f = &link->faults;

    if ((fields & TSR_LINK_FAULT_SEED) && faults->seed != f->seed) {
        link->rng = faults->seed;
    }
#define SET(bit, field) \
    do { if (fields & (bit)) f->field = faults->field; } while (0)
    SET(TSR_LINK_FAULT_DROP_NEXT, drop_next);
    SET(TSR_LINK_FAULT_DROP_PPM, drop_ppm);
    SET(TSR_LINK_FAULT_CORRUPT_NEXT, corrupt_next);
    SET(TSR_LINK_FAULT_CORRUPT_PPM, corrupt_ppm);
    SET(TSR_LINK_FAULT_DROP_ACKS_NEXT, drop_acks_next);
    SET(TSR_LINK_FAULT_DELAY, delay_ns);
    SET(TSR_LINK_FAULT_SEED, seed);
#undef SET
}

void tsr_link_get_faults(const TsrLink *link, TsrLinkFaults *faults)
{
    *faults = link->faults;
}

