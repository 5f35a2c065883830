// SPDX-License-Identifier: GPL-2.0
/*
 * Job traces against the real driver and chip: libaccel's Chrome trace
 * JSON parses, and its tracks and durations match the jobs' completion
 * records; through the raw uapi, a buffer too small counts what it
 * dropped, SUBMIT refuses every bad trace field, and a caller that knows
 * nothing of traces runs as before.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "kselftest_harness.h"
#include "libaccel_util.h"
#include "tessera_util.h"

#include <accel/accel.h>
#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#define WAIT_NS		(20ull * 1000 * 1000 * 1000)

/* ------------------------------------------------------- JSON helpers */

static struct json_object *field(struct json_object *o, const char *key)
{
	struct json_object *v = NULL;

	json_object_object_get_ex(o, key, &v);
	return v;
}

static const char *str_field(struct json_object *o, const char *key)
{
	struct json_object *v = field(o, key);

	return v ? json_object_get_string(v) : "";
}

static int64_t arg(struct json_object *ev, const char *key)
{
	struct json_object *v = field(field(ev, "args"), key);

	return v ? json_object_get_int64(v) : -1;
}

static double distance(double a, double b)
{
	return a > b ? a - b : b - a;
}

/* The name a thread_name event gives track @tid of @pid, or "". */
static const char *track_name(struct json_object *events, int64_t pid,
			      int64_t tid)
{
	size_t i, n = json_object_array_length(events);

	for (i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);

		if (!strcmp(str_field(ev, "ph"), "M") &&
		    !strcmp(str_field(ev, "name"), "thread_name") &&
		    json_object_get_int64(field(ev, "pid")) == pid &&
		    json_object_get_int64(field(ev, "tid")) == tid)
			return str_field(field(ev, "args"), "name");
	}
	return "";
}

/* ------------------------------------------------------ libaccel side */

FIXTURE(trace) {
	struct accel_device *dev;
	struct accel_device_info info;
	struct accel_cmdbuf *cb;
	struct accel_trace *trace;
	struct leak_snapshot before;
	char path[64];
};

FIXTURE_SETUP(trace)
{
	int fd;

	ASSERT_EQ(ACCEL_OK, accel_device_open(0, &self->dev));
	ASSERT_EQ(ACCEL_OK, accel_device_get_info(self->dev, &self->info));
	if (!(self->info.caps & TSR_CAP_TRACE))
		tsr_skip_test("the chip has no TSR_CAP_TRACE");
	leak_snapshot(self->dev, &self->before);
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_create(self->dev, &self->cb));
	ASSERT_EQ(ACCEL_OK, accel_trace_create(&self->trace));
	snprintf(self->path, sizeof(self->path), "/tmp/trace-XXXXXX");
	fd = mkstemp(self->path);
	ASSERT_LE(0, fd);
	close(fd);
}

FIXTURE_TEARDOWN(trace)
{
	unlink(self->path);
	accel_trace_destroy(self->trace);
	accel_cmdbuf_destroy(self->cb);
	leak_expect_none(_metadata, self->dev, &self->before);
	accel_device_close(self->dev);
}

/* Submit the fixture's commands on @queue, wait, keep the status. */
static void run_on(struct __test_metadata *_metadata,
		   FIXTURE_DATA(trace) *self, uint32_t queue,
		   struct accel_job_status *st)
{
	struct accel_submit_opts opts = { .queue = queue };
	struct accel_job *job;

	ASSERT_EQ(ACCEL_OK, accel_submit(self->dev, self->cb, &opts, &job));
	accel_job_wait(job, WAIT_NS);
	ASSERT_EQ(ACCEL_OK, accel_job_status(job, st));
	accel_job_destroy(job);
	accel_cmdbuf_reset(self->cb);
}

/*
 * Check job event @job of chip @pid against its status @st: times, the
 * commands on its queue, and each engine's busy cycles on the engine
 * tracks of its queue.
 */
