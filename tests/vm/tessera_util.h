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
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <linux/netlink.h>

#include <xf86drm.h>
#include <drm/tessera_accel.h>
#include <tessera/chip.h>

/* The harness's kselftest.h has it; the benchmarks include this alone. */
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

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

static inline int tsr_param(int fd, uint32_t param, uint32_t index,
			    uint64_t *value)
{
	struct drm_tessera_get_param gp = { .param = param, .index = index };
	int ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_GET_PARAM, &gp);

	*value = ret ? 0 : gp.value;
	return ret;
}

/* What GET_PARAM and LINK_INFO tell of a chip, gathered for the tests. */
struct tsr_info {
	uint32_t chip_id, device_version, caps, preset;
	uint32_t tensorcores, mxus_per_core, mxu_dim, vpu_sublanes, vpu_lanes;
	uint32_t vmem_mib, clock_mhz, hbm_gbps, host_dma_gbps;
	uint32_t num_queues, max_contexts, context_id;
	uint64_t hbm_size;
	uint32_t ici_ports, ici_link_gbps, ici_link_latency_ns;
	uint32_t slice_id, slice_chips, slice_index, wrap, ports_wired;
	uint32_t max_windows;
	uint32_t topology[3], coords[3];
	uint32_t sparsecores, sc_tiles, sc_simd_f32, sc_simd_bf16, sc_spmem_kib;
	struct drm_tessera_port ports[DRM_TESSERA_MAX_PORTS];
};

#define TSR_PARAM_FIELD(name, field) \
	{ DRM_TESSERA_PARAM_##name, offsetof(struct tsr_info, field), \
	  sizeof(((struct tsr_info *)0)->field) }

static const struct {
	uint32_t param;
	size_t offset, size;
} tsr_info_params[] = {
	TSR_PARAM_FIELD(CHIP_ID, chip_id),
	TSR_PARAM_FIELD(DEVICE_VERSION, device_version),
	TSR_PARAM_FIELD(CAPS, caps),
	TSR_PARAM_FIELD(PRESET, preset),
	TSR_PARAM_FIELD(TENSORCORES, tensorcores),
	TSR_PARAM_FIELD(MXUS_PER_CORE, mxus_per_core),
	TSR_PARAM_FIELD(MXU_DIM, mxu_dim),
	TSR_PARAM_FIELD(VPU_SUBLANES, vpu_sublanes),
	TSR_PARAM_FIELD(VPU_LANES, vpu_lanes),
	TSR_PARAM_FIELD(VMEM_MIB, vmem_mib),
	TSR_PARAM_FIELD(CLOCK_MHZ, clock_mhz),
	TSR_PARAM_FIELD(HBM_GBPS, hbm_gbps),
	TSR_PARAM_FIELD(HOST_DMA_GBPS, host_dma_gbps),
	TSR_PARAM_FIELD(NUM_QUEUES, num_queues),
	TSR_PARAM_FIELD(MAX_CONTEXTS, max_contexts),
	TSR_PARAM_FIELD(HBM_SIZE, hbm_size),
	TSR_PARAM_FIELD(CONTEXT_ID, context_id),
	TSR_PARAM_FIELD(ICI_PORTS, ici_ports),
	TSR_PARAM_FIELD(ICI_LINK_GBPS, ici_link_gbps),
	TSR_PARAM_FIELD(ICI_LINK_LATENCY_NS, ici_link_latency_ns),
	TSR_PARAM_FIELD(SLICE_ID, slice_id),
	TSR_PARAM_FIELD(SLICE_CHIPS, slice_chips),
	TSR_PARAM_FIELD(SLICE_INDEX, slice_index),
	TSR_PARAM_FIELD(WRAP, wrap),
	TSR_PARAM_FIELD(PORTS_WIRED, ports_wired),
	TSR_PARAM_FIELD(MAX_WINDOWS, max_windows),
	TSR_PARAM_FIELD(SPARSECORES, sparsecores),
	TSR_PARAM_FIELD(SC_TILES, sc_tiles),
	TSR_PARAM_FIELD(SC_SIMD_F32, sc_simd_f32),
	TSR_PARAM_FIELD(SC_SIMD_BF16, sc_simd_bf16),
	TSR_PARAM_FIELD(SC_SPMEM_KIB, sc_spmem_kib),
};

