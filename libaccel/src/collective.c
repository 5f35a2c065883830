// SPDX-License-Identifier: MIT
/*
 * Collectives: coll_plan.c says what each chip does; this file turns a
 * chip's plan into command buffers, one stream per hardware queue, and
 * submits them (coll_comm.h: the window they use).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>
#include <accel/collective.h>

#include "coll_comm.h"
#include "coll_plan.h"
#include "internal.h"

/* Commands per job: a job's run stays well inside the driver's hang timeout. */
#define JOB_COMMANDS		192
/* Elements per VPU, cast or copy command: a row of at most TSR_MAX_DIM. */
#define MAX_RUN			TSR_MAX_DIM

/* Where a virtual vector lives in a buffer. */
enum layout {
	LAYOUT_LINEAR,	/* element v at v */
	LAYOUT_BLOCKS,	/* blocks in rank order, as coll_block_owner() says */
	LAYOUT_OWNED,	/* only the chip's own blocks, colour after colour */
};

struct vmap {
	struct accel_buffer *buf;
	uint64_t base;		/* bytes */
	enum tsr_dtype dtype;
	uint32_t size;		/* bytes per element */
	enum layout layout;
};

/* One chip's part of one collective, while its commands are written. */
struct exec {
	struct accel_comm *comm;
	struct comm_chip *chip;
	struct coll_params params;
	struct coll_plan plan;
	enum coll_kind kind;
	enum tsr_vpu_op vpu_op;
	uint64_t block;		/* elements per chip's block (not all-reduce) */
	struct vmap in, acc, out;
	/*
	 * The op being written takes its piece from the input, where the
	 * INIT before it, left out, would have copied it into ACC from
	 * (fused()).
	 */
	bool from_in;
	struct coll_cbs *set;		/* the call's command buffers */
	unsigned int set_index;
	struct accel_cmdbuf *cb;
	unsigned int stream;
	unsigned int stream_jobs;	/* written for this stream */
	struct accel_coll *coll;
	/*
	 * Jobs written and not yet submitted, in the set's command buffers
	 * cb[0, batched): how each runs and whether it starts its stream.
	 */
	unsigned int batched;
	struct accel_submit_opts opts[COLL_BATCH];
	bool opens[COLL_BATCH];
};

/* ------------------------------------------------------------ layouts */

static unsigned int colour_of(const struct coll_plan *plan, uint64_t v)
{
	unsigned int k;

	for (k = 0; k + 1 < plan->colours; k++) {
		if (v < plan->part_start[k + 1])
			break;
	}
	return k;
}

/*
 * The element of @m's buffer holding virtual element @v, and in @run how
 * many elements from there on are contiguous.
 */
static uint64_t vmap_index(const struct exec *x, const struct vmap *m,
			   uint64_t v, uint64_t *run)
{
	const struct coll_plan *plan = &x->plan;
	unsigned int k = colour_of(plan, v);
	uint64_t part = coll_split(x->block, plan->colours, k);
	uint64_t per, off;

	switch (m->layout) {
	case LAYOUT_BLOCKS:
		per = plan->part_len[k] / x->comm->chips;
		off = v - plan->part_start[k];
		*run = per - off % per;
		return (uint64_t)coll_block_owner(&x->params, plan, k, off / per) *
		       x->block + part + off % per;
	case LAYOUT_OWNED:
		*run = plan->owned_start[k] + plan->owned_len[k] - v;
		return part + v - plan->owned_start[k];
	default:
		*run = UINT64_MAX;
		return v;
	}
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a < b ? a : b;

	return m < c ? m : c;
}

static struct accel_tensor row(struct accel_buffer *buf, uint64_t offset,
			       uint64_t n, enum tsr_dtype dtype)
{
	return (struct accel_tensor){
		.buffer = buf, .offset = offset, .rows = 1, .cols = (uint32_t)n,
		.stride = (uint32_t)n, .dtype = dtype,
	};
}

/* ----------------------------------------------------------- commands */

static uint64_t slot_offset(const struct accel_comm *comm, unsigned int ch,
			    uint64_t m)
{
	return SLOTS_OFFSET + (ch * COMM_SLOTS + coll_slot(m, COMM_SLOTS)) *
			      comm->slot_bytes;
}

/*
 * The streams of a chip share its buffers and order their use with
 * semaphores: implicit synchronisation would make one stream's job wait
 * for another's end, which may wait for the first.  Earlier writers of
 * the input are still waited for.
 */
static int explicit_buffers(struct exec *x)
{
	struct accel_buffer *bufs[] = {
		x->chip->window_buf, x->in.buf, x->out.buf, x->chip->scratch,
	};
	unsigned int i;
	int ret = ACCEL_OK;

	for (i = 0; i < 4 && !ret; i++) {
		if (bufs[i])
			ret = accel_cmdbuf_use_buffer(x->cb, bufs[i],
						      ACCEL_USE_EXPLICIT);
	}
	return ret;
}

/* Room for twice the jobs. */
static int grow(struct accel_coll *coll)
{
	unsigned int cap = coll->cap ? 2 * coll->cap : 16;
	struct accel_job **jobs = realloc(coll->jobs, cap * sizeof(*jobs));
	bool *opens, *done;
	uint8_t *streams, *sets;
	int *fds;

	if (!jobs)
		return ACCEL_ERR_NO_MEMORY;
	coll->jobs = jobs;
	opens = realloc(coll->opens, cap * sizeof(*opens));
	if (!opens)
		return ACCEL_ERR_NO_MEMORY;
	coll->opens = opens;
	streams = realloc(coll->streams, cap * sizeof(*streams));
	if (!streams)
		return ACCEL_ERR_NO_MEMORY;
	coll->streams = streams;
	sets = realloc(coll->sets, cap * sizeof(*sets));
	if (!sets)
		return ACCEL_ERR_NO_MEMORY;
	coll->sets = sets;
	done = realloc(coll->done, cap * sizeof(*done));
	if (!done)
		return ACCEL_ERR_NO_MEMORY;
	coll->done = done;
	fds = realloc(coll->fds, cap * sizeof(*fds));
	if (!fds)
		return ACCEL_ERR_NO_MEMORY;
	coll->fds = fds;
	coll->cap = cap;
	return ACCEL_OK;
}

