/*
 * vfork_stuck: a thread that cannot reach a ptrace stop in time. Thread
 * "vforker" calls vfork(); until the child exits the kernel holds it in
 * a killable wait that PTRACE_INTERRUPT does not break. The child sleeps
 * for argv[1] milliseconds (default 2000) and exits; the vforker then
 * says "vfork done" and blocks in pause() for ever.
 *
 * It prints "vforker=<tid>" and "ready" while the child sleeps: a test
 * asks hangdoc to stop the vforker, sees the stop time out, and checks
 * the thread is released and goes on when the child exits.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

static long sleep_ms = 2000;
static _Atomic pid_t vforker_tid;

static void *vforker(void *arg)
{
	(void)arg;
	vforker_tid = patient_gettid();
	pid_t pid = vfork();
	if (pid == 0) {
		struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000};
		syscall(SYS_nanosleep, &ts, NULL);
		_exit(0);
	}
	if (pid < 0)
		patient_die("vfork");
	patient_say("vfork done\n");
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		sleep_ms = atol(argv[1]);
	pthread_t th;
	errno = pthread_create(&th, NULL, vforker, NULL);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(th, "vforker");
	while (vforker_tid == 0)
		usleep(1000);
	usleep(100000); /* the vfork is under way */
	patient_sayf("vforker=%d\n", (int)vforker_tid);
	patient_ready();
	for (;;)
		pause();
}
