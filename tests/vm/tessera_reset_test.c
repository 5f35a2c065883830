// SPDX-License-Identifier: GPL-2.0
/*
 * Which jobs a queue reset fails and which it runs again: the job a
 * timeout found hung fails with -ETIMEDOUT, any other job the queue had
 * taken fails with -ECANCELED and never runs again, the jobs it never took
 * run after the reset.
 *
 * Expects the driver a short job_timeout_ms (tests/run-checks boots it so).
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <sched.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#define KIB 1024u

/* Semaphores in the fixture's host buffer. */
enum { SEM_HUNG, SEM_COUNT, SEM_NEXT };

FIXTURE(rst) {
	int fd;
	char pci[32];
	struct tsr_cmds c, next;
	struct tsr_bo host;
	uint32_t sync, next_sync;
};

FIXTURE_SETUP(rst)
{
	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_pci_address(0, self->pci, sizeof(self->pci)));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->c.bo));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->next.bo));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->host));
	memset(self->host.map, 0, 4096);
	self->sync = tsr_syncobj(self->fd);
	ASSERT_LT(0, (int)self->sync);
	self->next_sync = tsr_syncobj(self->fd);
	ASSERT_LT(0, (int)self->next_sync);
}

FIXTURE_TEARDOWN(rst)
{
	uint64_t *sem = self->host.map;

	/* Whatever a failed test left waiting ends, or times out. */
	tsr_debugfs_write(self->pci, "stop_wait_end", 0);
	__atomic_store_n(&sem[SEM_HUNG], 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sem[SEM_NEXT], 1, __ATOMIC_SEQ_CST);
	close(self->fd);
}

/*
 * On queue 0: a job that waits until semaphore SEM_HUNG is set, so that
 * it times out, then a job behind it made of @next's commands.
 */
static void submit_hung_then_next(struct __test_metadata *_metadata,
				  FIXTURE_DATA(rst) *self, uint64_t *hung_seq,
				  uint64_t *next_seq)
{
	const struct tsr_bo *bos[] = { &self->host };

	tsr_emit_sem(&self->c, TSR_OP_SEM_WAIT, self->host.va, 1);
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 1, self->sync,
				hung_seq));
	ASSERT_EQ(0, tsr_submit(self->fd, &self->next, 0, bos, 1,
				self->next_sync, next_seq));
}

static void expect_state(struct __test_metadata *_metadata,
			 FIXTURE_DATA(rst) *self, uint64_t seq, uint32_t state,
			 uint32_t error, int fence_error)
{
	struct drm_tessera_job_status st;

	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(state, st.state) TH_LOG("job %llu", (unsigned long long)seq);
	EXPECT_EQ(error, st.error) TH_LOG("job %llu", (unsigned long long)seq);
	EXPECT_EQ(fence_error, st.fence_error)
		TH_LOG("job %llu", (unsigned long long)seq);
}

/*
 * The queue never took the job behind the hung one: it runs once the
 * queue is reset, while the hung job fails as guilty.
 */
TEST_F(rst, a_job_its_queue_never_took_runs_after_a_queue_reset)
{
	long long resets = tsr_sysfs_counter(self->pci, "queue_resets");
	uint64_t *sem = self->host.map;
	uint64_t hung, next;

	tsr_emit_sem(&self->next, TSR_OP_SEM_INC, self->host.va + 8 * SEM_COUNT, 1);
	submit_hung_then_next(_metadata, self, &hung, &next);
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_wait(self->fd, self->next_sync, TSR_TEST_WAIT_NS));
	expect_state(_metadata, self, hung, DRM_TESSERA_JOB_FAILED, TSR_ERR_NONE,
		     -ETIMEDOUT);
	expect_state(_metadata, self, next, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	EXPECT_EQ(1u, sem[SEM_COUNT]);
	EXPECT_EQ(resets + 1, tsr_sysfs_counter(self->pci, "queue_resets"));
}

/*
 * The hung job ends just after the timeout found it hung, and the queue
 * takes the job behind it, which counts and then waits, before the reset
 * stops the queue (debugfs stop_wait_end forces that order, and lets the
 * job the stop aborts end before the driver reads which jobs started).
 * That job has taken effect: it fails with ABORTED and -ECANCELED and does
 * not run again, so the count stays at one.  Going by the guilty job alone
 * (or by HEAD, which the aborted job moves past) ran it again.
 */
