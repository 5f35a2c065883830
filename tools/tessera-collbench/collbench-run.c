// SPDX-License-Identifier: MIT
/*
 * Running the sweep: this host's chips of the slice, a communicator per
 * algorithm, buffers per row, timed calls, and the check of every chip's
 * result against the CPU.
 *
 * The inputs are small integers, periodic in the element index, so that
 * sums are exact in f32 and in bf16 and the CPU's answer for any element
 * comes from a table of one period.  Every host checks its own chips; an
 * all-reduce of the counts of wrong elements gives the whole slice's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collbench.h"

/* The inputs' period: a prime, so a block landing at a wrong offset shows. */
#define PERIOD 251
/* Host memory a row stages its uploads and downloads through. */
#define STAGE_BYTES (4ull << 20)
/* A collective that takes longer than this is reported as hung. */
#define WAIT_NS (3600ull * 1000000000ull)

struct bench {
	const struct options *opts;
	struct accel_device *dev[ACCEL_SLICE_MAX_LOCAL];
	unsigned int rank[ACCEL_SLICE_MAX_LOCAL];
	unsigned int n;			/* local chips */
	struct accel_comm *comm[MAX_ALGOS];
	struct accel_buffer *tally[ACCEL_SLICE_MAX_LOCAL];	/* one f32 each */
	unsigned int size;		/* chips in the slice */
	uint32_t clock_mhz;
	float reduced[PERIOD];		/* the op over every chip, by i % PERIOD */
	void *stage;
};

/* One row's buffers and shape. */
struct vectors {
	struct accel_buffer *send[ACCEL_SLICE_MAX_LOCAL];
	struct accel_buffer *recv[ACCEL_SLICE_MAX_LOCAL];	/* or send */
	bool in_place;
	uint64_t send_count, recv_count;	/* elements per chip */
	uint64_t block;		/* reduce-scatter, all-gather, all-to-all */
};

const char *collective_name(enum collective coll)
{
	static const char *const names[] = {
		[COLL_ALL_REDUCE] = "all-reduce",
		[COLL_ALL_GATHER] = "all-gather",
		[COLL_BROADCAST] = "broadcast",
		[COLL_REDUCE_SCATTER] = "reduce-scatter",
		[COLL_ALL_TO_ALL] = "all-to-all",
		[COLL_SENDRECV] = "sendrecv",
	};

	return names[coll];
}

const char *perf_name(enum collective coll)
{
	static const char *const names[] = {
		[COLL_ALL_REDUCE] = "all_reduce_perf",
		[COLL_ALL_GATHER] = "all_gather_perf",
		[COLL_BROADCAST] = "broadcast_perf",
		[COLL_REDUCE_SCATTER] = "reduce_scatter_perf",
		[COLL_ALL_TO_ALL] = "alltoall_perf",
		[COLL_SENDRECV] = "sendrecv_perf",
	};

	return names[coll];
}

/*
 * libaccel's forms: all-reduce both (recv may be send); broadcast in
 * place only (one buffer per chip); the others take two buffers, and
 * none an offset into one, as nccl-tests' in-place gathers need.
 */
bool has_place(enum collective coll, enum place place)
{
	if (coll == COLL_ALL_REDUCE)
		return true;
	return (coll == COLL_BROADCAST) == (place == IN_PLACE);
}

const char *algo_name(enum accel_coll_algo algo)
{
	return algo == ACCEL_COLL_ONE_COLOUR ? "one-colour" : "pincer";
}

const char *op_name(enum accel_reduce_op op)
{
	return op == ACCEL_REDUCE_MAX ? "max" : op == ACCEL_REDUCE_MIN ? "min" : "sum";
}

/* ------------------------------------------------------------ data */

/* Element @i of the input of the chip of rank @rank: -30 to 30. */
static float value(unsigned int rank, uint64_t i)
{
	return (float)(((i % PERIOD) * 3 + rank * 7) % 61) - 30.0f;
}

/* What the chips compute for one element of a reduction. */
static float combine(enum accel_reduce_op op, float a, float b)
{
	return accel_ref_vpu(accel_reduce_vpu_op(op), a, b, 0.0f);
}

