// SPDX-License-Identifier: GPL-2.0
/*
 * The ICI shared-memory transport on the host: a ring created by one side
 * and opened by the other (through a second descriptor of its memfd, as a
 * peer gets it over SCM_RIGHTS), its bytes, its doorbells, and what a
 * hostile other side can do to it: counts past the end or behind,
 * unsealed or resized files, bytes rewritten while they are read.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "tessera-link.h"
#include "tessera-ring.h"

#define SIZE	TSR_ICI_RING_MIN

FIXTURE(ring) {
	TsrRing *tx, *rx;
	int fd;
	/* The producer's header, as a hostile producer or consumer sees it. */
	struct tsr_ici_ring_hdr *hdr;
};

FIXTURE_SETUP(ring)
{
	const char *why;

	self->tx = tsr_ring_create(SIZE, &self->fd);
	ASSERT_NE(NULL, self->tx);
	self->rx = tsr_ring_open(dup(self->fd), SIZE, &why);
	ASSERT_NE(NULL, self->rx) TH_LOG("%s", why);
	self->hdr = mmap(NULL, TSR_ICI_RING_HDR_SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED, self->fd, 0);
	ASSERT_NE(MAP_FAILED, self->hdr);
}

FIXTURE_TEARDOWN(ring)
{
	munmap(self->hdr, TSR_ICI_RING_HDR_SIZE);
	tsr_ring_free(self->rx);
	tsr_ring_free(self->tx);
}

static void pattern(uint8_t *p, size_t n, uint64_t from)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)((from + i) * 131 + ((from + i) >> 11));
}

/*
 * Pieces of every size cross the end of the data many times; the reader
 * sees each run whole (the mirror), in order, exactly as written.
 */
TEST_F(ring, bytes_arrive_in_order_and_whole_across_the_wrap)
{
	static uint8_t out[SIZE], want[SIZE];
	uint64_t written = 0, read = 0;
	unsigned int step;

	for (step = 0; step < 4000; step++) {
		size_t len = 1 + (step * 7919u) % (SIZE / 3), n, avail;
		const uint8_t *p;

		pattern(out, len, written);
		n = tsr_ring_write(self->tx, out, len);
		written += n;
		p = tsr_ring_peek(self->rx, &avail);
		ASSERT_NE(NULL, p);
		ASSERT_EQ(written - read, avail);
		/* Take all but a little, so that the counts drift. */
		n = avail > 100 ? avail - step % 100 : avail;
		pattern(want, n, read);
		ASSERT_EQ(0, memcmp(p, want, n)) TH_LOG("at byte %llu",
							(unsigned long long)read);
		tsr_ring_consume(self->rx, n);
		read += n;
	}
	EXPECT_LT(20 * SIZE, written);
	EXPECT_FALSE(tsr_ring_broken(self->tx));
	EXPECT_FALSE(tsr_ring_broken(self->rx));
}

TEST_F(ring, a_full_ring_takes_nothing_and_its_producer_is_rung_for_room)
{
	static uint8_t buf[SIZE + 100];
	size_t avail;

	EXPECT_EQ(SIZE, tsr_ring_write(self->tx, buf, sizeof(buf)));
	EXPECT_EQ(0, tsr_ring_write(self->tx, buf, 1));
	/* Full: the producer asks to be rung, and nobody rings it yet. */
	EXPECT_FALSE(tsr_ring_wait_room(self->tx));
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &avail));
	tsr_ring_consume(self->rx, 10);
	EXPECT_TRUE(tsr_ring_room_doorbell(self->rx));
	/* Once per wait. */
	tsr_ring_consume(self->rx, 10);
	EXPECT_FALSE(tsr_ring_room_doorbell(self->rx));
	EXPECT_TRUE(tsr_ring_wait_room(self->tx));
	EXPECT_EQ(20, tsr_ring_write(self->tx, buf, 100));
}

/*
 * The consumer is rung only when it said it sleeps, once per sleep; one
 * that finds bytes while saying so reads them rather than sleep.
 */
TEST_F(ring, doorbells_ring_only_for_a_sleeper_and_once)
{
	uint8_t b[8] = { 1 };
	size_t n;

	EXPECT_EQ(8, tsr_ring_write(self->tx, b, 8));
	EXPECT_FALSE(tsr_ring_data_doorbell(self->tx));
	/* Bytes are there: do not sleep. */
	EXPECT_TRUE(tsr_ring_wait_data(self->rx));
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	tsr_ring_consume(self->rx, n);
	EXPECT_FALSE(tsr_ring_wait_data(self->rx));
	EXPECT_EQ(8, tsr_ring_write(self->tx, b, 8));
	EXPECT_TRUE(tsr_ring_data_doorbell(self->tx));
	EXPECT_EQ(8, tsr_ring_write(self->tx, b, 8));
	EXPECT_FALSE(tsr_ring_data_doorbell(self->tx));
}

