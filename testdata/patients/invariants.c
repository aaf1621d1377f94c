/*
 * invariants: a busy patient that checks its own invariants, so a test can
 * tell whether attaching to it (ptrace stops, detaches) disturbed it.
 *
 *   workers (4)  increment per-worker counters under one mutex and verify
 *                that the total and a weighted checksum still agree; every
 *                200 increments they nanosleep 500 µs (an EINTR there is
 *                a violation).
 *   pipe writer/reader  pass 64-byte records with sequence numbers over a
 *                blocking pipe (the writer naps 100 µs every 8 records):
 *                a short count, a lost or reordered record or an EINTR is
 *                a violation.
 *   timer        sleeps to absolute 1 ms deadlines with clock_nanosleep;
 *                an EINTR or a wake-up later than the bound (argv[1] in ms,
 *                default 2000) is a violation.
 *   signals      the only thread with SIGUSR1 and SIGUSR2 unblocked; their
 *                handlers are installed without SA_RESTART. SIGUSR2 is
 *                counted; SIGUSR1 prints one line and the patient goes on:
 *                  ok counters=<n> records=<n> ticks=<n> usr2=<n> maxlate_ns=<n> dlopen=ok eintr=0 short=0
 *                Before answering, the signals thread (never the signal
 *                handler) dlopens libm.so.6, looks up cos and calls it, so
 *                the line also proves the dynamic loader still works
 *                (dlopen=<what failed> otherwise).
 *                  FAIL <first violation> (violations=<n>)
 *
 * Every thread but "signals" blocks SIGUSR1/SIGUSR2, so no EINTR is
 * expected anywhere else: glibc retries nothing for read, write,
 * nanosleep or clock_nanosleep, so an EINTR the program sees can only come
 * from a tracer that let a syscall fail instead of restarting it.
 */
#include "patient.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#define NWORKERS 4
#define RECORD 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t counts[NWORKERS], total, checksum; /* under mu */

static atomic_ullong violations, eintrs, shorts, records, ticks, maxlate_ns;
static pthread_mutex_t first_mu = PTHREAD_MUTEX_INITIALIZER;
static char first[160]; /* under first_mu: the first violation */

static volatile sig_atomic_t usr2_seen, report_wanted;
static int pipefd[2];
static int64_t late_bound_ns = 2000LL * 1000000;

static void violation(const char *fmt, long long a, long long b)
{
	if (atomic_fetch_add(&violations, 1) == 0) {
		pthread_mutex_lock(&first_mu);
		snprintf(first, sizeof first, fmt, a, b);
		pthread_mutex_unlock(&first_mu);
	}
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *worker(void *arg)
{
	long me = (long)arg;
	struct timespec nap = {0, 500000};
	for (;;) {
		for (int i = 0; i < 200; i++) {
			pthread_mutex_lock(&mu);
			uint64_t sum = 0, ck = 0;
			for (int w = 0; w < NWORKERS; w++) {
				sum += counts[w];
				ck += counts[w] * (uint64_t)(w + 1);
			}
			if (sum != total || ck != checksum)
				violation("counters: sum %lld != total %lld", (long long)sum, (long long)total);
			counts[me]++;
			total++;
			checksum += (uint64_t)(me + 1);
			pthread_mutex_unlock(&mu);
		}
		if (nanosleep(&nap, NULL) != 0) {
			if (errno == EINTR) {
				atomic_fetch_add(&eintrs, 1);
				violation("worker %lld: nanosleep EINTR (errno %lld)", me, errno);
			} else {
				violation("worker %lld: nanosleep errno %lld", me, errno);
			}
		}
	}
	return NULL;
}

static void *pipe_writer(void *arg)
{
	(void)arg;
	unsigned char rec[RECORD];
	struct timespec nap = {0, 100000};
	for (uint64_t seq = 0;; seq++) {
		memset(rec, (int)(seq & 0xff), sizeof rec);
		memcpy(rec, &seq, sizeof seq);
		if (seq % 8 == 7 && nanosleep(&nap, NULL) != 0) {
			atomic_fetch_add(&eintrs, 1);
			violation("pipe writer: nanosleep errno %lld%.0lld", errno, 0);
		}
		ssize_t n = write(pipefd[1], rec, sizeof rec);
		if (n == RECORD)
			continue;
		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintrs, 1);
			violation("pipe write: EINTR at record %lld%.0lld", (long long)seq, 0);
		} else if (n < 0) {
			violation("pipe write: errno %lld at record %lld", errno, (long long)seq);
			return NULL;
		} else {
			atomic_fetch_add(&shorts, 1);
			violation("pipe write: short count %lld at record %lld", (long long)n, (long long)seq);
			return NULL; /* the stream is out of step now */
		}
	}
	return NULL;
}

static void *pipe_reader(void *arg)
{
	(void)arg;
	unsigned char rec[RECORD];
	for (uint64_t want = 0;;) {
		ssize_t n = read(pipefd[0], rec, sizeof rec);
		if (n < 0 && errno == EINTR) {
			atomic_fetch_add(&eintrs, 1);
			violation("pipe read: EINTR at record %lld%.0lld", (long long)want, 0);
			continue;
		}
		if (n != RECORD) {
			atomic_fetch_add(&shorts, 1);
			violation("pipe read: got %lld bytes at record %lld", (long long)n, (long long)want);
			return NULL;
		}
		uint64_t seq;
		memcpy(&seq, rec, sizeof seq);
		if (seq != want || rec[RECORD - 1] != (unsigned char)(seq & 0xff)) {
			violation("pipe read: record %lld where %lld was due", (long long)seq, (long long)want);
			return NULL;
		}
		want++;
		atomic_fetch_add(&records, 1);
	}
	return NULL;
}

