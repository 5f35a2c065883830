// SPDX-License-Identifier: GPL-2.0
/*
 * Purgeable buffers: DRM_IOCTL_TESSERA_BO_MADVISE and the driver's
 * shrinker.  Memory pressure is made by "echo 2 > /proc/sys/vm/drop_caches",
 * which runs every shrinker (drop_slab()); the tests run as root.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#define KIB 1024u
#define MIB (1024u * 1024u)

FIXTURE(purge) {
	int fd;
	struct tsr_cmds c;
	struct tsr_bo host, big;
	uint32_t sync;
};

FIXTURE_SETUP(purge)
{
	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->c.bo));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, 0, &self->host));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 4 * MIB, 0, &self->big));
	self->sync = tsr_syncobj(self->fd);
	ASSERT_LT(0, (int)self->sync);
}

FIXTURE_TEARDOWN(purge)
{
	close(self->fd);
}

/* BO_MADVISE @madv on @handle; -errno, *@retained set on success. */
static int madvise_bo(int fd, uint32_t handle, uint32_t madv,
		      uint32_t *retained)
{
	struct drm_tessera_bo_madvise m = { .handle = handle, .madv = madv };
	int ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_BO_MADVISE, &m);

	if (!ret && retained)
		*retained = m.retained;
	return ret;
}

/* Every shrinker of the kernel runs. */
static int memory_pressure(void)
{
	return tsr_write_file("/proc/sys/vm/drop_caches", "2");
}

/* Size @key in the fdinfo of @fd in KiB, or -1. */
static long long fdinfo_kib(int fd, const char *key)
{
	long long v = tsr_fdinfo_bytes(fd, key);

	return v < 0 ? v : v / 1024;
}

/* Submit the fixture's command buffer using @host and @big; wait. */
static int run(FIXTURE_DATA(purge) *self, struct drm_tessera_job_status *st)
{
	const struct tsr_bo *bos[] = { &self->host, &self->big };
	uint64_t seq;
	int ret;

	drmSyncobjReset(self->fd, &self->sync, 1);
	ret = tsr_submit(self->fd, &self->c, 0, bos, 2, self->sync, &seq);
	self->c.len = 0;
	if (!ret)
		ret = tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS);
	return ret ?: tsr_job_status(self->fd, seq, st);
}

TEST_F(purge, bad_arguments_are_refused)
{
	struct drm_tessera_bo_madvise m = {
		.handle = self->big.handle, .madv = DRM_TESSERA_MADV_DONTNEED,
	};
	struct tsr_bo hbm;

	m.flags = 1;
	EXPECT_EQ(-EINVAL, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_MADVISE, &m));
	m.flags = 0;
	m.madv = 2;
	EXPECT_EQ(-EINVAL, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_MADVISE, &m));
	EXPECT_EQ(-ENOENT, madvise_bo(self->fd, 0x7fff,
				      DRM_TESSERA_MADV_DONTNEED, NULL));
	/* HBM is not memory the kernel can reclaim. */
	ASSERT_EQ(0, tsr_bo_create(self->fd, 64 * KIB, DRM_TESSERA_BO_HBM, &hbm));
	EXPECT_EQ(-EINVAL, madvise_bo(self->fd, hbm.handle,
				      DRM_TESSERA_MADV_DONTNEED, NULL));
	/* None of them marked the buffer: pressure leaves it. */
	ASSERT_EQ(0, memory_pressure());
	m.madv = DRM_TESSERA_MADV_WILLNEED;
	ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_BO_MADVISE, &m));
	EXPECT_EQ(1, m.retained);
}

TEST_F(purge, dontneed_then_willneed_without_pressure_keeps_the_contents)
{
	struct drm_tessera_job_status st;
	uint32_t retained = 7;

	memset(self->big.map, 0x5a, self->big.size);
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_DONTNEED, &retained));
	EXPECT_EQ(1, retained);
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_WILLNEED, &retained));
	EXPECT_EQ(1, retained);
	/* Marked needed again: pressure leaves it too. */
	ASSERT_EQ(0, memory_pressure());
	EXPECT_EQ(0x5a, ((uint8_t *)self->big.map)[self->big.size - 1]);
	tsr_emit_copy(&self->c, self->big.va + 4096, self->host.va, 64);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x5a, ((uint8_t *)self->host.map)[63]);
}

