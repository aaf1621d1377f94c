/*
 * fakeaccel: a fake accelerator driver, built as the shared library
 * libfakeaccel.so (gcc -shared -fPIC -o libfakeaccel.so fakeaccel.c) and
 * linked into the fork patients (devicepool_fork.cpp, cuda_fork.c).
 *
 * It behaves like the user-space half of a real driver (libcuda, the
 * tt-metal UMD, …) in the one way that matters across fork():
 * fakeaccel_init() starts a driver thread, "fakeaccel-drv", that takes the
 * driver's context lock fakeaccel_ctx_lock and keeps it for ever while it
 * services the device (it sleeps in fakeaccel_service_queue, a second at a
 * time, holding the lock). A process that forks after fakeaccel_init()
 * gives its child a copy of that lock, locked, with the driver thread's
 * TID as its owner, and no driver thread: the child's first
 * fakeaccel_launch() blocks for ever.
 *
 * Driver thread's stack (innermost first):
 *   clock_nanosleep ← nanosleep ← fakeaccel_service_queue ←
 *   fakeaccel_driver_main ← start_thread
 * A forked child in the driver:
 *   futex wait ← __lll_lock_wait ← pthread_mutex_lock ← fakeaccel_submit ←
 *   fakeaccel_launch ← (the caller)
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

#define FAKEACCEL_API __attribute__((visibility("default")))

/* The driver's context lock, exported so that its symbol names it. */
FAKEACCEL_API pthread_mutex_t fakeaccel_ctx_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_t driver;
static _Atomic pid_t driver_tid;
static _Atomic int driver_holds_lock;
static int initialised;
static volatile int sink;

/* The driver thread's work, done holding the context lock. */
static PATIENT_NOINLINE void fakeaccel_service_queue(int round)
{
	struct timespec sec = {1, 0};
	sink += nanosleep(&sec, NULL) + round;
}

static PATIENT_NOINLINE void *fakeaccel_driver_main(void *arg)
{
	(void)arg;
	driver_tid = patient_gettid();
	pthread_mutex_lock(&fakeaccel_ctx_lock);
	driver_holds_lock = 1;
	for (int round = 0;; round++)
		fakeaccel_service_queue(round);
	return NULL;
}

/* fakeaccel_init starts the driver thread and returns once it holds the
 * context lock and sleeps in its service loop. It returns 0, or -1 with
 * errno set. */
FAKEACCEL_API int fakeaccel_init(void)
{
	if (initialised)
		return 0;
	errno = pthread_create(&driver, NULL, fakeaccel_driver_main, NULL);
	if (errno != 0)
		return -1;
	pthread_setname_np(driver, "fakeaccel-drv");
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = driver_tid) == 0 || !driver_holds_lock)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_CLOCK_NANOSLEEP;
	patient_wait_blocked(&tid, &nr, 1);
	initialised = 1;
	return 0;
}

/* fakeaccel_driver_tid is the driver thread's TID (0 before init). */
FAKEACCEL_API pid_t fakeaccel_driver_tid(void) { return driver_tid; }

static PATIENT_NOINLINE int fakeaccel_submit(int kernel)
{
	int r = pthread_mutex_lock(&fakeaccel_ctx_lock);
	sink += kernel + r;
	pthread_mutex_unlock(&fakeaccel_ctx_lock);
	return r;
}

/* fakeaccel_launch submits a kernel: it takes the context lock. */
FAKEACCEL_API PATIENT_NOINLINE int fakeaccel_launch(int kernel)
{
	int r = fakeaccel_submit(kernel);
	sink += r + 1;
	return r;
}
