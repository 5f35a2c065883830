// SPDX-License-Identifier: MIT
/*
 * Traces: each job submitted on a recorded device gets a buffer where the
 * chip writes its trace (TSR_JOB_TRACE); once the job has ended the
 * records are copied out and the buffer freed.  The JSON writer turns
 * them into Chrome trace events.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>
#include <drm/tessera_accel.h>
#include <tessera/chip.h>

#include <accel/accel.h>
#include <accel/trace.h>

#include "internal.h"

/* A chip the trace has recorded, and what its timeline needs. */
struct trace_chip {
	struct accel_device *dev;	/* NULL once stopped */
	unsigned int pid;		/* its process in the JSON */
	uint32_t clock_mhz;
	uint32_t coords[3];
	uint32_t slice_chips;
	unsigned int index;
	char pci_address[ACCEL_PCI_ADDRESS_LEN];
};

/* A recorded job: its buffer until it has ended, then its records. */
struct trace_job {
	unsigned int chip;
	uint64_t seq;
	uint32_t syncobj;		/* a copy of the job's fence, until read */
	struct accel_buffer *buf;	/* until read */
	bool valid;			/* the chip wrote the trace */
	struct tsr_trace_header hdr;
	struct tsr_trace_record *records;
};

struct accel_trace {
	struct trace_chip *chips;
	unsigned int nchips;
	struct trace_job *jobs;
	size_t njobs, jobs_cap;
	size_t first_unread;		/* jobs before it have all been read */
	pthread_mutex_t lock;		/* the job list */
};

int accel_trace_create(struct accel_trace **trace)
{
	if (!trace)
		return ACCEL_ERR_INVALID_ARGUMENT;
	*trace = calloc(1, sizeof(**trace));
	if (!*trace)
		return ACCEL_ERR_NO_MEMORY;
	pthread_mutex_init(&(*trace)->lock, NULL);
	return ACCEL_OK;
}

static struct trace_chip *trace_chip_of(struct accel_trace *trace,
					struct accel_device *dev)
{
	unsigned int i;

	for (i = 0; i < trace->nchips; i++)
		if (trace->chips[i].dev == dev)
			return &trace->chips[i];
	return NULL;
}

/*
 * A chip's process id: its place in the slice, so that the files of a
 * slice's hosts merge without clashes; an unlinked chip's device index.
 */
static unsigned int trace_pid(const struct accel_device_info *info)
{
	return 1 + (info->slice_chips > 1 ? info->slice_index : info->index);
}

static int trace_add_chip(struct accel_trace *trace, struct accel_device *dev)
{
	struct accel_device_info info;
	struct trace_chip *chips, *c;
	int ret = accel_device_get_info(dev, &info);

	if (ret)
		return ret;
	if (!(info.caps & TSR_CAP_TRACE))
		return ACCEL_ERR_NOT_SUPPORTED;
	chips = realloc(trace->chips, (trace->nchips + 1) * sizeof(*chips));
	if (!chips)
		return ACCEL_ERR_NO_MEMORY;
	trace->chips = chips;
	c = &chips[trace->nchips++];
	memset(c, 0, sizeof(*c));
	c->dev = dev;
	c->pid = trace_pid(&info);
	c->clock_mhz = info.clock_mhz;
	memcpy(c->coords, info.coords, sizeof(c->coords));
	c->slice_chips = info.slice_chips;
	c->index = info.index;
	memcpy(c->pci_address, info.pci_address, sizeof(c->pci_address));
	return ACCEL_OK;
}

int accel_trace_start(struct accel_trace *trace, struct accel_device *dev)
{
	int ret = ACCEL_OK;

	if (!trace || !dev)
		return ACCEL_ERR_INVALID_ARGUMENT;
	pthread_mutex_lock(&dev->lock);
	if (dev->trace && dev->trace != trace)
		ret = ACCEL_ERR_BUSY;
	pthread_mutex_unlock(&dev->lock);
	if (ret || trace_chip_of(trace, dev))
		return ret;
	ret = trace_add_chip(trace, dev);
	if (ret)
		return ret;
	pthread_mutex_lock(&dev->lock);
	dev->trace = trace;
	pthread_mutex_unlock(&dev->lock);
	return ACCEL_OK;
}

struct accel_trace *accel_trace_of(struct accel_device *dev)
{
	struct accel_trace *trace;

	pthread_mutex_lock(&dev->lock);
	trace = dev->trace;
	pthread_mutex_unlock(&dev->lock);
	return trace;
}

