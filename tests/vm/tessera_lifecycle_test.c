// SPDX-License-Identifier: GPL-2.0
/*
 * The tessera driver through the chip's life: resets the PCI core makes
 * (a function-level reset through sysfs, PCIe errors) and system sleep,
 * jobs failed cleanly by them and the chip usable after; tracepoints and
 * devcoredump.
 *
 * Expects the VM's chips to have debug-regs=on and the driver a short
 * job_timeout_ms (tests/run-checks boots it so).  The PCIe error and hang
 * tests need the host to inject the faults: with TESSERA_HOST_FAULTS=1 in
 * the environment a test prints "TESSERA-FAULT ARGS" and the host runs
 * tessera-fault ARGS (tests/run-checks does, on a chip behind a root
 * port); without it they are skipped.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <dirent.h>
#include <libgen.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "tessera_util.h"


FIXTURE(life) {
	int fd;
	char pci[32];
	struct tsr_cmds c;
	struct tsr_bo host, hbm;
	uint32_t sync;
};

FIXTURE_SETUP(life)
{
	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_pci_address(0, self->pci, sizeof(self->pci)));
	ASSERT_EQ(0, tsr_make_two(self->fd, &self->c, &self->host, &self->hbm,
				  &self->sync));
}

FIXTURE_TEARDOWN(life)
{
	/* A stuck job a failed test left behind ends, or times out. */
	__atomic_store_n((uint64_t *)self->host.map, 1, __ATOMIC_SEQ_CST);
	tsr_debugfs_write(self->pci, "hangcheck", 1);
	close(self->fd);
}

/* Submit the fixture's commands on queue 0, using both buffers; no wait. */
static int submit(FIXTURE_DATA(life) *self, uint32_t sync, uint64_t *seq)
{
	return tsr_submit_two(self->fd, &self->c, &self->host, &self->hbm,
			      sync, seq);
}

/* Submit, wait for the job and return its status. */
static int run(FIXTURE_DATA(life) *self, struct drm_tessera_job_status *st)
{
	return tsr_run_two(self->fd, &self->c, &self->host, &self->hbm,
			   self->sync, st);
}

/*
 * A job that runs until host word 0 is set; returns once it has started.
 * Hang checks are off until the fixture's teardown: the job stays started
 * until the test resets the chip, however long the guest takes to get
 * there (a loaded host can hold a vCPU for longer than job_timeout_ms, and
 * a timeout would then fail the job as hung before the reset came).
 */
static int start_stuck_job(FIXTURE_DATA(life) *self, uint64_t *seq)
{
	uint32_t *words = self->host.map;
	int ret;

	ret = tsr_debugfs_write(self->pci, "hangcheck", 0);
	if (ret)
		return ret;
	memset(self->host.map, 0, 4096);
	tsr_emit_fill(&self->c, self->host.va + 192, 0x5747, 4);
	tsr_emit_sem(&self->c, TSR_OP_SEM_WAIT, self->host.va, 1);
	tsr_emit_fill(&self->c, self->host.va + 64, 0x99, 4);
	ret = submit(self, self->sync, seq);
	while (!ret && !__atomic_load_n(&words[48], __ATOMIC_ACQUIRE))
		sched_yield();
	return ret;
}

/* A function-level reset of the chip, as a user or a hypervisor asks. */
static int function_reset(FIXTURE_DATA(life) *self)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/reset", self->pci);
	return tsr_write_file(path, "1");
}

/* The driver's job timeout, from its module parameter. */
static unsigned int driver_timeout_ms(void)
{
	long long ms = tsr_read_number("/sys/module/tessera/parameters/job_timeout_ms");

	return ms > 0 ? ms : 0;
}

/*
 * With hang checks off (debugfs hangcheck, as the tests below use it) a
 * started job outlives the timeout on its ring; with them on again, the
 * next timeout resets its queue.
 */
