package attach_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/attach/procmem"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// TestAttachMatchesGDB attaches to live patients, then runs gdb on the same
// process and checks, thread by thread (matched by TID), that our stack
// agrees with gdb's: ours is a subsequence of gdb's, and every frame gdb
// found, inlined frames included, is in ours. Each patient also has checks that hold
// without gdb: the functions it is known to block in, the signal frame,
// every thread once, no thread left stopped.
func TestAttachMatchesGDB(t *testing.T) {
	patient.RequirePtrace(t)
	patient.RequireTool(t, "gcc")
	patient.RequireTool(t, "g++")
	o2 := patient.Build(t, "mutex_o2.c", patient.O2...)
	cases := []struct {
		name  string
		argv  []string
		check func(t *testing.T, p *patient.Proc, proc *stacks.Process)
	}{
		{"mutex_o2", []string{o2}, checkMutex(true)},
		{"mutex_o0g", []string{patient.Build(t, "mutex_o2.c", patient.O0g...)}, checkMutex(true)},
		{"mutex_stripped", []string{patient.Strip(t, o2)}, checkMutex(false)},
		// Stripped, its functions named by .gnu_debugdata alone.
		{"mutex_minidebuginfo", []string{patient.MiniDebugInfo(t, o2)}, checkMutex(true)},
		{"cxx_mutex", []string{patient.Build(t, "cxx_mutex.cpp", patient.O2g...)}, checkCxx},
		{"sighandler", []string{patient.Build(t, "sighandler.c", patient.O2g...)}, checkSignal},
		{"threads20", []string{patient.Build(t, "threads200.c", patient.O2g...), "20"}, checkThreads(20)},
		{"lock.py", []string{patient.Python, patient.Build(t, "lock.py")}, checkPython},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.argv[0] == patient.Python {
				patient.RequireTool(t, patient.Python)
			}
			attachAndCompare(t, c.argv, c.check)
		})
	}
}

// TestAttachMatchesGDBInlined: on a Rust patient built with -O2, where
// std's Mutex::lock is inlined into the function that re-locks, our
// stacks have the inlined frames gdb shows, named as gdb names them.
func TestAttachMatchesGDBInlined(t *testing.T) {
	patient.RequirePtrace(t)
	patient.RequireTool(t, "rustc")
	attachAndCompare(t, []string{patient.Build(t, "rust_relock.rs", patient.RustO2g...)}, checkRustRelock)
}

