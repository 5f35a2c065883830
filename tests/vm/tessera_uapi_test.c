// SPDX-License-Identifier: GPL-2.0
/*
 * The tessera driver's identity: the DRM version (the uapi's), GET_PARAM,
 * the counters in sysfs and the ping in debugfs, called directly on
 * /dev/accel/accel0: what they return on good input and the errno they
 * give on bad input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <xf86drm.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#define ACCEL_NODE "/dev/accel/accel0"

static int read_sysfs_hex(const char *path, unsigned int *value)
{
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%x", value);
	fclose(f);
	return n == 1 ? 0 : -1;
}

FIXTURE(accel) {
	int fd;
};

FIXTURE_SETUP(accel)
{
	self->fd = open(ACCEL_NODE, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open %s: %s", ACCEL_NODE, strerror(errno));
}

FIXTURE_TEARDOWN(accel)
{
	close(self->fd);
}

TEST_F(accel, version_names_the_tessera_driver)
{
	drmVersionPtr v = drmGetVersion(self->fd);

	ASSERT_NE(NULL, v);
	EXPECT_STREQ("tessera", v->name);
	drmFreeVersion(v);
}

TEST_F(accel, version_is_the_uapi_version)
{
	drmVersionPtr v = drmGetVersion(self->fd);

	ASSERT_NE(NULL, v);
	EXPECT_EQ(DRM_TESSERA_DRIVER_MAJOR, v->version_major);
	EXPECT_EQ(DRM_TESSERA_DRIVER_MINOR, v->version_minor);
	drmFreeVersion(v);
}

TEST_F(accel, get_param_reports_the_chip_identity)
{
	uint64_t v;

	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_CHIP_ID, 0, &v));
	EXPECT_EQ(TSR_CHIP_ID, v);
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_DEVICE_VERSION, 0, &v));
	EXPECT_EQ(TSR_DEVICE_VERSION_MAJOR, TSR_VERSION_MAJOR(v));
	EXPECT_EQ(TSR_DEVICE_VERSION_MINOR, TSR_VERSION_MINOR(v));
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_NUM_QUEUES, 0, &v));
	EXPECT_LE(1, v);
	EXPECT_GE(TSR_MAX_QUEUES, v);
}

TEST_F(accel, every_param_has_a_value)
{
	struct tsr_info info;

	ASSERT_EQ(0, tsr_info(self->fd, &info));
	EXPECT_NE(0, info.hbm_size);
	EXPECT_NE(0, info.context_id);
	EXPECT_EQ(info.slice_chips, info.topology[0] * info.topology[1] *
				    info.topology[2]);
}

TEST_F(accel, context_id_is_per_file)
{
	int other = open(ACCEL_NODE, O_RDWR | O_CLOEXEC);
	uint64_t a, b;

	ASSERT_LE(0, other);
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_CONTEXT_ID, 0, &a));
	ASSERT_EQ(0, tsr_param(other, DRM_TESSERA_PARAM_CONTEXT_ID, 0, &b));
	EXPECT_NE(a, b);
	close(other);
}

TEST_F(accel, get_param_rejects_an_unknown_param)
{
	uint64_t v = 1;

	EXPECT_EQ(-EINVAL, tsr_param(self->fd, 0, 0, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_SC_SPMEM_KIB + 1,
				     0, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, 0xffffffff, 0, &v));
}

TEST_F(accel, get_param_rejects_an_index_the_param_does_not_take)
{
	uint64_t v;

	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_CHIP_ID, 1, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_SLICE_ID, 1, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_TOPOLOGY, 3, &v));
	EXPECT_EQ(-EINVAL, tsr_param(self->fd, DRM_TESSERA_PARAM_COORDS, 3, &v));
	EXPECT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_TOPOLOGY, 2, &v));
	EXPECT_LE(1, v);
}

TEST_F(accel, get_param_rejects_a_bad_pointer)
{
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_PARAM, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(accel, the_retired_ioctls_are_gone)
{
	/* GET_INFO, PING, GET_COUNTERS: past the table, or GET_PARAM's 0. */
	struct drm_tessera_get_param gp = { 0 };
	unsigned long past = DRM_IOWR(DRM_COMMAND_BASE + DRM_TESSERA_LINK_INFO + 1,
				      struct drm_tessera_get_param);

	EXPECT_EQ(-1, ioctl(self->fd, past, &gp));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_PARAM, &gp));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(accel, volatile_state_is_in_sysfs)
{
	struct tsr_counters c;
	uint64_t hbm;

	ASSERT_EQ(0, tsr_counters(self->fd, &c));
	ASSERT_EQ(0, tsr_param(self->fd, DRM_TESSERA_PARAM_HBM_SIZE, 0, &hbm));
	EXPECT_LT(0, c.hbm_free);
	EXPECT_GE(hbm, c.hbm_free);
}

