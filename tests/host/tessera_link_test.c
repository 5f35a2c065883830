// SPDX-License-Identifier: GPL-2.0
/*
 * The ICI link layer on the host: two ends joined by an in-memory wire
 * that can also misbehave (lose, damage, duplicate, reorder, delay,
 * black-hole), on a simulated clock.  Every test sends streams of payloads with a known pattern both
 * ways and checks that what arrives is exactly what was sent.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "tessera-link.h"

#define WIRE_CAP	(256 * 1024)
#define LOG_CAP		(64 * 1024 * 1024)
#define RTO_NS		100000ull	/* 100 us */
#define CHUNKS		4096
#define KEPT_CAP	(16u << 20)
/* Released kept bytes read as this (a planted early release shows). */
#define RELEASED	0xdb

struct end {
	TsrLink *link;
	struct end *peer;
	/* Bytes written by this end, on their way to the peer. */
	uint8_t *wire;
	size_t wire_len;
	size_t write_limit;	/* per call; 0 means no limit */
	/* The peer reads in pieces of these sizes, in turn; none: whole. */
	const size_t *cuts;
	unsigned int ncuts, cut;
	bool blackhole;		/* the wire loses everything */
	bool stopped;		/* neither reads, sends nor runs its timers */
	/*
	 * With stall_max_ns: runs for run_ns, then is stopped for
	 * stall_min_ns to stall_max_ns at random, again and again (its
	 * process starved on a busy host); until stall_turn, @stalls times.
	 */
	uint64_t run_ns, stall_min_ns, stall_max_ns, stall_turn;
	unsigned int stalls;
	/*
	 * What is written at *clock reaches the peer up to jitter_ns later,
	 * at random, in order: chunk i of the wire ends at byte
	 * chunk_end[i] and is due at due[i].
	 */
	const uint64_t *clock;
	uint64_t jitter_ns;
	size_t chunk_end[CHUNKS];
	uint64_t due[CHUNKS];
	unsigned int chunks;
	/*
	 * Per million frames: new DATA frames the wire loses or damages,
	 * frames it repeats or swaps with the next; what it lost and damaged.
	 */
	uint32_t drop_ppm, damage_ppm, dup_ppm, swap_ppm;
	unsigned int dropped, damaged;
	uint32_t next_new;	/* one past the highest DATA frame seen */
	bool seen_data;
	uint64_t rng;
	/* What arrived, per virtual channel, and how many payloads. */
	uint8_t *log[TSR_ICI_VCS];
	size_t log_len[TSR_ICI_VCS];
	unsigned int delivered;
	bool refuse;
	uint32_t states[16];
	unsigned int nstates;
	/* What was sent, per virtual channel, to compare with. */
	uint8_t *sent[TSR_ICI_VCS];
	size_t sent_len[TSR_ICI_VCS];
	uint64_t pattern;
	bool small;		/* payloads of at most 1024 bytes */
	/* Set: exchange() builds payloads here (tsr_link_send_buf()). */
	TsrLinkBuf *stage;
	/*
	 * A wire that lends its memory (the lent variant), as a ring does:
	 * frames built in it are also kept here, at their position @written
	 * (mod KEPT_CAP, mirrored past its end), in [keep, keep_end).
	 */
	uint8_t *kept;
	uint64_t written, keep, keep_end;
	unsigned int lent;	/* frames built in the wire */
};

/* The next number of @e's generator, for its wire's misbehaviour. */
static uint32_t rnd(struct end *e)
{
	e->rng = e->rng * 6364136223846793005ull + 1442695040888963407ull;
	return e->rng >> 33;
}

/* What was just written to @e's wire is due up to jitter_ns from now. */
static void delay(struct end *e)
{
	uint64_t due = *e->clock + 1 + rnd(e) % e->jitter_ns;
	unsigned int last = e->chunks - 1;

	if (e->chunks && due < e->due[last])
		due = e->due[last];
	if (e->chunks == CHUNKS) {
		e->chunk_end[last] = e->wire_len;
		e->due[last] = due;
		return;
	}
	e->chunk_end[e->chunks] = e->wire_len;
	e->due[e->chunks++] = due;
}

static size_t end_write(void *opaque, const void *buf, size_t len)
{
	struct end *e = opaque;
	size_t room = WIRE_CAP - e->wire_len;

	if (e->write_limit && len > e->write_limit)
		len = e->write_limit;
	if (len > room)
		len = room;
	if (e->blackhole || !len)
		return len;
	memcpy(e->wire + e->wire_len, buf, len);
	e->wire_len += len;
	e->written += len;
	if (e->jitter_ns)
		delay(e);
	return len;
}

/*
 * The lent variant's wire: frames are built at the end of what was
 * written (only where a whole one fits: a wire that takes pieces lends
 * nothing).
 */
static uint8_t *end_reserve(void *opaque, size_t len)
{
	struct end *e = opaque;

	if (e->write_limit || len > WIRE_CAP - e->wire_len)
		return NULL;
	return e->wire + e->wire_len;
}

static uint64_t end_commit(void *opaque, size_t len)
{
	struct end *e = opaque;
	uint64_t pos = e->written;
	size_t at = pos % KEPT_CAP;

	/* Kept as a ring keeps it, the mirror making it contiguous. */
	memcpy(e->kept + at, e->wire + e->wire_len, len);
	if (at + len > KEPT_CAP)
		memcpy(e->kept, e->kept + KEPT_CAP, at + len - KEPT_CAP);
	if (e->keep == e->keep_end)
		e->keep = pos;
	e->keep_end = pos + len;
	e->lent++;
	e->written += len;
	if (e->blackhole)
		return pos;
	e->wire_len += len;
	if (e->jitter_ns)
		delay(e);
	return pos;
}

static const uint8_t *end_kept(void *opaque, uint64_t pos, size_t len)
{
	struct end *e = opaque;

	if (pos < e->keep || pos > e->keep_end || len > e->keep_end - pos)
		return NULL;
	return e->kept + pos % KEPT_CAP;
}

/* Released bytes are scribbled on, as a ring writes over them. */
static void end_release(void *opaque, uint64_t pos)
{
	struct end *e = opaque;

	if (pos > e->keep_end)
		pos = e->keep_end;
	for (; e->keep < pos; e->keep++)
		e->kept[e->keep % KEPT_CAP] = RELEASED;
}

static bool end_deliver(void *opaque, unsigned int vc, const void *payload,
			size_t len)
{
	struct end *e = opaque;

	if (e->refuse)
		return false;
	memcpy(e->log[vc] + e->log_len[vc], payload, len);
	e->log_len[vc] += len;
	e->delivered++;
	return true;
}

static void end_state(void *opaque, uint32_t state)
{
	struct end *e = opaque;

	if (e->nstates < 16)
		e->states[e->nstates++] = state;
}

static const TsrLinkOps end_ops = {
	.wire_write = end_write,
	.deliver = end_deliver,
	.state_changed = end_state,
};

static const TsrLinkOps end_lend_ops = {
	.wire_write = end_write,
	.deliver = end_deliver,
	.state_changed = end_state,
	.wire_reserve = end_reserve,
	.wire_commit = end_commit,
	.wire_kept = end_kept,
	.wire_release = end_release,
};

FIXTURE(link) {
	struct end a, b;
	uint64_t now;
	uint64_t step_ns;	/* 1 us unless a test says otherwise */
	TsrLinkConfig ca, cb;
	/* Payloads exchange() has queued and must see arrive, per end. */
	unsigned int queued[2], target[2];
	bool intact;		/* the variant's */
	bool hold_acks;		/* the variant's: carry() holds ACKs */
	const TsrLinkOps *ops;	/* the variant's */
};

/*
 * Every test runs on a wire that may damage frames (a socket: payloads
 * carry a CRC, and ACKs are delayed as a socket's port delays them), on
 * one that cannot (a shared-memory ring: no CRC), and on
 * one that cannot and lends its memory, as a ring does: payloads are
 * built in it and replayed from it, and its reader holds acknowledgements
 * over each batch it reads (tsr_link_hold_acks()), so that each fault is
 * survived and counted alike on all.
 */
FIXTURE_VARIANT(link) {
	bool intact;
	bool lend;
	bool delay_acks;
};

FIXTURE_VARIANT_ADD(link, crc) {
	.intact = false,
	.delay_acks = true,
};

FIXTURE_VARIANT_ADD(link, intact) {
	.intact = true,
};

FIXTURE_VARIANT_ADD(link, lent) {
	.intact = true,
	.lend = true,
};

static void config(TsrLinkConfig *c, uint8_t x, uint8_t port, uint8_t px,
		   uint8_t pport)
{
	*c = (TsrLinkConfig){
		.self = { .slice_id = 7, .coords = { x, 0, 0 }, .port = port },
		.peer = { .slice_id = 7, .coords = { px, 0, 0 }, .port = pport },
		.window = 64, .rx_slots = 16, .tx_slots = 32,
		.retransmit_ns = RTO_NS, .retry_limit = 8, .ack_every = 16,
	};
}

static void end_init(struct end *e, struct end *peer, const uint64_t *clock)
{
	unsigned int vc;

	memset(e, 0, sizeof(*e));
	e->peer = peer;
	e->clock = clock;
	e->wire = malloc(WIRE_CAP);
	e->kept = malloc(KEPT_CAP + WIRE_CAP);
	for (vc = 0; vc < TSR_ICI_VCS; vc++) {
		e->log[vc] = malloc(LOG_CAP);
		e->sent[vc] = malloc(LOG_CAP);
	}
}

static void end_fini(struct end *e)
{
	unsigned int vc;

	tsr_link_free(e->link);
	tsr_link_buf_free(e->stage);
	free(e->wire);
	free(e->kept);
	for (vc = 0; vc < TSR_ICI_VCS; vc++) {
		free(e->log[vc]);
		free(e->sent[vc]);
	}
}

FIXTURE_SETUP(link)
{
	end_init(&self->a, &self->b, &self->now);
	end_init(&self->b, &self->a, &self->now);
	/* Chip x=0's +x port faces chip x=1's -x port. */
	config(&self->ca, 0, TSR_ICI_PORT(0, 0), 1, TSR_ICI_PORT(0, 1));
	config(&self->cb, 1, TSR_ICI_PORT(0, 1), 0, TSR_ICI_PORT(0, 0));
	self->a.pattern = 1;
	self->b.pattern = 2;
	self->step_ns = 1000;
	self->intact = variant->intact;
	self->hold_acks = variant->lend;
	if (variant->delay_acks)
		self->ca.ack_delay_ns = self->cb.ack_delay_ns = RTO_NS / 16;
	self->ops = variant->lend ? &end_lend_ops : &end_ops;
}

FIXTURE_TEARDOWN(link)
{
	end_fini(&self->a);
	end_fini(&self->b);
}

static void start(FIXTURE_DATA(link) *self)
{
	self->a.link = tsr_link_new(&self->ca, self->ops, &self->a);
	self->b.link = tsr_link_new(&self->cb, self->ops, &self->b);
	tsr_link_set_intact(self->a.link, self->intact);
	tsr_link_set_intact(self->b.link, self->intact);
	tsr_link_connected(self->a.link, self->now);
	tsr_link_connected(self->b.link, self->now);
}

/* Frame boundaries in a wire buffer (the test knows the format). */
static size_t frame_len(const uint8_t *p)
{
	const struct tsr_ici_frame_hdr *h = (const void *)p;

	return sizeof(*h) + (h->len ? h->len + 4 : 0);
}

/* Whether an event of @ppm per million happens. */
static bool chance(struct end *e, uint32_t ppm)
{
	return rnd(e) % 1000000 < ppm;
}

/* Whether @p, @avail bytes, begins with a whole frame. */
static bool whole_frame(const uint8_t *p, size_t avail)
{
	return avail >= sizeof(struct tsr_ici_frame_hdr) &&
	       avail >= frame_len(p);
}

/*
 * The wire misbehaves on the whole frames @e wrote (the link's own faults
 * are off): it loses or damages new DATA frames (never a resent one, so
 * that each costs exactly one resend), repeats frames, then swaps
 * neighbours.
 */
