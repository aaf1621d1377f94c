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
 * record_mapping ← grow_hook ← on_mmap/on_sbrk ← MallocHook … ← mmap/sbrk ←
 * TCMalloc_SystemAlloc ← PageHeap::GrowHeap ← … ← malloc ← grower_main
 * ← start_thread.
 * Expected verdict: self-deadlock naming the grower (the allocator on
 * its stack twice, the hook between).
 */
#include "tcmalloc_grower.h"

static _Atomic int in_hook;

static PATIENT_NOINLINE void record_mapping(size_t size)
{
	in_hook = 1;
	keep = malloc(BIG + size % 4096); /* for ever: pageheap_lock is held below */
	in_hook = 2;
}

static PATIENT_NOINLINE void grow_hook(size_t size)
{
	record_mapping(size);
	in_hook = 3; /* after the call: no tail call, grow_hook keeps its frame */
}

int main(void)
{
	grower_run(&in_hook);
	return 0;
}
