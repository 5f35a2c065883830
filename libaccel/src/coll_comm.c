// SPDX-License-Identifier: MIT
/*
 * Collectives: a communicator's life.  Setting it up (its windows, the
 * neighbours' greetings), giving up on it for the whole slice, and
 * tearing it down.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <accel/accel.h>
#include <accel/collective.h>

#include "coll_comm.h"
#include "coll_plan.h"
#include "internal.h"

#define DEFAULT_SLOT_BYTES	(256ull << 10)
#define MIN_SLOT_BYTES		(4ull << 10)
#define MAX_SLOT_BYTES		(4ull << 20)
#define DEFAULT_TIMEOUT_NS	(60ull * 1000 * 1000 * 1000)

/* ------------------------------------------------------- neighbours */

struct accel_coords coll_neighbour(const struct accel_comm *comm,
				   const struct comm_chip *chip,
				   unsigned int dim, unsigned int dir)
{
	struct accel_coords c;
	uint32_t n = comm->dims[dim];
	unsigned int d;

	for (d = 0; d < COLL_DIMS; d++)
		c.c[d] = (uint8_t)chip->coords[d];
	c.c[dim] = (uint8_t)(dir == COLL_PLUS ? (chip->coords[dim] + 1) % n :
				(chip->coords[dim] + n - 1) % n);
	return c;
}

bool coll_has_neighbour(const struct accel_comm *comm,
			const struct comm_chip *chip, unsigned int dim,
			unsigned int dir)
{
	if (comm->dims[dim] < 2)
		return false;
	return comm->wrap & 1u << dim ||
	       chip->coords[dim] != (dir == COLL_PLUS ? comm->dims[dim] - 1 : 0);
}

static bool is_local(const struct accel_comm *comm, struct accel_coords c)
{
	unsigned int i, d;

	for (i = 0; i < comm->count; i++) {
		for (d = 0; d < COLL_DIMS && comm->chip[i].coords[d] == c.c[d]; d++)
			;
		if (d == COLL_DIMS)
			return true;
	}
	return false;
}

/* ------------------------------------------------------- giving up */

/* The semaphore at @sem of @chip's window, read from the CPU; 0 without one. */
static uint64_t window_sem(const struct comm_chip *chip, uint64_t sem)
{
	uint64_t *sems;

	if (accel_buffer_map(chip->window_buf, (void **)&sems))
		return 0;
	return __atomic_load_n(&sems[sem / 8], __ATOMIC_SEQ_CST);
}


/*
 * The remote writes that set the abort semaphores of @chip's neighbours
 * on other hosts (in @setup, their gave-up semaphores for @chip's port,
 * which their set-up's waits watch), each the way its link goes (a ring
 * of 2 has two links between its chips: both carry one), and in @ports
 * (unless NULL) the port each leaves by.  Returns how many.
 */
static unsigned int abort_writes(const struct accel_comm *comm,
				 const struct comm_chip *chip, bool setup,
				 struct accel_ici_write *w, unsigned int *ports)
{
	unsigned int dim, dir, n = 0;

	for (dim = 0; dim < COLL_DIMS; dim++) {
		for (dir = 0; dir < COLL_DIRS; dir++) {
			unsigned int port = TSR_ICI_PORT(dim, dir == COLL_MINUS);
			struct accel_coords to;

			if (!coll_has_neighbour(comm, chip, dim, dir))
				continue;
			to = coll_neighbour(comm, chip, dim, dir);
			if (is_local(comm, to))
				continue;
			if (ports)
				ports[n] = port;
			w[n++] = (struct accel_ici_write){
				.dst = to, .window = comm->window_id,
				.key = comm->key,
				.sem_offset = setup ?
					SEM_GAVE_UP(TSR_ICI_PORT_OPPOSITE(port)) :
					SEM_ABORT,
				.sem_add = 1,
				.flags = TSR_ICI_WRITE_SEM |
					 (dir == COLL_MINUS ? TSR_ICI_WRITE_MINUS : 0),
			};
		}
	}
	return n;
}

/* Submit @w on @chip's queue @queue, a job of its own; NULL if it failed. */
static struct accel_job *send_abort(struct comm_chip *chip,
				    const struct accel_ici_write *w,
				    uint32_t queue)
{
	struct accel_submit_opts opts = { .queue = queue };
	struct accel_job *job = NULL;
	struct accel_cmdbuf *cb;

	if (accel_cmdbuf_create(chip->dev, &cb))
		return NULL;
	if (accel_cmdbuf_ici_write(cb, w) ||
	    accel_submit(chip->dev, cb, &opts, &job))
		job = NULL;
	accel_cmdbuf_destroy(cb);
	return job;
}

