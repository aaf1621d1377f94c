package stacks

import (
	"strings"
	"testing"
)

func TestFuncKey(t *testing.T) {
	for in, want := range map[string]string{
		"__GI___pthread_mutex_lock":                  "pthread_mutex_lock",
		"___pthread_mutex_lock":                      "pthread_mutex_lock",
		"pthread_mutex_lock@@GLIBC_2.2.5":            "pthread_mutex_lock",
		"std::mutex::lock()":                         "std::mutex::lock",
		"_int_malloc.isra.0":                         "int_malloc",
		"__lll_lock_wait_private":                    "lll_lock_wait_private",
		"void foo<int>(int)":                         "foo<int>",
		"hangdoc_patient::Guarded<int>::update(int)": "hangdoc_patient::Guarded<int>::update",
		"std::sys::sync::mutex::futex::Mutex::lock_contended::h5c1e8a9d0b2f3e47": "std::sys::sync::mutex::futex::Mutex::lock_contended",
		"absl::lts_20230802::Mutex::Lock()":                                      "absl::lts_20230802::Mutex::Lock",
		"g_mutex_lock_slowpath.lto_priv.0":                                       "g_mutex_lock_slowpath",
	} {
		if got := FuncKey(in); got != want {
			t.Errorf("FuncKey(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCallName(t *testing.T) {
	for in, want := range map[string]string{
		"__GI___nanosleep":         "nanosleep",
		"__libc_read":              "read",
		"__poll":                   "poll",
		"read@@GLIBC_2.2.5":        "read",
		"__clock_nanosleep_time64": "clock_nanosleep",
		"__read_nocancel":          "read",
		"___pthread_cond_wait":     "pthread_cond_wait",
		"__lll_lock_wait":          "lll_lock_wait",
		"main":                     "main",
	} {
		if got := CallName(in); got != want {
			t.Errorf("CallName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestVocabularyKnowsTheLocksUsersMeet: each family as its frames are
// spelled in real stacks (symbols, gdb, rust and c++ demanglers) reads
// as its row says.
func TestVocabularyKnowsTheLocksUsersMeet(t *testing.T) {
	v := BuiltinVocabulary()
	for _, c := range []struct{ fn, family string }{
		{"___pthread_mutex_lock", "pthread_mutex"},
		{"__GI___pthread_mutex_lock", "pthread_mutex"},
		{"std::mutex::lock()", "pthread_mutex"},
		{"std::recursive_mutex::lock()", "pthread_mutex (recursive)"},
		{"__lll_lock_wait_private", "glibc low-level lock"},
		{"_IO_flockfile", "stdio"},
		{"___pthread_rwlock_wrlock", "pthread_rwlock"},
		{"std::shared_mutex::lock()", "pthread_rwlock"},
		{"pthread_spin_lock", "pthread_spinlock"},
		{"__pthread_once_slow", "pthread_once"},
		{"std::call_once<void (&)()>(std::once_flag&, void (&)())", "pthread_once"},
		{"__cxa_guard_acquire", "C++ static guard"},
		{"__cxxabiv1::__cxa_guard_acquire(__cxxabiv1::__guard*)", "C++ static guard"},
		{"___pthread_cond_wait", "pthread_cond"},
		{"std::condition_variable::wait(std::unique_lock<std::mutex>&)", "pthread_cond"},
		{"pthread_barrier_wait", "pthread_barrier"},
		{"absl::lts_20230802::Mutex::Lock()", "absl::Mutex"},
		{"absl::Mutex::LockSlowLoop(absl::SynchWaitParams*, int)", "absl::Mutex"},
		{"absl::lts_20240116::Mutex::Block(absl::lts_20240116::base_internal::PerThreadSynch*)", "absl waiter"},
		{"absl::synchronization_internal::FutexWaiter::Wait(absl::synchronization_internal::KernelTimeout)", "absl waiter"},
		{"absl::CondVar::WaitCommon(absl::Mutex*, absl::synchronization_internal::KernelTimeout)", "absl::CondVar"},
		{"SpinLock::SlowLock()", "gperftools SpinLock"},
		{"base::internal::SpinLockDelay(int volatile*, int, int)", "gperftools SpinLock"},
		{"je_malloc_mutex_lock_slow", "jemalloc mutex"},
		{"folly::SharedMutexImpl<false, void, std::atomic, folly::SharedMutexPolicyDefault>::lock()", "folly::SharedMutex"},
		{"tbb::detail::r1::queuing_mutex::scoped_lock::acquire", "tbb mutex"},
		{"boost::mutex::lock()", "boost mutex"},
		{"QMutex::lock()", "QMutex"},
		{"QBasicMutex::lockInternal()", "QMutex"},
		{"g_mutex_lock", "GMutex"},
		{"g_rec_mutex_lock", "GRecMutex"},
		{"g_cond_wait", "GCond"},
		{"g_once_init_enter_impl", "GOnce"},
		{"std::sys::sync::mutex::futex::Mutex::lock_contended", "Rust std Mutex"},
		{"std::sys::unix::locks::futex_rwlock::RwLock::write_contended", "Rust std Mutex"},
		{"std::sys::sync::once::futex::Once::call", "Rust std Once"},
		{"std::sync::once_lock::OnceLock<T>::initialize", "Rust std Once"},
		{"parking_lot::raw_mutex::RawMutex::lock_slow", "parking_lot"},
		{"parking_lot_core::parking_lot::park", "parking_lot_core"},
		{"PyThread_acquire_lock_timed", "CPython lock"},
		{"_PyMutex_LockTimed", "CPython lock"},
		{"take_gil", "CPython GIL"},
		{"sync.(*Mutex).Lock", "Go sync.Mutex"},
		{"runtime.chanrecv1", "Go channel"},
		{"opal_progress", "Open MPI"},
		{"ompi_request_default_wait", "Open MPI"},
		{"PMPI_Barrier", "MPI API"},
		{"ncclAllReduce", "NCCL"},
		{"__libc_read", "io"},
		{"__GI___clock_nanosleep", "sleep"},
		{"_int_malloc", "malloc"},
		{"my::thing::MutexGuardian::lock()", "C++ lock guard"},
	} {
		r := v.Lookup(c.fn)
		if r == nil || r.Family != c.family {
			got := "no row"
			if r != nil {
				got = r.Family
			}
			t.Errorf("Lookup(%q) = %s, want %s", c.fn, got, c.family)
		}
	}
	for _, fn := range []string{"main", "worker", "start_thread", "clone3", "std::thread::_State_impl<>::_M_run"} {
		if r := v.Lookup(fn); r != nil {
			t.Errorf("Lookup(%q) = %s, want no row", fn, r.Family)
		}
	}
}

// TestVocabularyRowsAreComplete: every lock row says whether it is
// recursive and how (or that) an owner can be read.
func TestVocabularyRowsAreComplete(t *testing.T) {
	for _, r := range BuiltinVocabulary().Rows {
		if r.Owner == "" {
			t.Errorf("%s: no owner field (say \"none\" when the lock records no holder)", r.Family)
		}
		if r.Role.IsLock() && r.Role != RoleOnce && r.Recursive == "" && !r.AnyReleaser {
			t.Errorf("%s: a lock row without recursive", r.Family)
		}
	}
}

func TestParseVocabularyRejects(t *testing.T) {
	for in, want := range map[string]string{
		`{"rows": [{"family": "a", "role": "grab", "funcs": ["x"], "owner": "none"}]}`:                                    "unknown role",
		`{"rows": [{"family": "a", "role": "acquire", "owner": "none"}]}`:                                                 "no funcs",
		`{"rows": [{"family": "a", "role": "acquire", "funcs": ["x"]}, {"family": "b", "role": "cond", "funcs": ["x"]}]}`: "in two rows",
		`{"rows": [{"family": "a", "role": "acquire", "funcs": ["__x"], "owner": "none"}]}`:                               "FuncKey's spelling",
		`{"rows": [{"family": "a", "role": "acquire", "funcs": ["x"], "recursive": "maybe"}]}`:                            "recursive",
		`{"rows": [`: "vocabulary:",
	} {
		_, err := ParseVocabulary([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseVocabulary(%s) = %v, want an error with %q", in, err, want)
		}
	}
}
