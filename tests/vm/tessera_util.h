/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the in-VM driver tests: raw ioctls on the accel node,
 * buffer objects, command buffers built from the chip's command structs,
 * syncobjs, and the driver's sysfs and debugfs files.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_UTIL_H
#define TESSERA_UTIL_H

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <linux/netlink.h>

#include <xf86drm.h>
#include <drm/tessera_accel.h>
#include <tessera/chip.h>

/* Longest a test waits for a job: several job timeouts. */
#define TSR_TEST_WAIT_NS	(30ull * 1000 * 1000 * 1000)

/* ioctl() that returns -errno. */
static inline int tsr_ioctl(int fd, unsigned long req, void *arg)
{
	return drmIoctl(fd, req, arg) ? -errno : 0;
}

static inline int tsr_open(unsigned int minor)
{
	char path[64];

	snprintf(path, sizeof(path), "/dev/accel/accel%u", minor);
	return open(path, O_RDWR | O_CLOEXEC);
}

static inline int tsr_info(int fd, struct drm_tessera_info *info)
{
	memset(info, 0, sizeof(*info));
	return tsr_ioctl(fd, DRM_IOCTL_TESSERA_GET_INFO, info);
}

/* PCI address of accel node @minor, e.g. "0000:00:01.0". */
static inline int tsr_pci_address(unsigned int minor, char *out, size_t len)
{
	char path[64], target[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/sys/class/accel/accel%u/device", minor);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -errno;
	target[n] = 0;
	snprintf(out, len, "%s", basename(target));
	return 0;
}

/* A buffer object with its CPU mapping. */
struct tsr_bo {
	uint32_t handle;
	uint64_t size;
	uint64_t va;
	uint32_t placement;
	void *map;
};

static inline int tsr_bo_create(int fd, uint64_t size, uint32_t flags,
				struct tsr_bo *bo)
{
	struct drm_tessera_bo_create create = { .size = size, .flags = flags };
	struct drm_tessera_bo_info info = { 0 };
	int ret;

	memset(bo, 0, sizeof(*bo));
	ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_BO_CREATE, &create);
	if (ret)
		return ret;
	info.handle = create.handle;
	ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_BO_INFO, &info);
	if (ret)
		return ret;
	bo->handle = create.handle;
	bo->size = info.size;
	bo->va = info.device_va;
	bo->placement = info.placement;
	bo->map = mmap(NULL, info.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		       info.mmap_offset);
	if (bo->map == MAP_FAILED) {
		bo->map = NULL;
		return -errno;
	}
	return 0;
}

static inline void tsr_bo_destroy(int fd, struct tsr_bo *bo)
{
	struct drm_gem_close close = { .handle = bo->handle };

	if (bo->map)
		munmap(bo->map, bo->size);
	drmIoctl(fd, DRM_IOCTL_GEM_CLOSE, &close);
	memset(bo, 0, sizeof(*bo));
}

/* A command buffer being written into a buffer object. */
struct tsr_cmds {
	struct tsr_bo bo;
	size_t len;
};

static inline void tsr_emit(struct tsr_cmds *c, const void *cmd, size_t size)
{
	if (c->len + size > c->bo.size)
		abort();
	memcpy((uint8_t *)c->bo.map + c->len, cmd, size);
	c->len += size;
}

static inline struct tsr_cmd_header tsr_hdr(uint8_t op, size_t size)
{
	return (struct tsr_cmd_header){ .opcode = op, .size_qw = size / 8 };
}

static inline void tsr_emit_nop(struct tsr_cmds *c)
{
	struct tsr_cmd_header h = tsr_hdr(TSR_OP_NOP, sizeof(h));

	tsr_emit(c, &h, sizeof(h));
}

static inline void tsr_emit_fill(struct tsr_cmds *c, uint64_t dst,
				 uint32_t pattern, uint32_t bytes)
{
	struct tsr_cmd_dma d = {
		.hdr = tsr_hdr(TSR_OP_DMA_FILL, sizeof(d)),
		.src = pattern, .dst = dst, .size = { bytes, 1, 1 },
	};

	tsr_emit(c, &d, sizeof(d));
}