static void check_job(struct __test_metadata *_metadata,
		      struct json_object *events, int64_t pid,
		      struct json_object *job,
		      const struct accel_job_status *st, uint32_t clock_mhz,
		      unsigned int commands)
{
	uint64_t busy[TSR_ENGINE_COUNT] = { 0 }, cmd_cycles = 0;
	int64_t seq = arg(job, "job"), tid;
	size_t i, n = json_object_array_length(events);
	unsigned int seen = 0;
	char want[32];

	EXPECT_EQ((int64_t)st->start_cycle, arg(job, "start_cycle"));
	EXPECT_EQ((int64_t)st->end_cycle, arg(job, "end_cycle"));
	EXPECT_GT(1e-3, distance(json_object_get_double(field(job, "ts")),
				 (double)st->start_cycle / clock_mhz));
	EXPECT_GT(1e-3, distance(json_object_get_double(field(job, "dur")),
				 (double)(st->end_cycle - st->start_cycle) /
				 clock_mhz));
	EXPECT_EQ(commands, arg(job, "commands"));
	EXPECT_EQ(0, arg(job, "dropped"));
	snprintf(want, sizeof(want), "queue %u", st->queue);
	tid = json_object_get_int64(field(job, "tid"));
	EXPECT_STREQ(want, track_name(events, pid, tid));

	for (i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);
		const char *cat = str_field(ev, "cat");
		int64_t start = arg(ev, "start_cycle");
		int64_t end = arg(ev, "end_cycle");
		const char *track;
		int e;

		if (strcmp(str_field(ev, "ph"), "X") || arg(ev, "job") != seq ||
		    json_object_get_int64(field(ev, "pid")) != pid)
			continue;
		tid = json_object_get_int64(field(ev, "tid"));
		track = track_name(events, pid, tid);
		if (!strcmp(cat, "command")) {
			EXPECT_STREQ(want, track);
			EXPECT_LE((int64_t)st->start_cycle, start);
			EXPECT_GE((int64_t)st->end_cycle, end);
			cmd_cycles += end - start;
			seen++;
			continue;
		}
		for (e = 0; e < TSR_ENGINE_COUNT; e++) {
			static const char *const names[TSR_ENGINE_COUNT] = {
				[TSR_ENGINE_CP] = "CP", [TSR_ENGINE_DMA] = "DMA",
				[TSR_ENGINE_MXU] = "MXU", [TSR_ENGINE_VPU] = "VPU",
				[TSR_ENGINE_SC] = "SparseCore",
			};
			char engine_track[32];

			if (strcmp(cat, names[e]))
				continue;
			snprintf(engine_track, sizeof(engine_track),
				 "%s (queue %u)", names[e], st->queue);
			EXPECT_STREQ(engine_track, track);
			busy[e] += end - start;
		}
	}
	EXPECT_EQ(commands, seen);
	EXPECT_EQ(st->mxu_cycles, busy[TSR_ENGINE_MXU]);
	EXPECT_EQ(st->vpu_cycles, busy[TSR_ENGINE_VPU]);
	EXPECT_EQ(st->dma_cycles, busy[TSR_ENGINE_DMA]);
	/* The commands fill the job but for its launch. */
	EXPECT_GT(st->end_cycle - st->start_cycle, cmd_cycles);
}

TEST_F(trace, the_json_parses_and_matches_the_jobs_completion_records)
{
	struct accel_buffer *a, *b, *c, *ts;
	struct accel_tensor ta, tb, tc;
	struct accel_job_status st[3];
	static const unsigned int commands[3] = { 4, 2, 2 };
	struct json_object *root, *events, *job_ev[3] = { 0 };
	int64_t pid = -1;
	const char *name;
	size_t i, n;
	int k;

	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 64 * 64 * 4, 0, &a));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 64 * 64 * 4, 0, &b));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 64 * 64 * 4,
						ACCEL_PLACEMENT_HBM, &c));
	ASSERT_EQ(ACCEL_OK, accel_buffer_create(self->dev, 8, 0, &ts));
	ta = tensor_at(a, 0, 64, 64, 64, TSR_DTYPE_F32);
	tb = tensor_at(b, 0, 64, 64, 64, TSR_DTYPE_F32);
	tc = tensor_at(c, 0, 64, 64, 64, TSR_DTYPE_F32);
	ASSERT_EQ(ACCEL_OK, accel_trace_start(self->trace, self->dev));

	/* Queue 0: DMA, MXU, VPU and the command processor. */
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_copy(self->cb, b, 0, a, 0, 4096));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_matmul(self->cb, &ta, &tb, &tc, 0));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_vpu(self->cb, TSR_VPU_ADD, &tc, &tc,
					     NULL, &tc));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	run_on(_metadata, self, 0, &st[0]);
	/* Queue 1 at the same time on the modeled clock. */
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_fill(self->cb, a, 0, 0x3f800000,
					      4096));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_matmul(self->cb, &ta, &tb, &tc, 0));
	run_on(_metadata, self, 1, &st[1]);
	/* Queue 0 again. */
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_timestamp(self->cb, ts, 0));
	run_on(_metadata, self, 0, &st[2]);
	for (k = 0; k < 3; k++)
		ASSERT_EQ(ACCEL_JOB_DONE, st[k].state);

	ASSERT_EQ(ACCEL_OK, accel_trace_write_json(self->trace, self->path));
	EXPECT_EQ(3, accel_trace_jobs(self->trace));
	EXPECT_EQ(0, accel_trace_dropped(self->trace));
	root = json_object_from_file(self->path);
	ASSERT_NE(NULL, root);
	events = field(root, "traceEvents");
	ASSERT_NE(NULL, events);
	ASSERT_TRUE(json_object_is_type(events, json_type_array));

	/* One chip, named; its three jobs in the order they ran per queue. */
	n = json_object_array_length(events);
	for (i = 0; i < n; i++) {
		struct json_object *ev = json_object_array_get_idx(events, i);
		int64_t start = arg(ev, "start_cycle");

		if (!strcmp(str_field(ev, "name"), "process_name")) {
			EXPECT_EQ(-1, pid);
			pid = json_object_get_int64(field(ev, "pid"));
			name = str_field(field(ev, "args"), "name");
			EXPECT_NE(NULL, strstr(name, self->info.pci_address));
		}
		if (strcmp(str_field(ev, "cat"), "job"))
			continue;
		name = track_name(events, pid,
				  json_object_get_int64(field(ev, "tid")));
		for (k = 0; k < 3; k++)
			if ((int64_t)st[k].start_cycle == start &&
			    !strcmp(name, st[k].queue ? "queue 1" : "queue 0")) {
				EXPECT_EQ(NULL, job_ev[k]);
				job_ev[k] = ev;
			}
	}
	ASSERT_EQ(1 + self->info.index, pid);
	for (k = 0; k < 3; k++) {
		ASSERT_NE(NULL, job_ev[k]) {
			TH_LOG("no job event for job %d (queue %u, start %llu)",
			       k, st[k].queue,
			       (unsigned long long)st[k].start_cycle);
		}
		check_job(_metadata, events, pid, job_ev[k], &st[k],
			  self->info.clock_mhz, commands[k]);
	}
	json_object_put(root);
	accel_buffer_destroy(a);
	accel_buffer_destroy(b);
	accel_buffer_destroy(c);
	accel_buffer_destroy(ts);
}

