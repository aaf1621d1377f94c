/*
 * glib_relock: a thread re-locks a GMutex it holds (GLib's GMutex is not
 * recursive; a GRecMutex would have been). Thread "cache-worker" calls
 * cache_update, which locks cache_lock and, through cache_evict, locks it
 * again. main waits in g_thread_join.
 *
 * Prints "worker=<tid>" before "ready".
 *
 * Expected stack (innermost first): futex wait ← g_mutex_lock_slowpath ←
 * g_mutex_lock ← cache_evict ← cache_update ← worker_main ←
 * g_thread_proxy ← start_thread: g_mutex_lock on &cache_lock twice on
 * one stack. Expected verdict: self-deadlock naming the worker.
 */
#include "patient.h"

#include <glib.h>
#include <stdatomic.h>

GMutex cache_lock;
static _Atomic pid_t worker_tid;
static volatile int sink;

static PATIENT_NOINLINE void cache_evict(int n)
{
	g_mutex_lock(&cache_lock); /* for ever: this thread holds it */
	sink += n;
	g_mutex_unlock(&cache_lock);
}

static PATIENT_NOINLINE void cache_update(int n)
{
	g_mutex_lock(&cache_lock);
	worker_tid = patient_gettid();
	cache_evict(n + 1);
	sink += n;
	g_mutex_unlock(&cache_lock);
}

static gpointer worker_main(gpointer data)
{
	cache_update(1);
	return data;
}

int main(void)
{
	GThread *w = g_thread_new("cache-worker", worker_main, NULL);
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = worker_tid) == 0)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("worker=%d\n", (int)tid);
	patient_ready();
	g_thread_join(w); /* for ever */
	return 0;
}
