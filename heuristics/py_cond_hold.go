package heuristics

// A Python lock held across a wait to be woken. A thread takes a lock
// (`with lock:`) and, still holding it, waits in Condition.wait: a
// bounded queue.Queue's put on a full queue, a get on an empty one, an
// Event.wait. The thread that would make the condition true (take from
// the queue, put into it, set the event) first asks for that lock and
// waits. threading's locks record no owner, so nothing says who holds
// the lock; with every thread of the process waiting and none running,
// the only threads that could hold it are those waiting to be woken.
// It is the Python form of the C cycle of a mutex held across
// pthread_cond_wait (ownerless_tail.go), and py-spy pastes carry it as
// well as a live read: the frames alone say which wait is which
// (pyLockUse).

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

// pyCondHold is one such process: waiters ask for a lock in the
// program's own code; sleepers wait to be woken (Condition.wait, a
// queue, an event), one of which most likely holds it.
type pyCondHold struct {
	p                *stacks.Process
	waiters, holders []ThreadRef
}

// findPyCondHolds returns them once per snapshot (LockDiagnosed and
// lock-order-cycle both read them).
func findPyCondHolds(a *analysis) []pyCondHold {
	return result(a, "python locks held across a wait", detectPyCondHolds)
}

func detectPyCondHolds(a *analysis) []pyCondHold {
	var out []pyCondHold
	starved := map[*stacks.Process]bool{}
	for _, s := range findPoolStarvations(a) {
		starved[s.p] = true
	}
	for _, c := range pyImportCycles(a) {
		starved[c.waiter.Proc] = true
	}
	for p := range a.liveProcs() {
		if starved[p] || p.Fork != nil || !a.allThreads(p) {
			continue // a forked child's lock may be the parent's (py_fork_lock.go)
		}
		c := pyCondHold{p: p}
		ok := true
		for _, t := range distinctThreads(p) {
			if a.running(t) {
				ok = false // it may release the lock
				break
			}
			class, _ := a.wait(t)
			if !hasPyFrames(t) {
				if class == waitCond || class == waitJoin {
					continue // a native library's idle worker (OpenBLAS, a C pool) takes no Python lock
				}
				ok = false
				break
			}
			if class != waitPyLock && class != waitCond && class != waitJoin {
				ok = false // on I/O or a timer: it may yet do what the others wait for
				break
			}
			switch pyLockUse(t) {
			case waitPyLock:
				c.waiters = append(c.waiters, ThreadRef{Proc: p, Thread: t})
			case waitCond:
				c.holders = append(c.holders, ThreadRef{Proc: p, Thread: t})
			}
		}
		if ok && len(c.waiters) > 0 && len(c.holders) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func pyCondHoldDiagnosis(c pyCondHold) Diagnosis {
	w := c.waiters[0].Thread
	holder := threadLabel(c.holders[0].Thread)
	if n := len(c.holders); n > 1 {
		holder = fmt.Sprintf("one of the %d threads waiting to be woken (%s, …)", n, holder)
	}
	waiters := threadLabel(w) + " waits"
	if n := len(c.waiters); n > 1 {
		waiters = fmt.Sprintf("%d threads (%s, …) wait", n, threadLabel(w))
	}
	d := Diagnosis{Deadlock: true, Confidence: Low, Refs: []string{
		"https://docs.python.org/3/library/threading.html#condition-objects",
		"https://docs.python.org/3/library/queue.html#queue.Queue.put",
	}}
	d.Summary = fmt.Sprintf("%d threads most likely deadlock through a lock held across a wait: %s for a lock (%s) that records no owner; "+
		"no thread runs, so its holder is most likely %s, which waits to be woken (%s) while it holds the lock, by the thread waiting for the lock",
		len(c.waiters)+len(c.holders), waiters, pyWhere(w), holder, pyWhere(c.holders[0].Thread))
	for _, r := range c.waiters {
		d.Chain = append(d.Chain, fmt.Sprintf("%s waits for a lock in %s", threadLabel(r.Thread), pyWhere(r.Thread)))
	}
	for _, r := range c.holders {
		d.Chain = append(d.Chain, fmt.Sprintf("%s waits to be woken in %s: a Condition.wait releases only the condition's own lock, not one the caller took before", threadLabel(r.Thread), pyWhere(r.Thread)))
	}
	d.Chain = append(d.Chain, "no thread runs: the waker of the condition is among those waiting, and the only threads that could hold the lock are those waiting to be woken")
	for _, r := range append(append([]ThreadRef{}, c.waiters...), c.holders...) {
		d.Evidence = append(d.Evidence, stackLine(r.Thread))
	}
	d.Evidence = append(d.Evidence, "threading's locks record no owner: the holder is inferred from who waits how, not read; "+
		"the lock taken by the waiting-to-be-woken thread's caller (a `with lock:` around the put, get or wait) settles it")
	d.Fix = "Do not hold a lock while waiting on a queue, an event or a condition: release it before the put, get or wait " +
		"(or use a Condition built on that lock, so that wait releases it), or give the wait a timeout and back off."
	d.name(append(append([]ThreadRef{}, c.waiters...), c.holders...)...)
	return d
}
