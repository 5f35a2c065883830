/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera ICI routing: which port a frame leaves a chip by, in plain C.
 *
 * Dimension-ordered: x first, then y, then z; along a wrapped dimension
 * the shorter way round (+ on a tie), along an unwrapped one towards the
 * destination.  Chips between forward frames without touching their
 * memory.  Deadlock freedom (Dally and Seitz): dimension order leaves no
 * cycle between dimensions, and within a ring a frame moves to virtual
 * channel 1 once it crosses the ring's dateline (the wraparound link),
 * which a frame crosses at most once per dimension, so no cycle of channel
 * dependencies is left (tests/host/tessera_route_test checks the graph).
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_ROUTE_H
#define TESSERA_ROUTE_H

#include <stdbool.h>
#include <stdint.h>

#include "tessera/chip.h"

typedef struct TsrTopology {
    uint8_t dims[TSR_ICI_MAX_DIMS];     /* chips per dimension, 1 if unused */
    bool wrap[TSR_ICI_MAX_DIMS];        /* a ring (torus) rather than a line */
} TsrTopology;

/* tsr_route_port() results besides a port number. */
#define TSR_ROUTE_HERE  (-1)    /* the frame has arrived */
#define TSR_ROUTE_NONE  (-2)    /* no such chip in the slice */

/* Whether @topo is a valid slice shape, and @c a chip of it. */
bool tsr_topology_valid(const TsrTopology *topo);
bool tsr_topology_has(const TsrTopology *topo, const uint8_t c[3]);

/* The port a frame for @dst leaves @here by, or TSR_ROUTE_*. */
int tsr_route_port(const TsrTopology *topo, const uint8_t here[3],
                   const uint8_t dst[3]);

/*
 * The same, but where both ways round a ring are equally short, the
 * minus way if @minus (tsr_route_port() goes the plus way).
 */
int tsr_route_port_way(const TsrTopology *topo, const uint8_t here[3],
                       const uint8_t dst[3], bool minus);

/* The chip on the other side of @port of @here; false if there is none. */
bool tsr_route_neighbour(const TsrTopology *topo, const uint8_t here[3],
                         unsigned int port, uint8_t out[3]);

/*
 * The virtual channel of a frame leaving @here by @port, having arrived
 * by a hop along dimension @in_dim (TSR_ICI_MAX_DIMS if it starts here) on
 * channel @in_vc.
 */
unsigned int tsr_route_vc(const TsrTopology *topo, const uint8_t here[3],
                          unsigned int port, unsigned int in_dim,
                          unsigned int in_vc);

/*
 * The port of @here by which a frame routed from @src to @dst (the minus
 * way on ties if @minus) arrives there, or -1 if its route does not pass
 * through @here (or starts there).  A chip checks with it that what a
 * neighbour sends came the way its claimed source would have sent it.
 */
int tsr_route_arrival_port(const TsrTopology *topo, const uint8_t src[3],
                           const uint8_t dst[3], bool minus,
                           const uint8_t here[3]);

/* Hops from @src to @dst. */
unsigned int tsr_route_hops(const TsrTopology *topo, const uint8_t src[3],
                            const uint8_t dst[3]);

#endif /* TESSERA_ROUTE_H */
