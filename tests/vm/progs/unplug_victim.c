// SPDX-License-Identifier: MIT
/*
 * unplug_victim: the guest side of run-checks' hot-unplug check.
 *
 * Opens chip 0, leaves a job waiting on a semaphore nobody sets, prints
 * "UNPLUG-ME" and waits for the host to device_del the chip.  Then checks
 * that the job ended, that ioctls say ENODEV and that the PCI function is
 * gone.  Exits 0 when all of that holds; prints what did not otherwise.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "tessera_util.h"

static int fail(const char *what, int err)
{
	printf("unplug_victim: %s (%s)\n", what, strerror(err < 0 ? -err : err));
	return 1;
}

int main(void)
{
	struct tsr_info info;
	struct tsr_cmds c = { 0 };
	struct tsr_bo sem;
	const struct tsr_bo *bos[] = { &sem };
	char pci[32], path[96], slot[64];
	struct pollfd p;
	uint32_t sync;
	int fd, fence, ret, ue;

	fd = tsr_open(0);
	if (fd < 0)
		return fail("open accel0", errno);
	ret = tsr_pci_address(0, pci, sizeof(pci));
	if (!ret)
		ret = tsr_bo_create(fd, 4096, 0, &c.bo);
	if (!ret)
		ret = tsr_bo_create(fd, 4096, DRM_TESSERA_BO_HBM, &sem);
	if (ret)
		return fail("set-up", ret);
	sync = tsr_syncobj(fd);
	tsr_emit_sem(&c, TSR_OP_SEM_WAIT, sem.va, 1);
	ret = tsr_submit(fd, &c, 0, bos, 1, sync, NULL);
	if (ret)
		return fail("submit", ret);
	if (drmSyncobjExportSyncFile(fd, sync, &fence))
		return fail("export sync file", errno);

	ue = tsr_uevent_socket();
	if (ue < 0)
		return fail("uevent socket", ue);
	printf("UNPLUG-ME %s\n", pci);
	fflush(stdout);

	p = (struct pollfd){ .fd = fence, .events = POLLIN };
	ret = poll(&p, 1, 60000);
	if (ret != 1)
		return fail("the job did not end with the device", ETIMEDOUT);
	ret = tsr_info(fd, &info);
	if (ret != -ENODEV)
		return fail("GET_PARAM after the unplug", ret);
	/* The HBM mapping is gone with the BAR: do not touch it. */
	close(fence);
	close(fd);
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s", pci);
	snprintf(slot, sizeof(slot), "PCI_SLOT_NAME=%s", pci);
	if (access(path, F_OK) == 0 &&
	    tsr_uevent_wait(ue, "ACTION=remove", slot, 10000))
		return fail("the PCI function is still there", EEXIST);
	printf("unplug_victim: job ended, ioctls say ENODEV, %s is gone\n", pci);
	return 0;
}
