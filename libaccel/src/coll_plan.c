// SPDX-License-Identifier: MIT
/*
 * Collective plans (see coll_plan.h and Documentation/collectives.md).
 *
 * Every chip works out the same plan for the same parameters, each from
 * its own place, and each channel's two ends must agree on the order of
 * its messages.  So every piece of work gets a key from the chunk it
 * belongs to, and each phase's work is sorted by it:
 *  - reduce-scatter: by the hops the partial sum still has to go, most
 *    first, so that a chip's receptions on a channel come in the order
 *    its neighbour sent them (sending a hop shortens that count by one
 *    for everyone alike), and the owner's final receptions come last;
 *  - all-gather: by the hops already travelled from the owner;
 *  - but first by piece: a chip passes a chunk's first piece on before
 *    it sends the second, so that a few slots per channel keep every
 *    ring moving however long the vector;
 *  - between flows as far along: the one that needs its neighbour least
 *    first, so that the link carries it while the other's piece is still
 *    on its way in: in a reduce-scatter the shorter flow (it set out more
 *    recently), in an all-gather the longer one (it has further to go);
 *  - then chunk and half.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "coll_plan.h"

struct action {
	struct coll_op op;
	uint64_t key[6];
};

/* Phase ends per colour: INIT, reduce-scatter, FINISH, all-gather. */
#define COLL_MAX_PHASE_ENDS	(2 * COLL_DIMS + 2)

/* A WAIT for the end of another colour's phase, its value still to come. */
struct pending {
	unsigned int stream;
	size_t op;
	unsigned int end;
};

struct actions {
	struct action *a;
	size_t count, cap;
};

struct builder {
	const struct coll_params *p;
	struct coll_plan *plan;
	unsigned int colour;
	uint64_t signals[COLL_DIRS];	/* of this colour's semaphores, so far */
	/*
	 * The end of the colour's phase @i: its semaphores' values once
	 * signalled there, and where its streams wait for the other colours'
	 * (coll_plan_build() fills the values in once every colour is built).
	 */
	unsigned int phase_ends;
	uint64_t ended[COLL_MAX_COLOURS][COLL_DIRS][COLL_MAX_PHASE_ENDS];
	struct pending *pending;
	size_t npending, cap_pending;
	/*
	 * The colour's first reduce-scatter phase, where each piece of ACC
	 * is brought in from the input just before its first use.
	 */
	bool first;
	struct actions act;
	int err;
};

/* A range of the virtual vector. */
struct range {
	uint64_t start, len;
};

static struct range chunk_of(struct range r, uint32_t n, uint32_t c)
{
	uint64_t a = coll_split(r.len, n, c), b = coll_split(r.len, n, c + 1);

	return (struct range){ r.start + a, b - a };
}

/*
 * Array @a of @count elements of @size bytes, with room for *@cap: it, or
 * where it moved to, with room for one more; NULL (and @a as it was) when
 * there is no memory.
 */
static void *room_for_one(void *a, size_t *cap, size_t count, size_t size)
{
	size_t want = *cap ? 2 * *cap : 64;

	if (count < *cap)
		return a;
	a = realloc(a, want * size);
	if (a)
		*cap = want;
	return a;
}

static int push_op(struct coll_stream *s, const struct coll_op *op)
{
	struct coll_op *ops = room_for_one(s->ops, &s->cap, s->count,
					   sizeof(*ops));

	if (!ops)
		return -ENOMEM;
	s->ops = ops;
	s->ops[s->count++] = *op;
	return 0;
}

static void emit(struct builder *b, unsigned int dir, const struct coll_op *op)
{
	if (!b->err)
		b->err = push_op(&b->plan->stream[b->colour * COLL_DIRS + dir], op);
}

static void add_action(struct builder *b, const struct action *a)
{
	struct actions *v = &b->act;
	struct action *n;

	if (b->err)
		return;
	n = room_for_one(v->a, &v->cap, v->count, sizeof(*n));
	if (!n) {
		b->err = -ENOMEM;
		return;
	}
	v->a = n;
	v->a[v->count++] = *a;
}

static int cmp_action(const void *x, const void *y)
{
	const struct action *a = x, *b = y;
	unsigned int i;

	for (i = 0; i < 6; i++) {
		if (a->key[i] != b->key[i])
			return a->key[i] < b->key[i] ? -1 : 1;
	}
	return 0;
}

