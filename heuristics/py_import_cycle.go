package heuristics

// A deadlock through Python's import machinery. While a module's top-level
// code runs, importlib holds that module's lock (_ModuleLock); a second
// thread that imports the module (or anything from it) waits in
// `_ModuleLock.acquire` until the first import finishes. If the code
// running the import waits for that second thread (a module that starts a
// thread and joins it at import time, a lock the thread holds, a queue it
// should fill), neither goes on. Python's own cycle check (_DeadlockError)
// sees only cycles of module locks, never one through a join or another
// lock. The evidence is in the frames alone, so a paste (py-spy dump,
// gdb py-bt) carries it as well as a live read: the waiter's innermost
// Python frame is the module lock's acquire, and the holder is the thread
// inside a module's top level (`<module>` under importlib's loader).

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// importlibFrame: a frame of importlib's bootstrap code, frozen or not.
func importlibFrame(f stacks.Frame) bool {
	file := strings.ReplaceAll(f.File, "\\", "/")
	return strings.Contains(file, "importlib._bootstrap") || strings.Contains(file, "importlib/_bootstrap")
}

// pyImportWait: the thread's innermost Python frame is importlib's
// acquire of a module lock.
func pyImportWait(t *stacks.Thread) bool {
	for _, f := range t.Stack {
		if stacks.IsPythonFrame(f) {
			return importlibFrame(f) && strings.HasSuffix(f.Func, "acquire")
		}
	}
	return false
}

// pyRunningImport returns the innermost module top level the thread runs
// under importlib's loader (`<module>` called from exec_module,
// _load_unlocked or _call_with_frames_removed): the module whose import
// lock it holds. The script itself (`<module>` of __main__) is no import.
func pyRunningImport(t *stacks.Thread) (stacks.Frame, bool) {
	for i, f := range t.Stack {
		if !stacks.IsPythonFrame(f) || f.Func != "<module>" {
			continue
		}
		for _, below := range t.Stack[i+1:] {
			if stacks.IsPythonFrame(below) {
				if importlibFrame(below) {
					return f, true
				}
				break // called from Python code of its own: exec(), runpy
			}
		}
	}
	return stacks.Frame{}, false
}

// pyImportCycle is one such deadlock: waiter waits for a module lock;
// holder runs the only import under way in the process and waits itself.
type pyImportCycle struct {
	waiter, holder ThreadRef
	module         stacks.Frame // the holder's `<module>` frame
}

// findPyImportCycle finds the import a module-lock waiter waits for: the
// one thread of its process inside a module's top level, when that thread
// does not run.
func (a *analysis) findPyImportCycle(p *stacks.Process, w *stacks.Thread) (pyImportCycle, bool) {
	if !pyImportWait(w) || a.running(w) {
		return pyImportCycle{}, false
	}
	var found []pyImportCycle
	for _, t := range a.distinct(p) {
		if t == w {
			continue
		}
		if m, ok := pyRunningImport(t); ok {
			found = append(found, pyImportCycle{waiter: ThreadRef{Proc: p, Thread: w}, holder: ThreadRef{Proc: p, Thread: t}, module: m})
		}
	}
	if len(found) != 1 || a.running(found[0].holder.Thread) {
		return pyImportCycle{}, false // several imports under way, or the importer works: it may yet finish
	}
	return found[0], true
}

// pyImportCycles returns every process's import deadlock, once per
// snapshot (LockDiagnosed and lock-order-cycle both read them).
func pyImportCycles(a *analysis) []pyImportCycle {
	return result(a, "python import cycles", detectPyImportCycles)
}

func detectPyImportCycles(a *analysis) []pyImportCycle {
	var out []pyImportCycle
	for p := range a.liveProcs() {
		for _, t := range a.distinct(p) {
			if c, ok := a.findPyImportCycle(p, t); ok {
				out = append(out, c)
				break
			}
		}
	}
	return out
}

func pyImportCycleDiagnosis(a *analysis, c pyImportCycle) Diagnosis {
	w, h := c.waiter.Thread, c.holder.Thread
	d := Diagnosis{Deadlock: true, Confidence: Low, Refs: []string{
		"https://docs.python.org/3/library/threading.html#importing-in-threaded-code",
		"https://docs.python.org/3/reference/import.html#module-cache",
	}}
	_, user, _ := pySites(w)
	holds := fmt.Sprintf("%s runs the top level of %s under an import, so it holds that module's import lock until the module finishes", threadLabel(h), pyLoc(c.module))
	var how string
	switch class, _ := a.wait(h); {
	case pyLockUse(h) == waitJoin:
		// the join's thread is not named; with the waiter the only
		// thread it could be waiting for, it is the cycle itself
		how = fmt.Sprintf("waits in `Thread.join` (%s)", pyWhere(h))
		if threadCount(c.waiter.Proc) == 2 || onlyOtherThread(c.waiter.Proc, h, w) {
			how = fmt.Sprintf("waits in `Thread.join` for %s (%s)", threadLabel(w), pyWhere(h))
			d.Confidence = Medium
		}
	case class.isLock() || class == waitPyLock || class == waitCond:
		how = "waits itself: it " + a.Doing(h)
	default:
		how = "does not run: it " + a.Doing(h)
	}
	d.Summary = fmt.Sprintf("2 threads deadlock through an import: %s waits for a module's import lock (`_ModuleLock.acquire`, importing from %s) held by %s, which runs the import of %s and %s",
		threadLabel(w), pyLoc(user), threadLabel(h), c.module.File, how)
	d.Chain = []string{
		fmt.Sprintf("%s waits for a module's import lock in `_ModuleLock.acquire`, from %s", threadLabel(w), pyLoc(user)),
		holds,
		fmt.Sprintf("%s %s: the import cannot finish while it waits, and %s cannot go on until the import finishes", threadLabel(h), how, threadLabel(w)),
	}
	d.Evidence = []string{stackLine(w), stackLine(h),
		"the lock's holder is inferred from the frames: importlib records the owner of a module lock in Python objects that hangdoc does not read"}
	d.Fix = "Do not wait at import time for a thread that imports: a module's top-level code holds its import lock until it ends. " +
		"Start and join the thread from a function called after the import (main()), or import what the thread needs before starting it (Python's threading docs: importing in threaded code)."
	d.name(c.waiter, c.holder)
	return d
}

// onlyOtherThread: besides a and b, every thread of p is idle (waits on a
// condition or sleeps): a's join can only be for b.
func onlyOtherThread(p *stacks.Process, a, b *stacks.Thread) bool {
	for _, t := range distinctThreads(p) {
		if t != a && t != b && hasPyFrames(t) {
			return false
		}
	}
	return true
}