static inline void tsr_emit_copy(struct tsr_cmds *c, uint64_t src,
				 uint64_t dst, uint32_t bytes)
{
	struct tsr_cmd_dma d = {
		.hdr = tsr_hdr(TSR_OP_DMA_COPY, sizeof(d)),
		.src = src, .dst = dst, .size = { bytes, 1, 1 },
	};

	tsr_emit(c, &d, sizeof(d));
}

static inline void tsr_emit_sem(struct tsr_cmds *c, uint8_t op, uint64_t va,
				uint64_t value)
{
	struct tsr_cmd_sem s = {
		.hdr = tsr_hdr(op, sizeof(s)), .va = va, .value = value,
	};

	tsr_emit(c, &s, sizeof(s));
}

/*
 * ICI_WRITE of @rows rows of @row_bytes to window @window of chip @dst,
 * rows @stride apart at both ends; then, if @sem >= 0, add 1 to the
 * semaphore at offset @sem of the window.
 */
static inline void tsr_emit_ici_write(struct tsr_cmds *c, const uint8_t dst[3],
				      uint32_t window, uint64_t key,
				      uint64_t src, uint64_t offset,
				      uint32_t rows, uint32_t row_bytes,
				      uint64_t stride, int64_t sem)
{
	struct tsr_cmd_ici_write w = {
		.hdr = tsr_hdr(TSR_OP_ICI_WRITE, sizeof(w)),
		.dst = { dst[0], dst[1], dst[2] },
		.window = window, .key = key, .src = src, .src_stride = stride,
		.offset = offset, .dst_stride = stride, .rows = rows,
		.row_bytes = row_bytes,
	};

	if (sem >= 0) {
		w.hdr.flags = TSR_ICI_WRITE_SEM;
		w.sem_offset = sem;
		w.sem_add = 1;
	}
	tsr_emit(c, &w, sizeof(w));
}

/* The coordinates of chip @index of @info's slice, x + X * (y + Y * z). */
static inline void tsr_index_coords(const struct drm_tessera_info *info,
				    unsigned int index, uint8_t c[3])
{
	c[0] = index % info->topology[0];
	c[1] = index / info->topology[0] % info->topology[1];
	c[2] = index / (info->topology[0] * info->topology[1]);
}

/* Submit @c on @queue using @bos (all read-write); returns -errno. */
static inline int tsr_submit(int fd, struct tsr_cmds *c, uint32_t queue,
			     const struct tsr_bo *const *bos, unsigned int nbos,
			     uint32_t out_sync, uint64_t *seq)
{
	struct drm_tessera_submit_bo list[16];
	struct drm_tessera_submit s = {
		.queue = queue,
		.cmdbuf_handle = c->bo.handle,
		.cmdbuf_size = c->len,
		.bo_count = nbos,
		.bos = (uintptr_t)list,
	};
	unsigned int i;
	int ret;

	for (i = 0; i < nbos && i < 16; i++)
		list[i] = (struct drm_tessera_submit_bo){
			.handle = bos[i]->handle,
			.flags = DRM_TESSERA_BO_READ | DRM_TESSERA_BO_WRITE,
		};
	if (out_sync) {
		s.flags = DRM_TESSERA_SUBMIT_OUT_SYNC;
		s.out_sync.handle = out_sync;
	}
	ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &s);
	if (!ret && seq)
		*seq = s.seq;
	return ret;
}

static inline uint64_t tsr_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static inline int tsr_syncobj(int fd)
{
	uint32_t handle;

	return drmSyncobjCreate(fd, 0, &handle) ? -errno : (int)handle;
}

/* Wait for a binary syncobj to signal; -ETIME after @timeout_ns. */
static inline int tsr_wait(int fd, uint32_t syncobj, uint64_t timeout_ns)
{
	return drmSyncobjWait(fd, &syncobj, 1, tsr_now_ns() + timeout_ns,
			      DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL) ?
		-errno : 0;
}

