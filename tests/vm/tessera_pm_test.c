// SPDX-License-Identifier: GPL-2.0
/*
 * The tessera driver's power management.  s3: across a real system
 * sleep, the guest suspended to RAM (S3) and woken by the host, the driver
 * has restored the chip.  rpm: runtime PM, an idle chip suspended and
 * resumed by the next job, and held resumed by every CPU mapping of HBM.
 *
 * QEMU resets every device when it wakes a guest from S3, as a machine
 * whose devices lost power: the chip's registers are wiped and the PCI
 * core restores its config space.  The test needs the host to wake the
 * guest: tools/tessera-vm --s3 does (SeaBIOS and the bzImage, QMP's
 * SUSPEND, system_wakeup, WAKEUP) and puts TESSERA_HOST_WAKES=1 in the
 * environment; without it the test is skipped, as a guest that suspends
 * would sleep for good.  tests/run-checks runs it as vm.s3 (--test
 * tessera_pm_test runs it alone).
 *
 * Expects the VM's chips to have debug-regs=on (for the registers file).
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <sched.h>
#include <stdlib.h>
#include <sys/klog.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#define S3_WAKE_LINE "Waking up from system sleep state S3"
/* What the PM core logs for a put without its get. */
#define RPM_UNDERFLOW_LINE "Runtime PM usage count underflow"

FIXTURE(s3) {
	int fd;
	char pci[32];
	struct tsr_cmds c;
	struct tsr_bo host, hbm;
	uint32_t sync;
};

FIXTURE_SETUP(s3)
{
	if (!getenv("TESSERA_HOST_WAKES"))
		SKIP(return, "needs the host to wake the guest from S3 (tools/tessera-vm --s3, as tests/run-checks --test tessera_pm_test runs it)");
	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_pci_address(0, self->pci, sizeof(self->pci)));
	ASSERT_EQ(0, tsr_make_two(self->fd, &self->c, &self->host, &self->hbm,
				  &self->sync));
}

FIXTURE_TEARDOWN(s3)
{
	if (!getenv("TESSERA_HOST_WAKES"))
		return;
	/* A stuck job a failed test left behind ends, or times out. */
	__atomic_store_n((uint64_t *)self->host.map, 1, __ATOMIC_SEQ_CST);
	tsr_debugfs_write(self->pci, "hangcheck", 1);
	close(self->fd);
}

/* Submit the fixture's commands on queue 0, using both buffers; no wait. */
static int submit(FIXTURE_DATA(s3) *self, uint32_t sync, uint64_t *seq)
{
	return tsr_submit_two(self->fd, &self->c, &self->host, &self->hbm,
			      sync, seq);
}

/* Submit, wait for the job and return its status. */
static int run(FIXTURE_DATA(s3) *self, struct drm_tessera_job_status *st)
{
	return tsr_run_two(self->fd, &self->c, &self->host, &self->hbm,
			   self->sync, st);
}

/*
 * The chip's registers the driver programs, from debugfs "registers":
 * interrupt enables, the MMU context table, each queue's control.
 */
static void programmed_registers(const char *pci, char *out, size_t len)
{
	static const char *const names[] = {
		"IRQ_ENABLE ", "MMU_CTX_TABLE_LO ", "MMU_CTX_TABLE_HI ",
		"MMU_CTX_COUNT ", "_CONTROL ",
	};
	char path[128], line[128];
	size_t used = 0;
	unsigned int i;
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/registers", pci);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && used < len)
		for (i = 0; i < ARRAY_SIZE(names); i++)
			if (strstr(line, names[i]))
				used += snprintf(out + used, len - used, "%s", line);
	fclose(f);
}

/* How many times the kernel log holds @text. */
static int klog_count(const char *text)
{
	int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *log, *p;
	int n = 0, len;

	if (size <= 0)
		return -1;
	log = malloc(size + 1);
	if (!log)
		return -1;
	len = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, log, size);
	if (len < 0) {
		free(log);
		return -1;
	}
	log[len] = '\0';
	for (p = log; (p = strstr(p, text)); p++)
		n++;
	free(log);
	return n;
}

