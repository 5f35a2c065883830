// SPDX-License-Identifier: GPL-2.0
/*
 * ICI routing on the host: every pair of chips on 1-D, 2-D and 3-D tori
 * and meshes reaches its destination by the dimension-ordered shortest
 * path, and the channel dependency graph of all those routes has no cycle
 * (no deadlock).
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <stdlib.h>
#include <string.h>

#include "kselftest_harness.h"
#include "tessera-route.h"

#define MAX_CHIPS	64
/* A channel: the link out of a chip's port, on one virtual channel. */
#define CHANNELS	(MAX_CHIPS * TSR_ICI_MAX_PORTS * TSR_ICI_VCS)

static unsigned int chips(const TsrTopology *t)
{
	return t->dims[0] * t->dims[1] * t->dims[2];
}

static void coords_of(const TsrTopology *t, unsigned int i, uint8_t c[3])
{
	c[0] = i % t->dims[0];
	c[1] = i / t->dims[0] % t->dims[1];
	c[2] = i / (t->dims[0] * t->dims[1]);
}

static unsigned int index_of(const TsrTopology *t, const uint8_t c[3])
{
	return c[0] + t->dims[0] * (c[1] + t->dims[1] * c[2]);
}

struct graph {
	/* dep[a][b]: a frame holding channel a waits for channel b. */
	uint8_t dep[CHANNELS][CHANNELS / 8];
	uint8_t mark[CHANNELS];
};

static void add_dep(struct graph *g, unsigned int a, unsigned int b)
{
	g->dep[a][b / 8] |= 1u << (b % 8);
}

static bool has_cycle_from(struct graph *g, unsigned int a)
{
	unsigned int b;

	if (g->mark[a] == 1)
		return true;
	if (g->mark[a] == 2)
		return false;
	g->mark[a] = 1;
	for (b = 0; b < CHANNELS; b++)
		if (g->dep[a][b / 8] & (1u << (b % 8)) && has_cycle_from(g, b))
			return true;
	g->mark[a] = 2;
	return false;
}

static unsigned int channel(const TsrTopology *t, const uint8_t c[3],
			    unsigned int port, unsigned int vc)
{
	return (index_of(t, c) * TSR_ICI_MAX_PORTS + port) * TSR_ICI_VCS + vc;
}

/*
 * Walk every route of @t, with ties round rings the minus way if @minus;
 * check each one and fill the dependency graph.  Returns the number of
 * routes that went wrong.
 */
static int check_routes(struct __test_metadata *_metadata,
			const TsrTopology *t, bool minus, struct graph *g)
{
	unsigned int n = chips(t), s, d, bad = 0;

	for (s = 0; s < n; s++) {
		for (d = 0; d < n; d++) {
			uint8_t src[3], here[3], dst[3], next[3];
			unsigned int hops = 0, in_dim = TSR_ICI_MAX_DIMS;
			unsigned int in_vc = 0, last_dim = 0, prev = ~0u;
			unsigned int crossings[3] = { 0 };
			int port;

			coords_of(t, s, src);
			coords_of(t, d, dst);
			memcpy(here, src, 3);
			while ((port = tsr_route_port_way(t, here, dst,
							  minus)) >= 0) {
				unsigned int dim = TSR_ICI_PORT_DIM(port);
				unsigned int vc = tsr_route_vc(t, here, port,
							       in_dim, in_vc);
				unsigned int ch = channel(t, here, port, vc);

				/* Dimension order: never back to a lower one. */
				if (dim < last_dim)
					bad++;
				if (vc && (in_dim != dim || !in_vc))
					crossings[dim]++;
				if (prev != ~0u)
					add_dep(g, prev, ch);
				prev = ch;
				last_dim = dim;
				if (!tsr_route_neighbour(t, here, port, next) ||
				    ++hops > 3 * 64) {
					bad++;
					break;
				}
				memcpy(here, next, 3);
				in_dim = dim;
				in_vc = vc;
			}
			/*
			 * Arrived, by the shortest way, a dateline at most
			 * once per dimension.
			 */
			if (port != TSR_ROUTE_HERE || memcmp(here, dst, 3) ||
			    hops != tsr_route_hops(t, src, dst) ||
			    crossings[0] > 1 || crossings[1] > 1 ||
			    crossings[2] > 1)
				bad++;
		}
	}
	return bad;
}

/* The length of every route is the sum of per-dimension shortest ways. */
static unsigned int shortest(const TsrTopology *t, unsigned int d, int a,
			     int b)
{
	int n = t->dims[d], diff = abs(a - b);

	return t->wrap[d] && n - diff < diff ? n - diff : diff;
}

