/* SPDX-License-Identifier: MIT */
/*
 * What the slice's guest programs (slice_setup, slice_failure) say of a
 * chip's links after a LINK_DOWN: which of its ports are not up.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#ifndef TESSERA_SLICE_PORTS_H
#define TESSERA_SLICE_PORTS_H

#include <stdio.h>

#include <accel/accel.h>

/*
 * The ports of the chip @info describes along the slice's dimensions
 * longer than 1 (those of a torus all have a link) that are not up, one
 * line each: "@prog: @name: port +y (2) down".
 */
static inline void slice_ports_not_up(struct accel_device *dev,
				      const struct accel_device_info *info,
				      const char *prog, const char *name)
{
	static const char *const dirs[] = { "+x", "-x", "+y", "-y", "+z", "-z" };
	unsigned int p;

	for (p = 0; p < info->ici_ports && p < 6; p++) {
		struct accel_link_info li;

		if (info->topology[p / 2] < 2 ||
		    accel_link_get_info(dev, p, &li) ||
		    li.port.state == TSR_ICI_STATE_UP)
			continue;
		printf("%s: %s: port %s (%u) %s\n", prog, name, dirs[p], p,
		       accel_link_state_name(li.port.state));
	}
	fflush(stdout);
}

#endif
