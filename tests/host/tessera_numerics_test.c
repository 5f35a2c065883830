// SPDX-License-Identifier: GPL-2.0
/*
 * The chip's numerics against the specification (Documentation/chip.md,
 * "Numerics"): NaN propagation and signed zeros after XLA, the limits of
 * GELU, and the accuracy of every transcendental op in ulp, measured over
 * a sweep of each op's domain against a double-precision evaluation.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "tessera_chip.h"

#define SWEEP 65536

FIXTURE(num) {
	struct test_chip *c;
	uint64_t a, b, o;
	float *av, *bv, *ov;
};

FIXTURE_SETUP(num)
{
	self->c = chip_new("v4");
	self->a = chip_buffer(self->c, 1, SWEEP * 4);
	self->b = chip_buffer(self->c, 1, SWEEP * 4);
	self->o = chip_buffer(self->c, 1, SWEEP * 4);
	self->av = host_ptr(self->c, self->a);
	self->bv = host_ptr(self->c, self->b);
	self->ov = host_ptr(self->c, self->o);
}

FIXTURE_TEARDOWN(num)
{
	chip_free(self->c);
}

/* Run VPU @op on the first @n elements of a (and b); results in ov. */
static uint32_t vpu(FIXTURE_DATA(num) *self, uint32_t op, uint32_t n)
{
	struct tsr_cmd_vpu cmd = {
		.hdr = HDR(TSR_OP_VPU, struct tsr_cmd_vpu), .op = op,
		.a = tensor(self->a, 1, n, TSR_DTYPE_F32),
		.out = tensor(self->o, 1, n, TSR_DTYPE_F32),
	};

	if (op >= TSR_VPU_ADD)
		cmd.b = tensor(self->b, 1, n, TSR_DTYPE_F32);
	return chip_run(self->c, &cmd, sizeof(cmd))->error;
}

