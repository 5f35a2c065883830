// SPDX-License-Identifier: GPL-2.0
/*
 * The tessera driver through its uapi, on the real chip: buffer objects,
 * submission, job status, syncobjs, isolation between contexts, injected
 * faults and recovery, many processes at once.
 *
 * Expects the VM's chips to have debug-regs=on and the driver a short
 * job_timeout_ms (tests/run-checks boots it so).
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

FIXTURE(drv) {
	int fd;
	char pci[32];
	struct tsr_info info;
	struct tsr_cmds c;
	struct tsr_bo host, hbm;
	uint32_t sync;
	pid_t helper;	/* a child the test started; stopped at teardown */
};

FIXTURE_SETUP(drv)
{
	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_info(self->fd, &self->info));
	ASSERT_EQ(0, tsr_pci_address(0, self->pci, sizeof(self->pci)));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->c.bo));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->host));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, DRM_TESSERA_BO_HBM,
				   &self->hbm));
	self->sync = tsr_syncobj(self->fd);
	ASSERT_LT(0, (int)self->sync);
}

FIXTURE_TEARDOWN(drv)
{
	/* A test that failed half way leaves no child behind to disturb the next. */
	if (self->helper > 0) {
		kill(self->helper, SIGKILL);
		waitpid(self->helper, NULL, 0);
	}
	/* Failures armed and not injected would fail the next tests. */
	tsr_debugfs_write(self->pci, "fail_bo_map/probability", 0);
	tsr_debugfs_write(self->pci, "fail_submit/probability", 0);
	tsr_debugfs_write(self->pci, "hangcheck", 1);
	close(self->fd);
}

/* Submit the fixture's command buffer on @queue and wait for the job. */
static int run(struct __test_metadata *_metadata, FIXTURE_DATA(drv) *self,
	       uint32_t queue, struct drm_tessera_job_status *st)
{
	const struct tsr_bo *bos[] = { &self->host, &self->hbm };
	uint64_t seq;
	int ret;

	drmSyncobjReset(self->fd, &self->sync, 1);
	ret = tsr_submit(self->fd, &self->c, queue, bos, 2, self->sync, &seq);
	if (ret)
		return ret;
	ret = tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS);
	if (ret)
		return ret;
	ret = tsr_job_status(self->fd, seq, st);
	self->c.len = 0;
	return ret;
}

#define RUN_OK(q) do { \
	struct drm_tessera_job_status _st; \
	ASSERT_EQ(0, run(_metadata, self, (q), &_st)); \
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, _st.state); \
} while (0)

/* ---------------------------------------------------------- info */

TEST_F(drv, info_reports_the_configuration)
{
	struct tsr_info *i = &self->info;

	if (!(i->caps & TSR_CAP_DEBUG_REGS))
		SKIP(return, "needs the configuration run-checks boots: the chip with debug-regs=on (tessera-vm -d debug-regs=on)");
	/* Again, now that the fixture's buffers exist. */
	ASSERT_EQ(0, tsr_info(self->fd, i));
	EXPECT_EQ(TSR_PRESET_V4, i->preset);
	EXPECT_EQ(2, i->tensorcores);
	EXPECT_EQ(128, i->mxu_dim);
	EXPECT_EQ(4, i->num_queues);
	EXPECT_EQ(256ull * MIB, i->hbm_size);
	EXPECT_GE(i->hbm_size - 64 * KIB, tsr_fd_sysfs(self->fd, "hbm_free"));
	EXPECT_EQ(1, i->slice_chips);
	EXPECT_EQ(1, i->topology[0]);
	EXPECT_NE(0, i->context_id);
}

TEST_F(drv, each_file_is_its_own_context)
{
	struct tsr_info other;
	int fd2 = tsr_open(0);

	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, tsr_info(fd2, &other));
	EXPECT_NE(self->info.context_id, other.context_id);
	close(fd2);
}

/* ----------------------------------------------------- buffer objects */

TEST_F(drv, buffers_get_distinct_page_aligned_addresses)
{
	struct tsr_bo small;

	ASSERT_EQ(0, tsr_bo_create(self->fd, 1, 0, &small));
	EXPECT_EQ(4096, small.size);
	EXPECT_EQ(0, small.placement);
	EXPECT_EQ(DRM_TESSERA_BO_HBM, self->hbm.placement);
	EXPECT_LE(16ull * MIB, self->c.bo.va);
	EXPECT_EQ(0, small.va % 4096);
	/* A guard page separates neighbours. */
	EXPECT_TRUE(small.va >= self->hbm.va + self->hbm.size + 4096 ||
		    small.va + small.size + 4096 <= self->c.bo.va);
	EXPECT_NE(self->host.va, self->hbm.va);
	tsr_bo_destroy(self->fd, &small);
}

TEST_F(drv, large_buffers_are_2mib_aligned)
{
	struct tsr_bo big;

	ASSERT_EQ(0, tsr_bo_create(self->fd, 4 * MIB, DRM_TESSERA_BO_HBM, &big));
	EXPECT_EQ(0, big.va % (2 * MIB));
	tsr_bo_destroy(self->fd, &big);
}

TEST_F(drv, bo_create_rejects_bad_arguments)
{
	struct drm_tessera_bo_create c = { .size = 0 };

	EXPECT_EQ(-EINVAL, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_CREATE, &c));
	c.size = DRM_TESSERA_BO_MAX_SIZE + 1;
	EXPECT_EQ(-EINVAL, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_CREATE, &c));
	c.size = 4096;
	c.flags = 0x80;
	EXPECT_EQ(-EINVAL, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_CREATE, &c));
	c.flags = DRM_TESSERA_BO_FLAGS_ALL + 1;
	EXPECT_EQ(-EINVAL, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_CREATE, &c));
	/* More HBM than the chip has is a clean ENOMEM. */
	c.flags = DRM_TESSERA_BO_HBM;
	c.size = self->info.hbm_size * 2;
	EXPECT_EQ(-ENOMEM, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_CREATE, &c));
}

TEST_F(drv, hbm_free_follows_allocations)
{
	long long before = tsr_fd_sysfs(self->fd, "hbm_free"), during;
	struct tsr_bo bo;

	ASSERT_LE(0, before);
	ASSERT_EQ(0, tsr_bo_create(self->fd, 8 * MIB, DRM_TESSERA_BO_HBM, &bo));
	during = tsr_fd_sysfs(self->fd, "hbm_free");
	EXPECT_EQ(before - 8 * MIB, during);
	tsr_bo_destroy(self->fd, &bo);
	EXPECT_EQ(before, tsr_fd_sysfs(self->fd, "hbm_free"));
}

