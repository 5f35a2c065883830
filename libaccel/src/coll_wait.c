// SPDX-License-Identifier: MIT
/* Collectives: waiting for a collective's jobs on every local chip. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <accel/accel.h>
#include <accel/collective.h>

#include "coll_comm.h"

/*
 * Job @i's sync file signalled: how it went (one status query, which
 * also gives its modeled times), the first failure.
 */
static void job_ended(struct accel_coll *coll, unsigned int i)
{
	struct accel_job_status st;
	int ret = accel_job_status(coll->jobs[i], &st);

	close(coll->fds[i]);
	coll->fds[i] = -1;
	coll->done[i] = true;
	/* Its command buffers' copies are free again (take_set()). */
	coll->comm->chip[coll->streams[i] / TSR_MAX_QUEUES]
		.sets[coll->sets[i]]->running--;
	/* Its fence signalled: a job still pending is what accel_job_wait() says. */
	if (!ret && st.state == ACCEL_JOB_PENDING)
		ret = ACCEL_ERR_IO;
	if (!ret) {
		if (coll->opens[i] && st.start_cycle > coll->start)
			coll->start = st.start_cycle;
		if (st.end_cycle > coll->end)
			coll->end = st.end_cycle;
		ret = st.result;
	}
	if (!ret)
		return;
	/*
	 * The communicator's windows stay open while its processes are in
	 * it, with the slice's key: one that refuses a write was closed by a
	 * process that gave up on the call and left.
	 */
	if (ret == ACCEL_ERR_REMOTE_ACCESS)
		ret = ACCEL_ERR_PEER_ABORT;
	/* What went wrong, rather than another chip's giving up on it. */
	if (!coll->result || (coll->result == ACCEL_ERR_PEER_ABORT &&
			      ret != ACCEL_ERR_PEER_ABORT))
		coll->result = ret;
	coll_comm_abort(coll->comm);
}

static int poll_timeout_ms(uint64_t deadline)
{
	uint64_t now = now_ns();

	if (deadline == UINT64_MAX)
		return -1;
	if (now >= deadline)
		return 0;
	return (deadline - now) / 1000000 > INT32_MAX ? INT32_MAX :
	       (int)((deadline - now + 999999) / 1000000);
}

void coll_link(struct accel_comm *comm, struct accel_coll *coll)
{
	coll->older = comm->newest;
	coll->newer = NULL;
	if (comm->newest)
		comm->newest->newer = coll;
	else
		comm->oldest = coll;
	comm->newest = coll;
	coll->linked = true;
}

static void coll_unlink(struct accel_coll *coll)
{
	struct accel_comm *comm = coll->comm;

	if (!coll->linked)
		return;
	if (coll->older)
		coll->older->newer = coll->newer;
	else
		comm->oldest = coll->newer;
	if (coll->newer)
		coll->newer->older = coll->older;
	else
		comm->newest = coll->older;
	coll->linked = false;
}

/*
 * Every stream's jobs end in order, so only the first pending job of each
 * is watched: the first job to fail, on any stream of any local chip,
 * aborts the communicator at once, which ends the others' waits.  So does
 * a timeout, unless the caller only asked (@timeout_ns 0).  Each job's
 * sync file is exported once, when it comes to be watched, and its status
 * asked once, when it has signalled: a call's jobs mostly end together,
 * and asking every job at every wake-up cost more ioctls than the submits.
 */
