// SPDX-License-Identifier: GPL-2.0
/*
 * libaccel's buffers, command buffers, submission and jobs against the
 * real driver and chip: every command checked against a CPU reference,
 * dependencies, sync files, waits and timeouts, device errors, misuse of
 * the builder, several threads at once.  Every test ends with all its
 * buffers, jobs and descriptors gone: the fixture checks the device file's
 * fdinfo and /proc/self/fd against what they were before the test.
 *
 * Expects the VM's chips to have debug-regs=on and the driver a short
 * job_timeout_ms (tests/run-checks boots it so).
 */
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "libaccel_util.h"

#include <accel/accel.h>
#include <drm/tessera_accel.h>
#include <tessera/chip.h>

/* Longest a test waits for a job: several job timeouts. */
#define WAIT_NS		(20ull * 1000 * 1000 * 1000)
/* How long a job that is blocked is watched to stay blocked. */
#define BLOCKED_NS	(100ull * 1000 * 1000)
#define KIB		1024u
#define MIB		(1024u * 1024u)

/* ------------------------------------------------------------ helpers */

/*
 * Double-precision references of the VPU's transcendental functions.
 * The VM tests link without libm; these are accurate to ~1e-14, far
 * below the single-precision tolerance they are compared with.
 */
static double ref_exp(double x)
{
	const double ln2 = 0.6931471805599453;
	double k = (double)(long)(x / ln2 + (x < 0 ? -0.5 : 0.5));
	double r = x - k * ln2, term = 1, sum = 1, scale = 1;
	int i;

	for (i = 1; i < 25; i++) {
		term *= r / i;
		sum += term;
	}
	for (i = 0; i < (k < 0 ? -k : k); i++)
		scale *= 2;
	return k < 0 ? sum / scale : sum * scale;
}

static double ref_log(double x)
{
	const double ln2 = 0.6931471805599453;
	double e = 0, s, s2, term, sum = 0;
	int i;

	while (x > 1.5) {
		x /= 2;
		e++;
	}
	while (x < 0.75) {
		x *= 2;
		e--;
	}
	s = (x - 1) / (x + 1);
	s2 = s * s;
	term = s;
	for (i = 1; i < 60; i += 2) {
		sum += term / i;
		term *= s2;
	}
	return e * ln2 + 2 * sum;
}

static double ref_sqrt(double x)
{
	double r = x > 1 ? x : 1;
	int i;

	for (i = 0; i < 60; i++)
		r = 0.5 * (r + x / r);
	return r;
}

static double ref_tanh(double x)
{
	double e = ref_exp(2 * x);

	return (e - 1) / (e + 1);
}

static double ref_unary(enum tsr_vpu_op op, double x)
{
	switch (op) {
	case TSR_VPU_NEG:
		return -x;
	case TSR_VPU_ABS:
		return x < 0 ? -x : x;
	case TSR_VPU_EXP:
		return ref_exp(x);
	case TSR_VPU_LOG:
		return ref_log(x);
	case TSR_VPU_TANH:
		return ref_tanh(x);
	case TSR_VPU_SIGMOID:
		return 1 / (1 + ref_exp(-x));
	case TSR_VPU_RELU:
		return x > 0 ? x : 0;
	case TSR_VPU_GELU:
		return 0.5 * x * (1 + ref_tanh(0.7978845608028654 *
					      (x + 0.044715 * x * x * x)));
	case TSR_VPU_SQRT:
		return ref_sqrt(x);
	default:
		return 1 / ref_sqrt(x);
	}
}

/* Binary ops, in single precision as the chip computes them. */
static float ref_binary(enum tsr_vpu_op op, float x, float y)
{
	switch (op) {
	case TSR_VPU_ADD:
		return x + y;
	case TSR_VPU_SUB:
		return x - y;
	case TSR_VPU_MUL:
		return x * y;
	case TSR_VPU_DIV:
		return x / y;
	case TSR_VPU_MAX:
		return x > y ? x : y;
	case TSR_VPU_MIN:
		return x < y ? x : y;
	case TSR_VPU_CMP_EQ:
		return x == y;
	case TSR_VPU_CMP_LT:
		return x < y;
	default:
		return x <= y;
	}
}

static bool close_to(double got, double want, double rel, double abs_tol)
{
	double d = got - want, m = want < 0 ? -want : want;

	return (d < 0 ? -d : d) <= rel * m + abs_tol;
}

/* ------------------------------------------------------------ fixture */

FIXTURE(lib) {
	struct accel_device *dev;
	struct accel_device_info info;
	struct accel_cmdbuf *cb;
	struct leak_snapshot before;
};

FIXTURE_SETUP(lib)
{
	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &self->dev));
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev, &self->info));
	leak_snapshot(self->dev, &self->before);
	ASSERT_LE(0, self->before.host);
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(self->dev, &self->cb));
}

/* Nothing a passing test made may outlive it. */
FIXTURE_TEARDOWN(lib)
{
	accel_cmdbuf_destroy(self->cb);
	leak_expect_none(_metadata, self->dev, &self->before);
	accel_device_close(self->dev);
}

#define NEW_BUFFER(var, size, placement) \
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, (size), (placement), &(var)))

/* Submit the fixture's command buffer on @queue, wait, reset it. */
static int run_on(FIXTURE_DATA(lib) *self, uint32_t queue,
		  struct accel_job_status *status)
{
	struct accel_submit_opts opts = { .queue = queue };
	struct accel_job *job;
	int ret;

	ret = accel_submit(self->dev, self->cb, &opts, &job);
	if (ret)
		return ret;
	ret = accel_job_wait(job, WAIT_NS);
	if (status)
		accel_job_status(job, status);
	accel_job_destroy(job);
	accel_cmdbuf_reset(self->cb);
	return ret;
}

#define EMIT(call) \
	ASSERT_EQ(ACCEL_OK, call) TH_LOG("%s", accel_cmdbuf_last_error(self->cb))

#define RUN_OK(queue) \
	ASSERT_EQ(ACCEL_OK, run_on(self, (queue), NULL))

/* Submit the fixture's command buffer; the job is left running. */
#define SUBMIT(job, ...) do { \
	struct accel_submit_opts _o = { __VA_ARGS__ }; \
	ASSERT_EQ(ACCEL_OK, accel_submit(self->dev, self->cb, &_o, &(job))) \
		TH_LOG("%s", accel_cmdbuf_last_error(self->cb)); \
	accel_cmdbuf_reset(self->cb); \
} while (0)

static void set_semaphore(struct accel_buffer *sem, uint64_t offset,
			  uint64_t value)
{
	void *map;

	if (accel_buffer_map(sem, &map) == ACCEL_OK)
		__atomic_store_n((uint64_t *)((uint8_t *)map + offset), value,
				 __ATOMIC_SEQ_CST);
}

/* ------------------------------------------------------------ buffers */

TEST_F(lib, buffers_are_zeroed_page_rounded_and_mapped_once)
{
	struct accel_buffer *host, *hbm;
	void *map, *again;
	uint8_t zero[4096] = { 0 };

	NEW_BUFFER(host, 100, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(hbm, 3 * 4096 + 1, ACCEL_PLACEMENT_HBM);
	EXPECT_EQ(4096, accel_buffer_size(host));
	EXPECT_EQ(4 * 4096, accel_buffer_size(hbm));
	EXPECT_EQ(ACCEL_PLACEMENT_HOST, accel_buffer_placement(host));
	EXPECT_EQ(ACCEL_PLACEMENT_HBM, accel_buffer_placement(hbm));
	EXPECT_LE(16ull * MIB, accel_buffer_device_va(host));
	EXPECT_EQ(0, accel_buffer_device_va(hbm) % 4096);
	EXPECT_NE(accel_buffer_device_va(host), accel_buffer_device_va(hbm));
	ASSERT_EQ(ACCEL_OK, accel_buffer_map(hbm, &map));
	ASSERT_EQ(ACCEL_OK, accel_buffer_map(hbm, &again));
	EXPECT_EQ(map, again);
	EXPECT_EQ(0, memcmp(map, zero, sizeof(zero)));
	accel_buffer_destroy(host);
	accel_buffer_destroy(hbm);
}

TEST_F(lib, bad_placements_and_sizes_are_refused)
{
	struct accel_buffer *buf = NULL;

	EXPECT_EQ(ACCEL_ERR_BAD_FLAGS, accel_buffer_create(self->dev, 4096, 2, &buf));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_buffer_create(self->dev, 0, ACCEL_PLACEMENT_HOST, &buf));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_buffer_create(self->dev, DRM_TESSERA_BO_MAX_SIZE + 1,
				      ACCEL_PLACEMENT_HOST, &buf));
	EXPECT_EQ(ACCEL_ERR_NO_MEMORY,
		  accel_buffer_create(self->dev, self->info.hbm_size * 2,
				      ACCEL_PLACEMENT_HBM, &buf));
	EXPECT_EQ(NULL, buf);
}

