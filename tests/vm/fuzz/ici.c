// SPDX-License-Identifier: GPL-2.0
/*
 * ICI: the slice in GET_PARAM, LINK_INFO, and WINDOW_OPEN and
 * WINDOW_CLOSE against the windows the fuzzer's files hold.  Window ids
 * are the chip's, shared by its files: the fuzzer knows which are open,
 * so it knows what every open must return.
 */
#include <stdio.h>
#include <string.h>

#include "fuzz.h"

#define PARAMS			"/sys/module/tessera/parameters/"
/* LINK_INFO counters the chip has; the entries past them read 0. */
#define LINK_COUNTERS_USED	(DRM_TESSERA_LINK_PROTOCOL_ERRORS + 1)

/* Module parameter max_windows_per_@what ("file", "user"), or -1. */
int read_max_windows_per(const char *what)
{
	char path[128];
	FILE *fp;
	int n = -1;

	snprintf(path, sizeof(path), PARAMS "max_windows_per_%s", what);
	fp = fopen(path, "r");

	if (fp && fscanf(fp, "%d", &n) != 1)
		n = -1;
	if (fp)
		fclose(fp);
	return n;
}

/* ------------------------------------------------------------ ports */

/* A known state, and nothing at all on a port without a socket. */
static bool port_ok(const struct fuzz_file *f, unsigned int port,
		    const struct drm_tessera_port *p)
{
	static const struct drm_tessera_port none;

	if (p->state > TSR_ICI_STATE_DOWN || p->pad)
		return false;
	return (f->ports_wired >> port & 1) || !memcmp(p, &none, sizeof(*p));
}

static void report_port(struct fuzz *fz, const struct fuzz_file *f,
			const char *call, unsigned int port,
			const struct drm_tessera_port *p)
{
	violation(fz, "%s: port %u of %u (wired 0x%x): state %u, peer %u,%u,%u:%u of slice %u, pad %u",
		  call, port, f->ici_ports, f->ports_wired, p->state,
		  p->peer_coords[0], p->peer_coords[1], p->peer_coords[2],
		  p->peer_port, p->peer_slice, p->pad);
}

/* GET_PARAM's slice: as the file first saw it. */
bool check_ici_param(const struct fuzz_file *f, __u32 param, __u32 index,
		     __u64 value)
{
	switch (param) {
	case DRM_TESSERA_PARAM_COORDS:
		return value == f->coords[index];
	case DRM_TESSERA_PARAM_TOPOLOGY:
		return value > f->coords[index] && value <= 255;
	case DRM_TESSERA_PARAM_PORTS_WIRED:
		return value == f->ports_wired;
	case DRM_TESSERA_PARAM_MAX_WINDOWS:
		return value == (f->ici_ports ? DRM_TESSERA_MAX_WINDOWS : 0);
	case DRM_TESSERA_PARAM_WRAP:
		return !(value & ~7ull);
	default:
		return true;
	}
}

static void check_link_info(struct fuzz *fz, const struct fuzz_file *f,
			    const struct drm_tessera_link_info *a)
{
	bool wired = f->ports_wired >> a->port & 1;
	unsigned int i;

	if (!port_ok(f, a->port, &a->info))
		report_port(fz, f, "LINK_INFO", a->port, &a->info);
	for (i = 0; i < DRM_TESSERA_LINK_COUNTERS; i++)
		if (a->counters[i] && (!wired || i >= LINK_COUNTERS_USED))
			violation(fz, "LINK_INFO: port %u (wired 0x%x) counter %u is %llu",
				  a->port, f->ports_wired, i,
				  (unsigned long long)a->counters[i]);
}

