// SPDX-License-Identifier: GPL-2.0
/*
 * What one user can do to the others: jobs that outlive their SUBMIT,
 * bounded queues and pinned memory, concurrent register readers, a large
 * allocation beside other users' submits.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <pthread.h>
#include <sched.h>
#include <sys/klog.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define PARAMS "/sys/module/tessera/parameters/"

static long long read_number(const char *path, const char *key)
{
	char line[256];
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(key);

		if (!key[0] || (!strncmp(line, key, n) && line[n] == ':')) {
			v = strtoll(line + n + !!key[0], NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

static int write_number(const char *path, long long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -errno;
	ret = fprintf(f, "%lld\n", v) > 0 ? 0 : -EIO;
	return fclose(f) ? -errno : ret;
}

static int bo_create_raw(int fd, uint64_t size, uint32_t flags,
			 uint32_t *handle)
{
	struct drm_tessera_bo_create c = { .size = size, .flags = flags };
	int ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &c);

	*handle = c.handle;
	return ret;
}

FIXTURE(lim) {
	int fd;
	char pci[32];
	struct tsr_cmds c;
	struct tsr_bo host;
	uint32_t sync;
};

FIXTURE_SETUP(lim)
{
	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_pci_address(0, self->pci, sizeof(self->pci)));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->c.bo));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->host));
	self->sync = tsr_syncobj(self->fd);
	ASSERT_LT(0, (int)self->sync);
}

FIXTURE_TEARDOWN(lim)
{
	close(self->fd);
}

/*
 * The driver holds its own reference to a job until SUBMIT is done with
 * it: with submit_wait_done, the job has run and the scheduler has been
 * free to drop it before SUBMIT reads the job's number (a use-after-free
 * that the debug kernel's KASAN reports if the reference is missing).
 */
TEST_F(lim, submit_outlives_its_job)
{
	const struct tsr_bo *bos[] = { &self->host };
	struct drm_tessera_job_status st;
	uint64_t seq[3];
	int i;

	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "submit_wait_done", 3));
	for (i = 0; i < 3; i++) {
		self->c.len = 0;
		tsr_emit_fill(&self->c, self->host.va + 64 * i, 0x5a5a0000 + i, 64);
		ASSERT_EQ(0, tsr_submit(self->fd, &self->c, i % 2, bos, 1, 0,
					&seq[i]));
		/* It returns only once the job is done. */
		ASSERT_EQ(0, tsr_job_status(self->fd, seq[i], &st));
		EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
		EXPECT_EQ(0x5a5a0000u + i, ((uint32_t *)self->host.map)[16 * i]);
	}
	EXPECT_EQ(seq[0] + 1, seq[1]);
	EXPECT_EQ(seq[1] + 1, seq[2]);
}

/*
 * A job whose interrupt was lost is found by the timeout, which retires it
 * without a reset.  With timeout_wait_free, the scheduler's free worker
 * runs before the handler looks at the job again: the handler must not
 * have given the job back yet (a use-after-free KASAN would report).
 */
TEST_F(lim, a_timeout_keeps_its_job_until_it_is_done_with_it)
{
	const struct tsr_bo *bos[] = { &self->host };
	struct drm_tessera_job_status st;
	uint64_t seq;

	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "timeout_wait_free", 1));
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_drop_irqs", 1));
	tsr_emit_fill(&self->c, self->host.va, 0x7117, 64);
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 2, bos, 1, self->sync, &seq));
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x7117u, ((uint32_t *)self->host.map)[0]);
}

struct blocked_submit {
	int fd;
	struct tsr_cmds *c;
	uint32_t sync;
	pid_t tid;
	int ret;
	bool returned;
};

static void *blocked_submit_main(void *arg)
{
	struct blocked_submit *b = arg;

	__atomic_store_n(&b->tid, gettid(), __ATOMIC_RELEASE);
	b->ret = tsr_submit_flags(b->fd, b->c, 1, NULL, 0, b->sync,
				  DRM_TESSERA_SUBMIT_WAIT_ROOM, NULL);
	__atomic_store_n(&b->returned, true, __ATOMIC_RELEASE);
	return NULL;
}

/* Whether thread @tid sleeps in an ioctl (/proc's syscall file: its number). */
static bool sleeps_in_an_ioctl(pid_t tid)
{
	char path[64], line[128] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	return atoi(line) == SYS_ioctl && line[0] != 'r';
}

/*
 * A file with max_jobs_per_file jobs queued: a SUBMIT with
 * DRM_TESSERA_SUBMIT_WAIT_ROOM waits in the driver until one of them has
 * ended, then queues its job, as i915's execbuf waits for ring space
 * (libaccel always asks: a collective call with some chips' jobs queued
 * and another chip's refused had to give up).
 */
