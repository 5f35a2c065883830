// SPDX-License-Identifier: MIT
/*
 * tessera-collbench: libaccel's collectives over a sweep of sizes, in the
 * manner of nccl-tests' all_reduce_perf: wall and modeled time, algorithm
 * and bus bandwidth (nccl-tests' definitions), and the elements that
 * differ from the CPU's answer.  Documentation/collectives.md, "Measuring".
 *
 * This file: the options, the table and the JSON.  collbench-run.c runs
 * the collectives and checks them.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
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
	printf("Usage: " PROGRAM " [OPTION]...\n"
	       "Run libaccel's collectives over every chip of the slice, over a sweep\n"
	       "of sizes, and print their time and bandwidth, wall and modeled, as\n"
	       "nccl-tests does.  Every host of the slice runs it with the same options\n"
	       "(tools/tessera-slice -- " PROGRAM " ...); the host of chip 0 prints.\n"
	       "\n"
	       "  -c, --collective LIST  all-reduce, reduce-scatter, all-gather or all;\n"
	       "                         several separated by commas (default all-reduce)\n"
	       "  -b, --minbytes SIZE    the smallest vector, in bytes; K, M and G are\n"
	       "                         powers of 1024 (default 64K)\n"
	       "  -e, --maxbytes SIZE    the largest vector (default 4M; at most 1G)\n"
	       "  -f, --stepfactor N     each size N times the one before (default 4)\n"
	       "  -d, --datatype TYPE    f32 or bf16 (default f32)\n"
	       "  -o, --op OP            sum, max or min (default sum)\n"
	       "  -a, --algo ALGO        pincer, one-colour or both (default pincer)\n"
	       "  -n, --iters N          timed calls per row (default 5)\n"
	       "  -w, --warmup N         calls before them, not timed (default 1)\n"
	       "  -C, --no-check         do not check the results (#wrong shows -)\n"
	       "  -j, --json             the rows as one JSON object, on one line\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n"
	       "SIZE is the whole vector, as in nccl-tests: each chip's input for\n"
	       "all-reduce, the input of all chips together for reduce-scatter and\n"
	       "all-gather.  busbw is algbw x 2(n-1)/n for all-reduce and x (n-1)/n for\n"
	       "the others, n the chips in the slice; the modeled columns use the\n"
	       "chips' modeled clock.\n"
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

/* The collective named @name, COLLECTIVES for "all", -1 for none. */
static int collective_named(const char *name)
{
	int c;

	for (c = 0; c < COLLECTIVES; c++)
		if (!strcmp(name, collective_name(c)))
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
		usage_error("--collective takes all-reduce, reduce-scatter, all-gather or all (or several, such as all-reduce,all-gather), not '%s'",
			    text);
	return ok;
}

