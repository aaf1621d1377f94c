package heuristics

// Python frames. A Python thread's stack (innermost first) interleaves
// native frames (Func + Module) with Python frames (Func = the Python
// function, File = the .py path, Line; no Module): py-spy --native gives
// that, and so does a live read of a CPython process. A faulthandler dump
// gives Python frames only. These helpers read the Python side: where a
// thread is in Python code, whether it waits on a Python lock, whether it
// waits for the GIL, which stdlib lock it is (logging, queue,
// threading), and whether it runs in a multiprocessing or DataLoader
// worker.

import (
	"fmt"
	"path"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// hasPyFrames: the thread's stack has Python frames.
func hasPyFrames(t *stacks.Thread) bool {
	for _, f := range t.Stack {
		if stacks.IsPythonFrame(f) {
			return true
		}
	}
	return false
}

// pyLoc is a Python frame for a person: "`main` at py_gilext.py:36".
func pyLoc(f stacks.Frame) string {
	if f.Line > 0 {
		return fmt.Sprintf("`%s` at %s:%d", f.Func, f.File, f.Line)
	}
	return fmt.Sprintf("`%s` in %s", f.Func, f.File)
}

// pyStdlib: a frame of the standard library's threading, logging, queue,
// multiprocessing, concurrent or runpy code, or of PyTorch's data loader
// machinery; the first frame outside these is the user's line.
func pyStdlib(f stacks.Frame) bool {
	file := strings.ReplaceAll(f.File, "\\", "/")
	base := path.Base(file)
	switch {
	case strings.HasPrefix(file, "<frozen "), base == "threading.py", base == "queue.py", base == "runpy.py":
		return true
	case strings.Contains(file, "logging/"), strings.Contains(file, "multiprocessing/"),
		strings.Contains(file, "concurrent/futures/"), strings.Contains(file, "torch/utils/data/"):
		return true
	}
	return false
}

// pySites returns a thread's innermost Python frame and the innermost
// one of the user's code (not the standard library's locking, logging,
// queue or multiprocessing code), or, when all of it is such code, the
// first frame of another file than the innermost's (its caller's
// module); ok is false without Python frames.
func pySites(t *stacks.Thread) (inner, user stacks.Frame, ok bool) {
	var other stacks.Frame
	for _, f := range t.Stack {
		if !stacks.IsPythonFrame(f) {
			continue
		}
		if !ok {
			inner, ok = f, true
		}
		if !pyStdlib(f) {
			return inner, f, true
		}
		if other.File == "" && f.File != inner.File {
			other = f
		}
	}
	return inner, other, ok
}

// pyWhere says where a thread is in Python code: "`emit` at
// logging/__init__.py:1113, called from `worker` at py_logging_fork.py:62",
// or "" without Python frames.
func pyWhere(t *stacks.Thread) string {
	inner, user, ok := pySites(t)
	switch {
	case !ok:
		return ""
	case user.File == "" || user.File == inner.File && user.Line == inner.Line && user.Func == inner.Func:
		return pyLoc(inner)
	}
	return pyLoc(inner) + ", called from " + pyLoc(user)
}

// pyOrWaitSite says where a thread waits: its Python site (pyWhere),
// else its native wait site (waitSite).
func pyOrWaitSite(t *stacks.Thread) string {
	if s := pyWhere(t); s != "" {
		return s
	}
	return waitSite(t)
}

// pyLockAcquire: the thread blocks acquiring a Python lock. Natively:
// PyThread_acquire_lock_timed and its callers (the innermost wait is a
// Python lock); py-spy hides the interpreter's own frames, so there a
// semaphore or futex wait called straight from a Python frame is the
// lock acquire (every Python-level blocking wait on a futex goes through
// a Python lock: Lock, RLock, Condition, Event, queue). A dump of Python
// frames only (faulthandler) shows the acquire when Python code does it:
// logging's Handler.acquire and _acquireLock.
func pyLockAcquire(t *stacks.Thread) bool {
	class, caller, _ := blockedIn(t.Stack)
	switch {
	case class == waitPyLock:
		return true
	case (class == waitCond || class == waitFutex) && caller < len(t.Stack) && stacks.IsPythonFrame(t.Stack[caller]):
		return true
	case class == notWaiting && caller == 0 && len(t.Stack) > 0:
		f := t.Stack[0]
		return stacks.IsPythonFrame(f) && pyLoggingFile(f) && (f.Func == "acquire" || f.Func == "_acquireLock" || f.Func == "Handler.acquire")
	}
	return false
}

// pyAcquireOnTop: a stack of Python frames alone (a traceback or a
// faulthandler dump, which show neither the interpreter's frames nor the
// lock's) whose innermost function takes a lock by its name (acquire,
// _acquireLock, lock; not release or unlock): the thread waits in that
// acquire, the C frames of the wait cut away by the format itself.
func pyAcquireOnTop(st []stacks.Frame) bool {
	if len(st) == 0 {
		return false
	}
	for _, f := range st {
		if !stacks.IsPythonFrame(f) {
			return false
		}
	}
	name := st[0].Func
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	if pyCondEnter(st[0]) {
		return true
	}
	// acquire, _acquireLock, acquire_lock, lock, lock_table; not
	// threading's _wait_for_tstate_lock (a join) or _acquire_restore (a
	// condition's wait)
	l := strings.ToLower(strings.TrimLeft(name, "_"))
	if strings.Contains(l, "wait") || strings.Contains(l, "restore") || strings.Contains(l, "release") {
		return false
	}
	return strings.HasPrefix(l, "acquire") || l == "lock" || strings.HasPrefix(l, "lock_")
}

// pyLockUse tells what a Python lock wait is for by the innermost Python
// frame (natively a Lock, an Event, a Condition and Thread.join are the
// same semaphore wait): in threading's Thread.join, a join (waitJoin);
// elsewhere in threading or queue, a wait to be woken (waitCond); in the
// program's own code, an acquire of a lock some thread holds
// (waitPyLock). Without Python frames it cannot tell: waitCond.
func pyLockUse(t *stacks.Thread) waitClass {
	for _, f := range t.Stack {
		if !stacks.IsPythonFrame(f) {
			continue
		}
		switch path.Base(strings.ReplaceAll(f.File, "\\", "/")) {
		case "threading.py":
			// _shutdown joins every non-daemon thread at interpreter exit
			if strings.Contains(f.Func, "join") || strings.Contains(f.Func, "_wait_for_tstate_lock") || f.Func == "_shutdown" {
				return waitJoin
			}
			if pyCondEnter(f) {
				return waitPyLock
			}
			return waitCond
		case "queue.py":
			return waitCond
		}
		return waitPyLock
	}
	return waitCond
}

// pyCondEnter: threading's Condition.__enter__, the `with cond:` that
// takes the condition's lock in C: its innermost Python frame is the
// acquire of a lock, not a wait to be woken.
func pyCondEnter(f stacks.Frame) bool {
	fn := f.Func
	if i := strings.LastIndexByte(fn, '.'); i >= 0 {
		fn = fn[i+1:]
	}
	return fn == "__enter__" && path.Base(strings.ReplaceAll(f.File, "\\", "/")) == "threading.py"
}

func pyLoggingFile(f stacks.Frame) bool {
	return strings.Contains(strings.ReplaceAll(f.File, "\\", "/"), "logging/")
}

// pyLockKind names the Python lock a thread waits for, from its
// innermost Python frames: the logging module's or a handler's lock (or
// the stream a handler writes to), a queue.Queue's mutex, or a
// threading lock. "" when the frames do not say.
func pyLockKind(t *stacks.Thread) string {
	for _, f := range t.Stack {
		if !stacks.IsPythonFrame(f) {
			continue
		}
		base := path.Base(strings.ReplaceAll(f.File, "\\", "/"))
		switch {
		case pyLoggingFile(f):
			return "logging"
		case base == "queue.py":
			return "queue"
		case base == "threading.py":
			return "threading"
		}
		return "" // the innermost Python frame decides
	}
	return ""
}

// pyWorker says which worker machinery a forked child runs in:
// "dataloader" (torch.utils.data's _worker_loop), "multiprocessing"
// (multiprocessing's Process._bootstrap or its fork Popen), or "".
func pyWorker(p *stacks.Process) string {
	mp := false
	for _, t := range p.Threads {
		for _, f := range t.Stack {
			file := strings.ReplaceAll(f.File, "\\", "/")
			switch {
			case f.Func == "_worker_loop" && (file == "" || strings.Contains(file, "torch/utils/data")):
				return "dataloader"
			case strings.Contains(file, "multiprocessing/") && (f.Func == "_bootstrap" || f.Func == "_launch" || f.Func == "BaseProcess._bootstrap" || f.Func == "Popen._launch"):
				mp = true
			}
		}
	}
	if mp {
		return "multiprocessing"
	}
	return ""
}

// waitsForGIL: the thread blocks taking the GIL: under the futex,
// condition variable and mutex internals (and unnamed frames of a
// stripped libpython) is take_gil or a function that calls it.
func waitsForGIL(t *stacks.Thread) bool {
	for i, f := range t.Stack {
		switch {
		case f.Signal:
			return false
		case isGILFrame(f):
			return true
		case f.Func == "", isFutexFrame(f), isCondFrame(f), isLockFrame(f), frameRole(f) == stacks.RoleAcquire:
			continue // before Python 3.2 the GIL is a PyThread lock: PyEval_RestoreThread → PyThread_acquire_lock
		case inGILWaitLoop(t.Stack[i:]):
			continue
		}
		return false
	}
	return false
}

// inGILWaitLoop: the frame on top is the interpreter's own code called by
// the GIL wait under it (take_gil wakes every switch interval to check
// _PyThreadState_MustExit, drop requests, eval breakers): a sample can
// catch the waiter there, awake, still waiting.
func inGILWaitLoop(st []stacks.Frame) bool {
	f := st[0]
	if f.Module == "" {
		return false
	}
	for _, g := range st[1:] {
		if g.Module != f.Module || g.Signal {
			return false
		}
		if isGILFrame(g) {
			return true
		}
	}
	return false
}

// addPythonSites tells, for each deadlock claim that names threads
// running Python code, where the first of them is in Python (its
// innermost Python frame and the user's line), in the summary and the
// evidence: a person reads a Python hang by its .py lines, which native
// stacks bury under the interpreter's frames.
func addPythonSites(a *analysis, ds []Diagnosis) {
	for i := range ds {
		d := &ds[i]
		if !d.Deadlock {
			continue
		}
		for j, tid := range d.Tids {
			r, ok := a.DiagThread(d, tid)
			if !ok || r.Thread == nil {
				continue
			}
			where := pyWhere(r.Thread)
			if where == "" {
				continue
			}
			inner, _, _ := pySites(r.Thread)
			line := fmt.Sprintf("Python: %s is in %s", threadLabel(r.Thread), where)
			if !containsString(d.Evidence, line) {
				d.Evidence = append(d.Evidence, line)
			}
			if j == 0 && !strings.Contains(d.Summary, fmt.Sprintf("%s:%d", inner.File, inner.Line)) {
				d.Summary += fmt.Sprintf(" (Python: %s)", where)
			}
		}
	}
}
