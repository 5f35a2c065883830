// SPDX-License-Identifier: MIT
/*
 * The ops layer: matmul, element-wise ops, reductions and softmax of any
 * size, composed from the chip's commands through the builder.
 *
 * Every op checks its operands as a whole first (so that a message names
 * the op's own arguments), then appends tile after tile through the
 * builder functions; should one fail all the op's commands are taken
 * back.  Tiles are windows of the operands (offsets and the row stride),
 * so in-place tiling copies nothing; only staging through HBM and partial
 * results use scratch.
 */
#include <math.h>
#include <string.h>

#include <tessera/chip.h>

#include <accel/accel.h>

#include "internal.h"

#define DTYPE_BIT(d)		(1u << (d))
#define FLOAT_DTYPES		(DTYPE_BIT(TSR_DTYPE_F32) | DTYPE_BIT(TSR_DTYPE_BF16))
/* Scratch areas start at multiples of this. */
#define SCRATCH_ALIGN		256u

static uint32_t min32(uint64_t a, uint64_t b)
{
	return (uint32_t)(a < b ? a : b);
}

static uint32_t div_up(uint64_t a, uint64_t b)
{
	return (uint32_t)((a + b - 1) / b);
}

static uint64_t align_up(uint64_t v)
{
	return (v + SCRATCH_ALIGN - 1) & ~(uint64_t)(SCRATCH_ALIGN - 1);
}

static uint32_t stride_of(const struct accel_tensor *t)
{
	return t->stride ? t->stride : t->cols;
}

/* The @rows x @cols window of @t at (@r0, @c0). */
static struct accel_tensor window(const struct accel_tensor *t, uint64_t r0,
				  uint64_t c0, uint32_t rows, uint32_t cols)
{
	struct accel_tensor w = *t;

	w.offset += (r0 * stride_of(t) + c0) * accel_dtype_size(t->dtype);
	w.rows = rows;
	w.cols = cols;
	w.stride = stride_of(t);
	return w;
}

/* A dense f32 tensor in @scratch at byte @offset. */
static struct accel_tensor scratch_tensor(struct accel_buffer *scratch,
					  uint64_t offset, uint32_t rows,
					  uint32_t cols, enum tsr_dtype dtype)
{
	return (struct accel_tensor){
		.buffer = scratch, .offset = offset, .rows = rows,
		.cols = cols, .dtype = dtype,
	};
}

/* ------------------------------------------------------- checking */

/*
 * Check @t as a whole: type among @dtypes, non-zero shape, stride, and
 * that it lies within its buffer.  Tiles are then checked again by the
 * builder, which also records the buffers.
 */
static int check_tensor(struct accel_cmdbuf *cb, const char *op,
			const char *name, const struct accel_tensor *t,
			uint32_t dtypes)
{
	unsigned __int128 extent;
	unsigned int esize;

	if (!t)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: %s is NULL", op, name);
	esize = accel_dtype_size(t->dtype);
	if (!esize || !(dtypes & DTYPE_BIT(t->dtype)))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_DTYPE,
					 "%s: %s.dtype %s (%u) is not allowed here",
					 op, name, accel_dtype_name(t->dtype),
					 t->dtype);
	if (!t->rows || !t->cols)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: %s is %ux%u; both must be at least 1",
					 op, name, t->rows, t->cols);
	if (t->stride && t->stride < t->cols)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_STRIDE,
					 "%s: %s.stride %u is below its %u columns",
					 op, name, t->stride, t->cols);
	if (t->buffer && t->buffer->dev != accel_cmdbuf_device(cb))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_WRONG_DEVICE,
					 "%s: %s is in a buffer of another device",
					 op, name);
	extent = ((unsigned __int128)(t->rows - 1) * stride_of(t) + t->cols) *
		 esize;
	if (t->buffer && (t->offset > t->buffer->size ||
			  extent > t->buffer->size - t->offset))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_OUT_OF_BOUNDS,
					 "%s: %s (%ux%u, stride %u, at byte %llu) does not fit its %llu-byte buffer",
					 op, name, t->rows, t->cols, stride_of(t),
					 (unsigned long long)t->offset,
					 (unsigned long long)t->buffer->size);
	return ACCEL_OK;
}

/* @t is @out's shape, one row or one column of it (VPU broadcasting). */
static int check_broadcast(struct accel_cmdbuf *cb, const char *op,
			   const char *name, const struct accel_tensor *t,
			   const struct accel_tensor *out)
{
	bool rows_ok = t->rows == out->rows || t->rows == 1;
	bool cols_ok = t->cols == out->cols || t->cols == 1;

	if (rows_ok && cols_ok && (t->rows == out->rows || t->cols == out->cols))
		return ACCEL_OK;
	return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
				 "%s: %s is %ux%u; it must be out's shape (%ux%u), one row or one column of it",
				 op, name, t->rows, t->cols, out->rows, out->cols);
}

