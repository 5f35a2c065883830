// SPDX-License-Identifier: GPL-2.0
/*
 * libaccel's ICI calls in a slice: the slice and ports in the device
 * info, link info against the driver's, windows and their misuse, remote
 * writes that land with their semaphore, and the job errors of refused
 * and unroutable writes.
 *
 * Runs in a VM booted with tessera-vm --topology; on chips without links
 * every test skips.  When the slice is split across VMs (--share), only
 * the links between two chips of this VM are checked, as the other VMs
 * may come and go; the writes go from chip 0 to a neighbour in this VM.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "kselftest_harness.h"
#include "libaccel_util.h"
#include "tessera_util.h"

#include <accel/accel.h>

#define KIB 1024ull
#define MAX_CHIPS 16
#define WINDOW_ID 9
#define WINDOW_KEY 0x11b0cce1ull
#define WINDOW_SIZE (256 * KIB)
/* The semaphore: the window's last word. */
#define SEM_OFFSET (WINDOW_SIZE - 8)
/* How long the links may take to come up: within the harness's 30 s. */
#define LINK_WAIT_NS (20ull * 1000 * 1000 * 1000)

FIXTURE(slice) {
	struct accel_device *dev[MAX_CHIPS];
	struct accel_device_info info[MAX_CHIPS];
	unsigned int n;
	struct leak_snapshot leaks;
};

static struct accel_coords coords_of(const struct accel_device_info *info)
{
	struct accel_coords c = { { 0 } };

	accel_coords_from_index(info->topology, info->slice_index, &c);
	return c;
}

/* The coordinates port @port of a chip at @c faces; false at a mesh's edge. */
static bool facing(const struct accel_device_info *info, struct accel_coords c,
		   unsigned int port, struct accel_coords *out)
{
	unsigned int d = TSR_ICI_PORT_DIM(port), size = info->topology[d];
	int x = c.c[d] + (port % 2 ? -1 : 1);

	if (x < 0 || x >= (int)size) {
		if (!(info->wrap & (1u << d)))
			return false;
		x = (x + size) % size;
	}
	*out = c;
	out->c[d] = x;
	return true;
}

/* The chip of this VM port @port of chip @i faces, or -1. */
static int local_peer(FIXTURE_DATA(slice) *self, unsigned int i,
		      unsigned int port)
{
	const struct accel_device_info *info = &self->info[i];
	struct accel_coords want, c;
	unsigned int j;

	if (!(info->ports_wired & (1u << port)) ||
	    !facing(info, coords_of(info), port, &want))
		return -1;
	for (j = 0; j < self->n; j++) {
		c = coords_of(&self->info[j]);
		if (!memcmp(&c, &want, sizeof(c)))
			return j;
	}
	return -1;
}

/* Whether every link between chip @i and a chip of this VM is up. */
static bool local_links_up(FIXTURE_DATA(slice) *self, unsigned int i)
{
	unsigned int p;

	for (p = 0; p < self->info[i].ici_ports; p++)
		if (local_peer(self, i, p) >= 0 &&
		    self->info[i].ports[p].state != TSR_ICI_STATE_UP)
			return false;
	return true;
}

/* Until every link between chips of this VM is up; uevents say when. */
static bool wait_links_up(FIXTURE_DATA(slice) *self)
{
	uint64_t end = tsr_now_ns() + LINK_WAIT_NS;
	int uevents = tsr_uevent_socket();
	bool up = false;
	unsigned int i;

	while (!up && tsr_now_ns() < end) {
		for (i = 0; i < self->n; i++)
			if (accel_device_get_info(self->dev[i], &self->info[i]))
				break;
		for (i = 0; i < self->n && local_links_up(self, i); i++)
			;
		up = i == self->n;
		if (!up && uevents >= 0)
			tsr_uevent_wait(uevents, "TESSERA_LINK_STATE=up", NULL, 1000);
	}
	if (uevents >= 0)
		close(uevents);
	return up;
}

