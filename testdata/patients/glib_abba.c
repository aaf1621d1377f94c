/*
 * glib_abba: a lock-order inversion between two GMutex (GLib, Debian's
 * libglib2.0-dev). Thread "glib-ab" holds mutex_a and wants mutex_b;
 * thread "glib-ba" holds mutex_b and wants mutex_a. A barrier makes sure
 * each holds its first lock before either asks for its second.
 *
 * Prints "ab=<tid>" and "ba=<tid>" before "ready".
 *
 * Expected stacks (innermost first): futex wait ← g_mutex_lock_slowpath
 * (a static function: only its address, or libglib's symbols, name it) ←
 * g_mutex_lock ← take_b_after_a ← transfer_ab ← g_thread_proxy ←
 * start_thread. A GMutex is a bare futex word: no owner is recorded.
 * Expected verdict: lock-order-cycle naming both threads.
 */
#include "patient.h"

#include <glib.h>
#include <pthread.h>
#include <stdatomic.h>

GMutex mutex_a, mutex_b;
static pthread_barrier_t both_hold;
static _Atomic pid_t ab_tid, ba_tid;
static volatile int sink;

static PATIENT_NOINLINE void take_b_after_a(void)
{
	g_mutex_lock(&mutex_a);
	pthread_barrier_wait(&both_hold);
	ab_tid = patient_gettid();
	g_mutex_lock(&mutex_b); /* for ever */
	sink += 1;
}

static PATIENT_NOINLINE void take_a_after_b(void)
{
	g_mutex_lock(&mutex_b);
	pthread_barrier_wait(&both_hold);
	ba_tid = patient_gettid();
	g_mutex_lock(&mutex_a); /* for ever */
	sink += 2;
}

static gpointer transfer_ab(gpointer data)
{
	take_b_after_a();
	return data;
}

static gpointer transfer_ba(gpointer data)
{
	take_a_after_b();
	return data;
}

int main(void)
{
	if (pthread_barrier_init(&both_hold, NULL, 2) != 0)
		patient_die("pthread_barrier_init");
	GThread *ab = g_thread_new("glib-ab", transfer_ab, NULL);
	GThread *ba = g_thread_new("glib-ba", transfer_ba, NULL);

	struct timespec ms = {0, 1000000};
	pid_t tids[2];
	while ((tids[0] = ab_tid) == 0 || (tids[1] = ba_tid) == 0)
		nanosleep(&ms, NULL);
	int nrs[2] = {PATIENT_SYS_FUTEX, PATIENT_SYS_FUTEX};
	patient_wait_blocked(tids, nrs, 2);
	patient_sayf("ab=%d\n", (int)tids[0]);
	patient_sayf("ba=%d\n", (int)tids[1]);
	patient_ready();
	g_thread_join(ab); /* for ever */
	g_thread_join(ba);
	return 0;
}
