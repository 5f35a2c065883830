// SPDX-License-Identifier: MIT
/*
 * slice_failure: the guest's half of the slice failure tests
 * (tests/slice/failures.py, the "failures" suite of tests/run-checks).
 * The host breaks something (stops or kills a VM, takes a link down);
 * this program says, one line per event, what every chip saw and when.
 *
 *   slice_failure all-reduce [--count N] [--calls N] [--seconds S]
 *                            [--reset X,Y,Z --reset-after N]
 *                            [--stall-host H --stall-after N]
 *
 * runs, for every local chip, a process of its own with a communicator
 * of its own (so each chip's call is timed alone, and a failure reaches
 * even a chip in the same VM over ICI), all-reducing N f32 in a loop.
 * Each call's inputs differ from the last one's and its output starts as
 * NaN, so a call that ends before every part arrived cannot pass as
 * exact.  With --calls, that many calls must all be exact; without, the
 * loop runs until a call fails or S seconds pass, and then every chip
 * stops after the same call: the last element of each is a vote, 1 from
 * a chip whose S seconds have passed (one stopping by its own clock alone
 * would leave another's next call waiting for it).  A call that fails
 * LINK_DOWN is followed by a line per port of the chip that is not up
 * ("port +y (2) down").  After a failure the chip's process runs one more
 * job on its context (it must not be banned) and prints its chip's driver
 * counters.  With --reset, the
 * process of the chip at X,Y,Z resets its chip (debugfs force_recovery)
 * once a job of call N+1 has started there (held by fault_hang_after).  With --stall-host, the processes of host
 * H (TESSERA_HOST_ID) wait 3 s before call N+1, so that the host can stop
 * that VM while the other hosts' chips have sent what they could and
 * only wait.
 *
 *   slice_failure route --from X,Y,Z --via X,Y,Z --to X,Y,Z --port P
 *                       [--beside X,Y,Z]
 *
 * in a VM holding those chips: writes from --from to --to, whose route
 * goes through --via, and to --via itself; waits until --via's port P
 * (its link towards --to) is down; writes both at once (and to --beside,
 * another chip reached through --via); waits until the port is up again
 * and writes to --to once more.
 *
 * Exit status 0 if every call or write ended as the mode expects (exact,
 * or failed with no result passed as exact; LINK_DOWN or OK), 1 if not
 * (the lines say which), 2 on a bad command line.  Whether it ended in
 * time is the host's to judge: its clock sees the cause.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <accel/accel.h>

#include "slice_ports.h"

#define NS_PER_S	1000000000ull
/* A call or a write that has not ended by then never will by itself. */
#define WAIT_NS		(15 * NS_PER_S)
/* How long the neighbours' processes may take to open their windows. */
#define CONNECT_NS	(10 * NS_PER_S)
/* How long the host may take to break or mend a link. */
#define LINK_WAIT_NS	(60 * NS_PER_S)
/* How long the processes of --stall-host wait before their next call. */
#define STALL_S		3
/* The window the route mode opens on every chip, and what it holds. */
#define ROUTE_WINDOW	9
#define ROUTE_BYTES	(64u << 10)
#define ROUTE_SEM	ROUTE_BYTES

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static double ms_since(uint64_t t)
{
	return (now_ns() - t) / 1e6;
}

static bool parse_coords(const char *text, struct accel_coords *c)
{
	unsigned int v[3] = { 0, 0, 0 };
	int n;

	if (sscanf(text, "%u,%u,%u%n", &v[0], &v[1], &v[2], &n) != 3 ||
	    text[n] || v[0] > 255 || v[1] > 255 || v[2] > 255)
		return false;
	c->c[0] = v[0];
	c->c[1] = v[1];
	c->c[2] = v[2];
	return true;
}

static bool same_coords(struct accel_coords a, struct accel_coords b)
{
	return !memcmp(a.c, b.c, sizeof(a.c));
}

/* ------------------------------------------------------------ all-reduce */

/* This host's place in the slice, as tools/tessera-slice sets it; -1 if not. */
static int host_id(void)
{
	const char *id = getenv("TESSERA_HOST_ID");

	return id && *id ? atoi(id) : -1;
}