TEST_F(life, with_hangcheck_off_a_started_job_outlives_the_timeout)
{
	long long timeouts = tsr_sysfs_counter(self->pci, "timeouts");
	unsigned int ms = driver_timeout_ms();
	struct drm_tessera_job_status st;
	uint64_t seq;

	ASSERT_LT(0, ms);
	ASSERT_LE(0, timeouts);
	ASSERT_EQ(0, start_stuck_job(self, &seq));
	/* Nothing to wait for: a timeout that does nothing. */
	usleep(ms * 1000 * 3 / 2);
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_PENDING, st.state);
	EXPECT_EQ(timeouts, tsr_sysfs_counter(self->pci, "timeouts"));

	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "hangcheck", 1));
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(-ETIMEDOUT, st.fence_error);
	EXPECT_EQ(timeouts + 1, tsr_sysfs_counter(self->pci, "timeouts"));
}

/*
 * The reset wipes the chip's registers (rings, context table, interrupt
 * enables): the job it interrupted fails as a chip reset fails it, the
 * job queued behind runs after, and so do new jobs on old buffers.
 */
TEST_F(life, a_function_reset_fails_the_running_job_and_the_next_ones_run)
{
	long long resets = tsr_sysfs_counter(self->pci, "device_resets");
	uint32_t later_sync = tsr_syncobj(self->fd);
	struct drm_tessera_job_status st;
	uint64_t *sem = self->host.map;
	uint32_t *words = self->host.map;
	uint64_t seq, later_seq;

	ASSERT_LT(0, (int)later_sync);
	ASSERT_EQ(0, start_stuck_job(self, &seq));
	tsr_emit_fill(&self->c, self->host.va + 128, 0x77, 4);
	ASSERT_EQ(0, submit(self, later_sync, &later_seq));

	ASSERT_EQ(0, function_reset(self));
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_wait(self->fd, later_sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, st.state);
	EXPECT_EQ(TSR_ERR_ABORTED, st.error);
	EXPECT_EQ(-ECANCELED, st.fence_error);
	ASSERT_EQ(0, tsr_job_status(self->fd, later_seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x77u, words[32]);
	EXPECT_EQ(resets + 1, tsr_sysfs_counter(self->pci, "device_resets"));

	/* Released, the interrupted job does not come back to life. */
	__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
	tsr_emit_copy(&self->c, self->host.va + 128, self->hbm.va, 4);
	tsr_emit_copy(&self->c, self->hbm.va, self->host.va + 256, 4);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x77u, words[64]);
	EXPECT_EQ(0u, words[16]) TH_LOG("the interrupted job ran again");
}

