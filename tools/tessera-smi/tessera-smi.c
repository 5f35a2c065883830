// SPDX-License-Identifier: MIT
/*
 * tessera-smi: the state of every Tessera chip, in the manner of
 * nvidia-smi and tpu-info: identity and the version of every layer, the
 * configuration, HBM in use, modeled utilization over an interval, the
 * driver's counters, the processes using each chip and its inter-chip
 * links.  Documentation/tessera-smi.md describes the output.
 *
 * Where the figures come from:
 *   libaccel            enumeration, identity, versions, configuration,
 *                       HBM, links and slice, and the chip's counters (busy
 *                       cycles, the modeled clock)
 *   sysfs               the driver's counters (<pci device>/tessera/)
 *   /proc/<pid>/fdinfo  the processes (DRM fdinfo of the tessera driver)
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include <drm/tessera_accel.h>
#include <drm/tessera_chip.h>

#include <accel/accel.h>

#define PROGRAM "tessera-smi"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define NSEC_PER_SEC 1000000000ull

/* Longest interval or loop period, in seconds: a day. */
#define MAX_SECONDS 86400.0
/* Shortest loop period: a report takes a few milliseconds itself. */
#define MIN_LOOP_SECONDS 0.01
#define MAX_COUNT 1000000000ul

enum exit_status {
	EXIT_OK = 0,
	EXIT_USAGE = 2,
	EXIT_NO_DEVICE = 3,
	EXIT_UNREADABLE = 4,
};

/* parse_options() result meaning "go on and report". */
#define RUN_REPORTS (-1)

struct options {
	bool json;
	double interval_s;	/* utilization window of the first report */
	double loop_s;		/* period of repeated reports; 0: one report */
	unsigned long count;	/* reports to print in a loop; 0: no limit */
	const char *device;	/* an index or PCI address; NULL: every chip */
};

/* The chip's counters at one moment, and when they were read. */
struct sample {
	struct accel_device_counters counters;
	uint64_t time_ns;	/* CLOCK_MONOTONIC */
};

/* A chip this run reports on: opened once, sampled at every report. */
struct device {
	struct accel_device *handle;	/* NULL if it could not be opened */
	int index;			/* -1 if unknown */
	char pci[ACCEL_PCI_ADDRESS_LEN];	/* "" if unknown */
	char open_error[128];
	struct sample last;		/* the previous sample, if have_last */
	bool have_last;
};

/* The chip's own counters in struct accel_device_counters (not the driver's). */
static const struct {
	const char *name;
	size_t offset;
} chip_counters[] = {
	{ "clock_cycles", offsetof(struct accel_device_counters, clock_cycles) },
	{ "mxu_busy_cycles", offsetof(struct accel_device_counters, mxu_busy_cycles) },
	{ "vpu_busy_cycles", offsetof(struct accel_device_counters, vpu_busy_cycles) },
	{ "dma_busy_cycles", offsetof(struct accel_device_counters, dma_busy_cycles) },
	{ "jobs", offsetof(struct accel_device_counters, chip_jobs) },
	{ "commands", offsetof(struct accel_device_counters, chip_commands) },
	{ "hbm_read_bytes", offsetof(struct accel_device_counters, hbm_read_bytes) },
	{ "hbm_write_bytes", offsetof(struct accel_device_counters, hbm_write_bytes) },
};

/* The engines whose busy cycles the chip counts: chip_counters[1 + e]. */
static const char *const engines[] = { "mxu", "vpu", "dma" };

#define ENGINES ARRAY_SIZE(engines)
#define ENGINE_BUSY(e) chip_counters[1 + (e)].offset

/* The driver's counters: files of <pci device>/tessera/ in sysfs. */
enum driver_counter {
	DRV_JOBS_SUBMITTED,
	DRV_JOBS_COMPLETED,
	DRV_JOBS_FAILED,
	DRV_MMU_FAULTS,
	DRV_ECC_CORRECTABLE,
	DRV_ECC_UNCORRECTABLE,
	DRV_TIMEOUTS,
	DRV_LOST_IRQS,
	DRV_QUEUE_RESETS,
	DRV_DEVICE_RESETS,
	DRV_FATAL_ERRORS,
	DRV_BANNED_CONTEXTS,
	DRIVER_COUNTERS
};

static const char *const driver_counter_names[DRIVER_COUNTERS] = {
	[DRV_JOBS_SUBMITTED] = "jobs_submitted",
	[DRV_JOBS_COMPLETED] = "jobs_completed",
	[DRV_JOBS_FAILED] = "jobs_failed",
	[DRV_MMU_FAULTS] = "mmu_faults",
	[DRV_ECC_CORRECTABLE] = "ecc_correctable",
	[DRV_ECC_UNCORRECTABLE] = "ecc_uncorrectable",
	[DRV_TIMEOUTS] = "timeouts",
	[DRV_LOST_IRQS] = "lost_irqs",
	[DRV_QUEUE_RESETS] = "queue_resets",
	[DRV_DEVICE_RESETS] = "device_resets",
	[DRV_FATAL_ERRORS] = "fatal_errors",
	[DRV_BANNED_CONTEXTS] = "banned_contexts",
};

