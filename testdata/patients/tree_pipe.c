/*
 * tree_pipe: a process tree that one inherited lock hangs. The parent P
 * makes a pipe and forks a client K (while it has one thread), which
 * closes the write end and reads the pipe, waiting for the worker's
 * result. P then starts a background thread "registry-gc" that takes
 * registry_lock and sleeps holding it, for ever, and forks a worker C
 * while it does. C closes the read end and calls registry_register(),
 * which locks registry_lock: its copy is locked by a thread that does
 * not exist in C, and C blocks for ever without writing its result. P
 * closes both ends (only C holds the write end now) and waits in
 * waitpid(C). So: C is stuck in fork-inherited-lock, P waits for its
 * child C, K waits on a pipe whose write end only C holds.
 *
 * Prints, before "ready": "owner=<tid of registry-gc in P>",
 * "child=<pid of C>", "client=<pid of K>". Both children stay in the
 * patient's process group and get SIGKILL when P dies.
 *
 * Expected stacks (innermost first):
 *   C main:  futex wait ← __lll_lock_wait ← pthread_mutex_lock ←
 *            registry_register ← run_worker ← main
 *   K main:  read ← await_result ← run_client ← main
 *   P main:  wait4 ← waitpid ← main
 *   P registry-gc: clock_nanosleep ← nanosleep ← registry_collect ←
 *            registry_gc_main ← start_thread
 * Expected verdicts: fork-inherited-lock for C (owner registry-gc), then
 * waiting-on-process for P (its child C) and for K (the pipe C holds),
 * each naming C's deadlock.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic pid_t gc_tid;
static _Atomic int gc_holding;
static volatile int sink;

/* A slow collection: it sleeps, holding registry_lock, for ever. */
static PATIENT_NOINLINE void registry_collect(void)
{
	struct timespec sec = {1, 0};
	for (;;)
		sink += nanosleep(&sec, NULL);
}

static PATIENT_NOINLINE void *registry_gc_main(void *arg)
{
	(void)arg;
	gc_tid = patient_gettid();
	pthread_mutex_lock(&registry_lock);
	gc_holding = 1;
	registry_collect();
	return NULL;
}

static PATIENT_NOINLINE int registry_register(int id)
{
	pthread_mutex_lock(&registry_lock); /* for ever, in the forked worker */
	sink += id;
	pthread_mutex_unlock(&registry_lock);
	return id;
}

static PATIENT_NOINLINE void run_worker(int out)
{
	int id = registry_register(1);
	char line[32];
	int n = snprintf(line, sizeof line, "result=%d\n", id);
	sink += (int)write(out, line, (size_t)n); /* never reached */
}

static PATIENT_NOINLINE ssize_t await_result(int in)
{
	char buf[64];
	return read(in, buf, sizeof buf); /* only the stuck worker can write */
}

static PATIENT_NOINLINE void run_client(int in)
{
	ssize_t n;
	while ((n = await_result(in)) < 0 && errno == EINTR)
		;
	sink += (int)n;
}

int main(void)
{
	int fds[2];
	if (pipe(fds) != 0)
		patient_die("pipe");

	pid_t client = patient_fork();
	if (client == 0) {
		close(fds[1]);
		run_client(fds[0]);
		_exit(0);
	}

	pthread_t th;
	errno = pthread_create(&th, NULL, registry_gc_main, NULL);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(th, "registry-gc");
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = gc_tid) == 0 || !gc_holding)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_CLOCK_NANOSLEEP;
	patient_wait_blocked(&tid, &nr, 1);

	pid_t child = patient_fork();
	if (child == 0) {
		close(fds[0]);
		run_worker(fds[1]);
		_exit(0);
	}
	close(fds[0]);
	close(fds[1]);

	patient_sayf("owner=%d\n", (int)tid);
	patient_sayf("child=%d\n", (int)child);
	patient_sayf("client=%d\n", (int)client);
	patient_wait_child_blocked(child, PATIENT_SYS_FUTEX);
	patient_wait_child_blocked(client, PATIENT_SYS_READ);
	patient_ready();
	int status;
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return 0;
}
