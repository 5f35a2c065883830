// SPDX-License-Identifier: MIT
/*
 * The CPU reference: what the chip's commands and libaccel's ops compute,
 * written plainly on the host (Documentation/chip.md, "Numerics").
 * Element-wise ops use the same f32 libm functions as the chip (GELU is
 * evaluated in double); products and sums of many terms use double, so
 * that the reference is the more accurate side of a comparison.  MAX, MIN
 * and RELU propagate NaN and order +0 above -0, as XLA's do.
 */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

/*
 * XLA's maximum and minimum: NaN if either operand is NaN, and +0 above
 * -0 whatever the order of the operands.
 */
static float ref_max(float a, float b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a == 0.0f && b == 0.0f)
		return signbit(a) && signbit(b) ? -0.0f : 0.0f;
	return a > b ? a : b;
}

static float ref_min(float a, float b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	if (a == 0.0f && b == 0.0f)
		return signbit(a) || signbit(b) ? -0.0f : 0.0f;
	return a < b ? a : b;
}

/*
 * GELU, the tanh approximation 0.5 a (1 + tanh(u)), u = sqrt(2 / pi)
 * (a + 0.044715 a^3), in double as a / (1 + exp(-2u)) (no cancellation for
 * negative a).  Its limit at -inf is -0.
 */
static float ref_gelu(float a)
{
	double u = sqrt(2.0 / M_PI) * (a + 0.044715 * (double)a * a * a);

	if (isinf(a))
		return a > 0 ? a : -0.0f;
	return (float)(a / (1.0 + exp(-2.0 * u)));
}

float accel_ref_vpu(enum tsr_vpu_op op, float a, float b, float c)
{
	switch (op) {
	case TSR_VPU_NEG:
		return -a;
	case TSR_VPU_ABS:
		return fabsf(a);
	case TSR_VPU_EXP:
		return expf(a);
	case TSR_VPU_LOG:
		return logf(a);
	case TSR_VPU_TANH:
		return tanhf(a);
	case TSR_VPU_SIGMOID:
		return 1.0f / (1.0f + expf(-a));
	case TSR_VPU_RELU:
		return ref_max(a, 0.0f);
	case TSR_VPU_GELU:
		return ref_gelu(a);
	case TSR_VPU_SQRT:
		return sqrtf(a);
	case TSR_VPU_RSQRT:
		return 1.0f / sqrtf(a);
	case TSR_VPU_ADD:
		return a + b;
	case TSR_VPU_SUB:
		return a - b;
	case TSR_VPU_MUL:
		return a * b;
	case TSR_VPU_DIV:
		return a / b;
	case TSR_VPU_MAX:
		return ref_max(a, b);
	case TSR_VPU_MIN:
		return ref_min(a, b);
	case TSR_VPU_CMP_EQ:
		return a == b ? 1.0f : 0.0f;
	case TSR_VPU_CMP_LT:
		return a < b ? 1.0f : 0.0f;
	case TSR_VPU_CMP_LE:
		return a <= b ? 1.0f : 0.0f;
	case TSR_VPU_SELECT:
		return a != 0.0f ? b : c;
	default:
		return NAN;
	}
}

int accel_ref_matmul(const float *a, const float *b, float *c, uint32_t m,
		     uint32_t n, uint32_t k, uint32_t flags)
{
	bool ta = flags & TSR_MATMUL_TRANSPOSE_A;
	bool tb = flags & TSR_MATMUL_TRANSPOSE_B;
	uint32_t i, j, l;

	if (!a || !b || !c)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (flags & ~TSR_MATMUL_FLAGS_ALL)
		return ACCEL_ERR_BAD_FLAGS;
	for (i = 0; i < m; i++) {
		for (j = 0; j < n; j++) {
			double sum = flags & TSR_MATMUL_ACCUMULATE ?
				     c[(size_t)i * n + j] : 0.0;

			for (l = 0; l < k; l++)
				sum += (double)(ta ? a[(size_t)l * m + i] :
						     a[(size_t)i * k + l]) *
				       (tb ? b[(size_t)j * k + l] :
					     b[(size_t)l * n + j]);
			c[(size_t)i * n + j] = (float)sum;
		}
	}
	return ACCEL_OK;
}

