// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of how fast libaccel's collective plans can run: the plans of
 * every chip of a slice run against each other on a clock, with the costs
 * of the chip's timing model (Documentation/ici.md, "Timing", and
 * Documentation/collectives.md): a link carries one message at a time at
 * its bandwidth and delivers it a hop's latency later; a queue runs its
 * commands in order, hands a SEND to its ICI DMA (one write at a time) and
 * goes on; a reduction and a copy cost their HBM traffic; a credit is back
 * at the sender a hop after the receiver took the message.
 *
 * The schedule decides how close a collective comes to the bound of its
 * links (busbw = links per chip x link bandwidth), so these tests hold it
 * to the figures `make bench` measures on the real chips, without a VM:
 * a plan that leaves links idle while a queue waits fails here.
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"

#include "coll_plan.h"
#include "coll_slice.h"

/*
 * The default preset's figures (v4, Documentation/chip.md): bytes per ns,
 * ns, and the fixed costs of the commands the executor writes.
 */
#define LINK_BYTES_PER_NS	45.0
#define HBM_BYTES_PER_NS	1200.0
#define HOP_NS			1000.0
#define CYCLE_NS		(1000.0 / 1050)
#define SEM_NS			(100 * CYCLE_NS)	/* a SEM_WAIT, SEM_INC */
#define VPU_NS			(100 * CYCLE_NS)	/* plus its memory time */
#define DMA_NS			(500 * CYCLE_NS)	/* plus its memory time */
#define ISSUE_NS		(10 * CYCLE_NS)		/* an ICI_WRITE's */
#define ELEMENT			4.0	/* f32 */

/* Times of events, in the order they happened. */
struct times {
	double *at;
	size_t n, cap;
};

/* One direction of one channel into a chip. */
struct tbox {
	struct times arrived;	/* message m's arrival */
	struct times taken;	/* when the chip took message m */
};

struct tchip {
	struct coll_plan plan;
	size_t pc[COLL_MAX_STREAMS];
	double clock[COLL_MAX_STREAMS];
	double dma_free[COLL_MAX_STREAMS];	/* the queue's ICI DMA */
	double link_free[COLL_DIMS][COLL_DIRS];
	struct tbox in[COLL_CHANNELS];
	struct times signal[COLL_MAX_COLOURS][COLL_DIRS];
};

struct tsim {
	struct coll_params p;
	uint32_t chips;
	struct tchip *chip;
	double end;
};

static double max2(double a, double b)
{
	return a > b ? a : b;
}

static double hbm_ns(uint64_t len, double passes)
{
	return len * ELEMENT * passes / HBM_BYTES_PER_NS;
}

static void record(struct times *v, double t)
{
	if (v->n == v->cap) {
		v->cap = v->cap ? 2 * v->cap : 64;
		v->at = realloc(v->at, v->cap * sizeof(*v->at));
		if (!v->at)
			abort();
	}
	v->at[v->n++] = t;
}

/*
 * When the next op of stream @si of chip @me can start, or a negative
 * number while it waits for something that has not happened yet.
 */
static double ready_at(struct tsim *s, uint32_t me, unsigned int si)
{
	struct tchip *ch = &s->chip[me];
	const struct coll_stream *st = &ch->plan.stream[si];
	const struct coll_op *op = &st->ops[ch->pc[si]];
	unsigned int c = coll_channel(st->colour, op->dir, op->dim);
	double t = ch->clock[si];
	struct tbox *in;
	uint64_t need;
	int to;

	switch (op->kind) {
	case COLL_OP_SEND:
		to = slice_neighbour(&s->p, me, op->dim, op->dir);
		in = &s->chip[to].in[c];
		need = coll_credit_needed(in->arrived.n, s->p.slots);
		if (need && in->taken.n < need)
			return -1;
		if (need)
			t = max2(t, in->taken.at[need - 1] + HOP_NS);
		return need ? t + SEM_NS : t;
	case COLL_OP_RECV_REDUCE:
	case COLL_OP_RECV_COPY:
		in = &ch->in[c];
		if (in->taken.n == in->arrived.n)
			return -1;
		return max2(t, in->arrived.at[in->taken.n]) + SEM_NS;
	case COLL_OP_WAIT:
		if (ch->signal[op->colour][op->sem].n < op->value)
			return -1;
		return max2(t, ch->signal[op->colour][op->sem].at[op->value - 1]) +
		       SEM_NS;
	default:
		return t;
	}
}

