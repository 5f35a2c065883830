/* SPDX-License-Identifier: MIT */
/*
 * libaccel error codes.
 *
 * Every libaccel call returns ACCEL_OK (0) or one of the negative codes
 * below.  When a code comes from a failed system call, errno still holds
 * that call's error when the function returns.
 */
#ifndef ACCEL_ERROR_H
#define ACCEL_ERROR_H

#include <accel/common.h>

#ifdef __cplusplus
extern "C" {
#endif

enum accel_error {
	ACCEL_OK = 0,
	/** A parameter was out of range or NULL where a value is required. */
	ACCEL_ERR_INVALID_ARGUMENT = -1,
	/** No Tessera device with that index or address. */
	ACCEL_ERR_NO_DEVICE = -2,
	/** The device node exists but is driven by another driver. */
	ACCEL_ERR_NOT_TESSERA = -3,
	/** The device node may not be opened by this user. */
	ACCEL_ERR_PERMISSION = -4,
	/** Memory could not be allocated. */
	ACCEL_ERR_NO_MEMORY = -5,
	/** The device did not answer in time. */
	ACCEL_ERR_TIMEOUT = -6,
	/** The driver implements an older interface than this library needs. */
	ACCEL_ERR_VERSION = -7,
	/** The device was removed or its driver unbound. */
	ACCEL_ERR_DEVICE_LOST = -8,
	/** The driver reported an error libaccel has no better code for. */
	ACCEL_ERR_IO = -9,
};

/* Lowest (most negative) error code; for iterating over all of them. */
#define ACCEL_ERR_LAST ACCEL_ERR_IO

/**
 * accel_error_string() - what an error code means, in a sentence.
 * Never returns NULL; unknown codes get a text that says so.
 */
ACCEL_API const char *accel_error_string(int error);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ERROR_H */
