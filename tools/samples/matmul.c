// SPDX-License-Identifier: MIT
/*
 * matmul: C = A x B in bf16 (f32 results) of any size on a Tessera chip,
 * through the ops layer (accel_op_matmul()), checked against the CPU
 * reference, with the wall-clock and the modeled throughput.
 *
 *	matmul                        1024 x 1024 x 1024, operands in HBM
 *	matmul 300 200 500            M N K
 *	matmul --placement host 4096  operands in system memory, read in
 *	                              place (one tile: staging saves nothing)
 *	matmul -p host --stage 4096   ... staged through HBM scratch anyway
 */
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

#define PROG		"matmul"
#include "sample.h"

#define MIB		(1024.0 * 1024.0)
/* The default check's work: 1/50 s natively, seconds in an emulated VM. */
#define CHECK_MACS	(1ull << 24)

static const char usage[] =
	"usage: " PROG " [OPTIONS] [M N K | SIZE]\n"
	"\n"
	"Multiply A (M x K) by B (K x N), both bf16, into C (M x N, f32) on a\n"
	"Tessera chip through accel_op_matmul(), check C against the CPU\n"
	"reference and print the throughput: wall-clock (submission to the end\n"
	"of the wait) and modeled (the chip's timing model). One SIZE means\n"
	"SIZE x SIZE x SIZE; the default is 1024.\n"
	"\n"
	"options:\n"
	"  -d, --device N        chip index (default 0)\n"
	"  -p, --placement P     where A, B and C live: hbm (default) or host\n"
	"  -s, --scratch MIB     with --placement host: HBM scratch to stage the\n"
	"                        operands through (default: all of them, at most\n"
	"                        64 MiB); 0 reads them in place over PCIe\n"
	"  -S, --stage           with --placement host: stage every operand through\n"
	"                        the scratch (ACCEL_MATMUL_STAGE), as for a chip\n"
	"                        whose MXUs cannot read system memory; without it\n"
	"                        only what saves PCIe traffic is staged\n"
	"  -i, --iterations N    run N times and report the best (default 3)\n"
	"  -c, --check-rows N    rows of C to check on the CPU, spread evenly from\n"
	"                        the first to the last, or 'all' (default: as\n"
	"                        many as 16M multiply-adds take, at least 2)\n"
	"  -h, --help            show this text\n"
	"\n"
	"Exit status: 0 verified, 1 failure (device error or wrong result),\n"
	"2 bad arguments.\n";

struct options {
	uint32_t device;
	uint32_t placement;
	uint64_t scratch_budget;	/* bytes; UINT64_MAX: the default */
	bool stage;			/* --stage */
	uint32_t iterations;
	uint32_t check_rows;		/* 0: no check */
	uint32_t m, n, k;
};

/* The operands on the chip and their copies on the host. */
struct problem {
	uint32_t m, n, k;
	uint16_t *a, *b;		/* bf16, as uploaded */
	float *c;			/* the chip's result */
	struct accel_buffer *ba, *bb, *bc, *scratch;
};

/* Rows worth CHECK_MACS multiply-adds on the CPU, at least the first and last. */
static uint32_t default_check_rows(const struct options *o)
{
	uint64_t rows = CHECK_MACS / ((uint64_t)o->n * o->k);

	return rows < 2 ? (o->m < 2 ? o->m : 2) : rows > o->m ? o->m : rows;
}

