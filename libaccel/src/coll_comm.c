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

/*
 * The remote writes that set the abort semaphores of @chip's neighbours
 * on other hosts, each the way its link goes (a ring of 2 has two links
 * between its chips: both carry one).  Returns how many.
 */
static unsigned int abort_writes(const struct accel_comm *comm,
				 const struct comm_chip *chip,
				 struct accel_ici_write *w)
{
	unsigned int dim, dir, n = 0;

	for (dim = 0; dim < COLL_DIMS; dim++) {
		for (dir = 0; dir < COLL_DIRS; dir++) {
			struct accel_coords to;

			if (!coll_has_neighbour(comm, chip, dim, dir))
				continue;
			to = coll_neighbour(comm, chip, dim, dir);
			if (is_local(comm, to))
				continue;
			w[n++] = (struct accel_ici_write){
				.dst = to, .window = comm->window_id,
				.key = comm->key, .sem_offset = SEM_ABORT,
				.sem_add = 1,
				.flags = TSR_ICI_WRITE_SEM |
					 (dir == COLL_MINUS ? TSR_ICI_WRITE_MINUS : 0),
			};
		}
	}
	return n;
}

/* Submit @w on @chip's queue @queue, a job of its own. */
static void send_abort(struct comm_chip *chip, const struct accel_ici_write *w,
		       uint32_t queue)
{
	struct accel_submit_opts opts = { .queue = queue };
	struct accel_cmdbuf *cb;
	struct accel_job *job;

	if (accel_cmdbuf_create(chip->dev, &cb))
		return;
	if (!accel_cmdbuf_ici_write(cb, w) &&
	    !accel_submit(chip->dev, cb, &opts, &job))
		accel_job_destroy(job);		/* it runs on unwatched */
	accel_cmdbuf_destroy(cb);
}

/*
 * A collective failed or timed out: the whole slice gives up on the
 * communicator, which is broken from then on.  The local chips' abort
 * semaphores are set from the CPU, which fails their streams' waits at
 * once; every neighbour on another host gets remote writes to its own,
 * and its process passes the failure on when its waits fail in turn,
 * until every chip has given up.  A chip cut off entirely still ends at
 * its driver's job timeout.
 *
 * The writes go out on every queue of the chip, each a job of its own:
 * any queue may be held by a command that does not end soon (a stream's
 * ICI_WRITE to a chip that stopped taking it, another job of the
 * process), and the first write to get through is enough, the semaphore
 * only has to be non-zero.  Each queue starts with another neighbour, so
 * that one whose write never leaves holds up the others on one queue.
 */
void coll_comm_abort(struct accel_comm *comm)
{
	struct accel_ici_write w[COLL_DIMS * COLL_DIRS];
	unsigned int i, j, n, q;

	if (comm->broken)
		return;
	comm->broken = true;
	if (!(comm->caps & TSR_CAP_SEM_ABORT))
		return;
	for (i = 0; i < comm->count; i++) {
		uint64_t *sems;

		if (!accel_buffer_map(comm->chip[i].window_buf, (void **)&sems))
			__atomic_store_n(&sems[SEM_ABORT / 8], 1, __ATOMIC_SEQ_CST);
	}
	for (i = 0; i < comm->count; i++) {
		n = abort_writes(comm, &comm->chip[i], w);
		for (q = 0; q < comm->queues; q++)
			for (j = 0; j < n; j++)
				send_abort(&comm->chip[i], &w[(q + j) % n], q);
	}
}

/*
 * Whether another chip of the slice gave up on the communicator: it set
 * a local chip's abort semaphore, and a new call would only fail.
 */
bool coll_comm_peer_aborted(const struct accel_comm *comm)
{
	unsigned int i;

	for (i = 0; i < comm->count; i++) {
		uint64_t *sems;

		if (!accel_buffer_map(comm->chip[i].window_buf, (void **)&sems) &&
		    __atomic_load_n(&sems[SEM_ABORT / 8], __ATOMIC_SEQ_CST))
			return true;
	}
	return false;
}

/* ------------------------------------------------------- set-up */