struct options {
	uint64_t count;
	unsigned int calls;		/* 0: until a call fails */
	unsigned int seconds;
	bool reset;
	struct accel_coords reset_at;
	unsigned int reset_after;
	int stall_host;			/* -1: none */
	unsigned int stall_after;
};

/* One chip's process. */
struct chip {
	struct accel_device *dev;
	struct accel_device_info info;
	struct accel_comm *comm;
	struct accel_buffer *send, *recv;
	float *in, *out;
	char name[32];
};

static void say(const struct chip *ch, const char *fmt, ...)
{
	va_list ap;

	printf("slice_failure: %s: ", ch->name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}


/* Chip @rank's input of call @k: small integers, so every sum is exact. */
static float input(unsigned int rank, uint64_t i, unsigned int k)
{
	return (float)((int)((rank + 1) * (k % 5 + 1) + (i + k) % 13) - 20);
}

/*
 * Call @k's inputs into send, and without --calls this chip's vote to
 * stop (@stop) in the last element; NaN into recv, which no sum is.
 */
static int prepare(struct chip *ch, const struct options *o, unsigned int k,
		   bool stop)
{
	uint64_t i;
	int ret;

	for (i = 0; i < o->count; i++) {
		ch->in[i] = input(ch->info.slice_index, i, k);
		ch->out[i] = NAN;
	}
	if (!o->calls)
		ch->in[o->count - 1] = stop;
	ret = accel_buffer_upload(ch->send, 0, ch->in, o->count * 4);
	return ret ?: accel_buffer_upload(ch->recv, 0, ch->out, o->count * 4);
}

/* The elements of call @k's result that are not the slice's sum. */
static uint64_t wrong(struct chip *ch, const struct options *o, unsigned int k)
{
	uint64_t i, bad = 0;
	unsigned int r;

	if (accel_buffer_download(ch->recv, 0, ch->out, o->count * 4))
		return o->count;
	for (i = 0; i < o->count; i++) {
		float want = 0, v = ch->out[i];

		if (!o->calls && i == o->count - 1) {
			/* The votes: a whole number, at most one a chip. */
			if (!(v >= 0 && v <= ch->info.slice_chips &&
			      v == floorf(v)) && !bad++)
				say(ch, "call %u: the votes to stop are %g", k, v);
			continue;
		}
		for (r = 0; r < ch->info.slice_chips; r++)
			want += input(r, i, k);
		if (ch->out[i] != want && !bad++)
			say(ch, "call %u: element %llu is %g, want %g", k,
			    (unsigned long long)i, ch->out[i], want);
	}
	return bad;
}

static int chip_open(struct chip *ch, unsigned int device,
		     const struct options *o)
{
	const struct accel_comm_opts co = { .connect_timeout_ns = CONNECT_NS };
	int ret;

	snprintf(ch->name, sizeof(ch->name), "device %u", device);
	ret = accel_device_open(device, &ch->dev);
	if (!ret)
		ret = accel_device_get_info(ch->dev, &ch->info);
	if (ret)
		return ret;
	snprintf(ch->name, sizeof(ch->name), "chip %u (%u,%u,%u)",
		 ch->info.slice_index, ch->info.coords[0], ch->info.coords[1],
		 ch->info.coords[2]);
	ch->in = malloc(o->count * 4);
	ch->out = malloc(o->count * 4);
	if (!ch->in || !ch->out)
		return ACCEL_ERR_NO_MEMORY;
	ret = accel_buffer_create(ch->dev, o->count * 4, ACCEL_PLACEMENT_HBM,
				  &ch->send);
	if (!ret)
		ret = accel_buffer_create(ch->dev, o->count * 4,
					  ACCEL_PLACEMENT_HBM, &ch->recv);
	return ret ?: accel_comm_create(&ch->dev, 1, &co, &ch->comm);
}

static void chip_close(struct chip *ch)
{
	accel_comm_destroy(ch->comm);
	accel_buffer_destroy(ch->send);
	accel_buffer_destroy(ch->recv);
	accel_device_close(ch->dev);
	free(ch->in);
	free(ch->out);
}

/* Write @val to the chip's debugfs file @name. */
static int debugfs_write(const struct chip *ch, const char *name,
			 const char *val)
{
	char path[128];
	int fd, ret = 0;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/%s",
		 ch->info.pci_address, name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

/* The chip's debugfs file @name as a number, or a negative errno. */
static long long debugfs_read(const struct chip *ch, const char *name)
{
	char path[128], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/debug/accel/%s/%s",
		 ch->info.pci_address, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = '\0';
	return strtoll(buf, NULL, 0);
}

/* Reset the chip as after a fatal error; returns once it is done. */
static int force_recovery(const struct chip *ch)
{
	return debugfs_write(ch, "force_recovery", "1\n");
}

/*
 * Have the next job to start on the chip hang after its first command
 * (DBG_HANG_AFTER), so that the reset finds it started whatever the
 * host's timing: a job the chip had not taken yet when its queue stopped
 * runs again after a reset (driver.md), and the call would go on.
 */
static int hang_next_job(const struct chip *ch)
{
	return debugfs_write(ch, "fault_hang_after", "1\n");
}

/* Wait until a job has taken the hang (the register reads 0 again). */
static int wait_hung(const struct chip *ch)
{
	uint64_t t = now_ns();
	struct timespec tick = { .tv_nsec = 1000000 };
	long long v;

	while ((v = debugfs_read(ch, "fault_hang_after")) > 0) {
		if (now_ns() - t > 10 * NS_PER_S)
			return -ETIMEDOUT;
		nanosleep(&tick, NULL);
	}
	return v < 0 ? (int)v : 0;
}

/* A job of this context after the call: it runs unless it was banned. */
static int next_job(struct chip *ch)
{
	struct accel_cmdbuf *cb;
	struct accel_job *job;
	int ret = accel_cmdbuf_create(ch->dev, &cb);

	if (!ret)
		ret = accel_cmdbuf_fill(cb, ch->recv, 0, 0, 4096);
	if (!ret)
		ret = accel_submit(ch->dev, cb, NULL, &job);
	accel_cmdbuf_destroy(cb);
	if (ret)
		return ret;
	ret = accel_job_wait(job, WAIT_NS);
	accel_job_destroy(job);
	return ret;
}

/*
 * What the chip's context and driver went through: the next job, and the
 * counters of hangs (the watchdog, not the link, ended a job), bans and
 * chip resets since the process started.
 */
static int aftermath(struct chip *ch, const struct accel_device_counters *before)
{
	struct accel_device_counters after;
	int ret = next_job(ch);

	if (accel_device_get_counters(ch->dev, &after))
		memcpy(&after, before, sizeof(after));
	say(ch, "next job of the same context: %s; timeouts +%llu, banned contexts +%llu, chip resets +%llu",
	    accel_error_name(ret),
	    (unsigned long long)(after.timeouts - before->timeouts),
	    (unsigned long long)(after.banned_contexts - before->banned_contexts),
	    (unsigned long long)(after.device_resets - before->device_resets));
	return ret;
}

/* One call: issue it, reset the chip if told to, wait. */
static int call(struct chip *ch, const struct options *o, unsigned int k,
		bool reset)
{
	struct accel_coll *coll;
	int ret = reset ? hang_next_job(ch) : 0;

	if (ret) {
		say(ch, "cannot arm the hang: %s", strerror(-ret));
		return ret;
	}
	ret = accel_all_reduce(ch->comm, &ch->send, &ch->recv, o->count,
			       TSR_DTYPE_F32, ACCEL_REDUCE_SUM, &coll);
	if (ret)
		return ret;
	if (reset) {
		uint64_t t;
		int err = wait_hung(ch);

		if (err) {
			say(ch, "no job took the hang: %s", strerror(-err));
			debugfs_write(ch, "fault_hang_after", "0\n");
		}
		t = now_ns();
		say(ch, "cause: resetting the chip (force_recovery) during call %u", k);
		err = force_recovery(ch);
		say(ch, "chip reset %s after %.0f ms", err ? strerror(-err) : "done",
		    ms_since(t));
	}
	ret = accel_coll_wait(coll, WAIT_NS);
	/* A call still running is left to run: its handles go, its jobs not. */
	accel_coll_destroy(coll);
	return ret;
}

/*
 * One chip's process: calls until o->calls are exact or, without
 * o->calls, until one fails or o->seconds pass after the first.
 * 0 if that went as asked and the context's next job ran.
 */
static int run_chip(unsigned int device, const struct options *o)
{
	struct accel_device_counters before = { 0 };
	struct chip ch = { 0 };
	uint64_t end_by = UINT64_MAX, t;
	bool ok = false;
	unsigned int k;
	int ret;

	ret = chip_open(&ch, device, o);
	if (ret) {
		say(&ch, "set-up failed: %s (%s)", accel_error_name(ret),
		    accel_error_string(ret));
		chip_close(&ch);
		return 1;
	}
	accel_device_get_counters(ch.dev, &before);
	for (k = 1; !o->calls || k <= o->calls; k++) {
		bool reset = o->reset && k == o->reset_after + 1 &&
			     same_coords(o->reset_at, (struct accel_coords){ {
					 ch.info.coords[0], ch.info.coords[1],
					 ch.info.coords[2] } });
		uint64_t bad;

		if (k == o->stall_after + 1 && o->stall_host == host_id()) {
			say(&ch, "stalling %u s before call %u", STALL_S, k);
			sleep(STALL_S);
		}
		ret = prepare(&ch, o, k, now_ns() > end_by);
		t = now_ns();
		ret = ret ?: call(&ch, o, k, reset);
		if (ret) {
			say(&ch, "call %u failed after %.0f ms: %s (%s)", k,
			    ms_since(t), accel_error_name(ret), accel_error_string(ret));
			if (ret == ACCEL_ERR_LINK_DOWN)
				slice_ports_not_up(ch.dev, &ch.info, "slice_failure",
						   ch.name);
			ok = !o->calls;
			break;
		}
		bad = wrong(&ch, o, k);
		if (bad) {
			say(&ch, "call %u returned OK with %llu of %llu elements wrong",
			    k, (unsigned long long)bad,
			    (unsigned long long)o->count);
			break;
		}
		if (k == 1) {
			say(&ch, "call 1 exact");
			if (!o->calls)
				end_by = now_ns() + o->seconds * NS_PER_S;
		}
		if (!o->calls && ch.out[o->count - 1] > 0) {
			say(&ch, "no call failed: %u calls exact in %u s", k,
			    o->seconds);
			ok = true;
			break;
		}
		if (k == o->calls) {
			say(&ch, "%u calls exact", k);
			ok = true;
		}
	}
	ret = aftermath(&ch, &before);
	chip_close(&ch);
	return ok && !ret ? 0 : 1;
}

/* A process per local chip; 0 if each did as asked. */
static int all_reduce(const struct options *o)
{
	pid_t pids[ACCEL_SLICE_MAX_LOCAL];
	struct accel_slice slice;
	int ret = accel_slice_get(&slice), status, failed = 0;
	unsigned int i, n;

	if (ret) {
		printf("slice_failure: no slice here: %s\n", accel_error_string(ret));
		return 1;
	}
	fflush(stdout);
	for (n = 0; n < slice.local_count; n++) {
		pids[n] = fork();
		if (pids[n] < 0) {
			perror("slice_failure: fork");
			failed = 1;
			break;
		}
		if (!pids[n])
			_exit(run_chip(slice.local[n].device, o));
	}
	for (i = 0; i < n; i++) {
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status)) {
			printf("slice_failure: the process of chip %u did not exit\n",
			       slice.local[i].index);
			failed = 1;
		} else if (WEXITSTATUS(status)) {
			failed = 1;
		}
	}
	return failed;
}

