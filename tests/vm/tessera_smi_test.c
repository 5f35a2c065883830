// SPDX-License-Identifier: GPL-2.0
/*
 * tessera-smi against the real driver: its JSON parses, lists every chip
 * and agrees with sysfs, GET_PARAM, LINK_INFO and fdinfo; utilization
 * sees a job that ends within its window; --dmon prints a line per chip
 * per interval with what that interval added; its options and exit codes.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <math.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <json-c/json.h>

#include "kselftest_harness.h"
#include "libaccel_util.h"
#include "tessera_util.h"

#include <accel/accel.h>

#define SMI "/tessera/bin/tessera-smi"
#define MIB (1024ull * 1024)
/* Most arguments a test passes tessera-smi. */
#define MAX_ARGS 16

/* What a finished run of tessera-smi left. */
struct smi_run {
	int status;		/* exit status; -1 if it did not exit */
	char *out;		/* standard output */
	char *err;		/* standard error */
};

/* Start tessera-smi with @args (NULL-terminated) writing to @out, @err. */
static pid_t smi_spawn(const char *const args[], int out, int err)
{
	char *argv[MAX_ARGS + 2] = { SMI };
	pid_t pid;
	int i;

	for (i = 0; args[i] && i < MAX_ARGS; i++)
		argv[i + 1] = (char *)args[i];
	pid = fork();
	if (pid == 0) {
		dup2(out, STDOUT_FILENO);
		dup2(err, STDERR_FILENO);
		execv(SMI, argv);
		_exit(127);
	}
	return pid;
}

static int exit_status(pid_t pid)
{
	int wstatus;

	if (waitpid(pid, &wstatus, 0) != pid || !WIFEXITED(wstatus))
		return -1;
	return WEXITSTATUS(wstatus);
}

/* The whole of file @fd, from its start, NUL-terminated. */
static char *slurp(int fd)
{
	struct stat st;
	char *text;
	ssize_t n;

	if (fstat(fd, &st))
		return strdup("");
	text = calloc(1, st.st_size + 1);
	n = pread(fd, text, st.st_size, 0);
	if (n < 0)
		n = 0;
	text[n] = '\0';
	return text;
}

/* Run tessera-smi to the end; its output goes to memory files. */
static void smi_run(const char *const args[], struct smi_run *r)
{
	int out = memfd_create("smi-out", MFD_CLOEXEC);
	int err = memfd_create("smi-err", MFD_CLOEXEC);

	r->status = exit_status(smi_spawn(args, out, err));
	r->out = slurp(out);
	r->err = slurp(err);
	close(out);
	close(err);
}

static void smi_free(struct smi_run *r)
{
	free(r->out);
	free(r->err);
}

/* Run tessera-smi with @args, which must succeed and print one report. */
static json_object *smi_json(struct __test_metadata *_metadata,
			     const char *const args[])
{
	struct smi_run r;
	json_object *o;

	smi_run(args, &r);
	EXPECT_EQ(0, r.status) TH_LOG("stderr: %s", r.err);
	o = json_tokener_parse(r.out);
	EXPECT_NE(NULL, o) TH_LOG("not JSON: %s", r.out);
	smi_free(&r);
	return o;
}

/* The member of @o at @path ("a.b.c"); NULL if there is none or it is null. */
static json_object *jget(json_object *o, const char *path)
{
	char key[64];
	size_t len;

	while (o && *path) {
		len = strcspn(path, ".");
		snprintf(key, sizeof(key), "%.*s", (int)len, path);
		if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		path += len + (path[len] == '.');
	}
	return o;
}

/* The integer at @path, or -1 if there is none. */
static long long jint(json_object *o, const char *path)
{
	json_object *v = jget(o, path);

	return json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
}

/* Element @i of the integer array at @path, or -1. */
static long long jint_at(json_object *o, const char *path, unsigned int i)
{
	json_object *v = jget(o, path);

	if (!json_object_is_type(v, json_type_array) ||
	    i >= json_object_array_length(v))
		return -1;
	v = json_object_array_get_idx(v, i);
	return json_object_is_type(v, json_type_int) ? json_object_get_int64(v) : -1;
}

/* The boolean at @path: 1 or 0, or -1 if there is none. */
static int jbool(json_object *o, const char *path)
{
	json_object *v = jget(o, path);

	return json_object_is_type(v, json_type_boolean) ?
		json_object_get_boolean(v) : -1;
}

/* The number (integer or not) at @path, or NAN. */
static double jnum(json_object *o, const char *path)
{
	json_object *v = jget(o, path);

	if (!json_object_is_type(v, json_type_int) &&
	    !json_object_is_type(v, json_type_double))
		return NAN;
	return json_object_get_double(v);
}

static const char *jstr(json_object *o, const char *path)
{
	json_object *v = jget(o, path);

	return json_object_is_type(v, json_type_string) ?
		json_object_get_string(v) : "(missing)";
}

/* Elements of the array at @path, or -1 if it is not an array. */
static long long jlen(json_object *o, const char *path)
{
	json_object *v = jget(o, path);

	return json_object_is_type(v, json_type_array) ?
		(long long)json_object_array_length(v) : -1;
}

/* The device of @report at PCI address @pci, or NULL. */
static json_object *device_at(json_object *report, const char *pci)
{
	json_object *devices = jget(report, "devices");
	long long i;

	for (i = 0; i < jlen(report, "devices"); i++) {
		json_object *d = json_object_array_get_idx(devices, i);

		if (!strcmp(jstr(d, "pci_address"), pci))
			return d;
	}
	return NULL;
}

/* The process entry of @device with @pid, or NULL. */
static json_object *process_of(json_object *device, pid_t pid)
{
	json_object *procs = jget(device, "processes");
	long long i;

	for (i = 0; i < jlen(device, "processes"); i++) {
		json_object *p = json_object_array_get_idx(procs, i);

		if (jint(p, "pid") == pid)
			return p;
	}
	return NULL;
}