static void pause_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000l };

	nanosleep(&ts, NULL);
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
 * Add 1 to the semaphore at @sem of each neighbour's window.  A
 * neighbour whose process has not opened its window yet refuses: ask
 * again until the deadline (there is no event to wait for on another
 * host).
 */
static int greet(struct accel_comm *comm, struct comm_chip *chip,
		 uint64_t sem, uint64_t deadline)
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
							       comm->window_id, comm->key, sem, 1);
			while (!ret) {
				ret = run_now(chip, cb, comm->timeout_ns);
				if (ret != ACCEL_ERR_REMOTE_ACCESS || now_ns() > deadline)
					break;
				pause_ms(pause);
				pause = pause < 64 ? 2 * pause : pause;
				ret = ACCEL_OK;
			}
			accel_cmdbuf_destroy(cb);
		}
	}
	return ret == ACCEL_ERR_REMOTE_ACCESS ? ACCEL_ERR_TIMEOUT : ret;
}

/* Wait until every neighbour of @chip has greeted it at @sem @times times. */
static int await_greetings(struct comm_chip *chip, uint64_t sem,
			   uint64_t times, uint64_t deadline)
{
	unsigned int pause = 1;
	uint64_t value = 0;
	int ret;

	for (;;) {
		ret = accel_buffer_download(chip->window_buf, sem, &value,
					    sizeof(value));
		if (ret || value >= times * chip->neighbours)
			return ret;
		if (now_ns() > deadline)
			return ACCEL_ERR_TIMEOUT;
		pause_ms(pause);
		pause = pause < 64 ? 2 * pause : pause;
	}
}

static unsigned int count_neighbours(const struct accel_comm *comm,
				     const struct comm_chip *chip)
{
	unsigned int dim, n = 0;

	for (dim = 0; dim < COLL_DIMS; dim++) {
		if (comm->dims[dim] < 2)
			continue;
		if (comm->wrap & 1u << dim)
			n += 2;
		else
			n += (chip->coords[dim] > 0) + (chip->coords[dim] + 1 < comm->dims[dim]);
	}
	return n;
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
	int ret;

	for (d = 0; d < COLL_DIMS; d++)
		chip->coords[d] = info->coords[d];
	chip->rank = info->slice_index;
	chip->neighbours = count_neighbours(comm, chip);
	ret = accel_buffer_create(chip->dev, size, ACCEL_PLACEMENT_HBM,
				  &chip->window_buf);
	if (!ret) {
		struct accel_cmdbuf *cb;

		/* Semaphores start at zero, whatever the memory held. */
		ret = accel_cmdbuf_create(chip->dev, &cb);
		if (!ret)
			ret = accel_cmdbuf_fill(cb, chip->window_buf, 0, 0,
						SLOTS_OFFSET);
		if (!ret)
			ret = run_now(chip, cb, comm->timeout_ns);
		accel_cmdbuf_destroy(cb);
	}
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
	uint64_t deadline;
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
	deadline = now_ns() + comm->timeout_ns;
	for (i = 0; !ret && i < count; i++)
		ret = greet(comm, &comm->chip[i], SEM_HELLO, deadline);
	for (i = 0; !ret && i < count; i++)
		ret = await_greetings(&comm->chip[i], SEM_HELLO, 1, deadline);
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
	uint64_t deadline;
	unsigned int i;
	int ret = ACCEL_OK;

	if (!comm)
		return;
	/*
	 * Every job this chip's neighbours send here comes before their
	 * goodbye, so once all have said it the windows can close.
	 */
	deadline = now_ns() + comm->timeout_ns;
	for (i = 0; !comm->broken && !ret && i < comm->count; i++)
		ret = greet(comm, &comm->chip[i], SEM_GOODBYE, deadline);
	for (i = 0; !comm->broken && !ret && i < comm->count; i++)
		ret = await_greetings(&comm->chip[i], SEM_GOODBYE, 1, deadline);
	for (i = 0; i < comm->count; i++) {
		struct comm_chip *chip = &comm->chip[i];

		accel_window_close(chip->window);
		accel_buffer_destroy(chip->window_buf);
		accel_buffer_destroy(chip->scratch);
		coll_plan_free(&chip->plan);
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
