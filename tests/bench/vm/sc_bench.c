// SPDX-License-Identifier: MIT
/*
 * sc_bench: embedding lookups on the chip's SparseCores against the same
 * lookups on a CPU, run by tools/tessera-bench.
 *
 *   sc_bench         in the guest: one SC_GATHER (sum) of IDS ids, IDS /
 *                    SAMPLES per sample, from a VOCAB x DIM f32 table in
 *                    HBM, submitted through libaccel (best of RUNS, wall
 *                    time from submission to the end of the wait), checked
 *                    against the CPU reference; its modeled time against
 *                    Documentation/chip.md's formula ("SparseCore timing")
 *   sc_bench --cpu   on the host: the same gather by libaccel's CPU
 *                    reference, the figure the chip's is held against
 *
 * Prints "BENCH <name> <value> <unit>" lines.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <accel/accel.h>

#define VOCAB		65536u
#define DIM		64u
#define IDS		65536u
#define SAMPLES		4096u
#define RUNS		5

static void die(const char *what, int ret)
{
	fprintf(stderr, "sc_bench: %s: %s\n", what, accel_error_string(ret));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The same table and ids on every run: small integers, sums exact. */
static void make_data(float *table, uint32_t *rows, uint32_t *cols)
{
	uint32_t state = 12345, i;

	for (i = 0; i < VOCAB * DIM; i++)
		table[i] = (float)(i % 17) - 8.0f;
	for (i = 0; i < IDS; i++) {
		state = state * 1103515245u + 12345u;
		rows[i] = i / (IDS / SAMPLES);
		cols[i] = (state >> 8) % VOCAB;
	}
}

/* @bytes at @gbps GB/s on a @mhz clock, in whole cycles. */
static uint64_t cycles(uint64_t bytes, uint32_t gbps, uint32_t mhz)
{
	return (bytes * mhz + gbps * 1000ull - 1) / (gbps * 1000ull);
}

/*
 * Documentation/chip.md, "SparseCore timing": 100 + max(compute, rows +
 * stream), the rows in 64-byte granules at the HBM rate, the stream the
 * ids read and the sums written.
 */
static uint64_t formula(const struct accel_device_info *info)
{
	uint64_t lanes = (uint64_t)info->sparsecores * info->sc_tiles * info->sc_simd_f32;
	uint64_t row = (DIM * 4 + 63) / 64 * 64;
	uint64_t compute = (IDS * DIM + lanes - 1) / lanes +
			   (SAMPLES * DIM + lanes - 1) / lanes;
	uint64_t rows = cycles((uint64_t)IDS * row, info->hbm_gbps, info->clock_mhz);
	uint64_t stream = cycles((uint64_t)IDS * 8 + (uint64_t)SAMPLES * DIM * 4,
				 info->hbm_gbps, info->clock_mhz);

	return 100 + (compute > rows + stream ? compute : rows + stream);
}

static void cpu_bench(const float *table, const uint32_t *rows,
		      const uint32_t *cols, float *out)
{
	double best = INFINITY;
	uint32_t err, where;
	int r;

	for (r = 0; r < RUNS; r++) {
		double t0 = now_s();

		accel_ref_sc_gather(TSR_SC_SUM, rows, cols, NULL, IDS, table, VOCAB,
				    DIM, out, SAMPLES, &err, &where);
		if (now_s() - t0 < best)
			best = now_s() - t0;
	}
	printf("BENCH host_sc_gather_cpu_lookups_per_s %.0f lookups/s\n", IDS / best);
}

