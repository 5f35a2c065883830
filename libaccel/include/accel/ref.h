/* SPDX-License-Identifier: MIT */
/*
 * libaccel CPU reference: the chip's operations computed on the host, for
 * checking results (the tests and samples do).
 *
 * Matrices are dense row-major float arrays; BF16 data is widened first
 * (accel_bf16_to_f32()) and results compared with a tolerance, as the
 * chip's summation order is not the reference's (Documentation/chip.md,
 * "Numerics").  No device is involved; every function is thread safe.
 */
#ifndef ACCEL_REF_H
#define ACCEL_REF_H

#include <stddef.h>
#include <stdint.h>

#include <accel/cmdbuf.h>
#include <accel/common.h>
#include <accel/ops.h>
#include <accel/tensor.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * accel_ref_matmul() - c (m x n) = op(a) x op(b) (+ c with
 * TSR_MATMUL_ACCUMULATE), summing in double
 *
 * a is m x k (k x m with TSR_MATMUL_TRANSPOSE_A), b is k x n (n x k with
 * TSR_MATMUL_TRANSPOSE_B).  Returns ACCEL_ERR_INVALID_ARGUMENT for NULL
 * arrays, ACCEL_ERR_BAD_FLAGS for unknown flags.
 */
ACCEL_API int accel_ref_matmul(const float *a, const float *b, float *c,
			       uint32_t m, uint32_t n, uint32_t k,
			       uint32_t flags);

/**
 * accel_ref_vpu() - one element of a VPU op: op(a, b, c) in f32
 *
 * Unary ops ignore @b and @c, binary ops @c.  An unknown op gives NaN.
 */
ACCEL_API float accel_ref_vpu(enum tsr_vpu_op op, float a, float b, float c);

/**
 * accel_ref_elementwise() - out (rows x cols) = op(a, b, c) element-wise
 * @b_rows, @b_cols: @b's shape: rows x cols, 1 x cols or rows x 1 (as on
 *	the chip); @c has the same shape as @b.  Unused operands may be NULL.
 */
ACCEL_API int accel_ref_elementwise(enum tsr_vpu_op op, const float *a,
				    const float *b, const float *c,
				    uint32_t b_rows, uint32_t b_cols,
				    float *out, uint32_t rows, uint32_t cols);

/**
 * accel_ref_reduce() - sum, max or min of @in (rows x cols) along axis 0
 * (out has cols elements), 1 (rows) or ACCEL_AXIS_ALL (1), in index order
 */
ACCEL_API int accel_ref_reduce(enum tsr_reduce_op op, uint32_t axis,
			       const float *in, uint32_t rows, uint32_t cols,
			       float *out);

/** accel_ref_softmax() - softmax of each row of @in into @out. */
ACCEL_API int accel_ref_softmax(const float *in, uint32_t rows,
				uint32_t cols, float *out);

/**
 * accel_ref_softmax_cross_entropy() - on the CPU, what
 * accel_op_softmax_cross_entropy() computes: @probs, @grad (rows x cols)
 * and *@loss from @logits and @labels
 */
ACCEL_API int accel_ref_softmax_cross_entropy(const float *logits,
					      const float *labels,
					      uint32_t rows, uint32_t cols,
					      float scale, float *probs,
					      float *grad, float *loss);

/**
 * accel_ref_compare() - whether @got matches @want within @rel_tol of
 * the largest |want| (and both are NaN or infinite alike)
 * @bad: if not NULL, set to the index of the first mismatch
 *
 * Returns 1 when they match, 0 when not.
 */
ACCEL_API int accel_ref_compare(const float *got, const float *want,
				size_t count, float rel_tol, size_t *bad);

/* ------------------------------------------------------------ SparseCore */

/*
 * The SparseCore commands on the CPU (Documentation/chip.md,
 * "SparseCore").  Ids are host arrays of @count entries; @weights may be
 * NULL (each weighs 1).  Each sets *@chip_error to TSR_ERR_NONE or the
 * TSR_ERR_* code the chip fails with, and *@where to the entry (ID_RANGE)
 * or the partition (MAX_IDS, MAX_UNIQUE_IDS) it fails at; on an error,
 * outputs are left as the chip leaves them.  They return
 * ACCEL_ERR_INVALID_ARGUMENT for NULL arrays or limits the chip refuses
 * before reading any id.
 */

/**
 * accel_ref_sc_partition() - SC_PARTITION: @out_rows, @out_cols and
 * @out_weights (NULL not to write them) get @limits->partitions x
 * @limits->max_ids slots, @counts @limits->partitions counts
 */
ACCEL_API int accel_ref_sc_partition(const uint32_t *row_ids,
				     const uint32_t *col_ids,
				     const float *weights, uint32_t count,
				     const struct accel_sc_limits *limits,
				     uint32_t *out_rows, uint32_t *out_cols,
				     float *out_weights,
				     struct tsr_sc_counts *counts,
				     uint32_t *chip_error, uint32_t *where);

/**
 * accel_ref_sc_gather() - SC_GATHER: @out (@samples x @dim) from @table
 * (@vocab x @dim, dense), combined with @combiner
 */
ACCEL_API int accel_ref_sc_gather(enum tsr_sc_combiner combiner,
				  const uint32_t *row_ids,
				  const uint32_t *col_ids,
				  const float *weights, uint32_t count,
				  const float *table, uint32_t vocab,
				  uint32_t dim, float *out, uint32_t samples,
				  uint32_t *chip_error, uint32_t *where);

/**
 * accel_ref_sc_scatter_add() - SC_SCATTER_ADD: @dst (@vocab x @dim) +=
 * @scale x the gradient of a @combiner gather, from @grad (@samples x @dim)
 */
ACCEL_API int accel_ref_sc_scatter_add(enum tsr_sc_combiner combiner,
				       const uint32_t *row_ids,
				       const uint32_t *col_ids,
				       const float *weights, uint32_t count,
				       const float *grad, uint32_t samples,
				       uint32_t dim, float *dst,
				       uint32_t vocab, float scale,
				       uint32_t *chip_error, uint32_t *where);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_REF_H */
