// SPDX-License-Identifier: GPL-2.0
/*
 * libaccel's collectives on a slice: all-reduce, reduce-scatter and
 * all-gather of every type and operation, of 1, odd, prime and large
 * counts, compared bit for bit with the CPU's answer; the baseline
 * algorithm against the pincer; what a bad call gets.
 *
 * Runs in a VM booted with tessera-vm --topology (the "ici" suite of
 * tests/run-checks) and, with the slice split across VMs, in every VM at
 * once: each test's communicator spans the whole slice, so the VMs' tests
 * meet test by test.  Each test opens its communicator with a window id
 * of its own, so a VM ahead never greets a test the other has finished.
 * The data are small integers, so sums are exact in f32 and in bf16 and
 * comparing bits is meaningful.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "kselftest_harness.h"
#include "libaccel_util.h"
#include "tessera_util.h"

#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <accel/accel.h>

#define MAX_CHIPS 16
#define WINDOW_BASE 200
/*
 * Seconds for the tests of many calls: a few on 2x2, minutes on a 4x4
 * slice of four emulated VMs (make check-slices).
 */
#define COLL_TEST_TIMEOUT 600

FIXTURE(coll) {
	struct accel_device *dev[MAX_CHIPS];
	unsigned int n;
	struct accel_comm *comm;
	unsigned int size;
	struct leak_snapshot leaks;
};

static int open_comm(FIXTURE_DATA(coll) *self, uint32_t window,
		     enum accel_coll_algo algo)
{
	struct accel_comm_opts opts = { .algo = algo, .window_id = window };

	accel_comm_destroy(self->comm);
	self->comm = NULL;
	return accel_comm_create(self->dev, self->n, &opts, &self->comm);
}

FIXTURE_SETUP(coll)
{
	struct accel_device_info info;
	unsigned int i;

	ASSERT_EQ(ACCEL_OK, accel_device_count(&self->n));
	ASSERT_GE(MAX_CHIPS, self->n);
	for (i = 0; i < self->n; i++) {
		ASSERT_EQ(ACCEL_OK, accel_device_open(i, &self->dev[i]));
		ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev[i], &info));
		if (!info.ports_wired)
			SKIP(return, "chip %u has no links: boot the VM with tessera-vm --topology",
			     i);
	}
	leak_snapshot(self->dev[0], &self->leaks);
}

FIXTURE_TEARDOWN(coll)
{
	unsigned int i;

	accel_comm_destroy(self->comm);
	if (self->dev[0])
		leak_expect_none(_metadata, self->dev[0], &self->leaks);
	for (i = 0; i < self->n; i++)
		accel_device_close(self->dev[i]);
}

/* Element @i of chip @rank's input: a small integer, salted per call. */
static float value(unsigned int rank, uint64_t i, unsigned int salt)
{
	return (float)((rank * 7 + i * 3 + salt * 5) % 61) - 30.0f;
}

/* What the chips compute for one element of a reduction. */
static float combine(enum accel_reduce_op op, float a, float b)
{
	return accel_ref_vpu(accel_reduce_vpu_op(op), a, b, 0.0f);
}

/* Element @i of the reduction over every chip of the slice. */
static float reduced(unsigned int chips, enum accel_reduce_op op, uint64_t i,
		     unsigned int salt)
{
	float r = value(0, i, salt);
	unsigned int c;

	for (c = 1; c < chips; c++)
		r = combine(op, r, value(c, i, salt));
	return r;
}

/* @n elements of @dtype at @buf: from @f, or checked against @f. */
static size_t bytes_of(enum tsr_dtype dtype, uint64_t n)
{
	return n * tsr_dtype_size(dtype);
}

static void encode(const float *f, uint64_t n, enum tsr_dtype dtype, void *out)
{
	uint64_t i;

	if (dtype == TSR_DTYPE_BF16)
		to_bf16(f, out, n);
	else if (dtype == TSR_DTYPE_I32)
		for (i = 0; i < n; i++)
			((int32_t *)out)[i] = (int32_t)f[i];
	else
		memcpy(out, f, n * sizeof(float));
}

/* The element of @dtype at @p, as a float (for a report). */
static double decoded(const void *p, enum tsr_dtype dtype)
{
	uint32_t bits = 0;
	int32_t i;
	float f;

	if (dtype == TSR_DTYPE_I32) {
		memcpy(&i, p, sizeof(i));
		return i;
	}
	if (dtype == TSR_DTYPE_BF16)
		memcpy((char *)&bits + 2, p, 2);	/* little-endian */
	else
		memcpy(&bits, p, sizeof(bits));
	memcpy(&f, &bits, sizeof(f));
	return f;
}

struct vectors {
	struct accel_buffer *send[MAX_CHIPS];
	struct accel_buffer *recv[MAX_CHIPS];
};

static void vectors_free(struct vectors *v, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (v->recv[i] != v->send[i])
			accel_buffer_destroy(v->recv[i]);
		accel_buffer_destroy(v->send[i]);
	}
	memset(v, 0, sizeof(*v));
}

/*
 * Each local chip's send buffer of @in elements, filled for its rank
 * (@blocked: block b of an all-reduce-sized input holds index b's data
 * too, so reduce-scatter inputs are as long as the whole), and a receive
 * buffer of @out elements (or the send buffer, @in_place).
 */
static int vectors_make(FIXTURE_DATA(coll) *self, struct vectors *v,
			enum tsr_dtype dtype, uint64_t in, uint64_t out,
			unsigned int salt, bool in_place)
{
	float *f = malloc(in * sizeof(float));
	void *enc = malloc(bytes_of(dtype, in));
	unsigned int c;
	uint64_t i;
	int ret = f && enc ? ACCEL_OK : ACCEL_ERR_NO_MEMORY;

	for (c = 0; !ret && c < self->n; c++) {
		unsigned int rank = accel_comm_rank(self->comm, c);

		for (i = 0; i < in; i++)
			f[i] = value(rank, i, salt);
		encode(f, in, dtype, enc);
		ret = accel_buffer_create(self->dev[c], bytes_of(dtype, in),
					  ACCEL_PLACEMENT_HBM, &v->send[c]);
		if (!ret)
			ret = accel_buffer_upload(v->send[c], 0, enc,
						  bytes_of(dtype, in));
		if (!ret && in_place)
			v->recv[c] = v->send[c];
		else if (!ret)
			ret = accel_buffer_create(self->dev[c], bytes_of(dtype, out),
						  ACCEL_PLACEMENT_HBM, &v->recv[c]);
	}
	free(f);
	free(enc);
	return ret;
}

/*
 * Whether each local chip's receive buffer holds @n elements equal, bit
 * for bit in @dtype, to @want(chip's rank, element).
 */
static bool vectors_check(struct __test_metadata *_metadata,
			  FIXTURE_DATA(coll) *self, struct vectors *v,
			  enum tsr_dtype dtype, uint64_t n,
			  float (*want)(FIXTURE_DATA(coll) *, unsigned int,
					uint64_t, const void *),
			  const void *arg)
{
	size_t size = bytes_of(dtype, n);
	char *got = malloc(size), *exp = malloc(size);
	float *f = malloc(n * sizeof(float));
	bool ok = got && exp && f;
	unsigned int c;
	uint64_t i;

	for (c = 0; ok && c < self->n; c++) {
		unsigned int rank = accel_comm_rank(self->comm, c);
		size_t e = tsr_dtype_size(dtype);
		uint64_t wrong = 0, first = 0, last = 0;

		ok = !accel_buffer_download(v->recv[c], 0, got, size);
		for (i = 0; i < n; i++)
			f[i] = want(self, rank, i, arg);
		encode(f, n, dtype, exp);
		for (i = 0; ok && i < n; i++) {
			if (!memcmp(got + i * e, exp + i * e, e))
				continue;
			first = wrong++ ? first : i;
			last = i;
		}
		if (wrong) {
			/* What came instead says which step went wrong. */
			TH_LOG("chip %u (rank %u): %llu of %llu elements wrong, %llu to %llu; element %llu: got %g, want %g",
			       c, rank, (unsigned long long)wrong,
			       (unsigned long long)n, (unsigned long long)first,
			       (unsigned long long)last, (unsigned long long)first,
			       decoded(got + first * e, dtype), f[first]);
			ok = false;
		}
	}
	free(got);
	free(exp);
	free(f);
	return ok;
}

struct expect {
	enum accel_reduce_op op;
	unsigned int salt;
	uint64_t count;		/* per chip, for reduce-scatter */
	unsigned int root;	/* broadcast */
};

static float want_all_reduce(FIXTURE_DATA(coll) *self, unsigned int rank,
			     uint64_t i, const void *arg)
{
	const struct expect *e = arg;

	(void)rank;
	return reduced(self->size, e->op, i, e->salt);
}

static float want_reduce_scatter(FIXTURE_DATA(coll) *self, unsigned int rank,
				 uint64_t i, const void *arg)
{
	const struct expect *e = arg;

	return reduced(self->size, e->op, rank * e->count + i, e->salt);
}

static float want_all_gather(FIXTURE_DATA(coll) *self, unsigned int rank,
			     uint64_t i, const void *arg)
{
	const struct expect *e = arg;

	(void)self;
	(void)rank;
	/* Block b is chip b's input, which starts at its element 0. */
	return value(i / e->count, i % e->count, e->salt);
}

static float want_broadcast(FIXTURE_DATA(coll) *self, unsigned int rank,
			    uint64_t i, const void *arg)
{
	const struct expect *e = arg;

	(void)self;
	(void)rank;
	return value(e->root, i, e->salt);
}

static const enum tsr_dtype dtypes[] = {
	TSR_DTYPE_F32, TSR_DTYPE_BF16, TSR_DTYPE_I32,
};
static const enum accel_reduce_op ops[] = {
	ACCEL_REDUCE_SUM, ACCEL_REDUCE_MAX, ACCEL_REDUCE_MIN,
};
/* One element, odd, prime, and a few hundred KiB. */
static const uint64_t counts[] = { 1, 7, 1009, 65521 };

