/* SPDX-License-Identifier: MIT */
/*
 * What the slice's guest programs (slice_setup, slice_failure) say of a
 * chip's links after a LINK_DOWN: which of its ports are not up.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_SLICE_PORTS_H
#define TESSERA_SLICE_PORTS_H

#include <stdbool.h>
#include <stdio.h>
#include <time.h>

#include <accel/accel.h>

/*
 * The ports of the chip @info describes along the slice's dimensions
 * longer than 1 (those of a torus all have a link) that are not up, one
 * line each: "@prog: @name: port +y (2) down".
 *
 * A job can fail LINK_DOWN a few milliseconds before its own chip's end
 * of the broken link gives up on the silent peer (another chip on the
 * route saw it first and answered LINK_DOWN): when every port still reads
 * up, they are looked at again every 10 ms for up to SLICE_PORTS_WAIT_MS,
 * a little more than a link's deadline for a silent peer (0.955 s).
 * libaccel has no call that waits for a link's change of state.
 */
#define SLICE_PORTS_WAIT_MS 1500

static inline unsigned int slice_ports_print(struct accel_device *dev,
					     const struct accel_device_info *info,
					     const char *prog, const char *name,
					     bool print)
{
	static const char *const dirs[] = { "+x", "-x", "+y", "-y", "+z", "-z" };
	unsigned int p, n = 0;

	for (p = 0; p < info->ici_ports && p < 6; p++) {
		struct accel_link_info li;

		if (info->topology[p / 2] < 2 ||
		    accel_link_get_info(dev, p, &li) ||
		    li.port.state == TSR_ICI_STATE_UP)
			continue;
		n++;
		if (print)
			printf("%s: %s: port %s (%u) %s\n", prog, name, dirs[p],
			       p, accel_link_state_name(li.port.state));
	}
	fflush(stdout);
	return n;
}

static inline void slice_ports_not_up(struct accel_device *dev,
				      const struct accel_device_info *info,
				      const char *prog, const char *name)
{
	const struct timespec tick = { .tv_nsec = 10 * 1000 * 1000 };
	unsigned int waited;

	for (waited = 0; waited < SLICE_PORTS_WAIT_MS &&
	     !slice_ports_print(dev, info, prog, name, false); waited += 10)
		nanosleep(&tick, NULL);
	slice_ports_print(dev, info, prog, name, true);
}

#endif