TEST_F(life, a_function_reset_of_an_idle_chip_leaves_every_file_working)
{
	struct drm_tessera_job_status st;
	uint32_t *words = self->host.map;
	struct tsr_cmds other = { 0 };
	uint64_t seq;
	int fd2, sync2;

	ASSERT_EQ(0, function_reset(self));
	ASSERT_EQ(0, function_reset(self));
	tsr_emit_fill(&self->c, self->host.va, 0x1234, 4);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x1234u, words[0]);

	/* A context made after the reset is in the context table too. */
	fd2 = tsr_open(0);
	ASSERT_LE(0, fd2);
	sync2 = tsr_syncobj(fd2);
	ASSERT_LT(0, sync2);
	ASSERT_EQ(0, tsr_bo_create(fd2, 4096, 0, &other.bo));
	tsr_emit_fill(&other, other.bo.va + 2048, 0x4321, 4);
	ASSERT_EQ(0, tsr_submit(fd2, &other, 1, NULL, 0, sync2, &seq));
	ASSERT_EQ(0, tsr_wait(fd2, sync2, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(fd2, seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x4321u, ((uint32_t *)other.bo.map)[512]);
	tsr_bo_destroy(fd2, &other.bo);
	close(fd2);
}

/* -------------------------------------------------------- tracepoints */

#define TRACEFS "/sys/kernel/tracing"

/*
 * A trace instance of its own (a buffer no other reader drains) with the
 * driver's events on; its folder, or "" when tracefs has no tessera
 * events.
 */
static void trace_instance(char *dir, size_t len)
{
	static const char *const events[] = {
		"tessera_job_submit", "tessera_job_run", "tessera_job_done",
		"tessera_reset",
	};
	char path[PATH_MAX];
	unsigned int i;

	if (access(TRACEFS "/instances", F_OK))
		mount("tracefs", TRACEFS, "tracefs", 0, NULL);
	snprintf(dir, len, TRACEFS "/instances/tessera-%d", getpid());
	if (mkdir(dir, 0700)) {
		dir[0] = 0;
		return;
	}
	for (i = 0; i < ARRAY_SIZE(events); i++) {
		snprintf(path, sizeof(path), "%s/events/tessera/%s/enable", dir,
			 events[i]);
		if (tsr_write_file(path, "1")) {
			rmdir(dir);
			dir[0] = 0;
			return;
		}
	}
}

/* The instance's whole trace, into @buf. */
static void trace_read(const char *dir, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n = 0, got;
	int fd;

	snprintf(path, sizeof(path), "%s/trace", dir);
	fd = open(path, O_RDONLY);
	while (fd >= 0 && (size_t)n < len - 1 &&
	       (got = read(fd, buf + n, len - 1 - n)) > 0)
		n += got;
	if (fd >= 0)
		close(fd);
	buf[n] = 0;
}

/* Whether @trace has event @event of job @seq with @detail after its seq. */
static bool traced(const char *trace, const char *event, unsigned int seq,
		   const char *detail)
{
	char want[128];
	const char *at;

	snprintf(want, sizeof(want), " seq=%u %s", seq, detail);
	for (at = strstr(trace, event); at; at = strstr(at + 1, event)) {
		const char *eol = strchr(at, '\n');
		const char *hit = strstr(at, want);

		if (hit && (!eol || hit < eol))
			return true;
	}
	return false;
}

/* Every job is seen submitted, put on its ring and done, and how it ended. */
TEST_F(life, tracepoints_see_every_job_submitted_run_and_done)
{
	enum { JOBS = 24 };
	static char trace[1 << 20];
	struct drm_tessera_job_status st;
	uint32_t syncs[JOBS];
	uint64_t seqs[JOBS];
	char dir[128];
	unsigned int i;

	trace_instance(dir, sizeof(dir));
	ASSERT_NE(0, dir[0]) TH_LOG("no tessera events in tracefs");
	for (i = 0; i < JOBS; i++) {
		const struct tsr_bo *bos[] = { &self->host };
		struct tsr_cmds c = { 0 };

		ASSERT_EQ(0, tsr_bo_create(self->fd, 4096, 0, &c.bo));
		syncs[i] = tsr_syncobj(self->fd);
		ASSERT_LT(0, (int)syncs[i]);
		if (i == JOBS - 1) {
			struct tsr_cmd_header bad = tsr_hdr(0x7f, 8);

			tsr_emit(&c, &bad, sizeof(bad));
		} else {
			tsr_emit_fill(&c, self->host.va + 4 * i, i, 4);
		}
		ASSERT_EQ(0, tsr_submit(self->fd, &c, i % 4, bos, 1, syncs[i],
					&seqs[i]));
		tsr_bo_destroy(self->fd, &c.bo);
	}
	for (i = 0; i < JOBS; i++)
		ASSERT_EQ(0, tsr_wait(self->fd, syncs[i], TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seqs[JOBS - 1], &st));
	ASSERT_EQ(DRM_TESSERA_JOB_FAILED, st.state);
	ASSERT_EQ(0, function_reset(self));

	/* A job is traced done when its scheduler frees it, a moment later. */
	for (i = 0; i < 1000; i++) {
		trace_read(dir, trace, sizeof(trace));
		if (traced(trace, "tessera_job_done", seqs[JOBS - 1], "error="))
			break;
		usleep(10000);
	}
	rmdir(dir);
	for (i = 0; i < JOBS; i++) {
		EXPECT_TRUE(traced(trace, "tessera_job_submit", seqs[i], ""))
			TH_LOG("job %llu not traced submitted", (unsigned long long)seqs[i]);
		EXPECT_TRUE(traced(trace, "tessera_job_run", seqs[i], ""))
			TH_LOG("job %llu not traced run", (unsigned long long)seqs[i]);
		EXPECT_TRUE(traced(trace, "tessera_job_done", seqs[i],
				   i == JOBS - 1 ? "error=-22" : "error=0\n"))
			TH_LOG("job %llu not traced done as it ended", (unsigned long long)seqs[i]);
	}
	EXPECT_NE(NULL, strstr(trace, "tessera_reset: dev=")) TH_LOG("no reset traced");
	EXPECT_NE(NULL, strstr(trace, " chip queue=-1"));
}

/* ------------------------------------------------------ PCIe errors */

/* Skip the test unless the host injects the faults asked for. */
static void need_the_host(void)
{
	if (!getenv("TESSERA_HOST_FAULTS"))
		tsr_skip_test("needs the host to inject faults (run it with tests/run-checks --test tessera_lifecycle_test)");
}

/* Ask the host to run tessera-fault @args. */
static void host_fault(const char *args)
{
	printf("TESSERA-FAULT %s\n", args);
	fflush(stdout);
}

/*
 * Skip the test unless the host injects PCIe errors and the kernel hears
 * them: a kernel without CONFIG_PCIEAER never would, and the test would
 * wait for a reset that cannot come.
 */
static void need_aer(const char *pci)
{
	char path[96];

	need_the_host();
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/aer_dev_fatal",
		 pci);
	if (access(path, F_OK))
		tsr_skip_test("the kernel reports no PCIe errors (CONFIG_PCIEAER)");
}