/*
 * The halves a chunk of a ring of @n goes in, @len the phase's elements
 * and @piece a message's.  On a wrapped ring of even length the chunk's
 * two halves split the odd chip out between the two directions; on a
 * ring of 2 they go over its two links, but only when each half still
 * fills two messages: below that the extra messages cost more time than
 * the second link saves, and the ring works as a line.
 */
static unsigned int halves(uint32_t n, bool wrap, uint64_t len,
			   uint64_t piece)
{
	if (!wrap || n % 2)
		return 1;
	return n > 2 || len / n >= 4 * piece ? 2 : 1;
}

/*
 * The hops of a chunk's two flows on a ring of @n: @l chips send towards
 * + before the owner, @r towards -.
 */
static void spans(uint32_t n, bool wrap, unsigned int nh, uint32_t c,
		  unsigned int h, uint32_t *l, uint32_t *r)
{
	if (!wrap || (n == 2 && nh == 1))
		*l = c;
	else if (n % 2)
		*l = (n - 1) / 2;
	else
		*l = h == 0 ? n / 2 : n / 2 - 1;
	*r = n - 1 - *l;
}

/*
 * The work of this chip on one half of one chunk, in direction @dir, at
 * hop @k of @span hops (hop 0 starts, hop @span ends); @meet says how the
 * owner's reception meets the other flow's.
 */
static void segment(struct builder *b, bool rs, unsigned int dim,
		    unsigned int dir, struct range seg, uint64_t group,
		    uint32_t k, uint32_t span, uint32_t c, unsigned int h,
		    enum coll_meet meet)
{
	uint64_t piece = rs ? b->p->acc_piece : b->p->out_piece;
	uint64_t pieces = (seg.len + piece - 1) / piece, j;

	for (j = 0; j < pieces; j++) {
		struct range pr = chunk_of(seg, pieces, j);
		struct action a = {
			.op = { .buf = rs ? COLL_ACC : COLL_OUT, .dir = dir,
				.dim = dim, .start = pr.start, .len = pr.len },
			.key = { j, group, rs ? span : UINT32_MAX - span, c, h,
				 0 },
		};

		if (!pr.len)
			continue;
		/*
		 * The piece's first use on this chip: at its owner, by the
		 * flow that adds to it first.
		 */
		if (b->first &&
		    (k < span || (span > 0 && meet != COLL_MEET_SECOND))) {
			a.op.kind = COLL_OP_INIT;
			a.op.meet = k == span && k == 0 ? meet : COLL_MEET_NONE;
			add_action(b, &a);
		}
		if (k > 0) {
			a.op.kind = rs ? COLL_OP_RECV_REDUCE : COLL_OP_RECV_COPY;
			a.op.meet = k == span ? meet : COLL_MEET_NONE;
			a.key[5] = 1;
			add_action(b, &a);
		}
		a.op.meet = COLL_MEET_NONE;
		if (k < span) {
			a.op.kind = COLL_OP_SEND;
			a.op.buf = rs ? COLL_ACC : COLL_OUT;
			a.key[5] = 2;
			add_action(b, &a);
		}
	}
}

/*
 * Reduce-scatter (@rs) or all-gather of @r along dimension @dim; with
 * @only below the ring's length, the broadcast of all of @r from the
 * chip at @only.
 */
static void ring_phase(struct builder *b, bool rs, unsigned int dim,
		       struct range r, uint32_t only)
{
	const struct coll_params *p = b->p;
	uint32_t n = p->dims[dim], me = p->coords[dim], c, l, rr;
	bool wrap = p->wrap & (1u << dim);
	unsigned int h, nh = halves(n, wrap, r.len,
				    rs ? p->acc_piece : p->out_piece);

