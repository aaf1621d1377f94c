package heuristics

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

// Cycles inferred from arguments: when a dump names each waiter's lock
// but no owner, the holder of each lock is inferred from the frames
// (lock-order-cycle's stack-only evidence). The arguments are read by
// args.go.

// inferredStep is one wait of an inferred cycle: a thread waits for a
// lock (or joins a thread), and why the next thread is taken to hold it.
type inferredStep struct {
	from ThreadRef
	lock *argLock // nil for a join
	to   ThreadRef
	why  string
}

// inferCycle looks for a cycle of waits in a process whose waiters'
// locks the arguments name, with each lock's holder inferred: the one
// thread whose frames were called with that lock while it waits for
// another, or, when a lock has no such thread, the one thread of the
// process that is not waiting for it (the holder must be one that does
// not wait for it, or one that exited). Joins whose target the futex
// arguments name close cycles too. It returns nil when the holders
// cannot be told or no cycle closes.
func inferCycle(p *stacks.Process, ws []ThreadRef, v argLockView) []inferredStep {
	if len(v.waiters) == 0 {
		return nil
	}
	holder := map[uint64]inferredStep{}
	for _, addr := range v.order {
		var cands []int
		for i, w := range v.waiters {
			if containsLock(w.held, addr) {
				cands = append(cands, i)
			}
		}
		l := v.lockAt(addr, argLock{Addr: addr})
		switch {
		case len(cands) == 1:
			w := v.waiters[cands[0]]
			holder[addr] = inferredStep{to: w.ref, why: fmt.Sprintf("its frame `%s` was called with %s",
				heldFrame(w.ref.Thread, addr), l)}
		case len(cands) == 0 && len(v.waiters) == len(ws):
			if h := soleNonWaiter(p, v); h != nil {
				holder[addr] = inferredStep{to: ThreadRef{p, h},
					why: "it is the only thread of the process not waiting for it"}
			}
		}
	}
	next := map[*stacks.Thread]inferredStep{}
	for _, w := range v.waiters {
		h, ok := holder[w.lock.Addr]
		if !ok || h.to.Thread == w.ref.Thread {
			continue
		}
		lock := v.lockAt(w.lock.Addr, w.lock)
		next[w.ref.Thread] = inferredStep{from: w.ref, lock: &lock, to: h.to, why: h.why}
	}
	for _, t := range p.Threads {
		if tid := joinArgTid(p, t); tid != 0 {
			for _, o := range p.Threads {
				if o.Tid == tid {
					next[t] = inferredStep{from: ThreadRef{p, t}, to: ThreadRef{p, o}}
				}
			}
		}
	}
	// Follow the waits from each thread, in the process's order, until
	// one comes back.
	for _, start := range p.Threads {
		var path []inferredStep
		seen := map[*stacks.Thread]int{}
		for cur := start; ; {
			s, ok := next[cur]
			if !ok {
				break
			}
			if at, loop := seen[cur]; loop {
				return path[at:]
			}
			seen[cur] = len(path)
			path = append(path, s)
			cur = s.to.Thread
		}
	}
	return nil
}

// heldFrame names the frame past the wait whose argument is addr.
func heldFrame(t *stacks.Thread, addr uint64) string {
	_, caller := waitOf(t)
	ls, at := argAddrsIn(t.Stack, caller, len(t.Stack))
	for i, l := range ls {
		if l.Addr == addr {
			return frameName(t.Stack[at[i]])
		}
	}
	return "?"
}

// stepText says an inferred wait as a sentence.
func (s inferredStep) text() string {
	if s.lock == nil {
		return fmt.Sprintf("%s waits in pthread_join for %s (the futex it waits on is that thread's id)",
			threadLabel(s.from.Thread), threadLabel(s.to.Thread))
	}
	return fmt.Sprintf("%s waits for %s in %s, most likely held by %s: %s",
		threadLabel(s.from.Thread), s.lock, waitSite(s.from.Thread), threadLabel(s.to.Thread), s.why)
}

// waitLockName names the lock a thread waits for: "mutex `x` (0x…)"
// from what attach read or the dump's arguments, "a lock" when neither
// says.
func waitLockName(t *stacks.Thread) string {
	if w := threadWait(t); w != nil && w.Mutex != nil {
		return mutexLabel(w.Mutex)
	}
	if l, _, ok := waitArgLock(t); ok {
		return l.String()
	}
	return "a lock"
}

// soleNonWaiter: when every waiter the arguments name waits for one
// lock, the one thread of the process that does not wait for it, if
// there is exactly one; nil otherwise.
func soleNonWaiter(p *stacks.Process, v argLockView) *stacks.Thread {
	if len(v.order) != 1 {
		return nil
	}
	var others []*stacks.Thread
	for _, t := range p.Threads {
		if _, waits := v.of(t); !waits {
			others = append(others, t)
		}
	}
	if len(others) != 1 {
		return nil
	}
	return others[0]
}
