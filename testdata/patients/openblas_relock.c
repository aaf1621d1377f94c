/*
 * openblas_relock: the OpenBLAS 0.3.30 hang after fork (OpenBLAS PR #5170,
 * fixed in 0.3.31 by PR #5556; numpy/numpy#30092, scipy/scipy#23686),
 * with OpenBLAS's own function names.
 *
 * A lazily initialised thread pool: blas_thread_init() takes server_lock
 * (a global, default-kind pthread mutex) and starts the workers. A
 * pthread_atfork child handler, blas_thread_shutdown_, resets the pool in
 * a forked child (the workers do not exist there): it marks it
 * uninitialised. exec_blas_async() takes server_lock, finds the pool
 * uninitialised and calls blas_thread_init() with the lock still held:
 * blas_thread_init() locks server_lock again and the thread waits for
 * itself. The parent uses the pool (its workers run two jobs) before it
 * forks, so the child's first BLAS call is the one that hangs.
 *
 * Prints "child=<pid>" before "ready"; the child's only thread (TID = its
 * pid) is the waiter and the owner. The parent waits in waitpid for ever;
 * its workers wait on a condition variable for work.
 *
 * Expected stacks (innermost first):
 *   child main:  futex wait ← __lll_lock_wait ← pthread_mutex_lock ←
 *                blas_thread_init ← exec_blas_async ← exec_blas ←
 *                dgemm_ ← main
 *   parent workers: futex wait ← pthread_cond_wait ← blas_thread_server ←
 *                start_thread
 *   parent main: wait4 ← waitpid ← patient_hang_on_child ← main
 * Expected verdict: self-deadlock on server_lock, owner == waiter,
 * refined by the known issue OpenBLAS exec_blas_async → blas_thread_init.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

#define BLAS_NUM_THREADS 3

static pthread_mutex_t server_lock = PTHREAD_MUTEX_INITIALIZER;
static int blas_server_avail;
static pthread_t blas_threads[BLAS_NUM_THREADS];
static _Atomic pid_t blas_thread_tid[BLAS_NUM_THREADS];

/* The work queue the workers serve. */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static unsigned long queue_generation;
static int queue_done;
static volatile double sink;

static PATIENT_NOINLINE void *blas_thread_server(void *arg)
{
	long id = (long)arg;
	unsigned long seen = 0;
	blas_thread_tid[id] = patient_gettid();
	pthread_mutex_lock(&queue_lock);
	for (;;) {
		while (queue_generation == seen)
			pthread_cond_wait(&queue_cond, &queue_lock);
		seen = queue_generation;
		pthread_mutex_unlock(&queue_lock);
		double acc = 0;
		for (int i = 1; i < 10000; i++)
			acc += 1.0 / (i + id);
		sink += acc;
		pthread_mutex_lock(&queue_lock);
		queue_done++;
		pthread_cond_signal(&done_cond);
	}
	return NULL;
}

PATIENT_NOINLINE int blas_thread_init(void)
{
	pthread_mutex_lock(&server_lock);
	if (!blas_server_avail) {
		for (long i = 0; i < BLAS_NUM_THREADS; i++) {
			errno = pthread_create(&blas_threads[i], NULL, blas_thread_server, (void *)i);
			if (errno != 0)
				patient_die("pthread_create");
		}
		blas_server_avail = 1;
	}
	pthread_mutex_unlock(&server_lock);
	return 0;
}

/* The child handler registered with pthread_atfork: the workers did not
 * survive the fork, so the pool is marked uninitialised. */
void blas_thread_shutdown_(void)
{
	blas_server_avail = 0;
	queue_generation = 0;
	queue_done = 0;
}

/* 0.3.30: server_lock is held across the lazy initialisation. */
PATIENT_NOINLINE int exec_blas_async(long pos)
{
	pthread_mutex_lock(&server_lock);
	if (!blas_server_avail)
		blas_thread_init(); /* locks server_lock again */
	pthread_mutex_lock(&queue_lock);
	queue_done = 0;
	queue_generation++;
	pthread_cond_broadcast(&queue_cond);
	pthread_mutex_unlock(&queue_lock);
	pthread_mutex_unlock(&server_lock);
	sink += (double)pos;
	return 0;
}

PATIENT_NOINLINE int exec_blas_async_wait(void)
{
	pthread_mutex_lock(&queue_lock);
	while (queue_done < BLAS_NUM_THREADS)
		pthread_cond_wait(&done_cond, &queue_lock);
	pthread_mutex_unlock(&queue_lock);
	return 0;
}

PATIENT_NOINLINE int exec_blas(long num)
{
	int r = exec_blas_async(num);
	r += exec_blas_async_wait();
	sink += (double)r;
	return r;
}

/* A BLAS entry point that runs on the pool. */
PATIENT_NOINLINE void dgemm_(long n)
{
	int r = exec_blas(n);
	sink += (double)r;
}

int main(void)
{
	if (pthread_atfork(NULL, NULL, blas_thread_shutdown_) != 0)
		patient_die("pthread_atfork");

	/* The parent initialises the pool and uses it. */
	blas_thread_init();
	dgemm_(1);
	dgemm_(2);
	pid_t tids[BLAS_NUM_THREADS];
	int nrs[BLAS_NUM_THREADS];
	for (int i = 0; i < BLAS_NUM_THREADS; i++) {
		tids[i] = blas_thread_tid[i];
		nrs[i] = PATIENT_SYS_FUTEX;
	}
	patient_wait_blocked(tids, nrs, BLAS_NUM_THREADS); /* idle workers */

	pid_t child = patient_fork();
	if (child == 0) {
		dgemm_(3); /* for ever */
		_exit(0);
	}
	patient_hang_on_child(child, PATIENT_SYS_FUTEX);
	return 0;
}
