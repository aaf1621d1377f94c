/*
 * jemalloc_sighandler: a signal handler that allocates while the thread
 * it interrupted is inside jemalloc (Debian's libjemalloc-dev) holding
 * one of an arena's mutexes: the handler waits for a lock its own thread
 * holds (jemalloc's mutexes are not recursive, and nothing in jemalloc is
 * async-signal-safe).
 *
 * Thread "churner" allocates and frees large blocks from an arena of its
 * own (arenas.create) in a loop; every large allocation and free takes
 * the arena's mutexes (large_mtx, the extent caches', decay's). main
 * sends it SIGUSR1 again and again; the handler (a logger's, say)
 * allocates from the same arena. Sooner or later a signal lands while
 * the churner holds one of them, and the handler's malloc_mutex_lock
 * waits for it for ever. The signal's timing is the only chance in it:
 * the patient is ready once the handler has been entered and its thread
 * sleeps in a futex (nothing else on that arena ever does).
 *
 * A signal that lands elsewhere in jemalloc may corrupt it instead and
 * crash the process: so main is a supervisor that runs the hang in a
 * fresh process (fork, then exec of itself as "worker"), again until one
 * hangs. The worker prints "worker=<pid>" and "churner=<tid>" before
 * "ready"; the test attaches to the worker.
 *
 * Expected stack (innermost first): futex wait ← __lll_lock_wait ←
 * pthread_mutex_lock ← (malloc_mutex_lock_slow) ← … ← mallocx ←
 * on_sigusr1 ← <signal handler called> ← … jemalloc, holding the mutex …
 * ← mallocx/dallocx ← churn ← churner_main ← start_thread.
 * Expected verdict: signal-handler-reentry naming the churner.
 */
#include "patient.h"

#include <jemalloc/jemalloc.h>
#include <pthread.h>
#include <stdatomic.h>

#define LARGE ((size_t)1 << 20)

static unsigned arena;
static _Atomic pid_t churner_tid;
static _Atomic int in_handler;
static _Atomic long handled;
static void *volatile keep;

static PATIENT_NOINLINE void on_sigusr1(int sig)
{
	in_handler = 1;
	void *p = mallocx(LARGE + (size_t)sig * 4096, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
	dallocx(p, MALLOCX_TCACHE_NONE);
	in_handler = 0;
	handled++;
}

static PATIENT_NOINLINE void churn(size_t n)
{
	for (;;) {
		void *p = mallocx(LARGE + n, MALLOCX_ARENA(arena) | MALLOCX_TCACHE_NONE);
		keep = p;
		dallocx(p, MALLOCX_TCACHE_NONE);
	}
}

static PATIENT_NOINLINE void *churner_main(void *arg)
{
	churner_tid = patient_gettid();
	churn((size_t)arg);
	return NULL;
}

static PATIENT_NOINLINE int worker_main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigusr1;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		patient_die("sigaction");
	size_t sz = sizeof arena;
	if ((errno = mallctl("arenas.create", &arena, &sz, NULL, 0)) != 0)
		patient_die("mallctl arenas.create");

	pthread_t c;
	if ((errno = pthread_create(&c, NULL, churner_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(c, "churner");
	struct timespec us = {0, 50000};
	pid_t tid;
	while ((tid = churner_tid) == 0)
		nanosleep(&us, NULL);
	for (;;) {
		long before = handled;
		pthread_kill(c, SIGUSR1);
		/* Either the handler runs to its end, or it is stuck in it. */
		while (handled == before && !(in_handler && patient_blocked_in(tid, PATIENT_SYS_FUTEX)))
			nanosleep(&us, NULL);
		if (handled == before)
			break;
	}
	patient_sayf("worker=%d\n", (int)getpid());
	patient_sayf("churner=%d\n", (int)tid);
	patient_ready();
	pthread_join(c, NULL); /* for ever */
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "worker") == 0)
		return worker_main();
	for (int tries = 0; tries < 50; tries++) {
		pid_t w = patient_fork();
		if (w == 0) {
			execl("/proc/self/exe", argv[0], "worker", (char *)NULL);
			_exit(2);
		}
		int status;
		if (waitpid(w, &status, 0) != w) /* for ever once it hangs */
			patient_die("waitpid");
		/* the worker crashed (the signal corrupted jemalloc): again */
	}
	fprintf(stderr, "patient: 50 workers crashed before one hung\n");
	return 2;
}