TEST_F(drv, bo_info_rejects_bad_and_foreign_handles)
{
	struct drm_tessera_bo_info i = { .handle = 9999 };
	int fd2 = tsr_open(0);

	EXPECT_EQ(-ENOENT, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_INFO, &i));
	i.handle = self->host.handle;
	i.flags = 1;
	EXPECT_EQ(-EINVAL, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_INFO, &i));
	/* Handles are per file. */
	ASSERT_LE(0, fd2);
	i.flags = 0;
	i.handle = self->hbm.handle + 100;
	EXPECT_EQ(-ENOENT, tsr_ioctl(fd2, DRM_IOCTL_TESSERA_BO_INFO, &i));
	close(fd2);
}

TEST_F(drv, new_buffers_are_zeroed)
{
	struct tsr_bo bo;
	unsigned int i;
	uint32_t *p;

	/* Dirty some HBM, free it, allocate it again. */
	ASSERT_EQ(0, tsr_bo_create(self->fd, 1 * MIB, DRM_TESSERA_BO_HBM, &bo));
	memset(bo.map, 0xa5, bo.size);
	tsr_bo_destroy(self->fd, &bo);
	ASSERT_EQ(0, tsr_bo_create(self->fd, 1 * MIB, DRM_TESSERA_BO_HBM, &bo));
	p = bo.map;
	for (i = 0; i < bo.size / 4; i++)
		if (p[i])
			break;
	EXPECT_EQ(bo.size / 4, i);
	tsr_bo_destroy(self->fd, &bo);
}

TEST_F(drv, hbm_buffers_cannot_be_exported)
{
	int dmabuf = -1;

	EXPECT_NE(0, drmPrimeHandleToFD(self->fd, self->hbm.handle, DRM_CLOEXEC,
					&dmabuf));
	EXPECT_EQ(EOPNOTSUPP, errno);
}

/* ------------------------------------------------ mmap and device DMA */

TEST_F(drv, device_and_cpu_see_the_same_host_and_hbm_memory)
{
	uint32_t *host = self->host.map, *hbm = self->hbm.map;
	unsigned int i;

	for (i = 0; i < 1024; i++)
		host[i] = i * 2654435761u;
	/* host -> HBM, then the device fills the rest of HBM. */
	tsr_emit_copy(&self->c, self->host.va, self->hbm.va, 4096);
	tsr_emit_fill(&self->c, self->hbm.va + 4096, 0xfeedf00d, 4096);
	tsr_emit_copy(&self->c, self->hbm.va, self->host.va + 8192, 8192);
	RUN_OK(0);
	for (i = 0; i < 1024; i++) {
		ASSERT_EQ(i * 2654435761u, hbm[i]);
		ASSERT_EQ(0xfeedf00du, hbm[1024 + i]);
		ASSERT_EQ(i * 2654435761u, host[2048 + i]);
		ASSERT_EQ(0xfeedf00du, host[3072 + i]);
	}
}

TEST_F(drv, prime_shares_host_buffers_between_files)
{
	struct drm_tessera_bo_info info = { 0 };
	struct tsr_cmds c2 = { 0 };
	uint32_t handle;
	int fd2, dmabuf;

	ASSERT_EQ(0, drmPrimeHandleToFD(self->fd, self->host.handle,
					DRM_CLOEXEC | DRM_RDWR, &dmabuf));
	fd2 = tsr_open(0);
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, drmPrimeFDToHandle(fd2, dmabuf, &handle));
	info.handle = handle;
	ASSERT_EQ(0, tsr_ioctl(fd2, DRM_IOCTL_TESSERA_BO_INFO, &info));
	ASSERT_EQ(self->host.size, info.size);

	/* The second context writes the shared buffer at its own address. */
	ASSERT_EQ(0, tsr_bo_create(fd2, 4096, 0, &c2.bo));
	tsr_emit_fill(&c2, info.device_va + 256, 0x5eed5eed, 64);
	{
		struct tsr_bo shared = { .handle = handle };
		const struct tsr_bo *bos[] = { &shared };
		uint32_t s = tsr_syncobj(fd2);

		ASSERT_EQ(0, tsr_submit(fd2, &c2, 1, bos, 1, s, NULL));
		ASSERT_EQ(0, tsr_wait(fd2, s, TSR_TEST_WAIT_NS));
	}
	EXPECT_EQ(0x5eed5eedu, ((uint32_t *)self->host.map)[64]);
	close(dmabuf);
	close(fd2);
}

/* ---------------------------------------------------------- SUBMIT */

static int submit_raw(int fd, struct drm_tessera_submit *s)
{
	return tsr_ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, s);
}

TEST_F(drv, submit_rejects_bad_arguments)
{
	struct drm_tessera_submit_bo bo = { self->host.handle, DRM_TESSERA_BO_READ };
	struct drm_tessera_submit_bo dup[2] = { bo, bo };
	struct drm_tessera_sync sync = { .handle = self->sync };
	struct drm_tessera_submit good = {
		.cmdbuf_handle = self->c.bo.handle, .cmdbuf_size = 8,
	}, s;

	tsr_emit_nop(&self->c);
	s = good;
	ASSERT_EQ(0, submit_raw(self->fd, &s));
#define BAD(err, field, value) do { \
	s = good; s.field = value; \
	EXPECT_EQ(err, submit_raw(self->fd, &s)) TH_LOG(#field " = " #value); \
} while (0)
	BAD(-EINVAL, flags, 0x100);
	BAD(-EINVAL, pad, 1);
	BAD(-EINVAL, queue, self->info.num_queues);
	BAD(-EINVAL, priority, 3);
	BAD(-EINVAL, cmdbuf_size, 0);
	BAD(-EINVAL, cmdbuf_size, 12);
	BAD(-EINVAL, cmdbuf_size, DRM_TESSERA_MAX_CMDBUF_SIZE + 8);
	BAD(-EINVAL, cmdbuf_size, self->c.bo.size + 8);
	BAD(-EINVAL, cmdbuf_offset, 4);
	BAD(-EINVAL, cmdbuf_offset, self->c.bo.size);
	BAD(-EINVAL, cmdbuf_offset, ~0ull - 7);
	BAD(-ENOENT, cmdbuf_handle, 4242);
	BAD(-EINVAL, bo_count, DRM_TESSERA_MAX_BOS + 1);
	BAD(-EINVAL, sync_count, DRM_TESSERA_MAX_SYNCS + 1);
	/* Pointers that do not point at readable memory. */
	s = good; tsr_submit_bos(&s, &bo, 1); s.bos = 8;
	EXPECT_EQ(-EFAULT, submit_raw(self->fd, &s));
	s = good; tsr_submit_syncs(&s, &sync, 1); s.syncs = 8;
	EXPECT_EQ(-EFAULT, submit_raw(self->fd, &s));
	/* Buffer list entries. */
	s = good; tsr_submit_bos(&s, &bo, 1); bo.flags = 0;
	EXPECT_EQ(-EINVAL, submit_raw(self->fd, &s));
	bo.flags = 4;
	EXPECT_EQ(-EINVAL, submit_raw(self->fd, &s));
	bo.flags = DRM_TESSERA_BO_READ; bo.handle = 4242;
	EXPECT_EQ(-ENOENT, submit_raw(self->fd, &s));
	tsr_submit_bos(&s, dup, 2);
	EXPECT_EQ(-EINVAL, submit_raw(self->fd, &s));
	/* Syncs. */
	s = good; tsr_submit_syncs(&s, &sync, 1);
	sync.flags = 2;
	EXPECT_EQ(-EINVAL, submit_raw(self->fd, &s));
	sync.flags = 0; sync.handle = 4242;
	EXPECT_EQ(-ENOENT, submit_raw(self->fd, &s));
	sync.flags = DRM_TESSERA_SYNC_SIGNAL;
	EXPECT_EQ(-ENOENT, submit_raw(self->fd, &s));
#undef BAD
}