/* Whether @scratch holds @need bytes; names the op and the need if not. */
static int check_scratch(struct accel_cmdbuf *cb, const char *op,
			 struct accel_buffer *scratch, uint64_t need)
{
	if (!need)
		return ACCEL_OK;
	if (!scratch)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: needs a scratch buffer of %llu bytes",
					 op, (unsigned long long)need);
	if (scratch->dev != accel_cmdbuf_device(cb))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_WRONG_DEVICE,
					 "%s: the scratch buffer belongs to another device",
					 op);
	if (scratch->size < need)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_NO_MEMORY,
					 "%s: needs %llu bytes of scratch; the buffer has %llu",
					 op, (unsigned long long)need,
					 (unsigned long long)scratch->size);
	return ACCEL_OK;
}

/* An op's result @ret; on failure, take back what the op appended. */
static int finish(struct accel_cmdbuf *cb, const struct accel_cmdbuf_mark *m,
		  int ret)
{
	if (ret)
		accel_cmdbuf_rollback(cb, m);
	return ret;
}

/* ------------------------------------------------------- element-wise */

/* The part of operand @t (shaped like out, or broadcast) under a tile. */
static struct accel_tensor operand_tile(const struct accel_tensor *t,
					uint64_t r0, uint64_t c0,
					uint32_t rows, uint32_t cols)
{
	bool row = t->rows == 1, col = t->cols == 1;

	return window(t, row ? 0 : r0, col ? 0 : c0, row ? 1 : rows,
		      col ? 1 : cols);
}

/* Largest tile of a rows x cols operand within one command's limits. */
static void tile_2d(uint32_t rows, uint32_t cols, uint32_t *tr, uint32_t *tc)
{
	*tc = min32(cols, TSR_MAX_DIM);
	*tr = min32(min32(rows, TSR_MAX_DIM), TSR_MAX_ELEMENTS / *tc);
}

static int elementwise_tiles(struct accel_cmdbuf *cb, enum tsr_vpu_op op,
			     const struct accel_tensor *a,
			     const struct accel_tensor *b,
			     const struct accel_tensor *c,
			     const struct accel_tensor *out)
{
	uint32_t tr, tc;
	uint64_t r0, c0;
	int ret;

	tile_2d(out->rows, out->cols, &tr, &tc);
	for (r0 = 0; r0 < out->rows; r0 += tr) {
		for (c0 = 0; c0 < out->cols; c0 += tc) {
			uint32_t rows = min32(tr, out->rows - r0);
			uint32_t cols = min32(tc, out->cols - c0);
			struct accel_tensor ta = window(a, r0, c0, rows, cols);
			struct accel_tensor to = window(out, r0, c0, rows, cols);
			struct accel_tensor tb, tcc;

			if (b)
				tb = operand_tile(b, r0, c0, rows, cols);
			if (c)
				tcc = operand_tile(c, r0, c0, rows, cols);
			ret = accel_cmdbuf_vpu(cb, op, &ta, b ? &tb : NULL,
					       c ? &tcc : NULL, &to);
			if (ret)
				return ret;
		}
	}
	return ACCEL_OK;
}

int accel_op_elementwise(struct accel_cmdbuf *cb, enum tsr_vpu_op op,
			 const struct accel_tensor *a,
			 const struct accel_tensor *b,
			 const struct accel_tensor *c,
			 const struct accel_tensor *out)
{
	static const char name[] = "elementwise";
	unsigned int n = accel_vpu_operands(op);
	struct accel_cmdbuf_mark m;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (!n)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_OP,
					 "%s: op %u is no enum tsr_vpu_op", name, op);
	if ((n < 2 && b) || (n < 3 && c))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: op %u takes %u operand%s", name, op,
					 n, n > 1 ? "s" : "");
	ret = check_tensor(cb, name, "out", out, FLOAT_DTYPES);
	if (!ret)
		ret = check_tensor(cb, name, "a", a, FLOAT_DTYPES);
	if (!ret && (a->rows != out->rows || a->cols != out->cols))
		ret = accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					"%s: a is %ux%u but out is %ux%u", name,
					a->rows, a->cols, out->rows, out->cols);
	if (!ret && n >= 2)
		ret = check_tensor(cb, name, "b", b, FLOAT_DTYPES) ?:
		      check_broadcast(cb, name, "b", b, out);
	if (!ret && n == 3)
		ret = check_tensor(cb, name, "c", c, FLOAT_DTYPES) ?:
		      check_broadcast(cb, name, "c", c, out);
	if (ret)
		return ret;
	accel_cmdbuf_mark(cb, &m);
	return finish(cb, &m, elementwise_tiles(cb, op, a, b, c, out));
}

/* ------------------------------------------------------- reductions */

/*
 * How a reduction along @axis (0 or 1) splits: the reduced extent goes in
 * chunks of @chunk; more than one chunk leaves partial results, in f32,
 * for a second pass.  The other extent goes in tiles of @tile.
 */
struct reduce_plan {
	uint32_t tile;		/* kept elements per pass */
	uint32_t chunk;		/* reduced elements per command */
	uint32_t chunks;
	uint64_t partial_bytes;	/* scratch for one tile's partials */
};

static void plan_reduce(uint32_t rows, uint32_t cols, uint32_t axis,
			struct reduce_plan *p)
{
	uint32_t kept = axis == 0 ? cols : rows;
	uint32_t reduced = axis == 0 ? rows : cols;