/* Busy cycles over a window, against the modeled clock. */
struct utilization {
	double window_s;		/* host time between the two samples */
	uint64_t clock_cycles;		/* how far the modeled clock advanced */
	uint64_t busy_cycles[ENGINES];
	double percent[ENGINES];
	bool chip_reset;		/* the counters restarted in the window */
};

/* What one report says of one device. */
struct device_status {
	const struct device *device;
	struct accel_device_info info;
	struct sample sample;
	struct utilization util;
	bool have_util;
	uint64_t driver[DRIVER_COUNTERS];
	char error[256];		/* why it could not be read; "" if it was */
};

/* Memory the driver reports per file, by placement. */
enum region { REGION_HOST, REGION_HBM, REGIONS };
enum memory_stat { STAT_TOTAL, STAT_SHARED, STAT_RESIDENT, STATS };

static const char *const region_names[REGIONS] = { "host", "hbm" };
static const char *const stat_names[STATS] = { "total", "shared", "resident" };

/* One DRM client (an open file: a device context) of one process. */
struct client {
	pid_t pid;
	char comm[32];
	char pdev[ACCEL_PCI_ADDRESS_LEN];
	uint64_t client_id;
	uint64_t memory[REGIONS][STATS];	/* bytes */
	uint64_t engine_ns[TSR_MAX_QUEUES];
	unsigned int queues;		/* drm-engine-qN keys seen: N + 1 */
};

struct client_list {
	struct client *items;
	size_t count;
};

/* ------------------------------------------------------------ messages */

__attribute__((format(printf, 1, 2)))
static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, PROGRAM ": ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '" PROGRAM " --help' for the options.\n");
}

static void print_help(void)
{
	printf("Usage: " PROGRAM " [OPTION]...\n"
	       "Show the state of Tessera chips: identity, versions, HBM, modeled\n"
	       "utilization, counters, links and the processes using them.\n"
	       "\n"
	       "  -d, --device DEV       only this chip: its index (0, 1, ...) or\n"
	       "                         PCI address (0000:00:01.0)\n"
	       "  -i, --interval SECONDS utilization window of the first report\n"
	       "                         (default 1; 0 reports none; fractions allowed)\n"
	       "  -l, --loop SECONDS     report again every SECONDS (also --watch);\n"
	       "                         each later report covers the time since the last\n"
	       "  -c, --count N          with --loop, stop after N reports\n"
	       "  -j, --json             one JSON object per report, one per line\n"
	       "  -h, --help             show this help\n"
	       "  -V, --version          show the version\n"
	       "\n"
	       "Exit status: 0 ok, 2 usage error, 3 no Tessera device (or not the\n"
	       "one asked for), 4 a device could not be read.\n"
	       "Documentation/tessera-smi.md describes every field.\n");
}

