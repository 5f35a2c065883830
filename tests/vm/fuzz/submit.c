// SPDX-License-Identifier: GPL-2.0
/*
 * SUBMIT: command streams of real commands, some malformed, some hanging
 * until the driver's timeout, some writing through the chip's windows;
 * and JOB_STATUS of the jobs a file made.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

/* SEM_WAIT's header as a little-endian qword: the one command that blocks. */
#define SEM_WAIT_HEADER		(TSR_OP_SEM_WAIT | 3ull << 8)

/* -------------------------------------------------------------- SUBMIT */

/* A command stream as it is built, before it goes into the buffer. */
struct fuzz_stream {
	__u64 q[160];
	unsigned int len;		/* qwords */
	unsigned int hang;		/* qword of a wait that must block, or 0 */
	unsigned int nlisted;		/* entries of fz->bos in use */
	bool valid;			/* every entry of fz->bos is */
};

/* List @bo in the job's buffers (fz->bos) with @flags. */
static void list_bo(struct fuzz *fz, struct fuzz_stream *s,
		    const struct fuzz_bo *bo, __u32 flags)
{
	unsigned int i;

	for (i = 0; i < s->nlisted; i++) {
		if (fz->bos[i].handle == bo->handle) {
			fz->bos[i].flags |= flags;
			return;
		}
	}
	if (s->nlisted < 16)
		fz->bos[s->nlisted++] = (struct drm_tessera_submit_bo) {
			.handle = bo->handle, .flags = flags,
		};
}

/*
 * A device VA for @len bytes aligned to @align inside a data buffer of @f,
 * listed with @flags; now and then one the context has not mapped there.
 */
static __u64 pick_target(struct fuzz *fz, struct fuzz_file *f,
			 struct fuzz_stream *s, __u64 len, __u64 align,
			 __u32 flags)
{
	struct fuzz_bo *bo = pick_bo_role(fz, f, false);
	__u64 off;

	if (!bo || bo->size < len || one_in(fz, 48)) {
		switch (below(fz, 4)) {
		case 0:		/* the driver's completion records */
			return TSR_LARGE_PAGE_SIZE + (below(fz, 1 << 17) & ~7ull);
		case 1:
			return bo ? bo->device_va + bo->size : 0;	/* guard page */
		default:
			return fuzz_value(fz, 16ull << 20) & ~(align - 1);
		}
	}
	off = below(fz, bo->size - len + 1) & ~(align - 1);
	list_bo(fz, s, bo, flags);
	return bo->device_va + off;
}

static void emit(struct fuzz_stream *s, const void *cmd, size_t bytes)
{
	if (s->len + bytes / 8 > sizeof(s->q) / 8)
		return;
	memcpy(&s->q[s->len], cmd, bytes);
	s->len += bytes / 8;
}

static void emit_header(struct fuzz_stream *s, __u8 opcode)
{
	struct tsr_cmd_header h = { .opcode = opcode, .size_qw = 1 };

	emit(s, &h, sizeof(h));
}

static void emit_dma(struct fuzz *fz, struct fuzz_file *f,
		     struct fuzz_stream *s, bool fill)
{
	struct tsr_cmd_dma c = {
		.hdr = {
			.opcode = fill ? TSR_OP_DMA_FILL : TSR_OP_DMA_COPY,
			.size_qw = sizeof(c) / 8,
		},
	};
	__u32 row = 4 * (1 + below(fz, one_in(fz, 8) ? 65536 : 256));
	__u32 rows = one_in(fz, 4) ? 1 + below(fz, 4) : 1;
	__u64 stride = row + 4 * below(fz, 4);

	c.size[0] = row;
	c.size[1] = rows;
	c.size[2] = 1;
	c.dst_stride[0] = rows > 1 ? stride : 0;
	c.dst = pick_target(fz, f, s, (rows - 1) * stride + row, 4,
			    DRM_TESSERA_BO_WRITE);
	if (fill) {
		c.src = (__u32)rnd(fz);
	} else {
		c.src_stride[0] = c.dst_stride[0];
		c.src = pick_target(fz, f, s, (rows - 1) * stride + row, 1,
				    DRM_TESSERA_BO_READ);
	}
	emit(s, &c, sizeof(c));
}