/* A producer's head past the end, or behind the tail, breaks the ring. */
TEST_F(ring, a_head_out_of_range_breaks_the_ring_and_nothing_is_read)
{
	uint64_t bad[] = { SIZE + 1, ~0ull, 1ull << 63 };
	unsigned int i;
	size_t n;

	for (i = 0; i < 3; i++) {
		const char *why;
		TsrRing *rx = tsr_ring_open(dup(self->fd), SIZE, &why);

		ASSERT_NE(NULL, rx);
		self->hdr->head = bad[i];
		EXPECT_EQ(NULL, tsr_ring_peek(rx, &n));
		EXPECT_EQ(0, n);
		EXPECT_TRUE(tsr_ring_broken(rx));
		/* Broken, it is never waited on: look (and fail) again. */
		EXPECT_TRUE(tsr_ring_wait_data(rx));
		tsr_ring_free(rx);
		self->hdr->head = 0;
	}
}

/* A consumer's tail past the head, or too far behind, stops the producer. */
TEST_F(ring, a_tail_out_of_range_breaks_the_ring_and_nothing_is_written)
{
	uint8_t b[16] = { 0 };

	EXPECT_EQ(16, tsr_ring_write(self->tx, b, 16));
	self->hdr->tail = 17;
	EXPECT_EQ(0, tsr_ring_write(self->tx, b, 16));
	EXPECT_TRUE(tsr_ring_broken(self->tx));
	EXPECT_FALSE(tsr_ring_data_doorbell(self->tx));
}

/*
 * A frame built in place (reserved, written, committed) reaches the
 * consumer as a written one does; one reserved and never committed sends
 * nothing.
 */
TEST_F(ring, a_reserved_frame_is_sent_only_once_committed)
{
	uint8_t *p = tsr_ring_reserve(self->tx, 100);
	const uint8_t *q;
	size_t n;

	ASSERT_NE(NULL, p);
	memset(p, 0xab, 100);
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	EXPECT_EQ(0, n);
	p = tsr_ring_reserve(self->tx, 60);
	ASSERT_NE(NULL, p);
	pattern(p, 60, 0);
	EXPECT_EQ(0, tsr_ring_commit(self->tx, 60, false));
	q = tsr_ring_peek(self->rx, &n);
	ASSERT_EQ(60, n);
	for (n = 0; n < 60; n++)
		ASSERT_EQ(p[n], q[n]);
	/* More than the ring holds, or nothing, is never reserved. */
	EXPECT_EQ(NULL, tsr_ring_reserve(self->tx, SIZE - 59));
	EXPECT_EQ(NULL, tsr_ring_reserve(self->tx, 0));
}

/*
 * Kept bytes (a link's replay buffer) are not written over once read, by
 * a write or a reservation, until released; they stay whole across the
 * wrap and are found only where they are kept.
 */
TEST_F(ring, kept_bytes_are_not_written_over_until_released)
{
	static uint8_t junk[SIZE];
	const uint64_t start = SIZE - 50;	/* the frame crosses the end */
	const uint8_t *k;
	uint8_t want[200];
	uint64_t pos;
	size_t n;

	EXPECT_EQ(start, tsr_ring_write(self->tx, junk, start));
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	tsr_ring_consume(self->rx, n);
	pattern(want, sizeof(want), 7);
	memcpy(tsr_ring_reserve(self->tx, 200), want, 200);
	pos = tsr_ring_commit(self->tx, 200, true);
	EXPECT_EQ(start, pos);
	/* Read, and the ring filled again: all but the kept bytes. */
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	tsr_ring_consume(self->rx, n);
	memset(junk, 0xee, sizeof(junk));
	EXPECT_EQ(SIZE - 200, tsr_ring_write(self->tx, junk, SIZE));
	EXPECT_EQ(0, tsr_ring_write(self->tx, junk, 1));
	EXPECT_EQ(NULL, tsr_ring_reserve(self->tx, 1));
	k = tsr_ring_kept(self->tx, pos, 200);
	ASSERT_NE(NULL, k);
	EXPECT_EQ(0, memcmp(want, k, 200));
	EXPECT_EQ(NULL, tsr_ring_kept(self->tx, pos - 1, 10));
	EXPECT_EQ(NULL, tsr_ring_kept(self->tx, pos + 150, 51));
	EXPECT_FALSE(tsr_ring_broken(self->tx));
	/* Half released: half the room back, the rest still kept. */
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	tsr_ring_consume(self->rx, n);
	tsr_ring_release(self->tx, pos + 100);
	EXPECT_EQ(NULL, tsr_ring_kept(self->tx, pos, 200));
	EXPECT_EQ(0, memcmp(want + 100, tsr_ring_kept(self->tx, pos + 100, 100),
			    100));
	EXPECT_EQ(100, tsr_ring_write(self->tx, junk, SIZE));
	/* All released: only what the consumer has not read limits it. */
	tsr_ring_release(self->tx, ~0ull);
	EXPECT_EQ(SIZE - 100, tsr_ring_write(self->tx, junk, SIZE));
	EXPECT_EQ(NULL, tsr_ring_kept(self->tx, pos + 100, 1));
}