/* Element @i of chip @rank's result, as the CPU computes it. */
static float expected(const struct bench *b, enum collective coll,
		      const struct vectors *v, unsigned int rank, uint64_t i)
{
	switch (coll) {
	case COLL_ALL_GATHER:
		return value(i / v->block, i % v->block);
	case COLL_BROADCAST:
		return value(b->opts->root, i);
	case COLL_ALL_TO_ALL:
		return value(i / v->block, rank * v->block + i % v->block);
	case COLL_SENDRECV:
		return value((rank + b->size - 1) % b->size, i);
	case COLL_REDUCE_SCATTER:
		i += rank * v->block;
		break;
	default:
		break;
	}
	return b->reduced[i % PERIOD];
}

/* @f as @dtype's bits, in the low bytes of the result. */
static uint32_t encode(float f, enum tsr_dtype dtype)
{
	uint32_t bits;

	if (dtype == TSR_DTYPE_BF16)
		return accel_f32_to_bf16(f);
	if (dtype == TSR_DTYPE_I32)
		return (uint32_t)(int32_t)f;
	memcpy(&bits, &f, sizeof(bits));
	return bits;
}

static void put(void *base, uint64_t i, uint32_t bits, enum tsr_dtype dtype)
{
	if (dtype == TSR_DTYPE_BF16)
		((uint16_t *)base)[i] = (uint16_t)bits;
	else
		((uint32_t *)base)[i] = bits;
}

static uint32_t get(const void *base, uint64_t i, enum tsr_dtype dtype)
{
	if (dtype == TSR_DTYPE_BF16)
		return ((const uint16_t *)base)[i];
	return ((const uint32_t *)base)[i];
}

/* ------------------------------------------------------------ buffers */

static uint64_t stage_elements(const struct bench *b)
{
	return STAGE_BYTES / tsr_dtype_size(b->opts->dtype);
}

/* Chip @c's send buffer gets its input, one stage at a time. */
static int fill(struct bench *b, unsigned int c, struct accel_buffer *buf,
		uint64_t count)
{
	enum tsr_dtype dtype = b->opts->dtype;
	size_t e = tsr_dtype_size(dtype);
	uint64_t first, i, k;
	int ret = ACCEL_OK;

	for (first = 0; !ret && first < count; first += k) {
		k = count - first < stage_elements(b) ? count - first :
							stage_elements(b);
		for (i = 0; i < k; i++)
			put(b->stage, i, encode(value(b->rank[c], first + i), dtype),
			    dtype);
		ret = accel_buffer_upload(buf, first * e, b->stage, k * e);
	}
	return ret;
}

/* Elements of chip @c's result that differ from the CPU's, in *@wrong. */
static int check(struct bench *b, enum collective coll,
		 const struct vectors *v, unsigned int c, uint64_t *wrong)
{
	enum tsr_dtype dtype = b->opts->dtype;
	size_t e = tsr_dtype_size(dtype);
	uint64_t first, i, k;
	int ret = ACCEL_OK;

	for (first = 0; !ret && first < v->recv_count; first += k) {
		k = v->recv_count - first < stage_elements(b) ?
			v->recv_count - first : stage_elements(b);
		ret = accel_buffer_download(v->recv[c], first * e, b->stage, k * e);
		for (i = 0; !ret && i < k; i++)
			*wrong += get(b->stage, i, dtype) !=
				  encode(expected(b, coll, v, b->rank[c], first + i),
					 dtype);
	}
	return ret;
}

static void vectors_free(struct bench *b, struct vectors *v)
{
	unsigned int c;

	for (c = 0; c < b->n; c++) {
		accel_buffer_destroy(v->send[c]);
		if (!v->in_place)
			accel_buffer_destroy(v->recv[c]);
	}
}