	p->tile = min32(kept, TSR_MAX_DIM);
	p->chunk = min32(min32(reduced, TSR_MAX_DIM), TSR_MAX_ELEMENTS / p->tile);
	p->chunks = div_up(reduced, p->chunk);
	p->partial_bytes = p->chunks > 1 ?
			   align_up((uint64_t)p->chunks * p->tile * 4) : 0;
}

uint64_t accel_reduce_scratch_size(uint32_t rows, uint32_t cols,
				   uint32_t axis)
{
	struct reduce_plan p;

	if (!rows || !cols || axis > ACCEL_AXIS_ALL)
		return 0;
	if (axis != ACCEL_AXIS_ALL) {
		plan_reduce(rows, cols, axis, &p);
		return p.partial_bytes;
	}
	/* A column of row results, then that column reduced along axis 0. */
	plan_reduce(rows, cols, 1, &p);
	return align_up((uint64_t)rows * 4) + p.partial_bytes +
	       accel_reduce_scratch_size(rows, 1, 0);
}

/* A window of @t along the kept (@k0, @kn) and reduced (@r0, @rn) axes. */
static struct accel_tensor reduce_window(const struct accel_tensor *t,
					 uint32_t axis, uint64_t k0,
					 uint32_t kn, uint64_t r0, uint32_t rn)
{
	return axis == 0 ? window(t, r0, k0, rn, kn) : window(t, k0, r0, kn, rn);
}

/* Reduce along @axis (0 or 1); partials at @scratch_offset of @scratch. */
static int reduce_axis(struct accel_cmdbuf *cb, struct accel_buffer *scratch,
		       uint64_t scratch_offset, enum tsr_reduce_op op,
		       uint32_t axis, const struct accel_tensor *in,
		       const struct accel_tensor *out)
{
	uint32_t kept = axis == 0 ? in->cols : in->rows;
	uint32_t reduced = axis == 0 ? in->rows : in->cols;
	struct reduce_plan p;
	uint64_t k0, r0;
	int ret;

	plan_reduce(in->rows, in->cols, axis, &p);
	for (k0 = 0; k0 < kept; k0 += p.tile) {
		uint32_t kn = min32(p.tile, kept - k0);
		struct accel_tensor dst = axis == 0 ? window(out, 0, k0, 1, kn) :
						      window(out, k0, 0, kn, 1);
		/* Partials: one row (axis 0) or column (axis 1) per chunk. */
		struct accel_tensor part = axis == 0 ?
			scratch_tensor(scratch, scratch_offset, p.chunks, kn,
				       TSR_DTYPE_F32) :
			scratch_tensor(scratch, scratch_offset, kn, p.chunks,
				       TSR_DTYPE_F32);

		for (r0 = 0; r0 < reduced; r0 += p.chunk) {
			uint32_t rn = min32(p.chunk, reduced - r0);
			struct accel_tensor src = reduce_window(in, axis, k0, kn,
								r0, rn);
			struct accel_tensor to = p.chunks == 1 ? dst :
				reduce_window(&part, axis, 0, kn, r0 / p.chunk, 1);

			ret = accel_cmdbuf_reduce(cb, op, axis, &src, &to);
			if (ret)
				return ret;
		}
		if (p.chunks > 1) {
			ret = accel_cmdbuf_reduce(cb, op, axis, &part, &dst);
			if (ret)
				return ret;
		}
	}
	return ACCEL_OK;
}

static int reduce(struct accel_cmdbuf *cb, struct accel_buffer *scratch,
		  uint64_t scratch_offset, enum tsr_reduce_op op, uint32_t axis,
		  const struct accel_tensor *in, const struct accel_tensor *out)
{
	struct accel_tensor column;
	struct reduce_plan p;
	int ret;

	if (axis != ACCEL_AXIS_ALL)
		return reduce_axis(cb, scratch, scratch_offset, op, axis, in, out);
	column = scratch_tensor(scratch, scratch_offset, in->rows, 1,
				TSR_DTYPE_F32);
	plan_reduce(in->rows, in->cols, 1, &p);
	scratch_offset += align_up((uint64_t)in->rows * 4);
	ret = reduce_axis(cb, scratch, scratch_offset, op, 1, in, &column);
	if (ret)
		return ret;
	return reduce_axis(cb, scratch, scratch_offset + p.partial_bytes, op, 0,
			   &column, out);
}

int accel_op_reduce(struct accel_cmdbuf *cb, struct accel_buffer *scratch,
		    enum tsr_reduce_op op, uint32_t axis,
		    const struct accel_tensor *in, const struct accel_tensor *out)
{
	static const char name[] = "reduce";
	struct accel_cmdbuf_mark m;
	uint32_t rows, cols;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (op < TSR_REDUCE_SUM || op > TSR_REDUCE_MIN || axis > ACCEL_AXIS_ALL)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_OP,
					 "%s: op %u along axis %u; ops are enum tsr_reduce_op, axes 0, 1 and ACCEL_AXIS_ALL",
					 name, op, axis);
	ret = check_tensor(cb, name, "in", in, FLOAT_DTYPES) ?:
	      check_tensor(cb, name, "out", out, FLOAT_DTYPES);
	if (ret)
		return ret;
	rows = axis == 1 ? in->rows : 1;
	cols = axis == 0 ? in->cols : 1;
	if (out->rows != rows || out->cols != cols)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: along axis %u, out must be %ux%u, not %ux%u",
					 name, axis, rows, cols, out->rows, out->cols);
	ret = check_scratch(cb, name, scratch,
			    accel_reduce_scratch_size(in->rows, in->cols, axis));
	if (ret)
		return ret;
	accel_cmdbuf_mark(cb, &m);
	return finish(cb, &m, reduce(cb, scratch, 0, op, axis, in, out));
}

