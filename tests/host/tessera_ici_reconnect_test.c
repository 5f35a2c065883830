// SPDX-License-Identifier: GPL-2.0
/*
 * A job rides out a lost connection (Documentation/ici.md, "Ports over
 * TCP"): chips in one process, their links on wires that are cut as a TCP
 * connection is (both ends told, the bytes on the wire lost) and mended.
 * Cut and back within the link's deadline, a write across the cut lands
 * exactly once and its job ends well, wherever the cut falls, and a wait
 * on the links goes on; cut for longer, the port goes down and both end
 * with LINK_DOWN, as for a dead peer.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "kselftest_harness.h"
#include "ici_slice.h"

#define WIN_SIZE	(4u << 20)
#define SEM_OFFSET	(3u << 20)
/* How long a short cut lasts: well inside the link's 0.955 s. */
#define SHORT_CUT_US	50000
/* A write of this many chunks. */
#define CHUNKS		8

/* Chips along x, chip i's +x port linked to chip i + 1's -x port. */
static struct slice *line_new(unsigned int n)
{
	struct slice *l = slice_alloc(n);
	unsigned int i;

	for (i = 0; i < n; i++) {
		TsrSlice sl = {
			.slice_id = 5,
			.topo = { .dims = { n, 1, 1 } },
			.coords = { i, 0, 0 },
		};

		slice_add_chip(l, i, &sl, WIN_SIZE);
	}
	for (i = 0; i + 1 < n; i++)
		slice_join(l, i, TSR_ICI_PORT(0, 0), i + 1, TSR_ICI_PORT(0, 1));
	slice_start(l, TSR_ICI_TRANSPORT_SOCKET);
	return l;
}

static void line_free(struct slice *l)
{
	slice_stop(l);
	free(l);
}

static uint32_t port_state(struct slice *l, unsigned int i, unsigned int port)
{
	return tsr_ici_port_state(slice_ici(l, i), port);
}

/* Port @port of chip @i in @state, or the last state seen after @ms. */
static uint32_t wait_state(struct slice *l, unsigned int i, unsigned int port,
			   uint32_t state, int ms)
{
	for (; ms > 0 && port_state(l, i, port) != state; ms--)
		usleep(1000);
	return port_state(l, i, port);
}

/*
 * The connection of link @i (chip i to chip i + 1) is lost, as a TCP
 * connection reset by the network: both ends are told, and what either
 * wrote that the other has not read is gone.
 */
static void cut(struct slice *l, unsigned int i)
{
	struct wire *w[2] = { l->wires[i][TSR_ICI_PORT(0, 0)],
			      l->wires[i + 1][TSR_ICI_PORT(0, 1)] };
	unsigned int k;

	pthread_mutex_lock(&l->carry);
	tsr_ici_disconnected(slice_ici(l, i), TSR_ICI_PORT(0, 0));
	tsr_ici_disconnected(slice_ici(l, i + 1), TSR_ICI_PORT(0, 1));
	for (k = 0; k < 2; k++) {
		pthread_mutex_lock(&w[k]->lock);
		w[k]->len = 0;
		w[k]->frozen = false;
		pthread_mutex_unlock(&w[k]->lock);
	}
	pthread_mutex_unlock(&l->carry);
}

/* Link @i's connection is back (the client end reconnected). */
static void mend(struct slice *l, unsigned int i)
{
	pthread_mutex_lock(&l->carry);
	tsr_ici_connected(slice_ici(l, i), TSR_ICI_PORT(0, 0));
	tsr_ici_connected(slice_ici(l, i + 1), TSR_ICI_PORT(0, 1));
	pthread_mutex_unlock(&l->carry);
}

/* Window 0 of chip @i: its whole window, writable, KEY. */
static void open_window(struct slice *l, unsigned int i)
{
	slice_open_window(l, i, WIN_SIZE,
			  TSR_ICI_WINDOW_VALID | TSR_ICI_WINDOW_WRITE);
}

/*
 * Chip 0's write of @len bytes of its source to chip @to's window, adding
 * 1 to the semaphore at SEM_OFFSET there once they are in.
 */
