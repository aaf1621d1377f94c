package heuristics

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "self-deadlock",
		Title: "Thread re-locks a mutex it already holds",
		Explain: "A normal (non-recursive) mutex does not count who holds it: a thread that locks it a second " +
			"time, typically through a nested call that takes the same lock, waits for itself for ever. " +
			"The mutex records the waiting thread as its owner. In Go, a goroutine that read-locks a " +
			"sync.RWMutex it already read-holds while a writer waits is the same hang: the writer waits for the " +
			"reader, and the second RLock waits behind the writer.",
		Fix: "Do not lock a mutex the thread already holds: find the outer lock on this stack, release it " +
			"before the nested call, or split the function into a variant that expects the lock held. Make the " +
			"mutex recursive only if re-entry is intended; while debugging, PTHREAD_MUTEX_ERRORCHECK turns this " +
			"hang into an EDEADLK error at the second lock.",
		Needs: []string{"owners"},
		Rank:  20,
		// goroutines: go_self_deadlock.go; the GIL taken back by its holder: gil_retake.go
		Match: func(a *analysis) []Diagnosis {
			// go-deadlock's nested Recursive locking: tool_recursive.go
			ds := append(append(append(append(matchSelfDeadlock(a), matchGoSelfDeadlock(a)...), matchGILRetake(a)...), recursiveClaimDiagnoses(a)...), matchNativeRecursiveRead(a)...)
			for _, s := range findPoolStarvations(a) { // pool_starvation.go
				ds = append(ds, poolStarvationDiagnosis(a, s))
			}
			return ds
		},
	})
}

var selfDeadlockRefs = []string{
	"https://man7.org/linux/man-pages/man3/pthread_mutex_lock.3p.html",
	"https://man7.org/linux/man-pages/man3/pthread_mutexattr_settype.3p.html",
}

