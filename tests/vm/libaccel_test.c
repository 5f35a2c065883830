// SPDX-License-Identifier: GPL-2.0
/* libaccel against the real driver and device: enumeration, info, ping. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kselftest_harness.h"

#include <accel/accel.h>
#include <drm/tessera_accel.h>
#include <tessera/chip.h>

/* A hex sysfs attribute of PCI device @dev, or 0 if it cannot be read. */
static unsigned int pci_attr(const char *dev, const char *attr)
{
	unsigned int value = 0;
	char path[300];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/%s", dev, attr);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%x", &value) != 1)
		value = 0;
	fclose(f);
	return value;
}

/* Tessera PCI functions in sysfs, counted without libaccel. */
static unsigned int count_tessera_functions(void)
{
	DIR *dir = opendir("/sys/bus/pci/devices");
	unsigned int n = 0;
	struct dirent *de;

	if (!dir)
		return 0;
	while ((de = readdir(dir)))
		n += de->d_name[0] != '.' &&
		     pci_attr(de->d_name, "vendor") == TSR_PCI_VENDOR_ID &&
		     pci_attr(de->d_name, "device") == TSR_PCI_DEVICE_ID;
	closedir(dir);
	return n;
}

TEST(count_matches_the_pci_functions_present)
{
	unsigned int count = 0;

	ASSERT_EQ(ACCEL_OK, accel_device_count(&count));
	EXPECT_EQ(count_tessera_functions(), count);
	EXPECT_LE(1, count);
}

TEST(every_index_opens_a_distinct_chip)
{
	char seen[16][ACCEL_PCI_ADDRESS_LEN];
	unsigned int count = 0, i, j;

	ASSERT_EQ(ACCEL_OK, accel_device_count(&count));
	ASSERT_GE(16, count);
	for (i = 0; i < count; i++) {
		struct accel_device_info info;
		struct accel_device *dev;

		ASSERT_EQ(ACCEL_OK, accel_device_open(i, &dev));
		ASSERT_EQ(ACCEL_OK, accel_device_get_info(dev, &info));
		EXPECT_EQ(i, info.index);
		EXPECT_EQ(TSR_CHIP_ID, info.chip_id);
		EXPECT_STREQ("tessera", info.driver_name);
		EXPECT_EQ(DRM_TESSERA_DRIVER_MAJOR, info.driver_major);
		EXPECT_EQ(0, info.reserved0);
		memcpy(seen[i], info.pci_address, ACCEL_PCI_ADDRESS_LEN);
		for (j = 0; j < i; j++)
			EXPECT_STRNE(seen[j], seen[i]);
		accel_device_close(dev);
	}
}

TEST(an_index_past_the_last_chip_is_no_device)
{
	struct accel_device *dev = NULL;
	unsigned int count = 0;

	ASSERT_EQ(ACCEL_OK, accel_device_count(&count));
	EXPECT_EQ(ACCEL_ERR_NO_DEVICE, accel_device_open(count, &dev));
	EXPECT_EQ(NULL, dev);
	EXPECT_EQ(ACCEL_ERR_NO_DEVICE, accel_device_open(1000000, &dev));
}

TEST(open_by_pci_address_finds_the_same_chip)
{
	struct accel_device_info by_index, by_pci;
	struct accel_device *a, *b;

	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &a));
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(a, &by_index));
	ASSERT_EQ(ACCEL_OK, accel_device_open_pci(by_index.pci_address, &b));
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(b, &by_pci));
	EXPECT_EQ(by_index.index, by_pci.index);
	EXPECT_EQ(by_index.minor, by_pci.minor);
	EXPECT_STREQ(by_index.pci_address, by_pci.pci_address);
	accel_device_close(a);
	accel_device_close(b);
}

TEST(an_unknown_pci_address_is_no_device)
{
	struct accel_device *dev = NULL;

	EXPECT_EQ(ACCEL_ERR_NO_DEVICE, accel_device_open_pci("0000:ff:1f.7", &dev));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_device_open_pci("", &dev));
	EXPECT_EQ(NULL, dev);
}

TEST(ping_round_trips_and_counts_an_interrupt)
{
	struct accel_device_info before, after;
	struct accel_device *dev;
	uint64_t latency = 0;

	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &dev));
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(dev, &before));
	ASSERT_EQ(ACCEL_OK, accel_device_ping(dev, 42, 0, &latency));
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(dev, &after));
	EXPECT_LT(0, latency);
	EXPECT_LT(before.irq_count, after.irq_count);
	accel_device_close(dev);
}

TEST(ping_with_a_timeout_above_the_maximum_is_invalid)
{
	struct accel_device *dev;

	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &dev));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_device_ping(dev, 1, ACCEL_PING_MAX_TIMEOUT_MS + 1,
				    NULL));
	accel_device_close(dev);
}

TEST(handles_are_independent)
{
	struct accel_device *a, *b;

	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &a));
	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &b));
	EXPECT_NE(accel_device_fd(a), accel_device_fd(b));
	accel_device_close(a);
	EXPECT_EQ(ACCEL_OK, accel_device_ping(b, 7, 0, NULL));
	accel_device_close(b);
}

#define PING_THREADS 4
#define PINGS_PER_THREAD 50

struct pinger {
	struct accel_device *dev;
	uint32_t base;
	int failures;
};

static void *ping_loop(void *arg)
{
	struct pinger *p = arg;
	uint32_t i;

	for (i = 0; i < PINGS_PER_THREAD; i++)
		if (accel_device_ping(p->dev, p->base + i, 0, NULL) != ACCEL_OK)
			p->failures++;
	return NULL;
}

TEST(one_handle_serves_several_threads)
{
	struct pinger pingers[PING_THREADS];
	pthread_t threads[PING_THREADS];
	struct accel_device *dev;
	int i;

	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &dev));
	for (i = 0; i < PING_THREADS; i++) {
		pingers[i] = (struct pinger){ .dev = dev, .base = i << 16 };
		ASSERT_EQ(0, pthread_create(&threads[i], NULL, ping_loop,
					    &pingers[i]));
	}
	for (i = 0; i < PING_THREADS; i++) {
		ASSERT_EQ(0, pthread_join(threads[i], NULL));
		EXPECT_EQ(0, pingers[i].failures) TH_LOG("thread %d", i);
	}
	accel_device_close(dev);
}

TEST_HARNESS_MAIN