/*
 * A job that runs until host word 0 is set; returns once it has started.
 * Hang checks are off until the teardown: the job stays started until the
 * suspend, however long the guest takes to get there.
 */
static int start_stuck_job(FIXTURE_DATA(s3) *self, uint64_t *seq)
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

/*
 * Suspend to RAM with a job running on the chip (stuck on a semaphore)
 * and one queued behind it; the host wakes the guest.  After: the chip is
 * programmed as before (interrupt enables, context table, queues), the
 * running job failed with -ECANCELED (ABORTED), the queued one ran, HBM
 * and system-memory buffers kept what they held, and a new job computes
 * the right answer through its interrupt.
 */
TEST_F(s3, a_suspend_to_ram_keeps_buffers_and_the_chip_runs_jobs_after)
{
	long long resets = tsr_sysfs_counter(self->pci, "device_resets");
	long long lost = tsr_sysfs_counter(self->pci, "lost_irqs");
	uint32_t later_sync = tsr_syncobj(self->fd);
	struct drm_tessera_job_status st, stuck;
	char before[1024], after[1024];
	uint32_t *words = self->host.map;
	uint32_t *hbm = self->hbm.map;
	uint64_t *sem = self->host.map;
	uint64_t seq, later_seq;
	long long irqs;
	int wakeups = klog_count(S3_WAKE_LINE);

	ASSERT_LE(0, resets);
	ASSERT_LE(0, lost);
	ASSERT_LE(0, wakeups);
	ASSERT_LT(0, (int)later_sync);

	/* HBM and a system-memory buffer hold what a job wrote there. */
	tsr_emit_fill(&self->c, self->hbm.va, 0x5a5a5a5a, 4096);
	tsr_emit_fill(&self->c, self->host.va + 8192, 0x3c3c3c3c, 4096);
	ASSERT_EQ(0, run(self, &st));
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	programmed_registers(self->pci, before, sizeof(before));
	ASSERT_NE(NULL, strstr(before, "MMU_CTX_TABLE_LO")) TH_LOG("no registers file");

	ASSERT_EQ(0, start_stuck_job(self, &seq));
	tsr_emit_fill(&self->c, self->host.va + 128, 0x77, 4);
	ASSERT_EQ(0, submit(self, later_sync, &later_seq));

	/* Returns once the guest has been woken and the devices resumed. */
	ASSERT_EQ(0, tsr_write_file("/sys/power/state", "mem"));
	ASSERT_EQ(wakeups + 1, klog_count(S3_WAKE_LINE)) TH_LOG("not a sleep in S3");
	EXPECT_EQ(resets + 1, tsr_sysfs_counter(self->pci, "device_resets"));

	/* The running job failed as in a chip reset; the one behind ran. */
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_wait(self->fd, later_sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &stuck));
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, stuck.state);
	EXPECT_EQ(-ECANCELED, stuck.fence_error);
	EXPECT_EQ(TSR_ERR_ABORTED, stuck.error);
	ASSERT_EQ(0, tsr_job_status(self->fd, later_seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x77u, words[32]);
	programmed_registers(self->pci, after, sizeof(after));
	EXPECT_STREQ(before, after);

	/* Buffers kept; a new job reads HBM and ends by its interrupt. */
	EXPECT_EQ(0x5a5a5a5au, hbm[0]);
	EXPECT_EQ(0x5a5a5a5au, hbm[1023]);
	EXPECT_EQ(0x3c3c3c3cu, words[2048]);
	EXPECT_EQ(0x3c3c3c3cu, words[2048 + 1023]);
	irqs = tsr_sysfs_counter(self->pci, "irq_count");
	__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
	tsr_emit_copy(&self->c, self->hbm.va, self->host.va + 4096, 4096);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x5a5a5a5au, words[1024]);
	EXPECT_EQ(0x5a5a5a5au, words[1024 + 1023]);
	EXPECT_LT(irqs, tsr_sysfs_counter(self->pci, "irq_count"));
	EXPECT_EQ(lost, tsr_sysfs_counter(self->pci, "lost_irqs"));
	EXPECT_EQ(0u, words[16]) TH_LOG("the interrupted job ran again");
}