TEST_F(accel, ping_is_echoed_through_the_device_interrupt)
{
	struct tsr_counters before, after;
	uint64_t latency = 0;
	uint32_t echo = 0;

	ASSERT_EQ(0, tsr_counters(self->fd, &before));
	ASSERT_EQ(0, tsr_ping(self->fd, 0xc0ffee01, 0, &echo, &latency));
	ASSERT_EQ(0, tsr_counters(self->fd, &after));

	EXPECT_EQ(0xc0ffee01, echo);
	EXPECT_LT(0, latency);
	EXPECT_LE(before.irq_count + 1, after.irq_count);
}

TEST_F(accel, each_ping_gets_its_own_cookie_back)
{
	unsigned int i;

	for (i = 0; i < 200; i++) {
		uint32_t echo;

		ASSERT_EQ(0, tsr_ping(self->fd, 0x9e3779b9u * i, 0, &echo, NULL));
		ASSERT_EQ(0x9e3779b9u * i, echo) TH_LOG("ping %u", i);
	}
}

TEST_F(accel, ping_rejects_a_timeout_above_the_maximum)
{
	uint32_t echo = 0;

	EXPECT_EQ(-EINVAL, tsr_ping(self->fd, 1, 60001, &echo, NULL));
	EXPECT_EQ(0, tsr_ping(self->fd, 1, 60000, &echo, NULL));
	EXPECT_EQ(1, echo);
}

TEST_F(accel, ping_is_for_root_only)
{
	char pci[32], path[96];
	struct stat st;

	ASSERT_EQ(0, tsr_pci_address(0, pci, sizeof(pci)));
	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/ping", pci);
	ASSERT_EQ(0, stat(path, &st));
	EXPECT_EQ(0600, st.st_mode & 0777);
}

TEST_F(accel, unknown_driver_ioctl_is_rejected)
{
	struct drm_tessera_get_param info = { 0 };
	unsigned long bad = DRM_IOWR(DRM_COMMAND_BASE + 0x3f,
				     struct drm_tessera_get_param);

	EXPECT_EQ(-1, ioctl(self->fd, bad, &info));
	EXPECT_EQ(EINVAL, errno);
}

TEST(pci_function_is_a_processing_accelerator)
{
	unsigned int class, vendor, device;

	ASSERT_EQ(0, read_sysfs_hex("/sys/class/accel/accel0/device/class", &class));
	ASSERT_EQ(0, read_sysfs_hex("/sys/class/accel/accel0/device/vendor", &vendor));
	ASSERT_EQ(0, read_sysfs_hex("/sys/class/accel/accel0/device/device", &device));
	EXPECT_EQ(TSR_PCI_CLASS, class);
	EXPECT_EQ(TSR_PCI_VENDOR_ID, vendor);
	EXPECT_EQ(TSR_PCI_DEVICE_ID, device);
}

/* Linux resource flags (include/linux/ioport.h) for the BAR checks. */
#define IORESOURCE_MEM		0x00000200
#define IORESOURCE_PREFETCH	0x00002000
#define IORESOURCE_MEM_64	0x00100000

TEST(hbm_is_a_64bit_prefetchable_bar)
{
	unsigned long long start, end, flags, size;
	FILE *f = fopen("/sys/class/accel/accel0/device/resource", "r");
	int bar;

	ASSERT_NE(NULL, f);
	for (bar = 0; bar <= TSR_BAR_HBM; bar++)
		ASSERT_EQ(3, fscanf(f, "%llx %llx %llx", &start, &end, &flags));
	fclose(f);
	size = end - start + 1;
	EXPECT_NE(0, start);
	EXPECT_LE(16ull << 20, size);
	EXPECT_EQ(0, size & (size - 1));
	EXPECT_EQ(IORESOURCE_MEM | IORESOURCE_PREFETCH | IORESOURCE_MEM_64,
		  flags & (IORESOURCE_MEM | IORESOURCE_PREFETCH | IORESOURCE_MEM_64));
}

TEST(device_interrupt_is_an_msix_vector)
{
	char line[256];
	int found = 0;
	FILE *f = fopen("/proc/interrupts", "r");

	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "PCI-MSIX") && strstr(line, "tessera"))
			found++;
	fclose(f);
	EXPECT_LE(1, found);
}

TEST_HARNESS_MAIN