static int plain_memfd(size_t len, bool seal)
{
	int fd = memfd_create("not-a-ring", MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, len))
		return -1;
	if (seal)
		fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW);
	return fd;
}

/*
 * What a HELLO may come with: a file that can shrink under the mapping
 * (a SIGBUS waiting to happen), of another size, not a file at all, a
 * header that is not a ring's, counts already far apart.  Each is
 * refused with its reason, and nothing is mapped.
 */
TEST(a_peer_ring_that_is_not_sound_is_refused_with_its_reason)
{
	const size_t len = TSR_ICI_RING_HDR_SIZE + SIZE;
	struct tsr_ici_ring_hdr *h;
	const char *why;
	int pipefd[2], fd;

	fd = plain_memfd(len, false);
	EXPECT_EQ(NULL, tsr_ring_open(fd, SIZE, &why));
	EXPECT_NE(NULL, strstr(why, "sealed"));

	fd = plain_memfd(len - 4096, true);
	EXPECT_EQ(NULL, tsr_ring_open(fd, SIZE, &why));
	EXPECT_NE(NULL, strstr(why, "size"));

	ASSERT_EQ(0, pipe(pipefd));
	close(pipefd[1]);
	EXPECT_EQ(NULL, tsr_ring_open(pipefd[0], SIZE, &why));
	EXPECT_NE(NULL, strstr(why, "memfd"));

	fd = plain_memfd(len, true);
	EXPECT_EQ(NULL, tsr_ring_open(fd, SIZE, &why));
	EXPECT_NE(NULL, strstr(why, "header"));

	fd = plain_memfd(len, true);
	h = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, h);
	h->magic = TSR_ICI_RING_MAGIC;
	h->size = SIZE;
	h->head = 5 * SIZE;
	EXPECT_EQ(NULL, tsr_ring_open(dup(fd), SIZE, &why));
	EXPECT_NE(NULL, strstr(why, "apart"));
	EXPECT_EQ(NULL, tsr_ring_open(fd, 3 * SIZE, &why));
	EXPECT_NE(NULL, strstr(why, "power of two"));
	munmap(h, 4096);
}

/* ----------------------------------------------- a link over the ring */

struct scribbler {
	uint8_t *data;
	volatile bool stop;
	uint64_t seed;
};

static void *scribble(void *arg)
{
	struct scribbler *s = arg;

	while (!s->stop) {
		s->seed = s->seed * 6364136223846793005ull + 1;
		s->data[(s->seed >> 20) % SIZE] ^= (uint8_t)(s->seed >> 40);
	}
	return NULL;
}

struct sink {
	unsigned int delivered;
	uint64_t bytes;
};

static size_t into_void(void *opaque, const void *buf, size_t len)
{
	return len;
}

static bool sink_deliver(void *opaque, unsigned int vc, const void *p,
			 size_t len)
{
	struct sink *k = opaque;

	k->delivered++;
	k->bytes += len;
	return true;
}

static const TsrLinkOps sink_ops = {
	.wire_write = into_void,
	.deliver = sink_deliver,
};

/*
 * A hostile producer rewrites bytes (frames, headers, lengths) in the
 * ring while the consumer's link layer reads them where they lie: the
 * link takes whatever still checks out, counts the rest, and never reads
 * outside what the ring gave it.  (Run it under valgrind or ASan to see
 * the last part; here it must simply not crash or hang.)
 */