static struct tsr_cmd_ici_write write_to(struct slice *l, unsigned int to,
					 uint32_t len)
{
	struct tsr_cmd_ici_write c = {
		.hdr = HDR(TSR_OP_ICI_WRITE, struct tsr_cmd_ici_write),
		.dst = { to, 0, 0 }, .key = KEY, .src = l->src[0],
		.src_stride = len, .dst_stride = len, .rows = 1,
		.row_bytes = len, .sem_offset = SEM_OFFSET, .sem_add = 1,
	};
	uint8_t *src = host_ptr(l->chip[0], l->src[0]);
	uint32_t k;

	c.hdr.flags = TSR_ICI_WRITE_SEM;
	for (k = 0; k < len; k++)
		src[k] = (uint8_t)(k * 13 + (k >> 11));
	return c;
}

static uint64_t sem_at(struct slice *l, unsigned int i)
{
	return __atomic_load_n((uint64_t *)host_ptr(l->chip[i],
						    l->win[i] + SEM_OFFSET),
			       __ATOMIC_ACQUIRE);
}

static bool landed(struct slice *l, unsigned int to, uint32_t len)
{
	return !memcmp(host_ptr(l->chip[to], l->win[to]),
		       host_ptr(l->chip[0], l->src[0]), len);
}

static uint64_t link_downs(struct slice *l, unsigned int i, unsigned int port)
{
	return port_counter(l->chip[i], port, TSR_ICI_CNT_LINK_DOWNS);
}

static bool irq_link_down(struct slice *l, unsigned int i)
{
	return rd(l->chip[i], TSR_REG_ICI_IRQ_STATUS) & TSR_ICI_IRQ_LINK_DOWN;
}

/*
 * What a job across a short cut must show: it ended well, its bytes and
 * its semaphore landed once, and no end of link @i went down or told its
 * chip so.
 */
static void rode_out(struct __test_metadata *_metadata, struct slice *l,
		     unsigned int i, unsigned int to,
		     const struct tsr_completion *rec, uint32_t len)
{
	EXPECT_EQ(TSR_JOB_STATUS_DONE, rec->status);
	EXPECT_EQ(TSR_ERR_NONE, rec->error);
	EXPECT_TRUE(landed(l, to, len));
	EXPECT_EQ(1, sem_at(l, to));
	EXPECT_TRUE(slice_up(l));
	EXPECT_EQ(0, link_downs(l, i, TSR_ICI_PORT(0, 0)));
	EXPECT_EQ(0, link_downs(l, i + 1, TSR_ICI_PORT(0, 1)));
	EXPECT_FALSE(irq_link_down(l, i));
	EXPECT_FALSE(irq_link_down(l, i + 1));
}

/* The cut comes first: the write waits for its link and then goes. */
TEST(a_write_started_while_its_link_is_cut_goes_once_it_is_back)
{
	struct slice *l = line_new(2);
	uint32_t len = CHUNKS * TSR_ICI_MSG_MAX_DATA;
	struct tsr_cmd_ici_write c = write_to(l, 1, len);
	struct runner r = { l->chip[0], 0 };
	struct tsr_completion *rec;
	pthread_t th;

	ASSERT_TRUE(slice_wait_up(l));
	open_window(l, 1);
	cut(l, 0);
	rec = chip_queue_job(l->chip[0], 0, 1, &c, sizeof(c), 1);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	usleep(SHORT_CUT_US);
	EXPECT_EQ(TSR_ICI_STATE_DISCONNECTED, port_state(l, 0, 0));
	mend(l, 0);
	ASSERT_EQ(0, pthread_join(th, NULL));
	rode_out(_metadata, l, 0, 1, rec, len);
	line_free(l);
}

/*
 * The cut falls between two chunks: those sent are resent if the peer
 * missed them, the rest wait, and the semaphore is added once.
 */
