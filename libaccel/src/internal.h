/* SPDX-License-Identifier: MIT */
/* libaccel internals shared between its source files. */
#ifndef ACCEL_INTERNAL_H
#define ACCEL_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <accel/accel.h>

/* Commands are built in place, and the chip's formats are little-endian. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "libaccel builds the chip's commands for little-endian hosts");

/* Retired command buffer copies a device keeps, and jobs each remembers. */
#define ACCEL_CMD_POOL		16
#define ACCEL_CMD_COPY_JOBS	8
#define ACCEL_SYNCOBJ_POOL	256
#define ACCEL_ENDED_SEQS	256
/* The command arena (cmd_arena.c): its bytes, and pieces out at once. */
#define ACCEL_ARENA_SIZE	(2u << 20)
#define ACCEL_ARENA_PIECES	256
/* Streams of a file's jobs: a hardware queue at one of three priorities. */
#define ACCEL_PRIORITIES	3
#define ACCEL_STREAMS		(TSR_MAX_QUEUES * ACCEL_PRIORITIES)

struct accel_arena;

struct accel_device {
	int fd;
	unsigned int index;
	unsigned int minor;
	char pci_address[ACCEL_PCI_ADDRESS_LEN];
	uint32_t num_queues;
	uint32_t mxu_dim;		/* tiles of ops are multiples of it */
	uint32_t topology[TSR_ICI_MAX_DIMS];	/* the slice, for ICI_WRITE's check */
	/*
	 * Protects the buffer list and every buffer's reference count and
	 * CPU mapping, and the cached outcome of every job.
	 */
	pthread_mutex_t lock;
	/* Live buffers, so that an import of a known buffer finds it. */
	struct accel_buffer *buffers;
	/* The trace recording the device's jobs, or NULL (trace.c). */
	struct accel_trace *trace;
	/* With TESSERA_TRACE_DIR: the device's own trace, and where it goes. */
	struct accel_trace *env_trace;
	char *env_trace_dir;
	/*
	 * Device copies of command buffers that their command buffers gave
	 * up, with the jobs that may still read them: taken again once those
	 * jobs are done, rather than allocating, mapping and zeroing a new
	 * buffer for every job (cmdbuf.c).  Under @cmd_pool_lock.
	 */
	pthread_mutex_t cmd_pool_lock;
	/* The command arena, made at the first upload; under cmd_pool_lock. */
	struct accel_arena *arena;
	struct accel_cmd_copy {
		struct accel_buffer *bo;
		uint64_t jobs[ACCEL_CMD_COPY_JOBS];
		unsigned int njobs;
	} cmd_pool[ACCEL_CMD_POOL];
	unsigned int cmd_pooled;
	/*
	 * Syncobjs of destroyed jobs, for the next jobs' fences: a SUBMIT
	 * replaces a binary syncobj's fence, so one can serve job after job
	 * without a create and a destroy each (job.c).  Under @lock; the
	 * kernel frees them with the file.
	 */
	uint32_t syncobjs[ACCEL_SYNCOBJ_POOL];
	unsigned int syncobjs_free;
	/*
	 * The last jobs whose end accel_job_status() saw, by seq: an upload
	 * that asks whether one may still run need not ask the driver
	 * (accel_job_may_be_pending()).  Under @lock.
	 */
	uint64_t ended_seqs[ACCEL_ENDED_SEQS];
	unsigned int ended_next;
};

struct accel_buffer {
	struct accel_device *dev;
	uint32_t handle;
	uint32_t placement;		/* ACCEL_PLACEMENT_* */
	uint64_t size;
	uint64_t device_va;
	uint64_t mmap_offset;
	void *map;			/* NULL until first mapped */
	unsigned int refs;
	struct accel_buffer *prev, *next;
};

/*
 * A buffer for a command buffer's commands: read-only to the device.
 */
int accel_buffer_create_commands(struct accel_device *dev, uint64_t size,
				 struct accel_buffer **buf);

/* The libaccel code for a failed system call's errno. */
int accel_error_from_errno(int err);

/*
 * Fill @size bytes at @out (a caller's struct of that size, which may be
 * older or newer than ours) from @ours, of @ours_size bytes: what the
 * caller's struct has room for, zero beyond ours.  @size must be at least
 * @min, the size of the struct's first version.
 */
int accel_copy_sized(void *out, size_t size, const void *ours,
		     size_t ours_size, size_t min);

struct drm_tessera_port;

/* A port as LINK_INFO reports it, in libaccel's terms. */
void accel_port_from_driver(const struct drm_tessera_port *p,
			    struct accel_ici_port *out);

/* Take one more reference on @buf (the command buffers' way). */
void accel_buffer_ref(struct accel_buffer *buf);

