// absl_abba: a lock-order inversion between two absl::Mutex (Abseil,
// Debian's libabsl-dev). Thread "absl-ab" holds mu_a and wants mu_b;
// thread "absl-ba" holds mu_b and wants mu_a. A barrier makes sure each
// holds its first lock before either asks for its second.
//
// Prints "ab=<tid>" and "ba=<tid>" before "ready" (both then sleep in the
// futex wait under absl::Mutex::Lock).
//
// Expected stacks (innermost first; Abseil's slow path):
//   futex wait ← absl::synchronization_internal::FutexWaiter::Wait /
//   Waiter::Wait ← AbslInternalPerThreadSemWait ← absl::Mutex::Block ←
//   absl::Mutex::LockSlowLoop ← absl::Mutex::LockSlow ← absl::Mutex::Lock ←
//   take_b_after_a ← start_thread
// Expected verdict: lock-order-cycle naming both threads. An absl::Mutex
// records no owner thread: the cycle comes from the stacks alone.
#include "patient.h"

#include <absl/synchronization/mutex.h>
#include <atomic>
#include <pthread.h>

static absl::Mutex mu_a, mu_b;
static pthread_barrier_t both_hold;
static std::atomic<pid_t> ab_tid, ba_tid;
static volatile int sink;

static PATIENT_NOINLINE void take_b_after_a()
{
	mu_a.Lock();
	pthread_barrier_wait(&both_hold);
	ab_tid = patient_gettid();
	mu_b.Lock(); // for ever
	sink += 1;
}

static PATIENT_NOINLINE void take_a_after_b()
{
	mu_b.Lock();
	pthread_barrier_wait(&both_hold);
	ba_tid = patient_gettid();
	mu_a.Lock(); // for ever
	sink += 2;
}

static void *transfer_ab(void *) { take_b_after_a(); return nullptr; }
static void *transfer_ba(void *) { take_a_after_b(); return nullptr; }

int main()
{
	// Debian's Abseil is built without NDEBUG, so its lock-order graph
	// would abort at the second Lock; a release build (and the hang
	// people report) has it off.
	absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
	pthread_t ab, ba;
	if (pthread_barrier_init(&both_hold, nullptr, 2) != 0)
		patient_die("pthread_barrier_init");
	if ((errno = pthread_create(&ab, nullptr, transfer_ab, nullptr)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(ab, "absl-ab");
	if ((errno = pthread_create(&ba, nullptr, transfer_ba, nullptr)) != 0)
		patient_die("pthread_create");
	pthread_setname_np(ba, "absl-ba");

	struct timespec ms = {0, 1000000};
	pid_t tids[2];
	while ((tids[0] = ab_tid) == 0 || (tids[1] = ba_tid) == 0)
		nanosleep(&ms, nullptr);
	// Past the barrier, each sleeps in its second Lock (Abseil spins a
	// little first, then waits on its per-thread futex).
	int nrs[2] = {PATIENT_SYS_FUTEX, PATIENT_SYS_FUTEX};
	patient_wait_blocked(tids, nrs, 2);
	patient_sayf("ab=%d\n", (int)tids[0]);
	patient_sayf("ba=%d\n", (int)tids[1]);
	patient_ready();
	pthread_join(ab, nullptr); // for ever
	return 0;
}
