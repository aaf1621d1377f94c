/*
 * idle_pool: a pool of four workers, each asleep in pthread_cond_wait
 * waiting for a task (no task comes), and a main thread that does one of
 * two things:
 *
 *   idle_pool join    main shuts the pool down but forgot to tell the
 *                     workers (no stop flag, no broadcast): it waits in
 *                     pthread_join for worker 0, which waits for a signal
 *                     only main would send. Nothing can wake anyone: a
 *                     hang (lost-wakeup: the wake-up never comes).
 *   idle_pool accept  main serves: it waits in accept() on a loopback
 *                     listener for a client that would bring work. The
 *                     pool is idle, not stuck (a control: no deadlock).
 *
 * Prints "worker=<tid>" for each worker, "main=<tid>" and, for accept,
 * "port=<the listener's port>", then "ready" once every worker sleeps in
 * its futex wait and main in its join or accept.
 *
 * Expected stacks (innermost first):
 *   worker: pthread_cond_wait ← wait_for_task ← worker_main ← start_thread
 *   main:   pthread_join ← shut_down_pool ← main, or accept ← serve ← main
 */
#include "patient.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/socket.h>

#define WORKERS 4

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_nonempty = PTHREAD_COND_INITIALIZER;
static int queued; /* tasks in the queue: none ever */
static _Atomic pid_t worker_tids[WORKERS];
static volatile int sink;

static PATIENT_NOINLINE void wait_for_task(void)
{
	pthread_mutex_lock(&queue_lock);
	while (queued == 0)
		pthread_cond_wait(&queue_nonempty, &queue_lock);
	queued--;
	pthread_mutex_unlock(&queue_lock);
}

static PATIENT_NOINLINE void *worker_main(void *arg)
{
	worker_tids[(long)arg] = patient_gettid();
	for (;;) {
		wait_for_task();
		sink++;
	}
	return NULL;
}

static PATIENT_NOINLINE void shut_down_pool(pthread_t *workers)
{
	/* the bug: no stop flag set, no pthread_cond_broadcast */
	for (int i = 0; i < WORKERS; i++)
		pthread_join(workers[i], NULL);
}

static PATIENT_NOINLINE int serve(int lfd)
{
	int c = accept(lfd, NULL, NULL); /* no client comes */
	sink += c;
	return c;
}

int main(int argc, char **argv)
{
	int accepting = argc > 1 && strcmp(argv[1], "accept") == 0;
	pthread_t workers[WORKERS];
	for (long i = 0; i < WORKERS; i++) {
		if ((errno = pthread_create(&workers[i], NULL, worker_main, (void *)i)) != 0)
			patient_die("pthread_create");
		pthread_setname_np(workers[i], "pool-worker");
	}
	pid_t tids[WORKERS];
	int nrs[WORKERS];
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < WORKERS; i++) {
		while ((tids[i] = worker_tids[i]) == 0)
			nanosleep(&ms, NULL);
		nrs[i] = PATIENT_SYS_FUTEX;
	}
	patient_wait_blocked(tids, nrs, WORKERS);
	for (int i = 0; i < WORKERS; i++)
		patient_sayf("worker=%d\n", (int)tids[i]);
	patient_sayf("main=%d\n", (int)patient_gettid());

	if (!accepting) {
		/* "ready" before the join: the test waits for main's futex wait */
		patient_ready();
		shut_down_pool(workers); /* for ever */
		return 0;
	}
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof sa;
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(lfd, 1) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &len) != 0)
		patient_die("listen");
	patient_sayf("port=%d\n", ntohs(sa.sin_port));
	patient_ready();
	serve(lfd); /* for ever */
	return 0;
}