	for (c = 0; c < n; c++) {
		if (only < n && c != only)
			continue;
		for (h = 0; h < nh; h++) {
			struct range seg = chunk_of(only < n ? r : chunk_of(r, n, c),
						    nh, h);
			uint32_t kp, km;

			spans(n, wrap, nh, c, h, &l, &rr);
			if (rs) {
				/*
				 * + flow: from c - l up to c; - flow: c + rr
				 * down.  At c, the one that arrives first
				 * (the shorter) adds first.
				 */
				enum coll_meet mp = COLL_MEET_NONE,
					       mm = COLL_MEET_NONE;

				if (l && rr) {
					mp = l <= rr ? COLL_MEET_FIRST : COLL_MEET_SECOND;
					mm = l <= rr ? COLL_MEET_SECOND : COLL_MEET_FIRST;
				}
				kp = (me + n - c + l) % n;
				km = (c + rr + n - me) % n;
				if (kp <= l)
					segment(b, rs, dim, COLL_PLUS, seg,
						n - (l - kp), kp, l, c, h, mp);
				if (km <= rr)
					segment(b, rs, dim, COLL_MINUS, seg,
						n - (rr - km), km, rr, c, h, mm);
			} else {
				/* Back out the way the sums came in. */
				kp = (me + n - c) % n;
				km = (c + n - me) % n;
				if (kp <= rr)
					segment(b, rs, dim, COLL_PLUS, seg, kp,
						kp, rr, c, h, COLL_MEET_NONE);
				if (km <= l)
					segment(b, rs, dim, COLL_MINUS, seg, km,
						km, l, c, h, COLL_MEET_NONE);
			}
		}
	}
}

static bool is_recv(const struct coll_op *op)
{
	return op->kind == COLL_OP_RECV_REDUCE || op->kind == COLL_OP_RECV_COPY;
}

/* Whether @op writes what @send sends. */
static bool feeds(const struct coll_op *op, const struct coll_op *send)
{
	return op->buf == send->buf && op->start < send->start + send->len &&
	       send->start < op->start + op->len;
}

/*
 * Move each SEND of one stream's phase (@ops, in the sorted order) as
 * early as it may go, so that the link has the next message while the
 * queue waits for one to come in (sends are posted): never above the
 * stream's previous SEND (a channel's messages keep their order), nor the
 * RECV that wrote what it sends (the INIT that brings its piece in moves
 * with it), nor so far that fewer of the phase's
 * RECVs precede it than the slot it needs was freed by (with @slots
 * slots per channel, message m needs m - slots + 1 taken).  Every chip's
 * neighbour frees that slot in the same place of its own order, so no
 * chip waits for a credit that depends on its own later work.
 */
static void hoist_sends(struct coll_op *ops, size_t n, unsigned int slots)
{
	size_t i, pos, unit, sends = 0, recvs = 0;

	for (i = 0; i < n; i++) {
		struct coll_op moved[2];
		uint64_t need, r = recvs;

		if (ops[i].kind != COLL_OP_SEND) {
			recvs += is_recv(&ops[i]);
			continue;
		}
		/* A SEND moves with the INIT that brings its piece in. */
		unit = i && ops[i - 1].kind == COLL_OP_INIT &&
		       feeds(&ops[i - 1], &ops[i]) ? 2 : 1;
		memcpy(moved, &ops[i + 1 - unit], unit * sizeof(*ops));
		need = coll_credit_needed(sends++, slots);
		for (pos = i + 1 - unit; pos > 0; pos--) {
			const struct coll_op *prev = &ops[pos - 1];

			if (feeds(prev, &ops[i]) ||
			    (prev->kind != COLL_OP_INIT &&
			     (!is_recv(prev) || r <= need)))
				break;
			r -= is_recv(prev);
		}
		memmove(&ops[pos + unit], &ops[pos],
			(i + 1 - unit - pos) * sizeof(*ops));
		memcpy(&ops[pos], moved, unit * sizeof(*ops));
	}
}

/* Remember the WAIT at op @op of stream @stream for phase end @end. */
static void add_pending(struct builder *b, unsigned int stream, size_t op,
			unsigned int end)
{
	struct pending *n;

	if (b->err)
		return;
	n = room_for_one(b->pending, &b->cap_pending, b->npending, sizeof(*n));
	if (!n) {
		b->err = -ENOMEM;
		return;
	}
	b->pending = n;
	b->pending[b->npending++] = (struct pending){ stream, op, end };
}

/* Every colour built: the values the phase ends' WAITs wait for. */
static void resolve_pending(struct builder *b)
{
	size_t i;

	for (i = 0; i < b->npending && !b->err; i++) {
		const struct pending *w = &b->pending[i];
		struct coll_op *op = &b->plan->stream[w->stream].ops[w->op];

		op->value = b->ended[op->colour][op->sem][w->end];
		if (!op->value)
			b->err = -EINVAL;	/* a colour without that end */
	}
}

struct signalled {
	uint64_t start;
	uint64_t value;		/* the semaphore's, once signalled */
};