int accel_trace_buffer(struct accel_device *dev, uint32_t commands,
		       struct accel_buffer **buf, uint32_t *size)
{
	uint64_t bytes = sizeof(struct tsr_trace_header) +
			 (uint64_t)commands * sizeof(struct tsr_trace_record);

	/* A longer job keeps the records that fit and counts the rest. */
	*size = bytes < TSR_TRACE_MAX_SIZE ? bytes : TSR_TRACE_MAX_SIZE;
	return accel_buffer_create(dev, *size, ACCEL_PLACEMENT_HOST, buf);
}

/*
 * Copy job @j's records out once it has ended, waiting up to @timeout_ns;
 * ACCEL_ERR_TIMEOUT if it has not.  A job the chip never ran (cancelled,
 * or failed before its trace) is kept without a timeline.
 */
static int trace_read(struct accel_trace *trace, struct trace_job *j,
		      uint64_t timeout_ns)
{
	struct accel_device *dev = trace->chips[j->chip].dev;
	const struct tsr_trace_header *h;
	const uint8_t *p;
	uint32_t i, n;
	void *map;
	int ret;

	if (!j->buf)
		return ACCEL_OK;
	ret = accel_sync_wait(dev, j->syncobj, timeout_ns);
	if (ret)
		return ret;
	ret = accel_buffer_map(j->buf, &map);
	if (ret)
		return ret;
	h = map;
	p = (const uint8_t *)(h + 1);
	/* The chip writes the header last: without it, no record counts. */
	n = h->record_size >= sizeof(*j->records) ? h->records : 0;
	n = n < TSR_TRACE_CAPACITY(accel_buffer_size(j->buf)) ? n :
	    TSR_TRACE_CAPACITY(accel_buffer_size(j->buf));
	if (n) {
		j->records = calloc(n, sizeof(*j->records));
		if (!j->records)
			return ACCEL_ERR_NO_MEMORY;
		for (i = 0; i < n; i++)
			memcpy(&j->records[i], p + (size_t)i * h->record_size,
			       sizeof(*j->records));
	}
	j->valid = h->record_size >= sizeof(*j->records);
	j->hdr = *h;
	j->hdr.records = n;
	drmSyncobjDestroy(dev->fd, j->syncobj);
	accel_buffer_destroy(j->buf);
	j->buf = NULL;
	return ACCEL_OK;
}

/* Read every job that has ended (or, with @dev, every job of @dev). */
static int trace_read_all(struct accel_trace *trace, struct accel_device *dev,
			  uint64_t timeout_ns)
{
	size_t i;
	int ret;

	for (i = trace->first_unread; i < trace->njobs; i++) {
		struct trace_job *j = &trace->jobs[i];

		if (dev && trace->chips[j->chip].dev != dev)
			continue;
		ret = trace_read(trace, j, timeout_ns);
		if (ret && ret != ACCEL_ERR_TIMEOUT)
			return ret;
	}
	while (trace->first_unread < trace->njobs &&
	       !trace->jobs[trace->first_unread].buf)
		trace->first_unread++;
	return ACCEL_OK;
}

int accel_trace_submitted(struct accel_device *dev, struct accel_buffer *buf,
			  uint64_t seq, uint32_t job_syncobj)
{
	struct accel_trace *trace = accel_trace_of(dev);
	struct trace_chip *c = trace ? trace_chip_of(trace, dev) : NULL;
	struct trace_job *j;
	uint32_t syncobj;
	int ret = ACCEL_OK;

	if (!c) {
		accel_buffer_destroy(buf);
		return ACCEL_OK;
	}
	/* The job's own syncobj goes with its handle: the trace keeps a copy. */
	if (drmSyncobjCreate(dev->fd, 0, &syncobj))
		return accel_error_from_errno(errno);
	if (drmSyncobjTransfer(dev->fd, syncobj, 0, job_syncobj, 0, 0)) {
		ret = accel_error_from_errno(errno);
		drmSyncobjDestroy(dev->fd, syncobj);
		return ret;
	}
	pthread_mutex_lock(&trace->lock);
	/* Jobs that have ended give their buffers back as the trace goes. */
	trace_read_all(trace, dev, 0);
	if (trace->njobs == trace->jobs_cap) {
		size_t cap = trace->jobs_cap ? 2 * trace->jobs_cap : 64;
		struct trace_job *jobs = realloc(trace->jobs, cap * sizeof(*jobs));

		if (!jobs) {
			ret = ACCEL_ERR_NO_MEMORY;
			goto out;
		}
		trace->jobs = jobs;
		trace->jobs_cap = cap;
	}
	j = &trace->jobs[trace->njobs++];
	memset(j, 0, sizeof(*j));
	j->chip = c - trace->chips;
	j->seq = seq;
	j->syncobj = syncobj;
	j->buf = buf;
out:
	pthread_mutex_unlock(&trace->lock);
	if (ret) {
		drmSyncobjDestroy(dev->fd, syncobj);
		accel_buffer_destroy(buf);
	}
	return ret;
}

