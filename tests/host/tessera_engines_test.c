// SPDX-License-Identifier: GPL-2.0
/*
 * Host unit tests of the Tessera engines: bf16 numerics, MATMUL, the VPU,
 * reductions, casts, transposes, and the timing model.  Results are
 * checked against plain C references.
 */
#include <math.h>
#include <sys/resource.h>
#include <time.h>

#include "kselftest_harness.h"

#include "tessera_chip.h"
#include "tessera-numerics.h"

/* --------------------------------------------------------- numerics */

TEST(bf16_rounds_to_nearest_even)
{
	/* 1 + 2^-8 is halfway between two bf16 values: ties go to even. */
	EXPECT_EQ(0x3f80, tsr_f32_to_bf16(1.0f + 1.0f / 256));
	/* 1 + 3 * 2^-8 is halfway too, and rounds up to the even one. */
	EXPECT_EQ(0x3f82, tsr_f32_to_bf16(1.0f + 3.0f / 256));
	/* Just above halfway rounds up. */
	EXPECT_EQ(0x3f81, tsr_f32_to_bf16(tsr_bits_f32(0x3f808001)));
	EXPECT_EQ(0xbf80, tsr_f32_to_bf16(-1.0f));
	EXPECT_EQ(0x0000, tsr_f32_to_bf16(0.0f));
	EXPECT_EQ(0x8000, tsr_f32_to_bf16(-0.0f));
}

TEST(bf16_keeps_nan_and_overflows_to_infinity)
{
	uint16_t h = tsr_f32_to_bf16(tsr_bits_f32(0x7f800001));

	EXPECT_TRUE(isnan(tsr_bf16_to_f32(h)));
	EXPECT_TRUE(isnan(tsr_bf16_to_f32(tsr_f32_to_bf16(-NAN))));
	EXPECT_EQ(0x7f80, tsr_f32_to_bf16(INFINITY));
	EXPECT_EQ(0x7f80, tsr_f32_to_bf16(tsr_bits_f32(0x7f7fffff)));
	EXPECT_EQ(0xff80, tsr_f32_to_bf16(-INFINITY));
}

TEST(bf16_widening_is_exact)
{
	uint32_t h;

	for (h = 0; h < 0x10000; h += 7) {
		float f = tsr_bf16_to_f32(h);

		if (!isnan(f))
			ASSERT_EQ(h, tsr_f32_to_bf16(f));
	}
}

TEST(f32_to_i32_rounds_even_and_saturates)
{
	EXPECT_EQ(2, tsr_f32_to_i32(2.5f));
	EXPECT_EQ(4, tsr_f32_to_i32(3.5f));
	EXPECT_EQ(-2, tsr_f32_to_i32(-2.5f));
	EXPECT_EQ(INT32_MAX, tsr_f32_to_i32(3e9f));
	EXPECT_EQ(INT32_MIN, tsr_f32_to_i32(-3e9f));
	EXPECT_EQ(0, tsr_f32_to_i32(NAN));
}

/* ---------------------------------------------------------- engines */

FIXTURE(eng) {
	struct test_chip *c;
};

FIXTURE_SETUP(eng)
{
	self->c = chip_new("v4");
}

FIXTURE_TEARDOWN(eng)
{
	chip_free(self->c);
}

static float frand(unsigned int *seed)
{
	*seed = *seed * 1103515245 + 12345;
	return ((*seed >> 8) % 2001) / 1000.0f - 1.0f;
}

static void fill_f32(float *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = frand(&seed);
}

static void ref_matmul(const float *a, const float *b, float *c, int m, int n,
		       int k, bool ta, bool tb)
{
	int i, j, l;

	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++) {
			double s = 0;

			for (l = 0; l < k; l++)
				s += (double)(ta ? a[l * m + i] : a[i * k + l]) *
				     (tb ? b[j * k + l] : b[l * n + j]);
			c[i * n + j] = s;
		}
}

static struct tsr_cmd_matmul matmul_cmd(uint64_t a, uint64_t b, uint64_t c,
					int m, int n, int k, uint16_t in,
					uint16_t out)
{
	return (struct tsr_cmd_matmul){
		.hdr = HDR(TSR_OP_MATMUL, struct tsr_cmd_matmul),
		.a = tensor(a, m, k, in), .b = tensor(b, k, n, in),
		.c = tensor(c, m, n, out),
	};
}

TEST_F(eng, matmul_f32_matches_the_reference_with_transposes)
{
	const int m = 37, n = 45, k = 29;
	uint64_t a = chip_buffer(self->c, 1, m * k * 4);
	uint64_t b = chip_buffer(self->c, 1, k * n * 4);
	uint64_t c = chip_buffer(self->c, 1, m * n * 4);
	float want[37 * 45];
	int flags, i;

	fill_f32(host_ptr(self->c, a), m * k, 1);
	fill_f32(host_ptr(self->c, b), k * n, 2);
	for (flags = 0; flags < 4; flags++) {
		bool ta = flags & TSR_MATMUL_TRANSPOSE_A;
		bool tb = flags & TSR_MATMUL_TRANSPOSE_B;
		struct tsr_cmd_matmul cmd = matmul_cmd(a, b, c, m, n, k,
						       TSR_DTYPE_F32,
						       TSR_DTYPE_F32);

		cmd.hdr.flags = flags;
		cmd.a.rows = ta ? k : m;
		cmd.a.cols = cmd.a.stride = ta ? m : k;
		cmd.b.rows = tb ? n : k;
		cmd.b.cols = cmd.b.stride = tb ? k : n;
		ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
		ref_matmul(host_ptr(self->c, a), host_ptr(self->c, b), want,
			   m, n, k, ta, tb);
		for (i = 0; i < m * n; i++)
			ASSERT_GT(1e-4, fabs(((float *)host_ptr(self->c, c))[i] -
					     want[i])) TH_LOG("flags %d i %d", flags, i);
	}
}

