/*
 * lock_across_read: a mutex held across a blocking read. Thread
 * "fetcher" locks cache_lock and waits in recv() on a unix socket whose
 * peer (kept open by main) never writes; thread "reader" waits for
 * cache_lock. Not a lock cycle: the process waits for the socket's other
 * end, and the lock keeps a second thread waiting with it. The verdict is
 * io-wait naming the fetcher's recv, with the reader queued on the lock
 * its holder keeps across the call.
 *
 * Prints "fetcher=<tid>" and "reader=<tid>" before "ready", once both
 * sleep in their calls.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/socket.h>

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static int sv[2];
static _Atomic pid_t fetcher_tid, reader_tid;
static _Atomic int locked;
static volatile int sink;

static PATIENT_NOINLINE void fetch_under_lock(void)
{
	char buf[64];
	pthread_mutex_lock(&cache_lock);
	locked = 1;
	sink += (int)recv(sv[0], buf, sizeof buf, 0); /* for ever: the peer never writes */
	pthread_mutex_unlock(&cache_lock);
}

static void *fetcher_main(void *arg)
{
	(void)arg;
	fetcher_tid = patient_gettid();
	fetch_under_lock();
	return NULL;
}

static PATIENT_NOINLINE void read_cache(void)
{
	pthread_mutex_lock(&cache_lock); /* for ever: the fetcher holds it */
	sink++;
	pthread_mutex_unlock(&cache_lock);
}

static void *reader_main(void *arg)
{
	(void)arg;
	reader_tid = patient_gettid();
	read_cache();
	return NULL;
}

int main(void)
{
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
		patient_die("socketpair");
	pthread_t f, r;
	if ((errno = pthread_create(&f, NULL, fetcher_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(f, "fetcher");
	struct timespec ms = {0, 1000000};
	while (!locked)
		nanosleep(&ms, NULL);
	if ((errno = pthread_create(&r, NULL, reader_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(r, "reader");
	pid_t tids[2];
	while ((tids[0] = fetcher_tid) == 0 || (tids[1] = reader_tid) == 0)
		nanosleep(&ms, NULL);
	int nrs[2] = {PATIENT_SYS_RECVFROM, PATIENT_SYS_FUTEX};
	patient_wait_blocked(tids, nrs, 2);
	patient_sayf("fetcher=%d\n", (int)tids[0]);
	patient_sayf("reader=%d\n", (int)tids[1]);
	patient_ready();
	pthread_join(r, NULL); /* for ever */
	return sink;
}