TEST_F(drv, priorities_high_needs_cap_sys_nice)
{
	struct drm_tessera_submit s = {
		.cmdbuf_handle = self->c.bo.handle, .cmdbuf_size = 8,
	};
	unsigned int p;
	int status;
	pid_t child;

	tsr_emit_nop(&self->c);
	for (p = DRM_TESSERA_PRIORITY_NORMAL; p <= DRM_TESSERA_PRIORITY_HIGH; p++) {
		s.priority = p;
		EXPECT_EQ(0, submit_raw(self->fd, &s)) TH_LOG("priority %u", p);
	}
	/* An unprivileged user keeps the file but not the high priority. */
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		if (setresuid(65534, 65534, 65534))
			_exit(10);
		s.priority = DRM_TESSERA_PRIORITY_HIGH;
		if (submit_raw(self->fd, &s) != -EPERM)
			_exit(11);
		s.priority = DRM_TESSERA_PRIORITY_LOW;
		_exit(submit_raw(self->fd, &s) ? 12 : 0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_F(drv, sequence_numbers_count_up_from_one)
{
	struct drm_tessera_job_status st;
	uint64_t a, b;
	int fd2 = tsr_open(0);
	struct tsr_cmds c2 = { 0 };

	tsr_emit_nop(&self->c);
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, NULL, 0, 0, &a));
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, NULL, 0, 0, &b));
	EXPECT_EQ(1, a);
	EXPECT_EQ(2, b);
	/* A new file counts from one again. */
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, tsr_bo_create(fd2, 4096, 0, &c2.bo));
	tsr_emit_nop(&c2);
	ASSERT_EQ(0, tsr_submit(fd2, &c2, 0, NULL, 0, 0, &a));
	EXPECT_EQ(1, a);
	close(fd2);
	EXPECT_EQ(-EINVAL, tsr_job_status(self->fd, 0, &st));
	EXPECT_EQ(-EINVAL, tsr_job_status(self->fd, 3, &st));
	st.seq = 1;
	st.flags = 1;
	EXPECT_EQ(-EINVAL, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_JOB_STATUS, &st));
}

TEST_F(drv, job_status_reports_modeled_cycles)
{
	struct drm_tessera_job_status st;

	tsr_emit_fill(&self->c, self->hbm.va, 1, 64 * KIB);
	ASSERT_EQ(0, run(_metadata, self, 2, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0, st.error);
	EXPECT_EQ(0, st.fence_error);
	EXPECT_EQ(2, st.queue);
	EXPECT_LT(st.start_cycle, st.end_cycle);
	EXPECT_LT(0, st.dma_cycles);
	EXPECT_EQ(0, st.mxu_cycles);
	EXPECT_LT(0, st.duration_ns);
}

TEST_F(drv, bad_command_fails_its_job_with_the_index)
{
	struct drm_tessera_job_status st;
	struct tsr_cmd_header bad = tsr_hdr(0x7f, 8);

	tsr_emit_nop(&self->c);
	tsr_emit_nop(&self->c);
	tsr_emit(&self->c, &bad, sizeof(bad));
	ASSERT_EQ(0, run(_metadata, self, 0, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, st.state);
	EXPECT_EQ(TSR_ERR_BAD_OPCODE, st.error);
	EXPECT_EQ(-EINVAL, st.fence_error);
	EXPECT_EQ(2, st.failed_cmd);
	/* The queue goes on. */
	tsr_emit_nop(&self->c);
	RUN_OK(0);
}

TEST_F(drv, unmapped_address_faults_with_the_address)
{
	struct tsr_counters before, after;
	struct drm_tessera_job_status st;

	ASSERT_EQ(0, tsr_counters(self->fd, &before));
	/* One byte past the buffer: the guard page. */
	tsr_emit_fill(&self->c, self->host.va + self->host.size, 0, 4);
	ASSERT_EQ(0, run(_metadata, self, 1, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, st.state);
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, st.error);
	EXPECT_EQ(-EFAULT, st.fence_error);
	EXPECT_EQ(self->host.va + self->host.size, st.fault_va);
	EXPECT_EQ(0, st.failed_cmd);
	ASSERT_EQ(0, tsr_counters(self->fd, &after));
	EXPECT_EQ(before.mmu_faults + 1, after.mmu_faults);
}

/*
 * A buffer made DEVICE_READ_ONLY is mapped without write permission: a
 * job writing it fails with MMU_PERMISSION at the address and the buffer
 * keeps its bytes, whether the buffer is an input or the job's own
 * command buffer.
 */
TEST_F(drv, a_job_cannot_write_a_device_read_only_buffer)
{
	struct drm_tessera_job_status st;
	struct tsr_cmds ro_cmds = { 0 };
	struct tsr_bo ro;
	uint64_t seq;

	ASSERT_EQ(0, tsr_bo_create(self->fd, 4 * KIB,
				   DRM_TESSERA_BO_DEVICE_READ_ONLY, &ro));
	memset(ro.map, 0x3c, ro.size);
	tsr_emit_fill(&self->c, ro.va + 64, 0xdeadbeef, 64);
	{
		const struct tsr_bo *bos[] = { &ro };

		drmSyncobjReset(self->fd, &self->sync, 1);
		ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 1,
					self->sync, &seq));
	}
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, st.state);
	EXPECT_EQ(TSR_ERR_MMU_PERMISSION, st.error);
	EXPECT_EQ(-EFAULT, st.fence_error);
	EXPECT_EQ(ro.va + 64, st.fault_va);
	EXPECT_EQ(0, st.failed_cmd);
	EXPECT_EQ(0x3c3c3c3cu, ((uint32_t *)ro.map)[16]);

	/* A command buffer the device may only read cannot rewrite itself. */
	ASSERT_EQ(0, tsr_bo_create(self->fd, 4 * KIB,
				   DRM_TESSERA_BO_DEVICE_READ_ONLY, &ro_cmds.bo));
	tsr_emit_nop(&ro_cmds);
	tsr_emit_fill(&ro_cmds, ro_cmds.bo.va, 0, 8);
	drmSyncobjReset(self->fd, &self->sync, 1);
	ASSERT_EQ(0, tsr_submit(self->fd, &ro_cmds, 1, NULL, 0, self->sync,
				&seq));
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(TSR_ERR_MMU_PERMISSION, st.error);
	EXPECT_EQ(ro_cmds.bo.va, st.fault_va);
	EXPECT_EQ(1, st.failed_cmd);
	EXPECT_EQ(TSR_OP_NOP, ((struct tsr_cmd_header *)ro_cmds.bo.map)->opcode);
	tsr_bo_destroy(self->fd, &ro_cmds.bo);
	tsr_bo_destroy(self->fd, &ro);
}