/* ----------------------------------------------------------------- route */

/* A chip of the route: its window, and the bytes it sends. */
struct end {
	struct accel_coords at;
	struct accel_device *dev;
	struct accel_buffer *buf;
	struct accel_window *win;
	uint32_t queues;
	char name[16];
};

static int end_open(struct end *e, uint64_t key)
{
	const struct accel_window_opts wo = {
		.flags = ACCEL_WINDOW_FIXED_ID | ACCEL_WINDOW_FIXED_KEY,
		.id = ROUTE_WINDOW, .key = key,
	};
	struct accel_device_info info;
	int ret;

	snprintf(e->name, sizeof(e->name), "(%u,%u,%u)", e->at.c[0],
		 e->at.c[1], e->at.c[2]);
	ret = accel_device_open_coords(e->at, &e->dev);
	if (!ret)
		ret = accel_device_get_info(e->dev, &info);
	if (!ret)
		ret = accel_buffer_create(e->dev, ROUTE_BYTES + 4096,
					  ACCEL_PLACEMENT_HBM, &e->buf);
	if (ret)
		return ret;
	e->queues = info.num_queues;
	return accel_window_open(e->dev, e->buf, 0, ROUTE_BYTES + 4096,
				 ACCEL_WINDOW_WRITE, &wo, &e->win);
}

