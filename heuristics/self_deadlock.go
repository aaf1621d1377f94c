package heuristics

import (
	"fmt"
)

func init() {
	register(&Signature{
		ID:    "self-deadlock",
		Title: "Thread re-locks a mutex it already holds",
		Explain: "A normal (non-recursive) mutex does not count who holds it: a thread that locks it a second " +
			"time, typically through a nested call that takes the same lock, waits for itself for ever. " +
			"The mutex records the waiting thread as its owner.",
		Fix: "Do not lock a mutex the thread already holds: find the outer lock on this stack, release it " +
			"before the nested call, or split the function into a variant that expects the lock held. Make the " +
			"mutex recursive only if re-entry is intended; while debugging, PTHREAD_MUTEX_ERRORCHECK turns this " +
			"hang into an EDEADLK error at the second lock.",
		Rank:  20,
		Match: matchSelfDeadlock,
	})
}

var selfDeadlockRefs = []string{
	"https://man7.org/linux/man-pages/man3/pthread_mutex_lock.3p.html",
	"https://man7.org/linux/man-pages/man3/pthread_mutexattr_settype.3p.html",
}

// findSelfDeadlocks returns the waits whose mutex records the waiting
// thread as its owner, except on a recursive mutex (re-locking one is
// fine) and inside a signal handler (signal-handler-reentry says more).
func findSelfDeadlocks(a *Analysis) []Edge {
	reentered := map[int]bool{}
	for _, r := range findReentries(a) {
		reentered[r.waiter.Thread.Tid] = true
	}
	var es []Edge
	for _, e := range a.graph.Edges {
		if e.Kind == EdgeMutex && e.Lock.Owner.Kind == OwnerLive && e.To.Thread == e.From.Thread &&
			e.Lock.Mutex.Kind&kindMask != kindRecursive && !reentered[e.From.Thread.Tid] {
			es = append(es, e)
		}
	}
	return es
}

func matchSelfDeadlock(a *Analysis) []Diagnosis {
	var ds []Diagnosis
	for _, e := range findSelfDeadlocks(a) {
		t, m := e.From.Thread, e.Lock.Mutex
		_, caller := waitOf(t)
		where := ""
		if caller < len(t.Stack) {
			where = fmt.Sprintf(" in `%s`", frameName(t.Stack[caller]))
		}
		d := Diagnosis{
			Deadlock:   true,
			Confidence: a.graphConfidence(),
			Summary:    Step(e),
			Chain: []string{
				fmt.Sprintf("%s locks %s%s", threadLabel(t), mutexLabel(m), where),
				fmt.Sprintf("the mutex records thread %d as its owner: the same thread locked it earlier and has not unlocked it", t.Tid),
				"a non-recursive mutex does not count re-locks: the thread waits for itself, and nothing else will unlock it",
			},
			Evidence: []string{mutexFacts(m), stackLine(t)},
			Refs:     selfDeadlockRefs,
		}
		if m.Kind&kindMask == kindErrCheck {
			// glibc returns EDEADLK instead of blocking: a thread stuck here
			// anyway is likely stuck by something the owner field hides.
			d.Confidence = Medium
			d.Chain[2] = "the mutex is errorcheck: pthread_mutex_lock should have returned EDEADLK rather than block; the thread is stuck anyway (it retries the lock after the error, or the owner field is stale)"
		}
		d.Pids, d.Tids = orderRefs(e.From)
		ds = append(ds, d)
	}
	// A pasted dump (or lock elision) records no owner: a process whose
	// one lock waiter is the only thread that could release the lock.
	for _, p := range a.Snap.Processes {
		ws := a.stuckLockWaiters(p)
		if p.Fork != nil || len(ws) != 1 || !a.allThreads(p) {
			continue
		}
		t := ws[0].Thread
		d := Diagnosis{
			Deadlock:   true,
			Confidence: Low,
			Summary: fmt.Sprintf("%s waits for a lock in %s that no other thread of process %d can release: it most likely holds it already",
				threadLabel(t), waitSite(t), p.Pid),
			Chain: []string{
				fmt.Sprintf("%s waits for a lock in %s; no owner was recorded", threadLabel(t), waitSite(t)),
				"every other thread of the process waits too (for a lock or a join) and none runs",
				"so the holder is the waiter itself, taking the lock a second time, or a thread that exited holding it",
			},
			Evidence: []string{stackLine(t), "no mutex owner was read: the verdict rests on frame names and thread states"},
			Refs:     selfDeadlockRefs,
		}
		d.Pids, d.Tids = orderRefs(ws[0])
		ds = append(ds, d)
	}
	return ds
}