TEST_F(trace, jobs_before_start_and_after_stop_are_not_recorded)
{
	struct accel_job_status st;

	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	run_on(_metadata, self, 0, &st);
	ASSERT_EQ(ACCEL_OK, accel_trace_start(self->trace, self->dev));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	run_on(_metadata, self, 0, &st);
	ASSERT_EQ(ACCEL_OK, accel_trace_stop(self->trace, self->dev));
	ASSERT_EQ(ACCEL_OK, accel_cmdbuf_nop(self->cb));
	run_on(_metadata, self, 0, &st);
	EXPECT_EQ(1, accel_trace_jobs(self->trace));
	/* Stopped: the timelines were kept, the buffers given back. */
	EXPECT_EQ(ACCEL_OK, accel_trace_write_json(self->trace, self->path));
}

TEST_F(trace, a_device_recorded_by_one_trace_is_refused_by_another)
{
	struct accel_trace *other;

	ASSERT_EQ(ACCEL_OK, accel_trace_start(self->trace, self->dev));
	EXPECT_EQ(ACCEL_OK, accel_trace_start(self->trace, self->dev));
	ASSERT_EQ(ACCEL_OK, accel_trace_create(&other));
	EXPECT_EQ(ACCEL_ERR_BUSY, accel_trace_start(other, self->dev));
	accel_trace_destroy(other);
}

TEST_F(trace, a_file_that_cannot_be_written_is_an_io_error)
{
	EXPECT_EQ(ACCEL_ERR_IO, accel_trace_write_json(self->trace,
						       "/nonexistent/t.json"));
	EXPECT_EQ(ACCEL_ERR_INVALID_ARGUMENT,
		  accel_trace_write_json(NULL, self->path));
}

/* ---------------------------------------------------------- uapi side */

FIXTURE(uapi) {
	int fd;
	struct tsr_cmds cmds;
	struct tsr_bo trace;
	uint32_t syncobj;
};

FIXTURE_SETUP(uapi)
{
	struct tsr_info info = { 0 };

	self->fd = tsr_open(0);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, tsr_info(self->fd, &info));
	if (!(info.caps & TSR_CAP_TRACE))
		tsr_skip_test("the chip has no TSR_CAP_TRACE");
	ASSERT_EQ(0, tsr_bo_create(self->fd, 4096, 0, &self->cmds.bo));
	ASSERT_EQ(0, tsr_bo_create(self->fd, 8192, 0, &self->trace));
	self->syncobj = tsr_syncobj(self->fd);
}

FIXTURE_TEARDOWN(uapi)
{
	tsr_bo_destroy(self->fd, &self->cmds.bo);
	tsr_bo_destroy(self->fd, &self->trace);
	close(self->fd);
}

/*
 * SUBMIT with the trace extension (when @traced) and the trace buffer
 * listed with @bo_flags; returns -errno.
 */