/* Index into an operand that is rows x cols, one row or one column. */
static size_t broadcast(uint32_t i, uint32_t j, uint32_t rows, uint32_t cols)
{
	return (size_t)(rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j);
}

int accel_ref_elementwise(enum tsr_vpu_op op, const float *a, const float *b,
			  const float *c, uint32_t b_rows, uint32_t b_cols,
			  float *out, uint32_t rows, uint32_t cols)
{
	bool binary = op >= TSR_VPU_ADD;
	uint32_t i, j;

	if (!a || !out || (binary && !b) || (op == TSR_VPU_SELECT && !c))
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (binary && (b_rows != rows && b_rows != 1))
		return ACCEL_ERR_BAD_SHAPE;
	if (binary && (b_cols != cols && b_cols != 1))
		return ACCEL_ERR_BAD_SHAPE;
	if (isnan(accel_ref_vpu(op, 1.0f, 1.0f, 1.0f)))
		return ACCEL_ERR_BAD_OP;
	for (i = 0; i < rows; i++) {
		for (j = 0; j < cols; j++) {
			size_t bi = broadcast(i, j, b_rows, b_cols);

			out[(size_t)i * cols + j] =
				accel_ref_vpu(op, a[(size_t)i * cols + j],
					      binary ? b[bi] : 0.0f,
					      op == TSR_VPU_SELECT ? c[bi] : 0.0f);
		}
	}
	return ACCEL_OK;
}

/* Fold @x into @acc, as the chip's REDUCE does (in f32, index order). */
static float fold(enum tsr_reduce_op op, float acc, float x)
{
	switch (op) {
	case TSR_REDUCE_MAX:
		return ref_max(acc, x);
	case TSR_REDUCE_MIN:
		return ref_min(acc, x);
	default:
		return acc + x;
	}
}

int accel_ref_reduce(enum tsr_reduce_op op, uint32_t axis, const float *in,
		     uint32_t rows, uint32_t cols, float *out)
{
	size_t outs, i, j;

	if (!in || !out)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (op < TSR_REDUCE_SUM || op > TSR_REDUCE_MIN || axis > ACCEL_AXIS_ALL)
		return ACCEL_ERR_BAD_OP;
	outs = axis == 0 ? cols : axis == 1 ? rows : 1;
	for (i = 0; i < outs; i++)
		out[i] = op == TSR_REDUCE_SUM ? 0.0f :
			 op == TSR_REDUCE_MAX ? -INFINITY : INFINITY;
	for (i = 0; i < rows; i++)
		for (j = 0; j < cols; j++) {
			size_t o = axis == 0 ? j : axis == 1 ? i : 0;

			out[o] = fold(op, out[o], in[i * cols + j]);
		}
	return ACCEL_OK;
}

int accel_ref_softmax(const float *in, uint32_t rows, uint32_t cols,
		      float *out)
{
	uint32_t i, j;

	if (!in || !out)
		return ACCEL_ERR_INVALID_ARGUMENT;
	for (i = 0; i < rows; i++) {
		const float *x = in + (size_t)i * cols;
		float *y = out + (size_t)i * cols;
		float max = -INFINITY;
		double sum = 0.0;

		for (j = 0; j < cols; j++)
			max = ref_max(max, x[j]);
		for (j = 0; j < cols; j++) {
			y[j] = expf(x[j] - max);
			sum += y[j];
		}
		for (j = 0; j < cols; j++)
			y[j] = (float)(y[j] / sum);
	}
	return ACCEL_OK;
}

