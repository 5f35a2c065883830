// SPDX-License-Identifier: GPL-2.0
/*
 * Issuing a call: the flight recorder that keeps the last calls, the
 * errno each call may return, a claimed argument size now and then, and
 * the report of a driver misbehaviour with the calls that led to it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include "fuzz.h"

/* In memory the harness's parent shares: see struct fuzz_recorder. */
struct fuzz_recorder *recorder;

__attribute__((constructor)) static void recorder_init(void)
{
	recorder = mmap(NULL, sizeof(*recorder), PROT_READ | PROT_WRITE,
			MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (recorder == MAP_FAILED)
		abort();
}

/* ------------------------------------------------------------ reports */

static void print_record(const struct fuzz_record *r)
{
	const struct fuzz_op_desc *op = &fuzz_ops[r->op];
	const struct fuzz_field *fl;
	char line[512];
	int n;

	n = snprintf(line, sizeof(line), "#   call %u file %u %s", r->call,
		     r->file, op->name);
	if (op->request)
		n += snprintf(line + n, sizeof(line) - n, " (0x%lx)", r->request);
	for (fl = op->fields; fl->name && n < (int)sizeof(line); fl++)
		if (fl->offset + fl->size <= r->arg_len)
			n += snprintf(line + n, sizeof(line) - n, " %s=0x%llx",
				      fl->name,
				      (unsigned long long)field_get(r->arg, fl));
	printf("%s\n", line);
	if (r->extra[0])
		printf("#     %s\n", r->extra);
	if (r->done)
		printf("#     -> %s\n", r->err ? strerror(r->err) : "ok");
	else
		printf("#     -> did not return\n");
}

void print_last_calls(unsigned int count)
{
	unsigned int i, first;

	if (recorder->calls < count)
		count = recorder->calls;
	first = recorder->calls - count;
	for (i = first; i < recorder->calls; i++)
		print_record(&recorder->rec[i % FUZZ_RECORDS]);
}

/* Report a driver misbehaviour with the calls that led to it. */
void violation(struct fuzz *fz, const char *fmt, ...)
{
	va_list ap;
	int n;

	fz->violations++;
	if (fz->violations > FUZZ_MAX_REPORTS)
		return;
	printf("# FUZZ VIOLATION at call %u: ", fz->call);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	if (fz->violations == 1) {
		n = snprintf(fz->first_violation, sizeof(fz->first_violation),
			     "call %u: ", fz->call);
		va_start(ap, fmt);
		vsnprintf(fz->first_violation + n,
			  sizeof(fz->first_violation) - n, fmt, ap);
		va_end(ap);
	}
	printf("\n# the call and the ones before it:\n");
	print_last_calls(fz->violations <= 3 ? 8 : 1);
	fflush(stdout);
}

bool errno_allowed(const int *allowed, int err)
{
	for (; *allowed; allowed++)
		if (*allowed == err)
			return true;
	return false;
}

/* ------------------------------------------------------ issuing calls */

struct fuzz_record *record_start(struct fuzz *fz, struct fuzz_file *f,
				 enum fuzz_op op, unsigned long request,
				 const void *arg, unsigned int size)
{
	struct fuzz_record *r = &recorder->rec[fz->call % FUZZ_RECORDS];

	r->call = fz->call;
	r->op = op;
	r->file = f - fz->file;
	r->done = 0;
	r->request = request;
	r->arg_len = size < FUZZ_MAX_ARG ? size : FUZZ_MAX_ARG;
	memcpy(r->arg, arg, r->arg_len);
	memcpy(r->extra, fz->extra, sizeof(r->extra));
	fz->extra[0] = 0;
	recorder->calls = ++fz->call;
	fz->start = now_ns();
	return r;
}

void record_end(struct fuzz *fz, struct fuzz_record *r, enum fuzz_op op,
		int err)
{
	struct fuzz_stats *st = &fz->stats[op];
	__u64 ns = now_ns() - fz->start;

	r->err = err;
	r->done = 1;
	st->calls++;
	st->ns += ns;
	if (ns > st->max_ns)
		st->max_ns = ns;
	if (!err)
		st->ok++;
	else if (err < (int)ARRAY_SIZE(st->errnos))
		st->errnos[err]++;
	if (fz->trace)
		print_record(r);
	if (err && !errno_allowed(fuzz_ops[op].errnos, err))
		violation(fz, "%s returned %s, not one of its documented errnos",
			  fuzz_ops[op].name, strerror(err));
}

/*
 * Sometimes the request claims another argument size, as an older or newer
 * caller would; never one too short to return the name of what the call
 * makes (a handle, a window).  What a shorter request leaves out, the
 * kernel takes as zero: so does @arg.
 */
static unsigned long fuzz_request(struct fuzz *fz, enum fuzz_op op,
				  void *arg, bool *valid)
{
	const struct fuzz_op_desc *d = &fuzz_ops[op];
	bool makes = op == OP_BO_CREATE || op == OP_WINDOW_OPEN;
	unsigned int size;

	if (!d->driver || fz->exact || !one_in(fz, 24))
		return d->request;
	size = d->arg_size + 8 * below(fz, 64);
	if (!makes && one_in(fz, 2))
		size = below(fz, d->arg_size + 1);
	if (size < d->arg_size)
		memset((__u8 *)arg + size, 0, d->arg_size - size);
	*valid = false;
	return (d->request & ~((unsigned long)_IOC_SIZEMASK << _IOC_SIZESHIFT)) |
	       (unsigned long)size << _IOC_SIZESHIFT;
}

/* Failures of valid calls that the circumstances explain. */
static bool excused(const struct fuzz *fz, enum fuzz_op op, const void *arg,
		    int err)
{
	switch (err) {
	case ENOMEM:		/* real, or injected through debugfs */
		return true;
	case ECANCELED:		/* the context was banned after faults */
		return op == OP_SUBMIT || op == OP_SUBMIT_BATCH;
	default:
		return false;
	}
}

/*
 * Issue ioctl @op with @arg on @f, check the errno and, for a call built
 * valid, that it succeeded.  fz->out_ok says whether @arg now holds all
 * the call's results.  Return: 0 or the errno.
 */
int fuzz_ioctl(struct fuzz *fz, struct fuzz_file *f, enum fuzz_op op,
	       void *arg, bool valid)
{
	unsigned long req = fuzz_request(fz, op, arg, &valid);
	struct fuzz_record *r;
	void *p = arg;
	int ret, err;

	if (!fz->exact && one_in(fz, 64)) {
		p = bad_pointer(fz);
		valid = false;
		/* Nothing to copy cannot fault: the kernel reads zeros, as @arg. */
		if (!_IOC_SIZE(req))
			memset(arg, 0, fuzz_ops[op].arg_size);
	}
	r = record_start(fz, f, op, req, arg, _IOC_SIZE(req));
	ret = ioctl(f->fd, req, p);
	err = ret ? errno : 0;
	record_end(fz, r, op, err);
	if (valid && err && !excused(fz, op, arg, err))
		violation(fz, "valid %s failed: %s", fuzz_ops[op].name,
			  strerror(err));
	fz->out_ok = p == arg && _IOC_SIZE(req) >= fuzz_ops[op].arg_size;
	return err;
}
