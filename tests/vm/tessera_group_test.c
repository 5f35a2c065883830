// SPDX-License-Identifier: GPL-2.0
/*
 * The jobs of one SUBMIT_BATCH on one queue and priority run as one
 * scheduler job (a group), and each still ends on its own: its own
 * out-fence, signalled when it ends with its own error, its own
 * JOB_STATUS, its own job timeout.
 *
 * Expects the driver a short job_timeout_ms (tests/run-checks boots it so).
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <glob.h>
#include <sys/wait.h>
#include <linux/sync_file.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#define KIB 1024u
#define JOBS 4

/* Semaphores in the fixture's host buffer, 8 bytes apart. */
enum { SEM_COUNT, SEM_HUNG, SEM_GO };

FIXTURE(grp) {
	int fd;
	char pci[32];
	struct tsr_cmds c[JOBS];
	struct tsr_bo host;
	uint32_t sync[JOBS];
	uint64_t seq[JOBS];
};

FIXTURE_SETUP(grp)
{
	unsigned int i;

	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_pci_address(0, self->pci, sizeof(self->pci)));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->host));
	memset(self->host.map, 0, 4096);
	for (i = 0; i < JOBS; i++) {
		ASSERT_EQ(0, tsr_bo_create(self->fd, 4 * KIB, 0, &self->c[i].bo));
		self->sync[i] = tsr_syncobj(self->fd);
		ASSERT_LT(0, (int)self->sync[i]);
	}
}

/*
 * Delete the devcoredumps hangs left: each holds the driver's module
 * until read or deleted.
 */
static void delete_coredumps(void)
{
	glob_t g;
	size_t i;

	if (glob("/sys/class/devcoredump/devcd*/data", 0, NULL, &g))
		return;
	for (i = 0; i < g.gl_pathc; i++)
		tsr_write_file(g.gl_pathv[i], "1");
	globfree(&g);
}

FIXTURE_TEARDOWN(grp)
{
	uint64_t *sem = self->host.map;
	unsigned int i;

	/* Whatever a failed test left waiting ends, or times out. */
	for (i = 0; i < 64; i++)
		__atomic_store_n(&sem[i], 1, __ATOMIC_SEQ_CST);
	close(self->fd);
	delete_coredumps();
}

static uint64_t sem_va(FIXTURE_DATA(grp) *self, unsigned int i)
{
	return self->host.va + 8 * i;
}

/*
 * Submit the first @n command buffers of @c as one batch on queue 0 of
 * @fd, each job using @bo (if not NULL) and signalling its own syncobj of
 * @sync, job 0 also waiting for @in_sync if not 0; -errno.
 */
static int submit_group_on(int fd, struct tsr_cmds *c, unsigned int n,
			   const struct tsr_bo *bo, const uint32_t *sync,
			   uint32_t in_sync, uint64_t *seq)
{
	struct drm_tessera_submit_bo entry = {
		bo ? bo->handle : 0, DRM_TESSERA_BO_READ | DRM_TESSERA_BO_WRITE,
	};
	struct drm_tessera_sync syncs[JOBS][2];
	struct drm_tessera_submit jobs[JOBS] = { 0 };
	struct drm_tessera_submit_batch b = {
		.count = n, .jobs = (uintptr_t)jobs, .stride = sizeof(jobs[0]),
	};
	unsigned int i;
	int ret;

	for (i = 0; i < n; i++) {
		jobs[i].cmdbuf_handle = c[i].bo.handle;
		jobs[i].cmdbuf_size = c[i].len;
		if (bo)
			tsr_submit_bos(&jobs[i], &entry, 1);
		syncs[i][0] = TSR_SIGNAL(sync[i], 0);
		syncs[i][1] = (struct drm_tessera_sync){ .handle = in_sync };
		tsr_submit_syncs(&jobs[i], syncs[i], !i && in_sync ? 2 : 1);
	}
	ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT_BATCH, &b);
	for (i = 0; !ret && i < n; i++)
		seq[i] = jobs[i].seq;
	return ret;
}

static int submit_group(FIXTURE_DATA(grp) *self, unsigned int n)
{
	return submit_group_on(self->fd, self->c, n, &self->host, self->sync,
			       0, self->seq);
}

/* A sync_file's status: 1 signalled, 0 not yet, <0 its error. */
static int sync_file_status(int fence)
{
	struct sync_file_info info = { 0 };

	if (ioctl(fence, SYNC_IOC_FILE_INFO, &info))
		return -1000 - errno;
	return info.status;
}

