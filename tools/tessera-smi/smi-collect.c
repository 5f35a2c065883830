// SPDX-License-Identifier: MIT
/*
 * tessera-smi: what a report says of each chip, read into plain structs.
 *
 * Where the figures come from:
 *   libaccel            enumeration, identity, versions, configuration,
 *                       HBM, the slice, each link's state, peer and
 *                       counters, and the chip's counters (busy cycles,
 *                       the modeled clock)
 *   sysfs               the driver's counters (<pci device>/tessera/)
 *   /proc/<pid>/fdinfo  the processes (DRM fdinfo of the tessera driver)
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "smi.h"

/* The counters and memory statistics smi.h declares, by name. */
const struct chip_counter chip_counters[] = {
	{ "clock_cycles", offsetof(struct accel_device_counters, clock_cycles) },
	{ "mxu_busy_cycles", offsetof(struct accel_device_counters, mxu_busy_cycles) },
	{ "vpu_busy_cycles", offsetof(struct accel_device_counters, vpu_busy_cycles) },
	{ "dma_busy_cycles", offsetof(struct accel_device_counters, dma_busy_cycles) },
	{ "jobs", offsetof(struct accel_device_counters, chip_jobs) },
	{ "commands", offsetof(struct accel_device_counters, chip_commands) },
	{ "hbm_read_bytes", offsetof(struct accel_device_counters, hbm_read_bytes) },
	{ "hbm_write_bytes", offsetof(struct accel_device_counters, hbm_write_bytes) },
	{ "sc_busy_cycles", offsetof(struct accel_device_counters, sc_busy_cycles) },
};

#define LINK_COUNTER(name) { #name, offsetof(struct accel_link_info, name) }

const struct chip_counter link_counters[] = {
	LINK_COUNTER(frames_tx),
	LINK_COUNTER(frames_rx),
	LINK_COUNTER(bytes_tx),
	LINK_COUNTER(bytes_rx),
	LINK_COUNTER(crc_errors),
	LINK_COUNTER(seq_errors),
	LINK_COUNTER(naks),
	LINK_COUNTER(replays),
	LINK_COUNTER(timeouts),
	LINK_COUNTER(credit_stalls),
	LINK_COUNTER(link_downs),
	LINK_COUNTER(protocol_errors),
	LINK_COUNTER(tail_probes),
	LINK_COUNTER(tail_losses),
};

const char *const engines[] = { "mxu", "vpu", "dma" };

#define ENGINE_BUSY(e) chip_counters[1 + (e)].offset

const char *const driver_counter_names[DRIVER_COUNTERS] = {
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
	[DRV_REMOTE_ACCESS_REFUSED] = "remote_access_refused",
	[DRV_LINK_DOWNS] = "link_downs",
	[DRV_LINK_UPS] = "link_ups",
};

const char *const region_names[REGIONS] = { "host", "hbm" };
const char *const stat_names[STATS] = { "total", "shared", "resident" };

/* ------------------------------------------------------------ numbers */

bool is_number(const char *text)
{
	if (!*text)
		return false;
	for (; *text; text++)
		if (*text < '0' || *text > '9')
			return false;
	return true;
}

/* A device index: a number small enough for atoi(). */
bool is_index(const char *text)
{
	return is_number(text) && strlen(text) <= 6;
}

/* ------------------------------------------------------------ time */

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

/* ------------------------------------------------------------ devices */

