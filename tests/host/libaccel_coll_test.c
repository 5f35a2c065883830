// SPDX-License-Identifier: GPL-2.0
/*
 * Host tests of libaccel's collective plans (libaccel/src/coll_plan.c):
 * the plans of every chip of a slice are run against each other by a
 * simulator that follows the executor's rules (channels in order, slots
 * freed by credits, the colours' semaphores), on symbols rather than
 * numbers.  Each element carries the set of chips summed into it and a
 * hash of the order they were added in, so the tests see a chip counted
 * twice or missed, a result that differs between chips, a message taken
 * from the wrong place, a slot written before it was freed, a deadlock,
 * and the load on every link; also calls in flight one after the other,
 * each stream starting its next call as soon as it ends one (as its queue
 * does), on one buffer.  Then the communicator's own pure logic
 * (libaccel/src/coll_comm.c): where its key comes from, which window id
 * it takes, and that one that gave up refuses every call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"

#include "coll_comm.h"
#include "coll_plan.h"
#include "coll_slice.h"

/* A value as the simulator sees it. */
struct sym {
	uint64_t chips;		/* bit i: chip i's input is in it */
	uint64_t hash;		/* how it was added up; 0: never written */
};

struct msg {
	uint64_t start, len;
	struct sym *data;
};

/* One direction of one channel into a chip: what is in its slots. */
struct inbox {
	struct msg *fifo;
	size_t head, tail, cap;
	uint64_t sent, taken;
	unsigned char busy[8];	/* the slots, by coll_slot() */
};

struct chip {
	struct coll_plan plan;
	struct sym *acc, *out;
	size_t pc[COLL_MAX_STREAMS];
	unsigned int call[COLL_MAX_STREAMS];	/* the call each stream is in */
	uint64_t sem[COLL_MAX_COLOURS][COLL_DIRS];
	struct inbox in[COLL_CHANNELS];
	uint64_t load[COLL_DIMS][COLL_DIRS];	/* elements sent */
};

struct sim {
	struct coll_params p;	/* coords set per chip */
	unsigned int slots;
	/*
	 * Calls each chip makes one after the other (0: one), and whether
	 * ACC is the output buffer, as an all-reduce in place of its own
	 * type has it (libaccel/src/collective.c, place()).
	 */
	unsigned int calls;
	bool acc_is_out;
	uint32_t chips;
	struct chip *chip;
	char why[256];
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t h = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ h >> 32;
}

/* A chip's input element: chip @c, element @i of its vector. */
static struct sym leaf(uint32_t c, uint64_t i)
{
	return (struct sym){ 1ull << c, mix(c + 1, i) | 1 };
}

/* a + b: commutative, as IEEE addition is, but not associative. */
static struct sym add(struct sym a, struct sym b)
{
	uint64_t lo = a.hash < b.hash ? a.hash : b.hash;
	uint64_t hi = a.hash < b.hash ? b.hash : a.hash;

	return (struct sym){ a.chips | b.chips, mix(lo, hi) | 1 };
}

static struct sym *buf_of(struct chip *ch, unsigned int buf)
{
	return buf == COLL_ACC ? ch->acc : ch->out;
}

static bool failf(struct sim *s, const char *what, uint32_t chip,
		  const struct coll_op *op)
{
	snprintf(s->why, sizeof(s->why), "chip %u: %s (op %u dir %u dim %u %llu+%llu)",
		 chip, what, op->kind, op->dir, op->dim,
		 (unsigned long long)op->start, (unsigned long long)op->len);
	return false;
}

/* INIT: the chip's input, where the plan's kind puts it. */
static void init(struct sim *s, uint32_t me, const struct coll_op *op)
{
	struct chip *ch = &s->chip[me];
	uint64_t i;

	for (i = op->start; i < op->start + op->len; i++)
		buf_of(ch, op->buf)[i] = leaf(me, i);
}

static bool send(struct sim *s, uint32_t me, unsigned int colour,
		 const struct coll_op *op, bool *blocked)
{
	struct chip *ch = &s->chip[me];
	int to = slice_neighbour(&s->p, me, op->dim, op->dir);
	unsigned int c = coll_channel(colour, op->dir, op->dim);
	struct inbox *in;
	struct msg m;
	uint64_t slot;

	if (to < 0)
		return failf(s, "sends past the edge", me, op);
	in = &s->chip[to].in[c];
	if (in->taken < coll_credit_needed(in->sent, s->slots)) {
		*blocked = true;
		return true;
	}
	slot = coll_slot(in->sent, s->slots);
	if (in->busy[slot])
		return failf(s, "overwrites a slot not yet freed", me, op);
	in->busy[slot] = 1;
	m = (struct msg){ op->start, op->len, malloc(op->len * sizeof(struct sym)) };
	memcpy(m.data, buf_of(ch, op->buf) + op->start, op->len * sizeof(struct sym));
	if (in->tail == in->cap) {
		in->cap = in->cap ? 2 * in->cap : 16;
		in->fifo = realloc(in->fifo, in->cap * sizeof(*in->fifo));
	}
	in->fifo[in->tail++] = m;
	in->sent++;
	ch->load[op->dim][op->dir] += op->len;
	return true;
}