FIXTURE_SETUP(slice)
{
	unsigned int i;

	ASSERT_EQ(ACCEL_OK, accel_device_count(&self->n));
	ASSERT_LE(1, self->n);
	ASSERT_GE(MAX_CHIPS, self->n);
	for (i = 0; i < self->n; i++) {
		ASSERT_EQ(ACCEL_OK, accel_device_open(i, &self->dev[i]));
		ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev[i],
							  &self->info[i]));
		if (!self->info[i].ports_wired)
			SKIP(return, "chip %u has no links: boot the VM with tessera-vm --topology",
			     i);
	}
	ASSERT_TRUE(wait_links_up(self)) TH_LOG("links did not come up in time");
	leak_snapshot(self->dev[0], &self->leaks);
}

FIXTURE_TEARDOWN(slice)
{
	unsigned int i;

	if (self->dev[0])
		leak_expect_none(_metadata, self->dev[0], &self->leaks);
	for (i = 0; i < self->n; i++)
		accel_device_close(self->dev[i]);
}

/* Run @cb on @dev and wait; accel_job_wait()'s result, the status in @st. */
static int run(struct accel_device *dev, struct accel_cmdbuf *cb,
	       struct accel_job_status *st)
{
	struct accel_job *job;
	int ret;

	ret = accel_submit(dev, cb, NULL, &job);
	if (ret)
		return ret;
	ret = accel_job_wait(job, TSR_TEST_WAIT_NS);
	if (st)
		accel_job_status(job, st);
	accel_job_destroy(job);
	return ret;
}

/* ------------------------------------------------------------ the slice */

TEST_F(slice, device_info_tells_the_slice_and_every_port)
{
	unsigned int i, p, d;

	for (i = 0; i < self->n; i++) {
		const struct accel_device_info *info = &self->info[i];
		struct accel_coords me = coords_of(info), peer;
		uint32_t index;

		EXPECT_EQ(self->info[0].slice_id, info->slice_id);
		EXPECT_EQ(DRM_TESSERA_MAX_WINDOWS, info->max_windows);
		EXPECT_LT(0, info->ici_link_latency_ns);
		for (d = 0; d < 3; d++) {
			EXPECT_EQ(info->coords[d], me.c[d]);
		}
		ASSERT_EQ(ACCEL_OK, accel_coords_to_index(info->topology, me, &index));
		EXPECT_EQ(info->slice_index, index);
		for (p = 0; p < info->ici_ports; p++) {
			const struct accel_ici_port *port = &info->ports[p];

			if (!(info->ports_wired & (1u << p)))
				continue;
			/* Every wired port faces a chip: the wiring follows the slice. */
			ASSERT_TRUE(facing(info, me, p, &peer)) TH_LOG("chip %u port %u", i, p);
			if (local_peer(self, i, p) < 0)
				continue;
			EXPECT_EQ(TSR_ICI_STATE_UP, port->state);
			EXPECT_EQ(0, memcmp(&peer, &port->peer, sizeof(peer)))
				TH_LOG("chip %u port %u faces %u,%u,%u", i, p,
				       port->peer.c[0], port->peer.c[1], port->peer.c[2]);
			EXPECT_EQ(TSR_ICI_PORT_OPPOSITE(p), port->peer_port);
			EXPECT_EQ(info->slice_id, port->peer_slice);
		}
	}
}

