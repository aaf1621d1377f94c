/*
 * mpi_progress (control): four Open MPI ranks under mpirun, all working:
 * each computes a little, then MPI_Allreduce's the result, again and
 * again. Nothing is stuck; a sample finds ranks in their computation or
 * inside the collective (polling opal_progress), and the next sample
 * finds them elsewhere. hangdoc must not claim a deadlock.
 *
 * Run: mpirun -np 4 --oversubscribe [--allow-run-as-root] mpi_progress.
 * Rank 0 prints "rank<N>=<pid>" for every rank and "ready" after 20
 * rounds.
 */
#include "patient.h"

#include <mpi.h>

static PATIENT_NOINLINE double compute(int rank, long round)
{
	double x = rank + 1;
	for (int i = 0; i < 200000; i++)
		x = x * 1.0000001 + (double)(round % 7) * 1e-9;
	return x;
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int pid = (int)getpid(), pids[64];
	MPI_Gather(&pid, 1, MPI_INT, pids, 1, MPI_INT, 0, MPI_COMM_WORLD);
	for (long round = 0;; round++) {
		double local = compute(rank, round), sum;
		MPI_Allreduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		if (rank == 0 && round == 20) {
			for (int r = 0; r < size && r < 64; r++)
				patient_sayf("rank%d=%d\n", r, pids[r]);
			patient_ready();
		}
	}
	MPI_Finalize();
	return 0;
}
