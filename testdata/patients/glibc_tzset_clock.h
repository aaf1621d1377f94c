/*
 * glibc_tzset_clock.h: what the tzset patients share. TZ names a FIFO
 * that nobody writes; thread "clock" calls localtime, which takes glibc's
 * tzset_lock and, reading the zone, blocks in open() of the FIFO with the
 * lock held. clock_start starts it and returns its tid once it sleeps in
 * openat (the FIFO's name is removed then); the patient's main goes on.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>

static _Atomic pid_t clock_tid;
static volatile int sink;

static PATIENT_NOINLINE void *clock_main(void *arg)
{
	clock_tid = patient_gettid();
	time_t now = time(NULL);
	struct tm *tm = localtime(&now); /* blocks in open() of the FIFO, tzset_lock held */
	sink += tm ? tm->tm_hour : 0;
	return arg;
}

static pid_t clock_start(pthread_t *c)
{
	char dir[] = "/tmp/hangdoc-tzfifo-XXXXXX";
	if (mkdtemp(dir) == NULL)
		patient_die("mkdtemp");
	char fifo[64], tz[80];
	snprintf(fifo, sizeof fifo, "%s/zone", dir);
	if (mkfifo(fifo, 0600) != 0)
		patient_die("mkfifo");
	snprintf(tz, sizeof tz, ":%s", fifo);
	setenv("TZ", tz, 1);

	if ((errno = pthread_create(c, NULL, clock_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(*c, "clock");
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = clock_tid) == 0)
		nanosleep(&ms, NULL);
	/* open(2) of a FIFO with no writer sleeps in openat. */
	while (!patient_blocked_in(tid, 257 /* openat */))
		nanosleep(&ms, NULL);
	/* The FIFO's name is no longer needed: the clock thread is in open. */
	unlink(fifo);
	rmdir(dir);
	return tid;
}
