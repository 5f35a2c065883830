// SPDX-License-Identifier: GPL-2.0
/*
 * Chips linked by ICI on the host: several chip cores in one process,
 * their ports joined by in-memory wires that a pump thread carries, one
 * job at a time run on one chip while the others answer.  Remote writes
 * must land bit-exact through windows, across hops and through injected
 * faults; everything a window does not allow is refused and leaves the
 * target untouched.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "ici_slice.h"

#define HBM_VA		0x40000000ull

/* Whose lender a chip's ports call. */
struct lender_ctx {
	struct slice *s;
	unsigned int chip;
};

/* This test's part of a slice (struct slice's test). */
struct own {
	/*
	 * A liar: where chip[i] is NULL, a bare link layer speaks for chip i
	 * (slice_with_liar()), under liar_lock; what it is sent is logged.
	 */
	TsrLink *liar;
	pthread_mutex_t liar_lock;
	struct tsr_ici_msg heard[16];
	unsigned int nheard;
	struct lender_ctx lender[SLICE_MAX_CHIPS];
};

static struct own *own(struct slice *s)
{
	return s->test;
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

static void liar_receive(struct slice *s, const void *buf, size_t len)
{
	pthread_mutex_lock(&own(s)->liar_lock);
	tsr_link_receive(own(s)->liar, buf, len, mono_ns());
	pthread_mutex_unlock(&own(s)->liar_lock);
}

static void liar_poll(struct slice *s)
{
	uint64_t now = mono_ns();

	pthread_mutex_lock(&own(s)->liar_lock);
	if (tsr_link_deadline(own(s)->liar) <= now)
		tsr_link_poll(own(s)->liar, now);
	pthread_mutex_unlock(&own(s)->liar_lock);
}

static void liar_connected(struct slice *s)
{
	pthread_mutex_lock(&own(s)->liar_lock);
	tsr_link_connected(own(s)->liar, mono_ns());
	pthread_mutex_unlock(&own(s)->liar_lock);
}

static bool liar_up(struct slice *s)
{
	return tsr_link_state(own(s)->liar) == TSR_ICI_STATE_UP;
}

static const struct slice_stranger liar_stranger = {
	.receive = liar_receive,
	.poll = liar_poll,
	.up = liar_up,
};

static struct wire *lender_wire(void *opaque, unsigned int port)
{
	struct lender_ctx *l = opaque;

	return l->s->wires[l->chip][port];
}

/* Room in the ring, and on the wire for it: nothing is cut short. */
static uint8_t *lend_reserve(void *opaque, unsigned int port, size_t len)
{
	struct wire *w = lender_wire(opaque, port);
	size_t room;

	if (!w || !w->ring)
		return NULL;
	pthread_mutex_lock(&w->lock);
	room = WIRE_CAP - w->len;
	pthread_mutex_unlock(&w->lock);
	return room < len ? NULL : tsr_ring_reserve(w->ring, len);
}

static uint64_t lend_commit(void *opaque, unsigned int port, size_t len)
{
	struct wire *w = lender_wire(opaque, port);
	uint64_t pos = tsr_ring_commit(w->ring, len, true);

	slice_wire_relay(w);
	w->lent++;
	return pos;
}

/* Frames copied from where they are kept (sent again, or reclaimed). */
static unsigned int kept_reads;

static const uint8_t *lend_kept(void *opaque, unsigned int port,
				uint64_t pos, size_t len)
{
	__atomic_add_fetch(&kept_reads, 1, __ATOMIC_RELAXED);
	return tsr_ring_kept(lender_wire(opaque, port)->ring, pos, len);
}

static void lend_release(void *opaque, unsigned int port, uint64_t pos)
{
	tsr_ring_release(lender_wire(opaque, port)->ring, pos);
}

static void lend_hold(void *opaque, unsigned int port)
{
	tsr_ring_hold(lender_wire(opaque, port)->ring);
}

static void lend_unhold(void *opaque, unsigned int port)
{
	struct wire *w = lender_wire(opaque, port);

	tsr_ring_unhold(w->ring);
	slice_wire_relay(w);
}

static const TsrIciLender ring_lender = {
	.reserve = lend_reserve,
	.commit = lend_commit,
	.kept = lend_kept,
	.release = lend_release,
	.hold = lend_hold,
	.unhold = lend_unhold,
};

/* Rings under every wire of @s, lent to the chips' links. */
static void slice_lend_rings(struct slice *s)
{
	unsigned int i, p;

	for (i = 0; i < s->n; i++) {
		own(s)->lender[i] = (struct lender_ctx){ .s = s, .chip = i };
		tsr_ici_set_lender(slice_ici(s, i), &ring_lender,
				   &own(s)->lender[i]);
		for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
			struct wire *w = s->wires[i][p];
			const char *why;
			int fd;

			if (!w)
				continue;
			w->ring = tsr_ring_create(TSR_ICI_RING_MIN * 32, &fd);
			w->ring_rx = tsr_ring_open(dup(fd), TSR_ICI_RING_MIN * 32,
						   &why);
		}
	}
}

/* Frames built in rings, all wires of @s together. */
static unsigned int slice_lent(struct slice *s)
{
	unsigned int i, p, n = 0;

	for (i = 0; i < SLICE_MAX_CHIPS; i++)
		for (p = 0; p < TSR_ICI_MAX_PORTS; p++)
			if (s->wires[i][p])
				n += s->wires[i][p]->lent;
	return n;
}

/*
 * A line of @n chips along x (a ring if @wrap), its ports on @transport
 * (enum tsr_ici_transport: the wires lose and damage nothing, as a ring),
 * trained and pumping.
 */
static struct slice *slice_new_on(unsigned int n, bool wrap,
				  uint32_t transport)
{
	struct slice *s = slice_alloc(n);
	unsigned int i;

	s->test = calloc(1, sizeof(struct own));
	for (i = 0; i < n; i++) {
		TsrSlice sl = {
			.slice_id = 3,
			.topo = { .dims = { n, 1, 1 }, .wrap = { wrap } },
			.coords = { i, 0, 0 },
		};

		slice_add_chip(s, i, &sl, 8 << 20);
	}
	for (i = 0; i < n; i++) {
		unsigned int next = (i + 1) % n;

		if (next == 0 && !wrap)
			break;
		if (n == 2 && wrap && i == 1)
			slice_join(s, 1, TSR_ICI_PORT(0, 0), 0, TSR_ICI_PORT(0, 1));
		else
			slice_join(s, i, TSR_ICI_PORT(0, 0), next,
				   TSR_ICI_PORT(0, 1));
	}
	if (transport == TSR_ICI_TRANSPORT_RING)
		slice_lend_rings(s);
	slice_start(s, transport);
	return s;
}

static struct slice *slice_new(unsigned int n, bool wrap)
{
	return slice_new_on(n, wrap, TSR_ICI_TRANSPORT_SOCKET);
}

static size_t liar_write(void *opaque, const void *buf, size_t len)
{
	struct slice *s = opaque;

	return slice_wire_put(s->wires[1][TSR_ICI_PORT(0, 1)], buf, len);
}

static bool liar_deliver(void *opaque, unsigned int vc, const void *payload,
			 size_t len)
{
	struct slice *s = opaque;

	if (own(s)->nheard < 16)
		memcpy(&own(s)->heard[own(s)->nheard++], payload,
		       sizeof(struct tsr_ici_msg));
	return true;
}

static const TsrLinkOps liar_ops = {
	.wire_write = liar_write,
	.deliver = liar_deliver,
};

/*
 * A ring of three: chips 0 and 2 real, chip 1 a bare link layer on
 * chip 0's +x port that sends whatever a test makes it (chip 2's -x port
 * is not wired).  Chip 2's messages reach chip 0 on its -x port.
 */
static struct slice *slice_with_liar(void)
{
	TsrLinkConfig cfg = {
		.self = { .slice_id = 3, .coords = { 1, 0, 0 },
			  .port = TSR_ICI_PORT(0, 1) },
		.peer = { .slice_id = 3, .coords = { 0, 0, 0 },
			  .port = TSR_ICI_PORT(0, 0) },
		.window = 32, .rx_slots = 8, .tx_slots = 16,
		.retransmit_ns = 5000000, .retry_limit = 7,
	};
	struct slice *s = slice_alloc(3);
	unsigned int i;

	s->test = calloc(1, sizeof(struct own));
	s->stranger = &liar_stranger;
	for (i = 0; i < 3; i += 2) {
		TsrSlice sl = {
			.slice_id = 3,
			.topo = { .dims = { 3, 1, 1 }, .wrap = { true } },
			.coords = { i, 0, 0 },
		};

		slice_add_chip(s, i, &sl, 8 << 20);
	}
	slice_join(s, 0, TSR_ICI_PORT(0, 0), 1, TSR_ICI_PORT(0, 1));
	slice_join(s, 2, TSR_ICI_PORT(0, 0), 0, TSR_ICI_PORT(0, 1));
	pthread_mutex_init(&own(s)->liar_lock, NULL);
	own(s)->liar = tsr_link_new(&cfg, &liar_ops, s);
	slice_start(s, TSR_ICI_TRANSPORT_SOCKET);
	liar_connected(s);
	return s;
}

/* The liar sends @m, with @m->len bytes of @data, to chip 0. */
static int liar_send(struct slice *s, struct tsr_ici_msg m, const void *data)
{
	struct iovec iov[2] = {
		{ .iov_base = &m, .iov_len = sizeof(m) },
		{ .iov_base = (void *)data, .iov_len = m.len },
	};
	int ret;

	pthread_mutex_lock(&own(s)->liar_lock);
	ret = tsr_link_sendv(own(s)->liar, 0, iov, 2, mono_ns());
	pthread_mutex_unlock(&own(s)->liar_lock);
	return ret;
}

static void slice_free(struct slice *s)
{
	slice_stop(s);
	tsr_link_free(own(s)->liar);
	free(s->test);
	free(s);
}

static struct tsr_cmd_ici_write ici_write(const uint8_t dst[3], uint64_t src,
					  uint64_t offset, uint32_t rows,
					  uint32_t row_bytes)
{
	struct tsr_cmd_ici_write c = {
		.hdr = HDR(TSR_OP_ICI_WRITE, struct tsr_cmd_ici_write),
		.dst = { dst[0], dst[1], dst[2] }, .key = KEY, .src = src,
		.src_stride = row_bytes, .offset = offset,
		.dst_stride = row_bytes, .rows = rows, .row_bytes = row_bytes,
	};

	return c;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(i * 31 + seed * 7 + (i >> 9));
}

/*
 * A source in HBM goes to the link straight from HBM: bytes exact, the
 * reads counted as any HBM read is, and poisoned HBM still fails the
 * write with the address (the ICI DMA reads it, as any DMA does).
 */
TEST(a_write_from_hbm_is_exact_counted_and_poison_fails_it)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	const uint64_t va = 0x40000000, len = (3 << 20) + 5;
	uint8_t dst[3] = { 1, 0, 0 }, *win = host_ptr(b, s->win[1]);
	struct tsr_cmd_ici_write c;
	struct tsr_completion *comp;
	uint64_t *sem = (uint64_t *)(win + (6 << 20));
	uint64_t before;
	TsrFaults f;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	chip_map(a, 1, va, 0, 4 << 20,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	fill(a->hbm + 3, len, 4);
	before = rd(a, TSR_REG_CNT_HBM_READ_LO);
	c = ici_write(dst, va + 3, 100, 1, len);
	c.hdr.flags = TSR_ICI_WRITE_SEM;
	c.sem_offset = 6 << 20;
	c.sem_add = 1;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_EQ(0, memcmp(win + 100, a->hbm + 3, len));
	EXPECT_EQ(1, *sem);
	EXPECT_EQ(before + len, rd(a, TSR_REG_CNT_HBM_READ_LO));

	tsr_core_get_faults(a->core, &f);
	f.poison_addr = (2 << 20) + 0x80;
	f.poison_size = 16;
	tsr_core_set_faults(a->core, &f);
	memset(win, 0, 4 << 20);
	comp = chip_run(a, &c, sizeof(c));
	EXPECT_EQ(TSR_ERR_ECC, comp->error);
	EXPECT_EQ(va + (2 << 20) + 0x80, comp->fault_va);
	EXPECT_EQ(1, *sem);
	slice_free(s);
}

