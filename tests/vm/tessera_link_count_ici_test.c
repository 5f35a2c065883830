// SPDX-License-Identifier: GPL-2.0
/*
 * The driver's count of link ups and downs (sysfs link_ups, link_downs)
 * against the chip's: a link that restarts without going down (a retrain
 * here; a TCP connection lost and mended is the same to the driver, the
 * port not up meanwhile and never DOWN) is a link up and no link down,
 * however quickly it is back; a link taken down is one down, as the
 * port's own counter says.
 *
 * Runs in the ici suite's VM (tessera-vm --topology, debug-regs=on for the
 * ports' control file); skips when the slice is split across VMs, where
 * the other VM's copy of this program restarts the same links.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <sched.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#define RETRAINS	5
/* A link back up is counted in a work item, within milliseconds. */
#define COUNT_WAIT_NS	(10ull * 1000 * 1000 * 1000)

FIXTURE(link) {
	int fd;
	char pci[32];
	struct tsr_info info;
	unsigned int port;
};

/* The first wired port of chip 0, once it is up. */
FIXTURE_SETUP(link)
{
	uint64_t end = tsr_now_ns() + TSR_TEST_WAIT_NS;
	unsigned int chips = 0;
	char path[32];

	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_pci_address(0, self->pci, sizeof(self->pci)));
	ASSERT_EQ(0, tsr_info(self->fd, &self->info));
	if (!self->info.ports_wired)
		SKIP(return, "chip 0 has no links: boot the VM with tessera-vm --topology");
	do
		snprintf(path, sizeof(path), "/dev/accel/accel%u", ++chips);
	while (!access(path, F_OK));
	if (chips < self->info.slice_chips)
		SKIP(return, "the slice is split across VMs: the links are shared");
	self->port = __builtin_ctz(self->info.ports_wired);
	while (self->info.ports[self->port].state != TSR_ICI_STATE_UP) {
		ASSERT_GT(end, tsr_now_ns()) TH_LOG("port %u not up", self->port);
		sched_yield();
		ASSERT_EQ(0, tsr_info(self->fd, &self->info));
	}
}

FIXTURE_TEARDOWN(link)
{
	close(self->fd);
}

static int port_control(FIXTURE_DATA(link) *self, uint32_t control)
{
	char file[32];

	snprintf(file, sizeof(file), "ici%u/control", self->port);
	return tsr_debugfs_write(self->pci, file, control);
}

/* The chip's count of link downs of every port of chip 0. */
static uint64_t chip_downs(FIXTURE_DATA(link) *self)
{
	struct drm_tessera_link_info li;
	uint64_t sum = 0;
	unsigned int p;

	for (p = 0; p < self->info.ici_ports; p++) {
		memset(&li, 0, sizeof(li));
		li.port = p;
		if (!tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_LINK_INFO, &li))
			sum += li.counters[DRM_TESSERA_LINK_LINK_DOWNS];
	}
	return sum;
}

/*
 * Wait until the driver's @counter is past @was and the port is up; the
 * driver counts in a work item after the chip's interrupt, and a retrain
 * that comes back up is told by no uevent.
 */
static bool counted_up(FIXTURE_DATA(link) *self, const char *counter,
		       long long was)
{
	uint64_t end = tsr_now_ns() + COUNT_WAIT_NS;

	while (tsr_now_ns() < end) {
		if (tsr_sysfs_counter(self->pci, counter) > was &&
		    !tsr_info(self->fd, &self->info) &&
		    self->info.ports[self->port].state == TSR_ICI_STATE_UP)
			return true;
		sched_yield();
	}
	return false;
}

TEST_F(link, a_restart_is_a_link_up_and_no_link_down_a_down_is_one_down)
{
	long long ups, downs;
	uint64_t chip;
	unsigned int i;

	ups = tsr_sysfs_counter(self->pci, "link_ups");
	downs = tsr_sysfs_counter(self->pci, "link_downs");
	ASSERT_LE(0, ups);
	ASSERT_LE(0, downs);
	chip = chip_downs(self);

	for (i = 0; i < RETRAINS; i++) {
		long long was = tsr_sysfs_counter(self->pci, "link_ups");

		ASSERT_EQ(0, port_control(self, TSR_ICI_CTRL_RETRAIN));
		ASSERT_TRUE(counted_up(self, "link_ups", was))
			TH_LOG("retrain %u of port %u: link_ups stayed %lld",
			       i, self->port, was);
	}
	ASSERT_EQ(chip, chip_downs(self)) TH_LOG("the chip counted a retrain down");
	EXPECT_EQ(downs, tsr_sysfs_counter(self->pci, "link_downs"));
	EXPECT_LE(ups + RETRAINS, tsr_sysfs_counter(self->pci, "link_ups"));

	/* The chip's count, whatever states the driver saw on the way. */
	ups = tsr_sysfs_counter(self->pci, "link_ups");
	ASSERT_EQ(0, port_control(self, TSR_ICI_CTRL_DOWN));
	ASSERT_EQ(0, port_control(self, TSR_ICI_CTRL_RETRAIN));
	ASSERT_TRUE(counted_up(self, "link_ups", ups));
	ASSERT_LT(chip, chip_downs(self));
	EXPECT_EQ(downs + (long long)(chip_downs(self) - chip),
		  tsr_sysfs_counter(self->pci, "link_downs"));
}

TEST_HARNESS_MAIN
