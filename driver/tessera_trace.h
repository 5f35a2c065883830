/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Tessera tracepoints: a job's way (submit, run, done) and resets.
 *
 *   echo 1 > /sys/kernel/tracing/events/tessera/enable
 *   cat /sys/kernel/tracing/trace_pipe
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM tessera

#if !defined(__TESSERA_TRACE_H__) || defined(TRACE_HEADER_MULTI_READ)
#define __TESSERA_TRACE_H__

#include <linux/tracepoint.h>

#include "tessera_job.h"

DECLARE_EVENT_CLASS(tessera_job,
		    TP_PROTO(struct tessera_job *job),
		    TP_ARGS(job),
		    TP_STRUCT__entry(__string(dev, dev_name(job->tdev->drm.dev))
				     __field(u32, ctx)
				     __field(u32, queue)
				     __field(u64, seq)
				     __field(u32, cmdbuf_size)),
		    TP_fast_assign(__assign_str(dev);
				   __entry->ctx = job->ctx->id;
				   __entry->queue = job->q->index;
				   __entry->seq = job->seq;
				   __entry->cmdbuf_size = job->cmdbuf_size;),
		    TP_printk("dev=%s ctx=%u queue=%u seq=%llu size=%u",
			      __get_str(dev), __entry->ctx, __entry->queue,
			      __entry->seq, __entry->cmdbuf_size)
);

/* SUBMIT handed the job to its queue's scheduler. */
DEFINE_EVENT(tessera_job, tessera_job_submit,
	     TP_PROTO(struct tessera_job *job),
	     TP_ARGS(job)
);

/* The scheduler runs the job: it goes on the ring now (again after a reset). */
DEFINE_EVENT(tessera_job, tessera_job_run,
	     TP_PROTO(struct tessera_job *job),
	     TP_ARGS(job)
);

/* The scheduler frees the job, whose fence has signalled with @error. */
TRACE_EVENT(tessera_job_done,
	    TP_PROTO(struct tessera_job *job, int error),
	    TP_ARGS(job, error),
	    TP_STRUCT__entry(__string(dev, dev_name(job->tdev->drm.dev))
			     __field(u32, ctx)
			     __field(u32, queue)
			     __field(u64, seq)
			     __field(int, error)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->ctx = job->ctx->id;
			   __entry->queue = job->q->index;
			   __entry->seq = job->seq;
			   __entry->error = error;),
	    TP_printk("dev=%s ctx=%u queue=%u seq=%llu error=%d",
		      __get_str(dev), __entry->ctx, __entry->queue,
		      __entry->seq, __entry->error)
);

/* A queue (@queue) or the whole chip (@queue -1) was reset and restarted. */
TRACE_EVENT(tessera_reset,
	    TP_PROTO(struct tessera_device *tdev, int queue),
	    TP_ARGS(tdev, queue),
	    TP_STRUCT__entry(__string(dev, dev_name(tdev->drm.dev))
			     __field(int, queue)),
	    TP_fast_assign(__assign_str(dev);
			   __entry->queue = queue;),
	    TP_printk("dev=%s %s queue=%d", __get_str(dev),
		      __entry->queue < 0 ? "chip" : "queue", __entry->queue)
);

#endif /* __TESSERA_TRACE_H__ */

/* The module is built out of tree: the header is found beside its users. */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE tessera_trace
#include <trace/define_trace.h>
