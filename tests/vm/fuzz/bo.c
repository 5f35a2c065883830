// SPDX-License-Identifier: GPL-2.0
/*
 * Buffer objects: BO_CREATE, BO_INFO, BO_MADVISE and GEM_CLOSE against
 * what the fuzzer holds, and mmap() of buffers, some kept past their
 * handle.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

/* ------------------------------------------------------------- pools */

struct fuzz_bo *find_bo(struct fuzz_file *f, __u32 handle)
{
	unsigned int i;

	for (i = 0; i < f->nbo; i++)
		if (f->bo[i].handle == handle)
			return &f->bo[i];
	return NULL;
}

struct fuzz_bo *pick_bo(struct fuzz *fz, struct fuzz_file *f)
{
	return f->nbo ? &f->bo[below(fz, f->nbo)] : NULL;
}

/* A buffer of the wanted role, if the file holds one. */
struct fuzz_bo *pick_bo_role(struct fuzz *fz, struct fuzz_file *f,
			     bool cmd)
{
	unsigned int i, start = below(fz, f->nbo + 1);

	for (i = 0; i < f->nbo; i++) {
		struct fuzz_bo *bo = &f->bo[(start + i) % f->nbo];

		if (bo->cmd == cmd)
			return bo;
	}
	return NULL;
}

void keep_zombie(struct fuzz *fz, void *addr, size_t len, int prot,
		 __u32 obj)
{
	struct fuzz_mapping *z;

	if (fz->nzombie == FUZZ_ZOMBIES) {
		z = &fz->zombie[below(fz, FUZZ_ZOMBIES)];
		munmap(z->addr, z->len);
	} else {
		z = &fz->zombie[fz->nzombie++];
	}
	*z = (struct fuzz_mapping) {
		.addr = addr, .len = len, .prot = prot, .obj = obj,
	};
}

/* The kernel closed @handle: forget it, keep its mapping for a while. */
static void forget_bo(struct fuzz *fz, struct fuzz_file *f, struct fuzz_bo *bo)
{
	f->stale[below(fz, FUZZ_STALE)] = bo->handle;
	f->bo_bytes -= bo->size;
	if (bo->map)
		keep_zombie(fz, bo->map, bo->size, PROT_READ | PROT_WRITE,
			    bo->obj);
	*bo = f->bo[--f->nbo];
}

static int gem_close(struct fuzz *fz, struct fuzz_file *f, __u32 handle,
		     bool valid, bool mutated);

/* Close buffers until one more of @size fits the file's pool and budget. */
void make_room(struct fuzz *fz, struct fuzz_file *f, __u64 size)
{
	fz->exact = true;
	while (f->nbo && (f->nbo == FUZZ_BOS ||
			  f->bo_bytes + size > FUZZ_BO_BUDGET))
		gem_close(fz, f, pick_bo(fz, f)->handle, true, false);
	fz->exact = false;
}

/* ----------------------------------------------------- buffer objects */

static int bo_info(struct fuzz *fz, struct fuzz_file *f, __u32 handle,
		   struct drm_tessera_bo_info *out, bool mutated);

/* Learn where a new handle's buffer is, and check it. */
static void bo_learn(struct fuzz *fz, struct fuzz_file *f, struct fuzz_bo *bo,
		     __u64 want_size)
{
	struct drm_tessera_bo_info info;
	int err;

	fz->exact = true;
	err = bo_info(fz, f, bo->handle, &info, false);
	fz->exact = false;
	if (err)
		return;
	if ((want_size && info.size != want_size) || info.size % FUZZ_PAGE ||
	    info.device_va < 16 << 20 || info.device_va % FUZZ_PAGE ||
	    info.device_va + info.size > 1ull << TSR_VA_BITS ||
	    info.placement != (bo->hbm ? DRM_TESSERA_BO_HBM : 0) || info.pad)
		violation(fz, "BO_INFO of new handle %u: size %llu (want %llu) va 0x%llx placement %u pad %u",
			  bo->handle, (unsigned long long)info.size,
			  (unsigned long long)want_size,
			  (unsigned long long)info.device_va, info.placement,
			  info.pad);
	if (window_overlaps(f, bo->obj, info.device_va, info.size))
		violation(fz, "BO_INFO of new handle %u: va 0x%llx size %llu overlaps an open window on another buffer",
			  bo->handle, (unsigned long long)info.device_va,
			  (unsigned long long)info.size);
	bo->size = info.size;
	bo->mmap_offset = info.mmap_offset;
	bo->device_va = info.device_va;
}

