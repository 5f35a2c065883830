// SPDX-License-Identifier: GPL-2.0
/*
 * The tessera driver's identity: the DRM version (the uapi's), GET_PARAM,
 * the counters in sysfs and the ping in debugfs; and how SUBMIT and
 * SUBMIT_BATCH grow: extension chains, array strides, several out-syncs,
 * batches queued whole or not at all.  Called directly on
 * /dev/accel/accel0: what they return on good input and the errno they
 * give on bad input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <xf86drm.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#define ACCEL_NODE "/dev/accel/accel0"

static int read_sysfs_hex(const char *path, unsigned int *value)
{
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%x", value);
	fclose(f);
	return n == 1 ? 0 : -1;
}

FIXTURE(accel) {
	int fd;
};

FIXTURE_SETUP(accel)
{
	self->fd = open(ACCEL_NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", ACCEL_NODE, strerror(errno));
}

FIXTURE_TEARDOWN(accel)
{
	close(self->fd);
}

TEST_F(accel, version_names_the_tessera_driver)
{
	drmVersionPtr v = drmGetVersion(self->fd);

	ASSERT_NE(NULL, v);
	EXPECT_STREQ("tessera", v->name);
	drmFreeVersion(v);
}

TEST_F(accel, version_is_the_uapi_version)
{
	drmVersionPtr v = drmGetVersion(self->fd);

	ASSERT_NE(NULL, v);
	EXPECT_EQ(DRM_TESSERA_DRIVER_MAJOR, v->version_major);
	EXPECT_EQ(DRM_TESSERA_DRIVER_MINOR, v->version_minor);
	drmFreeVersion(v);
}

TEST_F(accel, get_param_reports_the_chip_identity)
{
	uint64_t v;

	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_CHIP_ID, 0, &v));
	EXPECT_EQ(TSR_CHIP_ID, v);
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_DEVICE_VERSION, 0, &v));
	EXPECT_EQ(TSR_DEVICE_VERSION_MAJOR, TSR_VERSION_MAJOR(v));
	EXPECT_EQ(TSR_DEVICE_VERSION_MINOR, TSR_VERSION_MINOR(v));
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_NUM_QUEUES, 0, &v));
	EXPECT_LE(1, v);
	EXPECT_GE(TSR_MAX_QUEUES, v);
}

TEST_F(accel, every_param_has_a_value)
{
	struct tsr_info info;

	ASSERT_EQ(0, tsr_info(self->fd, &info));
	EXPECT_NE(0, info.hbm_size);
	EXPECT_NE(0, info.context_id);
	EXPECT_EQ(info.slice_chips, info.topology[0] * info.topology[1] *
				    info.topology[2]);
}

TEST_F(accel, context_id_is_per_file)
{
	int other = open(ACCEL_NODE, O_RDWR | O_CLOEXEC);
	uint64_t a, b;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_CONTEXT_ID, 0, &a));
	ASSERT_EQ(0, tsr_param(other, DRM_TESSERA_PARAM_CONTEXT_ID, 0, &b));
	EXPECT_NE(a, b);
	close(other);
}

TEST_F(accel, get_param_rejects_an_unknown_param)
{
	uint64_t v = 1;

	EXPECT_EQ(-EINVAL, tsr_param(self->fd, 0, 0, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_SC_SPMEM_KIB + 1,
				     0, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, 0xffffffff, 0, &v));
}

TEST_F(accel, get_param_rejects_an_index_the_param_does_not_take)
{
	uint64_t v;

	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_CHIP_ID, 1, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_SLICE_ID, 1, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_TOPOLOGY, 3, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_COORDS, 3, &v));
	EXPECT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_TOPOLOGY, 2, &v));
	EXPECT_LE(1, v);
}

TEST_F(accel, get_param_rejects_a_bad_pointer)
{
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_PARAM, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(accel, the_retired_ioctls_are_gone)
{
	/* GET_INFO, PING, GET_COUNTERS: past the table, or GET_PARAM's 0. */
	struct drm_tessera_get_param gp = { 0 };
	unsigned long past = DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_BO_MADVISE + 1,
				      struct drm_tessera_get_param);

	EXPECT_EQ(-1, ioctl(self->fd, past, &gp));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_PARAM, &gp));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(accel, volatile_state_is_in_sysfs)
{
	struct tsr_counters c;
	uint64_t hbm;

	ASSERT_EQ(0, tsr_counters(self->fd, &c));
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_HBM_SIZE, 0, &hbm));
	EXPECT_LT(0, c.hbm_free);
	EXPECT_GE(hbm, c.hbm_free);
}

