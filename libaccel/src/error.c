// SPDX-License-Identifier: MIT
/* Error codes and their texts. */
#include <tessera/chip.h>

#include <accel/accel.h>

#include "internal.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const error_text[] = {
	[-ACCEL_OK] = "success",
	[-ACCEL_ERR_INVALID_ARGUMENT] = "invalid argument",
	[-ACCEL_ERR_NO_DEVICE] = "no Tessera device with that index or address",
	[-ACCEL_ERR_NOT_TESSERA] = "the device is not driven by the tessera driver",
	[-ACCEL_ERR_PERMISSION] = "permission denied (the device node, or a high priority without CAP_SYS_NICE)",
	[-ACCEL_ERR_NO_MEMORY] = "out of memory (host memory, HBM or device address space)",
	[-ACCEL_ERR_TIMEOUT] = "the operation did not complete in time",
	[-ACCEL_ERR_VERSION] = "the tessera driver is older than this library needs",
	[-ACCEL_ERR_DEVICE_LOST] = "the device was removed or its driver unbound",
	[-ACCEL_ERR_IO] = "the driver reported an unexpected error",
	[-ACCEL_ERR_NOT_SUPPORTED] = "the object does not support this operation (HBM buffers cannot be exported)",
	[-ACCEL_ERR_OUT_OF_BOUNDS] = "an offset, tensor or region lies outside its buffer",
	[-ACCEL_ERR_BAD_DTYPE] = "an element type the command does not allow for that operand",
	[-ACCEL_ERR_BAD_SHAPE] = "a zero, too large or mismatched dimension",
	[-ACCEL_ERR_BAD_STRIDE] = "a stride shorter than a row, or overlapping destination rows",
	[-ACCEL_ERR_BAD_ALIGNMENT] = "an address not aligned to its element",
	[-ACCEL_ERR_BAD_FLAGS] = "unknown flag bits",
	[-ACCEL_ERR_BAD_OP] = "an unknown VPU or reduce operation, or a bad axis",
	[-ACCEL_ERR_TOO_LARGE] = "beyond a limit of the chip or the driver",
	[-ACCEL_ERR_WRONG_DEVICE] = "the buffer or command buffer belongs to another device",
	[-ACCEL_ERR_JOB_FAILED] = "the job failed on the chip; its status names the error and the command",
	[-ACCEL_ERR_JOB_HUNG] = "the job hung and was stopped by a queue reset",
	[-ACCEL_ERR_CANCELED] = "the job was canceled: the device context is banned after repeated faults",
	[-ACCEL_ERR_BUSY] = "busy: every device context, window or queued-job slot is taken, or the window id asked for is open",
	[-ACCEL_ERR_LINK_DOWN] = "an ICI link on the way to the target chip is down, or the target did not answer (LINK_DOWN)",
	[-ACCEL_ERR_REMOTE_ACCESS] = "the target chip refused the remote write: no such window open, wrong key, not writable, or outside it (REMOTE_ACCESS)",
	[-ACCEL_ERR_NO_ROUTE] = "no route to the target chip: it is not in the slice, or the port towards it has no link (NO_ROUTE)",
	[-ACCEL_ERR_PEER_ABORT] = "another chip of the slice failed and aborted this chip's wait for it (PEER_ABORT)",
	[-ACCEL_ERR_COMM_BROKEN] = "the communicator gave up after a collective failed or timed out: destroy it and create another",
	[-ACCEL_ERR_NO_SLICE_KEY] = "the communicator spans chips of other processes and has no key: set TESSERA_SLICE_KEY, the same on every host (tools/tessera-slice and tools/tessera-vm set it), or accel_comm_opts.key",
};

const char *accel_error_string(int error)
{
	if (error > 0 || error < ACCEL_ERR_LAST)
		return "unknown libaccel error code";
	return error_text[-error];
}

#define ERROR_NAME(name) [-ACCEL_ERR_##name] = #name