TEST_F(eng, matmul_bf16_accumulates_in_f32_and_can_add_to_c)
{
	const int m = 16, n = 24, k = 300;
	uint64_t a = chip_buffer(self->c, 1, m * k * 2);
	uint64_t b = chip_buffer(self->c, 1, k * n * 2);
	uint64_t c = chip_buffer(self->c, 1, m * n * 4);
	static float af[16 * 300], bf[300 * 24], want[16 * 24];
	uint16_t *ah = host_ptr(self->c, a), *bh = host_ptr(self->c, b);
	float *out = host_ptr(self->c, c);
	struct tsr_cmd_matmul cmd = matmul_cmd(a, b, c, m, n, k, TSR_DTYPE_BF16,
					       TSR_DTYPE_F32);
	int i;

	fill_f32(af, m * k, 3);
	fill_f32(bf, k * n, 4);
	for (i = 0; i < m * k; i++) {
		ah[i] = tsr_f32_to_bf16(af[i]);
		af[i] = tsr_bf16_to_f32(ah[i]);
	}
	for (i = 0; i < k * n; i++) {
		bh[i] = tsr_f32_to_bf16(bf[i]);
		bf[i] = tsr_bf16_to_f32(bh[i]);
	}
	ref_matmul(af, bf, want, m, n, k, false, false);
	for (i = 0; i < m * n; i++)
		out[i] = 1.0f;
	cmd.hdr.flags = TSR_MATMUL_ACCUMULATE;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < m * n; i++)
		ASSERT_GT(1e-3, fabs(out[i] - (want[i] + 1.0f))) TH_LOG("i %d", i);
}

TEST_F(eng, matmul_in_hbm_is_right_even_when_c_aliases_a)
{
	const int n = 64;
	uint64_t va = 0x10000000;
	float *a = (float *)self->c->hbm, *b = a + n * n, *c = b + n * n;
	static float want[64 * 64], orig[64 * 64];
	struct tsr_cmd_matmul cmd = matmul_cmd(va, va + n * n * 4,
					       va + 2 * n * n * 4, n, n, n,
					       TSR_DTYPE_F32, TSR_DTYPE_F32);
	int i;

	chip_map(self->c, 1, va, 0, HBM_SIZE,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	fill_f32(a, n * n, 5);
	fill_f32(b, n * n, 6);
	memcpy(orig, a, sizeof(orig));
	ref_matmul(a, b, want, n, n, n, false, false);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < n * n; i++)
		ASSERT_GT(1e-4, fabs(c[i] - want[i])) TH_LOG("i %d", i);
	/* Now C is A itself. */
	cmd.c.va = va;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	ref_matmul(orig, b, want, n, n, n, false, false);
	for (i = 0; i < n * n; i++)
		ASSERT_GT(1e-4, fabs(a[i] - want[i])) TH_LOG("aliased, i %d", i);
}

TEST_F(eng, matmul_int8_is_exact_in_int32)
{
	const int m = 8, n = 8, k = 2048;
	uint64_t a = chip_buffer(self->c, 1, m * k);
	uint64_t b = chip_buffer(self->c, 1, k * n);
	uint64_t c = chip_buffer(self->c, 1, m * n * 4);
	int8_t *ai = host_ptr(self->c, a), *bi = host_ptr(self->c, b);
	int32_t *out = host_ptr(self->c, c);
	struct tsr_cmd_matmul cmd = matmul_cmd(a, b, c, m, n, k, TSR_DTYPE_I8,
					       TSR_DTYPE_I32);
	int i, j, l;

	for (i = 0; i < m * k; i++)
		ai[i] = i % 2 ? -128 : 127;
	for (i = 0; i < k * n; i++)
		bi[i] = i % 3 ? -128 : 127;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++) {
			int32_t s = 0;

			for (l = 0; l < k; l++)
				s += ai[i * k + l] * bi[l * n + j];
			ASSERT_EQ(s, out[i * n + j]);
		}
}