/* ...but reads it, in system memory and in HBM, as any other buffer. */
TEST_F(drv, a_device_read_only_buffer_is_still_read)
{
	static const uint32_t placements[] = { 0, DRM_TESSERA_BO_HBM };
	struct tsr_bo ro;
	unsigned int i;

	for (i = 0; i < 2; i++) {
		const struct tsr_bo *bos[] = { &ro, &self->host };

		ASSERT_EQ(0, tsr_bo_create(self->fd, 4 * KIB, placements[i] |
					   DRM_TESSERA_BO_DEVICE_READ_ONLY, &ro));
		EXPECT_EQ(placements[i], ro.placement);
		((uint32_t *)ro.map)[0] = 0x600d0000 + i;
		tsr_emit_copy(&self->c, ro.va, self->host.va + 64 * i, 4);
		drmSyncobjReset(self->fd, &self->sync, 1);
		ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 2,
					self->sync, NULL));
		self->c.len = 0;
		ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
		EXPECT_EQ(0x600d0000u + i, ((uint32_t *)self->host.map)[16 * i]);
		tsr_bo_destroy(self->fd, &ro);
	}
}

TEST_F(drv, closed_buffer_is_unmapped)
{
	struct drm_tessera_job_status st;
	struct tsr_bo bo;
	uint64_t va;

	ASSERT_EQ(0, tsr_bo_create(self->fd, 4096, 0, &bo));
	va = bo.va;
	tsr_bo_destroy(self->fd, &bo);
	tsr_emit_fill(&self->c, va, 0, 4);
	ASSERT_EQ(0, run(_metadata, self, 0, &st));
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, st.error);
	EXPECT_EQ(va, st.fault_va);
}

/* ---------------------------------------------------------- fdinfo */


TEST_F(drv, fdinfo_reports_memory_per_placement_and_engine_time)
{
	struct tsr_bo big;

	ASSERT_EQ(0, tsr_bo_create(self->fd, 4 * MIB, DRM_TESSERA_BO_HBM, &big));
	/* Sizes are printed in KiB: command buffer + host, HBM + big. */
	EXPECT_EQ(128, tsr_fdinfo_bytes(self->fd, "drm-total-host") / 1024);
	EXPECT_EQ(64 + 4096, tsr_fdinfo_bytes(self->fd, "drm-total-hbm") / 1024);
	EXPECT_EQ(64 + 4096, tsr_fdinfo_bytes(self->fd, "drm-resident-hbm") / 1024);
	EXPECT_EQ(0, tsr_fdinfo_bytes(self->fd, "drm-engine-q1"));
	tsr_emit_fill(&self->c, big.va, 3, 4 * MIB);
	RUN_OK(1);
	EXPECT_LT(0, tsr_fdinfo_bytes(self->fd, "drm-engine-q1"));
	EXPECT_EQ(0, tsr_fdinfo_bytes(self->fd, "drm-engine-q2"));
}

/* ------------------------------------------------------- isolation */

TEST_F(drv, running_job_loses_a_closed_buffer_at_once)
{
	struct drm_tessera_job_status st;
	const struct tsr_bo *bos[] = { &self->host };
	uint64_t *sem = self->host.map, seq;
	struct tsr_bo big;

	/* A large page the job reads, waits, then reads again. */
	ASSERT_EQ(0, tsr_bo_create(self->fd, 2 * MIB, DRM_TESSERA_BO_HBM, &big));
	sem[0] = 0;
	tsr_emit_copy(&self->c, big.va, self->host.va + 64, 64);
	tsr_emit_sem(&self->c, TSR_OP_SEM_WAIT, self->host.va, 1);
	tsr_emit_copy(&self->c, big.va, self->host.va + 128, 64);
	drmSyncobjReset(self->fd, &self->sync, 1);
	/* The job does not list the big buffer: closing it unmaps it. */
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 1, self->sync, &seq));
	EXPECT_EQ(-ETIME, tsr_wait(self->fd, self->sync, 100 * 1000 * 1000ull));
	tsr_bo_destroy(self->fd, &big);
	__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, st.error);
	EXPECT_EQ(2, st.failed_cmd);
}

TEST_F(drv, hbm_cannot_be_mapped_private)
{
	struct drm_tessera_bo_info i = { .handle = self->hbm.handle };
	void *p;

	ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_INFO, &i));
	p = mmap(NULL, i.size, PROT_READ | PROT_WRITE, MAP_PRIVATE, self->fd,
		 i.mmap_offset);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
}


TEST_F(drv, another_contexts_addresses_fault_in_the_intruder_only)
{
	struct drm_tessera_job_status st;
	struct tsr_cmds evil = { 0 };
	uint32_t s2, *victim = self->hbm.map;
	uint64_t seq;
	int fd2;

	memset(self->hbm.map, 0x11, self->hbm.size);
	fd2 = tsr_open(0);
	ASSERT_LE(0, fd2);
	/* The intruder's only buffer is its command buffer, at 16 MiB. */
	ASSERT_EQ(0, tsr_bo_create(fd2, 4096, 0, &evil.bo));
	ASSERT_NE(evil.bo.va, self->hbm.va);
	tsr_emit_fill(&evil, self->hbm.va, 0xbadbad, 4096);
	s2 = tsr_syncobj(fd2);
	ASSERT_EQ(0, tsr_submit(fd2, &evil, 0, NULL, 0, s2, &seq));

	/* Meanwhile the owner's job on the same queue works. */
	tsr_emit_fill(&self->c, self->hbm.va + 8192, 0x22222222, 4096);
	RUN_OK(0);

	ASSERT_EQ(0, tsr_wait(fd2, s2, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(fd2, seq, &st));
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, st.error);
	EXPECT_EQ(self->hbm.va, st.fault_va);
	EXPECT_EQ(0x11111111u, victim[0]);
	EXPECT_EQ(0x11111111u, victim[1023]);
	EXPECT_EQ(0x22222222u, victim[2048]);
	close(fd2);
}

/* ------------------------------------------------------- syncobjs */