/* Every parameter, the dimensions, and each port's LINK_INFO; -errno. */
static inline int tsr_info(int fd, struct tsr_info *info)
{
	uint64_t v;
	unsigned int i;
	int ret;

	memset(info, 0, sizeof(*info));
	for (i = 0; i < ARRAY_SIZE(tsr_info_params); i++) {
		uint32_t v32;

		ret = tsr_param(fd, tsr_info_params[i].param, 0, &v);
		if (ret)
			return ret;
		v32 = (uint32_t)v;
		memcpy((char *)info + tsr_info_params[i].offset,
		       tsr_info_params[i].size == 4 ? (void *)&v32 : &v,
		       tsr_info_params[i].size);
	}
	for (i = 0; i < 3; i++) {
		ret = tsr_param(fd, DRM_TESSERA_PARAM_TOPOLOGY, i, &v);
		info->topology[i] = (uint32_t)v;
		if (!ret)
			ret = tsr_param(fd, DRM_TESSERA_PARAM_COORDS, i, &v);
		info->coords[i] = (uint32_t)v;
		if (ret)
			return ret;
	}
	for (i = 0; i < info->ici_ports && i < DRM_TESSERA_MAX_PORTS; i++) {
		struct drm_tessera_link_info li = { .port = i };

		ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_LINK_INFO, &li);
		if (ret)
			return ret;
		info->ports[i] = li.info;
	}
	return 0;
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
static inline void tsr_index_coords(const struct tsr_info *info,
				    unsigned int index, uint8_t c[3])
{
	c[0] = index % info->topology[0];
	c[1] = index / info->topology[0] % info->topology[1];
	c[2] = index / (info->topology[0] * info->topology[1]);
}

/* An out-sync: the syncobj @handle (at @point of a timeline) gets the job's fence. */
#define TSR_SIGNAL(handle, point) \
	((struct drm_tessera_sync){ (handle), DRM_TESSERA_SYNC_SIGNAL, (point) })

/* Point SUBMIT @s at @n buffer entries. */
static inline void tsr_submit_bos(struct drm_tessera_submit *s,
				  const struct drm_tessera_submit_bo *bos,
				  unsigned int n)
{
	s->bo_count = n;
	s->bos = (uintptr_t)bos;
	s->bo_stride = sizeof(*bos);
}

/* Point SUBMIT @s at @n syncs, in- and out-syncs (TSR_SIGNAL()) mixed. */
static inline void tsr_submit_syncs(struct drm_tessera_submit *s,
				    const struct drm_tessera_sync *syncs,
				    unsigned int n)
{
	s->sync_count = n;
	s->syncs = (uintptr_t)syncs;
	s->sync_stride = sizeof(*syncs);
}

/*
 * Submit @c on @queue using @bos (all read-write), with SUBMIT's @flags;
 * returns -errno.
 */
static inline int tsr_submit_flags(int fd, struct tsr_cmds *c, uint32_t queue,
				   const struct tsr_bo *const *bos,
				   unsigned int nbos, uint32_t out_sync,
				   uint32_t flags, uint64_t *seq)
{
	struct drm_tessera_submit_bo list[16];
	struct drm_tessera_sync out = TSR_SIGNAL(out_sync, 0);
	struct drm_tessera_submit s = {
		.flags = flags,
		.queue = queue,
		.cmdbuf_handle = c->bo.handle,
		.cmdbuf_size = c->len,
	};
	unsigned int i;
	int ret;

	for (i = 0; i < nbos && i < 16; i++)
		list[i] = (struct drm_tessera_submit_bo){
			.handle = bos[i]->handle,
			.flags = DRM_TESSERA_BO_READ | DRM_TESSERA_BO_WRITE,
		};
	tsr_submit_bos(&s, list, nbos);
	if (out_sync)
		tsr_submit_syncs(&s, &out, 1);
	ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &s);
	if (!ret && seq)
		*seq = s.seq;
	return ret;
}

