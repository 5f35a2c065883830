// SPDX-License-Identifier: GPL-2.0
/*
 * SUBMIT and SUBMIT_BATCH: command streams of real commands, some
 * malformed, some hanging until the driver's timeout, some writing through
 * the chip's windows, with extension chains; batches of such jobs, with
 * strides and counts at and past their limits, some jobs spoiled; and
 * JOB_STATUS of the jobs a file made.
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
	struct drm_tessera_submit_bo *bos;	/* the job's buffer list */
	struct drm_tessera_sync *syncs;		/* and its syncs */
	unsigned int nlisted;		/* entries of bos in use */
	bool valid;			/* every entry of bos is */
};

/* List @bo in the job's buffers with @flags. */
static bool list_bo(struct fuzz *fz, struct fuzz_stream *s,
		    const struct fuzz_bo *bo, __u32 flags)
{
	unsigned int i;

	for (i = 0; i < s->nlisted; i++) {
		if (s->bos[i].handle == bo->handle) {
			s->bos[i].flags |= flags;
			return true;
		}
	}
	if (s->nlisted == FUZZ_JOB_BOS)
		return false;
	s->bos[s->nlisted++] = (struct drm_tessera_submit_bo) {
		.handle = bo->handle, .flags = flags,
	};
	return true;
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
				  struct fuzz_stream *s)
{
	unsigned int i, n = one_in(fz, 3) ? 1 + below(fz, 3) : 0;

	for (i = 0; i < n; i++) {
		struct fuzz_syncobj *so = pick_syncobj(fz, f);

		s->syncs[i] = (struct drm_tessera_sync) {
			.handle = so ? so->handle : stale_handle(fz, f),
			.point = so && so->timeline ? 1 + below(fz, so->point) : 0,
		};
		if (!so || !so->fence)
			s->valid = false;
		if (one_in(fz, 32)) {
			s->syncs[i].flags = fuzz_value(fz, 0);
			s->valid = false;
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
			      s->bos[i].handle, s->bos[i].flags);
	for (i = 0; i < nsyncs && n < FUZZ_EXTRA; i++)
		n += snprintf(fz->extra + n, sizeof(fz->extra) - n,
			      " %s %u@%llu", s->syncs[i].flags ? "out" : "in",
			      s->syncs[i].handle,
			      (unsigned long long)s->syncs[i].point);
	for (i = 0; i < s->len && i < 12 && n < FUZZ_EXTRA; i++)
		n += snprintf(fz->extra + n, sizeof(fz->extra) - n, " %llx",
			      (unsigned long long)s->q[i]);
}

/* Random buffer-list entries: unknown handles, bad flags, duplicates. */
static void spoil_bo_list(struct fuzz *fz, struct fuzz_file *f,
			  struct fuzz_stream *s)
{
	unsigned int i = s->nlisted < FUZZ_JOB_BOS ? s->nlisted++ :
			 below(fz, FUZZ_JOB_BOS);

	s->bos[i].handle = one_in(fz, 2) && s->nlisted > 1 ?
			   s->bos[0].handle : stale_handle(fz, f);
	s->bos[i].flags = one_in(fz, 2) ? fuzz_value(fz, DRM_TESSERA_BO_READ) :
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

/*
 * An extension chain for job @job's SUBMIT in fz->ext[@job], or 0: mostly
 * a trace into one of the job's buffers, sometimes an unknown name, a
 * non-zero pad, a bad trace, a chain that loops or leads nowhere.
 */
static __u64 extensions(struct fuzz *fz, struct fuzz_file *f,
			struct fuzz_stream *s, unsigned int job)
{
	struct drm_tessera_ext_trace *t = fz->ext[job];
	struct fuzz_bo *bo = pick_bo_role(fz, f, false);
	__u32 min = sizeof(struct tsr_trace_header);