static const char *const error_name[] = {
	[-ACCEL_OK] = "OK",
	ERROR_NAME(INVALID_ARGUMENT),
	ERROR_NAME(NO_DEVICE),
	ERROR_NAME(NOT_TESSERA),
	ERROR_NAME(PERMISSION),
	ERROR_NAME(NO_MEMORY),
	ERROR_NAME(TIMEOUT),
	ERROR_NAME(VERSION),
	ERROR_NAME(DEVICE_LOST),
	ERROR_NAME(IO),
	ERROR_NAME(NOT_SUPPORTED),
	ERROR_NAME(OUT_OF_BOUNDS),
	ERROR_NAME(BAD_DTYPE),
	ERROR_NAME(BAD_SHAPE),
	ERROR_NAME(BAD_STRIDE),
	ERROR_NAME(BAD_ALIGNMENT),
	ERROR_NAME(BAD_FLAGS),
	ERROR_NAME(BAD_OP),
	ERROR_NAME(TOO_LARGE),
	ERROR_NAME(WRONG_DEVICE),
	ERROR_NAME(JOB_FAILED),
	ERROR_NAME(JOB_HUNG),
	ERROR_NAME(CANCELED),
	ERROR_NAME(BUSY),
	ERROR_NAME(LINK_DOWN),
	ERROR_NAME(REMOTE_ACCESS),
	ERROR_NAME(NO_ROUTE),
	ERROR_NAME(PEER_ABORT),
	ERROR_NAME(COMM_BROKEN),
	ERROR_NAME(NO_SLICE_KEY),
};

_Static_assert(sizeof(error_name) / sizeof(error_name[0]) == 1 - ACCEL_ERR_LAST,
	       "every libaccel error code has a name");

const char *accel_error_name(int error)
{
	if (error > 0 || error < ACCEL_ERR_LAST || !error_name[-error])
		return "UNKNOWN";
	return error_name[-error];
}

#define CHIP_ERROR(name) [TSR_ERR_##name] = #name

static const char *const chip_error_name[] = {
	CHIP_ERROR(NONE),
	CHIP_ERROR(BAD_OPCODE),
	CHIP_ERROR(BAD_SIZE),
	CHIP_ERROR(BAD_FLAGS),
	CHIP_ERROR(RESERVED),
	CHIP_ERROR(BAD_DTYPE),
	CHIP_ERROR(BAD_SHAPE),
	CHIP_ERROR(BAD_STRIDE),
	CHIP_ERROR(BAD_ALIGNMENT),
	CHIP_ERROR(BAD_OP),
	CHIP_ERROR(MMU_UNMAPPED),
	CHIP_ERROR(MMU_PERMISSION),
	CHIP_ERROR(BAD_CONTEXT),
	CHIP_ERROR(DMA),
	CHIP_ERROR(ECC),
	CHIP_ERROR(BAD_JOB),
	CHIP_ERROR(ABORTED),
	CHIP_ERROR(TOO_LARGE),
	CHIP_ERROR(LINK_DOWN),
	CHIP_ERROR(REMOTE_ACCESS),
	CHIP_ERROR(NO_ROUTE),
	CHIP_ERROR(PEER_ABORT),
	CHIP_ERROR(ID_RANGE),
	CHIP_ERROR(MAX_IDS),
	CHIP_ERROR(MAX_UNIQUE_IDS),
	CHIP_ERROR(SPMEM),
};

/* A code added to the chip header needs its name here. */
_Static_assert(sizeof(chip_error_name) / sizeof(chip_error_name[0]) ==
	       TSR_ERR_COUNT, "a TSR_ERR_* code has no name");

const char *accel_chip_error_name(uint32_t code)
{
	return code < TSR_ERR_COUNT ? chip_error_name[code] : "UNKNOWN";
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
	case EBADF:
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
	case ETIME:
		return ACCEL_ERR_TIMEOUT;
	case ENODEV:
		return ACCEL_ERR_DEVICE_LOST;
	case EOPNOTSUPP:
		return ACCEL_ERR_NOT_SUPPORTED;
	case E2BIG:
		return ACCEL_ERR_TOO_LARGE;
	case ECANCELED:
		return ACCEL_ERR_CANCELED;
	case EBUSY:
	case ENOSPC:
		return ACCEL_ERR_BUSY;
	case ENOLINK:
		return ACCEL_ERR_LINK_DOWN;
	case EHOSTUNREACH:
		return ACCEL_ERR_NO_ROUTE;
	case ECONNABORTED:
		return ACCEL_ERR_PEER_ABORT;
	default:
		return ACCEL_ERR_IO;
	}
}
