/*
 * tcmalloc_crash_report: a crash reporter that allocates in its signal
 * handler while the signal interrupted tcmalloc (gperftools, Debian's
 * libgoogle-perftools-dev) holding the page heap's SpinLock: the report
 * never gets written, the thread waits for a lock it holds.
 *
 * Thread "grower" asks for a block larger than the page heap has;
 * tcmalloc takes pageheap_lock and grows the heap; the patient's
 * mmap/sbrk hook raises SIGUSR1 there once, as a fatal signal lands at
 * any moment. The handler, on_fatal, writes a crash report:
 * print_stacktrace formats the thread's stack into a buffer it
 * allocates, which needs the page heap. main joins the grower.
 *
 * Prints "grower=<tid>" before "ready".
 *
 * Expected stack (innermost first): syscall (futex) ← SpinLockDelay ←
 * SpinLock::SlowLock ← … tcmalloc large allocation ← malloc ←
 * print_stacktrace ← on_fatal ← <signal handler called> ← raise ←
 * grow_hook ← MallocHook … ← TCMalloc_SystemAlloc ← PageHeap::GrowHeap
 * ← … ← malloc ← grower_main ← start_thread.
 * Expected verdict: signal-handler-reentry naming the grower, also when
 * the paste is cut below print_stacktrace (the handler's name lost).
 */
#include "tcmalloc_grower_signal.h"

static _Atomic int in_report;

/* A crash reporter's stack formatting: its buffer comes from malloc. */
static PATIENT_NOINLINE void print_stacktrace(int sig)
{
	in_report = 1;
	char *buf = malloc(BIG + (size_t)sig); /* for ever: pageheap_lock is held below */
	keep = buf;
	in_report = 2;
}

static PATIENT_NOINLINE void on_fatal(int sig)
{
	print_stacktrace(sig);
	in_report = 3; /* after the call: no tail call, on_fatal keeps its frame */
}

int main(void)
{
	grower_signal_run(on_fatal, &in_report);
	return 0;
}