/* libaccel's view lies between two reads of the driver's around it. */
TEST_F(slice, link_info_agrees_with_the_driver)
{
	const struct accel_device_info *info = &self->info[0];
	int fd = accel_device_fd(self->dev[0]);
	unsigned int p;

	for (p = 0; p < info->ici_ports; p++) {
		struct drm_tessera_link_info before = { .port = p }, after = { .port = p };
		struct accel_link_info li;

		ASSERT_EQ(0, tsr_ioctl(fd, DRM_IOCTL_TESSERA_LINK_INFO, &before));
		ASSERT_EQ(ACCEL_OK, accel_link_get_info(self->dev[0], p, &li));
		ASSERT_EQ(0, tsr_ioctl(fd, DRM_IOCTL_TESSERA_LINK_INFO, &after));
		EXPECT_EQ(after.info.state, li.port.state);
		EXPECT_EQ(0, memcmp(after.info.peer_coords, li.port.peer.c, 3));
		EXPECT_EQ(after.info.peer_port, li.port.peer_port);
		EXPECT_LE(before.counters[DRM_TESSERA_LINK_FRAMES_TX], li.frames_tx);
		EXPECT_GE(after.counters[DRM_TESSERA_LINK_FRAMES_TX], li.frames_tx);
		EXPECT_LE(before.counters[DRM_TESSERA_LINK_BYTES_RX], li.bytes_rx);
		EXPECT_GE(after.counters[DRM_TESSERA_LINK_BYTES_RX], li.bytes_rx);
		EXPECT_EQ(after.counters[DRM_TESSERA_LINK_PROTOCOL_ERRORS],
			  li.protocol_errors);
		if (local_peer(self, 0, p) >= 0) {
			EXPECT_LT(0, li.frames_rx) TH_LOG("port %u trained", p);
		}
	}
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_link_get_info(self->dev[0], info->ici_ports, &(struct accel_link_info){ 0 }));
}

/* ------------------------------------------------------------ windows */

TEST_F(slice, windows_open_with_the_id_and_key_asked_for)
{
	struct accel_window_opts fixed = {
		.flags = ACCEL_WINDOW_FIXED_ID | ACCEL_WINDOW_FIXED_KEY,
		.id = WINDOW_ID, .key = WINDOW_KEY,
	};
	struct accel_window *win, *other, *any;
	struct accel_buffer *buf;

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev[0], 2 * WINDOW_SIZE,
						ACCEL_PLACEMENT_HOST, &buf));
	ASSERT_EQ(ACCEL_OK, accel_window_open(self->dev[0], buf, 4 * KIB,
					      WINDOW_SIZE, ACCEL_WINDOW_WRITE,
					      &fixed, &win));
	EXPECT_EQ(WINDOW_ID, accel_window_id(win));
	EXPECT_EQ(WINDOW_KEY, accel_window_key(win));
	EXPECT_EQ(accel_buffer_device_va(buf) + 4 * KIB,
		  accel_window_device_va(win));
	EXPECT_EQ(ACCEL_ERR_BUSY,
		  accel_window_open(self->dev[0], buf, 0, WINDOW_SIZE,
				    ACCEL_WINDOW_WRITE, &fixed, &other));
	/* Without options: another id, a random key. */
	ASSERT_EQ(ACCEL_OK, accel_window_open(self->dev[0], buf, 0, 4 * KIB,
					      ACCEL_WINDOW_READ | ACCEL_WINDOW_WRITE,
					      NULL, &any));
	EXPECT_NE(WINDOW_ID, accel_window_id(any));
	EXPECT_NE(0, accel_window_key(any));
	/* The windows hold the buffer: it outlives its handle. */
	accel_buffer_destroy(buf);
	accel_window_close(any);
	accel_window_close(win);
	/* Closed, the id is free again. */
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev[0], WINDOW_SIZE,
						ACCEL_PLACEMENT_HBM, &buf));
	ASSERT_EQ(ACCEL_OK, accel_window_open(self->dev[0], buf, 0, WINDOW_SIZE,
					      ACCEL_WINDOW_WRITE, &fixed, &win));
	accel_window_close(win);
	accel_buffer_destroy(buf);
}

