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
#define ACCEL_DEBUGFS "/sys/kernel/debug/accel"
#define ACCEL_MAX_MINORS 256

/* Where the structs of libaccel 0.2 ended: the ICI fields came after. */
#define INFO_SIZE_0_2 offsetof(struct accel_device_info, slice_id)
#define COUNTERS_SIZE_0_2 \
	offsetof(struct accel_device_counters, remote_access_refused)

_Static_assert(DRM_TESSERA_MAX_PORTS == TSR_ICI_MAX_PORTS,
	       "LINK_INFO reports every port of the chip");

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
	int fd, is_tessera, is_current;

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
	/* The interface's version is the driver's (DRM_IOCTL_VERSION). */
	is_current = version->version_major == DRM_TESSERA_DRIVER_MAJOR &&
		     version->version_minor >= DRM_TESSERA_DRIVER_MINOR;
	drmFreeVersion(version);
	if (!is_tessera || !is_current) {
		close(fd);
		return is_tessera ? ACCEL_ERR_VERSION : ACCEL_ERR_NOT_TESSERA;
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

static int get_param(int fd, uint32_t param, uint32_t index, uint64_t *value)
{
	struct drm_tessera_get_param gp = { .param = param, .index = index };

	if (drmIoctl(fd, DRM_IOCTL_TESSERA_GET_PARAM, &gp))
		return accel_error_from_errno(errno);
	*value = gp.value;
	return ACCEL_OK;
}

/* The number in sysfs file @name of accel node @minor's PCI device. */
static int read_sysfs(unsigned int minor, const char *name, uint64_t *value)
{
	char path[128], buf[32], *end;
	FILE *f;
	bool ok;

	snprintf(path, sizeof(path), ACCEL_SYSFS_CLASS "/accel%u/device/%s",
		 minor, name);
	f = fopen(path, "re");
	if (!f)
		return accel_error_from_errno(errno);
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (!ok)
		return ACCEL_ERR_IO;
	*value = strtoull(buf, &end, 0);
	return end == buf ? ACCEL_ERR_IO : ACCEL_OK;
}

/* MSI-X vectors of accel node @minor's PCI device: its msi_irqs entries. */
static uint32_t count_msix_vectors(unsigned int minor)
{
	char path[96];
	struct dirent *de;
	uint32_t n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), ACCEL_SYSFS_CLASS "/accel%u/device/msi_irqs",
		 minor);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((de = readdir(dir)))
		n += de->d_name[0] != '.';
	closedir(dir);
	return n;
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
	uint64_t queues = 0, mxu_dim = 0, topology[TSR_ICI_MAX_DIMS] = { 0 };
	unsigned int d;
	int ret;

	ret = walk_devices(filter, &found);
	if (ret)
		return ret;
	ret = get_param(found.fd, DRM_TESSERA_PARAM_NUM_QUEUES, 0, &queues) ?:
	      get_param(found.fd, DRM_TESSERA_PARAM_MXU_DIM, 0, &mxu_dim);
	for (d = 0; d < TSR_ICI_MAX_DIMS && !ret; d++)
		ret = get_param(found.fd, DRM_TESSERA_PARAM_TOPOLOGY, d,
				&topology[d]);
	dev = ret ? NULL : malloc(sizeof(*dev));
	if (!dev) {
		close(found.fd);
		return ret ? ret : ACCEL_ERR_NO_MEMORY;
	}
	*dev = found;
	dev->num_queues = (uint32_t)queues;
	dev->mxu_dim = (uint32_t)mxu_dim;
	for (d = 0; d < TSR_ICI_MAX_DIMS; d++)
		dev->topology[d] = (uint32_t)topology[d];
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
	accel_arena_free(dev, false);
	close(dev->fd);
	pthread_mutex_destroy(&dev->cmd_pool_lock);
	pthread_mutex_destroy(&dev->lock);
	free(dev);
}

