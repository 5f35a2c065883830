// SPDX-License-Identifier: GPL-2.0
/*
 * Ioctl fuzzer for the tessera driver, run on /dev/accel/accel0.
 *
 * Two files (and one on /dev/accel/accel1, for PRIME between chips, when
 * the VM has a second chip) get a bounded stream of random and mutated
 * calls: every driver ioctl, the GEM, PRIME and syncobj ioctls the driver
 * supports, mmap() of buffer objects and fdinfo.  The fuzzer keeps pools
 * of the handles and ICI windows it holds, builds each call valid from
 * them, then often
 * mutates some fields with boundary values, random bits, stale handles,
 * bad pointers or another argument size.  Every result must be success or
 * an errno the call can return; a call built valid and left alone must
 * succeed, and what it returns must agree with what the fuzzer knows
 * (handles, addresses, window ids, sequence numbers, job states,
 * counters, the slice and its ports).  Buffers marked DONTNEED meet
 * memory pressure (drop_caches) now and then, and a purged one must
 * refuse whatever would reach it.  Jobs run
 * real commands, some malformed or faulting, with extension chains, alone
 * or in batches of up to eight (a batch that fails must name the job it
 * refused, when one job was spoiled), two hang until the driver's
 * timeout, and a few chip resets and injected failures come through the
 * driver's debugfs.  A second thread looks up the handles the first one
 * creates and closes.  Afterwards a fresh file must still run a job, and
 * the device must have accounted for every job.
 *
 * TESSERA_FUZZ_SEED picks the stream (printed; the kernel's timing makes a
 * replay close, not exact), TESSERA_FUZZ_CALLS its length, TESSERA_FUZZ_SECONDS
 * a time after which it stops early (default 180 per 100000 calls).  The
 * defaults are make check's: one fixed stream of 30000 calls, about 10 s,
 * long enough for every call, two hangs and some injected faults, the same
 * calls each run, so that a new violation comes from the change; make fuzz
 * runs a million calls of a new stream (Documentation/testing.md).
 * TESSERA_FUZZ_TRACE=1 prints every call.  The host catches oopses and
 * WARNs on the guest console; a crash of the fuzzing process is reported
 * with the calls that led to it.
 *
 * This file holds the tests; the fuzzer itself is in fuzz/, a file per
 * concern: mutate.c (randomness and mutations), call.c (issuing and
 * recording calls), ops.c (the table of calls), bo.c, syncobj.c, files.c
 * (reopening and PRIME), submit.c (SUBMIT and SUBMIT_BATCH), info.c, ici.c
 * (windows and ports),
 * chaos.c (fault injection) and racer.c (the second thread).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#include "fuzz/fuzz.h"

#define ACCEL_NODE		"/dev/accel/accel0"
/* A second chip, when the VM has one: PRIME between devices. */
#define OTHER_NODE		"/dev/accel/accel1"
#define FUZZ_DEFAULT_CALLS	30000
#define FUZZ_DEFAULT_SEED	0x7e55e7a1
/*
 * A backstop for a slow host: the run stops early rather than time out,
 * after this many seconds per 100000 calls (they take 35 s in the VM).
 */
#define FUZZ_SECONDS_PER_100K	180

/* ------------------------------------------------------------ summary */

static void print_stats(const struct fuzz *fz)
{
	unsigned int i, e;

	printf("# %-24s %8s %8s %9s %9s  errnos\n", "call", "count", "ok",
	       "avg us", "max us");
	for (i = 0; i < OP_COUNT; i++) {
		const struct fuzz_stats *st = &fz->stats[i];
		char line[512];
		int n;

		if (!st->calls)
			continue;
		n = snprintf(line, sizeof(line), "# %-24s %8llu %8llu %9.1f %9.1f ",
			     fuzz_ops[i].name, (unsigned long long)st->calls,
			     (unsigned long long)st->ok,
			     st->ns / 1e3 / st->calls, st->max_ns / 1e3);
		for (e = 1; e < ARRAY_SIZE(st->errnos) && n < (int)sizeof(line);
		     e++)
			if (st->errnos[e])
				n += snprintf(line + n, sizeof(line) - n,
					      " %s:%u", strerrorname_np(e) ?: "?",
					      st->errnos[e]);
		printf("%s\n", line);
	}
}

