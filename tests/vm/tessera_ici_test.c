// SPDX-License-Identifier: GPL-2.0
/*
 * ICI in a slice: the chips' identities and ports, windows, remote writes
 * between every pair of chips (over one hop or two, with link faults
 * injected), refused writes, unreachable chips and links that go down.
 *
 * Runs in a VM booted with tessera-vm --topology (run-checks' "ici"
 * suite); on chips without links every test skips.  When the slice is
 * split across VMs (tessera-vm --share), the exchange tests talk to the
 * chips of the other VMs, which run this program too; the tests that need
 * both ends of a link in this VM skip.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include "kselftest_harness.h"
#include "tessera_util.h"

#define KIB 1024ull
#define MIB (1024ull * 1024)
#define MAX_CHIPS 16
#define PARAMS "/sys/module/tessera/parameters/"

/* The exchange: every chip writes a slot of every chip's window. */
#define ROWS		64
#define ROW_BYTES	16000u		/* not a multiple of a frame's data */
#define STRIDE		(16 * KIB)
#define SLOT		(ROWS * STRIDE)
#define ROUNDS		4
#define WINDOW_ID	5
#define WINDOW_KEY	0x7e55e7a1c1ull
#define FILL		0xeeeeeeeeu
/* Windows of the other VMs may not be open yet: retry this long. */
#define SPLIT_RETRY_NS	(60ull * 1000 * 1000 * 1000)

struct chip {
	int fd;
	char pci[32];
	struct tsr_info info;
	struct tsr_bo window;	/* slots, then one semaphore per round */
	struct tsr_bo src;
	struct tsr_cmds c;
	uint32_t sync;
};

static unsigned int count_chips(void)
{
	unsigned int n = 0;
	char path[64];

	for (;;) {
		snprintf(path, sizeof(path), "/dev/accel/accel%u", n);
		if (access(path, F_OK))
			return n;
		n++;
	}
}

static uint64_t window_size(const struct tsr_info *info)
{
	return (uint64_t)ROUNDS * info->slice_chips * SLOT + 4 * KIB;
}

static uint64_t sem_offset(const struct tsr_info *info, unsigned int r)
{
	return (uint64_t)ROUNDS * info->slice_chips * SLOT + 8 * r;
}

static uint64_t slot_offset(const struct tsr_info *info,
			    unsigned int round, unsigned int src)
{
	return ((uint64_t)round * info->slice_chips + src) * SLOT;
}

/* Byte @k of what chip @src sends chip @dst in @round. */
static uint8_t pattern(unsigned int src, unsigned int dst, unsigned int round,
		       uint64_t k)
{
	uint64_t x = (k + 1) * 0x9e3779b97f4a7c15ull ^
		     ((uint64_t)src << 40 | (uint64_t)dst << 32 | round);

	x ^= x >> 29;
	return x * 0xbf58476d1ce4e5b9ull >> 56;
}

/* The chip a port faces, by slice index; -1 at a mesh's edge. */
static int neighbour(const struct tsr_info *info, unsigned int port)
{
	unsigned int d = port / 2, size = info->topology[d];
	int c[3] = { info->coords[0], info->coords[1], info->coords[2] };

	if (size == 1)
		return -1;
	c[d] += port % 2 ? -1 : 1;
	if (c[d] < 0 || c[d] >= (int)size) {
		if (!(info->wrap & (1u << d)))
			return -1;
		c[d] = (c[d] + size) % size;
	}
	return c[0] + info->topology[0] * (c[1] + info->topology[1] * c[2]);
}

/*
 * Run @ch's command buffer on queue 0 and wait for it; the job's fence
 * error (0 or -errno), with its chip error in @chip_error if not NULL.
 */
static int run_job(struct chip *ch, const struct tsr_bo *const *bos,
		   unsigned int nbos, uint32_t *chip_error)
{
	struct drm_tessera_job_status st;
	uint64_t seq;
	int ret;

	ret = tsr_submit(ch->fd, &ch->c, 0, bos, nbos, ch->sync, &seq);
	ch->c.len = 0;
	if (ret)
		return ret;
	ret = tsr_wait(ch->fd, ch->sync, TSR_TEST_WAIT_NS);
	drmSyncobjReset(ch->fd, &ch->sync, 1);
	if (ret)
		return ret;
	ret = tsr_job_status(ch->fd, seq, &st);
	if (ret)
		return ret;
	if (chip_error)
		*chip_error = st.error;
	return st.fence_error;
}

static int window_open(int fd, uint32_t handle, uint64_t offset,
		       uint64_t size, uint32_t flags, uint32_t id, uint64_t key,
		       struct drm_tessera_window_open *out)
{
	struct drm_tessera_window_open wo = {
		.handle = handle, .flags = flags, .offset = offset,
		.size = size, .id = id, .key = key,
	};
	int ret = tsr_ioctl(fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo);

	if (out)
		*out = wo;
	return ret;
}

static int window_close(int fd, uint32_t id, uint32_t flags)
{
	struct drm_tessera_window_close wc = { .id = id, .flags = flags };

	return tsr_ioctl(fd, DRM_IOCTL_TESSERA_WINDOW_CLOSE, &wc);
}

static int link_info(int fd, unsigned int port,
		     struct drm_tessera_link_info *li)
{
	memset(li, 0, sizeof(*li));
	li->port = port;
	return tsr_ioctl(fd, DRM_IOCTL_TESSERA_LINK_INFO, li);
}

static uint64_t port_counter(struct chip *ch, unsigned int port,
			     unsigned int counter)
{
	struct drm_tessera_link_info li;

	return link_info(ch->fd, port, &li) ? 0 : li.counters[counter];
}

static int port_debugfs(struct chip *ch, unsigned int port, const char *name,
			unsigned long long value)
{
	char file[64];

	snprintf(file, sizeof(file), "ici%u/%s", port, name);
	return tsr_debugfs_write(ch->pci, file, value);
}

