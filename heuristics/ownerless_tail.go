package heuristics

// A wait-for chain that ends on a lock with no recorded owner. A live
// attach reads a pthread mutex's owner, but a read lock (pthread_rwlock,
// std::shared_mutex, a Rust RwLock's readers), a semaphore or a spin lock
// records none. So when thread R waits for a mutex held by thread T, and T
// waits for such a lock, the graph stops at T and no cycle closes, though
// the classic deadlock is there: R took the read lock before the mutex, T
// the mutex before the write lock. With nothing running, T's lock is most
// likely held by a thread that waits behind T: a thread that waits for T
// cannot be the one that will release what T waits for. A paste, which has
// no owners at all, gets the same verdict from lock_order_cycle.go's
// stack-only rule; this is its counterpart when some owners were read.
//
// The same holds when T waits on a condition variable (a semaphore, a
// futex) while it holds the mutex R waits for: a wake-up records no waker
// either, and with nothing running it can only come from a thread that
// waits behind T. That is holding a lock across a wait, a cycle through the
// condition variable (pthread_cond_wait releases only its own mutex).

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// ownerlessTail is one such chain: tail waits for a lock nobody is
// recorded as holding; behind are the threads whose waits lead to tail
// (paths[i] is behind[i]'s chain of edges to tail).
type ownerlessTail struct {
	p    *stacks.Process
	tail ThreadRef
	// cond: the tail waits for a wake-up (a condition variable, a
	// semaphore, a futex), not for a lock.
	cond bool
	// whole: every thread of the process is the tail or waits behind it.
	whole  bool
	behind []ThreadRef
	paths  [][]Edge
}

// findOwnerlessTails returns the chains that end on an ownerless lock wait
// while no thread of the process runs, once per snapshot (LockDiagnosed
// and lock-order-cycle both read them).
func findOwnerlessTails(a *analysis) []ownerlessTail {
	return result(a, "ownerless tails", detectOwnerlessTails)
}

func detectOwnerlessTails(a *analysis) []ownerlessTail {
	var out []ownerlessTail
	for p := range a.liveProcs() {
		if p.Fork != nil || !a.Evidence(p).Owners {
			continue
		}
		threads := a.distinct(p)
		if slices.ContainsFunc(threads, a.running) {
			continue // something runs: it may yet release the lock
		}
		for _, t := range threads {
			class, caller := a.wait(t)
			if class != waitLock && class != waitCond || a.namedOwner(t) || reentryOnStack(a, t) != "" {
				continue
			}
			if class == waitCond && isTimedWait(t.Stack, caller) {
				continue // its timeout will wake it, and it may let go of the lock then
			}
			if w := threadWait(t); w != nil && w.Mutex != nil && a.resolveOwner(p, w.Mutex).Kind != OwnerUnknown {
				continue // its owner is recorded: the graph follows it
			}
			tail := ThreadRef{Proc: p, Thread: t}
			c := a.chainsTo(tail, threads)
			c.cond = class == waitCond
			c.whole = len(c.behind)+1 == len(threads)
			if len(c.holderCandidates()) > 0 && (c.whole || !c.cond) {
				// a wake-up could come from a sleeper that waits on
				// nobody here (a missing producer: lost-wakeup says so);
				// a read lock may be held by one too (low, below)
				out = append(out, c)
			}
		}
	}
	return out
}

// chainsTo walks the graph backwards from tail: every thread of threads
// whose edges lead to it through live owners and joined threads.
func (a *analysis) chainsTo(tail ThreadRef, threads []*stacks.Thread) ownerlessTail {
	c := ownerlessTail{p: tail.Proc, tail: tail}
	pathTo := map[*stacks.Thread][]Edge{tail.Thread: nil}
	for grew := true; grew; {
		grew = false
		for _, t := range threads {
			if _, done := pathTo[t]; done {
				continue
			}
			for _, e := range a.WaitsFor(t) {
				if e.Kind == EdgeChild || e.To.Thread == nil {
					continue
				}
				if rest, ok := pathTo[e.To.Thread]; ok {
					pathTo[t] = append([]Edge{e}, rest...)
					c.behind = append(c.behind, e.From)
					c.paths = append(c.paths, pathTo[t])
					grew = true
					break
				}
			}
		}
	}
	return c
}