static void print_counters(struct fuzz *fz)
{
	struct tsr_counters *c = (void *)fz->arg;

	if (tsr_counters(fz->file[0].fd, c))
		return;
	printf("# driver: %llu jobs submitted, %llu completed, %llu failed, %llu MMU faults, %llu timeouts, %llu queue and %llu chip resets, %llu banned contexts, %u hangs made, %lld buffers purged\n",
	       (unsigned long long)c->jobs_submitted,
	       (unsigned long long)c->jobs_completed,
	       (unsigned long long)c->jobs_failed,
	       (unsigned long long)c->mmu_faults,
	       (unsigned long long)c->timeouts,
	       (unsigned long long)c->queue_resets,
	       (unsigned long long)c->device_resets,
	       (unsigned long long)c->banned_contexts, fz->hangs,
	       tsr_fd_sysfs(fz->file[0].fd, "purged_buffers"));
}

static unsigned long long env_number(const char *name, unsigned long long def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

/* ------------------------------------------------------------- tests */

/* The fuzzer's state, its last page followed by an inaccessible one. */
static struct fuzz *fuzz_alloc(void)
{
	size_t size = (sizeof(struct fuzz) + FUZZ_PAGE - 1) & ~(FUZZ_PAGE - 1);
	__u8 *base = mmap(NULL, size + 3 * FUZZ_PAGE, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct fuzz *fz;

	if (base == MAP_FAILED)
		return NULL;
	fz = (void *)(base + size - sizeof(*fz));
	memset(fz, 0, sizeof(*fz));
	mprotect(base + size, FUZZ_PAGE, PROT_NONE);
	/* A readable page whose last 8 bytes precede an inaccessible one. */
	fz->edge = base + size + 2 * FUZZ_PAGE - 8;
	fz->noaccess = base + size;
	mprotect(base + size + 2 * FUZZ_PAGE, FUZZ_PAGE, PROT_NONE);
	return fz;
}

FIXTURE(fuzz) {
	struct fuzz *fz;
};

FIXTURE_SETUP(fuzz)
{
	struct fuzz *fz = fuzz_alloc();
	unsigned int i;
	int limit;

	ASSERT_NE(NULL, fz);
	self->fz = fz;
	fz->rng = env_number("TESSERA_FUZZ_SEED", FUZZ_DEFAULT_SEED);
	fz->trace = env_number("TESSERA_FUZZ_TRACE", 0);
	recorder->seed = fz->rng;
	fz->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fz->null_fd);
	limit = read_max_windows_per("file");
	ASSERT_LE(0, limit) TH_LOG("cannot read the max_windows_per_file parameter");
	fz->max_windows_per_file = limit;
	limit = read_max_windows_per("user");
	ASSERT_LE(0, limit) TH_LOG("cannot read the max_windows_per_user parameter");
	fz->max_windows_per_user = limit;
	fz->nfiles = access(OTHER_NODE, R_OK | W_OK) ? 2 : 3;
	for (i = 0; i < fz->nfiles; i++) {
		fz->file[i].node = i < 2 ? ACCEL_NODE : OTHER_NODE;
		open_file(fz, &fz->file[i]);
		ASSERT_LT(0, fz->file[i].num_queues);
	}
	find_debugfs(fz);
	ASSERT_EQ(0, fz->violations);
}

FIXTURE_TEARDOWN(fuzz)
{
	struct fuzz *fz = self->fz;
	unsigned int i;

	for (i = 0; i < fz->nfiles; i++)
		close_file(fz, &fz->file[i]);
	while (fz->ndmabuf)
		forget_dmabuf(fz, &fz->dmabuf[0]);
	close(fz->null_fd);
	free(fz->dontneed_objs);
	/* Injected failures nobody consumed would fail the next tests. */
	if (fz->fail_points)
		fail_points_set(fz, 0);
	/* A chip reset clears every chip fault. */
	if (fz->faulted)
		debugfs_write(fz, "force_recovery", 1);
}

/* The harness's timeout is no bound: TESSERA_FUZZ_SECONDS is. */
TEST_F_TIMEOUT(fuzz, random_calls_get_documented_answers, 24 * 3600)
{
	struct fuzz *fz = self->fz;
	__u64 calls = env_number("TESSERA_FUZZ_CALLS", FUZZ_DEFAULT_CALLS);
	__u64 seconds = env_number("TESSERA_FUZZ_SECONDS",
				   (calls + 99999) / 100000 * FUZZ_SECONDS_PER_100K);
	__u64 start = now_ns(), step = calls / 10 ? calls / 10 : 1;

	printf("# seed 0x%llx (TESSERA_FUZZ_SEED), %llu calls (TESSERA_FUZZ_CALLS)\n",
	       (unsigned long long)recorder->seed, (unsigned long long)calls);
	fflush(stdout);
	recorder->started = true;
	ASSERT_EQ(0, pthread_create(&fz->racer, NULL, racer, fz));
	while (fz->call < calls) {
		fuzz_step(fz);
		if (fz->call / step == (fz->call - 1) / step)
			continue;
		printf("# %u calls, %.1f s\n", fz->call, (now_ns() - start) / 1e9);
		fflush(stdout);
		if (now_ns() - start > seconds * 1000000000ull) {
			printf("# stopping: over %llu s (TESSERA_FUZZ_SECONDS)\n",
			       (unsigned long long)seconds);
			break;
		}
	}
	__atomic_store_n(&fz->stop, true, __ATOMIC_RELAXED);
	pthread_join(fz->racer, NULL);
	recorder->finished = true;
	if (fz->race_err)
		violation(fz, "the racer's %s returned %s", fz->race_op,
			  fz->race_err == EEXIST ? "success" :
						   strerror(fz->race_err));
	printf("# %u calls in %.1f s, %llu violations; %llu racing calls\n",
	       fz->call, (now_ns() - start) / 1e9,
	       (unsigned long long)fz->violations,
	       (unsigned long long)fz->race_calls);
	print_stats(fz);
	print_counters(fz);
	/* A report shows a failure's last lines: the first violation again. */
	EXPECT_EQ(0, fz->violations)
		TH_LOG("first violation, at %s", fz->first_violation);
}

/* Tests of the device after fuzzing: their fixture comes after fuzz's. */
FIXTURE(after_fuzzing) {
	int fd;
};

FIXTURE_SETUP(after_fuzzing)
{
	self->fd = open(ACCEL_NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", ACCEL_NODE, strerror(errno));
}

FIXTURE_TEARDOWN(after_fuzzing)
{
	close(self->fd);
}

/* The fuzzing process may have died: say in which calls. */
TEST_F(after_fuzzing, fuzzing_process_returned_from_every_call)
{
	if (!recorder->started)
		SKIP(return, "the fuzzer did not run");
	if (!recorder->finished) {
		printf("# the fuzzing process died at call %u (seed 0x%llx); its last calls:\n",
		       recorder->calls, (unsigned long long)recorder->seed);
		print_last_calls(16);
	}
	EXPECT_TRUE(recorder->finished);
}

static void *map_buffer(int fd, __u32 handle, __u64 *va, __u64 size)
{
	struct drm_tessera_bo_info info = { .handle = handle };
	void *p;

	if (ioctl(fd, DRM_IOCTL_TESSERA_BO_INFO, &info) || info.size != size)
		return NULL;
	*va = info.device_va;
	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		 info.mmap_offset);
	return p == MAP_FAILED ? NULL : p;
}

/* A fill of a whole buffer, waited for through its out-syncobj. */
static void run_fill(struct __test_metadata *_metadata, int fd, __u32 placement)
{
	const __u64 size = 64 << 10;
	const __u32 pattern = 0xc0dec0de ^ placement;
	struct drm_tessera_bo_create target = { .size = size, .flags = placement };
	struct drm_tessera_bo_create cmdbuf = { .size = FUZZ_PAGE };
	struct drm_syncobj_create sync = { 0 };
	struct drm_tessera_submit_bo bo = { .flags = DRM_TESSERA_BO_WRITE };
	struct drm_tessera_sync out = { .flags = DRM_TESSERA_SYNC_SIGNAL };
	struct drm_tessera_submit submit = {
		.cmdbuf_size = sizeof(struct tsr_cmd_dma),
		.bo_count = 1,
		.bos = (uintptr_t)&bo,
		.bo_stride = sizeof(bo),
		.sync_count = 1,
		.syncs = (uintptr_t)&out,
		.sync_stride = sizeof(out),
	};
	struct drm_syncobj_wait wait = {
		.handles = (uintptr_t)&sync.handle,
		.count_handles = 1,
	};
	struct drm_tessera_job_status st = { 0 };
	struct tsr_cmd_dma *fill;
	__u64 va, cmd_va, i;
	__u32 *data;

	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &target));
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &cmdbuf));
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &sync));
	data = map_buffer(fd, target.handle, &va, size);
	fill = map_buffer(fd, cmdbuf.handle, &cmd_va, FUZZ_PAGE);
	ASSERT_NE(NULL, data);
	ASSERT_NE(NULL, fill);
	*fill = (struct tsr_cmd_dma) {
		.hdr = { .opcode = TSR_OP_DMA_FILL, .size_qw = sizeof(*fill) / 8 },
		.src = pattern, .dst = va, .size = { size, 1, 1 },
	};
	bo.handle = target.handle;
	submit.cmdbuf_handle = cmdbuf.handle;
	out.handle = sync.handle;
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &submit));

	wait.timeout_nsec = now_ns() + 60 * 1000000000ull;
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_SYNCOBJ_WAIT, &wait))
		TH_LOG("wait for the fill: %s", strerror(errno));
	st.seq = submit.seq;
	ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_TESSERA_JOB_STATUS, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state)
		TH_LOG("error %u fence_error %d", st.error, st.fence_error);
	for (i = 0; i < size / 4; i++)
		if (data[i] != pattern)
			break;
	EXPECT_EQ(size / 4, i) TH_LOG("word %llu is 0x%08x",
				      (unsigned long long)i, data[i]);
	munmap(data, size);
	munmap(fill, FUZZ_PAGE);
}