TEST_F(ring, a_link_reading_a_ring_being_rewritten_survives_and_counts)
{
	TsrLinkConfig cfg = {
		.self = { .slice_id = 1, .coords = { 0 }, .port = 0 },
		.peer = { .slice_id = 1, .coords = { 1 }, .port = 1 },
		.window = 32, .rx_slots = 8, .tx_slots = 8,
		.retransmit_ns = 1000000, .retry_limit = 7,
	};
	struct scribbler sc = { .seed = 42 };
	struct sink k = { 0 };
	TsrLink *link = tsr_link_new(&cfg, &sink_ops, &k);
	static uint8_t junk[SIZE / 4];
	TsrLinkCounters c;
	pthread_t t;
	unsigned int i;

	/* The producer's data area: the scribbler's reach. */
	sc.data = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
		       self->fd, TSR_ICI_RING_HDR_SIZE);
	ASSERT_NE(MAP_FAILED, sc.data);
	tsr_link_connected(link, 0);
	pattern(junk, sizeof(junk), 7);
	ASSERT_EQ(0, pthread_create(&t, NULL, scribble, &sc));
	for (i = 0; i < 2000; i++) {
		const uint8_t *p;
		size_t n;

		tsr_ring_write(self->tx, junk, sizeof(junk));
		p = tsr_ring_peek(self->rx, &n);
		ASSERT_NE(NULL, p);
		tsr_link_receive(link, p, n, i * 1000);
		tsr_ring_consume(self->rx, n);
	}
	sc.stop = true;
	pthread_join(t, NULL);
	tsr_link_get_counters(link, &c);
	EXPECT_LT(0, c.crc_errors);
	EXPECT_EQ(0, k.delivered);
	munmap(sc.data, SIZE);
	tsr_link_free(link);
}

/*
 * A frame committed while held (a chunk still being read into it) is not
 * seen, nor is what is written behind it, nor is a sleeping consumer rung,
 * until the last hold ends; then all of it, in order, with one ring.
 */
TEST_F(ring, held_bytes_and_those_behind_them_are_seen_only_at_the_last_unhold)
{
	uint8_t want[300], *p;
	const uint8_t *q;
	size_t n;

	pattern(want, sizeof(want), 3);
	EXPECT_FALSE(tsr_ring_wait_data(self->rx));
	tsr_ring_hold(self->tx);
	p = tsr_ring_reserve(self->tx, 100);
	ASSERT_NE(NULL, p);
	EXPECT_EQ(0, tsr_ring_commit(self->tx, 100, true));
	tsr_ring_hold(self->tx);
	EXPECT_EQ(100, tsr_ring_commit(self->tx, 0, false));
	EXPECT_EQ(200, tsr_ring_write(self->tx, want + 100, 200));
	EXPECT_FALSE(tsr_ring_data_doorbell(self->tx));
	memcpy(p, want, 100);
	tsr_ring_unhold(self->tx);
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	EXPECT_EQ(0, n);
	EXPECT_FALSE(tsr_ring_data_doorbell(self->tx));
	tsr_ring_unhold(self->tx);
	EXPECT_TRUE(tsr_ring_data_doorbell(self->tx));
	q = tsr_ring_peek(self->rx, &n);
	ASSERT_EQ(300, n);
	EXPECT_EQ(0, memcmp(want, q, 300));
	/* Unheld, a write is seen at once again. */
	tsr_ring_consume(self->rx, n);
	EXPECT_EQ(1, tsr_ring_write(self->tx, want, 1));
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	EXPECT_EQ(1, n);
}

/* ------------------------------------------------------ futex doorbells */

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ull + t.tv_nsec;
}

/*
 * The consumer sleeps on its word; a producer in another process (the
 * memfd mapped there, as a peer QEMU has it) writes, takes the flag and
 * wakes it: the sleep ends at once, not at its 5 s timeout.
 */
TEST_F(ring, a_producer_in_another_process_wakes_the_sleeping_consumer)
{
	TsrRingWatch w = { .ring = self->rx };
	uint8_t b[64] = { 7 };
	uint32_t ctl = 0;
	uint64_t t0, took;
	int status;
	size_t n;
	pid_t pid;

	ASSERT_TRUE(tsr_ring_futex_works());
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		/* Until the consumer says it sleeps. */
		while (!__atomic_load_n(&self->hdr->consumer_waiting,
					__ATOMIC_ACQUIRE))
			sched_yield();
		if (tsr_ring_write(self->tx, b, sizeof(b)) != sizeof(b) ||
		    !tsr_ring_data_doorbell(self->tx))
			_exit(1);
		tsr_ring_wake_data(self->tx);
		_exit(0);
	}
	t0 = mono_ns();
	tsr_ring_sleep(&w, 1, &ctl, 0, 5000000000ull);
	took = mono_ns() - t0;
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_EQ(0, status);
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	EXPECT_EQ(sizeof(b), n);
	EXPECT_GT(1000000000ull, took) TH_LOG("woken after %llu ns",
					      (unsigned long long)took);
	EXPECT_EQ(0, w.futile_wakeups);
}