TEST_F(lib, upload_and_download_check_their_bounds)
{
	uint8_t in[64], out[64];
	struct accel_buffer *hbm;
	uint64_t size;
	unsigned int i;

	NEW_BUFFER(hbm, 8192, ACCEL_PLACEMENT_HBM);
	size = accel_buffer_size(hbm);
	for (i = 0; i < sizeof(in); i++)
		in[i] = i * 7 + 1;
	EXPECT_EQ(ACCEL_OK, accel_buffer_upload(hbm, size - 64, in, 64));
	EXPECT_EQ(ACCEL_OK, accel_buffer_download(hbm, size - 64, out, 64));
	EXPECT_EQ(0, memcmp(in, out, 64));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS, accel_buffer_upload(hbm, size - 63, in, 64));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS, accel_buffer_download(hbm, size + 1, out, 0));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS, accel_buffer_upload(hbm, UINT64_MAX, in, 2));
	EXPECT_EQ(ACCEL_OK, accel_buffer_upload(hbm, size, in, 0));
	accel_buffer_destroy(hbm);
}

TEST_F(lib, prime_shares_host_buffers_across_handles_and_chips)
{
	struct accel_buffer *buf, *hbm, *same, *theirs;
	struct accel_device *other;
	struct accel_cmdbuf *cb;
	struct accel_job *job;
	unsigned int count, chip;
	uint32_t word = 0;
	int fd;

	NEW_BUFFER(buf, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(hbm, 4096, ACCEL_PLACEMENT_HBM);
	EXPECT_EQ(ACCEL_ERR_NOT_SUPPORTED, accel_buffer_export(hbm, &fd));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_buffer_import(self->dev, 1000, &same));
	ASSERT_EQ(ACCEL_OK, accel_buffer_export(buf, &fd));
	/* Imported back: the same buffer, one more reference. */
	ASSERT_EQ(ACCEL_OK, accel_buffer_import(self->dev, fd, &same));
	EXPECT_EQ(buf, same);
	accel_buffer_destroy(same);

	/* Another context on each chip writes its own word of the buffer. */
	ASSERT_EQ(ACCEL_OK, accel_device_count(&count));
	for (chip = 0; chip < count && chip < 2; chip++) {
		ASSERT_EQ(ACCEL_OK, accel_device_open(chip, &other));
		ASSERT_EQ(ACCEL_OK, accel_buffer_import(other, fd, &theirs));
		EXPECT_EQ(4096, accel_buffer_size(theirs));
		ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(other, &cb));
		EMIT(accel_cmdbuf_fill(cb, theirs, 4 * chip, 0xc0de0000 + chip, 4));
		ASSERT_EQ(ACCEL_OK, accel_submit(other, cb, NULL, &job));
		EXPECT_EQ(ACCEL_OK, accel_job_wait(job, WAIT_NS));
		accel_job_destroy(job);
		accel_cmdbuf_destroy(cb);
		accel_buffer_destroy(theirs);
		accel_device_close(other);
		ASSERT_EQ(ACCEL_OK, accel_buffer_download(buf, 4 * chip, &word, 4));
		EXPECT_EQ(0xc0de0000 + chip, word);
	}
	close(fd);
	accel_buffer_destroy(buf);
	accel_buffer_destroy(hbm);
}

/* ------------------------------------------------------- DMA commands */

TEST_F(lib, dma_copy_and_fill_follow_3d_strides)
{
	enum { ROW = 37, ROWS = 6, PLANES = 4 };
	struct accel_region src = { .offset = 13, .row_stride = 50,
				    .plane_stride = 400 };
	struct accel_region mid = { .offset = 8, .row_stride = 40,
				    .plane_stride = 300 };
	struct accel_region out = { .offset = 0, .row_stride = ROW,
				    .plane_stride = ROW * ROWS };
	struct accel_region filled = { .offset = 4, .row_stride = 32,
				       .plane_stride = 128 };
	static uint8_t in[8192], got[8192], want[8192];
	struct accel_buffer *host, *hbm, *res;
	uint32_t seed = 1, p, r, c;

	NEW_BUFFER(host, 8192, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(hbm, 8192, ACCEL_PLACEMENT_HBM);
	NEW_BUFFER(res, 8192, ACCEL_PLACEMENT_HOST);
	for (c = 0; c < sizeof(in); c++)
		in[c] = rnd(&seed);
	ASSERT_EQ(ACCEL_OK, accel_buffer_upload(host, 0, in, sizeof(in)));
	src.buffer = host;
	mid.buffer = hbm;
	out.buffer = res;
	/* Host -> HBM with one set of strides, back with another. */
	EMIT(accel_cmdbuf_dma_copy(self->cb, &mid, &src, ROW, ROWS, PLANES));
	EMIT(accel_cmdbuf_dma_copy(self->cb, &out, &mid, ROW, ROWS, PLANES));
	RUN_OK(0);
	memset(want, 0, sizeof(want));
	for (p = 0; p < PLANES; p++)
		for (r = 0; r < ROWS; r++)
			memcpy(want + p * ROW * ROWS + r * ROW,
			       in + 13 + p * 400 + r * 50, ROW);
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(res, 0, got, sizeof(got)));
	EXPECT_EQ(0, memcmp(want, got, sizeof(got)));

	/* A fill in 3-D leaves the gaps alone. */
	filled.buffer = res;
	EMIT(accel_cmdbuf_dma_fill(self->cb, &filled, 0x11223344, 24, 3, 2));
	/* A source row stride of 0 repeats one row. */
	out.offset = 4096;
	out.row_stride = 64;
	EMIT(accel_cmdbuf_dma_copy(self->cb, &out, &(struct accel_region){
		.buffer = host, .offset = 13 }, 20, 4, 1));
	RUN_OK(1);
	for (p = 0; p < 2; p++)
		for (r = 0; r < 3; r++)
			for (c = 0; c < 24; c += 4)
				memcpy(want + 4 + p * 128 + r * 32 + c,
				       "\x44\x33\x22\x11", 4);
	for (r = 0; r < 4; r++)
		memcpy(want + 4096 + r * 64, in + 13, 20);
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(res, 0, got, sizeof(got)));
	EXPECT_EQ(0, memcmp(want, got, sizeof(got)));
	accel_buffer_destroy(host);
	accel_buffer_destroy(hbm);
	accel_buffer_destroy(res);
}

/* -------------------------------------------------------------- MATMUL */

struct mm_case {
	uint32_t flags;
	enum tsr_dtype in, out;
};

/* Random values that @t's dtype holds exactly, into @v and into @t. */
static int matmul_operand(const struct accel_tensor *t, float *v,
			  uint32_t *seed)
{
	static uint8_t raw[64 * KIB];
	uint32_t i, n = t->rows * t->cols;

	for (i = 0; i < n; i++) {
		float x = t->dtype == TSR_DTYPE_I8 ? (int8_t)rnd(seed) :
			  frand(seed, -1, 1);

		v[i] = t->dtype == TSR_DTYPE_BF16 ?
		       accel_bf16_to_f32(accel_f32_to_bf16(x)) : x;
		if (t->dtype == TSR_DTYPE_BF16)
			((uint16_t *)raw)[i] = accel_f32_to_bf16(v[i]);
		else if (t->dtype == TSR_DTYPE_I8)
			raw[i] = (int8_t)v[i];
	}
	return tensor_io(t, t->dtype == TSR_DTYPE_F32 ? (void *)v : raw, true);
}

/*
 * C (M x N) = op(A) x op(B) with K above one MXU tile, padded strides,
 * then again accumulating; checked against a double-precision product.
 */
static void matmul_case(struct __test_metadata *_metadata,
			FIXTURE_DATA(lib) *self, const struct mm_case *mc)
{
	enum { M = 37, K = 150, N = 45 };
	bool ta = mc->flags & TSR_MATMUL_TRANSPOSE_A;
	bool tb = mc->flags & TSR_MATMUL_TRANSPOSE_B;
	uint32_t ar = ta ? K : M, ac = ta ? M : K, br = tb ? N : K, bc = tb ? K : N;
	static float av[M * K], bv[K * N];
	static uint8_t raw[4 * M * N];
	static double ref[M * N], mag[M * N];
	struct accel_tensor a, b, c;
	struct accel_buffer *buf;
	uint32_t seed = 7 + mc->flags, i, j, k, pass;

	NEW_BUFFER(buf, 256 * KIB, ACCEL_PLACEMENT_HBM);
	a = tensor_at(buf, 0, ar, ac, ac + 3, mc->in);
	b = tensor_at(buf, 64 * KIB, br, bc, bc + 5, mc->in);
	c = tensor_at(buf, 128 * KIB, M, N, N + 2, mc->out);
	ASSERT_EQ(ACCEL_OK, matmul_operand(&a, av, &seed));
	ASSERT_EQ(ACCEL_OK, matmul_operand(&b, bv, &seed));
	for (i = 0; i < M; i++) {
		for (j = 0; j < N; j++) {
			ref[i * N + j] = mag[i * N + j] = 0;
			for (k = 0; k < K; k++) {
				double x = av[ta ? k * M + i : i * K + k];
				double y = bv[tb ? j * K + k : k * N + j];

				ref[i * N + j] += x * y;
				mag[i * N + j] += x * y < 0 ? -x * y : x * y;
			}
		}
	}

	for (pass = 1; pass <= 2; pass++) {
		uint32_t flags = mc->flags | (pass == 2 ? TSR_MATMUL_ACCUMULATE : 0);

		EMIT(accel_cmdbuf_matmul(self->cb, &a, &b, &c, flags));
		RUN_OK(pass);
		ASSERT_EQ(ACCEL_OK, tensor_io(&c, raw, false));
		for (i = 0; i < M * N; i++) {
			double want = pass * ref[i], got;

			if (mc->out == TSR_DTYPE_I32) {
				ASSERT_EQ((int32_t)want, ((int32_t *)raw)[i]);
				continue;
			}
			got = mc->out == TSR_DTYPE_BF16 ?
			      accel_bf16_to_f32(((uint16_t *)raw)[i]) :
			      ((float *)raw)[i];
			/* f32 accumulation; bf16 output rounds once more. */
			ASSERT_TRUE(close_to(got, want,
					     mc->out == TSR_DTYPE_BF16 ? 1.0 / 128 : 0,
					     1e-5 * pass * mag[i] + 1e-6))
				TH_LOG("flags 0x%x pass %u: c[%u] = %g, want %g",
				       mc->flags, pass, i, got, want);
		}
	}
	accel_buffer_destroy(buf);
}