/* ------------------------------------------------------- softmax */

uint64_t accel_softmax_scratch_size(uint32_t rows, uint32_t cols)
{
	if (!rows || !cols)
		return 0;
	/* The rows' maxima, their sums, and room for partial results. */
	return 2 * align_up((uint64_t)rows * 4) +
	       accel_reduce_scratch_size(rows, cols, 1);
}

static int softmax(struct accel_cmdbuf *cb, struct accel_buffer *scratch,
		   const struct accel_tensor *in, const struct accel_tensor *out)
{
	uint64_t column_bytes = align_up((uint64_t)in->rows * 4);
	struct accel_tensor max = scratch_tensor(scratch, 0, in->rows, 1,
						 TSR_DTYPE_F32);
	struct accel_tensor sum = scratch_tensor(scratch, column_bytes,
						 in->rows, 1, TSR_DTYPE_F32);
	uint64_t partials = 2 * column_bytes;

	return reduce_axis(cb, scratch, partials, TSR_REDUCE_MAX, 1, in, &max) ?:
	       elementwise_tiles(cb, TSR_VPU_SUB, in, &max, NULL, out) ?:
	       elementwise_tiles(cb, TSR_VPU_EXP, out, NULL, NULL, out) ?:
	       reduce_axis(cb, scratch, partials, TSR_REDUCE_SUM, 1, out, &sum) ?:
	       elementwise_tiles(cb, TSR_VPU_DIV, out, &sum, NULL, out);
}

int accel_op_softmax(struct accel_cmdbuf *cb, struct accel_buffer *scratch,
		     const struct accel_tensor *in,
		     const struct accel_tensor *out)
{
	static const char name[] = "softmax";
	struct accel_cmdbuf_mark m;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = check_tensor(cb, name, "in", in, FLOAT_DTYPES) ?:
	      check_tensor(cb, name, "out", out, FLOAT_DTYPES);
	if (ret)
		return ret;
	if (in->rows != out->rows || in->cols != out->cols)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: in is %ux%u but out is %ux%u", name,
					 in->rows, in->cols, out->rows, out->cols);
	ret = check_scratch(cb, name, scratch,
			    accel_softmax_scratch_size(in->rows, in->cols));
	if (ret)
		return ret;
	accel_cmdbuf_mark(cb, &m);
	return finish(cb, &m, softmax(cb, scratch, in, out));
}

/* ------------------------------------------------- cross-entropy */

/*
 * Scratch of the cross-entropy: the softmax's, then @scale broadcast
 * along a row, then -@scale, then the reduction of the loss.
 */
static void cross_entropy_areas(uint32_t rows, uint32_t cols,
				uint64_t area[4])
{
	area[0] = align_up(accel_softmax_scratch_size(rows, cols));
	area[1] = area[0] + align_up((uint64_t)cols * 4);
	area[2] = area[1] + SCRATCH_ALIGN;
	area[3] = area[2] + accel_reduce_scratch_size(rows, cols, ACCEL_AXIS_ALL);
}

uint64_t accel_cross_entropy_scratch_size(uint32_t rows, uint32_t cols)
{
	uint64_t area[4];

	if (!rows || !cols)
		return 0;
	cross_entropy_areas(rows, cols, area);
	return area[3];
}

static uint32_t f32_bits(float v)
{
	union { float f; uint32_t u; } x = { .f = v };

	return x.u;
}

/*
 * The loss goes through @grad before the gradient does: log(probs), kept
 * where the label is not 0 (0 elsewhere, so that a probability of 0 under
 * a label of 0 adds nothing), times the label, summed, times -scale.
 */
