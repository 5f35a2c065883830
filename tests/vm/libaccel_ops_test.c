// SPDX-License-Identifier: GPL-2.0
/*
 * libaccel's ops layer through the whole stack (library, driver, chip),
 * each op checked against libaccel's CPU reference: matmul of any shape,
 * in place and staged through HBM in tiles, beyond the chip's limits;
 * every element-wise op; reductions along every axis; softmax.  Also how
 * the ops fail (misuse named by the builder, a device fault naming the
 * failing command) and many threads and processes using them at once.
 * Every test ends with its buffers, jobs and descriptors gone (fdinfo).
 */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "libaccel_util.h"

#include <accel/accel.h>

#define WAIT_NS		(60ull * 1000 * 1000 * 1000)
#define KIB		1024u
#define MIB		(1024u * 1024u)
/* Beyond one command: more columns than TSR_MAX_DIM. */
#define WIDE		(TSR_MAX_DIM + 100)

/* A matrix on the device and its values (as f32) on the host. */
struct mat {
	struct accel_buffer *buf;
	struct accel_tensor t;
	float *v;
};

/* Values for @op's domain: positive where logs and roots need it. */
static void fill(float *v, size_t n, uint32_t seed, bool positive)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = positive ? frand(&seed, 0.05f, 4.0f) :
				  frand(&seed, -2.0f, 2.0f);
}

/* Round @v to what a tensor of @dtype holds. */
static void round_to(float *v, size_t n, enum tsr_dtype dtype)
{
	size_t i;

	for (i = 0; dtype == TSR_DTYPE_BF16 && i < n; i++)
		v[i] = accel_bf16_to_f32(accel_f32_to_bf16(v[i]));
}

/* Store @m->v into the device buffer in @m's element type. */
static int mat_upload(struct mat *m)
{
	size_t n = (size_t)m->t.rows * m->t.cols, i;
	uint16_t *h;
	int ret;

	if (m->t.dtype == TSR_DTYPE_F32)
		return tensor_io(&m->t, m->v, true);
	h = malloc(n * sizeof(*h));
	if (!h)
		return ACCEL_ERR_NO_MEMORY;
	for (i = 0; i < n; i++)
		h[i] = accel_f32_to_bf16(m->v[i]);
	ret = tensor_io(&m->t, h, true);
	free(h);
	return ret;
}

/* Read the device's values of @m into @out, as f32. */
static int mat_download(const struct mat *m, float *out)
{
	size_t n = (size_t)m->t.rows * m->t.cols, i;
	uint16_t *h;
	int ret;

	if (m->t.dtype == TSR_DTYPE_F32)
		return tensor_io(&m->t, out, false);
	h = malloc(n * sizeof(*h));
	if (!h)
		return ACCEL_ERR_NO_MEMORY;
	ret = tensor_io(&m->t, h, false);
	for (i = 0; i < n && !ret; i++)
		out[i] = accel_bf16_to_f32(h[i]);
	free(h);
	return ret;
}

/*
 * A rows x cols matrix of @dtype in @placement: random values from @seed
 * (none when 0, and all zero), positive ones if @positive.
 */
static int mat_new(struct accel_device *dev, struct mat *m, uint32_t rows,
		   uint32_t cols, enum tsr_dtype dtype, uint32_t placement,
		   uint32_t seed, bool positive)
{
	size_t n = (size_t)rows * cols;
	int ret;

	m->v = calloc(n, sizeof(float));
	if (!m->v)
		return ACCEL_ERR_NO_MEMORY;
	ret = accel_buffer_create(dev, n * accel_dtype_size(dtype), placement,
				  &m->buf);
	if (ret) {
		free(m->v);
		return ret;
	}
	m->t = tensor_at(m->buf, 0, rows, cols, 0, dtype);
	if (!seed)
		return ACCEL_OK;
	fill(m->v, n, seed, positive);
	round_to(m->v, n, dtype);
	return mat_upload(m);
}

static void mat_free(struct mat *m)
{
	accel_buffer_destroy(m->buf);
	free(m->v);
	m->buf = NULL;
	m->v = NULL;
}

