/* SPDX-License-Identifier: MIT */
/*
 * Collective plans: what one chip of a slice does, in order, for its part
 * of an all-reduce, a reduce-scatter or an all-gather.  A pure function of
 * the slice's shape, the chip's coordinates and the sizes; no device, no
 * ioctl.  Documentation/collectives.md describes the algorithm; the host
 * tests (tests/host/libaccel_coll_test.c) run the plans of every chip of
 * slices up to 4x4x4 against each other.
 *
 * The vector is split into one part per colour.  A colour reduce-scatters
 * its part along each dimension of the slice in turn (its own order of the
 * dimensions: colour c starts with the c-th), then all-gathers along them
 * in the reverse order.  Within a dimension each chunk is reduced by the
 * two halves of a bidirectional ring meeting at the chunk's owner (the
 * patent's rotated pincer; on a ring of even length each chunk is split in
 * two halves so that both directions carry the same load), and spread
 * back the same two ways.  Without wraparound, the same two flows run
 * along the line.
 *
 * Plans name elements of a virtual vector; the executor maps them to
 * bytes of buffers.  Messages travel on channels: a channel is (colour,
 * direction, dimension) and links a chip to its neighbour on that side;
 * both ends see the channel's messages in the same order, which the plan
 * guarantees by sorting every chip's work by one key.
 */
#ifndef ACCEL_COLL_PLAN_H
#define ACCEL_COLL_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define COLL_DIMS		3
#define COLL_MAX_COLOURS	COLL_DIMS
/* Directions: data moving towards the + neighbour, or the - neighbour. */
#define COLL_PLUS		0
#define COLL_MINUS		1
#define COLL_DIRS		2
#define COLL_CHANNELS		(COLL_MAX_COLOURS * COLL_DIRS * COLL_DIMS)

enum coll_kind {
	COLL_ALL_REDUCE,
	COLL_REDUCE_SCATTER,
	COLL_ALL_GATHER,
	COLL_BROADCAST,		/* from @root along each dimension in turn */
	COLL_ALL_TO_ALL,	/* no plan: direct messages (collective.c) */
};

/* The two vectors a plan names. */
enum coll_buf {
	COLL_ACC,	/* what is reduced: f32 partial sums for bf16 */
	COLL_OUT,	/* the result, in the caller's type */
};

enum coll_op_kind {
	/*
	 * Bring the input into the vector (all-reduce: ACC, all-gather and
	 * broadcast's root: OUT).
	 */
	COLL_OP_INIT,
	/* Send [start, start + len) of @buf to the next chip of the channel. */
	COLL_OP_SEND,
	/* Take the channel's next message: ACC = ACC (op) message. */
	COLL_OP_RECV_REDUCE,
	/* Take the channel's next message: @buf = message. */
	COLL_OP_RECV_COPY,
	/* OUT = ACC over the range (a cast for bf16, a copy or nothing else). */
	COLL_OP_FINISH,
	/* Add 1 to this colour's semaphore @sem (COLL_PLUS or COLL_MINUS). */
	COLL_OP_SIGNAL,
	/*
	 * Wait until colour @colour's semaphore @sem has been signalled
	 * @value times in this call.
	 */
	COLL_OP_WAIT,
};

/*
 * Where the two halves of the pincer meet, at a chunk's owner, one stream
 * adds its piece first and signals, and the other waits for that before
 * it adds its own: every chip adds in the same order, whichever half
 * arrives first.
 */
enum coll_meet {
	COLL_MEET_NONE,
	COLL_MEET_FIRST,	/* then SIGNAL */
	COLL_MEET_SECOND,	/* after a WAIT for the other stream */
};

struct coll_op {
	uint8_t kind;		/* enum coll_op_kind */
	uint8_t buf;		/* enum coll_buf */
	uint8_t dir;		/* SEND, RECV_*: COLL_PLUS or COLL_MINUS */
	uint8_t dim;		/* SEND, RECV_*: the dimension */
	uint8_t meet;		/* INIT, RECV_REDUCE: enum coll_meet */
	uint8_t colour;		/* WAIT */
	uint32_t sem;		/* SIGNAL, WAIT */
	uint64_t value;		/* WAIT */
	uint64_t start;		/* first element, of the virtual vector */
	uint64_t len;		/* elements, >= 1 */
};