static void read_comm(char *comm, size_t len)
{
	FILE *f = fopen("/proc/self/comm", "r");

	comm[0] = '\0';
	if (f && fgets(comm, len, f))
		comm[strcspn(comm, "\n")] = '\0';
	if (f)
		fclose(f);
}

/* Submit @cb on @queue and wait for it; its status in @st. */
static int run_job(struct accel_device *dev, struct accel_cmdbuf *cb,
		   uint32_t queue, struct accel_job_status *st)
{
	struct accel_submit_opts opts = { .queue = queue };
	struct accel_job *job;
	int ret;

	ret = accel_submit(dev, cb, &opts, &job);
	if (ret)
		return ret;
	ret = accel_job_wait(job, TSR_TEST_WAIT_NS);
	if (!ret && st)
		ret = accel_job_status(job, st);
	accel_job_destroy(job);
	return ret;
}

static int run_nop(struct accel_device *dev, uint32_t queue)
{
	struct accel_cmdbuf *cb;
	int ret;

	ret = accel_cmdbuf_create(dev, &cb);
	if (!ret)
		ret = accel_cmdbuf_nop(cb);
	if (!ret)
		ret = run_job(dev, cb, queue, NULL);
	accel_cmdbuf_destroy(cb);
	return ret;
}

static const char *const driver_counters[] = {
	"jobs_submitted", "jobs_completed", "jobs_failed", "mmu_faults",
	"ecc_correctable", "ecc_uncorrectable", "timeouts", "lost_irqs",
	"queue_resets", "device_resets", "fatal_errors", "banned_contexts",
	"remote_access_refused", "link_downs", "link_ups",
};

FIXTURE(smi) {
	struct accel_device *dev;	/* device 0 */
	struct accel_device_info info;
	unsigned int count;
	const char *pci;
};

FIXTURE_SETUP(smi)
{
	ASSERT_EQ(ACCEL_OK, accel_device_count(&self->count));
	ASSERT_LE(1, self->count);
	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &self->dev));
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev, &self->info));
	self->pci = self->info.pci_address;
}

FIXTURE_TEARDOWN(smi)
{
	accel_device_close(self->dev);
}

/* ------------------------------------------------------------ listing */

TEST_F(smi, json_lists_every_device_with_its_identity)
{
	const char *args[] = { "--json", "-i", "0", NULL };
	json_object *report = smi_json(_metadata, args);
	json_object *devices = jget(report, "devices");
	unsigned int i;

	ASSERT_EQ(self->count, jlen(report, "devices"));
	EXPECT_STREQ(accel_version_string(), jstr(report, "versions.libaccel"));
	for (i = 0; i < self->count; i++) {
		json_object *d = json_object_array_get_idx(devices, i);
		struct accel_device_info info;
		struct accel_device *dev;
		char version[32];

		ASSERT_EQ(ACCEL_OK, accel_device_open(i, &dev));
		ASSERT_EQ(ACCEL_OK, accel_device_get_info(dev, &info));
		accel_device_close(dev);
		EXPECT_EQ(i, jint(d, "index"));
		EXPECT_STREQ(info.pci_address, jstr(d, "pci_address"));
		EXPECT_EQ(info.minor, jint(d, "minor"));
		EXPECT_EQ(TSR_CHIP_ID, jint(d, "versions.chip_id"));
		snprintf(version, sizeof(version), "%d.%d", info.driver_major,
			 info.driver_minor);
		EXPECT_STREQ(version, jstr(d, "versions.uapi"));
		snprintf(version, sizeof(version), "%d.%d.%d", info.driver_major,
			 info.driver_minor, info.driver_patch);
		EXPECT_STREQ(version, jstr(d, "versions.driver"));
		snprintf(version, sizeof(version), "%u.%u",
			 info.device_version_major, info.device_version_minor);
		EXPECT_STREQ(version, jstr(d, "versions.device_model"));
		EXPECT_EQ(info.preset, jint(d, "config.preset_id"));
		EXPECT_EQ(info.tensorcores, jint(d, "config.tensorcores"));
		EXPECT_EQ(info.num_queues, jint(d, "config.num_queues"));
		EXPECT_EQ(info.clock_mhz, jint(d, "config.clock_mhz"));
		EXPECT_EQ(info.sparsecores, jint(d, "config.sparsecores"));
		EXPECT_EQ(info.sc_tiles, jint(d, "config.sc_tiles"));
		EXPECT_EQ(info.sc_simd_f32, jint(d, "config.sc_simd_f32"));
		EXPECT_EQ(info.sc_simd_bf16, jint(d, "config.sc_simd_bf16"));
		EXPECT_EQ(info.sc_spmem_kib, jint(d, "config.sc_spmem_kib"));
	}
	json_object_put(report);
}

TEST_F(smi, slice_agrees_with_get_info)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	json_object *report = smi_json(_metadata, args);
	json_object *d = device_at(report, self->pci);
	struct tsr_info raw;
	char wrap[4] = "";
	unsigned int i;

	ASSERT_NE(NULL, d);
	ASSERT_EQ(0, tsr_info(accel_device_fd(self->dev), &raw));
	EXPECT_EQ(raw.slice_id, jint(d, "links.slice.id"));
	EXPECT_EQ(raw.slice_chips, jint(d, "links.slice.chips"));
	EXPECT_EQ(raw.slice_index, jint(d, "links.slice.index"));
	EXPECT_EQ(raw.max_windows, jint(d, "links.slice.max_windows"));
	EXPECT_EQ(raw.ici_link_latency_ns, jint(d, "links.ici_link_latency_ns"));
	EXPECT_EQ(3, jlen(d, "links.slice.topology"));
	EXPECT_EQ(3, jlen(d, "links.slice.coords"));
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(raw.topology[i], jint_at(d, "links.slice.topology", i));
		EXPECT_EQ(raw.coords[i], jint_at(d, "links.slice.coords", i));
		if (raw.wrap & (1u << i))
			strncat(wrap, &"xyz"[i], 1);
	}
	EXPECT_STREQ(wrap, jstr(d, "links.slice.wrap"));
	json_object_put(report);
}