/* Wait until the semaphore at @offset of the chip's window is >= @value. */
static int wait_sem(struct exec *x, uint64_t offset, uint64_t value)
{
	return coll_wait_sem(x->comm, x->chip, x->cb, offset, value);
}

/*
 * Submit the chip's batch, every job its streams have written so far, in
 * one system call: each submission costs one, and the driver's checks and
 * scheduler wake-ups, 0.5 to 1 ms under TCG.
 */
static int submit_batch(struct exec *x)
{
	const struct accel_submit_opts *opts[COLL_BATCH];
	struct accel_coll *coll = x->coll;
	unsigned int k, chip = (unsigned int)(x->chip - x->comm->chip);
	int ret = ACCEL_OK;

	if (!x->batched)
		return ACCEL_OK;
	while (!ret && coll->count + x->batched > coll->cap)
		ret = grow(coll);
	for (k = 0; k < x->batched; k++)
		opts[k] = &x->opts[k];
	if (!ret)
		ret = accel_submit_many(x->chip->dev, x->batched, x->set->cb,
					opts, &coll->jobs[coll->count]);
	for (k = 0; !ret && k < x->batched; k++) {
		unsigned int i = coll->count++;

		coll->opens[i] = x->opens[k];
		coll->streams[i] = (uint8_t)(chip * TSR_MAX_QUEUES +
					     x->opts[k].queue);
		coll->sets[i] = (uint8_t)x->set_index;
		x->set->running++;
		coll->done[i] = false;
		coll->fds[i] = -1;
	}
	x->batched = 0;
	return ret;
}

/*
 * Start the stream's next job in the chip's next command buffer: kept
 * from call to call with its device copy, which the next call overwrites
 * once the job that ran it has ended.
 */
static int begin_job(struct exec *x)
{
	struct accel_cmdbuf **cb = &x->set->cb[x->batched];
	int ret = *cb ? ACCEL_OK : accel_cmdbuf_create(x->chip->dev, cb);

	x->cb = *cb;
	if (!ret)
		ret = accel_cmdbuf_reset(x->cb);
	return ret ? ret : explicit_buffers(x);
}

/* End the stream's job so far: into the batch, submitted once full. */
static int flush(struct exec *x)
{
	int ret = ACCEL_OK;

	if (!accel_cmdbuf_count(x->cb))
		return ACCEL_OK;
	x->opts[x->batched] = (struct accel_submit_opts){ .queue = x->stream };
	x->opens[x->batched] = !x->stream_jobs++;
	if (++x->batched == COLL_BATCH)
		ret = submit_batch(x);
	return ret ? ret : begin_job(x);
}

/*
 * The chip's command buffers for the call: a set whose jobs have all been
 * seen to end, else a new one, else the next in turn (whose uploads then
 * find their copies busy and take others).
 */
static int take_set(struct exec *x)
{
	struct comm_chip *chip = x->chip;
	unsigned int k;

	for (k = 0; k < chip->nsets && chip->sets[k]->running; k++)
		;
	if (k == chip->nsets && k < COLL_SETS) {
		chip->sets[k] = calloc(1, sizeof(*chip->sets[k]));
		if (!chip->sets[k])
			return ACCEL_ERR_NO_MEMORY;
		chip->nsets++;
	} else if (k == chip->nsets) {
		k = chip->next_set++ % COLL_SETS;
	}
	x->set = chip->sets[k];
	x->set_index = k;
	return ACCEL_OK;
}

static int begin_stream(struct exec *x, unsigned int stream)
{
	int ret = x->set ? ACCEL_OK : take_set(x);

	if (ret)
		return ret;
	x->coll->written = true;
	x->stream = stream;
	x->stream_jobs = 0;
	return begin_job(x);
}

/* The stream's last job, unless it failed (@ret). */
static int end_stream(struct exec *x, int ret)
{
	return ret ? ret : flush(x);
}

/*
 * Submit the chip's jobs of the call, unless it failed (@ret); the
 * command buffers let go of the call's buffers either way.
 */
static int finish(struct exec *x, int ret)
{
	unsigned int k;

	if (!ret)
		ret = submit_batch(x);
	for (k = 0; x->set && k < COLL_BATCH && x->set->cb[k]; k++)
		accel_cmdbuf_reset(x->set->cb[k]);
	return ret;
}

static int room(struct exec *x)
{
	return accel_cmdbuf_count(x->cb) >= JOB_COMMANDS ? flush(x) : ACCEL_OK;
}

/* @n elements from @src to @dst (byte offsets): a copy, or a cast. */
static int move(struct exec *x, const struct vmap *dst, uint64_t dst_off,
		const struct vmap *src, uint64_t src_off, uint64_t n)
{
	struct accel_tensor in, out;

	if (dst->buf == src->buf && dst_off == src_off && dst->dtype == src->dtype)
		return ACCEL_OK;
	if (dst->dtype == src->dtype)
		return accel_cmdbuf_copy(x->cb, dst->buf, dst_off, src->buf,
					 src_off, (uint32_t)(n * dst->size));
	in = row(src->buf, src_off, n, src->dtype);
	out = row(dst->buf, dst_off, n, dst->dtype);
	return accel_cmdbuf_cast(x->cb, &in, &out);
}

