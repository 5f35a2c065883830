/* SPDX-License-Identifier: MIT */
/*
 * libaccel command buffers: building the chip's command streams.
 *
 * One function per command of the chip (Documentation/chip.md,
 * "Commands" and "SparseCore"); ICI_WRITE's are in <accel/ici.h>.  Each checks what the
 * chip would check and returns the matching ACCEL_ERR_BAD_* code rather
 * than letting the job fail; it also checks that every tensor and region
 * lies inside its buffer (ACCEL_ERR_OUT_OF_BOUNDS).  A call that fails
 * leaves the command buffer as it was and a sentence naming the command,
 * operand and field in accel_cmdbuf_last_error().
 *
 * The command buffer records each buffer its commands name, with how
 * they use it (read, write); accel_submit() lists them for the driver,
 * which keeps them alive and orders jobs that share them (a job that
 * writes a buffer waits for earlier jobs that use it; a job that reads
 * it waits for earlier writers).  Semaphore commands count as reads, so
 * that jobs signalling each other through a semaphore are never made to
 * wait for each other's end.  Jobs that also share data in a buffer they
 * synchronise with semaphores must say so with ACCEL_USE_EXPLICIT, or
 * the later one waits for the earlier one to end: if that one waits for
 * the later one's signal, neither ends.
 *
 * The commands are copied to the device at accel_submit(): a command
 * buffer may be changed, reset or destroyed as soon as accel_submit()
 * returns, and submitted again unchanged as often as wanted.
 *
 * Thread safety: a command buffer is used by one thread at a time.
 * Different command buffers of one device may be built in parallel.
 */
#ifndef ACCEL_CMDBUF_H
#define ACCEL_CMDBUF_H

#include <stddef.h>
#include <stdint.h>

#include <accel/common.h>
#include <accel/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_device;
struct accel_buffer;
struct accel_cmdbuf;

/* How a job uses a buffer, for accel_cmdbuf_use_buffer(). */
#define ACCEL_USE_READ		0x1u
#define ACCEL_USE_WRITE		0x2u
/*
 * The jobs synchronise their use of the buffer themselves (semaphores,
 * dependencies): it is listed as read whatever the commands do, so jobs
 * that all mark it so never wait for each other through it.
 */
#define ACCEL_USE_EXPLICIT	0x4u

/**
 * accel_cmdbuf_create() - an empty command buffer for @dev.
 *
 * @dev may be NULL for a command buffer that is only encoded and
 * inspected (accel_cmdbuf_data()): it can name raw device VAs but no
 * buffers, and cannot be submitted.
 */
ACCEL_API int accel_cmdbuf_create(struct accel_device *dev,
				  struct accel_cmdbuf **cb);

/** accel_cmdbuf_destroy() - free a command buffer; NULL is allowed. */
ACCEL_API void accel_cmdbuf_destroy(struct accel_cmdbuf *cb);

/** accel_cmdbuf_reset() - drop every command and recorded buffer. */
ACCEL_API int accel_cmdbuf_reset(struct accel_cmdbuf *cb);

/**
 * accel_cmdbuf_count() - commands in the buffer; the next command's index,
 * as accel_job_status() reports a failing command.  0 for NULL.
 */
ACCEL_API uint32_t accel_cmdbuf_count(const struct accel_cmdbuf *cb);

/**
 * accel_cmdbuf_data() - the encoded commands (struct tsr_cmd_* of
 * <tessera/chip.h>, back to back).  Valid until the next change.
 */
ACCEL_API int accel_cmdbuf_data(const struct accel_cmdbuf *cb,
				const void **data, size_t *size);

/**
 * accel_cmdbuf_last_error() - what the last failed call on @cb found
 * wrong, e.g. "matmul: b.rows is 64, a.cols is 32: they must be equal";
 * "" when nothing failed since the last reset.  Never NULL.
 */
ACCEL_API const char *accel_cmdbuf_last_error(const struct accel_cmdbuf *cb);

