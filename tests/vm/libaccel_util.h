/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers the in-VM libaccel tests share: pseudo-random data, clocks,
 * leak checks through /proc/self/fd and the device file's fdinfo, and
 * moving tensors between buffers and dense host arrays.
 */
#ifndef LIBACCEL_TEST_UTIL_H
#define LIBACCEL_TEST_UTIL_H

#include <dirent.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <accel/accel.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

static inline uint32_t rnd(uint32_t *state)
{
	uint32_t x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *state = x;
}

static inline float frand(uint32_t *state, float lo, float hi)
{
	return lo + (hi - lo) * (rnd(state) >> 8) / (float)(1u << 24);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Entries in /proc/self/fd. */
static inline int count_fds(void)
{
	DIR *dir = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!dir)
		return -1;
	while ((de = readdir(dir)))
		n += de->d_name[0] != '.';
	closedir(dir);
	return n;
}


/*
 * What a test may not leave behind: descriptors, and the device file's
 * host and HBM memory as its fdinfo counts them.
 */
struct leak_snapshot {
	int fds;
	long long host, hbm;
};

static inline void leak_snapshot(const struct accel_device *dev,
				 struct leak_snapshot *s)
{
	s->fds = count_fds();
	s->host = tsr_fdinfo_bytes(accel_device_fd(dev), "drm-total-host");
	s->hbm = tsr_fdinfo_bytes(accel_device_fd(dev), "drm-total-hbm");
}

/*
 * In a fixture's teardown: a test that passed left nothing behind (once
 * the handle has let go of what it keeps for reuse).
 */
static inline void leak_expect_none(struct __test_metadata *_metadata,
				    struct accel_device *dev,
				    const struct leak_snapshot *before)
{
	struct leak_snapshot after;

	if (_metadata->exit_code != KSFT_PASS)
		return;
	accel_device_trim(dev);
	leak_snapshot(dev, &after);
	EXPECT_EQ(before->fds, after.fds);
	EXPECT_EQ(before->host, after.host);
	EXPECT_EQ(before->hbm, after.hbm);
}

static inline struct accel_tensor tensor_at(struct accel_buffer *buf,
					    uint64_t offset, uint32_t rows,
					    uint32_t cols, uint32_t stride,
					    enum tsr_dtype dtype)
{
	return (struct accel_tensor){
		.buffer = buf, .offset = offset, .rows = rows, .cols = cols,
		.stride = stride, .dtype = dtype,
	};
}

/* Copy dense rows into (@write) or out of a tensor's buffer. */
static inline int tensor_io(const struct accel_tensor *t, void *dense,
			    bool write)
{
	unsigned int esize = accel_dtype_size(t->dtype);
	uint64_t pitch = (uint64_t)(t->stride ? t->stride : t->cols) * esize;
	size_t row = (size_t)t->cols * esize;
	uint32_t r;
	int ret = 0;

	for (r = 0; r < t->rows && !ret; r++) {
		uint8_t *p = (uint8_t *)dense + r * row;

		ret = write ? accel_buffer_upload(t->buffer, t->offset + r * pitch,
						  p, row)
			    : accel_buffer_download(t->buffer, t->offset + r * pitch,
						    p, row);
	}
	return ret;
}

static inline void to_bf16(const float *in, uint16_t *out, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		out[i] = accel_f32_to_bf16(in[i]);
}

#endif /* LIBACCEL_TEST_UTIL_H */