/* Submit @cb, wait for the job and reset @cb; the job's outcome. */
static int run(struct accel_device *dev, struct accel_cmdbuf *cb)
{
	struct accel_job *job;
	int ret;

	ret = accel_submit(dev, cb, NULL, &job);
	if (ret)
		return ret;
	ret = accel_job_wait(job, WAIT_NS);
	accel_job_destroy(job);
	accel_cmdbuf_reset(cb);
	return ret;
}

/* Whether the device's @m equals @want within @tol (relative to its max). */
static bool mat_matches(const struct mat *m, const float *want, float tol)
{
	size_t n = (size_t)m->t.rows * m->t.cols, bad = 0;
	float *got = malloc(n * sizeof(*got));
	bool ok;

	ok = got && !mat_download(m, got) &&
	     accel_ref_compare(got, want, n, tol, &bad);
	if (got && !ok)
		fprintf(stderr, "# element %zu: got %g, want %g\n", bad, got[bad],
			want[bad]);
	free(got);
	return ok;
}

/* ------------------------------------------------------------ fixture */

FIXTURE(ops) {
	struct accel_device *dev;
	struct accel_cmdbuf *cb;
	struct leak_snapshot before;
};

FIXTURE_SETUP(ops)
{
	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &self->dev));
	leak_snapshot(self->dev, &self->before);
	ASSERT_LE(0, self->before.host);
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(self->dev, &self->cb));
}

/* Nothing a passing test made may outlive it. */
FIXTURE_TEARDOWN(ops)
{
	accel_cmdbuf_destroy(self->cb);
	leak_expect_none(_metadata, self->dev, &self->before);
	accel_device_close(self->dev);
}

#define NEW_MAT(m, rows, cols, dtype, placement, seed) \
	ASSERT_EQ(ACCEL_OK, mat_new(self->dev, &(m), (rows), (cols), (dtype), \
				    (placement), (seed), false))

/* ------------------------------------------------------------ matmul */

/*
 * C = op(A) x op(B) (+ C) of @m x @n x @k through accel_op_matmul() with
 * @scratch, checked against the reference.  bf16 inputs multiply exactly
 * in f32; sums differ from the reference's (double) only by f32 rounding.
 */
static bool matmul_case(struct accel_device *dev, struct accel_cmdbuf *cb,
			struct accel_buffer *scratch, uint32_t m, uint32_t n,
			uint32_t k, enum tsr_dtype in, enum tsr_dtype out,
			uint32_t flags, uint32_t placement, uint32_t *commands)
{
	bool ta = flags & TSR_MATMUL_TRANSPOSE_A;
	bool tb = flags & TSR_MATMUL_TRANSPOSE_B;
	struct mat a = { 0 }, b = { 0 }, c = { 0 };
	float tol = out == TSR_DTYPE_BF16 ? 1e-2f : 1e-4f;
	float *want = calloc((size_t)m * n, sizeof(float));
	bool ok = false;
	int ret;

	if (!want)
		return false;
	ret = mat_new(dev, &a, ta ? k : m, ta ? m : k, in, placement, 11, false);
	if (!ret)
		ret = mat_new(dev, &b, tb ? n : k, tb ? k : n, in, placement, 12,
			      false);
	if (!ret)
		ret = mat_new(dev, &c, m, n, out, placement,
			      flags & TSR_MATMUL_ACCUMULATE ? 13 : 0, false);
	if (!ret) {
		memcpy(want, c.v, (size_t)m * n * sizeof(float));
		ret = accel_op_matmul(cb, scratch, &a.t, &b.t, &c.t, flags);
		if (ret)
			fprintf(stderr, "# %s\n", accel_cmdbuf_last_error(cb));
		else if (commands)
			*commands = accel_cmdbuf_count(cb);
	}
	if (!ret)
		ret = run(dev, cb);
	if (!ret) {
		accel_ref_matmul(a.v, b.v, want, m, n, k,
				 flags & TSR_MATMUL_FLAGS_ALL);
		ok = mat_matches(&c, want, tol);
	}
	mat_free(&a);
	mat_free(&b);
	mat_free(&c);
	free(want);
	return ok;
}