static void *timer(void *arg)
{
	(void)arg;
	const int64_t period = 1000000;
	int64_t next = now_ns() + period;
	for (;;) {
		struct timespec ts = {(time_t)(next / 1000000000), (long)(next % 1000000000)};
		int err = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		int64_t t = now_ns();
		if (err == EINTR) {
			atomic_fetch_add(&eintrs, 1);
			violation("timer: clock_nanosleep EINTR%.0lld%.0lld", 0, 0);
			continue;
		}
		if (err != 0) {
			violation("timer: clock_nanosleep error %lld%.0lld", err, 0);
			continue;
		}
		if (t < next)
			violation("timer: woke %lld ns early%.0lld", (long long)(next - t), 0);
		int64_t late = t - next;
		unsigned long long old = atomic_load(&maxlate_ns);
		while ((unsigned long long)late > old &&
		       !atomic_compare_exchange_weak(&maxlate_ns, &old, (unsigned long long)late))
			;
		if (late > late_bound_ns)
			violation("timer: woke %lld ns late (bound %lld ns)", (long long)late, (long long)late_bound_ns);
		atomic_fetch_add(&ticks, 1);
		next += period;
		if (next < t) /* fell behind: no burst of catch-up wake-ups */
			next = t + period;
	}
	return NULL;
}

static void on_usr2(int sig)
{
	(void)sig;
	usr2_seen++;
}

static void on_usr1(int sig)
{
	(void)sig;
	report_wanted = 1;
}

/* try_dlopen loads libm afresh, calls cos through dlsym and unloads it:
 * "ok", or what failed. Called from the signals thread, never from a
 * signal handler (dlopen is not async-signal-safe). */
static const char *try_dlopen(void)
{
	static char why[96];
	void *h = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
	if (h == NULL)
		return "open-failed";
	double (*cosp)(double) = (double (*)(double))dlsym(h, "cos");
	const char *res = "ok";
	if (cosp == NULL) {
		res = "dlsym-failed";
	} else {
		volatile double zero = 0.0;
		double c = cosp(zero);
		if (c != 1.0) {
			snprintf(why, sizeof why, "cos0=%g", c);
			res = why;
		}
	}
	if (dlclose(h) != 0 && res[0] == 'o')
		res = "dlclose-failed";
	return res;
}

static void report(void)
{
	char line[288];
	unsigned long long total_now;
	const char *dl = try_dlopen();
	pthread_mutex_lock(&mu);
	total_now = total;
	pthread_mutex_unlock(&mu);
	if (atomic_load(&violations) == 0) {
		snprintf(line, sizeof line,
			 "ok counters=%llu records=%llu ticks=%llu usr2=%d maxlate_ns=%llu dlopen=%s eintr=%llu short=%llu\n",
			 total_now, atomic_load(&records), atomic_load(&ticks), (int)usr2_seen,
			 atomic_load(&maxlate_ns), dl, atomic_load(&eintrs), atomic_load(&shorts));
	} else {
		pthread_mutex_lock(&first_mu);
		snprintf(line, sizeof line, "FAIL %s (violations=%llu)\n", first, atomic_load(&violations));
		pthread_mutex_unlock(&first_mu);
	}
	patient_say(line);
}

static void *signals(void *arg)
{
	(void)arg;
	sigset_t open_mask;
	pthread_sigmask(SIG_BLOCK, NULL, &open_mask);
	sigdelset(&open_mask, SIGUSR1);
	sigdelset(&open_mask, SIGUSR2);
	for (;;) {
		sigsuspend(&open_mask); /* always -1/EINTR: that is its job */
		if (report_wanted) {
			report_wanted = 0;
			report();
		}
	}
	return NULL;
}

static void start(pthread_t *th, void *(*fn)(void *), void *arg, const char *name)
{
	errno = pthread_create(th, NULL, fn, arg);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(*th, name);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		late_bound_ns = strtoll(argv[1], NULL, 10) * 1000000;
	if (pipe(pipefd) != 0)
		patient_die("pipe");

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0; /* no SA_RESTART: an interrupted syscall would show */
	sa.sa_handler = on_usr2;
	if (sigaction(SIGUSR2, &sa, NULL) != 0)
		patient_die("sigaction SIGUSR2");
	sa.sa_handler = on_usr1;
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		patient_die("sigaction SIGUSR1");
	sigset_t both;
	sigemptyset(&both);
	sigaddset(&both, SIGUSR1);
	sigaddset(&both, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &both, NULL); /* inherited by every thread */

	pthread_t th[NWORKERS], wr, rd, tm, sg;
	for (long i = 0; i < NWORKERS; i++)
		start(&th[i], worker, (void *)i, "worker");
	start(&wr, pipe_writer, NULL, "pipe-writer");
	start(&rd, pipe_reader, NULL, "pipe-reader");
	start(&tm, timer, NULL, "timer");
	start(&sg, signals, NULL, "signals");
	patient_ready();
	pthread_join(sg, NULL); /* forever */
	return 0;
}
