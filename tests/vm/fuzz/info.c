// SPDX-License-Identifier: GPL-2.0
/*
 * Calls that make nothing: GET_PARAM checked against what the fuzzer knows
 * (ici.c checks the slice), ioctl numbers past the driver's table, fdinfo.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fuzz.h"

/* The last GET_PARAM parameter the driver knows. */
#define LAST_PARAM	DRM_TESSERA_PARAM_SC_SPMEM_KIB

static bool param_takes_index(__u32 param)
{
	return param == DRM_TESSERA_PARAM_TOPOLOGY ||
	       param == DRM_TESSERA_PARAM_COORDS;
}

/* What the file knows of @param agrees with @value. */
static bool param_ok(const struct fuzz_file *f, __u32 param, __u32 index,
		     __u64 value)
{
	switch (param) {
	case DRM_TESSERA_PARAM_CHIP_ID:
		return value == TSR_CHIP_ID;
	case DRM_TESSERA_PARAM_NUM_QUEUES:
		return value == f->num_queues;
	case DRM_TESSERA_PARAM_CONTEXT_ID:
		return value == f->context_id;
	case DRM_TESSERA_PARAM_HBM_SIZE:
		return value == f->hbm_size;
	default:
		return check_ici_param(f, param, index, value);
	}
}

/*
 * Parameters 0 to past the last, indexes mostly right: an unknown
 * parameter, or an index the parameter does not take, is EINVAL.
 */
void op_get_param(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_get_param *a = (void *)fz->arg;
	bool mutated, known;

	memset(a, 0, sizeof(*a));
	a->param = below(fz, LAST_PARAM + 2);
	if (one_in(fz, 4))
		a->index = below(fz, 4);
	mutated = mutate(fz, f, OP_GET_PARAM, a);
	known = a->param >= 1 && a->param <= LAST_PARAM &&
		a->index < (param_takes_index(a->param) ? 3u : 1u);
	if (fuzz_ioctl(fz, f, OP_GET_PARAM, a, known && !mutated) ||
	    !fz->out_ok)
		return;
	if (!known)
		violation(fz, "GET_PARAM %u index %u succeeded", a->param,
			  a->index);
	else if (!param_ok(f, a->param, a->index, a->value))
		violation(fz, "GET_PARAM %u index %u: %llu", a->param, a->index,
			  (unsigned long long)a->value);
}

/* The driver's last ioctl: the numbers past it are unknown. */
#define DRIVER_LAST_IOCTL	DRM_TESSERA_BO_MADVISE

/* Driver ioctl numbers past the table, with any argument size. */
void op_unknown_ioctl(struct fuzz *fz, struct fuzz_file *f)
{
	unsigned int first = DRM_COMMAND_BASE + DRIVER_LAST_IOCTL + 1;
	unsigned int nr = first + below(fz, DRM_COMMAND_END - first);
	unsigned long req = _IOC(below(fz, 4), DRM_IOCTL_BASE, nr,
				 below(fz, 256));
	struct fuzz_record *r;
	int err;

	memset(fz->arg, 0, 256);
	r = record_start(fz, f, OP_UNKNOWN_IOCTL, req, fz->arg, 0);
	err = ioctl(f->fd, req, fz->arg) ? errno : 0;
	record_end(fz, r, OP_UNKNOWN_IOCTL, err);
	if (!err)
		violation(fz, "unknown ioctl 0x%lx succeeded", req);
}

/* The driver's fdinfo: memory per placement, time per queue. */
void op_fdinfo(struct fuzz *fz, struct fuzz_file *f)
{
	struct fuzz_record *r;
	char path[64], text[2048];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", f->fd);
	r = record_start(fz, f, OP_FDINFO, 0, fz->arg, 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		n = read(fd, text, sizeof(text) - 1);
	record_end(fz, r, OP_FDINFO, n < 0 ? errno : 0);
	if (fd >= 0)
		close(fd);
	if (n < 0)
		return;
	text[n] = 0;
	if (!strstr(text, "drm-driver:\ttessera\n") ||
	    !strstr(text, "drm-engine-q0:\t") || !strstr(text, "drm-total-hbm:\t"))
		violation(fz, "fdinfo of file %u lacks the driver's keys:\n%s",
			  (unsigned int)(f - fz->file), text);
}