TEST_F(eng, matmul_fields_are_validated)
{
	uint64_t buf = chip_buffer(self->c, 1, 65536);
	struct tsr_cmd_matmul cmd;

	cmd = matmul_cmd(buf, buf + 4096, buf + 8192, 4, 4, 4, TSR_DTYPE_F32,
			 TSR_DTYPE_F32);
	cmd.b.rows = 5;
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd = matmul_cmd(buf, buf + 4096, buf + 8192, 4, 4, 4, TSR_DTYPE_F32,
			 TSR_DTYPE_I32);
	EXPECT_EQ(TSR_ERR_BAD_DTYPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd = matmul_cmd(buf, buf + 4096, buf + 8192, 4, 4, 4, TSR_DTYPE_BF16,
			 TSR_DTYPE_F32);
	cmd.b.dtype = TSR_DTYPE_F32;
	EXPECT_EQ(TSR_ERR_BAD_DTYPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd = matmul_cmd(buf + 2, buf + 4096, buf + 8192, 4, 4, 4,
			 TSR_DTYPE_F32, TSR_DTYPE_F32);
	EXPECT_EQ(TSR_ERR_BAD_ALIGNMENT,
		  chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd = matmul_cmd(buf, buf + 4096, buf + 8192, 4, 4, 4, TSR_DTYPE_F32,
			 TSR_DTYPE_F32);
	cmd.a.stride = 3;
	EXPECT_EQ(TSR_ERR_BAD_STRIDE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd.a.stride = 4;
	cmd.hdr.flags = 0x100;
	EXPECT_EQ(TSR_ERR_BAD_FLAGS, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd.hdr.flags = 0;
	cmd.c.reserved = 1;
	EXPECT_EQ(TSR_ERR_RESERVED, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd.c.reserved = 0;
	cmd.a.dtype = 99;
	EXPECT_EQ(TSR_ERR_BAD_DTYPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
}

static float ref1(uint32_t op, float x)
{
	switch (op) {
	case TSR_VPU_NEG: return -x;
	case TSR_VPU_ABS: return fabsf(x);
	case TSR_VPU_EXP: return expf(x);
	case TSR_VPU_LOG: return logf(x);
	case TSR_VPU_TANH: return tanhf(x);
	case TSR_VPU_SIGMOID: return 1 / (1 + expf(-x));
	case TSR_VPU_RELU:
		return x > 0 ? x : 0;
	case TSR_VPU_GELU:
		return 0.5f * x * (1 + tanhf(0.7978845608f * (x + 0.044715f * x * x * x)));
	case TSR_VPU_SQRT: return sqrtf(x);
	default: return 1 / sqrtf(x);
	}
}

TEST_F(eng, every_unary_vpu_op_matches_the_reference)
{
	const int r = 3, cols = 50;
	uint64_t a = chip_buffer(self->c, 1, r * cols * 4);
	uint64_t o = chip_buffer(self->c, 1, r * cols * 4);
	float *in = host_ptr(self->c, a), *out = host_ptr(self->c, o);
	uint32_t op;
	int i;

	for (i = 0; i < r * cols; i++)
		in[i] = 0.05f + i * 0.037f;
	for (op = TSR_VPU_NEG; op <= TSR_VPU_RSQRT; op++) {
		struct tsr_cmd_vpu cmd = {
			.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = op,
			.a = tensor(a, r, cols, TSR_DTYPE_F32),
			.out = tensor(o, r, cols, TSR_DTYPE_F32),
		};

		ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
		for (i = 0; i < r * cols; i++)
			ASSERT_GT(1e-5 * (1 + fabsf(out[i])),
				  fabsf(out[i] - ref1(op, in[i]))) TH_LOG("op %u", op);
	}
}

TEST_F(eng, binary_vpu_ops_broadcast_rows_and_columns)
{
	const int r = 4, cols = 5;
	uint64_t a = chip_buffer(self->c, 1, 4096);
	uint64_t row = chip_buffer(self->c, 1, 4096);
	uint64_t col = chip_buffer(self->c, 1, 4096);
	uint64_t o = chip_buffer(self->c, 1, 4096);
	float *av = host_ptr(self->c, a), *rv = host_ptr(self->c, row);
	float *cv = host_ptr(self->c, col), *ov = host_ptr(self->c, o);
	struct tsr_cmd_vpu cmd = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = TSR_VPU_SUB,
		.a = tensor(a, r, cols, TSR_DTYPE_F32),
		.b = tensor(row, 1, cols, TSR_DTYPE_F32),
		.out = tensor(o, r, cols, TSR_DTYPE_F32),
	};
	int i, j;

	for (i = 0; i < r * cols; i++)
		av[i] = i;
	for (i = 0; i < cols; i++)
		rv[i] = 100 * i;
	for (i = 0; i < r; i++)
		cv[i] = 1000 * i;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < r; i++)
		for (j = 0; j < cols; j++)
			ASSERT_EQ(av[i * cols + j] - rv[j], ov[i * cols + j]);
	cmd.op = TSR_VPU_ADD;
	cmd.b = tensor(col, r, 1, TSR_DTYPE_F32);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < r; i++)
		for (j = 0; j < cols; j++)
			ASSERT_EQ(av[i * cols + j] + cv[i], ov[i * cols + j]);
	cmd.b = tensor(col, 2, 1, TSR_DTYPE_F32);
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
}

/* What apply2 must give, element by element: XLA's max and min. */
static float ref2(uint32_t op, float x, float y)
{
	switch (op) {
	case TSR_VPU_ADD: return x + y;
	case TSR_VPU_SUB: return x - y;
	case TSR_VPU_MUL: return x * y;
	case TSR_VPU_DIV: return x / y;
	case TSR_VPU_MAX:
		if (isnan(x) || isnan(y))
			return NAN;
		if (x == y)
			return signbit(x) ? y : x;
		return x > y ? x : y;
	case TSR_VPU_MIN:
		if (isnan(x) || isnan(y))
			return NAN;
		if (x == y)
			return signbit(x) ? x : y;
		return x < y ? x : y;
	case TSR_VPU_CMP_EQ: return x == y;
	case TSR_VPU_CMP_LT: return x < y;
	default: return x <= y;
	}
}

/* Bit for bit, but any NaN for a NaN. */
static bool same_float(float want, float got)
{
	return isnan(want) ? isnan(got) : !memcmp(&want, &got, sizeof(got));
}

/*
 * Map @len bytes of HBM at @hbm to @va of context 1, zeroed; the host's
 * view of them.
 */
static float *hbm_buffer(struct test_chip *c, uint64_t va, uint64_t hbm,
			 uint64_t len)
{
	chip_map(c, 1, va, hbm, len,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	memset(c->hbm + hbm, 0, len);
	return (float *)(c->hbm + hbm);
}

/*
 * Every binary operation on operands of one shape, NaNs, zeros of both
 * signs and infinities among them, from system memory (widened copies)
 * and from HBM (read in place, counted once as HBM reads).
 */
TEST_F(eng, binary_vpu_ops_of_one_shape_match_the_reference_anywhere)
{
	static const float special[] = {
		NAN, -NAN, 0.0f, -0.0f, INFINITY, -INFINITY, 1.0f, -2.5f,
		3e38f, 1e-45f,
	};
	const unsigned int n = 3 * 40, ns = ARRAY_SIZE(special);
	uint64_t sys[3] = {
		chip_buffer(self->c, 1, n * 4), chip_buffer(self->c, 1, n * 4),
		chip_buffer(self->c, 1, n * 4),
	};
	uint64_t hbm_va = 0x40000000;
	float *hbm = hbm_buffer(self->c, hbm_va, 0, 3 * 4096);
	unsigned int where, i;
	uint32_t op;

	for (where = 0; where < 2; where++) {
		uint64_t va[3] = { sys[0], sys[1], sys[2] };
		float *v[3];

		if (where) {
			for (i = 0; i < 3; i++)
				va[i] = hbm_va + i * 4096;
		}
		for (i = 0; i < 3; i++)
			v[i] = where ? hbm + i * 1024 : host_ptr(self->c, va[i]);
		/* Every special value against every other, then ordinary ones. */
		for (i = 0; i < n; i++) {
			v[0][i] = i < ns * ns ? special[i / ns] : i * 0.37f - 20;
			v[1][i] = i < ns * ns ? special[i % ns] : 7.5f - i * 0.11f;
		}
		for (op = TSR_VPU_ADD; op <= TSR_VPU_CMP_LE; op++) {
			struct tsr_cmd_vpu cmd = {
				.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = op,
				.a = tensor(va[0], 3, 40, TSR_DTYPE_F32),
				.b = tensor(va[1], 3, 40, TSR_DTYPE_F32),
				.out = tensor(va[2], 3, 40, TSR_DTYPE_F32),
			};
			uint32_t reads = rd(self->c, TSR_REG_CNT_HBM_READ_LO);

			ASSERT_EQ(TSR_ERR_NONE,
				  chip_run(self->c, &cmd, sizeof(cmd))->error);
			for (i = 0; i < n; i++)
				ASSERT_TRUE(same_float(ref2(op, v[0][i], v[1][i]),
						       v[2][i]))
					TH_LOG("%s, op %u: %g (op) %g gave %g",
					       where ? "HBM" : "memory", op,
					       v[0][i], v[1][i], v[2][i]);
			EXPECT_EQ(reads + (where ? 2 * n * 4 : 0),
				  rd(self->c, TSR_REG_CNT_HBM_READ_LO));
		}
	}
}

/*
 * An add of two blocks of rows in HBM, in place (a is out, as in a
 * collective's reduction), with a row of out broadcast as b: every block
 * adds the row as it was before the command, and each operand's bytes
 * are counted once.
 */
TEST_F(eng, a_large_vpu_add_in_place_in_hbm_sees_its_broadcast_row_as_it_was)
{
	const unsigned int r = 1100, cols = 1000;
	const uint64_t bytes = (uint64_t)r * cols * 4, va = 0x40000000;
	float *acc = hbm_buffer(self->c, va, 0, bytes);
	float *other = hbm_buffer(self->c, va + 8 * 1024 * 1024,
				  8 * 1024 * 1024, bytes);
	float *row0 = malloc(cols * 4);
	uint32_t reads, writes;
	struct tsr_cmd_vpu cmd = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = TSR_VPU_ADD,
		.a = tensor(va, r, cols, TSR_DTYPE_F32),
		.b = tensor(va + 8 * 1024 * 1024, r, cols, TSR_DTYPE_F32),
		.out = tensor(va, r, cols, TSR_DTYPE_F32),
	};
	unsigned int i, j;

	ASSERT_NE(NULL, row0);
	for (i = 0; i < r * cols; i++) {
		acc[i] = i % 1000;
		other[i] = (float)(i / 1000);
	}
	reads = rd(self->c, TSR_REG_CNT_HBM_READ_LO);
	writes = rd(self->c, TSR_REG_CNT_HBM_WRITE_LO);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < r; i++)
		for (j = 0; j < cols; j++)
			ASSERT_EQ((float)(j + i), acc[i * cols + j])
				TH_LOG("%u, %u", i, j);
	EXPECT_EQ(reads + 2 * bytes, rd(self->c, TSR_REG_CNT_HBM_READ_LO));
	EXPECT_EQ(writes + bytes, rd(self->c, TSR_REG_CNT_HBM_WRITE_LO));

	/* out += its own first row, broadcast down both blocks. */
	memcpy(row0, acc, cols * 4);
	cmd.b = tensor(va, 1, cols, TSR_DTYPE_F32);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < r; i++)
		for (j = 0; j < cols; j++)
			ASSERT_EQ((float)(j + i) + row0[j], acc[i * cols + j])
				TH_LOG("%u, %u", i, j);
	free(row0);
}

/*
 * A same-shape add in HBM whose output is computed in place there only
 * when no element is written before it is read: out = a + out (b is
 * out), and out one row past a (overlapping it), are each what the
 * operands held before the command, as when the block is computed
 * aside and stored.
 */
TEST_F(eng, a_same_shape_vpu_op_whose_output_overlaps_an_operand_reads_it_as_it_was)
{
	const unsigned int r = 4, cols = 64, n = r * cols;
	const uint64_t va = 0x40000000;
	float *m = hbm_buffer(self->c, va, 0, 4 * n * 4);
	float *a = m, *b = m + 2 * n, *want = malloc(n * 4);
	struct tsr_cmd_vpu cmd = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = TSR_VPU_SUB,
		.a = tensor(va, r, cols, TSR_DTYPE_F32),
		.b = tensor(va + 2 * n * 4, r, cols, TSR_DTYPE_F32),
		.out = tensor(va + 2 * n * 4, r, cols, TSR_DTYPE_F32),
	};
	unsigned int i;

	ASSERT_NE(NULL, want);
	for (i = 0; i < n; i++) {
		a[i] = i * 3.0f;
		b[i] = i * 0.5f;
		want[i] = a[i] - b[i];
	}
	/* b = a - b */
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < n; i++)
		ASSERT_EQ(want[i], b[i]) TH_LOG("b = a - b, element %u", i);

	/* out, one row past a, = a - b: a's rows as they were. */
	for (i = 0; i < n + cols; i++)
		a[i] = i * 3.0f;
	for (i = 0; i < n; i++) {
		b[i] = i * 0.5f;
		want[i] = a[i] - b[i];
	}
	cmd.out = tensor(va + cols * 4, r, cols, TSR_DTYPE_F32);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < n; i++)
		ASSERT_EQ(want[i], a[cols + i]) TH_LOG("out = a + 1 row, element %u", i);
	free(want);
}