static bool all_wired_up(struct chip *ch)
{
	unsigned int p;

	if (tsr_info(ch->fd, &ch->info))
		return false;
	for (p = 0; p < ch->info.ici_ports; p++)
		if ((ch->info.ports_wired & (1u << p)) &&
		    ch->info.ports[p].state != TSR_ICI_STATE_UP)
			return false;
	return true;
}

/* Wait until every wired port of every chip is up; uevents say when. */
static bool wait_links_up(struct chip *chips, unsigned int n, int uevents)
{
	uint64_t end = tsr_now_ns() + TSR_TEST_WAIT_NS;
	unsigned int i;

	for (;;) {
		for (i = 0; i < n && all_wired_up(&chips[i]); i++)
			;
		if (i == n)
			return true;
		if (tsr_now_ns() > end)
			return false;
		tsr_uevent_wait(uevents, "TESSERA_LINK_STATE=up", NULL, 1000);
	}
}

FIXTURE(slice) {
	struct chip chips[MAX_CHIPS];
	unsigned int n;
	bool split;
	int uevents;
};

FIXTURE_SETUP(slice)
{
	unsigned int i;

	self->uevents = tsr_uevent_socket();
	ASSERT_LE(0, self->uevents);
	self->n = count_chips();
	ASSERT_LE(1, self->n);
	ASSERT_GE(MAX_CHIPS, self->n);
	for (i = 0; i < self->n; i++) {
		struct chip *ch = &self->chips[i];

		ch->fd = tsr_open(i);
		ASSERT_LE(0, ch->fd);
		ASSERT_EQ(0, tsr_pci_address(i, ch->pci, sizeof(ch->pci)));
		ASSERT_EQ(0, tsr_info(ch->fd, &ch->info));
		if (!ch->info.ports_wired)
			SKIP(return, "chip %u has no links: boot the VM with tessera-vm --topology",
			     i);
	}
	self->split = self->n < self->chips[0].info.slice_chips;
	ASSERT_TRUE(wait_links_up(self->chips, self->n, self->uevents))
		TH_LOG("links did not come up within 30 s");
	for (i = 0; i < self->n; i++) {
		struct chip *ch = &self->chips[i];
		uint32_t *w;
		uint64_t k;

		ASSERT_EQ(0, tsr_bo_create(ch->fd, window_size(&ch->info), 0,
					   &ch->window));
		ASSERT_EQ(0, tsr_bo_create(ch->fd, SLOT, 0, &ch->src));
		ASSERT_EQ(0, tsr_bo_create(ch->fd, 64 * KIB, 0, &ch->c.bo));
		w = ch->window.map;
		for (k = 0; k < window_size(&ch->info) / 4; k++)
			w[k] = FILL;
		memset((char *)ch->window.map + sem_offset(&ch->info, 0), 0,
		       8 * ROUNDS);
		ch->sync = tsr_syncobj(ch->fd);
		ASSERT_LT(0, (int)ch->sync);
	}
}

FIXTURE_TEARDOWN(slice)
{
	unsigned int i, p;

	for (i = 0; i < self->n; i++) {
		struct chip *ch = &self->chips[i];

		if (ch->fd < 0)
			continue;
		for (p = 0; p < ch->info.ici_ports; p++) {
			if (!(ch->info.ports_wired & (1u << p)))
				continue;
			port_debugfs(ch, p, "fault_drop_ppm", 0);
			port_debugfs(ch, p, "fault_corrupt_ppm", 0);
			port_debugfs(ch, p, "fault_drop_next", 0);
		}
		close(ch->fd);
	}
	if (self->uevents >= 0)
		close(self->uevents);
}

static const struct tsr_bo *const *bos2(const struct tsr_bo *a,
					const struct tsr_bo *b)
{
	static const struct tsr_bo *list[2];

	list[0] = a;
	list[1] = b;
	return list;
}

/*
 * Round @round of the exchange: every chip here writes its slot of every
 * chip's window, then adds 1 to that round's semaphore there; then each
 * waits for all the slice's writes and checks every byte it received.
 */
static void exchange(struct __test_metadata *_metadata,
		     FIXTURE_DATA(slice) *self, unsigned int round)
{
	unsigned int i, dst, src, row, nchips = self->chips[0].info.slice_chips;

	for (i = 0; i < self->n; i++) {
		struct chip *ch = &self->chips[i];
		uint64_t k;

		src = ch->info.slice_index;
		for (dst = 0; dst < nchips; dst++) {
			uint64_t end = tsr_now_ns() + SPLIT_RETRY_NS;
			uint8_t *s = ch->src.map;
			uint8_t c[3];
			uint32_t err = 0;
			int ret;

			for (k = 0; k < SLOT; k++)
				s[k] = pattern(src, dst, round, k);
			tsr_index_coords(&ch->info, dst, c);
			do {
				tsr_emit_ici_write(&ch->c, c, WINDOW_ID, WINDOW_KEY,
					       ch->src.va,
					       slot_offset(&ch->info, round, src),
					       ROWS, ROW_BYTES, STRIDE,
					       sem_offset(&ch->info, round));
				ret = run_job(ch, bos2(&ch->c.bo, &ch->src), 2,
					      &err);
				/* In a split slice the target may not be ready. */
			} while (ret == -EACCES && self->split &&
				 tsr_now_ns() < end);
			ASSERT_EQ(0, ret)
				TH_LOG("round %u: chip %u -> chip %u: job error %d, chip error %u",
				       round, src, dst, ret, err);
		}
	}
	for (i = 0; i < self->n; i++) {
		struct chip *ch = &self->chips[i];
		uint8_t *w = ch->window.map;

		/* The semaphore says all of it is there. */
		tsr_emit_sem(&ch->c, TSR_OP_SEM_WAIT,
			     ch->window.va + sem_offset(&ch->info, round), nchips);
		ASSERT_EQ(0, run_job(ch, bos2(&ch->c.bo, &ch->window), 2, NULL));
		dst = ch->info.slice_index;
		for (src = 0; src < nchips; src++) {
			const uint8_t *slot = w + slot_offset(&ch->info, round, src);

			for (row = 0; row < ROWS; row++) {
				const uint8_t *r = slot + row * STRIDE;
				uint64_t k;

				for (k = 0; k < ROW_BYTES; k++)
					ASSERT_EQ(pattern(src, dst, round,
							  row * STRIDE + k), r[k])
						TH_LOG("round %u: chip %u got byte %llu of row %u from chip %u wrong",
						       round, dst,
						       (unsigned long long)k, row, src);
				/* The gap between rows is not written. */
				for (; k < STRIDE; k++)
					ASSERT_EQ(0xee, r[k]);
			}
		}
	}
}

