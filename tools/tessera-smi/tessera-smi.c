// SPDX-License-Identifier: MIT
/*
 * tessera-smi: the state of every Tessera chip, in the manner of
 * nvidia-smi and tpu-info: identity and the version of every layer, the
 * configuration, HBM in use, modeled utilization over an interval, the
 * driver's counters, the processes using each chip and its inter-chip
 * links.  Documentation/tessera-smi.md describes the output.
 *
 * This file: the options and the reports, once, in a loop, or as --dmon
 * lines (one per chip per interval, in the manner of nvidia-smi dmon).
 * smi-collect.c reads the chips, smi-output.c prints what it read.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <drm/tessera_accel.h>

#include "smi.h"
#include "tessera-cli.h"

/* Longest interval or loop period, in seconds: a day. */
#define MAX_SECONDS 86400.0
/* Shortest loop period: a report takes a few milliseconds itself. */
#define MIN_LOOP_SECONDS 0.01
#define MAX_COUNT 1000000000ul
/* The period of --dmon lines without --loop. */
#define DMON_SECONDS 1.0

/* parse_options() result meaning "go on and report". */
#define RUN_REPORTS (-1)

struct options {
	bool json;
	bool dmon;		/* a line per chip per interval */
	bool interval_set;	/* --interval was given */
	double interval_s;	/* utilization window of the first report */
	double loop_s;		/* period of repeated reports; 0: one report */
	unsigned long count;	/* reports to print in a loop; 0: no limit */
	const char *device;	/* an index or PCI address; NULL: every chip */
};

/* ------------------------------------------------------------ messages */

static void print_help(void)
{
	printf("Usage: " PROGRAM " [OPTION]...\n"
	       "   or: " PROGRAM " --dmon [-l SECONDS] [-c N] [-d DEV]\n"
	       "Show the state of Tessera chips: identity, versions, HBM, modeled\n"
	       "utilization, counters, links and the processes using them.\n"
	       "\n"
	       "  -d, --device DEV       only this chip: its index (0, 1, ...) or\n"
	       "                         PCI address (0000:00:01.0)\n"
	       "  -i, --interval SECONDS utilization window of the first report\n"
	       "                         (default 1; 0 reports none; fractions allowed)\n"
	       "  -l, --loop SECONDS     report again every SECONDS (also --watch);\n"
	       "                         each later report covers the time since the last\n"
	       "  -c, --count N          with --loop or --dmon, stop after N reports\n"
	       "  -j, --json             one JSON object per report, one per line\n"
	       "      --dmon             a line per chip per interval (every --loop\n"
	       "                         SECONDS, default 1): utilization, HBM used, and\n"
	       "                         the jobs, ICI bytes and link changes of the interval\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n"
	       "Exit status: 0 ok, 2 usage error, 3 no Tessera device (or not the\n"
	       "one asked for), 4 a device could not be read.\n"
	       "Documentation/tessera-smi.md describes every field.\n");
}

static void print_version(void)
{
	printf(PROGRAM " %d.%d.%d (libaccel %s, uapi %d.%d)\n",
	       ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH,
	       accel_version_string(), DRM_TESSERA_DRIVER_MAJOR,
	       DRM_TESSERA_DRIVER_MINOR);
}

/* ------------------------------------------------------------ options */