static void misbehave(struct end *e)
{
	static uint8_t out[WIRE_CAP];
	size_t off = 0, n = 0, len, l2;
	const struct tsr_ici_frame_hdr *h;

	for (; whole_frame(e->wire + off, e->wire_len - off); off += len) {
		h = (const void *)(e->wire + off);
		len = frame_len(e->wire + off);
		if (h->type == TSR_ICI_FRAME_DATA &&
		    (!e->seen_data || (int32_t)(h->seq - e->next_new) >= 0)) {
			e->seen_data = true;
			e->next_new = h->seq + 1;
			if (chance(e, e->drop_ppm)) {
				e->dropped++;
				continue;
			}
			if (chance(e, e->damage_ppm)) {
				e->damaged++;
				e->wire[off + sizeof(*h) + rnd(e) % h->len] ^= 0x10;
			}
		}
		memcpy(out + n, e->wire + off, len);
		n += len;
		/* A repeat, if what is left still fits the wire. */
		if (n + len + e->wire_len - off - len <= WIRE_CAP &&
		    chance(e, e->dup_ppm)) {
			memcpy(out + n, e->wire + off, len);
			n += len;
		}
	}
	memcpy(out + n, e->wire + off, e->wire_len - off);
	e->wire_len = n + e->wire_len - off;
	/* Back onto the wire, some neighbours swapped. */
	for (off = 0; whole_frame(out + off, n - off); off += len) {
		len = frame_len(out + off);
		if (whole_frame(out + off + len, n - off - len) &&
		    chance(e, e->swap_ppm)) {
			l2 = frame_len(out + off + len);
			memcpy(e->wire + off, out + off + len, l2);
			memcpy(e->wire + off + l2, out + off, len);
			len += l2;
			continue;
		}
		memcpy(e->wire + off, out + off, len);
	}
	memcpy(e->wire + off, out + off, e->wire_len - off);
}

/* Bytes at the start of @e's wire that are due now. */
static size_t due_bytes(struct end *e)
{
	unsigned int k = 0, i;
	size_t n;

	if (!e->jitter_ns)
		return e->wire_len;
	while (k < e->chunks && e->due[k] <= *e->clock)
		k++;
	n = k ? e->chunk_end[k - 1] : 0;
	for (i = k; i < e->chunks; i++) {
		e->chunk_end[i - k] = e->chunk_end[i] - n;
		e->due[i - k] = e->due[i];
	}
	e->chunks -= k;
	return n;
}

/* Move what @e wrote to its peer. */
static void carry(FIXTURE_DATA(link) *self, struct end *e)
{
	size_t n;

	if (!e->wire_len || e->peer->stopped)
		return;
	if (e->drop_ppm || e->damage_ppm || e->dup_ppm || e->swap_ppm)
		misbehave(e);
	n = due_bytes(e);
	if (!n)
		return;
	/* Into a copy: the peer's answer may refill e->wire. */
	{
		uint8_t *copy = malloc(n);
		size_t off, piece;

		memcpy(copy, e->wire, n);
		memmove(e->wire, e->wire + n, e->wire_len - n);
		e->wire_len -= n;
		/* As a ring's reader does: one batch, its ACKs held. */
		if (self->hold_acks)
			tsr_link_hold_acks(e->peer->link, true, self->now);
		for (off = 0; off < n; off += piece) {
			piece = n - off;
			if (e->ncuts && e->cuts[e->cut % e->ncuts] < piece)
				piece = e->cuts[e->cut % e->ncuts];
			e->cut++;
			tsr_link_receive(e->peer->link, copy + off, piece,
					 self->now);
		}
		if (self->hold_acks)
			tsr_link_hold_acks(e->peer->link, false, self->now);
		free(copy);
	}
	tsr_link_flush(e->link, self->now);
}

/* @e stops or runs again, if its stalls say so. */
static void stall(FIXTURE_DATA(link) *self, struct end *e)
{
	if (!e->stall_max_ns || self->now < e->stall_turn)
		return;
	e->stopped = !e->stopped;
	e->stalls += e->stopped;
	e->stall_turn = self->now + (e->stopped ? e->stall_min_ns +
				     rnd(e) % (e->stall_max_ns - e->stall_min_ns) :
				     e->run_ns);
}

/* One step of the simulation: carry both ways, then run due timers. */
static void step(FIXTURE_DATA(link) *self)
{
	uint64_t d;

	stall(self, &self->b);
	carry(self, &self->a);
	carry(self, &self->b);
	self->now += self->step_ns;
	d = tsr_link_deadline(self->a.link);
	if (self->now >= d && !self->a.stopped)
		tsr_link_poll(self->a.link, self->now);
	d = tsr_link_deadline(self->b.link);
	if (self->now >= d && !self->b.stopped)
		tsr_link_poll(self->b.link, self->now);
}

static bool both_up(FIXTURE_DATA(link) *self)
{
	return tsr_link_state(self->a.link) == TSR_ICI_STATE_UP &&
	       tsr_link_state(self->b.link) == TSR_ICI_STATE_UP;
}

static bool train(FIXTURE_DATA(link) *self)
{
	int i;

	start(self);
	for (i = 0; i < 1000 && !both_up(self); i++)
		step(self);
	return both_up(self);
}

/*
 * A payload from @e's pattern generator: 1 to 8192 bytes, and every 16th
 * one as large as a frame takes (so that 10000 of them fit the logs); or
 * 1 to 1024 bytes if @e->small.
 */
static size_t next_payload(struct end *e, uint8_t *buf)
{
	size_t len, i;

	e->pattern = e->pattern * 6364136223846793005ull + 1442695040888963407ull;
	len = e->small ? 1 + (e->pattern >> 37) % 1024 :
	      (e->pattern >> 33) % 16 == 0 ? TSR_ICI_MAX_PAYLOAD :
	      1 + (e->pattern >> 37) % 8192;
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)((e->pattern >> 40) + i * 131);
	return len;
}

/*
 * Queue @len bytes of @buf on @e's link: as they are, or built in @e's
 * stage with up to the first 24 bytes left for tsr_link_send_buf() to
 * write, as the ICI's message header is.
 */
static int send_one(FIXTURE_DATA(link) *self, struct end *e, unsigned int vc,
		    const uint8_t *buf, size_t len)
{
	size_t head = len % 25;

	if (!e->stage)
		return tsr_link_send(e->link, vc, buf, len, self->now);
	memset(tsr_link_buf_data(e->stage), 0xa5, head);
	memcpy(tsr_link_buf_data(e->stage) + head, buf + head, len - head);
	if (tsr_link_buf_seal(e->stage, head, len, !tsr_link_intact(e->link)))
		return -1;
	return tsr_link_send_buf(e->link, vc, &e->stage, buf, self->now);
}

/*
 * Queue end @k's next payload, on the virtual channels in turn; whether
 * the link took it.
 */
static bool queue_next(FIXTURE_DATA(link) *self, unsigned int k)
{
	struct end *e = k ? &self->b : &self->a;
	unsigned int vc = self->queued[k] % 2;
	uint8_t buf[TSR_ICI_MAX_PAYLOAD];
	uint64_t saved = e->pattern;
	size_t len = next_payload(e, buf);

	if (send_one(self, e, vc, buf, len)) {
		e->pattern = saved;
		return false;
	}
	memcpy(e->sent[vc] + e->sent_len[vc], buf, len);
	e->sent_len[vc] += len;
	self->queued[k]++;
	return true;
}

/*
 * Queue @n more payloads from a now (each must be taken), counted as ones
 * b is to deliver; the test moves them across itself.
 */
static bool queue_from_a(FIXTURE_DATA(link) *self, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (!queue_next(self, 0))
			return false;
	self->target[0] += n;
	return true;
}

/*
 * Send @count_a more payloads from a and @count_b from b, alternating
 * virtual channels, and run until everything queued so far has arrived
 * and both wires are quiet (or @max_steps pass).  Returns whether that
 * happened.
 */
static bool transfer(FIXTURE_DATA(link) *self, unsigned int count_a,
		     unsigned int count_b, unsigned int max_steps)
{
	unsigned int k, s;

	self->target[0] += count_a;
	self->target[1] += count_b;
	for (s = 0; s < max_steps; s++) {
		for (k = 0; k < 2; k++)
			while (self->queued[k] < self->target[k] &&
			       queue_next(self, k))
				;
		if (self->b.delivered == self->target[0] &&
		    self->a.delivered == self->target[1] &&
		    !self->a.wire_len && !self->b.wire_len &&
		    !tsr_link_pending(self->a.link) &&
		    !tsr_link_pending(self->b.link))
			return true;
		step(self);
	}
	return false;
}

/* The same number of payloads each way. */
static bool exchange(FIXTURE_DATA(link) *self, unsigned int count,
		     unsigned int max_steps)
{
	return transfer(self, count, count, max_steps);
}

/* What each end received is exactly what the other sent. */
static bool streams_match(FIXTURE_DATA(link) *self)
{
	unsigned int vc;

	for (vc = 0; vc < TSR_ICI_VCS; vc++) {
		if (self->a.sent_len[vc] != self->b.log_len[vc] ||
		    memcmp(self->a.sent[vc], self->b.log[vc], self->a.sent_len[vc]) ||
		    self->b.sent_len[vc] != self->a.log_len[vc] ||
		    memcmp(self->b.sent[vc], self->a.log[vc], self->b.sent_len[vc]))
			return false;
	}
	return true;
}

static TsrLinkCounters counters(struct end *e)
{
	TsrLinkCounters c;

	tsr_link_get_counters(e->link, &c);
	return c;
}

static void inject(struct end *e, const TsrLinkFaults *f)
{
	tsr_link_set_faults(e->link, f, TSR_LINK_FAULT_ALL);
}

TEST(crc32c_check_value)
{
	EXPECT_EQ(0xe3069283u, tsr_crc32c(0, "123456789", 9));
	EXPECT_EQ(0u, tsr_crc32c(0, "", 0));
}

/* RFC 3720's vectors, and any split of a buffer: the fast path agrees. */
TEST(crc32c_matches_rfc3720_and_any_split)
{
	uint8_t zeros[32] = { 0 }, ones[32], inc[32], big[1000];
	uint32_t whole;
	size_t i;

	memset(ones, 0xff, sizeof(ones));
	for (i = 0; i < sizeof(inc); i++)
		inc[i] = i;
	EXPECT_EQ(0x8a9136aau, tsr_crc32c(0, zeros, sizeof(zeros)));
	EXPECT_EQ(0x62a8ab43u, tsr_crc32c(0, ones, sizeof(ones)));
	EXPECT_EQ(0x46dd794eu, tsr_crc32c(0, inc, sizeof(inc)));
	for (i = 0; i < sizeof(big); i++)
		big[i] = i * 37 + (i >> 3);
	whole = tsr_crc32c(0, big, sizeof(big));
	for (i = 0; i <= sizeof(big); i += 7)
		ASSERT_EQ(whole, tsr_crc32c(tsr_crc32c(0, big, i), big + i,
					    sizeof(big) - i)) TH_LOG("split at %zu", i);
}

/* Two parts' CRCs join into the whole's, for any lengths (0 too). */
TEST(crc32c_of_two_parts_joins_into_the_whole)
{
	static const size_t lens[] = { 0, 1, 7, 8, 1023, 3072, 32672, 32768,
				       70001 };
	static uint8_t buf[2 * 70001];
	unsigned int i, j;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = i * 131 + (i >> 7);
	for (i = 0; i < ARRAY_SIZE(lens); i++) {
		for (j = 0; j < ARRAY_SIZE(lens); j++) {
			const uint8_t *b = buf + lens[i];

			ASSERT_EQ(tsr_crc32c(0, buf, lens[i] + lens[j]),
				  tsr_crc32c_combine(tsr_crc32c(0, buf, lens[i]),
						     tsr_crc32c(0, b, lens[j]),
						     lens[j]))
				TH_LOG("%zu then %zu bytes", lens[i], lens[j]);
		}
	}
}

/* CRC32C a bit at a time, from the polynomial: nothing shared with the chip. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t len)
{
	uint32_t crc = ~0u;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78u : crc >> 1;
	}
	return ~crc;
}

/*
 * Buffers long enough for the fast path's three interleaved blocks (and
 * its joining of them), at every length around a multiple of three
 * blocks, at odd addresses: the same CRC as the polynomial gives.
 */