static bool receive(struct sim *s, uint32_t me, unsigned int colour,
		    const struct coll_op *op, bool *blocked)
{
	struct chip *ch = &s->chip[me];
	struct inbox *in = &ch->in[coll_channel(colour, op->dir, op->dim)];
	struct sym *dst = buf_of(ch, op->buf) + op->start;
	struct msg *m;
	uint64_t i;

	if (in->head == in->tail) {
		*blocked = true;
		return true;
	}
	m = &in->fifo[in->head];
	if (m->start != op->start || m->len != op->len)
		return failf(s, "takes a message meant for another place", me, op);
	for (i = 0; i < op->len; i++) {
		bool copy = op->kind == COLL_OP_RECV_COPY;

		if (!copy && (dst[i].chips & m->data[i].chips))
			return failf(s, "adds a chip twice", me, op);
		dst[i] = copy ? m->data[i] : add(dst[i], m->data[i]);
	}
	free(m->data);
	in->busy[coll_slot(in->taken, s->slots)] = 0;
	in->head++;
	in->taken++;
	return true;
}

/* Run the next op of stream @si of chip @me, unless it must wait. */
static bool step(struct sim *s, uint32_t me, unsigned int si, bool *blocked)
{
	struct chip *ch = &s->chip[me];
	const struct coll_stream *st = &ch->plan.stream[si];
	const struct coll_op *op = &st->ops[ch->pc[si]];
	uint64_t i;

	*blocked = false;
	switch (op->kind) {
	case COLL_OP_INIT:
		init(s, me, op);
		break;
	case COLL_OP_SEND:
		if (!send(s, me, st->colour, op, blocked))
			return false;
		break;
	case COLL_OP_RECV_REDUCE:
	case COLL_OP_RECV_COPY:
		if (!receive(s, me, st->colour, op, blocked))
			return false;
		break;
	case COLL_OP_FINISH:
		for (i = op->start; i < op->start + op->len; i++)
			ch->out[i] = ch->acc[i];
		break;
	case COLL_OP_SIGNAL:
		ch->sem[st->colour][op->sem]++;
		break;
	case COLL_OP_WAIT:
		/* A call's waits count on from the calls before (chip->met). */
		*blocked = ch->sem[op->colour][op->sem] <
			   op->value + ch->call[si] *
				       ch->plan.signals[op->colour][op->sem];
		break;
	default:
		return failf(s, "unknown op", me, op);
	}
	if (*blocked)
		return true;
	/* The stream's queue goes on to the next call's job at once. */
	if (++ch->pc[si] == st->count && ch->call[si] + 1 < s->calls) {
		ch->pc[si] = 0;
		ch->call[si]++;
	}
	return true;
}

/*
 * Build every chip's plan and run them all, taking runnable ops in an
 * order shuffled by @seed, until all end (true) or none can go on.
 */
static bool simulate(struct sim *s, unsigned int seed)
{
	bool progress = true, done = false;
	uint32_t c;

	s->chips = s->p.dims[0] * s->p.dims[1] * s->p.dims[2];
	s->chip = calloc(s->chips, sizeof(*s->chip));
	for (c = 0; c < s->chips; c++) {
		struct chip *ch = &s->chip[c];
		struct coll_params p = s->p;

		slice_coords(&s->p, c, p.coords);
		if (coll_plan_build(&p, &ch->plan)) {
			snprintf(s->why, sizeof(s->why), "chip %u: no plan", c);
			return false;
		}
		ch->acc = calloc(s->p.count + 1, sizeof(struct sym));
		ch->out = s->acc_is_out ? ch->acc :
			  calloc(s->p.count + 1, sizeof(struct sym));
	}
	srand(seed);
	while (progress && !done) {
		uint32_t first = rand();

		progress = false;
		done = true;
		for (c = 0; c < s->chips; c++) {
			uint32_t me = (c + first) % s->chips;
			struct chip *ch = &s->chip[me];
			unsigned int i, first_stream = rand();

			for (i = 0; i < ch->plan.streams; i++) {
				unsigned int si = (i + first_stream) % ch->plan.streams;
				unsigned int burst = 1 + rand() % 4;
				bool blocked = false;

				while (burst-- && !blocked &&
				       ch->pc[si] < ch->plan.stream[si].count) {
					if (!step(s, me, si, &blocked))
						return false;
					progress |= !blocked;
				}
				done &= ch->pc[si] == ch->plan.stream[si].count;
			}
		}
	}
	if (!done)
		snprintf(s->why, sizeof(s->why), "deadlock");
	return done;
}

