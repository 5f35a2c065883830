// SPDX-License-Identifier: GPL-2.0
/*
 * The ICI link layer across a lost and re-established connection (a TCP
 * port whose connection drops, design decision 9): the byte stream is cut
 * at every byte of a stretch of frames, so at every point of a frame
 * (inside a header, inside a payload or its CRC, between two frames), what
 * was in flight both ways is lost, both ends see the connection go and
 * come back, and the link resumes: each end delivers exactly the payloads
 * the other sent, in order, none lost and none twice.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "tessera-link.h"

#define WIRE_CAP	(1024 * 1024)
#define LOG_CAP		(256 * 1024)
#define PAYLOADS	48		/* each way, per run */
#define MAX_LEN		300		/* bytes per payload, at most */
#define STEP_NS		1000ull
/* Steps a run may take: enough for every resend after a cut. */
#define MAX_STEPS	200000
/* Between losing the connection and getting it back. */
#define AWAY_STEPS	50

struct end {
	TsrLink *link;
	/* Bytes written by this end, not yet read by the peer. */
	uint8_t *wire;
	size_t wire_len;
	/* Bytes of this end's stream the peer has read, in all. */
	size_t carried;
	/* The stream the peer read since the link was up, to tell frames. */
	uint8_t *tap;
	size_t tap_len;
	/* What was sent and what arrived, per virtual channel. */
	uint8_t *sent[TSR_ICI_VCS], *log[TSR_ICI_VCS];
	size_t sent_len[TSR_ICI_VCS], log_len[TSR_ICI_VCS];
	unsigned int next;	/* payloads queued so far */
	unsigned int delivered;
	unsigned int seed;
};

static size_t end_write(void *opaque, const void *buf, size_t len)
{
	struct end *e = opaque;
	size_t room = WIRE_CAP - e->wire_len;

	len = len < room ? len : room;
	memcpy(e->wire + e->wire_len, buf, len);
	e->wire_len += len;
	return len;
}

static bool end_deliver(void *opaque, unsigned int vc, const void *payload,
			size_t len)
{
	struct end *e = opaque;

	if (e->log_len[vc] + len > LOG_CAP)
		return false;
	memcpy(e->log[vc] + e->log_len[vc], payload, len);
	e->log_len[vc] += len;
	e->delivered++;
	return true;
}

static void end_state(void *opaque, uint32_t state)
{
}

static const TsrLinkOps end_ops = {
	.wire_write = end_write,
	.deliver = end_deliver,
	.state_changed = end_state,
};

FIXTURE(reconnect) {
	struct end a, b;
	uint64_t now;
};

static void config(TsrLinkConfig *c, uint8_t x, uint8_t port, uint8_t px,
		   uint8_t pport)
{
	*c = (TsrLinkConfig){
		.self = { .slice_id = 9, .coords = { x, 0, 0 }, .port = port },
		.peer = { .slice_id = 9, .coords = { px, 0, 0 }, .port = pport },
		.window = 16, .rx_slots = 8, .tx_slots = 8,
		.retransmit_ns = 100 * STEP_NS, .retry_limit = 8,
	};
}

static void end_init(struct end *e, unsigned int seed)
{
	unsigned int vc;

	memset(e, 0, sizeof(*e));
	e->seed = seed;
	e->wire = malloc(WIRE_CAP);
	e->tap = malloc(WIRE_CAP);
	for (vc = 0; vc < TSR_ICI_VCS; vc++) {
		e->sent[vc] = malloc(LOG_CAP);
		e->log[vc] = malloc(LOG_CAP);
	}
}

static void end_fini(struct end *e)
{
	unsigned int vc;

	tsr_link_free(e->link);
	free(e->wire);
	free(e->tap);
	for (vc = 0; vc < TSR_ICI_VCS; vc++) {
		free(e->sent[vc]);
		free(e->log[vc]);
	}
}

FIXTURE_SETUP(reconnect)
{
	end_init(&self->a, 1);
	end_init(&self->b, 2);
}

FIXTURE_TEARDOWN(reconnect)
{
	end_fini(&self->a);
	end_fini(&self->b);
}

