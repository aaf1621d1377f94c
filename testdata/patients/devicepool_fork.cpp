/*
 * devicepool_fork: the tt-metal hang. A process-wide singleton DevicePool
 * guards its devices with a std::mutex. The parent initialises the fake
 * accelerator driver (libfakeaccel.so: its driver thread "fakeaccel-drv"
 * holds the driver's context lock), opens device 0, and starts a
 * background thread "pool-refresh" that runs DevicePool::refresh, which
 * rescans the devices holding the pool's mutex (it sleeps a second at a
 * time, for ever). While it does, the main thread calls fork(). The child
 * gets a copy of the pool with its mutex locked by a thread that does not
 * exist in the child, calls DevicePool::instance().open_device(0) — as a
 * multiprocessing worker with the default fork start method does — and
 * blocks for ever.
 *
 * Build: gcc -shared -fPIC -o DIR/libfakeaccel.so fakeaccel.c, then
 *        g++ -O2 -g -pthread devicepool_fork.cpp -LDIR -Wl,-rpath,DIR -lfakeaccel
 *
 * Prints, before "ready": "owner=<tid of pool-refresh in the parent>",
 * "driver=<tid of fakeaccel-drv in the parent>", "child=<pid of the child>".
 * The parent then waits in waitpid for ever; the child stays in the
 * patient's process group and gets SIGKILL when the parent dies.
 *
 * Expected stacks (innermost first):
 *   child main:  futex wait ← __lll_lock_wait ← pthread_mutex_lock ←
 *                (std::mutex::lock, inlined) ← DevicePool::open_device ← main
 *   parent pool-refresh: clock_nanosleep ← nanosleep ←
 *                DevicePool::rescan_devices ← DevicePool::refresh ←
 *                pool_refresh_main ← start_thread
 *   parent fakeaccel-drv: clock_nanosleep ← nanosleep ←
 *                fakeaccel_service_queue ← fakeaccel_driver_main ← start_thread
 *   parent main: wait4 ← waitpid ← patient_hang_on_child ← main
 * Expected verdict: fork-inherited-lock, the child's main thread waiting on
 * the pool mutex owned by the parent's pool-refresh (known issue: tt-metal
 * DevicePool across fork).
 */
#include "patient.h"

#include <pthread.h>

#include <atomic>
#include <mutex>
#include <vector>

extern "C" {
int fakeaccel_init(void);
pid_t fakeaccel_driver_tid(void);
}

static volatile int sink;
static std::atomic<pid_t> refresher_tid{0};
static std::atomic<int> refreshing{0};

class DevicePool {
public:
	static DevicePool &instance();
	int open_device(int id);
	void refresh();

private:
	DevicePool() = default;
	void rescan_devices();

	std::mutex mu_;
	std::vector<int> open_;
};

PATIENT_NOINLINE DevicePool &DevicePool::instance()
{
	static DevicePool pool;
	return pool;
}

PATIENT_NOINLINE int DevicePool::open_device(int id)
{
	std::lock_guard<std::mutex> guard(mu_);
	open_.push_back(id);
	sink += id;
	return (int)open_.size();
}

/* A slow rescan: it sleeps, holding the pool's mutex, for ever. */
PATIENT_NOINLINE void DevicePool::rescan_devices()
{
	struct timespec sec = {1, 0};
	for (;;)
		sink += nanosleep(&sec, NULL) + (int)open_.size();
}

PATIENT_NOINLINE void DevicePool::refresh()
{
	std::lock_guard<std::mutex> guard(mu_);
	refreshing = 1;
	rescan_devices();
}

static PATIENT_NOINLINE void *pool_refresh_main(void *arg)
{
	(void)arg;
	refresher_tid = patient_gettid();
	DevicePool::instance().refresh();
	return NULL;
}

int main()
{
	if (fakeaccel_init() != 0)
		patient_die("fakeaccel_init");
	if (DevicePool::instance().open_device(0) != 1)
		patient_die("open_device");

	pthread_t th;
	errno = pthread_create(&th, NULL, pool_refresh_main, NULL);
	if (errno != 0)
		patient_die("pthread_create");
	pthread_setname_np(th, "pool-refresh");
	struct timespec ms = {0, 1000000};
	pid_t tid;
	while ((tid = refresher_tid) == 0 || !refreshing)
		nanosleep(&ms, NULL);
	int nr = PATIENT_SYS_CLOCK_NANOSLEEP;
	patient_wait_blocked(&tid, &nr, 1);

	pid_t child = patient_fork();
	if (child == 0) {
		int n = DevicePool::instance().open_device(0); /* for ever */
		sink += n;
		_exit(0);
	}
	patient_sayf("owner=%d\n", (int)tid);
	patient_sayf("driver=%d\n", (int)fakeaccel_driver_tid());
	patient_hang_on_child(child, PATIENT_SYS_FUTEX);
	return 0;
}