static bool all_reduce_once(struct __test_metadata *_metadata,
			    FIXTURE_DATA(coll) *self, enum tsr_dtype dtype,
			    enum accel_reduce_op op, uint64_t count,
			    unsigned int salt, bool in_place)
{
	struct expect e = { op, salt, count, 0 };
	struct vectors v = { 0 };
	int ret = vectors_make(self, &v, dtype, count, count, salt, in_place);
	bool ok;

	if (!ret)
		ret = accel_all_reduce(self->comm, v.send, v.recv, count, dtype,
				       op, NULL);
	ok = !ret && vectors_check(_metadata, self, &v, dtype, count,
				   want_all_reduce, &e);
	if (!ok)
		TH_LOG("all-reduce of %llu of dtype %u, op %u%s: %s",
		       (unsigned long long)count, dtype, op,
		       in_place ? ", in place" : "", accel_error_string(ret));
	vectors_free(&v, self->n);
	return ok;
}

TEST_F_TIMEOUT(coll, all_reduce_of_every_type_op_and_count_is_exact_on_every_chip, COLL_TEST_TIMEOUT)
{
	unsigned int d, o, c, salt = 0;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 0, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	for (d = 0; d < ARRAY_SIZE(dtypes); d++)
		for (o = 0; o < ARRAY_SIZE(ops); o++)
			for (c = 0; c < ARRAY_SIZE(counts); c++)
				EXPECT_TRUE(all_reduce_once(_metadata, self, dtypes[d],
							    ops[o], counts[c],
							    salt++, false));
}

TEST_F_TIMEOUT(coll, all_reduce_in_place_and_of_several_mib, COLL_TEST_TIMEOUT)
{
	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 1, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_F32,
				    ACCEL_REDUCE_SUM, 1009, 3, true));
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_BF16,
				    ACCEL_REDUCE_SUM, 4099, 4, true));
	/* 6 MiB of f32, many slots' worth on every link. */
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_F32,
				    ACCEL_REDUCE_SUM, 1572869, 5, false));
}

/* Integers past f32's 24 bits: a float path would round them. */
/*
 * The largest messages the tests use: 1 MiB slots.  On a 4x4 slice in one
 * VM, a 16 MiB all-reduce of them once ran into the ICI answer timeout:
 * the chips' 64 waiting queues polled their semaphores 5000 times a
 * second each and starved the host (make check-slices runs this on 4x4).
 */
TEST_F_TIMEOUT(coll, all_reduce_with_one_mib_slots_is_exact, COLL_TEST_TIMEOUT)
{
	struct accel_comm_opts opts = {
		.window_id = WINDOW_BASE + 14, .slot_bytes = 1u << 20,
	};

	ASSERT_EQ(ACCEL_OK, accel_comm_create(self->dev, self->n, &opts,
					      &self->comm));
	self->size = accel_comm_size(self->comm);
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_F32,
				    ACCEL_REDUCE_SUM, (1u << 20) + 3, 82, true));
}

TEST_F(coll, i32_sums_are_exact_beyond_what_f32_holds)
{
	const uint64_t count = 4099;
	struct accel_buffer *buf[MAX_CHIPS] = { 0 };
	int32_t *v = malloc(count * sizeof(*v));
	unsigned int c, r;
	uint64_t i;

	ASSERT_NE(NULL, v);
	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 7, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	for (c = 0; c < self->n; c++) {
		r = accel_comm_rank(self->comm, c);
		for (i = 0; i < count; i++)
			v[i] = (int32_t)((r + 1) * 16777217u + i);
		ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev[c], count * 4,
							ACCEL_PLACEMENT_HBM, &buf[c]));
		ASSERT_EQ(ACCEL_OK, accel_buffer_upload(buf[c], 0, v, count * 4));
	}
	ASSERT_EQ(ACCEL_OK, accel_all_reduce(self->comm, buf, buf, count,
					     TSR_DTYPE_I32, ACCEL_REDUCE_SUM, NULL));
	for (c = 0; c < self->n; c++) {
		ASSERT_EQ(ACCEL_OK, accel_buffer_download(buf[c], 0, v, count * 4));
		for (i = 0; i < count; i++) {
			uint32_t want = 0;

			for (r = 0; r < self->size; r++)
				want += (r + 1) * 16777217u + i;
			ASSERT_EQ((int32_t)want, v[i]) TH_LOG("chip %u element %llu",
							     c, (unsigned long long)i);
		}
		accel_buffer_destroy(buf[c]);
	}
	free(v);
}

/*
 * Link faults of every wired port of the local chips (debugfs, with
 * debug-regs=on): @ppm frames per million dropped and as many corrupted,
 * and, with @ppm, the next frame of each port dropped and the one after
 * corrupted, so that every port replays at least once.  Returns false
 * when the chips have no debug block.
 */
static bool link_faults(FIXTURE_DATA(coll) *self, unsigned int ppm)
{
	struct accel_device_info info;
	unsigned int c, p;
	char file[64];

	for (c = 0; c < self->n; c++) {
		if (accel_device_get_info(self->dev[c], &info) ||
		    !(info.caps & TSR_CAP_DEBUG_REGS))
			return false;
		for (p = 0; p < info.ici_ports; p++) {
			if (!(info.ports_wired & (1u << p)))
				continue;
			snprintf(file, sizeof(file), "ici%u/fault_seed", p);
			tsr_debugfs_write(info.pci_address, file, 7 + p + 8 * c);
			snprintf(file, sizeof(file), "ici%u/fault_drop_ppm", p);
			if (tsr_debugfs_write(info.pci_address, file, ppm))
				return false;
			snprintf(file, sizeof(file), "ici%u/fault_corrupt_ppm", p);
			if (tsr_debugfs_write(info.pci_address, file, ppm))
				return false;
			snprintf(file, sizeof(file), "ici%u/fault_drop_next", p);
			tsr_debugfs_write(info.pci_address, file, !!ppm);
			snprintf(file, sizeof(file), "ici%u/fault_corrupt_next", p);
			tsr_debugfs_write(info.pci_address, file, !!ppm);
		}
	}
	return true;
}

/* Replays of every port of the local chips, so far. */
static uint64_t replays(FIXTURE_DATA(coll) *self)
{
	struct accel_device_info info;
	struct accel_link_info link;
	uint64_t n = 0;
	unsigned int c, p;

	for (c = 0; c < self->n; c++) {
		if (accel_device_get_info(self->dev[c], &info))
			continue;
		for (p = 0; p < info.ici_ports; p++)
			if (!accel_link_get_info(self->dev[c], p, &link))
				n += link.replays;
	}
	return n;
}

TEST_F_TIMEOUT(coll, results_are_exact_through_dropped_and_corrupted_frames, COLL_TEST_TIMEOUT)
{
	uint64_t before = replays(self);
	bool faults;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 8, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	/*
	 * One frame in a hundred lost, one in a hundred damaged: the rates
	 * hit the collective's own frames (the next-N faults may be taken
	 * by the links' keepalives on a slow host).
	 */
	faults = link_faults(self, 10000);
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_F32,
				    ACCEL_REDUCE_SUM, 262147, 70, false));
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_BF16,
				    ACCEL_REDUCE_MAX, 65521, 71, true));
	link_faults(self, 0);
	if (!faults)
		SKIP(return, "no fault injection: boot with -d debug-regs=on");
	EXPECT_LT(before, replays(self));
}

/* Whether every wired port of the local chips is up. */
static bool local_links_up(FIXTURE_DATA(coll) *self)
{
	struct accel_device_info info;
	struct accel_link_info link;
	unsigned int c, p;

	for (c = 0; c < self->n; c++) {
		if (accel_device_get_info(self->dev[c], &info))
			return false;
		for (p = 0; p < info.ici_ports; p++)
			if (info.ports_wired & (1u << p) &&
			    (accel_link_get_info(self->dev[c], p, &link) ||
			     link.port.state != TSR_ICI_STATE_UP))
				return false;
	}
	return true;
}

/* Ask every wired port of the local chips that is down to train again. */
static void retrain_down_links(FIXTURE_DATA(coll) *self)
{
	struct accel_device_info info;
	struct accel_link_info link;
	unsigned int c, p;
	char control[32];

	for (c = 0; c < self->n; c++) {
		if (accel_device_get_info(self->dev[c], &info))
			continue;
		for (p = 0; p < info.ici_ports; p++) {
			if (!(info.ports_wired & (1u << p)) ||
			    accel_link_get_info(self->dev[c], p, &link) ||
			    link.port.state != TSR_ICI_STATE_DOWN)
				continue;
			snprintf(control, sizeof(control), "ici%u/control", p);
			tsr_debugfs_write(info.pci_address, control,
					  TSR_ICI_CTRL_RETRAIN);
		}
	}
}

/*
 * A link that stops carrying frames in the middle of an all-reduce (chip
 * 0's +x port drops everything it sends): the chip sending on it gets
 * LINK_DOWN once its retries run out, and gives up for the whole slice;
 * the other chips' waits fail with PEER_ABORT instead of lasting until
 * the driver's job timeout (60 s in this suite).  Every local chip's
 * call ends with that error within seconds (the link's retries and, for
 * a remote write whose answer cannot come back, the ICI answer timeout);
 * the communicator then refuses calls (ACCEL_ERR_COMM_BROKEN) and is
 * destroyed at once; once the link has retrained, a new one works.  Split across VMs, the process of chip 0 breaks the
 * link, and every VM checks its own chips.
 */