TEST_F(accel, ping_is_echoed_through_the_device_interrupt)
{
	struct tsr_counters before, after;
	uint64_t latency = 0;
	uint32_t echo = 0;

	ASSERT_EQ(0, tsr_counters(self->fd, &before));
	ASSERT_EQ(0, tsr_ping(self->fd, 0xc0ffee01, 0, &echo, &latency));
	ASSERT_EQ(0, tsr_counters(self->fd, &after));

	EXPECT_EQ(0xc0ffee01, echo);
	EXPECT_LT(0, latency);
	EXPECT_LE(before.irq_count + 1, after.irq_count);
}

TEST_F(accel, each_ping_gets_its_own_cookie_back)
{
	unsigned int i;

	for (i = 0; i < 200; i++) {
		uint32_t echo;

		ASSERT_EQ(0, tsr_ping(self->fd, 0x9e3779b9u * i, 0, &echo, NULL));
		ASSERT_EQ(0x9e3779b9u * i, echo) TH_LOG("ping %u", i);
	}
}

TEST_F(accel, ping_rejects_a_timeout_above_the_maximum)
{
	uint32_t echo = 0;

	EXPECT_EQ(-EINVAL, tsr_ping(self->fd, 1, 60001, &echo, NULL));
	EXPECT_EQ(0, tsr_ping(self->fd, 1, 60000, &echo, NULL));
	EXPECT_EQ(1, echo);
}

TEST_F(accel, ping_is_for_root_only)
{
	char pci[32], path[96];
	struct stat st;

	ASSERT_EQ(0, tsr_pci_address(0, pci, sizeof(pci)));
	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/ping", pci);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0600, st.st_mode & 0777);
}

TEST_F(accel, unknown_driver_ioctl_is_rejected)
{
	struct drm_tessera_get_param info = { 0 };
	unsigned long bad = DRM_IOWR(DRM_COMMAND_BASE + 0x3f,
				     struct drm_tessera_get_param);

	EXPECT_EQ(-1, ioctl(self->fd, bad, &info));
	EXPECT_EQ(EINVAL, errno);
}

/* ------------------------------------------------- SUBMIT, SUBMIT_BATCH */

#define WAIT_NS		(20 * 1000 * 1000 * 1000ull)
/* Jobs of the batch tests: one per queue, up to this many. */
#define BATCH_JOBS	8
/* Bytes each batch job fills, each at its own place in the data buffer. */
#define SLOT		64

FIXTURE(submit) {
	int fd;
	struct tsr_info info;
	struct tsr_cmds c;
	struct tsr_bo data;
	uint32_t sync;
};

FIXTURE_SETUP(submit)
{
	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_info(self->fd, &self->info));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * 1024, 0, &self->c.bo));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * 1024, 0, &self->data));
	self->sync = tsr_syncobj(self->fd);
	ASSERT_LT(0, (int)self->sync);
	tsr_emit_nop(&self->c);
}

FIXTURE_TEARDOWN(submit)
{
	close(self->fd);
}

/* A SUBMIT of the fixture's commands on queue 0 signalling self->sync. */
static struct drm_tessera_submit nop_job(FIXTURE_DATA(submit) *self,
					 const struct drm_tessera_sync *out)
{
	struct drm_tessera_submit s = {
		.cmdbuf_handle = self->c.bo.handle,
		.cmdbuf_size = self->c.len,
	};

	tsr_submit_syncs(&s, out, 1);
	return s;
}

static int submit(FIXTURE_DATA(submit) *self, struct drm_tessera_submit *s)
{
	return tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_SUBMIT, s);
}