TEST_F(ops, matmul_of_any_shape_matches_the_reference)
{
	static const uint32_t shapes[][3] = {
		{ 1, 1, 1 }, { 300, 200, 500 }, { 129, 257, 130 },
		{ 1000, 3, 700 }, { 2, 1500, 64 },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(shapes); i++)
		EXPECT_TRUE(matmul_case(self->dev, self->cb, NULL, shapes[i][0],
					shapes[i][1], shapes[i][2],
					TSR_DTYPE_BF16, TSR_DTYPE_F32, i % 4,
					i % 2 ? ACCEL_PLACEMENT_HBM :
						ACCEL_PLACEMENT_HOST, NULL))
			TH_LOG("%ux%ux%u", shapes[i][0], shapes[i][1], shapes[i][2]);
}

TEST_F(ops, matmul_stages_through_hbm_in_small_tiles)
{
	struct accel_matmul_shape s = {
		.m = 300, .n = 400, .k = 500, .in_dtype = TSR_DTYPE_BF16,
		.out_dtype = TSR_DTYPE_F32, .mxu_dim = 128,
		.flags = TSR_MATMUL_TRANSPOSE_A | TSR_MATMUL_ACCUMULATE,
		.stage = ACCEL_STAGE_ALL | ACCEL_STAGE_ALWAYS,
	};
	struct accel_matmul_plan plan;
	struct accel_buffer *scratch;
	uint32_t commands = 0;

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 256 * KIB,
						ACCEL_PLACEMENT_HBM, &scratch));
	/* The plan really is staged and tiled in every dimension. */
	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, 256 * KIB, &plan));
	EXPECT_EQ(ACCEL_STAGE_ALL, plan.staged);
	EXPECT_LT(1, plan.tiles_m);
	EXPECT_LT(1, plan.tiles_n);
	EXPECT_LT(1, plan.tiles_k);
	EXPECT_TRUE(matmul_case(self->dev, self->cb, scratch, s.m, s.n, s.k,
				s.in_dtype, s.out_dtype,
				s.flags | ACCEL_MATMUL_STAGE,
				ACCEL_PLACEMENT_HOST, NULL));
	EXPECT_TRUE(matmul_case(self->dev, self->cb, scratch, 257, 129, 300,
				TSR_DTYPE_F32, TSR_DTYPE_F32,
				TSR_MATMUL_TRANSPOSE_B | ACCEL_MATMUL_STAGE,
				ACCEL_PLACEMENT_HOST, NULL));
	/* Unasked, what saves nothing stays in place: one command. */
	EXPECT_TRUE(matmul_case(self->dev, self->cb, scratch, 100, 100, 100,
				TSR_DTYPE_BF16, TSR_DTYPE_F32, 0,
				ACCEL_PLACEMENT_HOST, &commands));
	EXPECT_EQ(1, commands);
	accel_buffer_destroy(scratch);
}

TEST_F(ops, a_bf16_product_in_steps_sums_in_f32_scratch)
{
	struct accel_buffer *scratch;

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 64 * KIB,
						ACCEL_PLACEMENT_HBM, &scratch));
	EXPECT_TRUE(matmul_case(self->dev, self->cb, scratch, 200, 150, 1000,
				TSR_DTYPE_BF16, TSR_DTYPE_BF16,
				TSR_MATMUL_ACCUMULATE, ACCEL_PLACEMENT_HOST, NULL));
	EXPECT_TRUE(matmul_case(self->dev, self->cb, scratch, 64, 64, 3000,
				TSR_DTYPE_BF16, TSR_DTYPE_BF16, 0,
				ACCEL_PLACEMENT_HBM, NULL));
	accel_buffer_destroy(scratch);
}

TEST_F(ops, matmul_goes_beyond_the_chips_limits)
{
	/* Depth beyond 2^20: two steps, the second accumulating. */
	EXPECT_TRUE(matmul_case(self->dev, self->cb, NULL, 1, 2, WIDE,
				TSR_DTYPE_F32, TSR_DTYPE_F32, 0,
				ACCEL_PLACEMENT_HOST, NULL));
	/* More than 2^20 rows of C. */
	EXPECT_TRUE(matmul_case(self->dev, self->cb, NULL, WIDE, 1, 3,
				TSR_DTYPE_BF16, TSR_DTYPE_F32, 0,
				ACCEL_PLACEMENT_HOST, NULL));
}

/* ------------------------------------------------------------ element-wise */