TEST_F_TIMEOUT(coll, a_link_lost_mid_collective_fails_every_chip_within_seconds,
	       COLL_TEST_TIMEOUT)
{
	const uint64_t count = 4u << 20;	/* 16 MiB of f32 per chip */
	const unsigned int port = TSR_ICI_PORT(0, 0);
	struct accel_buffer *buf[MAX_CHIPS] = { 0 };
	struct accel_device_info info;
	struct accel_coll *coll = NULL;
	char drop[32];
	int uevents = tsr_uevent_socket(), breaker = -1, ret;
	uint64_t start, end, took;
	unsigned int c;

	ASSERT_LE(0, uevents);
	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 12, ACCEL_COLL_PINCER));
	/*
	 * Every host asks its own chips, booted with the same properties: a
	 * host without chip 0 that went on would wait for a fault no one
	 * injects.
	 */
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev[0], &info));
	if (!(info.caps & TSR_CAP_DEBUG_REGS) || !(info.caps & TSR_CAP_SEM_ABORT))
		SKIP(goto out, "no fault injection or no SEM_WAIT_ABORT: boot with -d debug-regs=on");
	for (c = 0; c < self->n; c++) {
		ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev[c], count * 4,
							ACCEL_PLACEMENT_HBM, &buf[c]));
		if (accel_comm_rank(self->comm, c) == 0)
			breaker = c;
	}
	snprintf(drop, sizeof(drop), "ici%u/fault_drop_next", port);
	if (breaker >= 0) {
		ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev[breaker], &info));
		ASSERT_EQ(0, tsr_debugfs_write(info.pci_address, drop, 1000000000));
	}

	start = tsr_now_ns();
	ASSERT_EQ(ACCEL_OK, accel_all_reduce(self->comm, buf, buf, count,
					     TSR_DTYPE_F32, ACCEL_REDUCE_SUM, &coll));
	ret = accel_coll_wait(coll, 30ull * 1000 * 1000 * 1000);
	end = tsr_now_ns();
	took = end - start;
	EXPECT_TRUE(ret == ACCEL_ERR_LINK_DOWN || ret == ACCEL_ERR_PEER_ABORT)
		TH_LOG("the all-reduce ended with: %s", accel_error_string(ret));
	if (breaker >= 0 && self->n == accel_comm_size(self->comm))
		EXPECT_EQ(ACCEL_ERR_LINK_DOWN, ret);
	/*
	 * The link goes down within 2 s, the waits follow at once; a remote
	 * write whose answer would come back over the dead link ends at the
	 * ICI answer timeout (10 s).  Without the abort, the waits would last
	 * until the driver's job timeout, 60 s here.
	 */
	EXPECT_GT(15ull * 1000 * 1000 * 1000, took)
		TH_LOG("every chip's part ended after %.1f s", took / 1e9);
	accel_coll_destroy(coll);
	EXPECT_EQ(ACCEL_ERR_COMM_BROKEN,
		  accel_all_reduce(self->comm, buf, buf, 1, TSR_DTYPE_F32,
				   ACCEL_REDUCE_SUM, NULL));
	start = tsr_now_ns();
	accel_comm_destroy(self->comm);
	self->comm = NULL;
	EXPECT_GT(2ull * 1000 * 1000 * 1000, tsr_now_ns() - start);

	/* Both ends of the link may have given up on it: each VM retrains its own. */
	if (breaker >= 0)
		ASSERT_EQ(0, tsr_debugfs_write(info.pci_address, drop, 0));
	end = tsr_now_ns() + 30ull * 1000 * 1000 * 1000;
	while (!local_links_up(self) && tsr_now_ns() < end) {
		retrain_down_links(self);
		tsr_uevent_wait(uevents, "TESSERA_LINK_STATE=up", NULL, 1000);
	}
	ASSERT_TRUE(local_links_up(self));
	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 13, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_F32,
				    ACCEL_REDUCE_SUM, 1031, 80, false));
out:
	for (c = 0; c < self->n; c++)
		accel_buffer_destroy(buf[c]);
	close(uevents);
}

/* The key the collectives once derived from the slice id alone. */
static uint64_t guessable_key(FIXTURE_DATA(coll) *self)
{
	struct accel_device_info info;

	if (accel_device_get_info(self->dev[0], &info))
		return 0;
	return 0x7e55e7a000000000ull | info.slice_id;
}

/*
 * Another program of the slice (another device context), without the
 * key, sweeps every window id of a chip with remote writes that would put
 * junk in a slot and set the abort semaphore, under the key the
 * collectives once derived from the slice id: every write is refused and
 * counted, and the collective stays exact.
 */
TEST_F_TIMEOUT(coll, a_program_without_the_key_cannot_write_into_the_windows,
	       COLL_TEST_TIMEOUT)
{
	struct accel_device_info target;
	struct accel_device *intruder;
	struct accel_buffer *junk;
	struct accel_ici_write w = {
		.key = guessable_key(self), .offset = 8192, .rows = 1,
		.row_bytes = 64, .flags = TSR_ICI_WRITE_SEM, .sem_offset = 656,
		.sem_add = 1,
	};
	unsigned int id, d, refused = 0;
	long long before;
	uint64_t end;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 15, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev[self->n - 1], &target));
	for (d = 0; d < 3; d++)
		w.dst.c[d] = (uint8_t)target.coords[d];
	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &intruder));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(intruder, 4096, ACCEL_PLACEMENT_HBM,
						&junk));
	w.src_buffer = junk;
	before = tsr_sysfs_counter(target.pci_address, "remote_access_refused");
	for (id = 0; id < target.max_windows; id++) {
		struct accel_cmdbuf *cb;
		struct accel_job *job;
		int ret;

		w.window = id;
		ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(intruder, &cb));
		ASSERT_EQ(ACCEL_OK, accel_cmdbuf_ici_write(cb, &w));
		ASSERT_EQ(ACCEL_OK, accel_submit(intruder, cb, NULL, &job));
		ret = accel_job_wait(job, TSR_TEST_WAIT_NS);
		EXPECT_EQ(ACCEL_ERR_REMOTE_ACCESS, ret) TH_LOG("window %u took the write", id);
		refused += ret == ACCEL_ERR_REMOTE_ACCESS;
		accel_job_destroy(job);
		accel_cmdbuf_destroy(cb);
	}
	/* The target's driver heard of each refusal (its interrupt). */
	end = tsr_now_ns() + 2000000000ull;
	while (tsr_sysfs_counter(target.pci_address, "remote_access_refused") <
	       before + refused && tsr_now_ns() < end)
		sched_yield();
	EXPECT_EQ(before + target.max_windows,
		  tsr_sysfs_counter(target.pci_address, "remote_access_refused"));
	accel_buffer_destroy(junk);
	accel_device_close(intruder);
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_F32,
				    ACCEL_REDUCE_SUM, 65521, 81, false));
}

/* Whether this process holds every chip of the slice. */
static bool whole_slice(FIXTURE_DATA(coll) *self)
{
	struct accel_device_info info;

	return !accel_device_get_info(self->dev[0], &info) &&
	       info.slice_chips == self->n;
}

/*
 * The id of the one window open on @dev's chip (by anyone: those it
 * cannot take), or -1.
 */
static int open_window_id(struct accel_device *dev)
{
	struct accel_device_info info;
	struct accel_buffer *buf;
	int found = -1, ret = ACCEL_OK;
	uint32_t id;

	if (accel_device_get_info(dev, &info) ||
	    accel_buffer_create(dev, 4096, ACCEL_PLACEMENT_HBM, &buf))
		return -1;
	for (id = 0; !ret && id < info.max_windows; id++) {
		struct accel_window_opts o = { .flags = ACCEL_WINDOW_FIXED_ID, .id = id };
		struct accel_window *win;

		ret = accel_window_open(dev, buf, 0, 4096, ACCEL_WINDOW_WRITE, &o, &win);
		if (ret == ACCEL_ERR_BUSY)
			found = found < 0 ? (int)id : -2;
		else
			accel_window_close(win);
		ret = ret == ACCEL_ERR_BUSY ? ACCEL_OK : ret;
	}
	accel_buffer_destroy(buf);
	return ret ? -1 : found;
}

/* The window id a communicator of @key opens, found as a squatter would. */
static int window_of_key(FIXTURE_DATA(coll) *self, struct accel_device *look,
			 uint64_t key)
{
	struct accel_comm_opts opts = { .window_id = WINDOW_BASE + 16, .key = key };
	int id;

	accel_comm_destroy(self->comm);
	self->comm = NULL;
	if (accel_comm_create(self->dev, self->n, &opts, &self->comm))
		return -1;
	id = open_window_id(look);
	accel_comm_destroy(self->comm);
	self->comm = NULL;
	return id;
}

/*
 * A program that takes a window id first (another context, here on the
 * last chip): the id the collectives once always took no longer stops
 * them, since the id follows the key; one that holds the very id a
 * communicator's key gives (as it could see once a communicator had it)
 * makes creation fail at once with ACCEL_ERR_BUSY, rather than
 * waiting for its neighbours or sharing the window.
 */
