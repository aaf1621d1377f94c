/*
 * hostile_names: threads whose names a terminal would obey. Three threads
 * are named with escape sequences and invalid UTF-8 (OSC 52 writes the
 * clipboard, CSI 2J clears the screen, 0xff 0xfe is no UTF-8) and block in
 * read on a pipe nobody writes; main blocks there too. A report must show
 * the names escaped, never raw.
 */
#include "patient.h"

#include <pthread.h>

#define NTHREADS 3

static const char *names[NTHREADS] = {"\x1b]52;c;x\a", "\x1b[2J", "\xff\xfe"};
static _Atomic pid_t tids[NTHREADS + 1];
static int pipefd[2];

static PATIENT_NOINLINE void wait_forever(void)
{
	char c;
	while (read(pipefd[0], &c, 1) != 0)
		;
	pause();
}

static void *named(void *arg)
{
	long i = (long)arg;
	tids[i] = patient_gettid();
	wait_forever();
	return NULL;
}

int main(void)
{
	if (pipe(pipefd) != 0)
		patient_die("pipe");
	tids[NTHREADS] = patient_gettid();
	for (long i = 0; i < NTHREADS; i++) {
		pthread_t th;
		errno = pthread_create(&th, NULL, named, (void *)i);
		if (errno != 0)
			patient_die("pthread_create");
		errno = pthread_setname_np(th, names[i]);
		if (errno != 0)
			patient_die("pthread_setname_np");
	}
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < NTHREADS; i++)
		while (tids[i] == 0)
			nanosleep(&ms, NULL);
	patient_wait_blocked((pid_t *)tids, NULL, NTHREADS);
	patient_ready();
	wait_forever();
	return 0;
}
