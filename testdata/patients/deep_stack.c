/*
 * deep_stack: a thread recurses 100,000 frames deep (argv[1] changes the
 * depth) with a small frame, then blocks in read on a pipe nobody writes.
 * Its stack is 512 MB (pthread_attr_setstacksize), so no ulimit is
 * needed. An unwinder must stop at its depth limit, in bounded time.
 */
#include "patient.h"

#include <pthread.h>

static int pipefd[2];
static _Atomic pid_t deep_tid;
static volatile long sink;

static PATIENT_NOINLINE long recurse(long n)
{
	if (n == 0) {
		char c;
		deep_tid = patient_gettid();
		while (read(pipefd[0], &c, 1) != 0)
			;
		pause();
		return 0;
	}
	/* Work after the call keeps it from being a tail call. */
	long r = recurse(n - 1);
	sink += n;
	return r + 1;
}

static void *deep(void *arg)
{
	return (void *)recurse((long)arg);
}

int main(int argc, char **argv)
{
	long depth = argc > 1 ? atol(argv[1]) : 100000;
	if (pipe(pipefd) != 0)
		patient_die("pipe");
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	errno = pthread_attr_setstacksize(&attr, (size_t)512 << 20);
	if (errno != 0)
		patient_die("pthread_attr_setstacksize");
	pthread_t th;
	errno = pthread_create(&th, &attr, deep, (void *)depth);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(th, "deep");
	pid_t tid;
	struct timespec ms = {0, 1000000};
	while ((tid = deep_tid) == 0)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_READ;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("deep=%d\n", (int)tid);
	patient_ready();
	pause();
	return 0;
}
