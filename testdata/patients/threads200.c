/*
 * threads200: N threads (argv[1], default 200) blocked three ways, in turn:
 *   i%3 == 0: futex wait, in pthread_cond_wait on a condvar nobody signals
 *             (function block_on_cond)
 *   i%3 == 1: nanosleep of an hour, in a loop (function block_in_sleep)
 *   i%3 == 2: read on a pipe nobody writes (function block_on_pipe)
 * plus a "heartbeat" thread that sleeps 1 ms at a time with
 * clock_nanosleep and records the longest gap between two consecutive
 * wake-ups. SIGUSR1 (blocked in every other thread) makes it print
 * "maxgap_ns=<N>" and start over, so a test can measure how long hangdoc
 * kept a running thread from running. main blocks in pthread_join.
 *
 * Blocked threads get small stacks so that 2000 of them stay cheap.
 */
#include "patient.h"

#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

static pthread_mutex_t cond_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never = PTHREAD_COND_INITIALIZER;
static int pipefd[2];
static pid_t *tids;
static volatile sig_atomic_t report_wanted;
static volatile int sink;

static PATIENT_NOINLINE void block_on_cond(void)
{
	pthread_mutex_lock(&cond_mu);
	for (;;)
		pthread_cond_wait(&never, &cond_mu);
}

static PATIENT_NOINLINE void block_in_sleep(void)
{
	struct timespec hour = {3600, 0};
	for (;;)
		sink += nanosleep(&hour, NULL);
}

static PATIENT_NOINLINE void block_on_pipe(void)
{
	char c;
	for (;;)
		sink += (int)read(pipefd[0], &c, 1);
}

static void *blocker(void *arg)
{
	long i = (long)arg;
	atomic_store((_Atomic pid_t *)&tids[i], patient_gettid());
	switch (i % 3) {
	case 0:
		block_on_cond();
		break;
	case 1:
		block_in_sleep();
		break;
	default:
		block_on_pipe();
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	report_wanted = 1;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static PATIENT_NOINLINE void *heartbeat(void *arg)
{
	(void)arg;
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);

	struct timespec ms = {0, 1000000};
	int64_t last = now_ns(), maxgap = 0;
	for (;;) {
		clock_nanosleep(CLOCK_MONOTONIC, 0, &ms, NULL); /* EINTR on SIGUSR1: fine */
		int64_t t = now_ns();
		if (t - last > maxgap)
			maxgap = t - last;
		last = t;
		if (report_wanted) {
			char line[64];
			report_wanted = 0;
			snprintf(line, sizeof line, "maxgap_ns=%lld\n", (long long)maxgap);
			patient_say(line);
			maxgap = 0;
			last = now_ns(); /* the write is not a gap */
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long n = 200;
	if (argc > 1) {
		char *end;
		n = strtol(argv[1], &end, 10);
		if (*end != 0 || n < 1 || n > 100000) {
			fprintf(stderr, "usage: threads200 [nthreads]\n");
			return 2;
		}
	}
	if (pipe(pipefd) != 0)
		patient_die("pipe");
	tids = calloc((size_t)n, sizeof *tids);
	pthread_t *th = calloc((size_t)n, sizeof *th);
	int *nrs = calloc((size_t)n, sizeof *nrs);
	if (tids == NULL || th == NULL || nrs == NULL)
		patient_die("calloc");

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		patient_die("sigaction");
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL); /* inherited by every thread */

	pthread_attr_t small;
	pthread_attr_init(&small);
	pthread_attr_setstacksize(&small, 64 * 1024 > PTHREAD_STACK_MIN ? 64 * 1024 : PTHREAD_STACK_MIN);
	for (long i = 0; i < n; i++) {
		errno = pthread_create(&th[i], &small, blocker, (void *)i);
		if (errno != 0)
			patient_die("pthread_create");
		nrs[i] = i % 3 == 0 ? PATIENT_SYS_FUTEX : i % 3 == 1 ? PATIENT_SYS_CLOCK_NANOSLEEP : PATIENT_SYS_READ;
	}
	pthread_t hb;
	errno = pthread_create(&hb, NULL, heartbeat, NULL);
	if (errno != 0)
		patient_die("pthread_create heartbeat");
	pthread_setname_np(hb, "heartbeat");

	struct timespec ms = {0, 1000000};
	for (long i = 0; i < n; i++) {
		while (atomic_load((_Atomic pid_t *)&tids[i]) == 0)
			nanosleep(&ms, NULL);
	}
	patient_wait_blocked(tids, nrs, (int)n);
	patient_ready();
	pthread_join(th[0], NULL); /* forever */
	return 0;
}
