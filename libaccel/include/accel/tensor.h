/* SPDX-License-Identifier: MIT */
/*
 * libaccel tensors and regions: how commands name device memory, and the
 * chip's element types.
 *
 * Element types, VPU and reduce operations and MATMUL flags are the
 * chip's own: enum tsr_dtype, enum tsr_vpu_op, enum tsr_reduce_op and
 * TSR_MATMUL_* of <tessera/chip.h> (build with -I for uapi/).
 */
#ifndef ACCEL_TENSOR_H
#define ACCEL_TENSOR_H

#include <stdint.h>

#include <tessera/chip.h>

#include <accel/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_buffer;

/**
 * struct accel_tensor - a 2-D row-major tensor in device memory
 * @buffer: the buffer holding it, or NULL to give a raw device VA in
 *	@offset (the command buffer then checks no bounds and records no
 *	buffer; see accel_cmdbuf_use_buffer())
 * @offset: bytes from the start of @buffer to element [0][0], or the VA
 * @rows: rows, 1 to 2^20
 * @cols: columns, 1 to 2^20
 * @stride: elements from one row to the next, at least @cols; 0 means
 *	@cols (dense rows)
 * @dtype: element type, enum tsr_dtype
 */
struct accel_tensor {
	struct accel_buffer *buffer;
	uint64_t offset;
	uint32_t rows;
	uint32_t cols;
	uint32_t stride;
	enum tsr_dtype dtype;
};

/**
 * struct accel_region - one side of a DMA transfer: rows of bytes,
 * grouped in planes
 * @buffer: the buffer, or NULL to give a raw device VA in @offset
 * @offset: bytes from the start of @buffer, or the VA
 * @row_stride: bytes from one row to the next (unused for one row)
 * @plane_stride: bytes from one plane to the next (unused for one plane)
 */
struct accel_region {
	struct accel_buffer *buffer;
	uint64_t offset;
	uint64_t row_stride;
	uint64_t plane_stride;
};

/** accel_dtype_size() - bytes per element of @dtype; 0 if unknown. */
ACCEL_API unsigned int accel_dtype_size(enum tsr_dtype dtype);

/** accel_dtype_name() - "f32", "bf16", "i32", "i8"; "unknown" otherwise. */
ACCEL_API const char *accel_dtype_name(enum tsr_dtype dtype);

/**
 * accel_f32_to_bf16() - round to bf16 as the chip does: to nearest, ties
 * to even; NaN stays NaN (quieted); beyond bf16's range gives infinities.
 */
ACCEL_API uint16_t accel_f32_to_bf16(float value);

/** accel_bf16_to_f32() - widen a bf16 (exact). */
ACCEL_API float accel_bf16_to_f32(uint16_t value);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_TENSOR_H */