/*
 * Copy the commands of @cb where the chip can read them: a piece of the
 * device's command arena, or else a buffer object of the command buffer's
 * own; return the buffer's handle, the commands' offset in it and their
 * size.  A copy that jobs may still read is never overwritten.
 */
int accel_cmdbuf_upload(struct accel_cmdbuf *cb, uint32_t *handle,
			uint64_t *offset, uint32_t *size);

/* Record that job @seq, on @stream, runs the commands last uploaded. */
void accel_cmdbuf_submitted(struct accel_cmdbuf *cb, unsigned int stream,
			    uint64_t seq);

/* The stream (scheduler entity) of a job on @queue at DRM @priority. */
unsigned int accel_stream(uint32_t queue, uint32_t priority);

/*
 * The command arena (cmd_arena.c).  accel_arena_take() hands out a piece
 * of @len bytes at *@offset of buffer *@handle, named *@id, held for its
 * command buffer until accel_arena_release(); ACCEL_ERR_BUSY when the
 * arena has no room now (the caller makes a copy of its own),
 * ACCEL_ERR_TOO_LARGE for a piece it never takes.  accel_arena_job()
 * records a job that reads the piece; accel_arena_ended() that the jobs
 * of @stream up to @seq have ended.  accel_arena_free() frees the arena
 * (with @idle_only, only if no piece is out).
 */
int accel_arena_take(struct accel_device *dev, size_t len, uint32_t *handle,
		     uint64_t *offset, uint64_t *id);
void *accel_arena_map(struct accel_device *dev, uint64_t offset);
void accel_arena_job(struct accel_device *dev, uint64_t id,
		     unsigned int stream, uint64_t seq);
void accel_arena_release(struct accel_device *dev, uint64_t id);
void accel_arena_ended(struct accel_device *dev, unsigned int stream,
		       uint64_t seq);
void accel_arena_free(struct accel_device *dev, bool idle_only);

/* The buffers the commands of @cb use, for SUBMIT's list. */
unsigned int accel_cmdbuf_buffer_count(const struct accel_cmdbuf *cb);
void accel_cmdbuf_buffer_at(const struct accel_cmdbuf *cb, unsigned int i,
			    uint32_t *handle, uint32_t *use);

struct accel_device *accel_cmdbuf_device(const struct accel_cmdbuf *cb);

/*
 * Where a command buffer ends, so that an op appending several commands
 * can take them all back when one fails.  A rollback keeps the use flags
 * the dropped commands added to buffers recorded before the mark: a job
 * may then wait on a buffer it no longer writes, never the reverse.
 */
struct accel_cmdbuf_mark {
	size_t len;
	uint32_t count;
	unsigned int nuses;
};

void accel_cmdbuf_mark(const struct accel_cmdbuf *cb,
		       struct accel_cmdbuf_mark *mark);
void accel_cmdbuf_rollback(struct accel_cmdbuf *cb,
			   const struct accel_cmdbuf_mark *mark);

/* Operands of a VPU op: 1, 2 or 3; 0 for an unknown op. */
unsigned int accel_vpu_operands(enum tsr_vpu_op op);

/* Set the message accel_cmdbuf_last_error() returns; returns @err. */
int accel_cmdbuf_fail(struct accel_cmdbuf *cb, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Wait up to @timeout_ns for syncobj @syncobj of @dev to signal:
 * ACCEL_OK, ACCEL_ERR_TIMEOUT, or what the wait failed with.
 */
int accel_sync_wait(struct accel_device *dev, uint32_t syncobj,
		    uint64_t timeout_ns);

/*
 * With TESSERA_TRACE_DIR set, a device records its jobs from open to close
 * and writes them there as it closes (Documentation/tracing.md).
 */
void accel_trace_env_open(struct accel_device *dev);
void accel_trace_env_close(struct accel_device *dev);

/* The trace recording @dev's jobs, or NULL. */
struct accel_trace *accel_trace_of(struct accel_device *dev);
/* A buffer for the trace of a job of @commands commands, of *@size bytes. */
int accel_trace_buffer(struct accel_device *dev, uint32_t commands,
		       struct accel_buffer **buf, uint32_t *size);
/*
 * Job @seq, whose fence is @job_syncobj, was submitted with trace buffer
 * @buf: the trace takes the buffer over, and reads it once the job ends.
 */
int accel_trace_submitted(struct accel_device *dev, struct accel_buffer *buf,
			  uint64_t seq, uint32_t job_syncobj);

/* Whether job @seq of @dev may still be queued or running. */
bool accel_job_may_be_pending(struct accel_device *dev, uint64_t seq);
/* Free the command buffer copies @dev keeps for reuse (cmdbuf.c). */
void accel_cmd_pool_drain(struct accel_device *dev);

#endif /* ACCEL_INTERNAL_H */