int accel_ref_softmax_cross_entropy(const float *logits, const float *labels,
				    uint32_t rows, uint32_t cols, float scale,
				    float *probs, float *grad, float *loss)
{
	double sum = 0.0;
	size_t i, n = (size_t)rows * cols;

	if (!logits || !labels || !probs || !grad || !loss)
		return ACCEL_ERR_INVALID_ARGUMENT;
	accel_ref_softmax(logits, rows, cols, probs);
	for (i = 0; i < n; i++) {
		if (labels[i] != 0.0f)
			sum += labels[i] * logf(probs[i]);
		grad[i] = (probs[i] - labels[i]) * scale;
	}
	*loss = (float)sum * -scale;
	return ACCEL_OK;
}

int accel_ref_compare(const float *got, const float *want, size_t count,
		      float rel_tol, size_t *bad)
{
	float scale = 0.0f;
	size_t i;

	if (!got || !want)
		return 0;
	for (i = 0; i < count; i++)
		if (isfinite(want[i]))
			scale = fmaxf(scale, fabsf(want[i]));
	for (i = 0; i < count; i++) {
		bool ok;

		if (isnan(want[i]))
			ok = isnan(got[i]);
		else if (isinf(want[i]))
			ok = got[i] == want[i];
		else
			ok = fabsf(got[i] - want[i]) <= rel_tol * scale;
		if (!ok) {
			if (bad)
				*bad = i;
			return 0;
		}
	}
	return 1;
}

/* ------------------------------------------------------------ SparseCore */

/*
 * Written for plainness, not speed: quadratic searches where the chip
 * sorts.  Sums run in input order, as on the chip, so that results
 * match it bit for bit.
 */

static float ref_sc_weight(const float *weights, uint32_t i)
{
	return weights ? weights[i] : 1.0f;
}

/* The first entry out of range, skipping TSR_SC_PAD samples if @pad. */
static bool ref_sc_range(const uint32_t *rows, const uint32_t *cols,
			 uint32_t count, uint32_t samples, uint32_t vocab,
			 bool pad, uint32_t *where)
{
	uint32_t i;

	for (i = 0; i < count; i++) {
		if (pad && rows[i] == TSR_SC_PAD)
			continue;
		if (rows[i] >= samples || cols[i] >= vocab) {
			*where = i;
			return false;
		}
	}
	return true;
}

/* Whether entry @i repeats an earlier (sample, id). */
static bool ref_sc_duplicate(const uint32_t *rows, const uint32_t *cols,
			     uint32_t i)
{
	uint32_t j;

	for (j = 0; j < i; j++)
		if (rows[j] == rows[i] && cols[j] == cols[i])
			return true;
	return false;
}

/* Entry @i deduped: its weight plus its later duplicates', in order. */
static float ref_sc_merged(const uint32_t *rows, const uint32_t *cols,
			   const float *weights, uint32_t count, uint32_t i)
{
	float w = ref_sc_weight(weights, i);
	uint32_t j;

	for (j = i + 1; j < count; j++)
		if (rows[j] == rows[i] && cols[j] == cols[i])
			w += ref_sc_weight(weights, j);
	return w;
}

/* Whether a kept entry before @i, of those @in (NULL: all), has its id. */
static bool ref_sc_seen(const uint32_t *rows, const uint32_t *cols,
			const bool *in, uint32_t i)
{
	uint32_t j;

	for (j = 0; j < i; j++)
		if (cols[j] == cols[i] && (in ? in[j] :
		    !ref_sc_duplicate(rows, cols, j)))
			return true;
	return false;
}

static int ref_sc_observe(const uint32_t *rows, const uint32_t *cols,
			  uint32_t count, const struct accel_sc_limits *l,
			  struct tsr_sc_counts *counts)
{
	uint32_t i;

