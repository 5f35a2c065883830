/* SPDX-License-Identifier: MIT */
/*
 * Collectives: all-reduce, reduce-scatter, all-gather and broadcast over
 * the chips of a slice, chip to chip over ICI.
 *
 * A communicator spans every chip of the slice.  Each host process creates
 * one over its own chips (the other hosts' processes create theirs) and
 * makes the same collective calls in the same order; each call names one
 * buffer per local chip.  The data moves only between chips: remote
 * writes into the communicator's windows, semaphores, VPU reductions, no
 * host copies.  Results are bit-identical on every chip and from run to
 * run (Documentation/collectives.md says why, and what each call costs).
 */
#ifndef ACCEL_COLLECTIVE_H
#define ACCEL_COLLECTIVE_H

#include <stdint.h>

#include <tessera/chip.h>

#include <accel/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_device;
struct accel_buffer;
struct accel_comm;
struct accel_coll;
struct accel_job;

/** enum accel_coll_algo - how an all-reduce moves its data */
enum accel_coll_algo {
	/* One colour per dimension at once (the patent's multi-colour
	 * pincer); on a 1-D slice, the bidirectional ring. */
	ACCEL_COLL_PINCER = 0,
	/* The dimensions one after the other, bidirectional rings: the
	 * baseline the pincer is measured against. */
	ACCEL_COLL_ONE_COLOUR = 1,
};

/** enum accel_reduce_op - how values from different chips combine */
enum accel_reduce_op {
	ACCEL_REDUCE_SUM = 1,
	ACCEL_REDUCE_MAX,
	ACCEL_REDUCE_MIN,
};

/**
 * accel_reduce_vpu_op() - the VPU operation the chips combine values with
 * for @op (TSR_VPU_ADD, _MAX, _MIN), 0 for an unknown one: with
 * accel_ref_vpu() (<accel/ref.h>), the CPU's answer for a reduction.
 */
ACCEL_API enum tsr_vpu_op accel_reduce_vpu_op(enum accel_reduce_op op);

/**
 * struct accel_comm_opts - how to set up a communicator; all zero is the
 * default
 * @algo: enum accel_coll_algo
 * @window_id: which communicator of the slice this is, the same on every
 *	host, below accel_device_info.max_windows: communicators open at
 *	once, or one after the other while hosts may be out of step, each
 *	need their own.  The window each chip opens is derived from it and
 *	the key, so a program without the key cannot tell which id to take
 *	first; different numbers under one key never share a window.
 * @key: the windows' key; 0 for $TESSERA_SLICE_KEY (hexadecimal, set by
 *	tools/tessera-slice and tools/tessera-vm), or without it, when
 *	@devs hold every chip of the slice, a random one
 * @slot_bytes: the most one message carries; 0 for 256 KiB; a multiple
 *	of 8 from 4 KiB to 4 MiB
 * @connect_timeout_ns: how long to wait for the other chips' processes
 *	to come (a failure ends the wait at once); 0 for 60 s
 */
struct accel_comm_opts {
	enum accel_coll_algo algo;
	uint32_t window_id;
	uint64_t key;
	uint64_t slot_bytes;
	uint64_t connect_timeout_ns;
};

/**
 * accel_comm_create() - a communicator over the slice of @devs.
 * @devs: this process's chips of the slice, each opened once; the
 *	communicator uses them until destroyed
 * @count: entries in @devs, 1 to ACCEL_SLICE_MAX_LOCAL
 * @opts: NULL for the defaults
 *
 * Opens the communicator's window on each chip and greets its neighbours
 * (along each dimension of the slice, on this host or another) until
 * every chip of the slice has come: ACCEL_ERR_TIMEOUT if one never does
 * within @opts->connect_timeout_ns (or its key differs).  A set-up that
 * fails anywhere fails on every chip within seconds, each naming what it
 * saw: ACCEL_ERR_JOB_HUNG on the chip whose queue hung,
 * ACCEL_ERR_LINK_DOWN on a chip with a link to a neighbour down,
 * ACCEL_ERR_PEER_ABORT on the others (another chip gave up).
 * ACCEL_ERR_INVALID_ARGUMENT if two of @devs are one chip
 * or lie in different slices, or for a $TESSERA_SLICE_KEY that is not
 * hexadecimal; ACCEL_ERR_NO_SLICE_KEY without a key when other processes
 * hold chips of the slice; ACCEL_ERR_NOT_SUPPORTED on chips without ICI
 * or with a single queue; ACCEL_ERR_BUSY if the window id is taken on a
 * chip (by another program, or an open communicator of the same key and
 * @opts->window_id), rather than sharing a window with it.
 */
