// SPDX-License-Identifier: MIT
/* Finding, opening and querying Tessera devices. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>
#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#include <accel/accel.h>

#include "internal.h"

#define ACCEL_DEV_DIR "/dev/accel"
#define ACCEL_SYSFS_CLASS "/sys/class/accel"
#define ACCEL_MAX_MINORS 256
/* The oldest driver interface this library works with. */
#define ACCEL_MIN_UAPI_VERSION 2

/* Where the structs of libaccel 0.2 ended: the ICI fields came after. */
#define INFO_SIZE_0_2 offsetof(struct accel_device_info, slice_id)
#define COUNTERS_SIZE_0_2 \
	offsetof(struct accel_device_counters, remote_access_refused)

_Static_assert(DRM_TESSERA_MAX_PORTS == TSR_ICI_MAX_PORTS,
	       "GET_INFO reports every port of the chip");

/* Sorted minors of the /dev/accel/accelN nodes; returns how many. */
static int list_minors(unsigned int *minors, unsigned int max)
{
	struct dirent *de;
	unsigned int n = 0, i, j;
	DIR *dir;

	dir = opendir(ACCEL_DEV_DIR);
	if (!dir)
		return 0;
	while ((de = readdir(dir)) && n < max) {
		unsigned int minor;
		char tail;

		if (sscanf(de->d_name, "accel%u%c", &minor, &tail) == 1)
			minors[n++] = minor;
	}
	closedir(dir);
	for (i = 1; i < n; i++) {
		unsigned int m = minors[i];

		for (j = i; j > 0 && minors[j - 1] > m; j--)
			minors[j] = minors[j - 1];
		minors[j] = m;
	}
	return n;
}

/* Open accel node @minor; ACCEL_ERR_NOT_TESSERA if another driver owns it. */
static int open_minor(unsigned int minor, int *fd_out)
{
	char path[64];
	drmVersionPtr version;
	int fd, is_tessera;

	snprintf(path, sizeof(path), ACCEL_DEV_DIR "/accel%u", minor);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return accel_error_from_errno(errno);
	version = drmGetVersion(fd);
	if (!version) {
		close(fd);
		return ACCEL_ERR_IO;
	}
	is_tessera = strcmp(version->name, "tessera") == 0;
	drmFreeVersion(version);
	if (!is_tessera) {
		close(fd);
		return ACCEL_ERR_NOT_TESSERA;
	}
	*fd_out = fd;
	return ACCEL_OK;
}

/* The PCI address of accel node @minor, "" if sysfs does not tell. */
static void read_pci_address(unsigned int minor,
			     char buf[ACCEL_PCI_ADDRESS_LEN])
{
	char link[96], target[PATH_MAX];
	const char *base;
	ssize_t n;

	buf[0] = '\0';
	snprintf(link, sizeof(link), ACCEL_SYSFS_CLASS "/accel%u/device", minor);
	n = readlink(link, target, sizeof(target) - 1);
	if (n < 0)
		return;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (strlen(base) < ACCEL_PCI_ADDRESS_LEN)
		strcpy(buf, base);
}

static int check_uapi(int fd, struct drm_tessera_info *info)
{
	memset(info, 0, sizeof(*info));
	if (drmIoctl(fd, DRM_IOCTL_TESSERA_GET_INFO, info))
		return accel_error_from_errno(errno);
	if (info->uapi_version < ACCEL_MIN_UAPI_VERSION)
		return ACCEL_ERR_VERSION;
	return ACCEL_OK;
}

/* Which device a walk stops at: by index, by PCI address, or none. */
struct device_filter {
	const char *pci_address;	/* NULL: match by index */
	unsigned int index;
	bool any;			/* false: only count */
};

static bool filter_matches(const struct device_filter *filter,
			   unsigned int index, const char *pci_address)
{
	if (!filter->any)
		return false;
	if (filter->pci_address)
		return strcmp(filter->pci_address, pci_address) == 0;
	return filter->index == index;
}