uint64_t counter_at(const void *counters, size_t offset)
{
	uint64_t v;

	memcpy(&v, (const char *)counters + offset, sizeof(v));
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
 * The chip's counters and its ports' as of one moment, the ports' into
 * @links; false with why in @error if they could not be read.  The driver
 * reads the chip's counters one register at a time, the clock last; a job
 * that ends in between would show in the clock but not in its busy
 * cycles.  Counters move only when a job ends, so two equal reads in a
 * row are consistent.
 */
static bool read_sample(struct device *d, struct sample *s,
			struct accel_link_info *links, char *error, size_t len)
{
	struct accel_device_counters again;
	unsigned int p;
	int tries, ret;

	memset(s, 0, sizeof(*s));
	ret = accel_device_get_counters(d->handle, &s->counters);
	for (tries = 0; !ret && tries < 5; tries++) {
		memset(&again, 0, sizeof(again));
		ret = accel_device_get_counters(d->handle, &again);
		if (ret || same_chip_counters(&s->counters, &again))
			break;
		s->counters = again;
	}
	if (ret) {
		snprintf(error, len, "cannot read its counters: %s",
			 accel_error_string(ret));
		return false;
	}
	for (p = 0; p < d->ici_ports; p++) {
		ret = accel_link_get_info(d->handle, p, &links[p]);
		if (ret) {
			snprintf(error, len, "cannot read ICI port %u: %s", p,
				 accel_error_string(ret));
			return false;
		}
		s->ici_bytes_tx[p] = links[p].bytes_tx;
		s->ici_bytes_rx[p] = links[p].bytes_rx;
	}
	s->time_ns = now_ns();
	return true;
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

/*
 * What a counter that does not follow the chip's resets (the driver's, a
 * port's) added: @after alone if it restarted (a port wired anew).
 */
static uint64_t grown(uint64_t before, uint64_t after)
{
	return since(before, after, after < before);
}

static uint64_t ici_bytes_grown(const uint64_t *before, const uint64_t *after)
{
	uint64_t sum = 0;
	unsigned int p;

	for (p = 0; p < TSR_ICI_MAX_PORTS; p++)
		sum += grown(before[p], after[p]);
	return sum;
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
	u->jobs_completed = grown(b->jobs_completed, a->jobs_completed);
	u->jobs_failed = grown(b->jobs_failed, a->jobs_failed);
	u->link_downs = grown(b->link_downs, a->link_downs);
	u->link_ups = grown(b->link_ups, a->link_ups);
	u->ici_bytes_tx = ici_bytes_grown(before->ici_bytes_tx, after->ici_bytes_tx);
	u->ici_bytes_rx = ici_bytes_grown(before->ici_bytes_rx, after->ici_bytes_rx);
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

/*
 * What carries each port's frames (the driver's ici/port<p>/transport);
 * "-" where it cannot say (an older driver).
 */
static void read_transports(struct device_status *st)
{
	unsigned int p;

	for (p = 0; p < TSR_ICI_MAX_PORTS; p++) {
		char path[128];
		FILE *f;

		snprintf(st->transport[p], sizeof(st->transport[p]), "-");
		snprintf(path, sizeof(path),
			 "/sys/bus/pci/devices/%s/ici/port%u/transport",
			 st->info.pci_address, p);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%7s", st->transport[p]) != 1)
			snprintf(st->transport[p], sizeof(st->transport[p]), "-");
		fclose(f);
	}
}

/* Read everything one report says of @d; false with st->error if not. */
bool collect_device(struct device *d, struct device_status *st)
{
	memset(st, 0, sizeof(*st));
	st->device = d;
	if (!d->handle) {
		snprintf(st->error, sizeof(st->error), "%s", d->open_error);
		return false;
	}
	if (!read_identity(d, st))
		return false;
	if (!read_sample(d, &st->sample, st->links, st->error,
			 sizeof(st->error))) {
		d->have_last = false;
		return false;
	}
	read_transports(st);
	if (d->have_last) {
		compute_utilization(&d->last, &st->sample, &st->util);
		st->have_util = true;
	}
	d->last = st->sample;
	d->have_last = true;
	return read_driver_counters(st);
}

/* The first samples, which the first report's utilization starts from. */
void sample_all(struct device *devices, size_t n)
{
	struct accel_link_info links[TSR_ICI_MAX_PORTS];
	size_t i;

	for (i = 0; i < n; i++)
		devices[i].have_last = devices[i].handle &&
			read_sample(&devices[i], &devices[i].last, links, NULL, 0);
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
		d->ici_ports = info.ici_ports < TSR_ICI_MAX_PORTS ?
			       info.ici_ports : TSR_ICI_MAX_PORTS;
		return ACCEL_OK;
	}
	accel_device_close(d->handle);
	d->handle = NULL;
	snprintf(d->open_error, sizeof(d->open_error), "cannot open it: %s",
		 accel_error_string(ret));
	return ret;
}

/* The driver that owns accel node @node ("accel0"), or "no driver". */
static void accel_node_driver(const char *node, char *driver, size_t len)
{
	char path[PATH_MAX], target[PATH_MAX];
	const char *base;
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/accel/%s/device/driver", node);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0) {
		snprintf(driver, len, "no driver");
		return;
	}
	target[n] = '\0';
	base = strrchr(target, '/');
	snprintf(driver, len, "%.*s", (int)len - 1, base ? base + 1 : target);
}

/* The nodes of /dev/accel, each with its driver, as a list in @list. */
static unsigned int list_accel_nodes(char *list, size_t len)
{
	char driver[64];
	unsigned int n = 0;
	struct dirent *de;
	size_t used = 0;
	DIR *dir;

	list[0] = '\0';
	dir = opendir("/dev/accel");
	if (!dir)
		return 0;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "accel", strlen("accel")))
			continue;
		accel_node_driver(de->d_name, driver, sizeof(driver));
		if (used < len)
			used += snprintf(list + used, len - used, "%s/dev/accel/%s (%s)",
					 n ? ", " : "", de->d_name, driver);
		n++;
	}
	closedir(dir);
	return n;
}