TEST_F(purge, a_dontneed_buffer_is_purged_under_memory_pressure)
{
	long long resident;
	uint32_t retained = 7;

	memset(self->big.map, 0x5a, self->big.size);
	/* A CPU mapping holds the pages: this test wants them back. */
	munmap(self->big.map, self->big.size);
	self->big.map = NULL;
	resident = fdinfo_kib(self->fd, "drm-resident-host");
	ASSERT_LE(4096, resident);
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_DONTNEED, &retained));
	ASSERT_EQ(1, retained);
	EXPECT_EQ(4096, fdinfo_kib(self->fd, "drm-purgeable-host"));
	ASSERT_EQ(0, memory_pressure());
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_WILLNEED, &retained));
	EXPECT_EQ(0, retained);
	EXPECT_EQ(resident - 4096, fdinfo_kib(self->fd, "drm-resident-host"));
	/* Purged stays purged. */
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_DONTNEED, &retained));
	EXPECT_EQ(0, retained);
}

/* DONTNEED, memory pressure, WILLNEED: whether @handle kept its pages. */
static int retained_after_pressure(int fd, uint32_t handle)
{
	uint32_t retained = 7;

	if (madvise_bo(fd, handle, DRM_TESSERA_MADV_DONTNEED, &retained) ||
	    memory_pressure() ||
	    madvise_bo(fd, handle, DRM_TESSERA_MADV_WILLNEED, &retained))
		return -1;
	return retained;
}

/*
 * Other chips may write a buffer through an ICI window at any time: while
 * one is open the buffer stays, and once it closes it may go.
 */
TEST_F(purge, a_dontneed_buffer_with_an_open_window_is_not_purged)
{
	struct drm_tessera_window_open wo = {
		.handle = self->big.handle, .flags = DRM_TESSERA_WINDOW_WRITE,
		.size = self->big.size,
	};
	struct drm_tessera_window_close wc = { 0 };

	munmap(self->big.map, self->big.size);
	self->big.map = NULL;
	ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo));
	EXPECT_EQ(1, retained_after_pressure(self->fd, self->big.handle));

	wc.id = wo.id;
	ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_WINDOW_CLOSE, &wc));
	EXPECT_EQ(0, retained_after_pressure(self->fd, self->big.handle));
}

/* The mmap offset BO_INFO gives for @handle now, or 0. */
static uint64_t mmap_offset(int fd, uint32_t handle)
{
	struct drm_tessera_bo_info info = { .handle = handle };

	return tsr_ioctl(fd, DRM_IOCTL_TESSERA_BO_INFO, &info) ? 0 :
	       info.mmap_offset;
}

/* A new mapping of @bo at @offset: 0, its first byte in *@first; or -errno. */
static int map_first_byte(int fd, const struct tsr_bo *bo, uint64_t offset,
			  uint8_t *first)
{
	uint8_t *p = mmap(NULL, bo->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			  fd, offset);

	if (p == MAP_FAILED)
		return -errno;
	*first = p[0];
	munmap(p, bo->size);
	return 0;
}

/* PRIME export of @handle: 0 (the dma-buf closed again) or -errno. */
static int export_bo(int fd, uint32_t handle)
{
	int dmabuf, ret = drmPrimeHandleToFD(fd, handle, DRM_CLOEXEC, &dmabuf);

	if (ret)
		return -errno;
	close(dmabuf);
	return 0;
}

/* An ICI window on the whole of @bo: 0 (closed again) or -errno. */
static int open_window(int fd, const struct tsr_bo *bo)
{
	struct drm_tessera_window_open wo = {
		.handle = bo->handle, .flags = DRM_TESSERA_WINDOW_WRITE,
		.size = bo->size,
	};
	struct drm_tessera_window_close wc = { 0 };
	int ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo);

	if (ret)
		return ret;
	wc.id = wo.id;
	return tsr_ioctl(fd, DRM_IOCTL_TESSERA_WINDOW_CLOSE, &wc);
}

/*
 * A new mapping would be of fresh zeroed pages: refused.  The buffer keeps
 * its offset, which a buffer made since does not get.
 */
TEST_F(purge, a_purged_buffer_refuses_a_new_cpu_mapping)
{
	uint64_t offset = mmap_offset(self->fd, self->big.handle);
	struct tsr_bo same_size;
	uint8_t first = 0;

	ASSERT_NE(0, offset);
	ASSERT_EQ(0, retained_after_pressure(self->fd, self->big.handle));
	ASSERT_EQ(0, tsr_bo_create(self->fd, self->big.size, 0, &same_size));
	EXPECT_NE(offset, mmap_offset(self->fd, same_size.handle));
	EXPECT_EQ(offset, mmap_offset(self->fd, self->big.handle));
	EXPECT_EQ(-EFAULT, map_first_byte(self->fd, &self->big, offset, &first));
}