static void emit_sem(struct fuzz *fz, struct fuzz_file *f,
		     struct fuzz_stream *s, __u8 opcode)
{
	struct tsr_cmd_sem c = {
		.hdr = { .opcode = opcode, .size_qw = sizeof(c) / 8 },
		/* A wait for 0 never blocks; others are not worth their hangs. */
		.value = opcode == TSR_OP_SEM_WAIT ? 0 : fuzz_value(fz, below(fz, 16)),
	};

	c.va = pick_target(fz, f, s, 8, 8, opcode == TSR_OP_SEM_WAIT ?
			   DRM_TESSERA_BO_READ : DRM_TESSERA_BO_WRITE);
	emit(s, &c, sizeof(c));
}

static void emit_timestamp(struct fuzz *fz, struct fuzz_file *f,
			   struct fuzz_stream *s)
{
	struct tsr_cmd_timestamp c = {
		.hdr = { .opcode = TSR_OP_TIMESTAMP, .size_qw = sizeof(c) / 8 },
	};

	c.va = pick_target(fz, f, s, 8, 8, DRM_TESSERA_BO_WRITE);
	emit(s, &c, sizeof(c));
}

/*
 * A wait nothing satisfies: the job hangs until the driver's timeout resets
 * its queue, while the fuzzer goes on.  A few per run.
 */
static void emit_hang(struct fuzz *fz, struct fuzz_file *f,
		      struct fuzz_stream *s)
{
	struct tsr_cmd_sem c = {
		.hdr = { .opcode = TSR_OP_SEM_WAIT, .size_qw = sizeof(c) / 8 },
		.value = ~0ull,
	};

	c.va = pick_target(fz, f, s, 8, 8, DRM_TESSERA_BO_READ);
	s->hang = s->len + 2;
	emit(s, &c, sizeof(c));
	fz->hangs++;
}

/*
 * A remote write to this chip itself, the one destination every chip has:
 * mostly through a window of its files with the window's key, sometimes
 * with a wrong key, through a closed window or to a chip not in the slice.
 */
static void emit_ici_write(struct fuzz *fz, struct fuzz_file *f,
			   struct fuzz_stream *s)
{
	const struct fuzz_window *w = pick_window(fz, f);
	struct tsr_cmd_ici_write c = {
		.hdr = { .opcode = TSR_OP_ICI_WRITE, .size_qw = sizeof(c) / 8 },
		.window = w ? w->id : below(fz, DRM_TESSERA_MAX_WINDOWS),
		.key = w && !one_in(fz, 16) ? w->key : rnd(fz),
		.rows = 1,
		.row_bytes = 1 + below(fz, 4096),
	};
	__u64 size = w ? w->size : FUZZ_PAGE;

	memcpy(c.dst, f->coords, sizeof(c.dst));
	if (one_in(fz, 16))
		c.dst[below(fz, 3)] += 1 + below(fz, 3);
	if (c.row_bytes > size)
		c.row_bytes = size;
	c.offset = below(fz, size - c.row_bytes + 1 + one_in(fz, 16));
	if (w && !(w->va % 8) && size >= 8 && one_in(fz, 4)) {
		c.hdr.flags = TSR_ICI_WRITE_SEM;
		c.sem_offset = below(fz, size - 7) & ~7ull;
		c.sem_add = 1;
	}
	c.src = pick_target(fz, f, s, c.row_bytes, 1, DRM_TESSERA_BO_READ);
	emit(s, &c, sizeof(c));
}

static void emit_garbage(struct fuzz *fz, struct fuzz_stream *s)
{
	unsigned int n = 1 + below(fz, 8);

	while (n-- && s->len < sizeof(s->q) / 8)
		s->q[s->len++] = one_in(fz, 2) ? boundary(fz) : rnd(fz);
}