/* Set the local chips' abort semaphores from the CPU. */
static void abort_local(struct accel_comm *comm)
{
	unsigned int i;

	for (i = 0; i < comm->count; i++) {
		uint64_t *sems;

		if (!accel_buffer_map(comm->chip[i].window_buf, (void **)&sems))
			__atomic_store_n(&sems[SEM_ABORT / 8], 1, __ATOMIC_SEQ_CST);
	}
}

/* An abort write a failed set-up watched until it ends. */
struct abort_sent {
	struct accel_job *job;
	unsigned int chip;	/* the local chip that sent it */
	unsigned int to;	/* its abort_writes() entry */
	unsigned int port;	/* the port it leaves by */
};

/*
 * Send local chip @i's abort writes on every queue of the chip, each a
 * job of its own: any queue may be held by a command that does not end
 * soon (a stream's ICI_WRITE to a chip that stopped taking it, another
 * job of the process, a hung queue), and the first write to get through
 * is enough, the semaphore only has to be non-zero.  Each queue starts
 * with another neighbour, so that one whose write never leaves holds up
 * the others on one queue only.  @setup: the set-up's writes
 * (abort_writes()).  The jobs go into @sent (up to @room, the rest run
 * on unwatched) for a caller that watches them; returns how many.
 */
static unsigned int abort_remote(struct accel_comm *comm, unsigned int i,
				 bool setup, struct abort_sent *sent,
				 unsigned int room)
{
	struct accel_ici_write w[COLL_DIMS * COLL_DIRS];
	unsigned int ports[COLL_DIMS * COLL_DIRS];
	unsigned int j, n, q, kept = 0;

	n = abort_writes(comm, &comm->chip[i], setup, w, ports);
	for (q = 0; q < comm->queues; q++) {
		for (j = 0; j < n; j++) {
			unsigned int to = (q + j) % n;
			struct accel_job *job = send_abort(&comm->chip[i],
							   &w[to], q);

			if (job && kept < room)
				sent[kept++] = (struct abort_sent){
					job, i, to, ports[to] };
			else
				accel_job_destroy(job);	/* it runs on unwatched */
		}
	}
	return kept;
}

/*
 * A collective failed or timed out: the whole slice gives up on the
 * communicator, which is broken from then on.  The local chips' abort
 * semaphores are set from the CPU, which fails their streams' waits at
 * once; every neighbour on another host gets remote writes to its own
 * (abort_remote()), and its process passes the failure on when its waits
 * fail in turn, until every chip has given up.  A chip cut off entirely
 * still ends at its driver's job timeout.
 */
void coll_comm_abort(struct accel_comm *comm)
{
	unsigned int i;

	if (comm->broken)
		return;
	comm->broken = true;
	if (!(comm->caps & TSR_CAP_SEM_ABORT))
		return;
	abort_local(comm);
	for (i = 0; i < comm->count; i++)
		abort_remote(comm, i, false, NULL, 0);
}

/*
 * Whether another chip of the slice gave up on the communicator: it set
 * a local chip's abort semaphore, and a new call would only fail.
 */
bool coll_comm_peer_aborted(const struct accel_comm *comm)
{
	unsigned int i;

	for (i = 0; i < comm->count; i++)
		if (window_sem(&comm->chip[i], SEM_ABORT))
			return true;
	return false;
}

/* ------------------------------------------------------- set-up */

/*
 * Setting up fails on every host within seconds of its cause, never at
 * the connect timeout, which only a process that never comes waits out:
 *
 * - A chip's window opens before anything that can fail or wait (its
 *   semaphores are zeroed from the CPU, not by a job that a hung queue
 *   would hold), so a neighbour's greeting or abort finds it open.
 * - Every wait of the set-up (a neighbour not open yet, its greetings)
 *   polls from the CPU and ends with ACCEL_ERR_PEER_ABORT once a
 *   neighbour gave up (set this chip's gave-up or abort semaphore), and with
 *   ACCEL_ERR_LINK_DOWN once a port to a neighbour is down, as a
 *   collective's SEM_WAIT_ABORT with TSR_SEM_WAIT_LINKS would.  A wait on
 *   the chip would be ended by the driver's job watchdog when a
 *   neighbour's process is only late, as the misleading JOB_HUNG.
 * - Greetings go round as many times as the slice's diameter: no chip's
 *   set-up ends before every chip's has come that far.
 * - A chip whose set-up failed (its queue hung: JOB_HUNG; a link down;
 *   a neighbour that gave up) tells its neighbours with abort writes, as
 *   a broken collective does, so the failure spreads a hop at a time;
 *   it keeps its window open for up to SETUP_LINGER_NS more while a
 *   neighbour's window refuses them: one that greets it meanwhile opened
 *   its own window first, so the writes, sent again, reach it.
 */
