// SPDX-License-Identifier: MIT
/*
 * hello: open every Tessera chip through libaccel and print its identity
 * as read from the chip's registers through the driver.
 */
#include <stdio.h>
#include <stdlib.h>

#include <accel/accel.h>

static int print_chip(unsigned int index)
{
	struct accel_device_info info;
	struct accel_device *dev;
	uint64_t latency_ns;
	int ret;

	ret = accel_device_open(index, &dev);
	if (ret) {
		fprintf(stderr, "hello: cannot open Tessera device %u: %s\n",
			index, accel_error_string(ret));
		return ret;
	}
	ret = accel_device_get_info(dev, &info);
	if (!ret)
		ret = accel_device_ping(dev, 0x7e55a000 + index, 0, &latency_ns);
	if (ret) {
		fprintf(stderr, "hello: device %u: %s\n", index,
			accel_error_string(ret));
		accel_device_close(dev);
		return ret;
	}

	printf("Tessera device %u (/dev/accel/accel%u, PCI %s)\n",
	       info.index, info.minor, info.pci_address);
	printf("  chip id          0x%08x (\"%c%c%c%c\")\n", info.chip_id,
	       (info.chip_id >> 24) & 0xff, (info.chip_id >> 16) & 0xff,
	       (info.chip_id >> 8) & 0xff, info.chip_id & 0xff);
	printf("  device model     %u.%u\n", info.device_version_major,
	       info.device_version_minor);
	printf("  PCI id           %04x:%04x rev %02x\n", info.pci_vendor,
	       info.pci_device, info.pci_revision);
	printf("  driver           %s %d.%d.%d, uapi %u\n", info.driver_name,
	       info.driver_major, info.driver_minor, info.driver_patch,
	       info.uapi_version);
	printf("  libaccel         %s\n", accel_version_string());
	printf("  MSI-X vectors    %u\n", info.msix_vectors);
	printf("  ping             %.1f us round trip\n", latency_ns / 1000.0);
	accel_device_close(dev);
	return 0;
}

int main(void)
{
	unsigned int count, i;
	int ret;

	ret = accel_device_count(&count);
	if (ret) {
		fprintf(stderr, "hello: cannot list devices: %s\n",
			accel_error_string(ret));
		return EXIT_FAILURE;
	}
	if (!count) {
		fprintf(stderr, "hello: no Tessera device found (is the tessera module loaded?)\n");
		return EXIT_FAILURE;
	}
	for (i = 0; i < count; i++)
		if (print_chip(i))
			return EXIT_FAILURE;
	return EXIT_SUCCESS;
}