static int check_lengths(const TsrTopology *t)
{
	unsigned int n = chips(t), s, d, k, bad = 0;

	for (s = 0; s < n; s++) {
		for (d = 0; d < n; d++) {
			uint8_t a[3], b[3];
			unsigned int want = 0;

			coords_of(t, s, a);
			coords_of(t, d, b);
			for (k = 0; k < 3; k++)
				want += shortest(t, k, a[k], b[k]);
			if (tsr_route_hops(t, a, b) != want)
				bad++;
		}
	}
	return bad;
}

static void check(struct __test_metadata *_metadata, const TsrTopology *t)
{
	struct graph *g = calloc(1, sizeof(*g));
	unsigned int c;

	ASSERT_NE(NULL, g);
	/* Both ways of breaking ties at once: writes may mix them. */
	EXPECT_EQ(0, check_routes(_metadata, t, false, g));
	EXPECT_EQ(0, check_routes(_metadata, t, true, g));
	EXPECT_EQ(0, check_lengths(t));
	for (c = 0; c < CHANNELS; c++)
		EXPECT_FALSE(has_cycle_from(g, c)) TH_LOG("cycle through channel %u", c);
	free(g);
}

TEST(every_pair_on_a_4x4_torus)
{
	TsrTopology t = { .dims = { 4, 4, 1 }, .wrap = { true, true, false } };

	check(_metadata, &t);
}

TEST(every_pair_on_a_4x4_mesh)
{
	TsrTopology t = { .dims = { 4, 4, 1 } };

	check(_metadata, &t);
}

TEST(every_pair_on_a_4x4x4_torus)
{
	TsrTopology t = { .dims = { 4, 4, 4 }, .wrap = { true, true, true } };

	check(_metadata, &t);
}

TEST(every_pair_on_rings_and_a_2x2_torus)
{
	TsrTopology ring = { .dims = { 8, 1, 1 }, .wrap = { true } };
	TsrTopology odd = { .dims = { 5, 3, 1 }, .wrap = { true, true } };
	TsrTopology small = { .dims = { 2, 2, 1 }, .wrap = { true, true } };

	check(_metadata, &ring);
	check(_metadata, &odd);
	check(_metadata, &small);
}

TEST(without_its_dateline_channels_a_ring_could_deadlock)
{
	/* The same routes all on one channel: the graph has a cycle. */
	TsrTopology t = { .dims = { 4, 1, 1 }, .wrap = { true } };
	struct graph *g = calloc(1, sizeof(*g));
	unsigned int s, d, c, cycles = 0;

	for (s = 0; s < 4; s++) {
		for (d = 0; d < 4; d++) {
			uint8_t here[3], dst[3];
			unsigned int prev = ~0u;
			int port;

			coords_of(&t, s, here);
			coords_of(&t, d, dst);
			while ((port = tsr_route_port(&t, here, dst)) >= 0) {
				unsigned int ch = channel(&t, here, port, 0);

				if (prev != ~0u)
					add_dep(g, prev, ch);
				prev = ch;
				tsr_route_neighbour(&t, here, port, here);
			}
		}
	}
	for (c = 0; c < CHANNELS; c++)
		cycles += has_cycle_from(g, c);
	EXPECT_LT(0, cycles);
	free(g);
}

TEST(chips_outside_the_slice_have_no_route)
{
	TsrTopology t = { .dims = { 2, 2, 1 }, .wrap = { true, true } };
	uint8_t a[3] = { 0, 0, 0 }, far[3] = { 2, 0, 0 }, z[3] = { 0, 0, 1 };

	EXPECT_EQ(TSR_ROUTE_NONE, tsr_route_port(&t, a, far));
	EXPECT_EQ(TSR_ROUTE_NONE, tsr_route_port(&t, a, z));
	EXPECT_EQ(TSR_ROUTE_HERE, tsr_route_port(&t, a, a));
	EXPECT_FALSE(tsr_route_neighbour(&t, a, TSR_ICI_PORT(2, 0), far));
}

TEST(ties_go_the_positive_way_and_meshes_never_wrap)
{
	TsrTopology torus = { .dims = { 4, 1, 1 }, .wrap = { true } };
	TsrTopology mesh = { .dims = { 4, 1, 1 } };
	uint8_t a[3] = { 0, 0, 0 }, b[3] = { 2, 0, 0 }, c[3] = { 3, 0, 0 };

	EXPECT_EQ(TSR_ICI_PORT(0, 0), tsr_route_port(&torus, a, b));
	EXPECT_EQ(TSR_ICI_PORT(0, 1), tsr_route_port(&torus, a, c));
	EXPECT_EQ(TSR_ICI_PORT(0, 0), tsr_route_port(&mesh, a, c));
	EXPECT_EQ(3, tsr_route_hops(&mesh, a, c));
	EXPECT_EQ(1, tsr_route_hops(&torus, a, c));
}