static void *map_bo(struct fuzz *fz, struct fuzz_file *f, struct fuzz_bo *bo);

/* A handle the kernel just gave @f: it must be new to the file. */
struct fuzz_bo *add_bo(struct fuzz *fz, struct fuzz_file *f,
		       __u32 handle, __u32 obj, bool hbm, bool cmd,
		       __u64 size)
{
	struct fuzz_bo *bo;

	if (!handle || find_bo(f, handle)) {
		violation(fz, "new buffer got handle %u, which file %u already holds",
			  handle, (unsigned int)(f - fz->file));
		return NULL;
	}
	bo = &f->bo[f->nbo++];
	*bo = (struct fuzz_bo) {
		.handle = handle, .obj = obj, .hbm = hbm, .cmd = cmd,
	};
	bo_learn(fz, f, bo, size);
	f->bo_bytes += bo->size;
	if (cmd)
		bo->map = map_bo(fz, f, bo);
	return bo;
}

/*
 * Sizes mostly of a few pages, sometimes up to 1 MiB or the 2 MiB pages:
 * a 2 MiB buffer takes 20 ms to make in the VM.
 */
static __u64 bo_size(struct fuzz *fz)
{
	switch (below(fz, 64)) {
	case 0:
		return TSR_LARGE_PAGE_SIZE + FUZZ_PAGE * below(fz, 2);
	case 1:
	case 2:
		return 1 + below(fz, 1 << 20);
	case 3:
		return 1;
	default:
		return FUZZ_PAGE * (1 + below(fz, 4)) - below(fz, 2) * below(fz, 4096);
	}
}

void op_bo_create(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_bo_create *c = (void *)fz->arg;
	bool hbm = one_in(fz, 3), cmd = one_in(fz, 3), valid, ro;
	struct fuzz_bo *bo;
	__u64 want, limit;

	/* Room first: closing buffers reuses fz->arg. */
	make_room(fz, f, FUZZ_BO_MAX);
	memset(c, 0, sizeof(*c));
	c->size = bo_size(fz);
	c->flags = hbm ? DRM_TESSERA_BO_HBM : 0;
	valid = !mutate(fz, f, OP_BO_CREATE, c);
	/*
	 * Buffers that fit take long to clear, and system memory is pinned
	 * at once: valid sizes stay small, too large ones fail fast.
	 */
	limit = c->flags & DRM_TESSERA_BO_HBM ? f->hbm_size :
						DRM_TESSERA_BO_MAX_SIZE;
	if (!(c->flags & ~DRM_TESSERA_BO_HBM) && c->size > FUZZ_BO_MAX &&
	    c->size <= limit)
		c->size = FUZZ_BO_MAX;
	want = (c->size + FUZZ_PAGE - 1) & ~(FUZZ_PAGE - 1);
	if (fuzz_ioctl(fz, f, OP_BO_CREATE, c, valid))
		return;
	/* add_bo() reuses fz->arg. */
	ro = c->flags & DRM_TESSERA_BO_DEVICE_READ_ONLY;
	bo = add_bo(fz, f, c->handle, ++fz->next_obj,
		    c->flags & DRM_TESSERA_BO_HBM, cmd, want);
	if (bo)
		bo->ro = ro;
	make_room(fz, f, 0);
}

/*
 * BO_INFO of @handle, checked against the pool; the result in @out, when
 * the call returned a whole struct (always for the fuzzer's own calls).
 */
static int bo_info(struct fuzz *fz, struct fuzz_file *f, __u32 handle,
		   struct drm_tessera_bo_info *out, bool mutated)
{
	struct drm_tessera_bo_info *a = (void *)fz->arg;
	struct fuzz_bo *bo;
	bool valid;
	int err;