TEST_F_TIMEOUT(coll, window_ids_follow_the_key_and_a_squatted_one_fails_creation_at_once,
	       COLL_TEST_TIMEOUT)
{
	const uint64_t key = 0x5ca1ab1e0c011ec7ull, other = 0x5ca1ab1e0c011ec8ull;
	struct accel_comm_opts opts = {
		.window_id = WINDOW_BASE + 16, .key = key,
		.connect_timeout_ns = 30ull * 1000 * 1000 * 1000,
	};
	struct accel_window_opts squat = { .flags = ACCEL_WINDOW_FIXED_ID };
	struct accel_device *squatter;
	struct accel_buffer *buf;
	struct accel_window *win;
	int id, id_other;
	uint64_t start;

	if (!whole_slice(self))
		SKIP(return, "the slice spans other VMs, whose calls would wait for these");
	ASSERT_EQ(ACCEL_OK, accel_device_open(self->n - 1, &squatter));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(squatter, 4096, ACCEL_PLACEMENT_HBM,
						&buf));
	id = window_of_key(self, squatter, key);
	id_other = window_of_key(self, squatter, other);
	ASSERT_LE(0, id);
	ASSERT_LE(0, id_other);
	EXPECT_NE(id, id_other);

	/* Once the same id for every communicator: 200. */
	squat.id = id == 200 ? 201 : 200;
	ASSERT_EQ(ACCEL_OK, accel_window_open(squatter, buf, 0, 4096,
					      ACCEL_WINDOW_WRITE, &squat, &win));
	EXPECT_EQ(ACCEL_OK, accel_comm_create(self->dev, self->n, &opts, &self->comm));
	accel_comm_destroy(self->comm);
	self->comm = NULL;
	accel_window_close(win);

	squat.id = (uint32_t)id;
	ASSERT_EQ(ACCEL_OK, accel_window_open(squatter, buf, 0, 4096,
					      ACCEL_WINDOW_WRITE, &squat, &win));
	start = tsr_now_ns();
	EXPECT_EQ(ACCEL_ERR_BUSY, accel_comm_create(self->dev, self->n, &opts,
						    &self->comm));
	EXPECT_GT(5ull * 1000 * 1000 * 1000, tsr_now_ns() - start);
	EXPECT_EQ(NULL, self->comm);
	accel_window_close(win);
	EXPECT_EQ(ACCEL_OK, accel_comm_create(self->dev, self->n, &opts, &self->comm));
	accel_buffer_destroy(buf);
	accel_device_close(squatter);
}

/*
 * One half of the slice's chips, in a process of its own: the chips of
 * slice index @lo to @hi - 1, opened afresh.
 */
static int half_open(FIXTURE_DATA(coll) *h, unsigned int lo, unsigned int hi)
{
	struct accel_device_info info;
	unsigned int i, count;
	int ret = accel_device_count(&count);

	memset(h, 0, sizeof(*h));
	for (i = 0; !ret && i < count; i++) {
		struct accel_device *dev;

		ret = accel_device_open(i, &dev);
		if (!ret)
			ret = accel_device_get_info(dev, &info);
		if (!ret && info.slice_index >= lo && info.slice_index < hi)
			h->dev[h->n++] = dev;
		else if (!ret)
			accel_device_close(dev);
	}
	return ret;
}

static void half_close(FIXTURE_DATA(coll) *h)
{
	unsigned int i;

	accel_comm_destroy(h->comm);
	for (i = 0; i < h->n; i++)
		accel_device_close(h->dev[i]);
}

static int half_comm(FIXTURE_DATA(coll) *h, uint64_t key, uint32_t number)
{
	struct accel_comm_opts opts = { .window_id = number, .key = key };

	accel_comm_destroy(h->comm);
	h->comm = NULL;
	return accel_comm_create(h->dev, h->n, &opts, &h->comm);
}

/* An all-reduce of 1031 f32 on @h's chips, waited for up to @wait_ns. */
static int half_all_reduce(FIXTURE_DATA(coll) *h, struct vectors *v,
			   uint64_t wait_ns, struct accel_coll **coll)
{
	int ret = accel_all_reduce(h->comm, v->send, v->recv, 1031, TSR_DTYPE_F32,
				   ACCEL_REDUCE_SUM, coll);

	return ret ? ret : accel_coll_wait(*coll, wait_ns);
}

#define HALF_FAIL(fmt, ...) do { \
	fprintf(stderr, "# the other half: " fmt "\n", ##__VA_ARGS__); \
	_exit(1); \
} while (0)

/*
 * The second half: joins the communicator, waits for the first to give
 * up, then finds its own call fail at once with PEER_ABORT (the first's
 * abort, though a command held the queue it once went out on) and later
 * ones with COMM_BROKEN; then joins a new communicator and reduces
 * exactly.
 */
static void second_half(struct __test_metadata *_metadata,
			FIXTURE_DATA(coll) *h, uint64_t key, int to, int from)
{
	struct expect e = { ACCEL_REDUCE_SUM, 82, 0, 0 };
	struct accel_coll *coll = NULL;
	struct vectors v = { 0 };
	uint64_t start, took;
	char c;
	int ret;

	if (half_comm(h, key, WINDOW_BASE + 17) ||
	    vectors_make(h, &v, TSR_DTYPE_F32, 1031, 1031, 82, false))
		HALF_FAIL("no communicator");
	h->size = accel_comm_size(h->comm);
	if (read(from, &c, 1) != 1)
		HALF_FAIL("the first half went away");
	start = tsr_now_ns();
	ret = half_all_reduce(h, &v, 10ull * 1000 * 1000 * 1000, &coll);
	took = tsr_now_ns() - start;
	accel_coll_destroy(coll);
	if (ret != ACCEL_ERR_PEER_ABORT || took > 5ull * 1000 * 1000 * 1000)
		HALF_FAIL("the call after the other's timeout: %s after %.1f s",
			  accel_error_string(ret), took / 1e9);
	ret = accel_all_reduce(h->comm, v.send, v.recv, 1031, TSR_DTYPE_F32,
			       ACCEL_REDUCE_SUM, &coll);
	if (ret != ACCEL_ERR_COMM_BROKEN)
		HALF_FAIL("the next call: %s", accel_error_string(ret));
	if (write(to, "d", 1) != 1 || half_comm(h, key, WINDOW_BASE + 18))
		HALF_FAIL("no new communicator");
	ret = accel_all_reduce(h->comm, v.send, v.recv, 1031, TSR_DTYPE_F32,
			       ACCEL_REDUCE_SUM, NULL);
	if (ret || !vectors_check(_metadata, h, &v, TSR_DTYPE_F32, 1031,
				  want_all_reduce, &e))
		HALF_FAIL("the new communicator's all-reduce: %s",
			  accel_error_string(ret));
	vectors_free(&v, h->n);
	half_close(h);
	_exit(0);
}

/*
 * A job on the last queue of each chip that holds it until *@release is
 * set from the CPU: a command that does not end soon, as a stream's
 * ICI_WRITE to a chip that stopped taking it is.
 */
static int hold_last_queue(FIXTURE_DATA(coll) *h, struct accel_buffer **sems,
			   struct accel_job **held)
{
	struct accel_device_info info;
	unsigned int i;
	int ret = ACCEL_OK;

	for (i = 0; !ret && i < h->n; i++) {
		struct accel_submit_opts opts = { 0 };
		struct accel_cmdbuf *cb = NULL;

		ret = accel_device_get_info(h->dev[i], &info);
		opts.queue = info.num_queues - 1;
		if (!ret)
			ret = accel_buffer_create(h->dev[i], 4096,
						  ACCEL_PLACEMENT_HBM, &sems[i]);
		if (!ret)
			ret = accel_buffer_upload(sems[i], 0, &(uint64_t){ 0 }, 8);
		if (!ret)
			ret = accel_cmdbuf_create(h->dev[i], &cb);
		if (!ret)
			ret = accel_cmdbuf_sem_wait(cb, sems[i], 0, 1);
		if (!ret)
			ret = accel_submit(h->dev[i], cb, &opts, &held[i]);
		accel_cmdbuf_destroy(cb);
	}
	return ret;
}

static void release_last_queue(FIXTURE_DATA(coll) *h, struct accel_buffer **sems,
			       struct accel_job **held)
{
	unsigned int i;
	uint64_t *sem;

	for (i = 0; i < h->n; i++) {
		if (sems[i] && !accel_buffer_map(sems[i], (void **)&sem))
			__atomic_store_n(sem, 1, __ATOMIC_SEQ_CST);
		if (held[i])
			accel_job_wait(held[i], TSR_TEST_WAIT_NS);
		accel_job_destroy(held[i]);
		accel_buffer_destroy(sems[i]);
	}
}

/*
 * The slice as two processes, each with half the chips.  The first calls
 * an all-reduce that the second does not join (yet), with every chip's
 * last queue held by a command that does not end (where the abort once
 * went out, behind the streams): its wait times out, which breaks the
 * communicator.  Its next call fails at once with COMM_BROKEN; the
 * second's call fails within seconds with PEER_ABORT (without the abort
 * it would wait for the first's streams until the job timeout, 60 s), its
 * next with COMM_BROKEN; a new communicator of both works and is exact.
 */
