package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// poolSnap is testdata/patients/py_pool_starvation.py as a py-spy paste
// shows it (hand-built from hangdoc's live read): the only worker waits in
// Future.result for a task of its own pool, main waits for the worker's.
// more are extra threads.
func poolSnap(more ...*stacks.Thread) *stacks.Snapshot {
	const th, fut = "/usr/lib/python3.11/threading.py", "/usr/lib/python3.11/concurrent/futures/_base.py"
	worker := pyStack(pyf("Condition.wait", th, 320), pyf("Future.result", fut, 451), pyf("outer", "/app/pool.py", 5),
		pyf("_WorkItem.run", "/usr/lib/python3.11/concurrent/futures/thread.py", 58), pyf("_worker", "/usr/lib/python3.11/concurrent/futures/thread.py", 83),
		pyf("Thread.run", th, 975))
	worker.Tid = 11
	main := pyStack(pyf("Condition.wait", th, 320), pyf("Future.result", fut, 451), pyf("<module>", "/app/pool.py", 8))
	main.Tid = 10
	return &stacks.Snapshot{Schema: stacks.Schema, Source: "py-spy", Processes: []*stacks.Process{{Pid: 100, Threads: append([]*stacks.Thread{main, worker}, more...)}}}
}

func TestPoolStarvation(t *testing.T) {
	d, ok := top(poolSnap())
	if !ok || d.ID != "self-deadlock" || d.Confidence != Medium || !nbHasTid(d, 11) || nbHasTid(d, 10) {
		t.Fatalf("got %s %s %v: %s", d.ID, d.Confidence, d.Tids, d.Summary)
	}
	if !strings.Contains(d.Summary, "thread-pool starvation") || !strings.Contains(d.Summary, "`outer` at /app/pool.py:5") {
		t.Errorf("summary %q", d.Summary)
	}
	for _, x := range Diagnose(poolSnap(), Options{}).Diagnoses {
		if x.ID == "lost-wakeup" {
			t.Errorf("also lost-wakeup: %s", x.Summary)
		}
	}
	// Java: a fixed pool's workers in FutureTask.get (jstack frames)
	java := func(tid int) *stacks.Thread {
		return &stacks.Thread{Tid: tid, State: "S", Stack: []stacks.Frame{
			{Func: "jdk.internal.misc.Unsafe.park"}, {Func: "java.util.concurrent.locks.LockSupport.park"},
			{Func: "java.util.concurrent.FutureTask.awaitDone"}, {Func: "java.util.concurrent.FutureTask.get"},
			{Func: "app.Report.render", File: "Report.java", Line: 40},
			{Func: "java.util.concurrent.ThreadPoolExecutor.runWorker"}, {Func: "java.util.concurrent.ThreadPoolExecutor$Worker.run"},
			{Func: "java.lang.Thread.run"}}}
	}
	js := &stacks.Snapshot{Schema: stacks.Schema, Source: "jstack", Processes: []*stacks.Process{{Pid: 7, Threads: []*stacks.Thread{java(21), java(22)}}}}
	if d, ok := top(js); !ok || d.ID != "self-deadlock" || !strings.Contains(d.Summary, "all 2 workers") {
		t.Errorf("java: %s %s", d.ID, d.Summary)
	}
}

func TestPoolStarvationStaysSilent(t *testing.T) {
	starved := func(snap *stacks.Snapshot) string {
		for _, d := range Diagnose(snap, Options{}).Diagnoses {
			if strings.Contains(d.Summary, "thread-pool starvation") {
				return d.Summary
			}
		}
		return ""
	}
	// a second worker is idle in the pool's queue: it will run the task
	idle := pyStack(pyf("Condition.wait", "/usr/lib/python3.11/threading.py", 320), pyf("Queue.get", "/usr/lib/python3.11/queue.py", 171),
		pyf("_worker", "/usr/lib/python3.11/concurrent/futures/thread.py", 81), pyf("Thread.run", "/usr/lib/python3.11/threading.py", 975))
	idle.Tid = 12
	if s := starved(poolSnap(idle)); s != "" {
		t.Errorf("an idle worker: %s", s)
	}
	// a thread reads a socket: it may complete the future
	reader := pyStack(pyf("recv_into", "/usr/lib/python3.11/socket.py", 706), pyf("fetch", "/app/net.py", 3))
	reader.Tid = 13
	reader.Wait = &stacks.Wait{Syscall: "recvfrom", Nr: 45, Fd: 5, FdTarget: "socket:[9]"}
	reader.Samples()[0].Wait = reader.Wait
	if s := starved(poolSnap(reader)); s != "" {
		t.Errorf("a reader on a socket: %s", s)
	}
	// a thread whose frames say no wait (a native loop of its own)
	native := &stacks.Thread{Tid: 14, State: "S", Stack: []stacks.Frame{{Func: "epoll_dispatch", Module: "libevent.so"}, {Func: "event_loop", Module: "app"}}}
	if s := starved(poolSnap(native)); s != "" {
		t.Errorf("an unexplained thread: %s", s)
	}
	// no pool worker at all: a future waited for by main alone
	snap := poolSnap()
	snap.Processes[0].Threads = snap.Processes[0].Threads[:1]
	if s := starved(snap); s != "" {
		t.Errorf("no worker: %s", s)
	}
}
