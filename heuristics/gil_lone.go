package heuristics

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

// A paste often holds one side of a GIL deadlock, the thread the
// reporter found stuck:
//
//   - a thread that holds the GIL — its stack says so: it was called
//     from Python through a binding (pybind11, Boost.Python, nanobind,
//     Cython) or is CPython code that runs with the GIL held (thread
//     state teardown, sys._current_frames) — and waits on a native lock
//     without dropping it: whoever holds that lock needs the GIL to go
//     on, as every thread of a Python process does;
//   - a thread that waits for the GIL while nothing in the paste runs:
//     the GIL's holder does not drop it, because it waits on a native
//     lock itself.
//
// Each is a hedged gil-deadlock, with the other side's stack as what
// would settle it.

// gilHeldFamily is the vocabulary family of the frames that run with the
// GIL held.
const gilHeldFamily = "CPython GIL held"

// holdsGILWaiting: t waits on a native lock (not the GIL, not a Python
// lock, which drop it) below a frame that runs with the GIL held.
func holdsGILWaiting(t *stacks.Thread) (stacks.Frame, bool) {
	class, caller := waitOf(t)
	if waitsForGIL(t) || caller >= len(t.Stack) {
		return stacks.Frame{}, false
	}
	lock := class == waitLock
	for _, f := range t.Stack[:caller] {
		switch frameRole(f) {
		case stacks.RoleAcquire, stacks.RoleSpin, stacks.RoleOnce:
			lock = true // a Python lock too: taken here with the GIL held, it is a lock wait
		}
	}
	if !lock {
		return stacks.Frame{}, false
	}
	if f := t.Stack[caller]; stacks.IsPythonFrame(f) || interpreterFrame(f) && heldFamily(f) != gilHeldFamily {
		return stacks.Frame{}, false // the interpreter's own lock waits drop the GIL
	}
	for _, f := range t.Stack[caller:] {
		if heldFamily(f) == gilHeldFamily {
			return f, true
		}
	}
	return stacks.Frame{}, false
}

// matchLoneGIL finds the one-sided GIL deadlocks of pastes that hold a
// single thread of a process (done: processes the two-sided search
// already explained).
func matchLoneGIL(a *analysis, done map[*stacks.Process]bool) []Diagnosis {
	var ds []Diagnosis
	for p := range a.liveProcs() {
		if done[p] || a.allThreads(p) || len(p.Threads) != 1 {
			continue
		}
		t := p.Threads[0]
		if a.running(t) {
			continue
		}
		ref := ThreadRef{Proc: p, Thread: t}
		d := Diagnosis{Deadlock: true, Confidence: Low, Refs: gilRefs, Evidence: []string{stackLine(t)}}
		d.name(ref)
		if via, ok := holdsGILWaiting(t); ok {
			lock, site := waitLockName(t), waitSite(t)
			d.Summary = fmt.Sprintf("%s holds the GIL (it runs under `%s`) and waits for %s in %s without releasing it: the lock's holder needs the GIL to go on, so neither can move",
				threadLabel(t), frameName(via), lock, site)
			d.Chain = []string{
				fmt.Sprintf("%s runs under `%s`, which is entered with the GIL held", threadLabel(t), frameName(via)),
				fmt.Sprintf("it waits for %s in %s and does not drop the GIL while it waits", lock, site),
				"every other thread of a Python process needs the GIL to run: the lock's holder (most likely waiting in take_gil or PyEval_RestoreThread) cannot release it",
			}
			d.Evidence = append(d.Evidence, "the paste holds only this thread: the other threads' stacks (gdb `thread apply all bt`, or `py-spy dump --native`) would show the lock's holder waiting for the GIL")
		} else if r := knownSelfRelock(a, ref); r != nil && waitsForGIL(t) {
			// A binding's GIL guard with a known bug of taking the GIL on
			// a thread that holds it: the holder nobody else shows is
			// most likely the waiter.
			d.ID = "self-deadlock"
			d.Summary = fmt.Sprintf("%s waits for the GIL in %s, asked for by a binding's GIL guard known to take the GIL on a thread that already holds it: it most likely waits for itself",
				threadLabel(t), gilSite(t))
			d.Chain = []string{
				fmt.Sprintf("%s waits to take the GIL in %s", threadLabel(t), gilSite(t)),
				fmt.Sprintf("the request comes from a GIL guard whose known bug (`%s`) is to restore a thread state on a thread that holds the GIL", r.ID),
				"take_gil then waits for the GIL's holder to drop it, and the holder is this thread; nothing else in the paste holds the GIL",
			}
			d.Evidence = append(d.Evidence, "the paste holds only this thread: if another thread held the GIL, its stack (gdb `thread apply all bt`, or `py-spy dump --native`, which marks the holder) would show it")
		} else if waitsForGIL(t) {
			d.Summary = fmt.Sprintf("%s waits for the GIL in %s and nothing in the paste runs: the GIL's holder does not drop it, most likely because it waits on a native lock held by a thread that needs the GIL",
				threadLabel(t), gilSite(t))
			d.Chain = []string{
				fmt.Sprintf("%s waits to take the GIL back in %s", threadLabel(t), gilSite(t)),
				"a holder that runs Python drops the GIL every few milliseconds: one that never does is blocked in native code while it holds it",
				"most likely on a native lock that this thread (or another GIL waiter) holds: the GIL and the lock taken in opposite orders",
			}
			d.Evidence = append(d.Evidence, "the paste holds only this thread: the GIL holder's stack (gdb `thread apply all bt`, or `py-spy dump --native`, which marks it) would show what it waits on")
		} else {
			continue
		}
		d.Evidence = append(d.Evidence, "no GIL holder and no mutex owner in a pasted dump: the verdict rests on frame names")
		ds = append(ds, d)
	}
	return ds
}