TEST_F_TIMEOUT(coll, a_timeout_breaks_the_communicator_on_every_chip_until_rebuilt,
	       COLL_TEST_TIMEOUT)
{
	FIXTURE_DATA(coll) h;
	struct accel_buffer *sems[MAX_CHIPS] = { 0 };
	struct accel_job *held[MAX_CHIPS] = { 0 };
	struct expect e = { ACCEL_REDUCE_SUM, 82, 0, 0 };
	struct accel_coll *coll = NULL, *late = NULL;
	struct vectors v = { 0 };
	int down[2], up[2], status = -1;
	uint64_t key, start;
	unsigned int half;
	pid_t pid;
	char c;

	if (!whole_slice(self))
		SKIP(return, "the slice spans other VMs: this test splits it into processes");
	half = self->n / 2;
	ASSERT_EQ(sizeof(key), getrandom(&key, sizeof(key), 0));
	key |= 1;
	ASSERT_EQ(0, pipe(down));
	ASSERT_EQ(0, pipe(up));
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		close(down[1]);
		close(up[0]);
		if (half_open(&h, half, self->n))
			HALF_FAIL("cannot open its chips");
		second_half(_metadata, &h, key, up[1], down[0]);
	}
	close(down[0]);
	close(up[1]);
	ASSERT_EQ(ACCEL_OK, half_open(&h, 0, half));
	ASSERT_EQ(ACCEL_OK, half_comm(&h, key, WINDOW_BASE + 17));
	h.size = accel_comm_size(h.comm);
	ASSERT_EQ(ACCEL_OK, vectors_make(&h, &v, TSR_DTYPE_F32, 1031, 1031, 82, false));
	ASSERT_EQ(ACCEL_OK, hold_last_queue(&h, sems, held));

	EXPECT_EQ(ACCEL_ERR_TIMEOUT,
		  half_all_reduce(&h, &v, 1000ull * 1000 * 1000, &coll));
	start = tsr_now_ns();
	EXPECT_EQ(ACCEL_ERR_COMM_BROKEN,
		  accel_all_reduce(h.comm, v.send, v.recv, 1031, TSR_DTYPE_F32,
				   ACCEL_REDUCE_SUM, &late));
	EXPECT_GT(100ull * 1000 * 1000, tsr_now_ns() - start);
	ASSERT_EQ(1, write(down[1], "g", 1));
	/* The second half has its answer: the held queues may go on. */
	EXPECT_EQ(1, read(up[0], &c, 1));
	release_last_queue(&h, sems, held);
	accel_coll_destroy(late);
	accel_coll_destroy(coll);

	ASSERT_EQ(ACCEL_OK, half_comm(&h, key, WINDOW_BASE + 18));
	EXPECT_EQ(ACCEL_OK, accel_all_reduce(h.comm, v.send, v.recv, 1031,
					     TSR_DTYPE_F32, ACCEL_REDUCE_SUM, NULL));
	EXPECT_TRUE(vectors_check(_metadata, &h, &v, TSR_DTYPE_F32, 1031,
				  want_all_reduce, &e));
	vectors_free(&v, h.n);
	half_close(&h);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && !WEXITSTATUS(status));
	close(down[1]);
	close(up[0]);
}

/* An all-reduce of @n f32 on @h's chips, waited for. */
static int half_all_reduce_of(FIXTURE_DATA(coll) *h, struct vectors *v,
			      uint64_t n, struct accel_coll **coll)
{
	int ret = accel_all_reduce(h->comm, v->send, v->recv, n, TSR_DTYPE_F32,
				   ACCEL_REDUCE_SUM, coll);

	return ret ? ret : accel_coll_wait(*coll, TSR_TEST_WAIT_NS);
}

/*
 * The modeled cycles of an all-reduce of 65536 f32 by the slice split in
 * two processes, the second creating its communicator @late_ms after the
 * first (whose greetings its windows refuse meanwhile, sent again); the
 * first half's in *@first, the second's in *@second.
 */
static int staggered_cycles(FIXTURE_DATA(coll) *self, uint64_t key,
			    uint32_t number, unsigned int late_ms,
			    uint64_t *first, uint64_t *second)
{
	FIXTURE_DATA(coll) h;
	const struct timespec late = { late_ms / 1000, late_ms % 1000 * 1000000l };
	unsigned int half = self->n / 2;
	struct accel_coll *coll = NULL;
	struct vectors v = { 0 };
	int pipefd[2], status = -1, ret;
	pid_t pid;

	if (pipe(pipefd))
		return ACCEL_ERR_IO;
	pid = fork();
	if (pid < 0)
		return ACCEL_ERR_IO;
	if (!pid) {
		close(pipefd[0]);
		nanosleep(&late, NULL);
		if (half_open(&h, half, self->n) || half_comm(&h, key, number) ||
		    vectors_make(&h, &v, TSR_DTYPE_F32, 65536, 65536, 83, false) ||
		    half_all_reduce_of(&h, &v, 65536, &coll))
			HALF_FAIL("no all-reduce");
		*second = accel_coll_cycles(coll);
		if (write(pipefd[1], second, sizeof(*second)) != sizeof(*second))
			HALF_FAIL("cannot say its cycles");
		/* Its goodbye is what the first half's destroy waits for. */
		accel_coll_destroy(coll);
		vectors_free(&v, h.n);
		half_close(&h);
		_exit(0);
	}
	close(pipefd[1]);
	ret = half_open(&h, 0, half);
	if (!ret)
		ret = half_comm(&h, key, number);
	if (!ret)
		ret = vectors_make(&h, &v, TSR_DTYPE_F32, 65536, 65536, 83, false);
	if (!ret)
		ret = half_all_reduce_of(&h, &v, 65536, &coll);
	*first = accel_coll_cycles(coll);
	accel_coll_destroy(coll);
	vectors_free(&v, h.n);
	half_close(&h);
	if (read(pipefd[0], second, sizeof(*second)) != sizeof(*second))
		*second = 0;
	close(pipefd[0]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		ret = ret ? ret : ACCEL_ERR_IO;
	return ret;
}

/*
 * Decision 7: modeled time does not depend on the host.  However many
 * greetings a late process made its neighbours send again, the call's
 * modeled cycles are the same on each half of the slice.
 */
TEST_F_TIMEOUT(coll, modeled_cycles_do_not_hang_on_how_late_a_process_came,
	       COLL_TEST_TIMEOUT)
{
	static const unsigned int late_ms[] = { 0, 400, 0, 150 };
	uint64_t first[ARRAY_SIZE(late_ms)], second[ARRAY_SIZE(late_ms)];
	uint64_t key;
	unsigned int i;

	if (!whole_slice(self))
		SKIP(return, "the slice spans other VMs: this test splits it into processes");
	ASSERT_EQ(sizeof(key), getrandom(&key, sizeof(key), 0));
	key |= 1;
	for (i = 0; i < ARRAY_SIZE(late_ms); i++) {
		ASSERT_EQ(ACCEL_OK, staggered_cycles(self, key, WINDOW_BASE + 20 + i,
						     late_ms[i], &first[i],
						     &second[i]));
		TH_LOG("second half %u ms late: %llu and %llu cycles", late_ms[i],
		       (unsigned long long)first[i], (unsigned long long)second[i]);
		EXPECT_LT(0, first[i]);
		EXPECT_EQ(first[0], first[i]);
		EXPECT_EQ(second[0], second[i]);
	}
}

/*
 * The launcher gives a slice's chips two queues per dimension, so the
 * pincer runs a colour per dimension: three on a 3-D slice without -d
 * queues=6 (tessera-vm's default there).
 */
TEST_F(coll, the_pincer_runs_a_colour_per_dimension_of_the_slice)
{
	struct accel_device_info info;
	unsigned int d, dims = 0;

	ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev[0], &info));
	for (d = 0; d < ARRAY_SIZE(info.topology); d++)
		dims += info.topology[d] > 1;
	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 19, ACCEL_COLL_PINCER));
	EXPECT_EQ(dims, accel_comm_colours(self->comm))
		TH_LOG("%u queues on chip 0", info.num_queues);
}

TEST_F(coll, the_one_colour_baseline_gives_the_same_bits)
{
	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 2, ACCEL_COLL_ONE_COLOUR));
	self->size = accel_comm_size(self->comm);
	EXPECT_EQ(1, accel_comm_colours(self->comm));
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_F32,
				    ACCEL_REDUCE_SUM, 65521, 6, false));
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_BF16,
				    ACCEL_REDUCE_MAX, 1009, 7, false));
}

TEST_F_TIMEOUT(coll, reduce_scatter_leaves_each_chip_its_block, COLL_TEST_TIMEOUT)
{
	static const uint64_t per_chip[] = { 1, 5, 1009 };
	unsigned int d, o, c, salt = 10;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 3, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	for (d = 0; d < ARRAY_SIZE(dtypes); d++) {
		for (o = 0; o < ARRAY_SIZE(ops); o++) {
			for (c = 0; c < ARRAY_SIZE(per_chip); c++, salt++) {
				struct expect e = { ops[o], salt, per_chip[c], 0 };
				struct vectors v = { 0 };
				int ret = vectors_make(self, &v, dtypes[d],
						       per_chip[c] * self->size,
						       per_chip[c], salt, false);

				if (!ret)
					ret = accel_reduce_scatter(self->comm, v.send, v.recv,
								   per_chip[c], dtypes[d],
								   ops[o], NULL);
				EXPECT_EQ(ACCEL_OK, ret);
				EXPECT_TRUE(!ret && vectors_check(_metadata, self, &v,
								  dtypes[d], per_chip[c],
								  want_reduce_scatter, &e))
					TH_LOG("dtype %u op %u count %llu", dtypes[d],
					       ops[o], (unsigned long long)per_chip[c]);
				vectors_free(&v, self->n);
			}
		}
	}
}

TEST_F_TIMEOUT(coll, all_gather_gives_every_chip_every_block_in_rank_order, COLL_TEST_TIMEOUT)
{
	static const uint64_t per_chip[] = { 1, 5, 1009, 30011 };
	unsigned int d, c, salt = 40;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 4, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	for (d = 0; d < ARRAY_SIZE(dtypes); d++) {
		for (c = 0; c < ARRAY_SIZE(per_chip); c++, salt++) {
			struct expect e = { ACCEL_REDUCE_SUM, salt, per_chip[c], 0 };
			struct vectors v = { 0 };
			int ret = vectors_make(self, &v, dtypes[d], per_chip[c],
					       per_chip[c] * self->size, salt, false);

			if (!ret)
				ret = accel_all_gather(self->comm, v.send, v.recv,
						       per_chip[c], dtypes[d], NULL);
			EXPECT_EQ(ACCEL_OK, ret);
			EXPECT_TRUE(!ret && vectors_check(_metadata, self, &v, dtypes[d],
							  per_chip[c] * self->size,
							  want_all_gather, &e))
				TH_LOG("dtype %u count %llu", dtypes[d],
				       (unsigned long long)per_chip[c]);
			vectors_free(&v, self->n);
		}
	}
}

