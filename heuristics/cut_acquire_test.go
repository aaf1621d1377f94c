package heuristics

// A paste that starts at the frame taking the lock: the reporter trimmed
// the futex frames above a locker class's constructor. The dumps are
// written by hand in gdb's format, with other names than the corpus
// report the rule was found on (MiniZincIDE#162).

import "testing"

// cutAtLocker is a thread whose paste starts at #4, a program's own
// locker class taking the mutex it is given (m=), then the code that
// asked for it and a callback dispatch; the paste is cut below.
const cutAtLocker = "#4  0x0000000000401000 in app::util::TraceMutexLocker::TraceMutexLocker (this=0x7ffd00001000, m=0x602010 <app::registry_mutex>, tag=\"update\") at util/trace_mutex.h:40\n" +
	"#5  0x0000000000402000 in app::Registry::update (this=0x603000) at registry.cpp:88\n" +
	"#6  0x0000000000403000 in app::Events::emit (this=0x604000) at events.cpp:12\n" +
	"#7  0x0000000000404000 in app::Registry::insert (this=0x603000) at regis"

// The cut frames are the lock's wait: the lone thread is a lock waiter
// (hedged), and the lock is the mutex the constructor was given, not the
// guard object (this).
func TestCutAtLockerIsLockWait(t *testing.T) {
	snap := parseDump(t, cutAtLocker)
	th := snap.Processes[0].Threads[0]
	if !cutAtAcquire(th) {
		t.Fatalf("a paste starting at a locker's constructor: not read as cut at an acquire")
	}
	l, _, ok := waitArgLock(th)
	if !ok || l.Symbol != "app::registry_mutex" {
		t.Errorf("the lock: %+v %v, want the m= argument (app::registry_mutex), not the guard's this", l, ok)
	}
	d, ok := top(snap)
	if !ok || !d.Deadlock || d.Confidence != Low {
		t.Fatalf("cut at a locker: top %s (%s) %s, want a hedged lock verdict", d.ID, d.Confidence, d.Summary)
	}
}

// A paste that starts at a frame that takes no lock says nothing of what
// the thread waits for: no verdict from it.
func TestCutAtOtherFrameNoLockWait(t *testing.T) {
	snap := parseDump(t, "#4  0x0000000000402000 in app::Registry::update (this=0x603000) at registry.cpp:88\n"+
		"#5  0x0000000000403000 in app::Events::emit (this=0x604000) at events.cpp:12\n"+
		"#6  0x0000000000404000 in app::Registry::insert (this=0x603000) at regis")
	if cutAtAcquire(snap.Processes[0].Threads[0]) {
		t.Errorf("a paste starting at app code read as cut at an acquire")
	}
	if d, ok := top(snap); ok && d.Deadlock {
		t.Errorf("cut at app code: %s (%s) %s, want no deadlock claim", d.ID, d.Confidence, d.Summary)
	}
}
