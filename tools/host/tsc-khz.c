// SPDX-License-Identifier: MIT
/*
 * tsc-khz: print this host's TSC frequency in kHz, measured against
 * CLOCK_MONOTONIC_RAW.
 *
 * A TCG guest reads the host's TSC (QEMU's rdtsc is the host's counter),
 * but calibrates it against the emulated PIT, whose ticks a starved vCPU
 * miscounts: on a loaded host a guest once found a 57 MHz TSC on a
 * 2096 MHz host, and its clock, with the watchdog off (tsc=reliable),
 * then ran 36 times too fast, expiring every timeout in it.
 * tools/tessera-vm gives the guest this figure as tsc_early_khz=, which
 * replaces that calibration.
 *
 * Each reading of the two clocks is kept only if nothing (preemption, an
 * interrupt) came between them, so the figure holds to 0.02% however
 * loaded the host is.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

/* A reading whose clock reads lie further apart was disturbed. */
#define TIGHT_NS	2000
#define TRIES		1000
/* Between the two readings: 2 x 2 us of error in 20 ms is 0.02%. */
#define SPAN_NS		20000000

struct reading {
	uint64_t tsc;
	uint64_t ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + ts.tv_nsec;
}

static int read_both(struct reading *r)
{
	int i;

	for (i = 0; i < TRIES; i++) {
		uint64_t before = now_ns();
		uint64_t tsc = __rdtsc();
		uint64_t after = now_ns();

		if (after - before <= TIGHT_NS) {
			r->tsc = tsc;
			r->ns = before + (after - before) / 2;
			return 0;
		}
	}
	return -1;
}

int main(void)
{
	const struct timespec span = { 0, SPAN_NS };
	struct reading a, b;

	if (read_both(&a) || nanosleep(&span, NULL) || read_both(&b) ||
	    b.ns <= a.ns || b.tsc <= a.tsc) {
		fprintf(stderr, "tsc-khz: no undisturbed reading of the TSC and the clock in %d tries\n",
			TRIES);
		return 1;
	}
	printf("%llu\n", (unsigned long long)((b.tsc - a.tsc) * 1000000u /
					      (b.ns - a.ns)));
	return 0;
}