static void end_close(struct end *e)
{
	accel_window_close(e->win);
	accel_buffer_destroy(e->buf);
	accel_device_close(e->dev);
}

/* A write of ROUTE_BYTES and a semaphore increment from @from to @to. */
static int write_start(struct end *from, const struct end *to, uint32_t queue,
		       uint64_t key, struct accel_job **job)
{
	const struct accel_ici_write w = {
		.dst = to->at, .window = ROUTE_WINDOW, .key = key,
		.src_buffer = from->buf, .rows = 1, .row_bytes = ROUTE_BYTES,
		.flags = TSR_ICI_WRITE_SEM, .sem_offset = ROUTE_SEM, .sem_add = 1,
	};
	const struct accel_submit_opts so = { .queue = queue % from->queues };
	struct accel_cmdbuf *cb;
	int ret = accel_cmdbuf_create(from->dev, &cb);

	if (!ret)
		ret = accel_cmdbuf_ici_write(cb, &w);
	if (!ret)
		ret = accel_submit(from->dev, cb, &so, job);
	accel_cmdbuf_destroy(cb);
	return ret;
}

/* Waits for a write started at @t0; says how it ended; true if @want. */
static bool write_end(struct accel_job *job, int err, const char *phase,
		      const struct end *from, const struct end *to,
		      uint64_t t0, int want)
{
	struct accel_job_status st = { 0 };

	if (!err) {
		err = accel_job_wait(job, WAIT_NS);
		accel_job_status(job, &st);
	}
	printf("slice_failure: route: %s: %s -> %s: %s after %.0f ms%s%s\n",
	       phase, from->name, to->name, accel_error_name(err), ms_since(t0),
	       st.chip_error ? ", chip error " : "",
	       st.chip_error ? st.chip_error_name : "");
	fflush(stdout);
	accel_job_destroy(job);
	return err == want;
}

