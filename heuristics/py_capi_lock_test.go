package heuristics

// CPython's C code taking one of the interpreter's own locks, pasted as a
// bare `bt` cut below the lock frames. The dumps are written by hand in
// gdb's format, after the shape of the corpus report the rule was found
// on (parsl#3373), with other addresses.

import "testing"

const pyLockFrames = "#0  0x00007f0000001000 in __futex_abstimed_wait_common64 (private=<optimized out>, cancel=true, abstime=0x0, op=393, expected=0, futex_word=0x55000000a000) at ./nptl/futex-internal.c:57\n" +
	"#1  0x00007f0000001100 in do_futex_wait (sem=sem@entry=0x55000000a000, abstime=0x0, clockid=0) at ./nptl/sem_waitcommon.c:111\n" +
	"#2  0x00007f0000001200 in __new_sem_wait_slow64 (sem=sem@entry=0x55000000a000, abstime=0x0, clockid=0) at ./nptl/sem_waitcommon.c:183\n" +
	"#3  0x00007f0000001300 in __new_sem_wait (sem=sem@entry=0x55000000a000) at ./nptl/sem_wait.c:42\n" +
	"#4  0x0000550000002000 in PyThread_acquire_lock_timed (lock=0x55000000a000, microseconds=<optimized out>, intr_flag=intr_flag@entry=0) at Python/thread_pthread.h:486\n"

// The C API's acquire above the timed one, its caller cut: a lock of
// the interpreter's C code, no thread in sight: a forked child (low).
func TestPyCAPILockCutIsForkChild(t *testing.T) {
	d, ok := top(parseDump(t, pyLockFrames+"#5  0x0000550000002100 in PyThread_acquire_lock (lock="))
	if !ok || d.ID != "fork-inherited-lock" || d.Confidence != Low {
		t.Fatalf("C API lock, caller cut: top %s (%s) %s, want fork-inherited-lock (low)", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "CPython's own C code")
}

// threading.Lock.acquire calls the timed acquire directly: a lock object
// that Event and Condition park on too, which says no fork.
func TestPyLockObjectCutNoFork(t *testing.T) {
	d, ok := top(parseDump(t, pyLockFrames+"#5  0x0000550000002100 in acquire_timed (lock=0x55000000a000, timeout=-1000000000) at ./Modules/_threadmodule.c:98\n"+
		"#6  0x0000550000002200 in lock_PyThread_acquire_lock (self=0x7f000000c000, args=<optimized out>, kwds=<optimized out>) at ./Modules/_threadmodule.c:1"))
	if ok && d.ID == "fork-inherited-lock" {
		t.Errorf("a threading lock object's acquire: %s (%s) %s", d.ID, d.Confidence, d.Summary)
	}
}