#define SETUP_LINGER_NS		(2ull * 1000 * 1000 * 1000)
/* Abort writes a failed set-up watches at once: two rounds' worth. */
#define SETUP_MAX_JOBS		(2 * ACCEL_SLICE_MAX_LOCAL * TSR_MAX_QUEUES * \
				 COLL_DIMS * COLL_DIRS)

static void pause_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000l };

	nanosleep(&ts, NULL);
}

/* A wait's next pause: 1 ms, doubling up to 64 ms. */
static void backoff(unsigned int *pause)
{
	pause_ms(*pause);
	*pause = *pause < 64 ? 2 * *pause : *pause;
}

/*
 * Why @chip's set-up cannot go on: a neighbour gave up
 * (ACCEL_ERR_PEER_ABORT), a port to a neighbour is down, miswired or
 * foreign (ACCEL_ERR_LINK_DOWN; one training again may yet come up, and
 * one whose connection was lost resumes, or goes down past the link's
 * deadline: Documentation/ici.md, "Ports over TCP"), the deadline passed
 * (ACCEL_ERR_TIMEOUT); ACCEL_OK if it can.
 */
static int setup_check(const struct accel_comm *comm,
		       const struct comm_chip *chip, uint64_t deadline)
{
	unsigned int dim, dir, port;
	int ret = ACCEL_OK;

	if (window_sem(chip, SEM_ABORT))
		return ACCEL_ERR_PEER_ABORT;
	for (dim = 0; dim < COLL_DIMS; dim++) {
		for (dir = 0; dir < COLL_DIRS; dir++) {
			struct accel_link_info li;

			port = TSR_ICI_PORT(dim, dir == COLL_MINUS);
			if (!coll_has_neighbour(comm, chip, dim, dir))
				continue;
			if (window_sem(chip, SEM_GAVE_UP(port)))
				return ACCEL_ERR_PEER_ABORT;
			if (!accel_link_get_info(chip->dev, port, &li) &&
			    li.port.state != TSR_ICI_STATE_UP &&
			    li.port.state != TSR_ICI_STATE_TRAINING &&
			    li.port.state != TSR_ICI_STATE_DISCONNECTED)
				ret = ACCEL_ERR_LINK_DOWN;
		}
	}
	if (!ret && now_ns() > deadline)
		ret = ACCEL_ERR_TIMEOUT;
	return ret;
}

/* Run @cb on @chip's queue 0 and wait for it. */
static int run_now(struct comm_chip *chip, struct accel_cmdbuf *cb,
		   uint64_t timeout_ns)
{
	struct accel_job *job;
	int ret = accel_submit(chip->dev, cb, NULL, &job);

	if (ret)
		return ret;
	ret = accel_job_wait(job, timeout_ns);
	accel_job_destroy(job);
	return ret;
}

/*
 * A greeting (hello or goodbye: @sems) goes to the semaphore of the port
 * it arrives by, so that each neighbour's are counted apart and one a
 * round ahead cannot stand in for one behind.  One leaving by port P
 * arrives by the opposite port.
 */
static uint64_t greeting_sem(uint64_t (*sems)(unsigned int), unsigned int dim,
			     unsigned int dir, bool arriving)
{
	unsigned int port = TSR_ICI_PORT(dim, dir == COLL_MINUS);

	return sems(arriving ? port : TSR_ICI_PORT_OPPOSITE(port));
}

static uint64_t hello_sem(unsigned int port)
{
	return SEM_HELLO(port);
}

static uint64_t goodbye_sem(unsigned int port)
{
	return SEM_GOODBYE(port);
}

/*
 * Add 1 to each neighbour's semaphore @sems for this chip.  A neighbour
 * whose process has not opened its window yet refuses: ask again until
 * the deadline (there is no event to wait for on another host), unless
 * setup_check() says it is no use.
 */