/* Run the fixture's commands on queue 0; the job's number. */
static uint64_t run_job(struct __test_metadata *_metadata,
			FIXTURE_DATA(submit) *self)
{
	struct drm_tessera_sync out = TSR_SIGNAL(self->sync, 0);
	struct drm_tessera_submit s = nop_job(self, &out);

	EXPECT_EQ(0, submit(self, &s));
	EXPECT_EQ(0, tsr_wait(self->fd, self->sync, WAIT_NS));
	return s.seq;
}

TEST_F(submit, reserved_fields_and_unknown_flags_are_refused)
{
	struct drm_tessera_sync out = TSR_SIGNAL(self->sync, 0);
	struct drm_tessera_submit good = nop_job(self, &out), s;

	s = good; s.flags = DRM_TESSERA_SUBMIT_WAIT_ROOM << 1;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	s = good; s.pad = 1;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	s = good; out.flags = DRM_TESSERA_SYNC_SIGNAL | 2;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	out.flags = DRM_TESSERA_SYNC_SIGNAL;
	s = good;
	EXPECT_EQ(0, submit(self, &s));
	EXPECT_EQ(0, tsr_wait(self->fd, self->sync, WAIT_NS));
}

TEST_F(submit, an_unknown_extension_is_refused)
{
	struct drm_tessera_sync out = TSR_SIGNAL(self->sync, 0);
	struct drm_tessera_submit s = nop_job(self, &out);
	struct drm_tessera_extension ext = { .name = 0 };
	struct drm_tessera_ext_trace trace = {
		.base.name = DRM_TESSERA_EXT_TRACE, .base.pad = 1,
		.handle = self->data.handle, .size = 4096,
	};
	const uint32_t unknown[] = { 0, DRM_TESSERA_EXT_TRACE + 1, 0xffffffff };
	unsigned int i;

	s.extensions = (uintptr_t)&ext;
	for (i = 0; i < ARRAY_SIZE(unknown); i++) {
		ext.name = unknown[i];
		EXPECT_EQ(-EINVAL, submit(self, &s)) TH_LOG("name %u", ext.name);
	}
	/* A known name after an unknown one does not save the chain. */
	ext.next = (uintptr_t)&trace;
	trace.base.pad = 0;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	/* A known name with its pad set. */
	trace.base.pad = 1;
	s.extensions = (uintptr_t)&trace;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	s.extensions = 8;
	EXPECT_EQ(-EFAULT, submit(self, &s));
}

TEST_F(submit, a_chain_that_loops_ends_with_einval)
{
	struct drm_tessera_submit_bo bo = {
		self->data.handle, DRM_TESSERA_BO_WRITE,
	};
	struct drm_tessera_sync out = TSR_SIGNAL(self->sync, 0);
	struct drm_tessera_submit s = nop_job(self, &out);
	struct drm_tessera_ext_trace trace = {
		.base.name = DRM_TESSERA_EXT_TRACE,
		.handle = self->data.handle, .size = 4096,
	};

	tsr_submit_bos(&s, &bo, 1);
	s.extensions = (uintptr_t)&trace;
	trace.base.next = (uintptr_t)&trace;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	/* The same link once is a good chain. */
	trace.base.next = 0;
	EXPECT_EQ(0, submit(self, &s));
	EXPECT_EQ(0, tsr_wait(self->fd, self->sync, WAIT_NS));
}

/* An element grown by 16 bytes that this driver does not know. */
struct grown_bo {
	struct drm_tessera_submit_bo bo;
	uint64_t later[2];
};

struct grown_sync {
	struct drm_tessera_sync sync;
	uint64_t later[2];
};

TEST_F(submit, a_stride_below_the_element_or_too_large_is_refused)
{
	struct drm_tessera_submit_bo bo[2] = {
		{ self->data.handle, DRM_TESSERA_BO_WRITE },
	};
	struct drm_tessera_sync out[2] = { TSR_SIGNAL(self->sync, 0) };
	struct drm_tessera_submit good = nop_job(self, out), s;

	tsr_submit_bos(&good, bo, 1);
	s = good; s.bo_stride = sizeof(bo[0]) - 4;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	s = good; s.bo_stride = 0;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	s = good; s.sync_stride = sizeof(out[0]) - 8;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	s = good; s.sync_stride = DRM_TESSERA_MAX_STRIDE + 8;
	EXPECT_EQ(-EINVAL, submit(self, &s));
	/* With no entries the stride is not read. */
	s = good; s.bo_count = 0; s.bo_stride = 1;
	EXPECT_EQ(0, submit(self, &s));
	EXPECT_EQ(0, tsr_wait(self->fd, self->sync, WAIT_NS));
}