void op_link_info(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_link_info *a = (void *)fz->arg;
	int err, want;

	memset(a, 0, sizeof(*a));
	a->port = one_in(fz, 8) ? f->ici_ports + below(fz, 3) :
				  below(fz, f->ici_ports);
	mutate(fz, f, OP_LINK_INFO, a);
	err = fuzz_ioctl(fz, f, OP_LINK_INFO, a, false);
	if (err == EFAULT && !fz->out_ok)
		return;
	/* What the driver read: a shorter argument reads as zeros, as @a. */
	want = a->flags || a->port >= f->ici_ports ? EINVAL : 0;
	if (err != want)
		violation(fz, "LINK_INFO of port %u of %u, flags 0x%x: %s, expected %s",
			  a->port, f->ici_ports, a->flags,
			  err ? strerror(err) : "success",
			  want ? strerror(want) : "success");
	else if (!err && fz->out_ok)
		check_link_info(fz, f, a);
}

/* ---------------------------------------------------------- windows */

/* The chip's index in fz->lingering: its first file's. */
static unsigned int chip_of(const struct fuzz *fz, const struct fuzz_file *f)
{
	unsigned int i;

	for (i = 0; strcmp(fz->file[i].node, f->node); i++)
		;
	return i;
}

/* The windows the fuzzer's files hold on @f's chip; return how many. */
static unsigned int chip_windows(const struct fuzz *fz,
				 const struct fuzz_file *f, bool *held)
{
	unsigned int i, w, n = 0;

	memset(held, 0, DRM_TESSERA_MAX_WINDOWS * sizeof(*held));
	for (i = 0; i < fz->nfiles; i++) {
		const struct fuzz_file *g = &fz->file[i];

		if (strcmp(g->node, f->node))
			continue;
		for (w = 0; w < g->nwin; w++, n++)
			held[g->win[w].id] = true;
	}
	return n;
}

static struct fuzz_window *find_window(struct fuzz_file *f, __u32 id)
{
	unsigned int i;

	for (i = 0; i < f->nwin; i++)
		if (f->win[i].id == id)
			return &f->win[i];
	return NULL;
}

/* Whether a buffer at @va overlaps a window of @f on another buffer. */
bool window_overlaps(const struct fuzz_file *f, __u32 obj, __u64 va,
		     __u64 size)
{
	unsigned int i;

	for (i = 0; i < f->nwin; i++) {
		const struct fuzz_window *w = &f->win[i];

		if (w->obj != obj && w->va < va + size && va < w->va + w->size)
			return true;
	}
	return false;
}

/*
 * A window of a file on @f's chip that jobs may write: not on a command
 * buffer.  NULL if there is none.
 */
const struct fuzz_window *pick_window(struct fuzz *fz,
				      const struct fuzz_file *f)
{
	const struct fuzz_file *g = &fz->file[below(fz, fz->nfiles)];
	unsigned int i, start;

	if (one_in(fz, 2) || strcmp(g->node, f->node))
		g = f;
	start = below(fz, g->nwin + 1);
	for (i = 0; i < g->nwin; i++) {
		const struct fuzz_window *w = &g->win[(start + i) % g->nwin];

		if (!w->cmd)
			return w;
	}
	return NULL;
}

/* @f is being closed: its windows close once nothing holds the file. */
void windows_linger(struct fuzz *fz, const struct fuzz_file *f)
{
	unsigned int i;

	for (i = 0; i < f->nwin; i++)
		fz->lingering[chip_of(fz, f)][f->win[i].id] = true;
}

/* A window id: mostly one @f holds, sometimes another file's or none. */
static __u32 pick_window_id(struct fuzz *fz, const struct fuzz_file *f)
{
	const struct fuzz_file *other = &fz->file[below(fz, fz->nfiles)];

	switch (below(fz, 8)) {
	case 0:
		f = other;
		break;
	case 1:
		return below(fz, DRM_TESSERA_MAX_WINDOWS);
	case 2:
		return DRM_TESSERA_MAX_WINDOWS + below(fz, 2) * rnd(fz);
	}
	return f->nwin ? f->win[below(fz, f->nwin)].id :
			 below(fz, DRM_TESSERA_MAX_WINDOWS);
}

