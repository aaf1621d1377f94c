package heuristics

import (
	"slices"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

func frames(names ...string) []stacks.Frame { return thread(1, "", names...).Stack }

func TestBlockedIn(t *testing.T) {
	cases := []struct {
		stack  []string
		class  waitClass
		caller string
	}{
		{mutexFrames("worker", "start_thread"), waitLock, "worker"},
		{[]string{"__lll_lock_wait_private", "_int_malloc", "malloc"}, waitLock, "_int_malloc"},
		{[]string{"syscall", "std::sys::sync::mutex::futex::Mutex::lock_contended", "app::run"}, waitLock, "app::run"},
		{[]string{"std::mutex::lock()", "std::lock_guard<std::mutex>::lock_guard(std::mutex&)", "update"}, waitLock, "update"},
		{condFrames("consumer"), waitCond, "consumer"},
		{[]string{"futex_wait", "std::condition_variable::wait(std::unique_lock<std::mutex>&)", "take"}, waitCond, "take"},
		// woken from a condvar, reacquiring its mutex: it waits on the lock
		{[]string{"__lll_lock_wait", "__pthread_mutex_cond_lock", "__pthread_cond_wait_common", "pthread_cond_wait", "consumer"}, waitLock, "consumer"},
		{[]string{"do_futex_wait", "__new_sem_wait_slow64", "sem_clockwait", "PyThread_acquire_lock_timed", "lock_PyThread_acquire_lock"}, waitPyLock, ""},
		{joinFrames("main"), waitJoin, "main"},
		{[]string{"??", "__lll_lock_wait", "pthread_mutex_lock", "f"}, waitLock, "f"},
		{[]string{"read", "handler", "<signal>", "pause"}, notWaiting, "read"},
		{[]string{"compute", "main"}, notWaiting, "compute"},
	}
	for _, c := range cases {
		st := frames(c.stack...)
		class, i, _ := blockedIn(st)
		caller := ""
		if i < len(st) {
			caller = st[i].Func
		}
		if class != c.class || caller != c.caller {
			t.Errorf("blockedIn(%v) = %v, caller %q; want %v, %q", c.stack, class, caller, c.class, c.caller)
		}
	}
	if !inMutexLock(frames(mutexFrames("f")...)) || inMutexLock(frames(condFrames("f")...)) {
		t.Error("inMutexLock")
	}
}

func TestLoaderAndSignalFrames(t *testing.T) {
	for _, st := range [][]string{
		{"__lll_lock_wait", "pthread_mutex_lock", "init_plugin", "call_init", "_dl_init", "dl_open_worker", "_dl_catch_exception", "dlopen"},
		{"pthread_mutex_lock", "__GI___dl_iterate_phdr", "_Unwind_Find_FDE"},
		{"update_slotinfo", "__tls_get_addr", "f"},
	} {
		if !inLoader(frames(st...)) {
			t.Errorf("inLoader(%v) = false", st)
		}
	}
	if inLoader(frames("dlmalloc", "main")) {
		t.Error("dlmalloc is not the loader")
	}
	if !inLoader([]stacks.Frame{{Func: "??", Module: "/lib64/ld-linux-x86-64.so.2"}}) {
		t.Error("a frame in ld.so is in the loader")
	}
	if i := signalFrame(frames("read", "on_usr1", "<signal>", "pause")); i != 2 {
		t.Errorf("signalFrame = %d", i)
	}
	if i := signalFrame(frames("handler", "__restore_rt", "pause")); i != 1 {
		t.Errorf("signalFrame(__restore_rt) = %d", i)
	}
	if i := signalFrame(frames("pause")); i != -1 {
		t.Errorf("signalFrame without one = %d", i)
	}
}

func TestOwnerResolution(t *testing.T) {
	waiter := func(tid int, w *stacks.Wait) *stacks.Thread { return on(thread(tid, "w", mutexFrames("f")...), w) }
	snap := live(
		proc(100,
			waiter(101, lockWait(0x10, 102, 0)), // live owner
			thread(102, "owner", "compute"),
			waiter(103, lockWait(0x20, 103, 0)), // itself
			waiter(104, lockWait(0x30, 199, 0)), // gone
			waiter(105, lockWait(0x40, 301, 0)), // reused by an unrelated process
			waiter(106, lockWait(0x50, 0, 0)),   // elision: no owner recorded
			waiter(107, lockWait(0x60, 301, kindPShared)),
			waiter(108, lockWait(0x70, ownerInconsistent, kindRobust)),
		),
		forked(proc(200,
			waiter(200, lockWait(0x10, 90, 0)),  // a parent thread at fork, parent not sampled
			waiter(201, lockWait(0x80, 401, 0)), // the parent's thread, parent sampled
			waiter(202, lockWait(0x90, 555, 0)), // not a parent thread
		), 400, 90, 91),
		proc(300, thread(301, "other", "poll")),
		proc(400, thread(400, "parent", "main"), thread(401, "pool", "worker")),
	)
	a := newAnalysis(snap)
	want := map[int]OwnerKind{
		101: OwnerLive, 103: OwnerLive, 104: OwnerGone, 105: OwnerReused, 106: OwnerUnknown,
		107: OwnerLive, 108: OwnerUnknown, 200: OwnerForkParent, 201: OwnerForkParent, 202: OwnerGone,
	}
	for tid, kind := range want {
		es := waitsOf(a, tid)
		if len(es) != 1 || es[0].Kind != EdgeMutex {
			t.Fatalf("thread %d: edges %+v", tid, es)
		}
		if got := es[0].Lock.Owner.Kind; got != kind {
			t.Errorf("thread %d: owner kind %v, want %v", tid, got, kind)
		}
	}
	if e := waitsOf(a, 103)[0]; e.To.Thread == nil || e.To.Thread.Tid != 103 {
		t.Errorf("self edge goes to %+v", e.To)
	}
	if e := waitsOf(a, 105)[0]; e.To.Thread != nil {
		t.Error("a reused tid must not be an edge to the unrelated thread")
	}
	// the child's copy of 0x10 is another lock than the parent's
	if l1, l2 := waitsOf(a, 101)[0].Lock, waitsOf(a, 200)[0].Lock; l1 == l2 {
		t.Error("locks at one address in two processes were merged")
	}
	h := a.Holders()
	if len(h[102]) != 1 || len(h[90]) != 1 || len(h[103]) != 1 {
		t.Errorf("Holders = %v", h)
	}
}

func TestStepAndChainText(t *testing.T) {
	snap := live(proc(4700,
		on(thread(4711, "worker", mutexFrames("a")...), named(lockWait(0x7f0010, 4712, 0), "server_lock")),
		on(thread(4712, "io", mutexFrames("b")...), lockWait(0x7f0020, 4711, 0)),
	))
	a := newAnalysis(snap)
	cs := a.Cycles()
	if len(cs) != 1 {
		t.Fatalf("cycles: %d", len(cs))
	}
	want := "thread 4711 `worker` waits for mutex `server_lock` (0x7f0010) held by thread 4712 `io`, " +
		"which waits for mutex 0x7f0020 held by thread 4711 `worker`"
	if got := ChainText(cs[0]); got != want {
		t.Errorf("ChainText:\n got %s\nwant %s", got, want)
	}
	if got := Chain(cs[0]); len(got) != 2 || got[1] != "thread 4712 `io` waits for mutex 0x7f0020 held by thread 4711 `worker`" {
		t.Errorf("Chain = %q", got)
	}
}

func TestCyclesAllElementary(t *testing.T) {
	// A hand-made graph where threads have several waits (as rwlock
	// readers would): 1→2→1, 1→3→1, 2→3→2 and 1→2→3→1, 1→3→2→1.
	p := &stacks.Process{Pid: 1}
	ref := func(tid int) ThreadRef { return ThreadRef{Proc: p, Thread: &stacks.Thread{Tid: tid}} }
	refs := map[int]ThreadRef{1: ref(1), 2: ref(2), 3: ref(3)}
	g := &Graph{out: map[*stacks.Thread][]int{}}
	for _, e := range [][2]int{{1, 2}, {2, 1}, {1, 3}, {3, 1}, {2, 3}, {3, 2}} {
		g.add(Edge{Kind: EdgeJoin, From: refs[e[0]], To: refs[e[1]]})
	}
	if got := len(g.cycles()); got != 5 {
		t.Errorf("%d cycles, want 5", got)
	}
}

func TestCyclesShapes(t *testing.T) {
	m := func(tid, owner int, addr uint64) *stacks.Thread {
		return on(thread(tid, "", mutexFrames("f")...), lockWait(addr, owner, 0))
	}
	a := newAnalysis(live(proc(1,
		m(10, 11, 0xa), m(11, 10, 0xb), // ABBA
		m(20, 21, 0xc), m(21, 22, 0xd), m(22, 20, 0xe), // three
		m(30, 30, 0xf),                            // self
		m(40, 41, 0x1), thread(41, "", "compute"), // a chain, no cycle
	)))
	var sizes []int
	for _, c := range a.Cycles() {
		sizes = append(sizes, len(c))
		if c[0].From.Thread.Tid != map[int]int{2: 10, 3: 20, 1: 30}[len(c)] {
			t.Errorf("cycle of %d starts at %d", len(c), c[0].From.Thread.Tid)
		}
	}
	sameInts(t, "cycle sizes", sizes, 2, 3, 1)
}

func TestJoinAndChildEdges(t *testing.T) {
	parent := proc(1, on(thread(1, "main", "wait4", "main"), &stacks.Wait{Syscall: "wait4", Nr: 61}),
		on(thread(2, "joiner", joinFrames("main")...), joinWait(3)), thread(3, "w", "compute"))
	parent.Children = []int{5, 6}
	a := newAnalysis(live(parent))
	if es := waitsOf(a, 1); len(es) != 1 || es[0].Kind != EdgeChild || Step(es[0]) != "thread 1 `main` waits in wait4 for its children 5, 6" {
		t.Errorf("wait4 edge: %+v", es)
	}
	if es := waitsOf(a, 2); len(es) != 1 || es[0].Kind != EdgeJoin || es[0].To.Thread.Tid != 3 {
		t.Errorf("join edge: %+v", es)
	}
}

func TestLockDiagnosed(t *testing.T) {
	snap := live(
		proc(1, on(thread(1, "", mutexFrames("f")...), lockWait(0x1, 9, 0))), // orphaned
		proc(2, on(thread(2, "", condFrames("f")...), futexWait(0x2))),       // a sleeper only
		proc(3, on(thread(3, "", mutexFrames("f")...), lockWait(0x3, 3, kindRecursive))),
	)
	a := newAnalysis(snap)
	if !a.LockDiagnosed(a.Process(1)) || a.LockDiagnosed(a.Process(2)) || a.LockDiagnosed(a.Process(3)) {
		t.Errorf("LockDiagnosed = %v %v %v, want true false false", a.LockDiagnosed(a.Process(1)), a.LockDiagnosed(a.Process(2)), a.LockDiagnosed(a.Process(3)))
	}
}

func TestMutexFacts(t *testing.T) {
	m := &stacks.Mutex{Addr: 0x10, Lock: 0x40000000 | 77, Owner: 77, Kind: kindRobust}
	has(t, "facts", mutexMemory(m), "robust", "owner-died", "owner 77")
	has(t, "facts", mutexMemory(&stacks.Mutex{Addr: 0x10, Lock: 1, Kind: 0}), "1 (locked)", "none recorded", "normal")
}

func TestUnsteadyAndExitedMakeNoEdges(t *testing.T) {
	// the last sample says 11 waits for 12's mutex, an earlier one read
	// another owner: the thread moved on between samples
	p := abba(11, 12)
	moved := *p.Threads[1].Wait
	moved.Mutex = &stacks.Mutex{Addr: 0x601040, Lock: 2, Owner: 13}
	p.Threads[1].Samples()[0].Wait = &moved
	a := newAnalysis(live(p))
	if len(waitsOf(a, 11)) != 0 || len(a.Cycles()) != 0 {
		t.Errorf("an unsteady wait made an edge: %+v", waitsOf(a, 11))
	}
	gone := abba(11, 12)
	gone.Exited = true
	if a := newAnalysis(live(gone)); len(a.Graph().Edges) != 0 || a.LockDiagnosed(a.Process(10)) {
		t.Error("an exited process is not stuck")
	}
}

// waitsOf is WaitsFor of the thread with that tid (unique in these tests).
func waitsOf(a *analysis, tid int) []Edge {
	if rs := slices.Collect(a.threads.of(tid)); len(rs) == 1 {
		return a.WaitsFor(rs[0].Thread)
	}
	return nil
}

// TestRepeatedIdsAreOtherThreads: a paste of one dump twice (or of two
// dumps without pids whose threads share ids) holds two processes whose
// threads share tids, and both say pid 0: each process's ABBA is a cycle
// of its own threads, never an owner in the other process.
func TestRepeatedIdsAreOtherThreads(t *testing.T) {
	p1, p2 := abba(11, 12), abba(11, 12)
	p1.Pid, p2.Pid = 0, 0
	a := newAnalysis(&stacks.Snapshot{Processes: []*stacks.Process{p1, p2}})
	cs := a.Cycles()
	if len(cs) != 2 {
		t.Fatalf("%d cycles, want one in each process", len(cs))
	}
	for i, c := range cs {
		p := a.Snap.Processes[i]
		for _, e := range c {
			if e.From.Proc != p || e.To.Proc != p {
				t.Errorf("cycle %d goes from process %p to %p, want both %p", i, e.From.Proc, e.To.Proc, p)
			}
		}
	}
	for _, p := range a.Snap.Processes {
		if !a.LockDiagnosed(p) {
			t.Errorf("process %p: no lock verdict", p)
		}
	}
}
