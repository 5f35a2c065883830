// SPDX-License-Identifier: MIT
/*
 * ici_bench: remote writes over one ICI link between chips in two VMs,
 * run by tools/tessera-bench (both VMs run it; the chip's place in the
 * slice picks its part).
 *
 *   chip 0   writes ITER transfers of 4 MiB to chip 1's window, each
 *            adding 1 to a semaphore there, as one job, untimed (both
 *            QEMUs warm up: first-time translation, socket buffers); then
 *            the same, timed, nine times: without faults and with frames
 *            dropped at --drop-ppm on its port, in turns, clean first and
 *            last
 *   chip 1   opens the window and waits for every transfer
 *
 * Chip 0 prints "BENCH <name> <value> <unit>" lines: wall and modeled
 * bandwidth, the best of the passes of each kind, and what the drops
 * cost: each pass with drops against the mean of the clean passes on
 * either side of it, the median of those four.  A pass's wall figure
 * swings by a fifth on a busy 2-core host, and a run's passes can move
 * by half from one to the next (the host's scheduler puts the two
 * copying threads on one core or on two): the best of each kind can
 * come from different halves of a run, its neighbours cannot.  Each
 * pass is shown on a "# pass" line.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "tessera_util.h"

#define XFER		(4u << 20)
#define ITER		128	/* transfers per pass, unless --iter */
#define PASSES		10	/* warm-up, then clean and with drops in turns */
#define WINDOW_ID	9
#define WINDOW_KEY	0xbe4c4b1cull
#define SEM		XFER
#define WAIT_NS		(120ull * 1000 * 1000 * 1000)

