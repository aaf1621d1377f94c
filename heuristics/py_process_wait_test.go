package heuristics_test

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// TestLivePythonWaitsOnWorker: the parent of py_mp_wait attached alone
// (its worker not in the snapshot): the main thread reads the worker's
// pipe in multiprocessing's connection, the consumer thread waits on a
// queue.Queue. It waits on another process: waiting-on-process naming
// the main thread, and no deadlock claimed (nor an io-wait that would
// hide whom it waits for).
func TestLivePythonWaitsOnWorker(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	script := patient.Build(t, "py_mp_wait.py")
	l := startLive(t, []string{patient.Python, script}, nil)
	main := l.p.Int(t, "main")
	l.wantNoDeadlock(t)
	var mainThread *stacks.Thread
	for _, th := range l.process(t, l.p.Pid).Threads {
		if th.Tid == main {
			mainThread = th
		}
	}
	if mainThread == nil || len(pyFrames(mainThread)) == 0 {
		t.Skipf("pending: the main thread has no Python frames in this snapshot (native only)")
	}
	d := l.wantVerdict(t, "waiting-on-process")
	if d == nil {
		return
	}
	wantPids(t, d, l.p.Pid)
	if len(d.Tids) == 0 || d.Tids[0] != main {
		t.Errorf("tids %v, want the main thread %d first", d.Tids, main)
	}
	if !strings.Contains(d.Summary, "multiprocessing connection") || !strings.Contains(d.Summary, "connection.py") {
		t.Errorf("summary: %s", d.Summary)
	}
}

// TestPastedPythonWaitsOnProcess (hand-written py-spy pastes): a main
// thread in subprocess's communicate waits on its child: waiting-on-
// process, no deadlock. An idle pool (workers in queue.get, the main
// thread in Thread.join) waits on no process: not said.
func TestPastedPythonWaitsOnProcess(t *testing.T) {
	child := "Thread 0x7F0000000001 (idle): \"MainThread\"\n" +
		"    _communicate (subprocess.py:2021)\n    communicate (subprocess.py:1209)\n    run_tool (tool.py:40)\n    <module> (main.py:9)\n" +
		"Thread 0x7F0000000002 (idle): \"ThreadPoolExecutor-0_0\"\n" +
		"    wait (threading.py:320)\n    get (queue.py:171)\n    _worker (concurrent/futures/thread.py:81)\n    run (threading.py:975)\n"
	ds := diagnoseGoText(t, child)
	if d := ds[0]; d.ID != "waiting-on-process" || d.Deadlock || !strings.Contains(d.Summary, "a child process (subprocess)") {
		t.Errorf("got %s deadlock=%v: %s\nall: %s", d.ID, d.Deadlock, d.Summary, goIDs(ds))
	}
	idle := "Thread 0x7F0000000001 (idle): \"MainThread\"\n" +
		"    _wait_for_tstate_lock (threading.py:1116)\n    join (threading.py:1096)\n    <module> (main.py:9)\n" +
		"Thread 0x7F0000000002 (idle): \"ThreadPoolExecutor-0_0\"\n" +
		"    wait (threading.py:320)\n    get (queue.py:171)\n    _worker (concurrent/futures/thread.py:81)\n    run (threading.py:975)\n"
	for _, d := range diagnoseGoText(t, idle) {
		if d.ID == "waiting-on-process" {
			t.Errorf("an idle pool: %s", d.Summary)
		}
	}
}