static const enum tsr_vpu_op all_vpu_ops[] = {
	TSR_VPU_NEG, TSR_VPU_ABS, TSR_VPU_EXP, TSR_VPU_LOG, TSR_VPU_TANH,
	TSR_VPU_SIGMOID, TSR_VPU_RELU, TSR_VPU_GELU, TSR_VPU_SQRT,
	TSR_VPU_RSQRT, TSR_VPU_ADD, TSR_VPU_SUB, TSR_VPU_MUL, TSR_VPU_DIV,
	TSR_VPU_MAX, TSR_VPU_MIN, TSR_VPU_CMP_EQ, TSR_VPU_CMP_LT,
	TSR_VPU_CMP_LE, TSR_VPU_SELECT,
};

TEST_F(ops, every_elementwise_op_matches_the_reference)
{
	const uint32_t rows = 40, cols = 300;
	static float want[40 * 300];
	struct mat a, pos, row, col, out;
	unsigned int i;

	NEW_MAT(a, rows, cols, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 1);
	ASSERT_EQ(ACCEL_OK, mat_new(self->dev, &pos, rows, cols, TSR_DTYPE_BF16,
				    ACCEL_PLACEMENT_HBM, 2, true));
	NEW_MAT(row, 1, cols, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 3);
	NEW_MAT(col, rows, 1, TSR_DTYPE_BF16, ACCEL_PLACEMENT_HOST, 4);
	NEW_MAT(out, rows, cols, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 0);
	/* Equal elements somewhere, for the compares. */
	memcpy(a.v, row.v, cols * sizeof(float));
	ASSERT_EQ(ACCEL_OK, mat_upload(&a));

	for (i = 0; i < ARRAY_SIZE(all_vpu_ops); i++) {
		enum tsr_vpu_op op = all_vpu_ops[i];
		bool domain = op == TSR_VPU_LOG || op == TSR_VPU_SQRT ||
			      op == TSR_VPU_RSQRT;
		struct mat *x = domain ? &pos : &a;
		struct mat *b = i % 2 ? &row : &col;
		bool binary = op >= TSR_VPU_ADD, select = op == TSR_VPU_SELECT;

		ASSERT_EQ(ACCEL_OK, accel_op_elementwise(self->cb, op, &x->t,
							 binary ? &b->t : NULL,
							 select ? &b->t : NULL,
							 &out.t));
		ASSERT_EQ(ACCEL_OK, run(self->dev, self->cb));
		accel_ref_elementwise(op, x->v, b->v, b->v, b->t.rows, b->t.cols,
				      want, rows, cols);
		/* The chip and the reference use the same f32 functions. */
		EXPECT_TRUE(mat_matches(&out, want, 1e-6f))
			TH_LOG("op %u", op);
	}
	mat_free(&a);
	mat_free(&pos);
	mat_free(&row);
	mat_free(&col);
	mat_free(&out);
}

TEST_F(ops, elementwise_goes_beyond_one_command)
{
	struct mat a, b, out;
	float *want;

	NEW_MAT(a, 2, WIDE, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 5);
	NEW_MAT(b, 1, WIDE, TSR_DTYPE_BF16, ACCEL_PLACEMENT_HOST, 6);
	NEW_MAT(out, 2, WIDE, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 0);
	want = malloc(2 * WIDE * sizeof(*want));
	ASSERT_NE(NULL, want);
	ASSERT_EQ(ACCEL_OK, accel_op_elementwise(self->cb, TSR_VPU_MUL, &a.t,
						 &b.t, NULL, &out.t));
	EXPECT_EQ(2, accel_cmdbuf_count(self->cb));
	ASSERT_EQ(ACCEL_OK, run(self->dev, self->cb));
	accel_ref_elementwise(TSR_VPU_MUL, a.v, b.v, NULL, 1, WIDE, want, 2, WIDE);
	EXPECT_TRUE(mat_matches(&out, want, 1e-6f));
	free(want);
	mat_free(&a);
	mat_free(&b);
	mat_free(&out);
}

/* ------------------------------------------------------------ reductions */

/* Small integers: every sum is exact in f32, whatever the order. */
static void integers(struct mat *m)
{
	size_t n = (size_t)m->t.rows * m->t.cols, i;

	for (i = 0; i < n; i++)
		m->v[i] = (float)((int)((uint32_t)(i * 2654435761u) >> 28) - 8);
}