TEST_F(submit, a_larger_stride_with_a_zero_tail_is_taken)
{
	struct grown_bo bo = {
		.bo = { self->data.handle, DRM_TESSERA_BO_WRITE },
	};
	struct grown_sync out = { .sync = TSR_SIGNAL(self->sync, 0) };
	struct drm_tessera_submit s = nop_job(self, &out.sync);
	struct drm_tessera_job_status st;

	tsr_submit_bos(&s, &bo.bo, 1);
	s.bo_stride = sizeof(bo);
	s.sync_stride = sizeof(out);
	ASSERT_EQ(0, submit(self, &s));
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, s.seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
}

/*
 * A job with many buffers and syncs, spaced by a larger stride: every
 * buffer taken, every in-sync waited for, every out-sync signalled.
 */
TEST_F(submit, a_job_with_many_buffers_and_syncs_signals_every_out_sync)
{
	enum { BOS = 6, OUTS = 7 };
	struct grown_bo bo[BOS];
	struct grown_sync sync[OUTS + 1];
	struct tsr_bo buf[BOS];
	struct drm_tessera_sync first = TSR_SIGNAL(self->sync, 0);
	struct drm_tessera_submit s = nop_job(self, &first);
	struct drm_tessera_job_status st;
	unsigned int i;

	ASSERT_EQ(0, submit(self, &s));
	memset(bo, 0, sizeof(bo));
	memset(sync, 0, sizeof(sync));
	for (i = 0; i < BOS; i++) {
		ASSERT_EQ(0, tsr_bo_create(self->fd, 4096, 0, &buf[i]));
		bo[i].bo = (struct drm_tessera_submit_bo){
			buf[i].handle,
			i % 2 ? DRM_TESSERA_BO_WRITE : DRM_TESSERA_BO_READ,
		};
	}
	/* The first job's out-sync is this one's in-sync. */
	sync[0].sync = (struct drm_tessera_sync){ .handle = self->sync };
	for (i = 1; i <= OUTS; i++)
		sync[i].sync = TSR_SIGNAL(tsr_syncobj(self->fd), 0);
	s = nop_job(self, &sync[0].sync);
	tsr_submit_bos(&s, &bo[0].bo, BOS);
	tsr_submit_syncs(&s, &sync[0].sync, OUTS + 1);
	s.bo_stride = sizeof(bo[0]);
	s.sync_stride = sizeof(sync[0]);
	ASSERT_EQ(0, submit(self, &s));
	for (i = 1; i <= OUTS; i++)
		EXPECT_EQ(0, tsr_wait(self->fd, sync[i].sync.handle, WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, s.seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
}

TEST_F(submit, a_larger_stride_with_a_nonzero_tail_is_e2big)
{
	struct grown_bo bo[2] = {
		{ .bo = { self->data.handle, DRM_TESSERA_BO_WRITE } },
		{ .bo = { self->c.bo.handle, DRM_TESSERA_BO_READ } },
	};
	struct grown_sync out = { .sync = TSR_SIGNAL(self->sync, 0) };
	struct drm_tessera_submit s = nop_job(self, &out.sync);
	uint64_t seq = run_job(_metadata, self);

	tsr_submit_bos(&s, &bo[0].bo, 2);
	s.bo_stride = sizeof(bo[0]);
	s.sync_stride = sizeof(out);
	bo[1].later[1] = 1;
	EXPECT_EQ(-E2BIG, submit(self, &s));
	bo[1].later[1] = 0;
	out.later[0] = 1;
	EXPECT_EQ(-E2BIG, submit(self, &s));
	/* Nothing was queued: no job number was used. */
	EXPECT_EQ(seq + 1, run_job(_metadata, self));
}

TEST_F(submit, every_out_sync_is_signalled)
{
	uint32_t a = tsr_syncobj(self->fd), b = tsr_syncobj(self->fd), tl;
	struct drm_tessera_sync syncs[4];
	struct drm_tessera_submit s;
	struct drm_tessera_job_status st;
	uint64_t point = 7, value = 0;

	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &tl));
	/* A job that ended first: an in-sync among the out-syncs. */
	syncs[0] = TSR_SIGNAL(self->sync, 0);
	s = nop_job(self, syncs);
	ASSERT_EQ(0, submit(self, &s));
	syncs[0] = (struct drm_tessera_sync){ .handle = self->sync };
	syncs[1] = TSR_SIGNAL(a, 0);
	syncs[2] = TSR_SIGNAL(tl, point);
	syncs[3] = TSR_SIGNAL(b, 0);
	tsr_submit_syncs(&s, syncs, 4);
	ASSERT_EQ(0, submit(self, &s));
	ASSERT_EQ(0, tsr_wait(self->fd, a, WAIT_NS));
	ASSERT_EQ(0, tsr_wait(self->fd, b, WAIT_NS));
	ASSERT_EQ(0, drmSyncobjTimelineWait(self->fd, &tl, &point, 1,
					    tsr_now_ns() + WAIT_NS,
					    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
					    NULL));
	ASSERT_EQ(0, drmSyncobjQuery(self->fd, &tl, &value, 1));
	EXPECT_EQ(point, value);
	ASSERT_EQ(0, tsr_job_status(self->fd, s.seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
}

/*
 * @n jobs in @jobs, job i on queue i filling slot i of the data buffer
 * with @pattern + i and signalling point i + 1 of timeline @tl.
 */
static void batch_jobs(FIXTURE_DATA(submit) *self, unsigned int n,
		       uint32_t pattern, uint32_t tl,
		       struct drm_tessera_submit *jobs,
		       struct drm_tessera_sync *outs,
		       struct drm_tessera_submit_bo *bo)
{
	unsigned int i;

	*bo = (struct drm_tessera_submit_bo){
		self->data.handle, DRM_TESSERA_BO_WRITE,
	};
	self->c.len = 0;
	for (i = 0; i < n; i++) {
		size_t start = self->c.len;

		tsr_emit_fill(&self->c, self->data.va + i * SLOT, pattern + i,
			      SLOT);
		outs[i] = TSR_SIGNAL(tl, i + 1);
		jobs[i] = (struct drm_tessera_submit){
			.queue = i,
			.cmdbuf_handle = self->c.bo.handle,
			.cmdbuf_offset = start,
			.cmdbuf_size = self->c.len - start,
		};
		/* Every job names the same buffer: it is locked once. */
		tsr_submit_bos(&jobs[i], bo, 1);
		tsr_submit_syncs(&jobs[i], &outs[i], 1);
	}
}

static unsigned int batch_size(FIXTURE_DATA(submit) *self)
{
	return self->info.num_queues < BATCH_JOBS ? self->info.num_queues :
						    BATCH_JOBS;
}

static int submit_batch(FIXTURE_DATA(submit) *self,
			struct drm_tessera_submit_batch *b)
{
	return tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_SUBMIT_BATCH, b);
}

TEST_F(submit, a_batch_of_a_job_per_queue_all_complete)
{
	struct drm_tessera_submit jobs[BATCH_JOBS];
	struct drm_tessera_sync outs[BATCH_JOBS];
	struct drm_tessera_submit_bo bo;
	struct drm_tessera_submit_batch b = {
		.count = batch_size(self),
		.jobs = (uintptr_t)jobs,
		.stride = sizeof(jobs[0]),
	};
	uint32_t tl, *data = self->data.map;
	uint64_t seq = run_job(_metadata, self) + 1, point = b.count;
	unsigned int i;

	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &tl));
	batch_jobs(self, b.count, 0x5eed0000, tl, jobs, outs, &bo);
	ASSERT_EQ(0, submit_batch(self, &b));
	ASSERT_EQ(0, drmSyncobjTimelineWait(self->fd, &tl, &point, 1,
					    tsr_now_ns() + WAIT_NS,
					    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
					    NULL));
	for (i = 0; i < b.count; i++) {
		struct drm_tessera_job_status st;

		/* Numbered in array order, each written back. */
		EXPECT_EQ(seq + i, jobs[i].seq);
		ASSERT_EQ(0, tsr_job_status(self->fd, jobs[i].seq, &st));
		EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
		EXPECT_EQ(i, st.queue);
		EXPECT_EQ(0x5eed0000 + i, data[i * SLOT / 4]);
		EXPECT_EQ(0x5eed0000 + i, data[(i + 1) * SLOT / 4 - 1]);
	}
}