/* @row's element counts, rounded as nccl-tests does: whole blocks, >= 1. */
static void shape(const struct bench *b, struct row *row, struct vectors *v)
{
	size_t e = tsr_dtype_size(b->opts->dtype);
	uint64_t elements = row->bytes / e ? row->bytes / e : 1;

	switch (row->coll) {
	case COLL_ALL_REDUCE:
	case COLL_BROADCAST:
	case COLL_SENDRECV:
		v->send_count = v->recv_count = elements;
		row->count = elements;
		break;
	default:
		v->block = elements / b->size ? elements / b->size : 1;
		row->count = v->block * b->size;
		v->send_count = row->coll == COLL_ALL_GATHER ? v->block : row->count;
		v->recv_count = row->coll == COLL_REDUCE_SCATTER ? v->block :
								   row->count;
		break;
	}
	row->bytes = row->count * e;
}

static int vectors_make(struct bench *b, struct row *row, enum place place,
			struct vectors *v)
{
	size_t e = tsr_dtype_size(b->opts->dtype);
	unsigned int c;
	int ret = ACCEL_OK;

	shape(b, row, v);
	v->in_place = place == IN_PLACE;
	for (c = 0; !ret && c < b->n; c++) {
		ret = accel_buffer_create(b->dev[c], v->send_count * e,
					  ACCEL_PLACEMENT_HBM, &v->send[c]);
		v->recv[c] = v->send[c];
		if (!ret && !v->in_place)
			ret = accel_buffer_create(b->dev[c], v->recv_count * e,
						  ACCEL_PLACEMENT_HBM, &v->recv[c]);
		if (!ret)
			ret = fill(b, c, v->send[c], v->send_count);
	}
	return ret;
}

/* ------------------------------------------------------------ runs */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* The calls a collective makes on this host's chips. */
#define MAX_CALLS (2 * ACCEL_SLICE_MAX_LOCAL)
/* Iterations started and not yet waited for, at most (timed_calls()). */
#define ITERS_IN_FLIGHT 32

/*
 * Start @coll once, its running calls appended to @calls (*@n of them):
 * one for a collective, a send and a reception per chip for sendrecv
 * (each chip to the next rank, from the one before, as nccl-tests').
 */
static int start(struct bench *b, struct accel_comm *comm, enum collective coll,
		 const struct vectors *v, struct accel_coll **calls,
		 unsigned int *n)
{
	enum tsr_dtype dtype = b->opts->dtype;
	unsigned int c;
	int ret = ACCEL_OK;

	switch (coll) {
	case COLL_ALL_GATHER:
		return accel_all_gather(comm, v->send, v->recv, v->block, dtype,
					&calls[(*n)++]);
	case COLL_REDUCE_SCATTER:
		return accel_reduce_scatter(comm, v->send, v->recv, v->block, dtype,
					    b->opts->op, &calls[(*n)++]);
	case COLL_BROADCAST:
		return accel_broadcast(comm, v->recv, v->recv_count, dtype,
				       b->opts->root, &calls[(*n)++]);
	case COLL_ALL_TO_ALL:
		return accel_all_to_all(comm, v->send, v->recv, v->block, dtype,
					&calls[(*n)++]);
	case COLL_SENDRECV:
		for (c = 0; !ret && c < b->n; c++) {
			ret = accel_send(comm, c, v->send[c], v->send_count, dtype,
					 (b->rank[c] + 1) % b->size, &calls[(*n)++]);
			if (!ret)
				ret = accel_recv(comm, c, v->recv[c], v->recv_count,
						 dtype,
						 (b->rank[c] + b->size - 1) % b->size,
						 &calls[(*n)++]);
		}
		return ret;
	default:
		return accel_all_reduce(comm, v->send, v->recv, v->recv_count,
					dtype, b->opts->op, &calls[(*n)++]);
	}
}

/*
 * Wait for @calls (@n), freed; the longest modeled time among them added
 * to *@cycles.
 */
static int wait_calls(struct accel_coll **calls, unsigned int n,
		      uint64_t *cycles)
{
	uint64_t most = 0;
	unsigned int i;
	int ret = ACCEL_OK;

	for (i = 0; i < n; i++) {
		int err = accel_coll_wait(calls[i], WAIT_NS);

		ret = ret ? ret : err;
		if (accel_coll_cycles(calls[i]) > most)
			most = accel_coll_cycles(calls[i]);
		accel_coll_destroy(calls[i]);
	}
	*cycles += most;
	return ret;
}