static int greet(struct accel_comm *comm, struct comm_chip *chip,
		 uint64_t (*sems)(unsigned int), uint64_t deadline)
{
	unsigned int dim, dir;
	unsigned int pause = 1;
	int ret = ACCEL_OK;

	for (dim = 0; dim < COLL_DIMS && !ret; dim++) {
		for (dir = 0; dir < COLL_DIRS && !ret; dir++) {
			struct accel_cmdbuf *cb;

			if (!coll_has_neighbour(comm, chip, dim, dir))
				continue;
			ret = accel_cmdbuf_create(chip->dev, &cb);
			if (!ret)
				ret = accel_cmdbuf_ici_sem_inc(cb,
							       coll_neighbour(comm, chip, dim, dir),
							       comm->window_id, comm->key,
							       greeting_sem(sems, dim, dir, false), 1);
			while (!ret) {
				ret = run_now(chip, cb, comm->timeout_ns);
				if (ret != ACCEL_ERR_REMOTE_ACCESS)
					break;
				ret = setup_check(comm, chip, deadline);
				if (!ret)
					backoff(&pause);
			}
			accel_cmdbuf_destroy(cb);
		}
	}
	return ret;
}

/*
 * The fewest greetings at @sems that any neighbour of @chip has given it
 * (UINT64_MAX without neighbours); with @total, all of them.
 */
static uint64_t least_greeted(const struct accel_comm *comm,
			      const struct comm_chip *chip,
			      uint64_t (*sems)(unsigned int), uint64_t *total)
{
	uint64_t v, least = UINT64_MAX;
	unsigned int dim, dir;

	if (total)
		*total = 0;
	for (dim = 0; dim < COLL_DIMS; dim++) {
		for (dir = 0; dir < COLL_DIRS; dir++) {
			if (!coll_has_neighbour(comm, chip, dim, dir))
				continue;
			v = window_sem(chip, greeting_sem(sems, dim, dir, true));
			least = v < least ? v : least;
			if (total)
				*total += v;
		}
	}
	return least;
}

/* Wait until every neighbour of @chip has greeted it @times times. */
static int await_greetings(const struct accel_comm *comm,
			   const struct comm_chip *chip,
			   uint64_t (*sems)(unsigned int), uint64_t times,
			   uint64_t deadline)
{
	unsigned int pause = 1;
	int ret;

	while (least_greeted(comm, chip, sems, NULL) < times) {
		ret = setup_check(comm, chip, deadline);
		if (ret)
			return ret;
		backoff(&pause);
	}
	/* A neighbour may have given up after its greeting. */
	return setup_check(comm, chip, UINT64_MAX);
}

/*
 * Note which of the abort writes in @sent (@n of them) ended, in @told
 * those that reached their neighbour, or showed it a dead link, or found
 * its window closed after it had greeted or given up (its process left,
 * as coll_wait.c reads a refusal too); returns how many are still
 * running, moved to the front.
 */
static unsigned int abort_watch(const struct accel_comm *comm,
				struct abort_sent *sent, unsigned int n,
				bool told[][COLL_DIMS * COLL_DIRS])
{
	unsigned int k, left = 0;

	for (k = 0; k < n; k++) {
		const struct comm_chip *chip = &comm->chip[sent[k].chip];
		int ret = accel_job_wait(sent[k].job, 0);

		if (ret == ACCEL_ERR_TIMEOUT) {
			sent[left++] = sent[k];
			continue;
		}
		if (!ret || ret == ACCEL_ERR_LINK_DOWN ||
		    ret == ACCEL_ERR_NO_ROUTE ||
		    (ret == ACCEL_ERR_REMOTE_ACCESS &&
		     (window_sem(chip, SEM_HELLO(sent[k].port)) ||
		      window_sem(chip, SEM_GAVE_UP(sent[k].port)))))
			told[sent[k].chip][sent[k].to] = true;
		accel_job_destroy(sent[k].job);
	}
	return left;
}

/*
 * The handshake at @sems failed here: tell every neighbour on another
 * host (its own then fails with ACCEL_ERR_PEER_ABORT, and it tells its
 * neighbours in turn).  One whose window refuses the write has not opened
 * it yet: send again each time a greeting shows that one more has, until
 * each neighbour is told, or has a dead link between, or SETUP_LINGER_NS
 * have passed.
 */