TEST_F(lim, a_full_file_s_submit_waits_for_a_job_to_end)
{
	long long old = read_number(PARAMS "max_jobs_per_file", "");
	struct blocked_submit b = { .fd = self->fd, .c = &self->c };
	uint64_t deadline;
	pthread_t thread;
	int i;

	ASSERT_LT(0, old);
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &b.sync));
	ASSERT_EQ(0, write_number(PARAMS "max_jobs_per_file", 8));
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_hang_queues", 1u << 1));
	tsr_emit_nop(&self->c);
	for (i = 0; i < 8; i++)
		EXPECT_EQ(0, tsr_submit(self->fd, &self->c, 1, NULL, 0, 0, NULL));
	ASSERT_EQ(0, pthread_create(&thread, NULL, blocked_submit_main, &b));
	/* It goes to sleep in the ioctl, not to return. */
	deadline = tsr_now_ns() + TSR_TEST_WAIT_NS;
	while (!(__atomic_load_n(&b.tid, __ATOMIC_ACQUIRE) &&
		 sleeps_in_an_ioctl(b.tid)) &&
	       !__atomic_load_n(&b.returned, __ATOMIC_ACQUIRE) &&
	       tsr_now_ns() < deadline)
		sched_yield();
	EXPECT_FALSE(__atomic_load_n(&b.returned, __ATOMIC_ACQUIRE))
		TH_LOG("the ninth SUBMIT returned %d at once", b.ret);
	EXPECT_TRUE(sleeps_in_an_ioctl(b.tid));

	/* The queue takes its jobs: the ninth is queued and runs. */
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_hang_queues", 0));
	ASSERT_EQ(0, pthread_join(thread, NULL));
	EXPECT_EQ(0, b.ret);
	EXPECT_EQ(0, tsr_wait(self->fd, b.sync, TSR_TEST_WAIT_NS));
	drmSyncobjDestroy(self->fd, b.sync);
	EXPECT_EQ(0, write_number(PARAMS "max_jobs_per_file", old));
}

/*
 * A file that queues jobs faster than they run gets EBUSY, not memory (not
 * EAGAIN: libdrm's drmIoctl() would retry that at once, spinning), unless
 * it asks to wait for room (DRM_TESSERA_SUBMIT_WAIT_ROOM, below).
 */
TEST_F(lim, queued_jobs_per_file_are_bounded)
{
	long long old = read_number(PARAMS "max_jobs_per_file", "");
	struct drm_tessera_job_status st;
	struct tsr_cmds c2 = { 0 };
	uint64_t seq = 0;
	int i, fd2;

	ASSERT_LT(0, old);
	ASSERT_EQ(0, write_number(PARAMS "max_jobs_per_file", 8));
	/* Queue 1 takes no jobs until the hang is lifted. */
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_hang_queues", 1u << 1));
	tsr_emit_nop(&self->c);
	for (i = 0; i < 8; i++) {
		EXPECT_EQ(0, tsr_submit(self->fd, &self->c, 1, NULL, 0,
					self->sync, &seq));
	}
	EXPECT_EQ(-EBUSY, tsr_submit(self->fd, &self->c, 1, NULL, 0, 0, NULL));
	/* An unknown flag is refused. */
	EXPECT_EQ(-EINVAL, tsr_submit_flags(self->fd, &self->c, 1, NULL, 0, 0,
					    1u << 1, NULL));

	/* Another file is not held to this one's count. */
	fd2 = tsr_open(0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, tsr_bo_create(fd2, 4096, 0, &c2.bo));
	tsr_emit_nop(&c2);
	EXPECT_EQ(0, tsr_submit(fd2, &c2, 0, NULL, 0, 0, NULL));
	close(fd2);

	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_hang_queues", 0));
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0, write_number(PARAMS "max_jobs_per_file", old));
}

/*
 * Allocating system-memory buffers until failure: the allocator gets
 * ENOMEM at the pinned-memory limit, the guest keeps memory to spare and
 * a bystander lives on.  Pinning most of the guest's memory takes over
 * the harness's default 30 s under KASAN.
 */
