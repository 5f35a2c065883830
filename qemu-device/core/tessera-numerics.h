/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera numerics: element types and the conversions between them.
 *
 * bf16 is the upper half of an IEEE-754 binary32.  Conversion from f32
 * rounds to nearest, ties to even; a NaN stays a NaN (quieted, sign and
 * top payload bits kept); values past the bf16 range become infinities.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_NUMERICS_H
#define TESSERA_NUMERICS_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tessera/chip.h"

static inline uint32_t tsr_f32_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

static inline float tsr_bits_f32(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

static inline uint16_t tsr_f32_to_bf16(float f)
{
    uint32_t u = tsr_f32_bits(f);

    if ((u & 0x7fffffffu) > 0x7f800000u) {
        return (uint16_t)((u >> 16) | 0x0040u);
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float tsr_bf16_to_f32(uint16_t h)
{
    return tsr_bits_f32((uint32_t)h << 16);
}

/* f32 to i32: round to nearest even, saturate, NaN becomes 0. */
static inline int32_t tsr_f32_to_i32(float f)
{
    if (isnan(f)) {
        return 0;
    }
    if (f >= 2147483648.0f) {
        return INT32_MAX;
    }
    if (f < -2147483648.0f) {
        return INT32_MIN;
    }
    return (int32_t)nearbyintf(f);
}

/*
 * maximum and minimum as XLA defines them: a NaN operand gives a NaN
 * (fmaxf and fminf would drop it), and +0 is greater than -0, so that the
 * result does not depend on the order of the operands.
 */
static inline float tsr_maxf(float x, float y)
{
    if (isnan(x) || isnan(y)) {
        return x + y;
    }
    if (x == y) {
        return signbit(x) ? y : x;
    }
    return x > y ? x : y;
}

static inline float tsr_minf(float x, float y)
{
    if (isnan(x) || isnan(y)) {
        return x + y;
    }
    if (x == y) {
        return signbit(x) ? x : y;
    }
    return x < y ? x : y;
}

#define TSR_DTYPE_MASK(d) (1u << (d))

#endif /* TESSERA_NUMERICS_H */
