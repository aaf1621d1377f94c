/*
 * sigrelock: a signal handler re-takes a lock its thread holds. Thread
 * "logger" calls log_write(), which takes log_lock (a global, default-kind
 * pthread mutex) and writes the line to a pipe that is full (nobody reads
 * it), so it blocks in write() holding the lock. main sends it SIGUSR1
 * with pthread_kill; the handler, on_sigusr1, logs the signal with
 * log_write() and blocks for ever on log_lock, which its own thread holds.
 * main blocks SIGUSR1 itself and waits in pthread_join.
 *
 * Prints "logger=<tid>" before "ready" (the logger then sleeps in the
 * futex wait of pthread_mutex_lock, inside the handler).
 *
 * Expected stack of logger (innermost first):
 *   futex wait ← __lll_lock_wait ← pthread_mutex_lock ← log_write ←
 *   on_sigusr1 ← <signal handler called> ← write ← log_write ←
 *   logger_main ← start_thread
 * Expected verdict: signal-handler-reentry (log_lock owner == the
 * waiting thread, with the signal frame between the two acquisitions).
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static int log_pipe[2];
static _Atomic pid_t logger_tid;
static volatile int sink;

PATIENT_NOINLINE void log_write(const char *msg)
{
	pthread_mutex_lock(&log_lock);
	ssize_t n = write(log_pipe[1], msg, strlen(msg)); /* the pipe is full */
	sink += (int)n;
	pthread_mutex_unlock(&log_lock);
}

static PATIENT_NOINLINE void on_sigusr1(int sig)
{
	log_write("caught SIGUSR1\n"); /* re-takes log_lock */
	sink += sig;
}

static PATIENT_NOINLINE void *logger_main(void *arg)
{
	(void)arg;
	logger_tid = patient_gettid();
	log_write("starting up\n");
	sink++;
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	sigset_t usr1;
	pthread_t logger;

	/* A pipe nobody reads, filled to the brim. */
	if (pipe(log_pipe) != 0)
		patient_die("pipe");
	int fl = fcntl(log_pipe[1], F_GETFL);
	fcntl(log_pipe[1], F_SETFL, fl | O_NONBLOCK);
	char buf[4096];
	memset(buf, 'x', sizeof buf);
	while (write(log_pipe[1], buf, sizeof buf) > 0)
		;
	while (write(log_pipe[1], buf, 1) > 0)
		;
	if (errno != EAGAIN)
		patient_die("filling the pipe");
	fcntl(log_pipe[1], F_SETFL, fl);

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		patient_die("sigaction");
	errno = pthread_create(&logger, NULL, logger_main, NULL);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(logger, "logger");
	/* Only the logger takes SIGUSR1 (it kept the open mask). */
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);

	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = logger_tid) == 0)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_WRITE;
	patient_wait_blocked(&tid, &nr, 1); /* in write(), holding log_lock */
	pthread_kill(logger, SIGUSR1);
	nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&tid, &nr, 1); /* in the handler, on log_lock */
	patient_sayf("logger=%d\n", (int)tid);
	patient_ready();
	pthread_join(logger, NULL); /* for ever */
	return 0;
}