TEST_F_TIMEOUT(lim, pinned_memory_is_capped_and_the_allocator_takes_the_failure, 180)
{
	long long total = read_number("/proc/meminfo", "MemTotal") * KIB;
	int status, pipefd[2], idle[2], result[2];
	pid_t bystander, hog;

	ASSERT_LT(0, total);
	ASSERT_EQ(0, pipe(pipefd));
	ASSERT_EQ(0, pipe(idle));
	/* Waits for the end of the test, when its pipe closes. */
	bystander = fork();
	ASSERT_LE(0, bystander);
	if (!bystander) {
		char ch;

		close(idle[1]);
		_exit(read(idle[0], &ch, 1) == 0 ? 0 : 1);
	}
	close(idle[0]);
	hog = fork();
	ASSERT_LE(0, hog);
	if (!hog) {
		int fd = tsr_open(0), n = 0, ret;
		uint32_t handle;

		do
			ret = bo_create_raw(fd, 16 * MIB, 0, &handle);
		while (!ret && ++n < 4096);
		result[0] = n;
		result[1] = -ret;
		if (write(pipefd[1], result, sizeof(result)) != sizeof(result))
			_exit(2);
		/* Hold the memory until the parent, having looked, kills us. */
		for (;;)
			pause();
	}
	ASSERT_EQ(sizeof(result), read(pipefd[0], result, sizeof(result)));
	EXPECT_EQ(ENOMEM, result[1]);
	EXPECT_GE(total / 2, result[0] * 16 * MIB);
	EXPECT_LT(0, result[0]);
	/* With the hog at its limit, the guest still has room. */
	EXPECT_LT(total / 8, read_number("/proc/meminfo", "MemAvailable") * KIB);

	kill(hog, SIGKILL);
	ASSERT_EQ(hog, waitpid(hog, &status, 0));
	close(idle[1]);
	ASSERT_EQ(bystander, waitpid(bystander, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(pipefd[0]);
	close(pipefd[1]);

	/* The hog's memory is back. */
	{
		uint32_t handle;

		EXPECT_EQ(0, bo_create_raw(self->fd, 16 * MIB, 0, &handle));
	}
}

/*
 * As user @uid with an RLIMIT_MEMLOCK of @limit bytes (and without
 * CAP_IPC_LOCK), how many 16 MiB system-memory buffers, up to 16, file
 * @fd gets before BO_CREATE fails, and with what; then whether closing one
 * gives its charge back.  Exit status: the count, 100 + the errno, and
 * 200 if the charge was not given back.
 */
static void allocate_as(int fd, uid_t uid, unsigned long long limit)
{
	struct rlimit rl = { limit, limit };
	struct drm_gem_close close_one = { 0 };
	int n = 0, ret;
	uint32_t handle;

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setresuid(uid, uid, uid))
		_exit(255);
	do {
		ret = bo_create_raw(fd, 16 * MIB, 0, &handle);
		if (!ret)
			close_one.handle = handle;
	} while (!ret && ++n < 16);
	if (!ret || n == 0)
		_exit(n);
	if (ret != -ENOMEM || tsr_ioctl(fd, DRM_IOCTL_GEM_CLOSE, &close_one) ||
	    bo_create_raw(fd, 16 * MIB, 0, &handle))
		_exit(ret != -ENOMEM ? 100 - ret : 200);
	_exit(n);
}

static int allocate_as_status(int fd, uid_t uid, unsigned long long limit)
{
	int status;
	pid_t child = fork();

	if (child < 0)
		return -1;
	if (!child)
		allocate_as(fd, uid, limit);
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status))
		return -1;
	return WEXITSTATUS(status);
}

/*
 * Pinned memory is charged to the user who allocates it, against
 * RLIMIT_MEMLOCK, as io_uring and RDMA charge theirs: one user reaches its
 * limit with ENOMEM, gets it back by freeing, and leaves the device-wide
 * limit to the others.
 */
TEST_F(lim, pinned_memory_is_capped_per_user)
{
	int fd[2] = { tsr_open(0), tsr_open(0) };

	ASSERT_LE(0, fd[0]);
	ASSERT_LE(0, fd[1]);
	/* 64 MiB: four buffers, not a fifth. */
	EXPECT_EQ(4, allocate_as_status(fd[0], 65534, 64 * MIB));
	/* Another user, while the first one's files still hold theirs. */
	EXPECT_EQ(2, allocate_as_status(fd[1], 65533, 32 * MIB));
	close(fd[0]);
	close(fd[1]);
}

struct reader {
	int fd;
	int iterations;
	int torn;
	uint64_t hbm_write_min;
};

static void *read_counters(void *arg)
{
	struct reader *r = arg;
	int i;

	/* Two registers, read alternately: each a 64-bit read in sysfs. */
	for (i = 0; i < r->iterations; i++) {
		long long jobs = tsr_fd_sysfs(r->fd, "chip_jobs");
		long long written = tsr_fd_sysfs(r->fd, "hbm_write_bytes");

		if (jobs < 0 || written < 0)
			return NULL;
		/* High halves of other registers would show up here. */
		if ((uint64_t)jobs >> 32 || (uint64_t)written < r->hbm_write_min ||
		    (uint64_t)written >> 32 != r->hbm_write_min >> 32)
			r->torn++;
	}
	return NULL;
}

/*
 * The chip latches one high half for all 64-bit registers: two readers of
 * different registers must not interleave their halves.
 */
