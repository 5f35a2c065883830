// SPDX-License-Identifier: GPL-2.0
/*
 * Fault injection through the driver's debugfs: chip resets, failed
 * buffer mappings and submits (the driver's failure points, on a kernel
 * with CONFIG_FAULT_INJECTION) and (with debug-regs=on) the chip's own
 * faults.
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
 * A chip reset, the driver's failure points (times: the next 1 to 3 calls
 * fail), then the chip's faults (with debug-regs=on): each takes a count
 * from 1 to @max, or for the queue mask one queue's bit.
 */
static const struct chaos_knob {
	const char *name;
	unsigned int max;
} chaos_knobs[] = {
	{ "force_recovery", 1 },
#define CHAOS_FAIL_POINTS	1
	{ "fail_bo_map/times", 3 },
	{ "fail_submit/times", 3 },
#define CHAOS_CHIP_FAULTS	3
	{ "fault_hang_queues", 0 },
	{ "fault_fail_dma", 3 },
	{ "fault_ecc_correctable", 8 },
	{ "fault_drop_irqs", 2 },
	{ "fault_poison_size", 1 << 16 },
	{ "fault_fatal", 1 },
};

/* The @n-th of the knobs this kernel and chip have. */
static unsigned int chaos_knob_index(const struct fuzz *fz, unsigned int n)
{
	if (n >= CHAOS_FAIL_POINTS && !fz->fail_points)
		n += CHAOS_CHIP_FAULTS - CHAOS_FAIL_POINTS;
	return n;
}

void op_chaos(struct fuzz *fz, struct fuzz_file *f)
{
	unsigned int n = CHAOS_FAIL_POINTS +
		(fz->fail_points ? CHAOS_CHIP_FAULTS - CHAOS_FAIL_POINTS : 0) +
		(fz->debug_regs ? ARRAY_SIZE(chaos_knobs) - CHAOS_CHIP_FAULTS : 0);
	unsigned int i = chaos_knob_index(fz, below(fz, n));
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
	fz->faulted |= i >= CHAOS_CHIP_FAULTS;
	fz->irqs_dropped |= !strcmp(knob->name, "fault_drop_irqs");
}

/*
 * The debugfs directory of ACCEL_NODE's device, if debugfs is there;
 * whether the driver's failure points are, armed to fail quietly once
 * given a number of times; whether the chip's fault injection files are.
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
	if (access(fz->debugfs, W_OK)) {
		fz->debugfs[0] = 0;
		return;
	}
	fz->fail_points = !fail_points_set(fz, 100);
	/* zero: no fault, if the file is there */
	fz->debug_regs = !debugfs_write(fz, "fault_fail_dma", 0);
}

/*
 * Set the failure points' probability, and nothing pending: 100 when the
 * fuzzer starts, 0 when it is done.
 */
int fail_points_set(const struct fuzz *fz, unsigned int probability)
{
	static const char *const points[] = { "fail_bo_map", "fail_submit" };
	static const char *const knobs[] = {
		"times", "verbose", "interval", "probability",
	};
	const unsigned int values[] = { 0, 0, 1, probability };
	char knob[64];
	unsigned int p, k;
	int err = 0;

	for (p = 0; p < ARRAY_SIZE(points); p++)
		for (k = 0; k < ARRAY_SIZE(knobs) && !err; k++) {
			snprintf(knob, sizeof(knob), "%s/%s", points[p], knobs[k]);
			err = debugfs_write(fz, knob, values[k]);
		}
	return err;
}