static void setup_abort(struct accel_comm *comm, uint64_t (*sems)(unsigned int))
{
	struct abort_sent sent[SETUP_MAX_JOBS];
	bool told[ACCEL_SLICE_MAX_LOCAL][COLL_DIMS * COLL_DIRS] = { { false } };
	struct accel_ici_write w[COLL_DIMS * COLL_DIRS];
	uint64_t seen[ACCEL_SLICE_MAX_LOCAL];
	uint64_t deadline = now_ns() + SETUP_LINGER_NS;
	unsigned int i, j, n = 0, pause = 1;
	bool all;

	abort_local(comm);
	for (i = 0; i < comm->count; i++)
		seen[i] = UINT64_MAX;
	for (;;) {
		for (i = 0; i < comm->count; i++) {
			uint64_t total;

			least_greeted(comm, &comm->chip[i], sems, &total);
			if (total != seen[i])
				n += abort_remote(comm, i, true, sent + n,
						  SETUP_MAX_JOBS - n);
			seen[i] = total;
		}
		n = abort_watch(comm, sent, n, told);
		all = true;
		for (i = 0; i < comm->count; i++)
			for (j = abort_writes(comm, &comm->chip[i], true, w, NULL); j--;)
				all &= told[i][j];
		if (all || now_ns() > deadline)
			break;
		backoff(&pause);
	}
	while (n--)
		accel_job_destroy(sent[n].job);	/* it runs on unwatched */
}

/*
 * Greetings cross one link a round: after as many rounds as the slice's
 * diameter, every chip has heard, through its neighbours, from every
 * other, so a chip that never came holds every other back.
 */
static unsigned int diameter(const struct accel_comm *comm)
{
	unsigned int dim, d = 0;

	for (dim = 0; dim < COLL_DIMS; dim++)
		d += comm->wrap & 1u << dim ? comm->dims[dim] / 2 :
					      comm->dims[dim] - 1;
	return d;
}

/*
 * @rounds rounds of greetings at @sems with every neighbour of every
 * local chip, within the connect timeout; if they fail, tell the
 * neighbours.
 */
static int handshake(struct accel_comm *comm, uint64_t (*sems)(unsigned int),
		     unsigned int rounds)
{
	uint64_t deadline = now_ns() + comm->timeout_ns;
	unsigned int i, r;
	int ret = ACCEL_OK;

	for (r = 1; !ret && r <= rounds; r++) {
		for (i = 0; !ret && i < comm->count; i++)
			ret = greet(comm, &comm->chip[i], sems, deadline);
		for (i = 0; !ret && i < comm->count; i++)
			ret = await_greetings(comm, &comm->chip[i], sems, r,
					      deadline);
	}
	if (ret)
		setup_abort(comm, sems);
	return ret;
}

/*
 * The set-up ends with a meeting of every queue of every chip, so that a
 * collective's modeled time is its own, whatever the host did before it.
 * The greetings' jobs run on queue 0, and how many a chip ran is the
 * host's doing (each refused greeting is sent again; a refused write
 * costs its round trip on the chip, as it would on hardware); so are
 * the jobs a process ran on its chips before.  The meeting leaves every
 * queue's clock where the go from rank 0 reaches it: the latest clock of
 * the slice plus a time that depends on the slice alone.  Each step
 * waits on the CPU for what it needs first (a neighbour can be late by
 * more than the job watchdog allows), so its waits on the chips end at
 * once, at the modeled time the semaphores carry.
 */
#define MEET_JOBS	(ACCEL_SLICE_MAX_LOCAL * TSR_MAX_QUEUES)

/* Wait from the CPU until @chip's semaphore @sem is @value or more. */
static int await_sem(const struct accel_comm *comm,
		     const struct comm_chip *chip, uint64_t sem,
		     uint64_t value, uint64_t deadline)
{
	unsigned int pause = 1;
	int ret;

	while (window_sem(chip, sem) < value) {
		ret = setup_check(comm, chip, deadline);
		if (ret)
			return ret;
		backoff(&pause);
	}
	return ACCEL_OK;
}

/* Submit @cb on @chip's queue @queue as jobs[*n]; @cb is freed. */
static int submit_meet(struct comm_chip *chip, struct accel_cmdbuf *cb,
		       int ret, uint32_t queue, struct accel_job **jobs,
		       unsigned int *n)
{
	struct accel_submit_opts opts = { .queue = queue };

	if (!ret)
		ret = accel_submit(chip->dev, cb, &opts, &jobs[*n]);
	if (!ret)
		++*n;
	accel_cmdbuf_destroy(cb);
	return ret;
}

