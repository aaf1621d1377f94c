package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// Builders for Python threads: native frames (function + module) and
// Python frames (function + .py file + line), innermost first.

func nf(fn, module string) stacks.Frame { return stacks.Frame{Func: fn, Module: module} }

func pf(fn, file string, line int) stacks.Frame {
	return stacks.Frame{Func: fn, File: file, Line: line}
}

func pyThread(tid int, name string, frames ...stacks.Frame) *stacks.Thread {
	t := &stacks.Thread{Tid: tid, Name: name, State: "S", Stack: frames}
	for range 3 {
		t.AddSample(stacks.Sample{State: "S", Stack: frames})
	}
	return t
}

const (
	pyLibc = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	py311  = "/usr/bin/python3.11"
	gilext = "/tmp/x/py_gilext.cpython-311-x86_64-linux-gnu.so"
)

// The GIL holder (main) in pthread_mutex_lock from the extension's
// lock(), with the Python line that called it; the mutex's owner
// (regainer) in take_gil, unnamed in a stripped python3.11, under
// PyEval_RestoreThread.
func gilHolder(withPython bool) *stacks.Thread {
	st := []stacks.Frame{nf("__lll_lock_wait", pyLibc), nf("___pthread_mutex_lock", pyLibc), nf("lock", gilext), nf("", py311), nf("PyObject_Vectorcall", py311)}
	if withPython {
		st = append(st, pf("main", "py_gilext.py", 36), pf("<module>", "py_gilext.py", 40))
	} else {
		st = append(st, nf("_PyEval_EvalFrameDefault", py311), nf("PyEval_EvalCode", py311))
	}
	return pyThread(8001, "python3", st...)
}

func gilWaiter() *stacks.Thread {
	return pyThread(8002, "regainer", nf("__futex_abstimed_wait_common", pyLibc), nf("___pthread_cond_timedwait64", pyLibc),
		nf("", py311), nf("PyEval_RestoreThread", py311), nf("hold_then_regain", gilext), nf("", py311),
		pf("run", "/usr/lib/python3.11/threading.py", 975), pf("_bootstrap_inner", "/usr/lib/python3.11/threading.py", 1038))
}

func TestGILDeadlockLive(t *testing.T) {
	for _, withPython := range []bool{false, true} {
		h := on(gilHolder(withPython), named(lockWait(0x7f0010, 8002, 0), "ext_mutex"))
		w := on(gilWaiter(), futexWait(0xa5b8f0))
		snap := live(proc(8001, h, w))
		d := one(t, "gil-deadlock", snap)
		complete(t, d)
		if d.Confidence != High {
			t.Errorf("confidence %s, want high: the owner read closes the cycle", d.Confidence)
		}
		sameInts(t, "tids", d.Tids, 8001, 8002)
		sameInts(t, "pids", d.Pids, 8001)
		has(t, "summary", d.Summary, "thread 8001 `python3` holds the GIL", "`ext_mutex`", "called from `lock`",
			"held by thread 8002 `regainer`", "`PyEval_RestoreThread` called from `hold_then_regain`")
		// no lock signature misreads it, and lost-wakeup defers
		none(t, "lost-wakeup", snap)
		none(t, "lock-order-cycle", snap)
		none(t, "self-deadlock", snap)
		if withPython {
			ds := Diagnose(snap, Options{}).Diagnoses
			if ds[0].ID != "gil-deadlock" {
				t.Fatalf("top diagnosis %s, want gil-deadlock: %s", ds[0].ID, dump(ds))
			}
			has(t, "summary", ds[0].Summary, "(Python: `main` at py_gilext.py:36)")
		}
	}
}

// take_gil wakes every switch interval (5 ms) to ask for the GIL: a
// sample may catch the waiter running, with a few CPU ticks. It is still
// the GIL waiter (a live attach missed the deadlock once in eight runs).
func TestGILDeadlockWaiterCaughtRunning(t *testing.T) {
	h := on(gilHolder(true), named(lockWait(0x7f0010, 8002, 0), "ext_mutex"))
	w := on(gilWaiter(), futexWait(0xa5b8f0))
	w.Samples()[1].State, w.Samples()[1].CPUTicks = "R", 2
	d := one(t, "gil-deadlock", live(proc(8001, h, w)))
	sameInts(t, "tids", d.Tids, 8001, 8002)
}

// The mutex's owner is a thread that does not wait for the GIL: a plain
// lock wait, not this.
func TestGILDeadlockOwnerElsewhere(t *testing.T) {
	h := on(gilHolder(true), lockWait(0x7f0010, 8003, 0))
	other := on(thread(8003, "io", condFrames("io_loop")...), futexWait(0x99))
	none(t, "gil-deadlock", live(proc(8001, h, gilWaiter(), other)))
}

// A thread waiting on a Python lock dropped the GIL: it is no holder.
func TestGILDeadlockNotForPythonLock(t *testing.T) {
	h := on(pyThread(8001, "python3", nf("do_futex_wait", pyLibc), nf("__new_sem_wait_slow64", pyLibc),
		nf("PyThread_acquire_lock_timed", py311), nf("lock_PyThread_acquire_lock", py311), pf("main", "x.py", 3)), futexWait(0x55))
	none(t, "gil-deadlock", live(proc(8001, h, gilWaiter())))
}

