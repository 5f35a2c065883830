// SPDX-License-Identifier: GPL-2.0
/*
 * accel_buffer_advise() against the real driver: DONTNEED buffers lose
 * their contents under memory pressure ("echo 2 > drop_caches", as root),
 * WILLNEED ones keep them, and bad advice is refused.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <accel/accel.h>

FIXTURE(advise) {
	struct accel_device *dev;
	struct accel_buffer *buf;
};

FIXTURE_SETUP(advise)
{
	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &self->dev));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 1 << 20,
						ACCEL_PLACEMENT_HOST,
						&self->buf));
}

FIXTURE_TEARDOWN(advise)
{
	accel_buffer_destroy(self->buf);
	accel_device_close(self->dev);
}

static int memory_pressure(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, "2", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

TEST_F(advise, dontneed_then_pressure_loses_the_contents)
{
	uint32_t retained = 7;

	ASSERT_EQ(ACCEL_OK, accel_buffer_advise(self->buf, ACCEL_ADVICE_DONTNEED,
						&retained));
	EXPECT_EQ(1, retained);
	ASSERT_EQ(0, memory_pressure());
	ASSERT_EQ(ACCEL_OK, accel_buffer_advise(self->buf, ACCEL_ADVICE_WILLNEED,
						&retained));
	EXPECT_EQ(0, retained);
}

TEST_F(advise, willneed_keeps_the_contents_under_pressure)
{
	uint8_t byte = 0x5a, back = 0;
	uint32_t retained = 7;

	ASSERT_EQ(ACCEL_OK, accel_buffer_upload(self->buf, 4096, &byte, 1));
	ASSERT_EQ(ACCEL_OK, accel_buffer_advise(self->buf, ACCEL_ADVICE_DONTNEED,
						NULL));
	ASSERT_EQ(ACCEL_OK, accel_buffer_advise(self->buf, ACCEL_ADVICE_WILLNEED,
						&retained));
	EXPECT_EQ(1, retained);
	ASSERT_EQ(0, memory_pressure());
	ASSERT_EQ(ACCEL_OK, accel_buffer_download(self->buf, 4096, &back, 1));
	EXPECT_EQ(0x5a, back);
}

TEST_F(advise, bad_advice_and_hbm_are_refused)
{
	struct accel_buffer *hbm;

	EXPECT_EQ(ACCEL_ERR_BAD_FLAGS, accel_buffer_advise(self->buf, 2, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_buffer_advise(NULL, ACCEL_ADVICE_DONTNEED, NULL));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 4096,
						ACCEL_PLACEMENT_HBM, &hbm));
	EXPECT_EQ(ACCEL_ERR_NOT_SUPPORTED,
		  accel_buffer_advise(hbm, ACCEL_ADVICE_DONTNEED, NULL));
	accel_buffer_destroy(hbm);
}

TEST_HARNESS_MAIN
