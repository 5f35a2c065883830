// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection through the driver's debugfs: chip resets, failed
 * allocations and submits, and (with debug-regs=on) the chip's own faults.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"

/*
 * Through the driver's debugfs: a chip reset under the running jobs, or
 * allocation and submit failures for the next calls.  A few per run.
 */
int debugfs_write(const struct fuzz *fz, const char *knob,
		  unsigned int value)
{
	char path[384], text[16];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", fz->debugfs, knob);
	snprintf(text, sizeof(text), "%u", value);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		err = errno;
	if (fd >= 0)
		close(fd);
	return err;
}

/*
 * The driver's knobs, then the chip's faults (with debug-regs=on): each
 * takes a count from 1 to @max, or for the queue mask one queue's bit.
 */
static const struct chaos_knob {
	const char *name;
	unsigned int max;
} chaos_knobs[] = {
	{ "force_recovery", 1 },
	{ "fail_bo_alloc", 3 },
	{ "fail_submit", 3 },
#define CHAOS_DRIVER_KNOBS	3
	{ "fault_hang_queues", 0 },
	{ "fault_fail_dma", 3 },
	{ "fault_ecc_correctable", 8 },
	{ "fault_drop_irqs", 2 },
	{ "fault_poison_size", 1 << 16 },
	{ "fault_fatal", 1 },
};

void op_chaos(struct fuzz *fz, struct fuzz_file *f)
{
	unsigned int i = below(fz, fz->debug_regs ? ARRAY_SIZE(chaos_knobs) :
						    CHAOS_DRIVER_KNOBS);
	const struct chaos_knob *knob = &chaos_knobs[i];
	unsigned int value = knob->max ? 1 + below(fz, knob->max) :
				    1u << below(fz, f->num_queues);
	struct fuzz_record *r;
	int err;

	snprintf(fz->extra, sizeof(fz->extra), "echo %u > debugfs %s", value,
		 knob->name);
	r = record_start(fz, f, OP_CHAOS, 0, fz->arg, 0);
	/* Poison starts somewhere in HBM. */
	err = strcmp(knob->name, "fault_poison_size") ? 0 :
	      debugfs_write(fz, "fault_poison_lo", below(fz, f->hbm_size));
	if (!err)
		err = debugfs_write(fz, knob->name, value);
	record_end(fz, r, OP_CHAOS, err);
	fz->faulted |= i >= CHAOS_DRIVER_KNOBS;
	fz->irqs_dropped |= !strcmp(knob->name, "fault_drop_irqs");
}

/*
 * The debugfs directory of ACCEL_NODE's device, if debugfs is there, and
 * whether the chip's fault injection files are.
 */
void find_debugfs(struct fuzz *fz)
{
	char link[256];
	ssize_t n = readlink("/sys/class/accel/accel0/device", link,
			     sizeof(link) - 1);
	const char *name;

	if (n <= 0)
		return;
	link[n] = 0;
	name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	snprintf(fz->debugfs, sizeof(fz->debugfs),
		 "/sys/kernel/debug/accel/%s", name);
	if (access(fz->debugfs, W_OK))
		fz->debugfs[0] = 0;
	else	/* zero: no fault, if the file is there */
		fz->debug_regs = !debugfs_write(fz, "fault_fail_dma", 0);
}
