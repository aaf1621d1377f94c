/*
 * tcmalloc_grower_signal.h: what the tcmalloc signal patients share over
 * tcmalloc_grower.h. grow_hook raises SIGUSR1 on the grower inside
 * tcmalloc's mmap/sbrk, pageheap_lock held, as an asynchronous or fatal
 * signal lands at any moment; main runs grower_signal_run with the
 * patient's handler, which allocates and so waits for the lock its own
 * thread holds.
 */
#include "tcmalloc_grower.h"

#include <signal.h>

/* The signal lands while tcmalloc holds pageheap_lock. */
static PATIENT_NOINLINE void grow_hook(size_t size)
{
	(void)size;
	raise(SIGUSR1);
}

/* Installs handler for SIGUSR1 and runs the grower (grower_run). */
static void grower_signal_run(void (*handler)(int), _Atomic int *stage)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	if (sigaction(SIGUSR1, &sa, NULL) != 0)
		patient_die("sigaction");
	grower_run(stage);
}