/* Wait for @n jobs and free them; the first failure. */
static int wait_meet(struct accel_job **jobs, unsigned int n,
		     uint64_t timeout_ns, int ret)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		int err = accel_job_wait(jobs[i], timeout_ns);

		ret = ret ? ret : err;
		accel_job_destroy(jobs[i]);
	}
	return ret;
}

/*
 * Every queue of @chip tells its queue 0, which tells rank 0 (its
 * SEM_MET(rank)): that one is then later than every queue of the chip.
 */
static int meet_gather(struct accel_comm *comm, struct comm_chip *chip,
		       struct accel_job **jobs, unsigned int *n)
{
	struct accel_cmdbuf *cb;
	unsigned int q;
	int ret = ACCEL_OK;

	for (q = 1; !ret && q < comm->queues; q++) {
		ret = accel_cmdbuf_create(chip->dev, &cb);
		if (ret)
			return ret;
		ret = submit_meet(chip, cb,
				  accel_cmdbuf_sem_inc(cb, chip->window_buf,
						       SEM_MEET_QUEUES, 1),
				  q, jobs, n);
	}
	if (!ret)
		ret = accel_cmdbuf_create(chip->dev, &cb);
	if (ret)
		return ret;
	ret = coll_wait_sem(comm, chip, cb, SEM_MEET_QUEUES, comm->queues - 1);
	if (!ret && !chip->rank)
		ret = accel_cmdbuf_sem_inc(cb, chip->window_buf, SEM_MET(0), 1);
	else if (!ret)
		ret = accel_cmdbuf_ici_sem_inc(cb, coll_coords_of_rank(comm, 0),
					       comm->window_id, comm->key,
					       SEM_MET(chip->rank), 1);
	return submit_meet(chip, cb, ret, 0, jobs, n);
}

/* Rank 0, once every rank has met: the go to every chip, in rank order. */
static int meet_go(struct accel_comm *comm, struct comm_chip *chip,
		   uint64_t deadline)
{
	struct accel_cmdbuf *cb;
	unsigned int r;
	int ret = ACCEL_OK;

	for (r = 0; !ret && r < comm->chips; r++)
		ret = await_sem(comm, chip, SEM_MET(r), 1, deadline);
	if (!ret)
		ret = accel_cmdbuf_create(chip->dev, &cb);
	if (ret)
		return ret;
	for (r = 0; !ret && r < comm->chips; r++)
		ret = coll_wait_sem(comm, chip, cb, SEM_MET(r), 1);
	for (r = 1; !ret && r < comm->chips; r++)
		ret = accel_cmdbuf_ici_sem_inc(cb, coll_coords_of_rank(comm, r),
					       comm->window_id, comm->key,
					       SEM_GO, 1);
	if (!ret)
		ret = accel_cmdbuf_sem_inc(cb, chip->window_buf, SEM_GO, 1);
	if (!ret)
		ret = run_now(chip, cb, comm->timeout_ns);
	accel_cmdbuf_destroy(cb);
	return ret;
}

/* Once the go has come: every queue of @chip waits for it. */
static int meet_go_on(struct accel_comm *comm, struct comm_chip *chip,
		      uint64_t deadline, struct accel_job **jobs,
		      unsigned int *n)
{
	struct accel_cmdbuf *cb;
	unsigned int q;
	int ret = await_sem(comm, chip, SEM_GO, 1, deadline);

	for (q = 0; !ret && q < comm->queues; q++) {
		ret = accel_cmdbuf_create(chip->dev, &cb);
		if (ret)
			return ret;
		ret = submit_meet(chip, cb,
				  coll_wait_sem(comm, chip, cb, SEM_GO, 1),
				  q, jobs, n);
	}
	return ret;
}