static void run_op(struct tsim *s, uint32_t me, unsigned int si, double t)
{
	struct tchip *ch = &s->chip[me];
	const struct coll_stream *st = &ch->plan.stream[si];
	const struct coll_op *op = &st->ops[ch->pc[si]++];
	unsigned int c = coll_channel(st->colour, op->dir, op->dim);
	double ser = op->len * ELEMENT / LINK_BYTES_PER_NS, start;
	struct tbox *in;

	switch (op->kind) {
	case COLL_OP_SEND:
		in = &s->chip[slice_neighbour(&s->p, me, op->dim, op->dir)].in[c];
		t = max2(t, ch->dma_free[si]);
		start = max2(t, ch->link_free[op->dim][op->dir]);
		ch->link_free[op->dim][op->dir] = start + ser;
		ch->dma_free[si] = start + ser;
		t += ISSUE_NS;
		record(&in->arrived, start + ser + HOP_NS);
		break;
	case COLL_OP_RECV_REDUCE:
	case COLL_OP_RECV_COPY:
		t += op->kind == COLL_OP_RECV_REDUCE ?
		     VPU_NS + hbm_ns(op->len, 3) : DMA_NS + hbm_ns(op->len, 2);
		record(&ch->in[c].taken, t);
		t += ISSUE_NS;		/* the credit */
		break;
	case COLL_OP_INIT:
		t += DMA_NS + hbm_ns(op->len, 2);
		break;
	case COLL_OP_SIGNAL:
		t += SEM_NS;
		record(&ch->signal[st->colour][op->sem], t);
		break;
	default:
		break;
	}
	ch->clock[si] = t;
	s->end = max2(s->end, max2(t, ch->dma_free[si]));
}

/*
 * Run every chip's plan, always taking the op that can start first, until
 * all end (true) or none can start (a deadlock).
 */
static bool tsimulate(struct tsim *s)
{
	uint32_t me;

	s->chips = s->p.dims[0] * s->p.dims[1] * s->p.dims[2];
	s->chip = calloc(s->chips, sizeof(*s->chip));
	for (me = 0; me < s->chips; me++) {
		struct coll_params p = s->p;

		slice_coords(&p, me, p.coords);
		if (coll_plan_build(&p, &s->chip[me].plan))
			return false;
	}
	for (;;) {
		double best = -1;
		uint32_t bc = 0;
		unsigned int bs = 0, si;
		bool left = false;

		for (me = 0; me < s->chips; me++) {
			struct tchip *ch = &s->chip[me];

			for (si = 0; si < ch->plan.streams; si++) {
				double t;

				if (ch->pc[si] == ch->plan.stream[si].count)
					continue;
				left = true;
				t = ready_at(s, me, si);
				if (t >= 0 && (best < 0 || t < best)) {
					best = t;
					bc = me;
					bs = si;
				}
			}
		}
		if (!left)
			return true;
		if (best < 0)
			return false;
		run_op(s, bc, bs, best);
	}
}

static void tsim_free(struct tsim *s)
{
	unsigned int me, i, k, d;

	for (me = 0; me < s->chips; me++) {
		struct tchip *ch = &s->chip[me];

		for (i = 0; i < COLL_CHANNELS; i++) {
			free(ch->in[i].arrived.at);
			free(ch->in[i].taken.at);
		}
		for (k = 0; k < COLL_MAX_COLOURS; k++)
			for (d = 0; d < COLL_DIRS; d++)
				free(ch->signal[k][d].at);
		coll_plan_free(&ch->plan);
	}
	free(s->chip);
}

/* Links per chip: both ways along every dimension longer than 1. */
static unsigned int links_per_chip(const struct coll_params *p)
{
	unsigned int d, links = 0;

	for (d = 0; d < COLL_DIMS; d++) {
		if (p->dims[d] > 2 || (p->dims[d] == 2 && (p->wrap & 1u << d)))
			links += 2;
		else if (p->dims[d] == 2)
			links += 1;
	}
	return links;
}