static uint32_t reduce(FIXTURE_DATA(num) *self, uint32_t op, uint32_t n)
{
	struct tsr_cmd_reduce cmd = {
		.hdr = HDR(TSR_OP_REDUCE, struct tsr_cmd_reduce), .op = op,
		.axis = 1,
		.in = tensor(self->a, 1, n, TSR_DTYPE_F32),
		.out = tensor(self->o, 1, 1, TSR_DTYPE_F32),
	};

	return chip_run(self->c, &cmd, sizeof(cmd))->error;
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

TEST_F(num, max_min_and_relu_propagate_nan)
{
	static const uint32_t ops[] = { TSR_VPU_MAX, TSR_VPU_MIN };
	unsigned int i;

	for (i = 0; i < 2; i++) {
		self->av[0] = NAN;  self->bv[0] = 1.0f;
		self->av[1] = 1.0f; self->bv[1] = NAN;
		self->av[2] = -INFINITY; self->bv[2] = NAN;
		ASSERT_EQ(TSR_ERR_NONE, vpu(self, ops[i], 3));
		EXPECT_TRUE(isnan(self->ov[0]));
		EXPECT_TRUE(isnan(self->ov[1]));
		EXPECT_TRUE(isnan(self->ov[2]));
	}
	self->av[0] = NAN;
	self->av[1] = -NAN;
	ASSERT_EQ(TSR_ERR_NONE, vpu(self, TSR_VPU_RELU, 2));
	EXPECT_TRUE(isnan(self->ov[0]));
	EXPECT_TRUE(isnan(self->ov[1]));
}

TEST_F(num, reduce_max_and_min_propagate_nan_from_anywhere)
{
	static const uint32_t ops[] = { TSR_REDUCE_MAX, TSR_REDUCE_MIN };
	const uint32_t n = 1000;
	uint32_t i, at;

	for (i = 0; i < 2; i++) {
		for (at = 0; at < n; at += n / 4 - 1) {
			uint32_t j;

			for (j = 0; j < n; j++)
				self->av[j] = (float)j - 500.0f;
			self->av[at] = NAN;
			ASSERT_EQ(TSR_ERR_NONE, reduce(self, ops[i], n));
			EXPECT_TRUE(isnan(self->ov[0])) TH_LOG("op %u NaN at %u", ops[i], at);
		}
	}
}

TEST_F(num, max_and_min_of_signed_zeros_do_not_depend_on_order)
{
	self->av[0] = 0.0f;  self->bv[0] = -0.0f;
	self->av[1] = -0.0f; self->bv[1] = 0.0f;
	ASSERT_EQ(TSR_ERR_NONE, vpu(self, TSR_VPU_MAX, 2));
	EXPECT_EQ(bits(0.0f), bits(self->ov[0]));
	EXPECT_EQ(bits(0.0f), bits(self->ov[1]));
	ASSERT_EQ(TSR_ERR_NONE, vpu(self, TSR_VPU_MIN, 2));
	EXPECT_EQ(bits(-0.0f), bits(self->ov[0]));
	EXPECT_EQ(bits(-0.0f), bits(self->ov[1]));
	/* RELU is max(x, +0). */
	self->av[0] = -0.0f;
	ASSERT_EQ(TSR_ERR_NONE, vpu(self, TSR_VPU_RELU, 1));
	EXPECT_EQ(bits(0.0f), bits(self->ov[0]));
}

TEST_F(num, gelu_has_its_limits_at_the_infinities)
{
	self->av[0] = -INFINITY;
	self->av[1] = INFINITY;
	self->av[2] = -1e30f;
	self->av[3] = -FLT_MAX;
	ASSERT_EQ(TSR_ERR_NONE, vpu(self, TSR_VPU_GELU, 4));
	EXPECT_EQ(bits(-0.0f), bits(self->ov[0]));
	EXPECT_EQ(bits(INFINITY), bits(self->ov[1]));
	EXPECT_EQ(0.0f, self->ov[2]);
	EXPECT_EQ(0.0f, self->ov[3]);
}

/* The exact (double) value each op is specified to approximate. */
static double exact(uint32_t op, double x, double y)
{
	switch (op) {
	case TSR_VPU_EXP: return exp(x);
	case TSR_VPU_LOG: return log(x);
	case TSR_VPU_TANH: return tanh(x);
	case TSR_VPU_SIGMOID: return 1.0 / (1.0 + exp(-x));
	case TSR_VPU_GELU: {
		/* 0.5 x (1 + tanh u), as x / (1 + e^-2u): no cancellation. */
		long double u = sqrtl(2.0L / M_PI) * (x + 0.044715L * x * x * x);

		return x / (1.0L + expl(-2.0L * u));
	}
	case TSR_VPU_SQRT: return sqrt(x);
	case TSR_VPU_RSQRT: return 1.0 / sqrt(x);
	default: return x / y;	/* TSR_VPU_DIV */
	}
}

/* |got - want| in units of the last place of want rounded to f32. */
static double ulps(float got, double want)
{
	float w = (float)want;
	double ulp;

	if (isinf(w) || isnan(got))
		return got == w ? 0.0 : INFINITY;
	ulp = nextafterf(fabsf(w), INFINITY) - fabsf(w);
	return fabs((double)got - want) / ulp;
}

struct domain {
	uint32_t op;
	const char *name;
	float lo, hi;
	bool log_scale;		/* sweep the exponents, not the values */
	double max_ulps;	/* Documentation/chip.md, "Numerics" */
};

/* Each transcendental op over the range where its result is normal. */
static const struct domain domains[] = {
	{ TSR_VPU_EXP, "EXP", -87.0f, 88.0f, false, 1.0 },
	{ TSR_VPU_LOG, "LOG", FLT_MIN, FLT_MAX, true, 1.0 },
	{ TSR_VPU_TANH, "TANH", -9.0f, 9.0f, false, 2.0 },
	{ TSR_VPU_SIGMOID, "SIGMOID", -80.0f, 80.0f, false, 3.0 },
	{ TSR_VPU_GELU, "GELU", -12.0f, 12.0f, false, 1.0 },
	{ TSR_VPU_SQRT, "SQRT", 0.0f, FLT_MAX, true, 0.5 },
	{ TSR_VPU_RSQRT, "RSQRT", FLT_MIN, FLT_MAX, true, 1.5 },
	{ TSR_VPU_DIV, "DIV", FLT_MIN, FLT_MAX, true, 0.5 },
};

static float sweep_point(const struct domain *d, uint32_t i)
{
	if (d->log_scale) {
		uint32_t lo = bits(d->lo), hi = bits(d->hi), u;
		float f;

		u = lo + (uint32_t)(((uint64_t)(hi - lo) * i) / (SWEEP - 1));
		memcpy(&f, &u, sizeof(f));
		return f;
	}
	return d->lo + (d->hi - d->lo) * ((float)i / (SWEEP - 1));
}

TEST_F(num, transcendental_ops_are_within_their_ulp_bounds)
{
	unsigned int k;

	for (k = 0; k < ARRAY_SIZE(domains); k++) {
		const struct domain *d = &domains[k];
		double worst = 0.0;
		float worst_x = 0.0f;
		uint32_t i;

		srand(k + 1);
		for (i = 0; i < SWEEP; i++) {
			self->av[i] = sweep_point(d, i);
			/* DIV: a numerator within a few binades of the divisor. */
			self->bv[i] = ldexpf(1.0f + rand() / (float)RAND_MAX,
					     rand() % 16 - 8);
		}
		ASSERT_EQ(TSR_ERR_NONE, vpu(self, d->op, SWEEP));
		for (i = 0; i < SWEEP; i++) {
			double e = ulps(self->ov[i], exact(d->op, self->av[i],
							    self->bv[i]));

			if (e > worst) {
				worst = e;
				worst_x = self->av[i];
			}
		}
		TH_LOG("%-8s %.2f ulp at most (x = %g), bound %.1f", d->name,
		       worst, worst_x, d->max_ulps);
		EXPECT_GE(d->max_ulps, worst) TH_LOG("%s", d->name);
	}
}

TEST_HARNESS_MAIN
