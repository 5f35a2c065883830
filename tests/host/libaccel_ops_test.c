// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of libaccel's ops layer: the tiling plans (pure logic)
 * and ops built on raw VAs, run on the chip core itself and compared with
 * libaccel's CPU reference, so that the reference and the chip are known
 * to agree before the VM tests rely on it.
 */
#include <math.h>

#include "kselftest_harness.h"

#include <accel/accel.h>
#include <drm/tessera_accel.h>

#include "tessera_chip.h"

#define MIB (1ull << 20)

static struct accel_matmul_shape shape(uint32_t m, uint32_t n, uint32_t k,
				       enum tsr_dtype in, enum tsr_dtype out,
				       uint32_t stage)
{
	return (struct accel_matmul_shape){
		.m = m, .n = n, .k = k, .in_dtype = in, .out_dtype = out,
		.stage = stage, .mxu_dim = 128,
	};
}

/* A plan covers the product and keeps every tile within the chip's limits. */
static int plan_ok(const struct accel_matmul_shape *s,
		   const struct accel_matmul_plan *p, uint64_t scratch)
{
	return (uint64_t)p->tiles_m * p->tile_m >= s->m &&
	       (uint64_t)(p->tiles_m - 1) * p->tile_m < s->m &&
	       (uint64_t)p->tiles_n * p->tile_n >= s->n &&
	       (uint64_t)p->tiles_k * p->tile_k >= s->k &&
	       p->tile_m <= TSR_MAX_DIM && p->tile_n <= TSR_MAX_DIM &&
	       p->tile_k <= TSR_MAX_DIM &&
	       (uint64_t)p->tile_m * p->tile_k <= TSR_MAX_ELEMENTS &&
	       (uint64_t)p->tile_k * p->tile_n <= TSR_MAX_ELEMENTS &&
	       (uint64_t)p->tile_m * p->tile_n <= TSR_MAX_ELEMENTS &&
	       p->scratch_bytes <= scratch;
}

TEST(plan_small_product_is_one_command)
{
	struct accel_matmul_shape s = shape(200, 300, 100, TSR_DTYPE_BF16,
					    TSR_DTYPE_F32, 0);
	struct accel_matmul_plan p;

	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, 0, &p));
	EXPECT_EQ(1, p.tiles_m * p.tiles_n * p.tiles_k);
	EXPECT_EQ(1, p.commands);
	EXPECT_EQ(0, p.scratch_bytes);
	EXPECT_EQ(0, p.staged);
}

TEST(plan_tiles_beyond_the_chip_limits)
{
	struct accel_matmul_shape s = shape(1u << 20, 1u << 20, 1u << 20,
					    TSR_DTYPE_BF16, TSR_DTYPE_F32, 0);
	struct accel_matmul_plan p;

	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, 0, &p));
	EXPECT_TRUE(plan_ok(&s, &p, 0));
	EXPECT_LT(1, p.tiles_m * p.tiles_n);
	EXPECT_EQ(0, p.f32_accumulator);
	/* A depth beyond 2^20 takes several steps. */
	s = shape(1, 1, (1u << 20) + 16, TSR_DTYPE_F32, TSR_DTYPE_F32, 0);
	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, 0, &p));
	EXPECT_TRUE(plan_ok(&s, &p, 0));
	EXPECT_EQ(2, p.tiles_k);
	EXPECT_EQ(2, p.commands);
}

TEST(plan_bf16_output_in_steps_needs_f32_scratch)
{
	struct accel_matmul_shape s = shape(64, 64, (1u << 20) + 16,
					    TSR_DTYPE_BF16, TSR_DTYPE_BF16, 0);
	struct accel_matmul_plan p;

	EXPECT_EQ(ACCEL_ERR_NO_MEMORY, accel_matmul_plan(&s, 0, &p));
	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, MIB, &p));
	EXPECT_TRUE(p.f32_accumulator);
	EXPECT_LE(64 * 64 * 4, p.scratch_bytes);
	/* steps, plus the cast of the accumulator into C */
	EXPECT_EQ(p.tiles_k + 1, p.commands);
}