static bool reduce_case(struct accel_device *dev, struct accel_cmdbuf *cb,
			struct accel_buffer *scratch, struct mat *in,
			enum tsr_reduce_op op, uint32_t axis)
{
	uint32_t rows = axis == 1 ? in->t.rows : 1;
	uint32_t cols = axis == 0 ? in->t.cols : 1;
	struct mat out;
	float *want;
	bool ok = false;

	if (mat_new(dev, &out, rows, cols, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST,
		    0, false))
		return false;
	want = malloc((size_t)rows * cols * sizeof(*want));
	if (want && !accel_op_reduce(cb, scratch, op, axis, &in->t, &out.t) &&
	    !run(dev, cb)) {
		accel_ref_reduce(op, axis, in->v, in->t.rows, in->t.cols, want);
		ok = mat_matches(&out, want, 0.0f);
	} else {
		fprintf(stderr, "# %s\n", accel_cmdbuf_last_error(cb));
	}
	free(want);
	mat_free(&out);
	return ok;
}

TEST_F(ops, reductions_along_every_axis_match_the_reference)
{
	struct accel_buffer *scratch;
	enum tsr_reduce_op op;
	struct mat in;
	uint32_t axis;

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev,
						accel_reduce_scratch_size(37, 1000, ACCEL_AXIS_ALL),
						ACCEL_PLACEMENT_HBM, &scratch));
	NEW_MAT(in, 37, 1000, TSR_DTYPE_BF16, ACCEL_PLACEMENT_HOST, 0);
	integers(&in);
	ASSERT_EQ(ACCEL_OK, mat_upload(&in));
	for (op = TSR_REDUCE_SUM; op <= TSR_REDUCE_MIN; op++)
		for (axis = 0; axis <= ACCEL_AXIS_ALL; axis++)
			EXPECT_TRUE(reduce_case(self->dev, self->cb, scratch, &in,
						op, axis))
				TH_LOG("op %u axis %u", op, axis);
	mat_free(&in);
	accel_buffer_destroy(scratch);
}

TEST_F(ops, reductions_go_beyond_one_command_through_scratch)
{
	uint64_t need = accel_reduce_scratch_size(3, WIDE, ACCEL_AXIS_ALL);
	struct accel_buffer *scratch;
	struct mat in;

	ASSERT_LT(0, accel_reduce_scratch_size(3, WIDE, 1));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, need,
						ACCEL_PLACEMENT_HBM, &scratch));
	NEW_MAT(in, 3, WIDE, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 0);
	integers(&in);
	ASSERT_EQ(ACCEL_OK, mat_upload(&in));
	EXPECT_TRUE(reduce_case(self->dev, self->cb, scratch, &in,
				TSR_REDUCE_SUM, 1));
	EXPECT_TRUE(reduce_case(self->dev, self->cb, scratch, &in,
				TSR_REDUCE_MAX, ACCEL_AXIS_ALL));
	EXPECT_TRUE(reduce_case(self->dev, self->cb, scratch, &in,
				TSR_REDUCE_MIN, 0));
	/* Without the scratch it needs, the op says so and appends nothing. */
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_op_reduce(self->cb, NULL, TSR_REDUCE_SUM, 1, &in.t,
				  &(struct accel_tensor){ in.buf, 0, 3, 1, 0,
							  TSR_DTYPE_F32 }));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "reduce: needs a scratch buffer of"));
	EXPECT_EQ(0, accel_cmdbuf_count(self->cb));
	mat_free(&in);
	accel_buffer_destroy(scratch);
}

/* ------------------------------------------------------------ softmax */

/*
 * The chip sums a row's exponentials in f32, in order; the reference in
 * double.  Over n terms f32 drifts by up to about sqrt(n) x 2^-24 of the
 * sum: 1e-5 for short rows, 1e-3 for a million columns.  bf16 results
 * hold 8 bits.
 */
