package heuristics

import "testing"

// A detector's lock-order report, as the frame-list reader gives it: the
// line before each stack names the thread. The claim lines are
// ThreadSanitizer's as it printed them here (gcc 12, -fsanitize=thread,
// a program taking two pthread mutexes in both orders); the stacks are
// written by hand with its frames.
func TestToolLockOrderClaim(t *testing.T) {
	t1 := thread(0, "Mutex M1 acquired here while holding mutex M0 in thread T1", "pthread_mutex_lock", "t1")
	t2 := thread(0, "Mutex M0 acquired here while holding mutex M1 in thread T2", "pthread_mutex_lock", "t2")
	d := one(t, "lock-order-cycle", pasted(proc(0, t1, t2)))
	if d.Confidence != Low {
		t.Errorf("confidence %s, want low: a potential cycle, not a dump of the hang", d.Confidence)
	}
	has(t, "summary", d.Summary, "ThreadSanitizer", "acquired here while holding mutex M0")
	has(t, "chain", d.Chain[0], "`t1`")
	has(t, "chain", d.Chain[1], "`t2`")

	// Abseil's claim over a stack of the program's frames.
	absl := thread(0, "[mutex.cc : 1418] RAW: Potential Mutex deadlock",
		"absl::lts_20240116::DebugOnlyDeadlockCheck", "absl::lts_20240116::Mutex::Lock", "Registry::Remove", "Client::~Client")
	d = one(t, "lock-order-cycle", pasted(proc(0, absl)))
	has(t, "chain", d.Chain[0], "Abseil", "`Registry::Remove`")

	// A debug mutex that timed a holder out, frames as file:line only.
	held := thread(0, "A lock was held until deadlock, subsequent call to unlock failed. id '7'. Call stack", "", "")
	file(held, 0, "/src/renter/upload.go")
	d = one(t, "lock-order-cycle", pasted(proc(0, held)))
	has(t, "chain", d.Chain[len(d.Chain)-1], "timed the lock out")

	// A claim with nothing of the program beside it (the detector's and
	// the backtrace library's frames only) is no evidence.
	bare := thread(0, "[mutex.cc : 1418] RAW: Potential Mutex deadlock",
		"backtrace::backtrace::trace", "backtrace::capture::Backtrace::new", "absl::DebugOnlyDeadlockCheck")
	none(t, "lock-order-cycle", pasted(proc(0, bare)))

	// A thread name that merely mentions a deadlock is no claim.
	named := thread(0, "deadlock-watchdog", "pthread_mutex_lock", "watch")
	for _, c := range findToolClaims(newAnalysis(pasted(proc(0, named)))) {
		t.Errorf("claim read from %q: %+v", c.ref.Thread.Name, c.claim.tool)
	}
}