TEST_F(lib, bf16_matmul_matches_the_cpu_in_every_orientation)
{
	static const uint32_t orientations[] = {
		0, TSR_MATMUL_TRANSPOSE_A, TSR_MATMUL_TRANSPOSE_B,
		TSR_MATMUL_TRANSPOSE_A | TSR_MATMUL_TRANSPOSE_B,
	};
	unsigned int i;

	for (i = 0; i < 4; i++) {
		struct mm_case mc = { orientations[i], TSR_DTYPE_BF16, TSR_DTYPE_F32 };

		matmul_case(_metadata, self, &mc);
	}
}

TEST_F(lib, matmul_writes_bf16_and_takes_f32_and_int8)
{
	static const struct mm_case cases[] = {
		{ 0, TSR_DTYPE_BF16, TSR_DTYPE_BF16 },
		{ TSR_MATMUL_TRANSPOSE_B, TSR_DTYPE_F32, TSR_DTYPE_F32 },
		{ TSR_MATMUL_TRANSPOSE_A, TSR_DTYPE_I8, TSR_DTYPE_I32 },
	};
	unsigned int i;

	for (i = 0; i < 3; i++)
		matmul_case(_metadata, self, &cases[i]);
}

/* ----------------------------------------------------------------- VPU */

#define VR 8
#define VC 40

TEST_F(lib, vpu_unary_ops_match_the_cpu)
{
	static float in[VR * VC], out[VR * VC];
	struct accel_tensor a, o;
	struct accel_buffer *buf;
	uint32_t seed = 3, i;
	enum tsr_vpu_op op;

	NEW_BUFFER(buf, 64 * KIB, ACCEL_PLACEMENT_HOST);
	a = tensor_at(buf, 0, VR, VC, VC + 8, TSR_DTYPE_F32);
	o = tensor_at(buf, 32 * KIB, VR, VC, 0, TSR_DTYPE_F32);
	for (op = TSR_VPU_NEG; op <= TSR_VPU_RSQRT; op++) {
		bool positive = op == TSR_VPU_LOG || op == TSR_VPU_SQRT ||
				op == TSR_VPU_RSQRT;

		for (i = 0; i < VR * VC; i++)
			in[i] = positive ? frand(&seed, 0.05f, 5) : frand(&seed, -4, 4);
		ASSERT_EQ(ACCEL_OK, tensor_io(&a, in, true));
		EMIT(accel_cmdbuf_vpu(self->cb, op, &a, NULL, NULL, &o));
		RUN_OK(op % 4);
		ASSERT_EQ(ACCEL_OK, tensor_io(&o, out, false));
		for (i = 0; i < VR * VC; i++) {
			ASSERT_TRUE(close_to(out[i], ref_unary(op, in[i]), 1e-5, 1e-6))
				TH_LOG("op %u (%g) = %g, want %.9g", op, in[i],
				       out[i], ref_unary(op, in[i]));
		}
	}
	accel_buffer_destroy(buf);
}

TEST_F(lib, vpu_reads_and_writes_bf16)
{
	static float in[VR * VC];
	static uint16_t raw[VR * VC], got[VR * VC];
	struct accel_tensor a, o;
	struct accel_buffer *buf;
	uint32_t seed = 5, i;

	NEW_BUFFER(buf, 64 * KIB, ACCEL_PLACEMENT_HBM);
	a = tensor_at(buf, 0, VR, VC, 0, TSR_DTYPE_BF16);
	o = tensor_at(buf, 32 * KIB, VR, VC, 0, TSR_DTYPE_BF16);
	for (i = 0; i < VR * VC; i++)
		in[i] = frand(&seed, -3, 3);
	to_bf16(in, raw, VR * VC);
	ASSERT_EQ(ACCEL_OK, tensor_io(&a, raw, true));
	EMIT(accel_cmdbuf_vpu(self->cb, TSR_VPU_RELU, &a, NULL, NULL, &o));
	RUN_OK(0);
	ASSERT_EQ(ACCEL_OK, tensor_io(&o, got, false));
	for (i = 0; i < VR * VC; i++) {
		ASSERT_EQ(raw[i] & 0x8000 ? 0 : raw[i], got[i]);
	}
	EMIT(accel_cmdbuf_vpu(self->cb, TSR_VPU_EXP, &a, NULL, NULL, &o));
	RUN_OK(0);
	ASSERT_EQ(ACCEL_OK, tensor_io(&o, got, false));
	for (i = 0; i < VR * VC; i++) {
		double want = ref_exp(accel_bf16_to_f32(raw[i]));

		ASSERT_TRUE(close_to(accel_bf16_to_f32(got[i]), want, 1.0 / 128, 0))
			TH_LOG("exp(%g) = %g", accel_bf16_to_f32(raw[i]),
			       accel_bf16_to_f32(got[i]));
	}
	accel_buffer_destroy(buf);
}

TEST_F(lib, vpu_binary_ops_broadcast_rows_and_columns)
{
	static float x[VR * VC], y[VR * VC], out[VR * VC];
	struct accel_tensor a, full, row, col, o;
	struct accel_buffer *buf;
	uint32_t seed = 9, i, shape;
	enum tsr_vpu_op op;

	NEW_BUFFER(buf, 64 * KIB, ACCEL_PLACEMENT_HOST);
	a = tensor_at(buf, 0, VR, VC, 0, TSR_DTYPE_F32);
	full = tensor_at(buf, 8 * KIB, VR, VC, 0, TSR_DTYPE_F32);
	row = tensor_at(buf, 8 * KIB, 1, VC, 0, TSR_DTYPE_F32);
	col = tensor_at(buf, 8 * KIB, VR, 1, VC, TSR_DTYPE_F32);
	o = tensor_at(buf, 16 * KIB, VR, VC, 0, TSR_DTYPE_F32);
	for (i = 0; i < VR * VC; i++) {
		x[i] = frand(&seed, -2, 2);
		/* Every fourth element equal, for the compares. */
		y[i] = i % 4 ? frand(&seed, -2, 2) : x[i];
	}
	ASSERT_EQ(ACCEL_OK, tensor_io(&a, x, true));
	ASSERT_EQ(ACCEL_OK, tensor_io(&full, y, true));
	for (op = TSR_VPU_ADD; op <= TSR_VPU_CMP_LE; op++) {
		for (shape = 0; shape < 3; shape++) {
			const struct accel_tensor *b = shape == 0 ? &full :
						       shape == 1 ? &row : &col;

			EMIT(accel_cmdbuf_vpu(self->cb, op, &a, b, NULL, &o));
			RUN_OK(shape);
			ASSERT_EQ(ACCEL_OK, tensor_io(&o, out, false));
			for (i = 0; i < VR * VC; i++) {
				uint32_t r = i / VC, c = i % VC;
				/* b as the chip reads it: dense, row or column. */
				float yb = shape == 0 ? y[i] :
					   shape == 1 ? y[c] : y[r * VC];

				ASSERT_EQ(ref_binary(op, x[i], yb), out[i])
					TH_LOG("op %u shape %u [%u]", op, shape, i);
			}
		}
	}
	accel_buffer_destroy(buf);
}

TEST_F(lib, vpu_select_mixes_types_and_broadcasts)
{
	static float mask[VR * VC], onrow[VC], oncol[VR], out[VR * VC];
	static uint16_t onrow_bf[VC];
	struct accel_tensor a, b, c, o;
	struct accel_buffer *buf;
	uint32_t seed = 11, i;

	NEW_BUFFER(buf, 64 * KIB, ACCEL_PLACEMENT_HOST);
	a = tensor_at(buf, 0, VR, VC, 0, TSR_DTYPE_F32);
	b = tensor_at(buf, 8 * KIB, 1, VC, 0, TSR_DTYPE_BF16);
	c = tensor_at(buf, 12 * KIB, VR, 1, 0, TSR_DTYPE_F32);
	o = tensor_at(buf, 16 * KIB, VR, VC, 0, TSR_DTYPE_F32);
	for (i = 0; i < VR * VC; i++)
		mask[i] = rnd(&seed) % 3 ? 0.0f : frand(&seed, -1, 1);
	for (i = 0; i < VC; i++)
		onrow[i] = frand(&seed, -9, 9);
	for (i = 0; i < VR; i++)
		oncol[i] = frand(&seed, -9, 9);
	to_bf16(onrow, onrow_bf, VC);
	ASSERT_EQ(ACCEL_OK, tensor_io(&a, mask, true));
	ASSERT_EQ(ACCEL_OK, tensor_io(&b, onrow_bf, true));
	ASSERT_EQ(ACCEL_OK, tensor_io(&c, oncol, true));
	EMIT(accel_cmdbuf_vpu(self->cb, TSR_VPU_SELECT, &a, &b, &c, &o));
	RUN_OK(2);
	ASSERT_EQ(ACCEL_OK, tensor_io(&o, out, false));
	for (i = 0; i < VR * VC; i++) {
		ASSERT_EQ(mask[i] != 0 ? accel_bf16_to_f32(onrow_bf[i % VC]) :
			  oncol[i / VC], out[i]);
	}
	accel_buffer_destroy(buf);
}

