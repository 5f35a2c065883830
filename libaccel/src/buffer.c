// SPDX-License-Identifier: MIT
/* Buffers: buffer objects, their CPU mappings, PRIME sharing. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <xf86drm.h>
#include <drm/tessera_accel.h>

#include <accel/accel.h>

#include "internal.h"

/* The first driver that maps buffers read-only to the device. */

/* Fill in a new handle for GEM handle @handle; the lock is held. */
static int buffer_new(struct accel_device *dev, uint32_t handle,
		      struct accel_buffer **out)
{
	struct drm_tessera_bo_info info = { .handle = handle };
	struct accel_buffer *buf;

	if (drmIoctl(dev->fd, DRM_IOCTL_TESSERA_BO_INFO, &info))
		return accel_error_from_errno(errno);
	buf = calloc(1, sizeof(*buf));
	if (!buf)
		return ACCEL_ERR_NO_MEMORY;
	buf->dev = dev;
	buf->handle = handle;
	buf->size = info.size;
	buf->device_va = info.device_va;
	buf->mmap_offset = info.mmap_offset;
	buf->placement = info.placement & DRM_TESSERA_BO_HBM ?
			 ACCEL_PLACEMENT_HBM : ACCEL_PLACEMENT_HOST;
	buf->refs = 1;
	buf->next = dev->buffers;
	if (dev->buffers)
		dev->buffers->prev = buf;
	dev->buffers = buf;
	*out = buf;
	return ACCEL_OK;
}

