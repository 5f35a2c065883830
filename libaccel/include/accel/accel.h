/* SPDX-License-Identifier: MIT */
/* libaccel: userspace library for Tessera accelerators. */
#ifndef ACCEL_ACCEL_H
#define ACCEL_ACCEL_H

#include <accel/buffer.h>
#include <accel/cmdbuf.h>
#include <accel/collective.h>
#include <accel/common.h>
#include <accel/device.h>
#include <accel/embedding.h>
#include <accel/error.h>
#include <accel/ici.h>
#include <accel/job.h>
#include <accel/ops.h>
#include <accel/ref.h>
#include <accel/tensor.h>
#include <accel/trace.h>

#ifdef __cplusplus
extern "C" {
#endif

/** accel_version_string() - this library's version, "major.minor.patch". */
ACCEL_API const char *accel_version_string(void);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_ACCEL_H */