TEST_F(eng, compare_and_select_build_a_mask)
{
	uint64_t a = chip_buffer(self->c, 1, 4096);
	uint64_t b = chip_buffer(self->c, 1, 4096);
	uint64_t m = chip_buffer(self->c, 1, 4096);
	uint64_t o = chip_buffer(self->c, 1, 4096);
	float *av = host_ptr(self->c, a), *bv = host_ptr(self->c, b);
	float *ov = host_ptr(self->c, o);
	struct tsr_cmd_vpu cmp = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = TSR_VPU_CMP_LT,
		.a = tensor(a, 1, 4, TSR_DTYPE_F32),
		.b = tensor(b, 1, 4, TSR_DTYPE_F32),
		.out = tensor(m, 1, 4, TSR_DTYPE_F32),
	};
	struct tsr_cmd_vpu sel = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = TSR_VPU_SELECT,
		.a = tensor(m, 1, 4, TSR_DTYPE_F32),
		.b = tensor(a, 1, 4, TSR_DTYPE_F32),
		.c = tensor(b, 1, 4, TSR_DTYPE_F32),
		.out = tensor(o, 1, 4, TSR_DTYPE_F32),
	};
	struct tsr_cmd_vpu cmds[2] = { cmp, sel };
	int i;

	for (i = 0; i < 4; i++) {
		av[i] = i;
		bv[i] = 3 - i;
	}
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, cmds, sizeof(cmds))->error);
	/* select(a < b, a, b) is min(a, b). */
	for (i = 0; i < 4; i++)
		EXPECT_EQ(fminf(av[i], bv[i]), ov[i]);
}

