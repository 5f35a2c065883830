// SPDX-License-Identifier: MIT
/*
 * libaccel_bench: a 2048^3 bf16 matmul through libaccel's ops layer, in the
 * guest, wall time from submission to the end of the wait (best of RUNS):
 *
 *   vm_libaccel_matmul        operands in HBM: the figure to hold against
 *                             the chip's device-only one (chip_bench)
 *   vm_libaccel_matmul_host   operands in system memory, with an HBM scratch
 *                             buffer for accel_op_matmul() to stage through
 *                             where that saves PCIe traffic (for one tile it
 *                             does not: the MXUs read them in place)
 *
 * Each product is checked on sampled elements against the CPU reference.
 * Prints "BENCH <name> <value> <unit>" lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <accel/accel.h>

#define N	2048u
#define RUNS	5
#define SAMPLES	64

static void die(const char *what, int ret)
{
	fprintf(stderr, "libaccel_bench: %s: %s\n", what, accel_error_string(ret));
	exit(1);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Element i of an operand: a few distinct bf16 values. */
static float value(size_t i, unsigned int salt)
{
	return accel_bf16_to_f32(accel_f32_to_bf16((float)((i * salt) % 17) / 17 - 0.5f));
}

static void upload(struct accel_buffer *buf, unsigned int salt)
{
	uint16_t *h = malloc((size_t)N * N * sizeof(*h));
	size_t i;
	int ret;

	if (!h)
		die("upload", ACCEL_ERR_NO_MEMORY);
	for (i = 0; i < (size_t)N * N; i++)
		h[i] = accel_f32_to_bf16(value(i, salt));
	ret = accel_buffer_upload(buf, 0, h, (size_t)N * N * sizeof(*h));
	free(h);
	if (ret)
		die("upload", ret);
}

/* Sampled elements of C against dot products computed here. */
static void check(struct accel_buffer *c)
{
	float a_row[N], b_col[N], got;
	unsigned int s, l;

	for (s = 0; s < SAMPLES; s++) {
		size_t i = (s * 977u) % N, j = (s * 1303u) % N;
		double want = 0;

		for (l = 0; l < N; l++) {
			a_row[l] = value(i * N + l, 3);
			b_col[l] = value((size_t)l * N + j, 5);
			want += (double)a_row[l] * b_col[l];
		}
		if (accel_buffer_download(c, (i * N + j) * 4, &got, 4) ||
		    !accel_ref_compare(&got, &(float){ (float)want }, 1, 1e-4f, NULL)) {
			fprintf(stderr, "libaccel_bench: C[%zu][%zu] is %g, not %g\n",
				i, j, got, want);
			exit(1);
		}
	}
}

static void bench(struct accel_device *dev, const struct accel_device_info *info,
		  const char *name, uint32_t placement)
{
	struct accel_buffer *a, *b, *c, *scratch = NULL;
	double best = 1e9, flop = 2.0 * N * N * N;
	struct accel_job_status st;
	struct accel_cmdbuf *cb;
	struct accel_job *job;
	int ret, r;

	ret = accel_buffer_create(dev, (uint64_t)N * N * 2, placement, &a);
	if (!ret)
		ret = accel_buffer_create(dev, (uint64_t)N * N * 2, placement, &b);
	if (!ret)
		ret = accel_buffer_create(dev, (uint64_t)N * N * 4, placement, &c);
	if (!ret && placement == ACCEL_PLACEMENT_HOST)
		ret = accel_buffer_create(dev, 64ull << 20, ACCEL_PLACEMENT_HBM,
					  &scratch);
	if (!ret)
		ret = accel_cmdbuf_create(dev, &cb);
	if (ret)
		die("buffers", ret);
	upload(a, 3);
	upload(b, 5);
	ret = accel_op_matmul(cb, scratch,
			      &(struct accel_tensor){ a, 0, N, N, 0, TSR_DTYPE_BF16 },
			      &(struct accel_tensor){ b, 0, N, N, 0, TSR_DTYPE_BF16 },
			      &(struct accel_tensor){ c, 0, N, N, 0, TSR_DTYPE_F32 }, 0);
	if (ret) {
		fprintf(stderr, "libaccel_bench: %s\n", accel_cmdbuf_last_error(cb));
		exit(1);
	}
	for (r = 0; r < RUNS; r++) {
		double t = now();

		ret = accel_submit(dev, cb, NULL, &job);
		if (!ret)
			ret = accel_job_wait(job, ACCEL_TIMEOUT_INFINITE);
		t = now() - t;
		if (!ret)
			ret = accel_job_status(job, &st);
		accel_job_destroy(job);
		if (ret)
			die(name, ret);
		best = t < best ? t : best;
	}
	check(c);
	printf("BENCH %s_gflops %.3f GFLOP/s\n", name, flop / best / 1e9);
	printf("BENCH %s_modeled_tflops %.3f TFLOP/s\n", name,
	       flop * info->clock_mhz * 1e6 / (st.end_cycle - st.start_cycle) / 1e12);
	fflush(stdout);
	accel_cmdbuf_destroy(cb);
	accel_buffer_destroy(scratch);
	accel_buffer_destroy(c);
	accel_buffer_destroy(b);
	accel_buffer_destroy(a);
}

int main(void)
{
	struct accel_device_info info;
	struct accel_device *dev;
	int ret;

	ret = accel_device_open(0, &dev);
	if (!ret)
		ret = accel_device_get_info(dev, &info);
	if (ret)
		die("device 0", ret);
	bench(dev, &info, "vm_libaccel_matmul", ACCEL_PLACEMENT_HBM);
	bench(dev, &info, "vm_libaccel_matmul_host", ACCEL_PLACEMENT_HOST);
	accel_device_close(dev);
	return 0;
}