/*
 * Walk the Tessera devices in index order.  On a match the device's open
 * fd, index and minor are returned through @found and 0 is returned;
 * with no match, the number of Tessera devices seen (counting) or
 * ACCEL_ERR_NO_DEVICE (looking for one).
 */
static int walk_devices(const struct device_filter *filter,
			struct accel_device *found)
{
	unsigned int minors[ACCEL_MAX_MINORS];
	unsigned int index = 0;
	int n, i, ret, fd = -1;

	n = list_minors(minors, ACCEL_MAX_MINORS);
	for (i = 0; i < n; i++) {
		char pci[ACCEL_PCI_ADDRESS_LEN];

		ret = open_minor(minors[i], &fd);
		if (ret == ACCEL_ERR_NOT_TESSERA)
			continue;
		if (ret)
			return ret;
		read_pci_address(minors[i], pci);
		if (filter_matches(filter, index, pci)) {
			found->fd = fd;
			found->index = index;
			found->minor = minors[i];
			memcpy(found->pci_address, pci, sizeof(pci));
			return 0;
		}
		close(fd);
		index++;
	}
	return filter->any ? ACCEL_ERR_NO_DEVICE : (int)index;
}

static int open_matching(const struct device_filter *filter,
			 struct accel_device **out)
{
	struct accel_device found = { 0 }, *dev;
	struct drm_tessera_info info;
	int ret;

	ret = walk_devices(filter, &found);
	if (ret)
		return ret;
	ret = check_uapi(found.fd, &info);
	if (ret) {
		close(found.fd);
		return ret;
	}
	dev = malloc(sizeof(*dev));
	if (!dev) {
		close(found.fd);
		return ACCEL_ERR_NO_MEMORY;
	}
	*dev = found;
	dev->uapi_version = info.uapi_version;
	dev->num_queues = info.num_queues;
	dev->mxu_dim = info.mxu_dim;
	memcpy(dev->topology, info.topology, sizeof(dev->topology));
	pthread_mutex_init(&dev->lock, NULL);
	pthread_mutex_init(&dev->cmd_pool_lock, NULL);
	accel_trace_env_open(dev);
	*out = dev;
	return ACCEL_OK;
}

int accel_device_count(unsigned int *count)
{
	struct device_filter filter = { .any = false };
	struct accel_device unused;
	int n;

	if (!count)
		return ACCEL_ERR_INVALID_ARGUMENT;
	n = walk_devices(&filter, &unused);
	if (n < 0)
		return n;
	*count = n;
	return ACCEL_OK;
}

int accel_device_open(unsigned int index, struct accel_device **dev)
{
	struct device_filter filter = { .index = index, .any = true };

	if (!dev)
		return ACCEL_ERR_INVALID_ARGUMENT;
	return open_matching(&filter, dev);
}

int accel_device_open_pci(const char *pci_address, struct accel_device **dev)
{
	struct device_filter filter = { .pci_address = pci_address, .any = true };

	if (!dev || !pci_address || !*pci_address)
		return ACCEL_ERR_INVALID_ARGUMENT;
	return open_matching(&filter, dev);
}

