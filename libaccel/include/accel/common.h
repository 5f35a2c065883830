/* SPDX-License-Identifier: MIT */
/* Definitions every libaccel header shares. */
#ifndef ACCEL_COMMON_H
#define ACCEL_COMMON_H

#if defined(__GNUC__)
#define ACCEL_API __attribute__((visibility("default")))
#else
#define ACCEL_API
#endif

/* Version of this library. */
#define ACCEL_VERSION_MAJOR 0
#define ACCEL_VERSION_MINOR 8
#define ACCEL_VERSION_PATCH 0

#endif /* ACCEL_COMMON_H */