TEST_F(rst, a_job_its_queue_took_behind_a_hung_one_is_not_run_again)
{
	long long resets = tsr_sysfs_counter(self->pci, "queue_resets");
	char knob[128];
	uint64_t *sem = self->host.map;
	uint64_t hung, next, end;
	int ue = tsr_uevent_socket();

	ASSERT_LE(0, ue);
	snprintf(knob, sizeof(knob), "/sys/kernel/debug/accel/%s/stop_wait_end",
		 self->pci);
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "stop_wait_end", 1));
	tsr_emit_sem(&self->next, TSR_OP_SEM_INC, self->host.va + 8 * SEM_COUNT, 1);
	tsr_emit_sem(&self->next, TSR_OP_SEM_WAIT, self->host.va + 8 * SEM_NEXT, 1);
	submit_hung_then_next(_metadata, self, &hung, &next);

	/* The timeout takes the knob, then waits for the hung job to end. */
	end = tsr_now_ns() + TSR_TEST_WAIT_NS;
	while (tsr_read_number(knob) && tsr_now_ns() < end)
		usleep(1000);	/* debugfs tells no one */
	ASSERT_EQ(0, tsr_read_number(knob)) TH_LOG("no timeout took stop_wait_end");
	__atomic_store_n(&sem[SEM_HUNG], 1, __ATOMIC_SEQ_CST);
	ASSERT_EQ(0, tsr_uevent_wait(ue, "TESSERA_RESET=queue", NULL, 10000));
	/* Were the job run again, it would count again and pass now. */
	__atomic_store_n(&sem[SEM_NEXT], 1, __ATOMIC_SEQ_CST);
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_wait(self->fd, self->next_sync, TSR_TEST_WAIT_NS));

	/* The chip finished the job found hung before the reset came. */
	expect_state(_metadata, self, hung, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	expect_state(_metadata, self, next, DRM_TESSERA_JOB_FAILED,
		     TSR_ERR_ABORTED, -ECANCELED);
	EXPECT_EQ(resets + 1, tsr_sysfs_counter(self->pci, "queue_resets"));
	/* A later job of the queue runs; the count took one increment. */
	self->c.len = 0;
	tsr_emit_nop(&self->c);
	drmSyncobjReset(self->fd, &self->sync, 1);
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, NULL, 0, self->sync, &hung));
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	expect_state(_metadata, self, hung, DRM_TESSERA_JOB_DONE, TSR_ERR_NONE, 0);
	EXPECT_EQ(1u, sem[SEM_COUNT]) TH_LOG("the job the queue took ran again");
	close(ue);
}

#define PARAM "/sys/module/tessera/parameters/"

/*
 * With the driver's parameter @param at @value (and back after): a hung
 * job and, behind it, one that counts; both end, the hung one with its own
 * -ETIMEDOUT, and the one behind it, which the queue never took, fails
 * with @next_error without having run.
 */
static void hung_then_next_with(struct __test_metadata *_metadata,
				FIXTURE_DATA(rst) *self, const char *param,
				const char *value, int next_error)
{
	long long old = tsr_read_number(param);
	uint64_t *sem = self->host.map;
	uint64_t hung, next;
	char text[32];
	int waited;

	ASSERT_LE(0, old);
	ASSERT_EQ(0, tsr_write_file(param, value));
	tsr_emit_sem(&self->next, TSR_OP_SEM_INC, self->host.va + 8 * SEM_COUNT, 1);
	submit_hung_then_next(_metadata, self, &hung, &next);
	waited = tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS) ?:
		 tsr_wait(self->fd, self->next_sync, TSR_TEST_WAIT_NS);
	snprintf(text, sizeof(text), "%lld", old);
	ASSERT_EQ(0, tsr_write_file(param, text));
	ASSERT_EQ(0, waited);
	expect_state(_metadata, self, hung, DRM_TESSERA_JOB_FAILED, TSR_ERR_NONE,
		     -ETIMEDOUT);
	expect_state(_metadata, self, next, DRM_TESSERA_JOB_FAILED, TSR_ERR_NONE,
		     next_error);
	EXPECT_EQ(0u, sem[SEM_COUNT]);
}

/*
 * A job caught in more resets than max_resets_per_job fails with -EIO
 * rather than run again: with 0, the job behind a hung one fails at the
 * first reset and never runs.
 */
TEST_F(rst, a_job_caught_in_too_many_resets_fails_with_eio)
{
	hung_then_next_with(_metadata, self, PARAM "max_resets_per_job", "0",
			    -EIO);
}

/*
 * A context banned by the reset its hung job caused: that job still fails
 * with its own cause, -ETIMEDOUT, and the job behind it fails -ECANCELED.
 */
TEST_F(rst, a_hung_job_whose_reset_bans_its_context_fails_with_its_timeout)
{
	hung_then_next_with(_metadata, self, PARAM "ban_threshold", "1",
			    -ECANCELED);
}

/* debugfs registers shows every queue's STARTED beside its HEAD. */
TEST_F(rst, the_register_dump_shows_each_queue_s_started)
{
	char path[128], line[128], want[32];
	uint64_t queues, q;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/registers",
		 self->pci);
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_NUM_QUEUES, 0,
			       &queues));
	ASSERT_LT(0, queues);
	for (q = 0; q < queues; q++) {
		bool seen = false;

		f = fopen(path, "r");
		ASSERT_NE(NULL, f);
		snprintf(want, sizeof(want), "Q%llu_STARTED ",
			 (unsigned long long)q);
		while (!seen && fgets(line, sizeof(line), f))
			seen = !strncmp(line, want, strlen(want));
		fclose(f);
		EXPECT_TRUE(seen) TH_LOG("no %sin %s", want, path);
	}
}

TEST_HARNESS_MAIN
