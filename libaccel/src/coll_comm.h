/* SPDX-License-Identifier: MIT */
/*
 * What the collectives' files share: a communicator, its window's layout
 * and a running collective.  coll_plan.c says what each chip does;
 * collective.c turns a chip's plan into command buffers and submits them;
 * coll_wait.c waits for a collective's jobs; coll_comm.c sets a
 * communicator up, gives up on it and tears it down.
 *
 * Each chip has one window, the same id and key on every chip:
 *
 *   0     data semaphores, one per channel: the previous chip's remote
 *         write adds 1 once a message is in its slot
 *   256   credit semaphores, one per channel: the next chip adds 1 each
 *         time it has freed one of our messages' slots
 *   512   the colours' two semaphores, where their streams meet
 *   656   abort: set by a neighbour (or this host) that gave up; every
 *         wait of the streams fails once it is not zero (SEM_WAIT_ABORT)
 *   672   hello, one per port (+x -x +y -y +z -z): the neighbour on the
 *         far end of that port adds its greetings, one per round
 *   720   goodbye, one per port: the same when it leaves
 *   768   gave up, one per port: the neighbour on the far end of that
 *         port gave up setting the communicator up (or tearing it down)
 *   4096  direct data semaphores, one per chip of the slice: its remote
 *         write adds 1 once a message is in its direct slot
 *   6144  direct credit semaphores, one per chip: it has freed its slot
 *   8192  the slots: per channel, COMM_SLOTS of slot_bytes; then one
 *         direct slot per chip of the slice
 *
 * Neighbours' channels carry the reductions and gathers; the direct
 * slots carry all-to-all, whose messages the links route to any chip.
 *
 * Semaphores only ever grow; the communicator counts, per channel, the
 * messages sent and taken and, per colour, the meetings, so every call
 * knows the values it waits for.
 */
#ifndef ACCEL_COLL_COMM_H
#define ACCEL_COLL_COMM_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <accel/accel.h>

#include "coll_plan.h"

#define COMM_SLOTS		2
/* Jobs of a call a chip submits at once. */
#define COLL_BATCH		ACCEL_MAX_BATCH
/* Sets of command buffers a chip keeps: calls in flight at once. */
#define COLL_SETS		32
/* Plans kept per chip. */
#define COMM_PLANS		2

/* A call's command buffers on one chip, and its jobs not seen ending. */
struct coll_cbs {
	struct accel_cmdbuf *cb[COLL_BATCH];
	unsigned int running;
};
#define SEM_DATA(ch)		(8ull * (ch))
#define SEM_CREDIT(ch)		(256 + 8ull * (ch))
#define SEM_MEET(colour, s)	(512 + 16ull * (colour) + 8ull * (s))
#define SEM_ABORT		656ull
#define SEM_HELLO(port)		(672 + 8ull * (port))
#define SEM_GOODBYE(port)	(720 + 8ull * (port))
#define SEM_GAVE_UP(port)	(768 + 8ull * (port))
/* The set-up's meeting: queues gathered, the go, each rank there. */
#define SEM_MEET_QUEUES		816ull
#define SEM_GO			824ull
#define SEM_MET(rank)		(1024 + 8ull * (rank))
#define SEM_DIRECT_DATA(rank)	(4096 + 8ull * (rank))
#define SEM_DIRECT_CREDIT(rank)	(6144 + 8ull * (rank))
#define SLOTS_OFFSET		8192ull
/* Chips a slice has at most: 255 along x, but 256 for the semaphores. */
#define MAX_RANKS		256

struct comm_chip {
	struct accel_device *dev;
	struct accel_buffer *window_buf;
	struct accel_window *window;
	uint32_t coords[COLL_DIMS];
	uint32_t rank;
	uint64_t sent[COLL_CHANNELS];
	uint64_t taken[COLL_CHANNELS];
	/* Signals of each colour's two semaphores so far. */
	uint64_t met[COLL_MAX_COLOURS][COLL_DIRS];
	uint64_t direct_sent[MAX_RANKS];	/* messages to each chip */
	uint64_t direct_taken[MAX_RANKS];	/* and from each */
	struct accel_buffer *scratch;
	uint64_t scratch_size;
	/*
	 * The last calls' plans, for the next call that asks for one of them
	 * (a training loop's all-reduces, or two that take turns, as its
	 * gradients' and its weights' check): 1 to 2 ms of a 2x2 4 MiB call
	 * under TCG, 0.1 ms of a 19 KiB one.
	 */
	struct comm_plan {
		bool planned;
		struct coll_params params;
		struct coll_plan plan;
	} plans[COMM_PLANS];
	unsigned int next_plan;		/* the one a new plan replaces */
	/*
	 * The command buffers of a call's jobs on the chip, made as needed
	 * and kept from call to call with their device copies: fresh ones
	 * took their copies from the device's pool, which asks the driver
	 * about every pooled copy's jobs.  A set per call in flight: a call
	 * takes a set none of whose jobs may still run (as far as the waits
	 * have seen), so that calls started one after the other without a
	 * wait (nccl-tests' loop) neither ask the driver about the copies of
	 * the calls before them nor make new ones each time.
	 */
	struct coll_cbs *sets[COLL_SETS];
	unsigned int nsets;
	unsigned int next_set;	/* taken when every set runs */
};