ACCEL_API int accel_comm_create(struct accel_device *const *devs,
				unsigned int count,
				const struct accel_comm_opts *opts,
				struct accel_comm **comm);

/**
 * accel_comm_destroy() - tell the neighbours, wait until they are through
 * with this chip's window (up to the connect timeout), close the windows.
 * Call it once the communicator's collectives have ended (waited for with
 * accel_coll_wait()).  NULL is allowed.
 */
ACCEL_API void accel_comm_destroy(struct accel_comm *comm);

/** accel_comm_size() - the chips of the whole slice. */
ACCEL_API unsigned int accel_comm_size(const struct accel_comm *comm);

/**
 * accel_comm_rank() - the slice index (x + X * (y + Y * z)) of local
 * chip @i, the position of its block in reduce-scatter and all-gather.
 */
ACCEL_API unsigned int accel_comm_rank(const struct accel_comm *comm,
				       unsigned int i);

/**
 * accel_comm_colours() - the colours an all-reduce of this communicator
 * runs at once: one per dimension longer than 1, fewer if the chips have
 * too few queues (two per colour), 1 for ACCEL_COLL_ONE_COLOUR.
 */
ACCEL_API unsigned int accel_comm_colours(const struct accel_comm *comm);

/**
 * accel_all_reduce() - every chip's @recv becomes the element-wise @op of
 * every chip's @send.
 * @send: per local chip, @count elements of @dtype at offset 0
 * @recv: per local chip, room for @count elements; may be @send (in place)
 * @dtype: TSR_DTYPE_F32, TSR_DTYPE_BF16 (added up in f32, rounded once)
 *	or TSR_DTYPE_I32 (sums wrap; ACCEL_ERR_NOT_SUPPORTED on chips without
 *	TSR_CAP_VPU_I32)
 * @coll: NULL to wait for the end, else the running collective (wait for
 *	it with accel_coll_wait())
 *
 * Buffers must be in HBM.  Any @count >= 1.  ACCEL_ERR_COMM_BROKEN once
 * the communicator gave up (accel_coll_wait()), as for every call below.
 */
ACCEL_API int accel_all_reduce(struct accel_comm *comm,
			       struct accel_buffer *const *send,
			       struct accel_buffer *const *recv,
			       uint64_t count, enum tsr_dtype dtype,
			       enum accel_reduce_op op, struct accel_coll **coll);

/**
 * accel_reduce_scatter() - every chip's @recv (@count elements) becomes
 * the @op over all chips of block accel_comm_rank() of their @send
 * (@count times accel_comm_size() elements).
 */
ACCEL_API int accel_reduce_scatter(struct accel_comm *comm,
				   struct accel_buffer *const *send,
				   struct accel_buffer *const *recv,
				   uint64_t count, enum tsr_dtype dtype,
				   enum accel_reduce_op op,
				   struct accel_coll **coll);

/**
 * accel_all_gather() - every chip's @recv (@count times accel_comm_size()
 * elements) becomes all chips' @send (@count elements each), in rank
 * order.
 */
ACCEL_API int accel_all_gather(struct accel_comm *comm,
			       struct accel_buffer *const *send,
			       struct accel_buffer *const *recv,
			       uint64_t count, enum tsr_dtype dtype,
			       struct accel_coll **coll);

/**
 * accel_all_to_all() - block j (@count elements) of every chip's @send
 * goes to block i of the @recv of the chip of rank j, i being the
 * sender's rank: @send and @recv hold @count times accel_comm_size()
 * elements (f32, bf16 or i32), and differ.
 */
ACCEL_API int accel_all_to_all(struct accel_comm *comm,
			       struct accel_buffer *const *send,
			       struct accel_buffer *const *recv,
			       uint64_t count, enum tsr_dtype dtype,
			       struct accel_coll **coll);