static bool parse_seconds(const char *option, const char *text, double min,
			  double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(text, &end);
	if (errno || end == text || *end || !isfinite(v) || v < min ||
	    v > MAX_SECONDS) {
		usage_error("%s takes seconds from %g to %g (e.g. 0.5), not '%s'",
			    option, min, MAX_SECONDS, text);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_count(const char *text, unsigned long *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(text, &end, 10);
	if (errno || end == text || *end || text[0] < '0' || text[0] > '9' ||
	    v < 1 || v > MAX_COUNT) {
		usage_error("--count takes a number of reports from 1 to %lu, not '%s'",
			    MAX_COUNT, text);
		return false;
	}
	*out = v;
	return true;
}

/* "dddd:bb:dd.f" or "bb:dd.f", lower- or upper-case hex. */
static bool is_pci_address(const char *text)
{
	static const char full[] = "hhhh:hh:hh.h";
	const char *shape = strlen(text) == strlen(full) ? full : full + 5;
	size_t i;

	if (strlen(text) != strlen(shape))
		return false;
	for (i = 0; shape[i]; i++)
		if (shape[i] == 'h' ? !isxdigit((unsigned char)text[i]) :
				      text[i] != shape[i])
			return false;
	return true;
}

static bool parse_device(const char *text)
{
	if (is_index(text) || is_pci_address(text))
		return true;
	usage_error("--device takes a device index (0, 1, ...) or a PCI address (0000:00:01.0), not '%s'",
		    text);
	return false;
}

static const struct option long_options[] = {
	{ "device", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, 'i' },
	{ "loop", required_argument, NULL, 'l' },
	{ "watch", required_argument, NULL, 'l' },
	{ "count", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "dmon", no_argument, NULL, 'D' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

/*
 * --dmon: every line covers one period, the first too; --count needs no
 * --loop.  --interval would be a second period, and --json has its own
 * line per report.
 */
static int check_dmon(struct options *opts)
{
	if (opts->interval_set) {
		usage_error("--dmon takes its interval from --loop (e.g. --dmon --loop 0.5); name a chip with --device");
		return EXIT_USAGE;
	}
	if (opts->json) {
		usage_error("--dmon prints text lines; for JSON use --json --loop SECONDS");
		return EXIT_USAGE;
	}
	if (!opts->loop_s)
		opts->loop_s = DMON_SECONDS;
	opts->interval_s = opts->loop_s;
	return RUN_REPORTS;
}

/* RUN_REPORTS, or the exit status for --help, --version and mistakes. */
static int parse_options(int argc, char *argv[], struct options *opts)
{
	bool ok = true;
	int c;

	*opts = (struct options){ .interval_s = 1.0 };
	opterr = 0;
	while (ok && (c = getopt_long(argc, argv, ":d:i:l:c:jhV", long_options,
				      NULL)) != -1) {
		switch (c) {
		case 'd':
			opts->device = optarg;
			ok = parse_device(optarg);
			break;
		case 'i':
			opts->interval_set = true;
			ok = parse_seconds("--interval", optarg, 0, &opts->interval_s);
			break;
		case 'l':
			ok = parse_seconds("--loop", optarg, MIN_LOOP_SECONDS,
					   &opts->loop_s);
			break;
		case 'c':
			ok = parse_count(optarg, &opts->count);
			break;
		case 'j':
			opts->json = true;
			break;
		case 'D':
			opts->dmon = true;
			break;
		case 'h':
			print_help();
			return EXIT_OK;
		case 'V':
			print_version();
			return EXIT_OK;
		default:
			report_bad_option(c, argv);
			return EXIT_USAGE;
		}
	}
	if (!ok)
		return EXIT_USAGE;
	if (optind < argc) {
		usage_error("unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (opts->dmon)
		return check_dmon(opts);
	if (opts->count && !opts->loop_s) {
		usage_error("--count needs --loop: say how often to report (e.g. --loop 1 --count %lu)",
			    opts->count);
		return EXIT_USAGE;
	}
	return RUN_REPORTS;
}

/* ------------------------------------------------------------ time */

static uint64_t seconds_to_ns(double s)
{
	return (uint64_t)llround(s * NSEC_PER_SEC);
}

static void sleep_until(uint64_t deadline_ns)
{
	struct timespec ts = {
		.tv_sec = deadline_ns / NSEC_PER_SEC,
		.tv_nsec = deadline_ns % NSEC_PER_SEC,
	};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void utc_timestamp(char *buf, size_t len)
{
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* ------------------------------------------------------------ reports */

/* One report of every device; the exit status it calls for. */
static int report(const struct options *opts, unsigned long number,
		  struct device *devices, size_t n)
{
	struct client_list clients;
	struct device_status *st;
	char timestamp[32], index[16];
	int status = EXIT_OK;
	size_t i;

	st = calloc(n, sizeof(*st));
	clients = (struct client_list){ 0 };
	if (!st || (!opts->dmon && !scan_processes(&clients))) {
		fprintf(stderr, PROGRAM ": out of memory\n");
		free(st);
		return EXIT_UNREADABLE;
	}
	for (i = 0; i < n; i++) {
		if (collect_device(&devices[i], &st[i]))
			continue;
		fprintf(stderr, PROGRAM ": device %s%s%s: %s\n",
			index_text(&devices[i], index, sizeof(index)),
			devices[i].pci[0] ? " at " : "", devices[i].pci,
			st[i].error);
		status = EXIT_UNREADABLE;
	}
	utc_timestamp(timestamp, sizeof(timestamp));
	if (opts->dmon && number == 1)
		print_dmon_header();
	if (!opts->json && !opts->dmon && number > 1)
		putchar('\n');
	if (opts->dmon)
		print_dmon(st, n);
	else if (opts->json)
		print_json(number, timestamp, st, n, &clients);
	else
		print_tables(timestamp, st, n, &clients);
	fflush(stdout);
	free(clients.items);
	free(st);
	return status;
}

static int run(const struct options *opts, struct device *devices, size_t n)
{
	uint64_t next, period = seconds_to_ns(opts->loop_s);
	int status = EXIT_OK, s;
	unsigned long number;

	if (opts->interval_s > 0) {
		sample_all(devices, n);
		sleep_until(now_ns() + seconds_to_ns(opts->interval_s));
	}
	next = now_ns();
	for (number = 1;; number++) {
		s = report(opts, number, devices, n);
		if (s > status)
			status = s;
		if (!period || number == opts->count)
			break;
		next += period;
		if (next < now_ns())
			next = now_ns();	/* fell behind: do not catch up */
		sleep_until(next);
	}
	return status;
}

int main(int argc, char *argv[])
{
	struct options opts;
	struct device *devices = NULL;
	size_t n = 0;
	int status;

	status = parse_options(argc, argv, &opts);
	if (status != RUN_REPORTS)
		return status;
	status = opts.device ? open_selected(opts.device, &devices, &n) :
			       open_all(&devices, &n);
	if (status)
		return status;
	status = run(&opts, devices, n);
	close_all(devices, n);
	return status;
}