/* Port @p's transport, as the driver's sysfs file gives it. */
static void port_transport(const char *pci, unsigned int p, char *out,
			   size_t len)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/ici/port%u/transport",
		 pci, p);
	snprintf(out, len, "(none)");
	f = fopen(path, "re");
	if (f) {
		if (!fgets(out, len, f))
			snprintf(out, len, "(empty)");
		out[strcspn(out, "\n")] = 0;
		fclose(f);
	}
}

TEST_F(smi, every_port_is_listed_with_its_socket_and_state)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	char transport[16];
	struct tsr_info before, after;
	json_object *report, *d, *ports;
	unsigned int p, i, wired = 0, up = 0;

	ASSERT_EQ(0, tsr_info(accel_device_fd(self->dev), &before));
	report = smi_json(_metadata, args);
	ASSERT_EQ(0, tsr_info(accel_device_fd(self->dev), &after));
	d = device_at(report, self->pci);
	ASSERT_NE(NULL, d);
	EXPECT_EQ(before.ici_ports, jint(d, "links.ici_ports"));
	ASSERT_EQ(before.ici_ports, jlen(d, "links.ports"));
	ports = jget(d, "links.ports");
	for (p = 0; p < before.ici_ports; p++) {
		json_object *port = json_object_array_get_idx(ports, p);
		const struct drm_tessera_port *raw = &before.ports[p];
		bool is_wired = before.ports_wired & (1u << p);

		EXPECT_EQ(p, jint(port, "port"));
		EXPECT_EQ(is_wired, jbool(port, "wired")) TH_LOG("port %u", p);
		wired += is_wired;
		/* A link that changed state while the tool read it says nothing. */
		if (raw->state != after.ports[p].state)
			continue;
		up += raw->state == TSR_ICI_STATE_UP;
		EXPECT_STREQ(accel_link_state_name(raw->state), jstr(port, "state"))
			TH_LOG("port %u", p);
		if (raw->state != TSR_ICI_STATE_UP)
			continue;
		/* An up link runs on a ring or its socket, as sysfs says. */
		port_transport(self->pci, p, transport, sizeof(transport));
		EXPECT_TRUE(!strcmp(transport, "ring") ||
			    !strcmp(transport, "socket")) TH_LOG("%s", transport);
		EXPECT_STREQ(transport, jstr(port, "transport"));
		for (i = 0; i < 3; i++) {
			EXPECT_EQ(raw->peer_coords[i], jint_at(port, "peer.coords", i));
		}
		EXPECT_EQ(raw->peer_port, jint(port, "peer.port"));
		EXPECT_EQ(raw->peer_slice, jint(port, "peer.slice_id"));
	}
	EXPECT_EQ(wired, jint(d, "links.wired"));
	if (!memcmp(before.ports, after.ports, sizeof(before.ports))) {
		EXPECT_EQ(up, jint(d, "links.connected"));
	}
	EXPECT_STREQ(!before.ici_ports ? "none" : !wired ? "unwired" :
		     up == wired ? "up" : "down", jstr(d, "links.state"));
	json_object_put(report);
}

/*
 * Link counters only grow: what the tool reports of each wired port lies
 * between two reads of LINK_INFO around it.
 */
TEST_F(smi, link_counters_agree_with_link_info)
{
#define LINK_COUNTER(name) { #name, offsetof(struct accel_link_info, name) }
	static const struct {
		const char *name;
		size_t offset;
	} counters[] = {
		LINK_COUNTER(frames_tx), LINK_COUNTER(frames_rx),
		LINK_COUNTER(bytes_tx), LINK_COUNTER(bytes_rx),
		LINK_COUNTER(crc_errors), LINK_COUNTER(seq_errors),
		LINK_COUNTER(naks), LINK_COUNTER(replays),
		LINK_COUNTER(timeouts), LINK_COUNTER(credit_stalls),
		LINK_COUNTER(link_downs), LINK_COUNTER(protocol_errors),
		LINK_COUNTER(tail_probes), LINK_COUNTER(tail_losses),
	};
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	struct accel_link_info before[TSR_ICI_MAX_PORTS], after[TSR_ICI_MAX_PORTS];
	json_object *report, *ports;
	unsigned int p, i;

	if (!self->info.ports_wired)
		SKIP(return, "no ICI port of chip 0 is wired");
	for (p = 0; p < self->info.ici_ports; p++) {
		ASSERT_EQ(ACCEL_OK, accel_link_get_info(self->dev, p, &before[p]));
	}
	report = smi_json(_metadata, args);
	for (p = 0; p < self->info.ici_ports; p++) {
		ASSERT_EQ(ACCEL_OK, accel_link_get_info(self->dev, p, &after[p]));
	}
	ports = jget(device_at(report, self->pci), "links.ports");
	ASSERT_NE(NULL, ports);
	for (p = 0; p < self->info.ici_ports; p++) {
		json_object *port = json_object_array_get_idx(ports, p);

		for (i = 0; i < ARRAY_SIZE(counters); i++) {
			long long v = jint(jget(port, "counters"), counters[i].name);
			uint64_t lo, hi;

			memcpy(&lo, (const char *)&before[p] + counters[i].offset,
			       sizeof(lo));
			memcpy(&hi, (const char *)&after[p] + counters[i].offset,
			       sizeof(hi));
			EXPECT_LE(lo, v) TH_LOG("port %u %s", p, counters[i].name);
			EXPECT_GE(hi, v) TH_LOG("port %u %s", p, counters[i].name);
		}
	}
	json_object_put(report);
#undef LINK_COUNTER
}