static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "device", required_argument, NULL, 'd' },
		{ "placement", required_argument, NULL, 'p' },
		{ "scratch", required_argument, NULL, 's' },
		{ "stage", no_argument, NULL, 'S' },
		{ "iterations", required_argument, NULL, 'i' },
		{ "check-rows", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *check_rows = NULL;
	uint32_t mib;
	int opt;

	*o = (struct options){
		.placement = ACCEL_PLACEMENT_HBM, .scratch_budget = UINT64_MAX,
		.iterations = 3, .m = 1024, .n = 1024,
		.k = 1024,
	};
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "d:p:s:Si:c:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'S':
			o->stage = true;
			break;
		case 'd':
			if (parse_u32("the device index", optarg, 0, 255, &o->device))
				return -1;
			break;
		case 'p':
			if (!strcmp(optarg, "hbm"))
				o->placement = ACCEL_PLACEMENT_HBM;
			else if (!strcmp(optarg, "host"))
				o->placement = ACCEL_PLACEMENT_HOST;
			else
				return usage_error("the placement must be 'hbm' or 'host', not '%s'",
						   optarg);
			break;
		case 's':
			if (parse_u32("the scratch size in MiB", optarg, 0, 65536, &mib))
				return -1;
			o->scratch_budget = (uint64_t)mib << 20;
			break;
		case 'i':
			if (parse_u32("the iteration count", optarg, 1, 1000, &o->iterations))
				return -1;
			break;
		case 'c':
			check_rows = optarg;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(EXIT_SUCCESS);
		default:
			if (optopt && strchr("dpsic", optopt))
				return usage_error("%s needs a value", argv[optind - 1]);
			if (argv[optind - 1][1] >= '0' && argv[optind - 1][1] <= '9')
				return usage_error("sizes are whole numbers from 1, not '%s'",
						   argv[optind - 1]);
			return unknown_option(argv[optind - 1], usage);
		}
	}

	switch (argc - optind) {
	case 0:
		break;
	case 1:
		if (parse_u32("SIZE", argv[optind], 1, UINT32_MAX, &o->m))
			return -1;
		o->n = o->k = o->m;
		break;
	case 3:
		if (parse_u32("M", argv[optind], 1, UINT32_MAX, &o->m) ||
		    parse_u32("N", argv[optind + 1], 1, UINT32_MAX, &o->n) ||
		    parse_u32("K", argv[optind + 2], 1, UINT32_MAX, &o->k))
			return -1;
		break;
	default:
		return usage_error("give M N K, one SIZE or nothing, not %s",
				   argc - optind == 2 ? "two sizes" : "more than three");
	}
	if (!check_rows)
		o->check_rows = default_check_rows(o);
	else if (!strcmp(check_rows, "all"))
		o->check_rows = o->m;
	else if (parse_u32("the number of rows to check", check_rows, 0, o->m,
			   &o->check_rows))
		return -1;
	if (o->placement == ACCEL_PLACEMENT_HBM && o->scratch_budget != UINT64_MAX)
		return usage_error("%s", "--scratch goes with --placement host: operands in HBM need no staging");
	if (o->placement == ACCEL_PLACEMENT_HBM && o->stage)
		return usage_error("%s", "--stage goes with --placement host: operands in HBM need no staging");
	return 0;
}

/* Pseudo-random, uniform in [-1, 1). */
static float next_value(uint32_t *state)
{
	return (xorshift32(state) >> 8) * (2.0f / (1u << 24)) - 1.0f;
}

static uint16_t *random_bf16(uint64_t count, uint32_t seed)
{
	uint16_t *v = malloc(count * sizeof(*v));
	uint64_t i;

	if (v)
		for (i = 0; i < count; i++)
			v[i] = accel_f32_to_bf16(next_value(&seed));
	return v;
}

static void describe_plan(const struct accel_matmul_plan *p)
{
	printf("plan: %u x %u x %u tiles of %ux%ux%u (M x N x K), ", p->tiles_m,
	       p->tiles_n, p->tiles_k, p->tile_m, p->tile_n, p->tile_k);
	if (p->staged)
		printf("staged through %.1f MiB of HBM scratch:%s%s%s\n",
		       p->scratch_bytes / MIB,
		       p->staged & ACCEL_STAGE_A ? " A" : "",
		       p->staged & ACCEL_STAGE_B ? " B" : "",
		       p->staged & ACCEL_STAGE_C ? " C" : "");
	else
		printf("nothing staged\n");
}

static int create_buffers(struct accel_device *dev, const struct options *o,
			  struct problem *p)
{
	uint64_t a_bytes = (uint64_t)p->m * p->k * 2, b_bytes = (uint64_t)p->k * p->n * 2;
	uint64_t c_bytes = (uint64_t)p->m * p->n * 4;
	const char *where = o->placement == ACCEL_PLACEMENT_HBM ? "HBM" : "system memory";
	int ret;

	ret = accel_buffer_create(dev, a_bytes, o->placement, &p->ba);
	if (!ret)
		ret = accel_buffer_create(dev, b_bytes, o->placement, &p->bb);
	if (!ret)
		ret = accel_buffer_create(dev, c_bytes, o->placement, &p->bc);
	if (ret) {
		fprintf(stderr, PROG ": cannot allocate A, B and C (%.1f MiB) in %s: %s%s\n",
			(a_bytes + b_bytes + c_bytes) / MIB, where, accel_error_string(ret),
			o->placement == ACCEL_PLACEMENT_HBM ?
			"; try smaller sizes or --placement host" : "; try smaller sizes");
		return ret;
	}
	ret = accel_buffer_upload(p->ba, 0, p->a, a_bytes);
	if (!ret)
		ret = accel_buffer_upload(p->bb, 0, p->b, b_bytes);
	if (ret)
		fprintf(stderr, PROG ": cannot upload A and B: %s\n", accel_error_string(ret));
	return ret;
}

/*
 * The scratch to stage system-memory operands through: as much as the
 * plan for the budget uses.  Fills @plan with what accel_op_matmul() will
 * do with it.
 */
