/* SPDX-License-Identifier: MIT */
/*
 * libaccel ops: operations of any size composed from the chip's commands.
 *
 * The chip's commands have limits (2^20 rows or columns, 2^28 elements per
 * operand) and read system memory at PCIe speed.  The ops split work into
 * tiles within those limits and, given a scratch buffer in HBM, stage
 * operands that live in system memory through it.  Like the builder
 * functions of <accel/cmdbuf.h> they only append commands to a command
 * buffer: submit it with accel_submit() as usual.  On error nothing is
 * appended and accel_cmdbuf_last_error() names the problem.
 *
 * Tensors here may be larger than one command allows: rows and cols up to
 * 2^32 - 1; all the other rules of struct accel_tensor hold.
 *
 * Scratch: ops that need room for intermediate values (reductions of more
 * than 2^20 columns, softmax) or that stage through HBM (matmul) take a
 * scratch buffer, used from its start.  The job writes it, so jobs
 * sharing one scratch buffer run one after the other (implicit fences);
 * give concurrent jobs their own.  The *_scratch_size() functions say how
 * much an op wants.
 *
 * Numerics are the chip's (Documentation/chip.md, "Numerics"); the CPU
 * reference in <accel/ref.h> computes the same thing on the host.
 *
 * Thread safety: as for the builder, one command buffer per thread.
 */
#ifndef ACCEL_OPS_H
#define ACCEL_OPS_H

#include <stdint.h>

#include <accel/common.h>
#include <accel/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_buffer;
struct accel_cmdbuf;

/* struct accel_matmul_plan.staged: operands copied through scratch HBM. */
#define ACCEL_STAGE_A		0x1u
#define ACCEL_STAGE_B		0x2u
#define ACCEL_STAGE_C		0x4u
#define ACCEL_STAGE_ALL		(ACCEL_STAGE_A | ACCEL_STAGE_B | ACCEL_STAGE_C)
/*
 * struct accel_matmul_shape.stage: stage the operands asked for even where
 * that does not reduce what crosses PCIe.
 */
#define ACCEL_STAGE_ALWAYS	0x100u

/*
 * accel_op_matmul() flag, beside the chip's TSR_MATMUL_*: stage every
 * operand in system memory through the scratch buffer, as for a chip
 * whose MXUs cannot read system memory (the default stages only what
 * saves PCIe traffic).
 */
#define ACCEL_MATMUL_STAGE	0x80000000u

/**
 * struct accel_matmul_shape - what accel_matmul_plan() plans for
 * @m: rows of op(A) and C
 * @n: columns of op(B) and C
 * @k: columns of op(A), rows of op(B)
 * @in_dtype: A's and B's element type (BF16, F32 or I8)
 * @out_dtype: C's element type (F32 or BF16; I32 for I8)
 * @flags: TSR_MATMUL_* (transposes, accumulate)
 * @stage: ACCEL_STAGE_A, _B, _C for the operands in system memory that
 *	may go through HBM: those whose staging means less crosses PCIe than
 *	reading them in place, tile after tile, do (A reused across C's
 *	column tiles, B across its row tiles, C's partial sums across steps
 *	in k); with ACCEL_STAGE_ALWAYS, all of them
 * @mxu_dim: the chip's MXU size (accel_device_info.mxu_dim); tiles are
 *	multiples of it where they can be
 */
struct accel_matmul_shape {
	uint32_t m, n, k;
	enum tsr_dtype in_dtype;
	enum tsr_dtype out_dtype;
	uint32_t flags;
	uint32_t stage;
	uint32_t mxu_dim;
};

/**
 * struct accel_matmul_plan - how accel_op_matmul() splits C = op(A) x op(B)
 * @tile_m: rows of C per tile (the last tile may have fewer)
 * @tile_n: columns of C per tile
 * @tile_k: depth per step; steps after the first accumulate
 * @tiles_m: ceil(m / tile_m)
 * @tiles_n: ceil(n / tile_n)
 * @tiles_k: ceil(k / tile_k)
 * @staged: ACCEL_STAGE_* actually staged through scratch
 * @f32_accumulator: partial sums of a BF16 C are kept in F32 scratch and
 *	cast once at the end (more than one step in k)
 * @scratch_bytes: scratch the plan uses
 * @commands: commands accel_op_matmul() appends
 */
struct accel_matmul_plan {
	uint32_t tile_m, tile_n, tile_k;
	uint32_t tiles_m, tiles_n, tiles_k;
	uint32_t staged;
	int f32_accumulator;
	uint64_t scratch_bytes;
	uint64_t commands;
};

/**
 * accel_matmul_plan() - plan a matmul within the chip's limits and
 * @scratch_bytes of scratch; no device needed
 *
 * Tiles are as large as the limits and the scratch allow: one MATMUL
 * command when the whole product fits.  Staging that the scratch cannot
 * hold even with small tiles is dropped (that operand is read in place).
 * Scratch areas start at multiples of 256 bytes: to learn how much
 * scratch staging everything in one tile takes, plan with UINT64_MAX and
 * read @scratch_bytes.
 * Returns ACCEL_ERR_BAD_SHAPE for a zero dimension, ACCEL_ERR_BAD_DTYPE
 * for types the chip cannot multiply, ACCEL_ERR_BAD_FLAGS for unknown
 * flags, ACCEL_ERR_NO_MEMORY when a BF16 C needs more than one k step
 * and the scratch cannot hold its F32 partial sums.
 */
