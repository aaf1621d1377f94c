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

import "github.com/hangdoc/hangdoc/stacks"

// threadFact is what one thread's stack and samples say.
type threadFact struct {
	class   waitClass
	caller  int
	nonlock *threadFacts // computed on first use
}

// fact returns t's facts, computing them the first time.
func (a *analysis) fact(t *stacks.Thread) *threadFact {
	if f := a.facts[t]; f != nil {
		return f
	}
	class, caller := waitOf(t)
	f := &threadFact{class: class, caller: caller}
	a.facts[t] = f
	return f
}

// wait is waitOf(t), once per snapshot.
func (a *analysis) wait(t *stacks.Thread) (waitClass, int) {
	f := a.fact(t)
	return f.class, f.caller
}

// samplesOf is factsOf(t), once per snapshot.
func (a *analysis) samplesOf(t *stacks.Thread) threadFacts {
	f := a.fact(t)
	if f.nonlock == nil {
		nf := factsOf(t)
		f.nonlock = &nf
	}
	return *f.nonlock
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