/* The status of syncobj @sync's fence (see sync_file_status()). */
static int fence_status(int fd, uint32_t sync)
{
	int fence, status;

	if (drmSyncobjExportSyncFile(fd, sync, &fence))
		return -1000 - errno;
	status = sync_file_status(fence);
	close(fence);
	return status;
}

static void expect_job(struct __test_metadata *_metadata,
		       FIXTURE_DATA(grp) *self, unsigned int i, uint32_t state,
		       uint32_t error, int fence_error)
{
	struct drm_tessera_job_status st;

	ASSERT_EQ(0, tsr_job_status(self->fd, self->seq[i], &st));
	EXPECT_EQ(state, st.state) TH_LOG("job %u", i);
	EXPECT_EQ(error, st.error) TH_LOG("job %u", i);
	EXPECT_EQ(fence_error, st.fence_error) TH_LOG("job %u", i);
	EXPECT_EQ(fence_error ?: 1, fence_status(self->fd, self->sync[i]))
		TH_LOG("job %u's out-fence", i);
}

static long long job_timeout_ms(void)
{
	return tsr_read_number("/sys/module/tessera/parameters/job_timeout_ms");
}

/*
 * A job in the middle of a group faults: it alone fails, with its own
 * record in JOB_STATUS and its own error on its out-fence; the jobs
 * before and after it run.
 */
