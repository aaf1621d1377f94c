package heuristics

// A Python function re-entered on its own thread while it holds a lock:
// the interpreter runs Python code at moments the program does not
// choose (a __del__ or weakref.finalize callback when the last reference
// goes, the cyclic garbage collector's finalizers at an allocation, a
// signal handler between two bytecodes, a logging handler that logs),
// and when that code takes a lock the interrupted function holds, a
// threading.Lock (not an RLock) waits for its own thread. The stack shows
// the function twice, the callback between.

import (
	"fmt"
	"path"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// pyReentry says how a thread blocked on a lock shows the Python
// function that asked for it further down its own stack, "" when it does
// not: the innermost Python frame is the asker (the interpreter's
// frames between it and the lock's say nothing), and the same function
// of the same file runs again below, with what came between named.
func pyReentry(t *stacks.Thread) string {
	class, caller := waitOf(t)
	if !class.isLock() && !pyLockAcquire(t) {
		return ""
	}
	for _, f := range t.Stack[:min(caller, len(t.Stack))] {
		if strings.Contains(strings.ToLower(funcKey(f)), "rlock") {
			return "" // an RLock's holder takes it again without waiting
		}
	}
	inner := -1
	for i, f := range t.Stack {
		if stacks.IsPythonFrame(f) {
			inner = i
			break
		}
	}
	if inner < 0 {
		return ""
	}
	asker := t.Stack[inner]
	for j := inner + 1; j < len(t.Stack); j++ {
		f := t.Stack[j]
		if !stacks.IsPythonFrame(f) || f.File != asker.File {
			continue
		}
		switch {
		case f.Func == asker.Func:
			return fmt.Sprintf("%s, which asks for the lock, is also further down the same stack (line %d): the thread re-entered it through %s while it held the lock",
				pyLoc(asker), f.Line, pyThrough(t.Stack[inner+1:j]))
		case asker.File != "" && pyReleaseOf(asker.Func, f.Func):
			return fmt.Sprintf("%s, which asks for the lock, runs inside `%s` of the same file further down the same stack (line %d), the code that gives that lock back: the thread re-entered it through %s before the release was done, while it still held the lock",
				pyLoc(asker), f.Func, f.Line, pyThrough(t.Stack[inner+1:j]))
		}
	}
	return ""
}

// pyReleaseOf: rel is the function that gives back the lock acq takes,
// by the names a module gives such a pair (acquire/release,
// _acquireLock/_releaseLock, lock/unlock, __enter__/__exit__).
func pyReleaseOf(acq, rel string) bool {
	for _, p := range [][2]string{{"__enter__", "__exit__"}, {"acquire", "release"}, {"Acquire", "Release"}, {"lock", "unlock"}, {"Lock", "Unlock"}} {
		if strings.Contains(acq, p[0]) && strings.Replace(acq, p[0], p[1], 1) == rel {
			return true
		}
	}
	return false
}

// pyReentryFix is the fix for a Python function re-entered while it
// holds its lock.
const pyReentryFix = "Do not take a lock from code the interpreter may run while the lock is held: a __del__ method, a weakref or weakref.finalize callback, a signal handler, a logging handler. Let the callback only record what happened (append to a list or a queue.SimpleQueue, set a flag) and do the locked work after the lock is released; or make the lock a threading.RLock when the re-entered code is safe to run inside itself."

// pyThrough names what ran Python code between the two entries of a
// re-entered function: a finalizer, a weakref callback, the garbage
// collector, a logging handler, or the functions themselves.
func pyThrough(between []stacks.Frame) string {
	var called []string
	how := ""
	for _, f := range between {
		k := funcKey(f)
		base := path.Base(strings.ReplaceAll(f.File, "\\", "/"))
		switch {
		case k == "__del__" || strings.HasSuffix(f.Func, ".__del__") || k == "slot_tp_finalize" || k == "PyObject_CallFinalizer":
			how = "a __del__ finalizer"
		case base == "weakref.py" || strings.Contains(k, "handle_weakrefs") || k == "PyObject_ClearWeakRefs":
			if how == "" {
				how = "a weakref callback (weakref.finalize, a weakref's callback)"
			}
		case strings.Contains(k, "gc_collect") || k == "finalize_garbage" || k == "collect_with_callback":
			how = "the garbage collector running finalizers"
		case pyLoggingFile(f) && (strings.HasSuffix(f.Func, "emit") || strings.HasSuffix(f.Func, "handle")):
			if how == "" {
				how = "a logging handler"
			}
		}
		if stacks.IsPythonFrame(f) && len(called) < 3 {
			called = append(called, "`"+f.Func+"`")
		}
	}
	if len(called) == 0 {
		called = []string{"the interpreter"}
	}
	if how == "" {
		return strings.Join(called, " ← ")
	}
	return how + " (" + strings.Join(called, " ← ") + ")"
}
