// SPDX-License-Identifier: MIT
/*
 * tessera-collbench: libaccel's collectives over a sweep of sizes, as
 * nccl-tests' *_perf programs run NCCL's: their options, their table
 * (nccl-tests' src/util.cu, writeResultHeader() to writeResultFooter()),
 * modeled or wall time, algorithm and bus bandwidth by their definitions,
 * and the elements that differ from the CPU's answer.
 * Documentation/collectives.md, "Measuring".
 *
 * This file: the options, the table and the JSON.  collbench-run.c runs
 * the collectives and checks them.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "collbench.h"
#include "tessera-cli.h"

#define MAX_SIZES 64
#define MAX_ITERS 1000000u
/* The largest vector: 2^28 elements of f32. */
#define MAX_BYTES (1ull << 30)

/* parse_options() result meaning "go on and run". */
#define RUN_BENCH (-1)

/* ------------------------------------------------------------ messages */

static void print_help(void)
{
	printf("Usage: " PROGRAM " [COLLECTIVE] [OPTION]...\n"
	       "   or: all_reduce_perf [OPTION]...   (a link named after nccl-tests' programs)\n"
	       "Run libaccel's collectives over every chip of the slice, over a sweep\n"
	       "of sizes, and print their time and bandwidth as nccl-tests' *_perf\n"
	       "programs do, with their options.  Every host of the slice runs it with\n"
	       "the same options (tools/tessera-slice -- " PROGRAM " ...); the host of\n"
	       "chip 0 prints.\n"
	       "\n"
	       "COLLECTIVE: all_reduce_perf, all_gather_perf, broadcast_perf,\n"
	       "reduce_scatter_perf, alltoall_perf, sendrecv_perf (or without _perf,\n"
	       "or all-reduce, all-gather, reduce-scatter, all-to-all); several\n"
	       "separated by commas, or all (default all_reduce_perf).\n"
	       "\n"
	       "  -b, --minbytes SIZE    the smallest size, in bytes; K, M and G are\n"
	       "                         powers of 1024 (default 64K)\n"
	       "  -e, --maxbytes SIZE    the largest (default 4M; at most 1G)\n"
	       "  -f, --stepfactor N     each size N times the one before (default 4)\n"
	       "  -n, --iters N          timed calls per row (default 5)\n"
	       "  -w, --warmup_iters N   calls before them, not timed (default 1)\n"
	       "  -c, --check 0|1        check every result against the CPU (default 1)\n"
	       "  -o, --op OP            sum, max or min (default sum)\n"
	       "  -d, --datatype TYPE    float, bfloat16 or int32 (default float)\n"
	       "  -r, --root N           broadcast's root rank (default 0)\n"
	       "  -a, --average 0-3      the hosts' times: 0 rank 0's, 1 their mean,\n"
	       "                         2 the least, 3 the most (default 1)\n"
	       "  -z, --blocking 0|1     1: wait for each call before the next (default 0)\n"
	       "      --algo ALGO        pincer, one-colour or both (default pincer)\n"
	       "      --clock CLOCK      the time columns by the chips' modeled clock\n"
	       "                         (modeled, the default) or the host's (wall)\n"
	       "      --only PLACE       out-of-place or in-place: run one half only\n"
	       "      --json             the rows as one JSON object, on one line\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n"
	       "Sizes, counts and bandwidths are nccl-tests': busbw is algbw x 2(n-1)/n\n"
	       "for all-reduce, x (n-1)/n for all-gather, reduce-scatter and all-to-all,\n"
	       "x 1 for broadcast and sendrecv, n the chips in the slice.  A half the\n"
	       "library has no form of (in-place all-gather, reduce-scatter, all-to-all\n"
	       "and sendrecv; out-of-place broadcast) shows N/A.\n"
	       "\n"
	       "Exit status: 0 every result right, 1 a result wrong, 2 usage error,\n"
	       "3 no Tessera chips or no slice here, 4 a collective or device call failed.\n"
	       "Documentation/collectives.md, \"Measuring\", shows the output.\n");
}