/*
 * @count calls of the collective: each waited for before the next with
 * -z 1, else started one after the other as nccl-tests does, the oldest
 * waited for once ITERS_IN_FLIGHT are (as a GPU's launch queue bounds
 * nccl-tests'; the driver bounds a file's queued jobs, and a call of 4
 * chips has 8 on each), the rest at the end.  With @half, their mean wall
 * and modeled times there.
 */
static int timed_calls(struct bench *b, struct accel_comm *comm,
		       enum collective coll, const struct vectors *v,
		       unsigned int count, struct half *half)
{
	struct accel_coll **calls = calloc((size_t)count * MAX_CALLS,
					   sizeof(*calls));
	unsigned int *ends = calloc(count, sizeof(*ends));
	unsigned int i, n = 0, waited = 0, oldest = 0;
	uint64_t cycles = 0, t0 = now_ns();
	int ret = calls && ends ? ACCEL_OK : ACCEL_ERR_NO_MEMORY;

	for (i = 0; !ret && i < count; i++) {
		ret = start(b, comm, coll, v, calls, &n);
		ends[i] = n;
		if (b->opts->blocking || ret || i + 1 - oldest == ITERS_IN_FLIGHT) {
			/* An iteration's calls are waited for together. */
			unsigned int upto = b->opts->blocking || ret ? n :
					    ends[oldest];
			int err = wait_calls(calls + waited, upto - waited,
					     &cycles);

			ret = ret ? ret : err;
			waited = upto;
			oldest = upto == n ? i + 1 : oldest + 1;
		}
	}
	for (; waited < n; oldest++) {
		int err = wait_calls(calls + waited, ends[oldest] - waited,
				     &cycles);

		ret = ret ? ret : err;
		waited = ends[oldest];
	}
	if (!ret && half) {
		half->wall_us = (now_ns() - t0) / 1e3 / count;
		half->modeled_us = (double)cycles / b->clock_mhz / count;
	}
	free(ends);
	free(calls);
	return ret;
}

/*
 * Every chip's @mine (this host's) combined over the slice by @how,
 * through an all-reduce of the chips' tally buffers.
 */
static int combine_slice(struct bench *b, struct accel_comm *comm, double mine,
			 enum average how, double *total)
{
	enum accel_reduce_op op = how == AVERAGE_MIN ? ACCEL_REDUCE_MIN :
				  how == AVERAGE_MAX ? ACCEL_REDUCE_MAX :
						       ACCEL_REDUCE_SUM;
	unsigned int c;
	float f = 0;
	int ret = ACCEL_OK;

	for (c = 0; !ret && c < b->n; c++) {
		f = how == AVERAGE_RANK0 && b->rank[c] ? 0 : (float)mine;
		ret = accel_buffer_upload(b->tally[c], 0, &f, sizeof(f));
	}
	if (!ret)
		ret = accel_all_reduce(comm, b->tally, b->tally, 1, TSR_DTYPE_F32,
				       op, NULL);
	if (!ret)
		ret = accel_buffer_download(b->tally[0], 0, &f, sizeof(f));
	*total = how == AVERAGE_MEAN ? f / b->size : f;
	return ret;
}

static int check_all(struct bench *b, struct accel_comm *comm,
		     enum collective coll, const struct vectors *v,
		     struct half *half)
{
	uint64_t wrong = 0;
	unsigned int c;
	int ret = ACCEL_OK;

	for (c = 0; !ret && c < b->n; c++)
		ret = check(b, coll, v, c, &wrong);
	/* Each chip adds its host's count once: the mean times the chips. */
	if (!ret)
		ret = combine_slice(b, comm, (double)wrong / b->n, AVERAGE_MEAN,
				    &half->wrong);
	half->wrong *= b->size;
	return ret;
}

