/*
 * tcmalloc_grower.h: the thread the tcmalloc patients share. Thread
 * "grower" asks for a block larger than gperftools' page heap has;
 * tcmalloc takes pageheap_lock and grows the heap with mmap or sbrk, and
 * runs its MallocHook mmap/sbrk hooks there, with the lock held. The
 * first hook call (armed once) calls the patient's grow_hook(size), which
 * re-enters the allocator one way or another. main runs grower_run: it
 * waits until the patient's stage is 1 (set where it is about to block)
 * and the grower sleeps in a futex, prints "grower=<tid>" and "ready",
 * and joins the grower for ever.
 */
#include "patient.h"

#include <gperftools/malloc_hook_c.h>
#include <pthread.h>
#include <stdatomic.h>

#define BIG (64 << 20) /* more than the page heap has: it must grow */

static _Atomic pid_t grower_tid;
static _Atomic int armed;
static void *volatile keep;

/* The patient's: runs inside tcmalloc's mmap/sbrk, pageheap_lock held. */
static void grow_hook(size_t size);

static void on_mmap(const void *result, const void *start, size_t size, int prot, int flags, int fd, off_t offset)
{
	(void)result, (void)start, (void)prot, (void)flags, (void)fd, (void)offset;
	if (atomic_exchange(&armed, 0))
		grow_hook(size);
}

static void on_sbrk(const void *result, ptrdiff_t increment)
{
	(void)result;
	if (increment > 0 && atomic_exchange(&armed, 0))
		grow_hook((size_t)increment);
}

static PATIENT_NOINLINE void *grower_main(void *arg)
{
	grower_tid = patient_gettid();
	armed = 1;
	keep = malloc(BIG * 2 + (size_t)arg);
	return NULL;
}

static void grower_run(_Atomic int *stage)
{
	if (!MallocHook_AddMmapHook(on_mmap) || !MallocHook_AddSbrkHook(on_sbrk))
		patient_die("MallocHook_Add*Hook");
	pthread_t g;
	if ((errno = pthread_create(&g, NULL, grower_main, NULL)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(g, "grower");
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = grower_tid) == 0 || *stage != 1)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("grower=%d\n", (int)tid);
	patient_ready();
	pthread_join(g, NULL); /* for ever */
}