static int meet(struct accel_comm *comm)
{
	uint64_t deadline = now_ns() + comm->timeout_ns;
	struct accel_job *jobs[MEET_JOBS];
	unsigned int i, n = 0;
	int ret = ACCEL_OK;

	for (i = 0; !ret && i < comm->count; i++)
		ret = meet_gather(comm, &comm->chip[i], jobs, &n);
	ret = wait_meet(jobs, n, comm->timeout_ns, ret);
	for (i = 0; !ret && i < comm->count; i++)
		if (!comm->chip[i].rank)
			ret = meet_go(comm, &comm->chip[i], deadline);
	n = 0;
	for (i = 0; !ret && i < comm->count; i++)
		ret = meet_go_on(comm, &comm->chip[i], deadline, jobs, &n);
	ret = wait_meet(jobs, n, comm->timeout_ns, ret);
	if (ret)
		setup_abort(comm, hello_sem);
	return ret;
}

int coll_comm_key(uint64_t given, const char *env, bool whole_slice,
		  uint64_t *key)
{
	char *end;

	*key = given;
	if (given)
		return ACCEL_OK;
	if (env && *env) {
		if (!isxdigit((unsigned char)*env))
			return ACCEL_ERR_INVALID_ARGUMENT;
		errno = 0;
		*key = strtoull(env, &end, 16);
		return *end || !*key || errno ? ACCEL_ERR_INVALID_ARGUMENT : ACCEL_OK;
	}
	if (!whole_slice)
		return ACCEL_ERR_NO_SLICE_KEY;
	while (!*key) {
		if (getrandom(key, sizeof(*key), 0) != (ssize_t)sizeof(*key))
			return accel_error_from_errno(errno);
	}
	return ACCEL_OK;
}

uint32_t coll_window_id(uint64_t key, uint32_t number, uint32_t windows)
{
	/* splitmix64's finaliser: every bit of the key moves the id. */
	uint64_t h = (key ^ key >> 30) * 0xbf58476d1ce4e5b9ull;

	h = (h ^ h >> 27) * 0x94d049bb133111ebull;
	h ^= h >> 31;
	return (uint32_t)((h % windows + number) % windows);
}

static int open_chip(struct accel_comm *comm, struct comm_chip *chip,
		     const struct accel_device_info *info)
{
	struct accel_window_opts wo = {
		.flags = ACCEL_WINDOW_FIXED_ID | ACCEL_WINDOW_FIXED_KEY,
		.id = comm->window_id, .key = comm->key,
	};
	uint64_t size = direct_slot(comm, comm->chips);
	unsigned int d;
	void *sems;
	int ret;

	for (d = 0; d < COLL_DIMS; d++)
		chip->coords[d] = info->coords[d];
	chip->rank = info->slice_index;
	ret = accel_buffer_create(chip->dev, size, ACCEL_PLACEMENT_HBM,
				  &chip->window_buf);
	/*
	 * Semaphores start at zero, whatever the memory held; from the CPU,
	 * so that the window opens even if the chip's queues are stuck.
	 */
	if (!ret)
		ret = accel_buffer_map(chip->window_buf, &sems);
	if (!ret)
		memset(sems, 0, SLOTS_OFFSET);
	if (!ret)
		ret = accel_window_open(chip->dev, chip->window_buf, 0, size,
					ACCEL_WINDOW_WRITE, &wo, &chip->window);
	return ret;
}

static int check_devices(struct accel_comm *comm, struct accel_device *const *devs,
			 unsigned int count, struct accel_device_info *info)
{
	unsigned int i, j, queues = TSR_MAX_QUEUES;

	comm->caps = ~0u;
	for (i = 0; i < count; i++) {
		int ret;

		if (!devs[i])
			return ACCEL_ERR_INVALID_ARGUMENT;
		ret = accel_device_get_info(devs[i], &info[i]);
		if (ret)
			return ret;
		if (!(info[i].caps & TSR_CAP_ICI) || info[i].num_queues < 2)
			return ACCEL_ERR_NOT_SUPPORTED;
		queues = info[i].num_queues < queues ? info[i].num_queues : queues;
		comm->caps &= info[i].caps;
		for (j = 0; j < i; j++) {
			if (info[j].slice_id != info[i].slice_id ||
			    memcmp(info[j].topology, info[i].topology,
				   sizeof(info[i].topology)) ||
			    info[j].slice_index == info[i].slice_index)
				return ACCEL_ERR_INVALID_ARGUMENT;
		}
	}
	memcpy(comm->dims, info[0].topology, sizeof(comm->dims));
	comm->wrap = info[0].wrap;
	comm->chips = info[0].slice_chips;
	if (comm->chips > MAX_RANKS)
		return ACCEL_ERR_NOT_SUPPORTED;
	comm->colours = queues / 2 < COLL_MAX_COLOURS ? queues / 2 : COLL_MAX_COLOURS;
	comm->queues = queues;
	return ACCEL_OK;
}

