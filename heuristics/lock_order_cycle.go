package heuristics

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "lock-order-cycle",
		Title: "Threads wait for each other's locks in a cycle",
		Explain: "Each thread holds a lock the next one in the cycle waits for: thread A holds lock 1 and waits " +
			"for lock 2, thread B holds lock 2 and waits for lock 1 (ABBA), or a longer ring. None can go on. " +
			"A thread joining another while holding a lock that one needs closes a cycle the same way. " +
			"Goroutines blocked on each other's sync.Mutex or sync.RWMutex are named the same way; Go mutexes " +
			"record no owner, so the holders are inferred from the frames that took a lock and have not returned.",
		Fix: "Take these locks in one global order everywhere; where code needs several at once, lock them " +
			"together (std::scoped_lock, std::lock) or use pthread_mutex_trylock and back off. Do not join or " +
			"wait for a thread while holding a lock it needs.",
		Needs: []string{"owners"},
		Rank:  40,
		Match: func(a *analysis) []Diagnosis { return append(matchLockOrderCycle(a), matchGoLockCycle(a)...) }, // goroutines: go_lock_cycle.go
	})
}

var lockOrderRefs = []string{
	"https://man7.org/linux/man-pages/man3/pthread_mutex_lock.3p.html",
	"https://en.cppreference.com/w/cpp/thread/scoped_lock",
}

// lockOrderCycles returns the cycles of two threads or more that do not
// go through the loader lock (loader-lock names those).
func lockOrderCycles(a *analysis) [][]Edge {
	var cs [][]Edge
	for _, c := range a.cycles {
		if len(c) < 2 || throughLoader(c) {
			continue
		}
		cs = append(cs, c)
	}
	return cs
}

func containsThread(refs []ThreadRef, t *stacks.Thread) bool {
	for _, r := range refs {
		if r.Thread == t {
			return true
		}
	}
	return false
}

func throughLoader(c []Edge) bool {
	for _, e := range c {
		if e.Kind == EdgeMutex && waitsForLoaderLock(e.From.Thread) {
			return true
		}
	}
	return false
}

