/*
 * mpi_straggler: four Open MPI ranks under mpirun; ranks 0, 1 and 2 reach
 * MPI_Barrier and poll in it (opal_progress) for ever, rank 3 never gets
 * there: it re-locks a pthread mutex it holds (a self-deadlock) on the
 * way. The collective waits for the straggler, whose own verdict is the
 * root cause.
 *
 * Run: mpirun -np 4 --oversubscribe [--allow-run-as-root] mpi_straggler.
 * Each of ranks 0-2 sends rank 3 its pid just before it enters the
 * barrier; rank 3 prints "rank<N>=<pid>" for each and "straggler=<its
 * pid>", then "ready" once it sleeps in the futex wait (mpirun forwards
 * the lines).
 *
 * Expected stacks (innermost first):
 *   ranks 0-2: opal_progress … ← ompi_request_default_wait… /
 *              ompi_coll_base_barrier_intra_* ← PMPI_Barrier ← main
 *   rank 3:    futex wait ← __lll_lock_wait ← pthread_mutex_lock ←
 *              flush_checkpoint ← write_checkpoint ← main
 * Expected verdict: collective-straggler naming rank 3's pid (its root:
 * self-deadlock on ckpt_lock).
 */
#include "patient.h"

#include <mpi.h>
#include <pthread.h>

pthread_mutex_t ckpt_lock = PTHREAD_MUTEX_INITIALIZER;
static volatile int sink;

static PATIENT_NOINLINE void flush_checkpoint(int rank)
{
	pthread_mutex_lock(&ckpt_lock); /* for ever: write_checkpoint holds it */
	sink += rank;
	pthread_mutex_unlock(&ckpt_lock);
}

/* Says "ready" once the rank's main thread sleeps in the futex of its
 * second lock, then waits for ever (it makes no MPI call). */
static void *say_ready(void *arg)
{
	pid_t main_tid = (pid_t)(long)arg;
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&main_tid, &nr, 1);
	patient_ready();
	for (;;)
		pause();
	return NULL;
}

static PATIENT_NOINLINE void write_checkpoint(int rank, int size)
{
	pthread_mutex_lock(&ckpt_lock);
	for (int r = 0; r < size - 1; r++) {
		int pid;
		MPI_Recv(&pid, 1, MPI_INT, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		patient_sayf("rank%d=%d\n", r, pid);
	}
	patient_sayf("straggler=%d\n", (int)getpid());
	pthread_t w;
	if ((errno = pthread_create(&w, NULL, say_ready, (void *)(long)patient_gettid())) != 0)
		patient_die("pthread_create");
	flush_checkpoint(rank);
	pthread_mutex_unlock(&ckpt_lock);
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rank == size - 1) {
		write_checkpoint(rank, size);
	} else {
		int pid = (int)getpid();
		MPI_Send(&pid, 1, MPI_INT, size - 1, 0, MPI_COMM_WORLD);
	}
	MPI_Barrier(MPI_COMM_WORLD); /* for ever: the last rank never comes */
	MPI_Finalize();
	return 0;
}