/* Spoilers of job 3 of a batch, each found at a different stage. */
union scratch {
	struct drm_tessera_submit_bo bos[2];
	struct drm_tessera_sync sync;
};

static void bad_pad(struct drm_tessera_submit *j, void *arg)
{
	j->pad = 1;
}

static void bad_stride(struct drm_tessera_submit *j, void *arg)
{
	j->sync_stride = 4;
}

static void bad_buffer(struct drm_tessera_submit *j, void *arg)
{
	j->cmdbuf_handle = 4242;
}

static void bad_in_sync(struct drm_tessera_submit *j, void *arg)
{
	struct drm_tessera_sync *in = &((union scratch *)arg)->sync;

	*in = (struct drm_tessera_sync){ .handle = 4242 };
	tsr_submit_syncs(j, in, 1);
}

static void listed_twice(struct drm_tessera_submit *j, void *arg)
{
	struct drm_tessera_submit_bo *twice = ((union scratch *)arg)->bos;

	twice[0] = *(const struct drm_tessera_submit_bo *)(uintptr_t)j->bos;
	twice[1] = twice[0];
	tsr_submit_bos(j, twice, 2);
}

TEST_F(submit, a_batch_with_a_bad_job_queues_nothing_and_names_it)
{
	const struct {
		const char *what;
		void (*spoil)(struct drm_tessera_submit *j, void *arg);
		int err;
	} bad[] = {
		{ "pad set", bad_pad, -EINVAL },
		{ "sync stride below the element", bad_stride, -EINVAL },
		{ "unknown command buffer", bad_buffer, -ENOENT },
		{ "unknown in-sync", bad_in_sync, -ENOENT },
		{ "a buffer listed twice", listed_twice, -EINVAL },
	};
	struct drm_tessera_submit jobs[BATCH_JOBS];
	struct drm_tessera_sync outs[BATCH_JOBS];
	struct drm_tessera_submit_bo bo;
	union scratch scratch;
	struct drm_tessera_submit_batch b = {
		.count = batch_size(self),
		.jobs = (uintptr_t)jobs,
		.stride = sizeof(jobs[0]),
	};
	uint32_t tl, *data = self->data.map;
	uint64_t seq, value;
	unsigned int i, k;

	if (b.count < 4)
		SKIP(return, "the chip has %u queues, the test needs 4", b.count);
	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &tl));
	memset(data, 0, b.count * SLOT);
	for (k = 0; k < ARRAY_SIZE(bad); k++) {
		seq = run_job(_metadata, self);
		batch_jobs(self, b.count, 0xbad00000, tl, jobs, outs, &bo);
		bad[k].spoil(&jobs[3], &scratch);
		b.error_index = 0;
		EXPECT_EQ(bad[k].err, submit_batch(self, &b)) TH_LOG("%s", bad[k].what);
		EXPECT_EQ(3, b.error_index) TH_LOG("%s", bad[k].what);
		/* No job took a number or a fence; no queue ran one. */
		self->c.len = 0;
		tsr_emit_nop(&self->c);
		EXPECT_EQ(seq + 1, run_job(_metadata, self)) TH_LOG("%s", bad[k].what);
		value = 0;
		ASSERT_EQ(0, drmSyncobjQuery(self->fd, &tl, &value, 1));
		EXPECT_EQ(0, value) TH_LOG("%s", bad[k].what);
	}
	/* A job queued on a queue runs after any the batches left there. */
	for (i = 0; i < b.count; i++) {
		ASSERT_EQ(0, tsr_submit(self->fd, &self->c, i, NULL, 0,
					self->sync, NULL));
		ASSERT_EQ(0, tsr_wait(self->fd, self->sync, WAIT_NS));
	}
	for (i = 0; i < b.count * SLOT / 4; i++)
		ASSERT_EQ(0, data[i]) TH_LOG("word %u", i);
}