static void print_version(void)
{
	printf(PROGRAM " %d.%d.%d (libaccel %s, uapi %d)\n",
	       ACCEL_VERSION_MAJOR, ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH,
	       accel_version_string(), DRM_TESSERA_UAPI_VERSION);
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

static bool is_number(const char *text)
{
	if (!*text)
		return false;
	for (; *text; text++)
		if (*text < '0' || *text > '9')
			return false;
	return true;
}

/* A device index: a number small enough for atoi(). */
static bool is_index(const char *text)
{
	return is_number(text) && strlen(text) <= 6;
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

static void report_bad_option(int c, char *const argv[])
{
	const char *arg = argv[optind - 1];

	if (c == ':')
		usage_error("option '%s' needs a value", arg);
	else if (optopt && strncmp(arg, "--", 2))
		usage_error("unknown option '-%c'", optopt);
	else
		usage_error("unknown option '%s'", arg);
}

static const struct option long_options[] = {
	{ "device", required_argument, NULL, 'd' },
	{ "interval", required_argument, NULL, 'i' },
	{ "loop", required_argument, NULL, 'l' },
	{ "watch", required_argument, NULL, 'l' },
	{ "count", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

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
	if (opts->count && !opts->loop_s) {
		usage_error("--count needs --loop: say how often to report (e.g. --loop 1 --count %lu)",
			    opts->count);
		return EXIT_USAGE;
	}
	return RUN_REPORTS;
}

/* ------------------------------------------------------------ time */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

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

/* ------------------------------------------------------------ devices */

static uint64_t counter_at(const struct accel_device_counters *c, size_t offset)
{
	uint64_t v;

	memcpy(&v, (const char *)c + offset, sizeof(v));
	return v;
}

static bool same_chip_counters(const struct accel_device_counters *a,
			       const struct accel_device_counters *b)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(chip_counters); i++)
		if (counter_at(a, chip_counters[i].offset) !=
		    counter_at(b, chip_counters[i].offset))
			return false;
	return true;
}

/*
 * The chip's counters as of one moment.  The driver reads them one
 * register at a time, the clock last; a job that ends in between would
 * show in the clock but not in its busy cycles.  Counters move only when
 * a job ends, so two equal reads in a row are consistent.
 */
static int read_sample(struct accel_device *dev, struct sample *s)
{
	struct accel_device_counters again;
	int tries, ret;

	memset(s, 0, sizeof(*s));
	ret = accel_device_get_counters(dev, &s->counters);
	for (tries = 0; !ret && tries < 5; tries++) {
		memset(&again, 0, sizeof(again));
		ret = accel_device_get_counters(dev, &again);
		if (ret || same_chip_counters(&s->counters, &again))
			break;
		s->counters = again;
	}
	s->time_ns = now_ns();
	return ret;
}

static int read_sysfs_counter(const char *pci, const char *name,
			      uint64_t *value)
{
	char path[128];
	int ok;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/tessera/%s", pci,
		 name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ok = fscanf(f, "%" SCNu64, value) == 1;
	fclose(f);
	return ok ? 0 : -EIO;
}

static bool read_driver_counters(struct device_status *st)
{
	const char *pci = st->info.pci_address;
	int i, ret;

	for (i = 0; i < DRIVER_COUNTERS; i++) {
		ret = read_sysfs_counter(pci, driver_counter_names[i],
					 &st->driver[i]);
		if (ret) {
			snprintf(st->error, sizeof(st->error),
				 "cannot read /sys/bus/pci/devices/%s/tessera/%s: %s",
				 pci, driver_counter_names[i], strerror(-ret));
			return false;
		}
	}
	return true;
}

/* @after - @before, or @after alone if the chip was reset in between. */
static uint64_t since(uint64_t before, uint64_t after, bool reset)
{
	return reset ? after : after - before;
}

static bool chip_was_reset(const struct accel_device_counters *before,
			   const struct accel_device_counters *after)
{
	size_t i;

	if (after->device_resets != before->device_resets)
		return true;
	for (i = 0; i < ARRAY_SIZE(chip_counters); i++)
		if (counter_at(after, chip_counters[i].offset) <
		    counter_at(before, chip_counters[i].offset))
			return true;
	return false;
}

/*
 * An engine's busy cycles as a share of how far the modeled clock
 * advanced.  Queues overlap in modeled time, so their busy cycles can add
 * up to more than the clock advanced: the share is capped at 100.
 */
static double busy_percent(uint64_t busy, uint64_t clock)
{
	double p;

	if (!clock)
		return 0;
	p = 100.0 * (double)busy / (double)clock;
	return p > 100 ? 100 : p;
}

static void compute_utilization(const struct sample *before,
				const struct sample *after,
				struct utilization *u)
{
	const struct accel_device_counters *b = &before->counters;
	const struct accel_device_counters *a = &after->counters;
	size_t e;

	u->chip_reset = chip_was_reset(b, a);
	u->window_s = (double)(after->time_ns - before->time_ns) / NSEC_PER_SEC;
	u->clock_cycles = since(b->clock_cycles, a->clock_cycles, u->chip_reset);
	for (e = 0; e < ENGINES; e++) {
		u->busy_cycles[e] = since(counter_at(b, ENGINE_BUSY(e)),
					  counter_at(a, ENGINE_BUSY(e)),
					  u->chip_reset);
		u->percent[e] = busy_percent(u->busy_cycles[e], u->clock_cycles);
	}
}

static bool read_identity(struct device *d, struct device_status *st)
{
	int ret;

	ret = accel_device_get_info(d->handle, &st->info);
	if (ret) {
		snprintf(st->error, sizeof(st->error), "cannot read its identity: %s",
			 accel_error_string(ret));
		return false;
	}
	snprintf(d->pci, sizeof(d->pci), "%s", st->info.pci_address);
	return true;
}

/* Read everything one report says of @d; false with st->error if not. */
static bool collect_device(struct device *d, struct device_status *st)
{
	int ret;

	memset(st, 0, sizeof(*st));
	st->device = d;
	if (!d->handle) {
		snprintf(st->error, sizeof(st->error), "%s", d->open_error);
		return false;
	}
	if (!read_identity(d, st))
		return false;
	ret = read_sample(d->handle, &st->sample);
	if (ret) {
		snprintf(st->error, sizeof(st->error),
			 "cannot read its counters: %s",
			 accel_error_string(ret));
		d->have_last = false;
		return false;
	}
	if (d->have_last) {
		compute_utilization(&d->last, &st->sample, &st->util);
		st->have_util = true;
	}
	d->last = st->sample;
	d->have_last = true;
	return read_driver_counters(st);
}

/* Open a chip by @index, or by @pci if not NULL; an ACCEL_ERR_* code. */
static int open_one(struct device *d, int index, const char *pci)
{
	struct accel_device_info info;
	int ret;

	memset(d, 0, sizeof(*d));
	d->index = index;
	ret = pci ? accel_device_open_pci(pci, &d->handle) :
		    accel_device_open(index, &d->handle);
	if (!ret)
		ret = accel_device_get_info(d->handle, &info);
	if (!ret) {
		d->index = (int)info.index;
		snprintf(d->pci, sizeof(d->pci), "%s", info.pci_address);
		return ACCEL_OK;
	}
	accel_device_close(d->handle);
	d->handle = NULL;
	snprintf(d->open_error, sizeof(d->open_error), "cannot open it: %s",
		 accel_error_string(ret));
	return ret;
}

static int open_all(struct device **out, size_t *n)
{
	unsigned int count, i;
	int ret;

	ret = accel_device_count(&count);
	if (ret) {
		fprintf(stderr, PROGRAM ": cannot list Tessera devices: %s\n",
			accel_error_string(ret));
		return EXIT_UNREADABLE;
	}
	if (!count) {
		fprintf(stderr, PROGRAM ": no Tessera device found; is the tessera driver loaded (lsmod | grep tessera)?\n");
		return EXIT_NO_DEVICE;
	}
	*out = calloc(count, sizeof(**out));
	if (!*out) {
		fprintf(stderr, PROGRAM ": out of memory\n");
		return EXIT_UNREADABLE;
	}
	for (i = 0; i < count; i++)
		open_one(&(*out)[i], i, NULL);
	*n = count;
	return EXIT_OK;
}

/* @which as sysfs spells PCI addresses: lower case, with the domain. */
static void canonical_pci(const char *which, char *pci, size_t len)
{
	size_t i;

	snprintf(pci, len, "%s%s", strlen(which) < 12 ? "0000:" : "", which);
	for (i = 0; pci[i]; i++)
		pci[i] = tolower((unsigned char)pci[i]);
}

/* The chip --device names: an index, or a PCI address. */
static int open_selected(const char *which, struct device **out, size_t *n)
{
	char pci[ACCEL_PCI_ADDRESS_LEN];
	bool by_index = is_index(which);
	struct device *d;

	d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, PROGRAM ": out of memory\n");
		return EXIT_UNREADABLE;
	}
	canonical_pci(which, pci, sizeof(pci));
	if (open_one(d, by_index ? atoi(which) : -1, by_index ? NULL : pci) ==
	    ACCEL_ERR_NO_DEVICE) {
		fprintf(stderr, PROGRAM ": no Tessera device %s; run " PROGRAM " without --device to list them\n",
			which);
		free(d);
		return EXIT_NO_DEVICE;
	}
	if (!by_index)
		snprintf(d->pci, sizeof(d->pci), "%s", pci);
	*out = d;
	*n = 1;
	return EXIT_OK;
}

