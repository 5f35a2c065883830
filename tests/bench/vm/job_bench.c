// SPDX-License-Identifier: MIT
/*
 * job_bench: the whole stack's job path, run inside a VM by tools/tessera-bench.
 *
 *   null ioctl            an ioctl that does nothing (GET_PARAM), repeat
 *   null job round trip   submit one NOP job, wait for its syncobj, repeat
 *   pipelined jobs        NOP jobs with 64 in flight (timeline points)
 *   batched jobs          the same, queued 32 at a time by SUBMIT_BATCH,
 *                         each signalling a syncobj of its own (libaccel's
 *                         way), then each a point of one timeline
 *
 * The pipelined and batched figures come with the share of a job's time
 * the submitting process spent on a CPU (its ioctls, mostly) and the rest
 * (the scheduler's workers, interrupts, idle).
 *   matmul                one 2048^3 bf16 MATMUL in HBM, wall time
 *
 * Prints "BENCH <name> <value> <unit>" lines.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "tessera_util.h"

#define DEPTH		64
#define ROUND_TRIPS	400
#define PIPELINED	4000
#define NULL_IOCTLS	20000
#define BATCH		32
#define SYNCS		(DEPTH + BATCH)	/* batched jobs' syncobjs */
#define MM		2048

static void die(const char *what, int err)
{
	fprintf(stderr, "job_bench: %s: %s\n", what, strerror(-err));
	exit(1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nanoseconds this process has run on a CPU (the scheduler's account). */
static uint64_t cpu_ns(void)
{
	FILE *f = fopen("/proc/self/schedstat", "r");
	unsigned long long ns;

	if (!f || fscanf(f, "%llu", &ns) != 1)
		die("/proc/self/schedstat", -EIO);
	fclose(f);
	return ns;
}

/*
 * Where @jobs jobs' @wall_ns went: this process's @cpu_ns, and the rest.
 * Interrupts count to whoever they interrupt.
 */
static void print_split(const char *name, unsigned int jobs, uint64_t wall_ns,
			uint64_t cpu)
{
	printf("BENCH %s_submitter_us %.3f us\n", name, cpu / 1e3 / jobs);
	printf("BENCH %s_rest_us %.3f us\n", name,
	       (wall_ns - cpu) / 1e3 / jobs);
}

/* The system call's own cost: an ioctl the driver answers from memory. */
static void bench_null_ioctl(int fd)
{
	struct drm_tessera_get_param gp = {
		.param = DRM_TESSERA_PARAM_NUM_QUEUES,
	};
	uint64_t t0 = tsr_now_ns();
	unsigned int i;

	for (i = 0; i < NULL_IOCTLS; i++)
		if (tsr_ioctl(fd, DRM_IOCTL_TESSERA_GET_PARAM, &gp))
			die("GET_PARAM", -errno);
	printf("BENCH vm_null_ioctl_us %.3f us\n",
	       (tsr_now_ns() - t0) / 1e3 / NULL_IOCTLS);
	fflush(stdout);
}

static void bench_round_trip(int fd, struct tsr_cmds *c)
{
	static uint64_t ns[ROUND_TRIPS];
	uint32_t sync = tsr_syncobj(fd);
	unsigned int i;
	int ret;

	for (i = 0; i < ROUND_TRIPS; i++) {
		uint64_t t0 = tsr_now_ns();

		ret = tsr_submit(fd, c, 0, NULL, 0, sync, NULL);
		if (!ret)
			ret = tsr_wait(fd, sync, TSR_TEST_WAIT_NS);
		if (ret)
			die("null job", ret);
		ns[i] = tsr_now_ns() - t0;
		drmSyncobjReset(fd, &sync, 1);
	}
	qsort(ns, ROUND_TRIPS, sizeof(ns[0]), cmp_u64);
	printf("BENCH vm_null_job_latency %.3f us\n", ns[ROUND_TRIPS / 2] / 1e3);
	fflush(stdout);
}

/* Wait for point @point of the timeline syncobj @tl. */
static void wait_point(int fd, uint32_t tl, uint64_t point)
{
	if (drmSyncobjTimelineWait(fd, &tl, &point, 1,
				   tsr_now_ns() + TSR_TEST_WAIT_NS,
				   DRM_SYNCOBJ_WAIT_FLAGS_WAIT_FOR_SUBMIT, NULL))
		die("timeline wait", -errno);
}

static void bench_pipelined(int fd, struct tsr_cmds *c)
{
	uint32_t tl;
	uint64_t t0, cpu;
	unsigned int i;
	int ret;

	if (drmSyncobjCreate(fd, 0, &tl))
		die("syncobj", -errno);
	cpu = cpu_ns();
	t0 = tsr_now_ns();
	for (i = 1; i <= PIPELINED; i++) {
		struct drm_tessera_sync out = TSR_SIGNAL(tl, i);
		struct drm_tessera_submit s = {
			.queue = 0,
			.cmdbuf_handle = c->bo.handle,
			.cmdbuf_size = c->len,
		};

		tsr_submit_syncs(&s, &out, 1);
		if (i > DEPTH)
			wait_point(fd, tl, i - DEPTH);
		ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &s);
		if (ret)
			die("pipelined submit", ret);
	}
	wait_point(fd, tl, PIPELINED);
	t0 = tsr_now_ns() - t0;
	cpu = cpu_ns() - cpu;
	printf("BENCH vm_pipelined_jobs %.0f jobs/s\n", PIPELINED / (t0 / 1e9));
	print_split("vm_pipelined_job", PIPELINED, t0, cpu);
	fflush(stdout);
}

/*
 * NOP jobs queued BATCH at a time by one SUBMIT_BATCH, at most DEPTH + BATCH
 * in flight: the pipeline's rate once a job costs no system call of its
 * own.  Each job signals a binary syncobj of its own, recycled once waited
 * for, as libaccel's jobs do (accel_submit_many()); with @timeline, a point
 * of one timeline syncobj instead, as the pipelined figure's jobs do.  A
 * point costs its submitter a walk of the timeline's unsignalled points
 * (drm_syncobj_add_point()), DEPTH + BATCH of them here.
 */
static void bench_batched(int fd, struct tsr_cmds *c, bool timeline)
{
	static struct drm_tessera_sync out[BATCH];
	static struct drm_tessera_submit jobs[BATCH];
	static uint32_t sync[SYNCS];
	struct drm_tessera_submit_batch b = {
		.flags = DRM_TESSERA_SUBMIT_WAIT_ROOM,
		.count = BATCH,
		.jobs = (uintptr_t)jobs,
		.stride = sizeof(jobs[0]),
	};
	const char *name = timeline ? "vm_batched_timeline_job" :
				      "vm_batched_job";
	uint64_t t0, cpu;
	unsigned int i, j;
	int ret;

	for (i = 0; i < (timeline ? 1 : SYNCS); i++)
		if (drmSyncobjCreate(fd, 0, &sync[i]))
			die("syncobj", -errno);
	cpu = cpu_ns();
	t0 = tsr_now_ns();
	for (i = 0; i < PIPELINED; i += BATCH) {
		for (j = 0; j < BATCH; j++) {
			/* Job n (from 1) signals point n, or syncobj n % SYNCS. */
			out[j] = timeline ? TSR_SIGNAL(sync[0], i + j + 1) :
					    TSR_SIGNAL(sync[(i + j + 1) % SYNCS], 0);
			jobs[j] = (struct drm_tessera_submit) {
				.queue = 0,
				.cmdbuf_handle = c->bo.handle,
				.cmdbuf_size = c->len,
			};
			tsr_submit_syncs(&jobs[j], &out[j], 1);
		}
		/* Jobs end in order: job i - DEPTH's end frees their syncobjs. */
		if (i > DEPTH && timeline)
			wait_point(fd, sync[0], i - DEPTH);
		else if (i > DEPTH)
			wait_point(fd, sync[(i - DEPTH) % SYNCS], 0);
		ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT_BATCH, &b);
		if (ret)
			die("batched submit", ret);
	}
	wait_point(fd, sync[timeline ? 0 : i % SYNCS], timeline ? i : 0);
	t0 = tsr_now_ns() - t0;
	cpu = cpu_ns() - cpu;
	printf("BENCH %ss %.0f jobs/s\n", name, i / (t0 / 1e9));
	print_split(name, i, t0, cpu);
	for (j = 0; j < (timeline ? 1 : SYNCS); j++)
		drmSyncobjDestroy(fd, sync[j]);
	fflush(stdout);
}

static struct tsr_tensor tensor(uint64_t va, uint32_t rows, uint32_t cols,
				uint16_t dtype)
{
	return (struct tsr_tensor){
		.va = va, .rows = rows, .cols = cols, .stride = cols,
		.dtype = dtype,
	};
}

static void bench_matmul(int fd, const struct tsr_info *info)
{
	struct tsr_bo a, b, out;
	struct tsr_cmds c = { 0 };
	const struct tsr_bo *bos[] = { &a, &b, &out };
	struct drm_tessera_job_status st;
	struct tsr_cmd_matmul mm = { .hdr = tsr_hdr(TSR_OP_MATMUL, sizeof(mm)) };
	uint16_t *pa, *pb;
	uint32_t sync = tsr_syncobj(fd);
	uint64_t t0, ns, seq;
	size_t i;
	int ret;

	ret = tsr_bo_create(fd, 4096, 0, &c.bo);
	if (!ret)
		ret = tsr_bo_create(fd, MM * MM * 2, DRM_TESSERA_BO_HBM, &a);
	if (!ret)
		ret = tsr_bo_create(fd, MM * MM * 2, DRM_TESSERA_BO_HBM, &b);
	if (!ret)
		ret = tsr_bo_create(fd, MM * MM * 4, DRM_TESSERA_BO_HBM, &out);
	if (ret)
		die("matmul buffers", ret);
	pa = a.map;
	pb = b.map;
	/* bf16 values 1.0 and 0.5: the top halves of 0x3f800000, 0x3f000000. */
	for (i = 0; i < (size_t)MM * MM; i++) {
		pa[i] = 0x3f80;
		pb[i] = 0x3f00;
	}
	mm.a = tensor(a.va, MM, MM, TSR_DTYPE_BF16);
	mm.b = tensor(b.va, MM, MM, TSR_DTYPE_BF16);
	mm.c = tensor(out.va, MM, MM, TSR_DTYPE_F32);
	tsr_emit(&c, &mm, sizeof(mm));

	t0 = tsr_now_ns();
	ret = tsr_submit(fd, &c, 0, bos, 3, sync, &seq);
	if (!ret)
		ret = tsr_wait(fd, sync, 4 * TSR_TEST_WAIT_NS);
	if (ret)
		die("matmul", ret);
	ns = tsr_now_ns() - t0;
	if (tsr_job_status(fd, seq, &st) || st.state != DRM_TESSERA_JOB_DONE) {
		fprintf(stderr, "job_bench: matmul failed: error %u\n", st.error);
		exit(1);
	}
	if (((float *)out.map)[MM * MM - 1] != MM * 0.5f) {
		fprintf(stderr, "job_bench: matmul result %f, expected %f\n",
			((float *)out.map)[MM * MM - 1], MM * 0.5f);
		exit(1);
	}
	printf("BENCH vm_matmul_gflops %.3f GFLOP/s\n",
	       2.0 * MM * MM * MM / ns);
	/* The device's own account: modeled cycles at the modeled clock. */
	printf("BENCH vm_matmul_modeled_tflops %.3f TFLOP/s\n",
	       2.0 * MM * MM * MM * info->clock_mhz * 1e6 /
	       (st.end_cycle - st.start_cycle) / 1e12);
	fflush(stdout);
}

int main(void)
{
	struct tsr_info info;
	struct tsr_cmds c = { 0 };
	int fd = tsr_open(0), ret;

	if (fd < 0)
		die("open /dev/accel/accel0", -errno);
	ret = tsr_info(fd, &info);
	if (ret)
		die("GET_PARAM", ret);
	ret = tsr_bo_create(fd, 4096, 0, &c.bo);
	if (ret)
		die("command buffer", ret);
	tsr_emit_nop(&c);
	bench_null_ioctl(fd);
	bench_round_trip(fd, &c);
	bench_pipelined(fd, &c);
	bench_batched(fd, &c, false);
	bench_batched(fd, &c, true);
	bench_matmul(fd, &info);
	return 0;
}
