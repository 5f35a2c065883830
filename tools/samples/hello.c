// SPDX-License-Identifier: MIT
/*
 * hello: open every Tessera chip through libaccel and print its identity
 * as read from the chip's registers through the driver.
 */
#define PROG "hello"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <accel/accel.h>

#include "sample.h"

static const char usage[] =
	"usage: " PROG " [OPTIONS]\n"
	"\n"
	"Open every Tessera chip through libaccel and print its identity, read\n"
	"from the chip's registers through the driver: chip id, device model,\n"
	"PCI id, the driver and uapi versions, libaccel's version, MSI-X\n"
	"vectors, and the round trip of an interrupt through the chip (ping).\n"
	"\n"
	"options:\n"
	"  -h, --help            show this text\n"
	"\n"
	"Exit status: 0 every chip answered, 1 failure (no chip, or one could\n"
	"not be opened or pinged), 2 bad arguments.\n";

static int parse_options(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (opt != 'h')
			return unknown_option(argv[optind - 1], usage);
		fputs(usage, stdout);
		exit(EXIT_SUCCESS);
	}
	if (optind < argc)
		return usage_error("unexpected operand '%s'", argv[optind]);
	return 0;
}

static int print_chip(unsigned int index)
{
	struct accel_device_info info;
	struct accel_device *dev;
	uint64_t latency_ns;
	int ret;

	ret = accel_device_open(index, &dev);
	if (ret) {
		fprintf(stderr, PROG ": cannot open Tessera device %u: %s\n",
			index, accel_error_string(ret));
		return ret;
	}
	ret = accel_device_get_info(dev, &info);
	if (!ret)
		ret = accel_device_ping(dev, 0x7e55a000 + index, 0, &latency_ns);
	if (ret) {
		fprintf(stderr, PROG ": device %u: %s\n", index,
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
	printf("  driver           %s %d.%d.%d (its major.minor: the uapi's)\n",
	       info.driver_name, info.driver_major, info.driver_minor,
	       info.driver_patch);
	printf("  libaccel         %s\n", accel_version_string());
	printf("  MSI-X vectors    %u\n", info.msix_vectors);
	printf("  ping             %.1f us round trip\n", latency_ns / 1000.0);
	accel_device_close(dev);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int count, i;
	int ret;

	if (parse_options(argc, argv))
		return EXIT_USAGE;
	ret = accel_device_count(&count);
	if (ret) {
		fprintf(stderr, PROG ": cannot list devices: %s\n",
			accel_error_string(ret));
		return EXIT_FAILURE;
	}
	if (!count) {
		fprintf(stderr, PROG ": no Tessera device found; the chips are virtual: run " PROG
			" in a Tessera VM (tools/tessera-vm -- " PROG ")\n");
		return EXIT_FAILURE;
	}
	for (i = 0; i < count; i++)
		if (print_chip(i))
			return EXIT_FAILURE;
	return EXIT_SUCCESS;
}