/**
 * accel_cmdbuf_use_buffer() - list @buf for submission with @use
 * (ACCEL_USE_* bits), for commands that name it by raw device VA, or to
 * mark it ACCEL_USE_EXPLICIT.  Commands naming a buffer record it
 * themselves; uses add up.
 */
ACCEL_API int accel_cmdbuf_use_buffer(struct accel_cmdbuf *cb,
				      struct accel_buffer *buf, uint32_t use);

/** accel_cmdbuf_nop() - NOP: nothing. */
ACCEL_API int accel_cmdbuf_nop(struct accel_cmdbuf *cb);

/**
 * accel_cmdbuf_dma_copy() - DMA_COPY: @planes planes of @rows rows of
 * @row_bytes bytes from @src to @dst.
 *
 * Destination rows and planes must not overlap (ACCEL_ERR_BAD_STRIDE);
 * source ones may (a row stride of 0 repeats one row).
 */
ACCEL_API int accel_cmdbuf_dma_copy(struct accel_cmdbuf *cb,
				    const struct accel_region *dst,
				    const struct accel_region *src,
				    uint32_t row_bytes, uint32_t rows,
				    uint32_t planes);

/**
 * accel_cmdbuf_dma_fill() - DMA_FILL: the same shape as dma_copy, filled
 * with the 32-bit @pattern; @row_bytes, @dst's address and strides are
 * multiples of 4.
 */
ACCEL_API int accel_cmdbuf_dma_fill(struct accel_cmdbuf *cb,
				    const struct accel_region *dst,
				    uint32_t pattern, uint32_t row_bytes,
				    uint32_t rows, uint32_t planes);

/** accel_cmdbuf_copy() - DMA_COPY of @bytes contiguous bytes. */
ACCEL_API int accel_cmdbuf_copy(struct accel_cmdbuf *cb,
				struct accel_buffer *dst, uint64_t dst_offset,
				struct accel_buffer *src, uint64_t src_offset,
				uint32_t bytes);

/** accel_cmdbuf_fill() - DMA_FILL of @bytes contiguous bytes. */
ACCEL_API int accel_cmdbuf_fill(struct accel_cmdbuf *cb,
				struct accel_buffer *dst, uint64_t dst_offset,
				uint32_t pattern, uint32_t bytes);

/**
 * accel_cmdbuf_matmul() - MATMUL: @c = op(@a) x op(@b), or += with
 * TSR_MATMUL_ACCUMULATE.
 * @flags: TSR_MATMUL_TRANSPOSE_A (@a is K x M), TSR_MATMUL_TRANSPOSE_B
 *	(@b is N x K), TSR_MATMUL_ACCUMULATE
 *
 * @a and @b are both BF16, F32 or I8; @c is F32 or BF16 (I32 for I8).
 */
ACCEL_API int accel_cmdbuf_matmul(struct accel_cmdbuf *cb,
				  const struct accel_tensor *a,
				  const struct accel_tensor *b,
				  const struct accel_tensor *c, uint32_t flags);

/**
 * accel_cmdbuf_vpu() - VPU: @out = @op(@a[, @b[, @c]]) element-wise.
 * @op: enum tsr_vpu_op; unary ops take @a only, binary ops @a and @b,
 *	TSR_VPU_SELECT all three (@a != 0 ? @b : @c); unused operands are
 *	NULL
 *
 * @a has @out's shape; @b and @c have it too, or are one row (broadcast
 * down the rows) or one column (broadcast across).  F32 or BF16; ADD,
 * SUB, MUL, MAX and MIN also take all three I32 (32-bit, wrapping), on
 * chips with TSR_CAP_VPU_I32.
 */
ACCEL_API int accel_cmdbuf_vpu(struct accel_cmdbuf *cb, enum tsr_vpu_op op,
			       const struct accel_tensor *a,
			       const struct accel_tensor *b,
			       const struct accel_tensor *c,
			       const struct accel_tensor *out);