	memset(counts, 0, l->partitions * sizeof(*counts));
	for (i = 0; i < count; i++) {
		struct tsr_sc_counts *k = &counts[cols[i] % l->partitions];

		if (ref_sc_duplicate(rows, cols, i))
			continue;
		k->ids++;
		k->unique_ids += !ref_sc_seen(rows, cols, NULL, i);
	}
	return ACCEL_OK;
}

int accel_ref_sc_partition(const uint32_t *row_ids, const uint32_t *col_ids,
			   const float *weights, uint32_t count,
			   const struct accel_sc_limits *l, uint32_t *out_rows,
			   uint32_t *out_cols, float *out_weights,
			   struct tsr_sc_counts *counts, uint32_t *chip_error,
			   uint32_t *where)
{
	uint32_t *taken_ids, *taken_unique, p, i;
	bool *taken;
	size_t slots;

	if ((count && (!row_ids || !col_ids)) || !l || !out_rows ||
	    !out_cols || !counts || !chip_error || !where || !l->partitions ||
	    !l->max_ids || !l->max_unique_ids)
		return ACCEL_ERR_INVALID_ARGUMENT;
	*chip_error = TSR_ERR_NONE;
	if (!ref_sc_range(row_ids, col_ids, count, l->samples, l->vocab, false,
			  where)) {
		*chip_error = TSR_ERR_ID_RANGE;
		return ACCEL_OK;
	}
	ref_sc_observe(row_ids, col_ids, count, l, counts);
	for (p = 0; !(l->flags & TSR_SC_DROP) && p < l->partitions; p++) {
		*where = p;
		if (counts[p].ids > l->max_ids) {
			*chip_error = TSR_ERR_MAX_IDS;
			return ACCEL_OK;
		}
		if (counts[p].unique_ids > l->max_unique_ids) {
			*chip_error = TSR_ERR_MAX_UNIQUE_IDS;
			return ACCEL_OK;
		}
	}
	taken_ids = calloc(l->partitions, sizeof(*taken_ids));
	taken_unique = calloc(l->partitions, sizeof(*taken_unique));
	taken = calloc(count ? count : 1, sizeof(*taken));
	if (!taken_ids || !taken_unique || !taken) {
		free(taken_ids);
		free(taken_unique);
		free(taken);
		return ACCEL_ERR_NO_MEMORY;
	}
	slots = (size_t)l->partitions * l->max_ids;
	for (i = 0; i < slots; i++) {
		out_rows[i] = TSR_SC_PAD;
		out_cols[i] = 0;
		if (out_weights)
			out_weights[i] = 0.0f;
	}
	for (i = 0; i < count; i++) {
		bool fresh = !ref_sc_seen(row_ids, col_ids, taken, i);
		size_t slot;

		p = col_ids[i] % l->partitions;
		if (ref_sc_duplicate(row_ids, col_ids, i))
			continue;
		if (taken_ids[p] == l->max_ids ||
		    (fresh && taken_unique[p] == l->max_unique_ids)) {
			counts[p].dropped++;
			continue;
		}
		taken[i] = true;
		taken_unique[p] += fresh;
		slot = (size_t)p * l->max_ids + taken_ids[p]++;
		out_rows[slot] = row_ids[i];
		out_cols[slot] = col_ids[i] / l->partitions;
		if (out_weights)
			out_weights[slot] = ref_sc_merged(row_ids, col_ids,
							  weights, count, i);
	}
	free(taken_ids);
	free(taken_unique);
	free(taken);
	return ACCEL_OK;
}

/* What entry @i's row is multiplied by (0 for a divisor of 0). */
static float ref_sc_factor(enum tsr_sc_combiner combiner,
			   const uint32_t *rows, const float *weights,
			   uint32_t count, uint32_t i)
{
	float d = 0.0f;
	uint32_t j;

	if (combiner == TSR_SC_SUM)
		return ref_sc_weight(weights, i);
	for (j = 0; j < count; j++) {
		float w = ref_sc_weight(weights, j);

		if (rows[j] == rows[i])
			d += combiner == TSR_SC_SQRTN ? w * w : w;
	}
	d = combiner == TSR_SC_SQRTN ? sqrtf(d) : d;
	return d == 0.0f ? 0.0f : ref_sc_weight(weights, i) / d;
}