static int cmp_signalled(const void *x, const void *y)
{
	const struct signalled *a = x, *b = y;

	return a->start < b->start ? -1 : a->start > b->start;
}

/*
 * Put the pincer's meetings into the phase's work of the colour's two
 * streams, which begins at @from[dir] in each: a SIGNAL after each piece
 * a stream adds first, a WAIT for it before the other stream adds its
 * own.  After hoist_sends(), which does not move SENDs across them.
 */
static void add_meets(struct builder *b, const size_t from[COLL_DIRS])
{
	struct coll_stream *st = &b->plan->stream[b->colour * COLL_DIRS];
	struct signalled *sig[COLL_DIRS] = { NULL, NULL };
	size_t nsig[COLL_DIRS] = { 0, 0 }, i;
	unsigned int dir;

	for (dir = 0; dir < COLL_DIRS && !b->err; dir++) {
		uint64_t v = b->signals[dir];

		sig[dir] = malloc((st[dir].count - from[dir] + 1) * sizeof(**sig));
		if (!sig[dir]) {
			b->err = -ENOMEM;
			break;
		}
		for (i = from[dir]; i < st[dir].count; i++) {
			if (st[dir].ops[i].meet == COLL_MEET_FIRST)
				sig[dir][nsig[dir]++] = (struct signalled){
					st[dir].ops[i].start, ++v };
		}
		qsort(sig[dir], nsig[dir], sizeof(**sig), cmp_signalled);
	}
	for (dir = 0; dir < COLL_DIRS && !b->err; dir++) {
		struct coll_op *ops = st[dir].ops + from[dir];
		size_t n = st[dir].count - from[dir];
		struct coll_op *old = malloc((n + 1) * sizeof(*old));

		if (!old) {
			b->err = -ENOMEM;
			break;
		}
		memcpy(old, ops, n * sizeof(*old));
		st[dir].count = from[dir];
		for (i = 0; i < n; i++) {
			struct coll_op m = { .kind = COLL_OP_WAIT,
					     .colour = b->colour, .sem = !dir };
			struct signalled key = { old[i].start, 0 }, *hit;

			if (old[i].meet == COLL_MEET_SECOND) {
				hit = bsearch(&key, sig[!dir], nsig[!dir],
					      sizeof(key), cmp_signalled);
				if (!hit) {
					b->err = -EINVAL;	/* a plan bug */
					break;
				}
				m.value = hit->value;
				emit(b, dir, &m);
			}
			emit(b, dir, &old[i]);
			if (old[i].meet == COLL_MEET_FIRST) {
				m = (struct coll_op){ .kind = COLL_OP_SIGNAL,
						      .sem = dir };
				emit(b, dir, &m);
				b->signals[dir]++;
			}
		}
		free(old);
	}
	free(sig[0]);
	free(sig[1]);
}

/*
 * The end of a phase: each of the colour's streams signals, then waits for
 * every other stream of the chip to have signalled the same end.
 */
static void end_phase(struct builder *b)
{
	unsigned int colours = b->plan->colours, end = b->phase_ends++;
	unsigned int dir, k, d;

	if (end >= COLL_MAX_PHASE_ENDS) {
		b->err = -EINVAL;	/* a plan bug */
		return;
	}
	for (dir = 0; dir < COLL_DIRS; dir++) {
		struct coll_stream *s = &b->plan->stream[b->colour * COLL_DIRS + dir];
		struct coll_op sig = { .kind = COLL_OP_SIGNAL, .sem = dir };

		emit(b, dir, &sig);
		b->ended[b->colour][dir][end] = ++b->signals[dir];
		for (k = 0; k < colours; k++) {
			for (d = 0; d < COLL_DIRS; d++) {
				struct coll_op wait = { .kind = COLL_OP_WAIT,
							.colour = k, .sem = d };

				if (k == b->colour && d == dir)
					continue;
				emit(b, dir, &wait);
				add_pending(b, b->colour * COLL_DIRS + dir,
					    s->count - 1, end);
			}
		}
	}
}

/*
 * Hand the sorted work of one phase to the colour's two streams, where
 * the pincer's halves meet piece by piece, and then meet themselves
 * (end_phase()): the next phase starts on pieces both have added to, and
 * after the last phase the next call, whose first stream may start while
 * another is still relaying this one's result into the same buffer (the
 * caller's, or the scratch ACC), waits until every stream is done here.
 */
