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
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// pyCondHold is one such process: waiters ask for a lock in the
// program's own code; sleepers wait to be woken (Condition.wait, a
// queue, an event), one of which most likely holds it.
type pyCondHold struct {
	p                *stacks.Process
	waiters, holders []ThreadRef
	// native: threads without Python frames that wait to be woken; the
	// holders when no Python thread is one (ownerlessLockWait)
	native []ThreadRef
}

// ownerlessLockWait: the thread waits to take a lock of a family that
// records no holder at all, even for a live attach (the vocabulary's
// owner "none…"), so that the lock's silence about its owner says nothing.
func ownerlessLockWait(t *stacks.Thread) bool {
	for _, f := range t.Stack {
		if r := nativeRow(f); r != nil && r.Role == stacks.RoleAcquire {
			return strings.HasPrefix(r.Owner, "none")
		}
	}
	return false
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
		timed := factMemo[bool]{}
		pyFrames := map[stackID]bool{} // a dump's 100,000 threads show a few stacks
		for _, t := range a.distinct(p) {
			if a.running(t) {
				ok = false // it may release the lock
				break
			}
			class, caller := a.wait(t)
			if !byStack(pyFrames, t.Stack, func() bool { return hasPyFrames(t) }) {
				switch {
				case class.isLock() && ownerlessLockWait(t) && !a.namedOwner(t):
					c.waiters = append(c.waiters, ThreadRef{Proc: p, Thread: t})
				case class == waitCond && !perStack(timed, t, func() bool { return isTimedWait(t.Stack, caller) }):
					c.native = append(c.native, ThreadRef{Proc: p, Thread: t})
				case class == waitCond || class == waitJoin:
				default:
					ok = false
				}
				continue
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
		if !ok || len(c.waiters) == 0 {
			continue
		}
		if len(c.holders) == 0 && len(c.native) > 0 && !slices.ContainsFunc(c.waiters, func(r ThreadRef) bool { return hasPyFrames(r.Thread) }) {
			// Native code alone: a lock that records no holder by design
			// (Rust's std Mutex, parking_lot, GLib's GMutex), and threads
			// that wait to be woken (a channel's receive, a condvar).
			c.holders, c.native = c.native, nil
		}
		if len(c.holders) > 0 {
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
		len(c.waiters)+len(c.holders), waiters, pyOrWaitSite(w), holder, pyOrWaitSite(c.holders[0].Thread))
	for _, r := range c.waiters {
		d.Chain = append(d.Chain, fmt.Sprintf("%s waits for a lock in %s", threadLabel(r.Thread), pyOrWaitSite(r.Thread)))
	}
	for _, r := range c.holders {
		d.Chain = append(d.Chain, fmt.Sprintf("%s waits to be woken in %s: a wait releases only its own lock (a condition's), not one the caller took before", threadLabel(r.Thread), pyOrWaitSite(r.Thread)))
	}
	d.Chain = append(d.Chain, "no thread runs: the waker of the condition is among those waiting, and the only threads that could hold the lock are those waiting to be woken")
	for _, r := range append(append([]ThreadRef{}, c.waiters...), c.holders...) {
		d.Evidence = append(d.Evidence, stackLine(r.Thread))
	}
	d.Evidence = append(d.Evidence, "the lock records no owner (threading's locks, Rust's std Mutex, parking_lot): the holder is inferred from who waits how, not read; "+
		"the lock taken by the waiting-to-be-woken thread's caller (a `with lock:` or a guard around the put, get, recv or wait) settles it")
	d.Fix = "Do not hold a lock while waiting on a queue, a channel, an event or a condition: release it (drop the guard) before the put, get, recv or wait " +
		"(or use a Condition built on that lock, so that wait releases it), or give the wait a timeout and back off."
	d.name(append(append([]ThreadRef{}, c.waiters...), c.holders...)...)
	return d
}