func matchLockOrderCycle(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, c := range lockOrderCycles(a) {
		var refs []ThreadRef
		var locks []string
		join := false
		d := Diagnosis{Deadlock: true, Confidence: a.graphConfidence(edgeProcs(c)...), Refs: lockOrderRefs}
		for _, e := range c {
			refs = append(refs, e.From)
			d.Evidence = append(d.Evidence, stackLine(e.From.Thread))
			if e.Kind == EdgeMutex {
				locks = append(locks, cycleLockName(e))
				d.Evidence = append(d.Evidence, a.mutexFacts(e.Lock.Mutex))
			} else {
				join = true
			}
		}
		d.Summary = fmt.Sprintf("%d threads deadlock in a cycle: %s", len(c), ChainText(c))
		d.Chain = append(Chain(c), "which closes the cycle: each waits for the next, and none can go on")
		var fix []string
		switch {
		case len(locks) > 1 && javaCycle(c):
			d.Refs = javaLockOrderRefs
			fix = append(fix, fmt.Sprintf("Take %s in one global order everywhere (these threads take them in different orders, "+
				"in nested synchronized blocks or Lock.lock calls), or take the second with java.util.concurrent's "+
				"Lock.tryLock(timeout) and back off.", strings.Join(locks, " and ")))
		case len(locks) > 1:
			fix = append(fix, fmt.Sprintf("Take %s in one global order everywhere (these threads take them in different orders), "+
				"or lock them together with std::scoped_lock / std::lock, or use pthread_mutex_trylock and back off.",
				strings.Join(locks, " and ")))
		}
		if join {
			fix = append(fix, "Do not join a thread while holding a lock it needs: release the lock before pthread_join.")
		}
		d.Fix = strings.Join(fix, " ")
		d.name(refs...)
		ds = append(ds, d)
	}
	// A waiter whose named owner's stack the paste cut.
	for _, e := range findOwnerCuts(a) {
		ds = append(ds, ownerCutDiagnosis(a, e))
	}
	// A detector's report of a cycle it saw (tool_reports.go): its
	// stacks are where the locks were taken, not a dump of the hang.
	// Claimed by process, not pid: a report and a dump pasted without
	// pids are both pid 0.
	claimed := map[*stacks.Process]bool{}
	for _, d := range toolClaimDiagnoses(a) {
		ds = append(ds, d)
		for _, p := range a.Snap.Processes {
			if d.About(p) {
				claimed[p] = true
			}
		}
	}
	// One waiter whose lock another thread holds, the paste cut the rest
	// (stackonly.go's holderElsewhere).
	for _, p := range a.Snap.Processes {
		if claimed[p] {
			continue
		}
		if lw, ok := a.loneWaiterOf(p); ok && lw.id == "lock-order-cycle" {
			ds = append(ds, a.loneWaiterDiagnosis(lw))
		} else if r, ok := loneJoiner(a, p); ok {
			ds = append(ds, loneJoinerDiagnosis(a, r)) // lone_joiner.go
		}
	}
	// Owners read, but the chain ends on a lock that records none
	// (ownerless_tail.go).
	inCycle := map[*stacks.Process]bool{}
	for _, c := range a.cycles {
		for _, p := range edgeProcs(c) {
			inCycle[p] = true
		}
	}
	for _, c := range findOwnerlessTails(a) {
		if inCycle[c.p] || claimed[c.p] {
			continue
		}
		if d, ok := ownerlessTailDiagnosis(a, c); ok {
			ds = append(ds, d)
		}
	}
	// A module lock waiter and the thread running that import
	// (py_import_cycle.go).
	for _, c := range pyImportCycles(a) {
		if p := c.waiter.Proc; inCycle[p] || claimed[p] {
			continue
		}
		ds = append(ds, pyImportCycleDiagnosis(a, c))
	}
	// A Python lock waiter behind threads that wait to be woken
	// (py_cond_hold.go).
	for _, c := range findPyCondHolds(a) {
		if inCycle[c.p] || claimed[c.p] {
			continue
		}
		ds = append(ds, pyCondHoldDiagnosis(c))
		claimed[c.p] = true
	}
	// No owner recorded (a pasted dump, lock elision): several threads of
	// a process wait on locks and nothing else could release them.
	for _, p := range a.Snap.Processes {
		ws := a.stuckLockWaiters(p)
		if p.Fork != nil || len(ws) < 2 || claimed[p] {
			continue
		}
		v := argLocks(p, ws)
		if c := inferCycle(p, ws, v); c != nil {
			ds = append(ds, inferredCycleDiagnosis(p, ws, v, c))
			continue
		}
		others := ""
		switch n := len(p.Threads) - len(ws); {
		case n == 1:
			others = ", 1 more waits for a thread or a futex,"
		case n > 1:
			others = fmt.Sprintf(", %d more wait for threads or futexes,", n)
		}
		d := Diagnosis{
			Deadlock:   true,
			Confidence: Low,
			Summary: fmt.Sprintf("%d threads of process %d wait for %s%s and none runs; no owner is recorded: the holders most likely wait among them, in a cycle of locks (and joins)",
				len(ws), p.Pid, argLocksText(v, len(ws)), others),
			Evidence: []string{"no mutex owner was read (a dump without owners, or lock elision): which thread holds which lock is not known"},
			Refs:     lockOrderRefs,
		}
		for _, w := range ws {
			d.Chain = append(d.Chain, fmt.Sprintf("%s waits for %s in %s", threadLabel(w.Thread), waitLockName(w.Thread), waitSite(w.Thread)))
			d.Evidence = append(d.Evidence, stackLine(w.Thread))
		}
		d.Evidence = append(d.Evidence, argLocksEvidence(v)...)
		for _, t := range p.Threads {
			if !containsThread(ws, t) {
				d.Chain = append(d.Chain, threadLabel(t)+" "+a.Doing(t))
				d.Evidence = append(d.Evidence, stackLine(t))
			}
		}
		if h := soleNonWaiter(p, v); h != nil && len(v.waiters) == len(ws) {
			d.Chain = append(d.Chain, fmt.Sprintf("every waiter waits for %s: its holder is most likely %s, the only thread not waiting for it (or a thread that exited)",
				v.lockAt(v.order[0], v.waiters[0].lock), threadLabel(h)))
		}
		d.Chain = append(d.Chain, "no thread runs: whoever holds these locks waits among them, or exited")
		d.name(ws...)
		ds = append(ds, d)
	}
	return ds
}

// argLocksText says what n waiters wait for, as their arguments name it:
// "mutex `the_lock` (0x…)" when they all wait for one, "2 different
// mutexes (`lock_a`, `lock_b`)", "locks" when the arguments do not say.
func argLocksText(v argLockView, n int) string {
	if len(v.waiters) != n || n == 0 {
		return "locks"
	}
	if len(v.order) == 1 {
		return "one lock, " + v.lockAt(v.order[0], v.waiters[0].lock).String()
	}
	var names []string
	for _, addr := range v.order {
		l := v.lockAt(addr, argLock{Addr: addr})
		if l.Symbol != "" {
			names = append(names, "`"+l.Symbol+"`")
		} else {
			names = append(names, fmt.Sprintf("%#x", addr))
		}
	}
	return fmt.Sprintf("%d different mutexes (%s)", len(v.order), strings.Join(names, ", "))
}

// argLocksEvidence says which threads wait for which address, and what
// other locks their frames were called with.
func argLocksEvidence(v argLockView) []string {
	var out []string
	for _, addr := range v.order {
		var who []string
		for _, i := range v.byAddr[addr] {
			who = append(who, fmt.Sprint(v.waiters[i].ref.Thread.Tid))
		}
		out = append(out, fmt.Sprintf("%s: waited for by thread(s) %s (from the frames' arguments)",
			v.lockAt(addr, argLock{Addr: addr}), strings.Join(who, ", ")))
	}
	for _, w := range v.waiters {
		for _, h := range w.held {
			out = append(out, fmt.Sprintf("%s: frame `%s` was called with %s, which it may hold", threadLabel(w.ref.Thread), heldFrame(w.ref.Thread, h.Addr), h))
		}
	}
	return out
}