// py-spy --native: it says who holds the GIL and hides libpython's frames
// (take_gil, PyEval_RestoreThread): the waiter sleeps in a condvar called
// straight from the extension whose lock call the holder waits in.
func TestGILDeadlockPySpy(t *testing.T) {
	h := pyThread(8001, "MainThread", nf("__lll_lock_wait", "libc.so.6"), nf("___pthread_mutex_lock", "libc.so.6"),
		nf("lock", "py_gilext.cpython-311-x86_64-linux-gnu.so"), pf("main", "py_gilext.py", 36))
	h.Runtime = stacks.PythonHoldingGIL()
	w := pyThread(8002, "regainer", nf("__futex_abstimed_wait_common", "libc.so.6"), nf("___pthread_cond_timedwait64", "libc.so.6"),
		nf("hold_then_regain", "py_gilext.cpython-311-x86_64-linux-gnu.so"), pf("run", "threading.py", 975))
	snap := pasted(proc(8001, h, w))
	snap.Source, snap.Evidence.GIL = "py-spy", true
	d := one(t, "gil-deadlock", snap)
	sameInts(t, "tids", d.Tids, 8001, 8002)
	has(t, "chain", d.Chain[0], "the snapshot says so")
	// without the GIL evidence, the holder is not known: none
	h.Runtime, snap.Evidence.GIL = nil, false
	none(t, "gil-deadlock", snap)
}

// gdb on a stripped python: no owner, no GIL evidence; take_gil's caller
// still says who waits for the GIL.
func TestGILDeadlockPasted(t *testing.T) {
	snap := pasted(proc(8001, gilHolder(false), gilWaiter()))
	d := one(t, "gil-deadlock", snap)
	if d.Confidence != Low {
		t.Errorf("confidence %s, want low without an owner", d.Confidence)
	}
	sameInts(t, "tids", d.Tids, 8001, 8002)
	has(t, "summary", d.Summary, "if the mutex's owner is a GIL waiter")
}

// A plain C program: a mutex wait and a condvar wait are no GIL deadlock.
func TestGILDeadlockNotWithoutPython(t *testing.T) {
	a := on(thread(8001, "main", mutexFrames("worker", "main")...), lockWait(0x10, 8002, 0))
	b := on(thread(8002, "other", condFrames("other_main")...), futexWait(0x20))
	none(t, "gil-deadlock", live(proc(8001, a, b)))
}

// A paste of a py-spy dump (who holds the GIL is read) and a gdb dump of
// another Python process (the holder is inferred): the evidence is each
// process's own, so the gdb process's holder is not ruled out because it
// lacks py-spy's GIL mark, and both GIL deadlocks are named.
func TestGILDeadlockEvidencePerProcess(t *testing.T) {
	h := pyThread(7001, "MainThread", nf("__lll_lock_wait", "libc.so.6"), nf("___pthread_mutex_lock", "libc.so.6"),
		nf("lock", "py_gilext.cpython-311-x86_64-linux-gnu.so"), pf("main", "py_gilext.py", 36))
	h.Runtime = stacks.PythonHoldingGIL()
	w := pyThread(7002, "regainer", nf("__futex_abstimed_wait_common", "libc.so.6"), nf("___pthread_cond_timedwait64", "libc.so.6"),
		nf("hold_then_regain", "py_gilext.cpython-311-x86_64-linux-gnu.so"), pf("run", "threading.py", 975))
	py := pasted(proc(7001, h, w))
	py.Source, py.Evidence.GIL = "py-spy", true
	gdb := pasted(proc(8001, gilHolder(false), gilWaiter()))
	snap := stacks.Merge(py, gdb)
	var pids []int
	for _, d := range Diagnose(snap, Options{}).Diagnoses {
		if d.ID == "gil-deadlock" {
			pids = append(pids, d.Pids...)
		}
	}
	sameInts(t, "gil-deadlock pids", pids, 7001, 8001)
}

// TestGILWaiterCaughtAwake: take_gil wakes every 5 ms; a live sample of
// CPython 3.12.1 (TestLivePythonGILDeadlock, a CI run on 2026-12-02)
// caught the waiter in _PyThreadState_MustExit, above its condvar wait.
// It still waits for the GIL; a libc frame above take_gil's callers that
// is not a wait is not the GIL wait's.
func TestGILWaiterCaughtAwake(t *testing.T) {
	const lib = "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0"
	awake := pyThread(2, "python3",
		stacks.Frame{Func: "_PyInterpreterState_GetFinalizing", Module: lib, Inlined: true},
		nf("_PyThreadState_MustExit", lib), nf("take_gil", lib), nf("PyEval_RestoreThread", lib),
		nf("hold_then_regain", gilext), nf("cfunction_vectorcall_NOARGS", lib))
	if !waitsForGIL(awake) {
		t.Errorf("a waiter caught in take_gil's loop is not read as waiting for the GIL")
	}
	other := pyThread(3, "python3", nf("memcpy", pyLibc), nf("take_gil", lib), nf("PyEval_RestoreThread", lib))
	if waitsForGIL(other) {
		t.Errorf("a libc call that is no wait, above take_gil, read as the GIL wait")
	}
	running := pyThread(4, "python3", nf("_PyEval_EvalFrameDefault", lib), nf("PyEval_EvalCode", lib))
	if waitsForGIL(running) {
		t.Errorf("a thread running Python code read as waiting for the GIL")
	}
}
