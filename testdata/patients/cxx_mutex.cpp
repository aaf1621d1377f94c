// cxx_mutex: C++ threads blocked in std::mutex::lock and
// std::condition_variable::wait, reached through a class template method,
// a lambda run by std::thread and a member function pointer. Built
// -O2 -g -pthread, so gdb shows inlined frames (std::mutex::lock,
// std::unique_lock<std::mutex>::lock) between the real ones.
//
// Threads (innermost frames first, libstdc++/glibc frames vary):
//   "locker":  std::mutex::lock ← hangdoc_patient::Guarded<int>::update ←
//              main::{lambda()#1}::operator() ← std::thread::_State_impl…
//   "waiter":  std::condition_variable::wait ← hangdoc_patient::Mailbox<
//              std::string>::take ← std::thread::_State_impl…
//   "nested":  std::mutex::lock ← hangdoc_patient::Guarded<int>::update ←
//              hangdoc_patient::Relay<int, 3>::forward ← lambda ← …
//   main:      pthread_join ← std::thread::join ← main (holds the mutex)
#include "patient.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <pthread.h>
#include <string>
#include <thread>
#include <vector>

namespace hangdoc_patient {

static volatile int sink;
static std::atomic<pid_t> tids[3];

// Guarded is a value behind a std::mutex; main holds the mutex forever.
template <typename T> class Guarded {
public:
	std::mutex mu;

	PATIENT_NOINLINE T update(T delta)
	{
		std::lock_guard<std::mutex> g(mu);
		value_ += delta;
		sink += 1;
		return value_;
	}

private:
	T value_{};
};

// Mailbox waits for a message nobody sends.
template <typename T> class Mailbox {
public:
	PATIENT_NOINLINE T take(int slot)
	{
		tids[slot] = patient_gettid();
		std::unique_lock<std::mutex> lk(mu_);
		cv_.wait(lk, [this] { return !items_.empty(); });
		T v = items_.back();
		items_.pop_back();
		sink += 2;
		return v;
	}

private:
	std::mutex mu_;
	std::condition_variable cv_;
	std::vector<T> items_;
};

// Relay forwards to a Guarded through a chain of template instances.
template <typename T, int N> struct Relay {
	PATIENT_NOINLINE static T forward(Guarded<T> &g, T v)
	{
		T r = Relay<T, N - 1>::forward(g, v + N);
		sink += N;
		return r;
	}
};

template <typename T> struct Relay<T, 0> {
	PATIENT_NOINLINE static T forward(Guarded<T> &g, T v)
	{
		T r = g.update(v);
		sink += 100;
		return r;
	}
};

} // namespace hangdoc_patient

using namespace hangdoc_patient;

int main()
{
	Guarded<int> guarded;
	Mailbox<std::string> mailbox;

	guarded.mu.lock(); // held forever

	std::thread locker([&guarded] {
		tids[0] = patient_gettid();
		int r = guarded.update(1);
		sink += r;
	});
	std::thread waiter(&Mailbox<std::string>::take, &mailbox, 1);
	std::thread nested([&guarded]() {
		tids[2] = patient_gettid();
		int r = Relay<int, 3>::forward(guarded, 7);
		sink += r;
	});
	pthread_setname_np(locker.native_handle(), "locker");
	pthread_setname_np(waiter.native_handle(), "waiter");
	pthread_setname_np(nested.native_handle(), "nested");

	pid_t ts[3];
	int nrs[3] = {PATIENT_SYS_FUTEX, PATIENT_SYS_FUTEX, PATIENT_SYS_FUTEX};
	for (int i = 0; i < 3; i++) {
		while ((ts[i] = tids[i].load()) == 0)
			std::this_thread::yield();
	}
	patient_wait_blocked(ts, nrs, 3);
	patient_ready();
	locker.join(); // forever
	waiter.join();
	nested.join();
	return 0;
}
