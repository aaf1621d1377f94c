package heuristics

import "github.com/hangdoc/hangdoc/stacks"

// runtimeFacts is one language runtime's facts hook: what the runtime
// says of its threads that their native frames cannot. Each runtime
// computes its facts in its own files (Go: go_facts.go; Python:
// gil_*.go, py_*.go; Java: java_cycle.go); the verdicts that are not the runtime's read them
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
	// lockWait is the lock wait, with the owner, that the runtime
	// records for t when t has no native wait (a Java monitor): the
	// wait-for graph and every lock verdict read it as a native one.
	lockWait(t *stacks.Thread) *stacks.Wait
}

// runtimeHooks are the runtimes with facts of their own, by the kind of
// their threads (stacks.RuntimeThread.Kind).
var runtimeHooks = map[string]runtimeFacts{
	stacks.KindGoroutine: goRuntimeFacts{},
	stacks.KindPython:    pyRuntimeFacts{},
	stacks.KindJava:      javaRuntimeFacts{},
}

// threadWait is what t waits on: its native wait, else the lock wait its
// runtime records (runtimeFacts.lockWait). Verdicts read a thread's wait
// through it, never t.Wait.
func threadWait(t *stacks.Thread) *stacks.Wait {
	if t.Wait != nil || t.Runtime == nil {
		return t.Wait
	}
	if h := runtimeHooks[t.Runtime.Kind]; h != nil {
		return h.lockWait(t)
	}
	return nil
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

// A goroutine's Object (a sync.Mutex, a channel) records no owner: Go's
// waits are go_graph.go's.
func (goRuntimeFacts) lockWait(*stacks.Thread) *stacks.Wait { return nil }

// pyRuntimeFacts: a Python thread's wait for the GIL is a futex wait its
// frames show (take_gil); a GIL deadlock or a GIL retake claims its
// process.
type pyRuntimeFacts struct{}

func (pyRuntimeFacts) waitKind(*stacks.Thread) (waitKind, string, bool) {
	return wkUnknown, "", false
}

// A Python thread's lock waits are its native frames' (take_gil, a
// pthread mutex).
func (pyRuntimeFacts) lockWait(*stacks.Thread) *stacks.Wait { return nil }

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

// javaRuntimeFacts: a Java thread's monitors and java.util.concurrent
// locks name their holder (stacks.RuntimeThread.Holder), so a Java lock
// wait is a lock wait with an owner, and the lock verdicts (the cycle in
// Java's words: java_cycle.go) name it as they name a pthread mutex's.
// Its other waits (Object.wait, a parked thread, a socket read) are its
// frames'; no Java-only finding claims a process.
type javaRuntimeFacts struct{}

func (javaRuntimeFacts) waitKind(*stacks.Thread) (waitKind, string, bool) {
	return wkUnknown, "", false
}

func (javaRuntimeFacts) claims(*analysis, *stacks.Process) bool { return false }

func (javaRuntimeFacts) lockWait(t *stacks.Thread) *stacks.Wait { return t.Runtime.LockWait() }