/* A fresh pair of ends, chip x=0's +x port facing chip x=1's -x port. */
static void start(FIXTURE_DATA(reconnect) *self)
{
	TsrLinkConfig ca, cb;
	struct end *e[2] = { &self->a, &self->b };
	unsigned int i, vc;

	config(&ca, 0, TSR_ICI_PORT(0, 0), 1, TSR_ICI_PORT(0, 1));
	config(&cb, 1, TSR_ICI_PORT(0, 1), 0, TSR_ICI_PORT(0, 0));
	for (i = 0; i < 2; i++) {
		tsr_link_free(e[i]->link);
		e[i]->link = tsr_link_new(i ? &cb : &ca, &end_ops, e[i]);
		e[i]->wire_len = e[i]->carried = e[i]->tap_len = 0;
		e[i]->next = e[i]->delivered = 0;
		for (vc = 0; vc < TSR_ICI_VCS; vc++)
			e[i]->sent_len[vc] = e[i]->log_len[vc] = 0;
	}
	self->now = 0;
	tsr_link_connected(self->a.link, self->now);
	tsr_link_connected(self->b.link, self->now);
}

/* Payload @i of @e: its length, and its bytes at @buf. */
static size_t payload(const struct end *e, unsigned int i, uint8_t *buf)
{
	size_t len = 1 + (i * 97 + e->seed * 31) % MAX_LEN, k;

	for (k = 0; k < len; k++)
		buf[k] = (uint8_t)(e->seed * 131 + i * 7 + k);
	return len;
}

/* Queue what @e still has to send, as far as the link takes it. */
static void feed(struct end *e, uint64_t now)
{
	uint8_t buf[MAX_LEN];

	while (e->next < PAYLOADS) {
		unsigned int vc = e->next % TSR_ICI_VCS;
		size_t len = payload(e, e->next, buf);

		if (tsr_link_send(e->link, vc, buf, len, now))
			return;
		memcpy(e->sent[vc] + e->sent_len[vc], buf, len);
		e->sent_len[vc] += len;
		e->next++;
	}
}

/* Move at most @max bytes of what @from wrote to @to. */
static void carry(struct end *from, struct end *to, size_t max, uint64_t now)
{
	size_t n = from->wire_len < max ? from->wire_len : max;

	if (!n)
		return;
	from->carried += n;
	if (from->tap_len + n <= WIRE_CAP) {
		memcpy(from->tap + from->tap_len, from->wire, n);
		from->tap_len += n;
	}
	from->wire_len -= n;
	tsr_link_receive(to->link, from->wire, n, now);
	memmove(from->wire, from->wire + n, from->wire_len);
	tsr_link_flush(from->link, now);
}

/* One step: both ends send, read (a's stream up to @a_max bytes), time. */
static void step(FIXTURE_DATA(reconnect) *self, size_t a_max)
{
	struct end *e[2] = { &self->a, &self->b };
	unsigned int i;

	feed(&self->a, self->now);
	feed(&self->b, self->now);
	carry(&self->a, &self->b, a_max, self->now);
	carry(&self->b, &self->a, SIZE_MAX, self->now);
	self->now += STEP_NS;
	for (i = 0; i < 2; i++)
		if (self->now >= tsr_link_deadline(e[i]->link))
			tsr_link_poll(e[i]->link, self->now);
}

static bool both_up(FIXTURE_DATA(reconnect) *self)
{
	return tsr_link_state(self->a.link) == TSR_ICI_STATE_UP &&
	       tsr_link_state(self->b.link) == TSR_ICI_STATE_UP;
}

static bool done(FIXTURE_DATA(reconnect) *self)
{
	return self->a.delivered == PAYLOADS && self->b.delivered == PAYLOADS &&
	       !tsr_link_pending(self->a.link) &&
	       !tsr_link_pending(self->b.link);
}

/*
 * The connection is lost: what either end wrote and the other has not
 * read is gone with it; both ends are told, and later told it is back.
 */
static void drop_connection(FIXTURE_DATA(reconnect) *self)
{
	unsigned int i;

	self->a.wire_len = self->b.wire_len = 0;
	tsr_link_disconnected(self->a.link);
	tsr_link_disconnected(self->b.link);
	for (i = 0; i < AWAY_STEPS; i++)
		step(self, SIZE_MAX);
	tsr_link_connected(self->a.link, self->now);
	tsr_link_connected(self->b.link, self->now);
}