/**
 * accel_cmdbuf_reduce() - REDUCE: @op (enum tsr_reduce_op) along @axis:
 * 0 reduces the rows (@out is 1 x cols), 1 the columns (@out is rows x 1).
 */
ACCEL_API int accel_cmdbuf_reduce(struct accel_cmdbuf *cb,
				  enum tsr_reduce_op op, uint32_t axis,
				  const struct accel_tensor *in,
				  const struct accel_tensor *out);

/** accel_cmdbuf_cast() - CAST between F32, BF16 and I32, same shape. */
ACCEL_API int accel_cmdbuf_cast(struct accel_cmdbuf *cb,
				const struct accel_tensor *in,
				const struct accel_tensor *out);

/** accel_cmdbuf_transpose() - TRANSPOSE: @out = @in^T, same dtype. */
ACCEL_API int accel_cmdbuf_transpose(struct accel_cmdbuf *cb,
				     const struct accel_tensor *in,
				     const struct accel_tensor *out);

/**
 * accel_cmdbuf_sem_wait() - SEM_WAIT: wait until the 64-bit semaphore at
 * @offset of @buf (8-aligned; a raw VA if @buf is NULL) is >= @value.
 */
ACCEL_API int accel_cmdbuf_sem_wait(struct accel_cmdbuf *cb,
				    struct accel_buffer *buf, uint64_t offset,
				    uint64_t value);

/**
 * accel_cmdbuf_sem_wait_abort() - SEM_WAIT_ABORT: as accel_cmdbuf_sem_wait(),
 * but the command fails with the chip error PEER_ABORT (the job with
 * ACCEL_ERR_PEER_ABORT) once the 64-bit semaphore at @abort_offset of
 * @abort_buf (8-aligned; a raw VA if @abort_buf is NULL) is not zero.
 * Chips without TSR_CAP_SEM_ABORT fail it with BAD_OPCODE.
 */
ACCEL_API int accel_cmdbuf_sem_wait_abort(struct accel_cmdbuf *cb,
					  struct accel_buffer *buf,
					  uint64_t offset, uint64_t value,
					  struct accel_buffer *abort_buf,
					  uint64_t abort_offset);

/*
 * accel_cmdbuf_sem_wait_abort_flags()'s @flags: also fail, with the chip
 * error LINK_DOWN (ACCEL_ERR_LINK_DOWN), as soon as an ICI link of the
 * chip is not up (TSR_SEM_WAIT_LINKS): a wait for data that comes over
 * the links ends when a neighbour goes quiet, hangs up or is taken down.
 */
#define ACCEL_SEM_WAIT_LINKS	0x1u

/**
 * accel_cmdbuf_sem_wait_abort_flags() - accel_cmdbuf_sem_wait_abort() with
 * @flags (ACCEL_SEM_WAIT_*); unknown flags are ACCEL_ERR_INVALID_ARGUMENT.
 */
ACCEL_API int accel_cmdbuf_sem_wait_abort_flags(struct accel_cmdbuf *cb,
						struct accel_buffer *buf,
						uint64_t offset, uint64_t value,
						struct accel_buffer *abort_buf,
						uint64_t abort_offset,
						unsigned int flags);

/** accel_cmdbuf_sem_signal() - SEM_SIGNAL: store @value in the semaphore. */
ACCEL_API int accel_cmdbuf_sem_signal(struct accel_cmdbuf *cb,
				      struct accel_buffer *buf, uint64_t offset,
				      uint64_t value);

/**
 * accel_cmdbuf_sem_inc() - SEM_INC: add @value to the semaphore,
 * atomically against other queues' semaphore commands.
 */
ACCEL_API int accel_cmdbuf_sem_inc(struct accel_cmdbuf *cb,
				   struct accel_buffer *buf, uint64_t offset,
				   uint64_t value);

/**
 * accel_cmdbuf_timestamp() - TIMESTAMP: store the modeled device clock
 * (64-bit cycles) at @offset of @buf (8-aligned).
 */
