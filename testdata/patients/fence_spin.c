/*
 * fence_spin: the MLX Fence::wait hang (ml-explore/mlx#3142, #3830, under
 * MLX_METAL_FAST_SYNCH=1). A Fence is a counter that a producer bumps once
 * per piece of work it finishes; a waiter that needs the work up to N+1
 * spins (no sleep, only the pause instruction) until the counter reaches
 * N+1. The producer updates it N times and then waits on a condition
 * variable for more work that never comes. The waiter burns one core for
 * ever; nobody is running that could satisfy it.
 *
 * Threads: main (pthread_join on the waiter), "fence-waiter" (100% CPU in
 * fence_wait), "fence-producer" (pthread_cond_wait in producer_idle).
 * Prints "waiter=<tid>" and "producer=<tid>" before "ready", which comes
 * once the producer sleeps in its futex and the waiter is in its loop.
 *
 * Expected stacks (innermost first):
 *   fence-waiter:   fence_wait ← fence_waiter_main ← start_thread
 *                   (the same in every sample; CPU grows)
 *   fence-producer: futex wait ← pthread_cond_wait ← producer_idle ←
 *                   fence_producer_main ← start_thread
 * Expected verdict: spin-wait-starved naming fence-waiter.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

#define FENCE_UPDATES 5 /* N: what the producer does */

struct Fence {
	_Atomic unsigned long count;
};

static struct Fence fence;
static _Atomic pid_t waiter_tid, producer_tid;
static _Atomic int waiter_spinning;
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_cond = PTHREAD_COND_INITIALIZER;
static int more_work;
static volatile int sink;

static PATIENT_NOINLINE void fence_update(struct Fence *f)
{
	atomic_fetch_add_explicit(&f->count, 1, memory_order_release);
}

/* fence_wait spins until the fence reaches value: no syscall, no sleep. */
static PATIENT_NOINLINE void fence_wait(struct Fence *f, unsigned long value)
{
	waiter_spinning = 1;
	while (atomic_load_explicit(&f->count, memory_order_acquire) < value)
		__builtin_ia32_pause();
}

static PATIENT_NOINLINE void producer_idle(void)
{
	pthread_mutex_lock(&work_lock);
	while (!more_work) /* nobody sets it */
		pthread_cond_wait(&work_cond, &work_lock);
	pthread_mutex_unlock(&work_lock);
}

static PATIENT_NOINLINE void *fence_producer_main(void *arg)
{
	(void)arg;
	producer_tid = patient_gettid();
	for (int i = 0; i < FENCE_UPDATES; i++)
		fence_update(&fence);
	producer_idle();
	return NULL;
}

static PATIENT_NOINLINE void *fence_waiter_main(void *arg)
{
	(void)arg;
	waiter_tid = patient_gettid();
	fence_wait(&fence, FENCE_UPDATES + 1); /* one more than will come */
	sink++;
	return NULL;
}

int main(void)
{
	pthread_t waiter, producer;
	errno = pthread_create(&waiter, NULL, fence_waiter_main, NULL);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(waiter, "fence-waiter");
	errno = pthread_create(&producer, NULL, fence_producer_main, NULL);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(producer, "fence-producer");

	struct timespec ms = {0, 1000000};
	pid_t wt, pt;
	while ((wt = waiter_tid) == 0 || (pt = producer_tid) == 0 || !waiter_spinning)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&pt, &nr, 1);
	while (atomic_load(&fence.count) != FENCE_UPDATES)
		nanosleep(&ms, NULL);
	patient_sayf("waiter=%d\n", (int)wt);
	patient_sayf("producer=%d\n", (int)pt);
	patient_ready();
	pthread_join(waiter, NULL); /* for ever */
	return 0;
}