TEST_F(grp, a_faulting_job_of_a_group_fails_alone)
{
	uint64_t *sem = self->host.map;
	unsigned int i;

	tsr_emit_sem(&self->c[0], TSR_OP_SEM_INC, sem_va(self, SEM_COUNT), 1);
	/* A fill just past the host buffer's end: unmapped. */
	tsr_emit_fill(&self->c[1], self->host.va + self->host.size, 0, 64);
	tsr_emit_sem(&self->c[2], TSR_OP_SEM_INC, sem_va(self, SEM_COUNT), 1);
	ASSERT_EQ(0, submit_group(self, 3));
	for (i = 0; i < 3; i++)
		ASSERT_EQ(0, tsr_wait(self->fd, self->sync[i], TSR_TEST_WAIT_NS));
	EXPECT_EQ(self->seq[0] + 1, self->seq[1]);
	EXPECT_EQ(self->seq[1] + 1, self->seq[2]);
	expect_job(_metadata, self, 0, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	expect_job(_metadata, self, 1, DRM_TESSERA_JOB_FAILED,
		   TSR_ERR_MMU_UNMAPPED, -EFAULT);
	expect_job(_metadata, self, 2, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	EXPECT_EQ(2u, sem[SEM_COUNT]);
}

/*
 * Each job's out-fence signals when that job ends, in order, not when its
 * group does: with the second job waiting, the first job's fence has
 * signalled and the third's has not.
 */
TEST_F(grp, each_job_of_a_group_signals_when_it_ends_in_order)
{
	struct drm_tessera_job_status st;
	uint64_t *sem = self->host.map;
	struct pollfd p;
	int last;

	tsr_emit_sem(&self->c[0], TSR_OP_SEM_INC, sem_va(self, SEM_COUNT), 1);
	tsr_emit_sem(&self->c[1], TSR_OP_SEM_WAIT, sem_va(self, SEM_GO), 1);
	tsr_emit_sem(&self->c[2], TSR_OP_SEM_INC, sem_va(self, SEM_COUNT), 1);
	ASSERT_EQ(0, submit_group(self, 3));
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync[0], TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, drmSyncobjExportSyncFile(self->fd, self->sync[2], &last));
	p = (struct pollfd){ .fd = last, .events = POLLIN };
	EXPECT_EQ(0, poll(&p, 1, 100)) TH_LOG("the third job ended before the second");
	EXPECT_EQ(0, sync_file_status(last));
	EXPECT_EQ(0, fence_status(self->fd, self->sync[1]));
	ASSERT_EQ(0, tsr_job_status(self->fd, self->seq[1], &st));
	EXPECT_EQ(DRM_TESSERA_JOB_PENDING, st.state);
	EXPECT_EQ(1u, sem[SEM_COUNT]);

	__atomic_store_n(&sem[SEM_GO], 1, __ATOMIC_SEQ_CST);
	EXPECT_EQ(1, poll(&p, 1, 10000));
	close(last);
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync[1], TSR_TEST_WAIT_NS));
	expect_job(_metadata, self, 0, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	expect_job(_metadata, self, 1, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	expect_job(_metadata, self, 2, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	EXPECT_EQ(2u, sem[SEM_COUNT]);
}

/*
 * The second job of a group hangs: it alone fails with -ETIMEDOUT, the
 * first has ended, and the ones behind it (which the queue never took)
 * run after the queue reset, once.
 */
TEST_F(grp, a_hung_job_of_a_group_times_out_alone)
{
	long long resets = tsr_sysfs_counter(self->pci, "queue_resets");
	uint64_t *sem = self->host.map;
	unsigned int i;

	if (job_timeout_ms() <= 0)
		SKIP(return, "job timeouts are off (job_timeout_ms=0)");
	tsr_emit_sem(&self->c[0], TSR_OP_SEM_INC, sem_va(self, SEM_COUNT), 1);
	tsr_emit_sem(&self->c[1], TSR_OP_SEM_WAIT, sem_va(self, SEM_HUNG), 1);
	tsr_emit_sem(&self->c[2], TSR_OP_SEM_INC, sem_va(self, SEM_COUNT), 1);
	tsr_emit_sem(&self->c[3], TSR_OP_SEM_INC, sem_va(self, SEM_COUNT), 1);
	ASSERT_EQ(0, submit_group(self, 4));
	for (i = 0; i < 4; i++)
		ASSERT_EQ(0, tsr_wait(self->fd, self->sync[i], TSR_TEST_WAIT_NS));
	expect_job(_metadata, self, 0, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	expect_job(_metadata, self, 1, DRM_TESSERA_JOB_FAILED, TSR_ERR_NONE,
		   -ETIMEDOUT);
	expect_job(_metadata, self, 2, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	expect_job(_metadata, self, 3, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	EXPECT_EQ(3u, sem[SEM_COUNT]);
	EXPECT_EQ(resets + 1, tsr_sysfs_counter(self->pci, "queue_resets"));
}

/*
 * Each job of a group gets the job timeout, as a job alone would: four
 * jobs that each end 0.6 timeouts after the one before (2.4 timeouts in
 * all) time out none, and reset nothing.
 */
TEST_F(grp, a_group_longer_than_the_timeout_whose_jobs_each_end_in_time_runs)
{
	long long resets = tsr_sysfs_counter(self->pci, "queue_resets");
	long long timeout = job_timeout_ms();
	uint64_t *sem = self->host.map;
	unsigned int i;

	if (timeout <= 0)
		SKIP(return, "job timeouts are off (job_timeout_ms=0)");
	for (i = 0; i < JOBS; i++)
		tsr_emit_sem(&self->c[i], TSR_OP_SEM_WAIT, sem_va(self, 8 + i), 1);
	ASSERT_EQ(0, submit_group(self, JOBS));
	for (i = 0; i < JOBS; i++) {
		/* The chip's progress is what is timed here: nothing to wait on. */
		usleep(timeout * 600);
		__atomic_store_n(&sem[8 + i], 1, __ATOMIC_SEQ_CST);
		ASSERT_EQ(0, tsr_wait(self->fd, self->sync[i], TSR_TEST_WAIT_NS));
	}
	for (i = 0; i < JOBS; i++)
		expect_job(_metadata, self, i, DRM_TESSERA_JOB_DONE,
			   TSR_ERR_NONE, 0);
	EXPECT_EQ(resets, tsr_sysfs_counter(self->pci, "queue_resets"));
}

/* Pass @n file descriptors over the UNIX socket @sock; -errno. */
static int send_fds(int sock, const int *fds, unsigned int n)
{
	char data = 0, buf[CMSG_SPACE(3 * sizeof(int))] = { 0 };
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = buf, .msg_controllen = CMSG_SPACE(n * sizeof(int)),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&msg);

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	return sendmsg(sock, &msg, 0) == 1 ? 0 : -errno;
}

static int recv_fds(int sock, int *fds, unsigned int n)
{
	char data, buf[CMSG_SPACE(3 * sizeof(int))];
	struct iovec iov = { .iov_base = &data, .iov_len = 1 };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = buf, .msg_controllen = CMSG_SPACE(n * sizeof(int)),
	};
	struct cmsghdr *cm;

	if (recvmsg(sock, &msg, 0) != 1)
		return -errno;
	cm = CMSG_FIRSTHDR(&msg);
	if (!cm || cm->cmsg_type != SCM_RIGHTS ||
	    cm->cmsg_len != CMSG_LEN(n * sizeof(int)))
		return -EPROTO;
	memcpy(fds, CMSG_DATA(cm), n * sizeof(int));
	return 0;
}

/*
 * In a child: open a file, queue a group of three NOP jobs behind
 * @gate_file's fence, send the parent their out-fences over @sock, and
 * exit with the group queued; -errno.
 */
static int queue_group_and_exit(int sock, int gate_file)
{
	struct tsr_cmds c[3];
	uint32_t gate, sync[3];
	uint64_t seq[3];
	int fences[3], fd, ret;
	unsigned int i;

	fd = tsr_open(0);
	if (fd < 0)
		return fd;
	gate = tsr_syncobj(fd);
	if ((int)gate < 0 || drmSyncobjImportSyncFile(fd, gate, gate_file))
		return -EIO;
	for (i = 0; i < 3; i++) {
		memset(&c[i], 0, sizeof(c[i]));
		if (tsr_bo_create(fd, 4 * KIB, 0, &c[i].bo))
			return -ENOMEM;
		tsr_emit_nop(&c[i]);
		sync[i] = tsr_syncobj(fd);
		if ((int)sync[i] < 0)
			return -ENOMEM;
	}
	ret = submit_group_on(fd, c, 3, NULL, sync, gate, seq);
	if (ret)
		return ret;
	for (i = 0; i < 3; i++)
		if (drmSyncobjExportSyncFile(fd, sync[i], &fences[i]))
			return -EIO;
	return send_fds(sock, fences, 3);
}

/*
 * A process exits with a group queued behind a job of another process:
 * its file's release kills the group, and every job of it fails with
 * -ESRCH on its own out-fence, runs not, and counts as failed.
 */
TEST_F(grp, a_group_queued_at_exit_fails_with_esrch)
{
	struct tsr_counters was = { 0 }, now;
	uint64_t *sem = self->host.map;
	const struct tsr_bo *bos[] = { &self->host };
	struct tsr_cmds wait = { 0 };
	int fences[3], gate_file, sv[2], status;
	uint64_t deadline;
	uint32_t gate;
	unsigned int i;
	pid_t pid;

	ASSERT_EQ(0, tsr_counters(self->fd, &was));
	/* The group's dependency: on queue 1, a job that waits for SEM_GO. */
	ASSERT_EQ(0, tsr_bo_create(self->fd, 4 * KIB, 0, &wait.bo));
	gate = tsr_syncobj(self->fd);
	ASSERT_LT(0, (int)gate);
	tsr_emit_sem(&wait, TSR_OP_SEM_WAIT, sem_va(self, SEM_GO), 1);
	ASSERT_EQ(0, tsr_submit(self->fd, &wait, 1, bos, 1, gate, NULL));
	ASSERT_EQ(0, drmSyncobjExportSyncFile(self->fd, gate, &gate_file));
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));

	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid)
		_exit(-queue_group_and_exit(sv[1], gate_file));	/* files close in exit */
	ASSERT_EQ(0, recv_fds(sv[0], fences, 3));
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("%s", strerror(WEXITSTATUS(status)));
	close(sv[0]);
	close(sv[1]);
	close(gate_file);

	/* The killed group waits for its dependency before it ends. */
	__atomic_store_n(&sem[SEM_GO], 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 3; i++) {
		struct pollfd p = { .fd = fences[i], .events = POLLIN };

		EXPECT_EQ(1, poll(&p, 1, 30000)) TH_LOG("job %u", i);
		EXPECT_EQ(-ESRCH, sync_file_status(fences[i])) TH_LOG("job %u", i);
		close(fences[i]);
	}
	/* Killed jobs are counted by a work item right after their fences. */
	deadline = tsr_now_ns() + TSR_TEST_WAIT_NS;
	do {
		ASSERT_EQ(0, tsr_counters(self->fd, &now));
		if (now.jobs_failed >= was.jobs_failed + 3)
			break;
		usleep(10 * 1000);
	} while (tsr_now_ns() < deadline);
	EXPECT_EQ(was.jobs_submitted + 4, now.jobs_submitted);
	EXPECT_EQ(was.jobs_failed + 3, now.jobs_failed);
}

TEST_HARNESS_MAIN