TEST_F(drv, syncobj_orders_jobs_across_queues)
{
	uint32_t a = tsr_syncobj(self->fd), b = tsr_syncobj(self->fd);
	struct drm_tessera_sync syncs[] = { TSR_SIGNAL(a, 0), { .handle = a },
					    TSR_SIGNAL(b, 0) };
	struct drm_tessera_submit_bo bos[] = {
		{ self->host.handle, DRM_TESSERA_BO_WRITE },
	};
	struct drm_tessera_submit s = {
		.cmdbuf_handle = self->c.bo.handle,
	};
	uint64_t *sem = self->host.map;
	uint64_t seq1, seq2;
	struct drm_tessera_job_status st;

	/* Job 1 (queue 0) waits on a semaphore the CPU sets later. */
	sem[0] = 0;
	tsr_emit_sem(&self->c, TSR_OP_SEM_WAIT, self->host.va, 1);
	tsr_emit_fill(&self->c, self->host.va + 64, 0x1, 4);
	s.cmdbuf_size = self->c.len;
	tsr_submit_bos(&s, bos, 1);
	tsr_submit_syncs(&s, &syncs[0], 1);
	ASSERT_EQ(0, submit_raw(self->fd, &s));
	seq1 = s.seq;

	/* Job 2 (queue 1) depends on job 1 through syncobj a. */
	s.cmdbuf_offset = self->c.len;
	tsr_emit_copy(&self->c, self->host.va + 64, self->host.va + 128, 4);
	s.cmdbuf_size = self->c.len - s.cmdbuf_offset;
	s.queue = 1;
	tsr_submit_syncs(&s, &syncs[1], 2);
	ASSERT_EQ(0, submit_raw(self->fd, &s));
	seq2 = s.seq;

	EXPECT_EQ(-ETIME, tsr_wait(self->fd, b, 200 * 1000 * 1000ull));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq2, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_PENDING, st.state);

	__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
	ASSERT_EQ(0, tsr_wait(self->fd, b, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq1, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(1u, ((uint32_t *)self->host.map)[32]);
}

TEST_F(drv, implicit_fences_order_jobs_sharing_a_buffer)
{
	struct drm_tessera_job_status st;
	struct tsr_cmds c2 = { 0 };
	uint64_t *sem = self->host.map;
	const struct tsr_bo *bos[] = { &self->host };
	uint64_t seq1, seq2;

	ASSERT_EQ(0, tsr_bo_create(self->fd, 4096, 0, &c2.bo));
	sem[0] = 0;
	tsr_emit_sem(&self->c, TSR_OP_SEM_WAIT, self->host.va, 1);
	tsr_emit_fill(&self->c, self->host.va + 64, 0xaaaa, 4);
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 1, 0, &seq1));
	/* No syncobj: the second job waits because both write the buffer. */
	tsr_emit_copy(&c2, self->host.va + 64, self->host.va + 128, 4);
	ASSERT_EQ(0, tsr_submit(self->fd, &c2, 1, bos, 1, self->sync, &seq2));
	EXPECT_EQ(-ETIME, tsr_wait(self->fd, self->sync, 200 * 1000 * 1000ull));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq2, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_PENDING, st.state);
	__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	EXPECT_EQ(0xaaaau, ((uint32_t *)self->host.map)[32]);
}

TEST_F(drv, timeline_points_signal_in_order)
{
	uint32_t tl;
	uint64_t points[3] = { 1, 2, 3 }, value = 0;
	unsigned int i;

	ASSERT_EQ(0, drmSyncobjCreate(self->fd, 0, &tl));
	tsr_emit_nop(&self->c);
	for (i = 0; i < 3; i++) {
		struct drm_tessera_sync out = TSR_SIGNAL(tl, points[i]);
		struct drm_tessera_submit s = {
			.queue = i,
			.cmdbuf_handle = self->c.bo.handle,
			.cmdbuf_size = self->c.len,
		};

		tsr_submit_syncs(&s, &out, 1);
		ASSERT_EQ(0, submit_raw(self->fd, &s));
	}
	ASSERT_EQ(0, drmSyncobjTimelineWait(self->fd, &tl, &points[2], 1,
					    tsr_now_ns() + TSR_TEST_WAIT_NS,
					    DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT,
					    NULL));
	ASSERT_EQ(0, drmSyncobjQuery(self->fd, &tl, &value, 1));
	EXPECT_EQ(3, value);
}

TEST_F(drv, syncobj_chains_across_processes)
{
	uint64_t *sem = self->host.map;
	int sfd, status;
	pid_t child;

	/* Job in the parent waits on a semaphore; the child's job waits on it. */
	sem[0] = 0;
	tsr_emit_sem(&self->c, TSR_OP_SEM_WAIT, self->host.va, 1);
	{
		const struct tsr_bo *bos[] = { &self->host };

		ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 1, self->sync,
					NULL));
	}
	ASSERT_EQ(0, drmSyncobjHandleToFD(self->fd, self->sync, &sfd));

	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		int fd = tsr_open(0);
		uint32_t in, out;
		struct tsr_cmds c = { 0 };
		struct drm_tessera_sync syncs[2];
		struct drm_tessera_submit s = { 0 };

		if (fd < 0 || drmSyncobjFDToHandle(fd, sfd, &in) ||
		    tsr_bo_create(fd, 4096, 0, &c.bo))
			_exit(10);
		out = tsr_syncobj(fd);
		tsr_emit_nop(&c);
		syncs[0] = (struct drm_tessera_sync){ .handle = in };
		syncs[1] = TSR_SIGNAL(out, 0);
		s.queue = 3;
		s.cmdbuf_handle = c.bo.handle;
		s.cmdbuf_size = c.len;
		tsr_submit_syncs(&s, syncs, 2);
		if (tsr_ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &s))
			_exit(11);
		/* Blocked behind the parent's job. */
		if (tsr_wait(fd, out, 200 * 1000 * 1000ull) != -ETIME)
			_exit(12);
		kill(getppid(), SIGUSR1);
		if (tsr_wait(fd, out, TSR_TEST_WAIT_NS))
			_exit(13);
		_exit(0);
	}
	{
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		sigprocmask(SIG_BLOCK, &set, NULL);
		/* The child says when it has seen its job blocked. */
		ASSERT_EQ(0, sigwait(&set, &sig));
	}
	__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	close(sfd);
}

/* --------------------------------------------------- fault recovery */

static long long counter(FIXTURE_DATA(drv) *self, const char *name)
{
	return tsr_sysfs_counter(self->pci, name);
}

