package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// args sets the arguments of frame i of a thread (its samples share the
// stack).
func args(t *stacks.Thread, i int, kv ...string) *stacks.Thread {
	for j := 0; j+1 < len(kv); j += 2 {
		t.Stack[i].Args = append(t.Stack[i].Args, stacks.NewArg(kv[j], kv[j+1]))
	}
	return t
}

func file(t *stacks.Thread, i int, path string) *stacks.Thread {
	t.Stack[i].File = path
	return t
}

func TestArgAddr(t *testing.T) {
	tests := []struct {
		v    string
		want argLock
		ok   bool
	}{
		{"0x5555555580a0 <server_lock>", argLock{0x5555555580a0, "server_lock"}, true},
		{"0x7f00aa00", argLock{0x7f00aa00, ""}, true},
		{"futex@entry=0x560a61b6b100 <the_lock>", argLock{0x560a61b6b100, "the_lock"}, true},
		{"0x5644c80fa128 <work_cond+40>", argLock{0x5644c80fa128, "work_cond+40"}, true},
		{"0x0", argLock{}, false},
		{"0x2", argLock{}, false},
		{"<optimized out>", argLock{}, false},
		{"...", argLock{}, false},
		{"140537894745792", argLock{}, false},
	}
	for _, tt := range tests {
		got, ok := argAddr(stacks.NewArg("m", tt.v))
		if ok != tt.ok || got != tt.want {
			t.Errorf("argAddr(%q) = %+v, %v; want %+v, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestWaitArgLock(t *testing.T) {
	// The lock function's argument wins over the futex word.
	th := args(args(thread(1, "a", mutexFrames("f")...), 0, "futex_word", "0x5000 <m>"), 2, "mutex", "0x5000")
	if l, at, ok := waitArgLock(th); !ok || l != (argLock{0x5000, "m"}) || at != 2 {
		t.Errorf("got %+v at %d, %v", l, at, ok)
	}
	// std::mutex::lock names its mutex `this`.
	th = args(thread(2, "b", "futex_wait", "__lll_lock_wait", "std::mutex::lock", "Pool::open"), 2, "this", "0x6000 <pool>")
	if l, _, ok := waitArgLock(th); !ok || l.Addr != 0x6000 {
		t.Errorf("std::mutex::lock: %+v %v", l, ok)
	}
	// A condition variable's futex is not a lock.
	th = args(thread(3, "c", condFrames("g")...), 2, "mutex", "0x7000 <m>")
	if _, _, ok := waitArgLock(th); ok {
		t.Errorf("condvar wait taken for a lock wait")
	}
	// What attach read wins: arguments are not consulted.
	th = on(args(thread(4, "d", mutexFrames("h")...), 2, "mutex", "0x8000"), lockWait(0x8000, 4, 0))
	if _, _, ok := waitArgLock(th); ok {
		t.Errorf("arguments read for a thread whose mutex attach read")
	}
}

// The same lock address in an outer frame that took it: a self-deadlock
// from the arguments alone.
func relockSnap(outer string) *stacks.Snapshot {
	w := thread(20, "db", mutexFrames("lock_and_log", "flush", outer, "main")...)
	args(w, 2, "mutex", "0x5000 <db_lock>")
	args(w, 3, "m", "0x5000 <db_lock>")
	args(w, 5, "m", "0x5000 <db_lock>")
	return pasted(proc(20, w, thread(21, "io", condFrames("io_loop")...)))
}

func TestSelfDeadlockFromArguments(t *testing.T) {
	d := one(t, "self-deadlock", relockSnap("lock_and_log"))
	complete(t, d)
	if d.Confidence != Medium {
		t.Errorf("confidence %s, want medium", d.Confidence)
	}
	has(t, "summary", d.Summary, "thread 20 `db`", "mutex `db_lock` (0x5000)", "outer frame `lock_and_log`", "already holds")
	has(t, "evidence", strings.Join(d.Evidence, "\n"), "same address 0x5000", "frames #2 and #5")
	// A lock function outside (a wrapper's name says it locks) counts too.
	if d := one(t, "self-deadlock", relockSnap("with_lock_held")); d.Confidence != Medium {
		t.Errorf("wrapper: %s", d.Confidence)
	}
	// An outer frame that merely passes the lock along proves nothing.
	none(t, "self-deadlock", relockSnap("dispatch"))
	// Through Diagnose: first, with what a dump lacks said.
	ds := Diagnose(relockSnap("lock_and_log"), Options{}).Diagnoses
	if ds[0].ID != "self-deadlock" {
		t.Fatalf("top %s: %s", ds[0].ID, dump(ds))
	}
	has(t, "evidence", strings.Join(ds[0].Evidence, "\n"), "no mutex owner in a gdb dump")
	wantHints(t, ds[0], attachHint(20, "on the live process for certainty"))
}

// An atfork child handler that waits for a lock: the process is a
// forked child by its frames.
func TestForkChildFromFrames(t *testing.T) {
	child := func(who string) *stacks.Snapshot {
		th := thread(300, "worker", mutexFrames("log_reinit", "__run_postfork_handlers", "__libc_fork", "spawn_worker", "main")...)
		if who != "" {
			args(th, 4, "who", who)
		}
		return pasted(proc(300, th))
	}
	d := one(t, "fork-inherited-lock", child("atfork_run_child"))
	complete(t, d)
	if d.Confidence != Medium {
		t.Errorf("confidence %s, want medium: the child's handlers are on the stack", d.Confidence)
	}
	has(t, "summary", d.Summary, "process 300 is a forked child by its frames", "`__libc_fork`", "thread 300 `worker`")
	has(t, "chain", d.Chain[0], "atfork_run_child", "runs only in the child")
	none(t, "self-deadlock", child("atfork_run_child"))

	// Inside fork() but the dump does not say which side: low.
	if d := one(t, "fork-inherited-lock", child("")); d.Confidence != Low {
		t.Errorf("confidence %s, want low", d.Confidence)
	}
	// The parent's prepare handlers: not a child.
	th := thread(400, "main", mutexFrames("flush_logs", "__run_prefork_handlers", "__libc_fork", "main")...)
	none(t, "fork-inherited-lock", pasted(proc(400, th)))
	// With lineage read, attach knows better than the frames.
	snap := child("atfork_run_child")
	snap.Evidence.Lineage = true
	none(t, "fork-inherited-lock", snap)
	// Another thread beside it: not the child's only thread.
	snap = child("atfork_run_child")
	snap.Processes[0].Threads = append(snap.Processes[0].Threads, thread(301, "x", condFrames("y")...))
	for _, d := range match(t, "fork-inherited-lock", snap) {
		if strings.Contains(d.Summary, "by its frames") {
			t.Errorf("fork claimed from frames with two threads: %s", d.Summary)
		}
	}
}

// A multiprocessing worker forked with a Python lock held: _launch under
// _bootstrap, from py-spy --native.
func TestForkChildPythonFrames(t *testing.T) {
	th := thread(500, "python3", "do_futex_wait", "__new_sem_wait_slow64", "PyThread_acquire_lock_timed",
		"lock_PyThread_acquire_lock", "work", "run", "_bootstrap", "_launch", "__init__", "_Popen", "start", "<module>")
	file(th, 6, "/usr/lib/python3.12/multiprocessing/process.py")
	file(th, 7, "/usr/lib/python3.12/multiprocessing/popen_fork.py")
	d := one(t, "fork-inherited-lock", pasted(proc(500, th)))
	if d.Confidence != Medium {
		t.Errorf("confidence %s, want medium", d.Confidence)
	}
	has(t, "summary", d.Summary, "forked child by its frames", "_launch")
	// The same stack outside multiprocessing is no fork.
	th2 := thread(600, "python3", "do_futex_wait", "__new_sem_wait_slow64", "PyThread_acquire_lock_timed",
		"lock_PyThread_acquire_lock", "work", "run", "_bootstrap", "_launch", "main")
	file(th2, 6, "/srv/app/runner.py")
	file(th2, 7, "/srv/app/runner.py")
	none(t, "fork-inherited-lock", pasted(proc(600, th2)))
}

// A pasted `thread apply all bt` whose one thread is the main one lists
// every thread; one whose one thread is not may be a single `bt`: its
// verdict says so and what would settle it. A thread known not to be
// the main one (its tid is not the pid) is one of several: with nothing
// on its stack showing it holding the lock, the holder is most likely
// another thread, as for a thread whose stack begins in a thread start.
func TestLoneWaiterNeedsTheMainThread(t *testing.T) {
	d := one(t, "self-deadlock", pasted(proc(700, thread(700, "main", mutexFrames("update", "main")...))))
	has(t, "summary", d.Summary, "it most likely holds it already", "or its holder exited")
	has(t, "chain", d.Chain[1], "the only thread of process 700")
	worker := pasted(proc(700, thread(701, "worker", mutexFrames("update")...)))
	d = one(t, "lock-order-cycle", worker)
	has(t, "chain", d.Chain[1], "is not the main thread of process 700")
	if d.Confidence != Low {
		t.Errorf("worker's bt: confidence %s, want low", d.Confidence)
	}
	none(t, "self-deadlock", worker)
	for _, snap := range []*stacks.Snapshot{
		pasted(proc(0, thread(0, "", mutexFrames("update", "main")...))),
	} {
		d := one(t, "self-deadlock", snap)
		has(t, "chain", d.Chain[1], "the only thread in the paste")
		has(t, "evidence", strings.Join(d.Evidence, "\n"), "the paste holds only this thread")
		if d.Confidence != Low {
			t.Errorf("one thread's bt: confidence %s, want low", d.Confidence)
		}
	}
	// a second pasted thread that is not the main one: still not every
	// thread, and two lone waiters are no lone waiter
	none(t, "self-deadlock", pasted(proc(700, thread(701, "worker", mutexFrames("update")...), thread(702, "other", mutexFrames("update")...))))
}

// A known issue's frames choose the verdict of a lone waiter: a lock
// held across fork(), not a re-lock.
func TestLoneWaiterKnownIssueChooses(t *testing.T) {
	snap := pasted(proc(800, thread(800, "app", mutexFrames("std::mutex::lock", "DevicePool::open_device", "main")...)))
	d := one(t, "fork-inherited-lock", snap)
	has(t, "summary", d.Summary, "most likely a forked child")
	none(t, "self-deadlock", snap)
	ds := Diagnose(snap, Options{}).Diagnoses
	if ds[0].ID != "fork-inherited-lock" || ds[0].KnownIssue == nil || ds[0].KnownIssue.ID != "tt-metal-devicepool-fork" {
		t.Errorf("top %s, known issue %+v", ds[0].ID, ds[0].KnownIssue)
	}
	// A user's rule counts as much as a built-in one.
	rule := Rule{ID: "mylib-fork", Base: []string{"fork-inherited-lock"}, Frames: []string{"^mylib_"}, Title: "mylib across fork", Fix: "spawn"}
	snap = pasted(proc(900, thread(900, "app", mutexFrames("mylib_get", "main")...)))
	if ds := Diagnose(snap, Options{Rules: []Rule{rule}}).Diagnoses; ds[0].ID != "fork-inherited-lock" || ds[0].KnownIssue == nil {
		t.Errorf("with a user rule: %s", dump(ds))
	}
	if ds := Diagnose(snap, Options{}).Diagnoses; ds[0].ID != "self-deadlock" {
		t.Errorf("without it: %s", dump(ds))
	}
}

func TestAbsentEvidenceNoted(t *testing.T) {
	for _, d := range Diagnose(openblasRelock(0), Options{}).Diagnoses {
		for _, e := range d.Evidence {
			if strings.Contains(e, "hangdoc attach") {
				t.Errorf("live snapshot told to attach: %s", e)
			}
		}
		if len(d.Hints) > 0 {
			t.Errorf("live snapshot told to attach: %+v", d.Hints)
		}
	}
	snap := pasted(proc(4700,
		thread(4711, "worker", mutexFrames("blas_thread_init", "exec_blas_async")...),
		thread(4700, "main", joinFrames("main")...),
	))
	ds := Diagnose(snap, Options{}).Diagnoses
	has(t, "evidence", strings.Join(ds[0].Evidence, "\n"), "no mutex owner in a gdb dump")
	wantHints(t, ds[0], attachHint(4700, "on the live process for certainty"))
	snap.Source = "merged"
	ds = Diagnose(snap, Options{}).Diagnoses
	has(t, "evidence", strings.Join(ds[0].Evidence, "\n"), "no mutex owner in these inputs")
}

// A rule for forked children applies to a child the frames tell: a
// multiprocessing worker whose logging lock was held at fork().
func TestForkedRuleFromFrames(t *testing.T) {
	th := thread(510, "python3", "do_futex_wait", "__new_sem_wait_slow64", "PyThread_acquire_lock_timed",
		"lock_PyThread_acquire_lock", "Handler.acquire", "Handler.handle", "Logger.info", "work", "run", "_bootstrap", "_launch", "__init__", "<module>")
	file(th, 9, "/usr/lib/python3.12/multiprocessing/process.py")
	file(th, 10, "/usr/lib/python3.12/multiprocessing/popen_fork.py")
	ds := Diagnose(pasted(proc(510, th)), Options{}).Diagnoses
	d := ds[0]
	if d.ID != "fork-inherited-lock" || d.KnownIssue == nil || d.KnownIssue.ID != "python-logging-fork" {
		t.Fatalf("top %s, known issue %+v: %s", d.ID, d.KnownIssue, dump(ds))
	}
	has(t, "evidence", strings.Join(d.Evidence, "\n"), "pid 510 is a forked child by its frames")
}

func TestTakesLocks(t *testing.T) {
	for _, n := range []string{"lock_and_log", "with_lock_held", "LOCK_COMMAND", "Foo::lock", "MutexLock", "acquire_slot", "db_mutex_enter", "RWLock::AcquireWrite"} {
		if !takesLocks(stacks.Frame{Func: n}) {
			t.Errorf("%s: not taken for a lock function", n)
		}
	}
	for _, n := range []string{"block_on_queue", "clock_gettime", "unlock_all", "release_lock", "deadlock_detect", "process"} {
		if takesLocks(stacks.Frame{Func: n}) {
			t.Errorf("%s: taken for a lock function", n)
		}
	}
}

// A handler waits for a lock whose address the interrupted code's frame
// was called with: re-entry by address, where names alone do not tell.
func TestSignalReentryByAddress(t *testing.T) {
	th := thread(90, "cache", mutexFrames("cache_get", "on_alarm", "<signal>", "cache_fill", "main")...)
	args(th, 2, "mutex", "0x9000 <cache_lock>")
	args(th, 6, "c", "0x9000 <cache_lock>", "n", "3")
	snap := pasted(proc(90, th))
	d := one(t, "signal-handler-reentry", snap)
	has(t, "summary", d.Summary, "mutex `cache_lock` (0x9000)", "signal handler `on_alarm`", "`cache_fill`", "`cache_lock` lock")
	// Without the arguments nothing ties the two sides.
	th2 := thread(91, "cache", mutexFrames("cache_get", "on_alarm", "<signal>", "cache_fill", "main")...)
	none(t, "signal-handler-reentry", pasted(proc(91, th2)))
}

// Held locks from the stack (hand-written stacks in the shape of real
// pastes): the function that asked for the lock further down the same
// stack, and a static guard whose initialiser runs below its waiter,
// make a lone waiter a self-deadlock at medium; without them it stays
// low.
func TestReentryOnStack(t *testing.T) {
	recursion := thread(900, "main", append(mutexFrames("Registry::add", "Registry::load"), "Registry::add", "main")...)
	d := one(t, "self-deadlock", pasted(proc(900, recursion)))
	if d.Confidence != Medium {
		t.Errorf("recursion: confidence %s, want medium", d.Confidence)
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "`Registry::add`, which asks for the lock at #3, is also at #5")

	guard := thread(901, "main", "syscall", "__cxa_guard_acquire", "getHeap", "xxmalloc", "operator new", "Heap::Heap", "getHeap", "main")
	guard.Stack[5].Args = []stacks.Arg{stacks.NewArg("this", "0x7fc6ad350288 <getHeap()::buf>")}
	guard.Stack[6].Func = "initHeaps" // only the argument says which static is being built
	d = one(t, "self-deadlock", pasted(proc(901, guard)))
	if d.Confidence != Medium {
		t.Errorf("guard: confidence %s, want medium", d.Confidence)
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "getHeap()::buf", "constructing that static")

	// The files of the two frames: a header is where an inlined callee's
	// line is (gperftools#304: spinlock.h and symbolize.h), not the
	// function's own file; two source files are two functions.
	inlined := thread(903, "main", append(mutexFrames("Registry::add", "Registry::load"), "Registry::add", "main")...)
	inlined.Stack[3].File, inlined.Stack[5].File = "src/base/spinlock.h", "src/symbolize.h"
	if d := one(t, "self-deadlock", pasted(proc(903, inlined))); d.Confidence != Medium {
		t.Errorf("asker again, lines in headers: confidence %s, want medium", d.Confidence)
	}
	twoFiles := thread(904, "main", append(mutexFrames("add", "load"), "add", "main")...)
	twoFiles.Stack[3].File, twoFiles.Stack[5].File = "registry.c", "cache.c"
	if d := one(t, "self-deadlock", pasted(proc(904, twoFiles))); d.Confidence != Low {
		t.Errorf("two static functions of one name in two files: confidence %s, want low", d.Confidence)
	}

	plain := thread(902, "main", mutexFrames("Registry::add", "main")...)
	if d := one(t, "self-deadlock", pasted(proc(902, plain))); d.Confidence != Low {
		t.Errorf("no re-entry on the stack: confidence %s, want low", d.Confidence)
	}
}

// A Python lock asked for by the interpreter's own C code (here
// _thread's local_clear, the shape of a real FreeBSD paste) is a lock,
// not the semaphore under an Event: a lone waiter there gets a verdict;
// the same lock taken by threading.Lock.acquire from Python code (which
// Event and Condition use) does not.
func TestPythonLockTakenByC(t *testing.T) {
	byC := thread(950, "python3", "_umtx_op", "sem_clockwait_np", "PyThread_acquire_lock_timed", "PyThread_acquire_lock", "local_clear", "local_dealloc", "subtype_dealloc", "main")
	if d := one(t, "self-deadlock", pasted(proc(950, byC))); d.Confidence != Low {
		t.Errorf("confidence %s, want low", d.Confidence)
	}
	byPython := thread(951, "python3", "do_futex_wait", "__new_sem_wait_slow64", "PyThread_acquire_lock_timed", "lock_PyThread_acquire_lock", "method_vectorcall_VARARGS_KEYWORDS", "_PyEval_EvalFrameDefault", "main")
	none(t, "self-deadlock", pasted(proc(951, byPython)))
}

// A lone waiter on a glibc pthread mutex, which records its holder: the
// verdict names the gdb command that settles it (the lock call's frame,
// then __owner). A low-level lock that records none (malloc's arena
// lock) gets no such line. Written by hand in gdb's format.
func TestLoneWaiterOwnerAsk(t *testing.T) {
	mutex := "Thread 4 (Thread 0x7f0000004700 (LWP 4004)):\n" +
		"#0  0x00007f0000001000 in __lll_lock_wait () from /lib64/libpthread.so.0\n" +
		"#1  0x00007f0000001100 in _L_lock_909 () from /lib64/libpthread.so.0\n" +
		"#2  0x00007f0000001200 in pthread_mutex_lock () from /lib64/libpthread.so.0\n" +
		"#3  0x0000000000401000 in registry_notify (id=7) at registry.c:120\n" +
		"#4  0x0000000000402000 in registry_sweep (data=0x0) at registry.c:80\n" +
		"#5  0x00007f0000002000 in start_thread () from /lib64/libpthread.so.0\n" +
		"#6  0x00007f0000003000 in clone () from /lib64/libc.so.6\n"
	d, ok := top(parseDump(t, mutex))
	if !ok {
		t.Fatal("no verdict")
	}
	has(t, "evidence", strings.Join(d.Evidence, "\n"), "`frame 2` (`pthread_mutex_lock`) then `p mutex->__data.__owner`")
	arena := strings.Replace(strings.Replace(mutex, "__lll_lock_wait ()", "__lll_lock_wait_private ()", 1),
		"#1  0x00007f0000001100 in _L_lock_909 () from /lib64/libpthread.so.0\n#2  0x00007f0000001200 in pthread_mutex_lock () from /lib64/libpthread.so.0\n",
		"#1  0x00007f0000001100 in _int_free (av=0x7f0000090b20 <main_arena>) at malloc.c:3960\n#2  0x00007f0000001200 in free () from /lib64/libc.so.6\n", 1)
	if d, ok := top(parseDump(t, arena)); !ok || !d.Deadlock {
		t.Errorf("the arena lock waiter: no lock verdict")
	} else if strings.Contains(strings.Join(d.Evidence, "\n"), "__data.__owner") {
		t.Errorf("malloc's arena lock records no owner: %q", d.Evidence)
	}
}