/* ---------------------------------------------- REDUCE, CAST, TRANSPOSE */

TEST_F(lib, reduce_sums_in_index_order_and_finds_extremes)
{
	enum { R = 13, C = 70 };
	static float in[R * C], got[C];
	static uint16_t got_bf[R];
	struct accel_tensor t, cols, rows, rows_bf;
	struct accel_buffer *buf;
	uint32_t seed = 13, i, r, c;
	enum tsr_reduce_op op;

	NEW_BUFFER(buf, 64 * KIB, ACCEL_PLACEMENT_HBM);
	t = tensor_at(buf, 0, R, C, C + 2, TSR_DTYPE_F32);
	cols = tensor_at(buf, 16 * KIB, 1, C, 0, TSR_DTYPE_F32);
	rows = tensor_at(buf, 20 * KIB, R, 1, 0, TSR_DTYPE_F32);
	rows_bf = tensor_at(buf, 24 * KIB, R, 1, 0, TSR_DTYPE_BF16);
	for (i = 0; i < R * C; i++)
		in[i] = frand(&seed, -100, 100);
	ASSERT_EQ(ACCEL_OK, tensor_io(&t, in, true));
	for (op = TSR_REDUCE_SUM; op <= TSR_REDUCE_MIN; op++) {
		EMIT(accel_cmdbuf_reduce(self->cb, op, 0, &t, &cols));
		EMIT(accel_cmdbuf_reduce(self->cb, op, 1, &t, &rows));
		EMIT(accel_cmdbuf_reduce(self->cb, op, 1, &t, &rows_bf));
		RUN_OK(op % 4);
		ASSERT_EQ(ACCEL_OK, tensor_io(&cols, got, false));
		for (c = 0; c < C; c++) {
			float acc = in[c];

			for (r = 1; r < R; r++)
				acc = op == TSR_REDUCE_SUM ? acc + in[r * C + c] :
				      ref_binary(op == TSR_REDUCE_MAX ? TSR_VPU_MAX :
						 TSR_VPU_MIN, acc, in[r * C + c]);
			ASSERT_EQ(acc, got[c]) TH_LOG("op %u column %u", op, c);
		}
		ASSERT_EQ(ACCEL_OK, tensor_io(&rows, got, false));
		ASSERT_EQ(ACCEL_OK, tensor_io(&rows_bf, got_bf, false));
		for (r = 0; r < R; r++) {
			float acc = in[r * C];

			for (c = 1; c < C; c++)
				acc = op == TSR_REDUCE_SUM ? acc + in[r * C + c] :
				      ref_binary(op == TSR_REDUCE_MAX ? TSR_VPU_MAX :
						 TSR_VPU_MIN, acc, in[r * C + c]);
			ASSERT_EQ(acc, got[r]) TH_LOG("op %u row %u", op, r);
			ASSERT_EQ(accel_f32_to_bf16(acc), got_bf[r]);
		}
	}
	accel_buffer_destroy(buf);
}

TEST_F(lib, casts_round_and_saturate_as_documented)
{
	static const float f[] = {
		2.5f, 3.5f, -2.5f, -0.4f, 0.5f, 1.5f, 123456.7f, 1e10f, -1e10f,
		2147483520.0f, -2147483648.0f, __builtin_nanf(""), 1.00390625f,
		-0.0f, 3.0e38f, 1.0e-40f,
	};
	static const int32_t to_i32[] = {
		2, 4, -2, 0, 0, 2, 123457, INT32_MAX, INT32_MIN,
		2147483520, INT32_MIN, 0, 1, 0, INT32_MAX, 0,
	};
	static const int32_t ints[] = {
		0, 1, -1, 16777217, -16777217, INT32_MAX, INT32_MIN, 12345,
		255, 257, 65535, -65537, 1000000007, 3, -3, 7,
	};
	enum { N = ARRAY_SIZE(f) };
	struct accel_tensor tf, ti, tb, tf2, ti_in, tb_from_i;
	int32_t gi[N];
	uint16_t gb[N], gb2[N];
	float gf[N];
	struct accel_buffer *buf;
	unsigned int i;

	NEW_BUFFER(buf, 4096, ACCEL_PLACEMENT_HOST);
	tf = tensor_at(buf, 0, 2, N / 2, 0, TSR_DTYPE_F32);
	ti = tensor_at(buf, 256, 2, N / 2, 0, TSR_DTYPE_I32);
	tb = tensor_at(buf, 512, 2, N / 2, 0, TSR_DTYPE_BF16);
	tf2 = tensor_at(buf, 768, 2, N / 2, 0, TSR_DTYPE_F32);
	ti_in = tensor_at(buf, 1024, 2, N / 2, 0, TSR_DTYPE_I32);
	tb_from_i = tensor_at(buf, 1280, 2, N / 2, 0, TSR_DTYPE_BF16);
	ASSERT_EQ(ACCEL_OK, tensor_io(&tf, (void *)f, true));
	ASSERT_EQ(ACCEL_OK, tensor_io(&ti_in, (void *)ints, true));
	EMIT(accel_cmdbuf_cast(self->cb, &tf, &ti));
	EMIT(accel_cmdbuf_cast(self->cb, &tf, &tb));
	EMIT(accel_cmdbuf_cast(self->cb, &tb, &tf2));
	EMIT(accel_cmdbuf_cast(self->cb, &ti_in, &tb_from_i));
	RUN_OK(3);
	ASSERT_EQ(ACCEL_OK, tensor_io(&ti, gi, false));
	ASSERT_EQ(ACCEL_OK, tensor_io(&tb, gb, false));
	ASSERT_EQ(ACCEL_OK, tensor_io(&tf2, gf, false));
	ASSERT_EQ(ACCEL_OK, tensor_io(&tb_from_i, gb2, false));
	for (i = 0; i < N; i++) {
		EXPECT_EQ(to_i32[i], gi[i]) TH_LOG("(i32)%g", f[i]);
		EXPECT_EQ(accel_f32_to_bf16(f[i]), gb[i]) TH_LOG("(bf16)%g", f[i]);
		EXPECT_EQ(0, memcmp(&gf[i], &(float){ accel_bf16_to_f32(gb[i]) }, 4));
		EXPECT_EQ(accel_f32_to_bf16((float)ints[i]), gb2[i])
			TH_LOG("(bf16)%d", ints[i]);
	}
	/* i32 -> f32 rounds once. */
	EMIT(accel_cmdbuf_cast(self->cb, &ti_in, &tf2));
	RUN_OK(0);
	ASSERT_EQ(ACCEL_OK, tensor_io(&tf2, gf, false));
	for (i = 0; i < N; i++) {
		EXPECT_EQ((float)ints[i], gf[i]);
	}
	accel_buffer_destroy(buf);
}

TEST_F(lib, transpose_moves_every_dtype)
{
	static const enum tsr_dtype dtypes[] = {
		TSR_DTYPE_F32, TSR_DTYPE_BF16, TSR_DTYPE_I32, TSR_DTYPE_I8,
	};
	enum { R = 7, C = 13 };
	static uint8_t in[R * C * 4], got[R * C * 4];
	struct accel_buffer *buf;
	uint32_t seed = 17, i, r, c;

	NEW_BUFFER(buf, 16 * KIB, ACCEL_PLACEMENT_HBM);
	for (i = 0; i < 4; i++) {
		struct accel_tensor t = tensor_at(buf, 0, R, C, 16, dtypes[i]);
		struct accel_tensor u = tensor_at(buf, 8 * KIB, C, R, 9, dtypes[i]);
		unsigned int e = accel_dtype_size(dtypes[i]);

		for (r = 0; r < sizeof(in); r++)
			in[r] = rnd(&seed);
		ASSERT_EQ(ACCEL_OK, tensor_io(&t, in, true));
		EMIT(accel_cmdbuf_transpose(self->cb, &t, &u));
		RUN_OK(i);
		ASSERT_EQ(ACCEL_OK, tensor_io(&u, got, false));
		for (r = 0; r < R; r++) {
			for (c = 0; c < C; c++) {
				ASSERT_EQ(0, memcmp(in + (r * C + c) * e,
						    got + (c * R + r) * e, e))
					TH_LOG("%s [%u][%u]",
					       accel_dtype_name(dtypes[i]), r, c);
			}
		}
	}
	accel_buffer_destroy(buf);
}