int accel_trace_stop(struct accel_trace *trace, struct accel_device *dev)
{
	struct trace_chip *c;
	int ret;

	if (!trace || !dev)
		return ACCEL_ERR_INVALID_ARGUMENT;
	c = trace_chip_of(trace, dev);
	if (!c)
		return ACCEL_OK;
	pthread_mutex_lock(&dev->lock);
	dev->trace = NULL;
	pthread_mutex_unlock(&dev->lock);
	pthread_mutex_lock(&trace->lock);
	ret = trace_read_all(trace, dev, ACCEL_TIMEOUT_INFINITE);
	pthread_mutex_unlock(&trace->lock);
	if (!ret)
		c->dev = NULL;
	return ret;
}

uint64_t accel_trace_jobs(const struct accel_trace *trace)
{
	return trace ? trace->njobs : 0;
}

uint64_t accel_trace_dropped(const struct accel_trace *trace)
{
	uint64_t dropped = 0;
	size_t i;

	for (i = 0; trace && i < trace->njobs; i++)
		dropped += trace->jobs[i].hdr.dropped;
	return dropped;
}

void accel_trace_destroy(struct accel_trace *trace)
{
	unsigned int i;
	size_t k;

	if (!trace)
		return;
	for (i = 0; i < trace->nchips; i++)
		if (trace->chips[i].dev)
			accel_trace_stop(trace, trace->chips[i].dev);
	for (k = 0; k < trace->njobs; k++) {
		struct trace_job *j = &trace->jobs[k];

		/* Left by a wait that failed: its device is still recorded. */
		if (j->buf) {
			drmSyncobjDestroy(trace->chips[j->chip].dev->fd,
					  j->syncobj);
			accel_buffer_destroy(j->buf);
		}
		free(j->records);
	}
	free(trace->jobs);
	free(trace->chips);
	pthread_mutex_destroy(&trace->lock);
	free(trace);
}

/* ------------------------------------------------------------- JSON */

/* The opcode's name, or its number for one this library does not know. */
static const char *opcode_name(uint8_t opcode, char *buf, size_t len)
{
	switch (opcode) {
	case TSR_OP_NOP:
		return "NOP";
	case TSR_OP_DMA_COPY:
		return "DMA_COPY";
	case TSR_OP_DMA_FILL:
		return "DMA_FILL";
	case TSR_OP_MATMUL:
		return "MATMUL";
	case TSR_OP_VPU:
		return "VPU";
	case TSR_OP_REDUCE:
		return "REDUCE";
	case TSR_OP_CAST:
		return "CAST";
	case TSR_OP_TRANSPOSE:
		return "TRANSPOSE";
	case TSR_OP_SEM_WAIT:
		return "SEM_WAIT";
	case TSR_OP_SEM_SIGNAL:
		return "SEM_SIGNAL";
	case TSR_OP_SEM_INC:
		return "SEM_INC";
	case TSR_OP_SEM_WAIT_ABORT:
		return "SEM_WAIT_ABORT";
	case TSR_OP_TIMESTAMP:
		return "TIMESTAMP";
	case TSR_OP_INTERRUPT:
		return "INTERRUPT";
	case TSR_OP_ICI_WRITE:
		return "ICI_WRITE";
	case TSR_OP_SC_PARTITION:
		return "SC_PARTITION";
	case TSR_OP_SC_GATHER:
		return "SC_GATHER";
	case TSR_OP_SC_SCATTER_ADD:
		return "SC_SCATTER_ADD";
	default:
		snprintf(buf, len, "opcode 0x%02x", opcode);
		return buf;
	}
}

static const char *const engine_names[TSR_ENGINE_COUNT] = {
	[TSR_ENGINE_CP] = "CP",
	[TSR_ENGINE_DMA] = "DMA",
	[TSR_ENGINE_MXU] = "MXU",
	[TSR_ENGINE_VPU] = "VPU",
	[TSR_ENGINE_SC] = "SparseCore",
};

/*
 * Thread ids of a chip's tracks: its queues first, then each engine of
 * each queue, then each ICI port of each queue.  The timing model gives
 * every queue a timeline of its own, so engines and ports are tracked per
 * queue: on one track, events never overlap.
 */
#define TID_QUEUE(q)		(1 + (q))
#define TID_ENGINE(e, q)	(100 * (1 + (e)) + (q))
#define TID_PORT(p, q)		(1000 + 100 * (p) + (q))