/* The tables give each wired port of a chip a line: "DEV  PORT DIR  state". */
TEST_F(smi, human_output_has_a_line_per_wired_port)
{
	const char *args[] = { "-i", "0", "-d", self->pci, NULL };
	struct smi_run r;
	unsigned int p;

	smi_run(args, &r);
	EXPECT_EQ(0, r.status) TH_LOG("stderr: %s", r.err);
	EXPECT_NE(NULL, strstr(r.out, "LINKS UP")) TH_LOG("%s", r.out);
	for (p = 0; p < self->info.ici_ports; p++) {
		char line[32];

		snprintf(line, sizeof(line), "\n  0  %u %c%c  ", p, p % 2 ? '-' : '+',
			 "xyz"[p / 2]);
		EXPECT_EQ(!!(self->info.ports_wired & (1u << p)),
			  strstr(r.out, line) != NULL) TH_LOG("port %u in:\n%s", p, r.out);
	}
	if (!self->info.ports_wired) {
		EXPECT_NE(NULL, strstr(r.out, "no ICI port is wired"));
	}
	smi_free(&r);
}

/* A chip with SparseCores has a line in their table; none, no table. */
TEST_F(smi, human_output_shows_the_sparsecores)
{
	const char *args[] = { "-i", "0", "-d", self->pci, NULL };
	const struct accel_device_info *i = &self->info;
	struct smi_run r;
	char simd[24], line[96];

	smi_run(args, &r);
	EXPECT_EQ(0, r.status) TH_LOG("stderr: %s", r.err);
	snprintf(simd, sizeof(simd), "%u/%u", i->sc_simd_f32, i->sc_simd_bf16);
	snprintf(line, sizeof(line), "\n  0  %11u  %5u  %13s  ", i->sparsecores,
		 i->sc_tiles, simd);
	EXPECT_EQ(i->sparsecores != 0,
		  strstr(r.out, "SPARSECORES  TILES") != NULL) TH_LOG("%s", r.out);
	EXPECT_EQ(i->sparsecores != 0, strstr(r.out, line) != NULL)
		TH_LOG("no \"%s\" in:\n%s", line + 1, r.out);
	smi_free(&r);
}

TEST_F(smi, a_device_chosen_by_pci_address_is_the_only_one_reported)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	json_object *report = smi_json(_metadata, args);
	json_object *devices = jget(report, "devices");

	ASSERT_EQ(1, jlen(report, "devices"));
	EXPECT_STREQ(self->pci,
		     jstr(json_object_array_get_idx(devices, 0), "pci_address"));
	EXPECT_EQ(0, jint(json_object_array_get_idx(devices, 0), "index"));
	json_object_put(report);
}

TEST_F(smi, human_output_names_every_device_by_pci_address)
{
	const char *args[] = { "-i", "0", NULL };
	struct smi_run r;
	unsigned int i;

	smi_run(args, &r);
	EXPECT_EQ(0, r.status) TH_LOG("stderr: %s", r.err);
	for (i = 0; i < self->count; i++) {
		char pci[32];

		ASSERT_EQ(0, tsr_pci_address(i, pci, sizeof(pci)));
		EXPECT_NE(NULL, strstr(r.out, pci)) TH_LOG("%s not in:\n%s", pci, r.out);
	}
	EXPECT_EQ(NULL, json_tokener_parse(r.out));
	smi_free(&r);
}

/* ------------------------------------------------------------ counters */

TEST_F(smi, driver_counters_agree_with_sysfs)
{
	const char *args[] = { "--json", "-i", "0", NULL };
	json_object *report;
	unsigned int i, j;

	/* Something to count: a job on device 0. */
	ASSERT_EQ(ACCEL_OK, run_nop(self->dev, 0));
	report = smi_json(_metadata, args);
	for (i = 0; i < self->count; i++) {
		json_object *d, *counters;
		char pci[32];

		ASSERT_EQ(0, tsr_pci_address(i, pci, sizeof(pci)));
		d = device_at(report, pci);
		ASSERT_NE(NULL, d) TH_LOG("%s missing", pci);
		counters = jget(d, "driver_counters");
		for (j = 0; j < ARRAY_SIZE(driver_counters); j++) {
			const char *name = driver_counters[j];

			EXPECT_EQ(tsr_sysfs_counter(pci, name), jint(counters, name))
				TH_LOG("%s: %s", pci, name);
		}
		EXPECT_EQ(tsr_sysfs_counter(pci, "hbm_free"),
			  jint(d, "hbm.free_bytes"));
	}
	EXPECT_LE(1, jint(device_at(report, self->pci),
			  "driver_counters.jobs_completed"));
	json_object_put(report);
}

TEST_F(smi, a_chip_reset_shows_in_device_resets)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	long long before = tsr_sysfs_counter(self->pci, "device_resets");
	json_object *report;

	ASSERT_LE(0, before);
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "force_recovery", 1));
	report = smi_json(_metadata, args);
	EXPECT_EQ(before + 1, jint(device_at(report, self->pci),
				   "driver_counters.device_resets"));
	json_object_put(report);
}