/* ------------------------------------ semaphores, timestamps, interrupt */

TEST_F(lib, semaphores_synchronise_two_queues)
{
	struct accel_buffer *sem, *data;
	struct accel_job *waiter, *signaller, *incs[8];
	uint64_t value = 0;
	uint32_t words[2] = { 0 };
	unsigned int i;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(data, 4096, ACCEL_PLACEMENT_HBM);
	/*
	 * Queue 0 waits for queue 1's signal.  Both write the data buffer:
	 * without ACCEL_USE_EXPLICIT, the signaller would wait for the
	 * waiter to end, and neither would.
	 */
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 5));
	EMIT(accel_cmdbuf_fill(self->cb, data, 0, 0xaaaa, 4));
	EMIT(accel_cmdbuf_use_buffer(self->cb, data, ACCEL_USE_EXPLICIT));
	SUBMIT(waiter, .queue = 0);
	EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(waiter, BLOCKED_NS));
	EMIT(accel_cmdbuf_fill(self->cb, data, 4, 0xbbbb, 4));
	EMIT(accel_cmdbuf_sem_signal(self->cb, sem, 0, 5));
	EMIT(accel_cmdbuf_use_buffer(self->cb, data, ACCEL_USE_EXPLICIT));
	SUBMIT(signaller, .queue = 1);
	EXPECT_EQ(ACCEL_OK, accel_job_wait(waiter, WAIT_NS));
	EXPECT_EQ(ACCEL_OK, accel_job_wait(signaller, WAIT_NS));
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(data, 0, words, 8));
	EXPECT_EQ(0xaaaa, words[0]);
	EXPECT_EQ(0xbbbb, words[1]);
	/* Increments from every queue add up. */
	for (i = 0; i < 8; i++) {
		EMIT(accel_cmdbuf_sem_inc(self->cb, sem, 0, i + 1));
		SUBMIT(incs[i], .queue = i % self->info.num_queues);
	}
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(ACCEL_OK, accel_job_wait(incs[i], WAIT_NS));
		accel_job_destroy(incs[i]);
	}
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(sem, 0, &value, 8));
	EXPECT_EQ(5 + 36, value);
	accel_job_destroy(waiter);
	accel_job_destroy(signaller);
	accel_buffer_destroy(sem);
	accel_buffer_destroy(data);
}

TEST_F(lib, timestamps_increase_within_and_across_jobs)
{
	struct accel_job_status st[2];
	struct accel_buffer *ts, *big;
	uint64_t t[6];
	unsigned int j;

	NEW_BUFFER(ts, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(big, 1 * MIB, ACCEL_PLACEMENT_HBM);
	for (j = 0; j < 2; j++) {
		EMIT(accel_cmdbuf_timestamp(self->cb, ts, 24 * j));
		EMIT(accel_cmdbuf_fill(self->cb, big, 0, j, 1 * MIB));
		EMIT(accel_cmdbuf_timestamp(self->cb, ts, 24 * j + 8));
		EMIT(accel_cmdbuf_nop(self->cb));
		EMIT(accel_cmdbuf_timestamp(self->cb, ts, 24 * j + 16));
		ASSERT_EQ(ACCEL_OK, run_on(self, 2, &st[j]));
	}
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(ts, 0, t, sizeof(t)));
	for (j = 0; j < 2; j++) {
		EXPECT_LE(st[j].start_cycle, t[3 * j]);
		EXPECT_LT(t[3 * j], t[3 * j + 1]);
		EXPECT_LT(t[3 * j + 1], t[3 * j + 2]);
		EXPECT_LE(t[3 * j + 2], st[j].end_cycle);
		EXPECT_LT(0, st[j].dma_cycles);
	}
	/* The same queue's clock goes on from one job to the next. */
	EXPECT_LE(t[2], t[3]);
	accel_buffer_destroy(ts);
	accel_buffer_destroy(big);
}

TEST_F(lib, nop_and_interrupt_complete_cleanly)
{
	struct accel_job_status st;

	EMIT(accel_cmdbuf_nop(self->cb));
	EMIT(accel_cmdbuf_interrupt(self->cb));
	ASSERT_EQ(ACCEL_OK, run_on(self, 1, &st));
	EXPECT_EQ(ACCEL_JOB_DONE, st.state);
	EXPECT_EQ(ACCEL_OK, st.result);
	EXPECT_EQ(0, st.fence_error);
	EXPECT_EQ(TSR_ERR_NONE, st.chip_error);
	EXPECT_STREQ("NONE", st.chip_error_name);
	EXPECT_EQ(1, st.queue);
	EXPECT_LT(st.start_cycle, st.end_cycle);
	EXPECT_EQ(0, st.mxu_cycles);
}

/* ---------------------------------------------------- dependencies */

TEST_F(lib, a_job_waits_for_the_jobs_it_depends_on)
{
	struct accel_job *first, *second;
	struct accel_job_status st;
	struct accel_buffer *sem;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 1));
	SUBMIT(first, .queue = 0);
	/* The second job shares no buffer with the first: only the dependency orders them. */
	EMIT(accel_cmdbuf_nop(self->cb));
	SUBMIT(second, .queue = 1, .wait_jobs = &first, .wait_job_count = 1);
	EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(second, BLOCKED_NS));
	ASSERT_EQ(ACCEL_OK, accel_job_status(second, &st));
	EXPECT_EQ(ACCEL_JOB_PENDING, st.state);
	set_semaphore(sem, 0, 1);
	EXPECT_EQ(ACCEL_OK, accel_job_wait(second, WAIT_NS));
	EXPECT_EQ(ACCEL_OK, accel_job_wait(first, 0));
	accel_job_destroy(first);
	accel_job_destroy(second);
	accel_buffer_destroy(sem);
}

TEST_F(lib, sync_files_carry_dependencies)
{
	struct accel_job *first, *second;
	struct accel_buffer *sem;
	struct pollfd p = { .events = POLLIN };
	int fd;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 1));
	SUBMIT(first, .queue = 2);
	ASSERT_EQ(ACCEL_OK, accel_job_export_sync_file(first, &fd));
	p.fd = fd;
	EXPECT_EQ(0, poll(&p, 1, 0));
	EMIT(accel_cmdbuf_nop(self->cb));
	SUBMIT(second, .queue = 3, .wait_sync_files = &fd,
	       .wait_sync_file_count = 1);
	EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(second, BLOCKED_NS));
	set_semaphore(sem, 0, 1);
	EXPECT_EQ(ACCEL_OK, accel_job_wait(second, WAIT_NS));
	EXPECT_EQ(1, poll(&p, 1, 0));
	close(fd);
	accel_job_destroy(first);
	accel_job_destroy(second);
	accel_buffer_destroy(sem);
}

TEST_F(lib, a_job_of_another_chip_is_a_dependency_too)
{
	struct accel_job *first, *second;
	struct accel_cmdbuf *cb;
	struct accel_device *chip1;
	struct accel_buffer *sem;
	struct accel_submit_opts opts = { .wait_job_count = 1 };
	unsigned int count;

	ASSERT_EQ(ACCEL_OK, accel_device_count(&count));
	if (count < 2)
		SKIP(return, "needs two chips");
	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 1));
	SUBMIT(first, .queue = 0);
	ASSERT_EQ(ACCEL_OK, accel_device_open(1, &chip1));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(chip1, &cb));
	EMIT(accel_cmdbuf_nop(cb));
	opts.wait_jobs = &first;
	ASSERT_EQ(ACCEL_OK, accel_submit(chip1, cb, &opts, &second));
	EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(second, BLOCKED_NS));
	set_semaphore(sem, 0, 1);
	EXPECT_EQ(ACCEL_OK, accel_job_wait(second, WAIT_NS));
	accel_job_destroy(second);
	accel_cmdbuf_destroy(cb);
	accel_device_close(chip1);
	accel_job_destroy(first);
	accel_buffer_destroy(sem);
}

TEST_F(lib, jobs_sharing_a_buffer_are_ordered_by_their_use_of_it)
{
	struct accel_buffer *sem, *x, *y;
	struct accel_job *writer, *reader;
	uint32_t got = 0;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(x, 4096, ACCEL_PLACEMENT_HBM);
	NEW_BUFFER(y, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 1));
	EMIT(accel_cmdbuf_fill(self->cb, x, 0, 0x5a5a5a5a, 64));
	SUBMIT(writer, .queue = 0);
	/* No dependency given: the reader of x waits for its writer. */
	EMIT(accel_cmdbuf_copy(self->cb, y, 0, x, 0, 64));
	SUBMIT(reader, .queue = 1);
	EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(reader, BLOCKED_NS));
	set_semaphore(sem, 0, 1);
	EXPECT_EQ(ACCEL_OK, accel_job_wait(reader, WAIT_NS));
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(y, 60, &got, 4));
	EXPECT_EQ(0x5a5a5a5a, got);
	accel_job_destroy(writer);
	accel_job_destroy(reader);
	accel_buffer_destroy(sem);
	accel_buffer_destroy(x);
	accel_buffer_destroy(y);
}