TEST(plan_stages_only_what_saves_pcie_traffic)
{
	struct accel_matmul_shape s = shape(2048, 2048, 2048, TSR_DTYPE_BF16,
					    TSR_DTYPE_F32, ACCEL_STAGE_ALL);
	struct accel_matmul_plan p;

	/* One tile reads each operand once in place: copies only add. */
	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, 256 * MIB, &p));
	EXPECT_EQ(0, p.staged);
	EXPECT_EQ(1, p.commands);
	/*
	 * Tiles forced by the 2^28-element limit on C: A is reused across
	 * C's column tiles, so A alone goes to HBM, once per row tile.
	 */
	s = shape(1u << 16, 1u << 16, 1u << 12, TSR_DTYPE_BF16, TSR_DTYPE_F32,
		  ACCEL_STAGE_ALL);
	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, 1ull << 30, &p));
	EXPECT_TRUE(plan_ok(&s, &p, 1ull << 30));
	EXPECT_EQ(ACCEL_STAGE_A, p.staged);
	EXPECT_EQ(1, p.tiles_k);
	EXPECT_LT(1, p.tiles_n);
	EXPECT_EQ(p.tiles_m * p.tiles_n + p.tiles_m, p.commands);
	/* Steps in k: C's partial sums stay in HBM. */
	s = shape(64, 64, (1u << 20) + 16, TSR_DTYPE_F32, TSR_DTYPE_F32,
		  ACCEL_STAGE_ALL);
	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, MIB, &p));
	EXPECT_EQ(ACCEL_STAGE_C, p.staged);
	EXPECT_EQ(2, p.tiles_k);
	/* two steps, then C copied back */
	EXPECT_EQ(3, p.commands);
}

TEST(plan_stages_everything_when_asked)
{
	struct accel_matmul_shape s = shape(2048, 2048, 2048, TSR_DTYPE_BF16,
					    TSR_DTYPE_F32, ACCEL_STAGE_ALL |
					    ACCEL_STAGE_ALWAYS);
	struct accel_matmul_plan p;

	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, 256 * MIB, &p));
	EXPECT_EQ(1, p.tiles_m * p.tiles_n * p.tiles_k);
	EXPECT_EQ(ACCEL_STAGE_ALL, p.staged);
	EXPECT_EQ(8 * MIB + 8 * MIB + 16 * MIB, p.scratch_bytes);
	/* copy A, copy B, MATMUL, copy C back */
	EXPECT_EQ(4, p.commands);
}

TEST(plan_shrinks_tiles_to_the_scratch)
{
	struct accel_matmul_shape s = shape(2048, 2048, 2048, TSR_DTYPE_BF16,
					    TSR_DTYPE_F32, ACCEL_STAGE_ALL |
					    ACCEL_STAGE_ALWAYS);
	struct accel_matmul_plan p;

	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, 2 * MIB, &p));
	EXPECT_TRUE(plan_ok(&s, &p, 2 * MIB));
	EXPECT_EQ(ACCEL_STAGE_ALL, p.staged);
	EXPECT_LT(1, p.tiles_m * p.tiles_n);
	/* Tiles stay multiples of the MXU. */
	EXPECT_EQ(0, p.tile_m % 128);
	EXPECT_EQ(0, p.tile_n % 128);
	EXPECT_EQ(0, p.tile_k % 128);
}

TEST(plan_drops_staging_that_cannot_fit)
{
	struct accel_matmul_shape s = shape(2048, 2048, 2048, TSR_DTYPE_F32,
					    TSR_DTYPE_F32,
					    ACCEL_STAGE_A | ACCEL_STAGE_ALWAYS);
	struct accel_matmul_plan p;

	ASSERT_EQ(ACCEL_OK, accel_matmul_plan(&s, 512, &p));
	EXPECT_EQ(0, p.staged);
	EXPECT_EQ(0, p.scratch_bytes);
	EXPECT_EQ(1, p.commands);
}