TEST(a_write_cut_between_its_chunks_lands_once)
{
	struct slice *l = line_new(2);
	uint32_t len = CHUNKS * TSR_ICI_MSG_MAX_DATA;
	struct tsr_cmd_ici_write c = write_to(l, 1, len);
	struct runner r = { l->chip[0], 0 };
	struct tsr_completion *rec;
	pthread_t th;

	ASSERT_TRUE(slice_wait_up(l));
	open_window(l, 1);
	/* Two chunks sent (perhaps still on the wire), the third read. */
	chip_hold(l->chip[0], l->src[0] + 2 * TSR_ICI_MSG_MAX_DATA);
	rec = chip_queue_job(l->chip[0], 0, 1, &c, sizeof(c), 2);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	chip_wait_held(l->chip[0]);
	cut(l, 0);
	chip_release(l->chip[0]);
	usleep(SHORT_CUT_US);
	mend(l, 0);
	ASSERT_EQ(0, pthread_join(th, NULL));
	rode_out(_metadata, l, 0, 1, rec, len);
	line_free(l);
}

/*
 * The cut falls after the target took the whole write, its answer (and
 * the acknowledgements) still on the wire back: the answer is resent
 * after the cut, and nothing of the write is applied twice.
 */
TEST(a_write_cut_while_it_waits_for_its_answer_ends_well_once)
{
	struct slice *l = line_new(2);
	uint32_t len = CHUNKS * TSR_ICI_MSG_MAX_DATA;
	struct tsr_cmd_ici_write c = write_to(l, 1, len);
	struct runner r = { l->chip[0], 0 };
	struct tsr_completion *rec;
	pthread_t th;
	int i;

	ASSERT_TRUE(slice_wait_up(l));
	open_window(l, 1);
	l->wires[1][TSR_ICI_PORT(0, 1)]->frozen = true;
	rec = chip_queue_job(l->chip[0], 0, 1, &c, sizeof(c), 3);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	for (i = 0; i < 50000 && !sem_at(l, 1); i++)
		usleep(100);
	ASSERT_EQ(1, sem_at(l, 1));
	cut(l, 0);
	usleep(SHORT_CUT_US);
	EXPECT_NE(TSR_JOB_STATUS_DONE, rec->status);
	mend(l, 0);
	ASSERT_EQ(0, pthread_join(th, NULL));
	rode_out(_metadata, l, 0, 1, rec, len);
	line_free(l);
}

/* A chip on the way holds a write for a link that is cut, and sends it on. */
TEST(a_write_forwarded_towards_a_cut_link_goes_on_once_it_is_back)
{
	struct slice *l = line_new(3);
	uint32_t len = CHUNKS * TSR_ICI_MSG_MAX_DATA;
	struct tsr_cmd_ici_write c = write_to(l, 2, len);
	struct runner r = { l->chip[0], 0 };
	struct tsr_completion *rec;
	pthread_t th;

	ASSERT_TRUE(slice_wait_up(l));
	open_window(l, 2);
	cut(l, 1);
	rec = chip_queue_job(l->chip[0], 0, 1, &c, sizeof(c), 4);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	usleep(SHORT_CUT_US);
	mend(l, 1);
	ASSERT_EQ(0, pthread_join(th, NULL));
	rode_out(_metadata, l, 1, 2, rec, len);
	EXPECT_EQ(0, link_downs(l, 0, TSR_ICI_PORT(0, 0)));
	line_free(l);
}

/*
 * A wait on the links (SEM_WAIT_LINKS, the collectives' waits) goes on
 * across a short cut and ends when its semaphore is added to after it;
 * kept cut past the link's deadline, the port goes down and the next
 * such wait ends LINK_DOWN.
 */