static void close_all(struct device *devices, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		accel_device_close(devices[i].handle);
	free(devices);
}

/* ------------------------------------------------------------ processes */

/* "4096", "4 KiB", "12 MiB" as printed by drm_print_memory_stats(). */
static uint64_t parse_size(const char *text)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	char *end;
	uint64_t v = strtoull(text, &end, 10);
	size_t i;

	while (*end == ' ')
		end++;
	for (i = 0; i < ARRAY_SIZE(units); i++)
		if (!strcmp(end, units[i]))
			return v << (10 * (i + 1));
	return v;
}

/* A "drm-<stat>-<region>" key into @c; other keys are ignored. */
static void parse_memory_key(const char *key, const char *value,
			     struct client *c)
{
	char name[64];
	int r, s;

	for (r = 0; r < REGIONS; r++)
		for (s = 0; s < STATS; s++) {
			snprintf(name, sizeof(name), "drm-%s-%s", stat_names[s],
				 region_names[r]);
			if (!strcmp(key, name))
				c->memory[r][s] = parse_size(value);
		}
}

static void parse_fdinfo_line(const char *key, const char *value,
			      struct client *c, bool *tessera)
{
	unsigned int q;
	char tail;

	if (!strcmp(key, "drm-driver"))
		*tessera = !strcmp(value, "tessera");
	else if (!strcmp(key, "drm-pdev"))
		snprintf(c->pdev, sizeof(c->pdev), "%s", value);
	else if (!strcmp(key, "drm-client-id"))
		c->client_id = strtoull(value, NULL, 10);
	else if (sscanf(key, "drm-engine-q%u%c", &q, &tail) == 1 &&
		 q < TSR_MAX_QUEUES) {
		c->engine_ns[q] = strtoull(value, NULL, 10);
		if (q + 1 > c->queues)
			c->queues = q + 1;
	} else {
		parse_memory_key(key, value, c);
	}
}

/* Parse fdinfo file @name of @dir; true if it is a Tessera DRM file. */
static bool read_fdinfo(int dir, const char *name, struct client *c)
{
	bool tessera = false;
	char line[256];
	FILE *f;
	int fd;

	fd = openat(dir, name, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return false;
	}
	while (fgets(line, sizeof(line), f)) {
		char *value = strchr(line, ':');

		if (!value)
			continue;
		*value++ = '\0';
		value += strspn(value, " \t");
		value[strcspn(value, "\n")] = '\0';
		parse_fdinfo_line(line, value, c, &tessera);
	}
	fclose(f);
	return tessera;
}