/* One write on its own. */
static bool write_one(struct end *from, const struct end *to, uint32_t queue,
		      uint64_t key, const char *phase, int want)
{
	struct accel_job *job = NULL;
	uint64_t t0 = now_ns();
	int err = write_start(from, to, queue, key, &job);

	return write_end(job, err, phase, from, to, t0, want);
}

/* Waits until @e's port @port is (or is not, if !@up) up. */
static bool port_wait(struct end *e, unsigned int port, bool up)
{
	uint64_t end_by = now_ns() + LINK_WAIT_NS;
	struct accel_link_info li;

	printf("slice_failure: route: waiting for %s port %u to %s\n", e->name,
	       port, up ? "come up" : "go down");
	fflush(stdout);
	while (now_ns() < end_by) {
		if (!accel_link_get_info(e->dev, port, &li) &&
		    (li.port.state == TSR_ICI_STATE_UP) == up)
			return true;
		usleep(10000);
	}
	printf("slice_failure: route: %s port %u did not %s in %llu s\n",
	       e->name, port, up ? "come up" : "go down",
	       (unsigned long long)(LINK_WAIT_NS / NS_PER_S));
	return false;
}

/* ends[]: from, via, to, and beside if @n is 4. */
static int route(struct end *ends, unsigned int n, unsigned int port)
{
	const char *key_env = getenv("TESSERA_SLICE_KEY");
	uint64_t key = key_env && *key_env ? strtoull(key_env, NULL, 16) : 1;
	struct end *from = &ends[0], *via = &ends[1], *to = &ends[2];
	const struct end *targets[] = { to, via, &ends[3] };
	struct accel_job *job[3] = { NULL };
	int err[3] = { 0 };
	bool ok = true;
	unsigned int i;
	uint64_t t0;
	int ret = 0;

	for (i = 0; i < n && !ret; i++)
		ret = end_open(&ends[i], key);
	if (ret) {
		printf("slice_failure: route: set-up of %s failed: %s (%s)\n",
		       ends[i - 1].name, accel_error_name(ret), accel_error_string(ret));
		goto out;
	}
	for (i = 1; i < n; i++)
		ok &= write_one(from, &ends[i], 0, key, "before", ACCEL_OK);
	if (!ok || !port_wait(via, port, false)) {
		ok = false;
		goto out;
	}
	/*
	 * The write through the dead link and, each on a queue of its own,
	 * those to the chip before it and beside it, at once.
	 */
	t0 = now_ns();
	for (i = 0; i < n - 1; i++)
		err[i] = write_start(from, targets[i], i, key, &job[i]);
	for (i = 0; i < n - 1; i++)
		ok &= write_end(job[i], err[i], "link down", from, targets[i], t0,
				targets[i] == to ? ACCEL_ERR_LINK_DOWN : ACCEL_OK);
	/* The first hop and the failed write's queue still carry writes. */
	ok &= write_one(from, via, 0, key, "after the failure", ACCEL_OK);
	if (!port_wait(via, port, true)) {
		ok = false;
		goto out;
	}
	ok &= write_one(from, to, 0, key, "retrained", ACCEL_OK);
out:
	for (i = 0; i < n; i++)
		end_close(&ends[i]);
	return ok ? 0 : 1;
}

