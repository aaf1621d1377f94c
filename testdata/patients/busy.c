/*
 * busy: a control that does not hang. Two threads, "cruncher-0" and
 * "cruncher-1", compute for ever: each round recurses to a different depth
 * (crunch_level, 1 to 16 frames deep) and does some arithmetic at the
 * bottom (mix_leaf), so both burn CPU and their stacks differ from one
 * sample to the next. main waits in pthread_join. A tool that reports a
 * deadlock (or a spin-wait) here is wrong; the right verdict is
 * "progressing".
 *
 * Prints "c0=<tid>" and "c1=<tid>" before "ready", which comes once both
 * have finished a few rounds.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

#define NCRUNCHERS 2

static _Atomic pid_t cruncher_tid[NCRUNCHERS];
static _Atomic unsigned long rounds[NCRUNCHERS];
static volatile unsigned long sink;

static PATIENT_NOINLINE unsigned long mix_leaf(unsigned long x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static PATIENT_NOINLINE unsigned long crunch_level(int depth, unsigned long x)
{
	unsigned long r = depth == 0 ? mix_leaf(x) : crunch_level(depth - 1, x ^ (unsigned long)depth);
	sink += r; /* not a tail call: every level keeps its frame */
	return r + (unsigned long)depth;
}

static PATIENT_NOINLINE void *cruncher_main(void *arg)
{
	long id = (long)arg;
	cruncher_tid[id] = patient_gettid();
	for (unsigned long n = 0;; n++) {
		sink += crunch_level((int)((n * 7 + (unsigned long)id) % 16), n);
		rounds[id]++;
	}
	return NULL;
}

int main(void)
{
	pthread_t th[NCRUNCHERS];
	for (long i = 0; i < NCRUNCHERS; i++) {
		char name[16];
		errno = pthread_create(&th[i], NULL, cruncher_main, (void *)i);
		if (errno != 0)
			patient_die("pthread_create");
		snprintf(name, sizeof name, "cruncher-%ld", i);
		pthread_setname_np(th[i], name);
	}
	struct timespec ms = {0, 1000000};
	for (int i = 0; i < NCRUNCHERS; i++) {
		while (cruncher_tid[i] == 0 || rounds[i] < 10)
			nanosleep(&ms, NULL);
		patient_sayf("c%d=%d\n", i, (int)cruncher_tid[i]);
	}
	patient_ready();
	pthread_join(th[0], NULL); /* for ever */
	return 0;
}