struct accel_comm {
	unsigned int count;
	struct comm_chip chip[ACCEL_SLICE_MAX_LOCAL];
	uint32_t dims[COLL_DIMS];
	uint32_t wrap;
	uint32_t chips;
	uint32_t caps;			/* what every local chip has */
	unsigned int colours;
	uint32_t window_id;		/* coll_window_id() */
	uint64_t key;
	uint64_t slot_bytes;
	uint64_t timeout_ns;
	unsigned int queues;		/* what every local chip has */
	/*
	 * Gave up (coll_comm_abort()), or never set up: calls fail with
	 * ACCEL_ERR_COMM_BROKEN, and destroying it says no goodbye.
	 */
	bool broken;
	/*
	 * Its calls not yet seen to end, oldest first: a call's streams need
	 * not cover the queues of the calls before it (a small all-reduce is
	 * one stream, an all-to-all two), so a later call can end first on
	 * the chips; waits end them in the order they were made.
	 */
	struct accel_coll *oldest, *newest;
};

/* A stream: local chip index x TSR_MAX_QUEUES + queue. */
#define STREAMS			(ACCEL_SLICE_MAX_LOCAL * TSR_MAX_QUEUES)

struct accel_coll {
	struct accel_comm *comm;
	unsigned int count, cap;
	struct accel_job **jobs;
	bool *opens;		/* the job starts its stream */
	uint8_t *streams;	/* the job's stream */
	uint8_t *sets;		/* the job's set of its chip's command buffers */
	bool *done;		/* the job has ended */
	int *fds;		/* its sync file while watched, else -1 */
	int result;
	bool written;	/* a stream was written: the counters moved */
	bool ended;
	bool linked;	/* on the communicator's list of calls not ended */
	struct accel_coll *older, *newer;
	uint64_t start, end;	/* modeled: last stream start, last end */
	uint64_t cycles;
};


/* Where @rank's direct messages land in every chip's window. */
static inline uint64_t direct_slot(const struct accel_comm *comm,
				   unsigned int rank)
{
	return SLOTS_OFFSET + (COLL_CHANNELS * COMM_SLOTS + rank) *
			      comm->slot_bytes;
}

/* Where slice rank @rank sits: index = x + X (y + Y z). */
static inline struct accel_coords coll_coords_of_rank(const struct accel_comm *comm,
						      unsigned int rank)
{
	struct accel_coords c = { {
		(uint8_t)(rank % comm->dims[0]),
		(uint8_t)(rank / comm->dims[0] % comm->dims[1]),
		(uint8_t)(rank / comm->dims[0] / comm->dims[1]),
	} };

	return c;
}

/*
 * Add to @cb a wait until the semaphore at @offset of @chip's window is
 * >= @value; on chips that have it, a wait that fails once the window's
 * abort semaphore is set, or once a link of the chip is down (what is
 * waited for comes over the links: a neighbour that stopped must end the
 * wait).
 */
static inline int coll_wait_sem(const struct accel_comm *comm,
				const struct comm_chip *chip,
				struct accel_cmdbuf *cb, uint64_t offset,
				uint64_t value)
{
	unsigned int flags = comm->caps & TSR_CAP_SEM_LINKS ?
			     ACCEL_SEM_WAIT_LINKS : 0;

	if (comm->caps & TSR_CAP_SEM_ABORT)
		return accel_cmdbuf_sem_wait_abort_flags(cb, chip->window_buf,
							 offset, value,
							 chip->window_buf,
							 SEM_ABORT, flags);
	return accel_cmdbuf_sem_wait(cb, chip->window_buf, offset, value);
}

static inline uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The chip next to @chip along @dim in direction @dir. */
struct accel_coords coll_neighbour(const struct accel_comm *comm,
				   const struct comm_chip *chip,
				   unsigned int dim, unsigned int dir);

/* Whether @chip has a neighbour along @dim in direction @dir. */
bool coll_has_neighbour(const struct accel_comm *comm,
			const struct comm_chip *chip, unsigned int dim,
			unsigned int dir);

/*
 * A collective failed or timed out: the whole slice gives up on the
 * communicator, which is broken from then on (coll_comm.c says how).
 */
void coll_comm_abort(struct accel_comm *comm);

/* Whether another chip set the abort semaphore of one of ours. */
bool coll_comm_peer_aborted(const struct accel_comm *comm);

/* A call is issued: the newest of the calls not yet ended (coll_wait.c). */
void coll_link(struct accel_comm *comm, struct accel_coll *coll);

/*
 * The windows' key: @given, else the launcher's @env (TESSERA_SLICE_KEY,
 * hexadecimal), else a random one when the communicator has every chip of
 * the slice (@whole_slice) and nobody else needs it; without one,
 * ACCEL_ERR_NO_SLICE_KEY.  Never a constant: whoever knows the key can
 * write into the windows.
 */
int coll_comm_key(uint64_t given, const char *env, bool whole_slice,
		  uint64_t *key);

/*
 * The window id, below @windows, of communicator @number (below @windows)
 * under @key: the same on every host, unknown to a program without the
 * key, and different for different numbers under one key.
 */
uint32_t coll_window_id(uint64_t key, uint32_t number, uint32_t windows);

#endif /* ACCEL_COLL_COMM_H */
