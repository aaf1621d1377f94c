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
