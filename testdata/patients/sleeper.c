/*
 * sleeper: a control that does not hang. Two threads, main and "napper",
 * only sleep: nanosleep of one second, in a loop, for ever. A tool that
 * reports a deadlock here is wrong; the right verdict is "sleeping".
 *
 * With the argument "main-exits", main calls pthread_exit after "ready":
 * the process lives on in napper while its main thread is a zombie.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

static _Atomic pid_t napper_tid;
static volatile int sink;

static PATIENT_NOINLINE void nap_forever(void)
{
	struct timespec sec = {1, 0};
	for (;;)
		sink += nanosleep(&sec, NULL);
}

static void *napper(void *arg)
{
	(void)arg;
	napper_tid = patient_gettid();
	nap_forever();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	errno = pthread_create(&th, NULL, napper, NULL);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(th, "napper");
	pid_t tid;
	struct timespec ms = {0, 1000000};
	while ((tid = napper_tid) == 0)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_CLOCK_NANOSLEEP;
	patient_wait_blocked(&tid, &nr, 1);
	patient_ready();
	if (argc > 1 && strcmp(argv[1], "main-exits") == 0)
		pthread_exit(NULL);
	nap_forever();
	return 0;
}