/* The PCI address of a Tessera function no driver has bound, into @pci. */
static bool find_unbound_chip(char *pci, size_t len)
{
	char path[PATH_MAX];
	unsigned int vendor, device;
	struct dirent *de;
	bool found = false;
	DIR *dir;
	FILE *f;

	dir = opendir("/sys/bus/pci/devices");
	if (!dir)
		return false;
	while (!found && (de = readdir(dir))) {
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/uevent",
			 de->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		vendor = device = 0;
		while (fgets(path, sizeof(path), f))
			if (sscanf(path, "PCI_ID=%x:%x", &vendor, &device) == 2)
				break;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver",
			 de->d_name);
		found = vendor == TSR_PCI_VENDOR_ID && device == TSR_PCI_DEVICE_ID &&
			access(path, F_OK);
		if (found)
			snprintf(pci, len, "%.*s", (int)len - 1, de->d_name);
	}
	closedir(dir);
	return found;
}

#define RUN_IN_A_VM \
	"Tessera chips are virtual: run " PROGRAM " inside a Tessera VM; from the\n" \
	"source tree: tools/tessera-vm -- " PROGRAM "\n"

/*
 * Why there is no Tessera chip to show: a Tessera function without its
 * driver, accel devices of other drivers only, or no accelerator at all,
 * as on the host, outside the VM that has the chips.
 */
void explain_no_device(void)
{
	char pci[ACCEL_PCI_ADDRESS_LEN], nodes[512];

	if (find_unbound_chip(pci, sizeof(pci)))
		fprintf(stderr, PROGRAM ": the Tessera chip at PCI %s has no driver bound: load the\n"
			"tessera module (modprobe tessera); dmesg | grep tessera tells why it did not bind\n",
			pci);
	else if (list_accel_nodes(nodes, sizeof(nodes)))
		fprintf(stderr, PROGRAM ": no accelerator device here is a Tessera chip: %s.\n"
			RUN_IN_A_VM, nodes);
	else
		fprintf(stderr, PROGRAM ": no accelerator device here (no /dev/accel/accel*).\n"
			RUN_IN_A_VM);
}

int open_all(struct device **out, size_t *n)
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
		explain_no_device();
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
int open_selected(const char *which, struct device **out, size_t *n)
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
		unsigned int count;

		if (!accel_device_count(&count) && !count)
			explain_no_device();
		else
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

void close_all(struct device *devices, size_t n)
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
bool scan_processes(struct client_list *list)
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