/* Ask the host for a PCIe error of @kind (tessera-fault aer KIND). */
static void raise_pcie_error(const char *kind)
{
	char args[32];

	snprintf(args, sizeof(args), "aer %s", kind);
	host_fault(args);
}

/*
 * A job stuck on its semaphore and one queued behind it, then the host's
 * fault @args (tessera-fault ARGS): the chip is reset (its uevent within
 * @wait_ms), the stuck job fails with -ECANCELED (its status in @stuck),
 * the one behind runs, and the stuck one, released, does not run again.
 * The caller checks its counters.
 */
static void reset_under_a_running_job(struct __test_metadata *_metadata,
				      FIXTURE_DATA(life) *self,
				      const char *args, int wait_ms,
				      struct drm_tessera_job_status *stuck)
{
	uint32_t later_sync = tsr_syncobj(self->fd);
	struct drm_tessera_job_status st;
	uint64_t *sem = self->host.map;
	uint32_t *words = self->host.map;
	uint64_t seq, later_seq;
	int ue = tsr_uevent_socket();

	ASSERT_LE(0, ue);
	ASSERT_LT(0, (int)later_sync);
	ASSERT_EQ(0, start_stuck_job(self, &seq));
	tsr_emit_fill(&self->c, self->host.va + 128, 0x77, 4);
	ASSERT_EQ(0, submit(self, later_sync, &later_seq));

	host_fault(args);
	ASSERT_EQ(0, tsr_uevent_wait(ue, "TESSERA_RESET=chip", NULL, wait_ms));
	close(ue);
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_wait(self->fd, later_sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, stuck));
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, stuck->state);
	EXPECT_EQ(-ECANCELED, stuck->fence_error);
	ASSERT_EQ(0, tsr_job_status(self->fd, later_seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x77u, words[32]);

	/* Released, the job does not come back; the chip runs jobs again. */
	__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
	tsr_emit_copy(&self->c, self->host.va + 128, self->hbm.va, 4);
	tsr_emit_copy(&self->c, self->hbm.va, self->host.va + 256, 4);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x77u, words[64]);
	EXPECT_EQ(0u, words[16]) TH_LOG("the interrupted job ran again");
}

/*
 * An uncorrectable error, fatal (the PCI core resets the link, and the
 * chip with it) or not (the driver resets the chip): either way the job
 * running fails, the one queued behind runs after, and it is counted.
 */