/* ------------------------------------------------------- runtime PM */

FIXTURE(rpm) {
	int fd;
	char pci[32];
	char power[96];
	long long delay_ms;
	struct tsr_cmds c;
	struct tsr_bo host, hbm;
	uint64_t hbm_offset;
	uint32_t sync;
};

/* Write @text to the file @name of the chip's power/ directory. */
static int power_write(FIXTURE_DATA(rpm) *self, const char *name,
		       const char *text)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", self->power, name);
	return tsr_write_file(path, text);
}

/* Whether the chip's runtime_status reads @status. */
static bool runtime_status_is(FIXTURE_DATA(rpm) *self, const char *status)
{
	char path[160], text[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/runtime_status", self->power);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(text, sizeof(text), f))
		text[0] = '\0';
	fclose(f);
	text[strcspn(text, "\n")] = '\0';
	return !strcmp(text, status);
}

/*
 * Wait until runtime_status reads @status (the PM core notifies no one of
 * a change: it is read every 10 ms), up to 10 s.
 */
static bool runtime_status_becomes(FIXTURE_DATA(rpm) *self,
				   const char *status)
{
	uint64_t deadline = tsr_now_ns() + 10000000000ull;

	while (!runtime_status_is(self, status))
		if (tsr_now_ns() > deadline || usleep(10000))
			return false;
	return true;
}

/*
 * Whether runtime_status reads @status all along the next @ms
 * milliseconds (read every 10 ms): nothing to wait for but time.
 */
static bool runtime_status_stays(FIXTURE_DATA(rpm) *self, const char *status,
				 unsigned int ms)
{
	uint64_t end = tsr_now_ns() + ms * 1000000ull;

	do {
		if (!runtime_status_is(self, status) || usleep(10000))
			return false;
	} while (tsr_now_ns() < end);
	return runtime_status_is(self, status);
}

/* A new CPU mapping of the fixture's HBM buffer, or MAP_FAILED. */
static uint32_t *map_hbm(FIXTURE_DATA(rpm) *self)
{
	return mmap(NULL, self->hbm.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    self->fd, self->hbm_offset);
}

/*
 * Runtime PM allowed with a 50 ms delay; true once the idle chip, its HBM
 * mapped nowhere, has suspended.
 */
static bool allow_and_suspend(FIXTURE_DATA(rpm) *self)
{
	return !power_write(self, "autosuspend_delay_ms", "50") &&
	       !power_write(self, "control", "auto") &&
	       runtime_status_becomes(self, "suspended");
}

/* Long enough past the 50 ms delay for a chip with no reference to suspend. */
#define RPM_HOLD_MS 500

FIXTURE_SETUP(rpm)
{
	struct drm_tessera_bo_info info = { 0 };
	char path[160];

	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_pci_address(0, self->pci, sizeof(self->pci)));
	snprintf(self->power, sizeof(self->power),
		 "/sys/bus/pci/devices/%s/power", self->pci);
	snprintf(path, sizeof(path), "%s/autosuspend_delay_ms", self->power);
	self->delay_ms = tsr_read_number(path);
	ASSERT_LE(0, self->delay_ms);
	ASSERT_EQ(0, tsr_make_two(self->fd, &self->c, &self->host, &self->hbm,
				  &self->sync));
	/* A CPU mapping of HBM holds the chip resumed: jobs use it here. */
	info.handle = self->hbm.handle;
	ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_INFO, &info));
	self->hbm_offset = info.mmap_offset;
	ASSERT_EQ(0, munmap(self->hbm.map, self->hbm.size));
	self->hbm.map = NULL;
}

FIXTURE_TEARDOWN(rpm)
{
	char delay[32];

	snprintf(delay, sizeof(delay), "%lld", self->delay_ms);
	power_write(self, "control", "on");
	power_write(self, "autosuspend_delay_ms", delay);
	close(self->fd);
}

static int rpm_run(FIXTURE_DATA(rpm) *self, struct drm_tessera_job_status *st)
{
	return tsr_run_two(self->fd, &self->c, &self->host, &self->hbm,
			   self->sync, st);
}