TEST(links_train_and_registers_tell_the_slice)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *c0 = s->chip[0];

	ASSERT_TRUE(slice_wait_up(s));
	EXPECT_EQ(3, rd(c0, TSR_REG_ICI_SLICE_ID));
	EXPECT_EQ(0x010102, rd(c0, TSR_REG_ICI_DIMS));
	EXPECT_EQ(1 << TSR_ICI_PORT(0, 0), rd(c0, TSR_REG_ICI_PORTS_WIRED));
	EXPECT_EQ(TSR_ICI_STATE_UP, rd(c0, TSR_ICI_PORT_BASE(0) + TSR_IREG_STATE));
	/* The peer: chip (1, 0, 0), port 1. */
	EXPECT_EQ(0x01000001, rd(c0, TSR_ICI_PORT_BASE(0) + TSR_IREG_PEER));
	EXPECT_EQ(TSR_ICI_STATE_DISCONNECTED,
		  rd(c0, TSR_ICI_PORT_BASE(1) + TSR_IREG_STATE));
	EXPECT_TRUE(rd(c0, TSR_REG_CAPS) & TSR_CAP_ICI);
	slice_free(s);
}

TEST(a_strided_write_and_its_semaphore_land_exactly)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c;
	uint8_t *src = host_ptr(a, s->src[0]), *win = host_ptr(b, s->win[1]);
	uint64_t *sem = (uint64_t *)(win + (6 << 20));
	unsigned int r;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	fill(src, 4 << 20, 1);
	*sem = 40;
	/* 100 rows of 10000 bytes, 12000 apart at the source, 11000 there. */
	c = ici_write(dst, s->src[0], 4096, 100, 10000);
	c.src_stride = 12000;
	c.dst_stride = 11000;
	c.hdr.flags = TSR_ICI_WRITE_SEM;
	c.sem_offset = 6 << 20;
	c.sem_add = 2;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	for (r = 0; r < 100; r++)
		ASSERT_EQ(0, memcmp(win + 4096 + r * 11000, src + r * 12000, 10000))
			TH_LOG("row %u", r);
	/* Untouched between rows and before the window offset. */
	EXPECT_EQ(0, win[4095]);
	EXPECT_EQ(0, win[4096 + 10000]);
	EXPECT_EQ(42, *sem);
	EXPECT_EQ(0, rd(b, TSR_REG_ICI_VIOLATIONS));
	slice_free(s);
}

struct crossing {
	struct test_chip *chip;
	struct tsr_cmd_ici_write cmd;
	uint32_t error;
};

static void *run_crossing(void *arg)
{
	struct crossing *x = arg;

	x->error = chip_run(x->chip, &x->cmd, sizeof(x->cmd))->error;
	return NULL;
}

/*
 * Both directions of a link loaded at once.  A chip that held a message
 * for it until the answer had room could deadlock here, when both chips'
 * outgoing queues fill at once (more likely between VMs, whose sockets are
 * slower than these wires): each waits for the other to drain, until the
 * answer timeout fails both writes.
 */
TEST(two_chips_writing_to_each_other_at_once_both_finish)
{
	struct slice *s = slice_new(2, false);
	struct crossing x[2];
	pthread_t t[2];
	unsigned int i;

	ASSERT_TRUE(slice_wait_up(s));
	for (i = 0; i < 2; i++) {
		uint8_t dst[3] = { !i, 0, 0 };

		slice_open_window(s, i, 8 << 20,
			    TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
		fill(host_ptr(s->chip[i], s->src[i]), 8 << 20, 10 + i);
		x[i].chip = s->chip[i];
		x[i].cmd = ici_write(dst, s->src[i], 0, 1, 8 << 20);
	}
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, run_crossing, &x[i]);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(TSR_ERR_NONE, x[i].error) TH_LOG("chip %u", i);
		EXPECT_EQ(0, memcmp(host_ptr(s->chip[!i], s->win[!i]),
				    host_ptr(s->chip[i], s->src[i]), 8 << 20));
	}
	slice_free(s);
}

TEST(writes_cross_chips_that_only_forward)
{
	struct slice *s = slice_new(4, false);
	struct test_chip *a = s->chip[0], *d = s->chip[3];
	uint8_t dst[3] = { 3, 0, 0 };
	struct tsr_cmd_ici_write c;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 3, 4 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	fill(host_ptr(a, s->src[0]), 1 << 20, 2);
	c = ici_write(dst, s->src[0], 0, 1, 1 << 20);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_EQ(0, memcmp(host_ptr(d, s->win[3]), host_ptr(a, s->src[0]),
			    1 << 20));
	/* The chips between wrote nothing of theirs. */
	EXPECT_EQ(0, ((uint8_t *)host_ptr(s->chip[1], s->win[1]))[0]);
	EXPECT_EQ(0, ((uint8_t *)host_ptr(s->chip[2], s->win[2]))[100]);
	slice_free(s);
}

TEST(a_traced_write_names_its_first_port_its_target_and_its_bytes)
{
	struct slice *s = slice_new(4, true);
	struct test_chip *a = s->chip[0];
	uint8_t right[3] = { 1, 0, 0 }, left[3] = { 3, 0, 0 };
	struct tsr_cmd_ici_write c[3] = {
		ici_write(right, s->src[0], 0, 1, 1000),
		ici_write(left, s->src[0], 0, 2, 3000),
		ici_write(left, 0, 0, 0, 0),	/* the semaphore only */
	};
	uint64_t va = chip_buffer(a, 1, 4096), dma = 0;
	const struct tsr_trace_header *h = host_ptr(a, va);
	const struct tsr_trace_record *r = (const void *)(h + 1);
	struct tsr_completion *comp;
	unsigned int i;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	slice_open_window(s, 3, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	c[2].hdr.flags = TSR_ICI_WRITE_SEM;
	c[2].sem_offset = 4096;
	c[2].sem_add = 1;
	comp = chip_run_traced(a, c, sizeof(c), va, 4096);
	ASSERT_EQ(TSR_ERR_NONE, comp->error);
	ASSERT_EQ(3, h->records);
	/* Chip 1 is +x of chip 0; chip 3, on the ring, the short way -x. */
	EXPECT_EQ(TSR_ICI_PORT(0, 0), r[0].port);
	EXPECT_EQ(TSR_ICI_PORT(0, 1), r[1].port);
	EXPECT_EQ(TSR_ICI_PORT(0, 1), r[2].port);
	EXPECT_EQ(0, memcmp(right, r[0].dst, 3));
	EXPECT_EQ(0, memcmp(left, r[1].dst, 3));
	EXPECT_EQ(1000, r[0].link_bytes);
	EXPECT_EQ(6000, r[1].link_bytes);
	EXPECT_EQ(0, r[2].link_bytes);
	/* Reading the source from system memory counts as memory bytes. */
	EXPECT_EQ(6000, r[1].mem_bytes);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(TSR_OP_ICI_WRITE, r[i].opcode);
		EXPECT_EQ(TSR_ENGINE_DMA, r[i].engine);
		dma += r[i].end_cycle - r[i].start_cycle;
	}
	EXPECT_EQ(comp->dma_cycles, dma);
	slice_free(s);
}

/*
 * A ring of 2 has two links between its chips: a write goes the plus way,
 * or with TSR_ICI_WRITE_MINUS the minus way, whose link alone carries it;
 * its answer comes back.  Unknown flags are refused.
 */
TEST(a_write_asked_to_go_the_minus_way_takes_the_other_link)
{
	struct slice *s = slice_new(2, true);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c = ici_write(dst, s->src[0], 0, 1, 100000);
	unsigned int plus = TSR_ICI_PORT(0, 0), minus = TSR_ICI_PORT(0, 1);
	uint64_t plus0, minus0;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	fill(host_ptr(a, s->src[0]), 100000, 9);
	plus0 = port_counter(a, plus, TSR_ICI_CNT_BYTES_TX);
	minus0 = port_counter(a, minus, TSR_ICI_CNT_BYTES_TX);
	c.hdr.flags = TSR_ICI_WRITE_MINUS;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_EQ(0, memcmp(host_ptr(a, s->src[0]), host_ptr(b, s->win[1]), 100000));
	EXPECT_LT(minus0 + 100000, port_counter(a, minus, TSR_ICI_CNT_BYTES_TX));
	/* The plus link carried only acknowledgements. */
	EXPECT_GT(plus0 + 10000, port_counter(a, plus, TSR_ICI_CNT_BYTES_TX));
	plus0 = port_counter(a, plus, TSR_ICI_CNT_BYTES_TX);
	c.hdr.flags = 0;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_LT(plus0 + 100000, port_counter(a, plus, TSR_ICI_CNT_BYTES_TX));
	c.hdr.flags = TSR_ICI_WRITE_FLAGS_ALL + 1;
	EXPECT_EQ(TSR_ERR_BAD_FLAGS, chip_run(a, &c, sizeof(c))->error);
	slice_free(s);
}

TEST(what_a_window_does_not_allow_is_refused_and_nothing_written)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c;
	uint8_t *win = host_ptr(b, s->win[1]);
	unsigned int i;
	struct {
		const char *what;
		uint64_t key, offset;
		uint32_t window, flags, rows;
		uint32_t reason;
	} cases[] = {
		{ "wrong key", KEY + 1, 0, 0, 0, 1, TSR_ICI_VIOL_KEY },
		{ "beyond the window", KEY, (1 << 20) - 100, 0, 0, 1,
		  TSR_ICI_VIOL_RANGE },
		{ "no such window", KEY, 0, 5, 0, 1, TSR_ICI_VIOL_NO_WINDOW },
		{ "semaphore outside", KEY, 0, 0, TSR_ICI_WRITE_SEM, 1,
		  TSR_ICI_VIOL_RANGE },
	};

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	wr(b, TSR_REG_ICI_IRQ_ENABLE, TSR_ICI_IRQ_ALL);
	fill(host_ptr(a, s->src[0]), 1 << 20, 3);
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		c = ici_write(dst, s->src[0], cases[i].offset, cases[i].rows,
			      50000);
		c.key = cases[i].key;
		c.window = cases[i].window;
		c.hdr.flags = cases[i].flags;
		if (cases[i].flags)
			c.sem_offset = 2 << 20;
		EXPECT_EQ(TSR_ERR_REMOTE_ACCESS,
			  chip_run(a, &c, sizeof(c))->error) TH_LOG("%s", cases[i].what);
		EXPECT_EQ(i + 1, rd(b, TSR_REG_ICI_VIOLATIONS));
		EXPECT_EQ(cases[i].reason, rd(b, TSR_REG_ICI_VIOL_REASON));
	}
	EXPECT_EQ(0, rd(b, TSR_REG_ICI_VIOL_SOURCE));
	/* A read-only window and a closed one. */
	slice_open_window(s, 1, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_READ);
	c = ici_write(dst, s->src[0], 0, 1, 50000);
	EXPECT_EQ(TSR_ERR_REMOTE_ACCESS, chip_run(a, &c, sizeof(c))->error);
	slice_open_window(s, 1, 1 << 20, 0);
	EXPECT_EQ(TSR_ERR_REMOTE_ACCESS, chip_run(a, &c, sizeof(c))->error);
	for (i = 0; i < (1 << 20); i++)
		if (win[i])
			break;
	EXPECT_EQ(1 << 20, i);
	EXPECT_LE(1, b->irqs[TSR_MSIX_VEC_LINK]);
	EXPECT_TRUE(rd(b, TSR_REG_ICI_IRQ_STATUS) & TSR_ICI_IRQ_REMOTE_ACCESS);
	slice_free(s);
}

/*
 * A queue goes on past a write once its data has left, with up to four
 * awaiting answers; a refusal that comes back later still fails the job,
 * naming the refused write, and the job ends only once every answer is in.
 */