static void print_version(void)
{
	printf(PROGRAM " %d.%d.%d (libaccel %s)\n", ACCEL_VERSION_MAJOR,
	       ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH, accel_version_string());
}

/* ------------------------------------------------------------ options */

/* "4096", "64K", "16M", "1G": bytes, the suffixes powers of 1024. */
static bool parse_size(const char *option, const char *text, uint64_t *out)
{
	unsigned long long v;
	unsigned int shift = 0;
	char *end;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (*end && !end[1])
		shift = toupper((unsigned char)*end) == 'K' ? 10 :
			toupper((unsigned char)*end) == 'M' ? 20 :
			toupper((unsigned char)*end) == 'G' ? 30 : 64;
	else if (*end)
		shift = 64;
	if (errno || end == text || !isdigit((unsigned char)text[0]) ||
	    shift == 64 || v < 1 || v > (MAX_BYTES >> shift)) {
		usage_error("%s takes a size in bytes from 1 to 1G, such as 4096, 64K or 16M, not '%s'",
			    option, text);
		return false;
	}
	*out = (uint64_t)v << shift;
	return true;
}

static bool parse_number(const char *option, const char *text, unsigned int min,
			 unsigned int *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || end == text || *end || !isdigit((unsigned char)text[0]) ||
	    v < min || v > MAX_ITERS) {
		usage_error("%s takes a number from %u to %u, not '%s'", option, min,
			    MAX_ITERS, text);
		return false;
	}
	*out = v;
	return true;
}

/*
 * The collective named @name (nccl-tests' program, with or without
 * "_perf", or this tool's name for it), COLLECTIVES for "all", -1 for none.
 */
static int collective_named(const char *name)
{
	size_t len = strlen(name);
	int c;

	if (len > 5 && !strcmp(name + len - 5, "_perf"))
		len -= 5;
	for (c = 0; c < COLLECTIVES; c++)
		if ((!strncmp(name, perf_name(c), len) &&
		     !strcmp(perf_name(c) + len, "_perf")) ||
		    !strcmp(name, collective_name(c)))
			return c;
	return strcmp(name, "all") ? -1 : COLLECTIVES;
}

static bool parse_collectives(const char *text, struct options *opts)
{
	char *copy = strdup(text), *name, *save = NULL;
	bool ok = copy && *text;
	int c;

	memset(opts->collective, 0, sizeof(opts->collective));
	for (name = strtok_r(copy, ",", &save); ok && name;
	     name = strtok_r(NULL, ",", &save)) {
		c = collective_named(name);
		ok = c >= 0;
		if (c == COLLECTIVES)
			memset(opts->collective, 1, sizeof(opts->collective));
		else if (ok)
			opts->collective[c] = true;
	}
	free(copy);
	for (c = 0; ok && c < COLLECTIVES && !opts->collective[c]; c++)
		;
	ok = ok && c < COLLECTIVES;
	if (!ok)
		usage_error("no collective '%s': all_reduce_perf, all_gather_perf, broadcast_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf (or several, separated by commas, or all)",
			    text);
	return ok;
}

/* nccl-tests' type names, and this tool's older ones. */
static bool parse_dtype(const char *text, enum tsr_dtype *out)
{
	static const struct { const char *name, *alias; enum tsr_dtype dtype; } types[] = {
		{ "float", "f32", TSR_DTYPE_F32 },
		{ "bfloat16", "bf16", TSR_DTYPE_BF16 },
		{ "int32", "i32", TSR_DTYPE_I32 },
	};
	unsigned int i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		if (!strcmp(text, types[i].name) || !strcmp(text, types[i].alias)) {
			*out = types[i].dtype;
			return true;
		}
	}
	usage_error("--datatype takes float, bfloat16 or int32 (libaccel's collectives have no other), not '%s'",
		    text);
	return false;
}

