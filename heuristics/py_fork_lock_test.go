package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

const (
	logInit = "/usr/lib/python3.11/logging/__init__.py"
	mpProc  = "/usr/lib/python3.11/multiprocessing/process.py"
	mpFork  = "/usr/lib/python3.11/multiprocessing/popen_fork.py"
	thPy    = "/usr/lib/python3.11/threading.py"
)

// A multiprocessing fork worker blocked in a logging handler's flush on
// the stream lock; in the parent, thread 9002 is inside the handler's
// emit, blocked in write(); main (9000) waits for the worker.
func loggingForkSnap(withParent bool) *stacks.Snapshot {
	worker := pyThread(9010, "python3",
		nf("__futex_abstimed_wait_common", libc), nf("__new_sem_wait_slow64.constprop.0", libc), nf("PyThread_acquire_lock", py311), nf("", py311),
		pf("StreamHandler.flush", logInit, 1094), pf("StreamHandler.emit", logInit, 1114), pf("Handler.handle", logInit, 978),
		pf("Logger.callHandlers", logInit, 1706), pf("Logger.handle", logInit, 1644), pf("Logger._log", logInit, 1634),
		pf("Logger.info", logInit, 1489), pf("work", "py_logging_fork.py", 60),
		pf("BaseProcess.run", mpProc, 108), pf("BaseProcess._bootstrap", mpProc, 314),
		pf("Popen._launch", mpFork, 71), pf("Popen.__init__", mpFork, 19), pf("fork_while_held", "py_fork_patient.py", 60), pf("main", "py_logging_fork.py", 65))
	child := forked(proc(9010, on(worker, futexWait(0x1d2a0f10))), 9000, 9000, 9002)
	if !withParent {
		return live(child)
	}
	main := on(pyThread(9000, "python3", nf("wait4", libc), nf("", py311), pf("Popen.poll", mpFork, 27), pf("Popen.wait", mpFork, 43),
		pf("BaseProcess.join", mpProc, 149), pf("fork_while_held", "py_fork_patient.py", 71), pf("main", "py_logging_fork.py", 65)), &stacks.Wait{Syscall: "wait4", Nr: 61, ChildPid: 9010})
	logger := on(pyThread(9002, "python3", nf("write", libc), nf("", py311), pf("StreamHandler.emit", logInit, 1113),
		pf("Handler.handle", logInit, 978), pf("Logger.info", logInit, 1489), pf("flood", "py_logging_fork.py", 55),
		pf("Thread.run", thPy, 975)), &stacks.Wait{Syscall: "write", Nr: 1, Fd: 4, FdTarget: "pipe:[1]"})
	return live(proc(9000, main, logger), child)
}

func TestPythonForkLogging(t *testing.T) {
	d := one(t, "fork-inherited-lock", loggingForkSnap(true))
	complete(t, d)
	has(t, "summary", d.Summary, "forked child 9010", "logging lock", "`StreamHandler.flush` at "+logInit+":1094",
		"called from `work` at py_logging_fork.py:60", "the parent's thread 9002 `python3` held it, at `StreamHandler.emit` at "+logInit+":1113")
	sameInts(t, "tids", d.Tids, 9010, 9002)
	sameInts(t, "pids", d.Pids, 9010, 9000)
	chain := strings.Join(d.Chain, "\n")
	has(t, "chain", chain, "multiprocessing worker started with the 'fork' start method", "inside a logging handler", "flood")
	lacks(t, "chain", chain, "thread 9000") // the forker waits for the worker: no holder
	has(t, "fix", d.Fix, "'spawn'", "get_context(\"spawn\")", "configure logging afresh")
	// without the parent, the child's side alone
	d = one(t, "fork-inherited-lock", loggingForkSnap(false))
	sameInts(t, "tids", d.Tids, 9010)
	has(t, "summary", d.Summary, "py_logging_fork.py:60")
}

// The logging known issue refines it through Diagnose, with a fix that
// says what to do on a Python that re-initialises the handler locks.
func TestPythonForkLoggingKnownIssue(t *testing.T) {
	ds := Diagnose(loggingForkSnap(true), Options{}).Diagnoses
	d := ds[0]
	if d.ID != "fork-inherited-lock" || d.KnownIssue == nil || d.KnownIssue.ID != "python-logging-fork" {
		t.Fatalf("top %s, known issue %+v: %s", d.ID, d.KnownIssue, dump(ds))
	}
	has(t, "fix", d.Fix, "spawn", "QueueHandler")
	has(t, "explain", d.KnownIssue.Explain, "stream")
}

// threading.Lock across os.fork (pyfork_lock.py): the parent's only other
// blocked thread is named as the likely holder.
func TestPythonForkThreadingLock(t *testing.T) {
	waiter := on(pyThread(9110, "python3", nf("do_futex_wait", libc), nf("__new_sem_wait_slow64", libc), nf("PyThread_acquire_lock_timed", py311),
		nf("lock_PyThread_acquire_lock", py311), pf("child_main", "pyfork_lock.py", 64), pf("main", "pyfork_lock.py", 80), pf("<module>", "pyfork_lock.py", 95)), futexWait(0x55))
	child := forked(proc(9110, waiter), 9100, 9100, 9101)
	main := on(pyThread(9100, "python3", nf("wait4", libc), pf("main", "pyfork_lock.py", 91), pf("<module>", "pyfork_lock.py", 95)), &stacks.Wait{Syscall: "wait4", Nr: 61})
	holder := on(pyThread(9101, "holder", nf("do_futex_wait", libc), nf("PyThread_acquire_lock_timed", py311), pf("Condition.wait", thPy, 320),
		pf("Event.wait", thPy, 622), pf("holder", "pyfork_lock.py", 57), pf("Thread.run", thPy, 975)), futexWait(0x66))
	d := one(t, "fork-inherited-lock", live(proc(9100, main, holder), child))
	sameInts(t, "tids", d.Tids, 9110, 9101)
	has(t, "summary", d.Summary, "`child_main` at pyfork_lock.py:64", "held it, at `Condition.wait` at "+thPy+":320, called from `holder` at pyfork_lock.py:57")
	has(t, "chain", strings.Join(d.Chain, "\n"), "the only other blocked thread is thread 9101 `holder`", "most likely the holder")
	has(t, "fix", d.Fix, "os.register_at_fork", "subprocess")
	none(t, "gil-deadlock", live(proc(9100, main, holder), child))
}

