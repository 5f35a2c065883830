/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * Tessera accelerator driver interface (/dev/accel/accelN).
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef __UAPI_TESSERA_ACCEL_H__
#define __UAPI_TESSERA_ACCEL_H__

#include "drm.h"

#if defined(__cplusplus)
extern "C" {
#endif

/*
 * Version of this interface.  Bumped when ioctls or fields are added;
 * existing ones never change meaning.
 */
#define DRM_TESSERA_UAPI_VERSION	1

#define DRM_TESSERA_GET_INFO		0x00
#define DRM_TESSERA_PING		0x01

#define DRM_IOCTL_TESSERA_GET_INFO \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_GET_INFO, struct drm_tessera_info)
#define DRM_IOCTL_TESSERA_PING \
	DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_PING, struct drm_tessera_ping)

/**
 * struct drm_tessera_info - chip identity (DRM_IOCTL_TESSERA_GET_INFO)
 *
 * All fields but @flags are written by the driver.  Fields may be added at
 * the end; the DRM core zero-fills what an older caller does not pass.
 */
struct drm_tessera_info {
	/** @flags: in, must be zero. */
	__u32 flags;
	/** @chip_id: value of the chip ID register, TSR_CHIP_ID. */
	__u32 chip_id;
	/** @device_version: device model version, TSR_VERSION(major, minor). */
	__u32 device_version;
	/** @caps: capability bits of the chip (none defined yet). */
	__u32 caps;
	/** @uapi_version: DRM_TESSERA_UAPI_VERSION the driver implements. */
	__u32 uapi_version;
	/** @msix_vectors: number of MSI-X vectors the driver enabled. */
	__u32 msix_vectors;
	/** @pci_vendor: PCI vendor ID of the function. */
	__u16 pci_vendor;
	/** @pci_device: PCI device ID of the function. */
	__u16 pci_device;
	/** @pci_revision: PCI revision ID of the function. */
	__u8 pci_revision;
	/** @pad: reserved, written as zero. */
	__u8 pad[3];
	/** @irq_count: device interrupts handled since the driver bound. */
	__u64 irq_count;
};

/**
 * struct drm_tessera_ping - interrupt round trip (DRM_IOCTL_TESSERA_PING)
 *
 * Writes @cookie to the chip's ping register and waits for the chip's
 * device interrupt to report it back: a liveness check of the register
 * and MSI-X paths that involves no other engine.  Fails with -ETIMEDOUT
 * if the interrupt does not arrive within @timeout_ms.
 */
#define DRM_TESSERA_PING_DEFAULT_TIMEOUT_MS	1000
#define DRM_TESSERA_PING_MAX_TIMEOUT_MS		60000

struct drm_tessera_ping {
	/** @cookie: in, value the chip must echo. */
	__u32 cookie;
	/** @flags: in, must be zero. */
	__u32 flags;
	/**
	 * @timeout_ms: in, up to DRM_TESSERA_PING_MAX_TIMEOUT_MS; 0 selects
	 * DRM_TESSERA_PING_DEFAULT_TIMEOUT_MS.
	 */
	__u32 timeout_ms;
	/** @echo: out, value the chip reported in its ping acknowledge. */
	__u32 echo;
	/** @latency_ns: out, time from the register write to the interrupt. */
	__u64 latency_ns;
};

#if defined(__cplusplus)
}
#endif

#endif /* __UAPI_TESSERA_ACCEL_H__ */