/* @dst = @src over [@v, @v + @len), run by contiguous run. */
static int transfer(struct exec *x, const struct vmap *dst,
		    const struct vmap *src, uint64_t v, uint64_t len)
{
	while (len) {
		uint64_t rd, rs, di = vmap_index(x, dst, v, &rd);
		uint64_t si = vmap_index(x, src, v, &rs);
		uint64_t n = min3(min3(rd, rs, len), MAX_RUN, UINT64_MAX);
		int ret = room(x);

		if (!ret)
			ret = move(x, dst, dst->base + di * dst->size, src,
				   src->base + si * src->size, n);
		if (ret)
			return ret;
		v += n;
		len -= n;
	}
	return ACCEL_OK;
}

/*
 * ACC = @a (op) what lies at @b (bytes into @bm's buffer), linearly; @a
 * is ACC itself, or the input when the piece's INIT was left out.
 */
static int reduce(struct exec *x, const struct vmap *a, uint64_t v,
		  uint64_t len, struct accel_buffer *b, uint64_t b_off)
{
	while (len) {
		uint64_t run, ra, i = vmap_index(x, &x->acc, v, &run);
		uint64_t ai = vmap_index(x, a, v, &ra);
		uint64_t n = min3(min3(run, ra, len), MAX_RUN, UINT64_MAX);
		uint64_t off = x->acc.base + i * x->acc.size;
		struct accel_tensor acc = row(x->acc.buf, off, n, x->acc.dtype);
		struct accel_tensor first = row(a->buf, a->base + ai * a->size,
						n, x->acc.dtype);
		struct accel_tensor other = row(b, b_off, n, x->acc.dtype);
		int ret = room(x);

		if (!ret)
			ret = accel_cmdbuf_vpu(x->cb, x->vpu_op, &first, &other,
					       NULL, &acc);
		if (ret)
			return ret;
		v += n;
		len -= n;
		b_off += n * x->acc.size;
	}
	return ACCEL_OK;
}

static const struct vmap *vmap_of(const struct exec *x, unsigned int buf)
{
	return buf == COLL_ACC ? &x->acc : &x->out;
}

/*
 * Whether INIT @init can be left out, its piece read from the input by
 * @next instead: the SEND that starts the piece's flow (ACC never needs
 * it there: the all-gather brings the result), or the RECV_REDUCE that
 * adds to it first (ACC = input (op) message, operands in the same
 * order).  Not for a cast into ACC (bf16's f32 partial sums).  Saves a
 * copy of the whole input a call on every chip, and its modeled DMA.
 */
static bool fused(const struct exec *x, const struct coll_op *init,
		  const struct coll_op *next)
{
	return init->kind == COLL_OP_INIT && init->buf == COLL_ACC &&
	       x->in.dtype == x->acc.dtype && next->buf == COLL_ACC &&
	       (next->kind == COLL_OP_SEND ||
		next->kind == COLL_OP_RECV_REDUCE) &&
	       next->start == init->start && next->len == init->len;
}

static int op_send(struct exec *x, const struct coll_op *op)
{
	struct accel_comm *comm = x->comm;
	unsigned int ch = coll_channel(x->plan.stream[x->stream].colour,
				       op->dir, op->dim);
	uint64_t m = x->chip->sent[ch]++, need = coll_credit_needed(m, COMM_SLOTS);
	const struct vmap *src = x->from_in ? &x->in : vmap_of(x, op->buf);
	/* A ring of 2 has two links between its chips: one per direction. */
	uint32_t way = op->dir == COLL_MINUS ? TSR_ICI_WRITE_MINUS : 0;
	struct accel_ici_write w = {
		.dst = coll_neighbour(comm, x->chip, op->dim, op->dir),
		.window = comm->window_id, .key = comm->key,
		.src_buffer = src->buf, .offset = slot_offset(comm, ch, m),
		.rows = 1, .flags = way,
	};
	uint64_t v = op->start, len = op->len;
	int ret = room(x);

	if (!ret && need)
		ret = wait_sem(x, SEM_CREDIT(ch), need);
	while (!ret && len) {
		uint64_t run, i = vmap_index(x, src, v, &run);
		uint64_t n = run < len ? run : len;

		w.src_offset = src->base + i * src->size;
		w.row_bytes = (uint32_t)(n * src->size);
		if (n == len) {
			w.flags = way | TSR_ICI_WRITE_SEM;
			w.sem_offset = SEM_DATA(ch);
			w.sem_add = 1;
		}
		ret = room(x);
		if (!ret)
			ret = accel_cmdbuf_ici_write(x->cb, &w);
		w.offset += w.row_bytes;
		v += n;
		len -= n;
	}
	return ret;
}