static int apply_opts(struct accel_comm *comm, const struct accel_comm_opts *opts)
{
	comm->slot_bytes = DEFAULT_SLOT_BYTES;
	comm->timeout_ns = DEFAULT_TIMEOUT_NS;
	if (!opts)
		return ACCEL_OK;
	if (opts->algo != ACCEL_COLL_PINCER && opts->algo != ACCEL_COLL_ONE_COLOUR)
		return ACCEL_ERR_INVALID_ARGUMENT;
	if (opts->algo == ACCEL_COLL_ONE_COLOUR)
		comm->colours = 1;
	if (opts->slot_bytes) {
		if (opts->slot_bytes % 8 || opts->slot_bytes < MIN_SLOT_BYTES ||
		    opts->slot_bytes > MAX_SLOT_BYTES)
			return ACCEL_ERR_INVALID_ARGUMENT;
		comm->slot_bytes = opts->slot_bytes;
	}
	if (opts->connect_timeout_ns)
		comm->timeout_ns = opts->connect_timeout_ns;
	return ACCEL_OK;
}

int accel_comm_create(struct accel_device *const *devs, unsigned int count,
		      const struct accel_comm_opts *opts, struct accel_comm **out)
{
	struct accel_device_info info[ACCEL_SLICE_MAX_LOCAL];
	uint32_t number = opts ? opts->window_id : 0;
	struct accel_comm *comm;
	unsigned int i;
	int ret;

	if (!devs || !out || !count || count > ACCEL_SLICE_MAX_LOCAL)
		return ACCEL_ERR_INVALID_ARGUMENT;
	comm = calloc(1, sizeof(*comm));
	if (!comm)
		return ACCEL_ERR_NO_MEMORY;
	ret = check_devices(comm, devs, count, info);
	if (!ret)
		ret = apply_opts(comm, opts);
	if (!ret && number >= info[0].max_windows)
		ret = ACCEL_ERR_INVALID_ARGUMENT;
	if (!ret)
		ret = coll_comm_key(opts ? opts->key : 0,
				    getenv("TESSERA_SLICE_KEY"),
				    count == comm->chips, &comm->key);
	if (!ret)
		comm->window_id = coll_window_id(comm->key, number,
						 info[0].max_windows);
	for (i = 0; !ret && i < count; i++) {
		comm->chip[i].dev = devs[i];
		comm->count++;
		ret = open_chip(comm, &comm->chip[i], &info[i]);
	}
	if (!ret)
		ret = handshake(comm, hello_sem, diameter(comm));
	if (!ret)
		ret = meet(comm);
	if (ret) {
		comm->broken = true;
		accel_comm_destroy(comm);
		return ret;
	}
	*out = comm;
	return ACCEL_OK;
}

void accel_comm_destroy(struct accel_comm *comm)
{
	unsigned int i;

	if (!comm)
		return;
	/*
	 * Every job this chip's neighbours send here comes before their
	 * goodbye, so once all have said it the windows can close.
	 */
	if (!comm->broken)
		handshake(comm, goodbye_sem, 1);
	for (i = 0; i < comm->count; i++) {
		struct comm_chip *chip = &comm->chip[i];
		unsigned int k, q;

		for (k = 0; k < chip->nsets; k++) {
			for (q = 0; q < COLL_BATCH; q++)
				accel_cmdbuf_destroy(chip->sets[k]->cb[q]);
			free(chip->sets[k]);
		}
		accel_window_close(chip->window);
		accel_buffer_destroy(chip->window_buf);
		accel_buffer_destroy(chip->scratch);
		for (k = 0; k < COMM_PLANS; k++)
			coll_plan_free(&chip->plans[k].plan);
	}
	/* Calls never waited for: destroying them later finds no list. */
	while (comm->oldest) {
		struct accel_coll *coll = comm->oldest;

		comm->oldest = coll->newer;
		coll->linked = false;
	}
	free(comm);
}

unsigned int accel_comm_size(const struct accel_comm *comm)
{
	return comm ? comm->chips : 0;
}

unsigned int accel_comm_rank(const struct accel_comm *comm, unsigned int i)
{
	return comm && i < comm->count ? comm->chip[i].rank : 0;
}

unsigned int accel_comm_colours(const struct accel_comm *comm)
{
	return comm ? comm->colours : 0;
}
