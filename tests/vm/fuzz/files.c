// SPDX-License-Identifier: GPL-2.0
/*
 * The fuzzer's files: two on one chip and, when the VM has a second chip,
 * one on it.  Each is closed and reopened now and then; PRIME passes
 * buffers between them as dma-bufs.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"

/* ---------------------------------------------------------- the files */

static int file_param(const struct fuzz_file *f, __u32 param, __u32 index,
		      __u64 *value)
{
	struct drm_tessera_get_param gp = { .param = param, .index = index };

	if (ioctl(f->fd, DRM_IOCTL_TESSERA_GET_PARAM, &gp))
		return -1;
	*value = gp.value;
	return 0;
}

void open_file(struct fuzz *fz, struct fuzz_file *f)
{
	const char *node = f->node;
	__u64 caps, ports, v;
	unsigned int i;

	memset(f, 0, sizeof(*f));
	f->node = node;
	f->fd = open(node, O_RDWR | O_CLOEXEC);
	if (f->fd < 0) {
		violation(fz, "open %s: %s", node, strerror(errno));
		return;
	}
	if (file_param(f, DRM_TESSERA_PARAM_CONTEXT_ID, 0, &v))
		goto fail;
	f->context_id = v;
	if (file_param(f, DRM_TESSERA_PARAM_NUM_QUEUES, 0, &v))
		goto fail;
	f->num_queues = v;
	if (file_param(f, DRM_TESSERA_PARAM_HBM_SIZE, 0, &f->hbm_size) ||
	    file_param(f, DRM_TESSERA_PARAM_CAPS, 0, &caps) ||
	    file_param(f, DRM_TESSERA_PARAM_ICI_PORTS, 0, &ports) ||
	    file_param(f, DRM_TESSERA_PARAM_PORTS_WIRED, 0, &v))
		goto fail;
	f->traces = caps & TSR_CAP_TRACE;
	f->ici_ports = caps & TSR_CAP_ICI ? ports : 0;
	f->ports_wired = v;
	for (i = 0; i < ARRAY_SIZE(f->coords); i++) {
		if (file_param(f, DRM_TESSERA_PARAM_COORDS, i, &v))
			goto fail;
		f->coords[i] = v;
	}
	return;
fail:
	violation(fz, "GET_PARAM on a new file: %s", strerror(errno));
}

/*
 * Close a file with whatever it holds; its mappings outlive it a while,
 * and hold it, with its windows.
 */
void close_file(struct fuzz *fz, struct fuzz_file *f)
{
	windows_linger(fz, f);
	while (f->nbo) {
		struct fuzz_bo *bo = &f->bo[f->nbo - 1];

		if (bo->map && one_in(fz, 4))
			keep_zombie(fz, bo->map, bo->size, PROT_READ | PROT_WRITE,
				    bo->obj);
		else if (bo->map)
			munmap(bo->map, bo->size);
		f->nbo--;
	}
	close(f->fd);
}

void op_reopen(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_record *r;

	r = record_start(fz, f, OP_REOPEN, 0, fz->arg, 0);
	close_file(fz, f);
	open_file(fz, f);
	record_end(fz, r, OP_REOPEN, 0);
}

/* -------------------------------------------------------------- PRIME */

static struct fuzz_dmabuf *find_dmabuf(struct fuzz *fz, int fd)
{
	unsigned int i;

	for (i = 0; i < fz->ndmabuf; i++)
		if (fz->dmabuf[i].fd == fd)
			return &fz->dmabuf[i];
	return NULL;
}

void forget_dmabuf(struct fuzz *fz, struct fuzz_dmabuf *d)
{
	close(d->fd);
	*d = fz->dmabuf[--fz->ndmabuf];
}

static void add_dmabuf(struct fuzz *fz, struct fuzz_file *f, int fd,
		       const struct fuzz_bo *bo)
{
	struct fuzz_dmabuf *d;

	if (fz->ndmabuf == FUZZ_DMABUFS)
		forget_dmabuf(fz, &fz->dmabuf[below(fz, FUZZ_DMABUFS)]);
	d = &fz->dmabuf[fz->ndmabuf++];
	*d = (struct fuzz_dmabuf) {
		.fd = fd, .obj = bo->obj, .size = bo->size, .cmd = bo->cmd,
		.ro_on = bo->ro ? f->node : NULL,
	};
}

void op_prime_handle_to_fd(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_prime_handle *a = (void *)fz->arg;
	struct fuzz_bo *bo = pick_bo(fz, f);
	bool valid;
	int err;

	memset(a, 0, sizeof(*a));
	a->handle = bo ? bo->handle : stale_handle(fz, f);
	a->flags = DRM_CLOEXEC | (one_in(fz, 2) ? DRM_RDWR : 0);
	a->fd = -1;
	valid = !mutate(fz, f, OP_PRIME_HANDLE_TO_FD, a);
	bo = find_bo(f, a->handle);
	/* A purged buffer is refused (EFAULT): one marked DONTNEED may be. */
	err = fuzz_ioctl(fz, f, OP_PRIME_HANDLE_TO_FD, a,
			 valid && bo && !bo->hbm && !bo->dontneed);
	if (valid && fz->out_ok && bo && bo->hbm && err != EOPNOTSUPP)
		violation(fz, "PRIME export of HBM handle %u: %s, not EOPNOTSUPP",
			  a->handle, err ? strerror(err) : "success");
	if (err)
		return;
	if (!bo || bo->hbm || bo->purged) {
		violation(fz, "PRIME export of handle %u succeeded: %s",
			  a->handle, !bo ? "no such handle" :
			  bo->hbm ? "an HBM buffer" : "a purged buffer");
		close(a->fd);
		return;
	}
	add_dmabuf(fz, f, a->fd, bo);
}

/* Import a dma-buf into @f: the handle is the one @f holds for it, or new. */
void op_prime_fd_to_handle(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_prime_handle *a = (void *)fz->arg;
	struct fuzz_dmabuf *d = fz->ndmabuf ? &fz->dmabuf[below(fz, fz->ndmabuf)] :
					      NULL;
	struct fuzz_bo *held = NULL;
	unsigned int i;
	bool valid;

	make_room(fz, f, FUZZ_BO_MAX);
	memset(a, 0, sizeof(*a));
	a->fd = d ? d->fd : fz->null_fd;
	valid = d && !mutate(fz, f, OP_PRIME_FD_TO_HANDLE, a);
	d = find_dmabuf(fz, a->fd);
	/*
	 * A dma-buf outlives its buffer's handles, and a buffer without one
	 * is not exported and may be purged: its import is refused (EFAULT).
	 */
	if (fuzz_ioctl(fz, f, OP_PRIME_FD_TO_HANDLE, a,
		       valid && !(d && obj_ever_dontneed(fz, d->obj))))
		return;
	if (!d) {
		violation(fz, "PRIME import of fd %d, not a dma-buf of ours, gave handle %u",
			  a->fd, a->handle);
		return;
	}
	for (i = 0; i < f->nbo; i++)
		if (f->bo[i].obj == d->obj)
			held = &f->bo[i];
	if (held && held->handle != a->handle)
		violation(fz, "PRIME import of a buffer file %u holds as %u gave handle %u",
			  (unsigned int)(f - fz->file), held->handle, a->handle);
	if (!held) {
		held = add_bo(fz, f, a->handle, d->obj, false, d->cmd, d->size);
		if (held) {
			held->dontneed = obj_ever_dontneed(fz, d->obj);
			held->imported = true;
		}
	}
	/* Another device's import is a new buffer, read-write. */
	if (held)
		held->ro = d->ro_on && !strcmp(d->ro_on, f->node);
}
