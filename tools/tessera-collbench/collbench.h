/* SPDX-License-Identifier: MIT */
/*
 * tessera-collbench's parts: tessera-collbench.c parses the options and
 * prints the rows (nccl-tests' table, or JSON);
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

/* In the order nccl-tests lists its *_perf programs. */
enum collective {
	COLL_ALL_REDUCE,
	COLL_ALL_GATHER,
	COLL_BROADCAST,
	COLL_REDUCE_SCATTER,
	COLL_ALL_TO_ALL,
	COLL_SENDRECV,
	COLLECTIVES,
};

/* The communicators a run compares: one per algorithm asked for. */
#define MAX_ALGOS 2

/* The halves of a row, as nccl-tests prints them. */
enum place {
	OUT_OF_PLACE,
	IN_PLACE,
	PLACES,
};

/* How the hosts' times combine into one: nccl-tests' -a. */
enum average {
	AVERAGE_RANK0,
	AVERAGE_MEAN,
	AVERAGE_MIN,
	AVERAGE_MAX,
};

struct options {
	bool collective[COLLECTIVES];	/* which to run */
	uint64_t min_bytes, max_bytes;
	uint64_t factor;
	enum tsr_dtype dtype;
	enum accel_reduce_op op;
	unsigned int root;		/* broadcast's */
	enum accel_coll_algo algo[MAX_ALGOS];
	unsigned int algos;
	unsigned int iters, warmup;
	bool check;
	bool blocking;			/* wait for each call before the next */
	enum average average;
	bool place[PLACES];		/* which halves to run */
	bool wall;			/* the table shows wall, not modeled, time */
	bool json;
};

/* One half of a row, out-of-place or in-place. */
struct half {
	bool measured;		/* the library has this form of the collective */
	double wall_us;		/* mean over the iterations, combined (-a) */
	double modeled_us;	/* the same by accel_coll_cycles() */
	double wrong;		/* mismatching elements over the slice; -1 unchecked */
};

/* One line of the table: one collective of one size by one algorithm. */
struct row {
	enum collective coll;
	enum accel_coll_algo algo;
	uint64_t bytes;		/* as nccl-tests counts them */
	uint64_t count;		/* its elements */
	struct half half[PLACES];
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
/* nccl-tests' program for @coll: "all_reduce_perf". */
const char *perf_name(enum collective coll);
/* Whether the library has @coll in @place. */
bool has_place(enum collective coll, enum place place);
const char *algo_name(enum accel_coll_algo algo);
const char *op_name(enum accel_reduce_op op);

#endif /* TESSERA_COLLBENCH_H */