int main(int argc, char **argv)
{
	float *table = malloc((size_t)VOCAB * DIM * 4);
	float *want = malloc((size_t)SAMPLES * DIM * 4);
	float *got = malloc((size_t)SAMPLES * DIM * 4);
	uint32_t *rows = malloc(IDS * 4), *cols = malloc(IDS * 4), err, where;
	struct accel_buffer *tbl, *ids, *out;
	struct accel_device_info info;
	struct accel_job_status st;
	struct accel_device *dev;
	struct accel_cmdbuf *cb;
	struct accel_sc_ids in;
	struct accel_tensor t, o;
	double best = INFINITY;
	uint64_t modeled = 0;
	int r, ret;

	if (!table || !want || !got || !rows || !cols)
		die("host memory", ACCEL_ERR_NO_MEMORY);
	make_data(table, rows, cols);
	if (argc > 1 && !strcmp(argv[1], "--cpu")) {
		cpu_bench(table, rows, cols, want);
		return 0;
	}
	ret = accel_device_open(0, &dev) ?: accel_device_get_info(dev, &info);
	if (ret)
		die("opening chip 0", ret);
	if (!info.sparsecores)
		die("chip 0 has no SparseCores", ACCEL_ERR_NOT_SUPPORTED);
	ret = accel_buffer_create(dev, (uint64_t)VOCAB * DIM * 4, ACCEL_PLACEMENT_HBM, &tbl) ?:
	      accel_buffer_create(dev, (uint64_t)IDS * 8, ACCEL_PLACEMENT_HBM, &ids) ?:
	      accel_buffer_create(dev, (uint64_t)SAMPLES * DIM * 4, ACCEL_PLACEMENT_HBM, &out) ?:
	      accel_buffer_upload(tbl, 0, table, (uint64_t)VOCAB * DIM * 4) ?:
	      accel_buffer_upload(ids, 0, rows, IDS * 4) ?:
	      accel_buffer_upload(ids, IDS * 4, cols, IDS * 4) ?:
	      accel_cmdbuf_create(dev, &cb);
	if (ret)
		die("setting up", ret);
	in = (struct accel_sc_ids){ ids, 0, IDS * 4, ACCEL_SC_UNWEIGHTED, IDS };
	t = (struct accel_tensor){ tbl, 0, VOCAB, DIM, 0, TSR_DTYPE_F32 };
	o = (struct accel_tensor){ out, 0, SAMPLES, DIM, 0, TSR_DTYPE_F32 };
	ret = accel_cmdbuf_sc_gather(cb, TSR_SC_SUM, &in, &t, &o);
	if (ret)
		die(accel_cmdbuf_last_error(cb), ret);
	for (r = 0; r < RUNS; r++) {
		struct accel_job *job;
		double t0 = now_s();

		ret = accel_submit(dev, cb, NULL, &job);
		if (!ret)
			ret = accel_job_wait(job, ACCEL_TIMEOUT_INFINITE);
		if (ret)
			die("the gather", ret);
		if (now_s() - t0 < best) {
			best = now_s() - t0;
			accel_job_status(job, &st);
			modeled = st.end_cycle - st.start_cycle;
		}
		accel_job_destroy(job);
	}
	ret = accel_buffer_download(out, 0, got, (uint64_t)SAMPLES * DIM * 4);
	if (ret)
		die("reading the sums", ret);
	accel_ref_sc_gather(TSR_SC_SUM, rows, cols, NULL, IDS, table, VOCAB, DIM,
			    want, SAMPLES, &err, &where);
	if (memcmp(got, want, (size_t)SAMPLES * DIM * 4))
		die("the chip's sums differ from the CPU's", ACCEL_ERR_IO);
	printf("BENCH vm_sc_gather_lookups_per_s %.0f lookups/s\n", IDS / best);
	printf("BENCH vm_sc_gather_modeled_lookups_per_s %.0f lookups/s\n",
	       IDS / (modeled / (info.clock_mhz * 1e6)));
	printf("BENCH vm_sc_gather_modeled_vs_formula_ratio %.3f x\n",
	       (double)modeled / formula(&info));
	accel_cmdbuf_destroy(cb);
	accel_buffer_destroy(out);
	accel_buffer_destroy(ids);
	accel_buffer_destroy(tbl);
	accel_device_close(dev);
	return 0;
}