/* Submit @c on @queue using @bos (all read-write); returns -errno. */
static inline int tsr_submit(int fd, struct tsr_cmds *c, uint32_t queue,
			     const struct tsr_bo *const *bos, unsigned int nbos,
			     uint32_t out_sync, uint64_t *seq)
{
	return tsr_submit_flags(fd, c, queue, bos, nbos, out_sync, 0, seq);
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

/*
 * The lifecycle and power tests' set-up on @fd: a command buffer @c, 64 KiB
 * of system memory @host and of HBM @hbm, a syncobj *@sync; -errno.
 */
static inline int tsr_make_two(int fd, struct tsr_cmds *c, struct tsr_bo *host,
			       struct tsr_bo *hbm, uint32_t *sync)
{
	int ret = tsr_bo_create(fd, 64 * 1024, 0, &c->bo) ?:
		  tsr_bo_create(fd, 64 * 1024, 0, host) ?:
		  tsr_bo_create(fd, 64 * 1024, DRM_TESSERA_BO_HBM, hbm) ?:
		  tsr_syncobj(fd);

	if (ret < 0)
		return ret;
	*sync = ret;
	return 0;
}

/*
 * Submit @c on queue 0 using @host and @hbm, its out-sync @sync reset
 * first, and empty @c; no wait (the lifecycle and power tests' jobs).
 */
static inline int tsr_submit_two(int fd, struct tsr_cmds *c,
				 const struct tsr_bo *host,
				 const struct tsr_bo *hbm, uint32_t sync,
				 uint64_t *seq)
{
	const struct tsr_bo *bos[] = { host, hbm };
	int ret;

	drmSyncobjReset(fd, &sync, 1);
	ret = tsr_submit(fd, c, 0, bos, 2, sync, seq);
	c->len = 0;
	return ret;
}

/* tsr_submit_two(), then wait for the job and read its status. */
static inline int tsr_run_two(int fd, struct tsr_cmds *c,
			      const struct tsr_bo *host,
			      const struct tsr_bo *hbm, uint32_t sync,
			      struct drm_tessera_job_status *st)
{
	uint64_t seq;
	int ret;

	ret = tsr_submit_two(fd, c, host, hbm, sync, &seq);
	if (!ret)
		ret = tsr_wait(fd, sync, TSR_TEST_WAIT_NS);
	return ret ?: tsr_job_status(fd, seq, st);
}

/*
 * Ping the chip behind @fd through its debugfs file "ping" (root only):
 * @cookie comes back in @echo through the device interrupt; -errno.
 */
static inline int tsr_ping(int fd, uint32_t cookie, unsigned int timeout_ms,
			   uint32_t *echo, uint64_t *latency_ns)
{
	char pci[32], path[96], buf[64];
	unsigned long long latency;
	unsigned int got;
	struct stat st;
	int pfd, len, ret = 0;
	ssize_t n;

	if (fstat(fd, &st) || tsr_pci_address(minor(st.st_rdev), pci, sizeof(pci)))
		return -ENODEV;
	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/ping", pci);
	pfd = open(path, O_RDWR | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	len = snprintf(buf, sizeof(buf), "%u %u", cookie, timeout_ms ? timeout_ms : 1000);
	if (write(pfd, buf, len) != len) {
		ret = -errno;
		goto out;
	}
	n = read(pfd, buf, sizeof(buf) - 1);
	if (n <= 0) {
		ret = n < 0 ? -errno : -EIO;
		goto out;
	}
	buf[n] = '\0';
	if (sscanf(buf, "%x %llu", &got, &latency) != 2) {
		ret = -EIO;
		goto out;
	}
	if (echo)
		*echo = got;
	if (latency_ns)
		*latency_ns = latency;
out:
	close(pfd);
	return ret;
}

/* The chip's and the driver's counters, from the device's sysfs. */
struct tsr_counters {
	uint64_t mxu_busy_cycles, vpu_busy_cycles, dma_busy_cycles;
	uint64_t sc_busy_cycles, chip_jobs, chip_commands;
	uint64_t hbm_read_bytes, hbm_write_bytes, clock_cycles;
	uint64_t jobs_submitted, jobs_completed, jobs_failed, mmu_faults;
	uint64_t ecc_correctable, ecc_uncorrectable, timeouts, lost_irqs;
	uint64_t queue_resets, device_resets, fatal_errors, banned_contexts;
	uint64_t remote_access_refused, link_downs, link_ups;
	uint64_t irq_count, hbm_free;
};

/* The sysfs file of each field of struct tsr_counters, in order. */
static const char *const tsr_counter_files[] = {
	"mxu_busy_cycles", "vpu_busy_cycles", "dma_busy_cycles",
	"sc_busy_cycles", "chip_jobs", "chip_commands",
	"hbm_read_bytes", "hbm_write_bytes", "clock_cycles",
	"jobs_submitted", "jobs_completed", "jobs_failed", "mmu_faults",
	"ecc_correctable", "ecc_uncorrectable", "timeouts", "lost_irqs",
	"queue_resets", "device_resets", "fatal_errors", "banned_contexts",
	"remote_access_refused", "link_downs", "link_ups",
	"irq_count", "hbm_free",
};

_Static_assert(ARRAY_SIZE(tsr_counter_files) ==
	       sizeof(struct tsr_counters) / sizeof(uint64_t),
	       "a sysfs file per counter");

/* The number file @path holds (a sysfs attribute, a parameter), or -1. */
static inline long long tsr_read_number(const char *path)
{
	long long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* The sysfs file tessera/@name of the chip behind @fd, or -1. */
static inline long long tsr_fd_sysfs(int fd, const char *name)
{
	char path[128];
	struct stat st;

	if (fstat(fd, &st))
		return -1;
	snprintf(path, sizeof(path), "/sys/class/accel/accel%u/device/tessera/%s",
		 minor(st.st_rdev), name);
	return tsr_read_number(path);
}

static inline int tsr_counters(int fd, struct tsr_counters *c)
{
	uint64_t *field = (uint64_t *)c;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(tsr_counter_files); i++) {
		long long v = tsr_fd_sysfs(fd, tsr_counter_files[i]);

		if (v < 0)
			return -EIO;
		field[i] = (uint64_t)v;
	}
	return 0;
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
			tsr_skip_test("needs fault injection: boot the chip with debug-regs=on (tessera-vm -d debug-regs=on)");
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

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/tessera/%s", pci,
		 name);
	return tsr_read_number(path);
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

/*
 * A value in the fdinfo of @fd ("drm-total-host:\t4 KiB"), sizes in bytes,
 * or -1.
 */
static inline long long tsr_fdinfo_bytes(int fd, const char *key)
{
	char path[64], line[256], unit[8];
	size_t n = strlen(key);
	long long v = -1, num;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, key, n) || line[n] != ':')
			continue;
		unit[0] = '\0';
		if (sscanf(line + n + 1, "%lld %7s", &num, unit) < 1)
			continue;
		v = num * (!strcmp(unit, "KiB") ? 1024 :
			   !strcmp(unit, "MiB") ? 1024 * 1024 : 1);
	}
	fclose(f);
	return v;
}

#endif /* TESSERA_UTIL_H */
