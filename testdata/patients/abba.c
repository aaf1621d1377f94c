/*
 * abba: the classic lock-order inversion. Thread "transfer-ab" locks
 * lock_a then wants lock_b; thread "transfer-ba" locks lock_b then wants
 * lock_a. A barrier makes sure each holds its first lock before either
 * asks for its second, so they always deadlock. main waits in
 * pthread_join.
 *
 * Prints "ab=<tid of transfer-ab>" and "ba=<tid of transfer-ba>" before
 * "ready" (both then sleep in the futex wait of pthread_mutex_lock).
 *
 * Expected stacks (innermost first):
 *   transfer-ab: futex wait ← __lll_lock_wait ← pthread_mutex_lock ←
 *                take_b_after_a ← transfer_ab ← start_thread
 *   transfer-ba: … pthread_mutex_lock ← take_a_after_b ← transfer_ba ← start_thread
 * Expected verdict: lock-order-cycle naming both threads, lock_a and lock_b.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold;
static _Atomic pid_t ab_tid, ba_tid;
static volatile int sink;

static PATIENT_NOINLINE int take_b_after_a(int x)
{
	pthread_mutex_lock(&lock_a);
	pthread_barrier_wait(&both_hold);
	int r = pthread_mutex_lock(&lock_b); /* for ever */
	sink += r + x;
	return r;
}

static PATIENT_NOINLINE int take_a_after_b(int x)
{
	pthread_mutex_lock(&lock_b);
	pthread_barrier_wait(&both_hold);
	int r = pthread_mutex_lock(&lock_a); /* for ever */
	sink += r + x + 1;
	return r;
}

static PATIENT_NOINLINE void *transfer_ab(void *arg)
{
	ab_tid = patient_gettid();
	int r = take_b_after_a((int)(long)arg);
	sink += r + 2;
	return NULL;
}

static PATIENT_NOINLINE void *transfer_ba(void *arg)
{
	ba_tid = patient_gettid();
	int r = take_a_after_b((int)(long)arg);
	sink += r + 3;
	return NULL;
}

int main(void)
{
	pthread_t ab, ba;
	if (pthread_barrier_init(&both_hold, NULL, 2) != 0)
		patient_die("pthread_barrier_init");
	errno = pthread_create(&ab, NULL, transfer_ab, (void *)1L);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(ab, "transfer-ab");
	errno = pthread_create(&ba, NULL, transfer_ba, (void *)2L);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(ba, "transfer-ba");

	struct timespec ms = {0, 1000000};
	pid_t tids[2];
	while ((tids[0] = ab_tid) == 0 || (tids[1] = ba_tid) == 0)
		nanosleep(&ms, NULL);
	/* Both past the barrier and asleep on their second lock: lock_a
	 * and lock_b are both taken (their words are non-zero). */
	int nrs[2] = {PATIENT_SYS_FUTEX, PATIENT_SYS_FUTEX};
	for (;;) {
		patient_wait_blocked(tids, nrs, 2);
		if (patient_mutex_contended(&lock_a) && patient_mutex_contended(&lock_b))
			break;
		nanosleep(&ms, NULL);
	}
	patient_sayf("ab=%d\n", (int)tids[0]);
	patient_sayf("ba=%d\n", (int)tids[1]);
	patient_ready();
	pthread_join(ab, NULL); /* for ever */
	return 0;
}
