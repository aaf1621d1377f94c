// cxx_shared_read_mutex: a lock-order cycle through a read lock. Thread
// "reader" holds index_mu (a std::shared_mutex) shared and wants data_mu
// (a std::mutex); thread "writer" holds data_mu and wants index_mu
// exclusively, which the reader's shared hold keeps it from. A live
// attach reads data_mu's owner (the writer) but a read lock records no
// owner, so the wait-for graph stops at the writer: hangdoc must still
// close the cycle (ownerless_tail.go). A barrier makes sure both hold
// before either asks.
//
// Prints "reader=<tid>" and "writer=<tid>" before "ready".
//
// Expected stacks (innermost first):
//   reader: futex wait ← __lll_lock_wait ← pthread_mutex_lock ←
//           std::mutex::lock ← read_then_lock ← start_thread
//   writer: futex wait ← __pthread_rwlock_wrlock_full64 ←
//           pthread_rwlock_wrlock ← std::shared_mutex::lock ←
//           lock_then_write ← start_thread
// Expected verdict: lock-order-cycle naming both threads.
#include "patient.h"

#include <atomic>
#include <mutex>
#include <pthread.h>
#include <shared_mutex>
#include <thread>

static std::shared_mutex index_mu;
static std::mutex data_mu;
static pthread_barrier_t both_hold;
static std::atomic<pid_t> reader_tid, writer_tid;
static volatile int sink;

static PATIENT_NOINLINE void read_then_lock()
{
	std::shared_lock<std::shared_mutex> idx(index_mu);
	pthread_barrier_wait(&both_hold);
	reader_tid = patient_gettid();
	std::lock_guard<std::mutex> data(data_mu); // for ever
	sink += 1;
}

static PATIENT_NOINLINE void lock_then_write()
{
	std::lock_guard<std::mutex> data(data_mu);
	pthread_barrier_wait(&both_hold);
	writer_tid = patient_gettid();
	std::unique_lock<std::shared_mutex> idx(index_mu); // for ever
	sink += 2;
}

int main()
{
	if (pthread_barrier_init(&both_hold, nullptr, 2) != 0)
		patient_die("pthread_barrier_init");
	std::thread r(read_then_lock), w(lock_then_write);
	pthread_setname_np(r.native_handle(), "reader");
	pthread_setname_np(w.native_handle(), "writer");
	pid_t tids[2];
	while ((tids[0] = reader_tid.load()) == 0 || (tids[1] = writer_tid.load()) == 0)
		std::this_thread::yield();
	int nrs[2] = {PATIENT_SYS_FUTEX, PATIENT_SYS_FUTEX};
	patient_wait_blocked(tids, nrs, 2);
	patient_sayf("reader=%d\n", (int)tids[0]);
	patient_sayf("writer=%d\n", (int)tids[1]);
	patient_ready();
	r.join(); // for ever
	w.join();
	return 0;
}
