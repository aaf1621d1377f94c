package heuristics

import "github.com/hangdoc/hangdoc/stacks"

// runtimeFacts is one language runtime's facts hook: what the runtime
// says of its threads that their native frames cannot. Each runtime
// computes its facts in its own files (Go: go_facts.go; Python:
// gil_*.go, py_*.go); the verdicts that are not the runtime's read them
// through runtimeWaitKind and runtimeClaims, never by asking which
// runtime a thread runs. A new runtime implements it and adds a row to
// runtimeHooks.
type runtimeFacts interface {
	// waitKind is the wait the non-lock verdicts see in t, when the
	// runtime says it better than t's frames; ok false: the frames say.
	waitKind(t *stacks.Thread) (k waitKind, call string, ok bool)
	// claims says whether one of the runtime's own deadlock findings
	// names a thread of p: the process is then diagnosed.
	claims(a *analysis, p *stacks.Process) bool
}

// runtimeHooks are the runtimes with facts of their own, by the kind of
// their threads (stacks.RuntimeThread.Kind).
var runtimeHooks = map[string]runtimeFacts{
	stacks.KindGoroutine: goRuntimeFacts{},
	stacks.KindPython:    pyRuntimeFacts{},
}

// runtimeWaitKind is what t's runtime says it waits on (see waitKind).
func runtimeWaitKind(t *stacks.Thread) (waitKind, string, bool) {
	if t.Runtime == nil {
		return wkUnknown, "", false
	}
	if h := runtimeHooks[t.Runtime.Kind]; h != nil {
		return h.waitKind(t)
	}
	return wkUnknown, "", false
}

// runtimeClaims says whether a runtime's own deadlock findings name a
// thread of p.
func runtimeClaims(a *analysis, p *stacks.Process) bool {
	for _, h := range runtimeHooks {
		if h.claims(a, p) {
			return true
		}
	}
	return false
}

// goRuntimeFacts: a goroutine's status says its wait better than frames
// without a libc call; Go's own signatures (go_*.go) claim its process.
type goRuntimeFacts struct{}

func (goRuntimeFacts) waitKind(t *stacks.Thread) (waitKind, string, bool) { return goWaitKind(t) }

func (goRuntimeFacts) claims(a *analysis, p *stacks.Process) bool { return goDeadlockClaims(a, p) }

// pyRuntimeFacts: a Python thread's wait for the GIL is a futex wait its
// frames show (take_gil); a GIL deadlock or a GIL retake claims its
// process.
type pyRuntimeFacts struct{}

func (pyRuntimeFacts) waitKind(*stacks.Thread) (waitKind, string, bool) {
	return wkUnknown, "", false
}

func (pyRuntimeFacts) claims(a *analysis, p *stacks.Process) bool {
	for _, r := range findGILRetakes(a) {
		if r.Proc == p {
			return true
		}
	}
	for _, f := range findGILDeadlocks(a) {
		if f.holder.Proc == p {
			return true
		}
	}
	return false
}
