/*
 * big_write: a thread blocked in a write() that has already written part
 * of its buffer, the state a ptrace stop disturbs: the kernel wakes the
 * writer to enter the stop, and a pipe write that has moved some bytes
 * returns that short count instead of restarting (gdb attach does the
 * same). Built at -O0, so that unwinding past the writer's own frame
 * needs its frame pointer (rbp), which /proc does not give: the case in
 * which hangdoc would otherwise stop the thread to read its registers.
 *
 * Thread "big-writer" writes 1 MiB into a pipe in one write(); nothing
 * reads until SIGUSR1, when the thread "drainer" reads it all. main
 * then prints "write=<what write returned> drained=<bytes read>":
 * 1048576 each unless a stop cut the write short. Prints "writer=<tid>" before "ready", which comes once
 * the writer sleeps in write with the pipe full.
 *
 * Expected stack of big-writer (innermost first):
 *   write ← write_all_at_once ← writer_main ← start_thread
 */
#include "patient.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

#define BIG (1 << 20)

static int pipefd[2];
static _Atomic pid_t writer_tid;
static sem_t drain;
static _Atomic long written = -2, drained;

static PATIENT_NOINLINE ssize_t write_all_at_once(int fd, const char *buf, size_t n)
{
	return write(fd, buf, n); /* one call: a short count is not retried */
}

static void *writer_main(void *arg)
{
	(void)arg;
	static char buf[BIG];
	memset(buf, 'w', sizeof buf);
	writer_tid = patient_gettid();
	written = write_all_at_once(pipefd[1], buf, sizeof buf);
	return NULL;
}

static void *drainer_main(void *arg)
{
	(void)arg;
	char buf[65536];
	while (sem_wait(&drain) != 0)
		;
	for (;;) {
		ssize_t n = read(pipefd[0], buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		drained += n;
		if (drained >= BIG)
			break;
	}
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	sem_post(&drain); /* async-signal-safe */
}

int main(void)
{
	if (pipe(pipefd) != 0)
		patient_die("pipe");
	sem_init(&drain, 0, 0);
	struct sigaction sa = {.sa_handler = on_usr1, .sa_flags = SA_RESTART};
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t w, d;
	if ((errno = pthread_create(&d, NULL, drainer_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(d, "drainer");
	if ((errno = pthread_create(&w, NULL, writer_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(w, "big-writer");
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = writer_tid) == 0)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_WRITE;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("writer=%d\n", (int)tid);
	patient_ready();
	pthread_join(w, NULL);
	pthread_join(d, NULL);
	patient_sayf("write=%ld drained=%ld\n", (long)written, (long)drained);
	for (;;)
		pause();
}
