/* SPDX-License-Identifier: MIT */
/*
 * libaccel traces: the modeled timeline of a program's jobs, per queue,
 * per command, per engine and per ICI link, as the chips themselves
 * record it (TSR_JOB_TRACE, Documentation/chip.md "Job traces"), written
 * as Chrome trace-event JSON for Perfetto or chrome://tracing.
 *
 *	struct accel_trace *trace;
 *
 *	accel_trace_create(&trace);
 *	accel_trace_start(trace, dev);	  jobs submitted on dev are recorded
 *	... accel_submit(dev, ...) ...
 *	accel_trace_write_json(trace, "trace.json");
 *	accel_trace_destroy(trace);	  before closing dev
 *
 * Documentation/tracing.md says what each track of the file means.
 *
 * Thread safety: jobs may be submitted from several threads on devices a
 * trace records; start, stop, write and destroy a trace from one thread,
 * with no submission on its devices under way.
 */
#ifndef ACCEL_TRACE_H
#define ACCEL_TRACE_H

#include <stdint.h>

#include <accel/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_device;
struct accel_trace;

/** accel_trace_create() - a trace recording nothing yet. */
ACCEL_API int accel_trace_create(struct accel_trace **trace);

/**
 * accel_trace_start() - record every job submitted on @dev from now on.
 *
 * Each job gets a trace buffer with room for a record per command, listed
 * with the job.  ACCEL_ERR_NOT_SUPPORTED when the chip has no
 * TSR_CAP_TRACE; ACCEL_ERR_BUSY when @dev is recorded by another trace.
 * Starting again a device @trace records already is allowed.
 */
ACCEL_API int accel_trace_start(struct accel_trace *trace,
				struct accel_device *dev);

/**
 * accel_trace_stop() - stop recording @dev's jobs.
 *
 * Waits for the jobs of @dev already recorded to end and keeps their
 * timelines: @dev may then be closed, and they are still written.
 */
ACCEL_API int accel_trace_stop(struct accel_trace *trace,
			       struct accel_device *dev);

/**
 * accel_trace_write_json() - write the timelines recorded so far to @path
 * as a Chrome trace-event JSON file.
 *
 * Waits for the jobs recorded to end (a hung job ends when the driver
 * stops it).  One process per chip, one thread per queue, per engine of a
 * queue and per ICI port a queue sends on; times in microseconds of the
 * chip's modeled clock.  ACCEL_ERR_IO when the file cannot be written
 * (errno says why).
 */
ACCEL_API int accel_trace_write_json(struct accel_trace *trace,
				     const char *path);

/**
 * accel_trace_jobs() - jobs recorded so far; accel_trace_dropped() -
 * commands that ran without a record, because their trace buffer was
 * full (0 unless a job outgrew its buffer).
 */
ACCEL_API uint64_t accel_trace_jobs(const struct accel_trace *trace);
ACCEL_API uint64_t accel_trace_dropped(const struct accel_trace *trace);

/**
 * accel_trace_destroy() - stop recording every device (as
 * accel_trace_stop()) and free the trace; NULL is allowed.
 */
ACCEL_API void accel_trace_destroy(struct accel_trace *trace);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_TRACE_H */