static bool softmax_case(struct accel_device *dev, struct accel_cmdbuf *cb,
			 uint32_t rows, uint32_t cols, enum tsr_dtype dtype,
			 bool in_place)
{
	float tol = dtype == TSR_DTYPE_BF16 ? 2e-2f :
		    cols > TSR_MAX_DIM ? 1e-3f : 1e-5f;
	struct accel_buffer *scratch = NULL;
	struct mat in = { 0 }, out = { 0 };
	float *want = malloc((size_t)rows * cols * sizeof(*want));
	bool ok = false;
	int ret;

	ret = want ? accel_buffer_create(dev, accel_softmax_scratch_size(rows, cols),
					 ACCEL_PLACEMENT_HBM, &scratch) :
		     ACCEL_ERR_NO_MEMORY;
	if (!ret)
		ret = mat_new(dev, &in, rows, cols, dtype, ACCEL_PLACEMENT_HOST,
			      7, false);
	if (!ret && !in_place)
		ret = mat_new(dev, &out, rows, cols, dtype, ACCEL_PLACEMENT_HOST,
			      0, false);
	if (!ret)
		ret = accel_op_softmax(cb, scratch, &in.t,
				       in_place ? &in.t : &out.t);
	if (!ret)
		ret = run(dev, cb);
	if (!ret) {
		accel_ref_softmax(in.v, rows, cols, want);
		ok = mat_matches(in_place ? &in : &out, want, tol);
	}
	mat_free(&in);
	mat_free(&out);
	accel_buffer_destroy(scratch);
	free(want);
	return ok;
}

TEST_F(ops, softmax_matches_the_reference)
{
	EXPECT_TRUE(softmax_case(self->dev, self->cb, 64, 1000, TSR_DTYPE_F32,
				 false));
	EXPECT_TRUE(softmax_case(self->dev, self->cb, 33, 10, TSR_DTYPE_BF16,
				 false));
	EXPECT_TRUE(softmax_case(self->dev, self->cb, 5, 77, TSR_DTYPE_F32, true));
}

TEST_F(ops, softmax_of_rows_longer_than_one_command)
{
	EXPECT_TRUE(softmax_case(self->dev, self->cb, 2, WIDE, TSR_DTYPE_F32,
				 true));
}

/* ------------------------------------------------------------ errors */

/*
 * The loss and gradient of a classifier: rows of logits against one-hot
 * labels (one row with a label of probability 0 under it, one whose
 * labels spread over two classes), checked against the CPU: the softmax
 * as above, the loss to f32 summation over the rows, the gradient to a
 * few units in the last place of the probabilities.
 */
TEST_F(ops, softmax_cross_entropy_matches_the_reference)
{
	const uint32_t rows = 37, cols = 10;
	const float scale = 1.0f / 64;
	struct mat logits = { 0 }, labels = { 0 }, probs = { 0 }, grad = { 0 };
	struct mat loss = { 0 };
	float want_p[37 * 10], want_g[37 * 10], want_loss, got_loss;
	struct accel_buffer *scratch = NULL;
	uint32_t i;

	NEW_MAT(logits, rows, cols, TSR_DTYPE_F32, ACCEL_PLACEMENT_HBM, 21);
	NEW_MAT(labels, rows, cols, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 0);
	NEW_MAT(probs, rows, cols, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 0);
	NEW_MAT(grad, rows, cols, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 0);
	NEW_MAT(loss, 1, 1, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 0);
	for (i = 0; i < rows; i++)
		labels.v[i * cols + (i * 7) % cols] = 1.0f;
	/* Row 0: far below the others, class 3 gets a probability of 0. */
	logits.v[3] = -200.0f;
	labels.v[0 * cols + (0 * 7) % cols] = 0.0f;
	labels.v[1] = 1.0f;
	/* Row 1: half on each of two classes. */
	labels.v[cols + 7] = 0.5f;
	labels.v[cols + 2] = 0.5f;
	ASSERT_EQ(ACCEL_OK, mat_upload(&logits));
	ASSERT_EQ(ACCEL_OK, mat_upload(&labels));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev,
			accel_cross_entropy_scratch_size(rows, cols),
			ACCEL_PLACEMENT_HBM, &scratch));

	ASSERT_EQ(ACCEL_OK, accel_op_softmax_cross_entropy(self->cb, scratch,
			&logits.t, &labels.t, &probs.t, &grad.t, &loss.t, scale));
	ASSERT_EQ(ACCEL_OK, run(self->dev, self->cb));
	ASSERT_EQ(ACCEL_OK, accel_ref_softmax_cross_entropy(logits.v, labels.v,
			rows, cols, scale, want_p, want_g, &want_loss));
	EXPECT_TRUE(mat_matches(&probs, want_p, 1e-5f));
	EXPECT_TRUE(mat_matches(&grad, want_g, 1e-5f));
	ASSERT_EQ(ACCEL_OK, mat_download(&loss, &got_loss));
	EXPECT_TRUE(isfinite(got_loss));
	EXPECT_GT(1e-5f * fabsf(want_loss), fabsf(got_loss - want_loss))
		TH_LOG("loss %.9g, the CPU says %.9g", got_loss, want_loss);

	/* Misuse: a gradient written over the probabilities, a 2x1 loss. */
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_op_softmax_cross_entropy(self->cb, scratch, &logits.t,
						 &labels.t, &probs.t, &probs.t,
						 &loss.t, scale));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "grad and probs must be different tensors"));
	EXPECT_EQ(ACCEL_ERR_BAD_SHAPE,
		  accel_op_softmax_cross_entropy(self->cb, scratch, &logits.t,
						 &labels.t, &probs.t, &grad.t,
						 &probs.t, scale));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "loss is 37x10; it must be 1x1"));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_op_softmax_cross_entropy(self->cb, NULL, &logits.t,
						 &labels.t, &probs.t, &grad.t,
						 &loss.t, scale));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "softmax_cross_entropy: needs a scratch buffer"));
	EXPECT_EQ(0, accel_cmdbuf_count(self->cb));
	accel_buffer_destroy(scratch);
	mat_free(&logits);
	mat_free(&labels);
	mat_free(&probs);
	mat_free(&grad);
	mat_free(&loss);
}