TEST_F(smi, a_correctable_ecc_error_shows_in_ecc_correctable)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	struct accel_buffer *hbm, *host;
	struct accel_cmdbuf *cb;
	json_object *report;
	long long before;
	char path[128];

	snprintf(path, sizeof(path),
		 "/sys/kernel/debug/accel/%s/fault_ecc_correctable", self->pci);
	if (access(path, W_OK))
		SKIP(return, "no fault injection: QEMU's debug-regs=on is off");
	before = tsr_sysfs_counter(self->pci, "ecc_correctable");
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 4096,
						ACCEL_PLACEMENT_HBM, &hbm));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 4096,
						ACCEL_PLACEMENT_HOST, &host));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(self->dev, &cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_copy(cb, host, 0, hbm, 0, 4));
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_ecc_correctable", 1));
	ASSERT_EQ(ACCEL_OK, run_job(self->dev, cb, 0, NULL));
	/* A ping round trip flushes the device interrupt's work. */
	ASSERT_EQ(ACCEL_OK, accel_device_ping(self->dev, 1, 0, NULL));
	ASSERT_EQ(before + 1, tsr_sysfs_counter(self->pci, "ecc_correctable"));
	report = smi_json(_metadata, args);
	EXPECT_EQ(before + 1, jint(device_at(report, self->pci),
				   "driver_counters.ecc_correctable"));
	json_object_put(report);
	accel_cmdbuf_destroy(cb);
	accel_buffer_destroy(host);
	accel_buffer_destroy(hbm);
}

TEST_F(smi, chip_counters_agree_with_get_counters)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	struct tsr_counters c;
	json_object *report, *d;

	ASSERT_EQ(ACCEL_OK, run_nop(self->dev, 0));
	ASSERT_EQ(0, tsr_counters(accel_device_fd(self->dev), &c));
	report = smi_json(_metadata, args);
	d = device_at(report, self->pci);
	EXPECT_LE(1, c.chip_jobs);
	EXPECT_EQ(c.chip_jobs, jint(d, "chip_counters.jobs"));
	EXPECT_EQ(c.chip_commands, jint(d, "chip_counters.commands"));
	EXPECT_EQ(c.clock_cycles, jint(d, "chip_counters.clock_cycles"));
	EXPECT_EQ(c.mxu_busy_cycles, jint(d, "chip_counters.mxu_busy_cycles"));
	EXPECT_EQ(c.hbm_write_bytes, jint(d, "chip_counters.hbm_write_bytes"));
	json_object_put(report);
}

/* ------------------------------------------------------------ HBM */

TEST_F(smi, hbm_use_agrees_with_get_info_and_follows_an_allocation)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	struct accel_device_info after;
	struct accel_buffer *buf;
	json_object *r1, *r2;
	long long used;

	r1 = smi_json(_metadata, args);
	used = self->info.hbm_size - self->info.hbm_free;
	EXPECT_EQ(self->info.hbm_size,
		  jint(device_at(r1, self->pci), "hbm.total_bytes"));
	EXPECT_EQ(used, jint(device_at(r1, self->pci), "hbm.used_bytes"));

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 8 * MIB,
						ACCEL_PLACEMENT_HBM, &buf));
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev, &after));
	r2 = smi_json(_metadata, args);
	EXPECT_EQ(after.hbm_size - after.hbm_free,
		  jint(device_at(r2, self->pci), "hbm.used_bytes"));
	EXPECT_EQ(used + 8 * MIB,
		  jint(device_at(r2, self->pci), "hbm.used_bytes"));
	json_object_put(r1);
	json_object_put(r2);
	accel_buffer_destroy(buf);
}

/* ------------------------------------------------------------ processes */

TEST_F(smi, own_process_is_listed_with_the_memory_fdinfo_reports)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	int fd = accel_device_fd(self->dev);
	struct accel_buffer *hbm, *host;
	json_object *report, *p;
	char comm[32];

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 8 * MIB,
						ACCEL_PLACEMENT_HBM, &hbm));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 64 * 1024,
						ACCEL_PLACEMENT_HOST, &host));
	report = smi_json(_metadata, args);
	p = process_of(device_at(report, self->pci), getpid());
	ASSERT_NE(NULL, p);
	read_comm(comm, sizeof(comm));
	EXPECT_STREQ(comm, jstr(p, "name"));
	EXPECT_EQ(tsr_fdinfo_bytes(fd, "drm-client-id"), jint(p, "client_id"));
	EXPECT_EQ(8 * MIB, jint(p, "memory.hbm.total_bytes"));
	EXPECT_EQ(tsr_fdinfo_bytes(fd, "drm-total-hbm"),
		  jint(p, "memory.hbm.total_bytes"));
	EXPECT_EQ(tsr_fdinfo_bytes(fd, "drm-resident-hbm"),
		  jint(p, "memory.hbm.resident_bytes"));
	EXPECT_EQ(tsr_fdinfo_bytes(fd, "drm-total-host"),
		  jint(p, "memory.host.total_bytes"));
	EXPECT_LE(64 * 1024, jint(p, "memory.host.total_bytes"));
	json_object_put(report);
	accel_buffer_destroy(host);
	accel_buffer_destroy(hbm);
}

TEST_F(smi, own_engine_time_agrees_with_fdinfo)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	int fd = accel_device_fd(self->dev);
	json_object *report, *p, *engine;

	ASSERT_EQ(ACCEL_OK, run_nop(self->dev, 1));
	report = smi_json(_metadata, args);
	p = process_of(device_at(report, self->pci), getpid());
	ASSERT_NE(NULL, p);
	engine = jget(p, "engine_ns");
	ASSERT_EQ(self->info.num_queues, jlen(p, "engine_ns"));
	EXPECT_LT(0, tsr_fdinfo_bytes(fd, "drm-engine-q1"));
	EXPECT_EQ(tsr_fdinfo_bytes(fd, "drm-engine-q1"),
		  json_object_get_int64(json_object_array_get_idx(engine, 1)));
	EXPECT_EQ(tsr_fdinfo_bytes(fd, "drm-engine-q0"),
		  json_object_get_int64(json_object_array_get_idx(engine, 0)));
	json_object_put(report);
}

