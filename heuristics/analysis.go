package heuristics

import (
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// ThreadRef is a thread and the process it belongs to.
type ThreadRef struct {
	Proc   *stacks.Process
	Thread *stacks.Thread
}

// analysis is what every signature reads: the snapshot, indexes over it
// and the wait-for graph, built once per Diagnose.
type analysis struct {
	Snap *stacks.Snapshot
	// src is what kind of evidence Snap is (source.go).
	src   source
	procs map[int]*stacks.Process
	// threads by tid, every process's that has it: tids are unique on
	// one machine, but a paste of two dumps (two jstacks, the same dump
	// twice, dumps of two machines) repeats them, and pasted dumps
	// without pids all say pid 0. A tid is only looked up within a
	// process (threadIn) or a diagnosis's processes.
	threads tidIndex
	graph   *Graph
	cycles  [][]Edge
	// lockPids are the processes a lock signature explains, computed on
	// first use.
	lockPids map[*stacks.Process]bool
	// stuck are the processes stuck on a deadlock or on a stuck process
	// (waiting-on-process), computed on first use.
	stuck map[int]*stuckProc
	// rules are the known-issue rules in force; on stack-only evidence
	// their frames help choose between verdicts.
	rules []Rule
	// facts are each thread's facts, results each detector's findings,
	// computed once (facts.go).
	facts   map[*stacks.Thread]*threadFact
	shared  factMemo[*threadFact]
	results map[string]any
	// lockWaiters are stuckLockWaiters' answers by process.
	lockWaiters map[*stacks.Process][]ThreadRef
	// distincts are distinctThreads' answers by process
	distincts map[*stacks.Process][]*stacks.Thread
	procWaits map[*stacks.Process]procWaitsOf
	procFacts map[*stacks.Process][]*threadFact // factsIn's
}

// newAnalysis indexes a snapshot and builds its wait-for graph.
func newAnalysis(snap *stacks.Snapshot) *analysis {
	n := 0
	for _, p := range snap.Processes {
		n += len(p.Threads)
	}
	a := &analysis{Snap: snap, src: source{snap.Source}, procs: map[int]*stacks.Process{}, threads: newTidIndex(snap, n),
		rules: builtinRules(), facts: map[*stacks.Thread]*threadFact{}, results: map[string]any{}, lockWaiters: map[*stacks.Process][]ThreadRef{},
		distincts: map[*stacks.Process][]*stacks.Thread{}, procWaits: map[*stacks.Process]procWaitsOf{},
		procFacts: map[*stacks.Process][]*threadFact{}}
	for _, p := range snap.Processes {
		if _, dup := a.procs[p.Pid]; !dup {
			a.procs[p.Pid] = p
		}
	}
	a.graph = buildGraph(a)
	a.cycles = a.graph.cycles()
	return a
}

// liveProcs yields the snapshot's processes that had not exited when
// read: whatever an exited process waited for, it was not stuck.
func (a *analysis) liveProcs() iter.Seq[*stacks.Process] {
	return func(yield func(*stacks.Process) bool) {
		for _, p := range a.Snap.Processes {
			if !p.Exited && !yield(p) {
				return
			}
		}
	}
}

// liveThreads yields every thread of the live processes (liveProcs),
// with its process.
func (a *analysis) liveThreads() iter.Seq2[*stacks.Process, *stacks.Thread] {
	return func(yield func(*stacks.Process, *stacks.Thread) bool) {
		for p := range a.liveProcs() {
			for _, t := range p.Threads {
				if !yield(p, t) {
					return
				}
			}
		}
	}
}

// Process returns the process with the given pid (the first one, when
// a paste repeats it), or nil.
func (a *analysis) Process(pid int) *stacks.Process { return a.procs[pid] }

// ThreadOf returns the thread with the given tid in a process with the
// given pid, if the snapshot has it.
func (a *analysis) ThreadOf(pid, tid int) (ThreadRef, bool) {
	for r := range a.threads.of(tid) {
		if r.Proc.Pid == pid {
			return r, true
		}
	}
	return ThreadRef{}, false
}

// threadIn returns the thread with the given tid in process p.
func (a *analysis) threadIn(p *stacks.Process, tid int) (ThreadRef, bool) {
	for r := range a.threads.of(tid) {
		if r.Proc == p {
			return r, true
		}
	}
	return ThreadRef{}, false
}

// DiagThread returns the thread with the given tid among a diagnosis's
// processes (Diagnosis.About; any process when it names none).
func (a *analysis) DiagThread(d *Diagnosis, tid int) (ThreadRef, bool) {
	for r := range a.threads.of(tid) {
		if len(d.Pids) == 0 || d.About(r.Proc) {
			return r, true
		}
	}
	return ThreadRef{}, false
}

// diagProcs are a diagnosis's processes, one for each pid it names, in
// its order: the first process of the pid that it is about
// (Diagnosis.About).
func (a *analysis) diagProcs(d *Diagnosis) []*stacks.Process {
	var ps []*stacks.Process
	for _, pid := range d.Pids {
		for _, p := range a.Snap.Processes {
			if p.Pid == pid && d.About(p) {
				ps = append(ps, p)
				break
			}
		}
	}
	return ps
}

// Ref returns a thread of the snapshot with its process (found under
// its tid: a map by thread would cost a large dump another entry a
// thread).
func (a *analysis) Ref(t *stacks.Thread) (ThreadRef, bool) {
	if t != nil {
		for r := range a.threads.of(t.Tid) {
			if r.Thread == t {
				return r, true
			}
		}
	}
	return ThreadRef{Thread: t}, false
}

// Evidence is what the snapshot could give about process p: a paste
// of dumps of several tools says it per process (stacks.Process.Evidence).
func (a *analysis) Evidence(p *stacks.Process) stacks.Evidence {
	if p != nil && p.Evidence != nil {
		return *p.Evidence
	}
	return a.Snap.Evidence
}

// Graph is the snapshot's wait-for graph.
func (a *analysis) Graph() *Graph { return a.graph }

// WaitsFor returns what a thread waits for: its edges in the graph (one
// for a mutex or a join, one wait4 edge to its process's children).
func (a *analysis) WaitsFor(t *stacks.Thread) []Edge {
	var es []Edge
	for _, i := range a.graph.out[t] {
		es = append(es, a.graph.Edges[i])
	}
	return es
}

// Holders maps an owner's tid to the locks it is recorded as holding,
// whatever became of it (see Owner.Kind).
func (a *analysis) Holders() map[int][]*Lock {
	h := map[int][]*Lock{}
	for _, l := range a.graph.Locks {
		if l.Owner.Tid != 0 {
			h[l.Owner.Tid] = append(h[l.Owner.Tid], l)
		}
	}
	return h
}

// Cycles returns every elementary cycle of mutex and join waits, each
// once, starting at its lowest tid. A one-edge cycle is a thread waiting
// for a mutex it holds.
func (a *analysis) Cycles() [][]Edge { return a.cycles }

// OwnersRead reports whether the snapshot has mutex owners read from
// memory, the evidence that earns a high confidence.
func (a *analysis) OwnersRead() bool { return a.Snap.Evidence.Owners }

// graphConfidence is the confidence of a finding read off the graph
// about the processes ps: high when the owners of their locks were read
// (or printed, as a JVM's thread dump does), for the snapshot or for each
// of them (a paste of a jstack dump and a gdb one: only the jstack
// process's owners are known).
func (a *analysis) graphConfidence(ps ...*stacks.Process) string {
	if a.OwnersRead() {
		return High
	}
	for _, p := range ps {
		if !a.Evidence(p).Owners {
			return Medium
		}
	}
	if len(ps) == 0 {
		return Medium
	}
	return High
}

// diagEvidence is what the dumps of a diagnosis's processes could give:
// a paste of a jstack dump and a gdb one has owners for the first only.
func (a *analysis) diagEvidence(d Diagnosis) stacks.Evidence {
	var ps []*stacks.Process
	var tids map[int]bool // a set: a leak's diagnosis names thousands, and a process has as many threads
	if len(d.Tids) > 8 {
		tids = make(map[int]bool, len(d.Tids))
		for _, t := range d.Tids {
			tids[t] = true
		}
	}
	named := func(t *stacks.Thread) bool {
		if tids != nil {
			return tids[t.Tid]
		}
		return slices.Contains(d.Tids, t.Tid)
	}
	for _, p := range a.Snap.Processes {
		if !d.About(p) {
			continue
		}
		if len(d.Tids) == 0 || slices.ContainsFunc(p.Threads, named) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return a.Snap.Evidence
	}
	e := a.Evidence(ps[0])
	for _, p := range ps[1:] {
		pe := a.Evidence(p)
		e.Owners, e.Lineage, e.CPU = e.Owners && pe.Owners, e.Lineage && pe.Lineage, e.CPU && pe.CPU
	}
	return e
}

// edgeProcs are the processes of the waiting ends of edges.
func edgeProcs(es []Edge) []*stacks.Process {
	var ps []*stacks.Process
	for _, e := range es {
		if !slices.Contains(ps, e.From.Proc) {
			ps = append(ps, e.From.Proc)
		}
	}
	return ps
}

// LockDiagnosed reports whether a lock signature (fork-inherited-lock,
// self-deadlock, signal-handler-reentry, loader-lock, lock-order-cycle,
// orphaned-lock), or a runtime's own finding (runtimeClaims: Go's, the GIL's),
// explains a thread of the process. It runs their
// detectors on the graph, not their matchers, so signatures that defer
// to the lock ones (lost-wakeup) stay independent of the order they run.
func (a *analysis) LockDiagnosed(p *stacks.Process) bool {
	if a.lockPids == nil {
		a.lockPids = map[*stacks.Process]bool{}
		mark := func(refs ...ThreadRef) {
			for _, r := range refs {
				a.lockPids[r.Proc] = true
			}
		}
		for _, e := range a.graph.Edges {
			if e.Kind == EdgeMutex && stuckOnOwner(e) {
				mark(e.From)
			}
		}
		for _, c := range a.cycles {
			if len(c) < 2 {
				continue // a self-loop is stuckOnOwner's
			}
			for _, e := range c {
				mark(e.From)
			}
		}
		for _, e := range findOwnerCuts(a) {
			mark(e.From)
		}
		for _, f := range findReentries(a) {
			mark(f.waiter)
		}
		for _, f := range findLoaderWaits(a) {
			mark(f.inLoader)
		}
		for _, r := range findArgRelocks(a) {
			mark(r.ref)
		}
		for _, c := range findOwnerlessTails(a) {
			mark(c.tail)
		}
		for _, c := range pyImportCycles(a) {
			mark(c.waiter)
		}
		for _, s := range findPoolStarvations(a) {
			mark(s.workers...)
		}
		for _, c := range findPyCondHolds(a) {
			mark(c.waiters...)
		}
		for _, p := range a.Snap.Processes {
			if len(a.stuckLockWaiters(p)) > 0 || runtimeClaims(a, p) {
				a.lockPids[p] = true
			}
		}
	}
	return a.lockPids[p]
}

// stuckOnOwner: a mutex wait that a lock signature names by its owner
// alone: itself (non-recursive), a parent thread at fork, or an owner
// that is gone.
func stuckOnOwner(e Edge) bool {
	switch e.Lock.Owner.Kind {
	case OwnerForkParent, OwnerGone, OwnerReused:
		return true
	case OwnerLive:
		return e.To.Thread == e.From.Thread && e.Lock.Mutex.Kind&kindMask != kindRecursive
	}
	return false
}

// running reports whether a thread ran during sampling: state R, or CPU
// ticks in a sample (one tick of slack for a wake-up to re-sleep).
func (a *analysis) running(t *stacks.Thread) bool {
	if t.State == "R" || t.CPU >= 5 {
		return true
	}
	for _, s := range t.Samples() {
		if s.State == "R" || s.CPUTicks > 1 {
			return true
		}
	}
	return false
}

// stuckLockWaiters returns a process's threads blocked on locks with no
// owner recorded, when every thread of the process is blocked on a lock
// or a join and none runs: the lock holders can only be among them, or
// gone. This is the frame-name evidence of a pasted dump (and of lock
// elision); it stays silent when the graph knows any owner, when a
// loader wait explains the process, and for threads re-entered by a
// signal handler.
func (a *analysis) stuckLockWaiters(p *stacks.Process) []ThreadRef {
	if ws, ok := a.lockWaiters[p]; ok {
		return ws
	}
	ws := a.findStuckLockWaiters(p)
	a.lockWaiters[p] = ws
	return ws
}

func (a *analysis) findStuckLockWaiters(p *stacks.Process) []ThreadRef {
	if p.Exited {
		return nil
	}
	reentered := map[*stacks.Thread]bool{}
	for _, f := range findReentries(a) {
		reentered[f.waiter.Thread] = true
	}
	for _, f := range findLoaderWaits(a) {
		if f.inLoader.Proc == p {
			return nil
		}
	}
	var waiters []ThreadRef
	for _, t := range a.distinct(p) {
		if toolClaimName(t.Name) {
			return nil // a detector's report: where locks were taken, not threads blocked now
		}
		if stacks.TopCut(t) && !cutAllocatorWait(t) && !cutAtAcquire(t) {
			continue // a fragment whose top the paste cut: its wait is not in it
		}
		class, caller := a.wait(t)
		// A Python lock is the lock behind Event and Condition too: a lock
		// only in a forked child, where nobody can release it, when the
		// interpreter's own C code takes it (a buffered stream's lock, a
		// thread-local's, the import lock), which is no Event, or where
		// Python code of the program's own acquires it (not threading's).
		py := notWaiting
		if class == waitPyLock {
			py = pyLockUse(t)
		}
		lock := class == waitLock || class == waitPyLock && (p.Fork != nil || forkChildSide(p).ok || pyLockTakenByC(t, caller) || py == waitPyLock)
		if a.running(t) && !sleepingSpinWaiter(t) || (!lock && class != waitJoin && class != waitFutex && py != waitJoin) {
			return nil
		}
		if w := threadWait(t); w != nil && w.Mutex != nil && a.resolveOwner(p, w.Mutex).Kind != OwnerUnknown {
			return nil
		}
		if a.namedOwner(t) {
			return nil // the owner-based rules speak
		}
		if _, ok := a.findPyImportCycle(p, t); ok {
			return nil // it waits for another thread's import (py_import_cycle.go)
		}
		if lock && !reentered[t] {
			waiters = append(waiters, ThreadRef{Proc: p, Thread: t})
		}
	}
	return waiters
}

// namedOwner: the dump names the thread of this process the thread
// waits for (a turnstile owner), and the graph has it.
func (a *analysis) namedOwner(t *stacks.Thread) bool {
	if t.Wait == nil || t.Wait.BlockedByTid == 0 {
		return false
	}
	for _, e := range a.WaitsFor(t) {
		if e.To.Thread != nil {
			return true
		}
	}
	return false
}

// sameThread: two stacks of one process that carry the same thread id
// are one thread the paste shows twice (gdb's `frame` output, then its
// `bt`; `bt` run twice).
func sameThread(a, b *stacks.Thread) bool { return a != b && a.Tid != 0 && a.Tid == b.Tid }

// distinctThreads are a process's threads with a thread shown twice
// taken once, by its fuller stack (the other copy is gdb's `frame`
// output of a few of its frames).
// (By a map of tids: a search of out per thread was quadratic, 8 s on
// the 34,000 threads of a 32 MB dump.)
func distinctThreads(p *stacks.Process) []*stacks.Thread {
	if tidsMonotonic(p.Threads) {
		return p.Threads // no tid twice: a gdb or eu-stack dump lists each thread once, in order
	}
	out := make([]*stacks.Thread, 0, len(p.Threads))
	at := make(map[int]int, len(p.Threads)) // tid -> its index in out
	for _, t := range p.Threads {
		if i, ok := at[t.Tid]; ok && sameThread(out[i], t) {
			if len(t.Stack) > len(out[i].Stack) {
				out[i] = t
			}
			continue
		}
		if t.Tid != 0 {
			at[t.Tid] = len(out)
		}
		out = append(out, t)
	}
	return out
}

// tidsMonotonic says whether the threads' non-zero tids only rise or
// only fall, so that none comes twice (a tid of 0 is no thread's).
func tidsMonotonic(ts []*stacks.Thread) bool {
	rising, falling := true, true
	last := 0
	for _, t := range ts {
		if t.Tid == 0 {
			continue
		}
		if last != 0 {
			rising = rising && t.Tid > last
			falling = falling && t.Tid < last
			if !rising && !falling {
				return false
			}
		}
		last = t.Tid
	}
	return true
}

// distinct is distinctThreads(p), once per snapshot (the detectors that
// ask it each made its map of 100,000 tids).
func (a *analysis) distinct(p *stacks.Process) []*stacks.Thread {
	return memoized(a.distincts, p, func() []*stacks.Thread { return distinctThreads(p) })
}

// threadCount is how many threads a process has in the snapshot, a
// thread shown twice counted once, counted up to 2: its callers ask
// "one, or more?", and a count of all took a pass and a map of every
// thread per question.
func threadCount(p *stacks.Process) int {
	if len(p.Threads) == 0 {
		return 0
	}
	for _, t := range p.Threads[1:] {
		if !sameThread(p.Threads[0], t) {
			return 2
		}
	}
	return 1
}

// sleepingSpinWaiter: a thread caught running, in a sample or two,
// between the sleeps of a spin lock's slow path (gperftools'
// SpinLockDelay, Abseil's, TBB's: spin a little, then sleep in a futex
// with a timeout, again and again) while it used almost no CPU: every
// sample shows it inside the same spin lock's wait, so it waits, it does
// not work. A spinner that burns CPU is running.
func sleepingSpinWaiter(t *stacks.Thread) bool {
	if t.CPU >= 5 || !spinWait(t.Stack) {
		return false
	}
	for _, s := range t.Samples() {
		if s.CPUTicks > 5 || len(s.Stack) > 0 && !spinWait(s.Stack) {
			return false
		}
	}
	return true
}

// spinWait: the innermost lock wait of a stack is a spin lock's.
func spinWait(st []stacks.Frame) bool {
	for _, f := range st {
		switch r := frameRole(f); {
		case r == stacks.RoleSpin:
			return true
		case r == stacks.RolePark, r == stacks.RoleSyscall, r == stacks.RoleYield, f.Func == "":
			continue
		}
		return false
	}
	return false
}

// pyLockTakenByC: the Python lock a thread waits for was asked for by C
// code of its own (bufferedio's _enter_buffered_busy, _thread's
// local_clear), not by the interpreter running Python code
// (threading.Lock.acquire, Condition.wait's waiter lock).
func pyLockTakenByC(t *stacks.Thread, caller int) bool {
	if cAPIAcquire(t.Stack[:min(caller, len(t.Stack))]) {
		return true
	}
	if caller >= len(t.Stack) {
		return false
	}
	f := t.Stack[caller]
	return strings.Trim(f.Func, "?") != "" && !stacks.IsPythonFrame(f) && !interpreterFrame(f) && nativeRow(f) == nil &&
		!strings.Contains(f.Func, "vectorcall") && !strings.Contains(strings.ToLower(f.Func), "call_method")
}

// cAPIAcquire: the lock frames go through PyThread_acquire_lock, the C
// API's blocking acquire, into PyThread_acquire_lock_timed: CPython 3's
// lock objects (threading.Lock, Event, Condition) call the timed one
// directly (acquire_timed), so the plain one above it is C code's own
// acquire (an import lock, a buffered stream's, an extension's), even
// when the paste cut the frame that called it.
func cAPIAcquire(st []stacks.Frame) bool {
	for i := 1; i < len(st); i++ {
		if funcKey(st[i]) == "PyThread_acquire_lock" && funcKey(st[i-1]) == "PyThread_acquire_lock_timed" {
			return true
		}
	}
	return false
}

// allThreads reports whether the snapshot has every thread of the
// process: a live attach or a core does; a dump pasted with one thread's
// `bt` may not, and a lone waiter there proves nothing. A dump that lists
// the main thread by its id (tid = pid: gdb's `thread apply all bt` shows
// it as Thread 1, with its LWP) is taken to list them all: a single
// thread's `bt` carries no thread id.
func (a *analysis) allThreads(p *stacks.Process) bool {
	e := a.Snap.Evidence
	return threadCount(p) > 1 || e.Syscalls || e.Lineage || e.Owners || mainListed(p)
}

// mainListed: the process's main thread is in the snapshot by its id.
func mainListed(p *stacks.Process) bool {
	if p.Pid <= 0 {
		return false
	}
	for _, t := range p.Threads {
		if t.Tid == p.Pid {
			return true
		}
	}
	return false
}

// Doing says what a thread does, as the tail of a chain: "sleeps in
// `pthread_cond_wait` called from `consumer`".
func (a *analysis) Doing(t *stacks.Thread) string {
	class, _ := a.wait(t)
	where := ""
	if s := waitSite(t); s != "" {
		where = " in " + s
	}
	switch {
	case a.running(t):
		return fmt.Sprintf("is running%s (%.0f%% CPU)", where, t.CPU)
	case class == waitCond:
		return "sleeps" + where
	case class.isLock():
		return "waits for a lock" + where
	case class == waitJoin:
		return "waits for a thread to exit" + where
	case class == waitFutex:
		return "is blocked in a futex wait" + where
	case t.Wait != nil && t.Wait.Syscall != "":
		s := fmt.Sprintf("is blocked in %s()", t.Wait.Syscall)
		if t.Wait.FdTarget != "" {
			s += fmt.Sprintf(" on fd %d (%s)", t.Wait.Fd, t.Wait.FdTarget)
		}
		return s + where
	}
	return "is" + where
}

// orderRefs lists the threads of items and their processes once each,
// in the order given (waiters first, then owners), for Diagnosis.Tids
// and Pids.
func orderRefs[T any](items []T, ref func(T) ThreadRef) (pids, tids []int) {
	// tids in strictly rising or falling order repeat none: no set of
	// them then (0.8 MB for the 32 MB goroutine dump's 47,000); else one
	// sized once (grown a key at a time it was 2.2 MB of garbage)
	up, down := true, true
	seenP := map[int]bool{}
	tids = make([]int, 0, len(items))
	for _, item := range items {
		r := ref(item)
		if r.Thread == nil {
			continue
		}
		if n := len(tids); n > 0 {
			up = up && r.Thread.Tid > tids[n-1]
			down = down && r.Thread.Tid < tids[n-1]
		}
		tids = append(tids, r.Thread.Tid)
		if !seenP[r.Proc.Pid] {
			seenP[r.Proc.Pid] = true
			pids = append(pids, r.Proc.Pid)
		}
	}
	if !up && !down {
		seenT := make(map[int]bool, len(tids))
		tids = slices.DeleteFunc(tids, func(tid int) bool {
			dup := seenT[tid]
			seenT[tid] = true
			return dup
		})
	}
	return pids, tids
}

// waitSite says where a thread waits: "`pthread_mutex_lock` called from
// `blas_thread_init`", or its innermost frame; "" for an empty stack.
func waitSite(t *stacks.Thread) string {
	_, caller := waitOf(t)
	switch {
	case len(t.Stack) == 0:
		return ""
	case caller > 0 && caller < len(t.Stack) && t.Stack[caller].Func != "":
		return fmt.Sprintf("`%s` called from `%s`", frameName(t.Stack[caller-1]), frameName(t.Stack[caller]))
	case caller > 0:
		return fmt.Sprintf("`%s`", frameName(t.Stack[caller-1]))
	}
	return fmt.Sprintf("`%s`", frameName(t.Stack[0]))
}