TEST_F(submit, a_batch_refuses_bad_fields_of_its_own)
{
	struct drm_tessera_submit jobs[BATCH_JOBS];
	struct drm_tessera_sync outs[BATCH_JOBS];
	struct drm_tessera_submit_bo bo;
	struct drm_tessera_extension ext = { .name = DRM_TESSERA_EXT_TRACE };
	struct drm_tessera_submit_batch good = {
		.count = 1,
		.jobs = (uintptr_t)jobs,
		.stride = sizeof(jobs[0]),
	}, b;
	uint32_t tl;

	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &tl));
	batch_jobs(self, 1, 0, tl, jobs, outs, &bo);
#define BAD(field, value) do { \
	b = good; b.field = value; b.error_index = 0; \
	EXPECT_EQ(-EINVAL, submit_batch(self, &b)) TH_LOG(#field " = " #value); \
	EXPECT_EQ(DRM_TESSERA_BATCH_NO_INDEX, b.error_index); \
} while (0)
	BAD(flags, DRM_TESSERA_SUBMIT_WAIT_ROOM << 1);
	BAD(count, 0);
	BAD(count, DRM_TESSERA_MAX_BATCH + 1);
	BAD(stride, sizeof(jobs[0]) - 8);
	BAD(stride, DRM_TESSERA_MAX_STRIDE + 8);
	/* SUBMIT_BATCH's own chain knows no name yet. */
	BAD(extensions, (uintptr_t)&ext);
