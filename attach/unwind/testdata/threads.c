// Three threads blocked in known places: main → main_outer → main_inner →
// pause, worker → a_top → b_mid → c_read → read, locker → lock_twice →
// pthread_mutex_lock (a self-deadlock). Prints "ready" once all are there.
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static int fds[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static volatile int arrived;
volatile int sink;

NOINLINE void c_read(void) {
	char b;
	__atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
	if (read(fds[0], &b, 1) > 0)
		sink++;
	sink++;
}
NOINLINE void b_mid(void) { c_read(); sink++; }
NOINLINE void a_top(void) { b_mid(); sink++; }
static void *worker(void *arg) { a_top(); return arg; }

NOINLINE void lock_twice(void) {
	pthread_mutex_lock(&mu);
	__atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&mu);
	sink++;
}
static void *locker(void *arg) { lock_twice(); return arg; }

NOINLINE void main_inner(void) {
	printf("ready\n");
	fflush(stdout);
	pause();
	sink++;
}
NOINLINE void main_outer(void) { main_inner(); sink++; }

int main(void) {
	pthread_t t1, t2;
	if (pipe(fds) != 0)
		return 1;
	pthread_create(&t1, NULL, worker, NULL);
	pthread_create(&t2, NULL, locker, NULL);
	while (arrived < 2)
		usleep(1000);
	usleep(100000); /* let both reach their syscall */
	main_outer();
	return 0;
}