static void sim_free(struct sim *s)
{
	uint32_t c;
	unsigned int i;

	for (c = 0; c < s->chips; c++) {
		struct chip *ch = &s->chip[c];

		for (i = 0; i < COLL_CHANNELS; i++) {
			struct inbox *in = &ch->in[i];

			while (in->head < in->tail)
				free(in->fifo[in->head++].data);
			free(in->fifo);
		}
		coll_plan_free(&ch->plan);
		if (ch->out != ch->acc)
			free(ch->out);
		free(ch->acc);
	}
	free(s->chip);
	s->chip = NULL;
}

static uint64_t all_chips(const struct sim *s)
{
	return s->chips == 64 ? ~0ull : (1ull << s->chips) - 1;
}

/* Every chip ends with every element summed over all chips, bit-identical. */
static bool check_all_reduce(struct sim *s)
{
	uint64_t i;
	uint32_t c;

	for (c = 0; c < s->chips; c++) {
		for (i = 0; i < s->p.count; i++) {
			const struct sym *o = &s->chip[c].out[i];

			if (o->chips != all_chips(s) ||
			    o->hash != s->chip[0].out[i].hash) {
				snprintf(s->why, sizeof(s->why),
					 "chip %u element %llu: chips %llx hash %llx, chip 0 %llx",
					 c, (unsigned long long)i,
					 (unsigned long long)o->chips,
					 (unsigned long long)o->hash,
					 (unsigned long long)s->chip[0].out[i].hash);
				return false;
			}
		}
	}
	return true;
}

/* The chip a virtual element's block belongs to, and the block's size. */
static uint32_t owner_of(const struct sim *s, const struct coll_plan *plan,
			 uint64_t i)
{
	unsigned int k;

	for (k = 0; k < plan->colours; k++) {
		uint64_t per = plan->part_len[k] / s->chips;

		if (i >= plan->part_start[k] &&
		    i < plan->part_start[k] + plan->part_len[k])
			return coll_block_owner(&s->p, plan, k,
						(i - plan->part_start[k]) / per);
	}
	return UINT32_MAX;
}

/* Each chip owns, reduced over every chip, exactly the blocks mapped to it. */
static bool check_reduce_scatter(struct sim *s)
{
	uint32_t c;
	unsigned int k;

	for (c = 0; c < s->chips; c++) {
		const struct coll_plan *plan = &s->chip[c].plan;
		uint64_t owned = 0, i;

		for (k = 0; k < plan->colours; k++) {
			owned += plan->owned_len[k];
			for (i = plan->owned_start[k];
			     i < plan->owned_start[k] + plan->owned_len[k]; i++) {
				if (owner_of(s, plan, i) != c ||
				    s->chip[c].out[i].chips != all_chips(s)) {
					snprintf(s->why, sizeof(s->why),
						 "chip %u element %llu: owner %u chips %llx",
						 c, (unsigned long long)i,
						 owner_of(s, plan, i),
						 (unsigned long long)s->chip[c].out[i].chips);
					return false;
				}
			}
		}
		if (owned != s->p.count / s->chips) {
			snprintf(s->why, sizeof(s->why), "chip %u owns %llu elements",
				 c, (unsigned long long)owned);
			return false;
		}
	}
	return true;
}

/* Every chip ends with every chip's block, each from its owner. */
static bool check_all_gather(struct sim *s)
{
	uint64_t i;
	uint32_t c;

	for (c = 0; c < s->chips; c++) {
		for (i = 0; i < s->p.count; i++) {
			uint32_t owner = owner_of(s, &s->chip[c].plan, i);
			struct sym want = leaf(owner, i);

			if (s->chip[c].out[i].hash != want.hash) {
				snprintf(s->why, sizeof(s->why),
					 "chip %u element %llu is not chip %u's",
					 c, (unsigned long long)i, owner);
				return false;
			}
		}
	}
	return true;
}

/*
 * Every chip ends with the root's vector, which reached each of them
 * exactly once: no chip passes on what it does not have yet.
 */
static bool check_broadcast(struct sim *s)
{
	uint32_t root = slice_index(&s->p, s->p.root), c;
	uint64_t i, sent = 0;
	unsigned int d, dir;

	for (c = 0; c < s->chips; c++)
		for (d = 0; d < COLL_DIMS; d++)
			for (dir = 0; dir < COLL_DIRS; dir++)
				sent += s->chip[c].load[d][dir];
	if (sent != s->p.count * (s->chips - 1)) {
		snprintf(s->why, sizeof(s->why), "%llu elements sent, not %llu",
			 (unsigned long long)sent,
			 (unsigned long long)(s->p.count * (s->chips - 1)));
		return false;
	}

	for (c = 0; c < s->chips; c++) {
		for (i = 0; i < s->p.count; i++) {
			if (s->chip[c].out[i].hash != leaf(root, i).hash) {
				snprintf(s->why, sizeof(s->why),
					 "chip %u element %llu is not the root's",
					 c, (unsigned long long)i);
				return false;
			}
		}
	}
	return true;
}