TEST_F(purge, a_purged_buffer_refuses_prime_export)
{
	ASSERT_EQ(0, retained_after_pressure(self->fd, self->big.handle));
	EXPECT_EQ(-EFAULT, export_bo(self->fd, self->big.handle));
}

TEST_F(purge, a_purged_buffer_refuses_an_ici_window)
{
	ASSERT_EQ(0, retained_after_pressure(self->fd, self->big.handle));
	EXPECT_EQ(-EFAULT, open_window(self->fd, &self->big));
}

/* The positive side of the three above: not purged, all as before. */
TEST_F(purge, a_buffer_needed_again_before_pressure_maps_exports_and_opens_windows)
{
	uint32_t retained = 7;
	uint8_t first = 0;

	((uint8_t *)self->big.map)[0] = 0x5a;
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_DONTNEED, &retained));
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_WILLNEED, &retained));
	ASSERT_EQ(1, retained);
	ASSERT_EQ(0, memory_pressure());
	EXPECT_EQ(0, map_first_byte(self->fd, &self->big,
				    mmap_offset(self->fd, self->big.handle),
				    &first));
	EXPECT_EQ(0x5a, first);
	EXPECT_EQ(0, export_bo(self->fd, self->big.handle));
	EXPECT_EQ(0, open_window(self->fd, &self->big));
}

/*
 * Another chip's import pins the pages through its dma-buf attachment,
 * which outlives the exporter's handles: the buffer is not purged while
 * attached, and the importer still maps what was written.
 */
TEST_F(purge, a_dontneed_buffer_another_chip_imported_is_not_purged)
{
	long long purged = tsr_fd_sysfs(self->fd, "purged_buffers");
	struct drm_gem_close gc = { .handle = self->big.handle };
	struct tsr_bo imported = { .size = self->big.size };
	int other = tsr_open(1), dmabuf;
	uint8_t first = 0;

	if (other < 0)
		SKIP(return, "no second chip: boot the VM with two (-d twice)");
	((uint8_t *)self->big.map)[0] = 0x5a;
	ASSERT_EQ(0, drmPrimeHandleToFD(self->fd, self->big.handle, DRM_CLOEXEC,
					&dmabuf));
	ASSERT_EQ(0, drmPrimeFDToHandle(other, dmabuf, &imported.handle));
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_DONTNEED, NULL));
	/* The exporter's last handle and mapping go: only the import is left. */
	munmap(self->big.map, self->big.size);
	self->big.map = NULL;
	ASSERT_EQ(0, tsr_ioctl(self->fd, DRM_IOCTL_GEM_CLOSE, &gc));
	ASSERT_EQ(0, memory_pressure());
	EXPECT_EQ(purged, tsr_fd_sysfs(self->fd, "purged_buffers"));
	EXPECT_EQ(0, map_first_byte(other, &imported,
				    mmap_offset(other, imported.handle), &first));
	EXPECT_EQ(0x5a, first);
	close(dmabuf);
	close(other);
}

/* sysfs counts purged buffers and their bytes; a kept buffer counts nothing. */
TEST_F(purge, a_purge_is_counted_in_sysfs)
{
	long long bufs = tsr_fd_sysfs(self->fd, "purged_buffers");
	long long bytes = tsr_fd_sysfs(self->fd, "purged_bytes");

	ASSERT_LE(0, bufs);
	ASSERT_LE(0, bytes);
	ASSERT_EQ(0, memory_pressure());
	EXPECT_EQ(bufs, tsr_fd_sysfs(self->fd, "purged_buffers"));
	EXPECT_EQ(bytes, tsr_fd_sysfs(self->fd, "purged_bytes"));
	ASSERT_EQ(0, retained_after_pressure(self->fd, self->big.handle));
	EXPECT_EQ(bufs + 1, tsr_fd_sysfs(self->fd, "purged_buffers"));
	EXPECT_EQ(bytes + 4 * MIB, tsr_fd_sysfs(self->fd, "purged_bytes"));
}

TEST_F(purge, a_purged_buffer_raises_sigbus_through_its_cpu_mapping)
{
	volatile uint8_t *p = self->big.map;
	int status;
	pid_t pid;

	p[0] = 1;
	ASSERT_EQ(0, retained_after_pressure(self->fd, self->big.handle));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		(void)p[4096];
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFSIGNALED(status));
	EXPECT_EQ(SIGBUS, WTERMSIG(status));
}