/* nccl-tests' name of @dtype. */
static const char *dtype_name(enum tsr_dtype dtype)
{
	return dtype == TSR_DTYPE_BF16 ? "bfloat16" :
	       dtype == TSR_DTYPE_I32 ? "int32" : "float";
}

static bool parse_op(const char *text, enum accel_reduce_op *out)
{
	static const enum accel_reduce_op ops[] = {
		ACCEL_REDUCE_SUM, ACCEL_REDUCE_MAX, ACCEL_REDUCE_MIN,
	};
	unsigned int i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (!strcmp(text, op_name(ops[i]))) {
			*out = ops[i];
			return true;
		}
	}
	usage_error("--op takes sum, max or min (libaccel's collectives have no other), not '%s'",
		    text);
	return false;
}

static bool parse_algo(const char *text, struct options *opts)
{
	if (!strcmp(text, "pincer") || !strcmp(text, "both")) {
		opts->algo[0] = ACCEL_COLL_PINCER;
		opts->algo[1] = ACCEL_COLL_ONE_COLOUR;
		opts->algos = text[0] == 'b' ? 2 : 1;
		return true;
	}
	if (!strcmp(text, "one-colour")) {
		opts->algo[0] = ACCEL_COLL_ONE_COLOUR;
		opts->algos = 1;
		return true;
	}
	usage_error("--algo takes pincer, one-colour or both, not '%s'", text);
	return false;
}

/* One of @words (@n of them) for @option: its index, or -1. */
static int parse_word(const char *option, const char *text,
		      const char *const *words, unsigned int n)
{
	char list[128] = "";
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (!strcmp(text, words[i]))
			return (int)i;
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s",
			 !i ? "" : i + 1 < n ? ", " : " or ", words[i]);
	}
	usage_error("%s takes %s, not '%s'", option, list, text);
	return -1;
}

enum { OPT_ALGO = 256, OPT_CLOCK, OPT_ONLY, OPT_JSON };