TEST_F(eng, integer_vpu_ops_wrap_and_broadcast_in_32_bits)
{
	static const uint32_t ops[] = {
		TSR_VPU_ADD, TSR_VPU_SUB, TSR_VPU_MUL, TSR_VPU_MAX, TSR_VPU_MIN,
	};
	const int r = 3, cols = 4;
	uint64_t a = chip_buffer(self->c, 1, 4096);
	uint64_t b = chip_buffer(self->c, 1, 4096);
	uint64_t o = chip_buffer(self->c, 1, 4096);
	int32_t *av = host_ptr(self->c, a), *bv = host_ptr(self->c, b);
	int32_t *ov = host_ptr(self->c, o);
	struct tsr_cmd_vpu cmd = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu),
		.a = tensor(a, r, cols, TSR_DTYPE_I32),
		.b = tensor(b, 1, cols, TSR_DTYPE_I32),
		.out = tensor(o, r, cols, TSR_DTYPE_I32),
	};
	unsigned int k;
	int i, j;

	/* Beyond f32's 24 bits, and at the ends of the range. */
	for (i = 0; i < r * cols; i++)
		av[i] = i % 2 ? INT32_MAX - i : 16777217 * (i + 1);
	for (j = 0; j < cols; j++)
		bv[j] = j % 2 ? 3 : -16777219;
	for (k = 0; k < ARRAY_SIZE(ops); k++) {
		cmd.op = ops[k];
		ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
		for (i = 0; i < r; i++) {
			for (j = 0; j < cols; j++) {
				uint32_t x = av[i * cols + j], y = bv[j];
				int32_t want = ops[k] == TSR_VPU_ADD ? (int32_t)(x + y) :
					       ops[k] == TSR_VPU_SUB ? (int32_t)(x - y) :
					       ops[k] == TSR_VPU_MUL ? (int32_t)(x * y) :
					       ops[k] == TSR_VPU_MAX ?
					       ((int32_t)x > (int32_t)y ? (int32_t)x : (int32_t)y) :
					       ((int32_t)x < (int32_t)y ? (int32_t)x : (int32_t)y);

				ASSERT_EQ(want, ov[i * cols + j])
					TH_LOG("op %u element %d,%d", ops[k], i, j);
			}
		}
	}
	/* Only those five, and only with every operand I32. */
	cmd.op = TSR_VPU_DIV;
	EXPECT_EQ(TSR_ERR_BAD_DTYPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd.op = TSR_VPU_ADD;
	cmd.b.dtype = TSR_DTYPE_F32;
	EXPECT_EQ(TSR_ERR_BAD_DTYPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd.b.dtype = TSR_DTYPE_I32;
	cmd.out.dtype = TSR_DTYPE_F32;
	EXPECT_EQ(TSR_ERR_BAD_DTYPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
}

TEST_F(eng, vpu_fields_are_validated)
{
	uint64_t a = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_vpu cmd = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = 999,
		.a = tensor(a, 1, 4, TSR_DTYPE_F32),
		.out = tensor(a, 1, 4, TSR_DTYPE_F32),
	};

	EXPECT_EQ(TSR_ERR_BAD_OP, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd.op = TSR_VPU_NEG;
	cmd.b.va = 8;
	EXPECT_EQ(TSR_ERR_RESERVED, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd.b.va = 0;
	cmd.out.dtype = TSR_DTYPE_I32;
	EXPECT_EQ(TSR_ERR_BAD_DTYPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd.out.dtype = TSR_DTYPE_F32;
	cmd.out.cols = 5;
	cmd.out.stride = 5;
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
}

TEST_F(eng, reductions_along_each_axis)
{
	uint64_t in = chip_buffer(self->c, 1, 4096);
	uint64_t out = chip_buffer(self->c, 1, 4096);
	float *iv = host_ptr(self->c, in), *ov = host_ptr(self->c, out);
	struct tsr_cmd_reduce cmd = {
		.hdr = HDR(TSR_OP_REDUCE, struct tsr_cmd_reduce),
		.op = TSR_REDUCE_SUM, .axis = 0,
		.in = tensor(in, 3, 4, TSR_DTYPE_F32),
		.out = tensor(out, 1, 4, TSR_DTYPE_F32),
	};
	int i;

	for (i = 0; i < 12; i++)
		iv[i] = i * (i % 2 ? -1 : 1);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < 4; i++)
		EXPECT_EQ(iv[i] + iv[4 + i] + iv[8 + i], ov[i]);
	cmd.op = TSR_REDUCE_MAX;
	cmd.axis = 1;
	cmd.out = tensor(out, 3, 1, TSR_DTYPE_F32);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	EXPECT_EQ(2, ov[0]);
	EXPECT_EQ(6, ov[1]);
	EXPECT_EQ(10, ov[2]);
	cmd.op = TSR_REDUCE_MIN;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	EXPECT_EQ(-3, ov[0]);
	cmd.axis = 2;
	EXPECT_EQ(TSR_ERR_BAD_OP, chip_run(self->c, &cmd, sizeof(cmd))->error);
	cmd.axis = 0;
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
}

TEST_F(eng, casts_between_f32_bf16_and_i32)
{
	uint64_t in = chip_buffer(self->c, 1, 4096);
	uint64_t mid = chip_buffer(self->c, 1, 4096);
	uint64_t out = chip_buffer(self->c, 1, 4096);
	float *iv = host_ptr(self->c, in);
	uint16_t *bv = host_ptr(self->c, mid);
	int32_t *ov = host_ptr(self->c, out);
	struct tsr_cmd_unary_copy cmds[2] = {
		{ HDR(TSR_OP_CAST, struct tsr_cmd_unary_copy),
		  tensor(in, 1, 4, TSR_DTYPE_F32), tensor(mid, 1, 4, TSR_DTYPE_BF16) },
		{ HDR(TSR_OP_CAST, struct tsr_cmd_unary_copy),
		  tensor(mid, 1, 4, TSR_DTYPE_BF16), tensor(out, 1, 4, TSR_DTYPE_I32) },
	};

	iv[0] = 1.5f;
	iv[1] = -2.5f;
	iv[2] = 300.7f;
	iv[3] = 1e10f;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, cmds, sizeof(cmds))->error);
	EXPECT_EQ(tsr_f32_to_bf16(1.5f), bv[0]);
	EXPECT_EQ(2, ov[0]);
	EXPECT_EQ(-2, ov[1]);
	EXPECT_EQ(300, ov[2]);  /* 300.7 is 300 in bf16 */
	EXPECT_EQ(INT32_MAX, ov[3]);
	cmds[0].out.dtype = TSR_DTYPE_I8;
	EXPECT_EQ(TSR_ERR_BAD_DTYPE, chip_run(self->c, cmds, sizeof(cmds))->error);
}

TEST_F(eng, transpose_swaps_rows_and_columns)
{
	uint64_t in = chip_buffer(self->c, 1, 4096);
	uint64_t out = chip_buffer(self->c, 1, 4096);
	uint16_t *iv = host_ptr(self->c, in), *ov = host_ptr(self->c, out);
	struct tsr_cmd_unary_copy cmd = {
		HDR(TSR_OP_TRANSPOSE, struct tsr_cmd_unary_copy),
		tensor(in, 3, 5, TSR_DTYPE_BF16), tensor(out, 5, 3, TSR_DTYPE_BF16),
	};
	int i, j;

	for (i = 0; i < 15; i++)
		iv[i] = i + 1;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < 3; i++)
		for (j = 0; j < 5; j++)
			EXPECT_EQ(iv[i * 5 + j], ov[j * 3 + i]);
	cmd.out = tensor(out, 3, 5, TSR_DTYPE_BF16);
	EXPECT_EQ(TSR_ERR_BAD_SHAPE, chip_run(self->c, &cmd, sizeof(cmd))->error);
}

