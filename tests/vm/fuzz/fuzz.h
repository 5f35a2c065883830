/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The ioctl fuzzer's state, shared by its parts (tessera_fuzz_test.c says
 * what it does): the pools of what each file holds, the flight recorder,
 * the table of calls, and the functions the parts call in each other.
 */
#ifndef TESSERA_FUZZ_H
#define TESSERA_FUZZ_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

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
#define FUZZ_WINDOWS		4	/* windows a file keeps open between bursts */
#define FUZZ_BATCH_JOBS		8	/* jobs of a SUBMIT_BATCH the fuzzer builds */
#define FUZZ_JOB_BOS		16	/* buffers a job lists */
#define FUZZ_JOB_SYNCS		4	/* in- and out-syncs of a job */
#define FUZZ_JOB_EXTS		2	/* links of a job's extension chain */

/* What the fuzzer does: the ioctls, mmap() and the rest. */
enum fuzz_op {
	OP_GET_PARAM,
	OP_BO_CREATE,
	OP_BO_INFO,
	OP_BO_MADVISE,
	OP_SUBMIT,
	OP_SUBMIT_BATCH,
	OP_JOB_STATUS,
	OP_WINDOW_OPEN,
	OP_WINDOW_CLOSE,
	OP_LINK_INFO,
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
	bool ro;		/* DRM_TESSERA_BO_DEVICE_READ_ONLY */
	bool imported;		/* by PRIME: ro may be unknown */
	bool dontneed;		/* BO_MADVISE DONTNEED: may be purged by now */
	bool purged;		/* BO_MADVISE answered retained 0 */
	void *map;		/* CPU mapping of a command buffer */
};

struct fuzz_syncobj {
	__u32 handle;
	bool fence;		/* holds a fence */
	bool timeline;		/* the fence is a timeline point */
	__u64 point;		/* the last timeline point added */
};

/* A window a file opened. */
struct fuzz_window {
	__u32 id;
	__u32 obj;		/* the buffer's fuzzer name, 0 if unknown */
	__u64 key;
	__u64 va;		/* device VA of its first byte */
	__u64 size;
	bool cmd;		/* on a command buffer: no job writes it */
};

struct fuzz_file {
	const char *node;
	int fd;
	__u32 context_id;
	__u32 num_queues;
	__u64 hbm_size;
	bool traces;		/* the chip writes job traces (TSR_CAP_TRACE) */
	__u32 ici_ports;	/* 0 on a chip without ICI */
	__u32 ports_wired;
	__u8 coords[3];		/* the chip's, in its slice */
	struct fuzz_bo bo[FUZZ_BOS];
	unsigned int nbo;
	__u64 bo_bytes;
	struct fuzz_syncobj so[FUZZ_SYNCOBJS];
	unsigned int nso;
	__u32 stale[FUZZ_STALE];
	__u64 last_seq;
	__u8 seq_queue[DRM_TESSERA_JOB_HISTORY];
	bool banned;
	struct fuzz_window win[DRM_TESSERA_MAX_WINDOWS];
	unsigned int nwin;
};

struct fuzz_dmabuf {
	int fd;
	__u32 obj;
	__u64 size;
	bool cmd;
	const char *ro_on;	/* DEVICE_READ_ONLY: the node it is so on */
};

struct fuzz_mapping {
	void *addr;
	size_t len;
	int prot;		/* what is touched: 0 once it may be purged */
	__u32 obj;		/* the buffer's fuzzer name, 0 if unknown */
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
	/* Bit n: object n was marked DONTNEED once (obj_ever_dontneed()). */
	__u8 *dontneed_objs;
	__u32 dontneed_objs_size;	/* bytes */
	int null_fd;
	__u8 *edge;		/* 8 readable bytes, then an inaccessible page */
	__u8 *noaccess;
	__u64 violations;
	char first_violation[512];	/* repeated after the summary */
	bool exact;		/* the fuzzer's own call: no mutation */
	bool trace;		/* print every call */
	bool reported[256];	/* undocumented fence errors reported */
	unsigned int hangs;
	char debugfs[320];	/* the device's debugfs directory, or "" */
	bool fail_points;	/* the driver's failure points are there */
	bool debug_regs;	/* the chip's fault injection is there */
	bool faulted;		/* a chip fault was injected */
	bool irqs_dropped;	/* interrupts may have been lost */
	unsigned int max_windows_per_file;	/* the module parameter */
	unsigned int max_windows_per_user;	/* the module parameter */
	/*
	 * Per chip (by its first file), windows of closed files that may
	 * still be open: a mapping or a racing call holds the file a while.
	 */
	bool lingering[FUZZ_FILES][DRM_TESSERA_MAX_WINDOWS];
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
	 * SUBMIT_BATCH's jobs, up to DRM_TESSERA_MAX_STRIDE bytes apart, and
	 * each job's buffers, syncs and extension chain (SUBMIT's job uses
	 * the first chain).
	 */
	__u8 jobs[(FUZZ_BATCH_JOBS + 1) * DRM_TESSERA_MAX_STRIDE];
	struct drm_tessera_submit_bo job_bos[FUZZ_BATCH_JOBS][FUZZ_JOB_BOS];
	struct drm_tessera_sync job_syncs[FUZZ_BATCH_JOBS][FUZZ_JOB_SYNCS];
	struct drm_tessera_ext_trace ext[FUZZ_BATCH_JOBS][FUZZ_JOB_EXTS];
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

/* What a field of an argument holds: how to mutate it. */
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

/* A call the fuzzer makes: fuzz_ops[] in ops.c has one per enum fuzz_op. */
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