	memset(a, 0, sizeof(*a));
	a->handle = handle;
	valid = !(mutated && mutate(fz, f, OP_BO_INFO, a));
	bo = find_bo(f, a->handle);
	err = fuzz_ioctl(fz, f, OP_BO_INFO, a, valid && bo);
	if (!fz->out_ok)
		return err;
	if (!err && !bo && a->flags == 0)
		violation(fz, "BO_INFO found handle %u, which file %u does not hold",
			  a->handle, (unsigned int)(f - fz->file));
	if (err == ENOENT && bo && !a->flags)
		violation(fz, "BO_INFO lost handle %u", a->handle);
	if (!err && bo && bo->size &&
	    (a->size != bo->size || a->device_va != bo->device_va ||
	     a->mmap_offset != bo->mmap_offset))
		violation(fz, "BO_INFO of handle %u moved: size %llu va 0x%llx offset 0x%llx, was %llu 0x%llx 0x%llx",
			  a->handle, (unsigned long long)a->size,
			  (unsigned long long)a->device_va,
			  (unsigned long long)a->mmap_offset,
			  (unsigned long long)bo->size,
			  (unsigned long long)bo->device_va,
			  (unsigned long long)bo->mmap_offset);
	if (out)
		*out = *a;
	return err;
}

void op_bo_info(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_bo *bo = pick_bo(fz, f);

	bo_info(fz, f, bo ? bo->handle : stale_handle(fz, f), NULL, true);
}

static int gem_close(struct fuzz *fz, struct fuzz_file *f, __u32 handle,
		     bool valid, bool mutated)
{
	struct drm_gem_close *a = (void *)fz->arg;
	struct fuzz_bo *bo;
	int err;

	memset(a, 0, sizeof(*a));
	a->handle = handle;
	if (mutated && mutate(fz, f, OP_GEM_CLOSE, a))
		valid = false;
	bo = find_bo(f, a->handle);
	err = fuzz_ioctl(fz, f, OP_GEM_CLOSE, a, valid && bo);
	if (!err && !bo)
		violation(fz, "GEM_CLOSE closed handle %u, which file %u does not hold",
			  a->handle, (unsigned int)(f - fz->file));
	if (!err && bo)
		forget_bo(fz, f, bo);
	return err;
}

