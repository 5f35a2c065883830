// SPDX-License-Identifier: GPL-2.0
/*
 * Ioctl fuzzer for the tessera driver, run on /dev/accel/accel0.
 *
 * Two files (and one on /dev/accel/accel1, for PRIME between chips, when
 * the VM has a second chip) get a bounded stream of random and mutated
 * calls: every driver ioctl, the GEM, PRIME and syncobj ioctls the driver
 * supports, mmap() of buffer objects and fdinfo.  The fuzzer keeps pools
 * of the handles it holds, builds each call valid from them, then often
 * mutates some fields with boundary values, random bits, stale handles,
 * bad pointers or another argument size.  Every result must be success or
 * an errno the call can return; a call built valid and left alone must
 * succeed, and what it returns must agree with what the fuzzer knows
 * (handles, addresses, sequence numbers, job states, counters).  Jobs run
 * real commands, some malformed or faulting, two hang until the driver's
 * timeout, and a few chip resets and injected failures come through the
 * driver's debugfs.  A second thread looks up the handles the first one
 * creates and closes.  Afterwards a fresh file must still run a job, and
 * the device must have accounted for every job.
 *
 * TESSERA_FUZZ_SEED picks the stream (printed; the kernel's timing makes a
 * replay close, not exact), TESSERA_FUZZ_CALLS its length (default 100000),
 * TESSERA_FUZZ_SECONDS a time after which it stops early (default 180 per
 * 100000 calls),
 * TESSERA_FUZZ_TRACE=1 prints every call.  The host catches oopses and
 * WARNs on the guest console; a crash of the fuzzing process is reported
 * with the calls that led to it.
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
#include <drm/tessera_chip.h>

#define ACCEL_NODE		"/dev/accel/accel0"
/* A second chip, when the VM has one: PRIME between devices. */
#define OTHER_NODE		"/dev/accel/accel1"
#define FUZZ_DEFAULT_CALLS	100000
/*
 * A backstop for a slow host: the run stops early rather than time out,
 * after this many seconds per 100000 calls (they take 35 s in the VM).
 */
#define FUZZ_SECONDS_PER_100K	180
#define FUZZ_PAGE		4096ull

#define FUZZ_FILES		3	/* two on ACCEL_NODE, one on OTHER_NODE */
#define FUZZ_BOS		24	/* buffer handles a file holds at most */
#define FUZZ_SYNCOBJS		12
#define FUZZ_DMABUFS		6
#define FUZZ_ZOMBIES		4	/* mappings kept past their handle */
#define FUZZ_STALE		4	/* recently closed handles */
/* Bytes of buffers a file holds, and the largest buffer that may succeed. */
#define FUZZ_BO_BUDGET		(16ull << 20)
#define FUZZ_BO_MAX		(TSR_LARGE_PAGE_SIZE + FUZZ_PAGE)
#define FUZZ_WAIT_HANDLES	6
#define FUZZ_MAX_ARG		176	/* largest ioctl argument recorded */
#define FUZZ_EXTRA		192
#define FUZZ_RECORDS		32	/* calls the flight recorder keeps */
#define FUZZ_MAX_REPORTS	20
#define FUZZ_HANGS		2	/* jobs left to hang until their timeout */

/* SEM_WAIT's header as a little-endian qword: the one command that blocks. */
#define SEM_WAIT_HEADER		(TSR_OP_SEM_WAIT | 3ull << 8)

/* ------------------------------------------------------------ randomness */