static int cross_entropy(struct accel_cmdbuf *cb, struct accel_buffer *scratch,
			 const struct accel_tensor *logits,
			 const struct accel_tensor *labels,
			 const struct accel_tensor *probs,
			 const struct accel_tensor *grad,
			 const struct accel_tensor *loss, float scale)
{
	uint32_t rows = logits->rows, cols = logits->cols;
	struct accel_region at = { .buffer = scratch };
	struct accel_tensor scale_row, neg_scale;
	uint64_t area[4];
	int ret;

	cross_entropy_areas(rows, cols, area);
	scale_row = scratch_tensor(scratch, area[0], 1, cols, TSR_DTYPE_F32);
	neg_scale = scratch_tensor(scratch, area[1], 1, 1, TSR_DTYPE_F32);
	at.offset = area[0];
	ret = accel_cmdbuf_dma_fill(cb, &at, f32_bits(scale), cols * 4, 1, 1);
	at.offset = area[1];
	if (!ret)
		ret = accel_cmdbuf_dma_fill(cb, &at, f32_bits(-scale), 4, 1, 1);
	if (ret)
		return ret;
	return softmax(cb, scratch, logits, probs) ?:
	       elementwise_tiles(cb, TSR_VPU_LOG, probs, NULL, NULL, grad) ?:
	       elementwise_tiles(cb, TSR_VPU_SELECT, labels, grad, labels, grad) ?:
	       elementwise_tiles(cb, TSR_VPU_MUL, labels, grad, NULL, grad) ?:
	       reduce(cb, scratch, area[2], TSR_REDUCE_SUM, ACCEL_AXIS_ALL, grad,
		      loss) ?:
	       elementwise_tiles(cb, TSR_VPU_MUL, loss, &neg_scale, NULL, loss) ?:
	       elementwise_tiles(cb, TSR_VPU_SUB, probs, labels, NULL, grad) ?:
	       elementwise_tiles(cb, TSR_VPU_MUL, grad, &scale_row, NULL, grad);
}

int accel_op_softmax_cross_entropy(struct accel_cmdbuf *cb,
				   struct accel_buffer *scratch,
				   const struct accel_tensor *logits,
				   const struct accel_tensor *labels,
				   const struct accel_tensor *probs,
				   const struct accel_tensor *grad,
				   const struct accel_tensor *loss, float scale)
{
	static const char name[] = "softmax_cross_entropy";
	const uint32_t f32 = DTYPE_BIT(TSR_DTYPE_F32);
	const struct accel_tensor *same[] = { labels, probs, grad };
	static const char *const same_names[] = { "labels", "probs", "grad" };
	struct accel_cmdbuf_mark m;
	unsigned int i;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = check_tensor(cb, name, "logits", logits, f32);
	for (i = 0; i < 3 && !ret; i++) {
		ret = check_tensor(cb, name, same_names[i], same[i], f32);
		if (!ret && (same[i]->rows != logits->rows ||
			     same[i]->cols != logits->cols))
			ret = accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
						"%s: logits are %ux%u but %s is %ux%u",
						name, logits->rows, logits->cols,
						same_names[i], same[i]->rows,
						same[i]->cols);
	}
	if (!ret)
		ret = check_tensor(cb, name, "loss", loss, f32);
	if (ret)
		return ret;
	if (loss->rows != 1 || loss->cols != 1)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: loss is %ux%u; it must be 1x1", name,
					 loss->rows, loss->cols);
	if (grad->buffer == probs->buffer && grad->offset == probs->offset)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: grad and probs must be different tensors",
					 name);
	if (grad->buffer == labels->buffer && grad->offset == labels->offset)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: grad and labels must be different tensors",
					 name);
	if (!isfinite(scale))
		return accel_cmdbuf_fail(cb, ACCEL_ERR_INVALID_ARGUMENT,
					 "%s: scale %g is not a finite number", name,
					 scale);
	ret = check_scratch(cb, name, scratch,
			    accel_cross_entropy_scratch_size(logits->rows,
							     logits->cols));
	if (ret)
		return ret;
	accel_cmdbuf_mark(cb, &m);
	return finish(cb, &m, cross_entropy(cb, scratch, logits, labels, probs,
					    grad, loss, scale));
}

/* ------------------------------------------------------- matmul */

/* Tiles never shrink below this many rows, columns or depth. */
#define MIN_TILE		16u

/* Scratch the tiles of @p take: the A, B and C (or accumulator) areas. */
static void scratch_areas(const struct accel_matmul_shape *s,
			  const struct accel_matmul_plan *p, uint64_t area[3])
{
	unsigned int in = accel_dtype_size(s->in_dtype);
	unsigned int out = p->f32_accumulator ? 4 : accel_dtype_size(s->out_dtype);

	area[0] = p->staged & ACCEL_STAGE_A ?
		  align_up((uint64_t)p->tile_m * p->tile_k * in) : 0;
	area[1] = p->staged & ACCEL_STAGE_B ?
		  align_up((uint64_t)p->tile_k * p->tile_n * in) : 0;
	area[2] = p->staged & ACCEL_STAGE_C || p->f32_accumulator ?
		  align_up((uint64_t)p->tile_m * p->tile_n * out) : 0;
}

static void count_tiles(const struct accel_matmul_shape *s,
			struct accel_matmul_plan *p)
{
	uint64_t area[3];

	p->tiles_m = div_up(s->m, p->tile_m);
	p->tiles_n = div_up(s->n, p->tile_n);
	p->tiles_k = div_up(s->k, p->tile_k);
	p->f32_accumulator = p->tiles_k > 1 && s->out_dtype == TSR_DTYPE_BF16;
	scratch_areas(s, p, area);
	p->scratch_bytes = area[0] + area[1] + area[2];
}

