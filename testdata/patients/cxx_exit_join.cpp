// cxx_exit_join: a static thread pool whose destructor joins its worker
// without telling it to stop. main returns; exit() runs the static
// destructors (under __run_exit_handlers), and Pool::~Pool joins a worker
// that still waits on its condition variable for work or a stop flag
// nobody sets. Nothing runs. The verdict is lost-wakeup naming both, with
// a fix for the exit path: tell the workers to stop, then join.
//
// Prints "worker=<tid>" and "main=<tid>" before "ready", once main sleeps
// in its join and the worker in its futex wait.
#include "patient.h"

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

static std::atomic<pid_t> worker_tid{0};

struct Pool {
	std::mutex m;
	std::condition_variable cv;
	bool stop = false;
	std::thread t;
	Pool()
	    : t([this] {
		      worker_tid = patient_gettid();
		      std::unique_lock<std::mutex> l(m);
		      cv.wait(l, [this] { return stop; }); // for ever: nobody sets stop
	      })
	{
	}
	~Pool() { t.join(); } // the bug: no stop = true; cv.notify_all(); first
};

static Pool pool;

static void *announce(void *arg)
{
	pid_t tids[2] = {*(pid_t *)arg, worker_tid};
	int nrs[2] = {PATIENT_SYS_FUTEX, PATIENT_SYS_FUTEX};
	patient_wait_blocked(tids, nrs, 2);
	patient_sayf("worker=%d\n", (int)tids[1]);
	patient_sayf("main=%d\n", (int)tids[0]);
	patient_ready();
	return nullptr;
}

int main()
{
	static pid_t me = patient_gettid();
	struct timespec ms = {0, 1000000};
	while (worker_tid == 0)
		nanosleep(&ms, nullptr);
	pthread_t a;
	if ((errno = pthread_create(&a, nullptr, announce, &me)) != 0)
		patient_die("pthread_create");
	pthread_detach(a);
	return 0; // exit() runs ~Pool, which joins for ever
}