TEST_F(lib, a_command_buffer_changes_freely_while_its_jobs_run)
{
	struct accel_buffer *sem, *x, *y;
	struct accel_job *blocked, *again[2], *changed;
	uint32_t words[4] = { 0 };
	unsigned int i;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(x, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(y, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 1));
	EMIT(accel_cmdbuf_fill(self->cb, x, 0, 1, 4));
	ASSERT_EQ(ACCEL_OK, accel_submit(self->dev, self->cb, NULL, &blocked));
	/* Unchanged, it runs again as often as wanted. */
	for (i = 0; i < 2; i++) {
		struct accel_submit_opts o = { .queue = 1 + i };

		ASSERT_EQ(ACCEL_OK, accel_submit(self->dev, self->cb, &o, &again[i]));
	}
	/*
	 * Changed at once (into a job that shares no buffer with them): the
	 * queued jobs keep the commands they were given.
	 */
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_reset(self->cb));
	EMIT(accel_cmdbuf_fill(self->cb, y, 8, 2, 4));
	SUBMIT(changed, .queue = 3);
	EXPECT_EQ(ACCEL_OK, accel_job_wait(changed, WAIT_NS));
	EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(blocked, 0));
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(y, 0, words, sizeof(words)));
	EXPECT_EQ(0, words[0]);
	EXPECT_EQ(2, words[2]);
	set_semaphore(sem, 0, 1);
	EXPECT_EQ(ACCEL_OK, accel_job_wait(blocked, WAIT_NS));
	for (i = 0; i < 2; i++) {
		EXPECT_EQ(ACCEL_OK, accel_job_wait(again[i], WAIT_NS));
		accel_job_destroy(again[i]);
	}
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(x, 0, words, sizeof(words)));
	EXPECT_EQ(1, words[0]);
	EXPECT_EQ(0, words[2]);
	accel_job_destroy(blocked);
	accel_job_destroy(changed);
	accel_buffer_destroy(sem);
	accel_buffer_destroy(x);
	accel_buffer_destroy(y);
}

/*
 * A command buffer's device copy outlives the command buffer while a job
 * runs from it: another command buffer is not given that copy until the
 * job is done, and then it may be.
 */
TEST_F(lib, a_gone_command_buffers_copy_is_not_reused_while_its_job_runs)
{
	struct accel_buffer *sem, *x, *y;
	struct accel_cmdbuf *gone;
	struct accel_job *blocked, *other;
	uint32_t words[4] = { 0 };
	unsigned int round;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(x, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(y, 4096, ACCEL_PLACEMENT_HOST);
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(self->dev, &gone));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sem_wait(gone, sem, 0, 1));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_fill(gone, x, 0, 1, 4));
	ASSERT_EQ(ACCEL_OK, accel_submit(self->dev, gone, NULL, &blocked));
	accel_cmdbuf_destroy(gone);
	/* Commands of the same size, which would fit its copy. */
	for (round = 0; round < 2; round++) {
		EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 8, 0));
		EMIT(accel_cmdbuf_fill(self->cb, y, 8, 2 + round, 4));
		SUBMIT(other, .queue = 1);
		EXPECT_EQ(ACCEL_OK, accel_job_wait(other, WAIT_NS));
		accel_job_destroy(other);
		ASSERT_EQ(ACCEL_OK, accel_buffer_download(y, 0, words, sizeof(words)));
		EXPECT_EQ(2 + round, words[2]);
		if (round)
			break;
		/* The job that runs from the gone copy still has its commands. */
		EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(blocked, 0));
		set_semaphore(sem, 0, 1);
		EXPECT_EQ(ACCEL_OK, accel_job_wait(blocked, WAIT_NS));
		ASSERT_EQ(ACCEL_OK, accel_buffer_download(x, 0, words, sizeof(words)));
		EXPECT_EQ(1, words[0]);
		EXPECT_EQ(0, words[2]);
	}
	accel_job_destroy(blocked);
	accel_buffer_destroy(sem);
	accel_buffer_destroy(x);
	accel_buffer_destroy(y);
}

/*
 * More jobs waiting at once than the device's command arena (2 MiB) has
 * room for, each from commands changed since the last (8 KiB of them):
 * every job runs its own commands, whether its copy is a piece of the
 * arena or, once the arena is full of copies that waiting jobs still
 * read, a buffer of its own; and once they have ended the arena's pieces
 * serve new jobs again.
 */
#define ARENA_JOBS	400
#define ARENA_NOPS	1000

TEST_F(lib, jobs_waiting_beyond_the_command_arena_each_run_their_own_commands)
{
	struct accel_job *blocked, *jobs[ARENA_JOBS];
	struct accel_buffer *sem, *y;
	uint32_t *words;
	unsigned int i, round;

	words = calloc(ARENA_JOBS, sizeof(*words));
	ASSERT_NE(NULL, words);
	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(y, ARENA_JOBS * 4, ACCEL_PLACEMENT_HOST);
	for (round = 0; round < 2; round++) {
		EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, round + 1));
		SUBMIT(blocked, .queue = 1);
		for (i = 0; i < ARENA_JOBS; i++) {
			unsigned int k;

			for (k = 0; k < ARENA_NOPS; k++)
				EMIT(accel_cmdbuf_nop(self->cb));
			EMIT(accel_cmdbuf_fill(self->cb, y, 4 * i,
					       round * ARENA_JOBS + i + 1, 4));
			SUBMIT(jobs[i], .queue = 1);
		}
		EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(jobs[0], 0));
		set_semaphore(sem, 0, round + 1);
		EXPECT_EQ(ACCEL_OK, accel_job_wait(blocked, WAIT_NS));
		accel_job_destroy(blocked);
		for (i = 0; i < ARENA_JOBS; i++) {
			EXPECT_EQ(ACCEL_OK, accel_job_wait(jobs[i], WAIT_NS));
			accel_job_destroy(jobs[i]);
		}
		ASSERT_EQ(ACCEL_OK, accel_buffer_download(y, 0, words,
							  ARENA_JOBS * 4));
		for (i = 0; i < ARENA_JOBS; i++)
			if (words[i] != round * ARENA_JOBS + i + 1)
				break;
		EXPECT_EQ(ARENA_JOBS, i)
			TH_LOG("round %u: job %u wrote %u", round, i,
			       i < ARENA_JOBS ? words[i] : 0);
	}
	free(words);
	accel_buffer_destroy(sem);
	accel_buffer_destroy(y);
}

TEST_F(lib, a_wait_times_out_and_the_job_goes_on)
{
	struct accel_job_status st;
	struct accel_buffer *sem;
	struct accel_job *job;
	uint64_t start;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 1));
	SUBMIT(job, .queue = 1);
	EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(job, 0));
	start = now_ns();
	EXPECT_EQ(ACCEL_ERR_TIMEOUT, accel_job_wait(job, 50 * 1000 * 1000));
	EXPECT_LE(start + 50 * 1000 * 1000, now_ns());
	ASSERT_EQ(ACCEL_OK, accel_job_status(job, &st));
	EXPECT_EQ(ACCEL_JOB_PENDING, st.state);
	set_semaphore(sem, 0, 1);
	EXPECT_EQ(ACCEL_OK, accel_job_wait(job, ACCEL_TIMEOUT_INFINITE));
	ASSERT_EQ(ACCEL_OK, accel_job_status(job, &st));
	EXPECT_EQ(ACCEL_JOB_DONE, st.state);
	accel_job_destroy(job);
	accel_buffer_destroy(sem);
}

TEST_F(lib, a_job_handle_may_go_before_its_job_ends)
{
	struct accel_buffer *sem, *x;
	struct accel_job *job;
	uint32_t word = 0;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	NEW_BUFFER(x, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 1));
	EMIT(accel_cmdbuf_fill(self->cb, x, 0, 77, 4));
	SUBMIT(job, .queue = 0);
	accel_job_destroy(job);
	set_semaphore(sem, 0, 1);
	/* The next job of the queue runs after it. */
	EMIT(accel_cmdbuf_nop(self->cb));
	RUN_OK(0);
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(x, 0, &word, 4));
	EXPECT_EQ(77, word);
	accel_buffer_destroy(sem);
	accel_buffer_destroy(x);
}

/* ---------------------------------------------------------- misuse */