/* As for most PCI devices, runtime PM waits for user space to allow it. */
TEST_F(rpm, the_chip_stays_active_until_runtime_pm_is_allowed)
{
	char path[160], text[16] = "";
	FILE *f;

	snprintf(path, sizeof(path), "%s/control", self->power);
	f = fopen(path, "r");
	ASSERT_NE(NULL, f);
	ASSERT_NE(NULL, fgets(text, sizeof(text), f));
	fclose(f);
	EXPECT_STREQ("on\n", text);
	EXPECT_TRUE(runtime_status_is(self, "active"));
}

/*
 * Allowed, an idle chip suspends after the autosuspend delay, an open
 * file and buffers notwithstanding; a job resumes it, finds HBM as it
 * was, gives the right answer through its interrupt, and the chip is
 * programmed as before (interrupt enables, context table, queues).  Then
 * it suspends again.
 */
TEST_F(rpm, an_idle_chip_suspends_and_a_job_resumes_it_with_the_right_result)
{
	long long lost = tsr_sysfs_counter(self->pci, "lost_irqs");
	struct drm_tessera_job_status st;
	char before[1024], after[1024];
	uint32_t *words = self->host.map;
	long long irqs;

	ASSERT_LE(0, lost);
	tsr_emit_fill(&self->c, self->hbm.va, 0x6b6b6b6b, 4096);
	ASSERT_EQ(0, rpm_run(self, &st));
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	programmed_registers(self->pci, before, sizeof(before));

	ASSERT_TRUE(allow_and_suspend(self));

	irqs = tsr_sysfs_counter(self->pci, "irq_count");
	tsr_emit_copy(&self->c, self->hbm.va, self->host.va, 4096);
	tsr_emit_fill(&self->c, self->host.va + 4096, 0x2d2d2d2d, 4);
	ASSERT_EQ(0, rpm_run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x6b6b6b6bu, words[0]);
	EXPECT_EQ(0x6b6b6b6bu, words[1023]);
	EXPECT_EQ(0x2d2d2d2du, words[1024]);
	EXPECT_LT(irqs, tsr_sysfs_counter(self->pci, "irq_count"));
	EXPECT_EQ(lost, tsr_sysfs_counter(self->pci, "lost_irqs"));
	EXPECT_TRUE(runtime_status_becomes(self, "suspended"));

	/* Forbidden again, the chip resumes and stays so. */
	ASSERT_EQ(0, power_write(self, "control", "on"));
	EXPECT_TRUE(runtime_status_is(self, "active"));
	programmed_registers(self->pci, after, sizeof(after));
	EXPECT_STREQ(before, after);
}

/*
 * The chip's own counters (sysfs tessera/chip_*, *_busy_cycles, ...) go
 * on across a runtime suspend, although the resume resets the chip: read
 * while it sleeps they hold what they held, and the job that wakes it
 * adds to them.
 */
TEST_F(rpm, the_chip_s_counters_go_on_across_a_runtime_suspend)
{
	struct drm_tessera_job_status st;
	long long jobs, commands, clock;

	tsr_emit_fill(&self->c, self->hbm.va, 0x636e74, 4096);
	ASSERT_EQ(0, rpm_run(self, &st));
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	jobs = tsr_sysfs_counter(self->pci, "chip_jobs");
	commands = tsr_sysfs_counter(self->pci, "chip_commands");
	clock = tsr_sysfs_counter(self->pci, "clock_cycles");
	ASSERT_LT(0, jobs);
	ASSERT_LT(0, commands);

	ASSERT_TRUE(allow_and_suspend(self));
	EXPECT_EQ(jobs, tsr_sysfs_counter(self->pci, "chip_jobs"));
	EXPECT_EQ(commands, tsr_sysfs_counter(self->pci, "chip_commands"));
	EXPECT_TRUE(runtime_status_is(self, "suspended"))
		TH_LOG("reading the counters woke the chip");

	tsr_emit_fill(&self->c, self->hbm.va, 0x636e74, 4096);
	ASSERT_EQ(0, rpm_run(self, &st));
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(jobs + 1, tsr_sysfs_counter(self->pci, "chip_jobs"));
	/* One command, the fill. */
	EXPECT_EQ(commands + 1, tsr_sysfs_counter(self->pci, "chip_commands"));
	EXPECT_LT(clock, tsr_sysfs_counter(self->pci, "clock_cycles"));
}