static int submit_traced(FIXTURE_DATA(uapi) *self, bool traced,
			 uint32_t bo_flags, uint32_t handle, uint64_t offset,
			 uint32_t size, uint64_t *seq)
{
	struct drm_tessera_submit_bo bo = {
		.handle = self->trace.handle, .flags = bo_flags,
	};
	struct drm_tessera_sync out = TSR_SIGNAL(self->syncobj, 0);
	struct drm_tessera_ext_trace trace = {
		.base.name = DRM_TESSERA_EXT_TRACE,
		.handle = handle, .size = size, .offset = offset,
	};
	struct drm_tessera_submit s = {
		.extensions = traced ? (uintptr_t)&trace : 0,
		.cmdbuf_handle = self->cmds.bo.handle,
		.cmdbuf_size = self->cmds.len,
	};
	int ret;

	tsr_submit_bos(&s, &bo, bo_flags ? 1 : 0);
	tsr_submit_syncs(&s, &out, 1);
	ret = tsr_ioctl(self->fd, DRM_IOCTL_TESSERA_SUBMIT, &s);

	if (!ret && seq)
		*seq = s.seq;
	return ret;
}

#define RW (DRM_TESSERA_BO_READ | DRM_TESSERA_BO_WRITE)

static uint32_t trace_bytes(unsigned int records)
{
	return sizeof(struct tsr_trace_header) +
	       records * sizeof(struct tsr_trace_record);
}

TEST_F(uapi, a_buffer_too_small_counts_exactly_the_commands_it_dropped)
{
	const struct tsr_trace_header *h;
	struct drm_tessera_job_status st;
	const struct tsr_trace_record *r;
	uint64_t seq;
	int i;

	for (i = 0; i < 5; i++)
		tsr_emit_nop(&self->cmds);
	memset(self->trace.map, 0xa5, self->trace.size);
	/* At offset 256: the header lands there, two records after it. */
	ASSERT_EQ(0, submit_traced(self, true, RW,
				   self->trace.handle, 256, trace_bytes(2) + 8,
				   &seq));
	ASSERT_EQ(0, tsr_wait(self->fd, self->syncobj, WAIT_NS));
	ASSERT_EQ(0, tsr_job_status(self->fd, seq, &st));
	ASSERT_EQ(DRM_TESSERA_JOB_DONE, st.state);
	h = (const void *)((uint8_t *)self->trace.map + 256);
	r = (const void *)(h + 1);
	EXPECT_EQ(2, h->records);
	EXPECT_EQ(3, h->dropped);
	EXPECT_EQ(sizeof(*r), h->record_size);
	EXPECT_EQ(st.start_cycle, h->start_cycle);
	EXPECT_EQ(st.end_cycle, h->end_cycle);
	EXPECT_EQ(0, h->queue);
	EXPECT_EQ(TSR_OP_NOP, r[1].opcode);
	EXPECT_EQ(1, r[1].index);
	EXPECT_EQ(0xa5, *(uint8_t *)&r[2]);
	EXPECT_EQ(0xa5, *(uint8_t *)self->trace.map);
}

TEST_F(uapi, every_bad_trace_field_is_refused)
{
	const uint32_t ok = trace_bytes(4);
	const bool T = true;
	const uint32_t header = sizeof(struct tsr_trace_header);
	/* Each is -EINVAL; other_handle names a buffer not listed. */
	const struct {
		const char *what;
		bool traced;
		uint32_t bo_flags;
		uint64_t offset;
		uint32_t size;
		bool other_handle;
	} bad[] = {
		{ "buffer not listed", T, 0, 0, ok, false },
		{ "listed read-only", T, DRM_TESSERA_BO_READ, 0, ok, false },
		{ "another handle", T, RW, 0, ok, true },
		{ "smaller than the header", T, RW, 0, header - 8, false },
		{ "size not a multiple of 8", T, RW, 0, ok + 4, false },
		{ "offset not 8-aligned", T, RW, 4, ok, false },
		{ "past the buffer's end", T, RW, 8192 - 64, ok, false },
		{ "offset past the end", T, RW, 1ull << 40, ok, false },
		{ "beyond TSR_TRACE_MAX_SIZE", T, RW, 0, TSR_TRACE_MAX_SIZE + 8, false },
	};
	unsigned int i;

	tsr_emit_nop(&self->cmds);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		uint32_t handle = bad[i].other_handle ? self->cmds.bo.handle :
				  self->trace.handle;
		int ret = submit_traced(self, bad[i].traced, bad[i].bo_flags,
					handle, bad[i].offset, bad[i].size,
					NULL);

		EXPECT_EQ(-EINVAL, ret) {
			TH_LOG("%s", bad[i].what);
		}
	}
	/* And the same trace, right, is taken. */
	EXPECT_EQ(0, submit_traced(self, true, RW,
				   self->trace.handle, 0, ok, NULL));
	EXPECT_EQ(0, tsr_wait(self->fd, self->syncobj, WAIT_NS));
}

TEST_HARNESS_MAIN