struct shape {
	uint32_t dims[COLL_DIMS];
	uint32_t wrap;
	unsigned int colours;
};

/* The modeled time, in ns, of an all-reduce of @count f32 on @sh. */
static double all_reduce_ns(struct __test_metadata *_metadata,
			    const struct shape *sh, uint64_t count)
{
	struct tsim s = {
		.p = { .dims = { sh->dims[0], sh->dims[1], sh->dims[2] },
		       .wrap = sh->wrap, .kind = COLL_ALL_REDUCE,
		       .count = count, .colours = sh->colours,
		       /* The executor's: 256 KiB slots, two per channel. */
		       .acc_piece = 65536, .out_piece = 65536, .slots = 2 },
	};
	double ns;

	ASSERT_TRUE(tsimulate(&s)) TH_LOG("a deadlock");
	ns = s.end;
	tsim_free(&s);
	return ns;
}

/*
 * nccl-tests' busbw of that all-reduce, 2 (n - 1) / n x bytes / time, as a
 * share of the bound: links per chip x link bandwidth.
 */
static double share_of_bound(struct __test_metadata *_metadata,
			     const struct shape *sh, uint64_t count)
{
	double n = sh->dims[0] * sh->dims[1] * sh->dims[2];
	double ns = all_reduce_ns(_metadata, sh, count);
	struct coll_params p = { .dims = { sh->dims[0], sh->dims[1], sh->dims[2] },
				 .wrap = sh->wrap };
	double share = 2 * (n - 1) / n * count * ELEMENT / ns /
		       (links_per_chip(&p) * LINK_BYTES_PER_NS);

	TH_LOG("%ux%ux%u wrap %u, %u colours, %llu MiB: %.1f us, %.3f of the bound",
	       sh->dims[0], sh->dims[1], sh->dims[2], sh->wrap, sh->colours,
	       (unsigned long long)(count * 4 >> 20), ns / 1000, share);
	return share;
}

static const struct shape torus4x4 = { { 4, 4, 1 }, 3, 2 };

/* make bench's targets for 4x4 (issue #13): 0.90 at 16 MiB, 0.97 at 64. */
TEST(a_4x4_torus_all_reduce_comes_within_its_targets_of_the_bound)
{
	EXPECT_LE(0.93, share_of_bound(_metadata, &torus4x4, 4u << 20));
	EXPECT_LE(0.97, share_of_bound(_metadata, &torus4x4, 16u << 20));
}

TEST(rings_and_a_3d_torus_keep_their_links_busy)
{
	static const struct shape ring = { { 4, 1, 1 }, 1, 1 };
	static const struct shape square = { { 2, 2, 1 }, 3, 2 };
	static const struct shape cube = { { 4, 4, 4 }, 7, 3 };

	EXPECT_LE(0.97, share_of_bound(_metadata, &ring, 16u << 20));
	EXPECT_LE(0.95, share_of_bound(_metadata, &square, 16u << 20));
	EXPECT_LE(0.95, share_of_bound(_metadata, &cube, 16u << 20));
}

/* The formulas of Documentation/collectives.md, "Cost". */
TEST(the_pincer_takes_a_colour_count_of_the_time_and_a_mesh_twice)
{
	static const struct shape one = { { 4, 4, 1 }, 3, 1 };
	static const struct shape mesh = { { 4, 4, 1 }, 0, 2 };
	static const struct shape cube = { { 4, 4, 4 }, 7, 3 };
	static const struct shape cube1 = { { 4, 4, 4 }, 7, 1 };
	double pincer = all_reduce_ns(_metadata, &torus4x4, 16u << 20);
	double ratio = pincer / all_reduce_ns(_metadata, &one, 16u << 20);

	EXPECT_LE(0.48, ratio);
	EXPECT_GE(0.52, ratio);
	ratio = all_reduce_ns(_metadata, &mesh, 16u << 20) / pincer;
	EXPECT_LE(1.9, ratio);
	EXPECT_GE(2.1, ratio);
	ratio = all_reduce_ns(_metadata, &cube, 16u << 20) /
		all_reduce_ns(_metadata, &cube1, 16u << 20);
	EXPECT_LE(0.31, ratio);
	EXPECT_GE(0.35, ratio);
}

TEST_HARNESS_MAIN
