/* SPDX-License-Identifier: MIT */
/*
 * libaccel error codes.
 *
 * Every libaccel call returns ACCEL_OK (0) or one of the negative codes
 * below.  When a code comes from a failed system call, errno still holds
 * that call's error when the function returns.  Command-buffer calls also
 * leave a sentence naming the command, operand and field at fault in
 * accel_cmdbuf_last_error().
 */
#ifndef ACCEL_ERROR_H
#define ACCEL_ERROR_H

#include <stdint.h>

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
	/** Permission denied: the device node, or a high priority. */
	ACCEL_ERR_PERMISSION = -4,
	/** Memory could not be allocated: host memory, HBM or VA space. */
	ACCEL_ERR_NO_MEMORY = -5,
	/** The operation did not complete in time. */
	ACCEL_ERR_TIMEOUT = -6,
	/** The driver implements an older interface than this library needs. */
	ACCEL_ERR_VERSION = -7,
	/** The device was removed or its driver unbound. */
	ACCEL_ERR_DEVICE_LOST = -8,
	/** The driver reported an error libaccel has no better code for. */
	ACCEL_ERR_IO = -9,
	/** The object does not support the operation (e.g. exporting HBM). */
	ACCEL_ERR_NOT_SUPPORTED = -10,
	/** An offset, tensor or region lies outside its buffer. */
	ACCEL_ERR_OUT_OF_BOUNDS = -11,
	/* Commands the chip would reject, named after its TSR_ERR_* codes: */
	/** An element type unknown or not allowed for the operand. */
	ACCEL_ERR_BAD_DTYPE = -12,
	/** A zero, too large or mismatched dimension. */
	ACCEL_ERR_BAD_SHAPE = -13,
	/** A stride shorter than a row, or overlapping destination rows. */
	ACCEL_ERR_BAD_STRIDE = -14,
	/** An address not aligned to its element. */
	ACCEL_ERR_BAD_ALIGNMENT = -15,
	/** Unknown flag bits. */
	ACCEL_ERR_BAD_FLAGS = -16,
	/** An unknown VPU or reduce operation, or a bad axis. */
	ACCEL_ERR_BAD_OP = -17,
	/** Beyond a limit of the chip or the driver (sizes, list lengths). */
	ACCEL_ERR_TOO_LARGE = -18,
	/** A buffer or command buffer belongs to another device. */
	ACCEL_ERR_WRONG_DEVICE = -19,
	/** The job failed on the chip; accel_job_status() says where and why. */
	ACCEL_ERR_JOB_FAILED = -20,
	/** The job hung; the driver stopped it and reset its queue. */
	ACCEL_ERR_JOB_HUNG = -21,
	/** The job was canceled: the device context is banned. */
	ACCEL_ERR_CANCELED = -22,
	/**
	 * Every one of a limited resource is taken (device contexts, windows,
	 * queued jobs), or the one asked for is (a window id).
	 */
	ACCEL_ERR_BUSY = -23,
	/* How a remote write (ICI_WRITE) fails, named after the chip's errors: */
	/** An ICI link on the way is down, or the target did not answer. */
	ACCEL_ERR_LINK_DOWN = -24,
	/** The target's windows refused it: no such window, key, right or range. */
	ACCEL_ERR_REMOTE_ACCESS = -25,
	/** No route to the target: not in the slice, or its port has no link. */
	ACCEL_ERR_NO_ROUTE = -26,
	/**
	 * Another chip gave up and set this one's abort semaphore
	 * (SEM_WAIT_ABORT): a collective failed elsewhere in the slice.
	 */
	ACCEL_ERR_PEER_ABORT = -27,
	/**
	 * The communicator gave up after a collective failed or timed out,
	 * here or on another chip: destroy it and create another.
	 */
	ACCEL_ERR_COMM_BROKEN = -28,
	/**
	 * A communicator spans chips of other processes and has no key:
	 * set TESSERA_SLICE_KEY (the launchers do) or accel_comm_opts.key.
	 */
	ACCEL_ERR_NO_SLICE_KEY = -29,
};

/* Lowest (most negative) error code; for iterating over all of them. */
#define ACCEL_ERR_LAST ACCEL_ERR_NO_SLICE_KEY

/**
 * accel_error_string() - what an error code means, in a sentence.
 * Never returns NULL; unknown codes get a text that says so.
 */
ACCEL_API const char *accel_error_string(int error);

/**
 * accel_error_name() - an error code's name without its ACCEL_ERR_
 * prefix, e.g. "LINK_DOWN" for ACCEL_ERR_LINK_DOWN; "OK" for ACCEL_OK.
 * For logs that programs or people match on.  Never returns NULL; unknown
 * codes give "UNKNOWN".
 */
ACCEL_API const char *accel_error_name(int error);

/**
 * accel_chip_error_name() - the name of a chip error code (enum tsr_error
 * of <tessera/chip.h>) as Documentation/chip.md spells it, e.g.
 * "MMU_UNMAPPED" for TSR_ERR_MMU_UNMAPPED; "NONE" for 0.  Never returns
 * NULL; unknown codes give "UNKNOWN".
 */
ACCEL_API const char *accel_chip_error_name(uint32_t code);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ERROR_H */