/* Whether file descriptor @name of @pid is an accel node. */
static bool is_accel_fd(const char *pid, const char *name)
{
	char path[PATH_MAX], target[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%s/fd/%s", pid, name);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return false;
	target[n] = '\0';
	return !strncmp(target, "/dev/accel/", strlen("/dev/accel/"));
}

static bool same_client(const struct client *a, const struct client *b)
{
	return a->pid == b->pid && a->client_id == b->client_id &&
	       !strcmp(a->pdev, b->pdev);
}

/* Add @c unless another descriptor of the same file was seen. */
static bool add_client(struct client_list *list, const struct client *c)
{
	struct client *items;
	size_t i;

	for (i = 0; i < list->count; i++)
		if (same_client(&list->items[i], c))
			return true;
	items = realloc(list->items, (list->count + 1) * sizeof(*items));
	if (!items)
		return false;
	list->items = items;
	list->items[list->count++] = *c;
	return true;
}

static void read_comm(const char *pid, char *comm, size_t len)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/comm", pid);
	comm[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(comm, len, f))
		comm[strcspn(comm, "\n")] = '\0';
	fclose(f);
}

/* The Tessera files process @pid has open, into @list. */
static bool scan_process(const char *pid, struct client_list *list)
{
	char path[PATH_MAX];
	struct dirent *de;
	bool ok = true;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%s/fdinfo", pid);
	dir = opendir(path);
	if (!dir)
		return true;	/* gone, or not ours to see */
	while (ok && (de = readdir(dir))) {
		struct client c = { .pid = atoi(pid) };

		if (de->d_name[0] == '.' || !is_accel_fd(pid, de->d_name) ||
		    !read_fdinfo(dirfd(dir), de->d_name, &c))
			continue;
		read_comm(pid, c.comm, sizeof(c.comm));
		ok = add_client(list, &c);
	}
	closedir(dir);
	return ok;
}

/* Every process but this one that has a Tessera device open. */
static bool scan_processes(struct client_list *list)
{
	struct dirent *de;
	bool ok = true;
	DIR *proc;

	list->items = NULL;
	list->count = 0;
	proc = opendir("/proc");
	if (!proc)
		return true;
	while (ok && (de = readdir(proc)))
		if (is_number(de->d_name) && atoi(de->d_name) != getpid())
			ok = scan_process(de->d_name, list);
	closedir(proc);
	return ok;
}

static uint64_t engine_total_ns(const struct client *c)
{
	uint64_t total = 0;
	unsigned int q;

	for (q = 0; q < c->queues; q++)
		total += c->engine_ns[q];
	return total;
}

/* Processes with a file of the chip at @pci open. */
static unsigned int processes_of(const struct client_list *list, const char *pci)
{
	unsigned int n = 0;
	size_t i, j;

	for (i = 0; i < list->count; i++) {
		const struct client *c = &list->items[i];

		if (strcmp(c->pdev, pci))
			continue;
		for (j = 0; j < i; j++)
			if (list->items[j].pid == c->pid &&
			    !strcmp(list->items[j].pdev, pci))
				break;
		n += j == i;
	}
	return n;
}

/* ------------------------------------------------------------ naming */

/* Link state, until the multi-chip work connects links. */
static const char *link_state(const struct accel_device_info *info)
{
	return info->ici_ports ? "not connected" : "none";
}

static void format_bytes(uint64_t bytes, char *buf, size_t len)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = -1;

	if (bytes < 1024) {
		snprintf(buf, len, "%" PRIu64 " B", bytes);
		return;
	}
	while (v >= 1024 && u + 1 < (int)ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (v == floor(v))
		snprintf(buf, len, "%.0f %s", v, units[u]);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
}

/* ------------------------------------------------------------ JSON */

static void add_u64(json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static void add_string(json_object *o, const char *key, const char *v)
{
	json_object_object_add(o, key, json_object_new_string(v));
}

/* A number printed with @decimals digits after the point. */
static void add_fixed(json_object *o, const char *key, double v, int decimals)
{
	char text[32];

	snprintf(text, sizeof(text), "%.*f", decimals, v);
	json_object_object_add(o, key, json_object_new_double_s(v, text));
}

static json_object *json_u32_array(const uint32_t *v, size_t n)
{
	json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < n; i++)
		json_object_array_add(a, json_object_new_uint64(v[i]));
	return a;
}

static json_object *json_versions(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();
	char text[48];

	add_string(o, "driver_name", info->driver_name);
	snprintf(text, sizeof(text), "%d.%d.%d", info->driver_major,
		 info->driver_minor, info->driver_patch);
	add_string(o, "driver", text);
	add_u64(o, "uapi", info->uapi_version);
	snprintf(text, sizeof(text), "%u.%u", info->device_version_major,
		 info->device_version_minor);
	add_string(o, "device_model", text);
	add_u64(o, "chip_id", info->chip_id);
	add_string(o, "libaccel", accel_version_string());
	return o;
}

