/* SPDX-License-Identifier: MIT */
/*
 * libaccel jobs: submitting command buffers, dependencies, waiting and
 * how a job went.
 *
 * Each job has a fence (a DRM syncobj) that signals when it ends.  A job
 * can wait for other jobs, of this device or another, and for sync files
 * from anywhere; its fence can be exported as a sync file.
 *
 * Thread safety: jobs may be submitted to one device from several
 * threads at once (each with its own command buffer).  A job may be
 * waited for and queried from several threads at once; destroy it once
 * no other thread uses it.
 */
#ifndef ACCEL_JOB_H
#define ACCEL_JOB_H

#include <stdint.h>

#include <accel/common.h>

#ifdef __cplusplus
extern "C" {
#endif

struct accel_device;
struct accel_cmdbuf;
struct accel_job;

/** Priorities: which ready job of a queue goes to the chip first. */
enum accel_priority {
	ACCEL_PRIORITY_NORMAL = 0,
	/** Runs only when no normal or high job is ready: can starve. */
	ACCEL_PRIORITY_LOW,
	/** Goes before normal and low jobs; needs CAP_SYS_NICE. */
	ACCEL_PRIORITY_HIGH,
};

/** Most dependencies (jobs plus sync files) one submission may have. */
#define ACCEL_MAX_DEPENDENCIES	64

/** A timeout that never expires. */
#define ACCEL_TIMEOUT_INFINITE	UINT64_MAX

/**
 * struct accel_submit_opts - how to run a job; all zero is queue 0,
 * normal priority, no dependencies
 * @queue: hardware queue, below accel_device_info.num_queues
 * @priority: enum accel_priority
 * @wait_jobs: jobs that must end first (of any device)
 * @wait_job_count: entries in @wait_jobs
 * @wait_sync_files: sync-file descriptors whose fences must signal first
 *	(they stay open; the caller closes them)
 * @wait_sync_file_count: entries in @wait_sync_files
 *
 * A job starts once its dependencies have ended, whether they succeeded
 * or not: check them with accel_job_wait() if it matters.
 */
struct accel_submit_opts {
	uint32_t queue;
	enum accel_priority priority;
	struct accel_job *const *wait_jobs;
	unsigned int wait_job_count;
	const int *wait_sync_files;
	unsigned int wait_sync_file_count;
};

/** enum accel_job_state - where a job is */
enum accel_job_state {
	ACCEL_JOB_PENDING = 1,	/* queued or running */
	ACCEL_JOB_DONE,		/* ran to the end */
	ACCEL_JOB_FAILED,	/* see the other fields */
};

/**
 * struct accel_job_status - how a job went
 * @state: enum accel_job_state
 * @result: what accel_job_wait() returns for the ended job: ACCEL_OK,
 *	ACCEL_ERR_JOB_FAILED, ACCEL_ERR_JOB_HUNG, ACCEL_ERR_CANCELED,
 *	ACCEL_ERR_DEVICE_LOST or ACCEL_ERR_IO; for a failed ICI_WRITE,
 *	ACCEL_ERR_LINK_DOWN, ACCEL_ERR_REMOTE_ACCESS or ACCEL_ERR_NO_ROUTE
 *	(@chip_error_name "LINK_DOWN", "REMOTE_ACCESS", "NO_ROUTE"); ACCEL_OK
 *	while pending
 * @fence_error: the driver's negative errno for the job (Documentation/
 *	uapi.md, "How a job ends"), 0 on success
 * @chip_error: the chip's error code (enum tsr_error), 0 if none
 * @chip_error_name: its name, e.g. "MMU_UNMAPPED" (accel_chip_error_name())
 * @failed_command: index of the failing command (as accel_cmdbuf_count()
 *	counted when it was added), or TSR_NO_COMMAND
 * @queue: the queue the job ran on
 * @fault_va: device VA of an MMU fault or memory error
 * @start_cycle: modeled device clock when the job started
 * @end_cycle: modeled device clock when it ended
 * @mxu_cycles: modeled cycles the job kept the MXUs busy
 * @vpu_cycles: modeled cycles the job kept the VPU busy
 * @dma_cycles: modeled cycles the job kept the DMA engines busy
 * @duration_ns: host time from the job reaching the chip to its end,
 *	time behind earlier jobs on the queue included
 *
 * The driver keeps the details of a device handle's last 1024 jobs;
 * libaccel keeps them once it has seen a job end.  A job whose details
 * were lost before that (more than 1024 later submissions before the
 * first wait or query) still reports @state, @result and @fence_error;
 * its other fields are zero and @failed_command is TSR_NO_COMMAND.
 */
struct accel_job_status {
	enum accel_job_state state;
	int result;
	int fence_error;
	uint32_t chip_error;
	const char *chip_error_name;
	uint32_t failed_command;
	uint32_t queue;
	uint64_t fault_va;
	uint64_t start_cycle;
	uint64_t end_cycle;
	uint64_t mxu_cycles;
	uint64_t vpu_cycles;
	uint64_t dma_cycles;
	uint64_t duration_ns;
};

/**
 * accel_submit() - queue the commands of @cb as a job on @dev.
 * @opts: NULL for the defaults
 * @job: the new job; destroy it with accel_job_destroy()
 *
 * Returns once the job is queued; never waits for its dependencies.  The
 * buffers @cb recorded are listed for the driver.  @cb may be changed or
 * destroyed as soon as this returns.  ACCEL_ERR_CANCELED when the device
 * handle is banned after repeated faults (open the device again);
 * ACCEL_ERR_BUSY when it has as many jobs queued as the driver allows.
 */
ACCEL_API int accel_submit(struct accel_device *dev, struct accel_cmdbuf *cb,
			   const struct accel_submit_opts *opts,
			   struct accel_job **job);

/** Most jobs one accel_submit_many() queues. */
#define ACCEL_MAX_BATCH		64

/**
 * accel_submit_many() - queue @count jobs on @dev in one call, all or none.
 * @count: jobs, 1 to ACCEL_MAX_BATCH
 * @cbs: the command buffer of each job, all different
 * @opts: how to run each job (a NULL entry for the defaults), or NULL for
 *	the defaults throughout
 * @jobs: the new jobs, as accel_submit() gives them
 *
 * As @count calls of accel_submit(), in one system call: each job is
 * checked as accel_submit() checks it, and either every job is queued, in
 * array order, or none is.  The jobs may use different queues and the same
 * buffers; they do not wait for each other, and none may wait for another
 * of the same call (order them through their commands, or submit in two
 * calls).  On failure, accel_cmdbuf_last_error() of the command buffer at
 * fault says why.  For what submits to several queues at once: the
 * collectives, a pipeline's stages.
 */
ACCEL_API int accel_submit_many(struct accel_device *dev, unsigned int count,
				struct accel_cmdbuf *const *cbs,
				const struct accel_submit_opts *const *opts,
				struct accel_job **jobs);

/**
 * accel_job_wait() - wait for a job to end.
 * @timeout_ns: how long to wait, 0 to poll, or ACCEL_TIMEOUT_INFINITE
 *
 * ACCEL_OK if the job ran to the end; ACCEL_ERR_TIMEOUT if it has not
 * ended in time (it goes on); otherwise how it failed, as @result of
 * accel_job_status().
 */
ACCEL_API int accel_job_wait(struct accel_job *job, uint64_t timeout_ns);

/** accel_job_status() - how the job went, or that it is pending; no wait. */
ACCEL_API int accel_job_status(struct accel_job *job,
			       struct accel_job_status *status);

/**
 * accel_job_export_sync_file() - the job's fence as a sync file, to wait
 * on with poll() or to pass to another device or process.
 * @fd: the new file descriptor; the caller closes it
 */
ACCEL_API int accel_job_export_sync_file(struct accel_job *job, int *fd);

/**
 * accel_job_destroy() - free a job handle; NULL is allowed.  The job
 * itself runs on.
 */
ACCEL_API void accel_job_destroy(struct accel_job *job);

#ifdef __cplusplus
}
#endif

#endif /* ACCEL_JOB_H */
