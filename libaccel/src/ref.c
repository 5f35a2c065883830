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