static int op_receive(struct exec *x, const struct coll_op *op)
{
	struct accel_comm *comm = x->comm;
	unsigned int ch = coll_channel(x->plan.stream[x->stream].colour,
				       op->dir, op->dim);
	uint64_t m = x->chip->taken[ch]++, slot = slot_offset(comm, ch, m);
	struct vmap msg = *vmap_of(x, op->buf);
	int ret = room(x);

	if (!ret)
		ret = wait_sem(x, SEM_DATA(ch), m + 1);
	if (!ret && op->kind == COLL_OP_RECV_REDUCE) {
		ret = reduce(x, x->from_in ? &x->in : &x->acc, op->start,
			     op->len, x->chip->window_buf, slot);
	} else if (!ret) {
		/* The message, seen as a linear vector starting at op->start. */
		msg.buf = x->chip->window_buf;
		msg.base = slot - op->start * msg.size;
		msg.layout = LAYOUT_LINEAR;
		ret = transfer(x, vmap_of(x, op->buf), &msg, op->start, op->len);
	}
	if (!ret)
		ret = room(x);
	if (!ret) {
		/*
		 * The credit goes back the way the message came: on a ring of
		 * 2, by the other link than the stream's own messages, whose
		 * port it would wait behind.
		 */
		struct accel_ici_write credit = {
			.dst = coll_neighbour(comm, x->chip, op->dim, !op->dir),
			.window = comm->window_id, .key = comm->key,
			.flags = TSR_ICI_WRITE_SEM |
				 (op->dir == COLL_PLUS ? TSR_ICI_WRITE_MINUS : 0),
			.sem_offset = SEM_CREDIT(ch), .sem_add = 1,
		};

		ret = accel_cmdbuf_ici_write(x->cb, &credit);
	}
	return ret;
}

static int op_meet(struct exec *x, const struct coll_op *op)
{
	unsigned int colour = x->plan.stream[x->stream].colour;
	int ret = room(x);

	if (ret)
		return ret;
	if (op->kind == COLL_OP_SIGNAL)
		return accel_cmdbuf_sem_inc(x->cb, x->chip->window_buf,
					    SEM_MEET(colour, op->sem), 1);
	return wait_sem(x, SEM_MEET(op->colour, op->sem),
			x->chip->met[op->colour][op->sem] + op->value);
}

static int run_op(struct exec *x, const struct coll_op *op)
{
	switch (op->kind) {
	case COLL_OP_INIT:
		return transfer(x, vmap_of(x, op->buf), &x->in, op->start, op->len);
	case COLL_OP_SEND:
		return op_send(x, op);
	case COLL_OP_RECV_REDUCE:
	case COLL_OP_RECV_COPY:
		return op_receive(x, op);
	case COLL_OP_FINISH:
		return transfer(x, &x->out, &x->acc, op->start, op->len);
	default:
		return op_meet(x, op);
	}
}

/* ------------------------------------------------------ one collective */

struct call {
	enum coll_kind kind;
	struct accel_buffer *const *send;
	struct accel_buffer *const *recv;
	uint64_t count;		/* the caller's count */
	enum tsr_dtype dtype;
	enum accel_reduce_op op;
	unsigned int root;	/* broadcast: the root's rank */
};

static enum tsr_dtype acc_dtype(enum tsr_dtype dtype)
{
	return dtype == TSR_DTYPE_BF16 ? TSR_DTYPE_F32 : dtype;
}

/* Scratch of at least @size bytes on @chip. */
static int scratch(struct comm_chip *chip, uint64_t size)
{
	int ret;

	if (chip->scratch_size >= size)
		return ACCEL_OK;
	/* Jobs still using the old one hold it until they end. */
	accel_buffer_destroy(chip->scratch);
	chip->scratch = NULL;
	chip->scratch_size = 0;
	ret = accel_buffer_create(chip->dev, size, ACCEL_PLACEMENT_HBM,
				  &chip->scratch);
	if (!ret)
		chip->scratch_size = size;
	return ret;
}

/*
 * Where this call's vectors live on chip @i: ACC in the caller's output
 * when it can be, else in scratch.
 */
static int place(struct exec *x, const struct call *c, unsigned int i)
{
	uint32_t size = tsr_dtype_size(c->dtype);
	enum tsr_dtype acc = acc_dtype(c->dtype);
	uint64_t vcount = x->params.count;
	bool acc_in_out = c->kind == COLL_ALL_REDUCE && acc == c->dtype;
	int ret;

	x->in = (struct vmap){ c->send[i], 0, c->dtype, size, LAYOUT_LINEAR };
	x->out = (struct vmap){ c->recv[i], 0, c->dtype, size, LAYOUT_LINEAR };
	if (c->kind == COLL_REDUCE_SCATTER) {
		x->in.layout = LAYOUT_BLOCKS;
		x->out.layout = LAYOUT_OWNED;
	} else if (c->kind == COLL_ALL_GATHER) {
		x->in.layout = LAYOUT_OWNED;
		x->out.layout = LAYOUT_BLOCKS;
	}
	if (c->kind == COLL_ALL_GATHER || c->kind == COLL_BROADCAST)
		return ACCEL_OK;
	if (acc_in_out) {
		x->acc = x->out;
		return ACCEL_OK;
	}
	ret = scratch(x->chip, vcount * tsr_dtype_size(acc));
	if (ret)
		return ret;
	x->acc = (struct vmap){ x->chip->scratch, 0, acc, tsr_dtype_size(acc),
				LAYOUT_LINEAR };
	return ACCEL_OK;
}

enum tsr_vpu_op accel_reduce_vpu_op(enum accel_reduce_op op)
{
	switch (op) {
	case ACCEL_REDUCE_SUM:
		return TSR_VPU_ADD;
	case ACCEL_REDUCE_MAX:
		return TSR_VPU_MAX;
	case ACCEL_REDUCE_MIN:
		return TSR_VPU_MIN;
	default:
		return 0;
	}
}

/* The plan for @params on @chip: one of the last, or a new one kept. */
static int plan_for(struct comm_chip *chip, const struct coll_params *params,
		    struct coll_plan *plan)
{
	struct comm_plan *p;
	unsigned int k;
	int ret;