static const struct option long_options[] = {
	{ "minbytes", required_argument, NULL, 'b' },
	{ "maxbytes", required_argument, NULL, 'e' },
	{ "stepfactor", required_argument, NULL, 'f' },
	{ "iters", required_argument, NULL, 'n' },
	{ "warmup_iters", required_argument, NULL, 'w' },
	{ "check", required_argument, NULL, 'c' },
	{ "op", required_argument, NULL, 'o' },
	{ "datatype", required_argument, NULL, 'd' },
	{ "root", required_argument, NULL, 'r' },
	{ "average", required_argument, NULL, 'a' },
	{ "blocking", required_argument, NULL, 'z' },
	{ "algo", required_argument, NULL, OPT_ALGO },
	{ "clock", required_argument, NULL, OPT_CLOCK },
	{ "only", required_argument, NULL, OPT_ONLY },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static bool parse_option(int c, struct options *opts)
{
	static const char *const places[] = { "out-of-place", "in-place" };
	static const char *const clocks[] = { "modeled", "wall" };
	static const char *const flags[] = { "0", "1" };
	static const char *const averages[] = { "0", "1", "2", "3" };
	unsigned int factor;
	int w;

	switch (c) {
	case 'b':
		return parse_size("--minbytes", optarg, &opts->min_bytes);
	case 'e':
		return parse_size("--maxbytes", optarg, &opts->max_bytes);
	case 'f':
		if (!parse_number("--stepfactor", optarg, 2, &factor))
			return false;
		opts->factor = factor;
		return true;
	case 'n':
		return parse_number("--iters", optarg, 1, &opts->iters);
	case 'w':
		return parse_number("--warmup_iters", optarg, 0, &opts->warmup);
	case 'c':
		w = parse_word("--check", optarg, flags, 2);
		opts->check = w == 1;
		return w >= 0;
	case 'o':
		return parse_op(optarg, &opts->op);
	case 'd':
		return parse_dtype(optarg, &opts->dtype);
	case 'r':
		return parse_number("--root", optarg, 0, &opts->root);
	case 'a':
		w = parse_word("--average", optarg, averages, 4);
		opts->average = (enum average)w;
		return w >= 0;
	case 'z':
		w = parse_word("--blocking", optarg, flags, 2);
		opts->blocking = w == 1;
		return w >= 0;
	case OPT_ALGO:
		return parse_algo(optarg, opts);
	case OPT_CLOCK:
		w = parse_word("--clock", optarg, clocks, 2);
		opts->wall = w == 1;
		return w >= 0;
	case OPT_ONLY:
		w = parse_word("--only", optarg, places, 2);
		opts->place[OUT_OF_PLACE] = w == OUT_OF_PLACE;
		opts->place[IN_PLACE] = w == IN_PLACE;
		return w >= 0;
	case OPT_JSON:
		opts->json = true;
		return true;
	}
	return false;
}

/* RUN_BENCH, or the exit status for --help, --version and mistakes. */
static int parse_options(int argc, char *argv[], struct options *opts)
{
	const char *program = basename(argv[0]);
	int c;

	*opts = (struct options){
		.collective = { [COLL_ALL_REDUCE] = true },
		.min_bytes = 64 << 10, .max_bytes = 4 << 20, .factor = 4,
		.dtype = TSR_DTYPE_F32, .op = ACCEL_REDUCE_SUM,
		.algo = { ACCEL_COLL_PINCER }, .algos = 1,
		.iters = 5, .warmup = 1, .check = true,
		.average = AVERAGE_MEAN, .place = { true, true },
	};
	/* Called as nccl-tests' all_reduce_perf (a link), or given one. */
	if (strcmp(program, PROGRAM) && !parse_collectives(program, opts))
		return EXIT_USAGE;
	if (argc > 1 && argv[1][0] != '-') {
		if (!parse_collectives(argv[1], opts))
			return EXIT_USAGE;
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":b:e:f:n:w:c:o:d:r:a:z:hV",
				long_options, NULL)) != -1) {
		if (c == 'h') {
			print_help();
			return EXIT_OK;
		}
		if (c == 'V') {
			print_version();
			return EXIT_OK;
		}
		if (c == '?' || c == ':') {
			report_bad_option(c, argv);
			return EXIT_USAGE;
		}
		if (!parse_option(c, opts))
			return EXIT_USAGE;
	}
	if (optind < argc) {
		usage_error("unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (opts->min_bytes > opts->max_bytes) {
		usage_error("--minbytes (%llu) is larger than --maxbytes (%llu)",
			    (unsigned long long)opts->min_bytes,
			    (unsigned long long)opts->max_bytes);
		return EXIT_USAGE;
	}
	return RUN_BENCH;
}

static unsigned int sweep(const struct options *opts, uint64_t *sizes)
{
	unsigned int n = 0;
	uint64_t s;

	for (s = opts->min_bytes; s <= opts->max_bytes && n < MAX_SIZES;
	     s *= opts->factor)
		sizes[n++] = s;
	return n;
}

/* ------------------------------------------------------------ output */

/* nccl-tests' bus bandwidth factor for @coll over @n chips. */
static double bus_factor(enum collective coll, unsigned int n)
{
	double f = (double)(n - 1) / n;

	switch (coll) {
	case COLL_ALL_REDUCE:
		return 2 * f;
	case COLL_BROADCAST:
	case COLL_SENDRECV:
		return 1;
	default:
		return f;
	}
}

/* GB/s of @bytes in @us microseconds; 0 for no time. */
static double gbytes(uint64_t bytes, double us)
{
	return us > 0 ? bytes / us / 1e3 : 0;
}

static const char *shape_name(const struct bench_slice *s)
{
	uint32_t all = 0;
	unsigned int d;

	for (d = 0; d < 3; d++)
		all |= s->topology[d] > 1 ? 1u << d : 0;
	return (s->wrap & all) == all ? "torus" : s->wrap & all ? "partly wrapped" :
							      "mesh";
}