/* Whether the tiles of @p fit one command each, and @scratch_bytes. */
static bool plan_fits(const struct accel_matmul_plan *p, uint64_t scratch_bytes)
{
	return (uint64_t)p->tile_m * p->tile_k <= TSR_MAX_ELEMENTS &&
	       (uint64_t)p->tile_k * p->tile_n <= TSR_MAX_ELEMENTS &&
	       (uint64_t)p->tile_m * p->tile_n <= TSR_MAX_ELEMENTS &&
	       p->scratch_bytes <= scratch_bytes;
}

/* Half of @v, rounded up to a multiple of @dim when above it. */
static uint32_t halve(uint32_t v, uint32_t dim)
{
	uint32_t h = div_up(v, 2);

	return h > dim ? div_up(h, dim) * dim : h;
}

/*
 * Shrink the largest tile dimension until the plan fits; depth last, as
 * more steps in k mean accumulating (and a BF16 C an F32 accumulator).
 * False if it cannot fit with tiles of MIN_TILE.
 */
static bool shrink_to_fit(const struct accel_matmul_shape *s,
			  struct accel_matmul_plan *p, uint64_t scratch_bytes)
{
	uint32_t dim = s->mxu_dim ? s->mxu_dim : 128;

	for (count_tiles(s, p); !plan_fits(p, scratch_bytes); count_tiles(s, p)) {
		uint32_t *v = p->tile_m >= p->tile_n ? &p->tile_m : &p->tile_n;

		if (p->tile_k > 2 * *v || *v <= MIN_TILE)
			v = &p->tile_k;
		if (*v <= MIN_TILE)
			return false;
		*v = halve(*v, dim);
	}
	return true;
}

static uint64_t count_commands(const struct accel_matmul_shape *s,
			       const struct accel_matmul_plan *p)
{
	uint64_t tiles = (uint64_t)p->tiles_m * p->tiles_n;
	uint64_t per_step = 1, per_tile = 0;

	/* A tile stays staged across n when k has one step; B across m. */
	if (p->staged & ACCEL_STAGE_A)
		per_step += p->tiles_k == 1 ? 0 : 1;
	if (p->staged & ACCEL_STAGE_B)
		per_step += p->tiles_k == 1 && p->tiles_n == 1 ? 0 : 1;
	if (p->f32_accumulator || p->staged & ACCEL_STAGE_C)
		per_tile += 1 + !!(s->flags & TSR_MATMUL_ACCUMULATE);
	return tiles * (per_step * p->tiles_k + per_tile) +
	       (p->staged & ACCEL_STAGE_A && p->tiles_k == 1 ? p->tiles_m : 0) +
	       (p->staged & ACCEL_STAGE_B && p->tiles_k == 1 && p->tiles_n == 1);
}

/*
 * The operands whose staging makes less cross PCIe than the MATMULs
 * reading them in place: A kept across C's column tiles (one step in k),
 * B kept across C's row tiles (one column tile, one step), C kept in HBM
 * across steps in k.  Staging anything else only adds copies, which the
 * chip cannot overlap with the product as a MATMUL overlaps its reads.
 */
static uint32_t worth_staging(const struct accel_matmul_plan *p)
{
	uint32_t stage = 0;

	if (p->tiles_k == 1 && p->tiles_n > 1)
		stage |= ACCEL_STAGE_A;
	if (p->tiles_k == 1 && p->tiles_n == 1 && p->tiles_m > 1)
		stage |= ACCEL_STAGE_B;
	if (p->tiles_k > 1)
		stage |= ACCEL_STAGE_C;
	return stage;
}

int accel_matmul_plan(const struct accel_matmul_shape *s,
		      uint64_t scratch_bytes, struct accel_matmul_plan *p)
{
	uint32_t stage;
	bool int8;

	if (!s || !p)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (!s->m || !s->n || !s->k)
		return ACCEL_ERR_BAD_SHAPE;
	if (s->flags & ~TSR_MATMUL_FLAGS_ALL)
		return ACCEL_ERR_BAD_FLAGS;
	if (s->stage & ~(ACCEL_STAGE_ALL | ACCEL_STAGE_ALWAYS))
		return ACCEL_ERR_INVALID_ARGUMENT;
	int8 = s->in_dtype == TSR_DTYPE_I8;
	if (!int8 && s->in_dtype != TSR_DTYPE_BF16 && s->in_dtype != TSR_DTYPE_F32)
		return ACCEL_ERR_BAD_DTYPE;
	if (int8 ? s->out_dtype != TSR_DTYPE_I32 :
		   s->out_dtype != TSR_DTYPE_F32 && s->out_dtype != TSR_DTYPE_BF16)
		return ACCEL_ERR_BAD_DTYPE;

	stage = s->stage & ACCEL_STAGE_ALL;
	for (;;) {
		memset(p, 0, sizeof(*p));
		p->tile_m = min32(s->m, TSR_MAX_DIM);
		p->tile_n = min32(s->n, TSR_MAX_DIM);
		p->tile_k = min32(s->k, TSR_MAX_DIM);
		p->staged = stage;
		if (!shrink_to_fit(s, p, scratch_bytes)) {
			if (!stage)
				return ACCEL_ERR_NO_MEMORY;
			stage = 0;	/* read the operands in place */
			continue;
		}
		if (s->stage & ACCEL_STAGE_ALWAYS ||
		    (stage & worth_staging(p)) == stage)
			break;
		stage &= worth_staging(p);
	}
	p->commands = count_commands(s, p);
	return ACCEL_OK;
}