TEST_F(after_fuzzing, a_fresh_file_runs_jobs)
{
	run_fill(_metadata, self->fd, 0);
	run_fill(_metadata, self->fd, DRM_TESSERA_BO_HBM);
}

/* Create and close the lowest handle over and over, for a few seconds. */
static void *create_close_loop(void *arg)
{
	int fd = *(int *)arg;
	__u64 deadline = now_ns() + 3 * 1000000000ull;

	while (now_ns() < deadline) {
		struct drm_tessera_bo_create c = { .size = FUZZ_PAGE };
		struct drm_gem_close close = { 0 };

		if (ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &c))
			continue;
		close.handle = c.handle;
		ioctl(fd, DRM_IOCTL_GEM_CLOSE, &close);
	}
	return NULL;
}

/*
 * A handle is in the file's table a moment before the buffer is mapped
 * into the context, and a moment after it is unmapped: lookups of it from
 * another thread then find no mapping, which must be ENOENT, not a WARN.
 */
TEST_F(after_fuzzing, lookups_race_handle_create_and_close)
{
	const char *name = "";
	unsigned int i = 0;
	pthread_t closer;
	int err = 0;

	ASSERT_EQ(0, pthread_create(&closer, NULL, create_close_loop, &self->fd));
	while (!err && pthread_tryjoin_np(closer, NULL) == EBUSY) {
		err = race_lookup(self->fd, 1, i++ & 1, &name);
		if (errno_allowed(race_errnos, err))
			err = 0;
	}
	if (err)
		pthread_join(closer, NULL);
	EXPECT_EQ(0, err) TH_LOG("%s: %s", name,
				 err == EEXIST ? "success" : strerror(err));
}

