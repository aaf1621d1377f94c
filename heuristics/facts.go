package heuristics

// Facts and findings, computed once per snapshot.
//
// A thread's facts (what it waits on and where its wait was asked for;
// how its samples compare) are read from its stack once and kept on the
// analysis. A detector's findings (signal re-entries, loader waits, the
// locks a stack shows in hand, GIL cycles) are computed once, on first
// use, and every signature that needs them reads the same result: the
// shape of golang.org/x/tools/go/analysis, where an analyzer names what
// it Requires and the driver runs each once. Here a signature requires a
// finding by calling its accessor (findReentries, findLoaderWaits, …);
// the accessor runs the detector the first time.

import (
	"iter"

	"github.com/hangdoc/hangdoc/stacks"
)

// threadFact is what one thread's stack and samples say.
type threadFact struct {
	class   waitClass
	caller  int
	nonlock *sampleFacts // computed on first use
}

// factKey is what a thread's facts depend on when its dump gave one
// observation and no kernel wait (a pasted dump): its stack, by the
// identity of the []Frame the parser shares among equal stacks
// (stacks/share.go), its state, and a goroutine's status. Threads with
// equal keys share one threadFact: 2,000 workers parked at one place
// are read once, not 2,000 times.
type factKey struct {
	stack  stackID
	state  string
	gor    bool
	status string
}

// sharedKey returns t's factKey; false when its facts are its own
// (samples or a kernel wait were read).
func sharedKey(t *stacks.Thread) (factKey, bool) {
	if len(t.Samples()) > 0 || threadWait(t) != nil || len(t.Stack) == 0 {
		return factKey{}, false
	}
	k := factKey{stack: stackID{&t.Stack[0], len(t.Stack)}, state: t.State}
	if g := t.Goroutine(); g != nil {
		k.gor, k.status = true, g.Status
	}
	return k, true
}

// fact returns t's facts, computing them the first time (once for all
// the threads that share its key).
func (a *analysis) fact(t *stacks.Thread) *threadFact {
	key, shared := sharedKey(t)
	if shared {
		if f, ok := a.shared.get(key); ok {
			return f
		}
	} else if f := a.facts[t]; f != nil {
		return f
	}
	class, caller := waitOf(t)
	f := &threadFact{class: class, caller: caller}
	if shared {
		if a.shared == nil {
			a.shared = factMemo[*threadFact]{}
		}
		a.shared.put(key, f)
	} else {
		a.facts[t] = f
	}
	return f
}

// factMemo holds a value per factKey, found by the stack's identity
// first and then in the short list of the states and statuses its
// threads show: hashing the key's two strings for each lookup, a few
// for every one of 100,000 threads, was a tenth of the heuristics.
type factMemo[V any] map[stackID][]factEntry[V]

type factEntry[V any] struct {
	key factKey
	v   V
}

func (m factMemo[V]) get(k factKey) (V, bool) {
	for _, e := range m[k.stack] {
		if e.key == k {
			return e.v, true
		}
	}
	var zero V
	return zero, false
}

func (m factMemo[V]) put(k factKey, v V) {
	m[k.stack] = append(m[k.stack], factEntry[V]{k, v})
}

// memoized returns m's value for k, computing it with f the first time.
func (m factMemo[V]) memoized(k factKey, f func() V) V {
	if v, ok := m.get(k); ok {
		return v
	}
	v := f()
	m.put(k, v)
	return v
}

// perStack returns what f, a reading of t's stack and wait alone, says
// of t: computed once for threads whose facts are shared (sharedKey) and
// that show no returned calls, so a detector's loop over 100,000
// goroutines reads each distinct stack once. What f returns is copied
// to every thread alike: it must not name t.
func perStack[V any](memo factMemo[V], t *stacks.Thread, f func() V) V {
	k, ok := sharedKey(t)
	if !ok || len(t.Returned()) > 0 {
		return f()
	}
	return memo.memoized(k, f)
}

// stackID is a stack's identity: the parser shares one []Frame among
// equal stacks (stacks/share.go), so a pure reading of a stack keyed by
// its stackID is made once for all the threads that show it.
type stackID struct {
	first *stacks.Frame
	n     int
}

// byStack returns f(), a reading of st alone, once per distinct stack.
func byStack[V any](memo map[stackID]V, st []stacks.Frame, f func() V) V {
	if len(st) == 0 {
		return f()
	}
	return memoized(memo, stackID{&st[0], len(st)}, f)
}

// memoized returns memo[k], computing it with f the first time.
func memoized[K comparable, V any](memo map[K]V, k K, f func() V) V {
	if v, ok := memo[k]; ok {
		return v
	}
	v := f()
	memo[k] = v
	return v
}

// wait is waitOf(t), once per snapshot.
func (a *analysis) wait(t *stacks.Thread) (waitClass, int) {
	f := a.fact(t)
	return f.class, f.caller
}

// samplesOf is factsOf(t), once per snapshot (once per key, for
// threads that share one).
func (a *analysis) samplesOf(t *stacks.Thread) threadFacts { return samplesWith(t, a.fact(t)) }

// samplesWith is samplesOf(t) for t's facts f.
func samplesWith(t *stacks.Thread, f *threadFact) threadFacts {
	if f.nonlock == nil {
		f.nonlock = factsOf(t).sampleFacts
	}
	return threadFacts{t: t, sampleFacts: f.nonlock}
}

// samplesIn yields every thread of p with samplesOf it, in p.Threads'
// order, through factsIn.
func (a *analysis) samplesIn(p *stacks.Process) iter.Seq2[*stacks.Thread, threadFacts] {
	return func(yield func(*stacks.Thread, threadFacts) bool) {
		fs := a.factsIn(p)
		for i, t := range p.Threads {
			if !yield(t, samplesWith(t, fs[i])) {
				return
			}
		}
	}
}

// factsIn are the facts of p's threads in p.Threads' order, looked up
// once per process: a detector's pass over 100,000 threads then reads
// each by its index, not by a lookup of its key (those lookups, a pass
// for each of a dozen detectors, were a quarter of the heuristics).
func (a *analysis) factsIn(p *stacks.Process) []*threadFact {
	return memoized(a.procFacts, p, func() []*threadFact {
		fs := make([]*threadFact, len(p.Threads))
		for i, t := range p.Threads {
			fs[i] = a.fact(t)
		}
		return fs
	})
}

// result returns a detector's findings, running it the first time: a
// signature that needs another's findings reads them instead of
// re-running its detector.
func result[T any](a *analysis, name string, detect func(*analysis) T) T {
	if v, ok := a.results[name]; ok {
		return v.(T)
	}
	v := detect(a)
	a.results[name] = v
	return v
}
