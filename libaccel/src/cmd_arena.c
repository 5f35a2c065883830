// SPDX-License-Identifier: MIT
/*
 * The command arena: device copies of command buffers carved, one after
 * the other, out of one buffer object that stays mapped, as a GPU driver's
 * userspace carves its batches out of an upload ring.  A command buffer
 * that changed takes a new piece at the head; pieces are given back at the
 * tail once no job may read them.  Without it every upload whose old copy
 * jobs still read made, mapped and zeroed a buffer of its own, and asked
 * the driver about each job that might still read a pooled one: with
 * calls in flight, about 100 system calls a collective on each host.
 *
 * Whether a piece's jobs have ended is asked per stream (a queue at a
 * priority: one scheduler entity of the file, whose jobs run, and so end,
 * in submission order, Documentation/driver.md): a stream's jobs up to
 * @ended_upto have all ended, learnt from the ends libaccel sees anyway
 * (accel_job_status()), else from one status query of the newest job a
 * run of pieces at the tail gave that stream.
 */
#include <stdlib.h>
#include <string.h>

#include <drm/tessera_accel.h>

#include "internal.h"

/* Pieces start on a cache line; commands need 8 bytes. */
#define PIECE_ALIGN		64
/* Pieces looked at past the tail for a stream's newest job. */
#define LOOK_AHEAD		32

struct accel_arena {
	struct accel_buffer *bo;
	uint8_t *map;
	uint64_t size;
	/* Bytes handed out and given back, counting from 0 (never wrap). */
	uint64_t head, tail;
	/* Pieces handed out and given back, likewise; the ring below. */
	uint64_t first, next;
	struct piece {
		uint64_t end;			/* @head once it was taken */
		bool held;			/* its command buffer's copy */
		/* The newest job of each stream that runs it, or 0. */
		uint64_t seq[ACCEL_STREAMS];
	} piece[ACCEL_ARENA_PIECES];
	/* Every job of a stream up to this seq has ended. */
	uint64_t ended_upto[ACCEL_STREAMS];
};

unsigned int accel_stream(uint32_t queue, uint32_t priority)
{
	return queue * ACCEL_PRIORITIES + priority;
}

static struct piece *piece_of(struct accel_arena *a, uint64_t id)
{
	return &a->piece[id % ACCEL_ARENA_PIECES];
}

/*
 * Whether every job of @p has ended, asking the driver for at most one
 * job a stream: the newest that the next LOOK_AHEAD pieces give it, whose
 * end tells that of all before it.  Under cmd_pool_lock.
 */
static bool piece_idle(struct accel_device *dev, struct accel_arena *a,
		       uint64_t id)
{
	struct piece *p = piece_of(a, id);
	unsigned int s;

	if (p->held)
		return false;
	for (s = 0; s < ACCEL_STREAMS; s++) {
		uint64_t newest = p->seq[s], k;

		if (newest <= a->ended_upto[s])
			continue;
		for (k = id + 1; k < a->next && k < id + LOOK_AHEAD; k++)
			if (piece_of(a, k)->seq[s] > newest)
				newest = piece_of(a, k)->seq[s];
		if (newest > p->seq[s] &&
		    !accel_job_may_be_pending(dev, newest)) {
			a->ended_upto[s] = newest;
			continue;
		}
		if (accel_job_may_be_pending(dev, p->seq[s]))
			return false;
		a->ended_upto[s] = p->seq[s];
	}
	return true;
}

/* Give back the pieces at the tail that no job reads now. */
static void reclaim(struct accel_device *dev, struct accel_arena *a)
{
	while (a->first < a->next && piece_idle(dev, a, a->first)) {
		a->tail = piece_of(a, a->first)->end;
		a->first++;
	}
}

int accel_arena_take(struct accel_device *dev, size_t len, uint32_t *handle,
		     uint64_t *offset, uint64_t *id)
{
	struct accel_arena *a;
	uint64_t start, end, at;
	struct piece *p;
	int ret = ACCEL_OK;

	if (len > ACCEL_ARENA_SIZE / 8)
		return ACCEL_ERR_TOO_LARGE;
	len = (len + PIECE_ALIGN - 1) & ~(uint64_t)(PIECE_ALIGN - 1);
	pthread_mutex_lock(&dev->cmd_pool_lock);
	a = dev->arena;
	if (!a) {
		a = calloc(1, sizeof(*a));
		ret = a ? accel_buffer_create_commands(dev, ACCEL_ARENA_SIZE,
						       &a->bo) :
			  ACCEL_ERR_NO_MEMORY;
		if (!ret)
			ret = accel_buffer_map(a->bo, (void **)&a->map);
		if (ret) {
			if (a)
				accel_buffer_destroy(a->bo);
			free(a);
			goto out;
		}
		a->size = a->bo->size;
		dev->arena = a;
	}
	/* A piece is never cut by the end of the buffer: it starts again. */
	start = a->head;
	at = start % a->size;
	if (at + len > a->size)
		start += a->size - at;
	end = start + len;
	if (end - a->tail > a->size || a->next - a->first == ACCEL_ARENA_PIECES) {
		reclaim(dev, a);
		if (end - a->tail > a->size ||
		    a->next - a->first == ACCEL_ARENA_PIECES) {
			ret = ACCEL_ERR_BUSY;
			goto out;
		}
	}
	p = piece_of(a, a->next);
	memset(p, 0, sizeof(*p));
	p->end = end;
	p->held = true;
	*id = a->next++;
	a->head = end;
	*handle = a->bo->handle;
	*offset = start % a->size;
out:
	pthread_mutex_unlock(&dev->cmd_pool_lock);
	return ret;
}

void *accel_arena_map(struct accel_device *dev, uint64_t offset)
{
	return dev->arena->map + offset;
}

void accel_arena_job(struct accel_device *dev, uint64_t id,
		     unsigned int stream, uint64_t seq)
{
	pthread_mutex_lock(&dev->cmd_pool_lock);
	if (piece_of(dev->arena, id)->seq[stream] < seq)
		piece_of(dev->arena, id)->seq[stream] = seq;
	pthread_mutex_unlock(&dev->cmd_pool_lock);
}

void accel_arena_release(struct accel_device *dev, uint64_t id)
{
	pthread_mutex_lock(&dev->cmd_pool_lock);
	piece_of(dev->arena, id)->held = false;
	pthread_mutex_unlock(&dev->cmd_pool_lock);
}

void accel_arena_ended(struct accel_device *dev, unsigned int stream,
		       uint64_t seq)
{
	pthread_mutex_lock(&dev->cmd_pool_lock);
	if (dev->arena && dev->arena->ended_upto[stream] < seq)
		dev->arena->ended_upto[stream] = seq;
	pthread_mutex_unlock(&dev->cmd_pool_lock);
}

void accel_arena_free(struct accel_device *dev, bool idle_only)
{
	struct accel_arena *a;

	pthread_mutex_lock(&dev->cmd_pool_lock);
	a = dev->arena;
	if (a && idle_only)
		reclaim(dev, a);
	if (a && (!idle_only || a->first == a->next)) {
		dev->arena = NULL;
		accel_buffer_destroy(a->bo);
		free(a);
	}
	pthread_mutex_unlock(&dev->cmd_pool_lock);
}