TEST_F(lim, concurrent_64bit_register_reads_are_never_torn)
{
	struct drm_tessera_job_status st;
	struct tsr_counters c;
	const struct tsr_bo *bos[1];
	struct reader r[2];
	struct tsr_bo a;
	pthread_t t[2];
	uint64_t seq;
	int i;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs a VM with two CPUs for readers to overlap");
	bos[0] = &a;

	/* Over 4 GiB written to HBM: the counter's high half becomes 1. */
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * MIB, DRM_TESSERA_BO_HBM, &a));
	ASSERT_EQ(0, tsr_counters(self->fd, &c));
	for (i = 0; c.hbm_write_bytes + (uint64_t)i * 64 * MIB < (5ull << 30); i++)
		tsr_emit_fill(&self->c, a.va, i, 64 * MIB);
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 1, self->sync, &seq));
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	ASSERT_EQ(0, tsr_counters(self->fd, &c));
	ASSERT_EQ(1, c.hbm_write_bytes >> 32);

	for (i = 0; i < 2; i++) {
		r[i] = (struct reader){ .fd = self->fd, .iterations = 1000,
					.hbm_write_min = c.hbm_write_bytes };
		ASSERT_EQ(0, pthread_create(&t[i], NULL, read_counters, &r[i]));
	}
	for (i = 0; i < 2; i++) {
		pthread_join(t[i], NULL);
		EXPECT_EQ(0, r[i].torn);
	}
}

struct submitter {
	int fd;
	struct tsr_cmds c;
	uint32_t sync;
	volatile int stop;
	uint64_t worst_ns;
	int jobs;
};

static void *submit_loop(void *arg)
{
	struct submitter *s = arg;

	while (!s->stop) {
		uint64_t t0 = tsr_now_ns(), dt;

		if (tsr_submit(s->fd, &s->c, 2, NULL, 0, s->sync, NULL))
			break;
		dt = tsr_now_ns() - t0;
		if (dt > s->worst_ns)
			s->worst_ns = dt;
		s->jobs++;
		if (tsr_wait(s->fd, s->sync, TSR_TEST_WAIT_NS))
			break;
	}
	return NULL;
}

/*
 * Pinning and mapping a large buffer holds only that buffer's lock: other
 * files' submits go on meanwhile.
 */
TEST_F(lim, a_large_allocation_does_not_stall_other_submitters)
{
	struct submitter s = { 0 };
	uint64_t t0, create_ns;
	uint32_t handle;
	pthread_t t;

	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs a VM with two CPUs for the users to overlap");

	s.fd = tsr_open(0);
	ASSERT_LE(0, s.fd);
	ASSERT_EQ(0, tsr_bo_create(s.fd, 4096, 0, &s.c.bo));
	tsr_emit_nop(&s.c);
	s.sync = tsr_syncobj(s.fd);
	ASSERT_EQ(0, pthread_create(&t, NULL, submit_loop, &s));
	while (s.jobs < 3)
		sched_yield();

	t0 = tsr_now_ns();
	ASSERT_EQ(0, bo_create_raw(self->fd, 96 * MIB, 0, &handle));
	create_ns = tsr_now_ns() - t0;
	s.stop = 1;
	pthread_join(t, NULL);
	TH_LOG("96 MiB buffer made in %llu ms; worst submit %llu ms over %d jobs",
	       (unsigned long long)create_ns / 1000000,
	       (unsigned long long)s.worst_ns / 1000000, s.jobs);
	EXPECT_LT(s.worst_ns, create_ns / 2);
	close(s.fd);
}

/* Lines of the kernel log containing @text. */
static int klog_count(const char *text)
{
	int size = klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, NULL, 0);
	char *buf, *p;
	int n, count = 0;

	if (size <= 0)
		return -1;
	buf = malloc(size + 1);
	n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, size);
	if (n < 0) {
		free(buf);
		return -1;
	}
	buf[n] = 0;
	for (p = buf; (p = strstr(p, text)); p++)
		count++;
	free(buf);
	return count;
}

/*
 * A user can make the driver warn at will (pings whose answer is lost,
 * jobs that time out): the warnings are rate-limited, not one per event.
 */
TEST_F(lim, warnings_a_user_can_cause_are_rate_limited)
{
	int before = klog_count("not acknowledged within"), i, timeouts = 0;

	ASSERT_LE(0, before);
	for (i = 0; i < 40; i++) {
		ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_drop_irqs", 1));
		timeouts += tsr_ping(self->fd, i, 1, NULL, NULL) == -ETIMEDOUT;
	}
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_drop_irqs", 0));
	EXPECT_EQ(40, timeouts);
	/* The kernel's default limit: 10 in 5 seconds. */
	EXPECT_GE(10, klog_count("not acknowledged within") - before);
}

TEST_HARNESS_MAIN