static void uncorrectable(struct __test_metadata *_metadata,
			  FIXTURE_DATA(life) *self, const char *kind)
{
	long long resets = tsr_sysfs_counter(self->pci, "device_resets");
	long long errors = tsr_sysfs_counter(self->pci, "pcie_errors");
	struct drm_tessera_job_status stuck;
	char args[32];

	need_aer(self->pci);
	ASSERT_LE(0, errors);
	snprintf(args, sizeof(args), "aer %s", kind);
	reset_under_a_running_job(_metadata, self, args, 30000, &stuck);
	EXPECT_EQ(resets + 1, tsr_sysfs_counter(self->pci, "device_resets"));
	EXPECT_EQ(errors + 1, tsr_sysfs_counter(self->pci, "pcie_errors"));
}

TEST_F(life, a_fatal_pcie_error_fails_the_running_job_and_the_next_ones_run)
{
	uncorrectable(_metadata, self, "fatal");
}

TEST_F(life, a_non_fatal_pcie_error_fails_the_running_job_and_the_next_ones_run)
{
	uncorrectable(_metadata, self, "non-fatal");
}

/* Nothing is lost to a correctable error: counted, and no reset. */
TEST_F(life, a_correctable_pcie_error_is_counted_and_resets_nothing)
{
	long long resets = tsr_sysfs_counter(self->pci, "device_resets");
	long long errors = tsr_sysfs_counter(self->pci, "pcie_correctable_errors");
	uint64_t deadline = tsr_now_ns() + TSR_TEST_WAIT_NS;
	struct drm_tessera_job_status st;

	need_aer(self->pci);
	ASSERT_LE(0, errors);
	raise_pcie_error("correctable");
	/* The PCI core tells of it in the log only: watch the counter. */
	while (tsr_sysfs_counter(self->pci, "pcie_correctable_errors") == errors &&
	       tsr_now_ns() < deadline)
		usleep(10000);
	EXPECT_EQ(errors + 1,
		  tsr_sysfs_counter(self->pci, "pcie_correctable_errors"));
	EXPECT_EQ(resets, tsr_sysfs_counter(self->pci, "device_resets"));
	tsr_emit_nop(&self->c);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
}

/* ------------------------------------------ a reset behind the driver */

/*
 * A function-level reset the host makes unannounced (tessera-fault flr,
 * as a hypervisor's VFIO_DEVICE_RESET): the chip loses its registers and
 * the job it ran, and says nothing.  The driver finds it at the next
 * timeout, fails the job that was running as a chip reset fails it
 * (ABORTED, -ECANCELED, no hang counted), and runs the one queued behind;
 * HBM and the buffers are kept.
 */
TEST_F(life, a_function_reset_by_the_host_fails_the_running_job_and_the_next_ones_run)
{
	long long resets = tsr_sysfs_counter(self->pci, "device_resets");
	long long timeouts = tsr_sysfs_counter(self->pci, "timeouts");
	struct drm_tessera_job_status stuck, st;
	uint32_t *words = self->host.map;

	need_the_host();
	ASSERT_LE(0, timeouts);
	tsr_emit_fill(&self->c, self->hbm.va + 512, 0x4242, 4);
	ASSERT_EQ(0, run(self, &st));
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	/* Found at the next timeout, job_timeout_ms at most. */
	reset_under_a_running_job(_metadata, self, "flr", 20000, &stuck);
	EXPECT_EQ(TSR_ERR_ABORTED, stuck.error);
	EXPECT_EQ(resets + 1, tsr_sysfs_counter(self->pci, "device_resets"));
	EXPECT_EQ(timeouts, tsr_sysfs_counter(self->pci, "timeouts"));
	/* HBM kept what it held. */
	tsr_emit_copy(&self->c, self->hbm.va + 512, self->host.va + 512, 4);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x4242u, words[128]);
}

/*
 * Whether the chip has lost the interrupt enables the driver set: a
 * function-level reset clears them, and nothing restores them until the
 * driver recovers the chip (debugfs registers reads them live).
 */
static bool irqs_lost(const char *pci)
{
	char path[128], line[128];
	unsigned int reg, value;
	bool lost = false;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/registers", pci);
	f = fopen(path, "r");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "IRQ_ENABLE 0x%x 0x%x", &reg, &value) == 2)
			lost = value == 0;
	fclose(f);
	return lost;
}

