/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A slice of chips in one process for the ICI host tests: what a chip's
 * port sends waits on a wire until the pump thread hands it to the port at
 * the other end.  A test freezes a wire (a stopped neighbour), cuts it (a
 * lost connection) or has something other than a chip speak at its end.
 */
#ifndef TESTS_HOST_ICI_SLICE_H
#define TESTS_HOST_ICI_SLICE_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tessera_chip.h"
#include "tessera-ici.h"
#include "tessera-ring.h"

#define SLICE_MAX_CHIPS	4
#define WIRE_CAP	(4u << 20)
#define KEY		0x5eed5eed12345678ull

struct wire {
	pthread_mutex_t lock;
	uint8_t *buf;
	size_t len;
	/* Where the bytes go. */
	unsigned int to_chip, to_port;
	/* Carries nothing: the chip beyond it stopped (SIGSTOP). */
	volatile bool frozen;
	/*
	 * On the ring transport: a shared-memory ring (both its ends) that
	 * lends its memory to the sending link, as a port's does; what is
	 * committed there goes on the wire, and stays kept in the ring.
	 */
	TsrRing *ring, *ring_rx;
	unsigned int lent;
};

struct slice;

/* What speaks for a chip of the slice that is not one (chip[i] NULL). */
struct slice_stranger {
	/* Takes what was sent to it. */
	void (*receive)(struct slice *s, const void *buf, size_t len);
	/* Runs its timers, as tsr_ici_poll() a chip's. */
	void (*poll)(struct slice *s);
	bool (*up)(struct slice *s);
};

struct slice {
	struct test_chip *chip[SLICE_MAX_CHIPS];
	unsigned int n;
	/* wires[chip][port]: what that port sends. */
	struct wire *wires[SLICE_MAX_CHIPS][TSR_ICI_MAX_PORTS];
	/* Held while bytes move, so that a cut falls between deliveries. */
	pthread_mutex_t carry;
	pthread_t pump;
	volatile bool stop;
	const struct slice_stranger *stranger;
	/* The test's own state (its stranger's). */
	void *test;
	/* Per chip: the window table, a window buffer, a source buffer. */
	uint64_t table[SLICE_MAX_CHIPS], win[SLICE_MAX_CHIPS],
		 src[SLICE_MAX_CHIPS];
};

static inline TsrIci *slice_ici(struct slice *s, unsigned int i)
{
	return tsr_core_ici(s->chip[i]->core);
}

static inline size_t slice_wire_put(struct wire *w, const void *buf,
				    size_t len)
{
	if (!w)
		return len;
	pthread_mutex_lock(&w->lock);
	if (len > WIRE_CAP - w->len)
		len = WIRE_CAP - w->len;
	memcpy(w->buf + w->len, buf, len);
	w->len += len;
	pthread_mutex_unlock(&w->lock);
	return len;
}

/* Bytes on wire @w not yet handed on. */
static inline size_t slice_wire_left(struct wire *w)
{
	size_t n;

	pthread_mutex_lock(&w->lock);
	n = w->len;
	pthread_mutex_unlock(&w->lock);
	return n;
}

/* Wait (2 s at most) until the pump has taken all that is on @w. */
static inline bool slice_wire_drained(struct wire *w)
{
	int i;

	for (i = 0; i < 20000 && slice_wire_left(w); i++)
		usleep(100);
	return !slice_wire_left(w);
}

/* What the ring under @w shows (not held: tsr_ring_hold()) goes on it. */
static inline void slice_wire_relay(struct wire *w)
{
	const uint8_t *p;
	size_t n;

	p = tsr_ring_peek(w->ring_rx, &n);
	slice_wire_put(w, p, n);
	tsr_ring_consume(w->ring_rx, n);
}

static inline size_t slice_out(struct test_chip *c, unsigned int port,
			       const void *buf, size_t len)
{
	struct slice *s = c->ici_ctx;
	struct wire *w;
	unsigned int i;

	for (i = 0; i < s->n && s->chip[i] != c; i++)
		;
	w = s->wires[i][port];
	if (!w || !w->ring)
		return slice_wire_put(w, buf, len);
	/* Through the ring, as a port's: behind the frames held in it. */
	if (len > WIRE_CAP - slice_wire_left(w))
		len = WIRE_CAP - slice_wire_left(w);
	len = tsr_ring_write(w->ring, buf, len);
	slice_wire_relay(w);
	return len;
}

/*
 * @n bytes of @w into its chip: at once on a socket; on a ring, as a
 * port's reader feeds what its ring holds, in pieces with the link's
 * acknowledgements held until the last (tsr_ici_hold_acks()).
 */
static inline void slice_deliver(struct slice *s, struct wire *w,
				 const uint8_t *buf, size_t n)
{
	TsrIci *ici = slice_ici(s, w->to_chip);
	size_t off, piece;

	if (!w->ring) {
		tsr_ici_receive(ici, w->to_port, buf, n);
		return;
	}
	tsr_ici_hold_acks(ici, w->to_port, true);
	for (off = 0; off < n; off += piece) {
		piece = n - off < 8192 ? n - off : 8192;
		tsr_ici_receive(ici, w->to_port, buf + off, piece);
	}
	tsr_ici_hold_acks(ici, w->to_port, false);
}