/* A new buffer's handle, made by BO_CREATE alone (no mapping), or 0. */
static uint32_t create_unmapped(int fd, uint32_t flags)
{
	struct drm_tessera_bo_create create = { .size = 1 << 20, .flags = flags };

	return tsr_ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &create) ? 0 :
	       create.handle;
}

/*
 * Creating an HBM buffer writes HBM (it is cleared): the suspended chip is
 * resumed for it.  A system-memory buffer leaves the chip asleep.
 */
TEST_F(rpm, creating_an_hbm_buffer_resumes_the_chip_to_clear_it)
{
	struct drm_gem_close host = { 0 }, hbm = { 0 };

	ASSERT_TRUE(allow_and_suspend(self));
	/* Once resumed, the chip stays so long enough to be seen. */
	ASSERT_EQ(0, power_write(self, "autosuspend_delay_ms", "5000"));

	host.handle = create_unmapped(self->fd, 0);
	ASSERT_NE(0u, host.handle);
	EXPECT_TRUE(runtime_status_is(self, "suspended"));
	hbm.handle = create_unmapped(self->fd, DRM_TESSERA_BO_HBM);
	ASSERT_NE(0u, hbm.handle);
	EXPECT_TRUE(runtime_status_is(self, "active"))
		TH_LOG("HBM was cleared with the chip suspended");
	drmIoctl(self->fd, DRM_IOCTL_GEM_CLOSE, &host);
	drmIoctl(self->fd, DRM_IOCTL_GEM_CLOSE, &hbm);
}

/*
 * A CPU mapping of HBM (BAR 2) holds the suspended chip resumed from
 * mmap() to munmap(), however long it sits idle: what is written through
 * it reads back, the chip's jobs see it, and after munmap() the chip
 * suspends again.
 */
TEST_F(rpm, a_cpu_mapping_of_hbm_holds_the_chip_resumed_until_munmap)
{
	struct drm_tessera_job_status st;
	uint32_t *words = self->host.map;
	uint32_t *hbm;
	unsigned int i;

	ASSERT_TRUE(allow_and_suspend(self));
	hbm = map_hbm(self);
	ASSERT_NE(MAP_FAILED, hbm);
	EXPECT_TRUE(runtime_status_is(self, "active"))
		TH_LOG("mmap() of HBM left the chip suspended");
	for (i = 0; i < 1024; i++)
		hbm[i] = 0x4d000000 | i;
	EXPECT_TRUE(runtime_status_stays(self, "active", RPM_HOLD_MS))
		TH_LOG("the chip suspended with HBM mapped");
	for (i = 0; i < 1024; i++)
		if (hbm[i] != (0x4d000000 | i))
			break;
	EXPECT_EQ(1024u, i) TH_LOG("HBM word %u reads back wrong", i);

	ASSERT_EQ(0, munmap(hbm, self->hbm.size));
	ASSERT_TRUE(runtime_status_becomes(self, "suspended"));

	/* The chip, resumed by a job, holds what the CPU wrote. */
	tsr_emit_copy(&self->c, self->hbm.va, self->host.va, 4096);
	ASSERT_EQ(0, rpm_run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x4d000000u, words[0]);
	EXPECT_EQ(0x4d0003ffu, words[1023]);
}

/*
 * fork() copies the mapping with its own reference: the child writes
 * through its copy, unmaps it and exits, and the parent's mapping still
 * holds the chip resumed; once the parent unmaps too the chip suspends,
 * with no reference given back twice (the PM core logs an underflow).
 */