/*
 * The host resets the function of an idle chip, unannounced.  No job had
 * started, so none may fail: the next job waits for the timeout to find
 * the chip lost and then runs, as if nothing had happened but the delay.
 * The chip is kept awake (runtime PM off): a suspended one would be set
 * up afresh at its resume, which is not the path under test.
 */
TEST_F(life, a_function_reset_by_the_host_of_an_idle_chip_fails_no_job)
{
	long long resets = tsr_sysfs_counter(self->pci, "device_resets");
	uint64_t deadline = tsr_now_ns() + TSR_TEST_WAIT_NS;
	struct drm_tessera_job_status st;
	uint32_t *words = self->host.map;
	char control[96];

	need_the_host();
	snprintf(control, sizeof(control),
		 "/sys/bus/pci/devices/%s/power/control", self->pci);
	ASSERT_EQ(0, tsr_write_file(control, "on"));
	tsr_emit_fill(&self->c, self->hbm.va + 512, 0x4343, 4);
	ASSERT_EQ(0, run(self, &st));
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, st.state);

	ASSERT_FALSE(irqs_lost(self->pci));
	host_fault("flr");
	while (!irqs_lost(self->pci) && tsr_now_ns() < deadline)
		usleep(10000);
	ASSERT_TRUE(irqs_lost(self->pci)) TH_LOG("no reset came");

	tsr_emit_copy(&self->c, self->hbm.va + 512, self->host.va + 512, 4);
	EXPECT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0, st.fence_error);
	EXPECT_EQ(0x4343u, words[128]);
	EXPECT_EQ(resets + 1, tsr_sysfs_counter(self->pci, "device_resets"));
	EXPECT_EQ(0, tsr_write_file(control, "auto"));
}

/* ------------------------------------------------------- devcoredump */

#define DEVCOREDUMP "/sys/class/devcoredump"

/*
 * The dump device @pci has in devcoredump, into @buf ("" if none); with
 * @delete, delete it too (the devcoredump core keeps one a device).
 */
static void coredump_take(const char *pci, char *buf, size_t len, bool delete)
{
	char path[PATH_MAX], target[PATH_MAX];
	struct dirent *e;
	DIR *d = opendir(DEVCOREDUMP);
	ssize_t n;

	buf[0] = 0;
	while (d && (e = readdir(d))) {
		int fd;

		snprintf(path, sizeof(path), DEVCOREDUMP "/%s/failing_device",
			 e->d_name);
		n = readlink(path, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		target[n] = 0;
		if (strcmp(basename(target), pci))
			continue;
		snprintf(path, sizeof(path), DEVCOREDUMP "/%s/data", e->d_name);
		fd = open(path, O_RDONLY);
		n = fd < 0 ? 0 : read(fd, buf, len - 1);
		buf[n > 0 ? n : 0] = 0;
		if (fd >= 0)
			close(fd);
		if (delete)
			tsr_write_file(path, "1");
	}
	if (d)
		closedir(d);
}

/*
 * Deletes @pci's dumps and waits until they are gone: the kernel removes a
 * dump from a work item once its data is written to, so it is listed for
 * a moment after.  Whether none is left.
 */
static bool coredump_clear(const char *pci, char *buf, size_t len)
{
	uint64_t deadline = tsr_now_ns() + TSR_TEST_WAIT_NS;

	coredump_take(pci, buf, len, true);
	do
		coredump_take(pci, buf, len, false);
	while (buf[0] && tsr_now_ns() < deadline && !usleep(10000));
	return !buf[0];
}

/* A hung job leaves a dump that names its queue and itself, with the queue's state. */
TEST_F(life, a_hang_leaves_a_devcoredump_naming_the_queue_and_job)
{
	static char dump[16384];
	struct drm_tessera_job_status st;
	unsigned int slot;
	char want[64];
	const char *job;
	uint64_t seq;

	if (access(DEVCOREDUMP, F_OK))
		SKIP(return, "the kernel has no devcoredump (CONFIG_DEV_COREDUMP)");
	/* A device keeps one dump: an earlier one would keep out this hang's. */
	ASSERT_TRUE(coredump_clear(self->pci, dump, sizeof(dump)));
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_hang_after", 1));
	tsr_emit_fill(&self->c, self->host.va, 0x11, 4);
	tsr_emit_fill(&self->c, self->host.va + 4, 0x22, 4);
	drmSyncobjReset(self->fd, &self->sync, 1);
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 2, NULL, 0, self->sync, &seq));
	self->c.len = 0;
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(-ETIMEDOUT, st.fence_error);

	coredump_take(self->pci, dump, sizeof(dump), true);
	ASSERT_NE(0, dump[0]) TH_LOG("no devcoredump of %s", self->pci);
	EXPECT_NE(NULL, strstr(dump, "reason: job timed out\n"));
	EXPECT_NE(NULL, strstr(dump, "queue: 2\n"));
	snprintf(want, sizeof(want), "job: seq %llu context ", (unsigned long long)seq);
	job = strstr(dump, want);
	ASSERT_NE(NULL, job) TH_LOG("%s", dump);
	EXPECT_NE(NULL, strstr(dump, "register STATUS: 0x"));
	/* The queue had taken the hung job: STARTED is one past its slot. */
	job = strstr(job, " slot ");
	ASSERT_NE(NULL, job);
	slot = strtoul(job + strlen(" slot "), NULL, 10);
	snprintf(want, sizeof(want), "register STARTED: 0x%08x\n", slot + 1);
	EXPECT_NE(NULL, strstr(dump, want)) TH_LOG("%s", dump);
	snprintf(want, sizeof(want), "on the ring: seq %llu ", (unsigned long long)seq);
	EXPECT_NE(NULL, strstr(dump, want));
	/* Read and deleted: the next hang has room for its own. */
	EXPECT_TRUE(coredump_clear(self->pci, dump, sizeof(dump)));
}