TEST_F_TIMEOUT(coll, broadcast_from_any_root_reaches_every_chip, COLL_TEST_TIMEOUT)
{
	unsigned int d, c, r, salt = 80;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 9, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	for (d = 0; d < ARRAY_SIZE(dtypes); d++) {
		for (c = 0; c < ARRAY_SIZE(counts); c++, salt++) {
			unsigned int roots[] = { 0, self->size - 1, self->size / 2 + 1 };
			struct expect e = { ACCEL_REDUCE_SUM, salt, counts[c],
					    roots[(d + c) % 3] % self->size };
			struct vectors v = { 0 };
			/* Every chip starts with its own data, the root's wins. */
			int ret = vectors_make(self, &v, dtypes[d], counts[c],
					       counts[c], salt, true);

			if (!ret)
				ret = accel_broadcast(self->comm, v.send, counts[c],
						      dtypes[d], e.root, NULL);
			EXPECT_EQ(ACCEL_OK, ret);
			EXPECT_TRUE(!ret && vectors_check(_metadata, self, &v, dtypes[d],
							  counts[c], want_broadcast, &e))
				TH_LOG("dtype %u count %llu root %u", dtypes[d],
				       (unsigned long long)counts[c], e.root);
			vectors_free(&v, self->n);
		}
	}
	for (r = 0; r < 1; r++) {
		struct vectors v = { 0 };

		ASSERT_EQ(ACCEL_OK, vectors_make(self, &v, TSR_DTYPE_F32, 8, 8, 1, true));
		EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
			  accel_broadcast(self->comm, v.send, 8, TSR_DTYPE_F32,
					  self->size, NULL));
		vectors_free(&v, self->n);
	}
}

/* Element @i of the block chip @from sends chip @to. */
static float a2a_value(unsigned int from, unsigned int to, uint64_t i,
		       unsigned int salt)
{
	return value(from * 17 + to, i, salt);
}

static float want_all_to_all(FIXTURE_DATA(coll) *self, unsigned int rank,
			     uint64_t i, const void *arg)
{
	const struct expect *e = arg;

	(void)self;
	/* Block b of chip r's result is what chip b sent chip r. */
	return a2a_value(i / e->count, rank, i % e->count, e->salt);
}

static float want_from_previous(FIXTURE_DATA(coll) *self, unsigned int rank,
			       uint64_t i, const void *arg)
{
	const struct expect *e = arg;

	return value((rank + self->size - 1) % self->size, i, e->salt);
}

TEST_F_TIMEOUT(coll, all_to_all_sends_every_block_to_its_chip, COLL_TEST_TIMEOUT)
{
	/* 70001 f32 take two messages of 256 KiB. */
	static const uint64_t per_block[] = { 1, 5, 1009, 70001 };
	unsigned int d, b, c, salt = 90;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 10, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	for (d = 0; d < ARRAY_SIZE(dtypes); d++) {
		for (b = 0; b < ARRAY_SIZE(per_block); b++, salt++) {
			uint64_t n = per_block[b] * self->size, i;
			struct expect e = { ACCEL_REDUCE_SUM, salt, per_block[b], 0 };
			struct vectors v = { 0 };
			float *f = malloc(n * sizeof(float));
			void *enc = malloc(n * 4);
			int ret;

			ASSERT_NE(NULL, f);
			ASSERT_NE(NULL, enc);
			ret = vectors_make(self, &v, dtypes[d], n, n, salt, false);
			for (c = 0; !ret && c < self->n; c++) {
				unsigned int rank = accel_comm_rank(self->comm, c);

				for (i = 0; i < n; i++)
					f[i] = a2a_value(rank, i / per_block[b],
							 i % per_block[b], salt);
				encode(f, n, dtypes[d], enc);
				ret = accel_buffer_upload(v.send[c], 0, enc,
							  bytes_of(dtypes[d], n));
			}
			if (!ret)
				ret = accel_all_to_all(self->comm, v.send, v.recv,
						       per_block[b], dtypes[d], NULL);
			EXPECT_EQ(ACCEL_OK, ret);
			EXPECT_TRUE(!ret && vectors_check(_metadata, self, &v, dtypes[d],
							  n, want_all_to_all, &e))
				TH_LOG("dtype %u block %llu", dtypes[d],
				       (unsigned long long)per_block[b]);
			vectors_free(&v, self->n);
			free(f);
			free(enc);
		}
	}
}

