package heuristics

// A join pasted alone. The dumps are written by hand in gdb's format,
// with other names than the corpus reports the rule was found on
// (kvrocks#2512, llvm#137026).

import (
	"strings"
	"testing"
)

const joinerTop = "#0  0x00007f0000001000 in __futex_abstimed_wait_common64 (futex_word=0x7f00000a0910, expected=4242, abstime=0x0) at ./nptl/futex-internal.c:57\n" +
	"#1  0x00007f0000001100 in __pthread_clockjoin_ex (threadid=139637976233728, thread_return=0x0, clockid=0, abstime=0x0, block=true) at ./nptl/pthread_join_common.c:105\n" +
	"#2  0x00007f0000002000 in std::thread::join() () from /lib/x86_64-linux-gnu/libstdc++.so.6\n" +
	"#3  0x0000000000401000 in cache::Flusher::Shutdown (this=0x603000) at flusher.cc:77\n"

// Cut below the stop path: the joined thread is not in the paste.
func TestLoneJoinerIsHedgedCycle(t *testing.T) {
	d, ok := top(parseDump(t, joinerTop+"#4  0x0000000000402000 in cache::Store::Reconfig"))
	if !ok || d.ID != "lock-order-cycle" || d.Confidence != Low {
		t.Fatalf("lone joiner: top %s (%s) %s, want lock-order-cycle (low)", d.ID, d.Confidence, d.Summary)
	}
	has(t, "evidence", strings.Join(d.Evidence, "; "), "joined thread's stack would settle it")
}

// The joined thread in the paste, working: no hedged cycle from the
// join (that thread's state speaks). A join with a timeout returns by
// itself.
func TestLoneJoinerSilent(t *testing.T) {
	both := "Thread 2 (Thread 0x7f00000b0700 (LWP 4301)):\n" +
		"#0  0x0000000000403000 in cache::Flusher::WriteBlock (this=0x603000) at flusher.cc:120\n" +
		"#1  0x0000000000403100 in cache::Flusher::Run (this=0x603000) at flusher.cc:90\n" +
		"#2  0x00007f0000003000 in start_thread () from /lib64/libpthread.so.0\n\n" +
		"Thread 1 (Thread 0x7f00000a0740 (LWP 4300)):\n" + joinerTop +
		"#4  0x0000000000402000 in main () at main.cc:10\n"
	if d, ok := top(parseDump(t, both)); ok && d.Deadlock {
		t.Errorf("joined thread shown working: %s (%s) %s", d.ID, d.Confidence, d.Summary)
	}
	timed := "#0  0x00007f0000001000 in __futex_abstimed_wait_common64 (futex_word=0x7f00000a0910, expected=4242) at ./nptl/futex-internal.c:57\n" +
		"#1  0x00007f0000001100 in __pthread_clockjoin_ex (threadid=139637976233728, thread_return=0x0) at ./nptl/pthread_join_common.c:105\n" +
		"#2  0x00007f0000001200 in pthread_timedjoin_np () from /lib64/libc.so.6\n" +
		"#3  0x0000000000401000 in cache::Flusher::Shutdown (this=0x603000) at flusher.cc:77\n" +
		"#4  0x0000000000402000 in cache::Store::Reconfig"
	if d, ok := top(parseDump(t, timed)); ok && d.ID == "lock-order-cycle" {
		t.Errorf("a timed join: %s (%s) %s", d.ID, d.Confidence, d.Summary)
	}
}
