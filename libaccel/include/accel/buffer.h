/* SPDX-License-Identifier: MIT */
/*
 * libaccel buffers: memory the chip works on, in system memory or HBM.
 *
 * A struct accel_buffer is a buffer object of one device, mapped into
 * that device's address space at a fixed device VA for as long as the
 * handle lives.  Thread safety: buffers may be created, imported,
 * mapped and destroyed from several threads at once; uploads and
 * downloads of disjoint ranges may run concurrently.  Destroy every
 * buffer of a device before closing the device.
 */
#ifndef ACCEL_BUFFER_H
#define ACCEL_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include <accel/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_device;
struct accel_buffer;

/* Placements: where the memory is. */
/** System memory: cached CPU mappings, shareable as a dma-buf. */
#define ACCEL_PLACEMENT_HOST	0x0u
/** The chip's HBM: write-combined CPU mappings (slow to read), not shareable. */
#define ACCEL_PLACEMENT_HBM	0x1u

/*
 * Flags, ORed with the placement.  ACCEL_BUFFER_DEVICE_READ_ONLY: the chip
 * may only read the buffer; a command writing it fails the job
 * (ACCEL_ERR_JOB_FAILED, chip error "MMU_PERMISSION") and leaves it
 * unchanged.  The CPU mapping stays writable.  Command buffers get it by
 * default.
 */
#define ACCEL_BUFFER_DEVICE_READ_ONLY	0x100u

/**
 * accel_buffer_create() - allocate a zeroed buffer.
 * @size: bytes, 1 to 64 GiB; the buffer gets at least this, rounded up to
 *	whole pages (accel_buffer_size() says how much)
 * @placement: ACCEL_PLACEMENT_HOST or ACCEL_PLACEMENT_HBM, ORed with
 *	ACCEL_BUFFER_DEVICE_READ_ONLY or not
 *
 * ACCEL_ERR_NO_MEMORY when the placement has no room; ACCEL_ERR_BAD_FLAGS
 * for an unknown placement or flag.
 */
ACCEL_API int accel_buffer_create(struct accel_device *dev, uint64_t size,
				  uint32_t placement, struct accel_buffer **buf);

/**
 * accel_buffer_destroy() - drop a handle; NULL is allowed.
 *
 * The memory goes when nothing uses it any more: jobs already submitted
 * and command buffers that recorded the buffer keep it alive.  A
 * buffer imported twice is the same handle, destroyed once per import.
 */
ACCEL_API void accel_buffer_destroy(struct accel_buffer *buf);

/**
 * accel_buffer_map() - the buffer's CPU mapping.
 *
 * The first call maps the whole buffer (MAP_SHARED); later calls return
 * the same address.  The mapping lives until the buffer is destroyed.
 * System memory is mapped cached, HBM write-combined: writes are fast,
 * reads uncached and slow.
 */
ACCEL_API int accel_buffer_map(struct accel_buffer *buf, void **ptr);

/** accel_buffer_size() - bytes in the buffer (page-rounded); 0 for NULL. */
ACCEL_API uint64_t accel_buffer_size(const struct accel_buffer *buf);

/**
 * accel_buffer_device_va() - the buffer's address in its device's address
 * space, as commands name it; 0 for NULL.
 */
ACCEL_API uint64_t accel_buffer_device_va(const struct accel_buffer *buf);

/** accel_buffer_placement() - ACCEL_PLACEMENT_HOST or _HBM, without flags. */
ACCEL_API uint32_t accel_buffer_placement(const struct accel_buffer *buf);

/**
 * accel_buffer_upload() - copy @len bytes from @data into the buffer at
 * @offset, through the CPU mapping.
 *
 * ACCEL_ERR_OUT_OF_BOUNDS if the range does not fit in the buffer.  The
 * copy is not ordered with jobs: wait for the jobs that use the range.
 */
ACCEL_API int accel_buffer_upload(struct accel_buffer *buf, uint64_t offset,
				  const void *data, size_t len);

/** accel_buffer_download() - copy @len bytes at @offset out to @data. */
ACCEL_API int accel_buffer_download(struct accel_buffer *buf, uint64_t offset,
				    void *data, size_t len);

/**
 * accel_buffer_export() - share a system-memory buffer as a dma-buf.
 * @fd: the new dma-buf file descriptor (close-on-exec, read-write); the
 *	caller closes it
 *
 * ACCEL_ERR_NOT_SUPPORTED for an HBM buffer.
 */
ACCEL_API int accel_buffer_export(struct accel_buffer *buf, int *fd);

/**
 * accel_buffer_import() - a buffer for a dma-buf, from this device,
 * another Tessera device or any exporter.
 *
 * The buffer gets its own device VA in @dev.  Importing a buffer @dev
 * already has returns the same handle with one more reference.  @fd
 * stays open; the caller closes it.
 */
ACCEL_API int accel_buffer_import(struct accel_device *dev, int fd,
				  struct accel_buffer **buf);

/* Advice for accel_buffer_advise(). */
/** The contents are needed again: the kernel keeps them from now on. */
#define ACCEL_ADVICE_WILLNEED	0u
/** The contents may be dropped under memory pressure while no job runs. */
#define ACCEL_ADVICE_DONTNEED	1u

/**
 * accel_buffer_advise() - tell the kernel whether a system-memory buffer's
 * contents are still needed (driver 2.3, BO_MADVISE).
 * @advice: ACCEL_ADVICE_DONTNEED or ACCEL_ADVICE_WILLNEED
 * @retained: out, may be NULL: 1 if the buffer still has its contents, 0
 *	if the kernel purged them
 *
 * A DONTNEED buffer that no unfinished job uses may be purged under
 * memory pressure; a purged buffer stays purged (a job touching it fails,
 * chip error "MMU_UNMAPPED"; its CPU mapping raises SIGBUS), and nothing
 * new reaches it: accel_buffer_map() (when not mapped before),
 * accel_buffer_export() and accel_window_open() on it fail with
 * ACCEL_ERR_INVALID_ARGUMENT (the driver's EFAULT), never giving zeroed
 * memory for its contents.  Destroy it and create another.  Call WILLNEED
 * before using it again and check @retained.  Its memory comes back once
 * nothing maps it: a buffer accel_buffer_map() mapped keeps its pages
 * until it is destroyed.
 * ACCEL_ERR_NOT_SUPPORTED for an HBM buffer; ACCEL_ERR_BAD_FLAGS for
 * other advice.
 */
ACCEL_API int accel_buffer_advise(struct accel_buffer *buf, uint32_t advice,
				  uint32_t *retained);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_BUFFER_H */
