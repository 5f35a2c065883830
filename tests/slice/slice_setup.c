// SPDX-License-Identifier: MIT
/*
 * slice_setup: the guest's half of the set-up failure tests
 * (tests/slice/failures.py, "setup-hang" and "setup-link-down").
 *
 *   slice_setup [--window N]
 *
 * creates a communicator (window number N, default 0) in a process of
 * its own for every local chip, with the default connect timeout, and
 * says, one line per chip, how it went and after how long:
 *
 *   slice_setup: chip R (X,Y,Z): accel_comm_create: CODE after N ms
 *
 * and, when CODE is LINK_DOWN, which of the chip's wired ports are not
 * up:
 *
 *   slice_setup: chip R (X,Y,Z): port +y (2) down
 *
 * The host breaks something first (hangs a queue, takes a link down) and
 * judges the codes and the times.  Exit status 0 if every chip's
 * communicator was created, 1 if not, 2 on a bad command line.
 *
 * Copyright (C) 2026 The Tessera Authors
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <accel/accel.h>

#include "slice_ports.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int run_chip(unsigned int device, uint32_t window)
{
	const struct accel_comm_opts co = { .window_id = window };
	struct accel_device_info info;
	struct accel_device *dev;
	struct accel_comm *comm;
	char name[32];
	uint64_t t;
	int ret;

	ret = accel_device_open(device, &dev);
	if (!ret)
		ret = accel_device_get_info(dev, &info);
	if (ret) {
		printf("slice_setup: device %u: %s\n", device,
		       accel_error_string(ret));
		return 1;
	}
	snprintf(name, sizeof(name), "chip %u (%u,%u,%u)", info.slice_index,
		 info.coords[0], info.coords[1], info.coords[2]);
	t = now_ns();
	ret = accel_comm_create(&dev, 1, &co, &comm);
	printf("slice_setup: %s: accel_comm_create: %s after %llu ms\n", name,
	       accel_error_name(ret), (unsigned long long)((now_ns() - t) / 1000000));
	if (ret == ACCEL_ERR_LINK_DOWN)
		slice_ports_not_up(dev, &info, "slice_setup", name);
	fflush(stdout);
	if (!ret)
		accel_comm_destroy(comm);
	accel_device_close(dev);
	return ret ? 1 : 0;
}

int main(int argc, char **argv)
{
	pid_t pids[ACCEL_SLICE_MAX_LOCAL];
	struct accel_slice slice;
	unsigned long window = 0;
	int status, failed = 0;
	unsigned int i, n;
	char *end;

	if (argc == 3 && !strcmp(argv[1], "--window")) {
		window = strtoul(argv[2], &end, 0);
		if (*end || !*argv[2] || window > UINT32_MAX)
			argc = 0;
	}
	if (argc != 1 && argc != 3) {
		fprintf(stderr, "usage: slice_setup [--window N]\n");
		return 2;
	}
	if (accel_slice_get(&slice)) {
		printf("slice_setup: no slice here\n");
		return 1;
	}
	fflush(stdout);
	for (n = 0; n < slice.local_count; n++) {
		pids[n] = fork();
		if (pids[n] < 0) {
			perror("slice_setup: fork");
			failed = 1;
			break;
		}
		if (!pids[n])
			_exit(run_chip(slice.local[n].device, (uint32_t)window));
	}
	for (i = 0; i < n; i++) {
		if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			failed = 1;
	}
	return failed;
}