	if (!one_in(fz, 8))
		return 0;
	memset(t, 0, FUZZ_JOB_EXTS * sizeof(*t));
	t->base.name = DRM_TESSERA_EXT_TRACE;
	if (bo && bo->size >= min && !bo->ro) {
		t->handle = bo->handle;
		t->size = min + 8 * below(fz, (bo->size - min) / 8 + 1);
		t->offset = 8 * below(fz, (bo->size - t->size) / 8 + 1);
		/*
		 * The trace's buffer must be listed, and writable by the
		 * device: an import may be another device's import of a
		 * read-only buffer of ours, which the model does not follow.
		 */
		if (!list_bo(fz, s, bo, DRM_TESSERA_BO_WRITE) || !f->traces ||
		    bo->imported)
			s->valid = false;
	} else {
		t->handle = stale_handle(fz, f);
		s->valid = false;
	}
	switch (below(fz, 12)) {
	case 0:
		t->base.name = one_in(fz, 2) ? 0 : DRM_TESSERA_EXT_TRACE + 1 +
					       below(fz, 1000);
		break;
	case 1:
		t->base.pad = 1 + below(fz, 0xffffffffu);
		break;
	case 2:		/* the same name twice: a chain that loops */
		t->base.next = one_in(fz, 2) ? (uintptr_t)t : (uintptr_t)&t[1];
		t[1] = t[0];
		t[1].base.next = 0;
		break;
	case 3:
		t->base.next = (uintptr_t)bad_pointer(fz);
		break;
	case 4:
		t->size = fuzz_value(fz, t->size);
		break;
	case 5:
		t->offset = fuzz_value(fz, t->offset);
		break;
	default:
		return (uintptr_t)t;
	}
	s->valid = false;
	return (uintptr_t)t;
}

/*
 * A job of @f for SUBMIT (@job 0 with fz->bos and fz->syncs, whose ends
 * touch an inaccessible page) or for SUBMIT_BATCH (@job with lists of its
 * own), built into @a.  Return: whether the job is valid; false, with
 * @a->cmdbuf_handle 0, when @f has no command buffer.
 */
static bool build_job(struct fuzz *fz, struct fuzz_file *f,
		      struct drm_tessera_submit *a, unsigned int job,
		      bool batch)
{
	struct fuzz_stream s = {
		.valid = true,
		.bos = batch ? fz->job_bos[job] : fz->bos,
		.syncs = batch ? fz->job_syncs[job] : fz->syncs,
	};
	struct fuzz_bo *cmd = cmd_bo(fz, f);
	struct fuzz_syncobj *out = pick_syncobj(fz, f);
	unsigned int i, n = 1 + below(fz, 6), nsyncs;

	memset(a, 0, sizeof(*a));
	if (!cmd)
		return false;
	if (!batch && fz->hangs < FUZZ_HANGS && one_in(fz, 1000)) {
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
	a->extensions = extensions(fz, f, &s, job);
	nsyncs = fill_in_syncs(fz, f, &s);

	a->queue = below(fz, f->num_queues);
	a->priority = below(fz, 3);
	a->cmdbuf_handle = cmd->handle;
	a->cmdbuf_offset = place_stream(fz, cmd, &s);
	a->cmdbuf_size = s.len * 8;
	a->bo_count = s.nlisted;
	a->bos = (uintptr_t)s.bos;
	a->bo_stride = sizeof(s.bos[0]);
	if (out && one_in(fz, 2))
		s.syncs[nsyncs++] = (struct drm_tessera_sync) {
			.handle = out->handle,
			.flags = DRM_TESSERA_SYNC_SIGNAL,
			.point = one_in(fz, 2) ? out->point + 1 + below(fz, 2) : 0,
		};
	a->sync_count = nsyncs;
	a->syncs = (uintptr_t)s.syncs;
	a->sync_stride = sizeof(s.syncs[0]);
	if (!batch)
		describe_submit(fz, &s, nsyncs);
	return s.valid && s.len;
}

void op_submit(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_submit *a = (void *)fz->arg;
	bool valid = build_job(fz, f, a, 0, false);
	int err;

	if (!a->cmdbuf_handle)
		return;
	if (mutate(fz, f, OP_SUBMIT, a))
		valid = false;
	err = fuzz_ioctl(fz, f, OP_SUBMIT, a, valid);
	if (err == ECANCELED)
		f->banned = true;
	if (!err)
		submit_learn(fz, f, a, fz->out_ok);
}

/* ------------------------------------------------------- SUBMIT_BATCH */

/*
 * The batch's stride: mostly the struct's size; now and then longer with
 * zeros past the struct (valid) or a non-zero byte there in job @*bad
 * (E2BIG), or shorter than the struct or beyond the limit (EINVAL).
 * Return: whether it is valid; @*bad names the job it spoiled, or -1.
 */
static bool batch_stride(struct fuzz *fz, __u32 *stride, unsigned int count,
			 int *bad)
{
	__u32 size = sizeof(struct drm_tessera_submit);

	*bad = -1;
	*stride = size;
	switch (below(fz, 16)) {
	case 0:
	case 1:
		*stride = size + 8 * (1 + below(fz, (DRM_TESSERA_MAX_STRIDE - size) / 8));
		return true;
	case 2:
		*stride = size + 8 * (1 + below(fz, (DRM_TESSERA_MAX_STRIDE - size) / 8));
		*bad = below(fz, count);
		return false;
	case 3:
		*stride = one_in(fz, 2) ? below(fz, size) :
			  DRM_TESSERA_MAX_STRIDE + 1 + below(fz, 4096);
		return false;
	default:
		return true;
	}
}

/* What a batch that failed says: the job at fault, if it was one job. */
static void batch_check_index(struct fuzz *fz,
			      const struct drm_tessera_submit_batch *b,
			      int err, int only_bad)
{
	if (b->error_index == DRM_TESSERA_BATCH_NO_INDEX) {
		if (only_bad >= 0 && err != ENOMEM && err != ECANCELED)
			violation(fz, "SUBMIT_BATCH failed (%s) naming no job; job %d was spoiled",
				  strerror(err), only_bad);
		return;
	}
	if (b->error_index >= b->count)
		violation(fz, "SUBMIT_BATCH of %u jobs failed (%s) naming job %u",
			  b->count, strerror(err), b->error_index);
	else if (only_bad >= 0 && (int)b->error_index != only_bad &&
		 err != ENOMEM && err != ECANCELED)
		violation(fz, "SUBMIT_BATCH failed (%s) naming job %u, but only job %d was spoiled",
			  strerror(err), b->error_index, only_bad);
}

void op_submit_batch(struct fuzz *fz, struct fuzz_file *f)
{
	static const struct drm_tessera_extension batch_ext = {
		.name = DRM_TESSERA_EXT_TRACE,
	};
	struct drm_tessera_submit_batch *b = (void *)fz->arg;
	unsigned int i, count = 1 + below(fz, FUZZ_BATCH_JOBS);
	int bad_tail, only_bad = -1, nbad = 0, err;
	__u32 stride, step;
	bool valid = batch_stride(fz, &stride, count, &bad_tail);

	/* Where the jobs go: a stride the driver refuses still places them. */
	step = stride < sizeof(struct drm_tessera_submit) ||
	       stride > DRM_TESSERA_MAX_STRIDE ? sizeof(struct drm_tessera_submit) :
						 stride;
	memset(fz->jobs, 0, sizeof(fz->jobs));
	for (i = 0; i < count; i++) {
		struct drm_tessera_submit *a = (void *)(fz->jobs + i * step);
		bool ok = build_job(fz, f, a, i, true);

		if (!a->cmdbuf_handle)
			return;
		if (one_in(fz, 4) && mutate(fz, f, OP_SUBMIT, a))
			ok = false;
		if ((int)i == bad_tail) {
			fz->jobs[i * step + sizeof(*a) + below(fz, step - sizeof(*a))] =
				1 + below(fz, 255);
			ok = false;
		}
		if (!ok) {
			only_bad = nbad++ ? -1 : (int)i;
			valid = false;
		}
	}

	memset(b, 0, sizeof(*b));
	b->count = count;
	b->jobs = (uintptr_t)fz->jobs;
	b->stride = stride;
	if (one_in(fz, 32)) {
		b->count = one_in(fz, 2) ? 0 : DRM_TESSERA_MAX_BATCH + 1 +
					       below(fz, 1000);
		valid = false;
	}
	if (one_in(fz, 32)) {		/* the batch's own chain knows no name */
		b->extensions = (uintptr_t)&batch_ext;
		valid = false;
	}
	/* With the batch's own fields right, a failure names the job spoiled. */
	if (b->count != count || b->extensions || step != stride)
		only_bad = -1;
	if (mutate(fz, f, OP_SUBMIT_BATCH, b)) {
		valid = false;
		only_bad = -1;
	}
	snprintf(fz->extra, sizeof(fz->extra), "%u jobs, stride %u%s",
		 count, stride, only_bad >= 0 ? ", one spoiled" : "");
	err = fuzz_ioctl(fz, f, OP_SUBMIT_BATCH, b, valid);
	if (err == ECANCELED)
		f->banned = true;
	if (err && fz->out_ok)
		batch_check_index(fz, b, err, only_bad);
	/* Queued, whatever the copy back of the batch's own fields did. */
	for (i = 0; !err && i < b->count; i++)
		submit_learn(fz, f, (void *)(fz->jobs + i * b->stride),
			     fz->out_ok);
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
