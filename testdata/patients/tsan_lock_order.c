// tsan_lock_order: two threads take two mutexes in opposite orders, one
// after the other (so it never hangs), built with -fsanitize=thread:
// ThreadSanitizer reports the lock-order inversion on stderr and the
// program exits (status 66, TSan's for a report).
//
// Expected report: "WARNING: ThreadSanitizer: lock-order-inversion
// (potential deadlock)", then "Mutex M1 acquired here while holding mutex
// M0 in thread T1:" over take_b_after_a's frames and the reverse over
// take_a_after_b's. Expected verdict of `hangdoc analyze` on it:
// lock-order-cycle (low), naming both functions.
#include <pthread.h>

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;

__attribute__((noinline)) static void take_b_after_a(void)
{
	pthread_mutex_lock(&lock_a);
	pthread_mutex_lock(&lock_b);
	pthread_mutex_unlock(&lock_b);
	pthread_mutex_unlock(&lock_a);
}

__attribute__((noinline)) static void take_a_after_b(void)
{
	pthread_mutex_lock(&lock_b);
	pthread_mutex_lock(&lock_a);
	pthread_mutex_unlock(&lock_a);
	pthread_mutex_unlock(&lock_b);
}

static void *ab(void *arg) { take_b_after_a(); return arg; }
static void *ba(void *arg) { take_a_after_b(); return arg; }

int main(void)
{
	pthread_t t;
	// one after the other: the order inversion is seen, no hang happens
	if (pthread_create(&t, 0, ab, 0) != 0 || pthread_join(t, 0) != 0)
		return 1;
	if (pthread_create(&t, 0, ba, 0) != 0 || pthread_join(t, 0) != 0)
		return 1;
	return 0;
}
