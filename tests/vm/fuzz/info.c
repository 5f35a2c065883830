// SPDX-License-Identifier: GPL-2.0
/*
 * Calls that make nothing: GET_INFO, PING and GET_COUNTERS checked against
 * what the fuzzer knows (ici.c checks the slice and the ports), ioctl
 * numbers past the driver's table, fdinfo.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fuzz.h"

void op_get_info(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_info *a = (void *)fz->arg;
	bool valid;

	memset(a, 0, sizeof(*a));
	valid = !mutate(fz, f, OP_GET_INFO, a);
	if (fuzz_ioctl(fz, f, OP_GET_INFO, a, valid) || !fz->out_ok)
		return;
	if (a->chip_id != TSR_CHIP_ID ||
	    a->uapi_version != DRM_TESSERA_UAPI_VERSION ||
	    a->num_queues != f->num_queues || a->context_id != f->context_id ||
	    a->hbm_size != f->hbm_size || a->hbm_free > a->hbm_size ||
	    a->pad[0] | a->pad[1] | a->pad[2] | a->pad2)
		violation(fz, "GET_INFO: chip 0x%x uapi %u queues %u context %u (was %u) hbm %llu free %llu",
			  a->chip_id, a->uapi_version, a->num_queues,
			  a->context_id, f->context_id,
			  (unsigned long long)a->hbm_size,
			  (unsigned long long)a->hbm_free);
	check_ici_info(fz, f, a);
}

void op_ping(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_ping *a = (void *)fz->arg;
	bool valid;

	memset(a, 0, sizeof(*a));
	a->cookie = rnd(fz);
	/* Tiny timeouts may expire; long ones are not worth a lost interrupt. */
	if (one_in(fz, 2))
		a->timeout_ms = one_in(fz, 2) ? 1 + below(fz, 4) :
						1 + below(fz, 2000);
	valid = !mutate(fz, f, OP_PING, a);
	if (a->timeout_ms > 2000 &&
	    a->timeout_ms <= DRM_TESSERA_PING_MAX_TIMEOUT_MS)
		a->timeout_ms = 2000;
	if (fuzz_ioctl(fz, f, OP_PING, a, valid) || !fz->out_ok)
		return;
	if (a->echo != a->cookie)
		violation(fz, "PING of cookie 0x%08x echoed 0x%08x", a->cookie,
			  a->echo);
}

/*
 * Driver counters never go back; no more jobs end than were submitted, no
 * port goes down more often than it came up.
 */
static void check_counters(struct fuzz *fz, struct fuzz_file *f,
			   const struct drm_tessera_counters *c)
{
	const __u64 *now = &c->jobs_submitted, *was = &f->counters.jobs_submitted;
	unsigned int i, n = &c->link_ups - &c->jobs_submitted + 1;

	for (i = 0; i < n; i++)
		if (now[i] < was[i])
			violation(fz, "GET_COUNTERS: driver counter %u went from %llu to %llu",
				  i, (unsigned long long)was[i],
				  (unsigned long long)now[i]);
	if (c->jobs_completed + c->jobs_failed > c->jobs_submitted)
		violation(fz, "GET_COUNTERS: %llu jobs completed and %llu failed of %llu submitted",
			  (unsigned long long)c->jobs_completed,
			  (unsigned long long)c->jobs_failed,
			  (unsigned long long)c->jobs_submitted);
	if (c->link_downs > c->link_ups)
		violation(fz, "GET_COUNTERS: links went down %llu times and up %llu",
			  (unsigned long long)c->link_downs,
			  (unsigned long long)c->link_ups);
	f->counters = *c;
}

void op_get_counters(struct fuzz *fz, struct fuzz_file *f)
{
	struct drm_tessera_counters *a = (void *)fz->arg;
	bool valid;

	memset(a, 0, sizeof(*a));
	valid = !mutate(fz, f, OP_GET_COUNTERS, a);
	if (!fuzz_ioctl(fz, f, OP_GET_COUNTERS, a, valid) && fz->out_ok)
		check_counters(fz, f, a);
}

/* The driver's last ioctl: the numbers past it are unknown. */
#define DRIVER_LAST_IOCTL	DRM_TESSERA_LINK_INFO

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
