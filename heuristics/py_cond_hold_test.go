package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// queueHoldSnap is testdata/patients/py_queue_hold.py as `py-spy dump
// --native` shows it (hand-built from hangdoc's live read): the producer
// waits for room in a full queue inside `with lock:`, the consumer waits
// for that lock, main joins at exit. more are extra threads.
func queueHoldSnap(more ...*stacks.Thread) *stacks.Snapshot {
	const th = "/usr/lib/python3.11/threading.py"
	acquire := []stacks.Frame{{Func: "__futex_abstimed_wait_common"}, {Func: "__new_sem_wait_slow64.constprop.0"},
		{Func: "PyThread_acquire_lock_timed"}, {Func: "acquire_timed"}, {Func: "lock_PyThread_acquire_lock"}}
	native := func(tid int, py ...stacks.Frame) *stacks.Thread {
		t := pyStack(append(append([]stacks.Frame{}, acquire...), py...)...)
		t.Tid = tid
		return t
	}
	producer := native(11, pyf("Condition.wait", th, 320), pyf("Queue.put", "/usr/lib/python3.11/queue.py", 140),
		pyf("produce", "/app/hold.py", 38), pyf("Thread.run", th, 975))
	consumer := native(12, pyf("consume", "/app/hold.py", 44), pyf("Thread.run", th, 975))
	main := native(10, pyf("_shutdown", th, 1583))
	return &stacks.Snapshot{Schema: stacks.Schema, Source: "py-spy", Processes: []*stacks.Process{{Pid: 100,
		Threads: append([]*stacks.Thread{main, producer, consumer}, more...)}}}
}

func TestPyLockHeldAcrossWait(t *testing.T) {
	d, ok := top(queueHoldSnap())
	if !ok || d.ID != "lock-order-cycle" || d.Confidence != Low || !nbHasTid(d, 11) || !nbHasTid(d, 12) || nbHasTid(d, 10) {
		t.Fatalf("got %s %s %v: %s", d.ID, d.Confidence, d.Tids, d.Summary)
	}
	for _, want := range []string{"held across a wait", "`consume` at /app/hold.py:44", "most likely thread 11", "`produce` at /app/hold.py:38"} {
		if !strings.Contains(d.Summary, want) {
			t.Errorf("summary %q lacks %q", d.Summary, want)
		}
	}
	for _, x := range Diagnose(queueHoldSnap(), Options{}).Diagnoses {
		if x.ID == "lost-wakeup" || x.ID == "self-deadlock" {
			t.Errorf("also %s: %s", x.ID, x.Summary)
		}
	}
}

// Where another explanation is as good, the rule says nothing: a thread
// that runs or sleeps on a timer may hold the lock and let it go; with
// no thread waiting to be woken, the lock waits are another rule's.
func TestPyLockHeldAcrossWaitStaysSilent(t *testing.T) {
	claims := func(snap *stacks.Snapshot) string {
		for _, d := range Diagnose(snap, Options{}).Diagnoses {
			if strings.Contains(d.Summary, "held across a wait") {
				return d.Summary
			}
		}
		return ""
	}
	busy := queueHoldSnap()
	c := busy.Processes[0].Threads[2]
	c.State, c.Samples()[0].State = "R", "R"
	if s := claims(busy); s != "" {
		t.Errorf("the consumer runs: %s", s)
	}
	napper := pyStack(pyf("sleep", "<built-in>", 0), pyf("tick", "/app/hold.py", 60), pyf("Thread.run", "/usr/lib/python3.11/threading.py", 975))
	napper.Tid = 13
	napper.Stack = append([]stacks.Frame{{Func: "clock_nanosleep"}}, napper.Stack...)
	napper.Samples()[0].Stack = napper.Stack
	if s := claims(queueHoldSnap(napper)); s != "" {
		t.Errorf("a thread sleeps on a timer and may hold the lock: %s", s)
	}
	noWake := queueHoldSnap()
	noWake.Processes[0].Threads = noWake.Processes[0].Threads[2:]
	if s := claims(noWake); s != "" {
		t.Errorf("no thread waits to be woken: %s", s)
	}
}

// The native form: a lock that records no holder by design (Rust's std
// Mutex) waited for, a thread parked for a channel's message, nothing
// else: the parked thread most likely holds the lock (rust_recv_hold.rs
// as a live read shows it, hand-built). A lock whose owner a live attach
// could read (a pthread mutex) is the owner graph's, and a thread asleep
// on a timer may hold the lock and let it go: silent.
func TestNativeLockHeldAcrossWait(t *testing.T) {
	parked := func(tid int) *stacks.Thread {
		return thread(tid, "receiver", "syscall", "std::sys::pal::unix::futex::futex_wait", "std::sys::sync::thread_parking::futex::Parker::park",
			"std::thread::Thread::park", "std::sync::mpmc::list::Channel<u64>::recv", "rust_recv_hold::receive", "start_thread")
	}
	rustWaiter := thread(12, "sender", "syscall", "std::sys::pal::unix::futex::futex_wait", "std::sys::sync::mutex::futex::Mutex::lock_contended",
		"std::sys::sync::mutex::futex::Mutex::lock", "std::sync::poison::mutex::Mutex<u64>::lock<u64>", "rust_recv_hold::send_after_lock", "start_thread")
	joiner := thread(10, "main", "__futex_abstimed_wait_common", "__pthread_clockjoin_ex", "std::thread::JoinInner<()>::join", "main")
	d, ok := top(pasted(proc(10, joiner, parked(11), rustWaiter)))
	if !ok || d.ID != "lock-order-cycle" || d.Confidence != Low || !nbHasTid(d, 11) || !nbHasTid(d, 12) || !strings.Contains(d.Summary, "held across a wait") {
		t.Fatalf("got %s %s %v: %s", d.ID, d.Confidence, d.Tids, d.Summary)
	}
	claims := func(snap *stacks.Snapshot) string {
		for _, d := range Diagnose(snap, Options{}).Diagnoses {
			if strings.Contains(d.Summary, "held across a wait") {
				return d.Summary
			}
		}
		return ""
	}
	pthreadWaiter := thread(12, "sender", "futex_wait", "__lll_lock_wait", "pthread_mutex_lock", "send_after_lock", "start_thread")
	if s := claims(pasted(proc(10, joiner, parked(11), pthreadWaiter))); s != "" {
		t.Errorf("a pthread mutex's owner is readable: %s", s)
	}
	napper := thread(13, "tick", "clock_nanosleep", "__GI___nanosleep", "std::thread::sleep", "tick", "start_thread")
	if s := claims(pasted(proc(10, joiner, parked(11), rustWaiter, napper))); s != "" {
		t.Errorf("a thread on a timer may hold the lock: %s", s)
	}
}