static json_object *json_config(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();

	add_string(o, "preset", accel_preset_name(info->preset));
	add_u64(o, "preset_id", info->preset);
	add_u64(o, "tensorcores", info->tensorcores);
	add_u64(o, "mxus_per_core", info->mxus_per_core);
	add_u64(o, "mxu_dim", info->mxu_dim);
	add_u64(o, "vpu_sublanes", info->vpu_sublanes);
	add_u64(o, "vpu_lanes", info->vpu_lanes);
	add_u64(o, "vmem_mib", info->vmem_mib);
	add_u64(o, "clock_mhz", info->clock_mhz);
	add_u64(o, "hbm_gbps", info->hbm_gbps);
	add_u64(o, "host_dma_gbps", info->host_dma_gbps);
	add_u64(o, "num_queues", info->num_queues);
	add_u64(o, "max_contexts", info->max_contexts);
	add_u64(o, "caps", info->caps);
	add_fixed(o, "peak_bf16_tflops", info->peak_bf16_flops / 1e12, 1);
	return o;
}

static json_object *json_pci(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();

	add_u64(o, "vendor", info->pci_vendor);
	add_u64(o, "device", info->pci_device);
	add_u64(o, "revision", info->pci_revision);
	return o;
}

static json_object *json_hbm(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();

	add_u64(o, "total_bytes", info->hbm_size);
	add_u64(o, "used_bytes", info->hbm_size - info->hbm_free);
	add_u64(o, "free_bytes", info->hbm_free);
	return o;
}

static json_object *json_utilization(const struct device_status *st)
{
	const struct utilization *u = &st->util;
	json_object *o;
	char key[32];
	size_t e;

	if (!st->have_util)
		return NULL;	/* JSON null: no window to measure over */
	o = json_object_new_object();
	add_fixed(o, "interval_s", u->window_s, 3);
	add_u64(o, "clock_cycles", u->clock_cycles);
	add_fixed(o, "modeled_us", (double)u->clock_cycles / st->info.clock_mhz, 3);
	for (e = 0; e < ENGINES; e++) {
		snprintf(key, sizeof(key), "%s_busy_cycles", engines[e]);
		add_u64(o, key, u->busy_cycles[e]);
		snprintf(key, sizeof(key), "%s_percent", engines[e]);
		add_fixed(o, key, u->percent[e], 2);
	}
	json_object_object_add(o, "chip_reset", json_object_new_boolean(u->chip_reset));
	return o;
}

static json_object *json_chip_counters(const struct device_status *st)
{
	json_object *o = json_object_new_object();
	size_t i;

	for (i = 0; i < ARRAY_SIZE(chip_counters); i++)
		add_u64(o, chip_counters[i].name,
			counter_at(&st->sample.counters, chip_counters[i].offset));
	return o;
}

static json_object *json_driver_counters(const struct device_status *st)
{
	json_object *o = json_object_new_object();
	int i;

	for (i = 0; i < DRIVER_COUNTERS; i++)
		add_u64(o, driver_counter_names[i], st->driver[i]);
	return o;
}

static json_object *json_links(const struct accel_device_info *info)
{
	json_object *o = json_object_new_object();
	json_object *ports = json_object_new_array();
	json_object *slice = json_object_new_object();
	uint32_t p;

	add_u64(o, "ici_ports", info->ici_ports);
	add_u64(o, "ici_link_gbps", info->ici_link_gbps);
	add_u64(o, "connected", 0);
	add_string(o, "state", link_state(info));
	for (p = 0; p < info->ici_ports; p++) {
		json_object *port = json_object_new_object();

		add_u64(port, "port", p);
		add_string(port, "state", "not connected");
		json_object_object_add(port, "peer", NULL);
		json_object_array_add(ports, port);
	}
	json_object_object_add(o, "ports", ports);
	add_u64(slice, "chips", info->slice_chips);
	add_u64(slice, "index", info->slice_index);
	json_object_object_add(slice, "topology", json_u32_array(info->topology, 3));
	json_object_object_add(slice, "coords", json_u32_array(info->coords, 3));
	json_object_object_add(o, "slice", slice);
	return o;
}

static json_object *json_memory(const struct client *c)
{
	json_object *o = json_object_new_object();
	char key[32];
	int r, s;

	for (r = 0; r < REGIONS; r++) {
		json_object *region = json_object_new_object();

		for (s = 0; s < STATS; s++) {
			snprintf(key, sizeof(key), "%s_bytes", stat_names[s]);
			add_u64(region, key, c->memory[r][s]);
		}
		json_object_object_add(o, region_names[r], region);
	}
	return o;
}

