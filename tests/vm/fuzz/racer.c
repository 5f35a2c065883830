// SPDX-License-Identifier: GPL-2.0
/*
 * The racer: a second thread that looks up the handles the main thread
 * creates and closes, on the same files.
 */
#include <stdint.h>
#include <sys/ioctl.h>
#include <time.h>

#include "fuzz.h"

/*
 * Lookups of @handle that change nothing: BO_INFO, or a SUBMIT whose
 * command buffer offset fails it after the lookups.  Return: 0 or the
 * errno, EEXIST for a SUBMIT that succeeded.
 */
int race_lookup(int fd, __u32 handle, bool submit, const char **name)
{
	struct drm_tessera_submit_bo bo = {
		.handle = handle, .flags = DRM_TESSERA_BO_READ,
	};
	struct drm_tessera_submit args = {
		.cmdbuf_handle = handle,
		.cmdbuf_offset = 1ull << 40,
		.cmdbuf_size = 8,
		.bo_count = 1,
		.bos = (uintptr_t)&bo,
		.bo_stride = sizeof(bo),
	};
	struct drm_tessera_bo_info info = { .handle = handle };

	*name = submit ? "SUBMIT" : "BO_INFO";
	if (submit)
		return ioctl(fd, DRM_IOCTL_TESSERA_SUBMIT, &args) ? errno : EEXIST;
	return ioctl(fd, DRM_IOCTL_TESSERA_BO_INFO, &info) ? errno : 0;
}

/* What race_lookup() may return; the file may be closed under it. */
const int race_errnos[] = {
	EINVAL, ENOENT, ECANCELED, EBADF, ENOTTY, 0
};

/*
 * A second thread on the same files: lookups of the lowest handles, which
 * the main thread keeps creating and closing.  The main thread may close
 * a file under them, or reuse its number.
 */
void *racer(void *arg)
{
	/* A share of the guest's CPU, not all of it. */
	const struct timespec pause = { .tv_nsec = 100000 };
	struct fuzz *fz = arg;
	__u64 rng = fz->rng ^ 0x5bd1e9955bd1e995ull;

	while (!__atomic_load_n(&fz->stop, __ATOMIC_RELAXED)) {
		__u64 r = splitmix64(&rng);
		int fd = __atomic_load_n(&fz->file[r & 1].fd, __ATOMIC_RELAXED);
		const char *name;
		int err = race_lookup(fd, 1 + (r >> 1) % 6, r & 0x100, &name);

		fz->race_calls++;
		if (err && !errno_allowed(race_errnos, err) && !fz->race_err) {
			fz->race_err = err;
			fz->race_op = name;
		}
		nanosleep(&pause, NULL);
	}
	return NULL;
}