/* The time a half reports: the chips' modeled clock, or with --clock wall the host's. */
static double half_us(const struct options *opts, const struct half *h)
{
	return opts->wall ? h->wall_us : h->modeled_us;
}

/* nccl-tests' getFloatStr(): @value in @width characters, as precise as fits. */
static void float_str(double value, int width, char *str)
{
	if (snprintf(str, width + 1, "%*.2f", width, value) <= width)
		return;
	if (snprintf(str, width + 1, "%*.1f", width, value) <= width)
		return;
	if (snprintf(str, width + 1, "%*.0f", width, value) <= width)
		return;
	snprintf(str, width + 1, width >= 7 ? "%*.1e" : "%*.0e", width, value);
}

/* nccl-tests' writeResultHeader(), and what a reader needs of the slice first. */
static void print_header(const struct options *opts, const struct bench_slice *s,
			 enum collective coll, unsigned int algo)
{
	printf("# Collective test starting: %s\n", perf_name(coll));
	printf("# nThread 1 nGpus %u minBytes %llu maxBytes %llu step: %llu(factor) warmup iters: %u iters: %u agg iters: 1 validation: %d graph: 0\n",
	       s->local, (unsigned long long)opts->min_bytes,
	       (unsigned long long)opts->max_bytes,
	       (unsigned long long)opts->factor, opts->warmup, opts->iters,
	       opts->check);
	printf("#\n");
	printf("# " PROGRAM " %d.%d.%d: %ux%ux%u %s, %u chips (%u on this host); algo %s (%u colour%s)\n",
	       ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH,
	       s->topology[0], s->topology[1], s->topology[2], shape_name(s),
	       s->chips, s->local, algo_name(opts->algo[algo]), s->colours[algo],
	       s->colours[algo] == 1 ? "" : "s");
	printf("# time: %s; %u links per chip x %.2f GB/s = %.2f GB/s per chip\n",
	       opts->wall ? "the host's wall clock" : "the chips' modeled clock (--clock wall for the host's)",
	       s->links_per_chip, s->link_gbytes, s->links_per_chip * s->link_gbytes);
	printf("#\n");
	printf("# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
	       "", "", "", "", "");
	printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n",
	       "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
	       "#wrong", "time", "algbw", "busbw", "#wrong");
	printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s \n",
	       "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "",
	       "(us)", "(GB/s)", "(GB/s)", "");
}

