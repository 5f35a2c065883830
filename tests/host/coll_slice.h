/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The chips of a slice as the collective plans' host tests number them:
 * index = x + X (y + Y z), for the shape of struct coll_params.
 */
#ifndef TESTS_HOST_COLL_SLICE_H
#define TESTS_HOST_COLL_SLICE_H

#include "coll_plan.h"

static inline void slice_coords(const struct coll_params *p, uint32_t index,
				uint32_t *c)
{
	c[0] = index % p->dims[0];
	c[1] = index / p->dims[0] % p->dims[1];
	c[2] = index / p->dims[0] / p->dims[1];
}

static inline uint32_t slice_index(const struct coll_params *p,
				   const uint32_t *c)
{
	return c[0] + p->dims[0] * (c[1] + p->dims[1] * c[2]);
}

/* The chip next to @index along @dim in @dir, or -1 at a mesh's edge. */
static inline int slice_neighbour(const struct coll_params *p, uint32_t index,
				  unsigned int dim, unsigned int dir)
{
	uint32_t c[COLL_DIMS], n = p->dims[dim];

	slice_coords(p, index, c);
	if (dir == COLL_PLUS) {
		if (c[dim] + 1 == n && !(p->wrap & 1u << dim))
			return -1;
		c[dim] = (c[dim] + 1) % n;
	} else {
		if (c[dim] == 0 && !(p->wrap & 1u << dim))
			return -1;
		c[dim] = (c[dim] + n - 1) % n;
	}
	return slice_index(p, c);
}

#endif /* TESTS_HOST_COLL_SLICE_H */