static bool parse_dtype(const char *text, enum tsr_dtype *out)
{
	if (!strcmp(text, "f32") || !strcmp(text, "bf16")) {
		*out = text[0] == 'f' ? TSR_DTYPE_F32 : TSR_DTYPE_BF16;
		return true;
	}
	usage_error("--datatype takes f32 or bf16, not '%s'", text);
	return false;
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
	usage_error("--op takes sum, max or min, not '%s'", text);
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

static const struct option long_options[] = {
	{ "collective", required_argument, NULL, 'c' },
	{ "minbytes", required_argument, NULL, 'b' },
	{ "maxbytes", required_argument, NULL, 'e' },
	{ "stepfactor", required_argument, NULL, 'f' },
	{ "datatype", required_argument, NULL, 'd' },
	{ "op", required_argument, NULL, 'o' },
	{ "algo", required_argument, NULL, 'a' },
	{ "iters", required_argument, NULL, 'n' },
	{ "warmup", required_argument, NULL, 'w' },
	{ "no-check", no_argument, NULL, 'C' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

static bool parse_option(int c, struct options *opts)
{
	unsigned int factor;

	switch (c) {
	case 'c':
		return parse_collectives(optarg, opts);
	case 'b':
		return parse_size("--minbytes", optarg, &opts->min_bytes);
	case 'e':
		return parse_size("--maxbytes", optarg, &opts->max_bytes);
	case 'f':
		if (!parse_number("--stepfactor", optarg, 2, &factor))
			return false;
		opts->factor = factor;
		return true;
	case 'd':
		return parse_dtype(optarg, &opts->dtype);
	case 'o':
		return parse_op(optarg, &opts->op);
	case 'a':
		return parse_algo(optarg, opts);
	case 'n':
		return parse_number("--iters", optarg, 1, &opts->iters);
	case 'w':
		return parse_number("--warmup", optarg, 0, &opts->warmup);
	case 'C':
		opts->check = false;
		return true;
	case 'j':
		opts->json = true;
		return true;
	}
	return false;
}

/* RUN_BENCH, or the exit status for --help, --version and mistakes. */
static int parse_options(int argc, char *argv[], struct options *opts)
{
	int c;

	*opts = (struct options){
		.collective = { [COLL_ALL_REDUCE] = true },
		.min_bytes = 64 << 10, .max_bytes = 4 << 20, .factor = 4,
		.dtype = TSR_DTYPE_F32, .op = ACCEL_REDUCE_SUM,
		.algo = { ACCEL_COLL_PINCER }, .algos = 1,
		.iters = 5, .warmup = 1, .check = true,
	};
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:b:e:f:d:o:a:n:w:CjhV",
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

	return coll == COLL_ALL_REDUCE ? 2 * f : f;
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

static void print_header(const struct options *opts, const struct bench_slice *s)
{
	unsigned int a;

	printf("# " PROGRAM " %d.%d.%d: %ux%ux%u %s, %u chips (%u on this host); %s %s; %u iteration%s after %u warm-up\n",
	       ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH,
	       s->topology[0], s->topology[1], s->topology[2], shape_name(s),
	       s->chips, s->local, accel_dtype_name(opts->dtype),
	       op_name(opts->op), opts->iters, opts->iters == 1 ? "" : "s",
	       opts->warmup);
	printf("# modeled clock %u MHz; %u links per chip x %.2f GB/s = %.2f GB/s per chip;",
	       s->clock_mhz, s->links_per_chip, s->link_gbytes,
	       s->links_per_chip * s->link_gbytes);
	for (a = 0; a < opts->algos; a++)
		printf(" %s %u colour%s%s", algo_name(opts->algo[a]), s->colours[a],
		       s->colours[a] == 1 ? "" : "s", a + 1 < opts->algos ? "," : "\n");
}

static void print_columns(enum collective coll)
{
	printf("#\n# %s\n"
	       "#                                                    wall clock                 modeled clock\n"
	       "#       size       count  type  redop        algo      time   algbw   busbw       time   algbw   busbw  #wrong\n"
	       "#        (B)  (elements)                               (us)  (GB/s)  (GB/s)       (us)  (GB/s)  (GB/s)\n",
	       collective_name(coll));
}

static void print_row(const struct options *opts, const struct bench_slice *s,
		      const struct row *r)
{
	double bus = bus_factor(r->coll, s->chips);
	double wall = gbytes(r->bytes, r->wall_us);
	double model = gbytes(r->bytes, r->modeled_us);
	char wrong[24] = "-";

	if (r->wrong >= 0)
		snprintf(wrong, sizeof(wrong), "%.0f", r->wrong);
	printf("%12llu %11llu %5s %6s %11s %9.1f %7.2f %7.2f %10.1f %7.2f %7.2f %7s\n",
	       (unsigned long long)r->bytes, (unsigned long long)r->count,
	       accel_dtype_name(opts->dtype),
	       r->coll == COLL_ALL_GATHER ? "none" : op_name(opts->op),
	       algo_name(r->algo), r->wall_us, wall, wall * bus, r->modeled_us,
	       model, model * bus, wrong);
	fflush(stdout);
}

static json_object *json_double(double v)
{
	return json_object_new_double(v);
}

static json_object *json_row(const struct options *opts,
			     const struct bench_slice *s, const struct row *r)
{
	json_object *o = json_object_new_object();
	double bus = bus_factor(r->coll, s->chips);

	json_object_object_add(o, "collective", json_object_new_string(collective_name(r->coll)));
	json_object_object_add(o, "algo", json_object_new_string(algo_name(r->algo)));
	json_object_object_add(o, "size", json_object_new_int64(r->bytes));
	json_object_object_add(o, "count", json_object_new_int64(r->count));
	json_object_object_add(o, "type", json_object_new_string(accel_dtype_name(opts->dtype)));
	json_object_object_add(o, "redop", json_object_new_string(
		r->coll == COLL_ALL_GATHER ? "none" : op_name(opts->op)));
	json_object_object_add(o, "time_us", json_double(r->wall_us));
	json_object_object_add(o, "algbw", json_double(gbytes(r->bytes, r->wall_us)));
	json_object_object_add(o, "busbw", json_double(gbytes(r->bytes, r->wall_us) * bus));
	json_object_object_add(o, "modeled_time_us", json_double(r->modeled_us));
	json_object_object_add(o, "modeled_algbw", json_double(gbytes(r->bytes, r->modeled_us)));
	json_object_object_add(o, "modeled_busbw",
			       json_double(gbytes(r->bytes, r->modeled_us) * bus));
	json_object_object_add(o, "wrong", r->wrong < 0 ? NULL :
			       json_object_new_int64((int64_t)r->wrong));
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

static int run(const struct options *opts, struct bench *b,
	       const struct bench_slice *s)
{
	uint64_t sizes[MAX_SIZES];
	unsigned int n = sweep(opts, sizes), i, a;
	json_object *doc = opts->json ? json_run(opts, s) : NULL;
	bool wrong = false;
	int status = EXIT_OK;
	enum collective c;

	if (s->prints && !opts->json)
		print_header(opts, s);
	for (c = 0; !status && c < COLLECTIVES; c++) {
		if (!opts->collective[c])
			continue;
		if (s->prints && !opts->json)
			print_columns(c);
		for (i = 0; !status && i < n; i++) {
			for (a = 0; !status && a < opts->algos; a++) {
				struct row r = { .coll = c, .bytes = sizes[i] };

				status = bench_row(b, a, &r);
				if (status)
					continue;
				wrong |= r.wrong > 0;
				if (doc)
					json_object_array_add(json_object_object_get(doc, "rows"),
							      json_row(opts, s, &r));
				else if (s->prints)
					print_row(opts, s, &r);
			}
		}
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
