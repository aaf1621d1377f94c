package heuristics

// A thread that takes back the GIL it holds. PyEval_RestoreThread,
// PyEval_AcquireThread and a binding's GIL guard take the GIL on a
// thread that released it; called on a thread that never did (a binding
// that lost track of its thread state: pybind11's gil_scoped_acquire on
// Python 3.7 before pybind11 2.2.4), take_gil waits for the GIL's holder
// to drop it, and the holder is the waiter. The interpreter records the
// holder (gil->last_holder with the GIL locked), which attach and py-spy
// read: a GIL waiter that is the recorded holder waits for itself.

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

const gilRetakeFix = "Take the GIL only on a thread that released it: pair every PyEval_RestoreThread/PyEval_AcquireThread with the PyEval_SaveThread before it on the same thread, and in code that may run with the GIL held use PyGILState_Ensure, which knows whether the thread holds it. With pybind11, a gil_scoped_acquire needs a pybind11 that knows the Python version's thread-state API (2.2.4 or later for Python 3.7); do not re-take the GIL inside a region that never released it."

// findGILRetakes finds the threads waiting for a GIL the interpreter
// records them as holding.
func findGILRetakes(a *analysis) []ThreadRef {
	return result(a, "GIL retakes", func(a *analysis) []ThreadRef {
		var refs []ThreadRef
		for p, t := range a.liveThreads() {
			if t.HoldsGIL() && waitsForGIL(t) && gilRetakeStable(a, p, t) {
				refs = append(refs, ThreadRef{Proc: p, Thread: t})
			}
		}
		return refs
	})
}

// matchGILRetake says each GIL taken back by its holder: a self-deadlock.
func matchGILRetake(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, ref := range findGILRetakes(a) {
		p, t := ref.Proc, ref.Thread
		d := Diagnosis{
			Deadlock:   true,
			Confidence: Medium,
			Summary: fmt.Sprintf("%s waits for the GIL in %s, and the interpreter records %s itself as the GIL's holder: it takes back a GIL it never released, and waits for itself",
				threadLabel(t), gilSite(t), threadLabel(t)),
			Chain: []string{
				fmt.Sprintf("%s holds the GIL (the interpreter's GIL is locked, its holder this thread's state)", threadLabel(t)),
				fmt.Sprintf("it asks for the GIL again in %s, which waits until the holder drops it", gilSite(t)),
				"the holder is the waiter: nothing will drop the GIL, and every other thread of the process, which needs the GIL to run Python, stops too",
			},
			Evidence: []string{stackLine(t)},
			Fix:      gilRetakeFix,
			Refs:     gilRefs,
		}
		if a.src.live() && a.Evidence(p).GIL {
			d.Confidence = High // the holder read from the interpreter's memory
			d.Evidence = append(d.Evidence, "the GIL's holder was read from the interpreter's memory (gil->last_holder, with the GIL locked)")
		} else {
			d.Evidence = append(d.Evidence, "the dump marks this thread as holding the GIL (py-spy's gil)")
		}
		d.name(ref)
		ds = append(ds, d)
	}
	return ds
}

// gilRetakeStable: a thread that drops the GIL at the switch interval and
// asks for it back is, for a moment, a GIL waiter that is still the
// recorded last holder (seen live on two computing threads, a control).
// A retake that waits for itself stays so: with several samples, the
// waiter sits at the same place in every one, gains no CPU, and no other
// thread of the process makes progress (none can run Python without the
// GIL). One observation (a dump) cannot tell, and is taken as it is.
func gilRetakeStable(a *analysis, p *stacks.Process, t *stacks.Thread) bool {
	f := a.samplesOf(t)
	if len(f.samples) < 2 {
		return true
	}
	if !f.same || f.cpuGrows {
		return false
	}
	for _, o := range p.Threads {
		if o != t && threadWorks(a.samplesOf(o)) {
			return false
		}
	}
	return true
}