static void emit_command(struct fuzz *fz, struct fuzz_file *f,
			 struct fuzz_stream *s)
{
	switch (below(fz, 13)) {
	case 0:
		emit_header(s, TSR_OP_NOP);
		break;
	case 1:
		emit_header(s, TSR_OP_INTERRUPT);
		break;
	case 2:
	case 3:
	case 4:
		emit_dma(fz, f, s, true);
		break;
	case 5:
		emit_dma(fz, f, s, false);
		break;
	case 6:
		emit_sem(fz, f, s, TSR_OP_SEM_SIGNAL);
		break;
	case 7:
		emit_sem(fz, f, s, TSR_OP_SEM_INC);
		break;
	case 8:
		emit_sem(fz, f, s, TSR_OP_SEM_WAIT);
		break;
	case 9:
		emit_timestamp(fz, f, s);
		break;
	case 10:
		if (f->ici_ports) {
			emit_ici_write(fz, f, s);
			break;
		}
		/* fall through */
	case 11:
		if (one_in(fz, 4)) {
			emit_garbage(fz, s);
			break;
		}
		/* fall through */
	default:
		emit_header(s, TSR_OP_NOP);
		break;
	}
}

/* Flip bits, plant boundary values or an unknown opcode in a stream. */
static void mutate_stream(struct fuzz *fz, struct fuzz_stream *s)
{
	unsigned int n = 1 + below(fz, 3);

	while (n-- && s->len) {
		__u64 *q = &s->q[below(fz, s->len)];

		switch (below(fz, 3)) {
		case 0:
			*q ^= 1ull << below(fz, 64);
			break;
		case 1:
			*q = boundary(fz);
			break;
		default:
			*q = (*q & ~0xffull) | below(fz, 256);
			break;
		}
	}
}

/*
 * Zero the value of every SEM_WAIT header among the qwords at [@from, @to)
 * of a command buffer: whatever the chip parses, no wait can block.
 */
static void defuse_waits(__u64 *q, __u64 nq, __u64 from, __u64 to)
{
	__u64 i;

	for (i = from >= 2 ? from - 2 : 0; i < to && i < nq; i++)
		if (q[i] == SEM_WAIT_HEADER && i + 2 < nq)
			q[i + 2] = 0;
}

/* Put @s into @bo at a random offset; return the offset. */
static __u64 place_stream(struct fuzz *fz, struct fuzz_bo *bo,
			  struct fuzz_stream *s)
{
	__u64 nq = bo->size / 8, at;

	if (s->len > nq)
		s->len = nq;
	at = below(fz, nq - s->len + 1);
	memcpy((__u64 *)bo->map + at, s->q, s->len * 8);
	defuse_waits(bo->map, nq, at, at + s->len);
	if (s->hang && s->hang < s->len)
		((__u64 *)bo->map)[at + s->hang] = ~0ull;
	return at * 8;
}

/* A command buffer of @f with a CPU mapping; made if there is none. */
static struct fuzz_bo *cmd_bo(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_bo_create *c = (void *)fz->arg;
	struct fuzz_bo *bo = pick_bo_role(fz, f, true);
	int err;

	if (bo && bo->map)
		return bo;
	make_room(fz, f, 4 * FUZZ_PAGE);
	memset(c, 0, sizeof(*c));
	c->size = FUZZ_PAGE * (1 + below(fz, 4));
	c->flags = one_in(fz, 4) ? DRM_TESSERA_BO_HBM : 0;
	fz->exact = true;
	err = fuzz_ioctl(fz, f, OP_BO_CREATE, c, true);
	fz->exact = false;
	if (err)
		return NULL;
	bo = add_bo(fz, f, c->handle, ++fz->next_obj,
		    c->flags & DRM_TESSERA_BO_HBM, true, c->size);
	return bo && bo->map ? bo : NULL;
}

/* In-fences: syncobjs with a fence, at a point they have. */
static unsigned int fill_in_syncs(struct fuzz *fz, struct fuzz_file *f,
				  bool *valid)
{
	unsigned int i, n = one_in(fz, 3) ? 1 + below(fz, 3) : 0;

	for (i = 0; i < n; i++) {
		struct fuzz_syncobj *so = pick_syncobj(fz, f);

		fz->syncs[i] = (struct drm_tessera_sync) {
			.handle = so ? so->handle : stale_handle(fz, f),
			.point = so && so->timeline ? 1 + below(fz, so->point) : 0,
		};
		if (!so || !so->fence)
			*valid = false;
		if (one_in(fz, 32)) {
			fz->syncs[i].flags = fuzz_value(fz, 0);
			*valid = false;
		}
	}
	return n;
}