	for (k = 0; k < COMM_PLANS; k++) {
		p = &chip->plans[k];
		if (p->planned && coll_params_equal(&p->params, params)) {
			*plan = p->plan;	/* read only: the arrays stay the chip's */
			return ACCEL_OK;
		}
	}
	p = &chip->plans[chip->next_plan++ % COMM_PLANS];
	coll_plan_free(&p->plan);
	p->planned = false;
	ret = coll_plan_build(params, &p->plan);
	if (ret)
		return ret == -ENOMEM ? ACCEL_ERR_NO_MEMORY : ACCEL_ERR_INVALID_ARGUMENT;
	p->params = *params;
	p->planned = true;
	*plan = p->plan;
	return ACCEL_OK;
}

/* Write stream @s's ops, each INIT that fused() allows left out. */
static int run_stream(struct exec *x, unsigned int s)
{
	const struct coll_op *ops = x->plan.stream[s].ops;
	size_t o, count = x->plan.stream[s].count;
	int ret = ACCEL_OK;

	for (o = 0; !ret && o < count; o++) {
		x->from_in = o > 0 && fused(x, &ops[o - 1], &ops[o]);
		if (o + 1 < count && fused(x, &ops[o], &ops[o + 1]))
			continue;
		ret = run_op(x, &ops[o]);
	}
	x->from_in = false;
	return ret;
}

/* What the plan of call @c on @chip depends on. */
static struct coll_params params_of(const struct accel_comm *comm,
				    const struct call *c,
				    const struct comm_chip *chip)
{
	return (struct coll_params){
		.dims = { comm->dims[0], comm->dims[1], comm->dims[2] },
		.wrap = comm->wrap,
		.coords = { chip->coords[0], chip->coords[1], chip->coords[2] },
		.root = { c->root % comm->dims[0],
			  c->root / comm->dims[0] % comm->dims[1],
			  c->root / comm->dims[0] / comm->dims[1] },
		.kind = c->kind, .colours = comm->colours,
		.count = c->kind == COLL_ALL_REDUCE || c->kind == COLL_BROADCAST ?
			 c->count : c->count * comm->chips,
		.acc_piece = comm->slot_bytes / tsr_dtype_size(acc_dtype(c->dtype)),
		.out_piece = comm->slot_bytes / tsr_dtype_size(c->dtype),
		.slots = COMM_SLOTS,
	};
}

/* Write and submit chip @i's streams of the call. */
static int issue(struct accel_comm *comm, const struct call *c, unsigned int i,
		 struct accel_coll *coll)
{
	struct comm_chip *chip = &comm->chip[i];
	struct exec x = {
		.comm = comm, .chip = chip, .kind = c->kind, .coll = coll,
		.vpu_op = accel_reduce_vpu_op(c->kind == COLL_ALL_GATHER ||
					      c->kind == COLL_BROADCAST ?
					      ACCEL_REDUCE_SUM : c->op),
		.block = c->kind == COLL_ALL_REDUCE || c->kind == COLL_BROADCAST ?
			 0 : c->count,
	};
	unsigned int k, s;
	int ret;

	x.params = params_of(comm, c, chip);
	ret = plan_for(chip, &x.params, &x.plan);
	if (!ret)
		ret = place(&x, c, i);
	for (s = 0; !ret && s < x.plan.streams; s++) {
		ret = begin_stream(&x, s);
		if (!ret)
			ret = run_stream(&x, s);
		ret = end_stream(&x, ret);
	}
	ret = finish(&x, ret);
	for (k = 0; !ret && k < x.plan.colours; k++) {
		chip->met[k][COLL_PLUS] += x.plan.signals[k][COLL_PLUS];
		chip->met[k][COLL_MINUS] += x.plan.signals[k][COLL_MINUS];
	}
	return ret;
}

/*
 * All-to-all, on two queues: at step s every chip sends its block for
 * rank + s and takes the block from rank - s, so each send meets its
 * reception at the same step.  A direct slot per sender is freed by a
 * credit before the next message; the links route every message.
 */
/* @bytes at @offset of @buf to rank @to's direct slot, message by message. */
static int direct_send(struct exec *x, struct accel_buffer *buf,
		       uint64_t offset, uint64_t bytes, unsigned int to)
{
	struct accel_comm *comm = x->comm;
	struct accel_ici_write w = {
		.dst = coll_coords_of_rank(comm, to), .window = comm->window_id,
		.key = comm->key, .src_buffer = buf,
		.offset = direct_slot(comm, x->chip->rank), .rows = 1,
		.flags = TSR_ICI_WRITE_SEM,
		.sem_offset = SEM_DIRECT_DATA(x->chip->rank), .sem_add = 1,
	};
	uint64_t done, n;
	int ret = ACCEL_OK;

	for (done = 0; !ret && done < bytes; done += n) {
		uint64_t m = x->chip->direct_sent[to]++;

		n = bytes - done < comm->slot_bytes ? bytes - done : comm->slot_bytes;
		w.src_offset = offset + done;
		w.row_bytes = (uint32_t)n;
		ret = room(x);
		if (!ret && m)
			ret = wait_sem(x, SEM_DIRECT_CREDIT(to), m);
		if (!ret)
			ret = accel_cmdbuf_ici_write(x->cb, &w);
	}
	return ret;
}

