/* SPDX-License-Identifier: MIT */
/* libaccel internals shared between its source files. */
#ifndef ACCEL_INTERNAL_H
#define ACCEL_INTERNAL_H

#include <errno.h>

/* The libaccel code for a failed system call's errno. */
int accel_error_from_errno(int err);

#endif /* ACCEL_INTERNAL_H */