void accel_device_trim(struct accel_device *dev)
{
	if (dev) {
		accel_cmd_pool_drain(dev);
		accel_arena_free(dev, true);
	}
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

/* Where each GET_PARAM parameter goes in struct accel_device_info. */
#define U32_FIELD(param, field) \
	{ DRM_TESSERA_PARAM_##param, offsetof(struct accel_device_info, field), 4 }
#define U64_FIELD(param, field) \
	{ DRM_TESSERA_PARAM_##param, offsetof(struct accel_device_info, field), 8 }

static const struct info_param {
	uint32_t param;
	size_t offset;
	size_t size;
} info_params[] = {
	U32_FIELD(CHIP_ID, chip_id),
	U32_FIELD(CAPS, caps),
	U32_FIELD(PRESET, preset),
	U32_FIELD(TENSORCORES, tensorcores),
	U32_FIELD(MXUS_PER_CORE, mxus_per_core),
	U32_FIELD(MXU_DIM, mxu_dim),
	U32_FIELD(VPU_SUBLANES, vpu_sublanes),
	U32_FIELD(VPU_LANES, vpu_lanes),
	U32_FIELD(VMEM_MIB, vmem_mib),
	U32_FIELD(CLOCK_MHZ, clock_mhz),
	U32_FIELD(HBM_GBPS, hbm_gbps),
	U32_FIELD(HOST_DMA_GBPS, host_dma_gbps),
	U32_FIELD(NUM_QUEUES, num_queues),
	U64_FIELD(HBM_SIZE, hbm_size),
	U32_FIELD(CONTEXT_ID, context_id),
	U32_FIELD(MAX_CONTEXTS, max_contexts),
	U32_FIELD(ICI_PORTS, ici_ports),
	U32_FIELD(ICI_LINK_GBPS, ici_link_gbps),
	U32_FIELD(SLICE_CHIPS, slice_chips),
	U32_FIELD(SLICE_INDEX, slice_index),
	U32_FIELD(SLICE_ID, slice_id),
	U32_FIELD(WRAP, wrap),
	U32_FIELD(PORTS_WIRED, ports_wired),
	U32_FIELD(MAX_WINDOWS, max_windows),
	U32_FIELD(ICI_LINK_LATENCY_NS, ici_link_latency_ns),
	U32_FIELD(SPARSECORES, sparsecores),
	U32_FIELD(SC_TILES, sc_tiles),
	U32_FIELD(SC_SIMD_F32, sc_simd_f32),
	U32_FIELD(SC_SIMD_BF16, sc_simd_bf16),
	U32_FIELD(SC_SPMEM_KIB, sc_spmem_kib),
};

static void store_field(struct accel_device_info *info, size_t offset,
			size_t size, uint64_t value)
{
	uint32_t v32 = (uint32_t)value;

	memcpy((char *)info + offset, size == 4 ? (void *)&v32 : &value, size);
}

/* What GET_PARAM tells: the chip's fixed configuration and the slice. */
static int info_from_params(struct accel_device *dev,
			    struct accel_device_info *info)
{
	uint64_t v = 0;
	unsigned int i, d;
	int ret;

	for (i = 0; i < sizeof(info_params) / sizeof(info_params[0]); i++) {
		ret = get_param(dev->fd, info_params[i].param, 0, &v);
		if (ret)
			return ret;
		store_field(info, info_params[i].offset, info_params[i].size, v);
	}
	ret = get_param(dev->fd, DRM_TESSERA_PARAM_DEVICE_VERSION, 0, &v);
	if (ret)
		return ret;
	info->device_version_major = TSR_VERSION_MAJOR(v);
	info->device_version_minor = TSR_VERSION_MINOR(v);
	for (d = 0; d < TSR_ICI_MAX_DIMS; d++) {
		ret = get_param(dev->fd, DRM_TESSERA_PARAM_TOPOLOGY, d, &v);
		info->topology[d] = (uint32_t)v;
		if (!ret)
			ret = get_param(dev->fd, DRM_TESSERA_PARAM_COORDS, d, &v);
		info->coords[d] = (uint32_t)v;
		if (ret)
			return ret;
	}
	info->peak_bf16_flops = 2ull * info->tensorcores * info->mxus_per_core *
				info->mxu_dim * info->mxu_dim *
				info->clock_mhz * 1000000ull;
	return ACCEL_OK;
}

/* What sysfs tells: the PCI identity and what changes as the chip runs. */
static int info_from_sysfs(const struct accel_device *dev,
			   struct accel_device_info *info)
{
	uint64_t vendor, device, revision;
	int ret;

	ret = read_sysfs(dev->minor, "vendor", &vendor) ?:
	      read_sysfs(dev->minor, "device", &device) ?:
	      read_sysfs(dev->minor, "revision", &revision) ?:
	      read_sysfs(dev->minor, "tessera/irq_count", &info->irq_count) ?:
	      read_sysfs(dev->minor, "tessera/hbm_free", &info->hbm_free);
	if (ret)
		return ret;
	info->pci_vendor = (uint16_t)vendor;
	info->pci_device = (uint16_t)device;
	info->pci_revision = (uint8_t)revision;
	info->msix_vectors = count_msix_vectors(dev->minor);
	return ACCEL_OK;
}

/* Each port's state and peer, from LINK_INFO. */
static int info_ports(struct accel_device *dev, struct accel_device_info *info)
{
	unsigned int p;

	for (p = 0; p < info->ici_ports && p < TSR_ICI_MAX_PORTS; p++) {
		struct drm_tessera_link_info li = { .port = p };

		if (drmIoctl(dev->fd, DRM_IOCTL_TESSERA_LINK_INFO, &li))
			return accel_error_from_errno(errno);
		accel_port_from_driver(&li.info, &info->ports[p]);
	}
	return ACCEL_OK;
}

int accel_device_get_info_sized(struct accel_device *dev,
				struct accel_device_info *info, size_t size)
{
	struct accel_device_info ours = { 0 };
	drmVersionPtr version;
	int ret;

	if (!dev || !info)
		return ACCEL_ERR_INVALID_ARGUMENT;
	ours.index = dev->index;
	ours.minor = dev->minor;
	memcpy(ours.pci_address, dev->pci_address, sizeof(ours.pci_address));
	ret = info_from_params(dev, &ours) ?: info_from_sysfs(dev, &ours) ?:
	      info_ports(dev, &ours);
	if (ret)
		return ret;
	version = drmGetVersion(dev->fd);
	if (!version)
		return accel_error_from_errno(errno);
	snprintf(ours.driver_name, sizeof(ours.driver_name), "%s",
		 version->name);
	ours.driver_major = version->version_major;
	ours.driver_minor = version->version_minor;
	ours.driver_patch = version->version_patchlevel;
	drmFreeVersion(version);
	return accel_copy_sized(info, size, &ours, sizeof(ours), INFO_SIZE_0_2);
}

/* The counters of sysfs, in the order of struct accel_device_counters. */
static const char *const counter_files[] = {
	"mxu_busy_cycles", "vpu_busy_cycles", "dma_busy_cycles", "chip_jobs",
	"chip_commands", "hbm_read_bytes", "hbm_write_bytes", "clock_cycles",
	"jobs_submitted", "jobs_completed", "jobs_failed", "mmu_faults",
	"ecc_correctable", "ecc_uncorrectable", "timeouts", "lost_irqs",
	"queue_resets", "device_resets", "fatal_errors", "banned_contexts",
	"remote_access_refused", "link_downs", "link_ups", "sc_busy_cycles",
};

_Static_assert(sizeof(counter_files) / sizeof(counter_files[0]) ==
	       sizeof(struct accel_device_counters) / sizeof(uint64_t),
	       "a sysfs file for every counter");

int accel_device_get_counters_sized(struct accel_device *dev,
				    struct accel_device_counters *c,
				    size_t size)
{
	uint64_t ours[sizeof(counter_files) / sizeof(counter_files[0])];
	char name[64];
	unsigned int i;
	int ret;

	if (!dev || !c)
		return ACCEL_ERR_INVALID_ARGUMENT;
	for (i = 0; i < sizeof(ours) / sizeof(ours[0]); i++) {
		snprintf(name, sizeof(name), "tessera/%s", counter_files[i]);
		ret = read_sysfs(dev->minor, name, &ours[i]);
		if (ret)
			return ret;
	}
	return accel_copy_sized(c, size, ours, sizeof(ours), COUNTERS_SIZE_0_2);
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
	char path[96], buf[64];
	unsigned long long latency;
	unsigned int echo;
	ssize_t n;
	int fd, len, ret = ACCEL_OK;

	if (!dev || timeout_ms > ACCEL_PING_MAX_TIMEOUT_MS)
		return ACCEL_ERR_INVALID_ARGUMENT;
	snprintf(path, sizeof(path), ACCEL_DEBUGFS "/%s/ping", dev->pci_address);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return accel_error_from_errno(errno);
	len = snprintf(buf, sizeof(buf), "%u %u", cookie,
		       timeout_ms ? timeout_ms : ACCEL_PING_DEFAULT_TIMEOUT_MS);
	if (write(fd, buf, len) != len) {
		ret = accel_error_from_errno(errno);
		goto out;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0) {
		ret = n < 0 ? accel_error_from_errno(errno) : ACCEL_ERR_IO;
		goto out;
	}
	buf[n] = '\0';
	if (sscanf(buf, "%x %llu", &echo, &latency) != 2 || echo != cookie) {
		ret = ACCEL_ERR_IO;
		goto out;
	}
	if (latency_ns)
		*latency_ns = latency;
out:
	close(fd);
	return ret;
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