/* Jobs of files closed mid-flight end too: each is completed or failed. */
TEST_F(after_fuzzing, every_submitted_job_ended)
{
	struct tsr_counters c;
	__u64 deadline = now_ns() + 30 * 1000000000ull;

	do {
		ASSERT_EQ(0, tsr_counters(self->fd, &c));
		if (c.jobs_completed + c.jobs_failed == c.jobs_submitted)
			break;
		usleep(100 * 1000);
	} while (now_ns() < deadline);
	EXPECT_EQ(c.jobs_submitted, c.jobs_completed + c.jobs_failed)
		TH_LOG("%llu jobs submitted, %llu completed, %llu failed",
		       (unsigned long long)c.jobs_submitted,
		       (unsigned long long)c.jobs_completed,
		       (unsigned long long)c.jobs_failed);
}

/*
 * In a new file: a job that hangs until the driver's timeout, and a job
 * waiting for it through a syncobj.  Return: 0, or the errno that failed.
 */
static int submit_hang_and_waiter(void)
{
	int fd = open(ACCEL_NODE, O_RDWR | O_CLOEXEC);
	struct drm_tessera_bo_create bo = { .size = FUZZ_PAGE };
	struct drm_syncobj_create sync = { 0 };
	struct drm_tessera_sync in = { 0 };
	struct drm_tessera_sync out = { .flags = DRM_TESSERA_SYNC_SIGNAL };
	struct drm_tessera_submit hang = {
		.cmdbuf_size = sizeof(struct tsr_cmd_sem),
		.sync_count = 1,
		.syncs = (uintptr_t)&out,
		.sync_stride = sizeof(out),
	};
	struct drm_tessera_submit waiter = {
		.queue = 1,
		.cmdbuf_offset = FUZZ_PAGE / 2,
		.cmdbuf_size = sizeof(struct tsr_cmd_header),
		.sync_count = 1,
		.syncs = (uintptr_t)&in,
		.sync_stride = sizeof(in),
	};
	struct tsr_cmd_sem *wait;
	__u64 va;

	if (fd < 0 || ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &bo) ||
	    ioctl(fd, DRM_IOCTL_SYNCOBJ_CREATE, &sync))
		return errno;
	wait = map_buffer(fd, bo.handle, &va, FUZZ_PAGE);
	if (!wait)
		return errno;
	/* A NOP (zero) waits in the second half of the page. */
	*wait = (struct tsr_cmd_sem) {
		.hdr = { .opcode = TSR_OP_SEM_WAIT, .size_qw = sizeof(*wait) / 8 },
		.va = va + FUZZ_PAGE - 8, .value = ~0ull,
	};
	((struct tsr_cmd_header *)((__u8 *)wait + FUZZ_PAGE / 2))->size_qw = 1;
	hang.cmdbuf_handle = bo.handle;
	waiter.cmdbuf_handle = bo.handle;
	out.handle = sync.handle;
	in.handle = sync.handle;
	if (ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &hang) ||
	    ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &waiter))
		return errno;
	return 0;
}

