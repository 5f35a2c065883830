/* SPDX-License-Identifier: MIT */
/*
 * tessera-collbench's parts: tessera-collbench.c parses the options and
 * prints the rows (a table in the manner of nccl-tests, or JSON);
 * collbench-run.c opens this host's chips of the slice, runs each
 * collective over the sweep and checks what it left on every chip.
 */
#ifndef TESSERA_COLLBENCH_H
#define TESSERA_COLLBENCH_H

#include <stdbool.h>
#include <stdint.h>

#include <accel/accel.h>

#define PROGRAM "tessera-collbench"

enum exit_status {
	EXIT_OK = 0,
	EXIT_WRONG = 1,		/* a result differed from the CPU's */
	EXIT_USAGE = 2,
	EXIT_NO_SLICE = 3,	/* no chips here, or they form no slice */
	EXIT_FAILED = 4,	/* a device or collective call failed */
};

enum collective {
	COLL_ALL_REDUCE,
	COLL_REDUCE_SCATTER,
	COLL_ALL_GATHER,
	COLLECTIVES,
};

/* The communicators a run compares: one per algorithm asked for. */
#define MAX_ALGOS 2

struct options {
	bool collective[COLLECTIVES];	/* which to run */
	uint64_t min_bytes, max_bytes;
	uint64_t factor;
	enum tsr_dtype dtype;
	enum accel_reduce_op op;
	enum accel_coll_algo algo[MAX_ALGOS];
	unsigned int algos;
	unsigned int iters, warmup;
	bool check;
	bool json;
};

/* One line of the table: one collective of one size by one algorithm. */
struct row {
	enum collective coll;
	enum accel_coll_algo algo;
	uint64_t bytes;		/* the whole vector, as nccl-tests counts it */
	uint64_t count;		/* its elements */
	double wall_us;		/* mean over the iterations */
	double modeled_us;	/* mean accel_coll_cycles() at the chip's clock */
	double wrong;		/* mismatching elements over the slice; -1 unchecked */
};

/* What the table's header and the JSON say about where the run ran. */
struct bench_slice {
	uint32_t topology[3];
	uint32_t wrap;
	unsigned int chips;		/* in the slice */
	unsigned int local;		/* on this host */
	bool prints;			/* this host holds rank 0: it reports */
	unsigned int colours[MAX_ALGOS];
	uint32_t clock_mhz;
	uint32_t links_per_chip;	/* wired ICI ports of this host's first chip */
	double link_gbytes;		/* one link, one way, GB/s */
};

struct bench;

int bench_open(const struct options *opts, struct bench **out,
	       struct bench_slice *slice);
/* Runs one row; EXIT_OK or EXIT_FAILED (the reason printed on stderr). */
int bench_row(struct bench *b, unsigned int algo_index, struct row *row);
void bench_close(struct bench *b);

const char *collective_name(enum collective coll);
const char *algo_name(enum accel_coll_algo algo);
const char *op_name(enum accel_reduce_op op);

#endif /* TESSERA_COLLBENCH_H */