static json_object *json_client(const struct client *c)
{
	json_object *o = json_object_new_object();
	json_object *engine = json_object_new_array();
	unsigned int q;

	json_object_object_add(o, "pid", json_object_new_int(c->pid));
	add_string(o, "name", c->comm);
	add_u64(o, "client_id", c->client_id);
	json_object_object_add(o, "memory", json_memory(c));
	for (q = 0; q < c->queues; q++)
		json_object_array_add(engine, json_object_new_uint64(c->engine_ns[q]));
	json_object_object_add(o, "engine_ns", engine);
	add_u64(o, "engine_total_ns", engine_total_ns(c));
	return o;
}

static json_object *json_processes(const struct client_list *clients,
				   const char *pci)
{
	json_object *a = json_object_new_array();
	size_t i;

	for (i = 0; i < clients->count; i++)
		if (!strcmp(clients->items[i].pdev, pci))
			json_object_array_add(a, json_client(&clients->items[i]));
	return a;
}

static json_object *json_device(const struct device_status *st,
				const struct client_list *clients)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "index", st->device->index < 0 ? NULL :
			       json_object_new_int(st->device->index));
	add_string(o, "pci_address", st->device->pci);
	if (st->error[0]) {
		add_string(o, "error", st->error);
		return o;
	}
	add_u64(o, "minor", st->info.minor);
	json_object_object_add(o, "pci", json_pci(&st->info));
	json_object_object_add(o, "versions", json_versions(&st->info));
	json_object_object_add(o, "config", json_config(&st->info));
	json_object_object_add(o, "hbm", json_hbm(&st->info));
	json_object_object_add(o, "utilization", json_utilization(st));
	json_object_object_add(o, "chip_counters", json_chip_counters(st));
	json_object_object_add(o, "driver_counters", json_driver_counters(st));
	add_u64(o, "irq_count", st->info.irq_count);
	add_u64(o, "msix_vectors", st->info.msix_vectors);
	json_object_object_add(o, "links", json_links(&st->info));
	json_object_object_add(o, "processes",
			       json_processes(clients, st->device->pci));
	return o;
}

