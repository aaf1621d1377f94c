package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// TestTrimmedGuardConstructors: a paste whose futex and mutex frames
// were trimmed keeps the RAII guard's constructor on top, and a guard's
// constructor is an acquire of the mutex it is given (hand-built
// frames, spelled as gdb and the demanglers print them for libc++,
// JUCE/Poco/LLVM guards, Chromium's AutoLock, WebRTC's CritScope,
// wxWidgets lockers and folly's LockedPtr). Two such threads, none
// running: a lock-order cycle. Silent: the same threads in the guards'
// destructors (they release the lock: no row reads them as a wait).
func TestTrimmedGuardConstructors(t *testing.T) {
	guards := [][2]string{
		{"std::__1::unique_lock<std::__1::mutex>::unique_lock[abi:v160006](std::__1::mutex&)", "std::__1::lock_guard<std::__1::mutex>::lock_guard[abi:ue170006](std::__1::mutex&)"},
		{"juce::GenericScopedLock<juce::CriticalSection>::GenericScopedLock(juce::CriticalSection const&)", "Poco::ScopedLock<Poco::Mutex>::ScopedLock(Poco::Mutex&)"},
		{"llvm::sys::SmartScopedLock<true>::SmartScopedLock(llvm::sys::SmartMutex<true>&)", "base::AutoLock::AutoLock(base::Lock&)"},
		{"rtc::CritScope::CritScope(rtc::CriticalSection const*)", "wxCriticalSectionLocker::wxCriticalSectionLocker(wxCriticalSection&)"},
		{"folly::LockedPtr<folly::Synchronized<int, folly::SharedMutex>, folly::detail::SynchronizedLockPolicy<(folly::detail::SynchronizedMutexLevel)1, (folly::detail::SynchronizedMutexMethod)0> >::LockedPtr(folly::Synchronized<int, folly::SharedMutex>*)", "tbb::spin_mutex::scoped_lock::scoped_lock(tbb::spin_mutex&)"},
	}
	for _, g := range guards {
		a := thread(801, "reader", g[0], "Cache::get", "worker_loop", "start_thread")
		b := thread(802, "writer", g[1], "Index::update", "flush_loop", "start_thread")
		a.Stack[0].Args = []stacks.Arg{stacks.NewArg("m", "0x55d0c0a010 <index_mutex>")}
		b.Stack[0].Args = []stacks.Arg{stacks.NewArg("m", "0x55d0c0a050 <cache_mutex>")}
		d, ok := top(pasted(proc(800, a, b)))
		if !ok || d.ID != "lock-order-cycle" || !nbHasTid(d, 801) || !nbHasTid(d, 802) {
			t.Errorf("%q / %q: got %q %v: %s", g[0], g[1], d.ID, d.Tids, d.Summary)
		}
		for _, fn := range g {
			if r := stacks.FrameRow(stacks.Frame{Func: destructorOf(fn)}); r != nil && r.Role.IsLock() {
				t.Errorf("destructor %q reads as %s (%s)", destructorOf(fn), r.Role, r.Family)
			}
		}
		// the same threads in the guards' destructors: releasing, no cycle
		a.Stack[0].Func, b.Stack[0].Func = destructorOf(g[0]), destructorOf(g[1])
		for _, d := range Diagnose(pasted(proc(800, a, b)), Options{}).Diagnoses {
			if d.Deadlock {
				t.Errorf("%q / %q: %s %s", a.Stack[0].Func, b.Stack[0].Func, d.ID, d.Summary)
			}
		}
	}
}

// destructorOf spells the destructor of the constructor fn names:
// "A::B(args)" -> "A::~B()".
func destructorOf(fn string) string {
	k := stacks.FuncKey(fn)
	for i := len(k) - 1; i > 0; i-- {
		if k[i] == ':' && k[i-1] == ':' {
			return k[:i+1] + "~" + k[i+1:] + "()"
		}
	}
	return "~" + k
}
