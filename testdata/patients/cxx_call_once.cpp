// cxx_call_once: std::call_once re-entered on the same flag from inside
// its own callable. Thread "plugin-loader" calls load_plugins() through
// std::call_once(plugins_once, …); load_plugins() ends up calling
// ensure_plugins(), which calls std::call_once(plugins_once, …) again.
// libstdc++ implements call_once with pthread_once: the second call
// waits (futex) for the first to finish, which is its own caller.
//
// Prints "loader=<tid>" before "ready".
//
// Expected stack (innermost first): futex wait ← __pthread_once_slow ←
// std::call_once<…> ← ensure_plugins ← register_builtin ← load_plugins ←
// … __pthread_once_slow ← std::call_once<…> ← ensure_plugins ←
// loader_main ← start_thread: the same once flag entered twice on one
// stack. Expected verdict: self-deadlock naming the loader.
#include "patient.h"

#include <atomic>
#include <mutex>
#include <thread>

static std::once_flag plugins_once;
static std::atomic<pid_t> loader_tid;
static volatile int sink;

PATIENT_NOINLINE void ensure_plugins();

static PATIENT_NOINLINE void register_builtin(int n)
{
	ensure_plugins(); // re-entry: for ever
	sink += n;
}

static PATIENT_NOINLINE void load_plugins()
{
	loader_tid = patient_gettid();
	register_builtin(1);
}

PATIENT_NOINLINE void ensure_plugins()
{
	std::call_once(plugins_once, load_plugins);
	sink += 1;
}

int main()
{
	std::thread loader([] { ensure_plugins(); });
	pthread_setname_np(loader.native_handle(), "plugin-loader");
	pid_t tid;
	while ((tid = loader_tid.load()) == 0)
		std::this_thread::yield();
	int nr = PATIENT_SYS_FUTEX;
	patient_wait_blocked(&tid, &nr, 1);
	patient_sayf("loader=%d\n", (int)tid);
	patient_ready();
	loader.join(); // for ever
	return 0;
}