TEST(a_write_refused_after_the_queue_went_on_fails_its_job_by_name)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write w[7];
	struct tsr_completion *rec;
	unsigned int i;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	fill(host_ptr(a, s->src[0]), 7 << 12, 9);
	/* Seven writes of 4 KiB, each adding 1: more than four at once. */
	for (i = 0; i < 7; i++) {
		w[i] = ici_write(dst, s->src[0] + (i << 12), i << 12, 1, 4096);
		w[i].hdr.flags = TSR_ICI_WRITE_SEM;
		w[i].sem_offset = 1 << 19;
		w[i].sem_add = 1;
	}
	rec = chip_run(a, w, sizeof(w));
	EXPECT_EQ(TSR_ERR_NONE, rec->error);
	EXPECT_EQ(0, memcmp(host_ptr(b, s->win[1]), host_ptr(a, s->src[0]),
			    7 << 12));
	EXPECT_EQ(7, *(uint64_t *)host_ptr(b, s->win[1] + (1 << 19)));

	/* The third with the wrong key: refused, named, and nothing of it. */
	memset(host_ptr(b, s->win[1]), 0, 7 << 12);
	w[2].key = KEY + 1;
	rec = chip_run(a, w, sizeof(w));
	EXPECT_EQ(TSR_ERR_REMOTE_ACCESS, rec->error);
	EXPECT_EQ(2, rec->failed_cmd);
	EXPECT_EQ(0, ((uint8_t *)host_ptr(b, s->win[1]))[(2 << 12) + 7]);
	EXPECT_EQ(0, memcmp(host_ptr(b, s->win[1]), host_ptr(a, s->src[0]),
			    2 << 12));

	/* The last one refused: found at the job's end. */
	w[2].key = KEY;
	w[6].key = KEY + 1;
	rec = chip_run(a, w, sizeof(w));
	EXPECT_EQ(TSR_ERR_REMOTE_ACCESS, rec->error);
	EXPECT_EQ(6, rec->failed_cmd);
	slice_free(s);
}

TEST(a_chip_outside_the_slice_has_no_route_and_a_down_link_fails_fast)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0];
	uint8_t nowhere[3] = { 2, 0, 0 }, b[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c = ici_write(nowhere, s->src[0], 0, 1, 64);

	ASSERT_TRUE(slice_wait_up(s));
	EXPECT_EQ(TSR_ERR_NO_ROUTE, chip_run(a, &c, sizeof(c))->error);
	wr(a, TSR_ICI_PORT_BASE(0) + TSR_IREG_CONTROL, TSR_ICI_CTRL_DOWN);
	c = ici_write(b, s->src[0], 0, 1, 64);
	EXPECT_EQ(TSR_ERR_LINK_DOWN, chip_run(a, &c, sizeof(c))->error);
	EXPECT_EQ(TSR_ICI_STATE_DOWN, rd(a, TSR_ICI_PORT_BASE(0) + TSR_IREG_STATE));
	EXPECT_EQ(1, port_counter(a, 0, TSR_ICI_CNT_LINK_DOWNS));
	/* Retrained, the next write goes through. */
	slice_open_window(s, 1, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	wr(a, TSR_ICI_PORT_BASE(0) + TSR_IREG_CONTROL, TSR_ICI_CTRL_RETRAIN);
	ASSERT_TRUE(slice_wait_up(s));
	EXPECT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	slice_free(s);
}

TEST(link_faults_need_a_socket_and_survive_a_chip_reset)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0];
	TsrIci *ici = tsr_core_ici(a->core);
	TsrLinkFaults f = { .drop_ppm = 5, .seed = 11 }, now;

	ASSERT_TRUE(slice_wait_up(s));
	/* Port 1 of chip (0) faces the edge of the line: no socket. */
	EXPECT_EQ(-1, tsr_ici_set_faults(ici, 1, &f, TSR_LINK_FAULT_ALL));
	EXPECT_EQ(-1, tsr_ici_get_faults(ici, 1, &now));
	EXPECT_FALSE(tsr_ici_port_control(ici, 1, TSR_ICI_CTRL_DOWN));
	EXPECT_FALSE(tsr_ici_port_control(ici, 0, 0x80));
	ASSERT_EQ(0, tsr_ici_set_faults(ici, 0, &f, TSR_LINK_FAULT_ALL));
	wr(a, TSR_REG_RESET, TSR_RESET_MAGIC);
	ASSERT_EQ(0, tsr_ici_get_faults(ici, 0, &now));
	EXPECT_EQ(5, now.drop_ppm);
	EXPECT_EQ(11, now.seed);
	/* The CONTROL register's actions, from the host. */
	EXPECT_TRUE(tsr_ici_port_control(ici, 0, TSR_ICI_CTRL_DOWN));
	EXPECT_EQ(TSR_ICI_STATE_DOWN, tsr_ici_port_state(ici, 0));
	EXPECT_TRUE(tsr_ici_port_control(ici, 0, TSR_ICI_CTRL_RETRAIN));
	EXPECT_TRUE(slice_wait_up(s));
	slice_free(s);
}

TEST(the_retransmit_timer_is_set_before_any_port_is_attached)
{
	struct test_chip *c = chip_new("v4");
	TsrIci *ici = tsr_core_ici(c->core);
	TsrSlice sl = { .slice_id = 3, .topo = { .dims = { 2, 1, 1 } } };

	ASSERT_EQ(0, tsr_ici_set_slice(ici, &sl));
	EXPECT_EQ(-1, tsr_ici_set_retransmit(ici, 0));
	EXPECT_EQ(0, tsr_ici_set_retransmit(ici, 200000000));
	ASSERT_EQ(0, tsr_ici_attach(ici, TSR_ICI_PORT(0, 0), TSR_ICI_WINDOW_RING));
	EXPECT_EQ(-1, tsr_ici_set_retransmit(ici, 1000000));
	chip_free(c);
}

/*
 * Injected drops and corruption lose nothing, and are counted, on a
 * socket (payloads with a CRC) and on a ring (without).
 */
static void faults_lose_nothing(struct __test_metadata *_metadata,
				uint32_t transport)
{
	struct slice *s = slice_new_on(2, true, transport);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	/* A few of the 128 frames of each 4 MiB. */
	TsrLinkFaults f = { .drop_ppm = 4000, .corrupt_ppm = 4000, .seed = 9 };
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c;
	unsigned int p, round;
	uint64_t crc = 0, seq = 0;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	for (p = 0; p < 2; p++) {
		tsr_ici_set_faults(tsr_core_ici(a->core), p, &f,
				   TSR_LINK_FAULT_ALL);
		tsr_ici_set_faults(tsr_core_ici(b->core), p, &f,
				   TSR_LINK_FAULT_ALL);
	}
	for (round = 0; round < 8; round++) {
		fill(host_ptr(a, s->src[0]), 4 << 20, 10 + round);
		c = ici_write(dst, s->src[0], 0, 1, 4 << 20);
		ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
		ASSERT_EQ(0, memcmp(host_ptr(b, s->win[1]),
				    host_ptr(a, s->src[0]), 4 << 20));
	}
	for (p = 0; p < 2; p++) {
		crc += port_counter(b, p, TSR_ICI_CNT_CRC_ERRORS);
		seq += port_counter(b, p, TSR_ICI_CNT_SEQ_ERRORS);
	}
	EXPECT_LT(0, crc);
	EXPECT_LT(0, seq);
	/*
	 * On rings, chunks are built in them (all but those a fault is due
	 * to hit, of 1024) and replayed from them.
	 */
	if (transport == TSR_ICI_TRANSPORT_RING)
		EXPECT_LT(900, slice_lent(s));
	slice_free(s);
}

TEST(dropped_and_corrupted_frames_lose_nothing)
{
	faults_lose_nothing(_metadata, TSR_ICI_TRANSPORT_SOCKET);
}

TEST(dropped_and_corrupted_frames_lose_nothing_on_a_ring_without_crc)
{
	faults_lose_nothing(_metadata, TSR_ICI_TRANSPORT_RING);
}

TEST(a_semaphore_only_write_and_a_write_to_itself)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 }, self_[3] = { 0, 0, 0 };
	struct tsr_cmd_ici_write c = ici_write(dst, 0, 0, 0, 0);
	uint64_t *sem = host_ptr(b, s->win[1] + 64);

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 4096, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	slice_open_window(s, 0, 4096, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	c.hdr.flags = TSR_ICI_WRITE_SEM;
	c.sem_offset = 64;
	c.sem_add = 5;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_EQ(5, *sem);
	memcpy(c.dst, self_, 3);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_EQ(5, *(uint64_t *)host_ptr(a, s->win[0] + 64));
	/* Bad fields are refused before anything is sent. */
	c.hdr.flags = 0;
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(a, &c, sizeof(c))->error);
	c = ici_write(dst, s->src[0], 0, 1, 8);
	c.sem_add = 1;
	EXPECT_EQ(TSR_ERR_RESERVED, chip_run(a, &c, sizeof(c))->error);
	c = ici_write(dst, 0, 0, 1, 0);
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(a, &c, sizeof(c))->error);
	c = ici_write(dst, s->src[0], 0, 1, 8);
	c.hdr.flags = TSR_ICI_WRITE_SEM;
	c.sem_offset = 4;
	EXPECT_EQ(TSR_ERR_BAD_ALIGNMENT, chip_run(a, &c, sizeof(c))->error);
	c = ici_write(dst, s->src[0], ~0ull - 10, 2, 8);
	EXPECT_EQ(TSR_ERR_BAD_STRIDE, chip_run(a, &c, sizeof(c))->error);
	slice_free(s);
}

/* Cycles @bytes take on a link of chip @c's preset. */
static double link_cycles(struct test_chip *c, double bytes)
{
	const TsrConfig *cfg = tsr_core_config(c->core);

	return bytes / (cfg->ici_link_gbps * 1e9) * cfg->clock_mhz * 1e6;
}

static double hop_cycles(struct test_chip *c)
{
	const TsrConfig *cfg = tsr_core_config(c->core);

	return cfg->ici_link_latency_ns * cfg->clock_mhz / 1000.0;
}

static struct tsr_cmd_sem sem_wait_for(uint64_t va, uint64_t value)
{
	return (struct tsr_cmd_sem){
		.hdr = HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem),
		.va = va, .value = value,
	};
}

/*
 * 16 MiB over one hop arrive bytes / link bandwidth + latency after the
 * first byte left; the writer's job ends once the last byte is on the
 * link, while its queue went on as soon as it had handed them over.
 */
TEST(sixteen_mib_over_one_hop_takes_bytes_over_bandwidth_plus_latency)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write two[2];
	struct tsr_cmd_sem wait = sem_wait_for(s->win[1] + (8 << 20) - 8, 1);
	struct tsr_completion *rec, *arrived;
	double want, got;
	unsigned int k;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	/*
	 * Two 8 MiB writes (less the semaphore), one after the other, in one
	 * job, from HBM (read far faster than the link carries it).
	 */
	chip_map(a, 1, HBM_VA, 0, 8 << 20,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	for (k = 0; k < 2; k++)
		two[k] = ici_write(dst, HBM_VA, 0, 1, (8 << 20) - 8);
	two[1].hdr.flags = TSR_ICI_WRITE_SEM;
	two[1].sem_offset = (8 << 20) - 8;
	two[1].sem_add = 1;
	rec = chip_run(a, two, sizeof(two));
	ASSERT_EQ(TSR_ERR_NONE, rec->error);
	want = link_cycles(a, 16.0 * (1 << 20));
	got = rec->end_cycle - rec->start_cycle;
	TH_LOG("16 MiB sent: %.0f modeled cycles, %.0f by the formula", got, want);
	EXPECT_GT(0.02 * want, fabs(got - want));
	/* The second write waited for the first to leave: half the time. */
	EXPECT_GT(0.02 * want, fabs(rec->dma_cycles - want / 2));

	/* The target's clock is behind: its wait ends at the arrival. */
	arrived = chip_run(b, &wait, sizeof(wait));
	ASSERT_EQ(TSR_ERR_NONE, arrived->error);
	want += hop_cycles(a);
	got = arrived->end_cycle - rec->start_cycle;
	TH_LOG("16 MiB arrived: %.0f modeled cycles, %.0f by the formula",
	       got, want);
	EXPECT_GT(0.02 * want, fabs(got - want));
	slice_free(s);
}

/*
 * Frames the link layer sends again hold the writer's stream on the
 * modeled clock: their serialization and the round trip of the NAK that
 * asked for them, on top of the clean write's time.
 */