static void die(const char *what, int err)
{
	fprintf(stderr, "ici_bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

static int run(int fd, struct tsr_cmds *c, const struct tsr_bo *data,
	       uint32_t sync, struct drm_tessera_job_status *st)
{
	const struct tsr_bo *bos[] = { &c->bo, data };
	uint64_t seq;
	int ret;

	ret = tsr_submit(fd, c, 0, bos, 2, sync, &seq);
	c->len = 0;
	if (!ret)
		ret = tsr_wait(fd, sync, WAIT_NS);
	drmSyncobjReset(fd, &sync, 1);
	if (!ret)
		ret = tsr_job_status(fd, seq, st);
	return ret ? ret : st->fence_error;
}

static unsigned int iter = ITER;

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The median of @v (@n of them, reordered). */
static double median(double *v, unsigned int n)
{
	qsort(v, n, sizeof(*v), by_value);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const uint8_t receiver_chip[3] = { 1, 0, 0 };

/* A pass's commands, in whole pages. */
static uint64_t cmds_size(void)
{
	uint64_t bytes = (uint64_t)iter * sizeof(struct tsr_cmd_ici_write);

	return (bytes + 4095) & ~4095ull;
}

static void emit_write(struct tsr_cmds *c, uint64_t src, uint32_t bytes,
		       bool sem)
{
	tsr_emit_ici_write(c, receiver_chip, WINDOW_ID, WINDOW_KEY, src, 0, 1,
			   bytes, bytes, sem ? (int64_t)SEM : -1);
}

static void sender(int fd, const struct tsr_info *info,
		 unsigned int drop_ppm)
{
	struct drm_tessera_job_status st;
	uint32_t sync = tsr_syncobj(fd);
	struct tsr_cmds c = { 0 };
	struct tsr_bo src;
	struct { double wall, modeled; } best[2] = { { 0 } };
	double gbps_of[PASSES] = { 0 }, cost[PASSES / 2];
	unsigned int costs = 0;
	char pci[32];
	uint64_t end, t0, i, pass;
	int ret;

	if (tsr_bo_create(fd, cmds_size(), 0, &c.bo) ||
	    tsr_bo_create(fd, XFER, DRM_TESSERA_BO_HBM, &src) ||
	    tsr_pci_address(0, pci, sizeof(pci)))
		die("set-up", -ENOMEM);
	for (i = 0; i < XFER / 4; i++)
		((volatile uint32_t *)src.map)[i] = i * 2654435761u;

	/* The other VM's window may not be open yet. */
	end = tsr_now_ns() + WAIT_NS;
	do {
		emit_write(&c, src.va, 8, false);
		ret = run(fd, &c, &src, sync, &st);
	} while (ret == -EACCES && tsr_now_ns() < end);
	if (ret)
		die("first write", ret);

	for (pass = 0; pass < PASSES; pass++) {
		bool drops = pass && pass % 2 == 0;
		double secs, cycles, gbps;

		ret = pass ? tsr_debugfs_write(pci, "ici0/fault_drop_ppm",
					       drops ? drop_ppm : 0) : 0;
		if (ret)
			die("fault_drop_ppm (debug-regs=on?)", ret);
		for (i = 0; i < iter; i++)
			emit_write(&c, src.va, XFER, true);
		t0 = tsr_now_ns();
		ret = run(fd, &c, &src, sync, &st);
		if (ret)
			die("transfer", ret);
		secs = (tsr_now_ns() - t0) / 1e9;
		cycles = st.end_cycle - st.start_cycle;
		if (pass == 0)
			continue;	/* the warm-up */
		gbps = (double)iter * XFER / secs / 1e9;
		gbps_of[pass] = gbps;
		printf("# pass %u %s %.3f GB/s\n", (unsigned int)pass,
		       drops ? "drops" : "clean", gbps);
		if (gbps > best[drops].wall) {
			best[drops].wall = gbps;
			best[drops].modeled = (double)iter * XFER /
				(cycles / (info->clock_mhz * 1e6)) / 1e9;
		}
	}
	for (i = 0; i < 2; i++) {
		const char *tag = i ? "_drop" : "";

		printf("BENCH vm_ici_wall%s_gbps %.3f GB/s\n", tag, best[i].wall);
		printf("BENCH vm_ici_modeled%s_gbps %.3f GB/s\n", tag,
		       best[i].modeled);
	}
	printf("BENCH vm_ici_link_preset_gbps %.3f GB/s\n",
	       (double)info->ici_link_gbps);
	for (pass = 2; pass + 1 < PASSES; pass += 2)
		cost[costs++] = 1 - 2 * gbps_of[pass] /
				(gbps_of[pass - 1] + gbps_of[pass + 1]);
	printf("BENCH vm_ici_drop_slowdown %.3f x\n", median(cost, costs));
	fflush(stdout);
	tsr_debugfs_write(pci, "ici0/fault_drop_ppm", 0);
}

static void receiver(int fd)
{
	struct drm_tessera_window_open wo = {
		.flags = DRM_TESSERA_WINDOW_WRITE | DRM_TESSERA_WINDOW_FIXED_ID |
			 DRM_TESSERA_WINDOW_FIXED_KEY,
		.size = XFER + 4096, .id = WINDOW_ID, .key = WINDOW_KEY,
	};
	struct drm_tessera_job_status st;
	uint32_t sync = tsr_syncobj(fd);
	struct tsr_cmds c = { 0 };
	struct tsr_bo window;
	uint64_t i;
	int ret;

	if (tsr_bo_create(fd, cmds_size(), 0, &c.bo) ||
	    tsr_bo_create(fd, XFER + 4096, DRM_TESSERA_BO_HBM, &window))
		die("set-up", -ENOMEM);
	wo.handle = window.handle;
	ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo);
	if (ret)
		die("WINDOW_OPEN", ret);
	tsr_emit_sem(&c, TSR_OP_SEM_WAIT, window.va + SEM, PASSES * iter);
	ret = run(fd, &c, &window, sync, &st);
	if (ret)
		die("waiting for the transfers", ret);
	for (i = 0; i < XFER / 4; i++)
		if (((volatile uint32_t *)window.map)[i] !=
		    (uint32_t)(i * 2654435761u))
			die("the data arrived wrong", -EIO);
}

int main(int argc, char **argv)
{
	struct tsr_info info;
	unsigned int drop_ppm = 1000;
	int fd = tsr_open(0);

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--drop-ppm"))
			drop_ppm = strtoul(argv[i + 1], NULL, 0);
		else if (!strcmp(argv[i], "--iter"))
			iter = strtoul(argv[i + 1], NULL, 0);
		else
			die(argv[i], -EINVAL);
	}
	if (!iter || iter > 65536)
		die("--iter: 1 to 65536 transfers", -EINVAL);
	if (fd < 0 || tsr_info(fd, &info))
		die("opening chip 0", fd < 0 ? fd : -errno);
	if (info.slice_chips != 2)
		die("want a slice of two chips (tessera-vm --topology 2)",
		    -EINVAL);
	if (info.slice_index == 0)
		sender(fd, &info, drop_ppm);
	else
		receiver(fd);
	return 0;
}
