/*
 * sighandler: thread "victim" waits in pause() inside interrupted_work();
 * main sends it SIGUSR1 with pthread_kill; the handler blocks for ever in
 * read() on a pipe nobody writes, so the victim's stack crosses the
 * kernel's signal frame:
 *
 *   read ← handler_blocks ← on_usr1 ← <signal handler called> ←
 *   pause ← interrupted_work ← victim_main ← start_thread
 *
 * main blocks in pthread_join on the victim. Built -O2 -g -pthread.
 */
#include "patient.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

static int pipefd[2];
static _Atomic pid_t victim_tid;
static volatile sig_atomic_t in_handler;
static volatile int sink;

static PATIENT_NOINLINE int handler_blocks(int sig)
{
	char c;
	in_handler = 1;
	ssize_t n = read(pipefd[0], &c, 1); /* nobody writes: blocks */
	sink += (int)n + sig;
	return (int)n;
}

static PATIENT_NOINLINE void on_usr1(int sig)
{
	int r = handler_blocks(sig);
	sink += r + 1;
}

static PATIENT_NOINLINE int interrupted_work(int x)
{
	for (;;) {
		int r = pause();
		sink += r + x;
	}
	return x;
}

static PATIENT_NOINLINE void *victim_main(void *arg)
{
	victim_tid = patient_gettid();
	int r = interrupted_work((int)(long)arg);
	sink += r + 2;
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	pthread_t victim;
	sigset_t usr1;

	if (pipe(pipefd) != 0)
		patient_die("pipe");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_usr1;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		patient_die("sigaction");

	/* pthread_kill aims SIGUSR1 at the victim; main also blocks it
	 * (after creating the victim, which keeps the open mask it
	 * inherited) so that a stray process-wide SIGUSR1 cannot land on
	 * main instead. */
	errno = pthread_create(&victim, NULL, victim_main, (void *)1L);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(victim, "victim");
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);

	pid_t tid;
	struct timespec ms = {0, 1000000};
	while ((tid = victim_tid) == 0)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_PAUSE;
	patient_wait_blocked(&tid, &nr, 1); /* in pause(): the signal interrupts it */
	pthread_kill(victim, SIGUSR1);
	while (!in_handler)
		nanosleep(&ms, NULL);
	nr = PATIENT_SYS_READ;
	patient_wait_blocked(&tid, &nr, 1);
	patient_ready();
	pthread_join(victim, NULL); /* forever */
	return 0;
}
