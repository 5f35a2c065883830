// SPDX-License-Identifier: GPL-2.0
/*
 * Syncobjs: create and destroy, waits, and the array calls (reset,
 * signal, timeline signal, query) on handles some of which are not held.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

/* ------------------------------------------------------------- pools */

struct fuzz_syncobj *find_syncobj(struct fuzz_file *f, __u32 handle)
{
	unsigned int i;

	for (i = 0; i < f->nso; i++)
		if (f->so[i].handle == handle)
			return &f->so[i];
	return NULL;
}

struct fuzz_syncobj *pick_syncobj(struct fuzz *fz, struct fuzz_file *f)
{
	return f->nso ? &f->so[below(fz, f->nso)] : NULL;
}

static void forget_syncobj(struct fuzz_file *f, struct fuzz_syncobj *so)
{
	*so = f->so[--f->nso];
}

/* ------------------------------------------------------------ syncobjs */

void op_syncobj_create(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_syncobj_create *a = (void *)fz->arg;
	struct fuzz_syncobj *so;
	bool valid;

	if (f->nso == FUZZ_SYNCOBJS) {
		struct drm_syncobj_destroy *d = (void *)fz->arg;

		so = pick_syncobj(fz, f);
		*d = (struct drm_syncobj_destroy) { .handle = so->handle };
		fz->exact = true;
		if (!fuzz_ioctl(fz, f, OP_SYNCOBJ_DESTROY, d, true))
			forget_syncobj(f, so);
		fz->exact = false;
		if (f->nso == FUZZ_SYNCOBJS)
			return;
	}
	memset(a, 0, sizeof(*a));
	a->flags = one_in(fz, 2) ? DRM_SYNCOBJ_CREATE_SIGNALED : 0;
	valid = !mutate(fz, f, OP_SYNCOBJ_CREATE, a);
	if (fuzz_ioctl(fz, f, OP_SYNCOBJ_CREATE, a, valid))
		return;
	if (!a->handle || find_syncobj(f, a->handle)) {
		violation(fz, "SYNCOBJ_CREATE gave handle %u, already held",
			  a->handle);
		return;
	}
	f->so[f->nso++] = (struct fuzz_syncobj) {
		.handle = a->handle,
		.fence = a->flags & DRM_SYNCOBJ_CREATE_SIGNALED,
	};
}

void op_syncobj_destroy(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_syncobj_destroy *a = (void *)fz->arg;
	struct fuzz_syncobj *so = pick_syncobj(fz, f);
	bool valid;
	int err;

	memset(a, 0, sizeof(*a));
	a->handle = so ? so->handle : stale_handle(fz, f);
	valid = !mutate(fz, f, OP_SYNCOBJ_DESTROY, a);
	so = find_syncobj(f, a->handle);
	err = fuzz_ioctl(fz, f, OP_SYNCOBJ_DESTROY, a, valid && so);
	if (!err && !so)
		violation(fz, "SYNCOBJ_DESTROY destroyed handle %u, not held",
			  a->handle);
	if (!err && so)
		forget_syncobj(f, so);
}

/* Fill fz->handles (and fz->points) with @n syncobjs, some not held. */
static bool fill_syncobjs(struct fuzz *fz, struct fuzz_file *f, unsigned int n)
{
	bool valid = true;
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct fuzz_syncobj *so = pick_syncobj(fz, f);

		if (!so || one_in(fz, 16)) {
			fz->handles[i] = stale_handle(fz, f);
			valid &= find_syncobj(f, fz->handles[i]) != NULL;
		} else {
			fz->handles[i] = so->handle;
		}
		so = find_syncobj(f, fz->handles[i]);
		fz->points[i] = so && so->timeline ? below(fz, so->point + 2) :
			one_in(fz, 8) ? fuzz_value(fz, 1) : 0;
	}
	return valid;
}

static void describe_syncobjs(struct fuzz *fz, unsigned int n, bool points)
{
	unsigned int i;
	int len = snprintf(fz->extra, sizeof(fz->extra), "handles");

	for (i = 0; i < n && i < 8 && len < FUZZ_EXTRA; i++)
		len += snprintf(fz->extra + len, sizeof(fz->extra) - len,
				points ? " %u@%llu" : " %u", fz->handles[i],
				(unsigned long long)fz->points[i]);
}

/*
 * The DRM core allocates count_handles entries with kmalloc() before it
 * looks at them, and the page allocator WARNs above 4 MiB: not this
 * driver's bug, so counts stay below that.
 */
#define SYNCOBJ_MAX_COUNT	(1u << 16)

static void clamp_count(__u32 *count)
{
	if (*count > SYNCOBJ_MAX_COUNT)
		*count = SYNCOBJ_MAX_COUNT + (*count & 1);
}

static unsigned int wait_count(struct fuzz *fz)
{
	return one_in(fz, 16) ? 0 : 1 + below(fz, FUZZ_WAIT_HANDLES);
}

static __u32 wait_flags(struct fuzz *fz)
{
	return below(fz, 1u << 3);	/* WAIT_ALL, WAIT_FOR_SUBMIT, WAIT_AVAILABLE */
}