TEST_F(rpm, a_forked_hbm_mapping_holds_its_own_reference)
{
	int underflows = klog_count(RPM_UNDERFLOW_LINE);
	volatile uint32_t *hbm;
	int status;
	pid_t pid;

	ASSERT_LE(0, underflows);
	ASSERT_TRUE(allow_and_suspend(self));
	hbm = map_hbm(self);
	ASSERT_NE(MAP_FAILED, hbm);

	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		hbm[0] = 0x6f726b;
		_exit(munmap((void *)hbm, self->hbm.size) ? 1 : 0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

	EXPECT_TRUE(runtime_status_stays(self, "active", RPM_HOLD_MS))
		TH_LOG("the child's munmap() gave back the parent's reference");
	EXPECT_EQ(0x6f726bu, hbm[0]);
	ASSERT_EQ(0, munmap((void *)hbm, self->hbm.size));
	EXPECT_TRUE(runtime_status_becomes(self, "suspended"));
	EXPECT_EQ(underflows, klog_count(RPM_UNDERFLOW_LINE));
}

/*
 * mremap() moves the mapping (a new VMA, the old one closed) and a
 * partial munmap() splits it (two VMAs, one closed): the rest still holds
 * the chip resumed, reads what was written, and its munmap() lets the
 * chip suspend, with no underflow.
 */
TEST_F(rpm, a_moved_or_split_hbm_mapping_keeps_one_reference)
{
	int underflows = klog_count(RPM_UNDERFLOW_LINE);
	size_t page = getpagesize();
	uint32_t *hbm, *moved, *spot;

	ASSERT_LE(0, underflows);
	ASSERT_TRUE(allow_and_suspend(self));
	hbm = map_hbm(self);
	ASSERT_NE(MAP_FAILED, hbm);
	hbm[page / 4] = 0x6d6f7665;

	/* A free spot elsewhere to move to. */
	spot = mmap(NULL, self->hbm.size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, spot);
	moved = mremap(hbm, self->hbm.size, self->hbm.size,
		       MREMAP_MAYMOVE | MREMAP_FIXED, spot);
	ASSERT_EQ(spot, moved);
	ASSERT_EQ(0, munmap(moved, page));

	EXPECT_TRUE(runtime_status_stays(self, "active", RPM_HOLD_MS))
		TH_LOG("the chip suspended with HBM mapped");
	EXPECT_EQ(0x6d6f7665u, moved[page / 4]);
	ASSERT_EQ(0, munmap(moved + page / 4, self->hbm.size - page));
	EXPECT_TRUE(runtime_status_becomes(self, "suspended"));
	EXPECT_EQ(underflows, klog_count(RPM_UNDERFLOW_LINE));
}

/*
 * Each job of a SUBMIT_BATCH holds the chip resumed while it lives, from
 * the ioctl to its end (the chip is resumed once for the batch): the
 * chip's runtime usage count goes up by one a job, and back down.
 */
TEST_F(rpm, every_job_of_a_batch_holds_the_chip_resumed)
{
	enum { JOBS = 3 };
	struct drm_tessera_submit_bo bo = {
		self->host.handle, DRM_TESSERA_BO_READ,
	};
	struct drm_tessera_sync out = TSR_SIGNAL(self->sync, 0);
	struct drm_tessera_submit jobs[JOBS];
	struct drm_tessera_submit_batch b = {
		.count = JOBS,
		.jobs = (uintptr_t)jobs,
		.stride = sizeof(jobs[0]),
	};
	uint64_t *sem = self->host.map;
	uint64_t deadline;
	char path[160];
	long long usage;
	unsigned int i;
	size_t nop;

	snprintf(path, sizeof(path), "%s/runtime_usage", self->power);
	usage = tsr_read_number(path);
	if (usage < 0)
		tsr_skip_test("no power/runtime_usage (CONFIG_PM_ADVANCED_DEBUG)");
	/* The first job waits for the semaphore; the others queue behind. */
	sem[0] = 0;
	self->c.len = 0;
	tsr_emit_sem(&self->c, TSR_OP_SEM_WAIT, self->host.va, 1);
	nop = self->c.len;
	tsr_emit_nop(&self->c);
	for (i = 0; i < JOBS; i++) {
		jobs[i] = (struct drm_tessera_submit){
			.cmdbuf_handle = self->c.bo.handle,
			.cmdbuf_offset = i ? nop : 0,
			.cmdbuf_size = i ? self->c.len - nop : nop,
		};
		tsr_submit_bos(&jobs[i], &bo, 1);
	}
	tsr_submit_syncs(&jobs[JOBS - 1], &out, 1);
	drmSyncobjReset(self->fd, &self->sync, 1);

	ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_SUBMIT_BATCH, &b));
	EXPECT_EQ(usage + JOBS, tsr_read_number(path));
	__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	/* A job lets the chip go when the scheduler frees it, just after. */
	deadline = tsr_now_ns() + TSR_TEST_WAIT_NS;
	while (tsr_read_number(path) != usage && tsr_now_ns() < deadline)
		usleep(1000);
	EXPECT_EQ(usage, tsr_read_number(path));
}