static inline int tsr_job_status(int fd, uint64_t seq,
				 struct drm_tessera_job_status *st)
{
	memset(st, 0, sizeof(*st));
	st->seq = seq;
	return tsr_ioctl(fd, DRM_IOCTL_TESSERA_JOB_STATUS, st);
}

static inline int tsr_counters(int fd, struct drm_tessera_counters *c)
{
	memset(c, 0, sizeof(*c));
	return tsr_ioctl(fd, DRM_IOCTL_TESSERA_GET_COUNTERS, c);
}

#ifdef __KSELFTEST_HARNESS_H
/*
 * End the running test as skipped, saying @why.  Each test runs in a child
 * of the harness, and the running one is the only test whose results are
 * set: its reason is what the TAP line's SKIP gives.
 */
static inline void tsr_skip_test(const char *why)
{
	struct __fixture_metadata *f;
	struct __test_metadata *t;

	for (f = __fixture_list; f; f = f->next)
		for (t = f->tests; t; t = t->next)
			if (t->results)
				snprintf(t->results->reason,
					 sizeof(t->results->reason), "%s", why);
	ksft_print_msg("SKIP: %s\n", why);
	_exit(KSFT_SKIP);
}
#endif

/*
 * Write @value to the debugfs file @name of device @pci.  The fault files
 * exist only on a chip with debug-regs=on: in a test, their absence skips
 * the test with that reason rather than failing it.
 */
static inline int tsr_debugfs_write(const char *pci, const char *name,
				    unsigned long long value)
{
	char path[128], text[32];
	int fd, n, ret = 0;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/%s", pci, name);
	fd = open(path, O_WRONLY);
	if (fd < 0) {
		ret = -errno;
#ifdef __KSELFTEST_HARNESS_H
		*strrchr(path, '/') = '\0';
		if (ret == -ENOENT && !strncmp(name, "fault_", 6) &&
		    !access(path, F_OK))
			tsr_skip_test("needs fault injection: boot the chip with "
				      "debug-regs=on (tessera-vm -d debug-regs=on)");
#endif
		return ret;
	}
	n = snprintf(text, sizeof(text), "%llu\n", value);
	if (write(fd, text, n) != n)
		ret = -errno;
	close(fd);
	return ret;
}

/* The driver's sysfs directory: bind and unbind. */
#define TSR_DRIVER_DIR "/sys/bus/pci/drivers/tessera"

/* Write @text to the (sysfs) file @path whole; 0 or -errno. */
static inline int tsr_write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -errno;
}

/* Read the sysfs counter @name of device @pci, or -1. */
static inline long long tsr_sysfs_counter(const char *pci, const char *name)
{
	char path[128];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/tessera/%s", pci,
		 name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* A socket on the kernel's uevents, or -errno. */
static inline int tsr_uevent_socket(void)
{
	struct sockaddr_nl addr = { .nl_family = AF_NETLINK, .nl_groups = 1 };
	int s = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
		       NETLINK_KOBJECT_UEVENT);

	if (s >= 0 && bind(s, (struct sockaddr *)&addr, sizeof(addr))) {
		close(s);
		s = -1;
	}
	return s < 0 ? -errno : s;
}

/* Wait for a uevent with field @key and, if not NULL, field @key2. */
static inline int tsr_uevent_wait(int s, const char *key, const char *key2,
				  int timeout_ms)
{
	uint64_t end = tsr_now_ns() + timeout_ms * 1000000ull;
	char buf[4096];

	while (tsr_now_ns() < end) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		bool seen = false, seen2 = !key2;
		ssize_t n, off;

		if (poll(&p, 1, (end - tsr_now_ns()) / 1000000 + 1) != 1)
			continue;
		n = recv(s, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = 0;
		for (off = 0; off < n; off += strlen(buf + off) + 1) {
			seen |= !strcmp(buf + off, key);
			seen2 |= key2 && !strcmp(buf + off, key2);
		}
		if (seen && seen2)
			return 0;
	}
	return -ETIME;
}

#endif /* TESSERA_UTIL_H */
