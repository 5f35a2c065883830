/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Tessera ICI routing (see tessera-route.h).
 *
 * Copyright (C) 2026 The Tessera Authors
 */

#include "tessera-route.h"

bool tsr_topology_valid(const TsrTopology *topo)
{
    unsigned int d;

    for (d = 0; d < TSR_ICI_MAX_DIMS; d++) {
        if (!topo->dims[d]) {
            return false;
        }
    }
    return true;
}

bool tsr_topology_has(const TsrTopology *topo, const uint8_t c[3])
{
    unsigned int d;

    for (d = 0; d < TSR_ICI_MAX_DIMS; d++) {
        if (c[d] >= topo->dims[d]) {
            return false;
        }
    }
    return true;
}

/*
 * Along dimension @d from @from to @to: +1, -1, and the hops needed; a
 * tie round a ring goes -1 if @minus.
 */
static int direction(const TsrTopology *topo, unsigned int d, uint8_t from,
                     uint8_t to, bool minus, unsigned int *hops)
{
    unsigned int n = topo->dims[d], fwd, back;

    if (from == to) {
        *hops = 0;
        return 0;
    }
    if (!topo->wrap[d]) {
        *hops = from < to ? to - from : from - to;
        return from < to ? 1 : -1;
    }
    fwd = (to + n - from) % n;
    back = n - fwd;
    *hops = fwd <= back ? fwd : back;
    if (fwd == back) {
        return minus ? -1 : 1;
    }
    return fwd < back ? 1 : -1;
}

int tsr_route_port(const TsrTopology *topo, const uint8_t here[3],
                   const uint8_t dst[3])
{
    return tsr_route_port_way(topo, here, dst, false);
}

int tsr_route_port_way(const TsrTopology *topo, const uint8_t here[3],
                       const uint8_t dst[3], bool minus)
{
    unsigned int d, hops;

    if (!tsr_topology_valid(topo) || !tsr_topology_has(topo, here) ||
        !tsr_topology_has(topo, dst)) {
        return TSR_ROUTE_NONE;
    }
    for (d = 0; d < TSR_ICI_MAX_DIMS; d++) {
        int dir = direction(topo, d, here[d], dst[d], minus, &hops);

        if (dir) {
            return TSR_ICI_PORT(d, dir < 0);
        }
    }
    return TSR_ROUTE_HERE;
}

bool tsr_route_neighbour(const TsrTopology *topo, const uint8_t here[3],
                         unsigned int port, uint8_t out[3])
{
    unsigned int d = TSR_ICI_PORT_DIM(port), n = topo->dims[d];
    bool negative = port & 1;

    if (port >= TSR_ICI_MAX_PORTS || !tsr_topology_has(topo, here) ||
        n < 2) {
        return false;
    }
    out[0] = here[0];
    out[1] = here[1];
    out[2] = here[2];
    if (negative) {
        if (!here[d] && !topo->wrap[d]) {
            return false;
        }
        out[d] = here[d] ? here[d] - 1 : (uint8_t)(n - 1);
    } else {
        if (here[d] + 1u == n && !topo->wrap[d]) {
            return false;
        }
        out[d] = here[d] + 1u == n ? 0 : here[d] + 1;
    }
    return true;
}

unsigned int tsr_route_vc(const TsrTopology *topo, const uint8_t here[3],
                          unsigned int port, unsigned int in_dim,
                          unsigned int in_vc)
{
    unsigned int d = TSR_ICI_PORT_DIM(port), n = topo->dims[d];
    bool negative = port & 1;
    /* The dateline is the wraparound link, between n - 1 and 0. */
    bool crosses = topo->wrap[d] &&
                   (negative ? here[d] == 0 : here[d] + 1u == n);

    return crosses || (in_dim == d && in_vc) ? 1 : 0;
}

static bool same_chip(const uint8_t a[3], const uint8_t b[3])
{
    return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

int tsr_route_arrival_port(const TsrTopology *topo, const uint8_t src[3],
                           const uint8_t dst[3], bool minus,
                           const uint8_t here[3])
{
    uint8_t at[3] = { src[0], src[1], src[2] }, next[3];
    unsigned int hop;

    /* No route is longer than half of every ring, let alone all of it. */
    for (hop = 0; hop < 3 * 256; hop++) {
        int port = tsr_route_port_way(topo, at, dst, minus);

        if (port < 0 || !tsr_route_neighbour(topo, at, port, next)) {
            return -1;
        }
        if (same_chip(next, here)) {
            return TSR_ICI_PORT_OPPOSITE(port);
        }
        at[0] = next[0];
        at[1] = next[1];
        at[2] = next[2];
    }
    return -1;
}

unsigned int tsr_route_hops(const TsrTopology *topo, const uint8_t src[3],
                            const uint8_t dst[3])
{
    unsigned int d, hops, total = 0;

    for (d = 0; d < TSR_ICI_MAX_DIMS; d++) {
        direction(topo, d, src[d], dst[d], false, &hops);
        total += hops;
    }
    return total;
}