/*
 * What one hardware queue of the chip runs, in order: a colour's work in
 * one direction.  The two streams of a colour meet where the halves of the
 * pincer do (enum coll_meet), and every stream of the chip meets every
 * other at the end of every phase: the colours' phases have the same
 * length, and a colour that started its next phase early would share the
 * links of its next dimension with the other colour's last messages and
 * hold them back.
 */
struct coll_stream {
	unsigned int colour;
	unsigned int dir;	/* COLL_PLUS or COLL_MINUS */
	struct coll_op *ops;
	size_t count;
	size_t cap;
};

struct coll_params {
	uint32_t dims[COLL_DIMS];	/* chips along each dimension, >= 1 */
	uint32_t wrap;			/* bit d: dimension d wraps around */
	uint32_t coords[COLL_DIMS];	/* the chip the plan is for */
	uint32_t root[COLL_DIMS];	/* broadcast: the chip that has the data */
	enum coll_kind kind;
	/*
	 * Most colours to use, >= 1: one is the dimension-ordered baseline,
	 * more than the slice's dimensions (those longer than 1) counts as
	 * one per dimension.
	 */
	unsigned int colours;
	/*
	 * Elements in the virtual vector: the all-reduce's and broadcast's
	 * count, or the count per chip times the chips for the other two.
	 */
	uint64_t count;
	/* Most elements of ACC and of OUT one message carries, >= 1. */
	uint64_t acc_piece;
	uint64_t out_piece;
	/*
	 * Message slots per channel at the receiver: a stream sends up to
	 * this many messages ahead of the ones it takes.  0 keeps every
	 * SEND where the sort put it.
	 */
	unsigned int slots;
};

#define COLL_MAX_STREAMS (COLL_MAX_COLOURS * COLL_DIRS)

struct coll_plan {
	unsigned int colours;
	unsigned int phases;	/* dimensions each colour goes through */
	unsigned int order[COLL_MAX_COLOURS][COLL_DIMS];
	uint64_t part_start[COLL_MAX_COLOURS];
	uint64_t part_len[COLL_MAX_COLOURS];
	/* What the chip holds reduced once the reduce-scatter phases end. */
	uint64_t owned_start[COLL_MAX_COLOURS];
	uint64_t owned_len[COLL_MAX_COLOURS];
	/* Times each of the colour's two semaphores is signalled. */
	uint64_t signals[COLL_MAX_COLOURS][COLL_DIRS];
	unsigned int streams;
	struct coll_stream stream[COLL_MAX_STREAMS];
};

/* 0, or -EINVAL for parameters out of range, -ENOMEM. */
int coll_plan_build(const struct coll_params *p, struct coll_plan *plan);
void coll_plan_free(struct coll_plan *plan);
/* Whether @a and @b ask for the same plan: every field is the same. */
bool coll_params_equal(const struct coll_params *a,
		       const struct coll_params *b);

/* The channel's number, below COLL_CHANNELS. */
static inline unsigned int coll_channel(unsigned int colour, unsigned int dir,
					unsigned int dim)
{
	return (colour * COLL_DIRS + dir) * COLL_DIMS + dim;
}

/*
 * Element @i of @len split into @parts as evenly as possible: part @k
 * starts at coll_split(len, parts, k).
 */
static inline uint64_t coll_split(uint64_t len, uint64_t parts, uint64_t k)
{
	return (uint64_t)((unsigned __int128)len * k / parts);
}

/*
 * Flow control of a channel with @slots message slots at the receiver:
 * message @m (counted from the channel's first) lands in slot
 * coll_slot(), once the receiver has freed coll_credit_needed() messages.
 */
static inline uint64_t coll_slot(uint64_t m, unsigned int slots)
{
	return m % slots;
}

static inline uint64_t coll_credit_needed(uint64_t m, unsigned int slots)
{
	return m < slots ? 0 : m - slots + 1;
}

/*
 * Where the virtual vector's blocks live, for reduce-scatter and
 * all-gather: block @v of colour @colour's part (the parts of every
 * chip's block along that colour) belongs to the chip of slice index
 * coll_block_owner().  All-reduce needs no mapping.
 */
uint32_t coll_block_owner(const struct coll_params *p,
			  const struct coll_plan *plan, unsigned int colour,
			  uint64_t v);

#endif /* ACCEL_COLL_PLAN_H */