static void describe_submit(struct fuzz *fz, const struct fuzz_stream *s,
			    unsigned int nsyncs)
{
	unsigned int i;
	int n = snprintf(fz->extra, sizeof(fz->extra), "bos");

	for (i = 0; i < s->nlisted && n < FUZZ_EXTRA; i++)
		n += snprintf(fz->extra + n, sizeof(fz->extra) - n, " %u:%x",
			      fz->bos[i].handle, fz->bos[i].flags);
	for (i = 0; i < nsyncs && n < FUZZ_EXTRA; i++)
		n += snprintf(fz->extra + n, sizeof(fz->extra) - n,
			      " %s %u@%llu", fz->syncs[i].flags ? "out" : "in",
			      fz->syncs[i].handle,
			      (unsigned long long)fz->syncs[i].point);
	for (i = 0; i < s->len && i < 12 && n < FUZZ_EXTRA; i++)
		n += snprintf(fz->extra + n, sizeof(fz->extra) - n, " %llx",
			      (unsigned long long)s->q[i]);
}

/* Random buffer-list entries: unknown handles, bad flags, duplicates. */
static void spoil_bo_list(struct fuzz *fz, struct fuzz_file *f,
			  struct fuzz_stream *s)
{
	unsigned int i = s->nlisted < 16 ? s->nlisted++ : below(fz, 16);

	fz->bos[i].handle = one_in(fz, 2) && s->nlisted > 1 ?
			    fz->bos[0].handle : stale_handle(fz, f);
	fz->bos[i].flags = one_in(fz, 2) ? fuzz_value(fz, DRM_TESSERA_BO_READ) :
			   DRM_TESSERA_BO_WRITE;
	s->valid = false;
}

static void submit_learn(struct fuzz *fz, struct fuzz_file *f,
			 const struct drm_tessera_submit *a, bool out_ok)
{
	struct fuzz_syncobj *so;
	unsigned int i;

	if (out_ok && a->seq != f->last_seq + 1)
		violation(fz, "SUBMIT numbered job %llu after job %llu",
			  (unsigned long long)a->seq,
			  (unsigned long long)f->last_seq);
	f->last_seq++;
	f->seq_queue[f->last_seq % DRM_TESSERA_JOB_HISTORY] = a->queue;
	/* A SUBMIT that succeeded had nothing but in- and out-syncs. */
	for (i = 0; i < a->sync_count; i++) {
		const struct drm_tessera_sync *sync =
			(const void *)(uintptr_t)(a->syncs + i * a->sync_stride);

		so = find_syncobj(f, sync->handle);
		if (!(sync->flags & DRM_TESSERA_SYNC_SIGNAL) || !so)
			continue;
		so->fence = true;
		so->timeline = sync->point != 0;
		so->point = sync->point;
	}
}

void op_submit(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_submit *a = (void *)fz->arg;
	struct fuzz_stream s = { .valid = true };
	struct fuzz_bo *cmd = cmd_bo(fz, f);
	struct fuzz_syncobj *out = pick_syncobj(fz, f);
	unsigned int i, n = 1 + below(fz, 6), nsyncs;
	bool valid;
	int err;

	if (!cmd)
		return;
	if (fz->hangs < FUZZ_HANGS && one_in(fz, 1000)) {
		emit_hang(fz, f, &s);
	} else {
		for (i = 0; i < n; i++)
			emit_command(fz, f, &s);
		if (one_in(fz, 6))
			mutate_stream(fz, &s);
		if (one_in(fz, 16))
			spoil_bo_list(fz, f, &s);
	}
	if (one_in(fz, 8))
		list_bo(fz, &s, cmd, DRM_TESSERA_BO_READ);
	valid = s.valid;
	nsyncs = fill_in_syncs(fz, f, &valid);

	memset(a, 0, sizeof(*a));
	a->queue = below(fz, f->num_queues);
	a->priority = below(fz, 3);
	a->cmdbuf_handle = cmd->handle;
	a->cmdbuf_offset = place_stream(fz, cmd, &s);
	a->cmdbuf_size = s.len * 8;
	a->bo_count = s.nlisted;
	a->bos = (uintptr_t)fz->bos;
	a->bo_stride = sizeof(fz->bos[0]);
	if (out && one_in(fz, 2))
		fz->syncs[nsyncs++] = (struct drm_tessera_sync) {
			.handle = out->handle,
			.flags = DRM_TESSERA_SYNC_SIGNAL,
			.point = one_in(fz, 2) ? out->point + 1 + below(fz, 2) : 0,
		};
	a->sync_count = nsyncs;
	a->syncs = (uintptr_t)fz->syncs;
	a->sync_stride = sizeof(fz->syncs[0]);
	if (mutate(fz, f, OP_SUBMIT, a))
		valid = false;
	describe_submit(fz, &s, nsyncs);
	err = fuzz_ioctl(fz, f, OP_SUBMIT, a, valid && s.len);
	if (err == ECANCELED)
		f->banned = true;
	if (!err)
		submit_learn(fz, f, a, fz->out_ok);
}