TEST_F(purge, a_dontneed_buffer_a_waiting_job_uses_is_not_purged)
{
	struct drm_tessera_job_status st;
	const struct tsr_bo *bos[] = { &self->host, &self->big };
	uint64_t *sem = self->host.map, seq;
	uint32_t retained = 7;

	memset(self->big.map, 0x5a, self->big.size);
	munmap(self->big.map, self->big.size);
	self->big.map = NULL;
	/* The job waits on a semaphore, then copies out of the buffer. */
	sem[0] = 0;
	tsr_emit_sem(&self->c, TSR_OP_SEM_WAIT, self->host.va, 1);
	tsr_emit_copy(&self->c, self->big.va + 8192, self->host.va + 64, 64);
	drmSyncobjReset(self->fd, &self->sync, 1);
	ASSERT_EQ(0, tsr_submit(self->fd, &self->c, 0, bos, 2, self->sync, &seq));
	EXPECT_EQ(-ETIME, tsr_wait(self->fd, self->sync, 100 * 1000 * 1000ull));
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_DONTNEED, NULL));
	ASSERT_EQ(0, memory_pressure());
	__atomic_store_n(&sem[0], 1, __ATOMIC_SEQ_CST);
	ASSERT_EQ(0, tsr_wait(self->fd, self->sync, TSR_TEST_WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x5a, ((uint8_t *)self->host.map)[64 + 63]);
	ASSERT_EQ(0, madvise_bo(self->fd, self->big.handle,
				DRM_TESSERA_MADV_WILLNEED, &retained));
	EXPECT_EQ(1, retained);
}

TEST_F(purge, a_job_using_a_purged_buffer_faults_alone_and_the_next_runs)
{
	struct drm_tessera_job_status st;

	munmap(self->big.map, self->big.size);
	self->big.map = NULL;
	ASSERT_EQ(0, retained_after_pressure(self->fd, self->big.handle));
	/* The job still lists it: accepted, and faults at its address. */
	tsr_emit_fill(&self->c, self->big.va + 4096, 1, 64);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_FAILED, st.state);
	EXPECT_EQ(TSR_ERR_MMU_UNMAPPED, st.error);
	EXPECT_EQ(-EFAULT, st.fence_error);
	EXPECT_EQ(self->big.va + 4096, st.fault_va);
	tsr_emit_fill(&self->c, self->host.va, 0x33333333, 64);
	ASSERT_EQ(0, run(self, &st));
	EXPECT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	EXPECT_EQ(0x33, ((uint8_t *)self->host.map)[63]);
}

/*
 * As user 65534 with an RLIMIT_MEMLOCK of 12 MiB: an 8 MiB buffer, mapped
 * and touched, marked DONTNEED and purged.  Its mapping still holds the
 * pages, so the charge stays: a second 8 MiB buffer is refused until the
 * first is unmapped and freed.  Exit status: 0, or the step that failed.
 */
static void purge_mapped_as_user(int fd)
{
	struct rlimit rl = { 12 * MIB, 12 * MIB };
	struct tsr_bo a, b;
	uint32_t retained = 7;

	if (setrlimit(RLIMIT_MEMLOCK, &rl) || setresuid(65534, 65534, 0))
		_exit(1);
	if (tsr_bo_create(fd, 8 * MIB, 0, &a))
		_exit(2);
	memset(a.map, 0x5a, a.size);
	if (madvise_bo(fd, a.handle, DRM_TESSERA_MADV_DONTNEED, NULL) ||
	    seteuid(0) || memory_pressure() || seteuid(65534) ||
	    madvise_bo(fd, a.handle, DRM_TESSERA_MADV_WILLNEED, &retained))
		_exit(3);
	if (retained)
		_exit(4);		/* not purged: nothing to check */
	if (tsr_bo_create(fd, 8 * MIB, 0, &b) != -ENOMEM)
		_exit(5);		/* the purge gave back a charge still held */
	munmap(a.map, a.size);
	tsr_bo_destroy(fd, &a);
	if (tsr_bo_create(fd, 8 * MIB, 0, &b))
		_exit(6);		/* freeing gave nothing back */
	_exit(0);
}

TEST_F(purge, a_purged_buffer_still_mapped_keeps_its_charge_until_freed)
{
	int status;
	pid_t child = fork();

	ASSERT_LE(0, child);
	if (!child)
		purge_mapped_as_user(self->fd);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