static void print_json(unsigned long report, const char *timestamp,
		       const struct device_status *st, size_t n,
		       const struct client_list *clients)
{
	json_object *o = json_object_new_object();
	json_object *versions = json_object_new_object();
	json_object *devices = json_object_new_array();
	char version[32];
	size_t i;

	add_u64(o, "report", report);
	add_string(o, "timestamp", timestamp);
	snprintf(version, sizeof(version), "%d.%d.%d", ACCEL_VERSION_MAJOR,
		 ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
	add_string(versions, "tessera_smi", version);
	add_string(versions, "libaccel", accel_version_string());
	json_object_object_add(o, "versions", versions);
	for (i = 0; i < n; i++)
		json_object_array_add(devices, json_device(&st[i], clients));
	json_object_object_add(o, "devices", devices);
	puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
					       JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

/* ------------------------------------------------------------ tables */

/* The device's index as text, "?" if unknown. */
static const char *index_text(const struct device *d, char *buf, size_t len)
{
	if (d->index < 0)
		return "?";
	snprintf(buf, len, "%d", d->index);
	return buf;
}

static void print_device_row(const struct device_status *st,
			     const struct client_list *clients)
{
	const struct accel_device_info *info = &st->info;
	char used[24], total[24], hbm[56];
	size_t e;

	format_bytes(info->hbm_size - info->hbm_free, used, sizeof(used));
	format_bytes(info->hbm_size, total, sizeof(total));
	snprintf(hbm, sizeof(hbm), "%s / %s", used, total);
	printf("%3d  %-12s  %-6s  %5u  %6u  %-21s", st->device->index,
	       st->device->pci, accel_preset_name(info->preset), info->tensorcores,
	       info->num_queues, hbm);
	for (e = 0; e < ENGINES; e++) {
		if (st->have_util)
			printf("  %5.1f", st->util.percent[e]);
		else
			printf("  %5s", "-");
	}
	printf("  %5u\n", processes_of(clients, st->device->pci));
}

static void print_devices(const struct device_status *st, size_t n,
			  const struct client_list *clients)
{
	char index[16];
	size_t i;

	printf("DEV  PCI ADDRESS   PRESET  CORES  QUEUES  HBM USED / TOTAL        MXU%%   VPU%%   DMA%%  PROCS\n");
	for (i = 0; i < n; i++) {
		if (st[i].error[0])
			printf("%3s  %-12s  error: %s\n",
			       index_text(st[i].device, index, sizeof(index)),
			       st[i].device->pci[0] ? st[i].device->pci : "?",
			       st[i].error);
		else
			print_device_row(&st[i], clients);
	}
}

static void print_versions_and_links(const struct device_status *st, size_t n)
{
	size_t i;

	printf("\nDEV  DRIVER         UAPI  MODEL  CHIP ID     ICI PORTS  LINKS          SLICE   TOPOLOGY  COORDS\n");
	for (i = 0; i < n; i++) {
		const struct accel_device_info *info = &st[i].info;
		char driver[48], model[16], slice[24], topo[40], coords[40];

		if (st[i].error[0])
			continue;
		snprintf(driver, sizeof(driver), "%s %d.%d.%d", info->driver_name,
			 info->driver_major, info->driver_minor, info->driver_patch);
		snprintf(model, sizeof(model), "%u.%u", info->device_version_major,
			 info->device_version_minor);
		snprintf(slice, sizeof(slice), "%u of %u", info->slice_index,
			 info->slice_chips);
		snprintf(topo, sizeof(topo), "%ux%ux%u", info->topology[0],
			 info->topology[1], info->topology[2]);
		snprintf(coords, sizeof(coords), "%u,%u,%u", info->coords[0],
			 info->coords[1], info->coords[2]);
		printf("%3d  %-13s  %4u  %5s  0x%08x  %9u  %-13s  %-6s  %-8s  %s\n",
		       st[i].device->index, driver, info->uapi_version, model,
		       info->chip_id, info->ici_ports, link_state(info), slice,
		       topo, coords);
	}
}

static void print_counters(const struct device_status *st, size_t n)
{
	size_t i;

	printf("\nDEV  JOBS DONE  FAILED  MMU FAULTS  TIMEOUTS  LOST IRQS  RESETS Q/CHIP  FATAL  BANNED  ECC CE/UE\n");
	for (i = 0; i < n; i++) {
		const uint64_t *c = st[i].driver;
		char resets[48], ecc[48];

		if (st[i].error[0])
			continue;
		snprintf(resets, sizeof(resets), "%" PRIu64 "/%" PRIu64,
			 c[DRV_QUEUE_RESETS], c[DRV_DEVICE_RESETS]);
		snprintf(ecc, sizeof(ecc), "%" PRIu64 "/%" PRIu64,
			 c[DRV_ECC_CORRECTABLE], c[DRV_ECC_UNCORRECTABLE]);
		printf("%3d  %9" PRIu64 "  %6" PRIu64 "  %10" PRIu64 "  %8" PRIu64
		       "  %9" PRIu64 "  %13s  %5" PRIu64 "  %6" PRIu64 "  %9s\n",
		       st[i].device->index, c[DRV_JOBS_COMPLETED],
		       c[DRV_JOBS_FAILED], c[DRV_MMU_FAULTS], c[DRV_TIMEOUTS],
		       c[DRV_LOST_IRQS], resets, c[DRV_FATAL_ERRORS],
		       c[DRV_BANNED_CONTEXTS], ecc);
	}
}

static void print_client(int index, const struct client *c)
{
	char hbm[24], host[24];

	format_bytes(c->memory[REGION_HBM][STAT_TOTAL], hbm, sizeof(hbm));
	format_bytes(c->memory[REGION_HOST][STAT_TOTAL], host, sizeof(host));
	printf("%3d  %7d  %-16s  %6" PRIu64 "  %10s  %10s  %11.3f s\n", index,
	       (int)c->pid, c->comm, c->client_id, hbm, host,
	       (double)engine_total_ns(c) / NSEC_PER_SEC);
}

static void print_processes(const struct device_status *st, size_t n,
			    const struct client_list *clients)
{
	unsigned int shown = 0;
	size_t i, j;

	printf("\nDEV  PID      NAME              CLIENT         HBM        HOST  ENGINE TIME\n");
	for (i = 0; i < n; i++)
		for (j = 0; j < clients->count; j++)
			if (st[i].device->pci[0] &&
			    !strcmp(clients->items[j].pdev, st[i].device->pci)) {
				print_client(st[i].device->index, &clients->items[j]);
				shown++;
			}
	if (!shown)
		printf("  -  no process is using %s\n", n == 1 ? "it" : "them");
}

static void print_tables(const char *timestamp, const struct device_status *st,
			 size_t n, const struct client_list *clients)
{
	double window = -1;
	size_t i;

	for (i = 0; i < n; i++)
		if (st[i].have_util)
			window = st[i].util.window_s;
	printf(PROGRAM " %d.%d.%d   libaccel %s   %s", ACCEL_VERSION_MAJOR,
	       ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH, accel_version_string(),
	       timestamp);
	if (window >= 0)
		printf("   utilization over %.2f s\n\n", window);
	else
		printf("   utilization not sampled\n\n");
	print_devices(st, n, clients);
	print_versions_and_links(st, n);
	print_counters(st, n);
	print_processes(st, n, clients);
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
	if (!st || !scan_processes(&clients)) {
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
	if (!opts->json && number > 1)
		putchar('\n');
	if (opts->json)
		print_json(number, timestamp, st, n, &clients);
	else
		print_tables(timestamp, st, n, &clients);
	fflush(stdout);
	free(clients.items);
	free(st);
	return status;
}

/* The first samples, which the first report's utilization starts from. */
static void sample_all(struct device *devices, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		devices[i].have_last = devices[i].handle &&
			!read_sample(devices[i].handle, &devices[i].last);
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