TEST(plan_rejects_what_the_chip_cannot_multiply)
{
	struct accel_matmul_shape s = shape(8, 8, 8, TSR_DTYPE_I8,
					    TSR_DTYPE_F32, 0);
	struct accel_matmul_plan p;

	EXPECT_EQ(ACCEL_ERR_BAD_DTYPE, accel_matmul_plan(&s, 0, &p));
	s = shape(8, 8, 8, TSR_DTYPE_I32, TSR_DTYPE_I32, 0);
	EXPECT_EQ(ACCEL_ERR_BAD_DTYPE, accel_matmul_plan(&s, 0, &p));
	s = shape(8, 0, 8, TSR_DTYPE_F32, TSR_DTYPE_F32, 0);
	EXPECT_EQ(ACCEL_ERR_BAD_SHAPE, accel_matmul_plan(&s, 0, &p));
	s = shape(8, 8, 8, TSR_DTYPE_F32, TSR_DTYPE_F32, 0);
	s.flags = 0x80;
	EXPECT_EQ(ACCEL_ERR_BAD_FLAGS, accel_matmul_plan(&s, 0, &p));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_matmul_plan(NULL, 0, &p));
}

TEST(reduce_scratch_only_beyond_one_command)
{
	EXPECT_EQ(0, accel_reduce_scratch_size(1000, 1000, 0));
	EXPECT_EQ(0, accel_reduce_scratch_size(1000, 1000, 1));
	EXPECT_LT(0, accel_reduce_scratch_size(1, (1u << 20) + 1, 1));
	EXPECT_LT(0, accel_reduce_scratch_size((1u << 20) + 1, 1, 0));
	EXPECT_LE(1000 * 4, accel_reduce_scratch_size(1000, 1000, ACCEL_AXIS_ALL));
	EXPECT_EQ(0, accel_reduce_scratch_size(0, 1000, 1));
	EXPECT_EQ(0, accel_reduce_scratch_size(10, 10, 3));
	EXPECT_LE(2 * 10 * 4, accel_softmax_scratch_size(10, 50));
}

/* ------------------------------------------------ on the chip core */

FIXTURE(core) {
	struct test_chip *chip;
	struct accel_cmdbuf *cb;
};

FIXTURE_SETUP(core)
{
	self->chip = chip_new("v4");
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(NULL, &self->cb));
}

FIXTURE_TEARDOWN(core)
{
	accel_cmdbuf_destroy(self->cb);
	chip_free(self->chip);
}

/* A raw-VA f32 matrix in the chip's system memory, filled from @seed. */
static struct accel_tensor matrix(struct test_chip *chip, uint32_t rows,
				  uint32_t cols, uint32_t seed)
{
	uint64_t va = chip_buffer(chip, 1, (uint64_t)rows * cols * 4);
	float *p = host_ptr(chip, va);
	uint64_t i;

	for (i = 0; i < (uint64_t)rows * cols && seed; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (float)((seed >> 16) % 2001) / 1000.0f - 1.0f;
	}
	return (struct accel_tensor){
		.offset = va, .rows = rows, .cols = cols, .dtype = TSR_DTYPE_F32,
	};
}

static float *data(struct test_chip *chip, const struct accel_tensor *t)
{
	return host_ptr(chip, t->offset);
}

/* Run the command buffer on the chip core; its error code. */
static uint32_t run(struct test_chip *chip, struct accel_cmdbuf *cb)
{
	const void *cmds;
	size_t len;

	accel_cmdbuf_data(cb, &cmds, &len);
	return chip_run(chip, cmds, (uint32_t)len)->error;
}

