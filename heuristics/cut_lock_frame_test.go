package heuristics

// A paste that ends inside the name of the frame above a futex wait. The
// dumps are written by hand in gdb's format, with other names than the
// corpus report the rule was found on (rust#144105, a Miri report).

import "testing"

const futexTop = "Thread 1 (Thread 0x7f0000000740 (LWP 5100) \"srv\"):\n" +
	"#0  0x00007f0000001000 in syscall () from /lib64/libc.so.6\n" +
	"#1  0x0000550000001000 in std::sys::pal::unix::futex::futex_wait () at library/std/src/sys/pal/unix/futex.rs:80\n"

// Cut inside a Rust std Mutex's method name: the futex wait is that
// lock's (a lock waiter, the process's only thread: hedged self-deadlock).
func TestCutLockFrameIsLockWait(t *testing.T) {
	th := parseDump(t, futexTop+"#2  0x0000550000001100 in std::sys::sync::mutex::futex::Mutex::").Processes[0].Threads[0]
	if c, _ := waitOf(th); c != waitLock {
		t.Errorf("futex wait under a cut std Mutex:: frame: wait %v, want a lock wait", c)
	}
	// cut inside a Condvar's name: a condition wait, no lock
	th = parseDump(t, futexTop+"#2  0x0000550000001100 in std::sys::sync::condvar::futex::Condvar::").Processes[0].Threads[0]
	if c, _ := waitOf(th); c == waitLock {
		t.Errorf("futex wait under a cut Condvar:: frame read as a lock wait")
	}
	// the same Mutex:: name whole (not cut) is no function the table knows
	th = parseDump(t, futexTop+"#2  0x0000550000001100 in std::sys::sync::mutex::futex::Mutex:: ()\n#3  0x0000550000001200 in srv::main () at src/main.rs:9\n").Processes[0].Threads[0]
	if c, _ := waitOf(th); c == waitLock {
		t.Errorf("an uncut frame read by its prefix")
	}
}
