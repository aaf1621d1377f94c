/*
 * glibc_tzset_sighandler: localtime() in a signal handler that
 * interrupted localtime() on the same thread, which held glibc's
 * tzset_lock (a plain low-level lock: not recursive, no owner recorded;
 * localtime is not async-signal-safe).
 *
 * Thread "clock" calls localtime() with TZ naming a FIFO (a time zone
 * file on a slow or hung network mount behaves alike): glibc takes
 * tzset_lock and blocks in open() inside tzfile_read. main sends it
 * SIGALRM; the handler (a logger's time stamp, say) calls localtime()
 * and waits for tzset_lock, which its own thread holds, for ever.
 *
 * Prints "clock=<tid>" before "ready".
 *
 * Expected stack (innermost first): futex wait ← __lll_lock_wait_private
 * ← __tz_convert ← localtime ← log_stamp ← on_sigalrm ←
 * <signal handler called> ← open ← … __tzfile_read ← tzset_internal ←
 * __tz_convert ← localtime ← clock_main ← start_thread.
 * Expected verdict: signal-handler-reentry naming the clock thread.
 */
#include "glibc_tzset_clock.h"

static _Atomic int in_handler;

static PATIENT_NOINLINE int log_stamp(void)
{
	time_t now = time(NULL);
	struct tm *tm = localtime(&now); /* for ever: this thread holds tzset_lock */
	return tm ? tm->tm_min : -1;
}

static PATIENT_NOINLINE void on_sigalrm(int sig)
{
	in_handler = 1;
	sink += log_stamp() + sig;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigalrm;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGALRM, &sa, NULL) != 0)
		patient_die("sigaction");

	pthread_t c;
	pid_t tid = clock_start(&c);
	struct timespec ms = {0, 1000000};
	pthread_kill(c, SIGALRM);
	while (!in_handler)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("clock=%d\n", (int)tid);
	patient_ready();
	pthread_join(c, NULL); /* for ever */
	return 0;
}
