// SPDX-License-Identifier: GPL-2.0
/* Host unit tests of libaccel's pure logic: error codes and versions. */
#include <stdio.h>
#include <string.h>

#include "kselftest_harness.h"

#include <accel/accel.h>

TEST(every_error_code_has_its_own_text)
{
	int a, b;

	for (a = ACCEL_OK; a >= ACCEL_ERR_LAST; a--) {
		const char *sa = accel_error_string(a);

		ASSERT_NE(NULL, sa);
		EXPECT_LT(5U, strlen(sa)) TH_LOG("code %d", a);
		EXPECT_EQ(NULL, strstr(sa, "unknown libaccel")) TH_LOG("code %d", a);
		for (b = a - 1; b >= ACCEL_ERR_LAST; b--)
			EXPECT_STRNE(sa, accel_error_string(b));
	}
}

TEST(unknown_error_codes_say_so)
{
	EXPECT_STREQ("unknown libaccel error code",
		     accel_error_string(ACCEL_ERR_LAST - 1));
	EXPECT_STREQ("unknown libaccel error code", accel_error_string(1));
	EXPECT_STREQ("unknown libaccel error code", accel_error_string(-1000));
}

TEST(every_error_code_has_its_own_name)
{
	int a, b;

	EXPECT_STREQ("OK", accel_error_name(ACCEL_OK));
	EXPECT_STREQ("LINK_DOWN", accel_error_name(ACCEL_ERR_LINK_DOWN));
	EXPECT_STREQ("NO_SLICE_KEY", accel_error_name(ACCEL_ERR_LAST));
	for (a = ACCEL_OK; a >= ACCEL_ERR_LAST; a--) {
		EXPECT_STRNE("UNKNOWN", accel_error_name(a)) TH_LOG("code %d", a);
		for (b = a - 1; b >= ACCEL_ERR_LAST; b--)
			EXPECT_STRNE(accel_error_name(a), accel_error_name(b));
	}
	EXPECT_STREQ("UNKNOWN", accel_error_name(ACCEL_ERR_LAST - 1));
	EXPECT_STREQ("UNKNOWN", accel_error_name(1));
}

TEST(success_reads_as_success)
{
	EXPECT_STREQ("success", accel_error_string(ACCEL_OK));
}

TEST(version_string_matches_the_header)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", ACCEL_VERSION_MAJOR,
		 ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
	EXPECT_STREQ(want, accel_version_string());
}

TEST(null_handles_are_rejected_without_a_device)
{
	struct accel_device_info info;

	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_device_open(0, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_device_open_pci(NULL, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_device_count(NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_device_get_info(NULL, &info));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_device_ping(NULL, 1, 0, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_device_fd(NULL));
	accel_device_close(NULL);
}

TEST_HARNESS_MAIN