TEST_F(ops, misuse_is_named_and_appends_nothing)
{
	struct accel_buffer *small, *foreign;
	struct accel_device *other;
	unsigned int count;
	struct mat a, b;

	NEW_MAT(a, 16, 32, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 1);
	NEW_MAT(b, 32, 16, TSR_DTYPE_BF16, ACCEL_PLACEMENT_HOST, 1);
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 4 * KIB,
						ACCEL_PLACEMENT_HBM, &small));

	/* A and B of different types. */
	EXPECT_EQ(ACCEL_ERR_BAD_DTYPE,
		  accel_op_matmul(self->cb, NULL, &a.t, &b.t, &a.t, 0));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb), "b.dtype bf16"));
	/* A tensor running past its buffer. */
	a.t.rows = 40;
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_op_elementwise(self->cb, TSR_VPU_NEG, &a.t, NULL, NULL,
				       &a.t));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "does not fit its"));
	a.t.rows = 16;
	/* Softmax of 600 rows keeps 5 KiB of maxima and sums. */
	EXPECT_EQ(ACCEL_ERR_NO_MEMORY,
		  accel_op_softmax(self->cb, small,
				   &(struct accel_tensor){ a.buf, 0, 600, 1, 0,
							   TSR_DTYPE_F32 },
				   &(struct accel_tensor){ a.buf, 0, 600, 1, 0,
							   TSR_DTYPE_F32 }));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "bytes of scratch; the buffer has 4096"));
	/* Scratch of another chip. */
	if (!accel_device_count(&count) && count > 1) {
		ASSERT_EQ(ACCEL_OK, accel_device_open(1, &other));
		ASSERT_EQ(ACCEL_OK, accel_buffer_create(other, MIB,
							ACCEL_PLACEMENT_HBM,
							&foreign));
		b.t.dtype = TSR_DTYPE_F32;
		EXPECT_EQ(ACCEL_ERR_WRONG_DEVICE,
			  accel_op_matmul(self->cb, foreign, &a.t, &b.t,
					  &(struct accel_tensor){ a.buf, 0, 16, 16, 0,
								  TSR_DTYPE_F32 },
					  0));
		EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
				       "scratch buffer belongs to another device"));
		accel_buffer_destroy(foreign);
		accel_device_close(other);
	}
	/* Reduction output of the wrong shape. */
	EXPECT_EQ(ACCEL_ERR_BAD_SHAPE,
		  accel_op_reduce(self->cb, NULL, TSR_REDUCE_MAX, 0, &a.t, &a.t));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "out must be 1x32"));
	EXPECT_EQ(0, accel_cmdbuf_count(self->cb));
	accel_buffer_destroy(small);
	mat_free(&a);
	mat_free(&b);
}