TEST(a_wait_on_the_links_goes_on_across_a_cut_and_ends_past_the_deadline)
{
	struct slice *l = line_new(2);
	struct test_chip *b = l->chip[1];
	struct tsr_cmd_sem_wait_abort w = {
		.hdr = HDR(TSR_OP_SEM_WAIT_ABORT, struct tsr_cmd_sem_wait_abort),
		.va = l->win[1] + SEM_OFFSET, .value = 1,
		.abort_va = l->win[1] + SEM_OFFSET + 8,
	};
	struct tsr_cmd_ici_write c = write_to(l, 1, 4096);
	struct runner r = { b, 0 };
	struct tsr_completion *rec;
	struct timespec t0;
	pthread_t th;

	ASSERT_TRUE(slice_wait_up(l));
	open_window(l, 1);
	w.hdr.flags = TSR_SEM_WAIT_LINKS;
	rec = chip_queue_job(b, 0, 1, &w, sizeof(w), 5);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	ASSERT_LE(0, chip_until_sem_sleeping(b, 0, 5000));
	cut(l, 0);
	usleep(SHORT_CUT_US);
	EXPECT_LE(0, chip_until_sem_sleeping(b, 0, 0));
	mend(l, 0);
	ASSERT_TRUE(slice_wait_up(l));
	EXPECT_EQ(TSR_ERR_NONE, chip_run(l->chip[0], &c, sizeof(c))->error);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(TSR_ERR_NONE, rec->error);
	EXPECT_FALSE(irq_link_down(l, 1));

	w.value = 2;
	rec = chip_queue_job(b, 0, 1, &w, sizeof(w), 6);
	ASSERT_EQ(0, pthread_create(&th, NULL, run_queue, &r));
	ASSERT_LE(0, chip_until_sem_sleeping(b, 0, 5000));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cut(l, 0);
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(TSR_ERR_LINK_DOWN, rec->error);
	/* The link's 0.955 s for a silent peer, and no more than a little. */
	EXPECT_LT(500, since_ms(&t0));
	EXPECT_GT(1500, since_ms(&t0));
	EXPECT_EQ(TSR_ICI_STATE_DOWN, port_state(l, 1, TSR_ICI_PORT(0, 1)));
	EXPECT_TRUE(irq_link_down(l, 1));
	line_free(l);
}

/*
 * Kept cut past the link's deadline: both ends go down by themselves,
 * tell their chips (LINK_DOWN), and the write waiting for the link fails
 * LINK_DOWN within the bound a dead peer's does.  Once the connection is
 * back the link trains afresh and carries writes again.
 */
TEST(a_cut_past_the_deadline_takes_the_port_down_and_fails_the_write)
{
	struct slice *l = line_new(2);
	uint32_t len = CHUNKS * TSR_ICI_MSG_MAX_DATA;
	struct tsr_cmd_ici_write c = write_to(l, 1, len);
	struct tsr_completion *rec;
	struct timespec t0;

	ASSERT_TRUE(slice_wait_up(l));
	open_window(l, 1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cut(l, 0);
	rec = chip_run(l->chip[0], &c, sizeof(c));
	EXPECT_EQ(TSR_ERR_LINK_DOWN, rec->error);
	EXPECT_LT(500, since_ms(&t0));
	EXPECT_GT(1500, since_ms(&t0));
	EXPECT_EQ(TSR_ICI_STATE_DOWN, port_state(l, 0, TSR_ICI_PORT(0, 0)));
	/* The far end heard its peer last a little later, or earlier. */
	EXPECT_EQ(TSR_ICI_STATE_DOWN,
		  wait_state(l, 1, TSR_ICI_PORT(0, 1), TSR_ICI_STATE_DOWN,
			     1500 - since_ms(&t0)));
	EXPECT_GT(1500, since_ms(&t0));
	EXPECT_EQ(1, link_downs(l, 0, TSR_ICI_PORT(0, 0)));
	EXPECT_EQ(1, link_downs(l, 1, TSR_ICI_PORT(0, 1)));
	EXPECT_TRUE(irq_link_down(l, 0));
	EXPECT_TRUE(irq_link_down(l, 1));
	EXPECT_EQ(0, sem_at(l, 1));

	mend(l, 0);
	ASSERT_TRUE(slice_wait_up(l));
	EXPECT_EQ(TSR_ERR_NONE, chip_run(l->chip[0], &c, sizeof(c))->error);
	EXPECT_TRUE(landed(l, 1, len));
	EXPECT_EQ(1, sem_at(l, 1));
	line_free(l);
}

TEST_HARNESS_MAIN