/* Every shrinker of the kernel runs: DONTNEED buffers may go. */
static void memory_pressure(void)
{
	int fd = open("/proc/sys/vm/drop_caches", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	/* Should it fail (not root), nothing is purged: the model holds. */
	(void)!write(fd, "2", 1);
	close(fd);
}

/*
 * Whether object @obj was ever marked DONTNEED.  A dma-buf names the
 * exporter's storage, whichever handle it came from (an import's export is
 * its exporter's dma-buf again), and that storage stays marked after the
 * handle that marked it is gone: a dma-buf of it may be refused once the
 * last import is closed.  Never forgotten: WILLNEED through one handle
 * says nothing of another device's.  Its dma-bufs are held to this.
 */
bool obj_ever_dontneed(const struct fuzz *fz, __u32 obj)
{
	return obj / 8 < fz->dontneed_objs_size &&
	       (fz->dontneed_objs[obj / 8] & (1u << (obj % 8)));
}

static void obj_mark_dontneed(struct fuzz *fz, __u32 obj)
{
	if (obj / 8 >= fz->dontneed_objs_size) {
		__u32 size = (obj / 8 + 1) * 2;
		__u8 *bits = realloc(fz->dontneed_objs, size);

		if (!bits)
			abort();
		memset(bits + fz->dontneed_objs_size, 0,
		       size - fz->dontneed_objs_size);
		fz->dontneed_objs = bits;
		fz->dontneed_objs_size = size;
	}
	fz->dontneed_objs[obj / 8] |= 1u << (obj % 8);
}

/*
 * @obj may be purged: a mapping of it kept past its handle is not touched,
 * and its dma-bufs may be refused (obj_ever_dontneed()).
 */
static void obj_may_be_purged(struct fuzz *fz, __u32 obj)
{
	unsigned int i;

	obj_mark_dontneed(fz, obj);
	for (i = 0; i < fz->nzombie; i++)
		if (fz->zombie[i].obj == obj)
			fz->zombie[i].prot = 0;
}

/*
 * Advice is the object's, not the handle's: another file of the same
 * device holding @bo's object (imported through PRIME) holds the same
 * buffer, marked and purged with it.  Another device's import is a buffer
 * of its own, which the exporter's advice does not touch.
 */
static void share_advice(struct fuzz *fz, const struct fuzz_file *f,
			 const struct fuzz_bo *bo)
{
	unsigned int i, j;

	for (i = 0; i < fz->nfiles; i++) {
		struct fuzz_file *g = &fz->file[i];

		if (strcmp(g->node, f->node))
			continue;
		for (j = 0; j < g->nbo; j++) {
			if (g->bo[j].obj != bo->obj)
				continue;
			g->bo[j].dontneed = bo->dontneed;
			g->bo[j].purged = bo->purged;
		}
	}
}

/*
 * What BO_MADVISE of @bo answered: a buffer marked DONTNEED may be purged
 * from then on, and once WILLNEED or DONTNEED answers retained 0 it is
 * purged for good.  Only a buffer marked DONTNEED is ever purged.
 */
static void bo_madvise_learn(struct fuzz *fz, struct fuzz_file *f,
			     struct fuzz_bo *bo,
			     const struct drm_tessera_bo_madvise *a)
{
	bool was_dontneed = bo->dontneed;

	if (a->madv == DRM_TESSERA_MADV_DONTNEED && !bo->dontneed) {
		bo->dontneed = true;
		obj_may_be_purged(fz, bo->obj);
	}
	if (!fz->out_ok) {
		share_advice(fz, f, bo);
		return;
	}
	if (a->retained > 1 || (bo->purged && a->retained) ||
	    (!was_dontneed && !a->retained))
		violation(fz, "BO_MADVISE %u of handle %u answered retained %u; the buffer was %s",
			  a->madv, a->handle, a->retained,
			  bo->purged ? "purged" : bo->dontneed ?
			  "marked DONTNEED" : "never marked DONTNEED");
	if (!a->retained)
		bo->purged = true;
	else if (a->madv == DRM_TESSERA_MADV_WILLNEED)
		bo->dontneed = false;
	share_advice(fz, f, bo);
}

/*
 * BO_MADVISE, checked against the pool; a DONTNEED sometimes followed by
 * memory pressure, so that buffers are purged and what touches them
 * refused.  Command buffers stay needed: the fuzzer writes commands
 * through their mappings, which a purge would make raise SIGBUS.
 */
void op_bo_madvise(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_bo_madvise *a = (void *)fz->arg;
	struct fuzz_bo *bo = one_in(fz, 8) ? pick_bo(fz, f) :
					     pick_bo_role(fz, f, false);
	int err, want;

	memset(a, 0, sizeof(*a));
	a->handle = bo ? bo->handle : stale_handle(fz, f);
	a->madv = one_in(fz, 2) ? DRM_TESSERA_MADV_DONTNEED :
				  DRM_TESSERA_MADV_WILLNEED;
	mutate(fz, f, OP_BO_MADVISE, a);
	bo = find_bo(f, a->handle);
	if (bo && bo->cmd && a->madv == DRM_TESSERA_MADV_DONTNEED)
		a->madv = DRM_TESSERA_MADV_WILLNEED;
	err = fuzz_ioctl(fz, f, OP_BO_MADVISE, a, false);
	if (err == EFAULT && !fz->out_ok)
		return;
	/* What the driver read: a shorter argument reads as zeros, as @a. */
	bo = find_bo(f, a->handle);
	want = a->flags || a->madv > DRM_TESSERA_MADV_DONTNEED ? EINVAL :
	       !bo ? ENOENT : bo->hbm ? EINVAL : 0;
	if (err != want)
		violation(fz, "BO_MADVISE %u (flags 0x%x) of handle %u, %s: %s, expected %s",
			  a->madv, a->flags, a->handle,
			  !bo ? "not held" : bo->hbm ? "in HBM" : "held",
			  err ? strerror(err) : "success",
			  want ? strerror(want) : "success");
	if (err || !bo)
		return;
	bo_madvise_learn(fz, f, bo, a);
	if (a->madv == DRM_TESSERA_MADV_DONTNEED && one_in(fz, 4))
		memory_pressure();
}

void op_gem_close(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_bo *bo = pick_bo(fz, f);

	gem_close(fz, f, bo ? bo->handle : stale_handle(fz, f), !!bo, true);
}

/* ----------------------------------------------------------------- mmap */

static void touch(struct fuzz *fz, volatile __u8 *p, size_t len, int prot)
{
	size_t off = below(fz, len) & ~7ul;

	if (prot & PROT_READ)
		(void)p[off];
	/* Never a command header: 0x5a... cannot become a SEM_WAIT. */
	if (prot & PROT_WRITE)
		p[off] = 0x5a;
}

/* mmap() through the fuzzer's recorder; MAP_FAILED on failure. */
static void *fuzz_mmap(struct fuzz *fz, struct fuzz_file *f,
		       struct fuzz_mmap_args *a, bool valid)
{
	struct fuzz_record *r;
	void *p;
	int err;

	r = record_start(fz, f, OP_MMAP, 0, a, sizeof(*a));
	p = mmap(NULL, a->length, a->prot, a->flags, f->fd, a->offset);
	err = p == MAP_FAILED ? errno : 0;
	record_end(fz, r, OP_MMAP, err);
	if (valid && err)
		violation(fz, "valid mmap of handle %u failed: %s", a->handle,
			  strerror(err));
	return p;
}

static void *map_bo(struct fuzz *fz, struct fuzz_file *f, struct fuzz_bo *bo)
{
	struct fuzz_mmap_args a = {
		.offset = bo->mmap_offset, .length = bo->size,
		.prot = PROT_READ | PROT_WRITE, .flags = MAP_SHARED,
		.handle = bo->handle,
	};
	void *p;

	if (!bo->size)
		return NULL;
	p = fuzz_mmap(fz, f, &a, true);
	return p == MAP_FAILED ? NULL : p;
}

/*
 * A file maps only whole buffers it holds a handle to, from their start,
 * and only shared: a private copy-on-write mapping of device memory has no
 * meaning; and never a purged buffer.  Return: the buffer mapped, if any.
 */
static const struct fuzz_bo *check_mapping(struct fuzz *fz,
					   struct fuzz_file *f,
					   const struct fuzz_mmap_args *a)
{
	const struct fuzz_bo *bo = NULL;
	unsigned int i;

	for (i = 0; i < f->nbo; i++)
		if (f->bo[i].mmap_offset == a->offset && f->bo[i].size)
			bo = &f->bo[i];
	if (!bo || a->length > bo->size)
		violation(fz, "mmap of offset 0x%llx length %llu succeeded, but file %u holds no buffer there of that size",
			  (unsigned long long)a->offset,
			  (unsigned long long)a->length,
			  (unsigned int)(f - fz->file));
	else if ((a->flags & MAP_TYPE) == MAP_PRIVATE)
		violation(fz, "private mapping of %s buffer %u accepted",
			  bo->hbm ? "HBM" : "system-memory", bo->handle);
	else if (bo->purged)
		violation(fz, "mapping of purged buffer %u accepted",
			  bo->handle);
	return bo;
}

void op_mmap(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_mmap_args *a = (void *)fz->arg;
	struct fuzz_bo *bo = pick_bo(fz, f);
	/* A purged buffer is refused (EFAULT): one marked DONTNEED may be. */
	bool valid = bo && bo->size && !bo->dontneed;
	const struct fuzz_bo *mapped;
	__u32 obj;
	void *p;

	if (fz->nzombie && one_in(fz, 4)) {
		struct fuzz_mapping *z = &fz->zombie[--fz->nzombie];

		touch(fz, z->addr, z->len, z->prot);
		munmap(z->addr, z->len);
		return;
	}
	memset(a, 0, sizeof(*a));
	a->handle = bo ? bo->handle : 0;
	a->offset = bo ? bo->mmap_offset : boundary(fz) & ~(FUZZ_PAGE - 1);
	a->length = FUZZ_PAGE;
	if (bo && bo->size)
		a->length *= 1 + below(fz, bo->size / FUZZ_PAGE);
	a->prot = PROT_READ | PROT_WRITE;
	a->flags = MAP_SHARED;
	if (one_in(fz, 8)) {
		a->prot = below(fz, 8);
		a->flags = one_in(fz, 2) ? MAP_PRIVATE : MAP_SHARED;
		valid = false;
	}
	if (mutate(fz, f, OP_MMAP, a))
		valid = false;
	/* Neither a huge reservation nor a fixed address clobbering ours. */
	a->length &= (64ull << 20) - 1;
	a->flags &= MAP_SHARED | MAP_PRIVATE | MAP_POPULATE;
	a->prot &= PROT_READ | PROT_WRITE | PROT_EXEC;
	p = fuzz_mmap(fz, f, a, valid);
	if (p == MAP_FAILED)
		return;
	mapped = check_mapping(fz, f, a);
	obj = mapped ? mapped->obj : 0;
	/* A buffer that may be purged may raise SIGBUS: not touched. */
	if (a->length && mapped && !mapped->dontneed)
		touch(fz, p, a->length, a->prot);
	if (one_in(fz, 16))
		keep_zombie(fz, p, a->length,
			    mapped && !mapped->dontneed ? a->prot : 0, obj);
	else
		munmap(p, a->length);
}