/* @bytes from rank @from's direct slot to @offset of @buf. */
static int direct_receive(struct exec *x, struct accel_buffer *buf,
			  uint64_t offset, uint64_t bytes, unsigned int from)
{
	struct accel_comm *comm = x->comm;
	uint64_t done, n;
	int ret = ACCEL_OK;

	for (done = 0; !ret && done < bytes; done += n) {
		uint64_t m = x->chip->direct_taken[from]++;

		n = bytes - done < comm->slot_bytes ? bytes - done : comm->slot_bytes;
		ret = room(x);
		if (!ret)
			ret = wait_sem(x, SEM_DIRECT_DATA(from), m + 1);
		if (!ret)
			ret = accel_cmdbuf_copy(x->cb, buf, offset + done,
						x->chip->window_buf,
						direct_slot(comm, from), (uint32_t)n);
		if (!ret)
			ret = accel_cmdbuf_ici_sem_inc(x->cb, coll_coords_of_rank(comm, from),
						       comm->window_id, comm->key,
						       SEM_DIRECT_CREDIT(x->chip->rank), 1);
	}
	return ret;
}

/*
 * A small all-reduce on a slice of at most 2 chips along every dimension
 * (2x2, 2x2x2) takes one job per chip where the pincer takes two per
 * colour: every chip sends its whole input to every other chip's direct
 * slot, and adds up all of them itself.  Each part of the vector is added
 * up as the pincer's colour for it would: pairs along the colour's first
 * dimension, then those sums paired along the next, and so on, each pair
 * one commutative operation, so every chip gets the pincer's bits.
 */
#define DIRECT_MAX_BYTES	(64u * 1024)
#define DIRECT_MAX_CHIPS	8

static bool direct_fits(const struct accel_comm *comm, const struct call *c)
{
	uint64_t bytes = c->count * tsr_dtype_size(c->dtype);
	unsigned int d;

	if (c->kind != COLL_ALL_REDUCE || acc_dtype(c->dtype) != c->dtype ||
	    comm->chips < 2 || bytes > DIRECT_MAX_BYTES || bytes > comm->slot_bytes)
		return false;
	for (d = 0; d < COLL_DIMS; d++)
		if (comm->dims[d] > 2)
			return false;
	return true;
}

/* How far apart in rank two neighbours along dimension @d are. */
static unsigned int rank_stride(const struct accel_comm *comm, unsigned int d)
{
	unsigned int stride = 1, e;

	for (e = 0; e < d; e++)
		stride *= comm->dims[e];
	return stride;
}

struct where {
	struct accel_buffer *buf;
	uint64_t base;		/* bytes */
};

/* @dst = @a (op) @b over elements [@start, @start + @len). */
static int reduce_range(struct exec *x, struct where dst, struct where a,
			struct where b, uint64_t start, uint64_t len)
{
	uint32_t size = x->in.size;
	int ret = ACCEL_OK;

	while (!ret && len) {
		uint64_t n = len < MAX_RUN ? len : MAX_RUN;
		struct accel_tensor first = row(a.buf, a.base + start * size, n, x->in.dtype);
		struct accel_tensor other = row(b.buf, b.base + start * size, n, x->in.dtype);
		struct accel_tensor out = row(dst.buf, dst.base + start * size, n, x->in.dtype);

		ret = room(x);
		if (!ret)
			ret = accel_cmdbuf_vpu(x->cb, x->vpu_op, &first, &other, NULL, &out);
		start += n;
		len -= n;
	}
	return ret;
}

/*
 * Colour @k's part, from every chip's vector (the chip's own input, the
 * others in their direct slots): the pairs are added into the lower one's
 * place (its slot, which is the chip's until it gives the credit back, or
 * the output for its own), the last into the output.
 */
static int direct_part(struct exec *x, unsigned int k)
{
	const struct coll_plan *plan = &x->plan;
	struct accel_comm *comm = x->comm;
	struct where at[DIRECT_MAX_CHIPS];
	struct where out = { x->out.buf, 0 };
	unsigned int me = x->chip->rank, r, i;
	int ret = ACCEL_OK;

	for (r = 0; r < comm->chips; r++)
		at[r] = r == me ? (struct where){ x->in.buf, 0 } :
				  (struct where){ x->chip->window_buf, direct_slot(comm, r) };
	for (i = 0; !ret && i < plan->phases; i++) {
		unsigned int stride = rank_stride(comm, plan->order[k][i]), e;
		bool last = i + 1 == plan->phases;

		for (r = 0; !ret && r < comm->chips; r++) {
			struct where dst = last || r == me ? out : at[r];
			bool lower = true;

			/* The sums left: at chips at 0 along the dimensions done. */
			for (e = 0; e <= i; e++)
				lower &= r / rank_stride(comm, plan->order[k][e]) %
					 comm->dims[plan->order[k][e]] == 0;
			if (!lower)
				continue;
			ret = reduce_range(x, dst, at[r], at[r + stride],
					   plan->part_start[k], plan->part_len[k]);
			at[r] = dst;
		}
	}
	return ret;
}

static int issue_direct(struct accel_comm *comm, const struct call *c,
			unsigned int i, struct accel_coll *coll)
{
	struct comm_chip *chip = &comm->chip[i];
	uint64_t bytes = c->count * tsr_dtype_size(c->dtype);
	struct exec x = {
		.comm = comm, .chip = chip, .coll = coll,
		.vpu_op = accel_reduce_vpu_op(c->op),
	};
	unsigned int me = chip->rank, n = comm->chips, s, k;
	int ret;

	/* The plan only says how the colours split the vector, and their order. */
	x.params = params_of(comm, c, chip);
	x.in = (struct vmap){ c->send[i], 0, c->dtype, tsr_dtype_size(c->dtype),
			      LAYOUT_LINEAR };
	x.out = x.acc = (struct vmap){ c->recv[i], 0, c->dtype,
				       tsr_dtype_size(c->dtype), LAYOUT_LINEAR };
	ret = plan_for(chip, &x.params, &x.plan);
	if (!ret)
		ret = begin_stream(&x, 0);
	for (s = 1; !ret && s < n; s++)
		ret = direct_send(&x, c->send[i], 0, bytes, (me + s) % n);
	for (s = 1; !ret && s < n; s++) {
		unsigned int from = (me + n - s) % n;

		ret = room(&x);
		if (!ret)
			ret = wait_sem(&x, SEM_DIRECT_DATA(from),
				       ++chip->direct_taken[from]);
	}
	for (k = 0; !ret && k < x.plan.colours; k++)
		ret = direct_part(&x, k);
	for (s = 1; !ret && s < n; s++) {
		unsigned int from = (me + n - s) % n;

		ret = room(&x);
		if (!ret)
			ret = accel_cmdbuf_ici_sem_inc(x.cb, coll_coords_of_rank(comm, from),
						       comm->window_id, comm->key,
						       SEM_DIRECT_CREDIT(me), 1);
	}
	return finish(&x, end_stream(&x, ret));
}