TEST_F(core, matmul_with_transposes_matches_the_reference)
{
	static const uint32_t flags[] = {
		0, TSR_MATMUL_TRANSPOSE_A, TSR_MATMUL_TRANSPOSE_B,
		TSR_MATMUL_TRANSPOSE_A | TSR_MATMUL_TRANSPOSE_B,
	};
	const uint32_t m = 70, n = 90, k = 130;
	unsigned int f;

	for (f = 0; f < 4; f++) {
		bool ta = flags[f] & TSR_MATMUL_TRANSPOSE_A;
		bool tb = flags[f] & TSR_MATMUL_TRANSPOSE_B;
		struct accel_tensor a = matrix(self->chip, ta ? k : m, ta ? m : k, 1);
		struct accel_tensor b = matrix(self->chip, tb ? n : k, tb ? k : n, 2);
		struct accel_tensor c = matrix(self->chip, m, n, 0);
		static float want[70 * 90];

		accel_cmdbuf_reset(self->cb);
		ASSERT_EQ(ACCEL_OK, accel_op_matmul(self->cb, NULL, &a, &b, &c,
						    flags[f]));
		ASSERT_EQ(TSR_ERR_NONE, run(self->chip, self->cb));
		accel_ref_matmul(data(self->chip, &a), data(self->chip, &b),
				 want, m, n, k, flags[f]);
		EXPECT_TRUE(accel_ref_compare(data(self->chip, &c), want, m * n,
					      1e-5f, NULL))
			TH_LOG("flags 0x%x", flags[f]);
	}
}

TEST_F(core, elementwise_with_broadcasts_matches_the_reference)
{
	static const enum tsr_vpu_op ops[] = {
		TSR_VPU_EXP, TSR_VPU_GELU, TSR_VPU_ADD, TSR_VPU_DIV,
		TSR_VPU_CMP_LT, TSR_VPU_SELECT,
	};
	const uint32_t rows = 33, cols = 257;
	struct accel_tensor a = matrix(self->chip, rows, cols, 3);
	struct accel_tensor row = matrix(self->chip, 1, cols, 4);
	struct accel_tensor col = matrix(self->chip, rows, 1, 5);
	struct accel_tensor out = matrix(self->chip, rows, cols, 0);
	static float want[33 * 257];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(ops); i++) {
		bool use_row = i % 2;
		const struct accel_tensor *b = use_row ? &row : &col;
		bool binary = ops[i] >= TSR_VPU_ADD;
		bool select = ops[i] == TSR_VPU_SELECT;

		accel_cmdbuf_reset(self->cb);
		ASSERT_EQ(ACCEL_OK, accel_op_elementwise(self->cb, ops[i], &a,
							 binary ? b : NULL,
							 select ? b : NULL, &out));
		ASSERT_EQ(TSR_ERR_NONE, run(self->chip, self->cb));
		accel_ref_elementwise(ops[i], data(self->chip, &a),
				      data(self->chip, b), data(self->chip, b),
				      b->rows, b->cols, want, rows, cols);
		EXPECT_TRUE(accel_ref_compare(data(self->chip, &out), want,
					      rows * cols, 1e-6f, NULL))
			TH_LOG("op %u", ops[i]);
	}
}

TEST_F(core, reductions_match_the_reference)
{
	const uint32_t rows = 45, cols = 300;
	struct accel_tensor in = matrix(self->chip, rows, cols, 6);
	struct accel_tensor by_col = matrix(self->chip, 1, cols, 0);
	struct accel_tensor by_row = matrix(self->chip, rows, 1, 0);
	static float want[300];
	enum tsr_reduce_op op;

	for (op = TSR_REDUCE_SUM; op <= TSR_REDUCE_MIN; op++) {
		accel_cmdbuf_reset(self->cb);
		ASSERT_EQ(ACCEL_OK, accel_op_reduce(self->cb, NULL, op, 0, &in,
						    &by_col));
		ASSERT_EQ(ACCEL_OK, accel_op_reduce(self->cb, NULL, op, 1, &in,
						    &by_row));
		ASSERT_EQ(TSR_ERR_NONE, run(self->chip, self->cb));
		accel_ref_reduce(op, 0, data(self->chip, &in), rows, cols, want);
		EXPECT_TRUE(accel_ref_compare(data(self->chip, &by_col), want,
					      cols, 1e-6f, NULL));
		accel_ref_reduce(op, 1, data(self->chip, &in), rows, cols, want);
		EXPECT_TRUE(accel_ref_compare(data(self->chip, &by_row), want,
					      rows, 1e-6f, NULL));
	}
}