void accel_device_close(struct accel_device *dev)
{
	if (!dev)
		return;
	accel_trace_env_close(dev);
	accel_cmd_pool_drain(dev);
	close(dev->fd);
	pthread_mutex_destroy(&dev->cmd_pool_lock);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

void accel_device_trim(struct accel_device *dev)
{
	if (dev)
		accel_cmd_pool_drain(dev);
}

int accel_device_fd(const struct accel_device *dev)
{
	return dev ? dev->fd : ACCEL_ERR_INVALID_ARGUMENT;
}

int accel_copy_sized(void *out, size_t size, const void *ours,
		     size_t ours_size, size_t min)
{
	if (size < min)
		return ACCEL_ERR_INVALID_ARGUMENT;
	memcpy(out, ours, size < ours_size ? size : ours_size);
	if (size > ours_size)
		memset((char *)out + ours_size, 0, size - ours_size);
	return ACCEL_OK;
}

void accel_port_from_driver(const struct drm_tessera_port *p,
			    struct accel_ici_port *out)
{
	*out = (struct accel_ici_port){
		.state = p->state,
		.peer_slice = p->peer_slice,
		.peer_port = p->peer_port,
	};
	memcpy(out->peer.c, p->peer_coords, sizeof(out->peer.c));
}

static void info_from_driver(const struct accel_device *dev,
			     const struct drm_tessera_info *ti,
			     const drmVersion *version,
			     struct accel_device_info *info)
{
	unsigned int p;

	memset(info, 0, sizeof(*info));
	info->index = dev->index;
	info->minor = dev->minor;
	memcpy(info->pci_address, dev->pci_address, sizeof(info->pci_address));
	info->pci_vendor = ti->pci_vendor;
	info->pci_device = ti->pci_device;
	info->pci_revision = ti->pci_revision;
	info->chip_id = ti->chip_id;
	info->device_version_major = TSR_VERSION_MAJOR(ti->device_version);
	info->device_version_minor = TSR_VERSION_MINOR(ti->device_version);
	info->caps = ti->caps;
	info->msix_vectors = ti->msix_vectors;
	info->irq_count = ti->irq_count;
	info->uapi_version = ti->uapi_version;
	info->preset = ti->preset;
	info->tensorcores = ti->tensorcores;
	info->mxus_per_core = ti->mxus_per_core;
	info->mxu_dim = ti->mxu_dim;
	info->vpu_sublanes = ti->vpu_sublanes;
	info->vpu_lanes = ti->vpu_lanes;
	info->vmem_mib = ti->vmem_mib;
	info->clock_mhz = ti->clock_mhz;
	info->hbm_gbps = ti->hbm_gbps;
	info->host_dma_gbps = ti->host_dma_gbps;
	info->num_queues = ti->num_queues;
	info->hbm_size = ti->hbm_size;
	info->hbm_free = ti->hbm_free;
	info->context_id = ti->context_id;
	info->max_contexts = ti->max_contexts;
	info->peak_bf16_flops = 2ull * ti->tensorcores * ti->mxus_per_core *
				ti->mxu_dim * ti->mxu_dim * ti->clock_mhz * 1000000ull;
	info->ici_ports = ti->ici_ports;
	info->ici_link_gbps = ti->ici_link_gbps;
	info->slice_chips = ti->slice_chips;
	info->slice_index = ti->slice_index;
	memcpy(info->topology, ti->topology, sizeof(info->topology));
	memcpy(info->coords, ti->coords, sizeof(info->coords));
	/* An older driver left these zero: the DRM core zero-fills. */
	info->slice_id = ti->slice_id;
	info->wrap = ti->wrap;
	info->ports_wired = ti->ports_wired;
	info->max_windows = ti->max_windows;
	info->ici_link_latency_ns = ti->ici_link_latency_ns;
	for (p = 0; p < TSR_ICI_MAX_PORTS; p++)
		accel_port_from_driver(&ti->ports[p], &info->ports[p]);
	info->sparsecores = ti->sparsecores;
	info->sc_tiles = ti->sc_tiles;
	info->sc_simd_f32 = ti->sc_simd_f32;
	info->sc_simd_bf16 = ti->sc_simd_bf16;
	info->sc_spmem_kib = ti->sc_spmem_kib;
	snprintf(info->driver_name, sizeof(info->driver_name), "%s",
		 version->name);
	info->driver_major = version->version_major;
	info->driver_minor = version->version_minor;
	info->driver_patch = version->version_patchlevel;
}

int accel_device_get_info_sized(struct accel_device *dev,
				struct accel_device_info *info, size_t size)
{
	struct drm_tessera_info ti = { 0 };
	struct accel_device_info ours;
	drmVersionPtr version;

	if (!dev || !info)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (drmIoctl(dev->fd, DRM_IOCTL_TESSERA_GET_INFO, &ti))
		return accel_error_from_errno(errno);
	version = drmGetVersion(dev->fd);
	if (!version)
		return accel_error_from_errno(errno);
	info_from_driver(dev, &ti, version, &ours);
	drmFreeVersion(version);
	return accel_copy_sized(info, size, &ours, sizeof(ours), INFO_SIZE_0_2);
}

int accel_device_get_counters_sized(struct accel_device *dev,
				    struct accel_device_counters *c,
				    size_t size)
{
	struct drm_tessera_counters tc = { 0 };
	struct accel_device_counters ours;

	if (!dev || !c)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (drmIoctl(dev->fd, DRM_IOCTL_TESSERA_GET_COUNTERS, &tc))
		return accel_error_from_errno(errno);
	ours = (struct accel_device_counters){
		.mxu_busy_cycles = tc.mxu_busy_cycles,
		.vpu_busy_cycles = tc.vpu_busy_cycles,
		.dma_busy_cycles = tc.dma_busy_cycles,
		.chip_jobs = tc.chip_jobs,
		.chip_commands = tc.chip_commands,
		.hbm_read_bytes = tc.hbm_read_bytes,
		.hbm_write_bytes = tc.hbm_write_bytes,
		.clock_cycles = tc.clock_cycles,
		.jobs_submitted = tc.jobs_submitted,
		.jobs_completed = tc.jobs_completed,
		.jobs_failed = tc.jobs_failed,
		.mmu_faults = tc.mmu_faults,
		.ecc_correctable = tc.ecc_correctable,
		.ecc_uncorrectable = tc.ecc_uncorrectable,
		.timeouts = tc.timeouts,
		.lost_irqs = tc.lost_irqs,
		.queue_resets = tc.queue_resets,
		.device_resets = tc.device_resets,
		.fatal_errors = tc.fatal_errors,
		.banned_contexts = tc.banned_contexts,
		.remote_access_refused = tc.remote_access_refused,
		.link_downs = tc.link_downs,
		.link_ups = tc.link_ups,
		.sc_busy_cycles = tc.sc_busy_cycles,
	};
	return accel_copy_sized(c, size, &ours, sizeof(ours), COUNTERS_SIZE_0_2);
}

const char *accel_preset_name(uint32_t preset)
{
	switch (preset) {
	case TSR_PRESET_V2:
		return "v2";
	case TSR_PRESET_V3:
		return "v3";
	case TSR_PRESET_V4:
		return "v4";
	case TSR_PRESET_V5E:
		return "v5e";
	case TSR_PRESET_V5P:
		return "v5p";
	case TSR_PRESET_V6E:
		return "v6e";
	default:
		return "custom";
	}
}

int accel_device_ping(struct accel_device *dev, uint32_t cookie,
		      uint32_t timeout_ms, uint64_t *latency_ns)
{
	struct drm_tessera_ping ping = {
		.cookie = cookie,
		.timeout_ms = timeout_ms,
	};

	if (!dev || timeout_ms > DRM_TESSERA_PING_MAX_TIMEOUT_MS)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (drmIoctl(dev->fd, DRM_IOCTL_TESSERA_PING, &ping))
		return accel_error_from_errno(errno);
	if (ping.echo != cookie)
		return ACCEL_ERR_IO;
	if (latency_ns)
		*latency_ns = ping.latency_ns;
	return ACCEL_OK;
}

/*
 * The entry points of programs built against libaccel 0.2, before the
 * header's macros passed the size: their structs end where the ICI
 * fields begin.
 */
#undef accel_device_get_info
#undef accel_device_get_counters

ACCEL_API int accel_device_get_info(struct accel_device *dev,
				    struct accel_device_info *info);
ACCEL_API int accel_device_get_counters(struct accel_device *dev,
					struct accel_device_counters *c);

int accel_device_get_info(struct accel_device *dev,
			  struct accel_device_info *info)
{
	return accel_device_get_info_sized(dev, info, INFO_SIZE_0_2);
}

int accel_device_get_counters(struct accel_device *dev,
			      struct accel_device_counters *c)
{
	return accel_device_get_counters_sized(dev, c, COUNTERS_SIZE_0_2);
}