// A DataLoader worker: the known issue with PyTorch's advice.
func TestPythonForkDataLoader(t *testing.T) {
	w := on(pyThread(9210, "pt_data_worker", nf("do_futex_wait", libc), nf("PyThread_acquire_lock_timed", py311), nf("lock_PyThread_acquire_lock", py311),
		pf("Queue.put", "/usr/lib/python3.11/queue.py", 133), pf("_worker_loop", "/site-packages/torch/utils/data/_utils/worker.py", 308),
		pf("BaseProcess.run", mpProc, 108), pf("BaseProcess._bootstrap", mpProc, 314), pf("Popen._launch", mpFork, 71)), futexWait(0x77))
	snap := live(forked(proc(9210, w), 9200, 9200, 9201, 9202))
	ds := Diagnose(snap, Options{}).Diagnoses
	d := ds[0]
	if d.ID != "fork-inherited-lock" || d.KnownIssue == nil || d.KnownIssue.ID != "torch-dataloader-worker-fork" {
		t.Fatalf("top %s, known issue %+v: %s", d.ID, d.KnownIssue, dump(ds))
	}
	has(t, "fix", d.Fix, "multiprocessing_context=\"spawn\"")
	has(t, "summary", d.Summary, "queue.Queue's lock", "`Queue.put` at /usr/lib/python3.11/queue.py:133, called from `_worker_loop`")
}

// py-spy --native on the logging worker alone: no lineage, libpython's
// frames hidden (the semaphore wait is called straight from Python), the
// child's side of fork() read from multiprocessing's frames.
func TestPythonForkPySpyDump(t *testing.T) {
	w := pyThread(9010, "MainThread", nf("__futex_abstimed_wait_common", "libc.so.6"), nf("__new_sem_wait_slow64.constprop.0", "libc.so.6"),
		pf("flush", "logging/__init__.py", 1094), pf("emit", "logging/__init__.py", 1114), pf("handle", "logging/__init__.py", 978),
		pf("info", "logging/__init__.py", 1489), pf("work", "py_logging_fork.py", 60), pf("run", "multiprocessing/process.py", 108),
		pf("_bootstrap", "multiprocessing/process.py", 314), pf("_launch", "multiprocessing/popen_fork.py", 71), pf("__init__", "multiprocessing/popen_fork.py", 19))
	snap := pasted(proc(9010, w))
	snap.Source = "py-spy"
	d := one(t, "fork-inherited-lock", snap)
	sameInts(t, "tids", d.Tids, 9010)
	has(t, "summary", d.Summary, "forked child by its frames", "logging lock", "`flush` at logging/__init__.py:1094, called from `work` at py_logging_fork.py:60")
	has(t, "fix", d.Fix, "spawn")
	// the same thread without multiprocessing's frames: no fork, no claim
	// of a fork
	w.Stack = w.Stack[:5]
	for _, d := range match(t, "fork-inherited-lock", snap) {
		t.Errorf("fork claimed without fork evidence: %s", d.Summary)
	}
}

// numpy on OpenBLAS 0.3.30 in a forked child: the OpenBLAS known issue
// fires on the native frames, and the report gives the Python line of
// the matmul.
func TestPythonNumpyOpenBLASRelock(t *testing.T) {
	blas := "/usr/lib/x86_64-linux-gnu/libopenblas.so.0"
	w := on(pyThread(9310, "python3", nf("__lll_lock_wait", libc), nf("___pthread_mutex_lock", libc), nf("blas_thread_init", blas),
		nf("exec_blas_async", blas), nf("exec_blas", blas), nf("dgemm_thread_nn", blas), nf("cblas_dgemm", blas),
		nf("", "/usr/lib/python3/dist-packages/numpy/core/_multiarray_umath.cpython-311-x86_64-linux-gnu.so"),
		pf("child_main", "py_numpy_fork.py", 79), pf("main", "py_numpy_fork.py", 95)),
		named(lockWait(0x7f00cc00, 9310, 0), "server_lock"))
	snap := live(forked(proc(9310, w), 9300, 9300, 9301, 9302))
	ds := Diagnose(snap, Options{}).Diagnoses
	d := ds[0]
	if d.KnownIssue == nil || d.KnownIssue.ID != "openblas-fork-relock" {
		t.Fatalf("top %s, known issue %+v: %s", d.ID, d.KnownIssue, dump(ds))
	}
	sameInts(t, "tids", d.Tids[:1], 9310)
	has(t, "summary", d.Summary, "(Python: `child_main` at py_numpy_fork.py:79)")
	has(t, "evidence", strings.Join(d.Evidence, "\n"), "Python: thread 9310 `python3` is in `child_main` at py_numpy_fork.py:79")
}