static int ref_sc_lookup_args(enum tsr_sc_combiner combiner,
			      const uint32_t *row_ids, const uint32_t *col_ids,
			      uint32_t count, const float *a, const float *b,
			      uint32_t *chip_error, uint32_t *where)
{
	if ((count && (!row_ids || !col_ids)) || !a || !b || !chip_error ||
	    !where || combiner < TSR_SC_SUM || combiner > TSR_SC_SQRTN)
		return ACCEL_ERR_INVALID_ARGUMENT;
	*chip_error = TSR_ERR_NONE;
	return ACCEL_OK;
}

int accel_ref_sc_gather(enum tsr_sc_combiner combiner, const uint32_t *row_ids,
			const uint32_t *col_ids, const float *weights,
			uint32_t count, const float *table, uint32_t vocab,
			uint32_t dim, float *out, uint32_t samples,
			uint32_t *chip_error, uint32_t *where)
{
	uint32_t i, k;
	int ret = ref_sc_lookup_args(combiner, row_ids, col_ids, count, table,
				     out, chip_error, where);

	if (ret)
		return ret;
	if (!ref_sc_range(row_ids, col_ids, count, samples, vocab, true,
			  where)) {
		*chip_error = TSR_ERR_ID_RANGE;
		return ACCEL_OK;
	}
	memset(out, 0, (size_t)samples * dim * sizeof(*out));
	for (i = 0; i < count; i++) {
		float f;

		if (row_ids[i] == TSR_SC_PAD)
			continue;
		f = ref_sc_factor(combiner, row_ids, weights, count, i);
		for (k = 0; k < dim; k++)
			out[(size_t)row_ids[i] * dim + k] +=
				f * table[(size_t)col_ids[i] * dim + k];
	}
	return ACCEL_OK;
}

int accel_ref_sc_scatter_add(enum tsr_sc_combiner combiner,
			     const uint32_t *row_ids, const uint32_t *col_ids,
			     const float *weights, uint32_t count,
			     const float *grad, uint32_t samples, uint32_t dim,
			     float *dst, uint32_t vocab, float scale,
			     uint32_t *chip_error, uint32_t *where)
{
	float *acc;
	uint32_t i, j, k;
	int ret = ref_sc_lookup_args(combiner, row_ids, col_ids, count, grad,
				     dst, chip_error, where);

	if (ret)
		return ret;
	if (!ref_sc_range(row_ids, col_ids, count, samples, vocab, true,
			  where)) {
		*chip_error = TSR_ERR_ID_RANGE;
		return ACCEL_OK;
	}
	acc = malloc((dim ? dim : 1) * sizeof(*acc));
	if (!acc)
		return ACCEL_ERR_NO_MEMORY;
	/* Each id once, at its first entry: its entries summed in order. */
	for (i = 0; i < count; i++) {
		bool first = row_ids[i] != TSR_SC_PAD;

		for (j = 0; first && j < i; j++)
			first = row_ids[j] == TSR_SC_PAD ||
				col_ids[j] != col_ids[i];
		if (!first)
			continue;
		memset(acc, 0, dim * sizeof(*acc));
		for (j = i; j < count; j++) {
			float f;

			if (row_ids[j] == TSR_SC_PAD || col_ids[j] != col_ids[i])
				continue;
			f = ref_sc_factor(combiner, row_ids, weights, count, j);
			for (k = 0; k < dim; k++)
				acc[k] += f * grad[(size_t)row_ids[j] * dim + k];
		}
		for (k = 0; k < dim; k++)
			dst[(size_t)col_ids[i] * dim + k] += scale * acc[k];
	}
	free(acc);
	return ACCEL_OK;
}