static bool streams_match(const struct end *from, const struct end *to)
{
	unsigned int vc;

	for (vc = 0; vc < TSR_ICI_VCS; vc++)
		if (from->sent_len[vc] != to->log_len[vc] ||
		    memcmp(from->sent[vc], to->log[vc], from->sent_len[vc]))
			return false;
	return true;
}

/*
 * Where a stream that begins with a frame at @wire, @at bytes of it read,
 * was cut: 0 between frames, 1 inside a header, 2 inside a payload or its
 * CRC.
 */
static int place_in_frame(const uint8_t *wire, size_t at)
{
	const struct tsr_ici_frame_hdr *h;
	size_t off = 0, len;

	while (at - off >= sizeof(*h)) {
		h = (const void *)(wire + off);
		len = sizeof(*h) + (h->len ? h->len + 4 : 0);
		if (at < off + len)
			return 2;
		off += len;
	}
	return at == off ? 0 : 1;
}

/*
 * Cut a's stream after every byte of its first frames once the link is up
 * and carrying payloads both ways: each run resumes and delivers both
 * streams whole, and the cuts fell on frame boundaries, inside headers
 * and inside payloads.
 */
TEST_F(reconnect, a_link_resumes_from_a_cut_at_every_byte_of_a_frame)
{
	unsigned int places[3] = { 0 };
	size_t base, cut, span = 3000;
	int i;

	for (cut = 0; cut < span; cut++) {
		start(self);
		for (i = 0; i < MAX_STEPS && !both_up(self); i++)
			step(self, SIZE_MAX);
		ASSERT_TRUE(both_up(self));
		base = self->a.carried;
		self->a.tap_len = 0;
		/* Up to the cut, then the connection goes. */
		for (i = 0; i < MAX_STEPS && self->a.carried < base + cut &&
		     !done(self); i++)
			step(self, base + cut - self->a.carried);
		ASSERT_EQ(base + cut, self->a.carried);
		places[place_in_frame(self->a.tap, cut)]++;
		drop_connection(self);
		for (i = 0; i < MAX_STEPS && !done(self); i++)
			step(self, SIZE_MAX);
		ASSERT_TRUE(done(self)) {
			TH_LOG("cut after byte %zu: a got %u, b got %u", cut,
			       self->a.delivered, self->b.delivered);
		}
		ASSERT_TRUE(both_up(self));
		ASSERT_TRUE(streams_match(&self->a, &self->b)) {
			TH_LOG("cut after byte %zu: b's stream differs", cut);
		}
		ASSERT_TRUE(streams_match(&self->b, &self->a)) {
			TH_LOG("cut after byte %zu: a's stream differs", cut);
		}
	}
	TH_LOG("span %zu: %u boundaries, %u in headers, %u in payloads", span,
	       places[0], places[1], places[2]);
	EXPECT_LT(1, places[0]);
	EXPECT_LT(100, places[1]);
	EXPECT_LT(100, places[2]);
}

/*
 * The connection lost twice, the second time while both ends resend what
 * the first loss took: still every payload once.
 */
TEST_F(reconnect, a_link_resumes_from_a_cut_while_it_resends)
{
	size_t base;
	int i;

	start(self);
	for (i = 0; i < MAX_STEPS && !both_up(self); i++)
		step(self, SIZE_MAX);
	ASSERT_TRUE(both_up(self));
	base = self->a.carried;
	for (i = 0; i < MAX_STEPS && self->a.carried < base + 700; i++)
		step(self, base + 700 - self->a.carried);
	drop_connection(self);
	/* Training again, then a little of the resend, then lost again. */
	for (i = 0; i < MAX_STEPS && !both_up(self); i++)
		step(self, SIZE_MAX);
	base = self->a.carried;
	for (i = 0; i < MAX_STEPS && self->a.carried < base + 333; i++)
		step(self, base + 333 - self->a.carried);
	drop_connection(self);
	for (i = 0; i < MAX_STEPS && !done(self); i++)
		step(self, SIZE_MAX);
	ASSERT_TRUE(done(self));
	EXPECT_TRUE(streams_match(&self->a, &self->b));
	EXPECT_TRUE(streams_match(&self->b, &self->a));
}

TEST_HARNESS_MAIN