TEST_F(slice, window_misuse_is_refused)
{
	struct accel_window_opts opts = { .flags = ACCEL_WINDOW_FIXED_ID,
					  .id = DRM_TESSERA_MAX_WINDOWS };
	struct accel_window_opts no_key = { .flags = ACCEL_WINDOW_FIXED_KEY };
	struct accel_window_opts odd = { .flags = 0x100 };
	struct accel_device *dev = self->dev[0];
	struct accel_buffer *buf, *elsewhere = NULL;
	struct accel_window *win = NULL;

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(dev, 8 * KIB,
						ACCEL_PLACEMENT_HOST, &buf));
	EXPECT_EQ(ACCEL_ERR_OUT_OF_BOUNDS,
		  accel_window_open(dev, buf, 4 * KIB, 8 * KIB,
				    ACCEL_WINDOW_WRITE, NULL, &win));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_window_open(dev, buf, 0, 0, ACCEL_WINDOW_WRITE, NULL, &win));
	EXPECT_EQ(ACCEL_ERR_BAD_FLAGS,
		  accel_window_open(dev, buf, 0, 4 * KIB, 0, NULL, &win));
	EXPECT_EQ(ACCEL_ERR_BAD_FLAGS,
		  accel_window_open(dev, buf, 0, 4 * KIB, ACCEL_WINDOW_WRITE,
				    &odd, &win));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_window_open(dev, buf, 0, 4 * KIB, ACCEL_WINDOW_WRITE,
				    &opts, &win));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_window_open(dev, buf, 0, 4 * KIB, ACCEL_WINDOW_WRITE,
				    &no_key, &win));
	if (self->n > 1) {
		ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev[1], 4 * KIB,
							ACCEL_PLACEMENT_HOST,
							&elsewhere));
		EXPECT_EQ(ACCEL_ERR_WRONG_DEVICE,
			  accel_window_open(dev, elsewhere, 0, 4 * KIB,
					    ACCEL_WINDOW_WRITE, NULL, &win));
	}
	EXPECT_EQ(NULL, win);
	accel_buffer_destroy(elsewhere);
	accel_buffer_destroy(buf);
}

/* ------------------------------------------------------------ remote writes */

/* Chip 0 of this VM and a neighbour here, with a window open. */
struct pair {
	struct accel_device *writer, *target;
	struct accel_coords to;
	struct accel_buffer *src, *inbox;
	struct accel_window *win;
};

static bool pair_open(struct __test_metadata *_metadata,
		      FIXTURE_DATA(slice) *self, struct pair *p)
{
	struct accel_window_opts opts = {
		.flags = ACCEL_WINDOW_FIXED_ID | ACCEL_WINDOW_FIXED_KEY,
		.id = WINDOW_ID, .key = WINDOW_KEY,
	};

	unsigned int port;
	int peer = -1;

	memset(p, 0, sizeof(*p));
	for (port = 0; port < self->info[0].ici_ports && peer < 0; port++)
		peer = local_peer(self, 0, port);
	if (peer < 0)
		return false;
	p->writer = self->dev[0];
	p->target = self->dev[peer];
	p->to = coords_of(&self->info[peer]);
	EXPECT_EQ(ACCEL_OK, accel_buffer_create(p->writer, WINDOW_SIZE,
						ACCEL_PLACEMENT_HOST, &p->src));
	EXPECT_EQ(ACCEL_OK, accel_buffer_create(p->target, WINDOW_SIZE,
						ACCEL_PLACEMENT_HOST, &p->inbox));
	EXPECT_EQ(ACCEL_OK, accel_window_open(p->target, p->inbox, 0,
					      WINDOW_SIZE, ACCEL_WINDOW_WRITE,
					      &opts, &p->win));
	return p->win != NULL;
}

static void pair_close(struct pair *p)
{
	accel_window_close(p->win);
	accel_buffer_destroy(p->inbox);
	accel_buffer_destroy(p->src);
}