/*
 * A process exits with a job still waiting for a hung one: the file's
 * release gives the waiter a second, then kills it with -ESRCH.  The
 * killed job must count as failed like any other.
 */
TEST_F(after_fuzzing, jobs_killed_at_exit_count_as_failed)
{
	struct tsr_counters was = { 0 }, c;
	__u64 deadline = now_ns() + 30 * 1000000000ull;
	int ue = tsr_uevent_socket();
	int status;
	pid_t pid;

	ASSERT_LE(0, ue);
	ASSERT_EQ(0, tsr_counters(self->fd, &was));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(submit_hang_and_waiter());	/* files close in exit */
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("%s", strerror(WEXITSTATUS(status)));
	/* The hung job's queue reset is announced... */
	ASSERT_EQ(0, tsr_uevent_wait(ue, "TESSERA_RESET=queue", NULL, 30000));
	close(ue);
	/*
	 * ...and the killed waiter is freed (and counted) by a work item right
	 * after its fence, with no event of its own: poll the counters briefly.
	 */
	do {
		ASSERT_EQ(0, tsr_counters(self->fd, &c));
		if (c.jobs_completed + c.jobs_failed == c.jobs_submitted)
			break;
		usleep(10 * 1000);
	} while (now_ns() < deadline);
	EXPECT_EQ(was.timeouts + 1, c.timeouts);
	EXPECT_EQ(was.jobs_submitted + 2, c.jobs_submitted);
	EXPECT_EQ(c.jobs_submitted - was.jobs_submitted,
		  c.jobs_completed - was.jobs_completed +
		  c.jobs_failed - was.jobs_failed);
}