/* ------------------------------------------------------ system sleep */

/*
 * A system sleep as the kernel tests a driver's (pm_test "devices",
 * Documentation/power/basic-pm-debugging.rst): every device is suspended,
 * the kernel waits five seconds and resumes them, without firmware (a
 * directly booted guest has none to wake it from S3).  What HBM holds is
 * kept, and jobs run after.
 */
TEST_F(life, hbm_keeps_its_contents_across_a_system_sleep_and_jobs_run_after)
{
	long long resets = tsr_sysfs_counter(self->pci, "device_resets");
	struct drm_tessera_job_status st;
	uint32_t *words = self->host.map;
	uint32_t *hbm = self->hbm.map;
	char state[64] = "";
	FILE *f;

	f = fopen("/sys/power/state", "r");
	if (f) {
		if (!fgets(state, sizeof(state), f))
			state[0] = 0;
		fclose(f);
	}
	if (!strstr(state, "mem") || access("/sys/power/pm_test", W_OK))
		SKIP(return, "no suspend to RAM, or no pm_test (CONFIG_PM_DEBUG)");

	tsr_emit_fill(&self->c, self->hbm.va, 0x5a5a5a5a, 4096);
	ASSERT_EQ(0, run(self, &st));
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, st.state);

	ASSERT_EQ(0, tsr_write_file("/sys/power/pm_test", "devices"));
	/* Returns once the devices have resumed. */
	EXPECT_EQ(0, tsr_write_file("/sys/power/state", "mem"));
	ASSERT_EQ(0, tsr_write_file("/sys/power/pm_test", "none"));
	EXPECT_EQ(resets + 1, tsr_sysfs_counter(self->pci, "device_resets"));

	EXPECT_EQ(0x5a5a5a5au, hbm[0]);
	EXPECT_EQ(0x5a5a5a5au, hbm[1023]);
	tsr_emit_copy(&self->c, self->hbm.va, self->host.va + 1024, 4096);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x5a5a5a5au, words[256]);
	EXPECT_EQ(0x5a5a5a5au, words[256 + 1023]);
}

TEST_HARNESS_MAIN