// holderCandidates are the threads behind the tail that wait for a lock
// themselves: a thread that only joins holds nothing the tail needs as
// far as the frames show, but one inside a lock call took locks before it.
func (c ownerlessTail) holderCandidates() []int {
	var out []int
	for i := range c.behind {
		if c.paths[i][0].Kind == EdgeMutex {
			out = append(out, i)
		}
	}
	return out
}

func ownerlessTailDiagnosis(a *analysis, c ownerlessTail) (Diagnosis, bool) {
	cands := c.holderCandidates()
	if len(cands) == 0 {
		return Diagnosis{}, false
	}
	t := c.tail.Thread
	path := c.paths[cands[0]]
	d := Diagnosis{Deadlock: true, Confidence: Low, Refs: lockOrderRefs}
	holder := threadLabel(c.behind[cands[0]].Thread)
	switch {
	case len(cands) == 1 && c.whole:
		// every other thread waits behind the tail too, or only joins:
		// the one lock waiter behind it is the only candidate
		d.Confidence = Medium
	case len(cands) > 1:
		var names []string
		for _, i := range cands {
			names = append(names, threadLabel(c.behind[i].Thread))
		}
		holder = "one of " + strings.Join(names, ", ")
	}
	refs := []ThreadRef{c.behind[cands[0]]}
	for _, e := range path[1:] {
		refs = append(refs, e.From)
	}
	refs = append(refs, c.tail)
	for _, r := range refs {
		d.Evidence = append(d.Evidence, stackLine(r.Thread))
	}
	for _, e := range path {
		if e.Kind == EdgeMutex {
			d.Evidence = append(d.Evidence, a.mutexFacts(e.Lock.Mutex))
		}
	}
	if c.cond {
		held := "a mutex"
		if e := path[len(path)-1]; e.Kind == EdgeMutex {
			held = mutexLabel(e.Lock.Mutex)
		}
		d.Summary = fmt.Sprintf("%d threads most likely deadlock in a cycle: %s, which waits to be woken in %s while it holds %s; "+
			"the wake-up can only come from a thread that waits, most likely %s, which waits behind it",
			len(refs), ChainText(path), waitSite(t), held, holder)
		d.Chain = append(Chain(path),
			fmt.Sprintf("%s waits to be woken in %s (a condition variable, a semaphore or a futex) and holds %s meanwhile: waiting releases only the wait's own mutex", threadLabel(t), waitSite(t), held),
			fmt.Sprintf("no thread runs, so the thread that would wake it waits too: most likely %s, which cannot go on until %s releases %s", holder, threadLabel(t), held))
		d.Evidence = append(d.Evidence, fmt.Sprintf("a wake-up records no waker: that %s would wake %s is inferred from who waits, not read", holder, threadLabel(t)))
		d.Fix = fmt.Sprintf("Do not hold %s while waiting: release it before the wait (or wait on a condition variable that uses %s itself), "+
			"so the thread that will signal can take it; a lock held across a wait blocks whoever needs it to make the condition true.", held, held)
		d.name(refs...)
		return d, true
	}
	d.Summary = fmt.Sprintf("%d threads most likely deadlock in a cycle: %s, which waits for %s in %s; that lock records no owner: "+
		"its holder is most likely %s, which waits behind it",
		len(refs), ChainText(path), waitLockName(t), waitSite(t), holder)
	d.Chain = append(Chain(path),
		fmt.Sprintf("%s waits for %s in %s, a lock that records no owner (a read lock, a semaphore or a spin lock)", threadLabel(t), waitLockName(t), waitSite(t)),
		fmt.Sprintf("no thread runs, so its holder waits too: most likely %s, which cannot go on until %s does (or a thread that exited holding it)", holder, threadLabel(t)))
	d.Evidence = append(d.Evidence, fmt.Sprintf("%s's lock has no owner field hangdoc can read (readers of a pthread_rwlock or std::shared_mutex are not recorded): "+
		"which thread holds it is inferred, not read", threadLabel(t)))
	d.Fix = "Take the locks in one global order everywhere (a read lock counts as taking the lock): here one thread took the lock " +
		threadLabel(t) + " waits for before the mutex, and " + threadLabel(t) + " takes them the other way round; or lock them together " +
		"with std::scoped_lock / std::lock, or try the second with a timeout and back off."
	d.name(refs...)
	return d, true
}
