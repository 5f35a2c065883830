// SPDX-License-Identifier: MIT
/*
 * mpi_allreduce: Open MPI's MPI_Allreduce of f32 sums on this machine,
 * the host's reference for tessera-collbench's wall-clock figures
 * (tools/tessera-bench, "coll").  Run under mpirun, which picks the
 * transport (--mca btl tcp,self or vader,self):
 *
 *   mpirun -np 4 --mca btl tcp,self build/bench/mpi_allreduce 4194304 20 3
 *
 * Arguments: bytes per rank, timed iterations, warm-up iterations.  Rank 0
 * prints one line, "size BYTES ranks N time_us T algbw A busbw B" (GB/s,
 * nccl-tests' definitions), the time being the slowest rank's mean.
 * Exit status 0, 1 a wrong sum, 2 bad arguments.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static long arg(char **argv, int i, long min)
{
	char *end;
	long v = strtol(argv[i], &end, 10);

	return *end || end == argv[i] || v < min ? -1 : v;
}

/* Element @i of rank @rank's input: a small integer, so sums are exact. */
static float value(int rank, long i)
{
	return (float)((i * 3 + rank * 7) % 61) - 30.0f;
}

int main(int argc, char **argv)
{
	long bytes, iters, warmup, count, i, wrong = 0;
	int rank, ranks, r;
	double t0, mine, slowest;
	float *send, *recv, want;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	bytes = argc == 4 ? arg(argv, 1, 4) : -1;
	iters = argc == 4 ? arg(argv, 2, 1) : -1;
	warmup = argc == 4 ? arg(argv, 3, 0) : -1;
	if (bytes < 0 || iters < 0 || warmup < 0) {
		if (!rank)
			fprintf(stderr, "usage: mpi_allreduce BYTES ITERS WARMUP (under mpirun)\n");
		MPI_Finalize();
		return 2;
	}
	count = bytes / sizeof(float);
	send = malloc(count * sizeof(float));
	recv = malloc(count * sizeof(float));
	if (!send || !recv)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (i = 0; i < count; i++)
		send[i] = value(rank, i);
	for (i = 0; i < warmup; i++)
		MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (i = 0; i < iters; i++)
		MPI_Allreduce(send, recv, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	mine = (MPI_Wtime() - t0) / iters;
	MPI_Reduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	for (i = 0; i < count; i++) {
		for (want = 0, r = 0; r < ranks; r++)
			want += value(r, i);
		wrong += recv[i] != want;
	}
	MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (!rank)
		printf("size %ld ranks %d time_us %.1f algbw %.4f busbw %.4f wrong %ld\n",
		       count * (long)sizeof(float), ranks, slowest * 1e6,
		       count * sizeof(float) / slowest / 1e9,
		       count * sizeof(float) / slowest / 1e9 * 2 * (ranks - 1) / ranks,
		       wrong);
	free(send);
	free(recv);
	MPI_Finalize();
	return wrong ? 1 : 0;
}