TEST_F(drv, hung_queue_is_reset_and_the_others_keep_running)
{
	long long resets = counter(self, "queue_resets");
	long long timeouts = counter(self, "timeouts");
	struct drm_tessera_job_status st;
	int ue = tsr_uevent_socket();

	ASSERT_LE(0, ue);
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_hang_queues", 1u << 2));
	/* Queue 1 is unaffected meanwhile. */
	tsr_emit_fill(&self->c, self->host.va, 0x1234, 64);
	RUN_OK(1);
	tsr_emit_nop(&self->c);
	ASSERT_EQ(0, run(_metadata, self, 2, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, st.state);
	EXPECT_EQ(-ETIMEDOUT, st.fence_error);
	EXPECT_EQ(0, tsr_uevent_wait(ue, "TESSERA_RESET=queue", NULL, 5000));
	EXPECT_EQ(resets + 1, counter(self, "queue_resets"));
	EXPECT_EQ(timeouts + 1, counter(self, "timeouts"));
	/* The reset cleared the hang: the queue works again. */
	tsr_emit_fill(&self->c, self->host.va, 0x5678, 64);
	RUN_OK(2);
	EXPECT_EQ(0x5678u, ((uint32_t *)self->host.map)[0]);
	close(ue);
}

TEST_F(drv, failed_dma_fails_the_job_alone)
{
	struct drm_tessera_job_status st;

	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_fail_dma", 1));
	tsr_emit_fill(&self->c, self->host.va, 0x1, 64);
	ASSERT_EQ(0, run(_metadata, self, 0, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, st.state);
	EXPECT_EQ(TSR_ERR_DMA, st.error);
	EXPECT_EQ(-EIO, st.fence_error);
	tsr_emit_fill(&self->c, self->host.va, 0x2, 64);
	RUN_OK(0);
	EXPECT_EQ(2u, ((uint32_t *)self->host.map)[0]);
}

TEST_F(drv, poisoned_hbm_fails_the_reading_job_and_is_counted)
{
	long long ue = counter(self, "ecc_uncorrectable");
	struct drm_tessera_job_status st;

	/* Poison all of HBM: the fixture's HBM buffer is somewhere in it. */
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_poison_lo", 0));
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_poison_hi", 0));
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_poison_size",
				       self->info.hbm_size));
	tsr_emit_copy(&self->c, self->hbm.va + 256, self->host.va, 64);
	ASSERT_EQ(0, run(_metadata, self, 0, &st));
	tsr_debugfs_write(self->pci, "fault_poison_size", 0);
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, st.state);
	EXPECT_EQ(TSR_ERR_ECC, st.error);
	EXPECT_EQ(-EIO, st.fence_error);
	EXPECT_EQ(self->hbm.va + 256, st.fault_va);
	/*
	 * The job's fence and the ECC interrupt's work race: a ping round
	 * trip flushes the device interrupt's work.
	 */
	ASSERT_EQ(0, tsr_ping(self->fd, 1, 0, NULL, NULL));
	EXPECT_EQ(ue + 1, counter(self, "ecc_uncorrectable"));
	tsr_emit_copy(&self->c, self->hbm.va + 256, self->host.va, 64);
	RUN_OK(0);
}

TEST_F(drv, correctable_ecc_is_counted_and_data_is_right)
{
	long long ce = counter(self, "ecc_correctable");

	((uint32_t *)self->hbm.map)[0] = 0xc0ffee;
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_ecc_correctable", 1));
	tsr_emit_copy(&self->c, self->hbm.va, self->host.va, 4);
	RUN_OK(0);
	EXPECT_EQ(0xc0ffeeu, ((uint32_t *)self->host.map)[0]);
	/* A ping round trip flushes the device interrupt's work. */
	ASSERT_EQ(0, tsr_ping(self->fd, 1, 0, NULL, NULL));
	EXPECT_EQ(ce + 1, counter(self, "ecc_correctable"));
}

/* Resets the chip again and again until told to stop. */
static void reset_until_killed(const char *pci)
{
	for (;;)
		if (tsr_debugfs_write(pci, "force_recovery", 1))
			_exit(1);
}

/*
 * A chip reset forgets a ping the chip has not answered yet: the driver
 * asks again, and an answer to an older ping is never taken for this one.
 */
TEST_F(drv, pings_across_chip_resets_are_answered)
{
	unsigned int i, timeouts = 0;
	pid_t resetter;
	int status;

	resetter = fork();
	ASSERT_LE(0, resetter);
	if (!resetter)
		reset_until_killed(self->pci);
	self->helper = resetter;
	for (i = 0; i < 300; i++) {
		uint32_t echo = 0;
		int ret = tsr_ping(self->fd, 0x5a5a0000 + i, 2000, &echo, NULL);

		timeouts += ret == -ETIMEDOUT;
		if (!ret)
			ASSERT_EQ(0x5a5a0000 + i, echo);
	}
	kill(resetter, SIGKILL);
	ASSERT_EQ(resetter, waitpid(resetter, &status, 0));
	self->helper = 0;
	EXPECT_TRUE(WIFSIGNALED(status)) TH_LOG("the resetter failed");
	EXPECT_EQ(0, timeouts);
}

TEST_F(drv, lost_interrupt_is_found_by_the_timeout)
{
	long long lost = counter(self, "lost_irqs");
	long long resets = counter(self, "queue_resets");
	uint64_t end;

	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "fault_drop_irqs", 1));
	tsr_emit_fill(&self->c, self->host.va, 0x77, 64);
	RUN_OK(3);
	EXPECT_EQ(0x77u, ((uint32_t *)self->host.map)[0]);
	/*
	 * The timeout handler counts the lost interrupt once its reap has
	 * signalled the job, which may wake this test on the other vCPU
	 * first.
	 */
	end = tsr_now_ns() + 2000000000ull;
	while (counter(self, "lost_irqs") < lost + 1 && tsr_now_ns() < end)
		sched_yield();
	EXPECT_EQ(lost + 1, counter(self, "lost_irqs"));
	EXPECT_EQ(resets, counter(self, "queue_resets"));
}

/*
 * A chip reset, for a fatal error or forced, fails the job it interrupts
 * (it has taken effect in part, and remote writes it sent cannot be taken
 * back) with ABORTED, and never runs it again; a job that had not started
 * runs after the reset.
 */
