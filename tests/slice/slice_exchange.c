// SPDX-License-Identifier: MIT
/*
 * slice_exchange: every chip of a slice writes one value to every other
 * chip over ICI and checks what it received.  Run on every host of a slice
 * by tools/tessera-slice (the "slice" suite of tests/run-checks):
 *
 *   tools/tessera-slice --topology 2x2 --host 2 -- slice_exchange
 *
 * On each local chip it opens window WINDOW_ID with the slice's key
 * (TESSERA_SLICE_KEY), writes (src index << 32 | dst index) into slot
 * src of every other chip's window, adding 1 to that window's semaphore,
 * then waits until its own semaphore counts every other chip and checks
 * each slot.  One line per host; exit status 0 if every value arrived.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include "tessera_util.h"

#define MAX_CHIPS	16
#define WINDOW_ID	7
/* Slots of 8 bytes, one per chip of the slice, then the semaphore. */
#define MAX_SLICE	4096
#define SEM_OFFSET	(8ull * MAX_SLICE)
#define WINDOW_SIZE	(SEM_OFFSET + 4096)
/* Another host's window may not be open yet: retry this long. */
#define RETRY_NS	(60ull * 1000 * 1000 * 1000)
#define WAIT_NS		(120ull * 1000 * 1000 * 1000)

struct chip {
	int fd;
	struct tsr_info info;
	struct tsr_bo window;
	struct tsr_bo src;
	struct tsr_cmds c;
	uint32_t sync;
};

static int fail(unsigned int chip, const char *what, int err)
{
	printf("slice_exchange: chip %u: %s: %s\n", chip, what, strerror(-err));
	return 1;
}

static uint64_t value(unsigned int src, unsigned int dst)
{
	return (uint64_t)src << 32 | dst;
}

/* Run the chip's command buffer and wait; the job's fence error. */
static int run_job(struct chip *ch, const struct tsr_bo *data)
{
	const struct tsr_bo *bos[] = { &ch->c.bo, data };
	struct drm_tessera_job_status st;
	uint64_t seq;
	int ret;

	ret = tsr_submit(ch->fd, &ch->c, 0, bos, 2, ch->sync, &seq);
	ch->c.len = 0;
	if (!ret)
		ret = tsr_wait(ch->fd, ch->sync, WAIT_NS);
	drmSyncobjReset(ch->fd, &ch->sync, 1);
	if (!ret)
		ret = tsr_job_status(ch->fd, seq, &st);
	return ret ? ret : st.fence_error;
}

static int chip_open(struct chip *ch, unsigned int minor, uint64_t key)
{
	struct drm_tessera_window_open wo = {
		.flags = DRM_TESSERA_WINDOW_WRITE | DRM_TESSERA_WINDOW_FIXED_ID |
			 DRM_TESSERA_WINDOW_FIXED_KEY,
		.size = WINDOW_SIZE, .id = WINDOW_ID, .key = key,
	};
	int ret;

	memset(ch, 0, sizeof(*ch));
	ch->fd = tsr_open(minor);
	if (ch->fd < 0)
		return ch->fd;
	ret = tsr_info(ch->fd, &ch->info);
	if (ret)
		return ret;
	if (ch->info.slice_chips < 2 || ch->info.slice_chips > MAX_SLICE)
		return -EINVAL;
	ret = tsr_bo_create(ch->fd, WINDOW_SIZE, 0, &ch->window) ?:
	      tsr_bo_create(ch->fd, 4096, 0, &ch->src) ?:
	      tsr_bo_create(ch->fd, 64 * 1024, 0, &ch->c.bo);
	if (ret)
		return ret;
	memset(ch->window.map, 0, WINDOW_SIZE);
	*(uint64_t *)ch->src.map = 0;
	ch->sync = tsr_syncobj(ch->fd);
	if ((int)ch->sync < 0)
		return ch->sync;
	wo.handle = ch->window.handle;
	return tsr_ioctl(ch->fd, DRM_IOCTL_TESSERA_WINDOW_OPEN, &wo);
}

