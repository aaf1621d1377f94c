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
 *   parent main:  wait4 ← waitpid ← patient_hang_on_child ← main
 * Expected verdict: fork-inherited-lock naming the child's thread.
 */
#include "glibc_tzset_clock.h"

static PATIENT_NOINLINE int log_stamp(void)
{
	time_t now = time(NULL);
	struct tm *tm = localtime(&now); /* for ever: tzset_lock is held by no thread here */
	return tm ? tm->tm_min : -1;
}

int main(void)
{
	pthread_t c;
	pid_t tid = clock_start(&c);

	pid_t child = patient_fork();
	if (child == 0) {
		sink += log_stamp();
		_exit(0);
	}
	patient_sayf("owner=%d\n", (int)tid);
	patient_hang_on_child(child, PATIENT_SYS_FUTEX);
	return 0;
}