struct shape {
	uint32_t dims[3];
	uint32_t wrap;
};

static const struct shape shapes[] = {
	{ { 1, 1, 1 }, 0 }, { { 2, 1, 1 }, 1 }, { { 3, 1, 1 }, 1 },
	{ { 4, 1, 1 }, 1 }, { { 5, 1, 1 }, 1 }, { { 8, 1, 1 }, 1 },
	{ { 4, 1, 1 }, 0 }, { { 5, 1, 1 }, 0 }, { { 1, 6, 1 }, 2 },
	{ { 2, 2, 1 }, 3 }, { { 2, 2, 1 }, 0 }, { { 3, 3, 1 }, 3 },
	{ { 4, 4, 1 }, 3 }, { { 4, 4, 1 }, 0 }, { { 4, 4, 1 }, 1 },
	{ { 2, 4, 1 }, 3 }, { { 5, 3, 1 }, 3 }, { { 2, 2, 2 }, 7 },
	{ { 2, 2, 2 }, 0 }, { { 3, 2, 4 }, 7 }, { { 4, 4, 4 }, 7 },
	{ { 4, 4, 4 }, 0 }, { { 4, 1, 4 }, 5 },
};

/*
 * Simulate, check, and simulate again in another order: the results must
 * not depend on which chip or queue went first.
 */
static void run_from(struct __test_metadata *_metadata, const struct shape *sh,
		     enum coll_kind kind, uint64_t count, unsigned int colours,
		     uint64_t piece, unsigned int slots, uint32_t root,
		     unsigned int calls)
{
	struct sim s = {
		.p = { .dims = { sh->dims[0], sh->dims[1], sh->dims[2] },
		       .root = { root % sh->dims[0], root / sh->dims[0] % sh->dims[1],
				 root / sh->dims[0] / sh->dims[1] },
		       .wrap = sh->wrap, .kind = kind, .count = count,
		       .colours = colours,
		       .acc_piece = piece, .out_piece = piece + 1,
		       .slots = slots },
		.slots = slots,
		.calls = calls,
		/* Several calls share the caller's buffers, ACC among them. */
		.acc_is_out = calls > 1 && kind == COLL_ALL_REDUCE,
	};
	struct sym *first = NULL;
	unsigned int seed;
	bool ok = true;

	for (seed = 0; ok && seed < 2; seed++) {
		ok = simulate(&s, count + slots + 1000 * seed);
		if (ok && kind == COLL_ALL_REDUCE)
			ok = check_all_reduce(&s);
		else if (ok && kind == COLL_REDUCE_SCATTER)
			ok = check_reduce_scatter(&s);
		else if (ok && kind == COLL_BROADCAST)
			ok = check_broadcast(&s);
		else if (ok)
			ok = check_all_gather(&s);
		if (ok && first && memcmp(first, s.chip[s.chips - 1].out,
					  count * sizeof(*first))) {
			snprintf(s.why, sizeof(s.why), "another order, another result");
			ok = false;
		} else if (ok && !first) {
			first = malloc(count * sizeof(*first));
			memcpy(first, s.chip[s.chips - 1].out, count * sizeof(*first));
		}
		if (!ok)
			TH_LOG("%ux%ux%u wrap %u kind %u count %llu colours %u piece %llu slots %u calls %u: %s",
			       sh->dims[0], sh->dims[1], sh->dims[2], sh->wrap, kind,
			       (unsigned long long)count, colours,
			       (unsigned long long)piece, slots, calls, s.why);
		sim_free(&s);
	}
	free(first);
	ASSERT_TRUE(ok);
}

static void run(struct __test_metadata *_metadata, const struct shape *sh,
		enum coll_kind kind, uint64_t count, unsigned int colours,
		uint64_t piece, unsigned int slots)
{
	run_from(_metadata, sh, kind, count, colours, piece, slots, 0, 1);
}

static uint32_t chips_of(const struct shape *sh)
{
	return sh->dims[0] * sh->dims[1] * sh->dims[2];
}

TEST(all_reduce_gives_every_chip_the_same_exact_sum)
{
	static const uint64_t counts[] = { 1, 7, 97, 600 };
	unsigned int i, j, mode;

	for (i = 0; i < ARRAY_SIZE(shapes); i++) {
		for (j = 0; j < ARRAY_SIZE(counts); j++) {
			for (mode = 0; mode < 3; mode++)
				run(_metadata, &shapes[i], COLL_ALL_REDUCE,
				    counts[j], 1 + mode,
				    j == 3 ? 16 : 3, 2 + j % 2);
		}
	}
}