/* Write this chip's value for @dst into slot src of @dst's window. */
static int write_to(struct chip *ch, unsigned int dst, uint64_t key)
{
	unsigned int src = ch->info.slice_index;
	uint64_t end = tsr_now_ns() + RETRY_NS;
	uint8_t c[3];
	int ret;

	tsr_index_coords(&ch->info, dst, c);
	*(volatile uint64_t *)ch->src.map = value(src, dst);
	do {
		tsr_emit_ici_write(&ch->c, c, WINDOW_ID, key, ch->src.va,
				   8ull * src, 1, 8, 8, SEM_OFFSET);
		ret = run_job(ch, &ch->src);
		/* -EACCES: the other host has not opened its window yet. */
	} while (ret == -EACCES && tsr_now_ns() < end);
	return ret;
}

/* Wait for every other chip's write; count the slots that are wrong. */
static unsigned int check(struct chip *ch, int *err)
{
	unsigned int n = ch->info.slice_chips, dst = ch->info.slice_index;
	const volatile uint64_t *slot = ch->window.map;
	unsigned int src, wrong = 0;

	tsr_emit_sem(&ch->c, TSR_OP_SEM_WAIT, ch->window.va + SEM_OFFSET,
		     n - 1);
	*err = run_job(ch, &ch->window);
	if (*err)
		return n - 1;
	for (src = 0; src < n; src++) {
		uint64_t want = src == dst ? 0 : value(src, dst);

		if (slot[src] != want) {
			printf("slice_exchange: chip %u got %#llx from chip %u, want %#llx\n",
			       dst, (unsigned long long)slot[src], src,
			       (unsigned long long)want);
			wrong++;
		}
	}
	return wrong;
}

static unsigned int count_chips(void)
{
	char path[64];
	unsigned int n;

	for (n = 0; n < MAX_CHIPS; n++) {
		snprintf(path, sizeof(path), "/dev/accel/accel%u", n);
		if (access(path, F_OK))
			break;
	}
	return n;
}

int main(void)
{
	const char *key_env = getenv("TESSERA_SLICE_KEY");
	const char *host = getenv("TESSERA_HOST_ID");
	struct chip chips[MAX_CHIPS];
	unsigned int n = count_chips(), i, dst, wrong = 0;
	uint64_t key;
	char *end;
	int ret;

	if (!key_env || !*key_env) {
		printf("slice_exchange: TESSERA_SLICE_KEY is not set: run it with tools/tessera-slice\n");
		return 1;
	}
	key = strtoull(key_env, &end, 16);
	if (*end) {
		printf("slice_exchange: TESSERA_SLICE_KEY '%s' is not hex\n",
		       key_env);
		return 1;
	}
	if (!n) {
		printf("slice_exchange: no chips\n");
		return 1;
	}
	for (i = 0; i < n; i++) {
		ret = chip_open(&chips[i], i, key);
		if (ret)
			return fail(i, "set-up (a slice of 2 or more chips?)",
				    ret);
	}
	for (i = 0; i < n; i++) {
		for (dst = 0; dst < chips[i].info.slice_chips; dst++) {
			if (dst == chips[i].info.slice_index)
				continue;
			ret = write_to(&chips[i], dst, key);
			if (ret) {
				printf("slice_exchange: chip %u -> chip %u: %s\n",
				       chips[i].info.slice_index, dst,
				       strerror(-ret));
				return 1;
			}
		}
	}
	for (i = 0; i < n; i++) {
		wrong += check(&chips[i], &ret);
		if (ret)
			return fail(chips[i].info.slice_index,
				    "waiting for the other chips' writes", ret);
	}
	printf("slice_exchange: host %s: %u chips, each got %u values from the slice: %s\n",
	       host ? host : "?", n, chips[0].info.slice_chips - 1,
	       wrong ? "WRONG" : "ok");
	return wrong ? 1 : 0;
}
