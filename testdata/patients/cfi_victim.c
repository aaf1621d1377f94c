/*
 * cfi_victim: the patient whose binary the hostile tests corrupt. Two
 * threads block in read on a pipe nobody writes, under a few noinline
 * frames of the executable (built without frame pointers, so unwinding
 * them needs its .eh_frame); main blocks the same way. Nothing in it
 * throws or cancels, so a broken .eh_frame does not change how it runs.
 */
#include "patient.h"

#include <pthread.h>

static int pipefd[2];
static _Atomic pid_t tids[2];
static volatile int sink;

static PATIENT_NOINLINE void bottom(void)
{
	char c;
	while (read(pipefd[0], &c, 1) != 0)
		;
	pause();
}

static PATIENT_NOINLINE void middle(int n)
{
	bottom();
	sink += n;
}

static PATIENT_NOINLINE void top(int n)
{
	middle(n + 1);
	sink += n;
}

static void *worker(void *arg)
{
	long i = (long)arg;
	tids[i] = patient_gettid();
	top((int)i);
	return NULL;
}

int main(void)
{
	if (pipe(pipefd) != 0)
		patient_die("pipe");
	for (long i = 0; i < 2; i++) {
		pthread_t th;
		errno = pthread_create(&th, NULL, worker, (void *)i);
		if (errno != 0)
			patient_die("pthread_create");
	}
	struct timespec ms = {0, 1000000};
	while (tids[0] == 0 || tids[1] == 0)
		nanosleep(&ms, NULL);
	int nrs[2] = {PATIENT_SYS_READ, PATIENT_SYS_READ};
	patient_wait_blocked((pid_t *)tids, nrs, 2);
	patient_ready();
	top(7);
	return 0;
}