ACCEL_API int accel_matmul_plan(const struct accel_matmul_shape *shape,
				uint64_t scratch_bytes,
				struct accel_matmul_plan *plan);

/**
 * accel_op_matmul() - C = op(A) x op(B) (+ C with TSR_MATMUL_ACCUMULATE)
 * of any shape
 * @cb: the command buffer to append to
 * @scratch: an HBM buffer to stage system-memory operands through, or
 *	NULL to read them in place
 * @a, @b, @c: the operands, as for accel_cmdbuf_matmul()
 * @flags: TSR_MATMUL_*, and ACCEL_MATMUL_STAGE
 *
 * Tiles by the plan of accel_matmul_plan().  With @scratch in HBM,
 * operands in system memory are staged through it where that saves PCIe
 * traffic (all of them with ACCEL_MATMUL_STAGE), and C's tiles copied
 * back.  A BF16 C computed in several steps needs @scratch (either
 * placement) for its F32 partial sums.
 */
ACCEL_API int accel_op_matmul(struct accel_cmdbuf *cb,
			      struct accel_buffer *scratch,
			      const struct accel_tensor *a,
			      const struct accel_tensor *b,
			      const struct accel_tensor *c, uint32_t flags);

/**
 * accel_op_elementwise() - out = op(a[, b[, c]]) of any size
 *
 * The rules of accel_cmdbuf_vpu(): @b and @c (for the ops that take
 * them) are shaped like @out or are one row or one column of it.
 */
ACCEL_API int accel_op_elementwise(struct accel_cmdbuf *cb,
				   enum tsr_vpu_op op,
				   const struct accel_tensor *a,
				   const struct accel_tensor *b,
				   const struct accel_tensor *c,
				   const struct accel_tensor *out);

/** Reduce every element to one: accel_op_reduce()'s axis for a 1 x 1 out. */
#define ACCEL_AXIS_ALL	2u

/**
 * accel_op_reduce() - sum, max or min along axis 0 (out is 1 x cols),
 * axis 1 (rows x 1) or ACCEL_AXIS_ALL (1 x 1), of any size
 * @scratch: needed for more than 2^20 reduced elements per output and for
 *	ACCEL_AXIS_ALL; accel_reduce_scratch_size() says how much
 */
ACCEL_API int accel_op_reduce(struct accel_cmdbuf *cb,
			      struct accel_buffer *scratch,
			      enum tsr_reduce_op op, uint32_t axis,
			      const struct accel_tensor *in,
			      const struct accel_tensor *out);

/** accel_reduce_scratch_size() - scratch bytes accel_op_reduce() needs. */
ACCEL_API uint64_t accel_reduce_scratch_size(uint32_t rows, uint32_t cols,
					     uint32_t axis);

/**
 * accel_op_softmax() - out = softmax of each row of @in:
 * exp(x - max(row)) / sum(exp(x - max(row)))
 *
 * @in and @out are F32 or BF16 with the same shape (they may be the same
 * tensor); the maximum and the sum are kept in F32 in @scratch.
 */
ACCEL_API int accel_op_softmax(struct accel_cmdbuf *cb,
			       struct accel_buffer *scratch,
			       const struct accel_tensor *in,
			       const struct accel_tensor *out);

/** accel_softmax_scratch_size() - scratch bytes accel_op_softmax() needs. */
ACCEL_API uint64_t accel_softmax_scratch_size(uint32_t rows, uint32_t cols);

/**
 * accel_op_softmax_cross_entropy() - the loss of a classifier and its
 * gradient, for training: @probs = softmax of each row of @logits, then
 *
 *	@loss = -@scale x the sum over rows and columns of
 *		@labels x log(@probs)	(a label of 0 adds 0)
 *	@grad = @scale x (@probs - @labels)
 *
 * @labels: each row's target distribution (one-hot rows for class labels)
 * @scale: usually 1 / the batch (the batch of every chip together, for
 *	data-parallel training, so that the gradients add up)
 *
 * @logits, @labels, @probs and @grad are F32 of one shape; @probs may be
 * @logits, but @grad must differ from @probs and @labels.  @loss is a
 * 1 x 1 F32.  In the job, the softmax's maxima and sums, the constants
 * and the loss's partial sums go to @scratch.  The gradient is exact
 * for the loss before the rounding of its f32 steps: the usual
 * (probs - labels) form, as is the CPU's accel_ref_softmax_cross_entropy().
 */
ACCEL_API int accel_op_softmax_cross_entropy(struct accel_cmdbuf *cb,
					     struct accel_buffer *scratch,
					     const struct accel_tensor *logits,
					     const struct accel_tensor *labels,
					     const struct accel_tensor *probs,
					     const struct accel_tensor *grad,
					     const struct accel_tensor *loss,
					     float scale);

/**
 * accel_cross_entropy_scratch_size() - scratch bytes
 * accel_op_softmax_cross_entropy() needs.
 */
ACCEL_API uint64_t accel_cross_entropy_scratch_size(uint32_t rows,
						    uint32_t cols);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_OPS_H */