/* One matmul being appended: operands, plan and scratch areas. */
struct matmul {
	struct accel_cmdbuf *cb;
	const struct accel_tensor *a, *b, *c;
	uint32_t flags;
	struct accel_matmul_plan plan;
	struct accel_tensor stage_a, stage_b, stage_c;	/* scratch, dense */
};

/* Copy the window @src to the dense @dst, or back with @to_src. */
static int copy_window(struct accel_cmdbuf *cb, const struct accel_tensor *win,
		       const struct accel_tensor *dense, bool to_window)
{
	unsigned int esize = accel_dtype_size(win->dtype);
	struct accel_region w = {
		.buffer = win->buffer, .offset = win->offset,
		.row_stride = (uint64_t)win->stride * esize,
	};
	struct accel_region d = {
		.buffer = dense->buffer, .offset = dense->offset,
		.row_stride = (uint64_t)win->cols * esize,
	};

	return to_window ?
	       accel_cmdbuf_dma_copy(cb, &w, &d, win->cols * esize, win->rows, 1) :
	       accel_cmdbuf_dma_copy(cb, &d, &w, win->cols * esize, win->rows, 1);
}

/* The window of operand @t for rows @r0 (@rn) and columns @c0 (@cn) of op(@t). */
static struct accel_tensor op_window(const struct accel_tensor *t,
				     bool transposed, uint64_t r0, uint32_t rn,
				     uint64_t c0, uint32_t cn)
{
	return transposed ? window(t, c0, r0, cn, rn) : window(t, r0, c0, rn, cn);
}

/* The tile of A or B in use for a step: in place, or staged (copied if new). */
static int stage_operand(struct matmul *mm, const struct accel_tensor *win,
			 struct accel_tensor *staged, bool resident,
			 struct accel_tensor *use)
{
	if (!staged->buffer) {
		*use = *win;
		return ACCEL_OK;
	}
	staged->rows = win->rows;
	staged->cols = win->cols;
	staged->stride = 0;
	*use = *staged;
	return resident ? ACCEL_OK : copy_window(mm->cb, win, staged, false);
}

/* C's tile (@i, @j): every step in k, then the result to C. */
static int matmul_tile(struct matmul *mm, uint32_t i, uint32_t j)
{
	const struct accel_matmul_plan *p = &mm->plan;
	bool ta = mm->flags & TSR_MATMUL_TRANSPOSE_A;
	bool tb = mm->flags & TSR_MATMUL_TRANSPOSE_B;
	bool acc_in = mm->flags & TSR_MATMUL_ACCUMULATE;
	uint64_t m0 = (uint64_t)i * p->tile_m, n0 = (uint64_t)j * p->tile_n;
	uint32_t mn = min32(p->tile_m, mm->c->rows - m0);
	uint32_t nn = min32(p->tile_n, mm->c->cols - n0);
	uint32_t k = ta ? mm->a->rows : mm->a->cols, kk;
	struct accel_tensor cwin = window(mm->c, m0, n0, mn, nn), ctile = cwin;
	bool staged_c = mm->stage_c.buffer;
	int ret;

	if (staged_c) {
		ctile = mm->stage_c;
		ctile.rows = mn;
		ctile.cols = nn;
		ret = !acc_in ? ACCEL_OK :
		      p->f32_accumulator ? accel_cmdbuf_cast(mm->cb, &cwin, &ctile) :
		      copy_window(mm->cb, &cwin, &ctile, false);
		if (ret)
			return ret;
	}
	for (kk = 0; kk < p->tiles_k; kk++) {
		uint64_t k0 = (uint64_t)kk * p->tile_k;
		uint32_t kn = min32(p->tile_k, k - k0);
		struct accel_tensor wa = op_window(mm->a, ta, m0, mn, k0, kn);
		struct accel_tensor wb = op_window(mm->b, tb, k0, kn, n0, nn);
		bool single_k = p->tiles_k == 1;
		struct accel_tensor ua, ub;
		uint32_t flags = mm->flags & ~TSR_MATMUL_ACCUMULATE;

		ret = stage_operand(mm, &wa, &mm->stage_a, single_k && j > 0, &ua) ?:
		      stage_operand(mm, &wb, &mm->stage_b,
				    single_k && p->tiles_n == 1 && i > 0, &ub);
		if (ret)
			return ret;
		/* Staged tiles are copied as stored: keep the transposes. */
		if (kk > 0 || acc_in)
			flags |= TSR_MATMUL_ACCUMULATE;
		ret = accel_cmdbuf_matmul(mm->cb, &ua, &ub, &ctile, flags);
		if (ret)
			return ret;
	}
	if (!staged_c)
		return ACCEL_OK;
	return p->f32_accumulator ? accel_cmdbuf_cast(mm->cb, &ctile, &cwin) :
	       copy_window(mm->cb, &cwin, &ctile, true);
}