TEST_F(smi, a_process_that_closed_its_device_is_not_listed)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	json_object *report;

	accel_device_close(self->dev);
	self->dev = NULL;
	report = smi_json(_metadata, args);
	EXPECT_EQ(NULL, process_of(device_at(report, self->pci), getpid()));
	json_object_put(report);
}

TEST_F(smi, the_tool_does_not_list_itself)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	int out = memfd_create("smi-out", MFD_CLOEXEC);
	json_object *report, *procs;
	long long i;
	char *text;
	pid_t pid;

	pid = smi_spawn(args, out, STDERR_FILENO);
	ASSERT_EQ(0, exit_status(pid));
	text = slurp(out);
	report = json_tokener_parse(text);
	ASSERT_NE(NULL, report);
	procs = jget(device_at(report, self->pci), "processes");
	ASSERT_LE(1, jlen(device_at(report, self->pci), "processes"))
		TH_LOG("this test's process is missing");
	for (i = 0; i < jlen(device_at(report, self->pci), "processes"); i++)
		EXPECT_NE(pid, jint(json_object_array_get_idx(procs, i), "pid"));
	json_object_put(report);
	free(text);
	close(out);
}

/* ------------------------------------------------------------ utilization */

TEST_F(smi, an_idle_chip_is_not_utilized)
{
	const char *args[] = { "--json", "-i", "0.1", "-d", self->pci, NULL };
	json_object *report = smi_json(_metadata, args);
	json_object *d = device_at(report, self->pci);

	ASSERT_NE(NULL, jget(d, "utilization"));
	EXPECT_LE(0.1, jnum(d, "utilization.interval_s"));
	EXPECT_EQ(0, jint(d, "utilization.clock_cycles"));
	EXPECT_EQ(0, jnum(d, "utilization.mxu_percent"));
	EXPECT_EQ(0, jnum(d, "utilization.vpu_percent"));
	EXPECT_EQ(0, jnum(d, "utilization.dma_percent"));
	json_object_put(report);
}

TEST_F(smi, an_interval_of_zero_reports_no_utilization)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	json_object *report = smi_json(_metadata, args);
	json_object *d = device_at(report, self->pci), *u = (json_object *)1;

	ASSERT_NE(NULL, d);
	ASSERT_TRUE(json_object_object_get_ex(d, "utilization", &u));
	EXPECT_EQ(NULL, u);
	json_object_put(report);
}

/* A 512 x 512 x 512 bf16 MATMUL in HBM: mostly MXU time. */
static void build_matmul(struct __test_metadata *_metadata,
			 struct accel_device *dev, struct accel_buffer **buf,
			 struct accel_cmdbuf **cb)
{
	struct accel_tensor a = { NULL, 0, 512, 512, 0, TSR_DTYPE_BF16 };
	struct accel_tensor b = { NULL, 512 * 1024, 512, 512, 0, TSR_DTYPE_BF16 };
	struct accel_tensor c = { NULL, 1 * MIB, 512, 512, 0, TSR_DTYPE_F32 };

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(dev, 2 * MIB,
						ACCEL_PLACEMENT_HBM, buf));
	a.buffer = b.buffer = c.buffer = *buf;
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(dev, cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_matmul(*cb, &a, &b, &c, 0));
}

/* The next report tessera-smi streams on @f, or NULL at its end. */
static json_object *next_report(FILE *f)
{
	char *line = NULL;
	size_t len = 0;
	json_object *o = NULL;

	if (getline(&line, &len, f) > 0)
		o = json_tokener_parse(line);
	free(line);
	return o;
}

static const char *const engines[] = { "mxu", "vpu", "dma" };

/* Busy cycles per engine (as engines[]) and modeled clock cycles. */
struct cycles {
	uint64_t busy[3];
	uint64_t clock;
	double max_percent[3];
};

/*
 * Add the utilization window @u of a report to @sum, checking that each
 * engine's percentage is its busy cycles over the clock's, at most 100.
 */
static void add_window(struct __test_metadata *_metadata, json_object *u,
		       struct cycles *sum)
{
	double clock = jint(u, "clock_cycles");
	unsigned int e;

	ASSERT_LE(0, clock);
	for (e = 0; e < ARRAY_SIZE(engines); e++) {
		char key[32];
		double busy, percent, want;

		snprintf(key, sizeof(key), "%s_busy_cycles", engines[e]);
		busy = jint(u, key);
		snprintf(key, sizeof(key), "%s_percent", engines[e]);
		percent = jnum(u, key);
		want = clock ? fmin(100, 100 * busy / clock) : 0;
		ASSERT_LE(0, busy);
		EXPECT_GE(100, percent);
		EXPECT_GE(0.006, fabs(want - percent))
			TH_LOG("%s: %.0f busy over %.0f cycles is %.2f%%, not %.2f%%",
			       engines[e], busy, clock, want, percent);
		sum->busy[e] += busy;
		sum->max_percent[e] = fmax(sum->max_percent[e], percent);
	}
	sum->clock += clock;
}

/* Run @cb on every queue of @dev; the cycles the jobs report. */
static void run_on_every_queue(struct __test_metadata *_metadata,
			       struct accel_device *dev, uint32_t queues,
			       struct accel_cmdbuf *cb, struct cycles *jobs)
{
	uint32_t q;

	for (q = 0; q < queues; q++) {
		struct accel_job_status st;

		ASSERT_EQ(ACCEL_OK, run_job(dev, cb, q, &st));
		jobs->busy[0] += st.mxu_cycles;
		jobs->busy[1] += st.vpu_cycles;
		jobs->busy[2] += st.dma_cycles;
	}
}