/* What to do about the failures a large sweep meets. */
static const char *hint(int error)
{
	if (error == ACCEL_ERR_NO_MEMORY)
		return " (a row needs its input, its output and as much again for the communicator on each chip: give the chips more HBM, -d hbm-size=1G)";
	if (error == ACCEL_ERR_JOB_HUNG)
		return " (under TCG a large collective can outlast the driver's job timeout, 5 s: --driver-args job_timeout_ms=600000)";
	return "";
}

/*
 * As nccl-tests checks: the inputs afresh (an in-place call has
 * overwritten them), one more call, its result.
 */
static int checked_call(struct bench *b, struct accel_comm *comm,
			enum collective coll, const struct vectors *v,
			struct half *half)
{
	unsigned int c;
	int ret = ACCEL_OK;

	for (c = 0; !ret && c < b->n; c++)
		ret = fill(b, c, v->send[c], v->send_count);
	if (!ret)
		ret = timed_calls(b, comm, coll, v, 1, NULL);
	return ret ? ret : check_all(b, comm, coll, v, half);
}

/* One half of @row: its calls, its times combined over the slice, its check. */
static int run_half(struct bench *b, struct accel_comm *comm, struct row *row,
		    enum place place)
{
	struct half *half = &row->half[place];
	struct vectors v = { 0 };
	int ret = vectors_make(b, row, place, &v);

	half->measured = true;
	half->wrong = -1;
	if (!ret && b->opts->warmup)
		ret = timed_calls(b, comm, row->coll, &v, b->opts->warmup, NULL);
	if (!ret)
		ret = timed_calls(b, comm, row->coll, &v, b->opts->iters, half);
	if (!ret)
		ret = combine_slice(b, comm, half->wall_us, b->opts->average,
				    &half->wall_us);
	if (!ret)
		ret = combine_slice(b, comm, half->modeled_us, b->opts->average,
				    &half->modeled_us);
	if (!ret && b->opts->check)
		ret = checked_call(b, comm, row->coll, &v, half);
	vectors_free(b, &v);
	return ret;
}

int bench_row(struct bench *b, unsigned int algo_index, struct row *row)
{
	struct accel_comm *comm = b->comm[algo_index];
	enum place p;
	int ret = ACCEL_OK;

	row->algo = b->opts->algo[algo_index];
	for (p = 0; !ret && p < PLACES; p++) {
		row->half[p] = (struct half){ .wrong = -1 };
		if (b->opts->place[p] && has_place(row->coll, p))
			ret = run_half(b, comm, row, p);
	}
	if (!ret)
		return EXIT_OK;
	fprintf(stderr, PROGRAM ": %s of %llu bytes (%s): %s%s\n",
		collective_name(row->coll), (unsigned long long)row->bytes,
		algo_name(row->algo), accel_error_string(ret), hint(ret));
	return EXIT_FAILED;
}

/* ------------------------------------------------------------ set-up */

static int open_chips(struct bench *b, struct bench_slice *slice)
{
	struct accel_slice s;
	struct accel_device_info info;
	unsigned int i;
	int ret = accel_slice_get(&s);

	if (ret == ACCEL_ERR_NO_DEVICE) {
		fprintf(stderr, PROGRAM ": no Tessera chip here: run it in a VM with a slice, e.g. tools/tessera-vm --topology 2x2 -- " PROGRAM "\n");
		return EXIT_NO_SLICE;
	}
	if (!ret && s.chips < 2) {
		fprintf(stderr, PROGRAM ": this host's chip is no slice: boot a slice with tools/tessera-vm --topology 2x2 or tools/tessera-slice\n");
		return EXIT_NO_SLICE;
	}
	if (ret) {
		fprintf(stderr, PROGRAM ": this host's chips form no slice (%s): boot them as one with tools/tessera-vm --topology or tools/tessera-slice\n",
			accel_error_string(ret));
		return EXIT_NO_SLICE;
	}
	memcpy(slice->topology, s.topology, sizeof(slice->topology));
	slice->wrap = s.wrap;
	slice->chips = b->size = s.chips;
	slice->local = b->n = s.local_count;
	for (i = 0; i < s.local_count; i++) {
		b->rank[i] = s.local[i].index;
		slice->prints |= s.local[i].index == 0;
		ret = accel_device_open(s.local[i].device, &b->dev[i]);
		if (ret) {
			fprintf(stderr, PROGRAM ": opening chip %u: %s\n",
				s.local[i].device, accel_error_string(ret));
			return EXIT_FAILED;
		}
	}
	ret = accel_device_get_info(b->dev[0], &info);
	if (ret) {
		fprintf(stderr, PROGRAM ": reading chip %u: %s\n", s.local[0].device,
			accel_error_string(ret));
		return EXIT_FAILED;
	}
	slice->clock_mhz = b->clock_mhz = info.clock_mhz;
	slice->links_per_chip = __builtin_popcount(info.ports_wired);
	/* ici-link-gbps is GB/s, one way (chip.md, ici.md "Timing"). */
	slice->link_gbytes = info.ici_link_gbps;
	return EXIT_OK;
}