// attachAndCompare starts a patient, attaches once, checks the snapshot
// and compares every stack with gdb's.
func attachAndCompare(t *testing.T, argv []string, check func(t *testing.T, p *patient.Proc, proc *stacks.Process)) {
	t.Helper()
	p := patient.Start(t, argv...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	snap, err := attach.Attach(ctx, []int{p.Pid}, attach.Options{Samples: 1})
	if err != nil {
		t.Fatalf("Attach(%d): %v", p.Pid, err)
	}
	checkNoneStopped(t, p)
	if snap == nil || len(snap.Processes) != 1 || snap.Processes[0].Pid != p.Pid {
		t.Fatalf("snapshot %+v: want one process, pid %d", snap, p.Pid)
	}
	proc := snap.Processes[0]
	checkEveryThreadOnce(t, p, proc)
	check(t, p, proc)
	compareWithGDB(t, p, proc)
}

// checkNoneStopped: once Attach returns, no thread of the patient is left
// in a ptrace stop (t) or a group stop (T), and every one goes back to
// sleep in its wait.
func checkNoneStopped(t *testing.T, p *patient.Proc) {
	t.Helper()
	tasks, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	for tid, st := range tasks {
		if st == "t" || st == "T" {
			t.Errorf("thread %d left in state %s after Attach returned", tid, st)
		}
	}
	// A thread let go a moment ago may still be on its way back into
	// the kernel; give it a little time. The heartbeat of threads200
	// wakes every millisecond and may be caught running.
	p.Settle(time.Second)
	tasks, err = p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	for tid, st := range tasks {
		if st != "S" && !(st == "R" && threadComm(p.Pid, tid) == "heartbeat") {
			t.Errorf("thread %d in state %s after Attach, want S", tid, st)
		}
	}
}

func threadComm(pid, tid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/comm", pid, tid))
	return strings.TrimSpace(string(b))
}

func checkEveryThreadOnce(t *testing.T, p *patient.Proc, proc *stacks.Process) {
	t.Helper()
	tasks, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for _, th := range proc.Threads {
		seen[th.Tid]++
	}
	for tid, n := range seen {
		if n != 1 {
			t.Errorf("thread %d appears %d times", tid, n)
		}
		if _, ok := tasks[tid]; !ok {
			t.Errorf("thread %d is not a thread of %d", tid, p.Pid)
		}
	}
	for tid := range tasks {
		if seen[tid] == 0 {
			t.Errorf("thread %d of %d missing from the snapshot", tid, p.Pid)
		}
	}
}

// normName makes names from different symbol sources comparable: glibc's
// internal aliases (__GI___lll_lock_wait, ___pthread_mutex_lock,
// __libc_read), symbol versions (@@GLIBC_2.2.5) and C++ parameter lists.
func normName(name string) string {
	if i := strings.IndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	s := stacks.FuncBase(name)
	s = strings.TrimPrefix(s, "__GI_")
	s = strings.TrimLeft(s, "_")
	s = strings.TrimPrefix(s, "libc_")
	return s
}

func frameKey(f stacks.Frame) string {
	if f.Signal {
		return "<signal handler called>"
	}
	if f.Func == "" {
		return "??"
	}
	return normName(f.Func)
}

// sameFrame says whether our frame o and gdb's frame g are the same: the
// same signal frame, the same function, or — for machine frames, where
// symbol aliases differ between gdb's DWARF and our symbol tables — the
// same PC (gdb prints return addresses; allow ours to be one less).
func sameFrame(o, g stacks.Frame) bool {
	if o.Signal || g.Signal {
		return o.Signal && g.Signal
	}
	if o.Func != "" && g.Func != "" && frameKey(o) == frameKey(g) {
		return true
	}
	if !o.Inlined && !g.Inlined && o.PC != 0 && g.PC != 0 {
		d := int64(o.PC) - int64(g.PC)
		return d >= -1 && d <= 1
	}
	return false
}

// machineFrames drops the Python frames of a stack (no module, no PC)
// and says whether there were any.
func machineFrames(st []stacks.Frame) ([]stacks.Frame, bool) {
	out := make([]stacks.Frame, 0, len(st))
	for _, f := range st {
		if f.Module == "" && f.PC == 0 && f.File != "" {
			continue
		}
		out = append(out, f)
	}
	return out, len(out) < len(st)
}

func stackString(st []stacks.Frame) string {
	var b strings.Builder
	for i, f := range st {
		inl := ""
		if f.Inlined {
			inl = " (inlined)"
		}
		fmt.Fprintf(&b, "  #%-2d %#014x %s%s\n", i, f.PC, f.Name(), inl)
	}
	return b.String()
}

func compareWithGDB(t *testing.T, p *patient.Proc, proc *stacks.Process) {
	t.Helper()
	patient.RequireTool(t, "gdb")
	out := patient.GDBBacktrace(t, p.Pid)
	gsnap, skipped, err := stacks.ParseGDB(strings.NewReader(out))
	if err != nil {
		t.Fatalf("parsing gdb's output: %v\n%s", err, out)
	}
	for _, s := range skipped {
		t.Logf("gdb output: %s", s)
	}
	gdbByTid := map[int]*stacks.Thread{}
	for _, th := range gsnap.Processes[0].Threads {
		gdbByTid[th.Tid] = th
	}
	for _, th := range proc.Threads {
		g := gdbByTid[th.Tid]
		if g == nil {
			t.Errorf("thread %d: not in gdb's backtrace", th.Tid)
			continue
		}
		ours, theirs := th.Stack, g.Stack
		// Python frames (python.go) replace the evaluator frames gdb
		// shows: only machine frames are compared.
		ours, merged := machineFrames(ours)
		// gdb stops at main ("set backtrace past-main off"); the frames
		// below it (__libc_start_call_main, _start) are not compared.
		if n := len(theirs); n > 0 && theirs[n-1].Func == "main" {
			for i, o := range ours {
				if o.Func == "main" || sameFrame(o, theirs[n-1]) {
					ours = ours[:i+1]
					break
				}
			}
		}
		bad := false
		// ours ⊆ gdb's, in order (earliest match is optimal for a
		// subsequence test).
		j := 0
		for i, o := range ours {
			for j < len(theirs) && !sameFrame(o, theirs[j]) {
				j++
			}
			if j == len(theirs) {
				t.Errorf("thread %d: our frame #%d %s is not in gdb's stack (in that order)", th.Tid, i, o.Name())
				bad = true
				break
			}
			j++
		}
		// Every frame gdb found (frame #0's included, inlined ones too)
		// is in ours.
		for gi, gf := range theirs {
			if isTailCallFrame(p.Pid, gf.PC) || merged && gf.Func == "_PyEval_EvalFrameDefault" {
				continue
			}
			found := false
			for _, o := range ours {
				if sameFrame(o, gf) {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("thread %d: gdb's frame #%d %s is missing from ours", th.Tid, gi, gf.Name())
				bad = true
			}
		}
		if bad {
			t.Logf("thread %d %q\nours:\n%sgdb:\n%s", th.Tid, th.Name, stackString(ours), stackString(theirs))
		}
	}
}

// isTailCallFrame says whether a frame gdb printed is one it rebuilt from
// DWARF call-site information for a tail call (glibc's
// __futex_abstimed_wait_cancelable64 jumps to __futex_abstimed_wait_common):
// such a frame has no return address on the stack, so no unwinder that
// reads the stack finds it. gdb gives it the address just after the jump,
// which is how it is told apart: the instruction that ends at its PC is a
// jmp, where a real return address follows a call.
func isTailCallFrame(pid int, pc uint64) bool {
	if pc < 6 {
		return false
	}
	var b [6]byte
	if _, err := procmem.Read(pid, b[:], pc-6); err != nil {
		return false
	}
	jmpRel32 := b[1] == 0xe9                         // e9 rel32
	jmpRel8 := b[4] == 0xeb                          // eb rel8
	jmpIndirect := b[4] == 0xff && b[5]&0x38 == 0x20 // ff /4 with a register operand
	return jmpRel32 || jmpRel8 || jmpIndirect
}

// names returns the normalised function names of a stack.
func names(st []stacks.Frame) []string {
	out := make([]string, len(st))
	for i, f := range st {
		out[i] = frameKey(f)
	}
	return out
}

// indexOf returns the first index of any of want in names, or -1.
func indexOf(names []string, want ...string) int {
	for i, n := range names {
		for _, w := range want {
			if n == w {
				return i
			}
		}
	}
	return -1
}

// hasInOrder says whether seq appears in names as a subsequence.
func hasInOrder(names, seq []string) bool {
	j := 0
	for _, n := range names {
		if j < len(seq) && n == seq[j] {
			j++
		}
	}
	return j == len(seq)
}

func threadNamed(t *testing.T, proc *stacks.Process, name string) *stacks.Thread {
	t.Helper()
	th := proc.ThreadNamed(name)
	if th == nil {
		t.Fatalf("no thread named %q among %d", name, len(proc.Threads))
	}
	return th
}

func mainThread(t *testing.T, proc *stacks.Process) *stacks.Thread {
	t.Helper()
	return threadOf(t, proc, proc.Pid)
}

// threadOf is thread tid of proc; the test fails without it.
func threadOf(t *testing.T, proc *stacks.Process, tid int) *stacks.Thread {
	t.Helper()
	th := proc.ThreadByTid(tid)
	if th == nil {
		t.Fatalf("no thread %d in process %d", tid, proc.Pid)
	}
	return th
}

func waitsOnFutex(th *stacks.Thread) bool { return th.Wait != nil && th.Wait.Syscall == "futex" }

func checkMutex(symbols bool) func(t *testing.T, p *patient.Proc, proc *stacks.Process) {
	chains := map[string][]string{
		"ant": {"ant_bite", "ant_march", "ant_worker", "start_thread"},
		"bee": {"bee_sting", "bee_dance", "bee_hover", "bee_worker", "start_thread"},
		"cat": {"cat_pounce", "cat_worker", "start_thread"},
		"dog": {"take_lock", "dog_fetch", "dog_dig", "dog_sniff", "dog_wander", "dog_worker", "start_thread"},
	}
	return func(t *testing.T, p *patient.Proc, proc *stacks.Process) {
		if len(proc.Threads) != 5 {
			t.Errorf("%d threads, want 5", len(proc.Threads))
		}
		for name, chain := range chains {
			th := threadNamed(t, proc, name)
			n := names(th.Stack)
			lock := indexOf(n, "pthread_mutex_lock", "lll_lock_wait")
			if lock < 0 && !waitsOnFutex(th) {
				t.Errorf("%s: neither pthread_mutex_lock/__lll_lock_wait on the stack nor a futex wait: %q", name, n)
			}
			if symbols {
				if !hasInOrder(n, chain) {
					t.Errorf("%s: want %q in order, got %q", name, chain, n)
				}
				if first := indexOf(n, chain[0]); lock >= 0 && first >= 0 && lock > first {
					t.Errorf("%s: the lock (#%d) is not above %s (#%d): %q", name, lock, chain[0], first, n)
				}
			} else if indexOf(n, "start_thread") < 0 || lock < 0 {
				// stripped: the patient's own frames have no names, but
				// libc's still do.
				t.Errorf("%s (stripped): libc frames lost: %q", name, n)
			}
		}
		n := names(mainThread(t, proc).Stack)
		if indexOf(n, "pthread_join", "pthread_clockjoin_ex", "futex_abstimed_wait_common") < 0 {
			t.Errorf("main: not in pthread_join: %q", n)
		}
		if symbols && indexOf(n, "main") < 0 {
			t.Errorf("main: no main(): %q", n)
		}
	}
}

func checkCxx(t *testing.T, p *patient.Proc, proc *stacks.Process) {
	if len(proc.Threads) != 4 {
		t.Errorf("%d threads, want 4", len(proc.Threads))
	}
	for _, name := range []string{"locker", "nested"} {
		n := names(threadNamed(t, proc, name).Stack)
		if indexOf(n, "hangdoc_patient::Guarded<int>::update") < 0 || indexOf(n, "pthread_mutex_lock", "lll_lock_wait", "std::mutex::lock") < 0 {
			t.Errorf("%s: want std::mutex::lock / pthread_mutex_lock under Guarded<int>::update: %q", name, n)
		}
		// -O2 inlines std::mutex::lock (and libstdc++'s gthread
		// wrappers) into update: the frame that names the lock has no
		// machine frame of its own.
		st := threadNamed(t, proc, name).Stack
		if i := indexOf(n, "std::mutex::lock"); i < 0 || !st[i].Inlined {
			t.Errorf("%s: no inlined std::mutex::lock frame:\n%s", name, stackString(st))
		}
	}
	n := names(threadNamed(t, proc, "nested").Stack)
	if !hasInOrder(n, []string{"hangdoc_patient::Relay<int, 0>::forward", "hangdoc_patient::Relay<int, 1>::forward",
		"hangdoc_patient::Relay<int, 2>::forward", "hangdoc_patient::Relay<int, 3>::forward"}) {
		t.Errorf("nested: Relay<int, 0..3>::forward chain missing: %q", n)
	}
	n = names(threadNamed(t, proc, "waiter").Stack)
	if indexOf(n, "pthread_cond_wait", "std::condition_variable::wait") < 0 {
		t.Errorf("waiter: not in a condition variable wait: %q", n)
	}
	take := false
	for _, s := range n {
		take = take || strings.Contains(s, "hangdoc_patient::Mailbox<") && strings.HasSuffix(s, ">::take")
	}
	if !take {
		t.Errorf("waiter: no Mailbox<…>::take frame: %q", n)
	}
}

// checkRustRelock: the main thread waits in std's futex mutex
// (lock_contended) under the inlined lock frames (sys's futex
// Mutex::lock and the poisoning Mutex<u64>::lock; their module paths
// change between Rust versions), marked inlined, inside inner, which
// outer called holding the lock.
func checkRustRelock(t *testing.T, p *patient.Proc, proc *stacks.Process) {
	st := mainThread(t, proc).Stack
	find := func(from int, ok func(name string) bool) int {
		for i := from; i < len(st); i++ {
			if ok(frameKey(st[i])) {
				return i
			}
		}
		return -1
	}
	contended := find(0, func(n string) bool { return strings.HasSuffix(n, "Mutex::lock_contended") })
	sysLock := find(contended+1, func(n string) bool { return strings.HasSuffix(n, "futex::Mutex::lock") })
	stdLock := find(sysLock+1, func(n string) bool { return strings.Contains(n, "Mutex<u64>::lock") })
	inner := find(stdLock+1, func(n string) bool { return n == "rust_relock::inner" })
	outer := find(inner+1, func(n string) bool { return n == "rust_relock::outer" })
	if contended < 0 || sysLock < 0 || stdLock < 0 || inner < 0 || outer < 0 {
		t.Fatalf("main: want lock_contended, futex Mutex::lock, Mutex<u64>::lock, inner, outer in order (#%d #%d #%d #%d #%d):\n%s",
			contended, sysLock, stdLock, inner, outer, stackString(st))
	}
	if !st[sysLock].Inlined || !st[stdLock].Inlined || st[inner].Inlined || st[outer].Inlined {
		t.Errorf("main: want the two lock frames inlined into inner, inner and outer machine frames:\n%s", stackString(st))
	}
}

func checkSignal(t *testing.T, p *patient.Proc, proc *stacks.Process) {
	th := threadNamed(t, proc, "victim")
	n := names(th.Stack)
	sig := -1
	for i, f := range th.Stack {
		if f.Signal {
			sig = i
			break
		}
	}
	handler := indexOf(n, "on_usr1")
	interrupted := indexOf(n, "interrupted_work")
	if sig < 0 || handler < 0 || interrupted < 0 || !(handler < sig && sig < interrupted) {
		t.Errorf("victim: want on_usr1 (#%d) < signal frame (#%d) < interrupted_work (#%d): %q", handler, sig, interrupted, n)
	}
	if !hasInOrder(n, []string{"read", "handler_blocks", "on_usr1", "<signal handler called>", "pause", "interrupted_work", "victim_main"}) {
		t.Errorf("victim: %q", n)
	}
}

func checkThreads(n int) func(t *testing.T, p *patient.Proc, proc *stacks.Process) {
	return func(t *testing.T, p *patient.Proc, proc *stacks.Process) {
		if len(proc.Threads) != n+2 {
			t.Errorf("%d threads, want %d blocked + heartbeat + main", len(proc.Threads), n+2)
		}
		count := map[string]int{}
		for _, th := range proc.Threads {
			names := names(th.Stack)
			for _, fn := range []string{"block_on_cond", "block_in_sleep", "block_on_pipe", "heartbeat"} {
				if indexOf(names, fn) >= 0 {
					count[fn]++
				}
			}
		}
		want := map[string]int{"block_on_cond": (n + 2) / 3, "block_in_sleep": (n + 1) / 3, "block_on_pipe": n / 3, "heartbeat": 1}
		for fn, w := range want {
			if count[fn] != w {
				t.Errorf("%d threads in %s, want %d", count[fn], fn, w)
			}
		}
	}
}

func checkPython(t *testing.T, p *patient.Proc, proc *stacks.Process) {
	if len(proc.Threads) != 2 {
		t.Errorf("%d threads, want 2", len(proc.Threads))
	}
	main := mainThread(t, proc)
	n := names(main.Stack)
	if indexOf(n, "PyThread_acquire_lock_timed") < 0 && !waitsOnFutex(main) {
		t.Errorf("main: not acquiring a lock: %q", n)
	}
	var all []string
	for _, th := range proc.Threads {
		all = append(all, names(th.Stack)...)
	}
	if indexOf(all, "start_thread") < 0 {
		t.Errorf("no thread started by pthread: %q", all)
	}
}

// TestLockEvidence: in mutex_o2 main holds the mutex and joins ant; the
// four workers wait for the mutex. The owner is read from the mutex
// itself, the joined thread from the futex word.
func TestLockEvidence(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "mutex_o2.c", patient.O2...))
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	proc := snap.Processes[0]
	ant := threadNamed(t, proc, "ant")
	for _, th := range proc.Threads {
		w := th.Wait
		if th.Tid == p.Pid {
			if w == nil || w.JoinTid != ant.Tid {
				t.Errorf("main: wait %+v, want join of ant (%d)", w, ant.Tid)
			}
			continue
		}
		if w == nil || w.Mutex == nil || w.Mutex.Owner != p.Pid || w.Mutex.Kind != 0 || w.Mutex.Lock != 2 {
			t.Errorf("thread %d %s: wait %+v, want a normal mutex, locked with waiters, owned by main (%d)", th.Tid, th.Name, w, p.Pid)
		} else if w.Mutex.Symbol != "the_lock" {
			t.Errorf("thread %d: mutex symbol %q, want the_lock", th.Tid, w.Mutex.Symbol)
		}
	}
	if proc.Fork != nil {
		t.Errorf("mutex_o2 was started by exec, not forked: %+v", proc.Fork)
	}
}