/*
 * tessera-smi reports every 0.1 s, each report covering the time since
 * the last.  Once its first report is out, the test runs a MATMUL on
 * every queue (one of them is the queue whose clock is the chip's, so the
 * chip's clock must advance) and reads reports until they account for
 * every MXU cycle the jobs report.
 */
TEST_F(smi, utilization_sees_jobs_that_end_within_the_window)
{
	const char *args[] = { "--json", "-i", "0", "-l", "0.1", "-c", "200",
			       "-d", self->pci, NULL };
	struct cycles jobs = { 0 }, seen = { 0 };
	struct tsr_counters before, after;
	int fd = accel_device_fd(self->dev);
	struct accel_buffer *buf;
	struct accel_cmdbuf *cb;
	json_object *report;
	unsigned int e;
	int pipefd[2];
	pid_t pid;
	FILE *f;

	build_matmul(_metadata, self->dev, &buf, &cb);
	ASSERT_EQ(0, pipe2(pipefd, O_CLOEXEC));
	pid = smi_spawn(args, pipefd[1], STDERR_FILENO);
	close(pipefd[1]);
	f = fdopen(pipefd[0], "r");
	report = next_report(f);
	ASSERT_NE(NULL, report);
	json_object_put(report);

	ASSERT_EQ(0, tsr_counters(fd, &before));
	run_on_every_queue(_metadata, self->dev, self->info.num_queues, cb, &jobs);
	ASSERT_EQ(0, tsr_counters(fd, &after));
	ASSERT_LT(0, jobs.busy[0]);
	ASSERT_EQ(jobs.busy[0], after.mxu_busy_cycles - before.mxu_busy_cycles);

	while (seen.busy[0] < jobs.busy[0] && (report = next_report(f))) {
		json_object *u = jget(device_at(report, self->pci), "utilization");

		ASSERT_NE(NULL, u);
		add_window(_metadata, u, &seen);
		json_object_put(report);
	}
	kill(pid, SIGTERM);
	exit_status(pid);
	fclose(f);
	for (e = 0; e < ARRAY_SIZE(engines); e++) {
		const char *engine = engines[e];

		EXPECT_EQ(jobs.busy[e], seen.busy[e]) TH_LOG("%s", engine);
	}
	EXPECT_EQ(after.clock_cycles - before.clock_cycles, seen.clock);
	EXPECT_LT(0, seen.max_percent[0]);
	accel_cmdbuf_destroy(cb);
	accel_buffer_destroy(buf);
}

/* ------------------------------------------------------------ dmon */

/* Fields of a --dmon line, the two "# ..." header lines name them. */
#define DMON_FIELDS 12

struct dmon_line {
	int dev;
	double mxu, vpu, dma, hbm_mib;
	unsigned long long jobs, failed;
	double ici_tx_kib, ici_rx_kib;
	char links[16];
	unsigned long long link_downs, link_ups;
};

static bool parse_dmon_line(const char *text, struct dmon_line *l)
{
	return sscanf(text, "%d %lf %lf %lf %lf %llu %llu %lf %lf %15s %llu %llu",
		      &l->dev, &l->mxu, &l->vpu, &l->dma, &l->hbm_mib, &l->jobs,
		      &l->failed, &l->ici_tx_kib, &l->ici_rx_kib, l->links,
		      &l->link_downs, &l->link_ups) == DMON_FIELDS;
}

/* The next line of @f into @buf, without its newline; false at the end. */
static bool next_line(FILE *f, char *buf, size_t len)
{
	if (!fgets(buf, len, f))
		return false;
	buf[strcspn(buf, "\n")] = '\0';
	return true;
}

TEST_F(smi, dmon_prints_one_header_and_a_line_per_chip_per_interval)
{
	const char *args[] = { "--dmon", "--loop", "0.05", "--count", "3", NULL };
	char *line, *save = NULL;
	struct dmon_line l;
	unsigned int n = 0;
	struct smi_run r;

	smi_run(args, &r);
	EXPECT_EQ(0, r.status) TH_LOG("stderr: %s", r.err);
	line = strtok_r(r.out, "\n", &save);
	ASSERT_NE(NULL, line);
	EXPECT_EQ(0, strncmp(line, "# dev", 5)) TH_LOG("%s", line);
	line = strtok_r(NULL, "\n", &save);
	ASSERT_NE(NULL, line);
	EXPECT_EQ(0, strncmp(line, "# idx", 5)) TH_LOG("%s", line);
	while ((line = strtok_r(NULL, "\n", &save))) {
		ASSERT_TRUE(parse_dmon_line(line, &l)) TH_LOG("line: %s", line);
		EXPECT_EQ(n % self->count, l.dev) TH_LOG("line: %s", line);
		EXPECT_STREQ("-", l.links);	/* no port is wired here */
		n++;
	}
	EXPECT_EQ(3 * self->count, n);
	smi_free(&r);
}

/*
 * Jobs that end between two lines show in the line of their interval and
 * in no other: a tool printing totals since the driver bound instead of
 * what each interval added fails here, as the line after them must be 0.
 */