static void flush_phase(struct builder *b)
{
	struct actions *v = &b->act;
	size_t from[COLL_DIRS];
	unsigned int dir;
	size_t i;

	qsort(v->a, v->count, sizeof(*v->a), cmp_action);
	for (dir = 0; dir < COLL_DIRS; dir++) {
		struct coll_stream *s = &b->plan->stream[b->colour * COLL_DIRS + dir];

		from[dir] = s->count;
		for (i = 0; i < v->count; i++)
			if (v->a[i].op.dir == dir)
				emit(b, dir, &v->a[i].op);
		if (!b->err && b->p->slots)
			hoist_sends(s->ops + from[dir], s->count - from[dir],
				    b->p->slots);
	}
	if (!b->err)
		add_meets(b, from);
	end_phase(b);
	b->first = false;
	v->count = 0;
}

/* INIT or FINISH: local work of the + stream, a phase of its own. */
static void local_phase(struct builder *b, enum coll_op_kind kind,
			enum coll_buf buf, struct range r)
{
	struct action a = {
		.op = { .kind = kind, .buf = buf, .dir = COLL_PLUS,
			.start = r.start, .len = r.len },
	};

	if (r.len)
		add_action(b, &a);
	flush_phase(b);
}

static void build_colour(struct builder *b)
{
	const struct coll_params *p = b->p;
	struct coll_plan *plan = b->plan;
	unsigned int k = b->colour, i, phases = plan->phases;
	struct range level[COLL_DIMS + 1];
	enum coll_kind kind = p->kind;

	level[0] = (struct range){ plan->part_start[k], plan->part_len[k] };
	for (i = 0; i < phases; i++) {
		unsigned int d = plan->order[k][i];

		level[i + 1] = chunk_of(level[i], p->dims[d], p->coords[d]);
	}
	plan->owned_start[k] = level[phases].start;
	plan->owned_len[k] = level[phases].len;

	if (kind == COLL_ALL_GATHER) {
		local_phase(b, COLL_OP_INIT, COLL_OUT, level[phases]);
	} else {
		/* With phases, the first brings the input in piece by piece. */
		if (phases)
			b->first = true;
		else
			local_phase(b, COLL_OP_INIT, COLL_ACC, level[0]);
		for (i = 0; i < phases; i++) {
			ring_phase(b, true, plan->order[k][i], level[i], UINT32_MAX);
			flush_phase(b);
		}
		local_phase(b, COLL_OP_FINISH, COLL_OUT, level[phases]);
		if (kind == COLL_REDUCE_SCATTER)
			return;
	}
	for (i = phases; i-- > 0; ) {
		ring_phase(b, false, plan->order[k][i], level[i], UINT32_MAX);
		flush_phase(b);
	}
}

/* In line with the root along the dimensions after phase @i. */
static bool in_root_line(const struct builder *b, unsigned int i)
{
	const struct coll_plan *plan = b->plan;
	unsigned int j, d;

	for (j = i + 1; j < plan->phases; j++) {
		d = plan->order[b->colour][j];
		if (b->p->coords[d] != b->p->root[d])
			return false;
	}
	return true;
}

/*
 * Broadcast: the root's line along the colour's first dimension gets the
 * part, then each of those chips passes it along the second dimension,
 * and so on; each line is an all-gather phase with a single owner.
 */
static void build_broadcast(struct builder *b)
{
	const struct coll_params *p = b->p;
	struct coll_plan *plan = b->plan;
	unsigned int k = b->colour, i, d;
	struct range part = { plan->part_start[k], plan->part_len[k] };
	bool root = !memcmp(p->coords, p->root, sizeof(p->root));

	plan->owned_start[k] = part.start;
	plan->owned_len[k] = root ? part.len : 0;
	local_phase(b, COLL_OP_INIT, COLL_OUT,
		    root ? part : (struct range){ part.start, 0 });
	for (i = 0; i < plan->phases; i++) {
		d = plan->order[k][i];
		if (in_root_line(b, i))
			ring_phase(b, false, d, part, p->root[d]);
		flush_phase(b);
	}
}

static int check_params(const struct coll_params *p)
{
	unsigned int d;

	for (d = 0; d < COLL_DIMS; d++) {
		if (!p->dims[d] || p->dims[d] > 256 || p->coords[d] >= p->dims[d])
			return -EINVAL;
	}
	for (d = 0; d < COLL_DIMS; d++) {
		if (p->kind == COLL_BROADCAST && p->root[d] >= p->dims[d])
			return -EINVAL;
	}
	if (p->kind > COLL_BROADCAST || !p->acc_piece || !p->out_piece ||
	    p->wrap >> COLL_DIMS || !p->colours)
		return -EINVAL;
	return 0;
}