TEST(crc32c_of_long_buffers_matches_the_polynomial)
{
	static uint8_t buf[40000];
	static const size_t lens[] = { 3071, 3072, 3073, 6143, 6144, 6151,
				       9216 + 5, 32768, 32768 + 28 + 4,
				       39999 };
	size_t i, off;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	for (i = 0; i < ARRAY_SIZE(lens); i++)
		for (off = 0; off < 2; off++)
			ASSERT_EQ(crc32c_bitwise(buf + off, lens[i]),
				  tsr_crc32c(0, buf + off, lens[i]))
				TH_LOG("%zu bytes at offset %zu", lens[i], off);
	/* A split inside the first block of three: the state carries over. */
	ASSERT_EQ(crc32c_bitwise(buf, 20000),
		  tsr_crc32c(tsr_crc32c(0, buf, 100), buf + 100, 19900));
}

TEST_F(link, trains_and_carries_streams_both_ways)
{
	TsrLinkCounters a, b;
	TsrLinkId peer;

	ASSERT_TRUE(train(self));
	ASSERT_TRUE(tsr_link_peer(self->a.link, &peer));
	EXPECT_EQ(1, peer.coords[0]);
	EXPECT_EQ(TSR_ICI_PORT(0, 1), peer.port);
	ASSERT_TRUE(exchange(self, 2000, 200000));
	EXPECT_TRUE(streams_match(self));
	a = counters(&self->a);
	b = counters(&self->b);
	EXPECT_EQ(0, a.crc_errors + a.seq_errors + a.naks + a.replays +
		     a.timeouts + a.link_downs + a.protocol_errors);
	EXPECT_EQ(0, b.crc_errors + b.seq_errors + b.naks + b.replays +
		     b.timeouts + b.link_downs + b.protocol_errors);
	EXPECT_LT(2000, a.frames_tx);
	EXPECT_EQ(a.frames_tx, b.frames_rx);
	EXPECT_EQ(a.bytes_tx, b.bytes_rx);
}

TEST_F(link, a_dropped_frame_is_asked_for_again_and_resent)
{
	TsrLinkFaults f = { .drop_next = 1 };
	TsrLinkCounters a, b;

	ASSERT_TRUE(train(self));
	inject(&self->a, &f);
	ASSERT_TRUE(exchange(self, 300, 100000));
	EXPECT_TRUE(streams_match(self));
	a = counters(&self->a);
	b = counters(&self->b);
	EXPECT_LE(1, b.seq_errors);
	EXPECT_EQ(1, a.naks);
	EXPECT_EQ(1, a.replays);
	EXPECT_EQ(0, b.crc_errors);
	EXPECT_EQ(0, a.timeouts);
}

TEST_F(link, a_corrupt_frame_is_refused_and_resent)
{
	TsrLinkFaults f = { .corrupt_next = 1, .seed = 3 };
	TsrLinkCounters a, b;

	ASSERT_TRUE(train(self));
	inject(&self->a, &f);
	ASSERT_TRUE(exchange(self, 300, 100000));
	EXPECT_TRUE(streams_match(self));
	a = counters(&self->a);
	b = counters(&self->b);
	EXPECT_EQ(1, b.crc_errors);
	EXPECT_EQ(1, a.naks);
	EXPECT_EQ(1, a.replays);
	EXPECT_EQ(0, a.timeouts);
}

/*
 * A payload's CRC is taken and checked only on a wire that may damage it:
 * on an intact one its place holds 0, and a bit the wire itself flipped
 * there would go unseen (which is why only a ring says it is intact).
 */
TEST_F(link, a_payload_crc_is_taken_and_checked_only_where_the_wire_may_damage)
{
	uint8_t buf[100];
	const struct tsr_ici_frame_hdr *h = NULL;
	size_t off;
	uint32_t crc;
	int i;

	ASSERT_TRUE(train(self));
	memset(buf, 0x3c, sizeof(buf));
	ASSERT_EQ(0, tsr_link_send(self->a.link, 0, buf, sizeof(buf), self->now));
	for (off = 0; whole_frame(self->a.wire + off, self->a.wire_len - off);
	     off += frame_len(self->a.wire + off)) {
		h = (const void *)(self->a.wire + off);
		if (h->type == TSR_ICI_FRAME_DATA)
			break;
	}
	ASSERT_NE(NULL, h);
	ASSERT_EQ(TSR_ICI_FRAME_DATA, h->type);
	memcpy(&crc, (const uint8_t *)(h + 1) + h->len, sizeof(crc));
	EXPECT_EQ(self->intact ? 0 : tsr_crc32c(0, buf, sizeof(buf)), crc);

	self->a.wire[off + sizeof(*h) + 7] ^= 0x10;
	for (i = 0; i < 1000 && !self->b.delivered; i++)
		step(self);
	ASSERT_EQ(1, self->b.delivered);
	EXPECT_EQ(self->intact ? 0 : 1, counters(&self->b).crc_errors);
	EXPECT_EQ(self->intact ? 0x2c : 0x3c, self->b.log[0][7]);
}

/*
 * Injected drops and corruption cost the same frames and count the same
 * on a wire that is intact as on one that is not: the same seed gives the
 * same counters at both ends.
 */
TEST_F(link, injected_faults_count_alike_with_and_without_a_crc)
{
	TsrLinkFaults f = { .drop_ppm = 3000, .corrupt_ppm = 3000, .seed = 23 };
	TsrLinkCounters first[2], again[2];
	unsigned int run;

	for (run = 0; run < 2; run++) {
		if (run) {
			end_fini(&self->a);
			end_fini(&self->b);
			end_init(&self->a, &self->b, &self->now);
			end_init(&self->b, &self->a, &self->now);
			self->a.pattern = 1;
			self->b.pattern = 2;
			self->now = 0;
			memset(self->queued, 0, sizeof(self->queued));
			memset(self->target, 0, sizeof(self->target));
			self->intact = !self->intact;
		}
		ASSERT_TRUE(train(self));
		inject(&self->a, &f);
		inject(&self->b, &f);
		ASSERT_TRUE(exchange(self, 3000, 2000000));
		EXPECT_TRUE(streams_match(self));
		(run ? again : first)[0] = counters(&self->a);
		(run ? again : first)[1] = counters(&self->b);
	}
	EXPECT_LT(0, first[1].crc_errors);
	EXPECT_LT(0, first[0].replays);
	EXPECT_EQ(0, memcmp(first, again, sizeof(first)));
}

/* Whole frames that @e has written and its peer not yet read. */
static unsigned int frames_on_wire(const struct end *e)
{
	unsigned int n = 0;
	size_t off;

	for (off = 0; whole_frame(e->wire + off, e->wire_len - off);
	     off += frame_len(e->wire + off))
		n++;
	return n;
}

/*
 * A whole window of frames leaves a at once, the eleventh lost or damaged
 * on the way (@f): b keeps the 53 frames behind the gap, and a resends
 * the one that is missing, not the window after it.
 */
static void one_fault_in_a_full_window(struct __test_metadata *_metadata,
				       FIXTURE_DATA(link) *self,
				       const TsrLinkFaults *f)
{
	TsrLinkCounters a, b;
	unsigned int i;

	/* Credit for the whole window, on both channels. */
	self->ca.rx_slots = self->cb.rx_slots = self->ca.window / 2;
	self->a.small = true;
	ASSERT_TRUE(train(self));
	for (i = 0; i < self->ca.window; i++) {
		if (i == 10)
			inject(&self->a, f);
		ASSERT_TRUE(queue_next(self, 0));
	}
	/* On the wire together, but for the one lost. */
	ASSERT_EQ(self->ca.window - (f->drop_next ? 1 : 0),
		  frames_on_wire(&self->a));
	self->target[0] = self->ca.window;
	ASSERT_TRUE(transfer(self, 0, 0, 100000));
	EXPECT_TRUE(streams_match(self));
	a = counters(&self->a);
	b = counters(&self->b);
	EXPECT_EQ(1, a.naks);
	EXPECT_EQ(1, a.replays);
	EXPECT_EQ(0, a.timeouts);
	EXPECT_EQ(self->ca.window - 11, b.seq_errors);
	EXPECT_EQ(0, b.protocol_errors);
	EXPECT_EQ(self->ca.window, self->b.delivered);
}

TEST_F(link, a_frame_lost_in_a_full_window_is_the_only_one_resent)
{
	TsrLinkFaults f = { .drop_next = 1 };

	one_fault_in_a_full_window(_metadata, self, &f);
	EXPECT_EQ(0, counters(&self->b).crc_errors);
}

TEST_F(link, a_frame_damaged_in_a_full_window_is_the_only_one_resent)
{
	TsrLinkFaults f = { .corrupt_next = 1, .seed = 3 };

	one_fault_in_a_full_window(_metadata, self, &f);
	EXPECT_EQ(1, counters(&self->b).crc_errors);
}

/*
 * The last frame of a burst is lost: no frame behind it shows the gap, so
 * the tail-loss probe finds it (the peer's NAK), and it alone is resent.
 * When the peer also stopped for longer than the interval, the timer
 * fires first for frames that were not lost, and one more is resent: the
 * oldest, whose answer says what the peer misses.  Never the burst.
 */
TEST_F(link, a_frame_lost_at_a_burst_s_end_costs_one_resend_or_two_behind_a_stall)
{
	TsrLinkFaults f = { .drop_next = 1 };
	unsigned int stalled, i;
	TsrLinkCounters before, a;
	uint64_t t0;

	self->a.small = true;
	ASSERT_TRUE(train(self));
	for (stalled = 0; stalled < 2; stalled++) {
		before = counters(&self->a);
		for (i = 0; i < 16; i++) {
			if (i == 15)
				inject(&self->a, &f);
			ASSERT_TRUE(queue_next(self, 0));
		}
		ASSERT_EQ(15, frames_on_wire(&self->a));
		self->b.stopped = stalled;
		for (t0 = self->now; self->now - t0 < 5 * RTO_NS / 2; )
			step(self);
		self->b.stopped = false;
		self->target[0] += 16;
		ASSERT_TRUE(transfer(self, 0, 0, 100000));
		EXPECT_TRUE(streams_match(self));
		a = counters(&self->a);
		EXPECT_EQ(1 + stalled, a.replays - before.replays)
			TH_LOG("the peer %s", stalled ? "stalled" : "ran");
		EXPECT_EQ(stalled, a.timeouts - before.timeouts);
		EXPECT_EQ(1, a.naks - before.naks);
	}
	EXPECT_EQ(32, self->b.delivered);
}

/*
 * Burst @k of 16 frames from a, the last lost if @lose; run until b has
 * them all.  Returns the nanoseconds it took from the burst's end, and
 * a's counters since in @a.
 */
static uint64_t burst(FIXTURE_DATA(link) *self, bool lose,
		      TsrLinkCounters *a)
{
	TsrLinkFaults f = { .drop_next = 1 };
	TsrLinkCounters before = counters(&self->a);
	unsigned int i;
	uint64_t t0;

	for (i = 0; i < 16; i++) {
		if (i == 15 && lose)
			inject(&self->a, &f);
		if (!queue_next(self, 0))
			return UINT64_MAX;
	}
	t0 = self->now;
	self->target[0] += 16;
	while (self->b.delivered < self->target[0] &&
	       self->now - t0 < 100 * RTO_NS)
		step(self);
	*a = counters(&self->a);
	a->frames_tx -= before.frames_tx;
	a->replays -= before.replays;
	a->timeouts -= before.timeouts;
	a->naks -= before.naks;
	a->tail_probes -= before.tail_probes;
	a->tail_losses -= before.tail_losses;
	return self->now - t0;
}

/* @e's wire, fed to its peer one frame a call; how many frames. */
static unsigned int feed_frames(FIXTURE_DATA(link) *self, struct end *e)
{
	uint8_t *copy = malloc(e->wire_len);
	size_t n = e->wire_len, off, len;
	unsigned int frames = 0;

	memcpy(copy, e->wire, n);
	e->wire_len = 0;
	for (off = 0; off < n; off += len, frames++) {
		len = frame_len(copy + off);
		tsr_link_receive(e->peer->link, copy + off, len, self->now);
	}
	free(copy);
	return frames;
}

/*
 * A reader that holds acknowledgements over a batch it feeds in many
 * calls (a ring's) sends one bare ACK per cfg.ack_every frames, and what
 * is owed when it lets go; one that does not, an ACK per call.
 */