static __u64 splitmix64(__u64 *state)
{
	__u64 z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Values at the edges of the uapi's ranges, and plain edges. */
static const __u64 boundary_values[] = {
	0, 1, 2, 3, 4, 7, 8, 9, 0x10, 0x3f, 0x40, 0x7f, 0x80, 0xff, 0x100,
	0xfff, FUZZ_PAGE, FUZZ_PAGE + 1, 0x1ff8, 0xffff, 0x10000, 0xfffff,
	0x100000, 0x1ffff8, TSR_LARGE_PAGE_SIZE, TSR_LARGE_PAGE_SIZE + 8,
	0x1000000, 0x7fffffff, 0x80000000, 0xfffffff8, 0xfffffffe, 0xffffffff,
	0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
	0xfffffffffffff000ull, 0xfffffffffffffff8ull, 0xffffffffffffffffull,
	DRM_TESSERA_BO_MAX_SIZE - 1, DRM_TESSERA_BO_MAX_SIZE,
	DRM_TESSERA_BO_MAX_SIZE + 1, DRM_TESSERA_MAX_BOS,
	DRM_TESSERA_MAX_BOS + 1, DRM_TESSERA_MAX_SYNCS,
	DRM_TESSERA_MAX_SYNCS + 1, DRM_TESSERA_MAX_CMDBUF_SIZE,
	DRM_TESSERA_MAX_CMDBUF_SIZE + 8, DRM_TESSERA_JOB_HISTORY,
	DRM_TESSERA_JOB_HISTORY + 1, DRM_TESSERA_PING_MAX_TIMEOUT_MS,
	DRM_TESSERA_PING_MAX_TIMEOUT_MS + 1, TSR_MAX_QUEUES, TSR_MAX_CONTEXTS,
	TSR_MAX_DIM, TSR_MAX_TRANSFER, 1ull << TSR_VA_BITS,
	(1ull << TSR_VA_BITS) - FUZZ_PAGE,
};

/* ----------------------------------------------------------- the state */

/* What the fuzzer does: the ioctls, mmap() and the rest. */
enum fuzz_op {
	OP_GET_INFO,
	OP_PING,
	OP_BO_CREATE,
	OP_BO_INFO,
	OP_SUBMIT,
	OP_JOB_STATUS,
	OP_GET_COUNTERS,
	OP_GEM_CLOSE,
	OP_SYNCOBJ_CREATE,
	OP_SYNCOBJ_DESTROY,
	OP_SYNCOBJ_WAIT,
	OP_SYNCOBJ_TIMELINE_WAIT,
	OP_SYNCOBJ_RESET,
	OP_SYNCOBJ_SIGNAL,
	OP_SYNCOBJ_TIMELINE_SIGNAL,
	OP_SYNCOBJ_QUERY,
	OP_PRIME_HANDLE_TO_FD,
	OP_PRIME_FD_TO_HANDLE,
	OP_MMAP,
	OP_UNKNOWN_IOCTL,
	OP_FDINFO,
	OP_REOPEN,
	OP_CHAOS,
	OP_COUNT
};

struct fuzz_bo {
	__u32 handle;
	__u32 obj;		/* the fuzzer's name of the object */
	__u64 size;		/* page-rounded */
	__u64 mmap_offset;
	__u64 device_va;
	bool hbm;
	bool cmd;		/* holds command streams; no job writes it */
	void *map;		/* CPU mapping of a command buffer */
};

struct fuzz_syncobj {
	__u32 handle;
	bool fence;		/* holds a fence */
	bool timeline;		/* the fence is a timeline point */
	__u64 point;		/* the last timeline point added */
};

struct fuzz_file {
	const char *node;
	int fd;
	__u32 context_id;
	__u32 num_queues;
	__u64 hbm_size;
	struct fuzz_bo bo[FUZZ_BOS];
	unsigned int nbo;
	__u64 bo_bytes;
	struct fuzz_syncobj so[FUZZ_SYNCOBJS];
	unsigned int nso;
	__u32 stale[FUZZ_STALE];
	__u64 last_seq;
	__u8 seq_queue[DRM_TESSERA_JOB_HISTORY];
	bool banned;
	struct drm_tessera_counters counters;	/* last seen on the device */
};

struct fuzz_dmabuf {
	int fd;
	__u32 obj;
	__u64 size;
	bool cmd;
};

struct fuzz_mapping {
	void *addr;
	size_t len;
	int prot;
};

/* mmap() as the fuzzer records it. */
struct fuzz_mmap_args {
	__u64 offset;
	__u64 length;
	__u32 prot;
	__u32 flags;
	__u32 handle;
};

struct fuzz_stats {
	__u64 calls;
	__u64 ok;
	__u64 ns;
	__u64 max_ns;
	__u32 errnos[EHWPOISON + 1];
};

struct fuzz_record {
	__u32 call;
	__u8 op;
	__u8 file;
	__u8 done;
	__u8 arg_len;
	int err;
	unsigned long request;
	__u8 arg[FUZZ_MAX_ARG];
	char extra[FUZZ_EXTRA];
};

/*
 * Shared with the harness's parent, so that a later test can print the
 * calls that led to a crash of the fuzzing process.
 */
struct fuzz_recorder {
	__u64 seed;
	__u32 calls;
	bool started;
	bool finished;
	struct fuzz_record rec[FUZZ_RECORDS];
};

static struct fuzz_recorder *recorder;

struct fuzz {
	__u64 rng;
	__u32 call;
	__u64 start;		/* of the current call */
	struct fuzz_file file[FUZZ_FILES];
	unsigned int nfiles;
	struct fuzz_dmabuf dmabuf[FUZZ_DMABUFS];
	unsigned int ndmabuf;
	struct fuzz_mapping zombie[FUZZ_ZOMBIES];
	unsigned int nzombie;
	__u32 next_obj;
	int null_fd;
	__u8 *edge;		/* 8 readable bytes, then an inaccessible page */
	__u8 *noaccess;
	__u64 violations;
	bool exact;		/* the fuzzer's own call: no mutation */
	bool trace;		/* print every call */
	bool reported[256];	/* undocumented fence errors reported */
	unsigned int hangs;
	char debugfs[320];	/* the device's debugfs directory, or "" */
	bool debug_regs;	/* the chip's fault injection is there */
	bool faulted;		/* a chip fault was injected */
	bool irqs_dropped;	/* interrupts may have been lost */
	/* The racer thread, and the first errno it did not expect. */
	pthread_t racer;
	bool stop;
	__u64 race_calls;
	const char *race_op;
	int race_err;
	bool out_ok;
	struct fuzz_stats stats[OP_COUNT];
	char extra[FUZZ_EXTRA];	/* what the current call points to */
	/*
	 * Arguments, and the arrays they point to: long enough for the
	 * largest valid count, and followed by an inaccessible page.
	 */
	__u64 arg[2048];
	struct drm_tessera_sync syncs[DRM_TESSERA_MAX_SYNCS + 1];
	__u32 handles[DRM_TESSERA_MAX_BOS + 1];
	__u64 points[DRM_TESSERA_MAX_BOS + 1];
	struct drm_tessera_submit_bo bos[DRM_TESSERA_MAX_BOS + 1];
};

static __u64 rnd(struct fuzz *fz)
{
	return splitmix64(&fz->rng);
}

static __u64 below(struct fuzz *fz, __u64 n)
{
	return n ? rnd(fz) % n : 0;
}

static bool one_in(struct fuzz *fz, unsigned int n)
{
	return below(fz, n) == 0;
}

static __u64 boundary(struct fuzz *fz)
{
	return boundary_values[below(fz, ARRAY_SIZE(boundary_values))];
}

/* A boundary value, random bits or a near miss instead of @valid. */
static __u64 other_value(struct fuzz *fz, __u64 valid)
{
	switch (below(fz, 4)) {
	case 0:
		return boundary(fz);
	case 1:
		return rnd(fz) >> below(fz, 64);
	case 2:
		return valid ^ (1ull << below(fz, 64));
	default:
		return valid + below(fz, 17) - 8;
	}
}

/* Mostly @valid. */
static __u64 fuzz_value(struct fuzz *fz, __u64 valid)
{
	return one_in(fz, 3) ? other_value(fz, valid) : valid;
}

/* ------------------------------------------------------ field tables */

enum fuzz_kind {
	FK_VAL,		/* any value */
	FK_PTR,		/* user pointer */
	FK_HANDLE,	/* GEM handle */
	FK_SYNCOBJ,	/* syncobj handle */
	FK_FD,		/* file descriptor */
	FK_TIMEOUT,	/* absolute timeout: never far in the future */
};

struct fuzz_field {
	const char *name;
	unsigned short offset;
	unsigned char size;
	unsigned char kind;
};

#define FIELD(type, member, kind) \
	{ #member, offsetof(type, member), sizeof(((type *)0)->member), kind }

static const struct fuzz_field info_fields[] = {
	FIELD(struct drm_tessera_info, flags, FK_VAL),
	FIELD(struct drm_tessera_info, chip_id, FK_VAL),
	FIELD(struct drm_tessera_info, context_id, FK_VAL),
	{ }
};

static const struct fuzz_field ping_fields[] = {
	FIELD(struct drm_tessera_ping, cookie, FK_VAL),
	FIELD(struct drm_tessera_ping, flags, FK_VAL),
	FIELD(struct drm_tessera_ping, timeout_ms, FK_VAL),
	FIELD(struct drm_tessera_ping, echo, FK_VAL),
	{ }
};

static const struct fuzz_field bo_create_fields[] = {
	FIELD(struct drm_tessera_bo_create, size, FK_VAL),
	FIELD(struct drm_tessera_bo_create, flags, FK_VAL),
	FIELD(struct drm_tessera_bo_create, handle, FK_HANDLE),
	{ }
};

static const struct fuzz_field bo_info_fields[] = {
	FIELD(struct drm_tessera_bo_info, handle, FK_HANDLE),
	FIELD(struct drm_tessera_bo_info, flags, FK_VAL),
	FIELD(struct drm_tessera_bo_info, mmap_offset, FK_VAL),
	FIELD(struct drm_tessera_bo_info, pad, FK_VAL),
	{ }
};

static const struct fuzz_field submit_fields[] = {
	FIELD(struct drm_tessera_submit, flags, FK_VAL),
	FIELD(struct drm_tessera_submit, queue, FK_VAL),
	FIELD(struct drm_tessera_submit, priority, FK_VAL),
	FIELD(struct drm_tessera_submit, cmdbuf_handle, FK_HANDLE),
	FIELD(struct drm_tessera_submit, cmdbuf_offset, FK_VAL),
	FIELD(struct drm_tessera_submit, cmdbuf_size, FK_VAL),
	FIELD(struct drm_tessera_submit, bo_count, FK_VAL),
	FIELD(struct drm_tessera_submit, bos, FK_PTR),
	FIELD(struct drm_tessera_submit, in_sync_count, FK_VAL),
	FIELD(struct drm_tessera_submit, pad, FK_VAL),
	FIELD(struct drm_tessera_submit, in_syncs, FK_PTR),
	FIELD(struct drm_tessera_submit, out_sync.handle, FK_SYNCOBJ),
	FIELD(struct drm_tessera_submit, out_sync.flags, FK_VAL),
	FIELD(struct drm_tessera_submit, out_sync.point, FK_VAL),
	FIELD(struct drm_tessera_submit, seq, FK_VAL),
	{ }
};

static const struct fuzz_field job_status_fields[] = {
	FIELD(struct drm_tessera_job_status, seq, FK_VAL),
	FIELD(struct drm_tessera_job_status, flags, FK_VAL),
	FIELD(struct drm_tessera_job_status, state, FK_VAL),
	{ }
};

static const struct fuzz_field counters_fields[] = {
	FIELD(struct drm_tessera_counters, flags, FK_VAL),
	FIELD(struct drm_tessera_counters, pad, FK_VAL),
	{ }
};

static const struct fuzz_field gem_close_fields[] = {
	FIELD(struct drm_gem_close, handle, FK_HANDLE),
	FIELD(struct drm_gem_close, pad, FK_VAL),
	{ }
};

static const struct fuzz_field syncobj_create_fields[] = {
	FIELD(struct drm_syncobj_create, handle, FK_SYNCOBJ),
	FIELD(struct drm_syncobj_create, flags, FK_VAL),
	{ }
};

static const struct fuzz_field syncobj_destroy_fields[] = {
	FIELD(struct drm_syncobj_destroy, handle, FK_SYNCOBJ),
	FIELD(struct drm_syncobj_destroy, pad, FK_VAL),
	{ }
};

static const struct fuzz_field syncobj_wait_fields[] = {
	FIELD(struct drm_syncobj_wait, handles, FK_PTR),
	FIELD(struct drm_syncobj_wait, timeout_nsec, FK_TIMEOUT),
	FIELD(struct drm_syncobj_wait, count_handles, FK_VAL),
	FIELD(struct drm_syncobj_wait, flags, FK_VAL),
	FIELD(struct drm_syncobj_wait, first_signaled, FK_VAL),
	FIELD(struct drm_syncobj_wait, pad, FK_VAL),
	{ }
};

static const struct fuzz_field timeline_wait_fields[] = {
	FIELD(struct drm_syncobj_timeline_wait, handles, FK_PTR),
	FIELD(struct drm_syncobj_timeline_wait, points, FK_PTR),
	FIELD(struct drm_syncobj_timeline_wait, timeout_nsec, FK_TIMEOUT),
	FIELD(struct drm_syncobj_timeline_wait, count_handles, FK_VAL),
	FIELD(struct drm_syncobj_timeline_wait, flags, FK_VAL),
	FIELD(struct drm_syncobj_timeline_wait, first_signaled, FK_VAL),
	FIELD(struct drm_syncobj_timeline_wait, pad, FK_VAL),
	{ }
};

static const struct fuzz_field syncobj_array_fields[] = {
	FIELD(struct drm_syncobj_array, handles, FK_PTR),
	FIELD(struct drm_syncobj_array, count_handles, FK_VAL),
	FIELD(struct drm_syncobj_array, pad, FK_VAL),
	{ }
};

static const struct fuzz_field timeline_array_fields[] = {
	FIELD(struct drm_syncobj_timeline_array, handles, FK_PTR),
	FIELD(struct drm_syncobj_timeline_array, points, FK_PTR),
	FIELD(struct drm_syncobj_timeline_array, count_handles, FK_VAL),
	FIELD(struct drm_syncobj_timeline_array, flags, FK_VAL),
	{ }
};

static const struct fuzz_field prime_fields[] = {
	FIELD(struct drm_prime_handle, handle, FK_HANDLE),
	FIELD(struct drm_prime_handle, flags, FK_VAL),
	FIELD(struct drm_prime_handle, fd, FK_FD),
	{ }
};

static const struct fuzz_field mmap_fields[] = {
	FIELD(struct fuzz_mmap_args, offset, FK_VAL),
	FIELD(struct fuzz_mmap_args, length, FK_VAL),
	FIELD(struct fuzz_mmap_args, prot, FK_VAL),
	FIELD(struct fuzz_mmap_args, flags, FK_VAL),
	FIELD(struct fuzz_mmap_args, handle, FK_HANDLE),
	{ }
};

static const struct fuzz_field no_fields[] = {
	{ }
};

static __u64 field_get(const void *arg, const struct fuzz_field *fl)
{
	__u64 v = 0;

	memcpy(&v, (const __u8 *)arg + fl->offset, fl->size);
	return v;
}

static void field_set(void *arg, const struct fuzz_field *fl, __u64 v)
{
	memcpy((__u8 *)arg + fl->offset, &v, fl->size);
}


/* ------------------------------------------------------------- the ops */

/*
 * Errnos each call may return, from the driver and the DRM core paths it
 * takes.  EINTR/ERESTARTSYS cannot happen: no signal is ever sent.
 */
static const int info_errnos[] = { EINVAL, EFAULT, ENODEV, 0 };
static const int ping_errnos[] = { EINVAL, EFAULT, ENODEV, ETIMEDOUT, 0 };
static const int bo_create_errnos[] = { EINVAL, EFAULT, ENODEV, ENOMEM, 0 };
static const int bo_info_errnos[] = { EINVAL, EFAULT, ENOENT, ENOMEM, 0 };
static const int submit_errnos[] = {
	EINVAL, EFAULT, ENODEV, ENOMEM, ENOENT, EPERM, ECANCELED, 0
};
static const int job_status_errnos[] = { EINVAL, EFAULT, ENOENT, 0 };
static const int gem_close_errnos[] = { EINVAL, EFAULT, 0 };
static const int syncobj_errnos[] = { EINVAL, EFAULT, ENOENT, ENOMEM, 0 };
static const int syncobj_wait_errnos[] = {
	EINVAL, EFAULT, ENOENT, ENOMEM, ETIME, 0
};
static const int prime_to_fd_errnos[] = {
	EINVAL, EFAULT, ENOENT, ENOMEM, ENODEV, EOPNOTSUPP, EMFILE, 0
};
static const int prime_to_handle_errnos[] = {
	EINVAL, EFAULT, ENOENT, ENOMEM, ENODEV, EBADF, 0
};
static const int mmap_errnos[] = {
	EINVAL, EACCES, ENOMEM, ENODEV, EPERM, EOVERFLOW, 0
};
static const int unknown_errnos[] = { EINVAL, 0 };
static const int no_errnos[] = { 0 };

struct fuzz_op_desc {
	const char *name;
	unsigned long request;		/* 0: not an ioctl */
	unsigned int arg_size;
	bool driver;			/* a tessera ioctl: its size may vary */
	unsigned int weight;
	const struct fuzz_field *fields;
	const int *errnos;
	void (*run)(struct fuzz *fz, struct fuzz_file *f);
};

static const struct fuzz_op_desc fuzz_ops[OP_COUNT];

/* ------------------------------------------------------------ reports */

static void print_record(const struct fuzz_record *r)
{
	const struct fuzz_op_desc *op = &fuzz_ops[r->op];
	const struct fuzz_field *fl;
	char line[512];
	int n;

	n = snprintf(line, sizeof(line), "#   call %u file %u %s", r->call,
		     r->file, op->name);
	if (op->request)
		n += snprintf(line + n, sizeof(line) - n, " (0x%lx)", r->request);
	for (fl = op->fields; fl->name && n < (int)sizeof(line); fl++)
		if (fl->offset + fl->size <= r->arg_len)
			n += snprintf(line + n, sizeof(line) - n, " %s=0x%llx",
				      fl->name,
				      (unsigned long long)field_get(r->arg, fl));
	printf("%s\n", line);
	if (r->extra[0])
		printf("#     %s\n", r->extra);
	if (r->done)
		printf("#     -> %s\n", r->err ? strerror(r->err) : "ok");
	else
		printf("#     -> did not return\n");
}

static void print_last_calls(unsigned int count)
{
	unsigned int i, first;

	if (recorder->calls < count)
		count = recorder->calls;
	first = recorder->calls - count;
	for (i = first; i < recorder->calls; i++)
		print_record(&recorder->rec[i % FUZZ_RECORDS]);
}

static void violation(struct fuzz *fz, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Report a driver misbehaviour with the calls that led to it. */
static void violation(struct fuzz *fz, const char *fmt, ...)
{
	va_list ap;

	fz->violations++;
	if (fz->violations > FUZZ_MAX_REPORTS)
		return;
	printf("# FUZZ VIOLATION at call %u: ", fz->call);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n# the call and the ones before it:\n");
	print_last_calls(fz->violations <= 3 ? 8 : 1);
	fflush(stdout);
}

static bool errno_allowed(const int *allowed, int err)
{
	for (; *allowed; allowed++)
		if (*allowed == err)
			return true;
	return false;
}

/* --------------------------------------------------------- mutations */

/* A user pointer: usually @valid, sometimes one the kernel cannot use. */
static __u64 fuzz_pointer(struct fuzz *fz, __u64 valid)
{
	switch (below(fz, 8)) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)fz->noaccess;
	case 2:
		return (uintptr_t)fz->edge;	/* runs into an inaccessible page */
	case 3:
		return 0xffff888000000000ull;	/* kernel address */
	case 4:
		return boundary(fz);
	case 5:
		return rnd(fz);
	default:
		return valid + below(fz, 8);	/* misaligned */
	}
}

/* A pointer no copy can go through. */
static void *bad_pointer(struct fuzz *fz)
{
	static const uintptr_t bad[] = {
		0, 8, 0xffff888000000000ull, 0x8000000000000000ull, -4096ull,
	};

	if (one_in(fz, 3))
		return fz->noaccess;
	return (void *)bad[below(fz, ARRAY_SIZE(bad))];
}

static __u32 stale_handle(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_file *other = &fz->file[below(fz, fz->nfiles)];

	switch (below(fz, 4)) {
	case 0:
		return f->stale[below(fz, FUZZ_STALE)];
	case 1:
		return other->nbo ? other->bo[below(fz, other->nbo)].handle : 1;
	case 2:
		return other->nso ? other->so[below(fz, other->nso)].handle : 1;
	default:
		return below(fz, 64);
	}
}

static __u64 fuzz_timeout(struct fuzz *fz)
{
	switch (below(fz, 8)) {
	case 0:
		return -1 - below(fz, 1000);
	case 1:
		return 1ull << 63;		/* most negative */
	case 2:
		return now_ns() - below(fz, 1000000000);
	case 3:
		return now_ns() + below(fz, 200000);
	default:
		return 0;
	}
}

static __u64 mutate_field(struct fuzz *fz, struct fuzz_file *f,
			  const struct fuzz_field *fl, __u64 v)
{
	switch (fl->kind) {
	case FK_PTR:
		return fuzz_pointer(fz, v);
	case FK_HANDLE:
	case FK_SYNCOBJ:
		return one_in(fz, 2) ? stale_handle(fz, f) : other_value(fz, v);
	case FK_FD:
		return one_in(fz, 2) ? fz->file[below(fz, fz->nfiles)].fd :
				       other_value(fz, v);
	case FK_TIMEOUT:
		return fuzz_timeout(fz);
	default:
		return other_value(fz, v);
	}
}

/*
 * Perhaps corrupt some fields of a valid @arg.  Return: whether the call
 * may no longer be valid.
 */
static bool mutate(struct fuzz *fz, struct fuzz_file *f, enum fuzz_op op,
		   void *arg)
{
	const struct fuzz_field *fields = fuzz_ops[op].fields;
	unsigned int n, count;

	for (n = 0; fields[n].name; n++)
		;
	if (!n || below(fz, 8) < 5)
		return false;
	count = one_in(fz, 4) ? n : 1 + below(fz, 2);
	while (count--) {
		const struct fuzz_field *fl = &fields[below(fz, n)];

		field_set(arg, fl, mutate_field(fz, f, fl, field_get(arg, fl)));
	}
	return true;
}

/* ------------------------------------------------------ issuing calls */

static struct fuzz_record *record_start(struct fuzz *fz, struct fuzz_file *f,
					enum fuzz_op op, unsigned long request,
					const void *arg, unsigned int size)
{
	struct fuzz_record *r = &recorder->rec[fz->call % FUZZ_RECORDS];

	r->call = fz->call;
	r->op = op;
	r->file = f - fz->file;
	r->done = 0;
	r->request = request;
	r->arg_len = size < FUZZ_MAX_ARG ? size : FUZZ_MAX_ARG;
	memcpy(r->arg, arg, r->arg_len);
	memcpy(r->extra, fz->extra, sizeof(r->extra));
	fz->extra[0] = 0;
	recorder->calls = ++fz->call;
	fz->start = now_ns();
	return r;
}

static void record_end(struct fuzz *fz, struct fuzz_record *r, enum fuzz_op op,
		       int err)
{
	struct fuzz_stats *st = &fz->stats[op];
	__u64 ns = now_ns() - fz->start;

	r->err = err;
	r->done = 1;
	st->calls++;
	st->ns += ns;
	if (ns > st->max_ns)
		st->max_ns = ns;
	if (!err)
		st->ok++;
	else if (err < (int)ARRAY_SIZE(st->errnos))
		st->errnos[err]++;
	if (fz->trace)
		print_record(r);
	if (err && !errno_allowed(fuzz_ops[op].errnos, err))
		violation(fz, "%s returned %s, not one of its documented errnos",
			  fuzz_ops[op].name, strerror(err));
}

/*
 * Sometimes the request claims another argument size, as an older or newer
 * caller would; never one too short to return a handle the call creates.
 * What a shorter request leaves out, the kernel takes as zero: so does
 * @arg.
 */
static unsigned long fuzz_request(struct fuzz *fz, enum fuzz_op op,
				  void *arg, bool *valid)
{
	const struct fuzz_op_desc *d = &fuzz_ops[op];
	unsigned int size;

	if (!d->driver || fz->exact || !one_in(fz, 24))
		return d->request;
	size = d->arg_size + 8 * below(fz, 64);
	if (op != OP_BO_CREATE && one_in(fz, 2))
		size = below(fz, d->arg_size + 1);
	if (size < d->arg_size)
		memset((__u8 *)arg + size, 0, d->arg_size - size);
	*valid = false;
	return (d->request & ~((unsigned long)_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
	       (unsigned long)size << _IOC_SIZESHIFT;
}

/* Failures of valid calls that the circumstances explain. */
static bool excused(const struct fuzz *fz, enum fuzz_op op, const void *arg,
		    int err)
{
	const struct drm_tessera_ping *ping = arg;

	switch (err) {
	case ENOMEM:		/* real, or injected through debugfs */
		return true;
	case ECANCELED:		/* the context was banned after faults */
		return op == OP_SUBMIT;
	case ETIMEDOUT:		/* a jiffy is short; or the interrupt was lost */
		return op == OP_PING &&
		       (ping->timeout_ms < 20 || fz->irqs_dropped);
	default:
		return false;
	}
}

/*
 * Issue ioctl @op with @arg on @f, check the errno and, for a call built
 * valid, that it succeeded.  fz->out_ok says whether @arg now holds all
 * the call's results.  Return: 0 or the errno.
 */
static int fuzz_ioctl(struct fuzz *fz, struct fuzz_file *f, enum fuzz_op op,
		      void *arg, bool valid)
{
	unsigned long req = fuzz_request(fz, op, arg, &valid);
	struct fuzz_record *r;
	void *p = arg;
	int ret, err;

	if (!fz->exact && one_in(fz, 64)) {
		p = bad_pointer(fz);
		valid = false;
	}
	r = record_start(fz, f, op, req, arg, _IOC_SIZE(req));
	ret = ioctl(f->fd, req, p);
	err = ret ? errno : 0;
	record_end(fz, r, op, err);
	if (valid && err && !excused(fz, op, arg, err))
		violation(fz, "valid %s failed: %s", fuzz_ops[op].name,
			  strerror(err));
	fz->out_ok = p == arg && _IOC_SIZE(req) >= fuzz_ops[op].arg_size;
	return err;
}

/* ------------------------------------------------------------- pools */

static struct fuzz_bo *find_bo(struct fuzz_file *f, __u32 handle)
{
	unsigned int i;

	for (i = 0; i < f->nbo; i++)
		if (f->bo[i].handle == handle)
			return &f->bo[i];
	return NULL;
}

static struct fuzz_syncobj *find_syncobj(struct fuzz_file *f, __u32 handle)
{
	unsigned int i;

	for (i = 0; i < f->nso; i++)
		if (f->so[i].handle == handle)
			return &f->so[i];
	return NULL;
}

static struct fuzz_dmabuf *find_dmabuf(struct fuzz *fz, int fd)
{
	unsigned int i;

	for (i = 0; i < fz->ndmabuf; i++)
		if (fz->dmabuf[i].fd == fd)
			return &fz->dmabuf[i];
	return NULL;
}

static struct fuzz_bo *pick_bo(struct fuzz *fz, struct fuzz_file *f)
{
	return f->nbo ? &f->bo[below(fz, f->nbo)] : NULL;
}

/* A buffer of the wanted role, if the file holds one. */
static struct fuzz_bo *pick_bo_role(struct fuzz *fz, struct fuzz_file *f,
				    bool cmd)
{
	unsigned int i, start = below(fz, f->nbo + 1);

	for (i = 0; i < f->nbo; i++) {
		struct fuzz_bo *bo = &f->bo[(start + i) % f->nbo];

		if (bo->cmd == cmd)
			return bo;
	}
	return NULL;
}

static struct fuzz_syncobj *pick_syncobj(struct fuzz *fz, struct fuzz_file *f)
{
	return f->nso ? &f->so[below(fz, f->nso)] : NULL;
}

static void keep_zombie(struct fuzz *fz, void *addr, size_t len, int prot)
{
	struct fuzz_mapping *z;

	if (fz->nzombie == FUZZ_ZOMBIES) {
		z = &fz->zombie[below(fz, FUZZ_ZOMBIES)];
		munmap(z->addr, z->len);
	} else {
		z = &fz->zombie[fz->nzombie++];
	}
	*z = (struct fuzz_mapping) { .addr = addr, .len = len, .prot = prot };
}

/* The kernel closed @handle: forget it, keep its mapping for a while. */
static void forget_bo(struct fuzz *fz, struct fuzz_file *f, struct fuzz_bo *bo)
{
	f->stale[below(fz, FUZZ_STALE)] = bo->handle;
	f->bo_bytes -= bo->size;
	if (bo->map)
		keep_zombie(fz, bo->map, bo->size, PROT_READ | PROT_WRITE);
	*bo = f->bo[--f->nbo];
}

static void forget_syncobj(struct fuzz_file *f, struct fuzz_syncobj *so)
{
	*so = f->so[--f->nso];
}

static void forget_dmabuf(struct fuzz *fz, struct fuzz_dmabuf *d)
{
	close(d->fd);
	*d = fz->dmabuf[--fz->ndmabuf];
}

static int gem_close(struct fuzz *fz, struct fuzz_file *f, __u32 handle,
		     bool valid, bool mutated);

/* Close buffers until one more of @size fits the file's pool and budget. */
static void make_room(struct fuzz *fz, struct fuzz_file *f, __u64 size)
{
	fz->exact = true;
	while (f->nbo && (f->nbo == FUZZ_BOS ||
			  f->bo_bytes + size > FUZZ_BO_BUDGET))
		gem_close(fz, f, pick_bo(fz, f)->handle, true, false);
	fz->exact = false;
}

/* ----------------------------------------------------- buffer objects */

static int bo_info(struct fuzz *fz, struct fuzz_file *f, __u32 handle,
		   struct drm_tessera_bo_info *out, bool mutated);

/* Learn where a new handle's buffer is, and check it. */
static void bo_learn(struct fuzz *fz, struct fuzz_file *f, struct fuzz_bo *bo,
		     __u64 want_size)
{
	struct drm_tessera_bo_info info;
	int err;

	fz->exact = true;
	err = bo_info(fz, f, bo->handle, &info, false);
	fz->exact = false;
	if (err)
		return;
	if ((want_size && info.size != want_size) || info.size % FUZZ_PAGE ||
	    info.device_va < 16 << 20 || info.device_va % FUZZ_PAGE ||
	    info.device_va + info.size > 1ull << TSR_VA_BITS ||
	    info.placement != (bo->hbm ? DRM_TESSERA_BO_HBM : 0) || info.pad)
		violation(fz, "BO_INFO of new handle %u: size %llu (want %llu) va 0x%llx placement %u pad %u",
			  bo->handle, (unsigned long long)info.size,
			  (unsigned long long)want_size,
			  (unsigned long long)info.device_va, info.placement,
			  info.pad);
	bo->size = info.size;
	bo->mmap_offset = info.mmap_offset;
	bo->device_va = info.device_va;
}

static void *map_bo(struct fuzz *fz, struct fuzz_file *f, struct fuzz_bo *bo);

/* A handle the kernel just gave @f: it must be new to the file. */
static struct fuzz_bo *add_bo(struct fuzz *fz, struct fuzz_file *f,
			      __u32 handle, __u32 obj, bool hbm, bool cmd,
			      __u64 size)
{
	struct fuzz_bo *bo;

	if (!handle || find_bo(f, handle)) {
		violation(fz, "new buffer got handle %u, which file %u already holds",
			  handle, (unsigned int)(f - fz->file));
		return NULL;
	}
	bo = &f->bo[f->nbo++];
	*bo = (struct fuzz_bo) {
		.handle = handle, .obj = obj, .hbm = hbm, .cmd = cmd,
	};
	bo_learn(fz, f, bo, size);
	f->bo_bytes += bo->size;
	if (cmd)
		bo->map = map_bo(fz, f, bo);
	return bo;
}

/*
 * Sizes mostly of a few pages, sometimes up to 1 MiB or the 2 MiB pages:
 * a 2 MiB buffer takes 20 ms to make in the VM.
 */
static __u64 bo_size(struct fuzz *fz)
{
	switch (below(fz, 64)) {
	case 0:
		return TSR_LARGE_PAGE_SIZE + FUZZ_PAGE * below(fz, 2);
	case 1:
	case 2:
		return 1 + below(fz, 1 << 20);
	case 3:
		return 1;
	default:
		return FUZZ_PAGE * (1 + below(fz, 4)) - below(fz, 2) * below(fz, 4096);
	}
}

static void op_bo_create(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_bo_create *c = (void *)fz->arg;
	bool hbm = one_in(fz, 3), cmd = one_in(fz, 3), valid;
	__u64 want, limit;

	/* Room first: closing buffers reuses fz->arg. */
	make_room(fz, f, FUZZ_BO_MAX);
	memset(c, 0, sizeof(*c));
	c->size = bo_size(fz);
	c->flags = hbm ? DRM_TESSERA_BO_HBM : 0;
	valid = !mutate(fz, f, OP_BO_CREATE, c);
	/*
	 * Buffers that fit take long to clear, and system memory is pinned
	 * at once: valid sizes stay small, too large ones fail fast.
	 */
	limit = c->flags & DRM_TESSERA_BO_HBM ? f->hbm_size :
						DRM_TESSERA_BO_MAX_SIZE;
	if (!(c->flags & ~DRM_TESSERA_BO_HBM) && c->size > FUZZ_BO_MAX &&
	    c->size <= limit)
		c->size = FUZZ_BO_MAX;
	want = (c->size + FUZZ_PAGE - 1) & ~(FUZZ_PAGE - 1);
	if (fuzz_ioctl(fz, f, OP_BO_CREATE, c, valid))
		return;
	add_bo(fz, f, c->handle, ++fz->next_obj, c->flags & DRM_TESSERA_BO_HBM,
	       cmd, want);
	make_room(fz, f, 0);
}

/*
 * BO_INFO of @handle, checked against the pool; the result in @out, when
 * the call returned a whole struct (always for the fuzzer's own calls).
 */
static int bo_info(struct fuzz *fz, struct fuzz_file *f, __u32 handle,
		   struct drm_tessera_bo_info *out, bool mutated)
{
	struct drm_tessera_bo_info *a = (void *)fz->arg;
	struct fuzz_bo *bo;
	bool valid;
	int err;

	memset(a, 0, sizeof(*a));
	a->handle = handle;
	valid = !(mutated && mutate(fz, f, OP_BO_INFO, a));
	bo = find_bo(f, a->handle);
	err = fuzz_ioctl(fz, f, OP_BO_INFO, a, valid && bo);
	if (!fz->out_ok)
		return err;
	if (!err && !bo && a->flags == 0)
		violation(fz, "BO_INFO found handle %u, which file %u does not hold",
			  a->handle, (unsigned int)(f - fz->file));
	if (err == ENOENT && bo && !a->flags)
		violation(fz, "BO_INFO lost handle %u", a->handle);
	if (!err && bo && bo->size &&
	    (a->size != bo->size || a->device_va != bo->device_va ||
	     a->mmap_offset != bo->mmap_offset))
		violation(fz, "BO_INFO of handle %u moved: size %llu va 0x%llx offset 0x%llx, was %llu 0x%llx 0x%llx",
			  a->handle, (unsigned long long)a->size,
			  (unsigned long long)a->device_va,
			  (unsigned long long)a->mmap_offset,
			  (unsigned long long)bo->size,
			  (unsigned long long)bo->device_va,
			  (unsigned long long)bo->mmap_offset);
	if (out)
		*out = *a;
	return err;
}

static void op_bo_info(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_bo *bo = pick_bo(fz, f);

	bo_info(fz, f, bo ? bo->handle : stale_handle(fz, f), NULL, true);
}

static int gem_close(struct fuzz *fz, struct fuzz_file *f, __u32 handle,
		     bool valid, bool mutated)
{
	struct drm_gem_close *a = (void *)fz->arg;
	struct fuzz_bo *bo;
	int err;

	memset(a, 0, sizeof(*a));
	a->handle = handle;
	if (mutated && mutate(fz, f, OP_GEM_CLOSE, a))
		valid = false;
	bo = find_bo(f, a->handle);
	err = fuzz_ioctl(fz, f, OP_GEM_CLOSE, a, valid && bo);
	if (!err && !bo)
		violation(fz, "GEM_CLOSE closed handle %u, which file %u does not hold",
			  a->handle, (unsigned int)(f - fz->file));
	if (!err && bo)
		forget_bo(fz, f, bo);
	return err;
}

static void op_gem_close(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_bo *bo = pick_bo(fz, f);

	gem_close(fz, f, bo ? bo->handle : stale_handle(fz, f), !!bo, true);
}

/* ----------------------------------------------------------------- mmap */

static void touch(struct fuzz *fz, volatile __u8 *p, size_t len, int prot)
{
	size_t off = below(fz, len) & ~7ul;

	if (prot & PROT_READ)
		(void)p[off];
	/* Never a command header: 0x5a... cannot become a SEM_WAIT. */
	if (prot & PROT_WRITE)
		p[off] = 0x5a;
}

/* mmap() through the fuzzer's recorder; MAP_FAILED on failure. */
static void *fuzz_mmap(struct fuzz *fz, struct fuzz_file *f,
		       struct fuzz_mmap_args *a, bool valid)
{
	struct fuzz_record *r;
	void *p;
	int err;

	r = record_start(fz, f, OP_MMAP, 0, a, sizeof(*a));
	p = mmap(NULL, a->length, a->prot, a->flags, f->fd, a->offset);
	err = p == MAP_FAILED ? errno : 0;
	record_end(fz, r, OP_MMAP, err);
	if (valid && err)
		violation(fz, "valid mmap of handle %u failed: %s", a->handle,
			  strerror(err));
	return p;
}

static void *map_bo(struct fuzz *fz, struct fuzz_file *f, struct fuzz_bo *bo)
{
	struct fuzz_mmap_args a = {
		.offset = bo->mmap_offset, .length = bo->size,
		.prot = PROT_READ | PROT_WRITE, .flags = MAP_SHARED,
		.handle = bo->handle,
	};
	void *p;

	if (!bo->size)
		return NULL;
	p = fuzz_mmap(fz, f, &a, true);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * A file maps only whole buffers it holds a handle to, from their start,
 * and only shared: a private copy-on-write mapping of device memory has no
 * meaning.
 */
static void check_mapping(struct fuzz *fz, struct fuzz_file *f,
			  const struct fuzz_mmap_args *a)
{
	const struct fuzz_bo *bo = NULL;
	unsigned int i;

	for (i = 0; i < f->nbo; i++)
		if (f->bo[i].mmap_offset == a->offset && f->bo[i].size)
			bo = &f->bo[i];
	if (!bo || a->length > bo->size)
		violation(fz, "mmap of offset 0x%llx length %llu succeeded, but file %u holds no buffer there of that size",
			  (unsigned long long)a->offset,
			  (unsigned long long)a->length,
			  (unsigned int)(f - fz->file));
	else if ((a->flags & MAP_TYPE) == MAP_PRIVATE)
		violation(fz, "private mapping of %s buffer %u accepted",
			  bo->hbm ? "HBM" : "system-memory", bo->handle);
}

static void op_mmap(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_mmap_args *a = (void *)fz->arg;
	struct fuzz_bo *bo = pick_bo(fz, f);
	bool valid = bo && bo->size;
	void *p;

	if (fz->nzombie && one_in(fz, 4)) {
		struct fuzz_mapping *z = &fz->zombie[--fz->nzombie];

		touch(fz, z->addr, z->len, z->prot);
		munmap(z->addr, z->len);
		return;
	}
	memset(a, 0, sizeof(*a));
	a->handle = bo ? bo->handle : 0;
	a->offset = bo ? bo->mmap_offset : boundary(fz) & ~(FUZZ_PAGE - 1);
	a->length = FUZZ_PAGE;
	if (bo && bo->size)
		a->length *= 1 + below(fz, bo->size / FUZZ_PAGE);
	a->prot = PROT_READ | PROT_WRITE;
	a->flags = MAP_SHARED;
	if (one_in(fz, 8)) {
		a->prot = below(fz, 8);
		a->flags = one_in(fz, 2) ? MAP_PRIVATE : MAP_SHARED;
		valid = false;
	}
	if (mutate(fz, f, OP_MMAP, a))
		valid = false;
	/* Neither a huge reservation nor a fixed address clobbering ours. */
	a->length &= (64ull << 20) - 1;
	a->flags &= MAP_SHARED | MAP_PRIVATE | MAP_POPULATE;
	a->prot &= PROT_READ | PROT_WRITE | PROT_EXEC;
	p = fuzz_mmap(fz, f, a, valid);
	if (p == MAP_FAILED)
		return;
	check_mapping(fz, f, a);
	if (a->length)
		touch(fz, p, a->length, a->prot);
	if (one_in(fz, 16))
		keep_zombie(fz, p, a->length, a->prot);
	else
		munmap(p, a->length);
}

/* -------------------------------------------------------------- PRIME */

static void add_dmabuf(struct fuzz *fz, int fd, const struct fuzz_bo *bo)
{
	struct fuzz_dmabuf *d;

	if (fz->ndmabuf == FUZZ_DMABUFS)
		forget_dmabuf(fz, &fz->dmabuf[below(fz, FUZZ_DMABUFS)]);
	d = &fz->dmabuf[fz->ndmabuf++];
	*d = (struct fuzz_dmabuf) {
		.fd = fd, .obj = bo->obj, .size = bo->size, .cmd = bo->cmd,
	};
}

static void op_prime_handle_to_fd(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_prime_handle *a = (void *)fz->arg;
	struct fuzz_bo *bo = pick_bo(fz, f);
	bool valid;
	int err;

	memset(a, 0, sizeof(*a));
	a->handle = bo ? bo->handle : stale_handle(fz, f);
	a->flags = DRM_CLOEXEC | (one_in(fz, 2) ? DRM_RDWR : 0);
	a->fd = -1;
	valid = !mutate(fz, f, OP_PRIME_HANDLE_TO_FD, a);
	bo = find_bo(f, a->handle);
	err = fuzz_ioctl(fz, f, OP_PRIME_HANDLE_TO_FD, a,
			 valid && bo && !bo->hbm);
	if (valid && fz->out_ok && bo && bo->hbm && err != EOPNOTSUPP)
		violation(fz, "PRIME export of HBM handle %u: %s, not EOPNOTSUPP",
			  a->handle, err ? strerror(err) : "success");
	if (err)
		return;
	if (!bo || bo->hbm) {
		violation(fz, "PRIME export of handle %u succeeded: %s",
			  a->handle, bo ? "an HBM buffer" : "no such handle");
		close(a->fd);
		return;
	}
	add_dmabuf(fz, a->fd, bo);
}

/* Import a dma-buf into @f: the handle is the one @f holds for it, or new. */
static void op_prime_fd_to_handle(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_prime_handle *a = (void *)fz->arg;
	struct fuzz_dmabuf *d = fz->ndmabuf ? &fz->dmabuf[below(fz, fz->ndmabuf)] :
					      NULL;
	struct fuzz_bo *held = NULL;
	unsigned int i;
	bool valid;

	make_room(fz, f, FUZZ_BO_MAX);
	memset(a, 0, sizeof(*a));
	a->fd = d ? d->fd : fz->null_fd;
	valid = d && !mutate(fz, f, OP_PRIME_FD_TO_HANDLE, a);
	d = find_dmabuf(fz, a->fd);
	if (fuzz_ioctl(fz, f, OP_PRIME_FD_TO_HANDLE, a, valid))
		return;
	if (!d) {
		violation(fz, "PRIME import of fd %d, not a dma-buf of ours, gave handle %u",
			  a->fd, a->handle);
		return;
	}
	for (i = 0; i < f->nbo; i++)
		if (f->bo[i].obj == d->obj)
			held = &f->bo[i];
	if (held && held->handle != a->handle)
		violation(fz, "PRIME import of a buffer file %u holds as %u gave handle %u",
			  (unsigned int)(f - fz->file), held->handle, a->handle);
	if (!held)
		add_bo(fz, f, a->handle, d->obj, false, d->cmd, d->size);
}

/* ------------------------------------------------------------ syncobjs */

static void op_syncobj_create(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_syncobj_create *a = (void *)fz->arg;
	struct fuzz_syncobj *so;
	bool valid;

	if (f->nso == FUZZ_SYNCOBJS) {
		struct drm_syncobj_destroy *d = (void *)fz->arg;

		so = pick_syncobj(fz, f);
		*d = (struct drm_syncobj_destroy) { .handle = so->handle };
		fz->exact = true;
		if (!fuzz_ioctl(fz, f, OP_SYNCOBJ_DESTROY, d, true))
			forget_syncobj(f, so);
		fz->exact = false;
		if (f->nso == FUZZ_SYNCOBJS)
			return;
	}
	memset(a, 0, sizeof(*a));
	a->flags = one_in(fz, 2) ? DRM_SYNCOBJ_CREATE_SIGNALED : 0;
	valid = !mutate(fz, f, OP_SYNCOBJ_CREATE, a);
	if (fuzz_ioctl(fz, f, OP_SYNCOBJ_CREATE, a, valid))
		return;
	if (!a->handle || find_syncobj(f, a->handle)) {
		violation(fz, "SYNCOBJ_CREATE gave handle %u, already held",
			  a->handle);
		return;
	}
	f->so[f->nso++] = (struct fuzz_syncobj) {
		.handle = a->handle,
		.fence = a->flags & DRM_SYNCOBJ_CREATE_SIGNALED,
	};
}

static void op_syncobj_destroy(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_syncobj_destroy *a = (void *)fz->arg;
	struct fuzz_syncobj *so = pick_syncobj(fz, f);
	bool valid;
	int err;

	memset(a, 0, sizeof(*a));
	a->handle = so ? so->handle : stale_handle(fz, f);
	valid = !mutate(fz, f, OP_SYNCOBJ_DESTROY, a);
	so = find_syncobj(f, a->handle);
	err = fuzz_ioctl(fz, f, OP_SYNCOBJ_DESTROY, a, valid && so);
	if (!err && !so)
		violation(fz, "SYNCOBJ_DESTROY destroyed handle %u, not held",
			  a->handle);
	if (!err && so)
		forget_syncobj(f, so);
}

/* Fill fz->handles (and fz->points) with @n syncobjs, some not held. */
static bool fill_syncobjs(struct fuzz *fz, struct fuzz_file *f, unsigned int n)
{
	bool valid = true;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct fuzz_syncobj *so = pick_syncobj(fz, f);

		if (!so || one_in(fz, 16)) {
			fz->handles[i] = stale_handle(fz, f);
			valid &= find_syncobj(f, fz->handles[i]) != NULL;
		} else {
			fz->handles[i] = so->handle;
		}
		so = find_syncobj(f, fz->handles[i]);
		fz->points[i] = so && so->timeline ? below(fz, so->point + 2) :
			one_in(fz, 8) ? fuzz_value(fz, 1) : 0;
	}
	return valid;
}

static void describe_syncobjs(struct fuzz *fz, unsigned int n, bool points)
{
	unsigned int i;
	int len = snprintf(fz->extra, sizeof(fz->extra), "handles");

	for (i = 0; i < n && i < 8 && len < FUZZ_EXTRA; i++)
		len += snprintf(fz->extra + len, sizeof(fz->extra) - len,
				points ? " %u@%llu" : " %u", fz->handles[i],
				(unsigned long long)fz->points[i]);
}

/*
 * The DRM core allocates count_handles entries with kmalloc() before it
 * looks at them, and the page allocator WARNs above 4 MiB: not this
 * driver's bug, so counts stay below that.
 */
#define SYNCOBJ_MAX_COUNT	(1u << 16)

static void clamp_count(__u32 *count)
{
	if (*count > SYNCOBJ_MAX_COUNT)
		*count = SYNCOBJ_MAX_COUNT + (*count & 1);
}

static unsigned int wait_count(struct fuzz *fz)
{
	return one_in(fz, 16) ? 0 : 1 + below(fz, FUZZ_WAIT_HANDLES);
}

static __u32 wait_flags(struct fuzz *fz)
{
	return below(fz, 1u << 3);	/* WAIT_ALL, WAIT_FOR_SUBMIT, WAIT_AVAILABLE */
}

static void op_syncobj_wait(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_syncobj_wait *a = (void *)fz->arg;
	unsigned int n = wait_count(fz);

	fill_syncobjs(fz, f, n);
	describe_syncobjs(fz, n, false);
	memset(a, 0, sizeof(*a));
	a->handles = (uintptr_t)fz->handles;
	a->count_handles = n;
	a->flags = wait_flags(fz);
	a->timeout_nsec = fuzz_timeout(fz);
	mutate(fz, f, OP_SYNCOBJ_WAIT, a);
	clamp_count(&a->count_handles);
	fuzz_ioctl(fz, f, OP_SYNCOBJ_WAIT, a, false);
}

static void op_syncobj_timeline_wait(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_syncobj_timeline_wait *a = (void *)fz->arg;
	unsigned int n = wait_count(fz);

	fill_syncobjs(fz, f, n);
	describe_syncobjs(fz, n, true);
	memset(a, 0, sizeof(*a));
	a->handles = (uintptr_t)fz->handles;
	a->points = (uintptr_t)fz->points;
	a->count_handles = n;
	a->flags = wait_flags(fz);
	a->timeout_nsec = fuzz_timeout(fz);
	mutate(fz, f, OP_SYNCOBJ_TIMELINE_WAIT, a);
	clamp_count(&a->count_handles);
	fuzz_ioctl(fz, f, OP_SYNCOBJ_TIMELINE_WAIT, a, false);
}

/*
 * A RESET, SIGNAL or TIMELINE_SIGNAL succeeded: what the syncobjs hold now.
 * Through a mutated pointer or count the fuzzer cannot tell which ones the
 * call changed, and no syncobj of the file is known to hold a fence.
 */
static void syncobjs_changed(struct fuzz *fz, struct fuzz_file *f,
			     enum fuzz_op op, __u64 handles, __u64 points,
			     __u32 count)
{
	unsigned int i;

	if (handles != (uintptr_t)fz->handles || count > FUZZ_WAIT_HANDLES ||
	    (op == OP_SYNCOBJ_TIMELINE_SIGNAL && points != (uintptr_t)fz->points)) {
		for (i = 0; i < f->nso; i++)
			f->so[i].fence = false;
		return;
	}
	for (i = 0; i < count; i++) {
		struct fuzz_syncobj *so = find_syncobj(f, fz->handles[i]);

		if (!so)
			continue;
		so->fence = op != OP_SYNCOBJ_RESET;
		so->point = op == OP_SYNCOBJ_TIMELINE_SIGNAL ? fz->points[i] : 0;
		so->timeline = so->point != 0;
	}
}

static void op_syncobj_array(struct fuzz *fz, struct fuzz_file *f,
			     enum fuzz_op op)
{
	struct drm_syncobj_array *a = (void *)fz->arg;
	unsigned int n = wait_count(fz);
	bool valid = fill_syncobjs(fz, f, n) && n;

	describe_syncobjs(fz, n, false);
	memset(a, 0, sizeof(*a));
	a->handles = (uintptr_t)fz->handles;
	a->count_handles = n;
	if (mutate(fz, f, op, a))
		valid = false;
	clamp_count(&a->count_handles);
	if (!fuzz_ioctl(fz, f, op, a, valid))
		syncobjs_changed(fz, f, op, a->handles, 0, a->count_handles);
}

static void op_syncobj_reset(struct fuzz *fz, struct fuzz_file *f)
{
	op_syncobj_array(fz, f, OP_SYNCOBJ_RESET);
}

static void op_syncobj_signal(struct fuzz *fz, struct fuzz_file *f)
{
	op_syncobj_array(fz, f, OP_SYNCOBJ_SIGNAL);
}

static void op_syncobj_timeline(struct fuzz *fz, struct fuzz_file *f,
				enum fuzz_op op)
{
	struct drm_syncobj_timeline_array *a = (void *)fz->arg;
	unsigned int i, n = wait_count(fz);
	bool valid = fill_syncobjs(fz, f, n) && n;

	for (i = 0; i < n && op == OP_SYNCOBJ_TIMELINE_SIGNAL; i++) {
		struct fuzz_syncobj *so = find_syncobj(f, fz->handles[i]);

		fz->points[i] = (so ? so->point : 0) + 1 + below(fz, 3);
	}
	describe_syncobjs(fz, n, true);
	memset(a, 0, sizeof(*a));
	a->handles = (uintptr_t)fz->handles;
	a->points = (uintptr_t)fz->points;
	a->count_handles = n;
	if (op == OP_SYNCOBJ_QUERY)
		a->flags = one_in(fz, 2) ? DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED : 0;
	if (mutate(fz, f, op, a))
		valid = false;
	clamp_count(&a->count_handles);
	if (!fuzz_ioctl(fz, f, op, a, valid) && op == OP_SYNCOBJ_TIMELINE_SIGNAL)
		syncobjs_changed(fz, f, op, a->handles, a->points,
				 a->count_handles);
}

static void op_syncobj_timeline_signal(struct fuzz *fz, struct fuzz_file *f)
{
	op_syncobj_timeline(fz, f, OP_SYNCOBJ_TIMELINE_SIGNAL);
}

static void op_syncobj_query(struct fuzz *fz, struct fuzz_file *f)
{
	op_syncobj_timeline(fz, f, OP_SYNCOBJ_QUERY);
}

/* -------------------------------------------------------------- SUBMIT */

/* A command stream as it is built, before it goes into the buffer. */
struct fuzz_stream {
	__u64 q[160];
	unsigned int len;		/* qwords */
	unsigned int hang;		/* qword of a wait that must block, or 0 */
	unsigned int nlisted;		/* entries of fz->bos in use */
	bool valid;			/* every entry of fz->bos is */
};

/* List @bo in the job's buffers (fz->bos) with @flags. */
static void list_bo(struct fuzz *fz, struct fuzz_stream *s,
		    const struct fuzz_bo *bo, __u32 flags)
{
	unsigned int i;

	for (i = 0; i < s->nlisted; i++) {
		if (fz->bos[i].handle == bo->handle) {
			fz->bos[i].flags |= flags;
			return;
		}
	}
	if (s->nlisted < 16)
		fz->bos[s->nlisted++] = (struct drm_tessera_submit_bo) {
			.handle = bo->handle, .flags = flags,
		};
}

/*
 * A device VA for @len bytes aligned to @align inside a data buffer of @f,
 * listed with @flags; now and then one the context has not mapped there.
 */
static __u64 pick_target(struct fuzz *fz, struct fuzz_file *f,
			 struct fuzz_stream *s, __u64 len, __u64 align,
			 __u32 flags)
{
	struct fuzz_bo *bo = pick_bo_role(fz, f, false);
	__u64 off;

	if (!bo || bo->size < len || one_in(fz, 48)) {
		switch (below(fz, 4)) {
		case 0:		/* the driver's completion records */
			return TSR_LARGE_PAGE_SIZE + (below(fz, 1 << 17) & ~7ull);
		case 1:
			return bo ? bo->device_va + bo->size : 0;	/* guard page */
		default:
			return fuzz_value(fz, 16ull << 20) & ~(align - 1);
		}
	}
	off = below(fz, bo->size - len + 1) & ~(align - 1);
	list_bo(fz, s, bo, flags);
	return bo->device_va + off;
}

static void emit(struct fuzz_stream *s, const void *cmd, size_t bytes)
{
	if (s->len + bytes / 8 > sizeof(s->q) / 8)
		return;
	memcpy(&s->q[s->len], cmd, bytes);
	s->len += bytes / 8;
}

static void emit_header(struct fuzz_stream *s, __u8 opcode)
{
	struct tsr_cmd_header h = { .opcode = opcode, .size_qw = 1 };

	emit(s, &h, sizeof(h));
}

static void emit_dma(struct fuzz *fz, struct fuzz_file *f,
		     struct fuzz_stream *s, bool fill)
{
	struct tsr_cmd_dma c = {
		.hdr = {
			.opcode = fill ? TSR_OP_DMA_FILL : TSR_OP_DMA_COPY,
			.size_qw = sizeof(c) / 8,
		},
	};
	__u32 row = 4 * (1 + below(fz, one_in(fz, 8) ? 65536 : 256));
	__u32 rows = one_in(fz, 4) ? 1 + below(fz, 4) : 1;
	__u64 stride = row + 4 * below(fz, 4);

	c.size[0] = row;
	c.size[1] = rows;
	c.size[2] = 1;
	c.dst_stride[0] = rows > 1 ? stride : 0;
	c.dst = pick_target(fz, f, s, (rows - 1) * stride + row, 4,
			    DRM_TESSERA_BO_WRITE);
	if (fill) {
		c.src = (__u32)rnd(fz);
	} else {
		c.src_stride[0] = c.dst_stride[0];
		c.src = pick_target(fz, f, s, (rows - 1) * stride + row, 1,
				    DRM_TESSERA_BO_READ);
	}
	emit(s, &c, sizeof(c));
}

static void emit_sem(struct fuzz *fz, struct fuzz_file *f,
		     struct fuzz_stream *s, __u8 opcode)
{
	struct tsr_cmd_sem c = {
		.hdr = { .opcode = opcode, .size_qw = sizeof(c) / 8 },
		/* A wait for 0 never blocks; others are not worth their hangs. */
		.value = opcode == TSR_OP_SEM_WAIT ? 0 : fuzz_value(fz, below(fz, 16)),
	};

	c.va = pick_target(fz, f, s, 8, 8, opcode == TSR_OP_SEM_WAIT ?
			   DRM_TESSERA_BO_READ : DRM_TESSERA_BO_WRITE);
	emit(s, &c, sizeof(c));
}

static void emit_timestamp(struct fuzz *fz, struct fuzz_file *f,
			   struct fuzz_stream *s)
{
	struct tsr_cmd_timestamp c = {
		.hdr = { .opcode = TSR_OP_TIMESTAMP, .size_qw = sizeof(c) / 8 },
	};

	c.va = pick_target(fz, f, s, 8, 8, DRM_TESSERA_BO_WRITE);
	emit(s, &c, sizeof(c));
}

/*
 * A wait nothing satisfies: the job hangs until the driver's timeout resets
 * its queue, while the fuzzer goes on.  A few per run.
 */
static void emit_hang(struct fuzz *fz, struct fuzz_file *f,
		      struct fuzz_stream *s)
{
	struct tsr_cmd_sem c = {
		.hdr = { .opcode = TSR_OP_SEM_WAIT, .size_qw = sizeof(c) / 8 },
		.value = ~0ull,
	};

	c.va = pick_target(fz, f, s, 8, 8, DRM_TESSERA_BO_READ);
	s->hang = s->len + 2;
	emit(s, &c, sizeof(c));
	fz->hangs++;
}

static void emit_garbage(struct fuzz *fz, struct fuzz_stream *s)
{
	unsigned int n = 1 + below(fz, 8);

	while (n-- && s->len < sizeof(s->q) / 8)
		s->q[s->len++] = one_in(fz, 2) ? boundary(fz) : rnd(fz);
}

static void emit_command(struct fuzz *fz, struct fuzz_file *f,
			 struct fuzz_stream *s)
{
	switch (below(fz, 12)) {
	case 0:
		emit_header(s, TSR_OP_NOP);
		break;
	case 1:
		emit_header(s, TSR_OP_INTERRUPT);
		break;
	case 2:
	case 3:
	case 4:
		emit_dma(fz, f, s, true);
		break;
	case 5:
		emit_dma(fz, f, s, false);
		break;
	case 6:
		emit_sem(fz, f, s, TSR_OP_SEM_SIGNAL);
		break;
	case 7:
		emit_sem(fz, f, s, TSR_OP_SEM_INC);
		break;
	case 8:
		emit_sem(fz, f, s, TSR_OP_SEM_WAIT);
		break;
	case 9:
		emit_timestamp(fz, f, s);
		break;
	case 10:
		if (one_in(fz, 4)) {
			emit_garbage(fz, s);
			break;
		}
		/* fall through */
	default:
		emit_header(s, TSR_OP_NOP);
		break;
	}
}

/* Flip bits, plant boundary values or an unknown opcode in a stream. */
static void mutate_stream(struct fuzz *fz, struct fuzz_stream *s)
{
	unsigned int n = 1 + below(fz, 3);

	while (n-- && s->len) {
		__u64 *q = &s->q[below(fz, s->len)];

		switch (below(fz, 3)) {
		case 0:
			*q ^= 1ull << below(fz, 64);
			break;
		case 1:
			*q = boundary(fz);
			break;
		default:
			*q = (*q & ~0xffull) | below(fz, 256);
			break;
		}
	}
}

/*
 * Zero the value of every SEM_WAIT header among the qwords at [@from, @to)
 * of a command buffer: whatever the chip parses, no wait can block.
 */
static void defuse_waits(__u64 *q, __u64 nq, __u64 from, __u64 to)
{
	__u64 i;

	for (i = from >= 2 ? from - 2 : 0; i < to && i < nq; i++)
		if (q[i] == SEM_WAIT_HEADER && i + 2 < nq)
			q[i + 2] = 0;
}

/* Put @s into @bo at a random offset; return the offset. */
static __u64 place_stream(struct fuzz *fz, struct fuzz_bo *bo,
			  struct fuzz_stream *s)
{
	__u64 nq = bo->size / 8, at;

	if (s->len > nq)
		s->len = nq;
	at = below(fz, nq - s->len + 1);
	memcpy((__u64 *)bo->map + at, s->q, s->len * 8);
	defuse_waits(bo->map, nq, at, at + s->len);
	if (s->hang && s->hang < s->len)
		((__u64 *)bo->map)[at + s->hang] = ~0ull;
	return at * 8;
}

/* A command buffer of @f with a CPU mapping; made if there is none. */
static struct fuzz_bo *cmd_bo(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_bo_create *c = (void *)fz->arg;
	struct fuzz_bo *bo = pick_bo_role(fz, f, true);
	int err;

	if (bo && bo->map)
		return bo;
	make_room(fz, f, 4 * FUZZ_PAGE);
	memset(c, 0, sizeof(*c));
	c->size = FUZZ_PAGE * (1 + below(fz, 4));
	c->flags = one_in(fz, 4) ? DRM_TESSERA_BO_HBM : 0;
	fz->exact = true;
	err = fuzz_ioctl(fz, f, OP_BO_CREATE, c, true);
	fz->exact = false;
	if (err)
		return NULL;
	bo = add_bo(fz, f, c->handle, ++fz->next_obj,
		    c->flags & DRM_TESSERA_BO_HBM, true, c->size);
	return bo && bo->map ? bo : NULL;
}

/* In-fences: syncobjs with a fence, at a point they have. */
static unsigned int fill_in_syncs(struct fuzz *fz, struct fuzz_file *f,
				  bool *valid)
{
	unsigned int i, n = one_in(fz, 3) ? 1 + below(fz, 3) : 0;

	for (i = 0; i < n; i++) {
		struct fuzz_syncobj *so = pick_syncobj(fz, f);

		fz->syncs[i] = (struct drm_tessera_sync) {
			.handle = so ? so->handle : stale_handle(fz, f),
			.point = so && so->timeline ? 1 + below(fz, so->point) : 0,
		};
		if (!so || !so->fence)
			*valid = false;
		if (one_in(fz, 32)) {
			fz->syncs[i].flags = fuzz_value(fz, 0);
			*valid = false;
		}
	}
	return n;
}

static void describe_submit(struct fuzz *fz, const struct fuzz_stream *s,
			    unsigned int nsyncs)
{
	unsigned int i;
	int n = snprintf(fz->extra, sizeof(fz->extra), "bos");

	for (i = 0; i < s->nlisted && n < FUZZ_EXTRA; i++)
		n += snprintf(fz->extra + n, sizeof(fz->extra) - n, " %u:%x",
			      fz->bos[i].handle, fz->bos[i].flags);
	for (i = 0; i < nsyncs && n < FUZZ_EXTRA; i++)
		n += snprintf(fz->extra + n, sizeof(fz->extra) - n,
			      " in %u@%llu", fz->syncs[i].handle,
			      (unsigned long long)fz->syncs[i].point);
	for (i = 0; i < s->len && i < 12 && n < FUZZ_EXTRA; i++)
		n += snprintf(fz->extra + n, sizeof(fz->extra) - n, " %llx",
			      (unsigned long long)s->q[i]);
}

/* Random buffer-list entries: unknown handles, bad flags, duplicates. */
static void spoil_bo_list(struct fuzz *fz, struct fuzz_file *f,
			  struct fuzz_stream *s)
{
	unsigned int i = s->nlisted < 16 ? s->nlisted++ : below(fz, 16);

	fz->bos[i].handle = one_in(fz, 2) && s->nlisted > 1 ?
			    fz->bos[0].handle : stale_handle(fz, f);
	fz->bos[i].flags = one_in(fz, 2) ? fuzz_value(fz, DRM_TESSERA_BO_READ) :
			   DRM_TESSERA_BO_WRITE;
	s->valid = false;
}

static void submit_learn(struct fuzz *fz, struct fuzz_file *f,
			 const struct drm_tessera_submit *a, bool out_ok)
{
	struct fuzz_syncobj *so;

	if (out_ok && a->seq != f->last_seq + 1)
		violation(fz, "SUBMIT numbered job %llu after job %llu",
			  (unsigned long long)a->seq,
			  (unsigned long long)f->last_seq);
	f->last_seq++;
	f->seq_queue[f->last_seq % DRM_TESSERA_JOB_HISTORY] = a->queue;
	so = find_syncobj(f, a->out_sync.handle);
	if (!(a->flags & DRM_TESSERA_SUBMIT_OUT_SYNC) || !so)
		return;
	so->fence = true;
	so->timeline = a->out_sync.point != 0;
	so->point = a->out_sync.point;
}

static void op_submit(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_submit *a = (void *)fz->arg;
	struct fuzz_stream s = { .valid = true };
	struct fuzz_bo *cmd = cmd_bo(fz, f);
	struct fuzz_syncobj *out = pick_syncobj(fz, f);
	unsigned int i, n = 1 + below(fz, 6), nsyncs;
	bool valid;
	int err;

	if (!cmd)
		return;
	if (fz->hangs < FUZZ_HANGS && one_in(fz, 1000)) {
		emit_hang(fz, f, &s);
	} else {
		for (i = 0; i < n; i++)
			emit_command(fz, f, &s);
		if (one_in(fz, 6))
			mutate_stream(fz, &s);
		if (one_in(fz, 16))
			spoil_bo_list(fz, f, &s);
	}
	if (one_in(fz, 8))
		list_bo(fz, &s, cmd, DRM_TESSERA_BO_READ);
	valid = s.valid;
	nsyncs = fill_in_syncs(fz, f, &valid);

	memset(a, 0, sizeof(*a));
	a->queue = below(fz, f->num_queues);
	a->priority = below(fz, 3);
	a->cmdbuf_handle = cmd->handle;
	a->cmdbuf_offset = place_stream(fz, cmd, &s);
	a->cmdbuf_size = s.len * 8;
	a->bo_count = s.nlisted;
	a->bos = (uintptr_t)fz->bos;
	a->in_sync_count = nsyncs;
	a->in_syncs = (uintptr_t)fz->syncs;
	if (out && one_in(fz, 2)) {
		a->flags = DRM_TESSERA_SUBMIT_OUT_SYNC;
		a->out_sync.handle = out->handle;
		a->out_sync.point = one_in(fz, 2) ? out->point + 1 + below(fz, 2) : 0;
	}
	if (mutate(fz, f, OP_SUBMIT, a))
		valid = false;
	describe_submit(fz, &s, nsyncs);
	err = fuzz_ioctl(fz, f, OP_SUBMIT, a, valid && s.len);
	if (err == ECANCELED)
		f->banned = true;
	if (!err)
		submit_learn(fz, f, a, fz->out_ok);
}

/* ---------------------------------------------------------- job status */

/* A sequence number near the edges of the file's history. */
static __u64 pick_seq(struct fuzz *fz, struct fuzz_file *f)
{
	__u64 last = f->last_seq;

	switch (below(fz, 8)) {
	case 0:
		return last + 1;
	case 1:
		return last - DRM_TESSERA_JOB_HISTORY + below(fz, 2);
	case 2:
		return fuzz_value(fz, last);
	default:
		return last - below(fz, last < 16 ? last : 16);
	}
}

/* The fence errors struct drm_tessera_submit lists. */
static bool fence_error_documented(int e)
{
	static const int documented[] = {
		EFAULT, EIO, EINVAL, E2BIG, ETIMEDOUT, ECANCELED, ESRCH, ENOMEM,
		ENODEV, 0
	};

	return e < 0 && errno_allowed(documented, -e);
}

static void check_job_status(struct fuzz *fz, struct fuzz_file *f,
			     const struct drm_tessera_job_status *st, __u64 seq)
{
	bool ok;

	switch (st->state) {
	case DRM_TESSERA_JOB_PENDING:
		ok = !st->error && !st->fence_error;
		break;
	case DRM_TESSERA_JOB_DONE:
		ok = !st->error && !st->fence_error &&
		     st->failed_cmd == TSR_NO_COMMAND &&
		     st->end_cycle >= st->start_cycle;
		break;
	case DRM_TESSERA_JOB_FAILED:
		ok = st->fence_error < 0 && st->error < TSR_ERR_COUNT;
		if (ok && !fence_error_documented(st->fence_error) &&
		    !fz->reported[-st->fence_error & 255]) {
			fz->reported[-st->fence_error & 255] = true;
			violation(fz, "job %llu failed with fence error %d (%s), which SUBMIT does not document (chip error %u)",
				  (unsigned long long)seq, st->fence_error,
				  strerror(-st->fence_error), st->error);
		}
		break;
	default:
		ok = false;
	}
	if (!ok || st->seq != seq ||
	    st->queue != f->seq_queue[seq % DRM_TESSERA_JOB_HISTORY])
		violation(fz, "JOB_STATUS of job %llu: seq %llu state %u error %u fence_error %d failed_cmd %u queue %u cycles %llu..%llu",
			  (unsigned long long)seq,
			  (unsigned long long)st->seq, st->state, st->error,
			  st->fence_error, st->failed_cmd, st->queue,
			  (unsigned long long)st->start_cycle,
			  (unsigned long long)st->end_cycle);
}

static void op_job_status(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_job_status *a = (void *)fz->arg;
	int err, want;
	__u64 seq;

	memset(a, 0, sizeof(*a));
	a->seq = pick_seq(fz, f);
	mutate(fz, f, OP_JOB_STATUS, a);
	seq = a->seq;
	if (a->flags || !seq || seq > f->last_seq)
		want = EINVAL;
	else if (seq + DRM_TESSERA_JOB_HISTORY <= f->last_seq)
		want = ENOENT;
	else
		want = 0;
	err = fuzz_ioctl(fz, f, OP_JOB_STATUS, a, false);
	if (!fz->out_ok)
		return;
	if (err != want)
		violation(fz, "JOB_STATUS of job %llu (last submitted %llu): %s, expected %s",
			  (unsigned long long)seq,
			  (unsigned long long)f->last_seq,
			  err ? strerror(err) : "success",
			  want ? strerror(want) : "success");
	else if (!err)
		check_job_status(fz, f, a, seq);
}

/* ----------------------------------------------- info, ping, counters */

static void op_get_info(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_info *a = (void *)fz->arg;
	bool valid;

	memset(a, 0, sizeof(*a));
	valid = !mutate(fz, f, OP_GET_INFO, a);
	if (fuzz_ioctl(fz, f, OP_GET_INFO, a, valid) || !fz->out_ok)
		return;
	if (a->chip_id != TSR_CHIP_ID ||
	    a->uapi_version != DRM_TESSERA_UAPI_VERSION ||
	    a->num_queues != f->num_queues || a->context_id != f->context_id ||
	    a->hbm_size != f->hbm_size || a->hbm_free > a->hbm_size ||
	    a->pad[0] | a->pad[1] | a->pad[2] | a->pad2)
		violation(fz, "GET_INFO: chip 0x%x uapi %u queues %u context %u (was %u) hbm %llu free %llu",
			  a->chip_id, a->uapi_version, a->num_queues,
			  a->context_id, f->context_id,
			  (unsigned long long)a->hbm_size,
			  (unsigned long long)a->hbm_free);
}

static void op_ping(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_ping *a = (void *)fz->arg;
	bool valid;

	memset(a, 0, sizeof(*a));
	a->cookie = rnd(fz);
	/* Tiny timeouts may expire; long ones are not worth a lost interrupt. */
	if (one_in(fz, 2))
		a->timeout_ms = one_in(fz, 2) ? 1 + below(fz, 4) :
						1 + below(fz, 2000);
	valid = !mutate(fz, f, OP_PING, a);
	if (a->timeout_ms > 2000 &&
	    a->timeout_ms <= DRM_TESSERA_PING_MAX_TIMEOUT_MS)
		a->timeout_ms = 2000;
	if (fuzz_ioctl(fz, f, OP_PING, a, valid) || !fz->out_ok)
		return;
	if (a->echo != a->cookie)
		violation(fz, "PING of cookie 0x%08x echoed 0x%08x", a->cookie,
			  a->echo);
}

/* Driver counters never go back; no more jobs end than were submitted. */
static void check_counters(struct fuzz *fz, struct fuzz_file *f,
			   const struct drm_tessera_counters *c)
{
	const __u64 *now = &c->jobs_submitted, *was = &f->counters.jobs_submitted;
	unsigned int i, n = &c->banned_contexts - &c->jobs_submitted + 1;

	for (i = 0; i < n; i++)
		if (now[i] < was[i])
			violation(fz, "GET_COUNTERS: driver counter %u went from %llu to %llu",
				  i, (unsigned long long)was[i],
				  (unsigned long long)now[i]);
	if (c->jobs_completed + c->jobs_failed > c->jobs_submitted)
		violation(fz, "GET_COUNTERS: %llu jobs completed and %llu failed of %llu submitted",
			  (unsigned long long)c->jobs_completed,
			  (unsigned long long)c->jobs_failed,
			  (unsigned long long)c->jobs_submitted);
	f->counters = *c;
}

static void op_get_counters(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_counters *a = (void *)fz->arg;
	bool valid;

	memset(a, 0, sizeof(*a));
	valid = !mutate(fz, f, OP_GET_COUNTERS, a);
	if (!fuzz_ioctl(fz, f, OP_GET_COUNTERS, a, valid) && fz->out_ok)
		check_counters(fz, f, a);
}

/* Driver ioctl numbers past the table, with any argument size. */
static void op_unknown_ioctl(struct fuzz *fz, struct fuzz_file *f)
{
	unsigned int nr = DRM_COMMAND_BASE + DRM_TESSERA_GET_COUNTERS + 1 +
			  below(fz, DRM_COMMAND_END - DRM_COMMAND_BASE -
				    DRM_TESSERA_GET_COUNTERS - 1);
	unsigned long req = _IOC(below(fz, 4), DRM_IOCTL_BASE, nr,
				 below(fz, 256));
	struct fuzz_record *r;
	int err;

	memset(fz->arg, 0, 256);
	r = record_start(fz, f, OP_UNKNOWN_IOCTL, req, fz->arg, 0);
	err = ioctl(f->fd, req, fz->arg) ? errno : 0;
	record_end(fz, r, OP_UNKNOWN_IOCTL, err);
	if (!err)
		violation(fz, "unknown ioctl 0x%lx succeeded", req);
}

/* The driver's fdinfo: memory per placement, time per queue. */
static void op_fdinfo(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_record *r;
	char path[64], text[2048];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", f->fd);
	r = record_start(fz, f, OP_FDINFO, 0, fz->arg, 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		n = read(fd, text, sizeof(text) - 1);
	record_end(fz, r, OP_FDINFO, n < 0 ? errno : 0);
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return;
	text[n] = 0;
	if (!strstr(text, "drm-driver:\ttessera\n") ||
	    !strstr(text, "drm-engine-q0:\t") || !strstr(text, "drm-total-hbm:\t"))
		violation(fz, "fdinfo of file %u lacks the driver's keys:\n%s",
			  (unsigned int)(f - fz->file), text);
}

/* ---------------------------------------------------------- the files */

static void open_file(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_info *info = (void *)fz->arg;
	const char *node = f->node;

	memset(f, 0, sizeof(*f));
	f->node = node;
	f->fd = open(node, O_RDWR | O_CLOEXEC);
	if (f->fd < 0) {
		violation(fz, "open %s: %s", node, strerror(errno));
		return;
	}
	memset(info, 0, sizeof(*info));
	if (ioctl(f->fd, DRM_IOCTL_TESSERA_GET_INFO, info)) {
		violation(fz, "GET_INFO on a new file: %s", strerror(errno));
		return;
	}
	f->context_id = info->context_id;
	f->num_queues = info->num_queues;
	f->hbm_size = info->hbm_size;
}

/* Close a file with whatever it holds; its mappings outlive it a while. */
static void close_file(struct fuzz *fz, struct fuzz_file *f)
{
	while (f->nbo) {
		struct fuzz_bo *bo = &f->bo[f->nbo - 1];

		if (bo->map && one_in(fz, 4))
			keep_zombie(fz, bo->map, bo->size, PROT_READ | PROT_WRITE);
		else if (bo->map)
			munmap(bo->map, bo->size);
		f->nbo--;
	}
	close(f->fd);
}

static void op_reopen(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_record *r;

	r = record_start(fz, f, OP_REOPEN, 0, fz->arg, 0);
	close_file(fz, f);
	open_file(fz, f);
	record_end(fz, r, OP_REOPEN, 0);
}

/*
 * Through the driver's debugfs: a chip reset under the running jobs, or
 * allocation and submit failures for the next calls.  A few per run.
 */
static int debugfs_write(const struct fuzz *fz, const char *knob,
			 unsigned int value)
{
	char path[384], text[16];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", fz->debugfs, knob);
	snprintf(text, sizeof(text), "%u", value);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	return err;
}

/*
 * The driver's knobs, then the chip's faults (with debug-regs=on): each
 * takes a count from 1 to @max, or for the queue mask one queue's bit.
 */
static const struct chaos_knob {
	const char *name;
	unsigned int max;
} chaos_knobs[] = {
	{ "force_recovery", 1 },
	{ "fail_bo_alloc", 3 },
	{ "fail_submit", 3 },
#define CHAOS_DRIVER_KNOBS	3
	{ "fault_hang_queues", 0 },
	{ "fault_fail_dma", 3 },
	{ "fault_ecc_correctable", 8 },
	{ "fault_drop_irqs", 2 },
	{ "fault_poison_size", 1 << 16 },
	{ "fault_fatal", 1 },
};

static void op_chaos(struct fuzz *fz, struct fuzz_file *f)
{
	unsigned int i = below(fz, fz->debug_regs ? ARRAY_SIZE(chaos_knobs) :
						    CHAOS_DRIVER_KNOBS);
	const struct chaos_knob *knob = &chaos_knobs[i];
	unsigned int value = knob->max ? 1 + below(fz, knob->max) :
				    1u << below(fz, f->num_queues);
	struct fuzz_record *r;
	int err;

	snprintf(fz->extra, sizeof(fz->extra), "echo %u > debugfs %s", value,
		 knob->name);
	r = record_start(fz, f, OP_CHAOS, 0, fz->arg, 0);
	/* Poison starts somewhere in HBM. */
	err = strcmp(knob->name, "fault_poison_size") ? 0 :
	      debugfs_write(fz, "fault_poison_lo", below(fz, f->hbm_size));
	if (!err)
		err = debugfs_write(fz, knob->name, value);
	record_end(fz, r, OP_CHAOS, err);
	fz->faulted |= i >= CHAOS_DRIVER_KNOBS;
	fz->irqs_dropped |= !strcmp(knob->name, "fault_drop_irqs");
}

/*
 * The debugfs directory of ACCEL_NODE's device, if debugfs is there, and
 * whether the chip's fault injection files are.
 */
static void find_debugfs(struct fuzz *fz)
{
	char link[256];
	ssize_t n = readlink("/sys/class/accel/accel0/device", link,
			     sizeof(link) - 1);
	const char *name;

	if (n <= 0)
		return;
	link[n] = 0;
	name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	snprintf(fz->debugfs, sizeof(fz->debugfs),
		 "/sys/kernel/debug/accel/%s", name);
	if (access(fz->debugfs, W_OK))
		fz->debugfs[0] = 0;
	else	/* zero: no fault, if the file is there */
		fz->debug_regs = !debugfs_write(fz, "fault_fail_dma", 0);
}

/* ---------------------------------------------------------- the racer */

/*
 * Lookups of @handle that change nothing: BO_INFO, or a SUBMIT whose
 * command buffer offset fails it after the lookups.  Return: 0 or the
 * errno, EEXIST for a SUBMIT that succeeded.
 */
static int race_lookup(int fd, __u32 handle, bool submit, const char **name)
{
	struct drm_tessera_submit_bo bo = {
		.handle = handle, .flags = DRM_TESSERA_BO_READ,
	};
	struct drm_tessera_submit args = {
		.cmdbuf_handle = handle,
		.cmdbuf_offset = 1ull << 40,
		.cmdbuf_size = 8,
		.bo_count = 1,
		.bos = (uintptr_t)&bo,
	};
	struct drm_tessera_bo_info info = { .handle = handle };

	*name = submit ? "SUBMIT" : "BO_INFO";
	if (submit)
		return ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &args) ? errno : EEXIST;
	return ioctl(fd, DRM_IOCTL_TESSERA_BO_INFO, &info) ? errno : 0;
}

/* What race_lookup() may return; the file may be closed under it. */
static const int race_errnos[] = {
	EINVAL, ENOENT, ECANCELED, EBADF, ENOTTY, 0
};

/*
 * A second thread on the same files: lookups of the lowest handles, which
 * the main thread keeps creating and closing.  The main thread may close
 * a file under them, or reuse its number.
 */
static void *racer(void *arg)
{
	/* A share of the guest's CPU, not all of it. */
	const struct timespec pause = { .tv_nsec = 100000 };
	struct fuzz *fz = arg;
	__u64 rng = fz->rng ^ 0x5bd1e9955bd1e995ull;

	while (!__atomic_load_n(&fz->stop, __ATOMIC_RELAXED)) {
		__u64 r = splitmix64(&rng);
		int fd = __atomic_load_n(&fz->file[r & 1].fd, __ATOMIC_RELAXED);
		const char *name;
		int err = race_lookup(fd, 1 + (r >> 1) % 6, r & 0x100, &name);

		fz->race_calls++;
		if (err && !errno_allowed(race_errnos, err) && !fz->race_err) {
			fz->race_err = err;
			fz->race_op = name;
		}
		nanosleep(&pause, NULL);
	}
	return NULL;
}

/* ------------------------------------------------------------ the table */

#define OP(op_name, req, type, w, flds, errs, fn)			\
	[OP_##op_name] = {						\
		.name = #op_name, .request = req, .arg_size = sizeof(type), \
		.weight = w, .fields = flds, .errnos = errs, .run = fn,	\
	}
#define DRIVER_OP(op_name, type, w, flds, errs, fn)			\
	[OP_##op_name] = {						\
		.name = #op_name, .request = DRM_IOCTL_TESSERA_##op_name, \
		.arg_size = sizeof(type), .driver = true, .weight = w,	\
		.fields = flds, .errnos = errs, .run = fn,		\
	}

/* Weights: what the time in the VM allows, cheap calls dominate. */
static const struct fuzz_op_desc fuzz_ops[OP_COUNT] = {
	DRIVER_OP(GET_INFO, struct drm_tessera_info, 8, info_fields,
		  info_errnos, op_get_info),
	DRIVER_OP(PING, struct drm_tessera_ping, 3, ping_fields, ping_errnos,
		  op_ping),
	DRIVER_OP(BO_CREATE, struct drm_tessera_bo_create, 6,
		  bo_create_fields, bo_create_errnos, op_bo_create),
	DRIVER_OP(BO_INFO, struct drm_tessera_bo_info, 8, bo_info_fields,
		  bo_info_errnos, op_bo_info),
	DRIVER_OP(SUBMIT, struct drm_tessera_submit, 8, submit_fields,
		  submit_errnos, op_submit),
	DRIVER_OP(JOB_STATUS, struct drm_tessera_job_status, 8,
		  job_status_fields, job_status_errnos, op_job_status),
	DRIVER_OP(GET_COUNTERS, struct drm_tessera_counters, 4,
		  counters_fields, info_errnos, op_get_counters),
	OP(GEM_CLOSE, DRM_IOCTL_GEM_CLOSE, struct drm_gem_close, 4,
	   gem_close_fields, gem_close_errnos, op_gem_close),
	OP(SYNCOBJ_CREATE, DRM_IOCTL_SYNCOBJ_CREATE, struct drm_syncobj_create,
	   3, syncobj_create_fields, syncobj_errnos, op_syncobj_create),
	OP(SYNCOBJ_DESTROY, DRM_IOCTL_SYNCOBJ_DESTROY,
	   struct drm_syncobj_destroy, 2, syncobj_destroy_fields,
	   syncobj_errnos, op_syncobj_destroy),
	OP(SYNCOBJ_WAIT, DRM_IOCTL_SYNCOBJ_WAIT, struct drm_syncobj_wait, 3,
	   syncobj_wait_fields, syncobj_wait_errnos, op_syncobj_wait),
	OP(SYNCOBJ_TIMELINE_WAIT, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT,
	   struct drm_syncobj_timeline_wait, 2, timeline_wait_fields,
	   syncobj_wait_errnos, op_syncobj_timeline_wait),
	OP(SYNCOBJ_RESET, DRM_IOCTL_SYNCOBJ_RESET, struct drm_syncobj_array, 2,
	   syncobj_array_fields, syncobj_errnos, op_syncobj_reset),
	OP(SYNCOBJ_SIGNAL, DRM_IOCTL_SYNCOBJ_SIGNAL, struct drm_syncobj_array,
	   2, syncobj_array_fields, syncobj_errnos, op_syncobj_signal),
	OP(SYNCOBJ_TIMELINE_SIGNAL, DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL,
	   struct drm_syncobj_timeline_array, 2, timeline_array_fields,
	   syncobj_errnos, op_syncobj_timeline_signal),
	OP(SYNCOBJ_QUERY, DRM_IOCTL_SYNCOBJ_QUERY,
	   struct drm_syncobj_timeline_array, 1, timeline_array_fields,
	   syncobj_errnos, op_syncobj_query),
	OP(PRIME_HANDLE_TO_FD, DRM_IOCTL_PRIME_HANDLE_TO_FD,
	   struct drm_prime_handle, 2, prime_fields, prime_to_fd_errnos,
	   op_prime_handle_to_fd),
	OP(PRIME_FD_TO_HANDLE, DRM_IOCTL_PRIME_FD_TO_HANDLE,
	   struct drm_prime_handle, 2, prime_fields, prime_to_handle_errnos,
	   op_prime_fd_to_handle),
	OP(MMAP, 0, struct fuzz_mmap_args, 4, mmap_fields, mmap_errnos,
	   op_mmap),
	OP(UNKNOWN_IOCTL, 0, __u64, 1, no_fields, unknown_errnos,
	   op_unknown_ioctl),
	OP(FDINFO, 0, __u64, 1, no_fields, no_errnos, op_fdinfo),
	OP(REOPEN, 0, __u64, 0, no_fields, no_errnos, op_reopen),
	OP(CHAOS, 0, __u64, 0, no_fields, no_errnos, op_chaos),
};

static enum fuzz_op pick_op(struct fuzz *fz)
{
	static unsigned int total;
	unsigned int i, w;

	if (!total)
		for (i = 0; i < OP_COUNT; i++)
			total += fuzz_ops[i].weight;
	w = below(fz, total);
	for (i = 0; w >= fuzz_ops[i].weight; i++)
		w -= fuzz_ops[i].weight;
	return i;
}

static void fuzz_step(struct fuzz *fz)
{
	/* The other chip's file is there for PRIME; it gets a share of calls. */
	unsigned int i = one_in(fz, 6) ? fz->nfiles - 1 : below(fz, 2);
	struct fuzz_file *f = &fz->file[i];
	enum fuzz_op op = pick_op(fz);

	/* A banned file gets a few more calls, then a fresh context. */
	if ((f->banned && one_in(fz, 32)) || one_in(fz, 4096))
		op = OP_REOPEN;
	else if (fz->debugfs[0] && one_in(fz, 5000))
		op = OP_CHAOS;
	fuzz_ops[op].run(fz, f);
}

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
	struct drm_tessera_counters *c = (void *)fz->arg;

	memset(c, 0, sizeof(*c));
	if (ioctl(fz->file[0].fd, DRM_IOCTL_TESSERA_GET_COUNTERS, c))
		return;
	printf("# driver: %llu jobs submitted, %llu completed, %llu failed, %llu MMU faults, %llu timeouts, %llu queue and %llu chip resets, %llu banned contexts, %u hangs made\n",
	       (unsigned long long)c->jobs_submitted,
	       (unsigned long long)c->jobs_completed,
	       (unsigned long long)c->jobs_failed,
	       (unsigned long long)c->mmu_faults,
	       (unsigned long long)c->timeouts,
	       (unsigned long long)c->queue_resets,
	       (unsigned long long)c->device_resets,
	       (unsigned long long)c->banned_contexts, fz->hangs);
}

static unsigned long long env_number(const char *name, unsigned long long def)
{
	const char *s = getenv(name);

	return s && *s ? strtoull(s, NULL, 0) : def;
}

/* ------------------------------------------------------------- tests */

__attribute__((constructor)) static void recorder_init(void)
{
	recorder = mmap(NULL, sizeof(*recorder), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (recorder == MAP_FAILED)
		abort();
}

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

	ASSERT_NE(NULL, fz);
	self->fz = fz;
	fz->rng = env_number("TESSERA_FUZZ_SEED", now_ns() ^ getpid());
	fz->trace = env_number("TESSERA_FUZZ_TRACE", 0);
	recorder->seed = fz->rng;
	fz->null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, fz->null_fd);
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
	/* Injected failures nobody consumed would fail the next tests. */
	if (fz->debugfs[0]) {
		debugfs_write(fz, "fail_bo_alloc", 0);
		debugfs_write(fz, "fail_submit", 0);
	}
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
	EXPECT_EQ(0, fz->violations);
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
	struct drm_tessera_submit submit = {
		.flags = DRM_TESSERA_SUBMIT_OUT_SYNC,
		.cmdbuf_size = sizeof(struct tsr_cmd_dma),
		.bo_count = 1,
		.bos = (uintptr_t)&bo,
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
	submit.out_sync.handle = sync.handle;
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
	struct drm_tessera_counters c;
	__u64 deadline = now_ns() + 30 * 1000000000ull;

	do {
		memset(&c, 0, sizeof(c));
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_COUNTERS, &c));
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
	struct drm_tessera_submit hang = {
		.flags = DRM_TESSERA_SUBMIT_OUT_SYNC,
		.cmdbuf_size = sizeof(struct tsr_cmd_sem),
	};
	struct drm_tessera_submit waiter = {
		.queue = 1,
		.cmdbuf_offset = FUZZ_PAGE / 2,
		.cmdbuf_size = sizeof(struct tsr_cmd_header),
		.in_sync_count = 1,
		.in_syncs = (uintptr_t)&in,
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
	hang.out_sync.handle = sync.handle;
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
	struct drm_tessera_counters was = { 0 }, c;
	__u64 deadline = now_ns() + 30 * 1000000000ull;
	int ue = tsr_uevent_socket();
	int status;
	pid_t pid;

	ASSERT_LE(0, ue);
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_COUNTERS, &was));
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
		memset(&c, 0, sizeof(c));
		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_COUNTERS, &c));
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
	struct drm_tessera_info info = { 0 };
	int *fds, n = 0, err, fd;

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_INFO, &info));
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

/* The largest buffers fail with ENOMEM, not with the kernel's warnings. */
TEST_F(after_fuzzing, largest_buffers_fail_without_harm)
{
	struct drm_tessera_bo_create c = { .size = DRM_TESSERA_BO_MAX_SIZE };
	struct drm_tessera_info info = { 0 };
	unsigned int i;

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_INFO, &info));
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