TEST_F(slice, a_remote_write_lands_before_its_semaphore)
{
	enum { ROWS = 8, ROW_BYTES = 3000, SRC_STRIDE = 4096, DST_STRIDE = 5000 };
	struct accel_ici_write w = {
		.window = WINDOW_ID, .key = WINDOW_KEY, .src_stride = SRC_STRIDE,
		.offset = 100, .dst_stride = DST_STRIDE, .rows = ROWS,
		.row_bytes = ROW_BYTES, .flags = TSR_ICI_WRITE_SEM,
		.sem_offset = SEM_OFFSET, .sem_add = 1,
	};
	struct accel_cmdbuf *send, *wait;
	struct accel_submit_opts opts = { 0 };
	struct accel_job *waiter;
	uint8_t *src, *in;
	uint32_t seed = 7;
	struct pair p;
	unsigned int r;
	uint64_t k;

	if (!pair_open(_metadata, self, &p))
		SKIP(return, "chip 0 has no neighbour in this VM");
	w.dst = p.to;
	w.src_buffer = p.src;
	ASSERT_EQ(ACCEL_OK, accel_buffer_map(p.src, (void **)&src));
	ASSERT_EQ(ACCEL_OK, accel_buffer_map(p.inbox, (void **)&in));
	for (k = 0; k < WINDOW_SIZE; k++)
		src[k] = rnd(&seed);
	memset(in, 0xee, WINDOW_SIZE);
	memset(in + SEM_OFFSET, 0, 8);

	/* The target waits for the data's semaphore and for the increment alone. */
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(p.target, &wait));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_sem_wait(wait, p.inbox, SEM_OFFSET, 2));
	ASSERT_EQ(ACCEL_OK, accel_submit(p.target, wait, &opts, &waiter));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(p.writer, &send));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_ici_write(send, &w));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_ici_sem_inc(send, p.to, WINDOW_ID,
						     WINDOW_KEY, SEM_OFFSET, 1));
	EXPECT_EQ(ACCEL_OK, run(p.writer, send, NULL));
	EXPECT_EQ(ACCEL_OK, accel_job_wait(waiter, TSR_TEST_WAIT_NS));

	for (r = 0; r < ROWS; r++) {
		ASSERT_EQ(0, memcmp(src + r * SRC_STRIDE, in + 100 + r * DST_STRIDE,
				    ROW_BYTES)) TH_LOG("row %u", r);
		if (r + 1 < ROWS) {
			ASSERT_EQ(0xee, in[100 + r * DST_STRIDE + ROW_BYTES])
				TH_LOG("the gap after row %u was written", r);
		}
	}
	EXPECT_EQ(0xee, in[99]);
	EXPECT_EQ(2, *(volatile uint64_t *)(in + SEM_OFFSET));
	accel_job_destroy(waiter);
	accel_cmdbuf_destroy(send);
	accel_cmdbuf_destroy(wait);
	pair_close(&p);
}

TEST_F(slice, a_write_with_the_wrong_key_fails_with_remote_access)
{
	struct accel_job_status st;
	struct accel_cmdbuf *cb;
	uint8_t *in;
	struct pair p;
	uint64_t k;

	if (!pair_open(_metadata, self, &p))
		SKIP(return, "chip 0 has no neighbour in this VM");
	ASSERT_EQ(ACCEL_OK, accel_buffer_map(p.inbox, (void **)&in));
	memset(in, 0xee, WINDOW_SIZE);
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(p.writer, &cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_copy(cb, p.src, 0, p.src, 4096, 64));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_ici_write(cb, &(struct accel_ici_write){
		.dst = p.to, .window = WINDOW_ID, .key = WINDOW_KEY + 1,
		.src_buffer = p.src, .rows = 1, .row_bytes = 4096,
		.flags = TSR_ICI_WRITE_SEM, .sem_offset = SEM_OFFSET, .sem_add = 1,
	}));
	EXPECT_EQ(ACCEL_ERR_REMOTE_ACCESS, run(p.writer, cb, &st));
	EXPECT_EQ(ACCEL_JOB_FAILED, st.state);
	EXPECT_EQ(-EACCES, st.fence_error);
	EXPECT_STREQ("REMOTE_ACCESS", st.chip_error_name);
	EXPECT_EQ(2, st.failed_command);
	/* A closed window refuses the same way. */
	accel_window_close(p.win);
	p.win = NULL;
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_reset(cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_ici_sem_inc(cb, p.to, WINDOW_ID,
						     WINDOW_KEY, SEM_OFFSET, 1));
	EXPECT_EQ(ACCEL_ERR_REMOTE_ACCESS, run(p.writer, cb, &st));
	/* Neither wrote a byte, the semaphore included. */
	for (k = 0; k < WINDOW_SIZE; k++) {
		ASSERT_EQ(0xee, in[k]) TH_LOG("byte %llu written",
					      (unsigned long long)k);
	}
	accel_cmdbuf_destroy(cb);
	pair_close(&p);
}