// findSelfDeadlocks returns the waits whose mutex records the waiting
// thread as its owner, except on a recursive mutex (re-locking one is
// fine) and inside a signal handler (signal-handler-reentry says more).
func findSelfDeadlocks(a *analysis) []Edge {
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

func matchSelfDeadlock(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, e := range findSelfDeadlocks(a) {
		t, m := e.From.Thread, e.Lock.Mutex
		_, caller := a.wait(t)
		where := ""
		if caller < len(t.Stack) {
			where = fmt.Sprintf(" in `%s`", frameName(t.Stack[caller]))
		}
		d := Diagnosis{
			Deadlock:   true,
			Confidence: a.graphConfidence(e.From.Proc),
			Summary:    Step(e),
			Chain: []string{
				fmt.Sprintf("%s locks %s%s", threadLabel(t), mutexLabel(m), where),
				fmt.Sprintf("the mutex records thread %d as its owner: the same thread locked it earlier and has not unlocked it", t.Tid),
				"a non-recursive mutex does not count re-locks: the thread waits for itself, and nothing else will unlock it",
			},
			Evidence: []string{a.mutexFacts(m), stackLine(t)},
			Refs:     selfDeadlockRefs,
		}
		if m.Kind&kindMask == kindErrCheck {
			// glibc returns EDEADLK instead of blocking: a thread stuck here
			// anyway is likely stuck by something the owner field hides.
			d.Confidence = Medium
			d.Chain[2] = "the mutex is errorcheck: pthread_mutex_lock should have returned EDEADLK rather than block; the thread is stuck anyway (it retries the lock after the error, or the owner field is stale)"
		}
		d.name(e.From)
		ds = append(ds, d)
	}
	// The dump's arguments show the same lock in an outer frame that
	// takes it: the thread took it there and waits for it again.
	relocked := map[*stacks.Thread]bool{}
	for _, r := range findArgRelocks(a) {
		if a.running(r.ref.Thread) {
			continue
		}
		relocked[r.ref.Thread] = true
		t, st := r.ref.Thread, r.ref.Thread.Stack
		outer, asker := frameName(st[r.outer]), frameName(st[r.asker])
		d := Diagnosis{
			Deadlock:   true,
			Confidence: Medium,
			Summary: fmt.Sprintf("%s waits for %s in `%s`, which its outer frame `%s` was called with and most likely took: it waits for a lock it already holds",
				threadLabel(t), r.lock, asker, outer),
			Chain: []string{
				fmt.Sprintf("frame #%d `%s` was called with %s and went on past taking it, deeper into the stack", r.outer, outer, r.lock),
				fmt.Sprintf("frame #%d `%s` now waits for the same address (%s)", r.inner, frameName(st[r.inner]), r.lock),
				"a non-recursive mutex does not count re-locks: the thread waits for itself, and nothing else will unlock it",
			},
			Evidence: []string{stackLineN(t, r.outer+1),
				fmt.Sprintf("the same address %#x in the arguments of frames #%d and #%d; no mutex owner was read, and the mutex's kind (recursive or not) is not known", r.lock.Addr, r.inner, r.outer)},
			Refs: selfDeadlockRefs,
		}
		if r.expr != "" || r.returned != nil {
			relockFromPaste(&d, r)
		}
		d.name(r.ref)
		ds = append(ds, d)
	}
	// A pasted dump (or lock elision) records no owner: a process whose
	// one lock waiter is the only thread that could release the lock.
	for _, p := range a.Snap.Processes {
		lw, ok := a.loneWaiterOf(p)
		if !ok || lw.id != "self-deadlock" || relocked[lw.ref.Thread] {
			continue
		}
		ds = append(ds, a.loneWaiterDiagnosis(lw))
	}
	return ds
}

// relockFromPaste words a re-lock whose outer acquisition is a lock call
// the paste shows had returned, or whose lock the paste names by the
// same expression in both calls rather than by an address.
func relockFromPaste(d *Diagnosis, r argRelock) {
	t, st := r.ref.Thread, r.ref.Thread.Stack
	same := fmt.Sprintf("the same address %#x", r.lock.Addr)
	lock := r.lock.String()
	if r.expr != "" {
		same, lock = fmt.Sprintf("the same lock `%s`", r.expr), fmt.Sprintf("`%s`", r.expr)
	}
	took := fmt.Sprintf("frame #%d `%s` was called with %s and went on past taking it, deeper into the stack", r.outer, frameName(st[r.outer]), lock)
	where := fmt.Sprintf("the arguments of frames #%d and #%d", r.inner, r.outer)
	if rc := r.returned; rc != nil {
		took = fmt.Sprintf("frame #%d `%s` called `%s` with %s, which returned: the lock was taken, and its taker is still on the stack", rc.Caller, frameName(st[rc.Caller]), frameName(rc.Frame), lock)
		where = fmt.Sprintf("the arguments of frame #%d and of the returned call `%s` the paste's call tree shows", r.inner, frameName(rc.Frame))
		d.Summary = fmt.Sprintf("%s waits for %s in `%s`, which `%s` took earlier on the same stack (`%s` returned; no unlock shown): it waits for a lock it already holds",
			threadLabel(t), lock, frameName(st[r.asker]), frameName(st[rc.Caller]), frameName(rc.Frame))
	} else {
		d.Summary = fmt.Sprintf("%s waits for %s in `%s`, which its outer frame `%s` was called with and most likely took: it waits for a lock it already holds",
			threadLabel(t), lock, frameName(st[r.asker]), frameName(st[r.outer]))
	}
	d.Chain[0] = took
	d.Chain[1] = fmt.Sprintf("frame #%d `%s` now waits for %s", r.inner, frameName(st[r.inner]), strings.TrimPrefix(same, "the same "))
	d.Evidence[1] = fmt.Sprintf("%s in %s; no mutex owner was read, and the mutex's kind (recursive or not) is not known", same, where)
}
