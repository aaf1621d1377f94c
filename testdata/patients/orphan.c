/*
 * orphan: a thread exits holding a lock. Thread "loader" takes state_lock
 * (a global, default-kind pthread mutex) in load_state() and returns
 * without unlocking it, on an error path; it exits, and main joins it.
 * main then calls update_state(), which locks state_lock and blocks for
 * ever: the owner recorded in the mutex is a TID that no longer exists
 * (and the process never forked).
 *
 * Prints "owner=<tid of the dead loader>" before "ready", which a
 * short-lived helper thread prints once main sleeps on the lock; the
 * helper then exits, and main is the process's only thread.
 *
 * Expected stack of main (innermost first):
 *   futex wait ← __lll_lock_wait ← pthread_mutex_lock ← update_state ← main
 * Expected verdict: orphaned-lock, main waiting on state_lock whose
 * owner (the printed TID) exited.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

pthread_mutex_t state_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic pid_t loader_tid;
static int state;
static volatile int sink;

static PATIENT_NOINLINE int load_state(int fail)
{
	pthread_mutex_lock(&state_lock);
	if (fail)
		return -1; /* the bug: state_lock stays locked */
	state = 1;
	pthread_mutex_unlock(&state_lock);
	return 0;
}

static PATIENT_NOINLINE void *loader_main(void *arg)
{
	loader_tid = patient_gettid();
	sink += load_state((int)(long)arg);
	return NULL;
}

static PATIENT_NOINLINE int update_state(int v)
{
	int r = pthread_mutex_lock(&state_lock); /* for ever */
	state = v;
	pthread_mutex_unlock(&state_lock);
	return r;
}

static void *watcher_main(void *arg)
{
	pid_t main_tid = (pid_t)(long)arg;
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&main_tid, &nr, 1);
	patient_ready();
	return NULL;
}

int main(void)
{
	pthread_t loader;
	errno = pthread_create(&loader, NULL, loader_main, (void *)1L);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(loader, "loader");
	pthread_join(loader, NULL);
	pid_t owner = loader_tid;
	/* The kernel frees the TID once the thread is joined; make sure it
	 * is gone from /proc before saying so. */
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d", (int)owner);
	struct timespec ms = {0, 1000000};
	while (access(path, F_OK) == 0)
		nanosleep(&ms, NULL);
	patient_sayf("owner=%d\n", (int)owner);

	/* main is the thread that blocks: a helper says "ready" once it
	 * does, and exits, leaving main the only thread. */
	pthread_t watcher;
	errno = pthread_create(&watcher, NULL, watcher_main, (void *)(long)patient_gettid());
	if (errno != 0)
		patient_die("pthread_create");
	pthread_detach(watcher);
	sink += update_state(2); /* for ever */
	return 0;
}
