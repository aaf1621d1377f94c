package heuristics

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "gil-deadlock",
		Title: "The Python GIL holder waits on a native lock held by a GIL waiter",
		Explain: "Native code called from Python (a C extension, a binding) blocked on a native lock without " +
			"releasing the GIL, while the lock's owner, which had released the GIL to work, now needs the GIL " +
			"back (Py_END_ALLOW_THREADS, PyGILState_Ensure, a callback into Python) before it can release the " +
			"lock. The GIL and the native lock are taken in opposite orders: neither thread can move, and no " +
			"other Python thread runs, because the GIL is never dropped.",
		Fix: "In the extension, release the GIL around every call that may block on a native lock " +
			"(Py_BEGIN_ALLOW_THREADS … pthread_mutex_lock … Py_END_ALLOW_THREADS), and never take the GIL " +
			"back while holding a native lock a GIL holder may wait for: release the native lock first, so " +
			"the GIL is always taken after, never while, holding it.",
		Needs: []string{"owners"},
		Rank:  12,
		Match: matchGILDeadlock,
	})
}

var gilRefs = []string{
	"https://docs.python.org/3/c-api/init.html#releasing-the-gil-from-extension-code",
	"https://docs.python.org/3/c-api/init.html#non-python-created-threads",
}

// gilFinding is a GIL holder blocked on a native lock and the threads
// waiting for the GIL; owner is the lock's owner among them when attach
// read it.
type gilFinding struct {
	holder  ThreadRef
	waiters []ThreadRef
	owner   ThreadRef
	// heldKnown: the snapshot says who holds the GIL (py-spy, a live
	// read); otherwise the holder is inferred.
	heldKnown bool
}

// findGILDeadlocks looks, in each process, for the one thread that holds
// the GIL (by the snapshot's GIL evidence, or as the only thread running
// Python that neither waits for the GIL nor sleeps in a wait that drops
// it) blocked in a native mutex, and the threads waiting for the GIL.
// With owners read, the mutex's owner must be one of those waiters.
func findGILDeadlocks(a *analysis) []gilFinding { return result(a, "GIL cycles", detectGILDeadlocks) }

func detectGILDeadlocks(a *analysis) []gilFinding {
	var fs []gilFinding
	for p := range a.liveProcs() {
		var holders, waiters []ThreadRef
		facts := a.factsIn(p)
		gilWaits := map[stackID]bool{} // a dump's 100,000 threads show a few stacks
		for i, t := range p.Threads {
			gilWait := byStack(gilWaits, t.Stack, func() bool { return waitsForGIL(t) })
			switch {
			case gilWait:
				// before the running check: take_gil wakes every switch
				// interval (5 ms) to ask for the GIL, so a waiter is
				// sometimes caught running
				waiters = append(waiters, ThreadRef{Proc: p, Thread: t})
			case a.running(t) && (a.Evidence(p).CPU || !t.HoldsGIL()):
				// py-spy calls every GIL holder "active+gil", running or
				// not: without CPU figures that is no proof it runs
			case gilHolderBlocked(a, p, t, facts[i]):
				holders = append(holders, ThreadRef{Proc: p, Thread: t})
			}
		}
		if len(holders) != 1 {
			continue
		}
		h := holders[0]
		if len(waiters) == 0 && a.Evidence(p).GIL {
			// py-spy hides libpython's frames, take_gil among them: a
			// thread that does not hold the GIL and sleeps in a condvar
			// wait called straight from the extension that holds the
			// GIL holder's lock call is waiting for the GIL.
			waiters = pySpyGILWaiters(p, h.Thread)
		}
		if len(waiters) == 0 {
			continue
		}
		f := gilFinding{holder: h, waiters: waiters, heldKnown: a.Evidence(p).GIL}
		if m := threadWait(h.Thread); m != nil && m.Mutex != nil && m.Mutex.Owner != 0 {
			for _, w := range waiters {
				if w.Thread.Tid == m.Mutex.Owner {
					f.owner = w
				}
			}
			if f.owner.Thread == nil && a.resolveOwner(p, m.Mutex).Kind != OwnerUnknown {
				continue // the owner is known and does not wait for the GIL
			}
		}
		fs = append(fs, f)
	}
	return fs
}

// gilHolderBlocked: a thread that holds the GIL (as the snapshot says,
// or, without GIL evidence, runs Python code) and blocks in a native
// mutex taken by native code, not by the interpreter's own locks (those
// drop the GIL while they wait). tf is t's facts; t does not wait for
// the GIL.
func gilHolderBlocked(a *analysis, p *stacks.Process, t *stacks.Thread, tf *threadFact) bool {
	class, caller := tf.class, tf.caller
	if class != waitLock {
		return false
	}
	if a.Evidence(p).GIL {
		return t.HoldsGIL()
	}
	if !runsPython(t) {
		return false
	}
	// the lock's caller is native code of its own (an extension), not
	// Python code and not the interpreter
	if caller >= len(t.Stack) {
		return false
	}
	f := t.Stack[caller]
	return !stacks.IsPythonFrame(f) && !interpreterFrame(f)
}

// runsPython: the stack goes through the interpreter or Python code.
func runsPython(t *stacks.Thread) bool {
	for _, f := range t.Stack {
		if stacks.IsPythonFrame(f) || interpreterFrame(f) && strings.HasPrefix(funcKey(f), "PyEval_EvalFrame") {
			return true
		}
	}
	return false
}