/* nccl-tests' writeBenchmarkLineBody(); N/A where the library lacks the form. */
static void print_half(const struct options *opts, const struct bench_slice *s,
		       const struct row *r, const struct half *h)
{
	double us = half_us(opts, h), alg = gbytes(r->bytes, us);
	char time[8], algbw[7], busbw[7];

	if (!h->measured) {
		printf("  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
		return;
	}
	float_str(us, 7, time);
	float_str(alg, 6, algbw);
	float_str(alg * bus_factor(r->coll, s->chips), 6, busbw);
	if (h->wrong >= 0)
		printf("  %7s  %6s  %6s  %6g", time, algbw, busbw, h->wrong);
	else
		printf("  %7s  %6s  %6s    N/A", time, algbw, busbw);
}

static bool reduces(enum collective coll)
{
	return coll == COLL_ALL_REDUCE || coll == COLL_REDUCE_SCATTER;
}

/* nccl-tests' writeBenchmarkLinePreamble() and the two halves. */
static void print_row(const struct options *opts, const struct bench_slice *s,
		      const struct row *r)
{
	printf("%12llu  %12llu  %8s  %6s  %6d", (unsigned long long)r->bytes,
	       (unsigned long long)r->count, dtype_name(opts->dtype),
	       reduces(r->coll) ? op_name(opts->op) : "none",
	       r->coll == COLL_BROADCAST ? (int)opts->root : -1);
	print_half(opts, s, r, &r->half[OUT_OF_PLACE]);
	print_half(opts, s, r, &r->half[IN_PLACE]);
	printf("\n");
	fflush(stdout);
}

/* What nccl-tests' footer sums up: halves with a wrong element, mean busbw. */
struct totals {
	unsigned int wrong;
	double busbw;
	unsigned int halves;
};

static void add_totals(const struct options *opts, const struct bench_slice *s,
		       const struct row *r, struct totals *t)
{
	enum place p;

	for (p = 0; p < PLACES; p++) {
		const struct half *h = &r->half[p];

		if (!h->measured)
			continue;
		t->wrong += h->wrong > 0;
		t->busbw += gbytes(r->bytes, half_us(opts, h)) *
			    bus_factor(r->coll, s->chips);
		t->halves++;
	}
}

/* nccl-tests' writeResultFooter(). */
static void print_footer(enum collective coll, const struct totals *t)
{
	printf("# %-20s : %u %s\n", "Out of bounds values", t->wrong,
	       t->wrong ? "FAILED" : "OK");
	printf("# %-20s : %g \n", "Avg bus bandwidth",
	       t->halves ? t->busbw / t->halves : 0);
	printf("#\n");
	printf("# Collective test concluded: %s\n", perf_name(coll));
}

static json_object *json_double(double v)
{
	return json_object_new_double(v);
}

/* A half's figures; NULL for one the library has no form of. */
static json_object *json_half(const struct bench_slice *s, const struct row *r,
			      const struct half *h)
{
	json_object *o;
	double bus = bus_factor(r->coll, s->chips);

	if (!h->measured)
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "time_us", json_double(h->wall_us));
	json_object_object_add(o, "algbw", json_double(gbytes(r->bytes, h->wall_us)));
	json_object_object_add(o, "busbw", json_double(gbytes(r->bytes, h->wall_us) * bus));
	json_object_object_add(o, "modeled_time_us", json_double(h->modeled_us));
	json_object_object_add(o, "modeled_algbw", json_double(gbytes(r->bytes, h->modeled_us)));
	json_object_object_add(o, "modeled_busbw",
			       json_double(gbytes(r->bytes, h->modeled_us) * bus));
	json_object_object_add(o, "wrong", h->wrong < 0 ? NULL :
			       json_object_new_int64((int64_t)h->wrong));
	return o;
}

/*
 * A row: its shape, "out_of_place" and "in_place" (null where the
 * library has no such form), and at the top the figures of the first
 * half measured, for readers of one figure per row.
 */
static json_object *json_row(const struct options *opts,
			     const struct bench_slice *s, const struct row *r)
{
	json_object *o = json_object_new_object();
	json_object *halves[PLACES];
	enum place p, first = PLACES;

	for (p = 0; p < PLACES; p++) {
		halves[p] = json_half(s, r, &r->half[p]);
		if (halves[p] && first == PLACES)
			first = p;
	}
	json_object_object_add(o, "collective", json_object_new_string(collective_name(r->coll)));
	json_object_object_add(o, "algo", json_object_new_string(algo_name(r->algo)));
	json_object_object_add(o, "size", json_object_new_int64(r->bytes));
	json_object_object_add(o, "count", json_object_new_int64(r->count));
	json_object_object_add(o, "type", json_object_new_string(dtype_name(opts->dtype)));
	json_object_object_add(o, "redop", json_object_new_string(
		reduces(r->coll) ? op_name(opts->op) : "none"));
	json_object_object_add(o, "root", json_object_new_int(
		r->coll == COLL_BROADCAST ? (int)opts->root : -1));
	if (first < PLACES) {
		json_object_object_add(o, "in_place", json_object_new_boolean(first == IN_PLACE));
		json_object_object_foreach(halves[first], key, val)
			json_object_object_add(o, key, json_object_get(val));
	}
	json_object_object_add(o, "out_of_place", halves[OUT_OF_PLACE]);
	json_object_object_add(o, "in_place_result", halves[IN_PLACE]);
	return o;
}

