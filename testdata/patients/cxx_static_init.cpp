// cxx_static_init: two function-local statics whose initialisers need
// each other, reached from two threads: a deadlock inside libstdc++'s
// guard (__cxa_guard_acquire). Thread "init-config" runs config(), whose
// static's initialiser calls registry(); thread "init-registry" runs
// registry(), whose static's initialiser calls config(). A barrier inside
// both initialisers makes sure each thread has started its own static
// before it asks for the other's.
//
// Prints "config=<tid>" and "registry=<tid>" before "ready".
//
// Expected stacks (innermost first):
//   init-config:   futex wait ← __cxa_guard_acquire ← registry() ←
//                  Config::Config ← config() ← config_main ← start_thread
//   init-registry: futex wait ← __cxa_guard_acquire ← config() ←
//                  Registry::Registry ← registry() ← registry_main ← …
// Each waits for the guard of a static the other is initialising.
// Expected verdict: lock-order-cycle naming both threads.
#include "patient.h"

#include <atomic>
#include <pthread.h>

static pthread_barrier_t both_started;
static std::atomic<pid_t> config_tid, registry_tid;
static volatile int sink;

struct Config;
struct Registry;
PATIENT_NOINLINE Config &config();
PATIENT_NOINLINE Registry &registry();

struct Registry {
	int entries;
	PATIENT_NOINLINE Registry();
};

struct Config {
	int verbosity;
	PATIENT_NOINLINE Config();
};

PATIENT_NOINLINE Config &config()
{
	static Config c; // guarded by __cxa_guard_acquire
	return c;
}

PATIENT_NOINLINE Registry &registry()
{
	static Registry r;
	return r;
}

Config::Config()
{
	pthread_barrier_wait(&both_started);
	config_tid = patient_gettid();
	verbosity = registry().entries + 1; // for ever: init-registry is inside registry()'s initialiser
}

Registry::Registry()
{
	pthread_barrier_wait(&both_started);
	registry_tid = patient_gettid();
	entries = config().verbosity + 1; // for ever
}

static void *config_main(void *)
{
	sink += config().verbosity;
	return nullptr;
}

static void *registry_main(void *)
{
	sink += registry().entries;
	return nullptr;
}

int main()
{
	pthread_t a, b;
	if (pthread_barrier_init(&both_started, nullptr, 2) != 0)
		patient_die("pthread_barrier_init");
	if ((errno = pthread_create(&a, nullptr, config_main, nullptr)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(a, "init-config");
	if ((errno = pthread_create(&b, nullptr, registry_main, nullptr)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(b, "init-registry");

	struct timespec ms = {0, 1000000};
	pid_t tids[2];
	while ((tids[0] = config_tid) == 0 || (tids[1] = registry_tid) == 0)
		nanosleep(&ms, nullptr);
	int nrs[2] = {PATIENT_SYS_FUTEX, PATIENT_SYS_FUTEX};
	patient_wait_blocked(tids, nrs, 2);
	patient_sayf("config=%d\n", (int)tids[0]);
	patient_sayf("registry=%d\n", (int)tids[1]);
	patient_ready();
	pthread_join(a, nullptr); // for ever
	return 0;
}