TEST(resent_frames_hold_the_writers_stream_on_the_modeled_clock)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0];
	TsrLinkFaults f = { .drop_next = 2 };
	uint8_t dst[3] = { 1, 0, 0 };
	/* From HBM, read far faster than the link carries it. */
	struct tsr_cmd_ici_write c = ici_write(dst, HBM_VA, 0, 1, 1 << 20);
	struct tsr_completion *rec;
	uint64_t clean, faulted;
	double resend;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	chip_map(a, 1, HBM_VA, 0, 1 << 20,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	rec = chip_run(a, &c, sizeof(c));
	ASSERT_EQ(TSR_ERR_NONE, rec->error);
	clean = rec->end_cycle - rec->start_cycle;
	ASSERT_EQ(0, tsr_ici_set_faults(tsr_core_ici(a->core), 0, &f,
					TSR_LINK_FAULT_DROP_NEXT));
	/* Its first two frames are lost; the frames after them pay. */
	rec = chip_run(a, &c, sizeof(c));
	ASSERT_EQ(TSR_ERR_NONE, rec->error);
	faulted = rec->end_cycle - rec->start_cycle;
	resend = 2 * (link_cycles(a, TSR_ICI_MAX_PAYLOAD) + 2 * hop_cycles(a));
	TH_LOG("1 MiB: %llu cycles clean, %llu after two frames lost (%.0f)",
	       (unsigned long long)clean, (unsigned long long)faulted,
	       resend);
	EXPECT_LE(clean + 0.9 * resend, faulted);
	EXPECT_GE(clean + 1.1 * resend, faulted);
	slice_free(s);
}

/*
 * Streams of two queues share a link without holding each other up
 * (which went first would be the host's choice): a write that is ready
 * earlier on the modeled clock is not held behind another queue's later
 * write that the host sent first, nor an increment behind a long write.
 */
TEST(a_link_shared_by_two_queues_serves_each_when_it_is_ready)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	uint64_t sem = s->win[1] + (6 << 20), big = chip_buffer(a, 1, 8 << 20);
	struct {
		struct tsr_cmd_dma fill;
		struct tsr_cmd_ici_write w;
	} late;
	struct tsr_cmd_ici_write early = ici_write(dst, s->src[0], 0, 1, 64 << 10);
	struct tsr_cmd_ici_write inc = ici_write(dst, 0, 0, 0, 0);
	struct tsr_cmd_sem wait = sem_wait_for(sem, 1);
	struct tsr_completion *l, *e, *w;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	/* Queue 0: 8 MiB of fill, then 4 MiB over the link. */
	late.fill = (struct tsr_cmd_dma){
		HDR(TSR_OP_DMA_FILL, struct tsr_cmd_dma), .src = 7, .dst = big,
		.size = { 8 << 20, 1, 1 } };
	late.w = ici_write(dst, s->src[0], 0, 1, 4 << 20);
	l = chip_run_on(a, 0, &late, sizeof(late));
	ASSERT_EQ(TSR_ERR_NONE, l->error);
	ASSERT_LT(link_cycles(a, 1 << 20), l->end_cycle - l->start_cycle -
					   link_cycles(a, 4 << 20));

	/* Queue 1, run later by the host, is ready first: it goes first. */
	early.hdr.flags = TSR_ICI_WRITE_SEM;
	early.sem_offset = 6 << 20;
	early.sem_add = 1;
	e = chip_run_on(a, 1, &early, sizeof(early));
	ASSERT_EQ(TSR_ERR_NONE, e->error);
	w = chip_run_on(b, 0, &wait, sizeof(wait));
	ASSERT_EQ(TSR_ERR_NONE, w->error);
	TH_LOG("64 KiB from cycle %llu arrived at %llu; the 4 MiB left from %llu",
	       (unsigned long long)e->start_cycle,
	       (unsigned long long)w->end_cycle,
	       (unsigned long long)(l->end_cycle -
				    (uint64_t)link_cycles(a, 4 << 20)));
	EXPECT_GT(e->start_cycle + 2 * link_cycles(a, 64 << 10) + hop_cycles(a),
		  w->end_cycle);

	/*
	 * Queue 2, ready as queue 0's next 4 MiB start on the link: its
	 * increment does not wait for the 4 MiB.
	 */
	{
		uint64_t mark = chip_buffer(a, 1, 4096);
		struct {
			struct tsr_cmd_sem mark;
			struct tsr_cmd_ici_write w;
		} marked = {
			{ HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem), mark, 1 },
			late.w,
		};
		struct {
			struct tsr_cmd_sem wait;
			struct tsr_cmd_ici_write inc;
		} after = { sem_wait_for(mark, 1), inc };

		after.inc.hdr.flags = TSR_ICI_WRITE_SEM;
		after.inc.sem_offset = 6 << 20;
		after.inc.sem_add = 1;
		l = chip_run_on(a, 0, &marked, sizeof(marked));
		ASSERT_EQ(TSR_ERR_NONE, l->error);
		e = chip_run_on(a, 2, &after, sizeof(after));
		ASSERT_EQ(TSR_ERR_NONE, e->error);
	}
	wait.value = 2;
	w = chip_run_on(b, 1, &wait, sizeof(wait));
	ASSERT_EQ(TSR_ERR_NONE, w->error);
	TH_LOG("the increment from cycle %llu arrived at %llu; the 4 MiB left by %llu",
	       (unsigned long long)e->start_cycle,
	       (unsigned long long)w->end_cycle,
	       (unsigned long long)l->end_cycle);
	EXPECT_LT(l->start_cycle + link_cycles(a, 4 << 20) / 2, l->end_cycle);
	EXPECT_GT(l->start_cycle + link_cycles(a, 64 << 10) + hop_cycles(a),
		  w->end_cycle);
	slice_free(s);
}

/* One writer of a_slice_program_s_modeled_cycles_do_not_hang_on_host_order. */
struct writer {
	unsigned int chip, queue;
	uint64_t sem;			/* offset in chip 2's window */
};

/* The cycles one run of that program gave: each writer's end, each wait's. */
struct program_cycles {
	uint64_t sent[3], arrived[3];
};

/*
 * Chips 0 and 1 of a line of three each write 1 MiB to chip 2 at once,
 * chip 0's through chip 1 (forwarded on the link chip 1's own queues
 * use), the writers run by the host in the order @order names; chip 2
 * waits for each write's semaphore on a queue of its own.
 */
static void run_program(struct __test_metadata *_metadata,
			const unsigned int order[3], struct program_cycles *got)
{
	static const struct writer writers[3] = {
		{ 0, 0, 4 << 20 }, { 1, 0, (4 << 20) + 8 },
		{ 1, 1, (4 << 20) + 16 },
	};
	struct slice *s = slice_new(3, false);
	uint8_t dst[3] = { 2, 0, 0 };
	unsigned int k;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 2, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	for (k = 0; k < 3; k++) {
		const struct writer *w = &writers[order[k]];
		struct tsr_cmd_ici_write c = ici_write(dst, s->src[w->chip],
						       w->sem - (1 << 20) -
						       (order[k] << 20),
						       1, 1 << 20);
		struct tsr_completion *rec;

		c.hdr.flags = TSR_ICI_WRITE_SEM;
		c.sem_offset = w->sem;
		c.sem_add = 1;
		rec = chip_run_on(s->chip[w->chip], w->queue, &c, sizeof(c));
		ASSERT_EQ(TSR_ERR_NONE, rec->error);
		got->sent[order[k]] = rec->end_cycle;
	}
	for (k = 0; k < 3; k++) {
		struct tsr_cmd_sem wait = sem_wait_for(s->win[2] +
						       writers[k].sem, 1);
		struct tsr_completion *rec = chip_run_on(s->chip[2], k, &wait,
							 sizeof(wait));

		ASSERT_EQ(TSR_ERR_NONE, rec->error);
		got->arrived[k] = rec->end_cycle;
	}
	slice_free(s);
}

/*
 * Design decision 7: the modeled cycle of every event depends on the
 * program only.  Three writers sharing a link, run by the host in every
 * order, end and land at the same cycles.
 */
TEST(a_slice_program_s_modeled_cycles_do_not_hang_on_host_order)
{
	static const unsigned int orders[][3] = {
		{ 0, 1, 2 }, { 2, 1, 0 }, { 1, 0, 2 }, { 2, 0, 1 },
	};
	struct program_cycles first, again;
	unsigned int i, k;

	run_program(_metadata, orders[0], &first);
	for (i = 1; i < ARRAY_SIZE(orders); i++) {
		run_program(_metadata, orders[i], &again);
		for (k = 0; k < 3; k++) {
			TH_LOG("order %u, writer %u: sent by %llu (%llu), arrived %llu (%llu)",
			       i, k, (unsigned long long)again.sent[k],
			       (unsigned long long)first.sent[k],
			       (unsigned long long)again.arrived[k],
			       (unsigned long long)first.arrived[k]);
			EXPECT_EQ(first.sent[k], again.sent[k]);
			EXPECT_EQ(first.arrived[k], again.arrived[k]);
		}
	}
}

/*
 * A queue has an ICI DMA per port: a write by one port does not wait for
 * the queue's write by another to leave (as a credit going back need not
 * wait for data going on), while two by one port take turns (above).
 */
TEST(writes_by_two_ports_of_one_queue_leave_side_by_side)
{
	struct slice *s = slice_new(3, false);
	struct test_chip *mid = s->chip[1];
	uint8_t left[3] = { 0, 0, 0 }, right[3] = { 2, 0, 0 };
	/* From HBM, read far faster than the links carry it. */
	struct tsr_cmd_ici_write two[2] = {
		ici_write(right, HBM_VA, 0, 1, 4 << 20),
		ici_write(left, HBM_VA, 0, 1, 4 << 20),
	};
	struct tsr_completion *rec;
	double one, got;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 0, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	slice_open_window(s, 2, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	chip_map(mid, 1, HBM_VA, 0, 4 << 20,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	rec = chip_run(mid, two, sizeof(two));
	ASSERT_EQ(TSR_ERR_NONE, rec->error);
	one = link_cycles(mid, 4.0 * (1 << 20));
	got = rec->end_cycle - rec->start_cycle;
	TH_LOG("4 MiB each way: %.0f modeled cycles, one way's %.0f", got, one);
	EXPECT_GT(0.02 * one, fabs(got - one));
	EXPECT_GT(0.02 * one, rec->dma_cycles);
	slice_free(s);
}

/* A queue's increment after its data arrives after that data. */
TEST(an_increment_after_data_from_the_same_queue_arrives_after_it)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write two[2] = {
		ici_write(dst, s->src[0], 0, 1, 4 << 20),
		ici_write(dst, 0, 0, 0, 0),
	};
	struct tsr_cmd_sem wait = sem_wait_for(s->win[1] + (6 << 20), 1);
	struct tsr_completion *sent, *w;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	two[1].hdr.flags = TSR_ICI_WRITE_SEM;
	two[1].sem_offset = 6 << 20;
	two[1].sem_add = 1;
	sent = chip_run(a, two, sizeof(two));
	ASSERT_EQ(TSR_ERR_NONE, sent->error);
	w = chip_run(b, &wait, sizeof(wait));
	ASSERT_EQ(TSR_ERR_NONE, w->error);
	EXPECT_LE(sent->start_cycle + link_cycles(a, 4 << 20) + hop_cycles(a),
		  w->end_cycle);
	slice_free(s);
}

/*
 * The semaphore comes with the data's modeled arrival: a SEM_WAIT on the
 * target, whose own clock is far behind, ends no earlier than that.
 */
TEST(a_sem_wait_on_the_target_ends_no_earlier_than_the_data_arrives)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	const TsrConfig *cfg = tsr_core_config(a->core);
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write w;
	struct tsr_cmd_sem wait = {
		.hdr = HDR(TSR_OP_SEM_WAIT, struct tsr_cmd_sem),
		.va = s->win[1] + (6 << 20), .value = 1,
	};
	struct tsr_completion *rec;
	uint64_t start, serialization;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	w = ici_write(dst, s->src[0], 0, 1, 4 << 20);
	w.hdr.flags = TSR_ICI_WRITE_SEM;
	w.sem_offset = 6 << 20;
	w.sem_add = 1;
	rec = chip_run(a, &w, sizeof(w));
	ASSERT_EQ(TSR_ERR_NONE, rec->error);
	start = rec->start_cycle;
	serialization = (uint64_t)(4.0 * (1 << 20) /
				   (cfg->ici_link_gbps * 1e9) *
				   cfg->clock_mhz * 1e6);

	rec = chip_run(b, &wait, sizeof(wait));
	ASSERT_EQ(TSR_ERR_NONE, rec->error);
	TH_LOG("write started at %llu, the wait ended at %llu, serialization %llu",
	       (unsigned long long)start, (unsigned long long)rec->end_cycle,
	       (unsigned long long)serialization);
	EXPECT_LE(start + serialization, rec->end_cycle);
	slice_free(s);
}