TEST_F(slice, every_chip_knows_its_place_and_its_neighbours)
{
	unsigned int i, p, seen = 0;

	for (i = 0; i < self->n; i++) {
		struct chip *ch = &self->chips[i];
		struct tsr_info *in = &ch->info;
		struct drm_tessera_link_info li;
		char path[160], state[32] = "";
		FILE *f;

		ASSERT_EQ(in->topology[0] * in->topology[1] * in->topology[2],
			  in->slice_chips);
		ASSERT_EQ(in->coords[0] + in->topology[0] *
			  (in->coords[1] + in->topology[1] * in->coords[2]),
			  in->slice_index);
		ASSERT_EQ(0, seen & (1u << in->slice_index));
		seen |= 1u << in->slice_index;
		ASSERT_EQ(self->chips[0].info.slice_id, in->slice_id);
		ASSERT_EQ(DRM_TESSERA_MAX_WINDOWS, in->max_windows);
		for (p = 0; p < in->ici_ports; p++) {
			int n = neighbour(in, p);
			uint8_t c[3];

			ASSERT_EQ(n >= 0, !!(in->ports_wired & (1u << p)))
				TH_LOG("chip %u port %u", in->slice_index, p);
			ASSERT_EQ(0, link_info(ch->fd, p, &li));
			if (n < 0) {
				ASSERT_EQ(0, li.info.state);
				continue;
			}
			tsr_index_coords(in, n, c);
			ASSERT_EQ(TSR_ICI_STATE_UP, li.info.state);
			ASSERT_EQ(in->slice_id, li.info.peer_slice);
			ASSERT_EQ(0, memcmp(c, li.info.peer_coords, 3))
				TH_LOG("chip %u port %u: peer %u,%u,%u, want %u,%u,%u",
				       in->slice_index, p, li.info.peer_coords[0],
				       li.info.peer_coords[1],
				       li.info.peer_coords[2], c[0], c[1], c[2]);
			ASSERT_EQ(p ^ 1, li.info.peer_port);
			ASSERT_LT(0, li.counters[DRM_TESSERA_LINK_FRAMES_TX]);
			ASSERT_EQ(0, li.counters[DRM_TESSERA_LINK_PROTOCOL_ERRORS]);

			snprintf(path, sizeof(path),
				 "/sys/bus/pci/devices/%s/ici/port%u/state",
				 ch->pci, p);
			f = fopen(path, "r");
			ASSERT_NE(NULL, f);
			ASSERT_EQ(1, fscanf(f, "%31s", state));
			fclose(f);
			ASSERT_STREQ("up", state);
		}
		/* A port the chip does not have. */
		ASSERT_EQ(-EINVAL, link_info(ch->fd, in->ici_ports, &li));
		li.port = 0;
		li.flags = 1;
		ASSERT_EQ(-EINVAL, tsr_ioctl(ch->fd, DRM_IOCTL_TESSERA_LINK_INFO,
					     &li));
	}
}