TEST_F(core, ops_check_their_operands_as_a_whole)
{
	struct accel_tensor a = matrix(self->chip, 8, 16, 1);
	struct accel_tensor b = matrix(self->chip, 8, 16, 1);
	struct accel_tensor out = matrix(self->chip, 8, 16, 0);
	struct accel_tensor wrong = matrix(self->chip, 3, 16, 0);

	EXPECT_EQ(ACCEL_ERR_BAD_SHAPE,
		  accel_op_matmul(self->cb, NULL, &a, &b, &out, 0));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "a's columns must equal b's rows"));
	EXPECT_EQ(ACCEL_ERR_BAD_SHAPE,
		  accel_op_elementwise(self->cb, TSR_VPU_ADD, &a, &wrong, NULL,
				       &out));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb), "elementwise: b is 3x16"));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_op_elementwise(self->cb, TSR_VPU_EXP, &a, &b, NULL, &out));
	EXPECT_EQ(ACCEL_ERR_BAD_OP,
		  accel_op_reduce(self->cb, NULL, TSR_REDUCE_SUM, 3, &a, &out));
	/* Softmax keeps its maxima and sums in scratch: none given. */
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_op_softmax(self->cb, NULL, &a, &out));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "softmax: needs a scratch buffer"));
	a.stride = 4;
	EXPECT_EQ(ACCEL_ERR_BAD_STRIDE,
		  accel_op_elementwise(self->cb, TSR_VPU_NEG, &a, NULL, NULL, &out));
	EXPECT_EQ(0, accel_cmdbuf_count(self->cb));
}

TEST_F(core, an_op_that_does_not_fit_appends_nothing)
{
	/* Two tiles of columns; room for only the first. */
	struct accel_tensor wide = {
		.offset = 1ull << 30, .rows = 1, .cols = TSR_MAX_DIM + 8,
		.dtype = TSR_DTYPE_F32,
	};
	size_t room = DRM_TESSERA_MAX_CMDBUF_SIZE - sizeof(struct tsr_cmd_vpu) - 8;
	uint32_t nops;
	size_t len;

	for (len = 0; len < room; len += sizeof(struct tsr_cmd_header))
		ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	nops = accel_cmdbuf_count(self->cb);
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE,
		  accel_op_elementwise(self->cb, TSR_VPU_NEG, &wide, NULL, NULL,
				       &wide));
	EXPECT_EQ(nops, accel_cmdbuf_count(self->cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	EXPECT_EQ(nops + 1, accel_cmdbuf_count(self->cb));
}

TEST(reference_compare_names_the_first_mismatch)
{
	float want[4] = { 1.0f, -2.0f, 100.0f, NAN };
	float got[4] = { 1.0f, -2.0f, 100.01f, NAN };
	size_t bad = 99;

	EXPECT_TRUE(accel_ref_compare(got, want, 4, 1e-3f, &bad));
	EXPECT_FALSE(accel_ref_compare(got, want, 4, 1e-5f, &bad));
	EXPECT_EQ(2, bad);
	got[3] = 0.0f;
	EXPECT_FALSE(accel_ref_compare(got, want, 4, 1e-3f, &bad));
	EXPECT_EQ(3, bad);
}

TEST_HARNESS_MAIN
