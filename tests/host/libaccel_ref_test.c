// SPDX-License-Identifier: GPL-2.0
/*
 * libaccel's CPU reference follows the chip's numerics (Documentation/
 * chip.md, "Numerics"): NaN propagation, signed zeros, GELU's limits.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <math.h>
#include <string.h>

#include <accel/accel.h>

#include "kselftest_harness.h"

static int is_pos_zero(float f)
{
	return f == 0.0f && !signbit(f);
}

TEST(max_min_relu_propagate_nan)
{
	EXPECT_TRUE(isnan(accel_ref_vpu(TSR_VPU_MAX, NAN, 1.0f, 0)));
	EXPECT_TRUE(isnan(accel_ref_vpu(TSR_VPU_MAX, 1.0f, NAN, 0)));
	EXPECT_TRUE(isnan(accel_ref_vpu(TSR_VPU_MIN, NAN, -INFINITY, 0)));
	EXPECT_TRUE(isnan(accel_ref_vpu(TSR_VPU_MIN, -INFINITY, NAN, 0)));
	EXPECT_TRUE(isnan(accel_ref_vpu(TSR_VPU_RELU, NAN, 0, 0)));
}

TEST(signed_zeros_do_not_depend_on_order)
{
	EXPECT_TRUE(is_pos_zero(accel_ref_vpu(TSR_VPU_MAX, 0.0f, -0.0f, 0)));
	EXPECT_TRUE(is_pos_zero(accel_ref_vpu(TSR_VPU_MAX, -0.0f, 0.0f, 0)));
	EXPECT_TRUE(signbit(accel_ref_vpu(TSR_VPU_MIN, 0.0f, -0.0f, 0)));
	EXPECT_TRUE(signbit(accel_ref_vpu(TSR_VPU_MIN, -0.0f, 0.0f, 0)));
	EXPECT_TRUE(is_pos_zero(accel_ref_vpu(TSR_VPU_RELU, -0.0f, 0, 0)));
}

TEST(gelu_limits)
{
	float g = accel_ref_vpu(TSR_VPU_GELU, -INFINITY, 0, 0);

	EXPECT_TRUE(g == 0.0f && signbit(g));
	EXPECT_EQ(INFINITY, accel_ref_vpu(TSR_VPU_GELU, INFINITY, 0, 0));
	/* No cancellation: GELU(-8) is tiny but not zero. */
	EXPECT_GT(0.0f, accel_ref_vpu(TSR_VPU_GELU, -8.0f, 0, 0));
}

TEST(reduce_max_and_min_propagate_nan)
{
	const float in[5] = { 1, 2, NAN, 4, 5 };
	float out;

	ASSERT_EQ(ACCEL_OK, accel_ref_reduce(TSR_REDUCE_MAX, ACCEL_AXIS_ALL,
					     in, 1, 5, &out));
	EXPECT_TRUE(isnan(out));
	ASSERT_EQ(ACCEL_OK, accel_ref_reduce(TSR_REDUCE_MIN, ACCEL_AXIS_ALL,
					     in, 1, 5, &out));
	EXPECT_TRUE(isnan(out));
}

TEST_HARNESS_MAIN