/* Tracks seen, so that each gets its name once. */
struct tracks {
	bool queue[TSR_MAX_QUEUES];
	bool engine[TSR_ENGINE_COUNT][TSR_MAX_QUEUES];
	bool port[TSR_ICI_MAX_PORTS][TSR_MAX_QUEUES];
};

struct json_out {
	FILE *f;
	bool first;
};

static void json_event(struct json_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void json_event(struct json_out *o, const char *fmt, ...)
{
	va_list ap;

	fputs(o->first ? "\n" : ",\n", o->f);
	o->first = false;
	va_start(ap, fmt);
	vfprintf(o->f, fmt, ap);
	va_end(ap);
}

static void json_name(struct json_out *o, unsigned int pid, unsigned int tid,
		      const char *name)
{
	json_event(o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":\"%s\"}}",
		   pid, tid, name);
	json_event(o, "{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":%u,\"tid\":%u,\"args\":{\"sort_index\":%u}}",
		   pid, tid, tid);
}

/* Microseconds of the modeled clock; cycles are exact in the args. */
static double trace_us(const struct trace_chip *c, uint64_t cycles)
{
	return (double)cycles / c->clock_mhz;
}

/* A complete event: @name on track @tid from @start to @end cycles. */
static void json_slice(struct json_out *o, const struct trace_chip *c,
		       unsigned int tid, const char *name, const char *cat,
		       uint64_t start, uint64_t end, const char *args)
{
	json_event(o, "{\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"name\":\"%s\",\"cat\":\"%s\",\"ts\":%.6f,\"dur\":%.6f,\"args\":{\"start_cycle\":%" PRIu64 ",\"end_cycle\":%" PRIu64 "%s}}",
		   c->pid, tid, name, cat, trace_us(c, start),
		   trace_us(c, end) - trace_us(c, start), start, end, args);
}

static void port_name(unsigned int port, char *buf, size_t len)
{
	snprintf(buf, len, "%c%c", port & 1 ? '-' : '+', "xyz"[port / 2]);
}

static void json_record(struct json_out *o, const struct trace_chip *c,
			const struct trace_job *j,
			const struct tsr_trace_record *r, struct tracks *t)
{
	unsigned int q = j->hdr.queue, e = r->engine < TSR_ENGINE_COUNT ?
					    r->engine : TSR_ENGINE_CP;
	char args[256], track[48], port[4], op[16];
	const char *name = opcode_name(r->opcode, op, sizeof(op));

	snprintf(args, sizeof(args),
		 ",\"job\":%" PRIu64 ",\"command\":%u,\"engine\":\"%s\",\"mem_bytes\":%" PRIu64 ",\"error\":\"%s\"",
		 j->seq, r->index, engine_names[e], (uint64_t)r->mem_bytes,
		 accel_chip_error_name(r->error));
	json_slice(o, c, TID_QUEUE(q), name, "command", r->start_cycle,
		   r->end_cycle, args);
	if (!t->engine[e][q]) {
		t->engine[e][q] = true;
		snprintf(track, sizeof(track), "%s (queue %u)", engine_names[e], q);
		json_name(o, c->pid, TID_ENGINE(e, q), track);
	}
	json_slice(o, c, TID_ENGINE(e, q), name, engine_names[e],
		   r->start_cycle, r->end_cycle, args);
	if (r->opcode != TSR_OP_ICI_WRITE || r->port >= TSR_ICI_MAX_PORTS)
		return;
	port_name(r->port, port, sizeof(port));
	if (!t->port[r->port][q]) {
		t->port[r->port][q] = true;
		snprintf(track, sizeof(track), "ICI %s (queue %u)", port, q);
		json_name(o, c->pid, TID_PORT(r->port, q), track);
	}
	snprintf(args, sizeof(args),
		 ",\"job\":%" PRIu64 ",\"command\":%u,\"port\":\"%s\",\"dst\":[%u,%u,%u],\"link_bytes\":%" PRIu64 ",\"error\":\"%s\"",
		 j->seq, r->index, port, r->dst[0], r->dst[1], r->dst[2],
		 (uint64_t)r->link_bytes, accel_chip_error_name(r->error));
	snprintf(track, sizeof(track), "to (%u,%u,%u)", r->dst[0], r->dst[1],
		 r->dst[2]);
	/* The write is posted: the queue's ICI DMA sends it meanwhile. */
	json_slice(o, c, TID_PORT(r->port, q), track, "link",
		   r->link_start_cycle, r->link_end_cycle, args);
}

static void json_job(struct json_out *o, const struct trace_chip *c,
		     const struct trace_job *j, struct tracks *t)
{
	unsigned int q = j->hdr.queue;
	char name[32], args[160], track[16];
	uint32_t i;

	if (!j->valid || q >= TSR_MAX_QUEUES)
		return;
	if (!t->queue[q]) {
		t->queue[q] = true;
		snprintf(track, sizeof(track), "queue %u", q);
		json_name(o, c->pid, TID_QUEUE(q), track);
	}
	snprintf(name, sizeof(name), "job %" PRIu64, j->seq);
	snprintf(args, sizeof(args),
		 ",\"job\":%" PRIu64 ",\"commands\":%u,\"dropped\":%u,\"error\":\"%s\"",
		 j->seq, j->hdr.records + j->hdr.dropped, j->hdr.dropped,
		 accel_chip_error_name(j->hdr.records ?
				       j->records[j->hdr.records - 1].error : 0));
	json_slice(o, c, TID_QUEUE(q), name, "job", j->hdr.start_cycle,
		   j->hdr.end_cycle, args);
	for (i = 0; i < j->hdr.records; i++)
		json_record(o, c, j, &j->records[i], t);
}

static void json_chip(struct json_out *o, const struct accel_trace *trace,
		      unsigned int chip)
{
	const struct trace_chip *c = &trace->chips[chip];
	struct tracks t = { 0 };
	size_t k;

	json_event(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":%u,\"args\":{\"name\":\"chip (%u,%u,%u) %s\"}}",
		   c->pid, c->coords[0], c->coords[1], c->coords[2],
		   c->pci_address);
	json_event(o, "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":%u,\"args\":{\"sort_index\":%u}}",
		   c->pid, c->pid);
	json_event(o, "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":%u,\"args\":{\"labels\":\"device %u, %u MHz modeled clock\"}}",
		   c->pid, c->index, c->clock_mhz);
	for (k = 0; k < trace->njobs; k++)
		if (trace->jobs[k].chip == chip)
			json_job(o, c, &trace->jobs[k], &t);
}

int accel_trace_write_json(struct accel_trace *trace, const char *path)
{
	struct json_out o = { .first = true };
	unsigned int i;
	int ret;

	if (!trace || !path)
		return ACCEL_ERR_INVALID_ARGUMENT;
	pthread_mutex_lock(&trace->lock);
	ret = trace_read_all(trace, NULL, ACCEL_TIMEOUT_INFINITE);
	pthread_mutex_unlock(&trace->lock);
	if (ret)
		return ret;
	o.f = fopen(path, "w");
	if (!o.f)
		return ACCEL_ERR_IO;
	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"modeled\"},\"traceEvents\":[",
	      o.f);
	for (i = 0; i < trace->nchips; i++)
		json_chip(&o, trace, i);
	fputs("\n]}\n", o.f);
	if (ferror(o.f)) {
		fclose(o.f);
		return ACCEL_ERR_IO;
	}
	return fclose(o.f) ? ACCEL_ERR_IO : ACCEL_OK;
}

