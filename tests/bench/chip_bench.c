// SPDX-License-Identifier: GPL-2.0
/*
 * chip_bench: the Tessera chip core's engines driven directly on the host,
 * each beside a reference measured in the same run.
 *
 *   matmul   2048^3 bf16 MATMUL (operands in HBM) vs OpenBLAS sgemm with
 *            the same threads
 *   dma      64 MiB system memory -> HBM DMA_COPY vs memcpy
 *   commands a job of 1000 small VPU adds, and one of 1000 NOPs: wall
 *            time per command
 *
 * Prints "BENCH <name> <value> <unit>" lines; the best of --runs runs.
 */
#include <cblas.h>
#include <stdio.h>
#include <time.h>

#define SYSMEM_SIZE (192ull << 20)
#define HBM_SIZE (128ull << 20)
#include "../host/tessera_chip.h"
#include "tessera-numerics.h"

static int runs = 3;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void bench(const char *name, double value, const char *unit)
{
	printf("BENCH %s %.3f %s\n", name, value, unit);
	fflush(stdout);
}

static void die(const char *what)
{
	fprintf(stderr, "chip_bench: %s failed\n", what);
	exit(1);
}

/* Run one job of @len bytes of commands; returns wall seconds. */
static double timed_job(struct test_chip *c, const void *cmds, uint32_t len,
			struct tsr_completion **comp)
{
	double t = now();

	*comp = chip_run(c, cmds, len);
	t = now() - t;
	if ((*comp)->error)
		die("job");
	return t;
}

static void bench_matmul(void)
{
	const int n = 2048;
	struct test_chip *c = chip_new("v4");
	uint64_t va = 0x10000000;
	struct tsr_cmd_matmul cmd = {
		.hdr = HDR(TSR_OP_MATMUL, struct tsr_cmd_matmul),
		.a = tensor(va, n, n, TSR_DTYPE_BF16),
		.b = tensor(va + 2ull * n * n, n, n, TSR_DTYPE_BF16),
		.c = tensor(va + 4ull * n * n, n, n, TSR_DTYPE_F32),
	};
	float *a = malloc(4ull * n * n), *b = malloc(4ull * n * n);
	float *out = malloc(4ull * n * n);
	uint16_t *hbm = (uint16_t *)c->hbm;
	struct tsr_completion *comp;
	double best_ref = 1e9, best = 1e9, flop = 2.0 * n * n * n;
	size_t i;
	int r;

	chip_map(c, 1, va, 0, HBM_SIZE, TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	for (i = 0; i < 2ull * n * n; i++)
		hbm[i] = tsr_f32_to_bf16((float)(i % 17) / 17 - 0.5f);
	for (i = 0; i < (size_t)n * n; i++) {
		a[i] = tsr_bf16_to_f32(hbm[i]);
		b[i] = tsr_bf16_to_f32(hbm[n * n + i]);
	}
	for (r = 0; r < runs; r++) {
		double t = now();

		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n,
			    1.0f, a, n, b, n, 0.0f, out, n);
		t = now() - t;
		best_ref = t < best_ref ? t : best_ref;
		t = timed_job(c, &cmd, sizeof(cmd), &comp);
		best = t < best ? t : best;
	}
	bench("host_sgemm_2048_gflops", flop / best_ref / 1e9, "GFLOP/s");
	bench("chip_matmul_bf16_2048_gflops", flop / best / 1e9, "GFLOP/s");
	bench("chip_matmul_vs_sgemm_ratio", best_ref / best, "x");
	bench("blas_threads", openblas_get_num_threads(), "threads");
	bench("chip_matmul_bf16_2048_modeled_tflops",
	      flop / ((comp->end_cycle - comp->start_cycle) /
		      (c->cfg.clock_mhz * 1e6)) / 1e12, "TFLOP/s");
	bench("v4_peak_tflops", tsr_config_peak_flops(&c->cfg) / 1e12, "TFLOP/s");
	free(a);
	free(b);
	free(out);
	chip_free(c);
}

static void bench_dma(void)
{
	const uint64_t len = 64ull << 20;
	struct test_chip *c = chip_new("v4");
	uint64_t src = chip_buffer(c, 1, len);
	uint64_t va = 0x10000000;
	struct tsr_cmd_dma cmd = {
		.hdr = HDR(TSR_OP_DMA_COPY, struct tsr_cmd_dma),
		.src = src, .dst = va, .size = { len, 1, 1 },
	};
	struct tsr_completion *comp;
	double best_ref = 1e9, best = 1e9;
	int r;

	chip_map(c, 1, va, 0, len, TSR_PTE_READ | TSR_PTE_WRITE | TSR_PTE_HBM);
	memset(host_ptr(c, src), 0x3c, len);
	for (r = 0; r < runs; r++) {
		double t = now();

		memcpy(c->hbm, host_ptr(c, src), len);
		t = now() - t;
		best_ref = t < best_ref ? t : best_ref;
		memset(c->hbm, 0, len);
		t = timed_job(c, &cmd, sizeof(cmd), &comp);
		best = t < best ? t : best;
	}
	if (c->hbm[len - 1] != 0x3c)
		die("dma result");
	bench("host_memcpy_64m_gbps", len / best_ref / 1e9, "GB/s");
	bench("chip_dma_host_to_hbm_gbps", len / best / 1e9, "GB/s");
	bench("chip_dma_vs_memcpy_ratio", best_ref / best, "x");
	chip_free(c);
}

static void bench_commands(void)
{
	enum { N = 1000 };
	struct test_chip *c = chip_new("v4");
	uint64_t buf = chip_buffer(c, 1, 3 * 8 * 128 * 4);
	static struct tsr_cmd_vpu adds[N];
	static struct tsr_cmd_header nops[N];
	struct tsr_completion *comp;
	double best_add = 1e9, best_nop = 1e9;
	int i, r;

	for (i = 0; i < N; i++) {
		adds[i] = (struct tsr_cmd_vpu){
			.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu),
			.op = TSR_VPU_ADD,
			.a = tensor(buf, 8, 128, TSR_DTYPE_F32),
			.b = tensor(buf + 4096, 8, 128, TSR_DTYPE_F32),
			.out = tensor(buf + 8192, 8, 128, TSR_DTYPE_F32),
		};
		nops[i] = (struct tsr_cmd_header){ .opcode = TSR_OP_NOP,
						    .size_qw = 1 };
	}
	for (r = 0; r < runs; r++) {
		double t = timed_job(c, adds, sizeof(adds), &comp);

		best_add = t < best_add ? t : best_add;
		t = timed_job(c, nops, sizeof(nops), &comp);
		best_nop = t < best_nop ? t : best_nop;
	}
	bench("chip_small_vpu_add_per_command_us", best_add / N * 1e6, "us");
	bench("chip_nop_per_command_us", best_nop / N * 1e6, "us");
	chip_free(c);
}

int main(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--runs") && i + 1 < argc) {
			runs = atoi(argv[++i]);
		} else {
			fprintf(stderr, "usage: chip_bench [--runs N]\n");
			return 2;
		}
	}
	if (runs < 1) {
		fprintf(stderr, "chip_bench: --runs must be at least 1\n");
		return 2;
	}
	bench_matmul();
	bench_dma();
	bench_commands();
	return 0;
}
