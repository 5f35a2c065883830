// SPDX-License-Identifier: GPL-2.0
/*
 * The tessera driver's ioctls, called directly on /dev/accel/accel0:
 * what they return on good input and the errno they give on bad input.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <xf86drm.h>

#include "kselftest_harness.h"

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

TEST_F(accel, get_info_reports_the_chip_identity)
{
	struct drm_tessera_info info = { 0 };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_INFO, &info));
	EXPECT_EQ(TSR_CHIP_ID, info.chip_id);
	EXPECT_EQ(TSR_DEVICE_VERSION_MAJOR, TSR_VERSION_MAJOR(info.device_version));
	EXPECT_EQ(TSR_DEVICE_VERSION_MINOR, TSR_VERSION_MINOR(info.device_version));
	EXPECT_EQ(DRM_TESSERA_UAPI_VERSION, info.uapi_version);
	EXPECT_EQ(TSR_MSIX_VECTORS, info.msix_vectors);
	EXPECT_EQ(TSR_PCI_VENDOR_ID, info.pci_vendor);
	EXPECT_EQ(TSR_PCI_DEVICE_ID, info.pci_device);
	EXPECT_EQ(TSR_PCI_REVISION, info.pci_revision);
	EXPECT_EQ(0, info.pad[0] | info.pad[1] | info.pad[2]);
}

TEST_F(accel, get_info_rejects_nonzero_flags)
{
	struct drm_tessera_info info = { .flags = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
	info.flags = 0x80000000;
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_INFO, &info));
	EXPECT_EQ(EINVAL, errno);
}

TEST_F(accel, get_info_rejects_a_bad_pointer)
{
	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_INFO, (void *)8));
	EXPECT_EQ(EFAULT, errno);
}

TEST_F(accel, ping_is_echoed_through_the_device_interrupt)
{
	struct drm_tessera_info before = { 0 }, after = { 0 };
	struct drm_tessera_ping ping = { .cookie = 0xc0ffee01 };

	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_INFO, &before));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_PING, &ping));
	ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_GET_INFO, &after));

	EXPECT_EQ(0xc0ffee01, ping.echo);
	EXPECT_LT(0, ping.latency_ns);
	EXPECT_LE(before.irq_count + 1, after.irq_count);
}

TEST_F(accel, each_ping_gets_its_own_cookie_back)
{
	unsigned int i;

	for (i = 0; i < 200; i++) {
		struct drm_tessera_ping ping = { .cookie = 0x9e3779b9u * i };

		ASSERT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_PING, &ping));
		ASSERT_EQ(0x9e3779b9u * i, ping.echo) TH_LOG("ping %u", i);
	}
}

TEST_F(accel, ping_rejects_unknown_flags)
{
	struct drm_tessera_ping ping = { .cookie = 1, .flags = 1 };

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_PING, &ping));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(0, ping.echo);
}

TEST_F(accel, ping_rejects_a_timeout_above_the_maximum)
{
	struct drm_tessera_ping ping = {
		.cookie = 1,
		.timeout_ms = DRM_TESSERA_PING_MAX_TIMEOUT_MS + 1,
	};

	EXPECT_EQ(-1, ioctl(self->fd, DRM_IOCTL_TESSERA_PING, &ping));
	EXPECT_EQ(EINVAL, errno);
	ping.timeout_ms = DRM_TESSERA_PING_MAX_TIMEOUT_MS;
	EXPECT_EQ(0, ioctl(self->fd, DRM_IOCTL_TESSERA_PING, &ping));
	EXPECT_EQ(1, ping.echo);
}

TEST_F(accel, unknown_driver_ioctl_is_rejected)
{
	struct drm_tessera_info info = { 0 };
	unsigned long bad = DRM_IOWR(DRM_COMMAND_BASE + 0x3f,
				     struct drm_tessera_info);

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