TEST(ties_go_the_minus_way_when_asked_and_nothing_else_changes)
{
	TsrTopology pair = { .dims = { 2, 2, 1 }, .wrap = { true, true } };
	TsrTopology torus = { .dims = { 4, 1, 1 }, .wrap = { true } };
	TsrTopology mesh = { .dims = { 2, 1, 1 } };
	uint8_t a[3] = { 0, 0, 0 }, b[3] = { 1, 0, 0 }, c[3] = { 0, 1, 0 };
	uint8_t half[3] = { 2, 0, 0 }, next[3];

	/* The two links between the chips of a ring of 2. */
	EXPECT_EQ(TSR_ICI_PORT(0, 0), tsr_route_port_way(&pair, a, b, false));
	EXPECT_EQ(TSR_ICI_PORT(0, 1), tsr_route_port_way(&pair, a, b, true));
	EXPECT_EQ(TSR_ICI_PORT(1, 1), tsr_route_port_way(&pair, a, c, true));
	EXPECT_EQ(TSR_ICI_PORT(0, 1), tsr_route_port_way(&pair, b, a, true));
	/* Half way round a ring of 4: the minus way, at every hop. */
	EXPECT_EQ(TSR_ICI_PORT(0, 1), tsr_route_port_way(&torus, a, half, true));
	ASSERT_TRUE(tsr_route_neighbour(&torus, a, TSR_ICI_PORT(0, 1), next));
	EXPECT_EQ(3, next[0]);
	EXPECT_EQ(TSR_ICI_PORT(0, 1), tsr_route_port_way(&torus, next, half, true));
	/* No tie, no change; a line has one way. */
	EXPECT_EQ(TSR_ICI_PORT(0, 0), tsr_route_port_way(&torus, a, b, true));
	EXPECT_EQ(TSR_ICI_PORT(0, 0), tsr_route_port_way(&mesh, a, b, true));
	EXPECT_EQ(TSR_ROUTE_HERE, tsr_route_port_way(&pair, a, a, true));
}

/*
 * A chip checks that a message came in the way its claimed source would
 * have sent it: the arrival port is that of the route's last hop into
 * the chip, for every chip on the route and no other.
 */
static unsigned int check_arrivals(const TsrTopology *t, bool minus)
{
	unsigned int n = chips(t);
	unsigned int s, d, h, bad = 0;

	for (s = 0; s < n; s++) {
		for (d = 0; d < n; d++) {
			int want[64];
			uint8_t src[3], dst[3], at[3], here[3];
			int port;

			coords_of(t, s, src);
			coords_of(t, d, dst);
			for (h = 0; h < n; h++)
				want[h] = -1;
			memcpy(at, src, 3);
			while ((port = tsr_route_port_way(t, at, dst, minus)) >= 0) {
				tsr_route_neighbour(t, at, port, at);
				want[index_of(t, at)] = TSR_ICI_PORT_OPPOSITE(port);
			}
			for (h = 0; h < n; h++) {
				coords_of(t, h, here);
				if (h == s)
					want[h] = -1;
				bad += tsr_route_arrival_port(t, src, dst, minus,
							      here) != want[h];
			}
		}
	}
	return bad;
}

TEST(a_message_arrives_by_the_last_hop_of_its_route_and_nowhere_else)
{
	TsrTopology torus = { .dims = { 4, 4, 1 }, .wrap = { true, true } };
	TsrTopology pair = { .dims = { 2, 2, 1 }, .wrap = { true, true } };
	TsrTopology cube = { .dims = { 2, 2, 2 } };
	uint8_t a[3] = { 0, 0, 0 }, b[3] = { 1, 0, 0 }, far[3] = { 3, 0, 0 };

	EXPECT_EQ(0, check_arrivals(&torus, false));
	EXPECT_EQ(0, check_arrivals(&torus, true));
	EXPECT_EQ(0, check_arrivals(&pair, true));
	EXPECT_EQ(0, check_arrivals(&cube, false));
	/* The two links of a ring of 2 are told apart. */
	EXPECT_EQ(TSR_ICI_PORT(0, 1),
		  tsr_route_arrival_port(&pair, a, b, false, b));
	EXPECT_EQ(TSR_ICI_PORT(0, 0),
		  tsr_route_arrival_port(&pair, a, b, true, b));
	/* No such chip, no route. */
	EXPECT_EQ(-1, tsr_route_arrival_port(&pair, far, b, false, b));
}

TEST_HARNESS_MAIN