/* Another thread's kick of the control word ends a sleep. */
static void *kick_later(void *arg)
{
	uint32_t *ctl = arg;

	while (!__atomic_load_n(ctl + 1, __ATOMIC_ACQUIRE))
		sched_yield();
	tsr_ring_kick(ctl);
	return NULL;
}

TEST_F(ring, a_producer_that_never_wakes_is_read_within_the_timeout)
{
	TsrRingWatch w = { .ring = self->rx };
	uint8_t b[16] = { 3 };
	uint64_t t0, took;
	size_t n;

	t0 = mono_ns();
	tsr_ring_sleep(&w, 1, (uint32_t[]){ 0 }, 0, 20000000);
	took = mono_ns() - t0;
	EXPECT_LE(20000000ull, took);
	EXPECT_GT(1000000000ull, took);
	/* Bytes written with no wake are there for the next look. */
	EXPECT_EQ(sizeof(b), tsr_ring_write(self->tx, b, sizeof(b)));
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	EXPECT_EQ(sizeof(b), n);
	/* And bytes there before the sleep end it at once. */
	t0 = mono_ns();
	tsr_ring_sleep(&w, 1, (uint32_t[]){ 0 }, 0, 5000000000ull);
	EXPECT_GT(1000000000ull, mono_ns() - t0);
}

TEST_F(ring, a_kick_of_the_control_word_ends_the_sleep)
{
	TsrRingWatch w = { .ring = self->rx };
	uint32_t ctl[2] = { 0, 0 };
	pthread_t t;
	uint64_t t0;

	ASSERT_EQ(0, pthread_create(&t, NULL, kick_later, ctl));
	t0 = mono_ns();
	__atomic_store_n(&ctl[1], 1, __ATOMIC_RELEASE);
	tsr_ring_sleep(&w, 1, &ctl[0], 0, 5000000000ull);
	EXPECT_GT(1000000000ull, mono_ns() - t0);
	pthread_join(t, NULL);
	EXPECT_EQ(1, ctl[0]);
}

struct hostile {
	uint32_t *word;
	volatile bool stop;
};

/* A peer clearing the consumer's word and waking it, for nothing. */
static void *clear_and_wake(void *arg)
{
	struct hostile *h = arg;

	while (!h->stop) {
		__atomic_store_n(h->word, 0, __ATOMIC_RELEASE);
		syscall(SYS_futex, h->word, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	return NULL;
}

/*
 * A peer that keeps the consumer's word at 0 (its futex wait returns at
 * once) and wakes it with nothing written gets a bounded number of
 * wake-ups a second, counted, not a spin; and its bytes are still read,
 * by polling, once it writes some.
 */
TEST_F(ring, a_peer_that_zeroes_the_waiting_word_does_not_make_the_consumer_spin)
{
	struct hostile h = { .word = &self->hdr->consumer_waiting };
	TsrRingWatch w = { .ring = self->rx };
	unsigned int sleeps = 0;
	uint8_t b[16] = { 5 };
	uint64_t end;
	pthread_t t;
	size_t n;

	ASSERT_EQ(0, pthread_create(&t, NULL, clear_and_wake, &h));
	end = mono_ns() + 1000000000ull;
	while (mono_ns() < end) {
		tsr_ring_sleep(&w, 1, (uint32_t[]){ 0 }, 0, 10000000);
		ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
		ASSERT_EQ(0, n);
		sleeps++;
	}
	EXPECT_GT(2000, sleeps);
	EXPECT_LE(TSR_RING_FUTILE_MAX, w.futile_wakeups);
	EXPECT_GE(sleeps, w.futile_wakeups);
	EXPECT_NE(0, w.quiet_until);
	TH_LOG("%u sleeps, %llu futile wake-ups", sleeps,
	       (unsigned long long)w.futile_wakeups);
	/* Still read while it misbehaves: polled. */
	EXPECT_EQ(sizeof(b), tsr_ring_write(self->tx, b, sizeof(b)));
	tsr_ring_sleep(&w, 1, (uint32_t[]){ 0 }, 0, 10000000);
	ASSERT_NE(NULL, tsr_ring_peek(self->rx, &n));
	EXPECT_EQ(sizeof(b), n);
	h.stop = true;
	pthread_join(t, NULL);
}

TEST_HARNESS_MAIN
