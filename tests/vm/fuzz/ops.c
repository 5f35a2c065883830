// SPDX-License-Identifier: GPL-2.0
/*
 * What the fuzzer does, one entry per call: the ioctl request, the
 * argument's fields and their kinds, the errnos it may return, how often
 * it is picked and the function that makes it.
 */
#include <stddef.h>

#include "fuzz.h"

/* ------------------------------------------------------ field tables */

#define FIELD(type, member, kind) \
	{ #member, offsetof(type, member), sizeof(((type *)0)->member), kind }

static const struct fuzz_field get_param_fields[] = {
	FIELD(struct drm_tessera_get_param, param, FK_VAL),
	FIELD(struct drm_tessera_get_param, index, FK_VAL),
	FIELD(struct drm_tessera_get_param, value, FK_VAL),
	{ }
};

static const struct fuzz_field bo_create_fields[] = {
	FIELD(struct drm_tessera_bo_create, size, FK_VAL),
	FIELD(struct drm_tessera_bo_create, flags, FK_VAL),
	FIELD(struct drm_tessera_bo_create, handle, FK_HANDLE),
	{ }
};

static const struct fuzz_field bo_info_fields[] = {
	FIELD(struct drm_tessera_bo_info, handle, FK_HANDLE),
	FIELD(struct drm_tessera_bo_info, flags, FK_VAL),
	FIELD(struct drm_tessera_bo_info, mmap_offset, FK_VAL),
	FIELD(struct drm_tessera_bo_info, pad, FK_VAL),
	{ }
};

static const struct fuzz_field bo_madvise_fields[] = {
	FIELD(struct drm_tessera_bo_madvise, handle, FK_HANDLE),
	FIELD(struct drm_tessera_bo_madvise, madv, FK_VAL),
	FIELD(struct drm_tessera_bo_madvise, flags, FK_VAL),
	FIELD(struct drm_tessera_bo_madvise, retained, FK_VAL),
	{ }
};

static const struct fuzz_field submit_fields[] = {
	FIELD(struct drm_tessera_submit, extensions, FK_PTR),
	FIELD(struct drm_tessera_submit, flags, FK_VAL),
	FIELD(struct drm_tessera_submit, queue, FK_VAL),
	FIELD(struct drm_tessera_submit, priority, FK_VAL),
	FIELD(struct drm_tessera_submit, cmdbuf_handle, FK_HANDLE),
	FIELD(struct drm_tessera_submit, cmdbuf_offset, FK_VAL),
	FIELD(struct drm_tessera_submit, cmdbuf_size, FK_VAL),
	FIELD(struct drm_tessera_submit, bo_count, FK_VAL),
	FIELD(struct drm_tessera_submit, bos, FK_PTR),
	FIELD(struct drm_tessera_submit, bo_stride, FK_VAL),
	FIELD(struct drm_tessera_submit, sync_count, FK_VAL),
	FIELD(struct drm_tessera_submit, syncs, FK_PTR),
	FIELD(struct drm_tessera_submit, sync_stride, FK_VAL),
	FIELD(struct drm_tessera_submit, pad, FK_VAL),
	FIELD(struct drm_tessera_submit, seq, FK_VAL),
	{ }
};

static const struct fuzz_field submit_batch_fields[] = {
	FIELD(struct drm_tessera_submit_batch, extensions, FK_PTR),
	FIELD(struct drm_tessera_submit_batch, flags, FK_VAL),
	FIELD(struct drm_tessera_submit_batch, count, FK_VAL),
	FIELD(struct drm_tessera_submit_batch, jobs, FK_PTR),
	FIELD(struct drm_tessera_submit_batch, stride, FK_VAL),
	FIELD(struct drm_tessera_submit_batch, error_index, FK_VAL),
	{ }
};

static const struct fuzz_field job_status_fields[] = {
	FIELD(struct drm_tessera_job_status, seq, FK_VAL),
	FIELD(struct drm_tessera_job_status, flags, FK_VAL),
	FIELD(struct drm_tessera_job_status, state, FK_VAL),
	{ }
};

static const struct fuzz_field window_open_fields[] = {
	FIELD(struct drm_tessera_window_open, handle, FK_HANDLE),
	FIELD(struct drm_tessera_window_open, flags, FK_VAL),
	FIELD(struct drm_tessera_window_open, offset, FK_VAL),
	FIELD(struct drm_tessera_window_open, size, FK_VAL),
	FIELD(struct drm_tessera_window_open, key, FK_VAL),
	FIELD(struct drm_tessera_window_open, id, FK_VAL),
	FIELD(struct drm_tessera_window_open, pad, FK_VAL),
	{ }
};

static const struct fuzz_field window_close_fields[] = {
	FIELD(struct drm_tessera_window_close, id, FK_VAL),
	FIELD(struct drm_tessera_window_close, flags, FK_VAL),
	{ }
};

static const struct fuzz_field link_info_fields[] = {
	FIELD(struct drm_tessera_link_info, port, FK_VAL),
	FIELD(struct drm_tessera_link_info, flags, FK_VAL),
	{ }
};

static const struct fuzz_field gem_close_fields[] = {
	FIELD(struct drm_gem_close, handle, FK_HANDLE),
	FIELD(struct drm_gem_close, pad, FK_VAL),
	{ }
};

static const struct fuzz_field syncobj_create_fields[] = {
	FIELD(struct drm_syncobj_create, handle, FK_SYNCOBJ),
	FIELD(struct drm_syncobj_create, flags, FK_VAL),
	{ }
};

static const struct fuzz_field syncobj_destroy_fields[] = {
	FIELD(struct drm_syncobj_destroy, handle, FK_SYNCOBJ),
	FIELD(struct drm_syncobj_destroy, pad, FK_VAL),
	{ }
};

static const struct fuzz_field syncobj_wait_fields[] = {
	FIELD(struct drm_syncobj_wait, handles, FK_PTR),
	FIELD(struct drm_syncobj_wait, timeout_nsec, FK_TIMEOUT),
	FIELD(struct drm_syncobj_wait, count_handles, FK_VAL),
	FIELD(struct drm_syncobj_wait, flags, FK_VAL),
	FIELD(struct drm_syncobj_wait, first_signaled, FK_VAL),
	FIELD(struct drm_syncobj_wait, pad, FK_VAL),
	{ }
};

static const struct fuzz_field timeline_wait_fields[] = {
	FIELD(struct drm_syncobj_timeline_wait, handles, FK_PTR),
	FIELD(struct drm_syncobj_timeline_wait, points, FK_PTR),
	FIELD(struct drm_syncobj_timeline_wait, timeout_nsec, FK_TIMEOUT),
	FIELD(struct drm_syncobj_timeline_wait, count_handles, FK_VAL),
	FIELD(struct drm_syncobj_timeline_wait, flags, FK_VAL),
	FIELD(struct drm_syncobj_timeline_wait, first_signaled, FK_VAL),
	FIELD(struct drm_syncobj_timeline_wait, pad, FK_VAL),
	{ }
};

static const struct fuzz_field syncobj_array_fields[] = {
	FIELD(struct drm_syncobj_array, handles, FK_PTR),
	FIELD(struct drm_syncobj_array, count_handles, FK_VAL),
	FIELD(struct drm_syncobj_array, pad, FK_VAL),
	{ }
};

static const struct fuzz_field timeline_array_fields[] = {
	FIELD(struct drm_syncobj_timeline_array, handles, FK_PTR),
	FIELD(struct drm_syncobj_timeline_array, points, FK_PTR),
	FIELD(struct drm_syncobj_timeline_array, count_handles, FK_VAL),
	FIELD(struct drm_syncobj_timeline_array, flags, FK_VAL),
	{ }
};

static const struct fuzz_field prime_fields[] = {
	FIELD(struct drm_prime_handle, handle, FK_HANDLE),
	FIELD(struct drm_prime_handle, flags, FK_VAL),
	FIELD(struct drm_prime_handle, fd, FK_FD),
	{ }
};

static const struct fuzz_field mmap_fields[] = {
	FIELD(struct fuzz_mmap_args, offset, FK_VAL),
	FIELD(struct fuzz_mmap_args, length, FK_VAL),
	FIELD(struct fuzz_mmap_args, prot, FK_VAL),
	FIELD(struct fuzz_mmap_args, flags, FK_VAL),
	FIELD(struct fuzz_mmap_args, handle, FK_HANDLE),
	{ }
};

static const struct fuzz_field no_fields[] = {
	{ }
};

/* ------------------------------------------------------------- errnos */

/*
 * Errnos each call may return, from the driver and the DRM core paths it
 * takes.  EINTR/ERESTARTSYS cannot happen: no signal is ever sent.
 */
static const int info_errnos[] = { EINVAL, EFAULT, ENODEV, 0 };
static const int bo_create_errnos[] = { EINVAL, EFAULT, ENODEV, ENOMEM, 0 };
static const int bo_info_errnos[] = { EINVAL, EFAULT, ENOENT, ENOMEM, 0 };
static const int bo_madvise_errnos[] = { EINVAL, EFAULT, ENOENT, 0 };
static const int submit_errnos[] = {
	EINVAL, EFAULT, ENODEV, ENOMEM, ENOENT, EPERM, ECANCELED, E2BIG,
	EOPNOTSUPP, 0
};
static const int job_status_errnos[] = { EINVAL, EFAULT, ENOENT, 0 };
static const int window_open_errnos[] = {
	EINVAL, EFAULT, ENODEV, ENOENT, EBUSY, ENOSPC, EACCES, EOPNOTSUPP, 0
};
static const int window_close_errnos[] = { EINVAL, EFAULT, ENODEV, ENOENT, 0 };
static const int gem_close_errnos[] = { EINVAL, EFAULT, 0 };
static const int syncobj_errnos[] = { EINVAL, EFAULT, ENOENT, ENOMEM, 0 };
static const int syncobj_wait_errnos[] = {
	EINVAL, EFAULT, ENOENT, ENOMEM, ETIME, 0
};
static const int prime_to_fd_errnos[] = {
	EINVAL, EFAULT, ENOENT, ENOMEM, ENODEV, EOPNOTSUPP, EMFILE, 0
};
static const int prime_to_handle_errnos[] = {
	EINVAL, EFAULT, ENOENT, ENOMEM, ENODEV, EBADF, 0
};
static const int mmap_errnos[] = {
	EINVAL, EACCES, ENOMEM, ENODEV, EPERM, EOVERFLOW, EFAULT, 0
};
static const int unknown_errnos[] = { EINVAL, 0 };
static const int no_errnos[] = { 0 };

/* ------------------------------------------------------------ the table */

#define OP(op_name, req, type, w, flds, errs, fn)			\
	[OP_##op_name] = {						\
		.name = #op_name, .request = req, .arg_size = sizeof(type), \
		.weight = w, .fields = flds, .errnos = errs, .run = fn,	\
	}
#define DRIVER_OP(op_name, type, w, flds, errs, fn)			\
	[OP_##op_name] = {						\
		.name = #op_name, .request = DRM_IOCTL_TESSERA_##op_name, \
		.arg_size = sizeof(type), .driver = true, .weight = w,	\
		.fields = flds, .errnos = errs, .run = fn,		\
	}

/* Weights: what the time in the VM allows, cheap calls dominate. */
const struct fuzz_op_desc fuzz_ops[OP_COUNT] = {
	DRIVER_OP(GET_PARAM, struct drm_tessera_get_param, 8, get_param_fields,
		  info_errnos, op_get_param),
	DRIVER_OP(BO_CREATE, struct drm_tessera_bo_create, 6,
		  bo_create_fields, bo_create_errnos, op_bo_create),
	DRIVER_OP(BO_INFO, struct drm_tessera_bo_info, 8, bo_info_fields,
		  bo_info_errnos, op_bo_info),
	DRIVER_OP(BO_MADVISE, struct drm_tessera_bo_madvise, 3,
		  bo_madvise_fields, bo_madvise_errnos, op_bo_madvise),
	DRIVER_OP(SUBMIT, struct drm_tessera_submit, 8, submit_fields,
		  submit_errnos, op_submit),
	DRIVER_OP(SUBMIT_BATCH, struct drm_tessera_submit_batch, 4,
		  submit_batch_fields, submit_errnos, op_submit_batch),
	DRIVER_OP(JOB_STATUS, struct drm_tessera_job_status, 8,
		  job_status_fields, job_status_errnos, op_job_status),
	DRIVER_OP(WINDOW_OPEN, struct drm_tessera_window_open, 3,
		  window_open_fields, window_open_errnos, op_window_open),
	DRIVER_OP(WINDOW_CLOSE, struct drm_tessera_window_close, 2,
		  window_close_fields, window_close_errnos, op_window_close),
	DRIVER_OP(LINK_INFO, struct drm_tessera_link_info, 2, link_info_fields,
		  info_errnos, op_link_info),
	OP(GEM_CLOSE, DRM_IOCTL_GEM_CLOSE, struct drm_gem_close, 4,
	   gem_close_fields, gem_close_errnos, op_gem_close),
	OP(SYNCOBJ_CREATE, DRM_IOCTL_SYNCOBJ_CREATE, struct drm_syncobj_create,
	   3, syncobj_create_fields, syncobj_errnos, op_syncobj_create),
	OP(SYNCOBJ_DESTROY, DRM_IOCTL_SYNCOBJ_DESTROY,
	   struct drm_syncobj_destroy, 2, syncobj_destroy_fields,
	   syncobj_errnos, op_syncobj_destroy),
	OP(SYNCOBJ_WAIT, DRM_IOCTL_SYNCOBJ_WAIT, struct drm_syncobj_wait, 3,
	   syncobj_wait_fields, syncobj_wait_errnos, op_syncobj_wait),
	OP(SYNCOBJ_TIMELINE_WAIT, DRM_IOCTL_SYNCOBJ_TIMELINE_WAIT,
	   struct drm_syncobj_timeline_wait, 2, timeline_wait_fields,
	   syncobj_wait_errnos, op_syncobj_timeline_wait),
	OP(SYNCOBJ_RESET, DRM_IOCTL_SYNCOBJ_RESET, struct drm_syncobj_array, 2,
	   syncobj_array_fields, syncobj_errnos, op_syncobj_reset),
	OP(SYNCOBJ_SIGNAL, DRM_IOCTL_SYNCOBJ_SIGNAL, struct drm_syncobj_array,
	   2, syncobj_array_fields, syncobj_errnos, op_syncobj_signal),
	OP(SYNCOBJ_TIMELINE_SIGNAL, DRM_IOCTL_SYNCOBJ_TIMELINE_SIGNAL,
	   struct drm_syncobj_timeline_array, 2, timeline_array_fields,
	   syncobj_errnos, op_syncobj_timeline_signal),
	OP(SYNCOBJ_QUERY, DRM_IOCTL_SYNCOBJ_QUERY,
	   struct drm_syncobj_timeline_array, 1, timeline_array_fields,
	   syncobj_errnos, op_syncobj_query),
	OP(PRIME_HANDLE_TO_FD, DRM_IOCTL_PRIME_HANDLE_TO_FD,
	   struct drm_prime_handle, 2, prime_fields, prime_to_fd_errnos,
	   op_prime_handle_to_fd),
	OP(PRIME_FD_TO_HANDLE, DRM_IOCTL_PRIME_FD_TO_HANDLE,
	   struct drm_prime_handle, 2, prime_fields, prime_to_handle_errnos,
	   op_prime_fd_to_handle),
	OP(MMAP, 0, struct fuzz_mmap_args, 4, mmap_fields, mmap_errnos,
	   op_mmap),
	OP(UNKNOWN_IOCTL, 0, __u64, 1, no_fields, unknown_errnos,
	   op_unknown_ioctl),
	OP(FDINFO, 0, __u64, 1, no_fields, no_errnos, op_fdinfo),
	OP(REOPEN, 0, __u64, 0, no_fields, no_errnos, op_reopen),
	OP(CHAOS, 0, __u64, 0, no_fields, no_errnos, op_chaos),
};

/* ------------------------------------------------------------- a step */

static enum fuzz_op pick_op(struct fuzz *fz)
{
	static unsigned int total;
	unsigned int i, w;

	if (!total)
		for (i = 0; i < OP_COUNT; i++)
			total += fuzz_ops[i].weight;
	w = below(fz, total);
	for (i = 0; w >= fuzz_ops[i].weight; i++)
		w -= fuzz_ops[i].weight;
	return i;
}

void fuzz_step(struct fuzz *fz)
{
	/* The other chip's file is there for PRIME; it gets a share of calls. */
	unsigned int i = one_in(fz, 6) ? fz->nfiles - 1 : below(fz, 2);
	struct fuzz_file *f = &fz->file[i];
	enum fuzz_op op = pick_op(fz);

	/* A banned file gets a few more calls, then a fresh context. */
	if ((f->banned && one_in(fz, 32)) || one_in(fz, 4096))
		op = OP_REOPEN;
	else if (fz->debugfs[0] && one_in(fz, 5000))
		op = OP_CHAOS;
	fuzz_ops[op].run(fz, f);
}