static int matmul_tiles(struct matmul *mm)
{
	uint32_t i, j;
	int ret;

	for (i = 0; i < mm->plan.tiles_m; i++)
		for (j = 0; j < mm->plan.tiles_n; j++) {
			ret = matmul_tile(mm, i, j);
			if (ret)
				return ret;
		}
	return ACCEL_OK;
}

static bool in_host_memory(const struct accel_tensor *t)
{
	return t->buffer && t->buffer->placement == ACCEL_PLACEMENT_HOST;
}

static int check_matmul(struct accel_cmdbuf *cb, const struct accel_tensor *a,
			const struct accel_tensor *b,
			const struct accel_tensor *c, uint32_t flags,
			struct accel_matmul_shape *s)
{
	static const char name[] = "matmul";
	uint32_t in = FLOAT_DTYPES | DTYPE_BIT(TSR_DTYPE_I8);
	bool ta = flags & TSR_MATMUL_TRANSPOSE_A;
	bool tb = flags & TSR_MATMUL_TRANSPOSE_B;
	uint32_t kb;
	int ret;

	uint32_t known = TSR_MATMUL_FLAGS_ALL | ACCEL_MATMUL_STAGE;

	if (flags & ~known)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_FLAGS,
					 "%s: flags 0x%x has unknown bits 0x%x", name,
					 flags, flags & ~known);
	ret = check_tensor(cb, name, "a", a, in) ?:
	      check_tensor(cb, name, "b", b, DTYPE_BIT(a->dtype)) ?:
	      check_tensor(cb, name, "c", c, a->dtype == TSR_DTYPE_I8 ?
			   DTYPE_BIT(TSR_DTYPE_I32) : FLOAT_DTYPES);
	if (ret)
		return ret;
	s->m = ta ? a->cols : a->rows;
	s->k = ta ? a->rows : a->cols;
	kb = tb ? b->cols : b->rows;
	s->n = tb ? b->rows : b->cols;
	if (s->k != kb)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: op(a) is %ux%u and op(b) is %ux%u: a's columns must equal b's rows",
					 name, s->m, s->k, kb, s->n);
	if (c->rows != s->m || c->cols != s->n)
		return accel_cmdbuf_fail(cb, ACCEL_ERR_BAD_SHAPE,
					 "%s: c is %ux%u but op(a) x op(b) is %ux%u",
					 name, c->rows, c->cols, s->m, s->n);
	s->in_dtype = a->dtype;
	s->out_dtype = c->dtype;
	s->flags = flags & TSR_MATMUL_FLAGS_ALL;
	return ACCEL_OK;
}

int accel_op_matmul(struct accel_cmdbuf *cb, struct accel_buffer *scratch,
		    const struct accel_tensor *a, const struct accel_tensor *b,
		    const struct accel_tensor *c, uint32_t flags)
{
	struct matmul mm = {
		.cb = cb, .a = a, .b = b, .c = c,
		.flags = flags & TSR_MATMUL_FLAGS_ALL,
	};
	struct accel_matmul_shape s = { 0 };
	struct accel_cmdbuf_mark m;
	uint64_t area[3], bytes;
	int ret;

	if (!cb)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = check_matmul(cb, a, b, c, flags, &s);
	if (!ret && scratch && scratch->dev != accel_cmdbuf_device(cb))
		ret = accel_cmdbuf_fail(cb, ACCEL_ERR_WRONG_DEVICE,
					"matmul: the scratch buffer belongs to another device");
	if (ret)
		return ret;
	if (scratch && scratch->placement == ACCEL_PLACEMENT_HBM)
		s.stage = (in_host_memory(a) ? ACCEL_STAGE_A : 0) |
			  (in_host_memory(b) ? ACCEL_STAGE_B : 0) |
			  (in_host_memory(c) ? ACCEL_STAGE_C : 0) |
			  (flags & ACCEL_MATMUL_STAGE ? ACCEL_STAGE_ALWAYS : 0);
	s.mxu_dim = accel_cmdbuf_device(cb) ? accel_cmdbuf_device(cb)->mxu_dim : 0;
	bytes = scratch ? scratch->size : 0;
	ret = accel_matmul_plan(&s, bytes, &mm.plan);
	if (ret == ACCEL_ERR_NO_MEMORY)
		return accel_cmdbuf_fail(cb, ret,
					 "matmul: a bf16 c of depth %u needs f32 partial sums in %s scratch",
					 s.k, scratch ? "more" : "a");
	if (ret)
		return accel_cmdbuf_fail(cb, ret, "matmul: cannot plan %ux%ux%u",
					 s.m, s.n, s.k);

	scratch_areas(&s, &mm.plan, area);
	if (area[0])
		mm.stage_a = scratch_tensor(scratch, 0, 0, 0, s.in_dtype);
	if (area[1])
		mm.stage_b = scratch_tensor(scratch, area[0], 0, 0, s.in_dtype);
	if (area[2])
		mm.stage_c = scratch_tensor(scratch, area[0] + area[1], 0, 0,
					    mm.plan.f32_accumulator ?
					    TSR_DTYPE_F32 : s.out_dtype);
	accel_cmdbuf_mark(cb, &m);
	return finish(cb, &m, matmul_tiles(&mm));
}