// inferredCycleDiagnosis says a cycle whose lock holders were inferred
// from the dump's arguments.
func inferredCycleDiagnosis(p *stacks.Process, ws []ThreadRef, v argLockView, c []inferredStep) Diagnosis {
	d := Diagnosis{
		Deadlock:   true,
		Confidence: Medium,
		Refs:       lockOrderRefs,
	}
	var refs []ThreadRef
	var locks []string
	join := false
	for _, s := range c {
		refs = append(refs, s.from)
		d.Chain = append(d.Chain, s.text())
		if s.lock != nil {
			locks = append(locks, s.lock.String())
		} else {
			join = true
		}
	}
	d.Chain = append(d.Chain, "which closes the cycle: each waits for the next, and none can go on")
	var parts []string
	for i, s := range c {
		what := "joins"
		if s.lock != nil {
			what = "waits for " + s.lock.String() + ", most likely held by"
		}
		if i == 0 {
			parts = append(parts, fmt.Sprintf("%s %s %s", threadLabel(s.from.Thread), what, threadLabel(s.to.Thread)))
		} else {
			parts = append(parts, fmt.Sprintf("which %s %s", what, threadLabel(s.to.Thread)))
		}
	}
	d.Summary = fmt.Sprintf("%d threads of process %d most likely deadlock in a cycle: %s", len(c), p.Pid, strings.Join(parts, ", "))
	d.Evidence = []string{"no mutex owner was read: who holds each lock is inferred from the frames' arguments (the locks a thread's frames were called with) and from which threads do not wait for it; a thread that exited holding a lock would break the inference"}
	for _, s := range c {
		d.Evidence = append(d.Evidence, stackLine(s.from.Thread))
	}
	d.Evidence = append(d.Evidence, argLocksEvidence(v)...)
	var fix []string
	if len(locks) > 1 {
		fix = append(fix, fmt.Sprintf("Take %s in one global order everywhere (these threads take them in different orders), "+
			"or lock them together with std::scoped_lock / std::lock, or use pthread_mutex_trylock and back off.", strings.Join(locks, " and ")))
	}
	if join {
		fix = append(fix, "Do not join a thread while holding a lock it needs: release the lock before pthread_join.")
	}
	d.Fix = strings.Join(fix, " ")
	d.name(refs...)
	return d
}

// cycleLockName names a lock of a cycle for the fix: a lock known only by
// its named owner is "the lock thread N holds".
func cycleLockName(e Edge) string {
	if m := e.Lock.Mutex; m.Addr == 0 && m.Symbol == "" {
		return fmt.Sprintf("the lock thread %d holds", e.Lock.Owner.Tid)
	}
	return mutexLabel(e.Lock.Mutex)
}

// findOwnerCuts returns the lock waits whose owner the dump names (or
// read) as another live thread that waits for nothing the dump shows,
// does not run, and whose stack the paste cut: what the owner waits on
// was in the part cut away. A holder that does not run most often
// waits, in turn, for a lock its waiter holds.
func findOwnerCuts(a *analysis) []Edge {
	var es []Edge
	for _, e := range a.graph.Edges {
		o := e.To.Thread
		if e.Kind != EdgeMutex || o == nil || o == e.From.Thread || len(a.graph.out[o]) > 0 ||
			a.running(o) || a.running(e.From.Thread) || !stacks.StackCut(o) {
			continue
		}
		if c, _ := waitOf(o); c != notWaiting {
			continue
		}
		es = append(es, e)
	}
	return es
}

func ownerCutDiagnosis(a *analysis, e Edge) Diagnosis {
	o := e.To.Thread
	d := Diagnosis{
		Deadlock:   true,
		Confidence: Low,
		Summary: fmt.Sprintf("%s; the paste cuts the holder's stack before what it waits on: most likely a lock-order cycle, the holder waiting for a lock thread %d holds",
			Step(e), e.From.Thread.Tid),
		Chain: []string{Step(e),
			fmt.Sprintf("%s does not run, and its stack as pasted ends before any wait: the part that says what it waits for was cut", threadLabel(o)),
			"a lock holder that does not run most often waits for a lock its waiter holds: the whole stack of " + threadLabel(o) + " would settle it"},
		Evidence: []string{a.mutexFacts(e.Lock.Mutex), stackLine(e.From.Thread), stackLine(o)},
		Fix:      "Take these locks in one global order everywhere, or lock them together with std::scoped_lock / std::lock.",
		Refs:     lockOrderRefs,
	}
	d.name(e.From, e.To)
	return d
}