/* ----------------------------------------------------------- timing */

TEST(a_large_matmul_takes_2mnk_over_peak)
{
	static const char *const presets[] = { "v2", "v4", "v5e", "v5p", "v6e" };
	const uint64_t n = 8192;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(presets); i++) {
		TsrConfig cfg;
		double want, got;

		ASSERT_EQ(0, tsr_preset_lookup(presets[i], &cfg));
		want = 2.0 * n * n * n / tsr_config_peak_flops(&cfg);
		got = tsr_mxu_cycles(&cfg, n, n, n, TSR_DTYPE_BF16) /
		      (cfg.clock_mhz * 1e6);
		EXPECT_GT(0.02, fabs(got / want - 1)) TH_LOG("%s", presets[i]);
	}
}

TEST_F(eng, an_executed_matmul_reports_its_modeled_cycles)
{
	/* Large enough to be bound by the MXUs, not by HBM bandwidth. */
	const int n = 1024;
	uint64_t hbm_va = 0x10000000;
	struct tsr_cmd_matmul cmd = matmul_cmd(hbm_va, hbm_va + n * n * 2,
					       hbm_va + 2 * n * n * 2, n, n, n,
					       TSR_DTYPE_BF16, TSR_DTYPE_F32);
	struct tsr_completion *comp;

	chip_map(self->c, 1, hbm_va, 0, HBM_SIZE,
		 TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	comp = chip_run(self->c, &cmd, sizeof(cmd));
	ASSERT_EQ(TSR_ERR_NONE, comp->error);
	EXPECT_EQ(tsr_mxu_cycles(&self->c->cfg, n, n, n, TSR_DTYPE_BF16),
		  comp->mxu_cycles);
	EXPECT_LE(comp->start_cycle + comp->mxu_cycles, comp->end_cycle);
	EXPECT_EQ(comp->mxu_cycles, rd(self->c, TSR_REG_CNT_MXU_BUSY_LO));
}

/* ----------------------------------------------------- large commands */

TEST_F(eng, a_large_vpu_command_runs_in_blocks_with_its_broadcasts)
{
	/* Two blocks of rows; b is one row, c one column. */
	const int r = 2000, cols = 1000;
	uint64_t a = chip_buffer(self->c, 1, r * cols * 4);
	uint64_t b = chip_buffer(self->c, 1, cols * 4);
	uint64_t s = chip_buffer(self->c, 1, r * 4);
	uint64_t o = chip_buffer(self->c, 1, r * cols * 4);
	float *av = host_ptr(self->c, a), *bv = host_ptr(self->c, b);
	float *sv = host_ptr(self->c, s), *ov = host_ptr(self->c, o);
	struct tsr_cmd_vpu cmd = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = TSR_VPU_SELECT,
		.a = tensor(a, r, cols, TSR_DTYPE_F32),
		.b = tensor(b, 1, cols, TSR_DTYPE_F32),
		.c = tensor(s, r, 1, TSR_DTYPE_F32),
		.out = tensor(o, r, cols, TSR_DTYPE_F32),
	};
	int i, j;

	for (i = 0; i < r * cols; i++)
		av[i] = i % 3 == 0;
	for (j = 0; j < cols; j++)
		bv[j] = j;
	for (i = 0; i < r; i++)
		sv[i] = -i;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < r; i++)
		for (j = 0; j < cols; j++)
			ASSERT_EQ(av[i * cols + j] != 0 ? bv[j] : sv[i],
				  ov[i * cols + j]) TH_LOG("%d, %d", i, j);
}