int accel_buffer_create(struct accel_device *dev, uint64_t size,
			uint32_t placement, struct accel_buffer **buf)
{
	struct drm_tessera_bo_create create = { .size = size };
	int ret;

	if (!dev || !buf || !size || size > DRM_TESSERA_BO_MAX_SIZE)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (placement & ~(ACCEL_PLACEMENT_HBM | ACCEL_BUFFER_DEVICE_READ_ONLY))
		return ACCEL_ERR_BAD_FLAGS;
	if (placement & ACCEL_PLACEMENT_HBM)
		create.flags |= DRM_TESSERA_BO_HBM;
	if (placement & ACCEL_BUFFER_DEVICE_READ_ONLY)
		create.flags |= DRM_TESSERA_BO_DEVICE_READ_ONLY;
	if (drmIoctl(dev->fd, DRM_IOCTL_TESSERA_BO_CREATE, &create))
		return accel_error_from_errno(errno);
	pthread_mutex_lock(&dev->lock);
	ret = buffer_new(dev, create.handle, buf);
	if (ret)
		drmCloseBufferHandle(dev->fd, create.handle);
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int accel_buffer_create_commands(struct accel_device *dev, uint64_t size,
				 struct accel_buffer **buf)
{
	return accel_buffer_create(dev, size, ACCEL_PLACEMENT_HOST |
				   ACCEL_BUFFER_DEVICE_READ_ONLY, buf);
}

void accel_buffer_ref(struct accel_buffer *buf)
{
	pthread_mutex_lock(&buf->dev->lock);
	buf->refs++;
	pthread_mutex_unlock(&buf->dev->lock);
}

void accel_buffer_destroy(struct accel_buffer *buf)
{
	struct accel_device *dev;

	if (!buf)
		return;
	dev = buf->dev;
	pthread_mutex_lock(&dev->lock);
	if (--buf->refs) {
		pthread_mutex_unlock(&dev->lock);
		return;
	}
	if (buf->prev)
		buf->prev->next = buf->next;
	else
		dev->buffers = buf->next;
	if (buf->next)
		buf->next->prev = buf->prev;
	if (buf->map)
		munmap(buf->map, buf->size);
	/* Under the lock: an import must not get this handle back meanwhile. */
	drmCloseBufferHandle(dev->fd, buf->handle);
	pthread_mutex_unlock(&dev->lock);
	free(buf);
}

int accel_buffer_map(struct accel_buffer *buf, void **ptr)
{
	void *map;
	int ret = ACCEL_OK;

	if (!buf || !ptr)
		return ACCEL_ERR_INVALID_ARGUMENT;
	map = __atomic_load_n(&buf->map, __ATOMIC_ACQUIRE);
	if (map) {
		*ptr = map;
		return ACCEL_OK;
	}
	pthread_mutex_lock(&buf->dev->lock);
	if (!buf->map) {
		map = mmap(NULL, buf->size, PROT_READ | PROT_WRITE, MAP_SHARED,
			   buf->dev->fd, buf->mmap_offset);
		if (map == MAP_FAILED)
			ret = accel_error_from_errno(errno);
		else
			__atomic_store_n(&buf->map, map, __ATOMIC_RELEASE);
	}
	if (!ret)
		*ptr = buf->map;
	pthread_mutex_unlock(&buf->dev->lock);
	return ret;
}

uint64_t accel_buffer_size(const struct accel_buffer *buf)
{
	return buf ? buf->size : 0;
}

uint64_t accel_buffer_device_va(const struct accel_buffer *buf)
{
	return buf ? buf->device_va : 0;
}

uint32_t accel_buffer_placement(const struct accel_buffer *buf)
{
	return buf ? buf->placement : ACCEL_PLACEMENT_HOST;
}

/* The CPU address of [@offset, @offset + @len) of @buf. */
static int buffer_range(struct accel_buffer *buf, uint64_t offset, size_t len,
			const void *data, uint8_t **at)
{
	void *map;
	int ret;

	if (!buf || (!data && len))
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (offset > buf->size || len > buf->size - offset)
		return ACCEL_ERR_OUT_OF_BOUNDS;
	ret = accel_buffer_map(buf, &map);
	if (ret)
		return ret;
	*at = (uint8_t *)map + offset;
	return ACCEL_OK;
}

int accel_buffer_upload(struct accel_buffer *buf, uint64_t offset,
			const void *data, size_t len)
{
	uint8_t *at;
	int ret = buffer_range(buf, offset, len, data, &at);

	if (!ret && len)
		memcpy(at, data, len);
	return ret;
}

int accel_buffer_download(struct accel_buffer *buf, uint64_t offset,
			  void *data, size_t len)
{
	uint8_t *at;
	int ret = buffer_range(buf, offset, len, data, &at);

	if (!ret && len)
		memcpy(data, at, len);
	return ret;
}

int accel_buffer_export(struct accel_buffer *buf, int *fd)
{
	if (!buf || !fd)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (buf->placement == ACCEL_PLACEMENT_HBM)
		return ACCEL_ERR_NOT_SUPPORTED;
	if (drmPrimeHandleToFD(buf->dev->fd, buf->handle,
			       DRM_CLOEXEC | DRM_RDWR, fd))
		return accel_error_from_errno(errno);
	return ACCEL_OK;
}

int accel_buffer_import(struct accel_device *dev, int fd,
			struct accel_buffer **buf)
{
	struct accel_buffer *known;
	uint32_t handle;
	int ret = ACCEL_OK;

	if (!dev || !buf || fd < 0)
		return ACCEL_ERR_INVALID_ARGUMENT;
	pthread_mutex_lock(&dev->lock);
	if (drmPrimeFDToHandle(dev->fd, fd, &handle)) {
		ret = accel_error_from_errno(errno);
		goto out;
	}
	/* The kernel gives one handle per buffer and file: share it. */
	for (known = dev->buffers; known; known = known->next) {
		if (known->handle == handle) {
			known->refs++;
			*buf = known;
			goto out;
		}
	}
	ret = buffer_new(dev, handle, buf);
	if (ret)
		drmCloseBufferHandle(dev->fd, handle);
out:
	pthread_mutex_unlock(&dev->lock);
	return ret;
}

int accel_buffer_advise(struct accel_buffer *buf, uint32_t advice,
			uint32_t *retained)
{
	struct drm_tessera_bo_madvise m = { 0 };

	if (!buf)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (advice != ACCEL_ADVICE_WILLNEED && advice != ACCEL_ADVICE_DONTNEED)
		return ACCEL_ERR_BAD_FLAGS;
	if (buf->placement == ACCEL_PLACEMENT_HBM)
		return ACCEL_ERR_NOT_SUPPORTED;
	m.handle = buf->handle;
	m.madv = advice == ACCEL_ADVICE_DONTNEED ? DRM_TESSERA_MADV_DONTNEED :
						   DRM_TESSERA_MADV_WILLNEED;
	if (drmIoctl(buf->dev->fd, DRM_IOCTL_TESSERA_BO_MADVISE, &m))
		return accel_error_from_errno(errno);
	if (retained)
		*retained = m.retained;
	return ACCEL_OK;
}