TEST_F(drv, a_chip_reset_fails_the_job_it_interrupts_and_runs_the_others)
{
	static const char *const causes[] = { "fault_fatal", "force_recovery" };
	uint64_t *sem = self->host.map;
	uint32_t *words = self->host.map;
	int ue = tsr_uevent_socket();
	unsigned int i;

	ASSERT_LE(0, ue);
	/*
	 * The stuck job must still be started when the reset comes, however
	 * long a loaded host holds the guest: no timeout may fail it first.
	 */
	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "hangcheck", 0));
	for (i = 0; i < 2; i++) {
		long long resets = counter(self, "device_resets");
		const struct tsr_bo *bos[] = { &self->host };
		struct drm_tessera_job_status st;
		struct tsr_cmds later = { 0 };
		uint32_t later_sync = tsr_syncobj(self->fd);
		uint64_t seq, later_seq;

		ASSERT_LT(0, (int)later_sync);
		memset(self->host.map, 0, 4096);
		/* Started: stuck on a semaphore when the chip is reset. */
		tsr_emit_fill(&self->c, self->host.va + 192, 0x5747, 4);
		tsr_emit_sem(&self->c, TSR_OP_SEM_WAIT, self->host.va, 1);
		tsr_emit_fill(&self->c, self->host.va + 64, 0x99, 4);
		drmSyncobjReset(self->fd, &self->sync, 1);
		ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 1,
					self->sync, &seq));
		self->c.len = 0;
		while (!__atomic_load_n(&words[48], __ATOMIC_ACQUIRE))
			sched_yield();
		/* Behind it on the same queue: not started. */
		ASSERT_EQ(0, tsr_bo_create(self->fd, 4096, 0, &later.bo));
		tsr_emit_fill(&later, self->host.va + 128, 0x77, 4);
		ASSERT_EQ(0, tsr_submit(self->fd, &later, 0, NULL, 0,
					later_sync, &later_seq));

		ASSERT_EQ(0, tsr_debugfs_write(self->pci, causes[i], 1));
		EXPECT_EQ(0, tsr_uevent_wait(ue, "TESSERA_RESET=chip", NULL,
					     10000));
		ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
		ASSERT_EQ(0, tsr_wait(self->fd, later_sync, TSR_TEST_WAIT_NS));
		ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
		EXPECT_EQ(DRM_TESSERA_JOB_FAILED, st.state) TH_LOG("%s", causes[i]);
		EXPECT_EQ(TSR_ERR_ABORTED, st.error) TH_LOG("%s", causes[i]);
		EXPECT_EQ(-ECANCELED, st.fence_error);
		ASSERT_EQ(0, tsr_job_status(self->fd, later_seq, &st));
		EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state) TH_LOG("%s", causes[i]);
		EXPECT_EQ(0x77u, words[32]);
		EXPECT_EQ(resets + 1, counter(self, "device_resets"));

		/* Released, the interrupted job does not come back to life. */
		__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
		tsr_emit_nop(&self->c);
		RUN_OK(0);
		EXPECT_EQ(0u, words[16]) TH_LOG("%s: the job ran again", causes[i]);
		tsr_bo_destroy(self->fd, &later.bo);
	}
	close(ue);
}

/* The whole of debugfs file @name of the fixture's chip, or "". */
static void debugfs_read(FIXTURE_DATA(drv) *self, const char *name,
			 char *buf, size_t len)
{
	char path[128];
	ssize_t n = 0;
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/%s",
		 self->pci, name);
	fd = open(path, O_RDONLY);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	buf[n > 0 ? n : 0] = 0;
}

TEST_F(drv, debugfs_shows_registers_queues_and_contexts)
{
	static char buf[65536];
	char want[64];

	debugfs_read(self, "registers", buf, sizeof(buf));
	EXPECT_NE(NULL, strstr(buf, "CHIP_ID              0x0000 0x54535241"));
	EXPECT_NE(NULL, strstr(buf, "Q3_LAST_ERROR"));
	debugfs_read(self, "queues", buf, sizeof(buf));
	EXPECT_NE(NULL, strstr(buf, "queue 3: tail"));
	debugfs_read(self, "contexts", buf, sizeof(buf));
	snprintf(want, sizeof(want), "context %u: pid %d", self->info.context_id,
		 getpid());
	EXPECT_NE(NULL, strstr(buf, want));
	snprintf(want, sizeof(want), "va 0x%010llx size 65536 hbm",
		 (unsigned long long)self->hbm.va);
	EXPECT_NE(NULL, strstr(buf, want));
}

TEST_F(drv, force_recovery_resets_the_chip)
{
	long long resets = counter(self, "device_resets");

	ASSERT_EQ(0, tsr_debugfs_write(self->pci, "force_recovery", 1));
	EXPECT_EQ(resets + 1, counter(self, "device_resets"));
	tsr_emit_nop(&self->c);
	RUN_OK(0);
}

/*
 * Arm the driver's failure point @name (a fault_attr of the kernel's
 * fault-injection framework) to fail its next @times calls, quietly.
 * Debian's kernel has no CONFIG_FAULT_INJECTION, so no failure points:
 * the test is skipped there, saying where they are.
 */
static void fail_point_arm(struct __test_metadata *_metadata,
			   FIXTURE_DATA(drv) *self, const char *name,
			   unsigned int times)
{
	static const char *const knobs[] = {
		"verbose", "interval", "times", "probability",
	};
	const unsigned int values[] = { 0, 1, times, 100 };
	char path[64];
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(knobs); i++) {
		snprintf(path, sizeof(path), "%s/%s", name, knobs[i]);
		if (tsr_debugfs_write(self->pci, path, values[i]) == -ENOENT)
			tsr_skip_test("kernel without CONFIG_FAULT_INJECTION: the failure points are on the debug kernel (make check-debug T=tessera_driver_test)");
		ASSERT_EQ(0, tsr_debugfs_write(self->pci, path, values[i]));
	}
}

/* The failures @name has still to inject. */
static long long fail_point_pending(FIXTURE_DATA(drv) *self, const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/%s/times",
		 self->pci, name);
	return tsr_read_number(path);
}

/*
 * As an unprivileged user with an RLIMIT_MEMLOCK of 2 MiB: a 2 MiB buffer
 * whose creation fails must give its charge back, or the next one cannot
 * be made.  Exit status: 0, or the step that failed.
 */
static void create_twice_as_user(int fd)
{
	struct rlimit rl = { 2 * MIB, 2 * MIB };
	struct drm_tessera_bo_create c = { .size = 2 * MIB };

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setresuid(65534, 65534, 65534))
		_exit(1);
	if (tsr_ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &c) != -ENOMEM)
		_exit(2);
	_exit(tsr_ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &c) ? 3 : 0);
}

/*
 * fail_bo_map fails the buffer's mapping into the context, the last step
 * of BO_CREATE: everything before it is undone, nothing is leaked (the
 * debug kernel's kmemleak scans after the tests).
 */
TEST_F(drv, a_failed_buffer_mapping_fails_bo_create_and_leaks_nothing)
{
	struct drm_tessera_bo_create c = {
		.size = MIB, .flags = DRM_TESSERA_BO_HBM,
	};
	long long hbm_free = counter(self, "hbm_free");
	int status;

	fail_point_arm(_metadata, self, "fail_bo_map", 1);
	EXPECT_EQ(-ENOMEM, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_CREATE, &c));
	EXPECT_EQ(0, fail_point_pending(self, "fail_bo_map"));
	/* The HBM range is free again. */
	EXPECT_EQ(hbm_free, counter(self, "hbm_free"));
	ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_CREATE, &c));
	EXPECT_EQ(hbm_free - MIB, counter(self, "hbm_free"));

	/* A system-memory buffer gives back its pinned-memory charges. */
	fail_point_arm(_metadata, self, "fail_bo_map", 1);
	self->helper = fork();
	ASSERT_LE(0, self->helper);
	if (!self->helper)
		create_twice_as_user(self->fd);
	ASSERT_EQ(self->helper, waitpid(self->helper, &status, 0));
	self->helper = 0;
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(0, fail_point_pending(self, "fail_bo_map"));
}