TEST_F(link, held_acknowledgements_go_ack_every_frames_at_a_time)
{
	TsrLinkCounters b0;

	self->a.small = true;
	self->cb.ack_delay_ns = 0;
	ASSERT_TRUE(train(self));
	ASSERT_TRUE(transfer(self, 1, 1, 100000));

	ASSERT_TRUE(queue_from_a(self, 20));
	b0 = counters(&self->b);
	tsr_link_hold_acks(self->b.link, true, self->now);
	ASSERT_EQ(20, feed_frames(self, &self->a));
	EXPECT_EQ(20 / self->cb.ack_every,
		  counters(&self->b).frames_tx - b0.frames_tx);
	tsr_link_hold_acks(self->b.link, false, self->now);
	EXPECT_EQ(20 / self->cb.ack_every + 1,
		  counters(&self->b).frames_tx - b0.frames_tx);

	ASSERT_TRUE(queue_from_a(self, 4));
	b0 = counters(&self->b);
	ASSERT_EQ(4, feed_frames(self, &self->a));
	EXPECT_EQ(4, counters(&self->b).frames_tx - b0.frames_tx);

	ASSERT_TRUE(transfer(self, 0, 0, 100000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(24 + 1, self->b.delivered);
}

/*
 * A link that delays its ACKs (as a socket's port does) sends none for
 * fewer than cfg.ack_every frames until cfg.ack_delay_ns has passed, its
 * deadline saying when; and one at once for ack_every frames.
 */
TEST_F(link, a_delayed_acknowledgement_waits_for_frames_or_its_deadline)
{
	const uint64_t delay = RTO_NS / 16;
	TsrLinkCounters b0;
	uint64_t t0;

	self->a.small = true;
	self->cb.ack_delay_ns = delay;
	ASSERT_TRUE(train(self));
	ASSERT_TRUE(transfer(self, 1, 1, 100000));

	ASSERT_TRUE(queue_from_a(self, 5));
	b0 = counters(&self->b);
	t0 = self->now;
	ASSERT_EQ(5, feed_frames(self, &self->a));
	EXPECT_EQ(0, counters(&self->b).frames_tx - b0.frames_tx);
	EXPECT_EQ(t0 + delay, tsr_link_deadline(self->b.link));
	tsr_link_poll(self->b.link, t0 + delay - 1);
	EXPECT_EQ(0, counters(&self->b).frames_tx - b0.frames_tx);
	tsr_link_poll(self->b.link, t0 + delay);
	EXPECT_EQ(1, counters(&self->b).frames_tx - b0.frames_tx);
	EXPECT_LT(t0 + delay, tsr_link_deadline(self->b.link));

	ASSERT_TRUE(queue_from_a(self, self->cb.ack_every));
	b0 = counters(&self->b);
	ASSERT_EQ(self->cb.ack_every, feed_frames(self, &self->a));
	EXPECT_EQ(1, counters(&self->b).frames_tx - b0.frames_tx);

	ASSERT_TRUE(transfer(self, 0, 0, 100000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(5 + self->cb.ack_every + 1, self->b.delivered);
}

/*
 * The last frame of a burst is lost, at a retransmit interval far above
 * the round trip (as the longest round trip of the last second keeps it
 * on a busy host): it is recovered about a probe timeout (twice the round
 * trip, at least an eighth of the configured interval) after the burst,
 * not an interval, for one TAIL frame and the resend.  Unfaulted, the
 * same burst sends no probe: the ACK came first.
 */
TEST_F(link, a_frame_lost_at_a_burst_s_end_is_found_by_a_tail_probe)
{
	TsrLinkCounters a;
	uint64_t took, clean;

	self->ca.retransmit_ns = self->cb.retransmit_ns = 50 * RTO_NS;
	self->a.small = true;
	ASSERT_TRUE(train(self));
	/* A round trip measured: the probe needs one. */
	ASSERT_TRUE(transfer(self, 4, 4, 100000));

	clean = burst(self, false, &a);
	EXPECT_EQ(16, a.frames_tx);
	EXPECT_EQ(0, a.replays);
	EXPECT_EQ(0, a.tail_probes);
	EXPECT_EQ(0, a.tail_losses);

	took = burst(self, true, &a);
	TH_LOG("lost last frame: %llu ns to deliver, %llu unfaulted",
	       (unsigned long long)took, (unsigned long long)clean);
	EXPECT_GT(self->ca.retransmit_ns / 4, took);
	EXPECT_LT(self->ca.retransmit_ns / 8, took);
	EXPECT_EQ(1, a.replays);
	EXPECT_EQ(1, a.naks);
	EXPECT_EQ(0, a.timeouts);
	/* The burst, one TAIL frame and the resend; no probe after it. */
	EXPECT_EQ(16 + 1 + 1, a.frames_tx);
	EXPECT_EQ(1, a.tail_probes);
	EXPECT_EQ(1, a.tail_losses);
	ASSERT_TRUE(transfer(self, 0, 0, 100000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(0, counters(&self->b).protocol_errors);
}

/*
 * The peer does not run for longer than a probe timeout after each burst
 * (but less than the interval): each burst's end gets one TAIL frame,
 * which the peer answers with an ACK when it runs; nothing is resent, and
 * there is no second probe for the same tail.  A lost TAIL frame is lost
 * as any other: the timer is left to find a loss.
 */
TEST_F(link, a_peer_that_sleeps_past_a_probe_timeout_gets_one_probe_no_resend)
{
	TsrLinkFaults drop = { .drop_next = 1 };
	TsrLinkCounters a;
	unsigned int k;
	uint64_t t0;

	self->ca.retransmit_ns = self->cb.retransmit_ns = 50 * RTO_NS;
	self->a.small = true;
	ASSERT_TRUE(train(self));
	ASSERT_TRUE(transfer(self, 4, 4, 100000));
	for (k = 0; k < 4; k++) {
		TsrLinkCounters before = counters(&self->a);
		unsigned int i;

		for (i = 0; i < 16; i++)
			ASSERT_TRUE(queue_next(self, 0));
		self->b.stopped = true;
		if (k == 3)
			inject(&self->a, &drop);	/* the probe */
		for (t0 = self->now; self->now - t0 < 20 * RTO_NS; )
			step(self);
		self->b.stopped = false;
		self->target[0] += 16;
		ASSERT_TRUE(transfer(self, 0, 0, 100000));
		a = counters(&self->a);
		EXPECT_EQ(16 + 1, a.frames_tx - before.frames_tx)
			TH_LOG("burst %u", k);
		EXPECT_EQ(0, a.replays);
		EXPECT_EQ(0, a.naks);
		EXPECT_EQ(0, a.timeouts);
		/* The lost probe counts as sent; no answer is a loss. */
		EXPECT_EQ(1, a.tail_probes - before.tail_probes);
		EXPECT_EQ(0, a.tail_losses - before.tail_losses);
	}
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(0, counters(&self->b).protocol_errors);
}

/*
 * A frame is lost, and so is the NAK that asks for it: the SACK of the
 * peer's next ACK (frames came behind the gap) asks again, and the frame
 * is resent without waiting for the retransmit timer.
 */
TEST_F(link, a_lost_nak_is_made_up_for_by_the_sack_of_the_next_ack)
{
	TsrLinkFaults drop = { .drop_next = 1 }, left;
	TsrLinkCounters a;
	unsigned int i;

	self->a.small = true;
	ASSERT_TRUE(train(self));
	for (i = 0; i < 12; i++) {
		if (i == 4)
			inject(&self->a, &drop);
		ASSERT_TRUE(queue_next(self, 0));
	}
	/* b's next frame is the NAK for the frame lost. */
	inject(&self->b, &drop);
	step(self);
	tsr_link_get_faults(self->b.link, &left);
	ASSERT_EQ(0, left.drop_next);
	EXPECT_EQ(1, counters(&self->b).frames_tx - counters(&self->a).frames_rx);
	self->target[0] += 12;
	ASSERT_TRUE(transfer(self, 12, 0, 100000));
	EXPECT_TRUE(streams_match(self));
	a = counters(&self->a);
	EXPECT_EQ(1, a.replays);
	EXPECT_EQ(0, a.naks);
	EXPECT_EQ(0, a.timeouts);
	EXPECT_EQ(24, self->b.delivered);
}

TEST_F(link, random_drops_and_corruption_lose_nothing_and_repeat_exactly)
{
	TsrLinkFaults f = { .drop_ppm = 1000, .corrupt_ppm = 1000, .seed = 42 };
	TsrLinkCounters first, again;

	ASSERT_TRUE(train(self));
	inject(&self->a, &f);
	inject(&self->b, &f);
	ASSERT_TRUE(exchange(self, 10000, 2000000));
	EXPECT_TRUE(streams_match(self));
	first = counters(&self->b);
	EXPECT_LT(0, first.crc_errors);
	EXPECT_LT(0, first.seq_errors);
	EXPECT_LT(0, counters(&self->a).replays);

	/* The same seed, the same run: the same counters. */
	end_fini(&self->a);
	end_fini(&self->b);
	end_init(&self->a, &self->b, &self->now);
	end_init(&self->b, &self->a, &self->now);
	self->a.pattern = 1;
	self->b.pattern = 2;
	self->now = 0;
	memset(self->queued, 0, sizeof(self->queued));
	memset(self->target, 0, sizeof(self->target));
	ASSERT_TRUE(train(self));
	inject(&self->a, &f);
	inject(&self->b, &f);
	ASSERT_TRUE(exchange(self, 10000, 2000000));
	again = counters(&self->b);
	EXPECT_EQ(0, memcmp(&first, &again, sizeof(first)));
}

/*
 * A wire that loses, damages, repeats and reorders frames at random, both
 * ways: nothing is lost, and each frame lost or damaged is resent once,
 * nothing else.
 */
TEST_F(link, a_wire_that_loses_damages_repeats_and_reorders_loses_nothing)
{
	struct end *ends[2] = { &self->a, &self->b };
	unsigned int k;

	if (variant->intact)
		SKIP(return, "an intact wire damages nothing");
	ASSERT_TRUE(train(self));
	for (k = 0; k < 2; k++) {
		ends[k]->rng = 17 + k;
		ends[k]->drop_ppm = 2000;
		ends[k]->damage_ppm = 2000;
		ends[k]->dup_ppm = 5000;
		ends[k]->swap_ppm = 20000;
	}
	ASSERT_TRUE(exchange(self, 5000, 2000000));
	EXPECT_TRUE(streams_match(self));
	for (k = 0; k < 2; k++) {
		TsrLinkCounters c = counters(ends[k]);

		EXPECT_LT(0, ends[k]->dropped);
		EXPECT_LT(0, ends[k]->damaged);
		EXPECT_EQ(ends[k]->dropped + ends[k]->damaged, c.replays);
		EXPECT_EQ(0, c.protocol_errors);
		EXPECT_EQ(0, c.link_downs);
	}
}

TEST_F(link, faults_change_field_by_field_and_counts_read_back_what_is_left)
{
	TsrLinkFaults f = { .drop_next = 2, .delay_ns = 5000, .seed = 9 };
	TsrLinkFaults g = { .drop_next = 99, .drop_ppm = 7 };
	TsrLinkFaults now;

	ASSERT_TRUE(train(self));
	inject(&self->a, &f);
	/* Only the field named changes. */
	tsr_link_set_faults(self->a.link, &g, TSR_LINK_FAULT_DROP_PPM);
	tsr_link_get_faults(self->a.link, &now);
	EXPECT_EQ(2, now.drop_next);
	EXPECT_EQ(7, now.drop_ppm);
	EXPECT_EQ(5000, now.delay_ns);
	EXPECT_EQ(9, now.seed);
	ASSERT_TRUE(exchange(self, 20, 100000));
	EXPECT_TRUE(streams_match(self));
	/* The counts and the hold are used up; rates and seed stay. */
	tsr_link_get_faults(self->a.link, &now);
	EXPECT_EQ(0, now.drop_next);
	EXPECT_EQ(0, now.delay_ns);
	EXPECT_EQ(7, now.drop_ppm);
	EXPECT_EQ(9, now.seed);
}

TEST_F(link, lost_acks_are_covered_by_the_retransmit_timer)
{
	TsrLinkFaults f = { .drop_acks_next = 3 };
	uint8_t buf[100] = { 1 };
	TsrLinkCounters a, b;
	int i;

	ASSERT_TRUE(train(self));
	/* One way only, so that acknowledgements travel in ACK frames. */
	inject(&self->b, &f);
	for (i = 0; i < 5; i++) {
		ASSERT_EQ(0, tsr_link_send(self->a.link, 0, buf, sizeof(buf),
					   self->now));
		memcpy(self->a.sent[0] + self->a.sent_len[0], buf, sizeof(buf));
		self->a.sent_len[0] += sizeof(buf);
	}
	for (i = 0; i < 2000 && tsr_link_pending(self->a.link); i++)
		step(self);
	EXPECT_EQ(0, tsr_link_pending(self->a.link));
	EXPECT_TRUE(streams_match(self));
	a = counters(&self->a);
	b = counters(&self->b);
	/*
	 * Each lost ACK costs a timeout, which resends the oldest frame
	 * alone (a duplicate there), whose answer acknowledges all five.
	 */
	EXPECT_EQ(3, a.timeouts);
	EXPECT_EQ(3, a.replays);
	EXPECT_EQ(3, b.seq_errors);
	EXPECT_EQ(5, self->b.delivered);
	EXPECT_EQ(TSR_ICI_STATE_UP, tsr_link_state(self->a.link));
}

TEST_F(link, a_held_wire_times_its_frames_from_when_they_leave)
{
	TsrLinkFaults f = { .delay_ns = RTO_NS / 2 };
	uint8_t buf[100] = { 1 };
	TsrLinkCounters a;
	int i;

	ASSERT_TRUE(train(self));
	inject(&self->a, &f);
	ASSERT_EQ(0, tsr_link_send(self->a.link, 0, buf, sizeof(buf),
				   self->now));
	memcpy(self->a.sent[0], buf, sizeof(buf));
	self->a.sent_len[0] = sizeof(buf);
	/* A late timer lets the frame out just before its resend was due... */
	self->now += RTO_NS - 1000;
	tsr_link_poll(self->a.link, self->now);
	EXPECT_LT(0, self->a.wire_len);
	/* ...and runs again before the acknowledgement is back. */
	self->now += 1000;
	tsr_link_poll(self->a.link, self->now);
	for (i = 0; i < 100 && tsr_link_pending(self->a.link); i++)
		step(self);
	EXPECT_EQ(0, tsr_link_pending(self->a.link));
	EXPECT_TRUE(streams_match(self));
	a = counters(&self->a);
	EXPECT_EQ(0, a.timeouts);
	EXPECT_EQ(0, a.replays);
	EXPECT_EQ(0, counters(&self->b).seq_errors);
}

TEST_F(link, duplicated_and_reordered_frames_are_put_right)
{
	uint8_t buf[64] = { 9 }, *w = self->a.wire, tmp[WIRE_CAP];
	TsrLinkCounters b;
	size_t l0, l1;
	int i;

	ASSERT_TRUE(train(self));
	for (i = 0; i < 3; i++) {
		buf[1] = i;
		ASSERT_EQ(0, tsr_link_send(self->a.link, 0, buf, sizeof(buf),
					   self->now));
		memcpy(self->a.sent[0] + self->a.sent_len[0], buf, sizeof(buf));
		self->a.sent_len[0] += sizeof(buf);
	}
	/* Three DATA frames on the wire: swap the first two, repeat one. */
	l0 = frame_len(w);
	l1 = frame_len(w + l0);
	memcpy(tmp, w + l0, l1);
	memcpy(tmp + l1, w, l0);
	memcpy(tmp + l0 + l1, w + l0 + l1, self->a.wire_len - l0 - l1);
	memcpy(tmp + self->a.wire_len, w + l0 + l1, frame_len(w + l0 + l1));
	self->a.wire_len += frame_len(w + l0 + l1);
	memcpy(w, tmp, self->a.wire_len);

	for (i = 0; i < 1000 && tsr_link_pending(self->a.link); i++)
		step(self);
	EXPECT_EQ(0, tsr_link_pending(self->a.link));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(3, self->b.delivered);
	b = counters(&self->b);
	EXPECT_EQ(2, b.seq_errors);
	EXPECT_EQ(0, b.protocol_errors);
	/* The gap closed before b answered: nothing was asked for again. */
	EXPECT_EQ(0, counters(&self->a).naks);
	EXPECT_EQ(0, counters(&self->a).replays);
}

TEST_F(link, a_slow_receiver_stalls_the_sender_without_losing_anything)
{
	TsrLinkCounters a, b;

	ASSERT_TRUE(train(self));
	self->b.refuse = true;
	/* Far more than the receiver's 16 slots per channel. */
	EXPECT_FALSE(exchange(self, 200, 3000));
	a = counters(&self->a);
	EXPECT_LE(1, a.credit_stalls);
	EXPECT_EQ(0, self->b.delivered);
	/* Holding frames, the receiver asked for none again. */
	EXPECT_EQ(0, counters(&self->a).replays);
	self->b.refuse = false;
	tsr_link_rx_ready(self->b.link, self->now);
	ASSERT_TRUE(exchange(self, 0, 200000));
	EXPECT_EQ(200, self->b.delivered);
	EXPECT_TRUE(streams_match(self));
	b = counters(&self->b);
	EXPECT_EQ(0, b.protocol_errors);
	EXPECT_EQ(0, counters(&self->a).replays);
}

/*
 * The frame that brings a stalled sender its credit is lost; with no
 * frame in flight, no retransmit timer runs: the sender asks again.
 */
TEST_F(link, a_lost_credit_update_is_asked_for_again)
{
	TsrLinkFaults f = { .drop_next = 1 };

	ASSERT_TRUE(train(self));
	self->b.refuse = true;
	EXPECT_FALSE(exchange(self, 200, 3000));
	EXPECT_LE(1, counters(&self->a).credit_stalls);
	/* The next frame b sends is the ACK with its fresh credit. */
	inject(&self->b, &f);
	self->b.refuse = false;
	tsr_link_rx_ready(self->b.link, self->now);
	ASSERT_TRUE(exchange(self, 0, 200000));
	EXPECT_EQ(200, self->b.delivered);
	EXPECT_TRUE(streams_match(self));
	/* Nothing was resent: only the credit was asked for. */
	EXPECT_EQ(0, counters(&self->a).replays);
	EXPECT_EQ(0, counters(&self->a).link_downs);
}

/*
 * One of a's ACKs is damaged: b answers with a NAK, though a has nothing
 * in flight.  That must not start a's retransmit timer, which no
 * acknowledgement could then stop.
 */
TEST_F(link, a_nak_with_nothing_in_flight_leaves_the_link_up)
{
	TsrLinkFaults f = { .corrupt_next = 1 };
	struct end *ends[2] = { &self->a, &self->b };
	unsigned int i, k;

	ASSERT_TRUE(train(self));
	inject(&self->a, &f);
	/* Only b sends: a's next frame is an ACK, and it is damaged. */
	for (i = 0; i < 3; i++) {
		uint8_t buf[TSR_ICI_MAX_PAYLOAD];
		size_t len = next_payload(&self->b, buf);

		ASSERT_EQ(0, tsr_link_send(self->b.link, 0, buf, len, self->now));
		memcpy(self->b.sent[0] + self->b.sent_len[0], buf, len);
		self->b.sent_len[0] += len;
	}
	/* Three seconds, longer than eight timeouts with their backoff. */
	for (i = 0; i < 3000; i++) {
		step(self);
		self->now += 1000000;
	}
	EXPECT_EQ(1, counters(&self->b).crc_errors);
	EXPECT_EQ(1, counters(&self->a).naks);
	/* b may time out once, for the data a's damaged ACK covered; a never. */
	EXPECT_EQ(0, counters(&self->a).timeouts);
	for (k = 0; k < 2; k++) {
		EXPECT_EQ(TSR_ICI_STATE_UP, tsr_link_state(ends[k]->link));
		EXPECT_EQ(0, counters(ends[k]).link_downs);
	}
	EXPECT_EQ(3, self->a.delivered);
}

/* A header alone, forged as a hostile peer of @to would send it. */
static void forge(FIXTURE_DATA(link) *self, struct end *to, uint8_t type,
		  uint32_t seq, uint32_t ack)
{
	struct tsr_ici_frame_hdr h = {
		.magic = TSR_ICI_FRAME_MAGIC, .type = type, .seq = seq,
		.ack = ack,
	};

	h.hdr_crc = tsr_crc32c(0, &h, offsetof(struct tsr_ici_frame_hdr,
					       hdr_crc));
	tsr_link_receive(to->link, &h, sizeof(h), self->now);
}

/*
 * A TAIL names the frame its sender sends next, at most a window past
 * what the receiver took: one further is refused (a protocol error, no
 * answer); one at the window's end is answered with a NAK, one naming
 * nothing missing with an ACK.  Nothing was sent on the link: from
 * training, both ends' streams start at 0.
 */
TEST_F(link, a_tail_more_than_a_window_ahead_is_refused_and_one_within_is_answered)
{
	static const struct {
		uint32_t seq;
		unsigned int errors, answers, naks;
	} tails[] = {
		{ 64 + 1, 1, 0, 0 },
		{ 0x80000000u, 1, 0, 0 },
		{ 64, 0, 1, 1 },
		{ 0, 0, 1, 0 },
	};
	TsrLinkCounters a0, b0;
	unsigned int i, k;

	ASSERT_TRUE(train(self));
	ASSERT_EQ(64, self->cb.window);
	for (i = 0; i < ARRAY_SIZE(tails); i++) {
		a0 = counters(&self->a);
		b0 = counters(&self->b);
		forge(self, &self->b, TSR_ICI_FRAME_TAIL, tails[i].seq, 0);
		for (k = 0; k < 100; k++)
			step(self);
		EXPECT_EQ(tails[i].errors,
			  counters(&self->b).protocol_errors - b0.protocol_errors)
			TH_LOG("TAIL %u", tails[i].seq);
		EXPECT_EQ(tails[i].answers,
			  counters(&self->b).frames_tx - b0.frames_tx)
			TH_LOG("TAIL %u", tails[i].seq);
		EXPECT_EQ(tails[i].naks, counters(&self->a).naks - a0.naks)
			TH_LOG("TAIL %u", tails[i].seq);
	}
	ASSERT_TRUE(transfer(self, 4, 4, 100000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(0, counters(&self->a).protocol_errors);
}

/*
 * A NAK whose SACK claims frame 2, which was sent, and frame 10, which
 * never was, is refused whole: counted, and neither frames 0 and 1 (below
 * the highest it claims) resent for it, nor frame 2 taken for held.
 */
TEST_F(link, a_sack_naming_a_frame_never_sent_is_refused_whole)
{
	TsrLinkCounters a0, a;
	unsigned int i;

	ASSERT_TRUE(train(self));
	self->b.stopped = true;
	for (i = 0; i < 4; i++)
		ASSERT_TRUE(queue_next(self, 0));
	a0 = counters(&self->a);
	forge(self, &self->a, TSR_ICI_FRAME_NAK, 1u << 1 | 1u << 9, 0);
	/* Less than the retransmit interval: any resend is the NAK's. */
	for (i = 0; i < 10; i++)
		step(self);
	a = counters(&self->a);
	EXPECT_EQ(1, a.protocol_errors - a0.protocol_errors);
	EXPECT_EQ(0, a.naks - a0.naks);
	EXPECT_EQ(0, a.replays - a0.replays);
	EXPECT_EQ(0, a.frames_tx - a0.frames_tx);
	self->b.stopped = false;
	self->target[0] += 4;
	ASSERT_TRUE(transfer(self, 0, 0, 100000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(0, counters(&self->b).seq_errors);
}

TEST_F(link, sequence_numbers_wrap)
{
	self->ca.isn = 0xffffff00u;
	self->cb.isn = 0xfffffff0u;
	ASSERT_TRUE(train(self));
	ASSERT_TRUE(exchange(self, 1000, 200000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(0, counters(&self->b).seq_errors);
}

TEST_F(link, too_many_timeouts_take_the_link_down)
{
	uint8_t buf[32] = { 0 };
	uint64_t seq_errors;
	unsigned int delivered;
	TsrLinkCounters a;
	int i;

	ASSERT_TRUE(train(self));
	self->b.blackhole = true;	/* no ACK ever comes back */
	ASSERT_EQ(0, tsr_link_send(self->a.link, 0, buf, sizeof(buf), self->now));
	for (i = 0; i < 100000 &&
	     tsr_link_state(self->a.link) == TSR_ICI_STATE_UP; i++)
		step(self);
	EXPECT_EQ(TSR_ICI_STATE_DOWN, tsr_link_state(self->a.link));
	a = counters(&self->a);
	EXPECT_EQ(self->ca.retry_limit + 1, a.timeouts);
	EXPECT_EQ(1, a.link_downs);
	EXPECT_EQ(TSR_ICI_STATE_DOWN, self->a.states[self->a.nstates - 1]);
	/*
	 * Retrained, it starts afresh: what it still held (the frame whose
	 * acknowledgements were lost) belonged to a link that failed, and is
	 * not sent again.  What is sent now arrives, once.
	 */
	EXPECT_EQ(0, tsr_link_pending(self->a.link));
	delivered = self->b.delivered;
	seq_errors = counters(&self->b).seq_errors;
	self->b.blackhole = false;
	tsr_link_retrain(self->a.link, self->now);
	for (i = 0; i < 10000 && !both_up(self); i++)
		step(self);
	ASSERT_TRUE(both_up(self));
	ASSERT_EQ(0, tsr_link_send(self->a.link, 0, buf, sizeof(buf), self->now));
	for (i = 0; i < 10000 && tsr_link_pending(self->a.link); i++)
		step(self);
	EXPECT_EQ(0, tsr_link_pending(self->a.link));
	EXPECT_EQ(delivered + 1, self->b.delivered);
	EXPECT_EQ(seq_errors, counters(&self->b).seq_errors);
}

/*
 * Timeouts in a row double the retransmit interval (the peer's answers
 * are lost); the first new acknowledgement ends the backoff, though it
 * answers a resent frame and times no round trip: the next frame lost is
 * resent one interval after it left, not eight.
 */
TEST_F(link, timeouts_in_a_row_back_off_and_a_fresh_ack_ends_the_backoff)
{
	TsrLinkFaults drop = { .drop_next = 1 };
	uint8_t buf[32] = { 0 };
	uint64_t last;
	unsigned int n = 0, i;

	ASSERT_TRUE(train(self));
	self->b.blackhole = true;
	ASSERT_EQ(0, tsr_link_send(self->a.link, 0, buf, sizeof(buf), self->now));
	for (last = self->now; n < 3 && self->now - last < 100 * RTO_NS; ) {
		step(self);
		if (counters(&self->a).timeouts == n)
			continue;
		EXPECT_LE(RTO_NS << n, self->now - last) TH_LOG("timeout %u", n);
		EXPECT_GE((RTO_NS << n) + 2000, self->now - last)
			TH_LOG("timeout %u", n);
		last = self->now;
		n++;
	}
	ASSERT_EQ(3, n);
	self->b.blackhole = false;
	for (i = 0; i < 10000 && tsr_link_pending(self->a.link); i++)
		step(self);
	ASSERT_EQ(0, tsr_link_pending(self->a.link));
	EXPECT_EQ(3, counters(&self->a).timeouts);

	inject(&self->a, &drop);
	ASSERT_EQ(0, tsr_link_send(self->a.link, 0, buf, sizeof(buf), self->now));
	last = self->now;
	while (counters(&self->a).timeouts == 3 &&
	       self->now - last < 100 * RTO_NS)
		step(self);
	EXPECT_EQ(4, counters(&self->a).timeouts);
	EXPECT_GE(RTO_NS + 2000, self->now - last);
	for (i = 0; i < 10000 && tsr_link_pending(self->a.link); i++)
		step(self);
	EXPECT_EQ(0, tsr_link_pending(self->a.link));
	EXPECT_EQ(2, self->b.delivered);
	EXPECT_EQ(TSR_ICI_STATE_UP, tsr_link_state(self->a.link));
}

TEST_F(link, retraining_mid_stream_neither_loses_nor_repeats)
{
	int i;

	ASSERT_TRUE(train(self));
	ASSERT_TRUE(exchange(self, 100, 100000));
	/* Frames in flight both ways when one end retrains. */
	EXPECT_FALSE(exchange(self, 100, 3));
	tsr_link_retrain(self->a.link, self->now);
	EXPECT_EQ(TSR_ICI_STATE_TRAINING, tsr_link_state(self->a.link));
	for (i = 0; i < 1000 && !both_up(self); i++)
		step(self);
	ASSERT_TRUE(both_up(self));
	ASSERT_TRUE(exchange(self, 0, 200000));
	EXPECT_EQ(200, self->a.delivered);
	EXPECT_EQ(200, self->b.delivered);
	EXPECT_TRUE(streams_match(self));
}

TEST_F(link, a_peer_that_is_not_the_neighbour_is_refused)
{
	/* b claims to be chip 2: a expects chip 1 on its +x port. */
	self->cb.self.coords[0] = 2;
	self->cb.peer.coords[0] = 0;
	start(self);
	for (int i = 0; i < 100; i++)
		step(self);
	EXPECT_EQ(TSR_ICI_STATE_MISWIRED, tsr_link_state(self->a.link));
	/* b hears the chip it expects, but never an answer to its TRAIN. */
	EXPECT_EQ(TSR_ICI_STATE_TRAINING, tsr_link_state(self->b.link));
}

TEST_F(link, a_peer_of_another_slice_is_foreign)
{
	self->cb.self.slice_id = 8;
	self->cb.peer.slice_id = 8;
	start(self);
	for (int i = 0; i < 100; i++)
		step(self);
	EXPECT_EQ(TSR_ICI_STATE_FOREIGN, tsr_link_state(self->a.link));
	EXPECT_EQ(TSR_ICI_STATE_FOREIGN, tsr_link_state(self->b.link));
}

TEST_F(link, garbage_on_the_wire_is_skipped_and_the_stream_goes_on)
{
	uint8_t junk[10000];
	unsigned int i;

	ASSERT_TRUE(train(self));
	srand(5);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = rand();
	tsr_link_receive(self->b.link, junk, sizeof(junk), self->now);
	EXPECT_LE(1, counters(&self->b).crc_errors);
	ASSERT_TRUE(exchange(self, 200, 100000));
	EXPECT_TRUE(streams_match(self));
}

TEST_F(link, frames_in_small_pieces_and_a_delayed_wire_arrive_whole)
{
	TsrLinkFaults f = { .delay_ns = 50 * RTO_NS };

	ASSERT_TRUE(train(self));
	self->a.write_limit = 7;
	self->b.write_limit = 13;
	inject(&self->a, &f);
	ASSERT_TRUE(exchange(self, 200, 2000000));
	EXPECT_TRUE(streams_match(self));
}

/*
 * Reads cut the stream anywhere: inside a header, just after one, inside
 * a payload, across several frames; with frames lost and damaged, and
 * garbage (which makes the receiver look for a header byte by byte) fed
 * in small pieces.
 */
TEST_F(link, frames_cut_anywhere_with_faults_and_garbage_arrive_whole)
{
	static const size_t cuts[] = { 1, 27, 28, 29, 4096, 32800, 65536,
				       100000, 3, 32799 };
	TsrLinkFaults f = { .drop_ppm = 20000, .corrupt_ppm = 50000,
			    .seed = 11 };
	uint8_t junk[3000];
	unsigned int i;

	ASSERT_TRUE(train(self));
	srand(7);
	for (i = 0; i < sizeof(junk); i++)
		junk[i] = rand();
	for (i = 0; i < sizeof(junk); i += 5)
		tsr_link_receive(self->b.link, junk + i, 5, self->now);
	self->a.cuts = self->b.cuts = cuts;
	self->a.ncuts = self->b.ncuts = ARRAY_SIZE(cuts);
	inject(&self->a, &f);
	inject(&self->b, &f);
	ASSERT_TRUE(exchange(self, 1000, 2000000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_LE(1, counters(&self->b).crc_errors);
	EXPECT_LE(1, counters(&self->a).crc_errors);
}

/*
 * Payloads built outside the link, their first bytes written only as they
 * are queued (the ICI's chunks), arrive as sent through drops and
 * corruption, and resent ones too: the CRC joined from the two parts is
 * the payload's.
 */
TEST_F(link, payloads_built_outside_the_link_arrive_exactly)
{
	TsrLinkFaults f = { .drop_ppm = 2000, .corrupt_ppm = 2000, .seed = 5 };

	self->a.stage = tsr_link_buf_new();
	self->b.stage = tsr_link_buf_new();
	ASSERT_NE(NULL, self->a.stage);
	ASSERT_NE(NULL, self->b.stage);
	ASSERT_TRUE(train(self));
	inject(&self->a, &f);
	inject(&self->b, &f);
	ASSERT_TRUE(exchange(self, 3000, 2000000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_LT(0, counters(&self->b).crc_errors);
	EXPECT_LT(0, counters(&self->a).replays);
}

/*
 * Fill @b with @len bytes of 0x5c after room for an 8-byte head; sealed
 * without a CRC, which a wire that needs one takes when it sends it.
 */
static int build(TsrLinkBuf *b, size_t len)
{
	memset(tsr_link_buf_data(b) + 8, 0x5c, len - 8);
	return tsr_link_buf_seal(b, 8, len, false);
}

/*
 * Wrong sizes, an unsealed buffer, no such channel, no room: refused,
 * and the buffer stays the caller's.  What was taken arrives, head and
 * all, once the receiver takes it.
 */
TEST_F(link, a_built_payload_is_refused_when_it_cannot_be_sent)
{
	uint8_t head[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	TsrLinkBuf *b = tsr_link_buf_new(), *kept;
	unsigned int queued = 0, i;
	size_t len = TSR_ICI_MAX_PAYLOAD;
	const uint8_t *p;

	ASSERT_NE(NULL, b);
	self->b.refuse = true;
	ASSERT_TRUE(train(self));
	EXPECT_EQ(-1, tsr_link_buf_seal(b, 0, 0, true));
	EXPECT_EQ(-1, tsr_link_buf_seal(b, 0, TSR_ICI_MAX_PAYLOAD + 1, true));
	EXPECT_EQ(-1, tsr_link_buf_seal(b, 9, 8, true));
	EXPECT_EQ(-1, tsr_link_send_buf(self->a.link, 0, &b, head, self->now));
	ASSERT_EQ(0, build(b, len));
	EXPECT_EQ(-1, tsr_link_send_buf(self->a.link, TSR_ICI_VCS, &b, head,
					self->now));
	/* The peer takes nothing: its hold, the ring, then the queue fill. */
	for (;;) {
		kept = b;
		if (tsr_link_send_buf(self->a.link, 0, &b, head, self->now))
			break;
		ASSERT_NE(kept, b) TH_LOG("the queued buffer came back");
		ASSERT_EQ(0, build(b, len = 100));
		queued++;
		step(self);
	}
	EXPECT_EQ(kept, b);
	EXPECT_LT(self->ca.tx_slots, queued);

	self->b.refuse = false;
	tsr_link_rx_ready(self->b.link, self->now);
	for (i = 0; i < 100000 && (self->b.delivered < queued ||
				   tsr_link_pending(self->a.link)); i++)
		step(self);
	ASSERT_EQ(queued, self->b.delivered);
	ASSERT_EQ(TSR_ICI_MAX_PAYLOAD + (queued - 1) * 100, self->b.log_len[0]);
	for (p = self->b.log[0], i = 0; i < queued; i++) {
		len = i ? 100 : TSR_ICI_MAX_PAYLOAD;
		ASSERT_EQ(0, memcmp(p, head, sizeof(head))) TH_LOG("payload %u", i);
		ASSERT_EQ(len - 8, strspn((const char *)p + 8, "\x5c"))
			TH_LOG("payload %u", i);
		p += len;
	}
	tsr_link_buf_free(b);
}

/*
 * How long a silent peer is given: retry_limit + 1 retransmit intervals
 * in a row, with their backoff (tessera-link.c, rto()).
 */
static uint64_t dead_ns(const TsrLinkConfig *c)
{
	uint64_t total = 0;
	unsigned int i;

	for (i = 0; i <= c->retry_limit; i++)
		total += c->retransmit_ns <<
			 (i < TSR_LINK_BACKOFF_MAX ? i : TSR_LINK_BACKOFF_MAX);
	return total;
}

/* Step until a's link is down or @limit_ns pass; how long it took. */
static uint64_t until_a_down(FIXTURE_DATA(link) *self, uint64_t limit_ns)
{
	uint64_t t0 = self->now;

	while (tsr_link_state(self->a.link) == TSR_ICI_STATE_UP &&
	       self->now - t0 < limit_ns)
		step(self);
	return self->now - t0;
}

/*
 * The peer stops (SIGSTOP of its QEMU) while a sends more than the wire
 * holds: the wire stays backed up, nothing is acknowledged, and the link
 * must still go down within the time a silent peer is given, not wait
 * for room forever.
 */
TEST_F(link, a_peer_that_stops_reading_takes_the_link_down)
{
	uint64_t took;

	ASSERT_TRUE(train(self));
	self->b.stopped = true;
	/* 4 MiB towards a wire of 256 KiB. */
	EXPECT_FALSE(exchange(self, 200, 50));
	ASSERT_NE(0, self->a.wire_len);
	took = until_a_down(self, 10 * dead_ns(&self->ca));
	EXPECT_EQ(TSR_ICI_STATE_DOWN, tsr_link_state(self->a.link));
	EXPECT_GE(dead_ns(&self->ca) + 2 * RTO_NS, took);
	EXPECT_EQ(self->ca.retry_limit + 1, counters(&self->a).timeouts);
	EXPECT_EQ(1, counters(&self->a).link_downs);
}

/*
 * A peer that holds its frames (its user is slow) answers the credit
 * probes and keeps the link up however long it takes; one that stops
 * answering them takes it down.
 */
TEST_F(link, a_stalled_sender_gives_up_on_a_peer_that_stops_answering)
{
	int i;

	ASSERT_TRUE(train(self));
	self->b.refuse = true;
	EXPECT_FALSE(exchange(self, 200, 3000));
	ASSERT_LE(1, counters(&self->a).credit_stalls);
	/* Ten times as long as a silent peer is given: still up. */
	for (i = 0; i < 10; i++)
		EXPECT_LE(dead_ns(&self->ca), until_a_down(self, dead_ns(&self->ca)));
	EXPECT_EQ(TSR_ICI_STATE_UP, tsr_link_state(self->a.link));
	EXPECT_EQ(0, counters(&self->a).link_downs);
	self->b.stopped = true;
	EXPECT_GE(dead_ns(&self->ca) + 2 * RTO_NS,
		  until_a_down(self, 10 * dead_ns(&self->ca)));
	EXPECT_EQ(TSR_ICI_STATE_DOWN, tsr_link_state(self->a.link));
}

/*
 * A link like the ICI's (5 ms, 7 retries) whose peer's answers come back
 * up to @JITTER_NS late, at random (its host busy): a sends @count
 * payloads to it.
 */
#define JITTER_NS	20000000ull

static bool to_a_slow_peer(FIXTURE_DATA(link) *self, unsigned int count)
{
	if (!self->b.jitter_ns) {
		self->ca.retransmit_ns = self->cb.retransmit_ns = 5000000;
		self->ca.retry_limit = self->cb.retry_limit = 7;
		self->step_ns = 50000;
		if (!train(self))
			return false;
		self->b.jitter_ns = JITTER_NS;
	}
	return transfer(self, count, 0, 1000000);
}

/*
 * Once the retransmit interval has adapted to the round trips measured,
 * a peer that is only slow to answer is not taken for a lossy one:
 * nothing times out, nothing is resent.
 */
TEST_F(link, a_slow_peer_is_not_taken_for_a_lossy_one)
{
	TsrLinkCounters warm, a;
	uint64_t duplicates;

	ASSERT_TRUE(to_a_slow_peer(self, 1000));
	warm = counters(&self->a);
	duplicates = counters(&self->b).seq_errors;
	ASSERT_TRUE(to_a_slow_peer(self, 3000));
	EXPECT_TRUE(streams_match(self));
	a = counters(&self->a);
	EXPECT_EQ(warm.timeouts, a.timeouts);
	EXPECT_EQ(warm.replays, a.replays);
	EXPECT_EQ(duplicates, counters(&self->b).seq_errors);
}

/*
 * However long the measured round trips have made the retransmit
 * interval, a peer that stops is given no longer than a silent peer is
 * (it is given up on fewer timeouts in): from its last answer, which
 * arrives up to JITTER_NS after it stopped.
 */
TEST_F(link, a_slow_peer_that_stops_takes_the_link_down_as_soon)
{
	uint64_t took, before;

	ASSERT_TRUE(to_a_slow_peer(self, 1000));
	before = counters(&self->a).timeouts;
	self->b.stopped = true;
	EXPECT_FALSE(transfer(self, 100, 0, 10));
	took = until_a_down(self, 10 * dead_ns(&self->ca));
	EXPECT_EQ(TSR_ICI_STATE_DOWN, tsr_link_state(self->a.link));
	EXPECT_GE(dead_ns(&self->ca) + JITTER_NS + self->step_ns, took);
	EXPECT_GT(self->ca.retry_limit + 1,
		  counters(&self->a).timeouts - before);
	EXPECT_EQ(1, counters(&self->a).link_downs);
}

/*
 * A link like the ICI's whose peer runs for a millisecond, then does not
 * run for 2 to 20 ms, again and again (its QEMU starved on a busy host),
 * and answers at once while it runs: a sends @count small payloads to it.
 */
static bool to_a_stalling_peer(FIXTURE_DATA(link) *self, unsigned int count)
{
	if (!self->b.stall_max_ns) {
		self->ca.retransmit_ns = self->cb.retransmit_ns = 5000000;
		self->ca.retry_limit = self->cb.retry_limit = 7;
		self->step_ns = 50000;
		self->a.small = true;
		if (!train(self))
			return false;
		self->b.run_ns = 1000000;
		self->b.stall_min_ns = 2000000;
		self->b.stall_max_ns = 20000000;
	}
	return transfer(self, count, 0, 1000000);
}

/*
 * Between the stalls the round trip is a step or two, and its variation
 * soon forgets a stall: the retransmit interval must not, or the next
 * stall fires it.  Once it has seen the stalls, nothing times out and
 * nothing is resent.
 */
TEST_F(link, a_peer_that_stalls_again_and_again_is_not_taken_for_a_lossy_one)
{
	TsrLinkCounters warm, a;
	uint64_t duplicates;
	unsigned int stalls;

	ASSERT_TRUE(to_a_stalling_peer(self, 20000));
	warm = counters(&self->a);
	duplicates = counters(&self->b).seq_errors;
	stalls = self->b.stalls;
	ASSERT_TRUE(to_a_stalling_peer(self, 20000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_LT(30, self->b.stalls - stalls);
	a = counters(&self->a);
	EXPECT_EQ(warm.timeouts, a.timeouts);
	EXPECT_EQ(warm.replays, a.replays);
	EXPECT_EQ(duplicates, counters(&self->b).seq_errors);
	EXPECT_EQ(0, a.link_downs);
}

/*
 * However long the stalls made the retransmit interval, a peer that then
 * stops for good is given up on within the time a silent peer is given,
 * from its last answer.
 */
TEST_F(link, a_peer_that_stalled_and_then_stops_is_given_up_on_as_soon)
{
	uint64_t t0, before;
	int i;

	ASSERT_TRUE(to_a_stalling_peer(self, 20000));
	self->b.stall_max_ns = 0;
	self->b.stopped = false;
	for (i = 0; i < 20; i++)
		step(self);
	before = counters(&self->a).timeouts;
	t0 = self->now;
	self->b.stopped = true;
	EXPECT_FALSE(transfer(self, 100, 0, 10));
	until_a_down(self, 10 * dead_ns(&self->ca));
	EXPECT_EQ(TSR_ICI_STATE_DOWN, tsr_link_state(self->a.link));
	EXPECT_GE(dead_ns(&self->ca) + self->step_ns, self->now - t0);
	/* The stalls stretched the interval: fewer timeouts fit. */
	EXPECT_GT(self->ca.retry_limit + 1,
		  counters(&self->a).timeouts - before);
	EXPECT_EQ(1, counters(&self->a).link_downs);
}

/*
 * Payloads queued for a peer that then restarts (it trains FRESH) were
 * meant for the peer that is gone: none reaches the new one.
 */
TEST_F(link, a_restarted_peer_gets_nothing_queued_for_its_old_self)
{
	uint8_t buf[64] = { 7 };
	int i;

	ASSERT_TRUE(train(self));
	self->b.stopped = true;
	for (i = 0; i < 8; i++)
		ASSERT_EQ(0, tsr_link_send(self->a.link, i % 2, buf, sizeof(buf),
					   self->now));
	ASSERT_LT(0, tsr_link_pending(self->a.link));
	tsr_link_disconnected(self->a.link);
	EXPECT_EQ(-1, tsr_link_send(self->a.link, 0, buf, sizeof(buf), self->now));
	/* A new peer process, with no memory of the old one. */
	tsr_link_free(self->b.link);
	self->b.link = tsr_link_new(&self->cb, self->ops, &self->b);
	tsr_link_set_intact(self->b.link, self->intact);
	self->b.stopped = false;
	self->a.wire_len = self->b.wire_len = 0;
	tsr_link_connected(self->a.link, self->now);
	tsr_link_connected(self->b.link, self->now);
	for (i = 0; i < 1000 && !both_up(self); i++)
		step(self);
	ASSERT_TRUE(both_up(self));
	for (i = 0; i < 1000; i++)
		step(self);
	EXPECT_EQ(0, self->b.delivered);
	EXPECT_EQ(0, tsr_link_pending(self->a.link));
	/* And the link carries what is sent now. */
	ASSERT_TRUE(exchange(self, 50, 100000));
	EXPECT_EQ(50, self->b.delivered);
}

TEST_F(link, nothing_is_queued_on_a_link_that_is_not_up)
{
	uint8_t buf[64] = { 1 };
	TsrLinkBuf *b = tsr_link_buf_new();
	int i;

	start(self);
	EXPECT_EQ(-1, tsr_link_send(self->a.link, 0, buf, sizeof(buf), self->now));
	EXPECT_FALSE(tsr_link_can_send(self->a.link, 0));
	ASSERT_EQ(0, tsr_link_buf_seal(b, 0, sizeof(buf), true));
	EXPECT_EQ(-1, tsr_link_send_buf(self->a.link, 0, &b, NULL, self->now));
	for (i = 0; i < 1000 && !both_up(self); i++)
		step(self);
	ASSERT_TRUE(both_up(self));
	EXPECT_EQ(0, tsr_link_send_buf(self->a.link, 0, &b, NULL, self->now));
	tsr_link_down(self->a.link);
	EXPECT_EQ(-1, tsr_link_send(self->a.link, 0, buf, sizeof(buf), self->now));
	tsr_link_buf_free(b);
}

/*
 * On a host so busy that neither end runs for longer than a silent peer
 * is given (both processes starved, or stopped and continued), neither
 * takes the other for dead once it runs again: a silence it could not
 * hear is not counted against its peer, whose frames wait unread, and
 * nothing is resent for it.  One that runs again while its peer is
 * still starved gives it as long as it would give a silent peer.
 */
TEST_F(link, an_end_that_did_not_run_does_not_give_up_on_its_peer_for_it)
{
	TsrLinkCounters a, b;
	uint64_t t0;
	int i;

	self->ca.keepalive_ns = self->cb.keepalive_ns = 20 * RTO_NS;
	ASSERT_TRUE(train(self));
	ASSERT_TRUE(exchange(self, 20, 100000));
	a = counters(&self->a);
	b = counters(&self->b);
	/* Both starved, a's frames on their way to b. */
	self->b.stopped = true;
	EXPECT_FALSE(transfer(self, 4, 0, 2));
	ASSERT_LT(0, self->a.wire_len);
	self->a.stopped = true;
	self->now += 3 * dead_ns(&self->ca);
	self->a.stopped = self->b.stopped = false;
	ASSERT_TRUE(transfer(self, 0, 0, 100000));
	for (i = 0; i < 100; i++)
		step(self);
	/* Again, and b runs again only half a silent peer's time after a. */
	self->a.stopped = self->b.stopped = true;
	self->now += 3 * dead_ns(&self->ca);
	self->a.stopped = false;
	for (t0 = self->now; self->now - t0 < dead_ns(&self->ca) / 2; )
		step(self);
	self->b.stopped = false;
	for (i = 0; i < 10000; i++)
		step(self);
	ASSERT_TRUE(exchange(self, 20, 100000));
	EXPECT_TRUE(both_up(self));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(a.link_downs, counters(&self->a).link_downs);
	EXPECT_EQ(b.link_downs, counters(&self->b).link_downs);
	EXPECT_EQ(a.replays, counters(&self->a).replays);
	EXPECT_EQ(b.replays, counters(&self->b).replays);
}

/*
 * On a host where every poll of both ends comes late, the timers still
 * run, on the ends' own time: a link whose first TRAINs were lost trains,
 * and a peer that stops is still given up on.
 */
TEST_F(link, ends_whose_every_poll_is_late_still_train_and_give_up)
{
	uint64_t took;
	int i;

	self->ca.keepalive_ns = self->cb.keepalive_ns = 20 * RTO_NS;
	self->step_ns = 3 * RTO_NS;
	self->a.blackhole = self->b.blackhole = true;
	start(self);
	self->a.blackhole = self->b.blackhole = false;
	for (i = 0; i < 1000 && !both_up(self); i++)
		step(self);
	ASSERT_TRUE(both_up(self));
	ASSERT_TRUE(exchange(self, 20, 100000));
	EXPECT_TRUE(streams_match(self));
	self->b.stopped = true;
	took = until_a_down(self, 10 * dead_ns(&self->ca));
	EXPECT_EQ(TSR_ICI_STATE_DOWN, tsr_link_state(self->a.link));
	EXPECT_GE(3 * dead_ns(&self->ca), took);
}

/*
 * A link with nothing to send still notices a peer that stops: with a
 * keepalive it probes a quiet peer and goes down when none of its probes
 * is answered within the time a silent peer is given; a live peer answers
 * and keeps it up however long it stays idle.  Without one, an idle link
 * to a stopped peer stays up.
 */
TEST_F(link, a_keepalive_takes_an_idle_link_to_a_stopped_peer_down)
{
	uint64_t took;

	self->ca.keepalive_ns = self->cb.keepalive_ns = 20 * RTO_NS;
	ASSERT_TRUE(train(self));
	EXPECT_LE(10 * dead_ns(&self->ca), until_a_down(self, 10 * dead_ns(&self->ca)));
	EXPECT_EQ(TSR_ICI_STATE_UP, tsr_link_state(self->a.link));
	EXPECT_EQ(0, counters(&self->a).timeouts);
	EXPECT_LT(5, counters(&self->a).frames_tx);
	self->b.stopped = true;
	took = until_a_down(self, 10 * dead_ns(&self->ca));
	EXPECT_EQ(TSR_ICI_STATE_DOWN, tsr_link_state(self->a.link));
	EXPECT_GE(dead_ns(&self->ca) + self->ca.keepalive_ns, took);
	EXPECT_EQ(1, counters(&self->a).link_downs);
}

/*
 * A poll whose time was read before the peer was last heard (another
 * thread took the lock between the two and read a frame) finds the peer
 * heard no time ago, not silent for ever: the link stays up, no timeout.
 */
TEST_F(link, a_poll_timed_before_the_peer_was_last_heard_keeps_the_link)
{
	uint64_t due, heard;

	self->ca.keepalive_ns = self->cb.keepalive_ns = 20 * RTO_NS;
	ASSERT_TRUE(train(self));
	EXPECT_LE(3 * self->ca.keepalive_ns,
		  until_a_down(self, 3 * self->ca.keepalive_ns));
	ASSERT_EQ(TSR_ICI_STATE_UP, tsr_link_state(self->a.link));
	/* A's keepalive comes due and is not run; B's probes reach A after. */
	due = tsr_link_deadline(self->a.link);
	heard = counters(&self->a).frames_rx;
	while (self->now < due + 2 * self->cb.keepalive_ns) {
		carry(self, &self->a);
		carry(self, &self->b);
		self->now += self->step_ns;
		if (self->now >= tsr_link_deadline(self->b.link))
			tsr_link_poll(self->b.link, self->now);
	}
	ASSERT_LT(heard, counters(&self->a).frames_rx);
	/* Then the poll whose time was read at the due time. */
	tsr_link_poll(self->a.link, due);
	EXPECT_EQ(TSR_ICI_STATE_UP, tsr_link_state(self->a.link));
	EXPECT_EQ(0, counters(&self->a).timeouts);
	EXPECT_EQ(0, counters(&self->a).link_downs);
}

TEST_F(link, without_a_keepalive_an_idle_link_to_a_stopped_peer_stays_up)
{
	ASSERT_TRUE(train(self));
	self->b.stopped = true;
	EXPECT_LE(10 * dead_ns(&self->ca), until_a_down(self, 10 * dead_ns(&self->ca)));
	EXPECT_EQ(TSR_ICI_STATE_UP, tsr_link_state(self->a.link));
}

/*
 * An end that gave up on its peer follows the peer's training; one taken
 * down on purpose stays down until retrained itself.  So a link taken
 * down at one end, and given up on by the other's keepalive, comes back
 * when the end taken down retrains, and not when the other one does.
 */
TEST_F(link, a_link_down_at_both_ends_comes_back_when_one_retrains)
{
	int i;

	self->ca.keepalive_ns = self->cb.keepalive_ns = 20 * RTO_NS;
	ASSERT_TRUE(train(self));
	tsr_link_down(self->a.link);
	for (i = 0; i < 100000 &&
	     tsr_link_state(self->b.link) == TSR_ICI_STATE_UP; i++)
		step(self);
	ASSERT_EQ(TSR_ICI_STATE_DOWN, tsr_link_state(self->b.link));
	tsr_link_retrain(self->b.link, self->now);
	for (i = 0; i < 2000; i++)
		step(self);
	EXPECT_EQ(TSR_ICI_STATE_DOWN, tsr_link_state(self->a.link));
	tsr_link_retrain(self->a.link, self->now);
	for (i = 0; i < 10000 && !both_up(self); i++)
		step(self);
	ASSERT_TRUE(both_up(self));
	ASSERT_TRUE(exchange(self, 20, 100000));
	EXPECT_TRUE(streams_match(self));
}

/*
 * A neighbour stopped (SIGSTOP), gave up on the link meanwhile, and is
 * retrained FRESH while this end, which never went down, still has
 * frames in flight (kept by a lending wire, and on it) and queued: they
 * belonged to the old streams, so none reaches the peer after, and this
 * end starts a new epoch without going down, so that a remote write
 * that began before gives up rather than go on in the new streams (the
 * stopped call's writes must not land in the next program's windows).
 * A connection lost and back resumes, in the same epoch.
 */
TEST_F(link, a_fresh_start_by_the_peer_drops_what_waited_and_is_a_new_epoch)
{
	uint8_t buf[256];
	uint64_t epoch;
	int i;

	self->ca.keepalive_ns = self->cb.keepalive_ns = 20 * RTO_NS;
	ASSERT_TRUE(train(self));
	ASSERT_TRUE(exchange(self, 10, 100000));
	epoch = tsr_link_epoch(self->a.link);
	self->b.stopped = true;
	memset(buf, 0xee, sizeof(buf));
	for (i = 0; i < 40; i++)
		ASSERT_EQ(0, tsr_link_send(self->a.link, i % 2, buf,
					   sizeof(buf), self->now));
	for (i = 0; i < 20; i++)
		step(self);
	ASSERT_LT(0, self->a.wire_len);
	ASSERT_LT(0, tsr_link_pending(self->a.link));
	tsr_link_down(self->b.link);
	self->b.stopped = false;
	tsr_link_retrain(self->b.link, self->now);
	for (i = 0; i < 10000 && !both_up(self); i++)
		step(self);
	ASSERT_TRUE(both_up(self));
	EXPECT_EQ(0, counters(&self->a).link_downs);
	EXPECT_EQ(epoch + 1, tsr_link_epoch(self->a.link));
	EXPECT_EQ(0, tsr_link_pending(self->a.link));
	EXPECT_EQ(self->a.keep_end, self->a.keep);
	ASSERT_TRUE(exchange(self, 10, 100000));
	EXPECT_TRUE(streams_match(self));
	/* Lost and back: the streams resume. */
	epoch = tsr_link_epoch(self->a.link);
	self->b.stopped = true;
	EXPECT_FALSE(transfer(self, 8, 0, 10));
	self->a.wire_len = self->b.wire_len = 0;
	tsr_link_reclaim(self->a.link);
	tsr_link_disconnected(self->a.link);
	tsr_link_disconnected(self->b.link);
	self->b.stopped = false;
	tsr_link_connected(self->a.link, self->now);
	tsr_link_connected(self->b.link, self->now);
	ASSERT_TRUE(transfer(self, 0, 0, 100000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(epoch, tsr_link_epoch(self->a.link));
}

/*
 * On a wire that lends its memory, payloads are built in it and resent
 * from what it keeps: a wire that loses and repeats frames still hands
 * over exactly what was sent, and once all is acknowledged nothing is
 * kept.  (A release too early would resend bytes written over.)
 */
TEST_F(link, payloads_built_in_a_lending_wire_are_replayed_from_it_whole)
{
	if (!variant->lend)
		SKIP(return, "the wire lends no memory");
	int i;

	ASSERT_TRUE(train(self));
	self->a.drop_ppm = self->b.drop_ppm = 20000;
	self->a.dup_ppm = self->b.swap_ppm = 20000;
	/* In batches that fit the credit: none waits in a queue. */
	for (i = 0; i < 200; i++)
		ASSERT_TRUE(exchange(self, 8, 100000));
	EXPECT_TRUE(streams_match(self));
	EXPECT_EQ(1600, self->a.lent);
	EXPECT_EQ(1600, self->b.lent);
	EXPECT_LT(10, counters(&self->a).replays);
	EXPECT_LT(10, counters(&self->b).replays);
	EXPECT_EQ(self->a.keep_end, self->a.keep);
	EXPECT_EQ(self->b.keep_end, self->b.keep);
}

/*
 * A wire that goes (a ring dropped with its connection) takes its memory
 * with it: the frames it kept are reclaimed first, and arrive whole once
 * the link is back.
 */
TEST_F(link, frames_kept_by_a_wire_that_goes_are_reclaimed_and_arrive_whole)
{
	if (!variant->lend)
		SKIP(return, "the wire lends no memory");
	ASSERT_TRUE(train(self));
	self->b.stopped = true;
	EXPECT_FALSE(transfer(self, 8, 0, 10));
	ASSERT_EQ(8, self->a.lent);
	tsr_link_reclaim(self->a.link);
	EXPECT_EQ(self->a.keep_end, self->a.keep);
	memset(self->a.kept, RELEASED, KEPT_CAP + WIRE_CAP);
	self->a.wire_len = self->b.wire_len = 0;
	tsr_link_disconnected(self->a.link);
	tsr_link_disconnected(self->b.link);
	self->b.stopped = false;
	tsr_link_connected(self->a.link, self->now);
	tsr_link_connected(self->b.link, self->now);
	ASSERT_TRUE(transfer(self, 0, 0, 100000));
	EXPECT_EQ(8, self->b.delivered);
	EXPECT_TRUE(streams_match(self));
}

/*
 * A count fault takes the next frame the link sends, and right after the
 * link came up that is the payload sent next (an acknowledgement owed
 * rides on it), on every wire: a dropped one shows as a gap at the peer
 * and a replay, never as an acknowledgement lost.
 */
TEST_F(link, a_count_fault_right_after_training_takes_the_next_payload)
{
	TsrLinkFaults f = { .drop_next = 1 };
	uint8_t buf[64] = { 3 };
	int i;

	ASSERT_TRUE(train(self));
	inject(&self->a, &f);
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, tsr_link_send(self->a.link, 0, buf, sizeof(buf),
					   self->now));
	for (i = 0; i < 100000 && tsr_link_pending(self->a.link); i++)
		step(self);
	EXPECT_EQ(3, self->b.delivered);
	EXPECT_LT(0, tsr_link_fault_bytes(self->a.link));
	EXPECT_LT(0, counters(&self->b).seq_errors);
	EXPECT_LT(0, counters(&self->a).replays);
	EXPECT_EQ(0, counters(&self->b).timeouts);
}

TEST_HARNESS_MAIN