/*
 * The errnos a call may return: @must those that some fault of the
 * argument calls for, @may those that state the fuzzer cannot see allows.
 * Neither: the call must succeed.
 */
struct fuzz_expect {
	int must[8];
	int may[6];
	unsigned int nmust;
	unsigned int nmay;
};

static void expect_errno(struct fuzz_expect *e, bool certain, int err)
{
	if (certain)
		e->must[e->nmust++] = err;
	else
		e->may[e->nmay++] = err;
}

static bool expected(const struct fuzz_expect *e, int err)
{
	unsigned int i;

	for (i = 0; i < e->nmust; i++)
		if (e->must[i] == err)
			return true;
	for (i = 0; i < e->nmay; i++)
		if (e->may[i] == err)
			return true;
	return false;
}

static void describe_expect(const struct fuzz_expect *e, char *buf,
			    size_t len)
{
	unsigned int i;
	int n = snprintf(buf, len, "%s", e->nmust ? "" : "success");

	for (i = 0; i < e->nmust + e->nmay && n < (int)len; i++)
		n += snprintf(buf + n, len - n, "%s%s", n ? " or " : "",
			      strerror(i < e->nmust ? e->must[i] :
					       e->may[i - e->nmust]));
}

/* What WINDOW_OPEN of @a must, or may, return. */
static void window_open_expect(const struct fuzz *fz, struct fuzz_file *f,
			       const struct drm_tessera_window_open *a,
			       const bool *held, unsigned int nheld,
			       struct fuzz_expect *e)
{
	const bool *lingering = fz->lingering[chip_of(fz, f)];
	const struct fuzz_bo *bo = find_bo(f, a->handle);
	bool fixed_id = a->flags & DRM_TESSERA_WINDOW_FIXED_ID;
	unsigned int i, nlingering = 0;

	if ((a->flags & ~DRM_TESSERA_WINDOW_FLAGS_ALL) ||
	    !(a->flags & (DRM_TESSERA_WINDOW_READ | DRM_TESSERA_WINDOW_WRITE)) ||
	    a->pad || !a->size ||
	    (fixed_id && a->id >= DRM_TESSERA_MAX_WINDOWS) ||
	    ((a->flags & DRM_TESSERA_WINDOW_FIXED_KEY) && !a->key))
		expect_errno(e, true, EINVAL);
	if (!f->ici_ports)
		expect_errno(e, true, EOPNOTSUPP);
	if (!bo)
		expect_errno(e, true, ENOENT);
	else if (a->offset > bo->size || a->size > bo->size - a->offset)
		expect_errno(e, bo->size, EINVAL);	/* size 0: not learnt */
	else if (a->flags & DRM_TESSERA_WINDOW_WRITE)
		/*
		 * Certain for a buffer known read-only; possible for any other:
		 * a buffer exported by another device and imported back here is
		 * its read-only original again, which the model does not follow.
		 */
		expect_errno(e, bo->ro, EACCES);
	/* A purged buffer is refused; one marked DONTNEED may be purged. */
	if (bo && bo->dontneed)
		expect_errno(e, bo->purged, EFAULT);
	if (f->nwin >= fz->max_windows_per_file)
		expect_errno(e, true, ENOSPC);
	for (i = 0; i < DRM_TESSERA_MAX_WINDOWS; i++)
		nlingering += lingering[i] && !held[i];
	/* Every window the fuzzer's files hold is one user's. */
	if (nheld + nlingering >= fz->max_windows_per_user)
		expect_errno(e, nheld >= fz->max_windows_per_user, ENOSPC);
	if (fixed_id) {
		if (a->id < DRM_TESSERA_MAX_WINDOWS &&
		    (held[a->id] || lingering[a->id]))
			expect_errno(e, held[a->id], EBUSY);
		return;
	}
	if (nheld + nlingering >= DRM_TESSERA_MAX_WINDOWS)
		expect_errno(e, nheld >= DRM_TESSERA_MAX_WINDOWS, ENOSPC);
}

