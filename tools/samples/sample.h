/* SPDX-License-Identifier: MIT */
/*
 * What the samples share: their argument parsing and its messages, opening
 * a chip, the timed best-of-N run of a job, and small host-side helpers.
 * A sample defines PROG, its name in messages, before including this.
 */
#ifndef TESSERA_SAMPLE_H
#define TESSERA_SAMPLE_H

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <accel/accel.h>

#ifndef PROG
#error "define PROG, the sample's name, before including sample.h"
#endif

#define EXIT_USAGE	2

static inline int usage_error(const char *fmt, const char *arg)
{
	fprintf(stderr, PROG ": ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, " (see '" PROG " --help')\n");
	return -1;
}

/* An option the sample does not know: say so, then the usage, on stderr. */
static inline int unknown_option(const char *arg, const char *usage)
{
	fprintf(stderr, PROG ": unknown option '%s' (see '" PROG " --help')\n\n%s",
		arg, usage);
	return -1;
}

/* A decimal number from @min to @max named @what, or -1 with a message. */
static inline int parse_u32(const char *what, const char *s, uint32_t min,
			    uint32_t max, uint32_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (*s < '0' || *s > '9' || *end || errno || v < min || v > max) {
		fprintf(stderr, PROG ": %s must be a whole number from %u to %u, not '%s' (see '"
			PROG " --help')\n", what, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* Open chip @index and describe it in @info; on failure, say why and close it. */
static inline int open_device(uint32_t index, struct accel_device **dev,
			      struct accel_device_info *info)
{
	int ret;

	ret = accel_device_open(index, dev);
	if (ret) {
		fprintf(stderr, PROG ": cannot open Tessera device %u: %s%s\n", index,
			accel_error_string(ret),
			ret == ACCEL_ERR_NO_DEVICE ? " ('hello' lists the chips)" : "");
		return ret;
	}
	ret = accel_device_get_info(*dev, info);
	if (ret) {
		fprintf(stderr, PROG ": cannot query device %u: %s\n", index,
			accel_error_string(ret));
		accel_device_close(*dev);
	}
	return ret;
}

static inline double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct timing {
	double wall_s;			/* best submission-to-wait-end time */
	struct accel_job_status status;	/* of that run */
};

/* Submit the job in @cb @iterations times, waiting for each; keep the fastest. */
static inline int run(struct accel_device *dev, struct accel_cmdbuf *cb,
		      uint32_t iterations, struct timing *best)
{
	uint32_t i;

	*best = (struct timing){ .wall_s = INFINITY };
	for (i = 0; i < iterations; i++) {
		struct accel_job_status st;
		struct accel_job *job;
		double t0, t;
		int ret;

		t0 = now_s();
		ret = accel_submit(dev, cb, NULL, &job);
		if (ret) {
			fprintf(stderr, PROG ": cannot submit the job: %s\n", accel_error_string(ret));
			return ret;
		}
		ret = accel_job_wait(job, ACCEL_TIMEOUT_INFINITE);
		t = now_s() - t0;
		accel_job_status(job, &st);
		accel_job_destroy(job);
		if (ret) {
			fprintf(stderr, PROG ": the job failed: %s", accel_error_string(ret));
			if (st.failed_command != TSR_NO_COMMAND)
				fprintf(stderr, " (%s at command %u, VA 0x%" PRIx64 ")",
					st.chip_error_name, st.failed_command, st.fault_va);
			fprintf(stderr, "\n");
			return ret;
		}
		if (t < best->wall_s) {
			best->wall_s = t;
			best->status = st;
		}
	}
	return 0;
}

/* xorshift32: the same pseudo-random data from a seed on every run. */
static inline uint32_t xorshift32(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

static inline uint64_t page_up(uint64_t v)
{
	return (v + 4095) / 4096 * 4096;
}

/* @count bf16 values as f32, in a new array (NULL if out of memory). */
static inline float *widen(const uint16_t *v, uint64_t count)
{
	float *f = malloc(count * sizeof(*f));
	uint64_t i;

	if (f)
		for (i = 0; i < count; i++)
			f[i] = accel_bf16_to_f32(v[i]);
	return f;
}

/* A decimal number from @min to @max named @what, or -1 with a message. */
static inline int parse_float(const char *what, const char *s, float min,
			      float max, float *out)
{
	char *end;
	float v;

	errno = 0;
	v = strtof(s, &end);
	if (end == s || *end || errno || !(v >= min && v <= max)) {
		fprintf(stderr, PROG ": %s must be a number from %g to %g, not '%s' (see '"
			PROG " --help')\n", what, min, max, s);
		return -1;
	}
	*out = v;
	return 0;
}

/* A failed call named @what: say so with libaccel's words; @ret back. */
static inline int fail(const char *what, int ret)
{
	fprintf(stderr, PROG ": %s: %s\n", what, accel_error_string(ret));
	return ret;
}

/* A job that could not be built: the command buffer says why; @ret back. */
static inline int build_error(const char *job, struct accel_cmdbuf *cb, int ret)
{
	fprintf(stderr, PROG ": building %s: %s\n", job, accel_cmdbuf_last_error(cb));
	return ret;
}

/* A dense f32 tensor at @offset of @buf. */
static inline struct accel_tensor f32_tensor(struct accel_buffer *buf,
					     uint64_t offset, uint32_t rows,
					     uint32_t cols)
{
	return (struct accel_tensor){ buf, offset, rows, cols, 0, TSR_DTYPE_F32 };
}

static inline uint64_t align256(uint64_t v)
{
	return (v + 255) / 256 * 256;
}

/* The order of @n training samples in @epoch: a shuffle from @seed. */
static inline void shuffle_order(uint32_t *order, uint32_t n, uint32_t seed,
				 uint32_t epoch)
{
	uint32_t state = seed * 2654435761u + epoch + 1, i, j, t;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		j = xorshift32(&state) % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
}

#endif /* TESSERA_SAMPLE_H */