TEST_F(lib, submission_checks_its_arguments)
{
	struct accel_submit_opts opts = { 0 };
	struct accel_job *deps[ACCEL_MAX_DEPENDENCIES + 1] = { NULL };
	struct accel_cmdbuf *orphan;
	struct accel_device *other;
	struct accel_job *job = NULL;
	char want[64];

	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_submit(self->dev, self->cb, NULL, &job));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb), "empty"));
	EMIT(accel_cmdbuf_nop(self->cb));
	opts.queue = self->info.num_queues;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_submit(self->dev, self->cb, &opts, &job));
	snprintf(want, sizeof(want), "queue %u; the chip has %u queues",
		 self->info.num_queues, self->info.num_queues);
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb), want));
	opts.queue = 0;
	opts.priority = 7;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_submit(self->dev, self->cb, &opts, &job));
	opts.priority = ACCEL_PRIORITY_LOW;
	opts.wait_job_count = 1;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_submit(self->dev, self->cb, &opts, &job));
	opts.wait_jobs = deps;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_submit(self->dev, self->cb, &opts, &job));
	opts.wait_job_count = 0;
	opts.wait_sync_files = &(int){ 1000 };
	opts.wait_sync_file_count = 1;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_submit(self->dev, self->cb, &opts, &job));
	opts.wait_sync_file_count = 0;
	opts.wait_job_count = ACCEL_MAX_DEPENDENCIES + 1;
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE,
		  accel_submit(self->dev, self->cb, &opts, &job));
	EXPECT_EQ(NULL, job);
	/* Command buffers of no or another device. */
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(NULL, &orphan));
	EMIT(accel_cmdbuf_nop(orphan));
	EXPECT_EQ(ACCEL_ERR_WRONG_DEVICE, accel_submit(self->dev, orphan, NULL, &job));
	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &other));
	EXPECT_EQ(ACCEL_ERR_WRONG_DEVICE, accel_submit(other, self->cb, NULL, &job));
	accel_device_close(other);
	accel_cmdbuf_destroy(orphan);
	/* A low-priority job runs all the same on an idle queue. */
	opts = (struct accel_submit_opts){ .priority = ACCEL_PRIORITY_LOW };
	ASSERT_EQ(ACCEL_OK, accel_submit(self->dev, self->cb, &opts, &job));
	EXPECT_EQ(ACCEL_OK, accel_job_wait(job, WAIT_NS));
	accel_job_destroy(job);
}

/* Jobs of the batch tests: one per queue, up to this many. */
#define BATCH_JOBS	8

/* @n command buffers, number i filling word i of @data with 0xba7c0 + i. */
static int batch_cmdbufs(FIXTURE_DATA(lib) *self, unsigned int n,
			 struct accel_buffer *data, struct accel_cmdbuf **cbs,
			 struct accel_submit_opts *opts,
			 const struct accel_submit_opts **popts)
{
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = accel_cmdbuf_create(self->dev, &cbs[i]);
		if (ret)
			return ret;
		ret = accel_cmdbuf_fill(cbs[i], data, 4 * i, 0xba7c0 + i, 4);
		if (ret)
			return ret;
		opts[i] = (struct accel_submit_opts){ .queue = i };
		popts[i] = &opts[i];
	}
	return ACCEL_OK;
}

static unsigned int batch_size(FIXTURE_DATA(lib) *self)
{
	return self->info.num_queues < BATCH_JOBS ? self->info.num_queues :
						    BATCH_JOBS;
}

TEST_F(lib, a_batch_queues_a_job_on_every_queue_in_one_call)
{
	struct accel_cmdbuf *cbs[BATCH_JOBS];
	struct accel_submit_opts opts[BATCH_JOBS];
	const struct accel_submit_opts *popts[BATCH_JOBS];
	struct accel_job *jobs[BATCH_JOBS] = { NULL };
	unsigned int i, n = batch_size(self);
	uint32_t words[BATCH_JOBS];
	struct accel_buffer *data;

	NEW_BUFFER(data, 4096, ACCEL_PLACEMENT_HBM);
	ASSERT_EQ(ACCEL_OK, batch_cmdbufs(self, n, data, cbs, opts, popts));
	ASSERT_EQ(ACCEL_OK, accel_submit_many(self->dev, n, cbs, popts, jobs))
		TH_LOG("%s", accel_cmdbuf_last_error(cbs[0]));
	for (i = 0; i < n; i++) {
		struct accel_job_status st;

		EXPECT_EQ(ACCEL_OK, accel_job_wait(jobs[i], WAIT_NS));
		ASSERT_EQ(ACCEL_OK, accel_job_status(jobs[i], &st));
		EXPECT_EQ(i, st.queue);
		accel_job_destroy(jobs[i]);
		accel_cmdbuf_destroy(cbs[i]);
	}
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(data, 0, words, 4 * n));
	for (i = 0; i < n; i++)
		EXPECT_EQ(0xba7c0 + i, words[i]);
	accel_buffer_destroy(data);
}

TEST_F(lib, a_batch_with_a_bad_job_queues_none_and_says_which)
{
	struct accel_cmdbuf *cbs[BATCH_JOBS];
	struct accel_submit_opts opts[BATCH_JOBS];
	const struct accel_submit_opts *popts[BATCH_JOBS];
	struct accel_job *jobs[BATCH_JOBS] = { NULL };
	struct accel_cmdbuf *last;
	unsigned int i, n = batch_size(self);
	uint32_t words[BATCH_JOBS];
	struct accel_buffer *data;

	if (n < 3)
		SKIP(return, "the chip has %u queues, the test needs 3", n);
	NEW_BUFFER(data, 4096, ACCEL_PLACEMENT_HOST);
	ASSERT_EQ(ACCEL_OK, batch_cmdbufs(self, n, data, cbs, opts, popts));
	opts[2].queue = self->info.num_queues;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_submit_many(self->dev, n, cbs, popts, jobs));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(cbs[2]), "queue"));
	opts[2].queue = 2;
	/* The same command buffer twice, no job, too many jobs. */
	last = cbs[n - 1];
	cbs[n - 1] = cbs[0];
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_submit_many(self->dev, n, cbs, popts, jobs));
	cbs[n - 1] = last;
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_submit_many(self->dev, 0, cbs, popts, jobs));
	EXPECT_EQ(ACCEL_ERR_TOO_LARGE,
		  accel_submit_many(self->dev, ACCEL_MAX_BATCH + 1, cbs, popts,
				    jobs));
	for (i = 0; i < n; i++)
		EXPECT_EQ(NULL, jobs[i]);
	/* Whatever a queue had queued has run once a later job has. */
	for (i = 0; i < n; i++) {
		EMIT(accel_cmdbuf_nop(self->cb));
		RUN_OK(i);
	}
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(data, 0, words, 4 * n));
	for (i = 0; i < n; i++)
		EXPECT_EQ(0, words[i]);
	/* Fixed, the same batch runs, every job with the defaults (queue 0). */
	ASSERT_EQ(ACCEL_OK, accel_submit_many(self->dev, n, cbs, NULL, jobs));
	for (i = 0; i < n; i++) {
		EXPECT_EQ(ACCEL_OK, accel_job_wait(jobs[i], WAIT_NS));
		accel_job_destroy(jobs[i]);
		accel_cmdbuf_destroy(cbs[i]);
	}
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(data, 0, words, 4 * n));
	for (i = 0; i < n; i++)
		EXPECT_EQ(0xba7c0 + i, words[i]);
	accel_buffer_destroy(data);
}

TEST_F(lib, the_builder_keeps_operands_inside_their_buffers)
{
	struct accel_buffer *buf, *theirs;
	struct accel_device *other;
	struct accel_tensor t;
	struct accel_region r;

	NEW_BUFFER(buf, 4096, ACCEL_PLACEMENT_HOST);
	/* 32 rows of 32 floats is exactly 4 KiB; one more element is not. */
	t = tensor_at(buf, 0, 32, 32, 0, TSR_DTYPE_F32);
	EMIT(accel_cmdbuf_vpu(self->cb, TSR_VPU_RELU, &t, NULL, NULL, &t));
	t.offset = 4;
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_cmdbuf_vpu(self->cb, TSR_VPU_RELU, &t, NULL, NULL, &t));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "out spans bytes 4 to 4100 of a 4096-byte buffer"));
	t = tensor_at(buf, 0, 31, 32, 34, TSR_DTYPE_F32);
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS, accel_cmdbuf_cast(self->cb, &t, &t));
	r = (struct accel_region){ .buffer = buf, .row_stride = 1024 };
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_cmdbuf_dma_fill(self->cb, &r, 0, 1024, 5, 1));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS, accel_cmdbuf_sem_inc(self->cb, buf, 4096, 1));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_cmdbuf_copy(self->cb, buf, 0, buf, UINT64_MAX - 3, 8));
	EMIT(accel_cmdbuf_sem_inc(self->cb, buf, 4088, 1));
	EXPECT_EQ(ACCEL_ERR_BAD_FLAGS, accel_cmdbuf_use_buffer(self->cb, buf, 8));
	/* A buffer of another device handle cannot be named. */
	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &other));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(other, 4096, 0, &theirs));
	EXPECT_EQ(ACCEL_ERR_WRONG_DEVICE, accel_cmdbuf_fill(self->cb, theirs, 0, 0, 4));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(self->cb),
			       "dst is in a buffer of another device"));
	EXPECT_EQ(ACCEL_ERR_WRONG_DEVICE, accel_cmdbuf_use_buffer(self->cb, theirs,
								  ACCEL_USE_READ));
	accel_buffer_destroy(theirs);
	accel_device_close(other);
	/* What was accepted runs. */
	EXPECT_EQ(2, accel_cmdbuf_count(self->cb));
	RUN_OK(0);
	accel_buffer_destroy(buf);
}

TEST_F(lib, raw_addresses_run_with_their_buffer_listed)
{
	struct accel_buffer *buf;
	uint32_t word = 0;

	NEW_BUFFER(buf, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_fill(self->cb, NULL, accel_buffer_device_va(buf) + 64,
			       0x600d, 4));
	EMIT(accel_cmdbuf_use_buffer(self->cb, buf, ACCEL_USE_WRITE));
	RUN_OK(1);
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(buf, 64, &word, 4));
	EXPECT_EQ(0x600d, word);
	accel_buffer_destroy(buf);
}