/* ---------------------------------------------------------- job status */

/* A sequence number near the edges of the file's history. */
static __u64 pick_seq(struct fuzz *fz, struct fuzz_file *f)
{
	__u64 last = f->last_seq;

	switch (below(fz, 8)) {
	case 0:
		return last + 1;
	case 1:
		return last - DRM_TESSERA_JOB_HISTORY + below(fz, 2);
	case 2:
		return fuzz_value(fz, last);
	default:
		return last - below(fz, last < 16 ? last : 16);
	}
}

/* The fence errors struct drm_tessera_submit lists. */
static bool fence_error_documented(int e)
{
	static const int documented[] = {
		EFAULT, EIO, EINVAL, E2BIG, ETIMEDOUT, ECANCELED, ESRCH, ENOMEM,
		ENODEV, ENOLINK, EACCES, EHOSTUNREACH, 0
	};

	return e < 0 && errno_allowed(documented, -e);
}

static void check_job_status(struct fuzz *fz, struct fuzz_file *f,
			     const struct drm_tessera_job_status *st, __u64 seq)
{
	bool ok;

	switch (st->state) {
	case DRM_TESSERA_JOB_PENDING:
		ok = !st->error && !st->fence_error;
		break;
	case DRM_TESSERA_JOB_DONE:
		ok = !st->error && !st->fence_error &&
		     st->failed_cmd == TSR_NO_COMMAND &&
		     st->end_cycle >= st->start_cycle;
		break;
	case DRM_TESSERA_JOB_FAILED:
		ok = st->fence_error < 0 && st->error < TSR_ERR_COUNT;
		if (ok && !fence_error_documented(st->fence_error) &&
		    !fz->reported[-st->fence_error & 255]) {
			fz->reported[-st->fence_error & 255] = true;
			violation(fz, "job %llu failed with fence error %d (%s), which SUBMIT does not document (chip error %u)",
				  (unsigned long long)seq, st->fence_error,
				  strerror(-st->fence_error), st->error);
		}
		break;
	default:
		ok = false;
	}
	if (!ok || st->seq != seq ||
	    st->queue != f->seq_queue[seq % DRM_TESSERA_JOB_HISTORY])
		violation(fz, "JOB_STATUS of job %llu: seq %llu state %u error %u fence_error %d failed_cmd %u queue %u cycles %llu..%llu",
			  (unsigned long long)seq,
			  (unsigned long long)st->seq, st->state, st->error,
			  st->fence_error, st->failed_cmd, st->queue,
			  (unsigned long long)st->start_cycle,
			  (unsigned long long)st->end_cycle);
}

void op_job_status(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_job_status *a = (void *)fz->arg;
	int err, want;
	__u64 seq;

	memset(a, 0, sizeof(*a));
	a->seq = pick_seq(fz, f);
	mutate(fz, f, OP_JOB_STATUS, a);
	seq = a->seq;
	if (a->flags || !seq || seq > f->last_seq)
		want = EINVAL;
	else if (seq + DRM_TESSERA_JOB_HISTORY <= f->last_seq)
		want = ENOENT;
	else
		want = 0;
	err = fuzz_ioctl(fz, f, OP_JOB_STATUS, a, false);
	if (!fz->out_ok)
		return;
	if (err != want)
		violation(fz, "JOB_STATUS of job %llu (last submitted %llu): %s, expected %s",
			  (unsigned long long)seq,
			  (unsigned long long)f->last_seq,
			  err ? strerror(err) : "success",
			  want ? strerror(want) : "success");
	else if (!err)
		check_job_status(fz, f, a, seq);
}