static int issue_all_to_all(struct accel_comm *comm, const struct call *c,
			    unsigned int i, struct accel_coll *coll)
{
	struct comm_chip *chip = &comm->chip[i];
	uint64_t bytes = c->count * tsr_dtype_size(c->dtype);
	struct exec x = { .comm = comm, .chip = chip, .coll = coll };
	unsigned int me = chip->rank, n = comm->chips, s;
	int ret;

	x.in = (struct vmap){ c->send[i], 0, c->dtype, 0, LAYOUT_LINEAR };
	x.out = (struct vmap){ c->recv[i], 0, c->dtype, 0, LAYOUT_LINEAR };
	/* Queue 0 sends, starting with this chip's own block; queue 1 takes. */
	ret = begin_stream(&x, 0);
	if (!ret)
		ret = accel_cmdbuf_copy(x.cb, c->recv[i], me * bytes, c->send[i],
					me * bytes, (uint32_t)bytes);
	for (s = 1; !ret && s < n; s++)
		ret = direct_send(&x, c->send[i], (me + s) % n * bytes, bytes,
				  (me + s) % n);
	ret = end_stream(&x, ret);
	if (!ret)
		ret = begin_stream(&x, 1);
	for (s = 1; !ret && s < n; s++)
		ret = direct_receive(&x, c->recv[i], (me + n - s) % n * bytes, bytes,
				     (me + n - s) % n);
	return finish(&x, end_stream(&x, ret));
}

static bool in_hbm(struct accel_buffer *buf, uint64_t bytes)
{
	return buf && accel_buffer_placement(buf) == ACCEL_PLACEMENT_HBM &&
	       accel_buffer_size(buf) >= bytes;
}

/*
 * ACCEL_OK for a communicator a call may use: once it gave up, every call
 * fails at once, until the caller makes a new one; a chip of another host
 * that gave up makes it give up before a call writes anything.
 */
static int usable(struct accel_comm *comm)
{
	if (!comm)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (comm->broken)
		return ACCEL_ERR_COMM_BROKEN;
	if (!coll_comm_peer_aborted(comm))
		return ACCEL_OK;
	coll_comm_abort(comm);
	return ACCEL_ERR_PEER_ABORT;
}

static int check_call(struct accel_comm *comm, const struct call *c)
{
	uint32_t size = tsr_dtype_size(c->dtype);
	uint64_t in = c->count, out = c->count;
	unsigned int i;
	int ret = usable(comm);

	if (ret)
		return ret;
	if (!c->send || !c->recv || !c->count)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (c->dtype != TSR_DTYPE_F32 && c->dtype != TSR_DTYPE_BF16 &&
	    c->dtype != TSR_DTYPE_I32)
		return ACCEL_ERR_BAD_DTYPE;
	if (c->dtype == TSR_DTYPE_I32 && (c->kind == COLL_ALL_REDUCE ||
					  c->kind == COLL_REDUCE_SCATTER) &&
	    !(comm->caps & TSR_CAP_VPU_I32))
		return ACCEL_ERR_NOT_SUPPORTED;
	if ((c->kind == COLL_ALL_REDUCE || c->kind == COLL_REDUCE_SCATTER) &&
	    (c->op < ACCEL_REDUCE_SUM || c->op > ACCEL_REDUCE_MIN))
		return ACCEL_ERR_BAD_OP;
	if (c->kind == COLL_BROADCAST && c->root >= comm->chips)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (c->kind == COLL_REDUCE_SCATTER)
		in *= comm->chips;
	else if (c->kind == COLL_ALL_GATHER)
		out *= comm->chips;
	if (c->kind == COLL_ALL_TO_ALL) {
		in *= comm->chips;
		out *= comm->chips;
		/* Each block is a single copy and whole slots. */
		if (c->count * size > TSR_MAX_TRANSFER - 1)
			return ACCEL_ERR_TOO_LARGE;
	}
	if (in > TSR_MAX_ELEMENTS || out > TSR_MAX_ELEMENTS)
		return ACCEL_ERR_TOO_LARGE;
	for (i = 0; i < comm->count; i++) {
		if (!in_hbm(c->send[i], in * size) || !in_hbm(c->recv[i], out * size))
			return ACCEL_ERR_OUT_OF_BOUNDS;
		if ((c->kind == COLL_REDUCE_SCATTER || c->kind == COLL_ALL_GATHER ||
		     c->kind == COLL_ALL_TO_ALL) && c->send[i] == c->recv[i])
			return ACCEL_ERR_INVALID_ARGUMENT;
	}
	return ACCEL_OK;
}

static int collective(struct accel_comm *comm, const struct call *c,
		      struct accel_coll **out)
{
	struct accel_coll *coll;
	unsigned int i;
	int ret = check_call(comm, c);