/* Every chip sends to the next rank and receives from the one before. */
TEST_F_TIMEOUT(coll, send_and_recv_pair_up_around_the_slice, COLL_TEST_TIMEOUT)
{
	static const uint64_t counts_p2p[] = { 1, 1009, 140001 };
	struct accel_coll *calls[2 * MAX_CHIPS];
	unsigned int k, c, salt = 100;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 11, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	for (k = 0; k < ARRAY_SIZE(counts_p2p); k++, salt++) {
		uint64_t n = counts_p2p[k];
		struct expect e = { ACCEL_REDUCE_SUM, salt, n, 0 };
		struct vectors v = { 0 };

		ASSERT_EQ(ACCEL_OK, vectors_make(self, &v, TSR_DTYPE_F32, n, n,
						 salt, false));
		for (c = 0; c < self->n; c++) {
			unsigned int r = accel_comm_rank(self->comm, c);

			ASSERT_EQ(ACCEL_OK, accel_send(self->comm, c, v.send[c], n,
						       TSR_DTYPE_F32,
						       (r + 1) % self->size,
						       &calls[2 * c]));
		}
		for (c = 0; c < self->n; c++) {
			unsigned int r = accel_comm_rank(self->comm, c);

			ASSERT_EQ(ACCEL_OK, accel_recv(self->comm, c, v.recv[c], n,
						       TSR_DTYPE_F32,
						       (r + self->size - 1) % self->size,
						       &calls[2 * c + 1]));
		}
		for (c = 0; c < 2 * self->n; c++) {
			EXPECT_EQ(ACCEL_OK, accel_coll_wait(calls[c], TSR_TEST_WAIT_NS));
			accel_coll_destroy(calls[c]);
		}
		EXPECT_TRUE(vectors_check(_metadata, self, &v, TSR_DTYPE_F32, n,
					  want_from_previous, &e))
			TH_LOG("count %llu", (unsigned long long)n);
		vectors_free(&v, self->n);
	}
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_send(self->comm, 0, NULL, 1, TSR_DTYPE_F32, 0, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_recv(self->comm, self->n, NULL, 1, TSR_DTYPE_F32, 0, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_send(self->comm, 0, NULL, 1, TSR_DTYPE_F32, self->size, NULL));
}

TEST_F(coll, asynchronous_calls_overlap_and_end_in_order)
{
	struct accel_coll *first = NULL, *second = NULL;
	struct vectors a = { 0 }, b = { 0 };
	struct expect ea = { ACCEL_REDUCE_SUM, 50, 0, 0 };
	struct expect eb = { ACCEL_REDUCE_MIN, 51, 0, 0 };

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 5, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	ASSERT_EQ(ACCEL_OK, vectors_make(self, &a, TSR_DTYPE_F32, 20011, 20011, 50, false));
	ASSERT_EQ(ACCEL_OK, vectors_make(self, &b, TSR_DTYPE_F32, 3001, 3001, 51, false));
	ASSERT_EQ(ACCEL_OK, accel_all_reduce(self->comm, a.send, a.recv, 20011,
					     TSR_DTYPE_F32, ACCEL_REDUCE_SUM, &first));
	ASSERT_EQ(ACCEL_OK, accel_all_reduce(self->comm, b.send, b.recv, 3001,
					     TSR_DTYPE_F32, ACCEL_REDUCE_MIN, &second));
	EXPECT_EQ(ACCEL_OK, accel_coll_wait(second, TSR_TEST_WAIT_NS));
	EXPECT_EQ(ACCEL_OK, accel_coll_wait(first, 0));
	EXPECT_LT(0, accel_coll_cycles(first));
	EXPECT_TRUE(vectors_check(_metadata, self, &a, TSR_DTYPE_F32, 20011,
				  want_all_reduce, &ea));
	EXPECT_TRUE(vectors_check(_metadata, self, &b, TSR_DTYPE_F32, 3001,
				  want_all_reduce, &eb));
	accel_coll_destroy(first);
	accel_coll_destroy(second);
	vectors_free(&a, self->n);
	vectors_free(&b, self->n);
}

/*
 * On each local chip, a job queued behind the collective's last jobs
 * there copies its result into @copy's receive buffers.
 */
static int copy_behind(FIXTURE_DATA(coll) *self, struct accel_coll *coll,
		       struct vectors *v, struct vectors *copy, uint64_t bytes,
		       unsigned int *most_jobs)
{
	unsigned int c;
	int ret = ACCEL_OK;

	for (c = 0; !ret && c < self->n; c++) {
		struct accel_job *wait[TSR_MAX_QUEUES], *job = NULL;
		struct accel_submit_opts opts = { .wait_jobs = wait };
		struct accel_cmdbuf *cb = NULL;

		ret = accel_coll_last_jobs(coll, c, wait, &opts.wait_job_count) ?:
		      accel_buffer_create(self->dev[c], bytes, ACCEL_PLACEMENT_HBM,
					  &copy->recv[c]) ?:
		      accel_cmdbuf_create(self->dev[c], &cb) ?:
		      accel_cmdbuf_copy(cb, copy->recv[c], 0, v->recv[c], 0,
					(uint32_t)bytes) ?:
		      accel_submit(self->dev[c], cb, &opts, &job) ?:
		      accel_job_wait(job, TSR_TEST_WAIT_NS);
		if (opts.wait_job_count > *most_jobs)
			*most_jobs = opts.wait_job_count;
		accel_job_destroy(job);
		accel_cmdbuf_destroy(cb);
	}
	return ret;
}

TEST_F_TIMEOUT(coll, a_job_queued_behind_a_collectives_last_jobs_reads_its_result,
	       COLL_TEST_TIMEOUT)
{
	static const uint64_t sizes[] = { 1009, 65521 };	/* one job a chip; streams */
	unsigned int k;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 32, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	for (k = 0; k < 2; k++) {
		struct expect e = { ACCEL_REDUCE_SUM, 60 + k, 0, 0 };
		struct vectors v = { 0 }, copy = { 0 };
		struct accel_coll *coll = NULL;
		unsigned int most = 0;

		ASSERT_EQ(ACCEL_OK, vectors_make(self, &v, TSR_DTYPE_F32, sizes[k],
						 sizes[k], e.salt, false));
		ASSERT_EQ(ACCEL_OK, accel_all_reduce(self->comm, v.send, v.recv, sizes[k],
						     TSR_DTYPE_F32, e.op, &coll));
		/* No wait on the host before the copies are queued. */
		EXPECT_EQ(ACCEL_OK, copy_behind(self, coll, &v, &copy, sizes[k] * 4,
						&most));
		EXPECT_EQ(ACCEL_OK, accel_coll_wait(coll, TSR_TEST_WAIT_NS));
		EXPECT_LE(1, most);
		EXPECT_GE(TSR_MAX_QUEUES, most);
		EXPECT_TRUE(vectors_check(_metadata, self, &copy, TSR_DTYPE_F32,
					  sizes[k], want_all_reduce, &e));
		accel_coll_destroy(coll);
		vectors_free(&v, self->n);
		vectors_free(&copy, self->n);
	}
}

/* Slices of at most 2 chips along each dimension: 2x2, 2x2x2. */
static bool twos_only(void)
{
	struct accel_slice s;
	unsigned int d;

	if (accel_slice_get(&s))
		return false;
	for (d = 0; d < TSR_ICI_MAX_DIMS; d++)
		if (s.topology[d] > 2)
			return false;
	return true;
}

/*
 * Up to 64 KiB (where its modeled time stays below the pincer's on 2, 2x2
 * and 2x2x2), one job a chip; a float more, the pincer's streams.
 */
TEST_F(coll, a_small_all_reduce_is_one_job_a_chip_on_slices_of_twos)
{
	static const struct { uint64_t count; bool one; } calls[] = {
		{ 4811, true }, { 16384, true }, { 16385, false },
	};
	struct expect e = { ACCEL_REDUCE_MAX, 62, 0, 0 };
	struct accel_job *jobs[TSR_MAX_QUEUES];
	unsigned int c, count, k;

	if (!twos_only())
		SKIP(return, "a dimension of the slice is longer than 2: the pincer runs");
	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 33, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	for (k = 0; k < ARRAY_SIZE(calls); k++) {
		uint64_t n = calls[k].count;
		struct vectors v = { 0 };
		struct accel_coll *coll = NULL;

		ASSERT_EQ(ACCEL_OK, vectors_make(self, &v, TSR_DTYPE_F32, n, n,
						 e.salt, true));
		ASSERT_EQ(ACCEL_OK, accel_all_reduce(self->comm, v.send, v.recv, n,
						     TSR_DTYPE_F32, e.op, &coll));
		for (c = 0; c < self->n; c++) {
			ASSERT_EQ(ACCEL_OK, accel_coll_last_jobs(coll, c, jobs, &count));
			EXPECT_EQ(calls[k].one, count == 1);
			EXPECT_LE(1, count);
		}
		EXPECT_EQ(ACCEL_OK, accel_coll_wait(coll, TSR_TEST_WAIT_NS));
		EXPECT_LT(0, accel_coll_cycles(coll));
		EXPECT_TRUE(vectors_check(_metadata, self, &v, TSR_DTYPE_F32, n,
					  want_all_reduce, &e));
		accel_coll_destroy(coll);
		vectors_free(&v, self->n);
	}
}

/*
 * Element @i of chip @rank's input whose sums depend on their order: a
 * fraction scaled by 2^-10 to 2^10.
 */
static float unround(unsigned int rank, uint64_t i)
{
	uint32_t x = (uint32_t)(rank * 2654435761u ^ (i + 1) * 40503u);

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return ldexpf((float)(x & 0xffffff) / (1 << 24) - 0.5f, (int)(x >> 24) % 21 - 10);
}

/* Each local chip's @count f32, @at(j) holding unround(rank, j) for j < @n. */
static int unrounded(FIXTURE_DATA(coll) *self, struct accel_buffer **buf,
		     uint64_t count, uint64_t n, uint64_t (*at)(uint64_t, uint64_t),
		     uint64_t arg)
{
	float *f = calloc(count, sizeof(float));
	unsigned int c;
	uint64_t j;
	int ret = f ? ACCEL_OK : ACCEL_ERR_NO_MEMORY;

	for (c = 0; !ret && c < self->n; c++) {
		for (j = 0; j < n; j++)
			f[at(j, arg)] = unround(accel_comm_rank(self->comm, c), j);
		ret = accel_buffer_create(self->dev[c], count * 4, ACCEL_PLACEMENT_HBM,
					  &buf[c]) ?:
		      accel_buffer_upload(buf[c], 0, f, count * 4);
	}
	free(f);
	return ret;
}

#define SMALL	1001	/* one job a chip */
#define LARGE	20000	/* the pincer */

static uint64_t same_place(uint64_t j, uint64_t unused)
{
	return j;
}

/*
 * Where the pincer's call of LARGE reduces element j of the small call
 * in the same colour: each colour's part of the small call (the plan's
 * even split) at the start of the colour's part of the large one.
 */
static uint64_t in_colour(uint64_t j, uint64_t colours)
{
	uint64_t k = colours;

	while (SMALL * k / colours > j)
		k--;
	return LARGE * k / colours + j - SMALL * k / colours;
}

TEST_F_TIMEOUT(coll, a_small_all_reduce_gives_the_pincers_bits, COLL_TEST_TIMEOUT)
{
	struct accel_buffer *small[MAX_CHIPS] = { 0 }, *large[MAX_CHIPS] = { 0 };
	float got_small[SMALL], got_large[LARGE];
	unsigned int c, colours, wrong = 0;
	uint64_t j;

	if (!twos_only())
		SKIP(return, "a dimension of the slice is longer than 2: the pincer runs");
	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 35, ACCEL_COLL_PINCER));
	colours = accel_comm_colours(self->comm);
	ASSERT_EQ(ACCEL_OK, unrounded(self, small, SMALL, SMALL, same_place, 0));
	ASSERT_EQ(ACCEL_OK, unrounded(self, large, LARGE, SMALL, in_colour, colours));
	ASSERT_EQ(ACCEL_OK, accel_all_reduce(self->comm, small, small, SMALL,
					     TSR_DTYPE_F32, ACCEL_REDUCE_SUM, NULL));
	ASSERT_EQ(ACCEL_OK, accel_all_reduce(self->comm, large, large, LARGE,
					     TSR_DTYPE_F32, ACCEL_REDUCE_SUM, NULL));
	for (c = 0; c < self->n; c++) {
		ASSERT_EQ(ACCEL_OK, accel_buffer_download(small[c], 0, got_small, sizeof(got_small)));
		ASSERT_EQ(ACCEL_OK, accel_buffer_download(large[c], 0, got_large, sizeof(got_large)));
		for (j = 0; j < SMALL; j++) {
			if (!memcmp(&got_small[j], &got_large[in_colour(j, colours)], 4))
				continue;
			if (!wrong++)
				TH_LOG("chip %u, element %llu: %.9g, the pincer %.9g", c,
				       (unsigned long long)j, got_small[j],
				       got_large[in_colour(j, colours)]);
		}
		accel_buffer_destroy(small[c]);
		accel_buffer_destroy(large[c]);
	}
	EXPECT_EQ(0, wrong);
}

TEST_F(coll, last_jobs_refuses_a_missing_argument_or_chip)
{
	struct accel_job *jobs[TSR_MAX_QUEUES];
	struct vectors v = { 0 };
	struct accel_coll *coll = NULL;
	unsigned int count;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 34, ACCEL_COLL_PINCER));
	ASSERT_EQ(ACCEL_OK, vectors_make(self, &v, TSR_DTYPE_F32, 7, 7, 63, true));
	ASSERT_EQ(ACCEL_OK, accel_all_reduce(self->comm, v.send, v.recv, 7,
					     TSR_DTYPE_F32, ACCEL_REDUCE_SUM, &coll));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_coll_last_jobs(NULL, 0, jobs, &count));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_coll_last_jobs(coll, 0, NULL, &count));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_coll_last_jobs(coll, 0, jobs, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_coll_last_jobs(coll, self->n, jobs, &count));
	EXPECT_EQ(ACCEL_OK, accel_coll_wait(coll, TSR_TEST_WAIT_NS));
	accel_coll_destroy(coll);
	vectors_free(&v, self->n);
}

/* The modeled cycles of one f32 sum of @count, in place or not. */
static int sum_cycles(FIXTURE_DATA(coll) *self, uint64_t count,
		      bool in_place, uint64_t *cycles)
{
	struct accel_coll *coll = NULL;
	struct vectors v = { 0 };
	int ret = vectors_make(self, &v, TSR_DTYPE_F32, count, count, 60,
			       in_place);

	if (!ret)
		ret = accel_all_reduce(self->comm, v.send, v.recv, count,
				       TSR_DTYPE_F32, ACCEL_REDUCE_SUM, &coll);
	if (!ret)
		ret = accel_coll_wait(coll, TSR_TEST_WAIT_NS);
	*cycles = accel_coll_cycles(coll);
	accel_coll_destroy(coll);
	vectors_free(&v, self->n);
	return ret;
}

/*
 * An out-of-place all-reduce reads each piece of its input where it lies,
 * by the first send or reduction of the piece, rather than copying the
 * whole input into the output first: the chips spend no more modeled time
 * on it than in place (the copy cost 5.6% at 64 KiB).  128 KiB: above the
 * one-job-a-chip all-reduce's limit on slices of twos.  After a first
 * call: a communicator's first call has no earlier one to wait for, and
 * is shorter.  In one process: split across VMs, when each host's chips
 * start a call moves its modeled cycles by about as much (1.1% on 4x4).
 */