TEST_F(ops, a_fault_names_the_failing_command_of_an_op)
{
	/* The first 2 MiB of every context are never mapped. */
	struct accel_tensor unmapped = {
		.offset = 0x1000, .rows = 8, .cols = 64, .dtype = TSR_DTYPE_F32,
	};
	struct accel_job_status st;
	struct accel_buffer *scratch;
	struct accel_job *job;
	struct mat in;

	NEW_MAT(in, 8, 64, TSR_DTYPE_F32, ACCEL_PLACEMENT_HOST, 3);
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev,
						accel_softmax_scratch_size(8, 64),
						ACCEL_PLACEMENT_HBM, &scratch));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	/* Softmax: the row maxima (command 2), then out = in - max (3). */
	ASSERT_EQ(ACCEL_OK, accel_op_softmax(self->cb, scratch, &in.t, &unmapped));
	ASSERT_EQ(ACCEL_OK, accel_submit(self->dev, self->cb, NULL, &job));
	EXPECT_EQ(ACCEL_ERR_JOB_FAILED, accel_job_wait(job, WAIT_NS));
	ASSERT_EQ(ACCEL_OK, accel_job_status(job, &st));
	EXPECT_EQ(3, st.failed_command);
	EXPECT_STREQ("MMU_UNMAPPED", st.chip_error_name);
	EXPECT_EQ(0x1000, st.fault_va & ~0xfffull);
	accel_job_destroy(job);
	accel_cmdbuf_reset(self->cb);

	/* The device goes on serving the same handle. */
	EXPECT_TRUE(softmax_case(self->dev, self->cb, 8, 64, TSR_DTYPE_F32,
				 true));
	accel_buffer_destroy(scratch);
	mat_free(&in);
}

/* ------------------------------------------------------------ concurrency */

/*
 * One worker's share: a few rounds of matmul, a bias add with GELU and a
 * softmax on its own device handle or shared one, each checked; 0 when
 * all matched.
 */
static int worker_rounds(struct accel_device *dev, unsigned int id,
			 unsigned int rounds)
{
	struct accel_cmdbuf *cb;
	unsigned int r;
	int bad = 0;

	if (accel_cmdbuf_create(dev, &cb))
		return -1;
	for (r = 0; r < rounds && !bad; r++) {
		uint32_t m = 40 + 13 * id + r, n = 70 + 7 * r, k = 90 + id;

		bad |= !matmul_case(dev, cb, NULL, m, n, k, TSR_DTYPE_BF16,
				    TSR_DTYPE_F32, r % 2 ? TSR_MATMUL_TRANSPOSE_B : 0,
				    (id + r) % 2 ? ACCEL_PLACEMENT_HBM :
						   ACCEL_PLACEMENT_HOST, NULL);
		bad |= !softmax_case(dev, cb, 3 + id, 50 + r, TSR_DTYPE_F32,
				     r % 2);
	}
	accel_cmdbuf_destroy(cb);
	return bad;
}

struct worker {
	struct accel_device *dev;
	unsigned int id;
	int result;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	w->result = worker_rounds(w->dev, w->id, 4);
	return NULL;
}

TEST_F(ops, threads_run_ops_on_one_device_at_once)
{
	struct worker w[6];
	pthread_t tid[6];
	unsigned int i;

	for (i = 0; i < 6; i++) {
		w[i] = (struct worker){ .dev = self->dev, .id = i };
		ASSERT_EQ(0, pthread_create(&tid[i], NULL, worker_main, &w[i]));
	}
	for (i = 0; i < 6; i++) {
		pthread_join(tid[i], NULL);
		EXPECT_EQ(0, w[i].result) TH_LOG("thread %u", i);
	}
}

TEST_F(ops, processes_run_ops_on_every_chip_at_once)
{
	unsigned int count, i;
	pid_t pid[6];

	ASSERT_EQ(ACCEL_OK, accel_device_count(&count));
	for (i = 0; i < 6; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (!pid[i]) {
			struct accel_device *dev;
			int bad;

			if (accel_device_open(i % count, &dev))
				_exit(2);
			bad = worker_rounds(dev, i, 3);
			accel_device_close(dev);
			_exit(bad ? 1 : 0);
		}
	}
	for (i = 0; i < 6; i++) {
		int status;

		ASSERT_EQ(pid[i], waitpid(pid[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status))
			TH_LOG("process %u: status 0x%x", i, status);
	}
}

TEST_HARNESS_MAIN