/*
 * A remote write's increment wakes the target's queue sleeping on that
 * semaphore: with re-reads an hour apart, nothing else ends its wait.
 */
TEST(a_remote_increment_wakes_the_queue_sleeping_on_it)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_sem wait = sem_wait_for(s->win[1] + (6 << 20), 1);
	struct runner waiter = { b, 0 };
	struct tsr_cmd_ici_write c;
	struct tsr_completion *w;
	pthread_t t;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	tsr_core_set_sem_poll(b->core, 3600ull * 1000000000);
	w = chip_queue_job(b, 0, 1, &wait, sizeof(wait), 1);
	ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &waiter));
	ASSERT_LE(0, chip_until_sem_sleeping(b, 0, 10000));
	c = ici_write(dst, s->src[0], 0, 1, 4096);
	c.hdr.flags = TSR_ICI_WRITE_SEM;
	c.sem_offset = 6 << 20;
	c.sem_add = 1;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(TSR_JOB_STATUS_DONE, w->status);
	slice_free(s);
}

/*
 * A chip whose link onward is down drops what it would forward there and
 * answers LINK_DOWN at once: the writer fails long before its answer
 * timeout, and the link it wrote by is not wedged behind held frames, so
 * writes to the chip in between still land.
 */
TEST(transit_to_a_dead_link_fails_the_writer_fast_and_the_first_link_goes_on)
{
	struct slice *s = slice_new(3, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t far[3] = { 2, 0, 0 }, mid[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c;
	struct timespec t0;
	unsigned int i;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	slice_open_window(s, 2, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	fill(host_ptr(a, s->src[0]), 4 << 20, 5);
	wr(b, TSR_ICI_PORT_BASE(TSR_ICI_PORT(0, 0)) + TSR_IREG_CONTROL,
	   TSR_ICI_CTRL_DOWN);
	/* Twice, so that frames held by the first would block the second. */
	for (i = 0; i < 2; i++) {
		c = ici_write(far, s->src[0], 0, 1, 4 << 20);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		EXPECT_EQ(TSR_ERR_LINK_DOWN, chip_run(a, &c, sizeof(c))->error);
		EXPECT_GT(500, since_ms(&t0));
	}
	c = ici_write(mid, s->src[0], 0, 1, 4 << 20);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	EXPECT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_GT(500, since_ms(&t0));
	EXPECT_EQ(0, memcmp(host_ptr(b, s->win[1]), host_ptr(a, s->src[0]),
			    4 << 20));
	EXPECT_EQ(TSR_ICI_STATE_UP,
		  rd(a, TSR_ICI_PORT_BASE(TSR_ICI_PORT(0, 0)) + TSR_IREG_STATE));
	EXPECT_EQ(0, ((uint8_t *)host_ptr(s->chip[2], s->win[2]))[1000]);
	slice_free(s);
}

/*
 * Chip @k gives up on its link to chip @k - 1 and is retrained, afresh,
 * while chip @k - 1's end, which never goes down, follows it: a neighbour
 * stopped (SIGSTOP) and, continued, retrained.  What chip @k - 1 sent
 * meanwhile, held on the frozen wire, reaches chip @k while it is down
 * and is dropped.
 */
static void restart_from_chip(struct __test_metadata *_metadata,
			      struct slice *s, unsigned int k)
{
	struct wire *in = s->wires[k - 1][TSR_ICI_PORT(0, 0)];
	uint32_t port = TSR_ICI_PORT_BASE(TSR_ICI_PORT(0, 1));

	wr(s->chip[k], port + TSR_IREG_CONTROL, TSR_ICI_CTRL_DOWN);
	in->frozen = false;
	ASSERT_TRUE(slice_wire_drained(in));
	wr(s->chip[k], port + TSR_IREG_CONTROL, TSR_ICI_CTRL_RETRAIN);
	ASSERT_TRUE(slice_wait_up(s));
	ASSERT_EQ(0, port_counter(s->chip[k - 1], TSR_ICI_PORT(0, 0),
				  TSR_ICI_CNT_LINK_DOWNS));
}

static void restart_from_chip_1(struct __test_metadata *_metadata,
				struct slice *s)
{
	restart_from_chip(_metadata, s, 1);
}

/* Four chunks and a semaphore increment, from chip 0 to chip @target. */
static struct tsr_cmd_ici_write sem_write(struct slice *s, uint8_t target)
{
	uint8_t dst[3] = { target, 0, 0 };
	struct tsr_cmd_ici_write c = ici_write(dst, s->src[0], 0, 1,
					       4 * TSR_ICI_MSG_MAX_DATA);

	c.hdr.flags = TSR_ICI_WRITE_SEM;
	c.sem_offset = 6 << 20;
	c.sem_add = 1;
	return c;
}

/*
 * Chip 0 runs sem_write() to chip @target; the link into @target starts
 * afresh (restart_from_chip()) while chip 0 is held before its chunk
 * @chunk, the chunks before it waiting on that link's frozen wire.
 */
static struct tsr_completion *write_across_a_restart(
	struct __test_metadata *_metadata, struct slice *s,
	unsigned int target, unsigned int chunk, uint64_t seq)
{
	struct test_chip *a = s->chip[0];
	struct tsr_cmd_ici_write c = sem_write(s, target);
	struct runner r = { a, 0 };
	struct tsr_completion *rec;
	pthread_t th;

	slice_open_window(s, target, 8 << 20,
			  TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	fill(host_ptr(a, s->src[0]), 4 * TSR_ICI_MSG_MAX_DATA, 3);
	s->wires[target - 1][TSR_ICI_PORT(0, 0)]->frozen = true;
	chip_hold(a, s->src[0] + chunk * TSR_ICI_MSG_MAX_DATA);
	rec = chip_queue_job(a, 0, 1, &c, sizeof(c), seq);
	if (pthread_create(&th, NULL, run_queue, &r))
		return NULL;
	chip_wait_held(a);
	restart_from_chip(_metadata, s, target);
	chip_release(a);
	pthread_join(th, NULL);
	return rec;
}

/*
 * A write whose first link starts afresh between two of its chunks ends
 * with LINK_DOWN: the chunks before went with the old streams, and the
 * rest must not land alone in the new ones, its semaphore with them,
 * perhaps in the windows of a program that came after.
 */
TEST(a_write_does_not_go_on_over_a_link_that_started_afresh)
{
	struct slice *s = slice_new(2, false);
	uint8_t *win = host_ptr(s->chip[1], s->win[1]);
	struct tsr_completion *rec;

	ASSERT_TRUE(slice_wait_up(s));
	rec = write_across_a_restart(_metadata, s, 1, 1, 11);
	ASSERT_NE(NULL, rec);
	EXPECT_EQ(TSR_ERR_LINK_DOWN, rec->error);
	EXPECT_EQ(0, *(uint64_t *)(win + (6 << 20)));
	EXPECT_EQ(0, win[TSR_ICI_MSG_MAX_DATA]);
	EXPECT_EQ(0, win[4 * TSR_ICI_MSG_MAX_DATA - 1]);
	slice_free(s);
}

/*
 * A write through a chip whose next link starts afresh between two of its
 * chunks: that chip drops the chunks it held for the old link, unknown to
 * the writer, whose own first link never changed, and forwards the rest.
 * The target sees a gap in the chunks' numbers: it writes nothing more of
 * the request, adds no semaphore, and answers LINK_DOWN, so that a write
 * cut on its way is never signalled as whole.
 */
TEST(a_write_through_a_chip_whose_next_link_started_afresh_fails_and_adds_no_semaphore)
{
	struct slice *s = slice_new(3, false);
	struct test_chip *a = s->chip[0];
	uint8_t *win = host_ptr(s->chip[2], s->win[2]);
	struct tsr_cmd_ici_write c = sem_write(s, 2);
	struct tsr_completion *rec;

	ASSERT_TRUE(slice_wait_up(s));
	rec = write_across_a_restart(_metadata, s, 2, 2, 13);
	ASSERT_NE(NULL, rec);
	EXPECT_EQ(TSR_ERR_LINK_DOWN, rec->error);
	EXPECT_EQ(0, *(uint64_t *)(win + (6 << 20)));
	EXPECT_EQ(0, win[2 * TSR_ICI_MSG_MAX_DATA]);
	EXPECT_EQ(0, win[4 * TSR_ICI_MSG_MAX_DATA - 1]);
	/* The links carry on: the same write again lands whole. */
	EXPECT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_EQ(1, *(uint64_t *)(win + (6 << 20)));
	EXPECT_EQ(0, memcmp(win, host_ptr(a, s->src[0]),
			    4 * TSR_ICI_MSG_MAX_DATA));
	slice_free(s);
}

/*
 * A write through a chip whose link onward goes down and comes back
 * between two of its chunks: the chunks that found it down fail the
 * request there (LINK_DOWN to the writer), and that chip forwards nothing
 * more of it once the link is back, so the target, which saw none of it,
 * neither writes the last chunk nor adds the semaphore.
 */
TEST(a_write_through_a_chip_whose_next_link_went_down_and_came_back_lands_no_semaphore)
{
	struct slice *s = slice_new(3, false);
	struct test_chip *a = s->chip[0], *t = s->chip[2];
	uint8_t dst[3] = { 2, 0, 0 };
	struct tsr_cmd_ici_write c = ici_write(dst, s->src[0], 0, 1,
					       4 * TSR_ICI_MSG_MAX_DATA);
	struct tsr_cmd_ici_write after = ici_write(dst, s->src[0], 1 << 20, 1,
						   4096);
	uint32_t onward = TSR_ICI_PORT_BASE(TSR_ICI_PORT(0, 0));
	struct wire *in = s->wires[0][TSR_ICI_PORT(0, 0)];
	uint8_t *win = host_ptr(t, s->win[2]);
	struct runner r = { a, 0 };
	struct tsr_completion *rec;
	uint64_t heard;
	pthread_t th;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 2, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	fill(host_ptr(a, s->src[0]), 4 * TSR_ICI_MSG_MAX_DATA, 3);
	c.hdr.flags = TSR_ICI_WRITE_SEM;
	c.sem_offset = 6 << 20;
	c.sem_add = 1;
	/* Three chunks wait on the writer's link while chip 1's goes down. */
	in->frozen = true;
	chip_hold(a, s->src[0] + 3 * TSR_ICI_MSG_MAX_DATA);
	rec = chip_queue_job(a, 0, 1, &c, sizeof(c), 14);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	chip_wait_held(a);
	wr(s->chip[1], onward + TSR_IREG_CONTROL, TSR_ICI_CTRL_DOWN);
	in->frozen = false;
	ASSERT_TRUE(slice_wire_drained(in));
	wr(s->chip[1], onward + TSR_IREG_CONTROL, TSR_ICI_CTRL_RETRAIN);
	ASSERT_TRUE(slice_wait_up(s));
	heard = port_counter(t, TSR_ICI_PORT(0, 1), TSR_ICI_CNT_BYTES_RX);
	/* The last chunk goes, after the refusal came back. */
	chip_release(a);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(TSR_ERR_LINK_DOWN, rec->error);
	/* A write behind it by the same way tells when it has gone by. */
	EXPECT_EQ(TSR_ERR_NONE, chip_run(a, &after, sizeof(after))->error);
	EXPECT_EQ(0, *(uint64_t *)(win + (6 << 20)));
	EXPECT_EQ(0, win[3 * TSR_ICI_MSG_MAX_DATA]);
	EXPECT_EQ(0, win[4 * TSR_ICI_MSG_MAX_DATA - 1]);
	/* Chip 1 did not carry it on: only the second write reached chip 2. */
	EXPECT_GT(heard + TSR_ICI_MSG_MAX_DATA,
		  port_counter(t, TSR_ICI_PORT(0, 1), TSR_ICI_CNT_BYTES_RX));
	slice_free(s);
}

/*
 * A write sent before its first link started afresh never gets its
 * answer: its job ends with LINK_DOWN as soon as it looks, not at the
 * answer timeout (1.5 s), which would hold the queue and what was
 * queued behind it until the links were long back.
 */
TEST(a_write_sent_before_its_link_started_afresh_fails_without_its_answer)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 }, self_[3] = { 0, 0, 0 };
	struct tsr_cmd_ici_write c[2] = {
		ici_write(dst, s->src[0], 0, 1, 4096),
		ici_write(self_, s->src[0] + (1 << 20), 0, 1, 4096),
	};
	struct runner r = { a, 0 };
	struct tsr_completion *rec;
	struct timespec t0;
	pthread_t th;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 0, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	slice_open_window(s, 1, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	c[0].hdr.flags = TSR_ICI_WRITE_SEM;
	c[0].sem_offset = 1 << 19;
	c[0].sem_add = 1;
	/* The first write posted, the queue is held on the second. */
	s->wires[0][TSR_ICI_PORT(0, 0)]->frozen = true;
	chip_hold(a, s->src[0] + (1 << 20));
	rec = chip_queue_job(a, 0, 1, c, sizeof(c), 12);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	chip_wait_held(a);
	restart_from_chip_1(_metadata, s);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	chip_release(a);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_GT(500, since_ms(&t0));
	EXPECT_EQ(TSR_ERR_LINK_DOWN, rec->error);
	EXPECT_EQ(0, rec->failed_cmd);
	EXPECT_EQ(0, *(uint64_t *)host_ptr(b, s->win[1] + (1 << 19)));
	slice_free(s);
}

/*
 * A queue reset stops an ICI_WRITE within a chunk, whether it writes to
 * another chip or to its own: 2^22 rows of one byte (a message each)
 * would take minutes.  Nothing lands after the reset has returned but
 * what was on the wire already.
 */
static void check_write_stops_at_reset(struct __test_metadata *_metadata,
				       struct slice *s, unsigned int target)
{
	struct test_chip *a = s->chip[0], *t = s->chip[target];
	uint8_t dst[3] = { target, 0, 0 };
	struct tsr_cmd_ici_write c = ici_write(dst, s->src[0], 0, 1 << 22, 1);
	volatile uint8_t *win = host_ptr(t, s->win[target]);
	struct runner r = { a, 0 };
	struct tsr_completion *rec;
	struct timespec t0, tick = { 0, 100000 };
	unsigned int i, landed;
	pthread_t th;

	memset(host_ptr(t, s->win[target]), 0, 4 << 20);
	memset(host_ptr(a, s->src[0]), 0x5a, 4 << 20);
	c.src_stride = 1;
	c.dst_stride = 1;
	rec = chip_queue_job(a, 0, 1, &c, sizeof(c), 77);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	for (i = 0; i < 50000 && !win[100]; i++)
		nanosleep(&tick, NULL);
	ASSERT_EQ(0x5a, win[100]) TH_LOG("job: status %u error %u", rec->status, rec->error);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	qwr(a, 0, TSR_QREG_CONTROL, TSR_QCTRL_RESET | TSR_QCTRL_ENABLE);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_GT(200, since_ms(&t0));
	a->tail[0] = 0;		/* the reset emptied the ring */
	/* Let what was on the wire land, then nothing more may. */
	for (i = 0; i < 200; i++)
		nanosleep(&tick, NULL);
	for (landed = 0; landed < (4u << 20) && win[landed]; landed++)
		;
	for (i = 0; i < 500; i++)
		nanosleep(&tick, NULL);
	EXPECT_EQ(0, win[landed]);
	EXPECT_GT(1u << 22, landed);
	EXPECT_EQ(0, qrd(a, 0, TSR_QREG_JOBS_DONE));
}

TEST(a_queue_reset_stops_an_ici_write_within_a_chunk)
{
	struct slice *s = slice_new(2, false);

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 0, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	slice_open_window(s, 1, 8 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	check_write_stops_at_reset(_metadata, s, 1);
	check_write_stops_at_reset(_metadata, s, 0);
	slice_free(s);
}

/*
 * A source span that wraps is refused as BAD_STRIDE before anything is
 * read or sent, as every other command's is: a stride of 2^64 - 1 would
 * otherwise read backwards.
 */
TEST(an_ici_write_whose_source_wraps_fails_bad_stride_before_reading)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c;
	struct tsr_completion *rec;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	memset(host_ptr(a, s->src[0]), 0x77, 4096);
	c = ici_write(dst, s->src[0] + 4000, 0, 3, 8);
	c.src_stride = ~0ull;
	rec = chip_run(a, &c, sizeof(c));
	EXPECT_EQ(TSR_ERR_BAD_STRIDE, rec->error);
	c = ici_write(dst, ~0ull, 0, 1, 1);
	EXPECT_EQ(TSR_ERR_BAD_STRIDE, chip_run(a, &c, sizeof(c))->error);
	c = ici_write(dst, ~0ull - 255, 0, 1, 512);
	EXPECT_EQ(TSR_ERR_BAD_STRIDE, chip_run(a, &c, sizeof(c))->error);
	c = ici_write(dst, s->src[0], 0, 4, 8);
	c.src_stride = 1ull << 63;
	EXPECT_EQ(TSR_ERR_BAD_STRIDE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_EQ(0, ((uint8_t *)host_ptr(b, s->win[1]))[0]);
	slice_free(s);
}

static struct tsr_ici_msg answer_from(uint8_t x, uint32_t req, uint32_t status)
{
	return (struct tsr_ici_msg){
		.type = TSR_ICI_MSG_ANSWER, .src = { x, 0, 0 }, .req = req,
		.status = status,
	};
}

/*
 * A neighbour answers for a write it never carried: in the name of the
 * chip asked (but on a port that chip's messages never come by), in its
 * own name with success, or with a LINK_DOWN from off the write's route.
 * Each is ignored and counted; the write, whose target has stopped, ends
 * with LINK_DOWN rather than a forged success.
 */
TEST(forged_answers_are_ignored_and_counted)
{
	struct slice *s = slice_with_liar();
	struct test_chip *a = s->chip[0];
	uint8_t c_[3] = { 2, 0, 0 };
	struct tsr_cmd_ici_write w = ici_write(c_, s->src[0], 0, 1, 4096);
	struct runner r = { a, 0 };
	struct tsr_completion *rec;
	struct timespec tick = { 0, 100000 };
	pthread_t th;
	int i;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 2, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	s->wires[0][TSR_ICI_PORT(0, 1)]->frozen = true;
	s->wires[2][TSR_ICI_PORT(0, 0)]->frozen = true;
	rec = chip_queue_job(a, 0, 1, &w, sizeof(w), 9);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	for (i = 0; i < 10000 && port_counter(a, TSR_ICI_PORT(0, 1),
					      TSR_ICI_CNT_BYTES_TX) < 4096; i++)
		nanosleep(&tick, NULL);
	/* The chip's first request is number 1. */
	ASSERT_EQ(0, liar_send(s, answer_from(2, 1, TSR_ERR_NONE), NULL));
	ASSERT_EQ(0, liar_send(s, answer_from(1, 1, TSR_ERR_NONE), NULL));
	ASSERT_EQ(0, liar_send(s, answer_from(1, 1, TSR_ERR_LINK_DOWN), NULL));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(TSR_ERR_LINK_DOWN, rec->error);
	EXPECT_EQ(3, port_counter(a, TSR_ICI_PORT(0, 0),
				  TSR_ICI_CNT_PROTOCOL_ERRORS));
	slice_free(s);
}

/*
 * A neighbour sends a chunk with a wrong key in the name of chip 2 and
 * the request number chip 2 uses next.  Taken as chip 2's, it would be
 * refused and chip 2's real request dropped with it; it is dropped
 * instead (chip 2's messages never come by that port) and counted, and
 * chip 2's write lands whole.
 */
TEST(a_forged_refusal_does_not_drop_a_real_request)
{
	struct slice *s = slice_with_liar();
	struct test_chip *a = s->chip[0], *c = s->chip[2];
	uint8_t a_[3] = { 0, 0, 0 };
	struct tsr_cmd_ici_write w = ici_write(a_, s->src[2], 0, 1, 64 << 10);
	struct tsr_ici_msg forged = {
		.type = TSR_ICI_MSG_WRITE, .src = { 2, 0, 0 }, .req = 1,
		.key = KEY + 1, .len = 16, .req_end = 64 << 10,
	};
	uint8_t junk[16] = { 0xee };

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 0, 1 << 20, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	ASSERT_EQ(0, liar_send(s, forged, junk));
	fill(host_ptr(c, s->src[2]), 64 << 10, 3);
	w.hdr.flags = TSR_ICI_WRITE_SEM;
	w.sem_offset = 1 << 19;
	w.sem_add = 1;
	EXPECT_EQ(TSR_ERR_NONE, chip_run(c, &w, sizeof(w))->error);
	EXPECT_EQ(0, memcmp(host_ptr(a, s->win[0]), host_ptr(c, s->src[2]),
			    64 << 10));
	EXPECT_EQ(1, *(uint64_t *)host_ptr(a, s->win[0] + (1 << 19)));
	EXPECT_EQ(0, rd(a, TSR_REG_ICI_VIOLATIONS));
	EXPECT_EQ(1, port_counter(a, TSR_ICI_PORT(0, 0),
				  TSR_ICI_CNT_PROTOCOL_ERRORS));
	slice_free(s);
}

/*
 * A neighbour's write says it arrives at cycle 2^63.  It lands (the
 * neighbour has the key), but its time is clamped to TSR_ICI_ARRIVAL_MAX
 * and counted: the semaphore wait that it ends finishes there, not at a
 * time that would wrap the modeled clock.
 */
TEST(a_wild_arrival_is_clamped_and_counted)
{
	struct slice *s = slice_with_liar();
	struct test_chip *a = s->chip[0];
	struct tsr_ici_msg m = {
		.type = TSR_ICI_MSG_WRITE, .src = { 1, 0, 0 }, .req = 7,
		.flags = TSR_ICI_MSG_LAST | TSR_ICI_MSG_SEM, .key = KEY,
		.len = 8, .req_end = 8, .sem_offset = 64, .sem_add = 1,
		.arrival = 1ull << 63,
	};
	uint64_t data = 0x1122334455667788ull;
	struct tsr_cmd_sem wait = sem_wait_for(s->win[0] + 64, 1);
	struct tsr_completion *rec;
	int i;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 0, 4096, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	ASSERT_EQ(0, liar_send(s, m, &data));
	rec = chip_run(a, &wait, sizeof(wait));
	EXPECT_EQ(TSR_ERR_NONE, rec->error);
	EXPECT_EQ(data, *(uint64_t *)host_ptr(a, s->win[0]));
	EXPECT_LE(TSR_ICI_ARRIVAL_MAX, rec->end_cycle);
	EXPECT_GT(TSR_ICI_ARRIVAL_MAX + 1000000, rec->end_cycle);
	EXPECT_EQ(1, port_counter(a, TSR_ICI_PORT(0, 0),
				  TSR_ICI_CNT_PROTOCOL_ERRORS));
	/* The write was answered, to the neighbour, as any other. */
	for (i = 0; i < 10000 && !own(s)->nheard; i++)
		usleep(100);
	ASSERT_EQ(1, own(s)->nheard);
	EXPECT_EQ(TSR_ICI_MSG_ANSWER, own(s)->heard[0].type);
	EXPECT_EQ(7, own(s)->heard[0].req);
	EXPECT_EQ(TSR_ERR_NONE, own(s)->heard[0].status);
	slice_free(s);
}

/*
 * A neighbour's chunks out of order (its chunk 2 after chunk 0), or a
 * request whose first chunk is not chunk 0: the first gap fails the
 * request LINK_DOWN, and nothing from it on lands, its semaphore neither.
 */
TEST(chunks_out_of_order_from_a_liar_are_refused_whole)
{
	struct slice *s = slice_with_liar();
	struct test_chip *a = s->chip[0];
	uint8_t *win = host_ptr(a, s->win[0]);
	struct tsr_ici_msg m = {
		.type = TSR_ICI_MSG_WRITE, .src = { 1, 0, 0 }, .req = 5,
		.key = KEY, .len = 8, .req_end = 32, .flags = TSR_ICI_MSG_SEM,
		.sem_offset = 64, .sem_add = 1,
	};
	uint64_t data = 0x1122334455667788ull;
	unsigned int i;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 0, 4096, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	ASSERT_EQ(0, liar_send(s, m, &data));
	m.status = 2;
	m.offset = 16;
	ASSERT_EQ(0, liar_send(s, m, &data));
	m.status = 3;
	m.offset = 24;
	m.flags |= TSR_ICI_MSG_LAST;
	ASSERT_EQ(0, liar_send(s, m, &data));
	/* Another request starting at its chunk 1, alone. */
	m.req = 6;
	m.status = 1;
	m.offset = 32;
	m.req_end = 40;
	ASSERT_EQ(0, liar_send(s, m, &data));
	for (i = 0; i < 20000 && own(s)->nheard < 2; i++)
		usleep(100);
	ASSERT_EQ(2, own(s)->nheard);
	EXPECT_EQ(5, own(s)->heard[0].req);
	EXPECT_EQ(TSR_ERR_LINK_DOWN, own(s)->heard[0].status);
	EXPECT_EQ(6, own(s)->heard[1].req);
	EXPECT_EQ(TSR_ERR_LINK_DOWN, own(s)->heard[1].status);
	EXPECT_EQ(data, *(uint64_t *)win);
	EXPECT_EQ(0, *(uint64_t *)(win + 16));
	EXPECT_EQ(0, *(uint64_t *)(win + 24));
	EXPECT_EQ(0, *(uint64_t *)(win + 32));
	EXPECT_EQ(0, *(uint64_t *)(win + 64));
	/* Not the window's doing: no violation counted. */
	EXPECT_EQ(0, rd(a, TSR_REG_ICI_VIOLATIONS));
	slice_free(s);
}

/*
 * A neighbour floods a chip with writes it must refuse, each a request of
 * its own: every one is counted, but the chip interrupts once until the
 * driver clears the cause, not once per request.
 */
TEST(a_storm_of_refused_requests_raises_one_interrupt_until_cleared)
{
	struct slice *s = slice_with_liar();
	struct test_chip *a = s->chip[0];
	struct tsr_ici_msg m = {
		.type = TSR_ICI_MSG_WRITE, .src = { 1, 0, 0 },
		.flags = TSR_ICI_MSG_LAST, .key = KEY + 1, .len = 8,
		.req_end = 8,
	};
	uint64_t data = 0;
	unsigned int i;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 0, 4096, TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	wr(a, TSR_REG_ICI_IRQ_ENABLE, TSR_ICI_IRQ_REMOTE_ACCESS);
	for (i = 0; i < 40; i++) {
		m.req = 100 + i;
		while (liar_send(s, m, &data))
			usleep(100);
	}
	for (i = 0; i < 20000 && rd(a, TSR_REG_ICI_VIOLATIONS) < 40; i++)
		usleep(100);
	EXPECT_EQ(40, rd(a, TSR_REG_ICI_VIOLATIONS));
	EXPECT_EQ(1, a->irqs[TSR_MSIX_VEC_LINK]);
	/* Cleared, the next refusal interrupts again. */
	wr(a, TSR_REG_ICI_IRQ_STATUS, TSR_ICI_IRQ_REMOTE_ACCESS);
	m.req = 1000;
	ASSERT_EQ(0, liar_send(s, m, &data));
	for (i = 0; i < 20000 && rd(a, TSR_REG_ICI_VIOLATIONS) < 41; i++)
		usleep(100);
	EXPECT_EQ(2, a->irqs[TSR_MSIX_VEC_LINK]);
	slice_free(s);
}

/*
 * A wait with SEM_WAIT_LINKS ends with LINK_DOWN as soon as one of the
 * chip's links goes down, whoever took it down; one without the flag goes
 * on waiting for its semaphore, as a wait on a chip's own work should.
 */
TEST(a_wait_on_the_links_ends_when_one_goes_down)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *b = s->chip[1];
	struct tsr_cmd_sem_wait_abort w = {
		.hdr = HDR(TSR_OP_SEM_WAIT_ABORT, struct tsr_cmd_sem_wait_abort),
		.va = s->win[1], .value = 1, .abort_va = s->win[1] + 8,
	};
	struct tsr_cmd_sem inc = {
		.hdr = HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem),
		.va = s->win[1], .value = 1,
	};
	struct runner r = { b, 0 };
	struct tsr_completion *rec;
	struct timespec t0;
	pthread_t th;

	ASSERT_TRUE(slice_wait_up(s));
	w.hdr.flags = 0x8000;
	EXPECT_EQ(TSR_ERR_BAD_FLAGS, chip_run(b, &w, sizeof(w))->error);
	w.hdr.flags = TSR_SEM_WAIT_LINKS;
	rec = chip_queue_job(b, 0, 1, &w, sizeof(w), 31);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	ASSERT_LE(0, chip_until_sem_sleeping(b, 0, 5000));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* The far end takes the link down: b's port goes down in turn. */
	wr(s->chip[0], TSR_ICI_PORT_BASE(0) + TSR_IREG_CONTROL,
	   TSR_ICI_CTRL_DOWN);
	wr(b, TSR_ICI_PORT_BASE(1) + TSR_IREG_CONTROL, TSR_ICI_CTRL_DOWN);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(TSR_ERR_LINK_DOWN, rec->error);
	EXPECT_GT(100, since_ms(&t0));
	/* Without the flag, a down link is none of the wait's business. */
	w.hdr.flags = 0;
	rec = chip_queue_job(b, 0, 1, &w, sizeof(w), 32);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	ASSERT_LE(0, chip_until_sem_sleeping(b, 0, 5000));
	EXPECT_EQ(TSR_ERR_NONE, chip_run_on(b, 1, &inc, sizeof(inc))->error);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(TSR_ERR_NONE, rec->error);
	slice_free(s);
}

/*
 * A wait on the links also ends when one of them starts afresh while it
 * waits, though none went down: the neighbour restarted, and what it was
 * sending, which the wait may be for, is lost.
 */
TEST(a_wait_on_the_links_ends_when_one_starts_afresh)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0];
	struct tsr_cmd_sem_wait_abort w = {
		.hdr = HDR(TSR_OP_SEM_WAIT_ABORT, struct tsr_cmd_sem_wait_abort),
		.va = s->win[0], .value = 1, .abort_va = s->win[0] + 8,
	};
	struct tsr_cmd_sem inc = {
		.hdr = HDR(TSR_OP_SEM_INC, struct tsr_cmd_sem),
		.va = s->win[0], .value = 1,
	};
	struct runner r = { a, 0 };
	struct tsr_completion *rec;
	pthread_t th;

	ASSERT_TRUE(slice_wait_up(s));
	w.hdr.flags = TSR_SEM_WAIT_LINKS;
	rec = chip_queue_job(a, 0, 1, &w, sizeof(w), 33);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	ASSERT_LE(0, chip_until_sem_sleeping(a, 0, 5000));
	restart_from_chip_1(_metadata, s);
	/* Woken, the wait looks at the links before the semaphore. */
	EXPECT_EQ(TSR_ERR_NONE, chip_run_on(a, 1, &inc, sizeof(inc))->error);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(TSR_ERR_LINK_DOWN, rec->error);
	/* A wait begun after the restart is not ended by it. */
	*(uint64_t *)host_ptr(a, s->win[0]) = 0;
	rec = chip_queue_job(a, 0, 1, &w, sizeof(w), 34);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	ASSERT_LE(0, chip_until_sem_sleeping(a, 0, 5000));
	EXPECT_EQ(TSR_ERR_NONE, chip_run_on(a, 1, &inc, sizeof(inc))->error);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(TSR_ERR_NONE, rec->error);
	slice_free(s);
}