/* The chip's power/runtime_active_time, ms; -1 without it. */
static long long runtime_active_ms(FIXTURE_DATA(rpm) *self)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/runtime_active_time", self->power);
	return tsr_read_number(path);
}

/* Parameters GET_PARAM has: each of tsr_info's, then each dimension's. */
#define RPM_PARAMS (ARRAY_SIZE(tsr_info_params) + 2 * 3)

/* Every parameter's value, in RPM_PARAMS order; -errno. */
static int rpm_params(int fd, uint64_t *values)
{
	unsigned int i, n = 0;
	int ret = 0;

	for (i = 0; i < ARRAY_SIZE(tsr_info_params) && !ret; i++)
		ret = tsr_param(fd, tsr_info_params[i].param, 0, &values[n++]);
	for (i = 0; i < 3 && !ret; i++) {
		ret = tsr_param(fd, DRM_TESSERA_PARAM_TOPOLOGY, i, &values[n++]);
		if (!ret)
			ret = tsr_param(fd, DRM_TESSERA_PARAM_COORDS, i,
					&values[n++]);
	}
	return ret;
}

/*
 * GET_PARAM and LINK_INFO neither wake a runtime suspended chip, whose
 * BARs answer nothing on hardware (all-ones in D3hot), nor read it: every
 * parameter is what it was while the chip was active (the fixed ones were
 * read at probe), and each port tells the state and peer it had and
 * counters that did not go backwards (saved at the suspend).  The chip
 * stays suspended: runtime_status, and runtime_active_time not growing.
 */
TEST_F(rpm, get_param_and_link_info_neither_wake_nor_misread_a_suspended_chip)
{
	struct drm_tessera_link_info before[DRM_TESSERA_MAX_PORTS];
	uint64_t awake[RPM_PARAMS], asleep[RPM_PARAMS], ports;
	long long active_ms;
	unsigned int p, i;

	ASSERT_EQ(0, rpm_params(self->fd, awake));
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_ICI_PORTS, 0, &ports));
	ASSERT_GE(DRM_TESSERA_MAX_PORTS, ports);
	for (p = 0; p < ports; p++) {
		before[p] = (struct drm_tessera_link_info){ .port = p };
		ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_LINK_INFO,
				       &before[p]));
	}

	ASSERT_TRUE(allow_and_suspend(self));
	active_ms = runtime_active_ms(self);
	ASSERT_LE(0, active_ms);

	ASSERT_EQ(0, rpm_params(self->fd, asleep));
	for (i = 0; i < RPM_PARAMS; i++) {
		EXPECT_EQ(awake[i], asleep[i])
			TH_LOG("parameter %u of %zu differs while the chip sleeps",
			       i, RPM_PARAMS);
	}
	for (p = 0; p < ports; p++) {
		struct drm_tessera_link_info li = { .port = p };

		ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_LINK_INFO,
				       &li));
		EXPECT_EQ(0, memcmp(&before[p].info, &li.info, sizeof(li.info)))
			TH_LOG("port %u: state %u, %u before the suspend", p,
			       li.info.state, before[p].info.state);
		for (i = 0; i < DRM_TESSERA_LINK_COUNTERS; i++) {
			EXPECT_LE(before[p].counters[i], li.counters[i])
				TH_LOG("port %u counter %u went backwards", p, i);
		}
	}

	EXPECT_TRUE(runtime_status_is(self, "suspended"))
		TH_LOG("a query woke the chip");
	EXPECT_EQ(active_ms, runtime_active_ms(self))
		TH_LOG("the chip was active while queried");
}

TEST_HARNESS_MAIN