static int create_scratch(struct accel_device *dev, const struct options *o,
			  struct problem *p, uint32_t mxu_dim,
			  struct accel_matmul_plan *plan)
{
	struct accel_matmul_shape shape = {
		.m = p->m, .n = p->n, .k = p->k, .in_dtype = TSR_DTYPE_BF16,
		.out_dtype = TSR_DTYPE_F32, .mxu_dim = mxu_dim,
	};
	uint64_t budget = o->scratch_budget;
	int ret;

	if (o->placement == ACCEL_PLACEMENT_HOST) {
		shape.stage = ACCEL_STAGE_ALL | (o->stage ? ACCEL_STAGE_ALWAYS : 0);
		/* All three, each rounded up to a page: the op aligns its areas. */
		if (budget == UINT64_MAX) {
			budget = page_up((uint64_t)p->m * p->k * 2) +
				 page_up((uint64_t)p->k * p->n * 2) +
				 page_up((uint64_t)p->m * p->n * 4);
			if (budget > 64ull << 20)
				budget = 64ull << 20;
		}
	} else {
		budget = 0;
	}
	ret = accel_matmul_plan(&shape, budget, plan);
	if (ret) {
		fprintf(stderr, PROG ": cannot plan a %ux%ux%u product: %s\n", p->m, p->n,
			p->k, accel_error_string(ret));
		return ret;
	}
	if (!plan->scratch_bytes)
		return 0;
	ret = accel_buffer_create(dev, plan->scratch_bytes, ACCEL_PLACEMENT_HBM, &p->scratch);
	if (ret) {
		fprintf(stderr, PROG ": cannot allocate %.1f MiB of HBM scratch: %s; try a smaller --scratch\n",
			plan->scratch_bytes / MIB, accel_error_string(ret));
		return ret;
	}
	/* The op plans for the whole (page-rounded) buffer. */
	return accel_matmul_plan(&shape, accel_buffer_size(p->scratch), plan);
}

static void print_timing(const struct problem *p, const struct accel_device_info *info,
			 uint32_t iterations, const struct timing *t)
{
	double flop = 2.0 * p->m * p->n * p->k;
	uint64_t cycles = t->status.end_cycle - t->status.start_cycle;
	double modeled_s = cycles / (info->clock_mhz * 1e6);
	double peak = (double)info->peak_bf16_flops;

	printf("wall: best of %u %.3f ms, %.1f GFLOP/s\n", iterations,
	       t->wall_s * 1e3, flop / t->wall_s / 1e9);
	printf("modeled: %.1f TFLOP/s of %.1f peak (%.1f%%), %" PRIu64
	       " cycles (%.2f us at %u MHz; MXUs %" PRIu64 ", DMA %" PRIu64 ")\n",
	       flop / modeled_s / 1e12, peak / 1e12, 100.0 * flop / modeled_s / peak,
	       cycles, modeled_s * 1e6, info->clock_mhz, t->status.mxu_cycles,
	       t->status.dma_cycles);
}

/*
 * Check @rows rows of C, spread evenly from the first to the last, against
 * accel_ref_matmul() on the same bf16 inputs, widened.
 *
 * Tolerance: bf16 x bf16 products are exact in f32 (8 + 8 significant
 * bits), so the chip and the reference differ only in how they add the
 * K products: the chip in f32, in its own blocked order; the reference in
 * double.  Adding K terms of random sign in [-1, 1) one by one in f32
 * errs by about u x K / 4 (u = 2^-24; each partial sum, of size
 * sqrt(k) / 3, rounded once), against a largest |C| of about
 * 1.5 x sqrt(K): relative to that, about u x sqrt(K) / 6, and below
 * u x sqrt(K) for the worst of a million elements.  16 x u x sqrt(K)
 * (3e-5 at K = 1024) leaves room for other summation orders and still
 * catches a wrong tile, whose errors are of the order of C itself.
 */
