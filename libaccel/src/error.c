// SPDX-License-Identifier: MIT
/* Error codes and their texts. */
#include <accel/accel.h>

#include "internal.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const error_text[] = {
	[-ACCEL_OK] = "success",
	[-ACCEL_ERR_INVALID_ARGUMENT] = "invalid argument",
	[-ACCEL_ERR_NO_DEVICE] = "no Tessera device with that index or address",
	[-ACCEL_ERR_NOT_TESSERA] = "the device is not driven by the tessera driver",
	[-ACCEL_ERR_PERMISSION] = "permission denied opening the device node",
	[-ACCEL_ERR_NO_MEMORY] = "out of memory",
	[-ACCEL_ERR_TIMEOUT] = "the device did not answer in time",
	[-ACCEL_ERR_VERSION] = "the tessera driver is older than this library needs",
	[-ACCEL_ERR_DEVICE_LOST] = "the device was removed or its driver unbound",
	[-ACCEL_ERR_IO] = "the driver reported an unexpected error",
};

const char *accel_error_string(int error)
{
	if (error > 0 || error < ACCEL_ERR_LAST)
		return "unknown libaccel error code";
	return error_text[-error];
}

const char *accel_version_string(void)
{
	return STR(ACCEL_VERSION_MAJOR) "." STR(ACCEL_VERSION_MINOR) "."
	       STR(ACCEL_VERSION_PATCH);
}

int accel_error_from_errno(int err)
{
	switch (err) {
	case 0:
		return ACCEL_OK;
	case EINVAL:
	case EFAULT:
		return ACCEL_ERR_INVALID_ARGUMENT;
	case ENOENT:
	case ENXIO:
		return ACCEL_ERR_NO_DEVICE;
	case EACCES:
	case EPERM:
		return ACCEL_ERR_PERMISSION;
	case ENOMEM:
		return ACCEL_ERR_NO_MEMORY;
	case ETIMEDOUT:
		return ACCEL_ERR_TIMEOUT;
	case ENODEV:
		return ACCEL_ERR_DEVICE_LOST;
	default:
		return ACCEL_ERR_IO;
	}
}