struct lock_taker {
	TsrIci *ici;
	unsigned int port;
};

/* Takes the ICI lock (any call does): reading a port's state. */
static void *take_ici_lock(void *arg)
{
	struct lock_taker *t = arg;

	tsr_ici_port_state(t->ici, t->port);
	return NULL;
}

/*
 * While a queue reads a chunk into the frame it built in a lent ring, the
 * ICI lock is free (the main loop receives, other queues send), and the
 * frame is not seen by the peer yet; once read, the write lands whole, in
 * order, every chunk built in the ring.
 */
TEST(a_chunk_read_into_a_ring_leaves_the_ici_lock_free)
{
	struct slice *s = slice_new_on(2, false, TSR_ICI_TRANSPORT_RING);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c = ici_write(dst, s->src[0], 0, 1,
					       4 * TSR_ICI_MSG_MAX_DATA);
	struct lock_taker taker = { tsr_core_ici(a->core), TSR_ICI_PORT(0, 0) };
	struct runner r = { a, 0 };
	struct tsr_completion *rec;
	struct timespec until;
	pthread_t th, tt;
	int taken;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20,
			  TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	fill(host_ptr(a, s->src[0]), 4 * TSR_ICI_MSG_MAX_DATA, 5);
	chip_hold(a, s->src[0] + 2 * TSR_ICI_MSG_MAX_DATA);
	rec = chip_queue_job(a, 0, 1, &c, sizeof(c), 1);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	chip_wait_held(a);
	ASSERT_EQ(0, pthread_create(&tt, NULL, take_ici_lock, &taker));
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	taken = pthread_timedjoin_np(tt, NULL, &until);
	EXPECT_EQ(0, taken);
	/* Held: neither the chunk being read nor anything behind it. */
	EXPECT_EQ(0, ((uint8_t *)host_ptr(b, s->win[1]))[2 * TSR_ICI_MSG_MAX_DATA]);
	chip_release(a);
	if (taken)
		pthread_join(tt, NULL);
	pthread_join(th, NULL);
	EXPECT_EQ(TSR_ERR_NONE, rec->error);
	EXPECT_EQ(0, memcmp(host_ptr(b, s->win[1]), host_ptr(a, s->src[0]),
			    4 * TSR_ICI_MSG_MAX_DATA));
	EXPECT_EQ(4, slice_lent(s));
	slice_free(s);
}