/*
 * Every host creates the same communicators in the same order.  Each
 * algorithm has a window of its own, so that runs of one algorithm after
 * the other, one VM ahead of another, never meet in one window.
 */
static int open_comms(struct bench *b, struct bench_slice *slice)
{
	unsigned int a, c;
	int ret = ACCEL_OK;

	for (a = 0; !ret && a < b->opts->algos; a++) {
		struct accel_comm_opts co = {
			.algo = b->opts->algo[a],
			.window_id = b->opts->algo[a],
		};

		ret = accel_comm_create(b->dev, b->n, &co, &b->comm[a]);
		if (ret) {
			fprintf(stderr, PROGRAM ": the %s communicator: %s%s\n",
				algo_name(co.algo), accel_error_string(ret),
				ret == ACCEL_ERR_TIMEOUT ? " (every host of the slice must run " PROGRAM " with the same options: tools/tessera-slice runs it on every host)" : "");
			return EXIT_FAILED;
		}
		slice->colours[a] = accel_comm_colours(b->comm[a]);
	}
	for (c = 0; !ret && c < b->n; c++)
		ret = accel_buffer_create(b->dev[c], sizeof(float),
					  ACCEL_PLACEMENT_HBM, &b->tally[c]);
	if (ret) {
		fprintf(stderr, PROGRAM ": a buffer in HBM: %s\n", accel_error_string(ret));
		return EXIT_FAILED;
	}
	return EXIT_OK;
}

static void reduce_table(struct bench *b)
{
	unsigned int i, r;

	for (i = 0; i < PERIOD; i++) {
		b->reduced[i] = value(0, i);
		for (r = 1; r < b->size; r++)
			b->reduced[i] = combine(b->opts->op, b->reduced[i], value(r, i));
	}
}

int bench_open(const struct options *opts, struct bench **out,
	       struct bench_slice *slice)
{
	struct bench *b = calloc(1, sizeof(*b));
	int status;

	*out = b;
	*slice = (struct bench_slice){ 0 };
	if (!b || !(b->stage = malloc(STAGE_BYTES))) {
		fprintf(stderr, PROGRAM ": out of memory\n");
		return EXIT_FAILED;
	}
	b->opts = opts;
	status = open_chips(b, slice);
	if (!status && opts->collective[COLL_BROADCAST] && opts->root >= b->size) {
		fprintf(stderr, PROGRAM ": --root %u is no rank of the slice's %u chips (0 to %u)\n",
			opts->root, b->size, b->size - 1);
		status = EXIT_USAGE;
	}
	if (!status)
		status = open_comms(b, slice);
	if (!status)
		reduce_table(b);
	return status;
}

void bench_close(struct bench *b)
{
	unsigned int i;

	if (!b)
		return;
	for (i = 0; i < b->n; i++)
		accel_buffer_destroy(b->tally[i]);
	for (i = 0; i < MAX_ALGOS; i++)
		accel_comm_destroy(b->comm[i]);
	for (i = 0; i < b->n; i++)
		accel_device_close(b->dev[i]);
	free(b->stage);
	free(b);
}
