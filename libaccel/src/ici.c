// SPDX-License-Identifier: MIT
/* ICI: coordinates in a slice, the links' state and counters, windows. */
#include <stdlib.h>
#include <string.h>

#include <xf86drm.h>
#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#include <accel/accel.h>

#include "internal.h"

/* Where struct accel_link_info of libaccel 0.3 ends. */
#define LINK_INFO_SIZE_0_3 offsetof(struct accel_link_info, tail_probes)
#define SLICE_SIZE_0_3 sizeof(struct accel_slice)

struct accel_window {
	struct accel_device *dev;
	struct accel_buffer *buf;	/* a reference, held while open */
	uint32_t id;
	uint64_t key;
	uint64_t device_va;
};

_Static_assert(ACCEL_WINDOW_READ == DRM_TESSERA_WINDOW_READ &&
	       ACCEL_WINDOW_WRITE == DRM_TESSERA_WINDOW_WRITE &&
	       ACCEL_WINDOW_FIXED_ID == DRM_TESSERA_WINDOW_FIXED_ID &&
	       ACCEL_WINDOW_FIXED_KEY == DRM_TESSERA_WINDOW_FIXED_KEY,
	       "window flags pass to the driver unchanged");

/* ------------------------------------------------------------ coordinates */

/* Chips in a slice of @topology, or 0 if a dimension is out of range. */
static uint32_t slice_chips(const uint32_t topology[TSR_ICI_MAX_DIMS])
{
	uint32_t chips = 1;
	unsigned int d;

	for (d = 0; d < TSR_ICI_MAX_DIMS; d++) {
		if (topology[d] < 1 || topology[d] > UINT8_MAX)
			return 0;
		chips *= topology[d];
	}
	return chips;
}

int accel_coords_from_index(const uint32_t topology[TSR_ICI_MAX_DIMS],
			    uint32_t index, struct accel_coords *coords)
{
	unsigned int d;

	if (!topology || !coords || index >= slice_chips(topology))
		return ACCEL_ERR_INVALID_ARGUMENT;
	for (d = 0; d < TSR_ICI_MAX_DIMS; d++) {
		coords->c[d] = index % topology[d];
		index /= topology[d];
	}
	return ACCEL_OK;
}

bool accel_coords_in_slice(const uint32_t topology[TSR_ICI_MAX_DIMS],
			   struct accel_coords coords)
{
	unsigned int d;

	if (!topology || !slice_chips(topology))
		return false;
	for (d = 0; d < TSR_ICI_MAX_DIMS; d++)
		if (coords.c[d] >= topology[d])
			return false;
	return true;
}

int accel_coords_to_index(const uint32_t topology[TSR_ICI_MAX_DIMS],
			  struct accel_coords coords, uint32_t *index)
{
	uint32_t i = 0;
	int d;

	if (!index || !accel_coords_in_slice(topology, coords))
		return ACCEL_ERR_INVALID_ARGUMENT;
	for (d = TSR_ICI_MAX_DIMS - 1; d >= 0; d--)
		i = i * topology[d] + coords.c[d];
	*index = i;
	return ACCEL_OK;
}

/* ------------------------------------------------------------ links */

const char *accel_link_state_name(uint32_t state)
{
	static const char *const names[] = TSR_ICI_STATE_NAMES;

	if (state >= sizeof(names) / sizeof(names[0]))
		return "unknown";
	return names[state];
}

int accel_link_get_info_sized(struct accel_device *dev, unsigned int port,
			      struct accel_link_info *info, size_t size)
{
	struct drm_tessera_link_info li = { .port = port };
	struct accel_link_info ours;

	if (!dev || !info || port >= TSR_ICI_MAX_PORTS)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (drmIoctl(dev->fd, DRM_IOCTL_TESSERA_LINK_INFO, &li))
		return accel_error_from_errno(errno);
	ours = (struct accel_link_info){
		.frames_tx = li.counters[DRM_TESSERA_LINK_FRAMES_TX],
		.frames_rx = li.counters[DRM_TESSERA_LINK_FRAMES_RX],
		.bytes_tx = li.counters[DRM_TESSERA_LINK_BYTES_TX],
		.bytes_rx = li.counters[DRM_TESSERA_LINK_BYTES_RX],
		.crc_errors = li.counters[DRM_TESSERA_LINK_CRC_ERRORS],
		.seq_errors = li.counters[DRM_TESSERA_LINK_SEQ_ERRORS],
		.naks = li.counters[DRM_TESSERA_LINK_NAKS],
		.replays = li.counters[DRM_TESSERA_LINK_REPLAYS],
		.timeouts = li.counters[DRM_TESSERA_LINK_TIMEOUTS],
		.credit_stalls = li.counters[DRM_TESSERA_LINK_CREDIT_STALLS],
		.link_downs = li.counters[DRM_TESSERA_LINK_LINK_DOWNS],
		.protocol_errors = li.counters[DRM_TESSERA_LINK_PROTOCOL_ERRORS],
		.tail_probes = li.counters[DRM_TESSERA_LINK_TAIL_PROBES],
		.tail_losses = li.counters[DRM_TESSERA_LINK_TAIL_LOSSES],
	};
	accel_port_from_driver(&li.info, &ours.port);
	return accel_copy_sized(info, size, &ours, sizeof(ours),
				LINK_INFO_SIZE_0_3);
}

/* ------------------------------------------------------------ windows */