/*
 * A source that faults while its chunk is read into a committed frame of
 * a lent ring fails the write with the fault; its target lands nothing of
 * that chunk or after it (it arrives as a chunk it does not await), and
 * the link goes on.
 */
TEST(a_chunk_whose_source_faults_in_a_lent_ring_lands_nothing)
{
	struct slice *s = slice_new_on(2, false, TSR_ICI_TRANSPORT_RING);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	const uint64_t va = 0x40000000, chunk = TSR_ICI_MSG_MAX_DATA;
	uint8_t dst[3] = { 1, 0, 0 }, *win = host_ptr(b, s->win[1]);
	struct tsr_cmd_ici_write c = ici_write(dst, va, 0, 1, 4 * chunk);
	static const uint8_t zero[2 * TSR_ICI_MSG_MAX_DATA];
	struct tsr_completion *comp;
	unsigned int lent;
	TsrFaults f;

	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20,
			  TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	chip_map(a, 1, va, 0, 4 << 20,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	/* Every byte of the rings written once: old frames lie under a new one. */
	fill(a->hbm, 4 << 20, 6);
	c.row_bytes = c.src_stride = c.dst_stride = 4 << 20;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	memset(win, 0, 4 << 20);
	c.row_bytes = c.src_stride = c.dst_stride = 4 * chunk;
	lent = slice_lent(s);
	tsr_core_get_faults(a->core, &f);
	f.poison_addr = 2 * chunk + 0x80;
	f.poison_size = 16;
	tsr_core_set_faults(a->core, &f);
	comp = chip_run(a, &c, sizeof(c));
	EXPECT_EQ(TSR_ERR_ECC, comp->error);
	EXPECT_EQ(va + 2 * chunk + 0x80, comp->fault_va);
	EXPECT_EQ(lent + 3, slice_lent(s));
	f.poison_size = 0;
	tsr_core_set_faults(a->core, &f);
	/* The next write on the link lands whole: it was not held up. */
	c = ici_write(dst, va, 4 * chunk, 1, 4096);
	EXPECT_EQ(TSR_ERR_NONE, chip_run(a, &c, sizeof(c))->error);
	EXPECT_EQ(0, memcmp(win + 4 * chunk, a->hbm, 4096));
	EXPECT_EQ(0, memcmp(win, a->hbm, 2 * chunk));
	EXPECT_EQ(0, memcmp(win + 2 * chunk, zero, sizeof(zero)));
	slice_free(s);
}

/*
 * A queue waiting on a semaphore (and on the links) looks at the ICI
 * without its lock each time it wakes: held long by the receive path (a
 * window table read that stalls), it neither holds the wait up nor is
 * held up by it; the wait ends when the CPU sets the semaphore.
 */
TEST(a_waiting_queue_wakes_and_ends_without_the_ici_lock)
{
	struct slice *s = slice_new(2, false);
	struct test_chip *a = s->chip[0], *b = s->chip[1];
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c = ici_write(dst, s->src[0], 0, 1, 4096);
	struct tsr_cmd_sem_wait_abort w = {
		.hdr = HDR(TSR_OP_SEM_WAIT_ABORT, struct tsr_cmd_sem_wait_abort),
		.va = s->src[1], .value = 1, .abort_va = s->src[1] + 8,
	};
	struct runner writer = { a, 0 }, waiter = { b, 1 };
	struct tsr_completion *rec;
	struct timespec until;
	pthread_t tw, tq;
	int ended;

	w.hdr.flags = TSR_SEM_WAIT_LINKS;
	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20,
			  TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	/* b's receive path stops inside its ICI lock, at the window. */
	chip_hold(b, s->table[1]);
	chip_queue_job(a, 0, 1, &c, sizeof(c), 41);
	ASSERT_EQ(0, pthread_create(&tw, NULL, run_queue, &writer));
	chip_wait_held(b);
	rec = chip_queue_job(b, 1, 1, &w, sizeof(w), 42);
	ASSERT_EQ(0, pthread_create(&tq, NULL, run_queue, &waiter));
	ASSERT_LE(0, chip_until_sem_sleeping(b, 1, 5000));
	*(uint64_t *)host_ptr(b, s->src[1]) = 1;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 2;
	ended = pthread_timedjoin_np(tq, NULL, &until);
	EXPECT_EQ(0, ended);
	chip_release(b);
	if (ended)
		pthread_join(tq, NULL);
	pthread_join(tw, NULL);
	EXPECT_EQ(TSR_ERR_NONE, rec->error);
	slice_free(s);
}

/*
 * A frame whose chunk is still being read into a lent ring is not sent
 * again meanwhile, however often its link times out: a copy taken half
 * filled would reach a peer that refused the original.  Once filled it
 * goes, and the write lands whole.
 */
TEST(a_frame_being_filled_is_not_sent_again_half_filled)
{
	struct slice *s = slice_alloc(2);
	struct test_chip *a, *b;
	uint8_t dst[3] = { 1, 0, 0 };
	struct tsr_cmd_ici_write c;
	struct runner r;
	struct tsr_completion *rec;
	unsigned int i, kept;
	pthread_t th;

	s->test = calloc(1, sizeof(struct own));
	for (i = 0; i < 2; i++) {
		TsrSlice sl = {
			.slice_id = 3, .topo = { .dims = { 2, 1, 1 } },
			.coords = { i, 0, 0 },
		};

		slice_add_chip(s, i, &sl, 8 << 20);
		/* Timeouts while the chunk is read, well inside the 7 allowed. */
		tsr_ici_set_retransmit(slice_ici(s, i), 2000000);
	}
	a = s->chip[0];
	b = s->chip[1];
	slice_join(s, 0, TSR_ICI_PORT(0, 0), 1, TSR_ICI_PORT(0, 1));
	slice_lend_rings(s);
	slice_start(s, TSR_ICI_TRANSPORT_RING);
	ASSERT_TRUE(slice_wait_up(s));
	slice_open_window(s, 1, 8 << 20,
			  TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
	fill(host_ptr(a, s->src[0]), 2 * TSR_ICI_MSG_MAX_DATA, 8);
	c = ici_write(dst, s->src[0], 0, 1, 2 * TSR_ICI_MSG_MAX_DATA);
	r = (struct runner){ a, 0 };
	chip_hold(a, s->src[0] + TSR_ICI_MSG_MAX_DATA);
	rec = chip_queue_job(a, 0, 1, &c, sizeof(c), 1);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	chip_wait_held(a);
	kept = __atomic_load_n(&kept_reads, __ATOMIC_RELAXED);
	for (i = 0; i < 20000 &&
	     port_counter(a, TSR_ICI_PORT(0, 0), TSR_ICI_CNT_TIMEOUTS) < 2; i++)
		usleep(100);
	EXPECT_LE(2, port_counter(a, TSR_ICI_PORT(0, 0), TSR_ICI_CNT_TIMEOUTS));
	EXPECT_EQ(kept, __atomic_load_n(&kept_reads, __ATOMIC_RELAXED));
	chip_release(a);
	pthread_join(th, NULL);
	EXPECT_EQ(TSR_ERR_NONE, rec->error);
	EXPECT_EQ(0, memcmp(host_ptr(b, s->win[1]), host_ptr(a, s->src[0]),
			    2 * TSR_ICI_MSG_MAX_DATA));
	slice_free(s);
}

/*
 * A gate on what chip 0's port 1 sends: a sender waits there, holding
 * the chip's ICI lock, until the test opens it.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool closed, waiting;
} gate = { .lock = PTHREAD_MUTEX_INITIALIZER,
	    .cond = PTHREAD_COND_INITIALIZER };

static size_t gated_out(struct test_chip *c, unsigned int port,
			const void *buf, size_t len)
{
	pthread_mutex_lock(&gate.lock);
	gate.waiting = port == TSR_ICI_PORT(0, 1);
	pthread_cond_broadcast(&gate.cond);
	while (gate.closed && port == TSR_ICI_PORT(0, 1))
		pthread_cond_wait(&gate.cond, &gate.lock);
	pthread_mutex_unlock(&gate.lock);
	return slice_out(c, port, buf, len);
}

struct gated_call {
	struct slice *s;
	pid_t tid;
	const void *buf;
	size_t len;
};

static void *retrain_port_1(void *arg)
{
	struct gated_call *g = arg;

	tsr_ici_port_control(slice_ici(g->s, 0), TSR_ICI_PORT(0, 1),
			     TSR_ICI_CTRL_RETRAIN);
	return NULL;
}

static void *receive_on_port_0(void *arg)
{
	struct gated_call *g = arg;

	__atomic_store_n(&g->tid, gettid(), __ATOMIC_RELEASE);
	tsr_ici_receive(slice_ici(g->s, 0), TSR_ICI_PORT(0, 0), g->buf,
			g->len);
	return NULL;
}

static void *poll_chip_0(void *arg)
{
	struct gated_call *g = arg;

	__atomic_store_n(&g->tid, gettid(), __ATOMIC_RELEASE);
	tsr_ici_poll(slice_ici(g->s, 0));
	return NULL;
}

/* Wait (2 s at most) until the thread @g started sleeps (on a lock). */
static bool asleep(struct gated_call *g)
{
	char path[64], stat[256], *state;
	int i;

	for (i = 0; i < 20000; i++, usleep(100)) {
		pid_t tid = __atomic_load_n(&g->tid, __ATOMIC_ACQUIRE);
		FILE *f;

		if (!tid)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
		f = fopen(path, "r");
		if (!f)
			continue;
		state = fgets(stat, sizeof(stat), f) ? strrchr(stat, ')') : NULL;
		fclose(f);
		if (state && state[1] == ' ' && state[2] == 'S')
			return true;
	}
	return false;
}

/*
 * The links' timer and a receiving thread (QEMU's tessera-ici-rx) take
 * turns at a chip's ICI lock.  The timer waits for it while the peer's
 * frame is read; the frame is heard after the timer's call began, and
 * must not make the timer find the peer silent since before it was ever
 * heard (now - heard_at wrapping): the keepalive due then sees a peer
 * just heard, and the link stays up.  Chip 0's lock is held by a retrain
 * of its other port, stopped in its send; the receive queues for the
 * lock first, then the timer's poll, and the lock goes to them in turn.
 */
TEST(a_frame_read_while_the_links_timer_waits_for_the_lock_keeps_the_link)
{
	struct slice *s = slice_alloc(2);
	struct gated_call a, r, p;
	pthread_t ta, tr, tp;
	struct wire *w;
	unsigned int i;
	uint8_t *frame;
	size_t len;

	s->test = calloc(1, sizeof(struct own));
	for (i = 0; i < 2; i++) {
		TsrSlice sl = {
			.slice_id = 3,
			.topo = { .dims = { 2, 1, 1 }, .wrap = { true } },
			.coords = { i, 0, 0 },
		};

		slice_add_chip(s, i, &sl, 8 << 20);
		/* A poll up to a second late is on time (not overslept). */
		tsr_ici_set_retransmit(slice_ici(s, i), 1000000000);
	}
	slice_join(s, 0, TSR_ICI_PORT(0, 0), 1, TSR_ICI_PORT(0, 1));
	slice_join(s, 1, TSR_ICI_PORT(0, 0), 0, TSR_ICI_PORT(0, 1));
	slice_start(s, TSR_ICI_TRANSPORT_SOCKET);
	ASSERT_TRUE(slice_wait_up(s));
	s->stop = true;
	pthread_join(s->pump, NULL);

	/* Past chip 0's keepalive (100 ms), chip 1 probes both its ports. */
	usleep(150000);
	tsr_ici_poll(slice_ici(s, 1));
	w = s->wires[1][TSR_ICI_PORT(0, 1)];
	ASSERT_EQ(0, w->to_chip);
	ASSERT_EQ(TSR_ICI_PORT(0, 0), w->to_port);
	len = slice_wire_left(w);
	ASSERT_LT(0, len);
	frame = malloc(len);
	memcpy(frame, w->buf, len);
	w->len = 0;

	gate.closed = true;
	s->chip[0]->ici_out = gated_out;
	a = (struct gated_call){ .s = s };
	ASSERT_EQ(0, pthread_create(&ta, NULL, retrain_port_1, &a));
	pthread_mutex_lock(&gate.lock);
	while (!gate.waiting)
		pthread_cond_wait(&gate.cond, &gate.lock);
	pthread_mutex_unlock(&gate.lock);
	r = (struct gated_call){ .s = s, .buf = frame, .len = len };
	ASSERT_EQ(0, pthread_create(&tr, NULL, receive_on_port_0, &r));
	ASSERT_TRUE(asleep(&r));
	p = (struct gated_call){ .s = s };
	ASSERT_EQ(0, pthread_create(&tp, NULL, poll_chip_0, &p));
	ASSERT_TRUE(asleep(&p));
	pthread_mutex_lock(&gate.lock);
	gate.closed = false;
	pthread_cond_broadcast(&gate.cond);
	pthread_mutex_unlock(&gate.lock);
	pthread_join(ta, NULL);
	pthread_join(tr, NULL);
	pthread_join(tp, NULL);

	EXPECT_EQ(TSR_ICI_STATE_UP,
		  tsr_ici_port_state(slice_ici(s, 0), TSR_ICI_PORT(0, 0)));
	EXPECT_EQ(0, port_counter(s->chip[0], TSR_ICI_PORT(0, 0),
				  TSR_ICI_CNT_TIMEOUTS));
	EXPECT_EQ(0, port_counter(s->chip[0], TSR_ICI_PORT(0, 0),
				  TSR_ICI_CNT_LINK_DOWNS));
	s->chip[0]->ici_out = slice_out;
	free(frame);
	s->stop = false;
	pthread_create(&s->pump, NULL, slice_pump, s);
	slice_free(s);
}

TEST_HARNESS_MAIN
