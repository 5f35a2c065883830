// SPDX-License-Identifier: GPL-2.0
/*
 * Taking the driver away under its users: unbinding a chip with files
 * open and jobs in flight, and unloading the module.  Runs last in the VM
 * (run-tests goes in name order) because it unbinds and reloads the driver.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#define MODULE_PATH "/lib/modules/tessera/tessera.ko"

TEST(unbind_with_jobs_in_flight_fails_them_and_later_ioctls)
{
	struct tsr_info info;
	struct tsr_cmds c = { 0 };
	struct tsr_bo sem;
	const struct tsr_bo *bos[] = { &sem };
	struct pollfd p;
	char pci[32];
	uint32_t sync;
	int fd, fence;

	/* The second chip: the first one keeps serving meanwhile. */
	ASSERT_EQ(0, tsr_pci_address(1, pci, sizeof(pci)));
	fd = tsr_open(1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tsr_bo_create(fd, 4096, 0, &c.bo));
	ASSERT_EQ(0, tsr_bo_create(fd, 4096, DRM_TESSERA_BO_HBM, &sem));
	sync = tsr_syncobj(fd);
	/* A job that waits for a semaphore nobody will set. */
	tsr_emit_sem(&c, TSR_OP_SEM_WAIT, sem.va, 1);
	ASSERT_EQ(0, tsr_submit(fd, &c, 0, bos, 1, sync, NULL));
	ASSERT_EQ(0, drmSyncobjExportSyncFile(fd, sync, &fence));
	p = (struct pollfd){ .fd = fence, .events = POLLIN };
	EXPECT_EQ(0, poll(&p, 1, 100));

	ASSERT_EQ(0, tsr_write_file(TSR_DRIVER_DIR "/unbind", pci));

	/* The job ended with the device. */
	EXPECT_EQ(1, poll(&p, 1, 10000));
	EXPECT_EQ(-ENODEV, tsr_info(fd, &info));
	EXPECT_EQ(-ENODEV, tsr_submit(fd, &c, 0, bos, 1, 0, NULL));
	close(fence);
	munmap(sem.map, sem.size);
	munmap(c.bo.map, c.bo.size);
	close(fd);

	/* Bound again, the chip serves a new file. */
	ASSERT_EQ(0, tsr_write_file(TSR_DRIVER_DIR "/bind", pci));
	fd = tsr_open(1);
	ASSERT_LE(0, fd);
	c.len = 0;
	ASSERT_EQ(0, tsr_bo_create(fd, 4096, 0, &c.bo));
	tsr_emit_nop(&c);
	sync = tsr_syncobj(fd);
	ASSERT_EQ(0, tsr_submit(fd, &c, 0, NULL, 0, sync, NULL));
	EXPECT_EQ(0, tsr_wait(fd, sync, TSR_TEST_WAIT_NS));
	close(fd);
}

/*
 * The window table is the bound device's DMA memory and goes at unbind: a
 * window still open then closes with its file, without the table.  (The
 * debug kernel's KASAN and DMA-API checks watch this path.)
 */
TEST(unbind_with_a_window_open_then_close_the_file)
{
	struct drm_tessera_window_open wo = {
		.flags = DRM_TESSERA_WINDOW_WRITE, .size = 4096,
	};
	struct drm_tessera_window_close wc = { 0 };
	struct tsr_bo bo;
	char pci[32];
	int fd;

	ASSERT_EQ(0, tsr_pci_address(1, pci, sizeof(pci)));
	fd = tsr_open(1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tsr_bo_create(fd, 8192, 0, &bo));
	wo.handle = bo.handle;
	ASSERT_EQ(0, tsr_ioctl(fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo));

	ASSERT_EQ(0, tsr_write_file(TSR_DRIVER_DIR "/unbind", pci));
	wc.id = wo.id;
	EXPECT_EQ(-ENODEV, tsr_ioctl(fd, DRM_IOCTL_TESSERA_WINDOW_CLOSE, &wc));
	munmap(bo.map, bo.size);
	close(fd);

	/* Bound again, the chip has every window free. */
	ASSERT_EQ(0, tsr_write_file(TSR_DRIVER_DIR "/bind", pci));
	fd = tsr_open(1);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, tsr_bo_create(fd, 8192, 0, &bo));
	wo.handle = bo.handle;
	wo.id = 0;
	ASSERT_EQ(0, tsr_ioctl(fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo));
	EXPECT_EQ(0, wo.id);
	close(fd);
}