TEST_F(smi, dmon_counts_jobs_in_the_interval_they_end_in)
{
	const char *args[] = { "--dmon", "--loop", "0.2", "--count", "100",
			       "-d", self->pci, NULL };
	unsigned long long jobs = 0;
	struct accel_buffer *buf;
	struct accel_cmdbuf *cb;
	struct dmon_line l;
	double mxu = 0;
	char line[256];
	int pipefd[2], i;
	pid_t pid;
	FILE *f;

	build_matmul(_metadata, self->dev, &buf, &cb);
	ASSERT_EQ(0, pipe2(pipefd, O_CLOEXEC));
	pid = smi_spawn(args, pipefd[1], STDERR_FILENO);
	close(pipefd[1]);
	f = fdopen(pipefd[0], "r");
	for (i = 0; i < 3; i++)		/* the header, the first interval */
		ASSERT_TRUE(next_line(f, line, sizeof(line)));
	ASSERT_TRUE(parse_dmon_line(line, &l)) TH_LOG("line: %s", line);

	for (i = 0; i < 3; i++)
		ASSERT_EQ(ACCEL_OK, run_job(self->dev, cb, 0, NULL));
	while (jobs < 3 && next_line(f, line, sizeof(line))) {
		ASSERT_TRUE(parse_dmon_line(line, &l)) TH_LOG("line: %s", line);
		jobs += l.jobs;
		mxu = fmax(mxu, l.mxu);
		EXPECT_EQ(0, l.failed);
	}
	EXPECT_EQ(3, jobs);
	EXPECT_LT(0, mxu);
	ASSERT_TRUE(next_line(f, line, sizeof(line)));
	ASSERT_TRUE(parse_dmon_line(line, &l)) TH_LOG("line: %s", line);
	EXPECT_EQ(0, l.jobs) TH_LOG("an interval without jobs: %s", line);
	EXPECT_EQ(0, l.mxu) TH_LOG("an interval without jobs: %s", line);
	EXPECT_LE(2, l.hbm_mib);	/* the MATMUL's buffer */
	kill(pid, SIGTERM);
	exit_status(pid);
	fclose(f);
	accel_cmdbuf_destroy(cb);
	accel_buffer_destroy(buf);
}

/* ------------------------------------------------------------ options */

TEST_F(smi, loop_with_count_prints_that_many_reports)
{
	const char *args[] = { "--json", "-i", "0", "--loop", "0.05", "--count",
			       "3", NULL };
	struct smi_run r;
	char *line, *save = NULL;
	long long n = 0;

	smi_run(args, &r);
	EXPECT_EQ(0, r.status) TH_LOG("stderr: %s", r.err);
	for (line = strtok_r(r.out, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		json_object *report = json_tokener_parse(line);

		ASSERT_NE(NULL, report) TH_LOG("not JSON: %s", line);
		EXPECT_EQ(++n, jint(report, "report"));
		EXPECT_EQ(self->count, jlen(report, "devices"));
		json_object_put(report);
	}
	EXPECT_EQ(3, n);
	smi_free(&r);
}

/* Run with @args; it must fail with @status, naming @what on stderr. */
static void expect_failure(struct __test_metadata *_metadata,
			   const char *const args[], int status,
			   const char *what)
{
	struct smi_run r;

	smi_run(args, &r);
	EXPECT_EQ(status, r.status);
	EXPECT_STREQ("", r.out);
	EXPECT_NE(NULL, strstr(r.err, what)) TH_LOG("stderr: %s", r.err);
	smi_free(&r);
}

TEST(an_unknown_option_is_a_usage_error)
{
	const char *args[] = { "--no-such-option", NULL };

	expect_failure(_metadata, args, 2, "--no-such-option");
}

TEST(a_bad_interval_is_a_usage_error)
{
	const char *words[] = { "--interval", "soon", NULL };
	const char *negative[] = { "-i", "-1", NULL };

	expect_failure(_metadata, words, 2, "soon");
	expect_failure(_metadata, negative, 2, "-1");
}

TEST(count_without_loop_is_a_usage_error)
{
	const char *args[] = { "--count", "3", NULL };

	expect_failure(_metadata, args, 2, "--loop");
}

TEST(dmon_takes_its_interval_from_loop_only)
{
	const char *interval[] = { "--dmon", "-i", "1", NULL };
	const char *json[] = { "--dmon", "--json", NULL };

	expect_failure(_metadata, interval, 2, "--loop");
	expect_failure(_metadata, json, 2, "--json");
}

TEST(a_malformed_device_is_a_usage_error)
{
	const char *args[] = { "--device", "chip0", NULL };

	expect_failure(_metadata, args, 2, "chip0");
}

TEST(help_succeeds_and_shows_the_options)
{
	const char *args[] = { "--help", NULL };
	struct smi_run r;

	smi_run(args, &r);
	EXPECT_EQ(0, r.status);
	EXPECT_NE(NULL, strstr(r.out, "--json"));
	EXPECT_NE(NULL, strstr(r.out, "--interval"));
	smi_free(&r);
}

TEST_F(smi, a_device_index_past_the_last_is_no_device)
{
	char index[16];
	const char *args[] = { "-d", index, NULL };

	snprintf(index, sizeof(index), "%u", self->count);
	expect_failure(_metadata, args, 3, index);
}

/* Every context of the chip taken: tessera-smi cannot open it. */
TEST_F(smi, a_device_that_cannot_be_opened_exits_4_and_says_why)
{
	const char *args[] = { "--json", "-i", "0", "-d", self->pci, NULL };
	int fds[TSR_MAX_CONTEXTS], n = 0;
	json_object *report;
	struct smi_run r;

	while (n < TSR_MAX_CONTEXTS && (fds[n] = tsr_open(self->info.minor)) >= 0)
		n++;
	ASSERT_EQ(ENOSPC, errno);
	smi_run(args, &r);
	while (n--)
		close(fds[n]);
	EXPECT_EQ(4, r.status);
	EXPECT_NE(NULL, strstr(r.err, self->pci)) TH_LOG("stderr: %s", r.err);
	report = json_tokener_parse(r.out);
	EXPECT_NE(NULL, jget(device_at(report, self->pci), "error"))
		TH_LOG("stdout: %s", r.out);
	json_object_put(report);
	smi_free(&r);
}

TEST(an_unknown_pci_address_is_no_device)
{
	const char *args[] = { "--json", "-d", "0000:ff:1f.7", NULL };

	expect_failure(_metadata, args, 3, "0000:ff:1f.7");
}

TEST_HARNESS_MAIN