/*
 * Calls started without a wait on the same buffers (nccl-tests' loop):
 * a stream's queue starts its part of the next call as soon as it ends
 * its part of this one, so the next call's first input copies into ACC
 * (the output buffer of an all-reduce, the scratch of a reduce-scatter)
 * must not come while another stream of the chip still relays this
 * call's result into it or from it.  Each call is then still exact.
 */
TEST(calls_in_flight_on_one_buffer_each_end_exact)
{
	static const uint64_t counts[] = { 97, 600 };
	unsigned int i, j, colours;

	for (i = 0; i < ARRAY_SIZE(shapes); i++) {
		for (j = 0; j < ARRAY_SIZE(counts); j++)
			for (colours = 1; colours <= 3; colours++)
				run_from(_metadata, &shapes[i], COLL_ALL_REDUCE,
					 counts[j], colours, j ? 16 : 3, 2,
					 0, 3);
		/* ACC in the communicator's scratch, shared by every call. */
		for (colours = 1; colours <= 3; colours++)
			run_from(_metadata, &shapes[i], COLL_REDUCE_SCATTER,
				 chips_of(&shapes[i]) * 5, colours, 4, 2, 0, 3);
	}
}

TEST(reduce_scatter_leaves_each_chip_its_own_blocks)
{
	unsigned int i, mode;

	for (i = 0; i < ARRAY_SIZE(shapes); i++) {
		for (mode = 0; mode < 3; mode++)
			run(_metadata, &shapes[i], COLL_REDUCE_SCATTER,
			    chips_of(&shapes[i]) * (mode ? 5 : 12), 1 + mode,
			    4, 2);
	}
}

TEST(all_gather_brings_every_block_from_its_owner)
{
	unsigned int i, mode;

	for (i = 0; i < ARRAY_SIZE(shapes); i++) {
		for (mode = 0; mode < 3; mode++)
			run(_metadata, &shapes[i], COLL_ALL_GATHER,
			    chips_of(&shapes[i]) * (mode ? 7 : 6), 1 + mode,
			    5, 2 + mode % 2);
	}
}

TEST(broadcast_brings_the_roots_vector_to_every_chip)
{
	static const uint64_t counts[] = { 1, 7, 97, 600 };
	unsigned int i, j, colours;

	for (i = 0; i < ARRAY_SIZE(shapes); i++) {
		uint32_t chips = chips_of(&shapes[i]);
		uint32_t roots[] = { 0, chips - 1, chips / 2 + chips / 5 };

		for (j = 0; j < ARRAY_SIZE(counts); j++)
			for (colours = 1; colours <= 3; colours++)
				run_from(_metadata, &shapes[i], COLL_BROADCAST,
					 counts[j], colours, 5, 2,
					 roots[(j + colours) % 3], 1);
	}
}

/*
 * Elements an all-reduce sends from chip @me along @dim towards @dir, by
 * Documentation/collectives.md: a wrapped ring carries (n - 1) / 2n of a
 * phase's vector each way (a ring of 2 over its two links once each half
 * of a chunk fills two messages, else as a line), in each of its two
 * halves
 * (reduce-scatter, all-gather); a line carries, from position p, the
 * chunks beyond p.
 */
static uint64_t expected_load(const struct sim *s, uint32_t me,
			      unsigned int dim, unsigned int dir)
{
	uint32_t c[COLL_DIMS], active[COLL_DIMS], nactive = 0, colours, k, i;
	uint64_t load = 0;

	slice_coords(&s->p, me, c);
	for (i = 0; i < COLL_DIMS; i++) {
		if (s->p.dims[i] > 1)
			active[nactive++] = i;
	}
	colours = nactive < s->p.colours ? nactive : s->p.colours;
	for (k = 0; k < colours; k++) {
		uint64_t len = s->p.count / colours;

		for (i = 0; i < nactive; i++) {
			uint32_t d = active[(k + i) % nactive], n = s->p.dims[d];
			uint32_t p = c[d];

			if (d == dim && (s->p.wrap & 1u << d) &&
			    (n > 2 || len / n >= 4 * s->p.acc_piece))
				load += 2 * len * (n - 1) / (2 * n);
			else if (d == dim && dir == COLL_PLUS)
				load += len / n * ((n - 1 - p) + (p + 1 < n ? p + 1 : 0));
			else if (d == dim)
				load += len / n * (p + (p > 0 ? n - p : 0));
			len /= n;
		}
	}
	return load;
}

