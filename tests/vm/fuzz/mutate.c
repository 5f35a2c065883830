// SPDX-License-Identifier: GPL-2.0
/*
 * The fuzzer's randomness, and the mutations it applies to a valid
 * argument: boundary values, random bits, near misses, bad pointers,
 * stale handles, expired or distant timeouts.
 */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "fuzz.h"

/* ------------------------------------------------------------ randomness */

__u64 splitmix64(__u64 *state)
{
	__u64 z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

__u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Values at the edges of the uapi's ranges, and plain edges. */
static const __u64 boundary_values[] = {
	0, 1, 2, 3, 4, 7, 8, 9, 0x10, 0x3f, 0x40, 0x7f, 0x80, 0xff, 0x100,
	0xfff, FUZZ_PAGE, FUZZ_PAGE + 1, 0x1ff8, 0xffff, 0x10000, 0xfffff,
	0x100000, 0x1ffff8, TSR_LARGE_PAGE_SIZE, TSR_LARGE_PAGE_SIZE + 8,
	0x1000000, 0x7fffffff, 0x80000000, 0xfffffff8, 0xfffffffe, 0xffffffff,
	0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull,
	0xfffffffffffff000ull, 0xfffffffffffffff8ull, 0xffffffffffffffffull,
	DRM_TESSERA_BO_MAX_SIZE - 1, DRM_TESSERA_BO_MAX_SIZE,
	DRM_TESSERA_BO_MAX_SIZE + 1, DRM_TESSERA_MAX_BOS,
	DRM_TESSERA_MAX_BOS + 1, DRM_TESSERA_MAX_SYNCS,
	DRM_TESSERA_MAX_SYNCS + 1, DRM_TESSERA_MAX_CMDBUF_SIZE,
	DRM_TESSERA_MAX_CMDBUF_SIZE + 8, DRM_TESSERA_JOB_HISTORY,
	DRM_TESSERA_JOB_HISTORY + 1, DRM_TESSERA_PARAM_SC_SPMEM_KIB,
	DRM_TESSERA_PARAM_SC_SPMEM_KIB + 1, TSR_MAX_QUEUES, TSR_MAX_CONTEXTS,
	TSR_MAX_DIM, TSR_MAX_TRANSFER, 1ull << TSR_VA_BITS,
	(1ull << TSR_VA_BITS) - FUZZ_PAGE, DRM_TESSERA_MAX_WINDOWS - 1,
	DRM_TESSERA_MAX_WINDOWS, DRM_TESSERA_MAX_PORTS - 1,
	DRM_TESSERA_MAX_PORTS,
};

__u64 rnd(struct fuzz *fz)
{
	return splitmix64(&fz->rng);
}

__u64 below(struct fuzz *fz, __u64 n)
{
	return n ? rnd(fz) % n : 0;
}

bool one_in(struct fuzz *fz, unsigned int n)
{
	return below(fz, n) == 0;
}

__u64 boundary(struct fuzz *fz)
{
	return boundary_values[below(fz, ARRAY_SIZE(boundary_values))];
}

/* A boundary value, random bits or a near miss instead of @valid. */
static __u64 other_value(struct fuzz *fz, __u64 valid)
{
	switch (below(fz, 4)) {
	case 0:
		return boundary(fz);
	case 1:
		return rnd(fz) >> below(fz, 64);
	case 2:
		return valid ^ (1ull << below(fz, 64));
	default:
		return valid + below(fz, 17) - 8;
	}
}

/* Mostly @valid. */
__u64 fuzz_value(struct fuzz *fz, __u64 valid)
{
	return one_in(fz, 3) ? other_value(fz, valid) : valid;
}

/* --------------------------------------------------------- mutations */

__u64 field_get(const void *arg, const struct fuzz_field *fl)
{
	__u64 v = 0;

	memcpy(&v, (const __u8 *)arg + fl->offset, fl->size);
	return v;
}

static void field_set(void *arg, const struct fuzz_field *fl, __u64 v)
{
	memcpy((__u8 *)arg + fl->offset, &v, fl->size);
}

/* A user pointer: usually @valid, sometimes one the kernel cannot use. */
static __u64 fuzz_pointer(struct fuzz *fz, __u64 valid)
{
	switch (below(fz, 8)) {
	case 0:
		return 0;
	case 1:
		return (uintptr_t)fz->noaccess;
	case 2:
		return (uintptr_t)fz->edge;	/* runs into an inaccessible page */
	case 3:
		return 0xffff888000000000ull;	/* kernel address */
	case 4:
		return boundary(fz);
	case 5:
		return rnd(fz);
	default:
		return valid + below(fz, 8);	/* misaligned */
	}
}

/* A pointer no copy can go through. */
void *bad_pointer(struct fuzz *fz)
{
	static const uintptr_t bad[] = {
		0, 8, 0xffff888000000000ull, 0x8000000000000000ull, -4096ull,
	};

	if (one_in(fz, 3))
		return fz->noaccess;
	return (void *)bad[below(fz, ARRAY_SIZE(bad))];
}

__u32 stale_handle(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_file *other = &fz->file[below(fz, fz->nfiles)];

	switch (below(fz, 4)) {
	case 0:
		return f->stale[below(fz, FUZZ_STALE)];
	case 1:
		return other->nbo ? other->bo[below(fz, other->nbo)].handle : 1;
	case 2:
		return other->nso ? other->so[below(fz, other->nso)].handle : 1;
	default:
		return below(fz, 64);
	}
}

__u64 fuzz_timeout(struct fuzz *fz)
{
	switch (below(fz, 8)) {
	case 0:
		return -1 - below(fz, 1000);
	case 1:
		return 1ull << 63;		/* most negative */
	case 2:
		return now_ns() - below(fz, 1000000000);
	case 3:
		return now_ns() + below(fz, 200000);
	default:
		return 0;
	}
}

static __u64 mutate_field(struct fuzz *fz, struct fuzz_file *f,
			  const struct fuzz_field *fl, __u64 v)
{
	switch (fl->kind) {
	case FK_PTR:
		return fuzz_pointer(fz, v);
	case FK_HANDLE:
	case FK_SYNCOBJ:
		return one_in(fz, 2) ? stale_handle(fz, f) : other_value(fz, v);
	case FK_FD:
		return one_in(fz, 2) ? fz->file[below(fz, fz->nfiles)].fd :
				       other_value(fz, v);
	case FK_TIMEOUT:
		return fuzz_timeout(fz);
	default:
		return other_value(fz, v);
	}
}

/*
 * Perhaps corrupt some fields of a valid @arg.  Return: whether the call
 * may no longer be valid.
 */
bool mutate(struct fuzz *fz, struct fuzz_file *f, enum fuzz_op op,
	    void *arg)
{
	const struct fuzz_field *fields = fuzz_ops[op].fields;
	unsigned int n, count;

	for (n = 0; fields[n].name; n++)
		;
	if (!n || below(fz, 8) < 5)
		return false;
	count = one_in(fz, 4) ? n : 1 + below(fz, 2);
	while (count--) {
		const struct fuzz_field *fl = &fields[below(fz, n)];

		field_set(arg, fl, mutate_field(fz, f, fl, field_get(arg, fl)));
	}
	return true;
}