TEST_F_TIMEOUT(coll, out_of_place_all_reduce_copies_no_input, COLL_TEST_TIMEOUT)
{
	uint64_t first, in_place, out_of_place;

	if (!whole_slice(self))
		SKIP(return, "the slice spans other VMs, whose start times move the cycles");
	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 31, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	ASSERT_EQ(ACCEL_OK, sum_cycles(self, 32768, true, &first));
	ASSERT_EQ(ACCEL_OK, sum_cycles(self, 32768, false, &out_of_place));
	ASSERT_EQ(ACCEL_OK, sum_cycles(self, 32768, true, &in_place));
	TH_LOG("128 KiB: %llu cycles in place, %llu out of place",
	       (unsigned long long)in_place, (unsigned long long)out_of_place);
	EXPECT_LT(0, in_place);
	EXPECT_LE(out_of_place, in_place + in_place / 200);
}

/*
 * The process's ioctls, counted by number while @counting: the test's own
 * ioctl() comes before the C library's, for libaccel and libdrm too.
 */
static bool counting;
static unsigned int ioctls[256];
/* Calls in flight at once in the tests of a call's host path. */
#define IN_FLIGHT	6

int ioctl(int fd, unsigned long request, ...)
{
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (__atomic_load_n(&counting, __ATOMIC_RELAXED))
		__atomic_fetch_add(&ioctls[_IOC_NR(request)], 1, __ATOMIC_RELAXED);
	return syscall(SYS_ioctl, fd, request, arg);
}

/*
 * A call's host path (collectives.md, "Measuring"): each local chip's jobs,
 * one per queue or more, go in one submission, and the wait polls their
 * sync files rather than asking each syncobj at every wake-up.
 */
TEST_F_TIMEOUT(coll, a_call_submits_once_per_chip_and_waits_on_no_syncobj,
	       COLL_TEST_TIMEOUT)
{
	uint64_t count = 1 << 20;	/* 4 MiB of f32 */
	struct expect e = { ACCEL_REDUCE_SUM, 60, 0, 0 };
	struct vectors v = { 0 };

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 21, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	ASSERT_EQ(ACCEL_OK, vectors_make(self, &v, TSR_DTYPE_F32, count, count,
					 60, false));
	memset(ioctls, 0, sizeof(ioctls));
	__atomic_store_n(&counting, true, __ATOMIC_SEQ_CST);
	EXPECT_EQ(ACCEL_OK, accel_all_reduce(self->comm, v.send, v.recv, count,
					     TSR_DTYPE_F32, ACCEL_REDUCE_SUM,
					     NULL));
	__atomic_store_n(&counting, false, __ATOMIC_SEQ_CST);
	EXPECT_EQ(self->n, ioctls[_IOC_NR(DRM_IOCTL_TESSERA_SUBMIT_BATCH)] +
			   ioctls[_IOC_NR(DRM_IOCTL_TESSERA_SUBMIT)]);
	EXPECT_EQ(0, ioctls[_IOC_NR(DRM_IOCTL_SYNCOBJ_WAIT)]);
	EXPECT_TRUE(vectors_check(_metadata, self, &v, TSR_DTYPE_F32, count,
				  want_all_reduce, &e));
	vectors_free(&v, self->n);
}

/* Start @k all-reduces of @v one after the other, then wait for them. */
static int all_reduces_in_flight(FIXTURE_DATA(coll) *self, struct vectors *v,
				 uint64_t count, unsigned int k)
{
	struct accel_coll *calls[IN_FLIGHT] = { 0 };
	unsigned int i;
	int ret = ACCEL_OK, err;

	for (i = 0; i < k && !ret; i++)
		ret = accel_all_reduce(self->comm, v->send, v->recv, count,
				       TSR_DTYPE_F32, ACCEL_REDUCE_SUM, &calls[i]);
	for (i = 0; i < k && calls[i]; i++) {
		err = accel_coll_wait(calls[i], ACCEL_TIMEOUT_INFINITE);
		ret = ret ? ret : err;
		accel_coll_destroy(calls[i]);
	}
	return ret;
}

/*
 * Calls started one after the other without a wait (nccl-tests' loop,
 * tessera-collbench): once as many have been in flight before, the next
 * ones find command buffers and syncobjs whose jobs have ended, rather
 * than asking the driver about every busy copy (78 JOB_STATUS a call per
 * host once) and making new ones.
 */
TEST_F_TIMEOUT(coll, calls_in_flight_reuse_command_buffers_and_syncobjs,
	       COLL_TEST_TIMEOUT)
{
	uint64_t count = 1 << 16;	/* 256 KiB of f32 */
	struct expect e = { ACCEL_REDUCE_SUM, 62, 0, 0 };
	struct vectors v = { 0 };

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 30, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	ASSERT_EQ(ACCEL_OK, vectors_make(self, &v, TSR_DTYPE_F32, count, count,
					 62, false));
	ASSERT_EQ(ACCEL_OK, all_reduces_in_flight(self, &v, count, IN_FLIGHT));
	memset(ioctls, 0, sizeof(ioctls));
	__atomic_store_n(&counting, true, __ATOMIC_SEQ_CST);
	EXPECT_EQ(ACCEL_OK, all_reduces_in_flight(self, &v, count, IN_FLIGHT));
	__atomic_store_n(&counting, false, __ATOMIC_SEQ_CST);
	EXPECT_EQ(0, ioctls[_IOC_NR(DRM_IOCTL_SYNCOBJ_CREATE)]);
	EXPECT_EQ(0, ioctls[_IOC_NR(DRM_IOCTL_SYNCOBJ_DESTROY)]);
	EXPECT_EQ(0, ioctls[_IOC_NR(DRM_IOCTL_TESSERA_BO_CREATE)]);
	/* One a job, asked when its sync file signalled: a stream a queue. */
	EXPECT_GE(IN_FLIGHT * self->n * accel_comm_colours(self->comm) * 2,
		  ioctls[_IOC_NR(DRM_IOCTL_TESSERA_JOB_STATUS)]);
	EXPECT_TRUE(vectors_check(_metadata, self, &v, TSR_DTYPE_F32, count,
				  want_all_reduce, &e));
	vectors_free(&v, self->n);
}

TEST_F(coll, bad_calls_are_refused_and_the_communicator_goes_on)
{
	struct accel_buffer *host[MAX_CHIPS] = { 0 };
	struct vectors v = { 0 };
	unsigned int i;

	ASSERT_EQ(ACCEL_OK, open_comm(self, WINDOW_BASE + 6, ACCEL_COLL_PINCER));
	self->size = accel_comm_size(self->comm);
	ASSERT_EQ(ACCEL_OK, vectors_make(self, &v, TSR_DTYPE_F32, 64, 64, 60, false));
	for (i = 0; i < self->n; i++)
		ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev[i], 4096,
							ACCEL_PLACEMENT_HOST, &host[i]));

	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_all_reduce(self->comm, v.send, v.recv, 0, TSR_DTYPE_F32,
				   ACCEL_REDUCE_SUM, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_all_reduce(self->comm, NULL, v.recv, 64, TSR_DTYPE_F32,
				   ACCEL_REDUCE_SUM, NULL));
	EXPECT_EQ(ACCEL_ERR_BAD_DTYPE,
		  accel_all_reduce(self->comm, v.send, v.recv, 64, TSR_DTYPE_I8,
				   ACCEL_REDUCE_SUM, NULL));
	EXPECT_EQ(ACCEL_ERR_BAD_OP,
		  accel_all_reduce(self->comm, v.send, v.recv, 64, TSR_DTYPE_F32,
				   (enum accel_reduce_op)9, NULL));
	/* Buffers are whole pages: 4096 bytes hold 1024 elements. */
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_all_reduce(self->comm, v.send, v.recv, 1025, TSR_DTYPE_F32,
				   ACCEL_REDUCE_SUM, NULL));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_all_reduce(self->comm, host, v.recv, 64, TSR_DTYPE_F32,
				   ACCEL_REDUCE_SUM, NULL));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_all_gather(self->comm, v.send, v.recv, 1024, TSR_DTYPE_F32,
				   NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_reduce_scatter(self->comm, v.send, v.send, 1,
				       TSR_DTYPE_F32, ACCEL_REDUCE_SUM, NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_all_to_all(self->comm, v.send, v.send, 1, TSR_DTYPE_F32,
				   NULL));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_all_to_all(self->comm, v.send, v.recv, 1024, TSR_DTYPE_F32,
				   NULL));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_coll_wait(NULL, 0));
	/* Nothing was sent: the next call meets the other chips' as usual. */
	EXPECT_TRUE(all_reduce_once(_metadata, self, TSR_DTYPE_F32,
				    ACCEL_REDUCE_SUM, 64, 61, false));
	for (i = 0; i < self->n; i++)
		accel_buffer_destroy(host[i]);
	vectors_free(&v, self->n);
}

TEST_F(coll, a_communicator_refuses_bad_options)
{
	struct accel_comm_opts opts = { .slot_bytes = 1000 };
	struct accel_comm *comm = NULL;

	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_comm_create(self->dev, self->n, &opts, &comm));
	opts = (struct accel_comm_opts){ .algo = (enum accel_coll_algo)7 };
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_comm_create(self->dev, self->n, &opts, &comm));
	opts = (struct accel_comm_opts){ .window_id = 4096 };
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_comm_create(self->dev, self->n, &opts, &comm));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_comm_create(self->dev, 0, NULL, &comm));
	if (self->n > 1) {
		struct accel_device *twice[2] = { self->dev[0], self->dev[0] };

		EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
			  accel_comm_create(twice, 2, NULL, &comm));
	}
	EXPECT_EQ(NULL, comm);
}

TEST_HARNESS_MAIN