TEST_F(slice, a_chip_outside_the_slice_is_refused_by_the_builder)
{
	const struct accel_device_info *info = &self->info[0];
	struct accel_coords out = { { 0 } };
	struct accel_cmdbuf *cb;
	char want[64];

	out.c[0] = info->topology[0];
	snprintf(want, sizeof(want), "dst (%u,0,0) is not in this chip's %ux%ux%u slice",
		 info->topology[0], info->topology[0], info->topology[1],
		 info->topology[2]);
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(self->dev[0], &cb));
	EXPECT_EQ(ACCEL_ERR_NO_ROUTE,
		  accel_cmdbuf_ici_sem_inc(cb, out, 0, 1, 0, 1));
	EXPECT_NE(NULL, strstr(accel_cmdbuf_last_error(cb), want))
		TH_LOG("message: %s", accel_cmdbuf_last_error(cb));
	EXPECT_EQ(0, accel_cmdbuf_count(cb));
	accel_cmdbuf_destroy(cb);
}

TEST_F(slice, the_slice_and_its_local_chips_are_found_by_coordinates)
{
	struct accel_slice slice;
	struct accel_coords outside = { { 0 } };
	struct accel_device *dev;
	unsigned int i, j;

	ASSERT_EQ(ACCEL_OK, accel_slice_get(&slice));
	ASSERT_EQ(self->info[0].slice_id, slice.slice_id);
	ASSERT_EQ(self->info[0].slice_chips, slice.chips);
	ASSERT_EQ(self->info[0].wrap, slice.wrap);
	ASSERT_EQ(0, memcmp(self->info[0].topology, slice.topology,
			    sizeof(slice.topology)));
	ASSERT_EQ(self->n, slice.local_count);
	for (i = 0; i < slice.local_count; i++) {
		const struct accel_slice_chip *c = &slice.local[i];
		const struct accel_device_info *in = &self->info[c->device];
		struct accel_device_info info;

		/* In slice order, each the device it names. */
		if (i)
			ASSERT_LT(slice.local[i - 1].index, c->index);
		ASSERT_EQ(in->slice_index, c->index);
		for (j = 0; j < TSR_ICI_MAX_DIMS; j++)
			ASSERT_EQ(in->coords[j], c->coords.c[j]);
		ASSERT_EQ(ACCEL_OK, accel_device_open_coords(c->coords, &dev));
		ASSERT_EQ(ACCEL_OK, accel_device_get_info(dev, &info));
		ASSERT_STREQ(in->pci_address, info.pci_address);
		accel_device_close(dev);
	}
	/* Outside the slice, and (when the slice is split) another VM's chip. */
	outside.c[0] = slice.topology[0];
	ASSERT_EQ(ACCEL_ERR_NO_DEVICE, accel_device_open_coords(outside, &dev));
	if (slice.local_count < slice.chips) {
		for (i = 0; i < slice.chips; i++) {
			for (j = 0; j < slice.local_count; j++)
				if (slice.local[j].index == i)
					break;
			if (j == slice.local_count)
				break;
		}
		ASSERT_EQ(ACCEL_OK, accel_coords_from_index(slice.topology, i,
							    &outside));
		ASSERT_EQ(ACCEL_ERR_NO_DEVICE,
			  accel_device_open_coords(outside, &dev));
	}
	ASSERT_EQ(ACCEL_ERR_INVALID_ARGUMENT, accel_slice_get_sized(NULL, 0));
}

TEST_HARNESS_MAIN