TEST_F(eng, a_large_reduction_sums_in_index_order_across_blocks)
{
	const int r = 3000, cols = 700;
	uint64_t in = chip_buffer(self->c, 1, r * cols * 4);
	uint64_t out = chip_buffer(self->c, 1, r * 4);
	float *iv = host_ptr(self->c, in), *ov = host_ptr(self->c, out);
	struct tsr_cmd_reduce cmd = {
		.hdr = HDR(TSR_OP_REDUCE, struct tsr_cmd_reduce),
		.op = TSR_REDUCE_SUM, .axis = 0,
		.in = tensor(in, r, cols, TSR_DTYPE_F32),
		.out = tensor(out, 1, cols, TSR_DTYPE_F32),
	};
	int i, j;

	fill_f32(iv, r * cols, 7);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (j = 0; j < cols; j++) {
		float sum = iv[j];

		for (i = 1; i < r; i++)
			sum += iv[i * cols + j];
		ASSERT_EQ(sum, ov[j]) TH_LOG("column %d", j);
	}
	cmd.axis = 1;
	cmd.out = tensor(out, r, 1, TSR_DTYPE_F32);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < r; i++) {
		float sum = iv[i * cols];

		for (j = 1; j < cols; j++)
			sum += iv[i * cols + j];
		ASSERT_EQ(sum, ov[i]) TH_LOG("row %d", i);
	}
}

TEST_F(eng, large_casts_and_transposes_run_in_blocks_with_strides)
{
	const int r = 2500, cols = 2100, pad = 3;
	uint64_t in = chip_buffer(self->c, 1, r * (cols + pad) * 4);
	uint64_t out = chip_buffer(self->c, 1, (cols + pad) * r * 4);
	float *iv = host_ptr(self->c, in);
	uint16_t *bv = host_ptr(self->c, out);
	float *tv = host_ptr(self->c, out);
	struct tsr_cmd_unary_copy cast = {
		HDR(TSR_OP_CAST, struct tsr_cmd_unary_copy),
		tensor(in, r, cols, TSR_DTYPE_F32),
		tensor(out, r, cols, TSR_DTYPE_BF16),
	};
	struct tsr_cmd_unary_copy transpose = {
		HDR(TSR_OP_TRANSPOSE, struct tsr_cmd_unary_copy),
		tensor(in, r, cols, TSR_DTYPE_F32),
		tensor(out, cols, r, TSR_DTYPE_F32),
	};
	int i, j;

	cast.in.stride = cols + pad;
	transpose.in.stride = cols + pad;
	transpose.out.stride = r + pad;
	fill_f32(iv, r * (cols + pad), 8);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cast, sizeof(cast))->error);
	for (i = 0; i < r; i++)
		for (j = 0; j < cols; j++)
			ASSERT_EQ(tsr_f32_to_bf16(iv[i * (cols + pad) + j]),
				  bv[i * cols + j]) TH_LOG("%d, %d", i, j);
	ASSERT_EQ(TSR_ERR_NONE,
		  chip_run(self->c, &transpose, sizeof(transpose))->error);
	for (i = 0; i < r; i++)
		for (j = 0; j < cols; j++)
			ASSERT_EQ(iv[i * (cols + pad) + j], tv[j * (r + pad) + i])
				TH_LOG("%d, %d", i, j);
}

TEST_F(eng, a_large_matmul_runs_in_tiles)
{
	/* More multiply-adds than one tile holds: two blocks of rows. */
	const int m = 1100, n = 1000, k = 1000;
	uint64_t a = chip_buffer(self->c, 1, m * k * 4);
	uint64_t b = chip_buffer(self->c, 1, k * n * 4);
	uint64_t c = chip_buffer(self->c, 1, m * n * 4);
	float *av = host_ptr(self->c, a), *bv = host_ptr(self->c, b);
	float *cv = host_ptr(self->c, c);
	struct tsr_cmd_matmul cmd = matmul_cmd(a, b, c, m, n, k, TSR_DTYPE_F32,
					       TSR_DTYPE_F32);
	unsigned int seed = 9;
	int t;

	fill_f32(av, m * k, 10);
	fill_f32(bv, k * n, 11);
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (t = 0; t < 2000; t++) {
		int i = (seed = seed * 1103515245 + 12345) % m;
		int j = (seed = seed * 1103515245 + 12345) % n;
		double want = 0;
		int l;

		for (l = 0; l < k; l++)
			want += (double)av[i * k + l] * bv[l * n + j];
		ASSERT_GT(1e-3, fabs(cv[i * n + j] - want)) TH_LOG("%d, %d", i, j);
	}
}

TEST_F(eng, an_int8_matmul_over_several_k_blocks_stays_exact)
{
	const int m = 16, n = 16, k = 3000;
	uint64_t a = chip_buffer(self->c, 1, m * k);
	uint64_t b = chip_buffer(self->c, 1, k * n);
	uint64_t c = chip_buffer(self->c, 1, m * n * 4);
	int8_t *ai = host_ptr(self->c, a), *bi = host_ptr(self->c, b);
	int32_t *out = host_ptr(self->c, c);
	struct tsr_cmd_matmul cmd = matmul_cmd(a, b, c, m, n, k, TSR_DTYPE_I8,
					       TSR_DTYPE_I32);
	int i, j, l;

	for (i = 0; i < m * k; i++)
		ai[i] = i % 5 ? -128 : 127;
	for (i = 0; i < k * n; i++)
		bi[i] = i % 7 ? -128 : 127;
	for (i = 0; i < m * n; i++)
		out[i] = INT32_MAX - i;
	cmd.hdr.flags = TSR_MATMUL_ACCUMULATE;
	ASSERT_EQ(TSR_ERR_NONE, chip_run(self->c, &cmd, sizeof(cmd))->error);
	for (i = 0; i < m; i++)
		for (j = 0; j < n; j++) {
			uint32_t s = INT32_MAX - (i * n + j);

			for (l = 0; l < k; l++)
				s += (uint32_t)(ai[i * k + l] * bi[l * n + j]);
			ASSERT_EQ((int32_t)s, out[i * n + j]);
		}
}

