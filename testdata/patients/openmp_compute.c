/*
 * openmp_compute (control): OpenMP threads computing (gcc -fopenmp,
 * libgomp). A parallel loop sums a series again and again; every thread
 * is on the CPU, inside the outlined parallel region or in libgomp's
 * barrier between rounds (which spins briefly, then sleeps). Nothing is
 * stuck, and hangdoc must not claim a deadlock (nor a spin-wait).
 *
 * Prints "ready" after 20 rounds.
 */
#include "patient.h"

#include <omp.h>

static volatile double sink;

static PATIENT_NOINLINE double series(long round)
{
	double sum = 0;
#pragma omp parallel for reduction(+ : sum) num_threads(2)
	for (long i = 1; i < 2000000; i++)
		sum += 1.0 / ((double)i * (double)i + (double)(round % 3));
	return sum;
}

int main(void)
{
	for (long round = 0;; round++) {
		sink = series(round);
		if (round == 20)
			patient_ready();
	}
	return 0;
}