TEST(every_link_carries_the_load_of_the_formula)
{
	static const struct shape loaded[] = {
		{ { 8, 1, 1 }, 1 }, { { 5, 1, 1 }, 0 }, { { 4, 4, 1 }, 3 },
		{ { 4, 4, 1 }, 0 }, { { 3, 3, 1 }, 3 }, { { 2, 2, 2 }, 7 },
		{ { 4, 4, 4 }, 7 }, { { 4, 4, 4 }, 0 },
	};
	unsigned int i, colours, dim, dir;

	for (i = 0; i < ARRAY_SIZE(loaded); i++) {
		for (colours = 1; colours <= 3; colours += 2) {
			const struct shape *sh = &loaded[i];
			uint32_t chips = chips_of(sh), me;
			struct sim s = {
				.p = { .dims = { sh->dims[0], sh->dims[1], sh->dims[2] },
				       .wrap = sh->wrap, .count = 6 * chips * chips,
				       .colours = colours,
				       .acc_piece = 1000, .out_piece = 1000 },
				.slots = 2,
			};

			ASSERT_TRUE(simulate(&s, i)) TH_LOG("%s", s.why);
			for (me = 0; me < chips; me++) {
				for (dim = 0; dim < COLL_DIMS; dim++) {
					for (dir = 0; dir < COLL_DIRS; dir++)
						EXPECT_EQ(expected_load(&s, me, dim, dir),
							  s.chip[me].load[dim][dir])
						TH_LOG("%ux%ux%u wrap %u colours %u chip %u dim %u dir %u",
						       sh->dims[0], sh->dims[1], sh->dims[2],
						       sh->wrap, colours, me, dim, dir);
				}
			}
			sim_free(&s);
		}
	}
}

/*
 * A ring of 2 carries a large vector over both its links, half each way,
 * and a small one as a line, each by the formula (above).
 */
TEST(a_ring_of_two_uses_both_links_for_a_large_vector)
{
	static const uint64_t counts[] = { 40000, 3000 };
	unsigned int k, colours, me, dim, dir;

	for (k = 0; k < ARRAY_SIZE(counts); k++) {
		for (colours = 1; colours <= 2; colours++) {
			struct sim s = {
				.p = { .dims = { 2, 2, 1 }, .wrap = 3,
				       .count = counts[k], .colours = colours,
				       .acc_piece = 1000, .out_piece = 1000 },
				.slots = 2,
			};

			ASSERT_TRUE(simulate(&s, 100 + k)) TH_LOG("%s", s.why);
			for (me = 0; me < 4; me++)
				for (dim = 0; dim < 2; dim++)
					for (dir = 0; dir < COLL_DIRS; dir++)
						EXPECT_EQ(expected_load(&s, me, dim, dir),
							  s.chip[me].load[dim][dir])
						TH_LOG("count %llu colours %u chip %u dim %u dir %u",
						       (unsigned long long)counts[k], colours,
						       me, dim, dir);
			/* Both directions busy exactly when the vector is large. */
			EXPECT_EQ(k == 0, s.chip[0].load[0][COLL_MINUS] > 0);
			sim_free(&s);
		}
	}
}

/*
 * The SENDs a stream's first phase with messages opens with, before its
 * first RECV.
 */
static uint64_t leading_sends(const struct coll_stream *st)
{
	uint64_t sends = 0;
	size_t i;

	for (i = 0; i < st->count; i++) {
		const struct coll_op *op = &st->ops[i];

		if (op->kind == COLL_OP_SEND)
			sends++;
		else if (op->kind == COLL_OP_RECV_REDUCE ||
			 op->kind == COLL_OP_RECV_COPY)
			return sends;
		else if ((op->kind == COLL_OP_WAIT ||
			  op->kind == COLL_OP_SIGNAL) && sends)
			return sends;
	}
	return sends;
}

/*
 * Sends are posted, so a stream sends as far ahead as its slots allow:
 * on a ring of 2, where a chip's sends need nothing it receives, the +
 * stream's first phase opens with as many SENDs as slots on both chips.
 * Without slots (0) the sorted order stays: a piece's SEND, then the
 * RECV it waits for.  (The simulations above run the hoisted plans:
 * exact, and no chip waits forever.)
 */
TEST(streams_send_ahead_as_far_as_their_slots_allow)
{
	unsigned int slots, me;

	for (slots = 0; slots <= 3; slots++) {
		for (me = 0; me < 2; me++) {
			struct coll_params p = {
				.dims = { 2, 1, 1 }, .wrap = 1,
				.coords = { me, 0, 0 },
				.kind = COLL_ALL_REDUCE, .count = 4096,
				.colours = 1, .acc_piece = 64,
				.out_piece = 64, .slots = slots,
			};
			struct coll_plan plan;

			ASSERT_EQ(0, coll_plan_build(&p, &plan));
			/* Colour 0's + stream. */
			EXPECT_EQ(slots ? slots : 1, leading_sends(&plan.stream[0]));
			coll_plan_free(&plan);
		}
	}
}