int coll_plan_build(const struct coll_params *p, struct coll_plan *plan)
{
	struct builder b = { .p = p, .plan = plan };
	unsigned int active[COLL_DIMS], nactive = 0, d, k, i;
	uint64_t chips = 1, block = 0;

	memset(plan, 0, sizeof(*plan));
	if (check_params(p))
		return -EINVAL;
	for (d = 0; d < COLL_DIMS; d++) {
		chips *= p->dims[d];
		if (p->dims[d] > 1)
			active[nactive++] = d;
	}
	if ((p->kind == COLL_REDUCE_SCATTER || p->kind == COLL_ALL_GATHER) &&
	    p->count % chips)
		return -EINVAL;

	plan->phases = nactive;
	plan->colours = nactive < p->colours ? nactive : p->colours;
	plan->colours = plan->colours ? plan->colours : 1;
	for (k = 0; k < plan->colours; k++) {
		for (i = 0; i < nactive; i++)
			plan->order[k][i] = active[(k + i) % nactive];
	}
	/*
	 * Each colour takes an even share: of the vector for all-reduce, of
	 * every chip's block otherwise, so that blocks map whole.
	 */
	if (p->kind == COLL_REDUCE_SCATTER || p->kind == COLL_ALL_GATHER)
		block = p->count / chips;
	for (k = 0; k < plan->colours; k++) {
		if (!block) {
			plan->part_start[k] = coll_split(p->count, plan->colours, k);
			plan->part_len[k] = coll_split(p->count, plan->colours, k + 1) -
					    plan->part_start[k];
		} else {
			plan->part_start[k] = chips * coll_split(block, plan->colours, k);
			plan->part_len[k] = chips * (coll_split(block, plan->colours, k + 1) -
						     coll_split(block, plan->colours, k));
		}
	}
	for (k = 0; k < plan->colours; k++) {
		plan->stream[plan->streams++] = (struct coll_stream){
			.colour = k, .dir = COLL_PLUS };
		plan->stream[plan->streams++] = (struct coll_stream){
			.colour = k, .dir = COLL_MINUS };
	}
	for (k = 0; k < plan->colours && !b.err; k++) {
		b.colour = k;
		b.signals[0] = b.signals[1] = 0;
		b.phase_ends = 0;
		if (p->kind == COLL_BROADCAST)
			build_broadcast(&b);
		else
			build_colour(&b);
		plan->signals[k][COLL_PLUS] = b.signals[COLL_PLUS];
		plan->signals[k][COLL_MINUS] = b.signals[COLL_MINUS];
	}
	resolve_pending(&b);
	free(b.pending);
	free(b.act.a);
	if (b.err) {
		coll_plan_free(plan);
		return b.err;
	}
	return 0;
}

bool coll_params_equal(const struct coll_params *a,
		       const struct coll_params *b)
{
	unsigned int d;

	for (d = 0; d < COLL_DIMS; d++) {
		if (a->dims[d] != b->dims[d] || a->coords[d] != b->coords[d] ||
		    a->root[d] != b->root[d])
			return false;
	}
	return a->wrap == b->wrap && a->kind == b->kind &&
	       a->colours == b->colours && a->count == b->count &&
	       a->acc_piece == b->acc_piece && a->out_piece == b->out_piece &&
	       a->slots == b->slots;
}

void coll_plan_free(struct coll_plan *plan)
{
	unsigned int i;

	for (i = 0; i < plan->streams; i++)
		free(plan->stream[i].ops);
	memset(plan, 0, sizeof(*plan));
}

uint32_t coll_block_owner(const struct coll_params *p,
			  const struct coll_plan *plan, unsigned int colour,
			  uint64_t v)
{
	uint32_t coords[COLL_DIMS] = { 0, 0, 0 };
	unsigned int i;

	for (i = plan->phases; i-- > 0; ) {
		unsigned int d = plan->order[colour][i];

		coords[d] = v % p->dims[d];
		v /= p->dims[d];
	}
	return coords[0] + p->dims[0] * (coords[1] + p->dims[1] * coords[2]);
}