/*
 * fail_submit fails SUBMIT at its last step, with the job made, its
 * buffers looked up and reserved and its out-sync taken: all is undone,
 * no job number is used, no fence installed, and the buffers are free
 * for the next SUBMIT.
 */
TEST_F(drv, a_late_submit_failure_is_undone)
{
	const struct tsr_bo *bos[] = { &self->host, &self->hbm };
	long long submitted = counter(self, "jobs_submitted");
	uint64_t seq;

	tsr_emit_nop(&self->c);
	fail_point_arm(_metadata, self, "fail_submit", 1);
	EXPECT_EQ(-ENOMEM, tsr_submit(self->fd, &self->c, 0, bos, 2, self->sync,
				      NULL));
	EXPECT_EQ(0, fail_point_pending(self, "fail_submit"));
	EXPECT_EQ(submitted, counter(self, "jobs_submitted"));
	/* Without WAIT_FOR_SUBMIT, a syncobj with no fence is EINVAL. */
	EXPECT_EQ(-EINVAL, drmSyncobjWait(self->fd, &self->sync, 1, 0, 0, NULL));

	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 2, self->sync, &seq));
	EXPECT_EQ(1, seq);
	EXPECT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
}

TEST_F(drv, repeated_faults_ban_the_context_only)
{
	struct drm_tessera_job_status st;
	long long banned = counter(self, "banned_contexts");
	unsigned int i;
	int fd2 = tsr_open(0);
	struct tsr_cmds c2 = { 0 };
	uint32_t s2;

	for (i = 0; i < 3; i++) {
		tsr_emit_fill(&self->c, 0x1000, 0, 4);
		ASSERT_EQ(0, run(_metadata, self, 0, &st));
		EXPECT_EQ(-EFAULT, st.fence_error);
	}
	tsr_emit_nop(&self->c);
	EXPECT_EQ(-ECANCELED, tsr_submit(self->fd, &self->c, 0, NULL, 0, 0, NULL));
	EXPECT_EQ(banned + 1, counter(self, "banned_contexts"));

	/* Another context is not affected. */
	ASSERT_LE(0, fd2);
	ASSERT_EQ(0, tsr_bo_create(fd2, 4096, 0, &c2.bo));
	tsr_emit_nop(&c2);
	s2 = tsr_syncobj(fd2);
	ASSERT_EQ(0, tsr_submit(fd2, &c2, 0, NULL, 0, s2, NULL));
	ASSERT_EQ(0, tsr_wait(fd2, s2, TSR_TEST_WAIT_NS));
	close(fd2);
}

/* ------------------------------------------------------ many jobs */

#define STRESS_PROCS	4
#define STRESS_JOBS	1000

/* One process: STRESS_JOBS jobs, each counting itself and writing its slot. */
static int stress_child(unsigned int id)
{
	struct tsr_cmds c = { 0 };
	struct tsr_bo data;
	const struct tsr_bo *bos[] = { &data };
	struct drm_tessera_job_status st;
	uint32_t tl, *slots;
	uint64_t last = STRESS_JOBS;
	unsigned int j;
	int fd = tsr_open(0);

	/* Room for every job's commands: none is overwritten while queued. */
	if (fd < 0 || tsr_bo_create(fd, 128 * KIB, 0, &c.bo) ||
	    tsr_bo_create(fd, 8 * KIB, 0, &data) ||
	    drmSyncobjCreate(fd, 0, &tl))
		return 10;
	/* Job j: SEM_INC the counter at 0, fill slot j with j + 1. */
	for (j = 0; j < STRESS_JOBS; j++) {
		struct drm_tessera_submit_bo list = {
			data.handle, DRM_TESSERA_BO_READ | DRM_TESSERA_BO_WRITE,
		};
		struct drm_tessera_sync out = TSR_SIGNAL(tl, j + 1);
		struct drm_tessera_submit s = {
			.queue = (j + id) % 4,
			.cmdbuf_handle = c.bo.handle,
		};
		size_t start = c.len;

		tsr_submit_bos(&s, &list, 1);
		tsr_submit_syncs(&s, &out, 1);
		tsr_emit_sem(&c, TSR_OP_SEM_INC, data.va, 1);
		tsr_emit_fill(&c, data.va + 8 + 4 * j, j + 1, 4);
		s.cmdbuf_offset = start;
		s.cmdbuf_size = c.len - start;
		(void)bos;
		if (tsr_ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &s))
			return 11;
		if (s.seq != j + 1)
			return 12;
	}
	if (drmSyncobjTimelineWait(fd, &tl, &last, 1,
				   tsr_now_ns() + 4 * TSR_TEST_WAIT_NS,
				   DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL))
		return 13;
	if (*(uint64_t *)data.map != STRESS_JOBS)
		return 14;
	slots = (uint32_t *)((uint8_t *)data.map + 8);
	for (j = 0; j < STRESS_JOBS; j++)
		if (slots[j] != j + 1)
			return 15;
	/* The last DRM_TESSERA_JOB_HISTORY statuses are all DONE. */
	for (j = STRESS_JOBS; j > 0 && j > STRESS_JOBS - 100; j--)
		if (tsr_job_status(fd, j, &st) || st.state != DRM_TESSERA_JOB_DONE)
			return 16;
	close(fd);
	return 0;
}

/* 4000 jobs: beyond the default 30 s on the debug kernel of a busy host. */
TEST_F_TIMEOUT(drv, four_processes_a_thousand_jobs_each, 120)
{
	pid_t pids[STRESS_PROCS];
	unsigned int i;
	int status;

	for (i = 0; i < STRESS_PROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (!pids[i])
			_exit(stress_child(i));
	}
	for (i = 0; i < STRESS_PROCS; i++) {
		ASSERT_EQ(pids[i], waitpid(pids[i], &status, 0));
		EXPECT_TRUE(WIFEXITED(status));
		EXPECT_EQ(0, WEXITSTATUS(status)) TH_LOG("process %u", i);
	}
}

TEST(closing_with_jobs_in_flight_is_safe)
{
	struct tsr_cmds c = { 0 };
	unsigned int i;
	int fd = tsr_open(0);

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tsr_bo_create(fd, 64 * KIB, 0, &c.bo));
	for (i = 0; i < 64; i++)
		tsr_emit_fill(&c, c.bo.va + 32 * KIB, i, 16 * KIB);
	for (i = 0; i < 32; i++)
		ASSERT_EQ(0, tsr_submit(fd, &c, i % 4, NULL, 0, 0, NULL));
	munmap(c.bo.map, c.bo.size);
	close(fd);
	/* The device still serves a new file. */
	fd = tsr_open(0);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tsr_ping(fd, 7, 0, NULL, NULL));
	close(fd);
}

TEST_HARNESS_MAIN