/* ---------------------------------------------- TESSERA_TRACE_DIR */

void accel_trace_env_open(struct accel_device *dev)
{
	const char *dir = getenv("TESSERA_TRACE_DIR");
	struct accel_trace *trace;

	if (!dir || !*dir || accel_trace_create(&trace))
		return;
	dev->env_trace_dir = strdup(dir);
	/* A chip that cannot trace runs untraced, as without the variable. */
	if (!dev->env_trace_dir || accel_trace_start(trace, dev)) {
		free(dev->env_trace_dir);
		dev->env_trace_dir = NULL;
		accel_trace_destroy(trace);
		return;
	}
	dev->env_trace = trace;
}

/*
 * Write the device's own trace as <dir>/chip<P>-<process>-XXXXXX.json,
 * P its process id in the JSON: each closing handle its own file.
 */
void accel_trace_env_close(struct accel_device *dev)
{
	struct accel_trace *trace = dev->env_trace;
	char *path;
	int fd;

	if (!trace)
		return;
	accel_trace_stop(trace, dev);
	if (asprintf(&path, "%s/chip%u-%d-XXXXXX.json", dev->env_trace_dir,
		     trace->nchips ? trace->chips[0].pid : 0,
		     (int)getpid()) >= 0) {
		fd = mkstemps(path, 5);
		if (fd >= 0) {
			close(fd);
			if (accel_trace_write_json(trace, path))
				unlink(path);
		}
		free(path);
	}
	accel_trace_destroy(trace);
	free(dev->env_trace_dir);
	dev->env_trace = NULL;
	dev->env_trace_dir = NULL;
}