/* Opening more files than the chip has contexts fails, and recovers. */
TEST_F(after_fuzzing, contexts_run_out_cleanly)
{
	struct tsr_info info = { 0 };
	int *fds, n = 0, err, fd;

	ASSERT_EQ(0, tsr_info(self->fd, &info));
	fds = calloc(info.max_contexts + 1, sizeof(*fds));
	ASSERT_NE(NULL, fds);
	while (n <= (int)info.max_contexts) {
		fds[n] = open(ACCEL_NODE, O_RDWR | O_CLOEXEC);
		if (fds[n] < 0)
			break;
		n++;
	}
	err = errno;
	EXPECT_GT((int)info.max_contexts, n);	/* self->fd holds one */
	EXPECT_EQ(ENOSPC, err) TH_LOG("open %d: %s", n, strerror(err));
	while (n--)
		close(fds[n]);
	free(fds);
	fd = open(ACCEL_NODE, O_RDWR | O_CLOEXEC);
	EXPECT_LE(0, fd);
	close(fd);
}

/*
 * The fuzzer's files are closed, and so are their windows: fresh files get
 * every window of the chip, lowest id first, as many each as
 * max_windows_per_file allows and as many together as max_windows_per_user
 * does.
 */
TEST_F(after_fuzzing, every_window_is_free_again)
{
	int limit = read_max_windows_per("file"), fds[DRM_TESSERA_MAX_WINDOWS];
	int user_limit = read_max_windows_per("user");
	struct tsr_info info = { 0 };
	unsigned int next = 0, nfds = 0, got, want, total;
	int err;

	ASSERT_EQ(0, tsr_info(self->fd, &info));
	if (!(info.caps & TSR_CAP_ICI) || !info.ici_ports)
		SKIP(return, "the chip has no ICI");
	ASSERT_LE(0, limit);
	ASSERT_LE(0, user_limit);
	total = user_limit < DRM_TESSERA_MAX_WINDOWS ? user_limit :
						       DRM_TESSERA_MAX_WINDOWS;
	if (!limit || (__u64)limit * (info.max_contexts - 1) < total)
		SKIP(return, "%d windows per file cannot take all", limit);
	while (next < total) {
		struct drm_tessera_bo_create bo = { .size = FUZZ_PAGE };
		int fd = open(ACCEL_NODE, O_RDWR | O_CLOEXEC);

		ASSERT_LE(0, fd);
		fds[nfds++] = fd;
		ASSERT_EQ(0, ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &bo));
		for (got = 0;; got++) {
			struct drm_tessera_window_open wo = {
				.handle = bo.handle,
				.flags = DRM_TESSERA_WINDOW_WRITE,
				.size = FUZZ_PAGE,
			};

			err = ioctl(fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo) ? errno : 0;
			if (err)
				break;
			ASSERT_EQ(next, wo.id) TH_LOG("window %u is still open", next);
			next++;
		}
		want = total - (next - got);
		if (want > (unsigned int)limit)
			want = limit;
		EXPECT_EQ(ENOSPC, err);
		ASSERT_EQ(want, got);
	}
	while (nfds)
		close(fds[--nfds]);
}

/* The largest buffers fail with ENOMEM, not with the kernel's warnings. */
TEST_F(after_fuzzing, largest_buffers_fail_without_harm)
{
	struct drm_tessera_bo_create c = { .size = DRM_TESSERA_BO_MAX_SIZE };
	struct tsr_info info = { 0 };
	unsigned int i;

	ASSERT_EQ(0, tsr_info(self->fd, &info));
	for (i = 0; i < 3; i++) {
		c.flags = i ? DRM_TESSERA_BO_HBM : 0;
		c.size = i == 2 ? info.hbm_size + 1 : DRM_TESSERA_BO_MAX_SIZE;
		EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_BO_CREATE, &c))
			TH_LOG("%llu bytes, flags %u", (unsigned long long)c.size,
			       c.flags);
		EXPECT_EQ(ENOMEM, errno);
	}
	run_fill(_metadata, self->fd, 0);
}

TEST_HARNESS_MAIN