static int window_check(struct accel_device *dev, struct accel_buffer *buf,
			uint64_t offset, uint64_t size, uint32_t access,
			const struct accel_window_opts *opts)
{
	if (!buf || !size)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (buf->dev != dev)
		return ACCEL_ERR_WRONG_DEVICE;
	if (!access || access & ~(ACCEL_WINDOW_READ | ACCEL_WINDOW_WRITE) ||
	    opts->flags & ~(ACCEL_WINDOW_FIXED_ID | ACCEL_WINDOW_FIXED_KEY))
		return ACCEL_ERR_BAD_FLAGS;
	if ((opts->flags & ACCEL_WINDOW_FIXED_ID &&
	     opts->id >= DRM_TESSERA_MAX_WINDOWS) ||
	    (opts->flags & ACCEL_WINDOW_FIXED_KEY && !opts->key))
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (offset > buf->size || size > buf->size - offset)
		return ACCEL_ERR_OUT_OF_BOUNDS;
	return ACCEL_OK;
}

int accel_window_open(struct accel_device *dev, struct accel_buffer *buf,
		      uint64_t offset, uint64_t size, uint32_t access,
		      const struct accel_window_opts *opts,
		      struct accel_window **win)
{
	static const struct accel_window_opts defaults;
	struct drm_tessera_window_open wo;
	struct accel_window *w;
	int ret;

	if (!dev || !win)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (!opts)
		opts = &defaults;
	ret = window_check(dev, buf, offset, size, access, opts);
	if (ret)
		return ret;
	/* Allocated first: an open window is never left without its handle. */
	w = malloc(sizeof(*w));
	if (!w)
		return ACCEL_ERR_NO_MEMORY;
	wo = (struct drm_tessera_window_open){
		.handle = buf->handle, .flags = access | opts->flags,
		.offset = offset, .size = size, .key = opts->key, .id = opts->id,
	};
	if (drmIoctl(dev->fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo)) {
		ret = accel_error_from_errno(errno);
		free(w);
		return ret;
	}
	accel_buffer_ref(buf);
	*w = (struct accel_window){
		.dev = dev, .buf = buf, .id = wo.id, .key = wo.key,
		.device_va = wo.device_va,
	};
	*win = w;
	return ACCEL_OK;
}

void accel_window_close(struct accel_window *win)
{
	struct drm_tessera_window_close wc;

	if (!win)
		return;
	wc = (struct drm_tessera_window_close){ .id = win->id };
	/* Fails only for a window this handle does not have: nothing to do. */
	drmIoctl(win->dev->fd, DRM_IOCTL_TESSERA_WINDOW_CLOSE, &wc);
	accel_buffer_destroy(win->buf);
	free(win);
}

uint32_t accel_window_id(const struct accel_window *win)
{
	return win ? win->id : 0;
}

uint64_t accel_window_key(const struct accel_window *win)
{
	return win ? win->key : 0;
}

uint64_t accel_window_device_va(const struct accel_window *win)
{
	return win ? win->device_va : 0;
}

/* -------------------------------------------------------------- slices */

/* The slice of device @device, as its chip tells it. */
static int slice_of(unsigned int device, struct accel_slice *slice,
		    struct accel_slice_chip *chip)
{
	struct accel_device_info info;
	struct accel_device *dev;
	unsigned int d;
	int ret;

	ret = accel_device_open(device, &dev);
	if (ret)
		return ret;
	ret = accel_device_get_info(dev, &info);
	accel_device_close(dev);
	if (ret)
		return ret;
	memset(slice, 0, sizeof(*slice));
	slice->slice_id = info.slice_id;
	slice->wrap = info.wrap;
	slice->chips = info.slice_chips;
	chip->device = device;
	chip->index = info.slice_index;
	for (d = 0; d < TSR_ICI_MAX_DIMS; d++) {
		slice->topology[d] = info.topology[d];
		chip->coords.c[d] = info.coords[d];
	}
	return ACCEL_OK;
}

int accel_slice_get_sized(struct accel_slice *out, size_t size)
{
	struct accel_slice slice, one;
	struct accel_slice_chip chip;
	unsigned int count, i, j;
	int ret;

	if (!out)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = accel_device_count(&count);
	if (ret)
		return ret;
	if (!count)
		return ACCEL_ERR_NO_DEVICE;
	if (count > ACCEL_SLICE_MAX_LOCAL)
		count = ACCEL_SLICE_MAX_LOCAL;
	for (i = 0; i < count; i++) {
		ret = slice_of(i, &one, &chip);
		if (ret)
			return ret;
		if (!i) {
			slice = one;
		} else if (one.slice_id != slice.slice_id ||
			   memcmp(one.topology, slice.topology,
				  sizeof(one.topology)) || one.wrap != slice.wrap) {
			return ACCEL_ERR_INVALID_ARGUMENT;
		}
		/* Kept in slice order. */
		for (j = slice.local_count;
		     j > 0 && slice.local[j - 1].index >= chip.index; j--) {
			if (slice.local[j - 1].index == chip.index)
				return ACCEL_ERR_INVALID_ARGUMENT;
			slice.local[j] = slice.local[j - 1];
		}
		slice.local[j] = chip;
		slice.local_count++;
	}
	return accel_copy_sized(out, size, &slice, sizeof(slice),
				SLICE_SIZE_0_3);
}

int accel_device_open_coords(struct accel_coords coords,
			     struct accel_device **dev)
{
	struct accel_slice slice;
	unsigned int i;
	int ret;

	if (!dev)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ret = accel_slice_get(&slice);
	if (ret)
		return ret;
	for (i = 0; i < slice.local_count; i++)
		if (!memcmp(&slice.local[i].coords, &coords, sizeof(coords)))
			return accel_device_open(slice.local[i].device, dev);
	return ACCEL_ERR_NO_DEVICE;
}