TEST(a_plan_refuses_what_it_cannot_do)
{
	struct coll_params p = {
		.dims = { 4, 4, 1 }, .wrap = 3, .kind = COLL_ALL_REDUCE,
		.count = 100, .colours = 2, .acc_piece = 8, .out_piece = 8,
	};
	struct coll_plan plan;

	ASSERT_EQ(0, coll_plan_build(&p, &plan));
	EXPECT_EQ(2, plan.colours);
	EXPECT_EQ(4, plan.streams);
	coll_plan_free(&plan);
	p.coords[1] = 4;
	EXPECT_EQ(-EINVAL, coll_plan_build(&p, &plan));
	p.coords[1] = 0;
	p.colours = 0;
	EXPECT_EQ(-EINVAL, coll_plan_build(&p, &plan));
	p.colours = 2;
	p.acc_piece = 0;
	EXPECT_EQ(-EINVAL, coll_plan_build(&p, &plan));
	p.acc_piece = 8;
	p.kind = COLL_REDUCE_SCATTER;
	EXPECT_EQ(-EINVAL, coll_plan_build(&p, &plan));	/* 100 % 16 */
	p.count = 96;
	EXPECT_EQ(0, coll_plan_build(&p, &plan));
	coll_plan_free(&plan);
	p.wrap = 8;
	EXPECT_EQ(-EINVAL, coll_plan_build(&p, &plan));
	p.wrap = 3;
	p.kind = COLL_BROADCAST;
	p.root[0] = 4;
	EXPECT_EQ(-EINVAL, coll_plan_build(&p, &plan));
	p.root[0] = 3;
	EXPECT_EQ(0, coll_plan_build(&p, &plan));
	coll_plan_free(&plan);
}

/*
 * A communicator reuses its last plan for parameters equal to the last
 * call's: equal means every field, whatever lies between them.
 */
TEST(parameters_that_differ_in_any_field_ask_for_another_plan)
{
	struct coll_params base, other;
	unsigned int field, d;

	memset(&base, 0x5a, sizeof(base));	/* padding unlike other's */
	memset(&other, 0, sizeof(other));
	for (d = 0; d < COLL_DIMS; d++) {
		base.dims[d] = other.dims[d] = 4;
		base.coords[d] = other.coords[d] = d;
		base.root[d] = other.root[d] = 3 - d;
	}
	base.wrap = other.wrap = 7;
	base.kind = other.kind = COLL_ALL_REDUCE;
	base.colours = other.colours = 3;
	base.count = other.count = 1000;
	base.acc_piece = other.acc_piece = 64;
	base.out_piece = other.out_piece = 32;
	base.slots = other.slots = 2;
	ASSERT_TRUE(coll_params_equal(&base, &other));
	for (field = 0; field < 3 * COLL_DIMS + 7; field++) {
		struct coll_params p = base;

		d = field % COLL_DIMS;
		switch (field < 3 * COLL_DIMS ? field / COLL_DIMS : field - 6) {
		case 0:
			p.dims[d]++;
			break;
		case 1:
			p.coords[d]++;
			break;
		case 2:
			p.root[d]++;
			break;
		case 3:
			p.wrap ^= 1;
			break;
		case 4:
			p.kind = COLL_BROADCAST;
			break;
		case 5:
			p.colours--;
			break;
		case 6:
			p.count++;
			break;
		case 7:
			p.acc_piece++;
			break;
		case 8:
			p.out_piece++;
			break;
		default:
			p.slots++;
			break;
		}
		EXPECT_FALSE(coll_params_equal(&base, &p)) TH_LOG("field %u", field);
		EXPECT_FALSE(coll_params_equal(&p, &base)) TH_LOG("field %u", field);
	}
}

/* ------------------------------------------------ the communicator */

TEST(a_key_is_the_callers_else_the_launchers_else_random_for_one_process)
{
	uint64_t key, other;

	EXPECT_EQ(ACCEL_OK, coll_comm_key(0x1234, "abcd", false, &key));
	EXPECT_EQ(0x1234, key);
	EXPECT_EQ(ACCEL_OK, coll_comm_key(0, "9f0c2e51a7d4b803", false, &key));
	EXPECT_EQ(0x9f0c2e51a7d4b803ull, key);
	/* Every chip here: a key nobody else needs, never the same. */
	ASSERT_EQ(ACCEL_OK, coll_comm_key(0, NULL, true, &key));
	ASSERT_EQ(ACCEL_OK, coll_comm_key(0, "", true, &other));
	EXPECT_NE(0, key);
	EXPECT_NE(key, other);
}