static json_object *json_run(const struct options *opts,
			     const struct bench_slice *s)
{
	json_object *o = json_object_new_object(), *topo = json_object_new_array();
	json_object *colours = json_object_new_object();
	unsigned int d;

	for (d = 0; d < 3; d++)
		json_object_array_add(topo, json_object_new_int(s->topology[d]));
	for (d = 0; d < opts->algos; d++)
		json_object_object_add(colours, algo_name(opts->algo[d]),
				       json_object_new_int(s->colours[d]));
	json_object_object_add(o, "program", json_object_new_string(PROGRAM));
	json_object_object_add(o, "libaccel", json_object_new_string(accel_version_string()));
	json_object_object_add(o, "topology", topo);
	json_object_object_add(o, "shape", json_object_new_string(shape_name(s)));
	json_object_object_add(o, "chips", json_object_new_int(s->chips));
	json_object_object_add(o, "local_chips", json_object_new_int(s->local));
	json_object_object_add(o, "colours", colours);
	json_object_object_add(o, "clock_mhz", json_object_new_int(s->clock_mhz));
	json_object_object_add(o, "links_per_chip", json_object_new_int(s->links_per_chip));
	json_object_object_add(o, "link_gbytes", json_double(s->link_gbytes));
	json_object_object_add(o, "bound_gbytes",
			       json_double(s->links_per_chip * s->link_gbytes));
	json_object_object_add(o, "iters", json_object_new_int(opts->iters));
	json_object_object_add(o, "warmup", json_object_new_int(opts->warmup));
	json_object_object_add(o, "rows", json_object_new_array());
	return o;
}

/* ------------------------------------------------------------ main */

/* One table: @coll by algorithm @a over the sweep of @sizes (@n). */
static int run_table(const struct options *opts, struct bench *b,
		     const struct bench_slice *s, enum collective coll,
		     unsigned int a, const uint64_t *sizes, unsigned int n,
		     json_object *doc, bool *wrong)
{
	struct totals t = { 0 };
	bool table = s->prints && !doc;
	int status = EXIT_OK;
	unsigned int i;

	if (table)
		print_header(opts, s, coll, a);
	for (i = 0; !status && i < n; i++) {
		struct row r = { .coll = coll, .bytes = sizes[i] };

		status = bench_row(b, a, &r);
		if (status)
			break;
		add_totals(opts, s, &r, &t);
		if (doc)
			json_object_array_add(json_object_object_get(doc, "rows"),
					      json_row(opts, s, &r));
		else if (table)
			print_row(opts, s, &r);
	}
	*wrong |= t.wrong > 0;
	if (table && !status)
		print_footer(coll, &t);
	return status;
}

static int run(const struct options *opts, struct bench *b,
	       const struct bench_slice *s)
{
	uint64_t sizes[MAX_SIZES];
	unsigned int n = sweep(opts, sizes), a;
	json_object *doc = opts->json ? json_run(opts, s) : NULL;
	bool wrong = false;
	int status = EXIT_OK;
	enum collective c;

	for (c = 0; !status && c < COLLECTIVES; c++) {
		for (a = 0; !status && opts->collective[c] && a < opts->algos; a++)
			status = run_table(opts, b, s, c, a, sizes, n, doc, &wrong);
	}
	if (doc && s->prints && !status)
		printf("%s\n", json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN));
	json_object_put(doc);
	return status ? status : wrong ? EXIT_WRONG : EXIT_OK;
}

int main(int argc, char *argv[])
{
	struct options opts;
	struct bench_slice slice;
	struct bench *b;
	int status = parse_options(argc, argv, &opts);

	if (status != RUN_BENCH)
		return status;
	status = bench_open(&opts, &b, &slice);
	if (!status)
		status = run(&opts, b, &slice);
	bench_close(b);
	return status;
}