/**
 * accel_send() - send @count elements of @dtype at the start of @buf,
 * from local chip @i, to the chip of rank @peer, which receives them with
 * accel_recv() (in this process or another).  Between two chips, sends
 * and receptions pair up in the order they were called; a send may end
 * before its reception is called, a slot's worth at a time.
 *
 * ACCEL_ERR_INVALID_ARGUMENT for a local chip or peer that does not exist,
 * or the chip itself.
 */
ACCEL_API int accel_send(struct accel_comm *comm, unsigned int i,
			 struct accel_buffer *buf, uint64_t count,
			 enum tsr_dtype dtype, unsigned int peer,
			 struct accel_coll **coll);

/** accel_recv() - receive into local chip @i's @buf what @peer sends. */
ACCEL_API int accel_recv(struct accel_comm *comm, unsigned int i,
			 struct accel_buffer *buf, uint64_t count,
			 enum tsr_dtype dtype, unsigned int peer,
			 struct accel_coll **coll);

/**
 * accel_broadcast() - every chip's @buf (@count elements of @dtype: f32,
 * bf16 or i32) becomes the chip of rank @root's @buf.
 *
 * ACCEL_ERR_INVALID_ARGUMENT for a @root not below accel_comm_size().
 */
ACCEL_API int accel_broadcast(struct accel_comm *comm,
			      struct accel_buffer *const *buf, uint64_t count,
			      enum tsr_dtype dtype, unsigned int root,
			      struct accel_coll **coll);

/**
 * accel_coll_wait() - wait for a collective to end on every local chip.
 *
 * Calls on a communicator end in the order they were made, as operations
 * on one stream do: a call has ended once it and every call made before
 * it on the communicator have, and waiting for it waits for those too (a
 * call's jobs may use fewer queues than the calls before it, and end
 * first on the chips).  So a program may wait for its last call only.
 *
 * ACCEL_OK; ACCEL_ERR_TIMEOUT when @timeout_ns ran out first; or the
 * first failure of its jobs (ACCEL_ERR_LINK_DOWN, ACCEL_ERR_PEER_ABORT
 * when another chip gave up, ACCEL_ERR_JOB_HUNG when a neighbour never
 * answered, ...).  A failure or a timeout breaks the communicator: the
 * slice gives up on it (every chip's waits fail with
 * ACCEL_ERR_PEER_ABORT), and every later call on it fails at once with
 * ACCEL_ERR_COMM_BROKEN (with ACCEL_ERR_PEER_ABORT first on a host that
 * had no call running): destroy it and create another.  A @timeout_ns of
 * 0 only asks: ACCEL_ERR_TIMEOUT then leaves the collective running.
 */
ACCEL_API int accel_coll_wait(struct accel_coll *coll, uint64_t timeout_ns);

/**
 * accel_coll_last_jobs() - what a job on local chip @i waits for to run
 * after the collective there: the last job the collective queued on each
 * of the chip's queues it uses, for accel_submit_opts.wait_jobs.
 * @jobs: room for TSR_MAX_QUEUES entries; they stay the collective's, valid
 *	until accel_coll_destroy() (a job submitted to wait for them holds
 *	their fences)
 * @count: set to the entries written, 0 if the call left the chip nothing
 *	to do
 *
 * The chip then starts the next job the moment the collective ends there,
 * with no wait on the host in between (a training step's update after its
 * gradients' all-reduce).  That job starts whether the collective
 * succeeded or not: accel_coll_wait() still says how it went.
 * ACCEL_ERR_INVALID_ARGUMENT for a NULL argument or an @i that is not a
 * local chip of the communicator.
 */
ACCEL_API int accel_coll_last_jobs(const struct accel_coll *coll, unsigned int i,
				   struct accel_job **jobs, unsigned int *count);

/**
 * accel_coll_cycles() - the collective's modeled time in device cycles,
 * over the local chips: from the start of its last stream to start (when
 * every queue it uses was free) to the end of its last job; 0 until it
 * has ended.
 */
ACCEL_API uint64_t accel_coll_cycles(struct accel_coll *coll);

/** accel_coll_destroy() - free an ended collective; NULL is allowed. */
ACCEL_API void accel_coll_destroy(struct accel_coll *coll);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_COLLECTIVE_H */
