// cxx_cond_hold: a lock held across a condition-variable wait. Thread
// "consumer" locks m, then waits on cv (with its own mutex cm) for a flag;
// thread "producer" must lock m before it sets the flag and notifies, so
// it waits for m for ever, and the consumer is never woken. A wait
// releases only its own mutex (cm), never m. A live attach reads m's
// owner (the consumer); a wake-up records no waker, so hangdoc infers the
// producer from who waits behind the consumer (ownerless_tail.go).
//
// Prints "consumer=<tid>" and "producer=<tid>" before "ready".
//
// Expected stacks (innermost first):
//   consumer: futex wait ← __pthread_cond_wait_common ←
//             std::condition_variable::wait ← consume ← start_thread
//   producer: futex wait ← __lll_lock_wait ← pthread_mutex_lock ←
//             std::mutex::lock ← produce ← start_thread
// Expected verdict: lock-order-cycle naming both threads.
#include "patient.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <pthread.h>
#include <thread>

static std::mutex m, cm;
static std::condition_variable cv;
static bool flag;
static std::atomic<pid_t> consumer_tid, producer_tid;
static std::atomic<bool> holding;

static PATIENT_NOINLINE void consume()
{
	std::lock_guard<std::mutex> g(m);
	consumer_tid = patient_gettid();
	holding = true;
	std::unique_lock<std::mutex> lk(cm);
	cv.wait(lk, [] { return flag; }); // for ever: the producer needs m
}

static PATIENT_NOINLINE void produce()
{
	while (!holding.load())
		std::this_thread::yield();
	producer_tid = patient_gettid();
	std::lock_guard<std::mutex> g(m); // for ever
	{
		std::lock_guard<std::mutex> l(cm);
		flag = true;
	}
	cv.notify_one();
}

int main()
{
	std::thread c(consume), p(produce);
	pthread_setname_np(c.native_handle(), "consumer");
	pthread_setname_np(p.native_handle(), "producer");
	pid_t tids[2];
	while ((tids[0] = consumer_tid.load()) == 0 || (tids[1] = producer_tid.load()) == 0)
		std::this_thread::yield();
	int nrs[2] = {PATIENT_SYS_FUTEX, PATIENT_SYS_FUTEX};
	patient_wait_blocked(tids, nrs, 2);
	patient_sayf("consumer=%d\n", (int)tids[0]);
	patient_sayf("producer=%d\n", (int)tids[1]);
	patient_ready();
	c.join(); // for ever
	p.join();
	return 0;
}