TEST_F(slice, window_ioctls_check_every_field)
{
	struct chip *ch = &self->chips[0];
	struct drm_tessera_window_open wo;
	uint32_t h = ch->window.handle, rw = DRM_TESSERA_WINDOW_WRITE;
	uint64_t size = window_size(&ch->info);
	struct tsr_bo bo;
	int other;

	ASSERT_EQ(-EINVAL, window_open(ch->fd, h, 0, 4096, 0x100 | rw, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, window_open(ch->fd, h, 0, 4096, 0, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, window_open(ch->fd, h, 0, 0, rw, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, window_open(ch->fd, h, 4096, size, rw, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, window_open(ch->fd, h, ~0ull, 2, rw, 0, 0, NULL));
	ASSERT_EQ(-ENOENT, window_open(ch->fd, 9999, 0, 4096, rw, 0, 0, NULL));
	ASSERT_EQ(-EINVAL, window_open(ch->fd, h, 0, 4096,
				       rw | DRM_TESSERA_WINDOW_FIXED_ID,
				       DRM_TESSERA_MAX_WINDOWS, 0, NULL));
	ASSERT_EQ(-EINVAL, window_open(ch->fd, h, 0, 4096,
				       rw | DRM_TESSERA_WINDOW_FIXED_KEY, 0, 0,
				       NULL));
	wo = (struct drm_tessera_window_open){ .handle = h, .flags = rw,
					       .size = 4096, .pad = 1 };
	ASSERT_EQ(-EINVAL, tsr_ioctl(ch->fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo));

	/* A window where it was asked for, with a random key. */
	ASSERT_EQ(0, window_open(ch->fd, h, 8192, 4096, rw, 0, 0, &wo));
	ASSERT_NE(0, wo.key);
	ASSERT_EQ(ch->window.va + 8192, wo.device_va);
	ASSERT_GT(DRM_TESSERA_MAX_WINDOWS, wo.id);
	ASSERT_EQ(-EINVAL, window_close(ch->fd, wo.id, 1));
	ASSERT_EQ(-EINVAL, window_close(ch->fd, DRM_TESSERA_MAX_WINDOWS, 0));
	ASSERT_EQ(0, window_close(ch->fd, wo.id, 0));
	ASSERT_EQ(-ENOENT, window_close(ch->fd, wo.id, 0));

	/* A fixed id is taken until its file closes, and only it closes it. */
	other = tsr_open(0);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, tsr_bo_create(other, 4096, 0, &bo));
	ASSERT_EQ(0, window_open(other, bo.handle, 0, 4096,
				 rw | DRM_TESSERA_WINDOW_FIXED_ID |
				 DRM_TESSERA_WINDOW_FIXED_KEY, 200, 42, &wo));
	ASSERT_EQ(200, wo.id);
	ASSERT_EQ(42, wo.key);
	/* The window keeps the buffer after its handle is closed. */
	tsr_bo_destroy(other, &bo);
	ASSERT_EQ(-EBUSY, window_open(ch->fd, h, 0, 4096,
				      rw | DRM_TESSERA_WINDOW_FIXED_ID, 200, 0,
				      NULL));
	ASSERT_EQ(-ENOENT, window_close(ch->fd, 200, 0));
	close(other);
	ASSERT_EQ(0, window_open(ch->fd, h, 0, 4096,
				 rw | DRM_TESSERA_WINDOW_FIXED_ID, 200, 0, &wo));
	ASSERT_EQ(0, window_close(ch->fd, 200, 0));
}

/* Module parameter @name, or -1. */
static long long param_read(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), PARAMS "%s", name);
	return tsr_read_number(path);
}

static int param_write(const char *name, long long v)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), PARAMS "%s", name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "%lld\n", v);
	return fclose(f) ? -errno : 0;
}

TEST_F(slice, a_file_opens_no_more_windows_than_allowed)
{
	struct chip *ch = &self->chips[0];
	uint32_t rw = DRM_TESSERA_WINDOW_WRITE;
	long long old = param_read("max_windows_per_file");

	ASSERT_LE(0, old);
	ASSERT_EQ(0, param_write("max_windows_per_file", 2));
	EXPECT_EQ(0, window_open(ch->fd, ch->window.handle, 0, 4096, rw, 0, 0, NULL));
	EXPECT_EQ(0, window_open(ch->fd, ch->window.handle, 0, 4096, rw, 0, 0, NULL));
	EXPECT_EQ(-ENOSPC, window_open(ch->fd, ch->window.handle, 0, 4096, rw,
				       0, 0, NULL));
	ASSERT_EQ(0, param_write("max_windows_per_file", old));
}

/* Open this round's window on every chip here. */
static void open_windows(struct __test_metadata *_metadata,
			 FIXTURE_DATA(slice) *self)
{
	unsigned int i;

	for (i = 0; i < self->n; i++) {
		struct chip *ch = &self->chips[i];
		struct drm_tessera_window_open wo;

		ASSERT_EQ(0, window_open(ch->fd, ch->window.handle, 0,
					 window_size(&ch->info),
					 DRM_TESSERA_WINDOW_READ |
					 DRM_TESSERA_WINDOW_WRITE |
					 DRM_TESSERA_WINDOW_FIXED_ID |
					 DRM_TESSERA_WINDOW_FIXED_KEY,
					 WINDOW_ID, WINDOW_KEY, &wo));
	}
}

TEST_F(slice, remote_writes_between_every_pair_of_chips_are_exact)
{
	open_windows(_metadata, self);
	exchange(_metadata, self, 0);
}

TEST_F(slice, remote_writes_are_exact_through_dropped_and_corrupted_frames)
{
	uint64_t seq = 0, crc = 0, replays = 0;
	unsigned int i, p, r;

	for (i = 0; i < self->n; i++)
		for (p = 0; p < self->chips[i].info.ici_ports; p++) {
			struct chip *ch = &self->chips[i];

			if (!(ch->info.ports_wired & (1u << p)))
				continue;
			ASSERT_EQ(0, port_debugfs(ch, p, "fault_seed", 17 + p + 8 * i));
			ASSERT_EQ(0, port_debugfs(ch, p, "fault_drop_ppm", 1000));
			ASSERT_EQ(0, port_debugfs(ch, p, "fault_corrupt_ppm", 1000));
		}
	open_windows(_metadata, self);
	for (r = 0; r < ROUNDS; r++)
		exchange(_metadata, self, r);

	for (i = 0; i < self->n; i++)
		for (p = 0; p < self->chips[i].info.ici_ports; p++) {
			seq += port_counter(&self->chips[i], p,
					    DRM_TESSERA_LINK_SEQ_ERRORS);
			crc += port_counter(&self->chips[i], p,
					    DRM_TESSERA_LINK_CRC_ERRORS);
			replays += port_counter(&self->chips[i], p,
						DRM_TESSERA_LINK_REPLAYS);
		}
	TH_LOG("sequence errors %llu, CRC errors %llu, replays %llu",
	       (unsigned long long)seq, (unsigned long long)crc,
	       (unsigned long long)replays);
	ASSERT_LT(0, seq);
	ASSERT_LT(0, crc);
	ASSERT_LT(0, replays);
}

/* Chips @a and @b of this VM, @b the +x neighbour of @a. */
static bool two_neighbours(FIXTURE_DATA(slice) *self, struct chip **a,
			   struct chip **b)
{
	unsigned int i, j;

	for (i = 0; i < self->n; i++)
		for (j = 0; j < self->n; j++)
			if (neighbour(&self->chips[i].info, TSR_ICI_PORT(0, 0)) ==
			    (int)self->chips[j].info.slice_index && i != j) {
				*a = &self->chips[i];
				*b = &self->chips[j];
				return true;
			}
	return false;
}