void op_syncobj_wait(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_syncobj_wait *a = (void *)fz->arg;
	unsigned int n = wait_count(fz);

	fill_syncobjs(fz, f, n);
	describe_syncobjs(fz, n, false);
	memset(a, 0, sizeof(*a));
	a->handles = (uintptr_t)fz->handles;
	a->count_handles = n;
	a->flags = wait_flags(fz);
	a->timeout_nsec = fuzz_timeout(fz);
	mutate(fz, f, OP_SYNCOBJ_WAIT, a);
	clamp_count(&a->count_handles);
	fuzz_ioctl(fz, f, OP_SYNCOBJ_WAIT, a, false);
}

void op_syncobj_timeline_wait(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_syncobj_timeline_wait *a = (void *)fz->arg;
	unsigned int n = wait_count(fz);

	fill_syncobjs(fz, f, n);
	describe_syncobjs(fz, n, true);
	memset(a, 0, sizeof(*a));
	a->handles = (uintptr_t)fz->handles;
	a->points = (uintptr_t)fz->points;
	a->count_handles = n;
	a->flags = wait_flags(fz);
	a->timeout_nsec = fuzz_timeout(fz);
	mutate(fz, f, OP_SYNCOBJ_TIMELINE_WAIT, a);
	clamp_count(&a->count_handles);
	fuzz_ioctl(fz, f, OP_SYNCOBJ_TIMELINE_WAIT, a, false);
}

/*
 * A RESET, SIGNAL or TIMELINE_SIGNAL succeeded: what the syncobjs hold now.
 * Through a mutated pointer or count the fuzzer cannot tell which ones the
 * call changed, and no syncobj of the file is known to hold a fence.
 */
static void syncobjs_changed(struct fuzz *fz, struct fuzz_file *f,
			     enum fuzz_op op, __u64 handles, __u64 points,
			     __u32 count)
{
	unsigned int i;

	if (handles != (uintptr_t)fz->handles || count > FUZZ_WAIT_HANDLES ||
	    (op == OP_SYNCOBJ_TIMELINE_SIGNAL && points != (uintptr_t)fz->points)) {
		for (i = 0; i < f->nso; i++)
			f->so[i].fence = false;
		return;
	}
	for (i = 0; i < count; i++) {
		struct fuzz_syncobj *so = find_syncobj(f, fz->handles[i]);

		if (!so)
			continue;
		so->fence = op != OP_SYNCOBJ_RESET;
		so->point = op == OP_SYNCOBJ_TIMELINE_SIGNAL ? fz->points[i] : 0;
		so->timeline = so->point != 0;
	}
}

static void op_syncobj_array(struct fuzz *fz, struct fuzz_file *f,
			     enum fuzz_op op)
{
	struct drm_syncobj_array *a = (void *)fz->arg;
	unsigned int n = wait_count(fz);
	bool valid = fill_syncobjs(fz, f, n) && n;

	describe_syncobjs(fz, n, false);
	memset(a, 0, sizeof(*a));
	a->handles = (uintptr_t)fz->handles;
	a->count_handles = n;
	if (mutate(fz, f, op, a))
		valid = false;
	clamp_count(&a->count_handles);
	if (!fuzz_ioctl(fz, f, op, a, valid))
		syncobjs_changed(fz, f, op, a->handles, 0, a->count_handles);
}

void op_syncobj_reset(struct fuzz *fz, struct fuzz_file *f)
{
	op_syncobj_array(fz, f, OP_SYNCOBJ_RESET);
}

void op_syncobj_signal(struct fuzz *fz, struct fuzz_file *f)
{
	op_syncobj_array(fz, f, OP_SYNCOBJ_SIGNAL);
}

static void op_syncobj_timeline(struct fuzz *fz, struct fuzz_file *f,
				enum fuzz_op op)
{
	struct drm_syncobj_timeline_array *a = (void *)fz->arg;
	unsigned int i, n = wait_count(fz);
	bool valid = fill_syncobjs(fz, f, n) && n;

	for (i = 0; i < n && op == OP_SYNCOBJ_TIMELINE_SIGNAL; i++) {
		struct fuzz_syncobj *so = find_syncobj(f, fz->handles[i]);

		fz->points[i] = (so ? so->point : 0) + 1 + below(fz, 3);
	}
	describe_syncobjs(fz, n, true);
	memset(a, 0, sizeof(*a));
	a->handles = (uintptr_t)fz->handles;
	a->points = (uintptr_t)fz->points;
	a->count_handles = n;
	if (op == OP_SYNCOBJ_QUERY)
		a->flags = one_in(fz, 2) ? DRM_SYNCOBJ_QUERY_FLAGS_LAST_SUBMITTED : 0;
	if (mutate(fz, f, op, a))
		valid = false;
	clamp_count(&a->count_handles);
	if (!fuzz_ioctl(fz, f, op, a, valid) && op == OP_SYNCOBJ_TIMELINE_SIGNAL)
		syncobjs_changed(fz, f, op, a->handles, a->points,
				 a->count_handles);
}

void op_syncobj_timeline_signal(struct fuzz *fz, struct fuzz_file *f)
{
	op_syncobj_timeline(fz, f, OP_SYNCOBJ_TIMELINE_SIGNAL);
}

void op_syncobj_query(struct fuzz *fz, struct fuzz_file *f)
{
	op_syncobj_timeline(fz, f, OP_SYNCOBJ_QUERY);
}
