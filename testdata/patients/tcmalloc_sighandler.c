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
#include "tcmalloc_grower_signal.h"

static _Atomic int in_handler;

static PATIENT_NOINLINE void on_sigusr1(int sig)
{
	in_handler = 1;
	keep = malloc(BIG + sig); /* for ever: pageheap_lock is held below */
	in_handler = 2;
}

int main(void)
{
	grower_signal_run(on_sigusr1, &in_handler);
	return 0;
}