static uint8_t *coords_of(struct chip *ch)
{
	static uint8_t c[3];

	tsr_index_coords(&ch->info, ch->info.slice_index, c);
	return c;
}

TEST_F(slice, a_refused_write_fails_its_writer_and_writes_nothing)
{
	struct chip *a, *b;
	struct drm_tessera_window_open wo, ro;
	long long before;
	uint32_t err = 0;
	uint64_t k, end;
	uint8_t dst[3];
	uint32_t *w;

	if (!two_neighbours(self, &a, &b))
		SKIP(return, "no two neighbouring chips in this VM");
	memcpy(dst, coords_of(b), 3);
	ASSERT_EQ(0, window_open(b->fd, b->window.handle, 0, 64 * KIB,
				 DRM_TESSERA_WINDOW_WRITE, 0, 0, &wo));
	ASSERT_EQ(0, window_open(b->fd, b->window.handle, 64 * KIB, 64 * KIB,
				 DRM_TESSERA_WINDOW_READ, 0, 0, &ro));
	memset(a->src.map, 0x5a, 64 * KIB);
	before = tsr_sysfs_counter(b->pci, "remote_access_refused");

	/* The wrong key, beyond the window, a read-only window, none. */
	tsr_emit_ici_write(&a->c, dst, wo.id, wo.key + 1, a->src.va, 0, 1, 4096,
		       4096, 8);
	ASSERT_EQ(-EACCES, run_job(a, bos2(&a->c.bo, &a->src), 2, &err));
	ASSERT_EQ(TSR_ERR_REMOTE_ACCESS, err);
	tsr_emit_ici_write(&a->c, dst, wo.id, wo.key, a->src.va, 60 * KIB, 1,
		       8192, 8192, -1);
	ASSERT_EQ(-EACCES, run_job(a, bos2(&a->c.bo, &a->src), 2, NULL));
	tsr_emit_ici_write(&a->c, dst, wo.id, wo.key, a->src.va, 0, 1, 4096, 4096,
		       64 * KIB);
	ASSERT_EQ(-EACCES, run_job(a, bos2(&a->c.bo, &a->src), 2, NULL));
	tsr_emit_ici_write(&a->c, dst, ro.id, ro.key, a->src.va, 0, 1, 4096, 4096,
		       -1);
	ASSERT_EQ(-EACCES, run_job(a, bos2(&a->c.bo, &a->src), 2, NULL));
	ASSERT_EQ(0, window_close(b->fd, wo.id, 0));
	tsr_emit_ici_write(&a->c, dst, wo.id, wo.key, a->src.va, 0, 1, 4096, 4096,
		       -1);
	ASSERT_EQ(-EACCES, run_job(a, bos2(&a->c.bo, &a->src), 2, NULL));

	/* Nothing reached the target's memory. */
	w = b->window.map;
	for (k = 0; k < 128 * KIB / 4; k++)
		ASSERT_EQ(FILL, w[k]) TH_LOG("word %llu written",
					     (unsigned long long)k);
	/* The target's driver heard of each refusal (its interrupt). */
	end = tsr_now_ns() + 2000000000ull;
	while (tsr_sysfs_counter(b->pci, "remote_access_refused") < before + 5 &&
	       tsr_now_ns() < end)
		sched_yield();
	ASSERT_EQ(before + 5, tsr_sysfs_counter(b->pci, "remote_access_refused"));
}

TEST_F(slice, a_chip_outside_the_slice_has_no_route)
{
	struct chip *ch = &self->chips[0];
	uint8_t dst[3] = { ch->info.topology[0], 0, 0 };
	uint32_t err = 0;

	tsr_emit_ici_write(&ch->c, dst, 0, 1, ch->src.va, 0, 1, 64, 64, -1);
	ASSERT_EQ(-EHOSTUNREACH, run_job(ch, bos2(&ch->c.bo, &ch->src), 2, &err));
	ASSERT_EQ(TSR_ERR_NO_ROUTE, err);
}

