/*
 * tcmalloc_hook_reentry: an allocator re-entered from its own hook, no
 * signal involved. gperftools' tcmalloc (Debian's
 * libgoogle-perftools-dev) runs its MallocHook mmap and sbrk hooks from
 * inside its system allocator, with the page heap's SpinLock held; a
 * hook that allocates (a tracer recording the mapping, say) asks the
 * page heap again and waits for the SpinLock its own thread holds.
 *
 * Thread "grower" asks for a block larger than the page heap has;
 * tcmalloc takes pageheap_lock and grows the heap with mmap or sbrk; the
 * patient's hook allocates a large block itself, which needs the page
 * heap: SpinLock::SlowLock waits for pageheap_lock in SpinLockDelay (a
 * futex wait with a timeout, again and again). main joins the grower.
 *
 * Prints "grower=<tid>" before "ready".
 *
 * Expected stack (innermost first): syscall (futex) ← SpinLockDelay ←
 * SpinLock::SlowLock ← … tcmalloc large allocation ← malloc ←
 * record_mapping ← on_mmap/on_sbrk ← MallocHook … ← mmap/sbrk ←
 * TCMalloc_SystemAlloc ← PageHeap::GrowHeap ← … ← malloc ← grower_main
 * ← start_thread.
 * Expected verdict: self-deadlock naming the grower (the allocator on
 * its stack twice, the hook between).
 */
#include "patient.h"

#include <gperftools/malloc_hook_c.h>
#include <pthread.h>
#include <stdatomic.h>

#define BIG (64 << 20) /* more than the page heap has: it must grow */

static _Atomic pid_t grower_tid;
static _Atomic int armed;
static _Atomic int in_hook;
static void *volatile keep;

/* Runs inside tcmalloc's mmap/sbrk, with pageheap_lock held. */
static PATIENT_NOINLINE void record_mapping(size_t size)
{
	if (!atomic_exchange(&armed, 0))
		return;
	in_hook = 1;
	keep = malloc(BIG + size % 4096); /* for ever: pageheap_lock is held below */
	in_hook = 2;
}

static void on_mmap(const void *result, const void *start, size_t size, int prot, int flags, int fd, off_t offset)
{
	(void)result, (void)start, (void)prot, (void)flags, (void)fd, (void)offset;
	record_mapping(size);
}

static void on_sbrk(const void *result, ptrdiff_t increment)
{
	(void)result;
	if (increment > 0)
		record_mapping((size_t)increment);
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
	if (!MallocHook_AddMmapHook(on_mmap) || !MallocHook_AddSbrkHook(on_sbrk))
		patient_die("MallocHook_Add*Hook");

	pthread_t g;
	if ((errno = pthread_create(&g, NULL, grower_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(g, "grower");
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = grower_tid) == 0 || in_hook != 1)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("grower=%d\n", (int)tid);
	patient_ready();
	pthread_join(g, NULL); /* for ever */
	return 0;
}