/* ------------------------------------------------------------------ main */

static int usage(void)
{
	fprintf(stderr,
		"usage: slice_failure all-reduce [--count N] [--calls N] [--seconds S]\n"
		"                                [--reset X,Y,Z --reset-after N]\n"
		"                                [--stall-host H --stall-after N]\n"
		"       slice_failure route --from X,Y,Z --via X,Y,Z --to X,Y,Z --port P\n"
		"                           [--beside X,Y,Z]\n");
	return 2;
}

static bool number(const char *text, unsigned long long max,
		   unsigned long long *v)
{
	char *end;

	errno = 0;
	*v = strtoull(text, &end, 0);
	return !errno && *text && !*end && *v <= max;
}

int main(int argc, char **argv)
{
	static const char *const end_opts[] = { "--from", "--via", "--to", "--beside" };
	struct options o = { .count = 65536, .seconds = 20, .stall_host = -1 };
	unsigned long long v, port = 6;
	struct end ends[4] = { 0 };
	unsigned int given = 0, i, e;
	bool is_route;

	if (argc < 2)
		return usage();
	is_route = !strcmp(argv[1], "route");
	if (!is_route && strcmp(argv[1], "all-reduce"))
		return usage();
	for (i = 2; i + 1 < (unsigned int)argc; i += 2) {
		const char *opt = argv[i], *val = argv[i + 1];

		if (!strcmp(opt, "--count") && number(val, 1u << 26, &v) && v) {
			o.count = v;
		} else if (!strcmp(opt, "--calls") && number(val, 1u << 20, &v)) {
			o.calls = v;
		} else if (!strcmp(opt, "--seconds") && number(val, 3600, &v)) {
			o.seconds = v;
		} else if (!strcmp(opt, "--reset-after") && number(val, 1u << 20, &v)) {
			o.reset_after = v;
		} else if (!strcmp(opt, "--stall-host") && number(val, 4095, &v)) {
			o.stall_host = v;
		} else if (!strcmp(opt, "--stall-after") && number(val, 1u << 20, &v)) {
			o.stall_after = v;
		} else if (!strcmp(opt, "--port") && number(val, 5, &v)) {
			port = v;
		} else if (!strcmp(opt, "--reset")) {
			if (!parse_coords(val, &o.reset_at))
				return usage();
			o.reset = true;
		} else {
			for (e = 0; e < 4 && strcmp(opt, end_opts[e]); e++)
				;
			if (e == 4 || !parse_coords(val, &ends[e].at))
				return usage();
			given |= 1u << e;
		}
	}
	if (i != (unsigned int)argc)
		return usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!is_route)
		return all_reduce(&o);
	/* --from, --via, --to and --port are required. */
	if (port > 5 || (given & 7) != 7)
		return usage();
	return route(ends, given & 8 ? 4 : 3, port);
}