TEST_F(slice, a_link_that_fails_mid_transfer_fails_the_job_within_2s)
{
	struct drm_tessera_window_open wo;
	struct drm_tessera_job_status st;
	unsigned int port = TSR_ICI_PORT(0, 0);
	struct chip *a, *b;
	uint64_t seq, start, k;
	uint8_t dst[3];
	uint32_t err = 0;

	if (self->split)
		SKIP(return, "the slice is split across VMs: the link is shared");
	if (!two_neighbours(self, &a, &b))
		SKIP(return, "no two neighbouring chips in this VM");
	memcpy(dst, coords_of(b), 3);
	ASSERT_EQ(0, window_open(b->fd, b->window.handle, 0, SLOT,
				 DRM_TESSERA_WINDOW_WRITE, 0, 0, &wo));

	/*
	 * The far end stops sending anything (acknowledgements, the
	 * answer): the writer's link runs out of retries and goes down.
	 * 8 MiB, more than a link's window and send queue take (4 MiB and
	 * 2 MiB on a socket, 2 MiB on a ring): the job must wait for
	 * acknowledgements that never come, not end with its writes posted.
	 */
	ASSERT_EQ(0, port_debugfs(b, port ^ 1, "fault_drop_next", 1000000000));
	for (k = 0; k < 8 * MIB / SLOT; k++)
		tsr_emit_ici_write(&a->c, dst, wo.id, wo.key, a->src.va, 0, 1,
				   SLOT, SLOT, -1);
	start = tsr_now_ns();
	ASSERT_EQ(0, tsr_submit(a->fd, &a->c, 0, bos2(&a->c.bo, &a->src), 2,
				a->sync, &seq));
	a->c.len = 0;
	ASSERT_EQ(0, tsr_wait(a->fd, a->sync, TSR_TEST_WAIT_NS));
	drmSyncobjReset(a->fd, &a->sync, 1);
	ASSERT_GT(2000000000ull, tsr_now_ns() - start);
	ASSERT_EQ(0, tsr_job_status(a->fd, seq, &st));
	ASSERT_EQ(-ENOLINK, st.fence_error);
	ASSERT_EQ(TSR_ERR_LINK_DOWN, st.error);
	ASSERT_EQ(0, tsr_uevent_wait(self->uevents, "TESSERA_LINK_STATE=down",
				     NULL, 5000));
	ASSERT_LE(1, port_counter(a, port, DRM_TESSERA_LINK_LINK_DOWNS));

	/* Taken down on purpose: refused at once. */
	ASSERT_EQ(0, port_debugfs(b, port ^ 1, "fault_drop_next", 0));
	ASSERT_EQ(0, port_debugfs(a, port, "control", TSR_ICI_CTRL_RETRAIN));
	ASSERT_TRUE(wait_links_up(self->chips, self->n, self->uevents));
	ASSERT_EQ(0, port_debugfs(a, port, "control", TSR_ICI_CTRL_DOWN));
	tsr_emit_ici_write(&a->c, dst, wo.id, wo.key, a->src.va, 0, 1, 4096, 4096, -1);
	ASSERT_EQ(-ENOLINK, run_job(a, bos2(&a->c.bo, &a->src), 2, &err));
	ASSERT_EQ(TSR_ERR_LINK_DOWN, err);

	/* Retrained, the link carries the next job, exactly. */
	ASSERT_EQ(0, port_debugfs(a, port, "control", TSR_ICI_CTRL_RETRAIN));
	ASSERT_TRUE(wait_links_up(self->chips, self->n, self->uevents));
	for (k = 0; k < SLOT; k++)
		((uint8_t *)a->src.map)[k] = pattern(1, 2, 3, k);
	tsr_emit_ici_write(&a->c, dst, wo.id, wo.key, a->src.va, 0, 1, SLOT, SLOT, -1);
	ASSERT_EQ(0, run_job(a, bos2(&a->c.bo, &a->src), 2, NULL));
	ASSERT_EQ(0, memcmp(a->src.map, b->window.map, SLOT));
}

/* A window to write on a buffer the device may only read: refused. */
TEST_F(slice, a_device_read_only_buffer_opens_no_writable_window)
{
	struct chip *ch = &self->chips[0];
	struct drm_tessera_window_open wo;
	struct tsr_bo ro;

	ASSERT_EQ(0, tsr_bo_create(ch->fd, 8192, DRM_TESSERA_BO_DEVICE_READ_ONLY,
				   &ro));
	EXPECT_EQ(-EACCES, window_open(ch->fd, ro.handle, 0, 4096,
				       DRM_TESSERA_WINDOW_WRITE, 0, 0, NULL));
	EXPECT_EQ(-EACCES, window_open(ch->fd, ro.handle, 0, 4096,
				       DRM_TESSERA_WINDOW_READ |
				       DRM_TESSERA_WINDOW_WRITE, 0, 0, NULL));
	ASSERT_EQ(0, window_open(ch->fd, ro.handle, 0, 4096,
				 DRM_TESSERA_WINDOW_READ, 0, 0, &wo));
	EXPECT_EQ(0, window_close(ch->fd, wo.id, 0));
	tsr_bo_destroy(ch->fd, &ro);
}

/*
 * Windows are capped per user as well as per file: a user's files
 * together open at most max_windows_per_user on a chip, and another
 * user's file still opens its own.
 */