// interpreterFrame: a frame of CPython itself (libpython or the python
// executable), by its module or its name.
func interpreterFrame(f stacks.Frame) bool {
	if f.Module != "" {
		base := filepath.Base(f.Module)
		return strings.HasPrefix(base, "libpython") || strings.HasPrefix(base, "python")
	}
	k := funcKey(f)
	return strings.HasPrefix(k, "Py") || strings.HasPrefix(k, "PyEval")
}

// pySpyGILWaiters: the threads of p other than holder that do not hold
// the GIL and sleep in a condvar or futex wait called from a native
// frame of the module whose code took holder's lock.
func pySpyGILWaiters(p *stacks.Process, holder *stacks.Thread) []ThreadRef {
	_, caller := waitOf(holder)
	if caller >= len(holder.Stack) || nativeHome(holder.Stack[caller]) == "" {
		return nil
	}
	home := nativeHome(holder.Stack[caller])
	var ws []ThreadRef
	for _, t := range p.Threads {
		if t == holder || t.HoldsGIL() {
			continue
		}
		class, c := waitOf(t)
		if (class == waitCond || class == waitFutex) && c < len(t.Stack) && nativeHome(t.Stack[c]) == home {
			ws = append(ws, ThreadRef{Proc: p, Thread: t})
		}
	}
	return ws
}

func matchGILDeadlock(a *analysis) []Diagnosis {
	var ds []Diagnosis
	done := map[*stacks.Process]bool{}
	for _, f := range findGILDeadlocks(a) {
		done[f.holder.Proc] = true
		h := f.holder.Thread
		lock := "a native mutex"
		if m := threadWait(h); m != nil && m.Mutex != nil {
			lock = mutexLabel(m.Mutex)
		}
		holds := "holds the GIL"
		how := fmt.Sprintf("%s holds the GIL: %s", threadLabel(h), map[bool]string{
			true:  "the snapshot says so (the GIL holder was read)",
			false: "it runs Python code, blocks without dropping the GIL (its wait is a native mutex taken by native code, not a Python lock) and no other thread runs Python",
		}[f.heldKnown])
		d := Diagnosis{
			Deadlock:   true,
			Confidence: Low,
			Refs:       gilRefs,
			Evidence:   []string{stackLine(h)},
		}
		var first ThreadRef
		switch {
		case f.owner.Thread != nil:
			first = f.owner
			d.Confidence = Medium
			if f.heldKnown {
				d.Confidence = High
			}
			if !f.heldKnown && len(f.waiters) == 1 {
				d.Confidence = High // the owner read proves the cycle; only the holder can hold the GIL
			}
			d.Summary = fmt.Sprintf("%s %s and waits for %s in %s, held by %s, which waits for the GIL in %s: neither can move",
				threadLabel(h), holds, lock, waitSite(h), threadLabel(first.Thread), gilSite(first.Thread))
		default:
			first = f.waiters[0]
			d.Summary = fmt.Sprintf("%s %s and waits for %s in %s, while %s waits for the GIL in %s: if the mutex's owner is a GIL waiter, neither can move",
				threadLabel(h), holds, lock, waitSite(h), threadLabel(first.Thread), gilSite(first.Thread))
			d.Evidence = append(d.Evidence, "no mutex owner was read: the mutex's owner is taken to be a thread waiting for the GIL")
		}
		d.Chain = []string{
			how,
			fmt.Sprintf("%s waits for %s in %s without releasing the GIL", threadLabel(h), lock, waitSite(h)),
		}
		if f.owner.Thread != nil {
			d.Chain = append(d.Chain, fmt.Sprintf("%s holds %s; it released the GIL and now waits to take it back in %s", threadLabel(f.owner.Thread), lock, gilSite(f.owner.Thread)))
		}
		for _, w := range f.waiters {
			if w != f.owner {
				d.Chain = append(d.Chain, fmt.Sprintf("%s waits for the GIL in %s", threadLabel(w.Thread), gilSite(w.Thread)))
			}
		}
		d.Chain = append(d.Chain, "the GIL is only dropped by the thread that holds it, which sleeps in the mutex: the GIL and the native lock were taken in opposite orders")
		refs := append([]ThreadRef{f.holder}, first)
		for _, w := range f.waiters {
			d.Evidence = append(d.Evidence, stackLine(w.Thread))
			refs = append(refs, w)
		}
		d.name(refs...)
		ds = append(ds, d)
	}
	return append(ds, matchLoneGIL(a, done)...)
}

// gilSite says where a thread waits for the GIL: "`PyEval_RestoreThread`
// called from `hold_then_regain`", by the innermost GIL entry and the
// first frame past it that is not the interpreter's.
func gilSite(t *stacks.Thread) string {
	entry := -1
	for i, f := range t.Stack {
		if isGILFrame(f) {
			entry = i
		}
		if entry >= 0 && !isGILFrame(f) {
			if f.Func == "" || stacks.IsPythonFrame(f) {
				break
			}
			return fmt.Sprintf("`%s` called from `%s`", frameName(t.Stack[entry]), frameName(f))
		}
	}
	if entry >= 0 {
		return fmt.Sprintf("`%s`", frameName(t.Stack[entry]))
	}
	return waitSite(t)
}

// nativeHome is where a native frame's code lives: its module, or, when
// a dump named the frame by its source (py-spy with debug info:
// "lock (py_gilext.c:78)"), its source file; "" for Python frames.
func nativeHome(f stacks.Frame) string {
	switch {
	case stacks.IsPythonFrame(f):
		return ""
	case f.Module != "":
		return f.Module
	}
	return f.File
}