ACCEL_API int accel_cmdbuf_timestamp(struct accel_cmdbuf *cb,
				     struct accel_buffer *buf, uint64_t offset);

/** accel_cmdbuf_interrupt() - INTERRUPT: raise the queue's user interrupt. */
ACCEL_API int accel_cmdbuf_interrupt(struct accel_cmdbuf *cb);

/* ------------------------------------------------------------ SparseCore */

/* struct accel_sc_ids.weights of ids without weights: each weighs 1. */
#define ACCEL_SC_UNWEIGHTED	UINT64_MAX

/**
 * struct accel_sc_ids - embedding ids in COO form in device memory:
 * entry i is embedding id col_ids[i] of sample row_ids[i], weighing
 * weights[i]
 * @buffer: the buffer holding the three arrays, or NULL for raw VAs
 * @row_ids: offset (or VA) of the u32 sample ids, 4-byte aligned
 * @col_ids: offset of the u32 embedding ids
 * @weights: offset of the f32 weights, or ACCEL_SC_UNWEIGHTED
 * @count: entries
 */
struct accel_sc_ids {
	struct accel_buffer *buffer;
	uint64_t row_ids;
	uint64_t col_ids;
	uint64_t weights;
	uint32_t count;
};

/**
 * struct accel_sc_limits - how SC_PARTITION routes ids
 * @partitions: embedding id mod @partitions picks the partition: the
 *	chip's SparseCores, or the chips a table is sharded over
 * @samples: sample ids are below it
 * @vocab: embedding ids are below it
 * @max_ids: max_ids_per_partition
 * @max_unique_ids: max_unique_ids_per_partition, at most @max_ids
 * @flags: TSR_SC_DROP to drop ids over the limits rather than fail
 */
struct accel_sc_limits {
	uint32_t partitions;
	uint32_t samples;
	uint32_t vocab;
	uint32_t max_ids;
	uint32_t max_unique_ids;
	uint32_t flags;
};

/**
 * accel_cmdbuf_sc_partition() - SC_PARTITION: dedup the ids of @in within
 * each sample and route them to @limits->partitions partitions of @out.
 * @out: @limits->partitions x @limits->max_ids slots (@out->count must
 *	be that); its weights may be ACCEL_SC_UNWEIGHTED, not to write them
 * @counts: @limits->partitions struct tsr_sc_counts, 4-byte aligned
 *
 * The chip also checks that the limits fit in a SparseCore's SPMEM
 * (TSR_ERR_SPMEM), which depends on the chip.
 */
ACCEL_API int accel_cmdbuf_sc_partition(struct accel_cmdbuf *cb,
					const struct accel_sc_limits *limits,
					const struct accel_sc_ids *in,
					const struct accel_sc_ids *out,
					const struct accel_region *counts);

/**
 * accel_cmdbuf_sc_gather() - SC_GATHER: @out[s] = the rows of @table that
 * sample s names, weighted and combined with @combiner.
 *
 * @table is F32 or BF16, its rows padded to 32 bytes (@table->stride x
 * element size a multiple of TSR_SC_ROW_ALIGN) and 32-byte aligned; @out
 * is samples x @table->cols, F32 or BF16.
 */
ACCEL_API int accel_cmdbuf_sc_gather(struct accel_cmdbuf *cb,
				     enum tsr_sc_combiner combiner,
				     const struct accel_sc_ids *in,
				     const struct accel_tensor *table,
				     const struct accel_tensor *out);

/**
 * accel_cmdbuf_sc_scatter_add() - SC_SCATTER_ADD: the gradient of a
 * gather with @combiner, @grad (samples x dim), times @scale, added to
 * the rows of @dst (a table, padded and aligned as a gather's) that @in
 * names.
 */
ACCEL_API int accel_cmdbuf_sc_scatter_add(struct accel_cmdbuf *cb,
					  enum tsr_sc_combiner combiner,
					  const struct accel_sc_ids *in,
					  const struct accel_tensor *grad,
					  const struct accel_tensor *dst,
					  float scale);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_CMDBUF_H */
