/*
 * self_pipe: a control that waits for an EOF only it could give. main
 * forks a child that writes one line into a pipe and exits, waits for
 * it, and reads the pipe to its end; it never closed its own copy of the
 * write end, so the read waits for ever (the fork-and-read-output bug of
 * hand-written subprocess code). No other process holds the write end.
 * The verdict is io-wait (not a deadlock hangdoc can claim: a signal
 * handler could write it), saying that only this process holds the
 * pipe's other end.
 *
 * Prints "reader=<tid>" and "fd=<the read end>" before "ready", which
 * comes once main sleeps in read.
 */
#include "patient.h"

#include <pthread.h>

static int pipefd[2];

static PATIENT_NOINLINE ssize_t read_child_output(int fd, char *buf, size_t n)
{
	ssize_t got, total = 0;
	while ((got = read(fd, buf, n)) > 0) /* for ever: no EOF while our write end is open */
		total += got;
	return total;
}

static void *announce(void *arg)
{
	pid_t tid = *(pid_t *)arg;
	int nr = PATIENT_SYS_READ;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("reader=%d\n", (int)tid);
	patient_sayf("fd=%d\n", pipefd[0]);
	patient_ready();
	return NULL;
}

int main(void)
{
	if (pipe(pipefd) != 0)
		patient_die("pipe");
	pid_t child = patient_fork();
	if (child == 0) {
		close(pipefd[0]);
		if (write(pipefd[1], "child output\n", 13) != 13)
			_exit(1);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	/* the bug: close(pipefd[1]) is missing */
	static pid_t me;
	me = patient_gettid();
	pthread_t t;
	if ((errno = pthread_create(&t, NULL, announce, &me)) != 0)
		patient_die("pthread_create");
	pthread_detach(t);
	char buf[256];
	ssize_t n = read_child_output(pipefd[0], buf, sizeof buf);
	return (int)n;
}