TEST_F(eng, a_tensor_that_wraps_around_the_address_space_is_refused)
{
	uint64_t buf = chip_buffer(self->c, 1, 4096);
	struct tsr_cmd_matmul cmd = matmul_cmd(-32ull, buf, buf + 2048, 4, 4, 4,
					       TSR_DTYPE_F32, TSR_DTYPE_F32);

	EXPECT_EQ(TSR_ERR_BAD_STRIDE, chip_run(self->c, &cmd, sizeof(cmd))->error);
}

/* ------------------------------------------------------ stopping them */

#define HUGE_VA (4ull << 30)
#define HUGE_N (1u << 14)

static struct tsr_tensor huge(int gib, uint16_t dtype)
{
	return tensor(HUGE_VA + ((uint64_t)gib << 30), HUGE_N, HUGE_N, dtype);
}

/* The largest command of each kind, on operands aliased onto 2 MiB of HBM. */
union huge_cmd {
	struct tsr_cmd_dma dma;
	struct tsr_cmd_matmul mm;
	struct tsr_cmd_vpu vpu;
	struct tsr_cmd_reduce reduce;
	struct tsr_cmd_unary_copy unary;
};

static uint32_t huge_cmd(int which, uint64_t sysmem, union huge_cmd *u)
{
	memset(u, 0, sizeof(*u));
	switch (which) {
	case 0:	/* 2^30 rows of 4 bytes: the source in system memory */
		u->dma = (struct tsr_cmd_dma){
			HDR(TSR_OP_DMA_COPY, struct tsr_cmd_dma), sysmem, HUGE_VA,
			{ 4, 1u << 30, 1 }, 0, { 0, 0 }, { 4, 0 } };
		return sizeof(u->dma);
	case 1:
		u->mm = (struct tsr_cmd_matmul){
			HDR(TSR_OP_MATMUL, struct tsr_cmd_matmul),
			huge(0, TSR_DTYPE_BF16), huge(1, TSR_DTYPE_BF16),
			huge(2, TSR_DTYPE_F32) };
		return sizeof(u->mm);
	case 2:
		u->mm = (struct tsr_cmd_matmul){
			HDR(TSR_OP_MATMUL, struct tsr_cmd_matmul),
			huge(0, TSR_DTYPE_I8), huge(1, TSR_DTYPE_I8),
			huge(2, TSR_DTYPE_I32) };
		return sizeof(u->mm);
	case 3:
		u->vpu = (struct tsr_cmd_vpu){
			HDR(TSR_OP_VPU, struct tsr_cmd_vpu), TSR_VPU_SELECT, 0,
			huge(0, TSR_DTYPE_F32), huge(1, TSR_DTYPE_F32),
			huge(2, TSR_DTYPE_F32), huge(3, TSR_DTYPE_F32) };
		return sizeof(u->vpu);
	case 4:
		u->reduce = (struct tsr_cmd_reduce){
			HDR(TSR_OP_REDUCE, struct tsr_cmd_reduce), TSR_REDUCE_MAX, 1,
			huge(0, TSR_DTYPE_F32),
			tensor(HUGE_VA + (1ull << 30), HUGE_N, 1, TSR_DTYPE_F32) };
		return sizeof(u->reduce);
	case 5:
		u->unary = (struct tsr_cmd_unary_copy){
			HDR(TSR_OP_CAST, struct tsr_cmd_unary_copy),
			huge(0, TSR_DTYPE_I32), huge(1, TSR_DTYPE_BF16) };
		return sizeof(u->unary);
	case 6:
		u->unary = (struct tsr_cmd_unary_copy){
			HDR(TSR_OP_TRANSPOSE, struct tsr_cmd_unary_copy),
			huge(0, TSR_DTYPE_F32), huge(1, TSR_DTYPE_F32) };
		return sizeof(u->unary);
	default:
		return 0;
	}
}

/* Whether the job has begun reading its operands. */
static bool under_way(struct test_chip *c, uint64_t dma_reads,
		      uint32_t hbm_read)
{
	return __atomic_load_n(&c->dma_reads, __ATOMIC_SEQ_CST) > dma_reads + 100 ||
	       rd(c, TSR_REG_CNT_HBM_READ_LO) != hbm_read;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static long max_rss_kib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

TEST_F(eng, the_largest_commands_stop_soon_after_a_reset_in_bounded_memory)
{
	uint64_t sysmem = chip_buffer(self->c, 1, 4096);
	struct runner r = { self->c, 0 };
	long rss = max_rss_kib();
	union huge_cmd cmd;
	uint32_t len;
	int which;

	chip_map_aliased(self->c, 1, HUGE_VA, 4ull << 30, 0);
	for (which = 0; (len = huge_cmd(which, sysmem, &cmd)); which++) {
		uint64_t dma_reads = self->c->dma_reads;
		uint32_t hbm_read = rd(self->c, TSR_REG_CNT_HBM_READ_LO);
		struct timespec tick = { 0, 100000 };
		struct tsr_completion *comp;
		double start, took;
		pthread_t t;

		comp = chip_queue_job(self->c, 0, 1, &cmd, len, which + 1);
		ASSERT_EQ(0, pthread_create(&t, NULL, run_queue, &r));
		while (!under_way(self->c, dma_reads, hbm_read))
			nanosleep(&tick, NULL);
		start = now_ms();
		qwr(self->c, 0, TSR_QREG_CONTROL,
		    TSR_QCTRL_RESET | TSR_QCTRL_ENABLE);
		ASSERT_EQ(0, pthread_join(t, NULL));
		took = now_ms() - start;
		self->c->tail[0] = 0;
		EXPECT_EQ(TSR_JOB_STATUS_RUNNING, comp->status)
			TH_LOG("command %d finished", which);
		/*
		 * Run to its end, such a command takes minutes; stopped, it
		 * takes milliseconds, but the bound leaves room for a host
		 * busy with make check's VMs (277 ms seen).
		 */
		EXPECT_GT(2000, took) TH_LOG("command %d stopped after %.0f ms",
					     which, took);
	}
	EXPECT_GT(64 << 10, max_rss_kib() - rss)
		TH_LOG("grew by %ld MiB", (max_rss_kib() - rss) >> 10);
}

TEST_HARNESS_MAIN