static int verify(const struct problem *p, uint32_t rows)
{
	float *a = NULL, *b = NULL, *got = NULL, *want = NULL;
	float tol = 16.0f * sqrtf((float)p->k) / (1u << 24);
	double max_err = 0, max_c = 0;
	uint64_t i, j, count;
	size_t bad;
	int ok = 0;

	if (!rows) {
		printf("not verified: --check-rows 0\n");
		return 0;
	}
	printf("checking %u of %u rows on the CPU...\n", rows, p->m);
	fflush(stdout);
	count = (uint64_t)rows * p->n;
	a = malloc((uint64_t)rows * p->k * sizeof(*a));
	b = widen(p->b, (uint64_t)p->k * p->n);
	got = malloc(count * sizeof(*got));
	want = malloc(count * sizeof(*want));
	if (!a || !b || !got || !want) {
		fprintf(stderr, PROG ": out of host memory for the check; try fewer --check-rows\n");
		goto out;
	}
	for (i = 0; i < rows; i++) {
		uint64_t r = rows == 1 ? 0 : i * (p->m - 1) / (rows - 1);

		for (j = 0; j < p->k; j++)
			a[i * p->k + j] = accel_bf16_to_f32(p->a[r * p->k + j]);
		memcpy(got + i * p->n, p->c + r * p->n, p->n * sizeof(*got));
	}
	accel_ref_matmul(a, b, want, rows, p->n, p->k, 0);
	for (i = 0; i < count; i++) {
		max_err = fmax(max_err, fabs((double)got[i] - want[i]));
		max_c = fmax(max_c, fabs(want[i]));
	}
	ok = accel_ref_compare(got, want, count, tol, &bad);
	if (ok)
		printf("verified: %u of %u rows match the CPU reference, max error %.3g of max |C| %.3g (tolerance %.2g relative)\n",
		       rows, p->m, max_err, max_c, tol);
	else
		fprintf(stderr, PROG ": C differs from the CPU reference: checked row %zu, column %zu is %g, want %g (tolerance %.2g of max |C| %.3g)\n",
			bad / p->n, bad % p->n, got[bad], want[bad], tol, max_c);
out:
	free(a);
	free(b);
	free(got);
	free(want);
	return ok ? 0 : -1;
}

static void free_problem(struct problem *p)
{
	accel_buffer_destroy(p->scratch);
	accel_buffer_destroy(p->bc);
	accel_buffer_destroy(p->bb);
	accel_buffer_destroy(p->ba);
	free(p->a);
	free(p->b);
	free(p->c);
}

int main(int argc, char **argv)
{
	struct problem p = { 0 };
	struct accel_device_info info;
	struct accel_matmul_plan plan;
	struct accel_device *dev;
	struct accel_cmdbuf *cb = NULL;
	struct options o;
	struct timing t;
	int ret;

	if (parse_options(argc, argv, &o))
		return EXIT_USAGE;
	p.m = o.m;
	p.n = o.n;
	p.k = o.k;

	if (open_device(o.device, &dev, &info))
		return EXIT_FAILURE;
	printf(PROG ": C[%ux%u] f32 = A[%ux%u] bf16 x B[%ux%u] bf16, operands in %s\n",
	       p.m, p.n, p.m, p.k, p.k, p.n,
	       o.placement == ACCEL_PLACEMENT_HBM ? "HBM" : "system memory");
	printf("device %u: %s, %u TensorCores x %u MXUs of %ux%u at %u MHz, peak %.1f TFLOP/s\n",
	       o.device, accel_preset_name(info.preset), info.tensorcores, info.mxus_per_core,
	       info.mxu_dim, info.mxu_dim, info.clock_mhz, (double)info.peak_bf16_flops / 1e12);

	ret = -1;
	p.a = random_bf16((uint64_t)p.m * p.k, 1);
	p.b = random_bf16((uint64_t)p.k * p.n, 2);
	p.c = malloc((uint64_t)p.m * p.n * sizeof(*p.c));
	if (!p.a || !p.b || !p.c) {
		fprintf(stderr, PROG ": out of host memory for the operands; try smaller sizes\n");
		goto out;
	}
	ret = create_buffers(dev, &o, &p);
	if (!ret)
		ret = create_scratch(dev, &o, &p, info.mxu_dim, &plan);
	if (!ret)
		ret = accel_cmdbuf_create(dev, &cb);
	if (ret)
		goto out;
	describe_plan(&plan);

	ret = accel_op_matmul(cb, p.scratch,
			      &(struct accel_tensor){ p.ba, 0, p.m, p.k, 0, TSR_DTYPE_BF16 },
			      &(struct accel_tensor){ p.bb, 0, p.k, p.n, 0, TSR_DTYPE_BF16 },
			      &(struct accel_tensor){ p.bc, 0, p.m, p.n, 0, TSR_DTYPE_F32 },
			      o.stage ? ACCEL_MATMUL_STAGE : 0);
	if (ret) {
		fprintf(stderr, PROG ": %s\n", accel_cmdbuf_last_error(cb));
		goto out;
	}
	printf("job: %u command%s\n", accel_cmdbuf_count(cb),
	       accel_cmdbuf_count(cb) == 1 ? "" : "s");

	ret = run(dev, cb, o.iterations, &t);
	if (ret)
		goto out;
	print_timing(&p, &info, o.iterations, &t);

	ret = accel_buffer_download(p.bc, 0, p.c, (uint64_t)p.m * p.n * sizeof(*p.c));
	if (ret) {
		fprintf(stderr, PROG ": cannot download C: %s\n", accel_error_string(ret));
		goto out;
	}
	ret = verify(&p, o.check_rows);
out:
	accel_cmdbuf_destroy(cb);
	free_problem(&p);
	accel_device_close(dev);
	return ret ? EXIT_FAILURE : EXIT_SUCCESS;
}
