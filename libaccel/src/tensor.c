// SPDX-License-Identifier: MIT
/* The chip's element types and the bf16 conversions. */
#include <string.h>

#include <accel/accel.h>

#include "internal.h"

unsigned int accel_dtype_size(enum tsr_dtype dtype)
{
	return tsr_dtype_size(dtype);
}

const char *accel_dtype_name(enum tsr_dtype dtype)
{
	switch (dtype) {
	case TSR_DTYPE_F32:
		return "f32";
	case TSR_DTYPE_BF16:
		return "bf16";
	case TSR_DTYPE_I32:
		return "i32";
	case TSR_DTYPE_I8:
		return "i8";
	default:
		return "unknown";
	}
}

uint16_t accel_f32_to_bf16(float value)
{
	uint32_t bits;

	memcpy(&bits, &value, sizeof(bits));
	if ((bits & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((bits >> 16) | 0x0040u);	/* quiet NaN */
	/* Round to nearest, ties to even, on the 16 bits dropped. */
	bits += 0x7fffu + ((bits >> 16) & 1u);
	return (uint16_t)(bits >> 16);
}

float accel_bf16_to_f32(uint16_t value)
{
	uint32_t bits = (uint32_t)value << 16;
	float f;

	memcpy(&f, &bits, sizeof(f));
	return f;
}