static inline void *slice_pump(void *arg)
{
	struct slice *s = arg;
	uint8_t *tmp = malloc(WIRE_CAP);

	while (!s->stop) {
		unsigned int i, p;

		for (i = 0; i < s->n; i++) {
			for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
				struct wire *w = s->wires[i][p];
				size_t n;

				if (!w || w->frozen)
					continue;
				pthread_mutex_lock(&s->carry);
				pthread_mutex_lock(&w->lock);
				n = w->len;
				memcpy(tmp, w->buf, n);
				w->len = 0;
				pthread_mutex_unlock(&w->lock);
				if (n && s->chip[w->to_chip])
					slice_deliver(s, w, tmp, n);
				else if (n)
					s->stranger->receive(s, tmp, n);
				pthread_mutex_unlock(&s->carry);
				if (n && s->chip[i])
					tsr_ici_writable(slice_ici(s, i), p);
			}
			if (s->chip[i])
				tsr_ici_poll(slice_ici(s, i));
			else
				s->stranger->poll(s);
		}
		sched_yield();
	}
	free(tmp);
	return NULL;
}

static inline struct slice *slice_alloc(unsigned int n)
{
	struct slice *s = calloc(1, sizeof(*s));

	s->n = n;
	pthread_mutex_init(&s->carry, NULL);
	return s;
}

/* Chip @i of @s at @sl's coordinates, with a window and a source of @size. */
static inline void slice_add_chip(struct slice *s, unsigned int i,
				  const TsrSlice *sl, uint64_t size)
{
	struct test_chip *c = chip_new("v4");

	c->ici_out = slice_out;
	c->ici_ctx = s;
	s->chip[i] = c;
	tsr_ici_set_slice(slice_ici(s, i), sl);
	s->table[i] = chip_buffer(c, 1, 4096);
	s->win[i] = chip_buffer(c, 1, size);
	s->src[i] = chip_buffer(c, 1, size);
}

/* Port @pa of chip @a and port @pb of chip @b, linked by two wires. */
static inline void slice_join(struct slice *s, unsigned int a,
			      unsigned int pa, unsigned int b, unsigned int pb)
{
	struct wire *ab = calloc(1, sizeof(*ab)), *ba = calloc(1, sizeof(*ba));

	ab->buf = malloc(WIRE_CAP);
	ba->buf = malloc(WIRE_CAP);
	pthread_mutex_init(&ab->lock, NULL);
	pthread_mutex_init(&ba->lock, NULL);
	ab->to_chip = b;
	ab->to_port = pb;
	ba->to_chip = a;
	ba->to_port = pa;
	s->wires[a][pa] = ab;
	s->wires[b][pb] = ba;
}

/* The chips' wired ports attached, the pump going, and the ports connected. */
static inline void slice_start(struct slice *s, uint32_t transport)
{
	unsigned int i, p;

	for (i = 0; i < s->n; i++)
		for (p = 0; p < TSR_ICI_MAX_PORTS; p++)
			if (s->chip[i] && s->wires[i][p])
				tsr_ici_attach(slice_ici(s, i), p,
					       transport == TSR_ICI_TRANSPORT_RING ?
					       TSR_ICI_WINDOW_RING :
					       TSR_ICI_WINDOW_SOCKET);
	pthread_create(&s->pump, NULL, slice_pump, s);
	for (i = 0; i < s->n; i++) {
		for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
			if (!s->chip[i] || !s->wires[i][p])
				continue;
			tsr_ici_set_transport(slice_ici(s, i), p, transport);
			tsr_ici_connected(slice_ici(s, i), p);
		}
	}
}

/* The pump stopped; the chips and the wires freed. */
static inline void slice_stop(struct slice *s)
{
	unsigned int i, p;

	s->stop = true;
	pthread_join(s->pump, NULL);
	for (i = 0; i < SLICE_MAX_CHIPS; i++) {
		if (s->chip[i])
			chip_free(s->chip[i]);
		for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
			if (s->wires[i][p]) {
				tsr_ring_free(s->wires[i][p]->ring);
				tsr_ring_free(s->wires[i][p]->ring_rx);
				free(s->wires[i][p]->buf);
				free(s->wires[i][p]);
			}
		}
	}
}

/* Whether every wired port of the chips, and the stranger, is up. */
static inline bool slice_up(struct slice *s)
{
	unsigned int i, p;

	for (i = 0; i < s->n; i++)
		for (p = 0; p < TSR_ICI_MAX_PORTS; p++)
			if (s->wires[i][p] && s->chip[i] &&
			    tsr_ici_port_state(slice_ici(s, i), p) !=
			    TSR_ICI_STATE_UP)
				return false;
	return !s->stranger || s->stranger->up(s);
}

static inline bool slice_wait_up(struct slice *s)
{
	int i;

	for (i = 0; i < 20000 && !slice_up(s); i++)
		usleep(100);
	return slice_up(s);
}

/* Window 0 of chip @i: @size bytes at s->win[i], @flags, KEY. */
static inline void slice_open_window(struct slice *s, unsigned int i,
				     uint64_t size, uint32_t flags)
{
	struct test_chip *c = s->chip[i];
	struct tsr_ici_window *w = host_ptr(c, s->table[i]);

	w[0] = (struct tsr_ici_window){
		.flags = flags, .context = 1, .va = s->win[i], .size = size,
		.key = KEY,
	};
	wr(c, TSR_REG_ICI_WINDOW_TABLE_LO, (uint32_t)s->table[i]);
	wr(c, TSR_REG_ICI_WINDOW_TABLE_HI, 0);
	wr(c, TSR_REG_ICI_WINDOW_COUNT, 1);
}

static inline uint64_t port_counter(struct test_chip *c, unsigned int port,
				    unsigned int i)
{
	uint64_t lo = rd(c, TSR_ICI_PORT_BASE(port) + TSR_IREG_CNT_LO(i));

	return lo | (uint64_t)rd(c, TSR_ICI_PORT_BASE(port) +
				 TSR_IREG_CNT_LO(i) + 4) << 32;
}

static inline double since_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1e3 + (t.tv_nsec - t0->tv_nsec) / 1e6;
}

#endif /* TESTS_HOST_ICI_SLICE_H */