TEST_F(lib, a_command_buffer_keeps_its_buffers_alive)
{
	struct accel_buffer *buf;

	/* Destroyed before the job is even submitted: still mapped for it. */
	NEW_BUFFER(buf, 4096, ACCEL_PLACEMENT_HBM);
	EMIT(accel_cmdbuf_fill(self->cb, buf, 0, 1, 4096));
	accel_buffer_destroy(buf);
	EXPECT_LT(0, tsr_fdinfo_bytes(accel_device_fd(self->dev), "drm-total-hbm"));
	RUN_OK(2);
}

/* --------------------------------------------------- device errors */

TEST_F(lib, a_device_fault_names_the_failing_command)
{
	struct accel_job_status st;

	EMIT(accel_cmdbuf_nop(self->cb));
	EMIT(accel_cmdbuf_nop(self->cb));
	/* Nothing is mapped below 2 MiB: the builder cannot know. */
	EMIT(accel_cmdbuf_fill(self->cb, NULL, 0x1000, 0, 4));
	EMIT(accel_cmdbuf_nop(self->cb));
	EXPECT_EQ(ACCEL_ERR_JOB_FAILED, run_on(self, 0, &st));
	EXPECT_EQ(ACCEL_JOB_FAILED, st.state);
	EXPECT_EQ(ACCEL_ERR_JOB_FAILED, st.result);
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, st.chip_error);
	EXPECT_STREQ("MMU_UNMAPPED", st.chip_error_name);
	EXPECT_EQ(-EFAULT, st.fence_error);
	EXPECT_EQ(2, st.failed_command);
	EXPECT_EQ(0x1000, st.fault_va);
	/* The device goes on. */
	EMIT(accel_cmdbuf_nop(self->cb));
	RUN_OK(0);
}

TEST_F(lib, an_operand_beyond_the_chips_limits_fails_its_job)
{
	struct accel_tensor a = {
		.offset = 0x40000000, .rows = 1u << 15, .cols = 1u << 14,
		.dtype = TSR_DTYPE_BF16,
	};
	struct accel_tensor b = a, c = a;
	struct accel_job_status st;

	/* M x K is 2^29 elements: the MXU takes 2^28 at most. */
	b.rows = 1u << 14;
	b.cols = 8;
	c.rows = 1u << 15;
	c.cols = 8;
	EMIT(accel_cmdbuf_nop(self->cb));
	EMIT(accel_cmdbuf_matmul(self->cb, &a, &b, &c, 0));
	EXPECT_EQ(ACCEL_ERR_JOB_FAILED, run_on(self, 3, &st));
	EXPECT_EQ(TSR_ERR_TOO_LARGE, st.chip_error);
	EXPECT_STREQ("TOO_LARGE", st.chip_error_name);
	EXPECT_EQ(-E2BIG, st.fence_error);
	EXPECT_EQ(1, st.failed_command);
}

TEST_F(lib, a_hung_job_is_reported_as_hung)
{
	struct accel_job_status st;
	struct accel_buffer *sem;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 1));
	EXPECT_EQ(ACCEL_ERR_JOB_HUNG, run_on(self, 2, &st));
	EXPECT_EQ(ACCEL_JOB_FAILED, st.state);
	EXPECT_EQ(-ETIMEDOUT, st.fence_error);
	EXPECT_EQ(TSR_NO_COMMAND, st.failed_command);
	accel_buffer_destroy(sem);
}

TEST_F(lib, repeated_faults_cancel_the_device_handle)
{
	struct accel_job *job = NULL;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		EMIT(accel_cmdbuf_fill(self->cb, NULL, 0x2000, 0, 4));
		EXPECT_EQ(ACCEL_ERR_JOB_FAILED, run_on(self, 0, NULL));
	}
	EMIT(accel_cmdbuf_nop(self->cb));
	EXPECT_EQ(ACCEL_ERR_CANCELED, accel_submit(self->dev, self->cb, NULL, &job));
	EXPECT_EQ(NULL, job);
}

/* --------------------------------------------------------- threads */

#define THREADS	4
#define JOBS	40

struct worker {
	struct accel_device *dev;
	struct accel_buffer *counter;
	unsigned int id, queues;
	int error;
	char what[160];
};

/* Record the thread's first failure; @ret 0 for a wrong result. */
static int worker_fail(struct worker *w, int ret, const char *what)
{
	if (!w->error) {
		w->error = ret ? ret : -1;
		snprintf(w->what, sizeof(w->what), "%s%s%s", what,
			 ret ? ": " : "", ret ? accel_error_string(ret) : "");
	}
	return w->error;
}

/* JOBS jobs, each through a scratch HBM buffer into one slot. */
static int worker_jobs(struct worker *w, struct accel_cmdbuf *cb,
		       struct accel_buffer *slots, struct accel_job **jobs)
{
	unsigned int i;
	int ret;

	for (i = 0; i < JOBS; i++) {
		struct accel_submit_opts o = { .queue = (w->id + i) % w->queues };
		struct accel_buffer *tmp;

		ret = accel_buffer_create(w->dev, 4096, ACCEL_PLACEMENT_HBM, &tmp);
		if (ret)
			return worker_fail(w, ret, "buffer_create");
		accel_cmdbuf_reset(cb);
		ret = accel_cmdbuf_fill(cb, tmp, 0, w->id << 16 | i, 4);
		if (!ret)
			ret = accel_cmdbuf_copy(cb, slots, 4 * i, tmp, 0, 4);
		if (!ret)
			ret = accel_cmdbuf_sem_inc(cb, w->counter, 0, 1);
		/* The command buffer and the job keep tmp alive. */
		accel_buffer_destroy(tmp);
		if (!ret)
			ret = accel_submit(w->dev, cb, &o, &jobs[i]);
		if (ret)
			return worker_fail(w, ret, accel_cmdbuf_last_error(cb));
	}
	return 0;
}

static void *worker_main(void *arg)
{
	struct accel_job *jobs[JOBS] = { NULL };
	struct worker *w = arg;
	struct accel_buffer *slots;
	struct accel_cmdbuf *cb;
	uint32_t got[JOBS];
	unsigned int i;
	int ret;

	if (accel_cmdbuf_create(w->dev, &cb) ||
	    accel_buffer_create(w->dev, 4096, ACCEL_PLACEMENT_HOST, &slots)) {
		worker_fail(w, 0, "setup");
		return NULL;
	}
	worker_jobs(w, cb, slots, jobs);
	for (i = 0; i < JOBS && jobs[i]; i++) {
		ret = accel_job_wait(jobs[i], WAIT_NS);
		if (ret)
			worker_fail(w, ret, "wait");
		accel_job_destroy(jobs[i]);
	}
	if (!w->error && accel_buffer_download(slots, 0, got, sizeof(got)))
		worker_fail(w, 0, "download");
	for (i = 0; i < JOBS && !w->error; i++)
		if (got[i] != (w->id << 16 | i))
			worker_fail(w, 0, "slot has a wrong value");
	accel_buffer_destroy(slots);
	accel_cmdbuf_destroy(cb);
	return NULL;
}

TEST_F(lib, threads_share_a_device)
{
	struct worker workers[THREADS];
	pthread_t threads[THREADS];
	struct accel_buffer *counter;
	uint64_t total = 0;
	unsigned int i;

	NEW_BUFFER(counter, 4096, ACCEL_PLACEMENT_HOST);
	for (i = 0; i < THREADS; i++) {
		workers[i] = (struct worker){
			.dev = self->dev, .counter = counter, .id = i,
			.queues = self->info.num_queues,
		};
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, worker_main,
					    &workers[i]));
	}
	for (i = 0; i < THREADS; i++) {
		ASSERT_EQ(0, pthread_join(threads[i], NULL));
		EXPECT_EQ(0, workers[i].error) TH_LOG("thread %u: %s", i,
						      workers[i].what);
	}
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(counter, 0, &total, 8));
	EXPECT_EQ(THREADS * JOBS, total);
	accel_buffer_destroy(counter);
}

struct waiter {
	struct accel_job *job;
	int result;
};

static void *wait_main(void *arg)
{
	struct waiter *w = arg;

	w->result = accel_job_wait(w->job, WAIT_NS);
	return NULL;
}

TEST_F(lib, a_job_can_be_waited_for_from_several_threads)
{
	struct waiter waiters[THREADS];
	pthread_t threads[THREADS];
	struct accel_buffer *sem;
	struct accel_job *job;
	unsigned int i;

	NEW_BUFFER(sem, 4096, ACCEL_PLACEMENT_HOST);
	EMIT(accel_cmdbuf_sem_wait(self->cb, sem, 0, 1));
	SUBMIT(job, .queue = 3);
	for (i = 0; i < THREADS; i++) {
		waiters[i] = (struct waiter){ .job = job, .result = 1 };
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, wait_main,
					    &waiters[i]));
	}
	set_semaphore(sem, 0, 1);
	for (i = 0; i < THREADS; i++) {
		ASSERT_EQ(0, pthread_join(threads[i], NULL));
		EXPECT_EQ(ACCEL_OK, waiters[i].result);
	}
	accel_job_destroy(job);
	accel_buffer_destroy(sem);
}

TEST_HARNESS_MAIN