/*
 * A window WINDOW_OPEN of @in gave @out: the id asked for, or the lowest
 * free; the key given, or one not 0; the address of the bytes asked for.
 */
static void window_learn(struct fuzz *fz, struct fuzz_file *f,
			 const struct drm_tessera_window_open *in,
			 const struct drm_tessera_window_open *out,
			 const bool *held)
{
	bool *lingering = fz->lingering[chip_of(fz, f)];
	const struct fuzz_bo *bo = find_bo(f, in->handle);
	__u32 id = out->id, lowest = id;
	bool ok;

	if (!(in->flags & DRM_TESSERA_WINDOW_FIXED_ID))
		for (lowest = 0; lowest < id && lowest < DRM_TESSERA_MAX_WINDOWS &&
				 (held[lowest] || lingering[lowest]); lowest++)
			;
	ok = id < DRM_TESSERA_MAX_WINDOWS && !held[id] && lowest == id &&
	     (!(in->flags & DRM_TESSERA_WINDOW_FIXED_ID) || id == in->id) &&
	     out->key && (!(in->flags & DRM_TESSERA_WINDOW_FIXED_KEY) ||
			  out->key == in->key) &&
	     (!bo || !bo->size || out->device_va == bo->device_va + in->offset);
	if (!ok)
		violation(fz, "WINDOW_OPEN of bytes %llu + %llu of handle %u (va 0x%llx) gave window %u (asked %u, lowest free %u) key 0x%llx (asked 0x%llx) at va 0x%llx",
			  (unsigned long long)in->offset,
			  (unsigned long long)in->size, in->handle,
			  (unsigned long long)(bo ? bo->device_va : 0), id,
			  in->id, lowest, (unsigned long long)out->key,
			  (unsigned long long)in->key,
			  (unsigned long long)out->device_va);
	if (id >= DRM_TESSERA_MAX_WINDOWS || f->nwin == DRM_TESSERA_MAX_WINDOWS)
		return;
	lingering[id] = false;
	f->win[f->nwin++] = (struct fuzz_window) {
		.id = id, .obj = bo ? bo->obj : 0, .key = out->key,
		.va = out->device_va, .size = in->size, .cmd = !bo || bo->cmd,
	};
}

/* WINDOW_OPEN of @a (in fz->arg), checked against the chip's windows. */
static int window_open(struct fuzz *fz, struct fuzz_file *f,
		       struct drm_tessera_window_open *a)
{
	bool held[DRM_TESSERA_MAX_WINDOWS];
	struct drm_tessera_window_open in = *a;
	struct fuzz_expect e = { .nmust = 0 };
	char want[128];
	int err;

	window_open_expect(fz, f, a, held, chip_windows(fz, f, held), &e);
	err = fuzz_ioctl(fz, f, OP_WINDOW_OPEN, a, false);
	/* Never shortened: only a bad pointer, which nothing reads, fails it. */
	if (!fz->out_ok)
		return err;
	if (err ? !expected(&e, err) : e.nmust > 0) {
		describe_expect(&e, want, sizeof(want));
		violation(fz, "WINDOW_OPEN with file %u holding %u windows (max %u): %s, expected %s",
			  (unsigned int)(f - fz->file), f->nwin,
			  fz->max_windows_per_file,
			  err ? strerror(err) : "success", want);
	}
	if (!err)
		window_learn(fz, f, &in, a, held);
	return err;
}

/*
 * WINDOW_CLOSE of @a (in fz->arg): only a window this file holds closes,
 * any other id is ENOENT.
 */
static int window_close(struct fuzz *fz, struct fuzz_file *f,
			struct drm_tessera_window_close *a)
{
	struct fuzz_window *w;
	int err, want;