TEST(without_a_key_a_slice_of_several_processes_is_refused)
{
	uint64_t key;

	EXPECT_EQ(ACCEL_ERR_NO_SLICE_KEY, coll_comm_key(0, NULL, false, &key));
	EXPECT_EQ(ACCEL_ERR_NO_SLICE_KEY, coll_comm_key(0, "", false, &key));
	EXPECT_NE(NULL, strstr(accel_error_string(ACCEL_ERR_NO_SLICE_KEY),
			       "TESSERA_SLICE_KEY"));
}

TEST(a_launchers_key_that_is_not_hexadecimal_is_refused)
{
	static const char bad[][20] = {
		"0", "0000", "xyz", "12g", " 12", "-1", "+1", "12 ",
		"1ffffffffffffffff",
	};
	unsigned int i;
	uint64_t key;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
			  coll_comm_key(0, bad[i], true, &key)) TH_LOG("'%s'", bad[i]);
}

/* A stand-in for keys: splitmix64's steps, unlike the hash under test. */
static uint64_t nth_key(uint64_t n)
{
	return (n + 1) * 0x9e3779b97f4a7c15ull;
}

TEST(the_window_id_follows_the_key_and_is_the_same_on_every_host)
{
	bool seen[256] = { false };
	unsigned int distinct = 0, moved = 0, b;
	uint64_t n, key = 0x9f0c2e51a7d4b803ull;

	for (n = 0; n < 4096; n++) {
		uint32_t id = coll_window_id(nth_key(n), 0, 256);

		ASSERT_GT(256, id);
		EXPECT_EQ(id, coll_window_id(nth_key(n), 0, 256));
		distinct += !seen[id];
		seen[id] = true;
	}
	/* Spread over the whole table: no id to squat on first. */
	EXPECT_LT(250, distinct);
	/* Every bit of the key counts: a slice id's bits too. */
	for (b = 0; b < 64; b++)
		moved += coll_window_id(key, 0, 256) !=
			 coll_window_id(key ^ 1ull << b, 0, 256);
	EXPECT_LT(56, moved);
	EXPECT_GT(17, coll_window_id(key, 3, 17));
}

TEST(communicators_of_one_key_with_different_numbers_never_share_a_window)
{
	bool seen[256] = { false };
	uint32_t number;

	for (number = 0; number < 256; number++) {
		uint32_t id = coll_window_id(0x1234, number, 256);

		ASSERT_GT(256, id);
		EXPECT_FALSE(seen[id]) TH_LOG("number %u", number);
		seen[id] = true;
	}
}

/* Each call's way in, on @comm, with harmless arguments. */
static void expect_every_call(struct __test_metadata *_metadata,
			      struct accel_comm *comm, int want)
{
	struct accel_buffer *bufs[1] = { NULL };

	EXPECT_EQ(want, accel_all_reduce(comm, bufs, bufs, 1, TSR_DTYPE_F32,
					 ACCEL_REDUCE_SUM, NULL));
	EXPECT_EQ(want, accel_reduce_scatter(comm, bufs, bufs, 1, TSR_DTYPE_F32,
					     ACCEL_REDUCE_SUM, NULL));
	EXPECT_EQ(want, accel_all_gather(comm, bufs, bufs, 1, TSR_DTYPE_F32,
					 NULL));
	EXPECT_EQ(want, accel_all_to_all(comm, bufs, bufs, 1, TSR_DTYPE_F32,
					 NULL));
	EXPECT_EQ(want, accel_broadcast(comm, bufs, 1, TSR_DTYPE_F32, 0, NULL));
	EXPECT_EQ(want, accel_send(comm, 0, NULL, 1, TSR_DTYPE_F32, 1, NULL));
	EXPECT_EQ(want, accel_recv(comm, 0, NULL, 1, TSR_DTYPE_F32, 1, NULL));
	/* Arguments a working communicator refuses: gone, it says so first. */
	EXPECT_EQ(want, accel_all_reduce(comm, NULL, NULL, 0, TSR_DTYPE_F32,
					 ACCEL_REDUCE_SUM, NULL));
}

/*
 * A communicator of no chip (the calls fail before they reach one): once
 * it gave up, every call fails at once, whatever its arguments.
 */
TEST(a_communicator_that_gave_up_refuses_every_call_at_once)
{
	struct accel_comm *comm = calloc(1, sizeof(*comm));

	ASSERT_NE(NULL, comm);
	comm->chips = 4;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_all_reduce(comm, NULL, NULL, 0, TSR_DTYPE_F32,
				   ACCEL_REDUCE_SUM, NULL));
	coll_comm_abort(comm);
	expect_every_call(_metadata, comm, ACCEL_ERR_COMM_BROKEN);
	coll_comm_abort(comm);		/* once is enough */
	expect_every_call(_metadata, comm, ACCEL_ERR_COMM_BROKEN);
	accel_comm_destroy(comm);
}

TEST_HARNESS_MAIN