	if (ret)
		return ret;
	coll = calloc(1, sizeof(*coll));
	if (!coll)
		return ACCEL_ERR_NO_MEMORY;
	coll->comm = comm;
	for (i = 0; !ret && i < comm->count; i++)
		ret = c->kind == COLL_ALL_TO_ALL ? issue_all_to_all(comm, c, i, coll) :
		      direct_fits(comm, c) ? issue_direct(comm, c, i, coll) :
		      issue(comm, c, i, coll);
	/*
	 * The other chips wait for the rest; or this host's counts of
	 * messages moved on without it.
	 */
	if (ret && coll->written)
		coll_comm_abort(comm);
	/* Issued: it ends after the calls before it (accel_coll_wait()). */
	if (!ret)
		coll_link(comm, coll);
	if (ret || !out) {
		int waited = coll->count ? accel_coll_wait(coll, ACCEL_TIMEOUT_INFINITE) : 0;

		accel_coll_destroy(coll);
		return ret ? ret : waited;
	}
	*out = coll;
	return ACCEL_OK;
}

int accel_all_reduce(struct accel_comm *comm, struct accel_buffer *const *send,
		     struct accel_buffer *const *recv, uint64_t count,
		     enum tsr_dtype dtype, enum accel_reduce_op op,
		     struct accel_coll **coll)
{
	struct call c = { COLL_ALL_REDUCE, send, recv, count, dtype, op, 0 };

	return collective(comm, &c, coll);
}

int accel_reduce_scatter(struct accel_comm *comm,
			 struct accel_buffer *const *send,
			 struct accel_buffer *const *recv, uint64_t count,
			 enum tsr_dtype dtype, enum accel_reduce_op op,
			 struct accel_coll **coll)
{
	struct call c = { COLL_REDUCE_SCATTER, send, recv, count, dtype, op, 0 };

	return collective(comm, &c, coll);
}

int accel_all_gather(struct accel_comm *comm, struct accel_buffer *const *send,
		     struct accel_buffer *const *recv, uint64_t count,
		     enum tsr_dtype dtype, struct accel_coll **coll)
{
	struct call c = { COLL_ALL_GATHER, send, recv, count, dtype, 0, 0 };

	return collective(comm, &c, coll);
}

int accel_all_to_all(struct accel_comm *comm, struct accel_buffer *const *send,
		     struct accel_buffer *const *recv, uint64_t count,
		     enum tsr_dtype dtype, struct accel_coll **coll)
{
	struct call c = { COLL_ALL_TO_ALL, send, recv, count, dtype, 0, 0 };

	return collective(comm, &c, coll);
}

/*
 * Send or receive on local chip @i: one stream, on queue 0 (sends) or 1
 * (receptions), as all-to-all's; pairs see their messages in the order
 * both sides made the calls.
 */
static int point_to_point(struct accel_comm *comm, unsigned int i,
			  struct accel_buffer *buf, uint64_t count,
			  enum tsr_dtype dtype, unsigned int peer, bool sending,
			  struct accel_coll **out)
{
	uint64_t bytes = count * tsr_dtype_size(dtype);
	struct accel_coll *coll;
	struct exec x = { .comm = comm };
	int ret = usable(comm);

	if (ret)
		return ret;
	if (i >= comm->count || !buf || !count || !tsr_dtype_size(dtype) ||
	    peer >= comm->chips || peer == comm->chip[i].rank)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (dtype == TSR_DTYPE_I8)
		return ACCEL_ERR_BAD_DTYPE;
	if (!in_hbm(buf, bytes))
		return ACCEL_ERR_OUT_OF_BOUNDS;
	if (bytes >= TSR_MAX_TRANSFER)
		return ACCEL_ERR_TOO_LARGE;
	coll = calloc(1, sizeof(*coll));
	if (!coll)
		return ACCEL_ERR_NO_MEMORY;
	coll->comm = comm;
	x.chip = &comm->chip[i];
	x.coll = coll;
	x.in = x.out = (struct vmap){ buf, 0, dtype, 0, LAYOUT_LINEAR };
	ret = begin_stream(&x, sending ? 0 : 1);
	if (!ret)
		ret = sending ? direct_send(&x, buf, 0, bytes, peer)
			      : direct_receive(&x, buf, 0, bytes, peer);
	ret = finish(&x, end_stream(&x, ret));
	if (ret && coll->written)
		coll_comm_abort(comm);
	/* Issued: it ends after the calls before it (accel_coll_wait()). */
	if (!ret)
		coll_link(comm, coll);
	if (ret || !out) {
		int waited = coll->count ? accel_coll_wait(coll, ACCEL_TIMEOUT_INFINITE) : 0;

		accel_coll_destroy(coll);
		return ret ? ret : waited;
	}
	*out = coll;
	return ACCEL_OK;
}

int accel_send(struct accel_comm *comm, unsigned int i, struct accel_buffer *buf,
	       uint64_t count, enum tsr_dtype dtype, unsigned int peer,
	       struct accel_coll **coll)
{
	return point_to_point(comm, i, buf, count, dtype, peer, true, coll);
}

int accel_recv(struct accel_comm *comm, unsigned int i, struct accel_buffer *buf,
	       uint64_t count, enum tsr_dtype dtype, unsigned int peer,
	       struct accel_coll **coll)
{
	return point_to_point(comm, i, buf, count, dtype, peer, false, coll);
}

int accel_broadcast(struct accel_comm *comm, struct accel_buffer *const *buf,
		    uint64_t count, enum tsr_dtype dtype, unsigned int root,
		    struct accel_coll **coll)
{
	struct call c = { COLL_BROADCAST, buf, buf, count, dtype, 0, root };

	return collective(comm, &c, coll);
}