TEST_F(slice, the_files_of_one_user_open_no_more_windows_than_allowed)
{
	struct chip *ch = &self->chips[0];
	uint32_t rw = DRM_TESSERA_WINDOW_WRITE;
	long long old = param_read("max_windows_per_user");
	int other = tsr_open(0), status;
	struct tsr_bo bo;
	pid_t child;

	ASSERT_LE(0, old) TH_LOG("no max_windows_per_user parameter");
	ASSERT_LE(0, other);
	ASSERT_EQ(0, tsr_bo_create(other, 4096, 0, &bo));
	ASSERT_EQ(0, param_write("max_windows_per_user", 3));
	EXPECT_EQ(0, window_open(ch->fd, ch->window.handle, 0, 4096, rw, 0, 0, NULL));
	EXPECT_EQ(0, window_open(ch->fd, ch->window.handle, 0, 4096, rw, 0, 0, NULL));
	EXPECT_EQ(0, window_open(other, bo.handle, 0, 4096, rw, 0, 0, NULL));
	EXPECT_EQ(-ENOSPC, window_open(other, bo.handle, 0, 4096, rw, 0, 0, NULL));
	EXPECT_EQ(-ENOSPC, window_open(ch->fd, ch->window.handle, 0, 4096, rw,
				       0, 0, NULL));
	/* Another user, through the same file. */
	child = fork();
	ASSERT_LE(0, child);
	if (!child) {
		if (setresuid(65534, 65534, 65534))
			_exit(10);
		_exit(window_open(other, bo.handle, 0, 4096, rw, 0, 0, NULL) ?
		      11 : 0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_EQ(0, WEXITSTATUS(status));
	ASSERT_EQ(0, param_write("max_windows_per_user", old));
	munmap(bo.map, bo.size);
	close(other);
}

/*
 * The next uevent of chip @ch's port @port within @timeout_ms: its state
 * name in @state; -ETIME if none came.  Uevents of other ports and chips
 * are passed over.
 */
static int port_uevent(int s, struct chip *ch, unsigned int port,
		       char *state, size_t len, int timeout_ms)
{
	uint64_t end = tsr_now_ns() + timeout_ms * 1000000ull;
	char buf[4096], want_port[32], devpath[96];

	snprintf(want_port, sizeof(want_port), "TESSERA_PORT=%u", port);
	snprintf(devpath, sizeof(devpath), "/%s/accel/", ch->pci);
	while (tsr_now_ns() < end) {
		struct pollfd p = { .fd = s, .events = POLLIN };
		bool ours = false, port_seen = false;
		const char *st = NULL;
		ssize_t n, off;

		if (poll(&p, 1, (end - tsr_now_ns()) / 1000000 + 1) != 1)
			continue;
		n = recv(s, buf, sizeof(buf) - 1, 0);
		if (n <= 0)
			continue;
		buf[n] = 0;
		for (off = 0; off < n; off += strlen(buf + off) + 1) {
			ours |= !strncmp(buf + off, "DEVPATH=", 8) &&
				strstr(buf + off, devpath);
			port_seen |= !strcmp(buf + off, want_port);
			if (!strncmp(buf + off, "TESSERA_LINK_STATE=", 19))
				st = buf + off + 19;
		}
		if (ours && port_seen && st) {
			snprintf(state, len, "%s", st);
			return 0;
		}
	}
	return -ETIME;
}

/* Wait until the driver has counted sysfs @counter of @ch past @was. */
static bool counted_past(struct chip *ch, const char *counter, long long was)
{
	uint64_t end = tsr_now_ns() + TSR_TEST_WAIT_NS;

	while (tsr_now_ns() < end) {
		if (tsr_sysfs_counter(ch->pci, counter) > was)
			return true;
		sched_yield();
	}
	return false;
}

#define FLAPS		30
#define EVENT_BURST	10	/* per port and 5 s (Documentation/driver.md) */

/*
 * A link that flaps (a peer going down and up at will) makes log lines
 * and uevents at a bounded rate, counts what it held back, and the last
 * state is still told.
 */
TEST_F(slice, a_flapping_link_is_announced_at_a_bounded_rate)
{
	unsigned int port = TSR_ICI_PORT(0, 0), i, events = 0, bound;
	long long suppressed, ups;
	struct chip *a, *b;
	char state[32] = "";
	uint64_t start, secs;

	if (self->split)
		SKIP(return, "the slice is split across VMs: the link is shared");
	if (!two_neighbours(self, &a, &b))
		SKIP(return, "no two neighbouring chips in this VM");
	suppressed = tsr_sysfs_counter(a->pci, "link_events_suppressed");
	ASSERT_LE(0, suppressed) TH_LOG("no link_events_suppressed counter");
	ups = tsr_sysfs_counter(a->pci, "link_ups");
	/* What the fixture's links said coming up is not counted. */
	while (!port_uevent(self->uevents, a, port, state, sizeof(state), 100))
		;
	start = tsr_now_ns();
	/* Each change seen by the driver before the next. */
	for (i = 0; i < FLAPS; i++) {
		long long downs = tsr_sysfs_counter(a->pci, "link_downs");

		ASSERT_EQ(0, port_debugfs(a, port, "control", TSR_ICI_CTRL_DOWN));
		ASSERT_TRUE(counted_past(a, "link_downs", downs));
		ASSERT_EQ(0, port_debugfs(a, port, "control", TSR_ICI_CTRL_RETRAIN));
		ASSERT_TRUE(counted_past(a, "link_ups", ups + i));
	}
	secs = (tsr_now_ns() - start) / 1000000000ull;
	while (!port_uevent(self->uevents, a, port, state, sizeof(state), 500))
		events++;
	bound = EVENT_BURST * (secs / 5 + 2);
	TH_LOG("%u flaps in %llu s: %u uevents, %lld held back", FLAPS,
	       (unsigned long long)secs, events,
	       tsr_sysfs_counter(a->pci, "link_events_suppressed") - suppressed);
	EXPECT_GE(bound, events);
	if (bound < 2 * FLAPS)
		EXPECT_LT(suppressed,
			  tsr_sysfs_counter(a->pci, "link_events_suppressed"));
	/* The last word is the state the port is in, once the limit allows. */
	if (strcmp(state, "up"))
		ASSERT_EQ(0, port_uevent(self->uevents, a, port, state,
					 sizeof(state), 7000));
	EXPECT_STREQ("up", state);
	ASSERT_TRUE(wait_links_up(self->chips, self->n, self->uevents));
}

/*
 * A chip reset while a job waits after its remote write: the job fails
 * with ABORTED and is not run again, so the write and its semaphore
 * increment land on the other chip once, not twice.  With @ended_first
 * (debugfs stop_wait_end) the reset lets the job end, aborted by the
 * disable of its queue, before going on: what a job that ends at once
 * does, before the driver has read which jobs had started.
 */
static void reset_after_a_remote_write(struct __test_metadata *_metadata,
				       FIXTURE_DATA(slice) *self,
				       bool ended_first)
{
	struct drm_tessera_window_open wo;
	struct drm_tessera_job_status st;
	volatile uint64_t *remote_sem, *local_sem;
	struct chip *a, *b;
	uint8_t dst[3];
	uint64_t seq, end;

	if (self->split)
		SKIP(return, "the slice is split across VMs: the other VM uses the chip");
	if (!two_neighbours(self, &a, &b))
		SKIP(return, "no two neighbouring chips in this VM");
	memcpy(dst, coords_of(b), 3);
	ASSERT_EQ(0, window_open(b->fd, b->window.handle, 0, 64 * KIB,
				 DRM_TESSERA_WINDOW_WRITE, 0, 0, &wo));
	remote_sem = (uint64_t *)((char *)b->window.map + 4096);
	local_sem = a->window.map;
	*remote_sem = 0;
	*local_sem = 0;
	tsr_emit_ici_write(&a->c, dst, wo.id, wo.key, a->src.va, 0, 1, 64, 64,
			   4096);
	tsr_emit_sem(&a->c, TSR_OP_SEM_WAIT, a->window.va, 1);
	{
		const struct tsr_bo *bos[] = { &a->c.bo, &a->src, &a->window };

		ASSERT_EQ(0, tsr_submit(a->fd, &a->c, 0, bos, 3, a->sync, &seq));
	}
	a->c.len = 0;
	end = tsr_now_ns() + TSR_TEST_WAIT_NS;
	while (__atomic_load_n(remote_sem, __ATOMIC_ACQUIRE) != 1 &&
	       tsr_now_ns() < end)
		sched_yield();
	ASSERT_EQ(1, *remote_sem);

	if (ended_first)
		ASSERT_EQ(0, tsr_debugfs_write(a->pci, "stop_wait_end", 1));
	ASSERT_EQ(0, tsr_debugfs_write(a->pci, "force_recovery", 1));
	/* Were the job run again, it would now write and pass. */
	__atomic_store_n(local_sem, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(0, tsr_wait(a->fd, a->sync, TSR_TEST_WAIT_NS));
	drmSyncobjReset(a->fd, &a->sync, 1);
	ASSERT_EQ(0, tsr_job_status(a->fd, seq, &st));
	EXPECT_EQ(TSR_ERR_ABORTED, st.error);
	EXPECT_EQ(-ECANCELED, st.fence_error);
	/* A later job of the queue runs: the semaphore took one increment. */
	tsr_emit_nop(&a->c);
	ASSERT_EQ(0, run_job(a, bos2(&a->c.bo, &a->src), 2, NULL));
	EXPECT_EQ(1, *remote_sem);
}

TEST_F(slice, a_chip_reset_does_not_send_a_jobs_remote_writes_again)
{
	reset_after_a_remote_write(_metadata, self, false);
}

TEST_F(slice, a_job_its_queue_ended_aborted_before_a_chip_reset_is_not_run_again)
{
	reset_after_a_remote_write(_metadata, self, true);
}

/* Register @reg of chip @pci through its BAR0 in sysfs, or ~0. */
static uint32_t bar0_read(const char *pci, uint32_t reg)
{
	char path[96];
	uint32_t v = ~0u;
	void *bar;
	int fd;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/resource0", pci);
	fd = open(path, O_RDONLY | O_SYNC);
	if (fd < 0)
		return v;
	bar = mmap(NULL, TSR_BAR0_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	if (bar != MAP_FAILED) {
		v = *(volatile uint32_t *)((char *)bar + reg);
		munmap(bar, TSR_BAR0_SIZE);
	}
	close(fd);
	return v;
}

/*
 * Unbinding the driver closes every window on the chip and forgets the
 * context table, though the files that opened the windows stay open: no
 * remote write can walk the tables the unbind frees.  Runs last: it
 * unbinds a chip and binds it again.
 */
TEST_F(slice, an_unbound_chip_takes_no_remote_writes)
{
	struct drm_tessera_window_open wo;
	struct chip *a, *b;
	unsigned int bi;
	uint32_t err = 0, *w;
	uint8_t dst[3];
	char pci[32];
	uint64_t k;

	if (self->split)
		SKIP(return, "the slice is split across VMs: the other VM uses the chip");
	if (!two_neighbours(self, &a, &b))
		SKIP(return, "no two neighbouring chips in this VM");
	bi = b - self->chips;
	memcpy(dst, coords_of(b), 3);
	ASSERT_EQ(0, window_open(b->fd, b->window.handle, 0, 64 * KIB,
				 DRM_TESSERA_WINDOW_WRITE, 0, 0, &wo));
	memset(a->src.map, 0x5a, 8 * KIB);
	/* Bound, the window takes a write. */
	tsr_emit_ici_write(&a->c, dst, wo.id, wo.key, a->src.va, 0, 1, 4096,
			   4096, -1);
	ASSERT_EQ(0, run_job(a, bos2(&a->c.bo, &a->src), 2, NULL));
	w = b->window.map;
	ASSERT_EQ(0x5a5a5a5au, w[0]);

	ASSERT_EQ(0, tsr_write_file(TSR_DRIVER_DIR "/unbind", b->pci));
	EXPECT_EQ(0, bar0_read(b->pci, TSR_REG_ICI_WINDOW_COUNT));
	EXPECT_EQ(0, bar0_read(b->pci, TSR_REG_MMU_CTX_COUNT));
	EXPECT_EQ(0, bar0_read(b->pci, TSR_REG_MMU_CTX_TABLE_LO));
	tsr_emit_ici_write(&a->c, dst, wo.id, wo.key, a->src.va, 4096, 1, 4096,
			   4096, -1);
	EXPECT_EQ(-EACCES, run_job(a, bos2(&a->c.bo, &a->src), 2, &err));
	EXPECT_EQ(TSR_ERR_REMOTE_ACCESS, err);
	for (k = 1024; k < 2048; k++)
		ASSERT_EQ(FILL, w[k]) TH_LOG("word %llu written after the unbind",
					     (unsigned long long)k);

	/* Its file closed and the driver bound again, the chip serves. */
	munmap(b->window.map, b->window.size);
	munmap(b->src.map, b->src.size);
	munmap(b->c.bo.map, b->c.bo.size);
	close(b->fd);
	b->fd = -1;
	ASSERT_EQ(0, tsr_write_file(TSR_DRIVER_DIR "/bind", b->pci));
	b->fd = tsr_open(bi);
	ASSERT_LE(0, b->fd);
	ASSERT_EQ(0, tsr_pci_address(bi, pci, sizeof(pci)));
	ASSERT_STREQ(b->pci, pci);
	ASSERT_TRUE(wait_links_up(self->chips, self->n, self->uevents));
}

TEST_HARNESS_MAIN