/* PING_COUNT from chip @pci's debugfs registers, or -1. */
static long long ping_count(const char *pci)
{
	char path[128], name[64];
	unsigned int reg, val;
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/registers", pci);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s 0x%x 0x%x", name, &reg, &val) == 3)
		if (!strcmp(name, "PING_COUNT"))
			v = val;
	fclose(f);
	return v;
}

/*
 * A ping waits as long as user space asks (up to a minute); an unbind
 * meanwhile neither waits for it nor leaves it waiting.
 */
TEST(unbind_does_not_wait_for_a_ping)
{
	uint64_t t0, unbind_ms;
	long long pings;
	int fd, status;
	char pci[32];
	pid_t pinger;

	ASSERT_EQ(0, tsr_pci_address(1, pci, sizeof(pci)));
	fd = tsr_open(1);
	ASSERT_LE(0, fd);
	pings = ping_count(pci);
	ASSERT_LE(0, pings);
	/* The chip answers, but the answer's interrupt is lost. */
	ASSERT_EQ(0, tsr_debugfs_write(pci, "fault_drop_irqs", 1));
	pinger = fork();
	ASSERT_LE(0, pinger);
	/* The pinger's exit status is the errno its ping ended with. */
	if (!pinger)
		_exit(-tsr_ping(fd, 0x600d, 60000, NULL, NULL));
	/* The chip has seen the ping: the pinger is waiting for its answer. */
	t0 = tsr_now_ns();
	while (ping_count(pci) == pings) {
		ASSERT_EQ(0, waitpid(pinger, &status, WNOHANG)) {
			TH_LOG("the ping ended before it reached the chip: %s",
			       strerror(WEXITSTATUS(status)));
		}
		ASSERT_GT(5000000000ull, tsr_now_ns() - t0) {
			TH_LOG("the chip has not seen the ping in 5 s");
			kill(pinger, SIGKILL);
		}
		sched_yield();
	}

	t0 = tsr_now_ns();
	ASSERT_EQ(0, tsr_write_file(TSR_DRIVER_DIR "/unbind", pci));
	unbind_ms = (tsr_now_ns() - t0) / 1000000;
	ASSERT_EQ(pinger, waitpid(pinger, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(ENODEV, WEXITSTATUS(status));
	EXPECT_GT(5000, unbind_ms);
	close(fd);
	ASSERT_EQ(0, tsr_write_file(TSR_DRIVER_DIR "/bind", pci));
}

struct stuck_submit {
	int fd;
	struct drm_tessera_submit args;
	int ret;
	char pci[32];
};

static void *submit_thread(void *arg)
{
	struct stuck_submit *s = arg;

	s->ret = tsr_ioctl(s->fd, DRM_IOCTL_TESSERA_SUBMIT, &s->args);
	return NULL;
}

static void *unbind_thread(void *arg)
{
	struct stuck_submit *s = arg;

	s->ret = tsr_write_file(TSR_DRIVER_DIR "/unbind", s->pci);
	return NULL;
}

/*
 * SUBMIT copies its arrays in before it enters the device: a copy stuck on
 * a page fault, which user space serves through userfaultfd as late as it
 * likes, does not hold off an unbind.
 */
TEST(unbind_does_not_wait_for_a_submit_stuck_copying_its_arrays)
{
	struct uffdio_api api = { .api = UFFD_API };
	long page = sysconf(_SC_PAGESIZE);
	struct stuck_submit sub = { 0 }, unb = { 0 };
	struct drm_tessera_submit_bo *entry;
	struct uffdio_register reg;
	struct uffdio_copy copy;
	struct tsr_cmds c = { 0 };
	struct timespec deadline;
	struct uffd_msg msg;
	pthread_t ts, tu;
	struct pollfd p;
	void *area, *src;
	int uffd, joined;

	ASSERT_EQ(0, tsr_pci_address(1, sub.pci, sizeof(sub.pci)));
	memcpy(unb.pci, sub.pci, sizeof(unb.pci));
	sub.fd = tsr_open(1);
	ASSERT_LE(0, sub.fd);
	ASSERT_EQ(0, tsr_bo_create(sub.fd, 4096, 0, &c.bo));
	tsr_emit_nop(&c);

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0)
		SKIP(return, "no userfaultfd: %s", strerror(errno));
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	area = mmap(NULL, page, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, area);
	reg = (struct uffdio_register){
		.range = { .start = (uintptr_t)area, .len = page },
		.mode = UFFDIO_REGISTER_MODE_MISSING,
	};
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));

	/* The buffer list lies in the page nobody has served yet. */
	sub.args = (struct drm_tessera_submit){
		.cmdbuf_handle = c.bo.handle, .cmdbuf_size = c.len,
		.bo_count = 1, .bos = (uintptr_t)area,
		.bo_stride = sizeof(struct drm_tessera_submit_bo),
	};
	ASSERT_EQ(0, pthread_create(&ts, NULL, submit_thread, &sub));
	p = (struct pollfd){ .fd = uffd, .events = POLLIN };
	ASSERT_EQ(1, poll(&p, 1, 10000));
	ASSERT_EQ(sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);

	/* SUBMIT waits on the fault; the unbind must not wait for it. */
	ASSERT_EQ(0, pthread_create(&tu, NULL, unbind_thread, &unb));
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 5;
	joined = pthread_timedjoin_np(tu, NULL, &deadline);
	EXPECT_EQ(0, joined);

	/* Serve the fault: SUBMIT goes on and finds the device gone. */
	src = mmap(NULL, page, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, src);
	entry = src;
	entry->handle = c.bo.handle;
	entry->flags = DRM_TESSERA_BO_READ;
	copy = (struct uffdio_copy){
		.dst = (uintptr_t)area, .src = (uintptr_t)src, .len = page,
	};
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_COPY, &copy));
	pthread_join(ts, NULL);
	EXPECT_EQ(-ENODEV, sub.ret);
	if (joined)
		pthread_join(tu, NULL);
	EXPECT_EQ(0, unb.ret);

	close(uffd);
	close(sub.fd);
	ASSERT_EQ(0, tsr_write_file(TSR_DRIVER_DIR "/bind", sub.pci));
}

TEST(unload_is_refused_while_a_file_is_open_and_works_after)
{
	char params[] = "job_timeout_ms=2000";
	struct tsr_info info;
	int fd = tsr_open(0), ko;

	ASSERT_LE(0, fd);
	EXPECT_EQ(-1, syscall(SYS_delete_module, "tessera", O_NONBLOCK));
	EXPECT_EQ(EWOULDBLOCK, errno);
	/* Still working. */
	EXPECT_EQ(0, tsr_info(fd, &info));
	close(fd);

	ASSERT_EQ(0, syscall(SYS_delete_module, "tessera", O_NONBLOCK));
	EXPECT_NE(0, access("/dev/accel/accel0", F_OK));
	ko = open(MODULE_PATH, O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, ko);
	ASSERT_EQ(0, syscall(SYS_finit_module, ko, params, 0));
	close(ko);
	fd = tsr_open(0);
	ASSERT_LE(0, fd);
	EXPECT_EQ(0, tsr_info(fd, &info));
	close(fd);
}

TEST_HARNESS_MAIN
