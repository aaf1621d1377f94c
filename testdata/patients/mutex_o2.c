/*
 * mutex_o2: four threads, each through its own chain of non-inlined
 * functions, block in pthread_mutex_lock on a mutex that main holds;
 * main blocks in pthread_join on the first of them. Nothing ever unlocks.
 *
 * Built twice from this one source: -O2 -fomit-frame-pointer -pthread
 * (unwinding needs CFI) and -O0 -g -pthread (gdb sees arguments and lines),
 * and the -O2 build once more stripped of its symbols.
 *
 * Expected stacks, innermost first (libc frames vary by glibc version):
 *   worker 0: __futex_abstimed_wait_common … __lll_lock_wait,
 *             pthread_mutex_lock, ant_bite, ant_march, ant_worker, start_thread
 *   worker 1: … pthread_mutex_lock, bee_sting, bee_dance, bee_hover,
 *             bee_worker, start_thread
 *   worker 2: … pthread_mutex_lock, cat_pounce, cat_worker, start_thread
 *   worker 3: … pthread_mutex_lock, dog_fetch, dog_dig, dog_sniff,
 *             dog_wander, dog_worker, start_thread
 *   main:     … pthread_join (__pthread_clockjoin_ex), main
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

#define NWORKERS 4

static pthread_mutex_t the_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic pid_t worker_tid[NWORKERS];

/* sink is written after every call so that no call is a tail call: each
 * function keeps its own frame. Distinct constants keep gcc's identical
 * code folding from merging two functions under one symbol. */
static volatile int sink;

static PATIENT_NOINLINE int take_lock(int depth)
{
	pthread_mutex_lock(&the_lock);
	pthread_mutex_unlock(&the_lock); /* never reached */
	return depth;
}

/* worker 0: ant_worker → ant_march → ant_bite → pthread_mutex_lock */
static PATIENT_NOINLINE int ant_bite(int x)
{
	int r = pthread_mutex_lock(&the_lock);
	sink += r + x + 11;
	return r;
}

static PATIENT_NOINLINE int ant_march(int x)
{
	int r = ant_bite(x + 1);
	sink += r + 12;
	return r;
}

static PATIENT_NOINLINE void *ant_worker(void *arg)
{
	worker_tid[0] = patient_gettid();
	int r = ant_march((int)(long)arg);
	sink += r + 13;
	return NULL;
}

/* worker 1: bee_worker → bee_hover → bee_dance → bee_sting → lock */
static PATIENT_NOINLINE int bee_sting(int x)
{
	int r = pthread_mutex_lock(&the_lock);
	sink += r + x + 21;
	return r;
}

static PATIENT_NOINLINE int bee_dance(int x)
{
	int r = bee_sting(x * 2);
	sink += r + 22;
	return r;
}

static PATIENT_NOINLINE int bee_hover(int x)
{
	int r = bee_dance(x + 3);
	sink += r + 23;
	return r;
}

static PATIENT_NOINLINE void *bee_worker(void *arg)
{
	worker_tid[1] = patient_gettid();
	int r = bee_hover((int)(long)arg);
	sink += r + 24;
	return NULL;
}

/* worker 2: cat_worker → cat_pounce → lock */
static PATIENT_NOINLINE int cat_pounce(int x)
{
	int r = pthread_mutex_lock(&the_lock);
	sink += r + x + 31;
	return r;
}

static PATIENT_NOINLINE void *cat_worker(void *arg)
{
	worker_tid[2] = patient_gettid();
	int r = cat_pounce((int)(long)arg);
	sink += r + 32;
	return NULL;
}

/* worker 3: dog_worker → dog_wander → dog_sniff → dog_dig → dog_fetch →
 * take_lock → lock (take_lock is shared by nobody else, but names the
 * helper frame a real program would have). */
static PATIENT_NOINLINE int dog_fetch(int x)
{
	int r = take_lock(x + 5);
	sink += r + 41;
	return r;
}

static PATIENT_NOINLINE int dog_dig(int x)
{
	int r = dog_fetch(x - 1);
	sink += r + 42;
	return r;
}

static PATIENT_NOINLINE int dog_sniff(int x)
{
	int r = dog_dig(x ^ 7);
	sink += r + 43;
	return r;
}

static PATIENT_NOINLINE int dog_wander(int x)
{
	int r = dog_sniff(x + 9);
	sink += r + 44;
	return r;
}

static PATIENT_NOINLINE void *dog_worker(void *arg)
{
	worker_tid[3] = patient_gettid();
	int r = dog_wander((int)(long)arg);
	sink += r + 45;
	return NULL;
}

int main(void)
{
	void *(*fn[NWORKERS])(void *) = {ant_worker, bee_worker, cat_worker, dog_worker};
	const char *names[NWORKERS] = {"ant", "bee", "cat", "dog"};
	pthread_t th[NWORKERS];
	pid_t tids[NWORKERS];
	int nrs[NWORKERS];

	if (pthread_mutex_lock(&the_lock) != 0)
		patient_die("pthread_mutex_lock");
	for (int i = 0; i < NWORKERS; i++) {
		errno = pthread_create(&th[i], NULL, fn[i], (void *)(long)(i + 1));
		if (errno != 0)
			patient_die("pthread_create");
		pthread_setname_np(th[i], names[i]);
	}
	for (int i = 0; i < NWORKERS; i++) {
		struct timespec ms = {0, 1000000};
		while ((tids[i] = worker_tid[i]) == 0)
			nanosleep(&ms, NULL);
		nrs[i] = PATIENT_SYS_FUTEX;
	}
	patient_wait_blocked(tids, nrs, NWORKERS);
	patient_ready();
	pthread_join(th[0], NULL); /* forever */
	return 0;
}