/* mutate.c */
__u64 splitmix64(__u64 *state);
__u64 now_ns(void);
__u64 rnd(struct fuzz *fz);
__u64 below(struct fuzz *fz, __u64 n);
bool one_in(struct fuzz *fz, unsigned int n);
__u64 boundary(struct fuzz *fz);
__u64 fuzz_value(struct fuzz *fz, __u64 valid);
__u64 field_get(const void *arg, const struct fuzz_field *fl);
void *bad_pointer(struct fuzz *fz);
__u32 stale_handle(struct fuzz *fz, struct fuzz_file *f);
__u64 fuzz_timeout(struct fuzz *fz);
bool mutate(struct fuzz *fz, struct fuzz_file *f, enum fuzz_op op,
	    void *arg);

/* call.c */
extern struct fuzz_recorder *recorder;
void print_last_calls(unsigned int count);
void violation(struct fuzz *fz, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
bool errno_allowed(const int *allowed, int err);
struct fuzz_record *record_start(struct fuzz *fz, struct fuzz_file *f,
				 enum fuzz_op op, unsigned long request,
				 const void *arg, unsigned int size);
void record_end(struct fuzz *fz, struct fuzz_record *r, enum fuzz_op op,
		int err);
int fuzz_ioctl(struct fuzz *fz, struct fuzz_file *f, enum fuzz_op op,
	       void *arg, bool valid);

/* ops.c */
extern const struct fuzz_op_desc fuzz_ops[OP_COUNT];
void fuzz_step(struct fuzz *fz);

/* bo.c */
struct fuzz_bo *find_bo(struct fuzz_file *f, __u32 handle);
struct fuzz_bo *pick_bo(struct fuzz *fz, struct fuzz_file *f);
struct fuzz_bo *pick_bo_role(struct fuzz *fz, struct fuzz_file *f,
			     bool cmd);
bool obj_ever_dontneed(const struct fuzz *fz, __u32 obj);
void keep_zombie(struct fuzz *fz, void *addr, size_t len, int prot,
		 __u32 obj);
void make_room(struct fuzz *fz, struct fuzz_file *f, __u64 size);
struct fuzz_bo *add_bo(struct fuzz *fz, struct fuzz_file *f,
		       __u32 handle, __u32 obj, bool hbm, bool cmd,
		       __u64 size);
void op_bo_create(struct fuzz *fz, struct fuzz_file *f);
void op_bo_info(struct fuzz *fz, struct fuzz_file *f);
void op_bo_madvise(struct fuzz *fz, struct fuzz_file *f);
void op_gem_close(struct fuzz *fz, struct fuzz_file *f);
void op_mmap(struct fuzz *fz, struct fuzz_file *f);

/* syncobj.c */
struct fuzz_syncobj *find_syncobj(struct fuzz_file *f, __u32 handle);
struct fuzz_syncobj *pick_syncobj(struct fuzz *fz, struct fuzz_file *f);
void op_syncobj_create(struct fuzz *fz, struct fuzz_file *f);
void op_syncobj_destroy(struct fuzz *fz, struct fuzz_file *f);
void op_syncobj_wait(struct fuzz *fz, struct fuzz_file *f);
void op_syncobj_timeline_wait(struct fuzz *fz, struct fuzz_file *f);
void op_syncobj_reset(struct fuzz *fz, struct fuzz_file *f);
void op_syncobj_signal(struct fuzz *fz, struct fuzz_file *f);
void op_syncobj_timeline_signal(struct fuzz *fz, struct fuzz_file *f);
void op_syncobj_query(struct fuzz *fz, struct fuzz_file *f);

/* files.c */
void open_file(struct fuzz *fz, struct fuzz_file *f);
void close_file(struct fuzz *fz, struct fuzz_file *f);
void op_reopen(struct fuzz *fz, struct fuzz_file *f);
void forget_dmabuf(struct fuzz *fz, struct fuzz_dmabuf *d);
void op_prime_handle_to_fd(struct fuzz *fz, struct fuzz_file *f);
void op_prime_fd_to_handle(struct fuzz *fz, struct fuzz_file *f);

/* submit.c */
void op_submit(struct fuzz *fz, struct fuzz_file *f);
void op_submit_batch(struct fuzz *fz, struct fuzz_file *f);
void op_job_status(struct fuzz *fz, struct fuzz_file *f);

/* info.c */
void op_get_param(struct fuzz *fz, struct fuzz_file *f);
void op_unknown_ioctl(struct fuzz *fz, struct fuzz_file *f);
void op_fdinfo(struct fuzz *fz, struct fuzz_file *f);

/* ici.c */
int read_max_windows_per(const char *what);
bool check_ici_param(const struct fuzz_file *f, __u32 param, __u32 index,
		     __u64 value);
bool window_overlaps(const struct fuzz_file *f, __u32 obj, __u64 va,
		     __u64 size);
const struct fuzz_window *pick_window(struct fuzz *fz,
				      const struct fuzz_file *f);
void windows_linger(struct fuzz *fz, const struct fuzz_file *f);
void op_window_open(struct fuzz *fz, struct fuzz_file *f);
void op_window_close(struct fuzz *fz, struct fuzz_file *f);
void op_link_info(struct fuzz *fz, struct fuzz_file *f);

/* chaos.c */
int debugfs_write(const struct fuzz *fz, const char *knob,
		  unsigned int value);
void op_chaos(struct fuzz *fz, struct fuzz_file *f);
void find_debugfs(struct fuzz *fz);
int fail_points_set(const struct fuzz *fz, unsigned int probability);

/* racer.c */
extern const int race_errnos[];
int race_lookup(int fd, __u32 handle, bool submit, const char **name);
void *racer(void *arg);

#endif /* TESSERA_FUZZ_H */