#undef BAD
	/* Whether to wait for room is the batch's to say, not a job's. */
	b = good; jobs[0].flags = DRM_TESSERA_SUBMIT_WAIT_ROOM; b.error_index = 0;
	EXPECT_EQ(-EINVAL, submit_batch(self, &b));
	EXPECT_EQ(0, b.error_index);
	jobs[0].flags = 0;
	b = good; b.flags = DRM_TESSERA_SUBMIT_WAIT_ROOM;
	EXPECT_EQ(0, submit_batch(self, &b));
	EXPECT_EQ(0, drmSyncobjTimelineWait(self->fd, &tl, &(uint64_t){ 1 }, 1,
					    tsr_now_ns() + WAIT_NS,
					    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
					    NULL));
}

TEST(pci_function_is_a_processing_accelerator)
{
	unsigned int class, vendor, device;

	ASSERT_EQ(0, read_sysfs_hex("/sys/class/accel/accel0/device/class", &class));
	ASSERT_EQ(0, read_sysfs_hex("/sys/class/accel/accel0/device/vendor", &vendor));
	ASSERT_EQ(0, read_sysfs_hex("/sys/class/accel/accel0/device/device", &device));
	EXPECT_EQ(TSR_PCI_CLASS, class);
	EXPECT_EQ(TSR_PCI_VENDOR_ID, vendor);
	EXPECT_EQ(TSR_PCI_DEVICE_ID, device);
}

/* Linux resource flags (include/linux/ioport.h) for the BAR checks. */
#define IORESOURCE_MEM		0x00000200
#define IORESOURCE_PREFETCH	0x00002000
#define IORESOURCE_MEM_64	0x00100000

TEST(hbm_is_a_64bit_prefetchable_bar)
{
	unsigned long long start, end, flags, size;
	FILE *f = fopen("/sys/class/accel/accel0/device/resource", "r");
	int bar;

	ASSERT_NE(NULL, f);
	for (bar = 0; bar <= TSR_BAR_HBM; bar++)
		ASSERT_EQ(3, fscanf(f, "%llx %llx %llx", &start, &end, &flags));
	fclose(f);
	size = end - start + 1;
	EXPECT_NE(0, start);
	EXPECT_LE(16ull << 20, size);
	EXPECT_EQ(0, size & (size - 1));
	EXPECT_EQ(IORESOURCE_MEM | IORESOURCE_PREFETCH | IORESOURCE_MEM_64,
		  flags & (IORESOURCE_MEM | IORESOURCE_PREFETCH | IORESOURCE_MEM_64));
}

TEST(device_interrupt_is_an_msix_vector)
{
	char line[256];
	int found = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "PCI-MSIX") && strstr(line, "tessera"))
			found++;
	fclose(f);
	EXPECT_LE(1, found);
}

TEST_HARNESS_MAIN
