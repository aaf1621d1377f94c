/*
 * glibc_tzset_fork: a glibc-internal lock copied locked into a forked
 * child. glibc's fork() resets malloc's, stdio's and the loader's locks
 * in the child, but not tzset_lock, the lock localtime() and mktime()
 * take while they (re)read the time zone file.
 *
 * Thread "clock" calls localtime() with TZ naming a FIFO (a time zone
 * file on a slow or hung network mount behaves alike): glibc takes
 * tzset_lock and blocks in open() inside tzfile_read. main then forks;
 * the child logs a time stamp with localtime() and waits for tzset_lock
 * for ever (no thread in it will ever release it). The parent waits for
 * the child in waitpid.
 *
 * Prints "owner=<tid of clock>" and "child=<pid>" before "ready", once
 * the child sleeps in the futex wait.
 *
 * Expected stacks (innermost first):
 *   child:        futex wait ← __lll_lock_wait_private ← __tz_convert ←
 *                 localtime ← log_stamp ← main
 *   parent clock: open ← __fopen_internal … ← __tzfile_read ←
 *                 tzset_internal ← __tz_convert ← localtime ← clock_main
 *   parent main:  wait4 ← waitpid ← main
 * Expected verdict: fork-inherited-lock naming the child's thread.
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

static PATIENT_NOINLINE int log_stamp(void)
{
	time_t now = time(NULL);
	struct tm *tm = localtime(&now); /* for ever: tzset_lock is held by no thread here */
	return tm ? tm->tm_min : -1;
}

int main(void)
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

	pthread_t c;
	if ((errno = pthread_create(&c, NULL, clock_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(c, "clock");
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

	pid_t parent = getpid();
	pid_t child = fork();
	if (child < 0)
		patient_die("fork");
	if (child == 0) {
		patient_die_with_parent(parent);
		sink += log_stamp();
		_exit(0);
	}
	patient_wait_child_blocked(child, PATIENT_SYS_FUTEX);
	patient_sayf("owner=%d\n", (int)tid);
	patient_sayf("child=%d\n", (int)child);
	patient_ready();
	int status;
	waitpid(child, &status, 0); /* for ever */
	return 0;
}