static int wait_one(struct accel_coll *coll, uint64_t deadline,
		    uint64_t timeout_ns)
{
	while (!coll->ended) {
		struct pollfd fds[STREAMS];
		unsigned int job[STREAMS];
		bool watched[STREAMS] = { false };
		unsigned int i, n = 0;
		int ret = ACCEL_OK, ready;

		for (i = 0; i < coll->count; i++) {
			if (coll->done[i] || watched[coll->streams[i]])
				continue;
			watched[coll->streams[i]] = true;
			if (coll->fds[i] < 0)
				ret = accel_job_export_sync_file(coll->jobs[i],
								 &coll->fds[i]);
			if (ret)
				break;
			fds[n].fd = coll->fds[i];
			fds[n].events = POLLIN;
			job[n++] = i;
		}
		if (!ret && !n) {
			coll->ended = true;
			coll->cycles = coll->end > coll->start ?
				       coll->end - coll->start : 0;
			coll_unlink(coll);
			break;
		}
		ready = ret ? 0 : poll(fds, n, poll_timeout_ms(deadline));
		if (ready < 0 && errno != EINTR)
			ret = ACCEL_ERR_IO;
		for (i = 0; ready > 0 && i < n; i++)
			if (fds[i].revents)
				job_ended(coll, job[i]);
		/*
		 * A caller that gives up on the call would fall out of step
		 * with the other hosts' calls: the slice gives up with it.
		 */
		if (ret || (!ready && timeout_ns))
			coll_comm_abort(coll->comm);
		if (ret)
			return ret;
		if (!ready)
			return ACCEL_ERR_TIMEOUT;
	}
	return coll->result;
}

/*
 * A call ends after the calls made before it on the communicator, as
 * operations on one stream do: its streams need not cover their queues,
 * so their jobs may still run when its own have ended, and a program that
 * waits only for its last call reads every call's results.  One that
 * failed has broken the communicator, and this call fails with it.
 */
int accel_coll_wait(struct accel_coll *coll, uint64_t timeout_ns)
{
	uint64_t deadline;
	int ret;

	if (!coll)
		return ACCEL_ERR_INVALID_ARGUMENT;
	deadline = timeout_ns == ACCEL_TIMEOUT_INFINITE ||
		   timeout_ns > UINT64_MAX - now_ns() ? UINT64_MAX :
		   now_ns() + timeout_ns;
	while (coll->linked && coll->comm->oldest != coll) {
		struct accel_coll *older = coll->comm->oldest;

		ret = wait_one(older, deadline, timeout_ns);
		if (!older->ended)
			return ret;
	}
	return wait_one(coll, deadline, timeout_ns);
}

/*
 * A stream's jobs run in order on its queue: its last one ends after the
 * others.  The jobs were queued in order, stream by stream.
 */
int accel_coll_last_jobs(const struct accel_coll *coll, unsigned int i,
			 struct accel_job **jobs, unsigned int *count)
{
	bool seen[TSR_MAX_QUEUES] = { false };
	unsigned int k, n = 0;

	if (!coll || !jobs || !count || i >= coll->comm->count)
		return ACCEL_ERR_INVALID_ARGUMENT;
	for (k = coll->count; k-- > 0;) {
		unsigned int queue = coll->streams[k] % TSR_MAX_QUEUES;

		if (coll->streams[k] / TSR_MAX_QUEUES != i || seen[queue])
			continue;
		seen[queue] = true;
		jobs[n++] = coll->jobs[k];
	}
	*count = n;
	return ACCEL_OK;
}

/*
 * A collective's modeled time runs from when its last stream starts (its
 * queue free and its chip's inputs there: before then the collective
 * cannot run anywhere, and the queues' clocks only meet through their
 * waits) to when its last job ends.
 */
uint64_t accel_coll_cycles(struct accel_coll *coll)
{
	return coll && coll->ended ? coll->cycles : 0;
}

void accel_coll_destroy(struct accel_coll *coll)
{
	unsigned int i;

	if (!coll)
		return;
	coll_unlink(coll);
	for (i = 0; i < coll->count; i++) {
		if (coll->fds[i] >= 0)
			close(coll->fds[i]);
		accel_job_destroy(coll->jobs[i]);
	}
	free(coll->jobs);
	free(coll->fds);
	free(coll->opens);
	free(coll->streams);
	free(coll->sets);
	free(coll->done);
	free(coll);
}
