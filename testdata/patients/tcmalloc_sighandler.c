/*
 * tcmalloc_sighandler: a signal handler that calls malloc while the
 * thread it interrupted is inside tcmalloc (gperftools, Debian's
 * libgoogle-perftools-dev) holding the page heap's SpinLock: the handler
 * waits for a lock its own thread holds.
 *
 * Thread "grower" asks for a large block. tcmalloc takes pageheap_lock
 * and grows the heap with sbrk or mmap (its own overrides, which run the
 * MallocHook sbrk/mmap hooks). The patient's hook raises SIGUSR1 on the
 * thread there, as an asynchronous signal would land at any moment; the
 * handler (a logger's, say) allocates a large block too, so it needs the
 * page heap: SpinLock::SlowLock waits for pageheap_lock in SpinLockDelay
 * (a futex wait with a timeout, again and again).
 *
 * Prints "grower=<tid>" before "ready".
 *
 * Expected stack (innermost first): syscall (futex) ← SpinLockDelay ←
 * SpinLock::SlowLock ← … tcmalloc large allocation ← malloc ←
 * on_sigusr1 ← <signal handler called> ← raise/pthread_kill ← grow_hook ←
 * MallocHook … ← sbrk/mmap ← TCMalloc_SystemAlloc ← PageHeap::GrowHeap ←
 * … ← malloc ← grower_main ← start_thread.
 * Expected verdict: signal-handler-reentry naming the grower.
 */
#include "patient.h"

#include <gperftools/malloc_hook_c.h>
#include <pthread.h>
#include <stdatomic.h>

#define BIG (64 << 20) /* more than the page heap has: it must grow */

static _Atomic pid_t grower_tid;
static _Atomic int armed;
static _Atomic int in_handler;
static void *volatile keep;

static PATIENT_NOINLINE void on_sigusr1(int sig)
{
	in_handler = 1;
	keep = malloc(BIG + sig); /* for ever: pageheap_lock is held below */
	in_handler = 2;
}

/* Runs inside tcmalloc's sbrk/mmap, with pageheap_lock held. */
static PATIENT_NOINLINE void grow_hook(void)
{
	if (atomic_exchange(&armed, 0))
		raise(SIGUSR1);
}

static void on_mmap(const void *result, const void *start, size_t size, int prot, int flags, int fd, off_t offset)
{
	(void)result, (void)start, (void)size, (void)prot, (void)flags, (void)fd, (void)offset;
	grow_hook();
}

static void on_sbrk(const void *result, ptrdiff_t increment)
{
	(void)result;
	if (increment > 0)
		grow_hook();
}

static PATIENT_NOINLINE void *grower_main(void *arg)
{
	grower_tid = patient_gettid();
	armed = 1;
	keep = malloc(BIG * 2 + (size_t)arg);
	return NULL;
}

int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigusr1;
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		patient_die("sigaction");
	if (!MallocHook_AddMmapHook(on_mmap) || !MallocHook_AddSbrkHook(on_sbrk))
		patient_die("MallocHook_Add*Hook");

	pthread_t g;
	if ((errno = pthread_create(&g, NULL, grower_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(g, "grower");
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = grower_tid) == 0 || in_handler != 1)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("grower=%d\n", (int)tid);
	patient_ready();
	pthread_join(g, NULL); /* for ever */
	return 0;
}
