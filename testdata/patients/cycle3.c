/*
 * cycle3: a lock-order cycle of three. Thread "stage-0" holds lock_a and
 * wants lock_b, "stage-1" holds lock_b and wants lock_c, "stage-2" holds
 * lock_c and wants lock_a. A barrier makes sure every thread holds its
 * first lock before any asks for its second. main waits in pthread_join.
 *
 * Prints "t0=<tid>", "t1=<tid>", "t2=<tid>" before "ready" (all three then
 * sleep in the futex wait of pthread_mutex_lock, every lock contended).
 *
 * Expected stacks (innermost first):
 *   stage-N: futex wait ← __lll_lock_wait ← pthread_mutex_lock ←
 *            pass_on ← stage_main ← start_thread
 * Expected verdict: lock-order-cycle naming the three threads and locks.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

#define NSTAGES 3

pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_c = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *const locks[NSTAGES] = {&lock_a, &lock_b, &lock_c};
static pthread_barrier_t all_hold;
static _Atomic pid_t stage_tid[NSTAGES];
static volatile int sink;

/* pass_on holds mine and waits for next. */
static PATIENT_NOINLINE int pass_on(pthread_mutex_t *mine, pthread_mutex_t *next)
{
	pthread_mutex_lock(mine);
	pthread_barrier_wait(&all_hold);
	int r = pthread_mutex_lock(next); /* for ever */
	sink += r;
	return r;
}

static PATIENT_NOINLINE void *stage_main(void *arg)
{
	long i = (long)arg;
	stage_tid[i] = patient_gettid();
	int r = pass_on(locks[i], locks[(i + 1) % NSTAGES]);
	sink += r + (int)i;
	return NULL;
}

int main(void)
{
	pthread_t th[NSTAGES];
	if (pthread_barrier_init(&all_hold, NULL, NSTAGES) != 0)
		patient_die("pthread_barrier_init");
	for (long i = 0; i < NSTAGES; i++) {
		char name[16];
		errno = pthread_create(&th[i], NULL, stage_main, (void *)i);
		if (errno != 0)
			patient_die("pthread_create");
		snprintf(name, sizeof name, "stage-%ld", i);
		pthread_setname_np(th[i], name);
	}
	struct timespec ms = {0, 1000000};
	pid_t tids[NSTAGES];
	int nrs[NSTAGES];
	for (int i = 0; i < NSTAGES; i++) {
		while ((tids[i] = stage_tid[i]) == 0)
			nanosleep(&ms, NULL);
		nrs[i] = PATIENT_SYS_FUTEX;
	}
	for (;;) {
		patient_wait_blocked(tids, nrs, NSTAGES);
		int contended = 0;
		for (int i = 0; i < NSTAGES; i++)
			contended += patient_mutex_contended(locks[i]);
		if (contended == NSTAGES)
			break;
		nanosleep(&ms, NULL);
	}
	for (int i = 0; i < NSTAGES; i++)
		patient_sayf("t%d=%d\n", i, (int)tids[i]);
	patient_ready();
	pthread_join(th[0], NULL); /* for ever */
	return 0;
}