	err = fuzz_ioctl(fz, f, OP_WINDOW_CLOSE, a, false);
	if (err == EFAULT && !fz->out_ok)
		return err;
	/* What the driver read: a shorter argument reads as zeros, as @a. */
	w = find_window(f, a->id);
	want = a->flags || a->id >= DRM_TESSERA_MAX_WINDOWS ? EINVAL :
	       w ? 0 : ENOENT;
	if (err != want)
		violation(fz, "WINDOW_CLOSE of window %u (flags 0x%x), %s file %u: %s, expected %s",
			  a->id, a->flags, w ? "held by" : "not held by",
			  (unsigned int)(f - fz->file),
			  err ? strerror(err) : "success",
			  want ? strerror(want) : "success");
	if (!err && w)
		*w = f->win[--f->nwin];
	return err;
}

/* Close windows of @f until it holds @keep. */
static void trim_windows(struct fuzz *fz, struct fuzz_file *f,
			 unsigned int keep)
{
	struct drm_tessera_window_close *a = (void *)fz->arg;

	fz->exact = true;
	while (f->nwin > keep) {
		memset(a, 0, sizeof(*a));
		a->id = f->win[below(fz, f->nwin)].id;
		if (window_close(fz, f, a))
			break;
	}
	fz->exact = false;
}

/* A window on @bo (or on no buffer of @f), mostly valid. */
static void window_args(struct fuzz *fz, struct fuzz_file *f,
			const struct fuzz_bo *bo,
			struct drm_tessera_window_open *a)
{
	memset(a, 0, sizeof(*a));
	a->handle = bo ? bo->handle : stale_handle(fz, f);
	a->flags = 1 + below(fz, 3);	/* READ, WRITE or both */
	a->size = FUZZ_PAGE;
	if (bo && bo->size) {
		a->offset = below(fz, bo->size) & ~(one_in(fz, 4) ? 0 : 7ull);
		a->size = one_in(fz, 2) ? bo->size - a->offset :
					  1 + below(fz, bo->size - a->offset);
	}
	if (one_in(fz, 4)) {
		a->flags |= DRM_TESSERA_WINDOW_FIXED_ID;
		a->id = one_in(fz, 3) ? pick_window_id(fz, f) :
					below(fz, DRM_TESSERA_MAX_WINDOWS);
	}
	if (one_in(fz, 4)) {
		a->flags |= DRM_TESSERA_WINDOW_FIXED_KEY;
		a->key = rnd(fz) ?: 1;
	}
}

/*
 * Windows on one buffer until the file may open no more, which must be at
 * max_windows_per_file exactly; then back to a few.
 */
static void window_burst(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_window_open *a = (void *)fz->arg;
	struct fuzz_bo *bo = pick_bo_role(fz, f, false);
	unsigned int i;
	int err = 0;

	if (!bo || !bo->size)
		return;
	for (i = 0; i <= DRM_TESSERA_MAX_WINDOWS && !err; i++) {
		window_args(fz, f, bo, a);
		a->flags &= ~DRM_TESSERA_WINDOW_FIXED_ID;
		fz->exact = true;
		err = window_open(fz, f, a);
		fz->exact = false;
	}
	trim_windows(fz, f, FUZZ_WINDOWS);
}

void op_window_open(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_window_open *a = (void *)fz->arg;

	if (one_in(fz, 256)) {
		window_burst(fz, f);
		return;
	}
	/* Room first: closing windows reuses fz->arg. */
	trim_windows(fz, f, FUZZ_WINDOWS - 1);
	window_args(fz, f, one_in(fz, 8) ? pick_bo(fz, f) :
					   pick_bo_role(fz, f, false), a);
	mutate(fz, f, OP_WINDOW_OPEN, a);
	window_open(fz, f, a);
}

void op_window_close(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_window_close *a = (void *)fz->arg;

	memset(a, 0, sizeof(*a));
	a->id = pick_window_id(fz, f);
	mutate(fz, f, OP_WINDOW_CLOSE, a);
	window_close(fz, f, a);
}
