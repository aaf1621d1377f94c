/*
 * thread_churn: threads that exit while a tool lists and reads them. Four
 * "churn" threads each create and join short-lived threads in a loop, for
 * ever, so /proc/PID/task changes all the time and a thread listed a
 * moment ago is gone when its files are read. Not a hang: a control.
 */
#include "patient.h"

#include <pthread.h>
#include <stdatomic.h>

#define NCHURN 4

static atomic_ulong spawned;
static volatile unsigned long sink;

static void *brief(void *arg)
{
	for (unsigned long i = 0; i < 1000; i++)
		sink += i ^ (unsigned long)arg;
	return NULL;
}

static void *churn(void *arg)
{
	for (unsigned long i = 0;; i++) {
		pthread_t th;
		if (pthread_create(&th, NULL, brief, (void *)(i + (unsigned long)arg)) != 0) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
			continue;
		}
		pthread_join(th, NULL);
		atomic_fetch_add(&spawned, 1);
	}
	return NULL;
}

int main(void)
{
	for (long i = 0; i < NCHURN; i++) {
		pthread_t th;
		errno = pthread_create(&th, NULL, churn, (void *)i);
		if (errno != 0)
			patient_die("pthread_create");
		pthread_setname_np(th, "churn");
	}
	struct timespec ms = {0, 1000000};
	while (atomic_load(&spawned) < 100)
		nanosleep(&ms, NULL);
	patient_ready();
	struct timespec sec = {1, 0};
	for (;;)
		nanosleep(&sec, NULL);
	return 0;
}
