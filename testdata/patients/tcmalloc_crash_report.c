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
#include "patient.h"

#include <gperftools/malloc_hook_c.h>
#include <pthread.h>
#include <stdatomic.h>

#define BIG (64 << 20) /* more than the page heap has: it must grow */

static _Atomic pid_t grower_tid;
static _Atomic int armed;
static _Atomic int in_report;
static void *volatile keep;

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
	sa.sa_handler = on_fatal;
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
	while ((tid = grower_tid) == 0 || in_report != 1)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("grower=%d\n", (int)tid);
	patient_ready();
	pthread_join(g, NULL); /* for ever */
	return 0;
}
