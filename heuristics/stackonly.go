package heuristics

// Verdicts on stack-only evidence: a pasted dump has no mutex owners, no
// lineage, no CPU figures and no syscalls, only frames (and, from gdb,
// their arguments). What the frames can still say: that a process is the
// child side of fork() (it is inside fork's child handlers, or below
// Python's after-fork hooks or multiprocessing's bootstrap), that its one
// thread waits for a lock nobody else could release, that a known
// upstream bug's functions are on the stack, that the stack is inside an
// accelerator driver. Every diagnosis made without the evidence a live
// attach reads says so, and how to get it.

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// forkEvidence is what a stack says about being the child of a fork.
type forkEvidence struct {
	ok bool
	// certain: the frames are of the child's side of fork() (its atfork
	// child handlers, Python's after-fork hooks, multiprocessing's
	// bootstrap of a forked worker), not merely inside fork().
	certain bool
	frame   string // the fork frame, as a person reads it
	marker  string // the child-side frame, when certain
	// heading: no frame says fork, but the paste's heading names the
	// process a child ("subprocess 91605 backtrace:")
	heading string
}

// forkChildFrames reads a stack, innermost first, for the child's side
// of fork().
func forkChildFrames(st []stacks.Frame) forkEvidence {
	var ev forkEvidence
	bootstrap := false
	for _, f := range st {
		k := funcKey(f)
		role := frameRole(f)
		switch {
		case role == stacks.RoleForkParent && !ev.certain:
			return forkEvidence{} // the parent, running its prepare handlers
		case role == stacks.RoleForkChild:
			if !ev.certain {
				ev.certain, ev.marker = true, frameName(f)
			}
		case k == "run_postfork_handlers" || k == "run_fork_handlers":
			// glibc runs these in both; gdb shows which in an argument
			// (who=atfork_run_child)
			for _, a := range f.Args {
				if strings.Contains(a.Symbol, "child") {
					ev.certain, ev.marker = true, frameName(f)+" ("+a.Name+"="+a.Value+")"
				}
			}
		case k == "bootstrap" && pythonMultiprocessing(f, true):
			bootstrap = true
		case k == "launch" && pythonMultiprocessing(f, bootstrap):
			if bootstrap {
				return forkEvidence{ok: true, certain: true, frame: frameName(f) + " (multiprocessing popen_fork)", marker: "_bootstrap"}
			}
		case role == stacks.RoleFork || k == "Fork":
			ev.ok = true
			ev.frame = frameName(f)
			return ev
		}
	}
	if ev.certain {
		// code that runs only in a child (fork actions, atfork child
		// handlers) under a fork the paste cut off
		ev.ok, ev.frame = true, ev.marker
	}
	return ev
}

// pythonMultiprocessing: a frame of multiprocessing's fork start method,
// by its file when the dump has one (py-spy gives it), by the company it
// keeps otherwise.
func pythonMultiprocessing(f stacks.Frame, otherwise bool) bool {
	if f.File != "" {
		return strings.Contains(f.File, "multiprocessing")
	}
	return otherwise
}

// forkChildSide says whether a process that attach did not see fork is,
// by its frames, a forked child: its only thread is on the child's side
// of fork(). Not used when lineage was read (the snapshot then knows).
func forkChildSide(p *stacks.Process) forkEvidence {
	if p.Fork != nil || len(p.Threads) != 1 {
		return forkEvidence{}
	}
	ev := forkChildFrames(p.Threads[0].Stack)
	if !ev.ok && p.HeadedChild() {
		ev = forkEvidence{ok: true, heading: p.Heading}
	}
	return ev
}

// loneWaiter is a process's one lock waiter that no other thread could
// release, and the verdict the stack-only evidence supports.
type loneWaiter struct {
	ref  ThreadRef
	id   string // self-deadlock, fork-inherited-lock, fork-after-accelerator-init
	conf string
	fork forkEvidence
	rule *Rule // the known issue whose frames chose the id
	// driver is the accelerator driver the thread is stuck in.
	driver      accelDriver
	driverFrame stacks.Frame
	// partial: the paste holds this one thread and may not hold the
	// process's others; allocator: the lock is an allocator's own.
	partial   bool
	allocator string
	// interpreter: the lock is CPython's own, taken by its C code
	// through PyThread_acquire_lock (cAPIAcquire).
	interpreter bool
	// others says how the dump shows the process with other threads
	// (otherThreadsShown); pool is the thread-pool runtime frame that
	// asked for the lock.
	others string
	pool   stacks.Frame
	// dispatch says how the thread is the one that drains the serial
	// queue it dispatch_syncs onto (dispatchOwnQueue); pyReentry: the
	// re-entered function is Python code (pyReentry).
	dispatch  string
	pyReentry bool
	// loader says how the stack involves the dynamic loader (loaderSide).
	loader string
	// reentry says how the stack shows the waiter holding its own lock
	// (the asking function further down, the initialiser a once waits
	// for running below it).
	reentry string
	// elsewhere says why the lock's holder is another thread, one the
	// paste left out (id lock-order-cycle): the lock is recursive, so the
	// waiter cannot be waiting for itself, or the paste shows the process
	// has other threads and nothing shows the waiter holding the lock.
	elsewhere string
}

// loneWaiterOf finds a process whose threads all wait, none runs, exactly
// one on a lock, with no owner recorded, and decides which lock
// signature its stack supports: a forked child by its fork frames; one in
// an accelerator driver with no driver thread beside it; the one a known
// issue's frames name; else a self-deadlock (hedged: the holder may have
// exited, or the process may be a forked child).
func (a *analysis) loneWaiterOf(p *stacks.Process) (loneWaiter, bool) {
	if p.Exited {
		return loneWaiter{}, false
	}
	if p.Fork != nil {
		return a.forkedSelfRelock(p)
	}
	fork := forkEvidence{}
	if !a.Snap.Evidence.Lineage {
		fork = forkChildSide(p)
	}
	// A paste of one thread may leave out the others; it is still the
	// thread the reporter found stuck, and a hedged verdict with what
	// would settle it beats none.
	partial := !a.allThreads(p) && !fork.ok
	ws := a.stuckLockWaiters(p)
	if len(ws) == 1 && threadCount(p) != 1 && onlyOneTop(p, ws[0].Thread) && !fork.ok {
		partial = true // the others are fragments: this is the one thread whose wait the paste holds
	} else if len(ws) != 1 || partial && threadCount(p) != 1 {
		return loneWaiter{}, false
	}
	lw := loneWaiter{ref: ws[0], id: "self-deadlock", conf: Low, fork: fork, partial: partial}
	t := ws[0].Thread
	switch {
	case fork.ok:
		lw.id = "fork-inherited-lock"
		if fork.certain {
			lw.conf = Medium
		}
		return lw, true
	case !a.Snap.Evidence.Lineage && threadCount(p) == 1:
		if d, f, ok := driverInStack(t.Stack); ok {
			lw.id, lw.driver, lw.driverFrame = "fork-after-accelerator-init", d, f
			return lw, true
		}
	}
	if why := dispatchOwnQueue(t); why != "" {
		lw.dispatch = why
		return lw, true
	}
	if why := pyReentry(t); why != "" {
		lw.reentry, lw.conf, lw.pyReentry = why, Medium, true
		return lw, true
	}
	if why := reentryOnStack(a, t); why != "" {
		lw.reentry, lw.conf = why, Medium
		return lw, true
	}
	for i := range a.rules {
		r := &a.rules[i]
		for _, base := range r.Base {
			fork := base == "fork-inherited-lock" || base == "fork-after-accelerator-init"
			if base != "self-deadlock" && !fork || fork && a.Snap.Evidence.Lineage {
				continue
			}
			d := Diagnosis{ID: base}
			d.nameIn(p, t.Tid)
			if _, ok := r.match(a, &d); ok {
				lw.id, lw.rule = base, r
				return lw, true
			}
		}
	}
	_, caller := a.wait(t)
	if sig := signalFrame(t.Stack); sig >= 0 && caller <= sig {
		return lw, true // a handler's wait: signal-handler-reentry's, when both sides show the lock
	}
	if side := loaderSide(t); side != "" {
		lw.id, lw.loader = "loader-lock", side
		return lw, true
	}
	lw.others = otherThreadsShown(a, p, t)
	if caller >= len(t.Stack) && cAPIAcquire(t.Stack) && lw.others == "" && !a.Snap.Evidence.Lineage {
		// CPython's C code takes one of the interpreter's own locks (an
		// import lock, a buffered stream's) and the paste cut the code
		// that took it: like an allocator's, such a lock is held only
		// while that C code runs, so with no other thread in sight its
		// holder is most likely a thread of the parent at fork()
		// (multiprocessing's fork of a threaded parent).
		lw.id, lw.interpreter = "fork-inherited-lock", true
		return lw, true
	}
	if fam := allocatorOfWait(t); fam != "" {
		// An allocator holds its lock only while it runs and waits for
		// nothing inside: a waiter that no thread here releases is in a
		// child whose parent had another thread inside the allocator at
		// fork(), or re-entered the allocator itself (a hook, an
		// exception allocated mid-allocation, an unwinder). A process the
		// dump shows with other threads, or whose lineage says it is no
		// fork child, is no forked child's lone thread.
		lw.allocator = fam
		if why := allocatorReentry(t); why != "" {
			lw.reentry, lw.conf = why, Medium
			if stacks.TopCut(t) {
				lw.conf = Low // the wait itself is above the dump's first frame
				lw.reentry += "; the dump left out the innermost frames, where the inner entry waits"
			}
		} else if why := allocatorInitWait(t); why != "" {
			lw.reentry = why + ": it is held only while the allocator starts up, so the thread most likely allocated again while initialising and waits for itself"
		} else if why := interposedAllocatorLock(t); why != "" {
			lw.reentry = why
		} else if why := forkSafeAllocatorLock(t); why != "" && !stackBottomShown(t) {
			lw.id, lw.others = "signal-handler-reentry", why // no fork child's: the re-entry below the cut
		} else if lw.others != "" && !stackBottomShown(t) {
			// No forked child's lone thread, and the frames below the
			// cut, where the allocator was first entered, are not in
			// the paste: the re-entry most often seen there is a signal
			// handler (a crash handler that allocates after a fault
			// inside the allocator, a profiler's tick), more often than
			// a hook or an exception allocated mid-allocation.
			lw.id = "signal-handler-reentry"
		} else if a.Snap.Evidence.Lineage && lw.others == "" {
			lw.others = "the process's lineage was read: it is no forked child"
		} else if lw.others == "" {
			lw.id = "fork-inherited-lock"
		}
		return lw, true
	}
	if f, ok := poolAsker(t); ok && !a.Snap.Evidence.Lineage && lw.others == "" && len(p.Threads) == 1 {
		// A thread pool's lock, taken by the pool's own code, in a
		// process whose only thread is this one: a process that started
		// the pool runs its workers (one of which holds the lock), so
		// this is most likely a child forked after its parent started it.
		lw.id, lw.pool = "fork-inherited-lock", f
		return lw, true
	}
	if why := holderElsewhere(a, p, t, partial); why != "" {
		lw.id, lw.elsewhere = "lock-order-cycle", why
	}
	return lw, true
}

// holderElsewhere says why a lone lock waiter's lock is most likely held
// by another thread, "" when nothing says so. Nothing on the stack shows
// the waiter holding it (reentryOnStack found no re-entry), and either
// the lock is recursive (a thread re-taking a recursive lock it holds
// does not wait: the holder is another thread), or the paste holds one
// thread of a process that has others: the waiter is a thread the
// process started (its stack begins in start_thread or clone), so the
// main thread at least is not in the paste. A thread waiting for a lock
// another thread holds, in a process where nothing runs, is most often
// one side of a lock-order cycle whose other side the paste cut.
func holderElsewhere(a *analysis, p *stacks.Process, t *stacks.Thread, partial bool) string {
	if !partial && threadCount(p) == 1 {
		return "" // the whole process is this thread: a holder elsewhere exited
	}
	if f, ok := recursiveLockFrame(a, t); ok {
		return fmt.Sprintf("`%s` takes a recursive lock: a thread that holds it takes it again without waiting, so the thread waits for another thread's hold", frameName(f))
	}
	if lib := libraryLockOnce(a, t); lib != "" {
		return fmt.Sprintf("the lock is taken inside %s's own code, which the thread entered once (no frame of it below): a library releases its internal locks before it returns, so this thread does not hold it, another thread does", lib)
	}
	if onlyOneTop(p, t) && threadCount(p) != 1 {
		return "the paste also holds part of another thread's stack, whose innermost frames it cut: the process has other threads, and nothing on this stack shows it holding the lock"
	}
	if partial && spawnedThread(t) {
		return "the thread was started by the process (its stack begins in a thread start), so the process has other threads, which the paste does not show; nothing on this stack shows it holding the lock"
	}
	if why := otherThreadsShown(a, p, t); partial && why != "" && !mainThreadStack(t) && !darwinThread(t) {
		return why + ", which the paste does not show; nothing on this stack shows it holding the lock"
	}
	return ""
}

// libraryLockOnce names the shared library whose own code asks for the
// lock a thread waits for, when the thread entered that library once on
// the stack the paste shows (its frames one run, none further down), ""
// otherwise. Not the C and C++ runtimes (their locks are taken for the
// program: stdio, atexit, static guards) nor a one-time initialiser's
// wait, which the initialising thread re-enters.
func libraryLockOnce(a *analysis, t *stacks.Thread) string {
	class, caller := a.wait(t)
	if class != waitLock || caller >= len(t.Stack) || onceWait(t, caller) {
		return ""
	}
	lib := frameLibrary(t.Stack[caller])
	if lib == "" || runtimeLibrary(lib) {
		return ""
	}
	i := caller
	for i < len(t.Stack) && frameLibrary(t.Stack[i]) == lib {
		i++
	}
	for _, f := range t.Stack[i:] {
		if frameLibrary(f) == lib {
			return ""
		}
	}
	return "`" + lib + "`"
}

// frameLibrary is the shared object a frame is in, by its module or, for
// a frame printed with no symbol ("??? () at /lib/…/libgio-2.0.so.0"),
// by the path printed in place of its source file; "" for the program's
// own code and frames that do not say.
func frameLibrary(f stacks.Frame) string {
	m := f.Module
	if m == "" && strings.Trim(f.Func, "?") == "" {
		m = f.File
	}
	base := path.Base(strings.ReplaceAll(m, "\\", "/"))
	if !strings.Contains(base, ".so") && !strings.HasSuffix(base, ".dylib") && !strings.HasSuffix(base, ".dll") {
		return ""
	}
	return base
}

// runtimeLibrary: the C and C++ runtimes and the loader, whose locks a
// program takes through them.
func runtimeLibrary(base string) bool {
	for _, p := range []string{"libc.", "libc-", "libpthread", "ld-linux", "ld64", "libstdc++", "libc++", "libgcc", "libsystem_", "libdyld", "libdispatch", "libobjc", "ntdll", "kernel32", "kernelbase", "libmusl", "ld-musl"} {
		if strings.HasPrefix(strings.ToLower(base), p) {
			return true
		}
	}
	return false
}

// onlyOneTop: t is the only thread of the process whose innermost frames
// the paste holds; the others are stack fragments whose tops it cut.
func onlyOneTop(p *stacks.Process, t *stacks.Thread) bool {
	for _, o := range p.Threads {
		if o != t && !sameThread(o, t) && !stacks.TopCut(o) {
			return false
		}
	}
	return true
}

// darwinThread: a thread of a macOS program (its frames in .dylib
// images, a com.apple queue), whose thread ids are not pids: a tid that
// is not the pid says nothing about being the main thread there.
func darwinThread(t *stacks.Thread) bool {
	if strings.Contains(t.Name, "com.apple.") {
		return true
	}
	for _, f := range t.Stack {
		if strings.HasSuffix(f.Module, ".dylib") || strings.Contains(f.Module, "/System/Library/") {
			return true
		}
	}
	return false
}

// mainThreadStack: the stack goes down to the program's main (or libc's
// call of it): it is the main thread's, whatever number it carries.
func mainThreadStack(t *stacks.Thread) bool {
	for _, f := range t.Stack {
		switch funcKey(f) {
		case "main", "libc_start_main", "libc_start_call_main":
			return true
		}
	}
	return false
}

// otherThreadsShown says how the dump shows a process with threads other
// than t, "" when it does not: gdb and pstack number threads from 1,
// the main thread (whose LWP the parser takes for the pid), so a thread
// shown by its LWP under a higher number, in a process without a pid, is
// one of several; with a pid, a thread whose tid is not the pid is not
// the main thread.
func otherThreadsShown(a *analysis, p *stacks.Process, t *stacks.Thread) string {
	switch {
	case len(p.Threads) > 1:
		return fmt.Sprintf("process %d has %d threads", p.Pid, len(p.Threads))
	case t.Tid <= 0:
		return ""
	case p.Pid > 0 && t.Tid != p.Pid:
		return fmt.Sprintf("%s is not the main thread of process %d (its tid is not the pid)", threadLabel(t), p.Pid)
	case p.Pid <= 0 && a.src.printedBy("gdb"):
		return fmt.Sprintf("the dump numbers %s after thread 1, the main thread: the process has other threads", threadLabel(t))
	}
	return ""
}

// recursiveLockFrame returns the frame of a thread's lock wait that
// takes a recursive lock (std::recursive_mutex, GRecMutex, an RLock), as
// the vocabulary says.
func recursiveLockFrame(a *analysis, t *stacks.Thread) (stacks.Frame, bool) {
	_, caller := a.wait(t)
	for _, f := range t.Stack[:min(caller, len(t.Stack))] {
		if r := nativeRow(f); r.IsRecursive() && r.Role.IsLock() {
			return f, true
		}
	}
	return stacks.Frame{}, false
}

// poolAsker finds the thread-pool runtime frame that asked for the lock
// a thread waits for: the asker itself or one of its few callers.
func poolAsker(t *stacks.Thread) (stacks.Frame, bool) {
	_, caller := waitOf(t)
	for i := caller; i < min(caller+4, len(t.Stack)); i++ {
		if frameRole(t.Stack[i]) == stacks.RolePool {
			return t.Stack[i], true
		}
	}
	return stacks.Frame{}, false
}

// spawnedThread: the stack's outermost frame is where a started thread
// begins (start_thread, clone), not the process's main.
func spawnedThread(t *stacks.Thread) bool {
	n := len(t.Stack)
	for i := n - 1; i >= max(n-3, 0); i-- {
		switch funcKey(t.Stack[i]) {
		case "start_thread", "clone", "clone3", "thread_start", "pthread_start":
			return true
		}
	}
	return false
}

// forkedSelfRelock: a forked child whose one lock waiter's lock records
// no owner (musl's default mutexes) waits for a lock a parent thread
// held at fork() or for one it took itself; only a known issue in which
// the thread re-locks its own lock tells the second from the first.
func (a *analysis) forkedSelfRelock(p *stacks.Process) (loneWaiter, bool) {
	ws := a.stuckLockWaiters(p)
	if len(ws) != 1 {
		return loneWaiter{}, false
	}
	if r := knownSelfRelock(a, ws[0]); r != nil {
		return loneWaiter{ref: ws[0], id: "self-deadlock", conf: Medium, rule: r}, true
	}
	return loneWaiter{}, false
}

// knownSelfRelock is the known issue, if any, whose frames say the
// thread re-takes a lock it holds: the upstream bug tells a waiter for
// itself from a waiter for a holder the evidence does not show.
func knownSelfRelock(a *analysis, ref ThreadRef) *Rule {
	for i := range a.rules {
		r := &a.rules[i]
		if !slices.Contains(r.Base, "self-deadlock") {
			continue
		}
		d := Diagnosis{ID: "self-deadlock"}
		d.name(ref)
		if _, ok := r.match(a, &d); ok {
			return r
		}
	}
	return nil
}

// reentryOnStack says how a lock waiter's own stack shows it already
// holding the lock it waits for, "" when it does not: the function that
// asked for the lock is further down the same stack (recursion, a
// callback, a finalizer or a logging handler re-entering it), or, for a
// once-initialiser or static guard, a frame below works on the very
// object the guarded function initialises ("getHeap()::buf": the
// initialiser is running on this thread).
func reentryOnStack(a *analysis, t *stacks.Thread) string {
	class, caller := a.wait(t)
	if !class.isLock() || caller >= len(t.Stack) {
		return ""
	}
	asker := t.Stack[caller]
	k := funcKey(asker)
	if strings.Trim(asker.Func, "?") == "" || nativeRow(asker) != nil || interpreterFrame(asker) || genericFrame(k) {
		return ""
	}
	if _, rec := recursiveLockFrame(a, t); rec {
		return "" // its holder re-takes a recursive lock without waiting
	}
	if j := askerAgain(t.Stack, caller, true); j >= 0 {
		return fmt.Sprintf("`%s`, which asks for the lock at #%d, is also at #%d further down the same stack: the thread re-entered it while holding the lock", frameName(asker), caller, j)
	}
	once := onceWait(t, caller)
	for j := caller + 1; once && j < len(t.Stack); j++ {
		if frameRole(t.Stack[j]) == stacks.RoleOnce && j+1 < len(t.Stack) {
			// Further down, this thread is itself inside a one-time
			// initialisation whose initialiser led here: a waiter for
			// an initialisation under way elsewhere would not be inside
			// one (nested once calls on other objects run, not wait).
			return fmt.Sprintf("`%s` waits for a one-time initialisation at #%d while the same thread is inside one at #%d (`%s`), whose initialiser called it: the initialiser re-entered its own once (pthread_once, std::call_once or a static guard never completes)",
				frameName(asker), caller, j, frameName(t.Stack[j]))
		}
		f := t.Stack[j]
		for _, arg := range f.Args {
			if l, ok := argAddr(arg); ok && strings.HasPrefix(l.Symbol, k+"()::") {
				return fmt.Sprintf("`%s` waits for the one-time initialisation of its static, and #%d (`%s`, %s=%s) is constructing that static on the same thread: the initialiser re-entered the function it initialises",
					frameName(asker), j, frameName(f), arg.Name, l.Symbol)
			}
		}
	}
	return ""
}

// onceWait: the thread's wait (the frames above caller) is for a one-time
// initialisation (pthread_once, std::call_once, a static's guard).
func onceWait(t *stacks.Thread, caller int) bool {
	return slices.ContainsFunc(t.Stack[:min(caller, len(t.Stack))], func(f stacks.Frame) bool { return frameRole(f) == stacks.RoleOnce })
}

// onceReentryFix is the fix for an initialiser that re-entered its once.
const onceReentryFix = "Do not reach the once (pthread_once, std::call_once, the function-local static) from inside its own initialiser: " +
	"the initialiser must not call, directly or through a callback, code that needs the initialisation finished; " +
	"initialise what it needs first, or split it into two onces."

// genericFrame: a function that recurs on any stack for reasons of its
// own (call operators, std::function and thread trampolines).
func genericFrame(k string) bool {
	return strings.HasSuffix(k, "operator()") || strings.HasPrefix(k, "std::") || strings.HasPrefix(k, "__gnu_cxx::") ||
		strings.HasPrefix(k, "core::ops::") || strings.HasPrefix(k, "tokio::") || isThreadStart(stacks.Frame{Func: k})
}

// allocatorOfWait names the allocator whose lock a thread waits for: the
// lock is taken from inside a lock-holding allocator's frames (the few
// callers of the wait), "" otherwise.
func allocatorOfWait(t *stacks.Thread) string {
	_, caller := waitOf(t)
	for i := caller; i < min(caller+5, len(t.Stack)); i++ {
		if heldFamily(t.Stack[i]) == "malloc" {
			return "malloc"
		}
	}
	for _, f := range t.Stack[:min(caller, len(t.Stack))] {
		if r := nativeRow(f); r != nil && r.Role.IsLock() && strings.Contains(r.Library, "malloc") {
			return "malloc" // jemalloc's, tcmalloc's own lock functions
		}
	}
	return ""
}

// driverInStack finds the innermost frame of an accelerator driver, by
// its module or, for a frame without one, by the driver's API names.
func driverInStack(st []stacks.Frame) (accelDriver, stacks.Frame, bool) {
	for _, f := range st {
		if f.Module != "" {
			if d, ok := driverOf(f.Module); ok {
				return d, f, true
			}
			continue
		}
		for _, d := range accelDrivers {
			if d.api != nil && f.Func != "" && d.api.MatchString(f.Func) {
				return d, f, true
			}
		}
	}
	return accelDriver{}, stacks.Frame{}, false
}

// loneWaiterDiagnosis says a lone waiter's verdict.
func (a *analysis) loneWaiterDiagnosis(lw loneWaiter) Diagnosis {
	p, t := lw.ref.Proc, lw.ref.Thread
	lock := waitLockName(t)
	site := waitSite(t)
	only := "every other thread of the process waits too (for a lock or a join) and none runs"
	switch {
	case lw.partial:
		only = "it is the only thread in the paste, the one found stuck"
	case threadCount(p) == 1:
		only = fmt.Sprintf("it is the only thread of process %d", p.Pid)
	}
	d := Diagnosis{
		Deadlock:   true,
		Confidence: lw.conf,
		Evidence:   []string{stackLine(t)},
	}
	d.name(lw.ref)
	waits := fmt.Sprintf("%s waits for %s in %s; no owner was recorded", threadLabel(t), lock, site)
	switch lw.id {
	case "fork-inherited-lock":
		d.Refs = forkRefs
		if lw.pool.Func != "" {
			d.Summary = fmt.Sprintf("%s waits for %s in %s, a lock of a thread pool (`%s` is the pool runtime's own code), and it is the only thread of %s: a process that started the pool runs its worker threads, one of which holds the lock, so this is most likely a child forked after its parent started the pool",
				threadLabel(t), lock, site, frameName(lw.pool), procWord(p))
			d.Chain = []string{waits, only,
				fmt.Sprintf("`%s` is the thread-pool runtime's own code (OpenMP, OpenBLAS): the pool's lock is taken by the pool's threads, which a process that started the pool has", frameName(lw.pool)),
				"fork() copies the pool's memory and its locks, held by a worker of the parent, but not the workers: in the child nobody releases the lock"}
			d.Evidence = append(d.Evidence, "no lineage was read: whether the process is a forked child (its parent pid; `thread apply all bt` showing no pool worker) would settle it")
		} else if lw.interpreter {
			d.Summary = fmt.Sprintf("%s waits for %s in %s, a lock CPython's own C code takes (the C API's blocking acquire, not a threading lock object), and no thread in sight holds it: such a lock is held only while that code runs, so process %d is most likely a child forked from a threaded parent while another of its threads held it",
				threadLabel(t), lock, site, p.Pid)
			d.Chain = []string{waits, only,
				"`PyThread_acquire_lock` above `PyThread_acquire_lock_timed`: the interpreter's C code takes the lock (an import lock, a buffered stream's, an extension's); threading's Lock, Event and Condition call the timed acquire directly",
				"the code that took it is below the paste's cut; a lock held only while C code runs, which no thread here runs, was most likely copied locked by fork() (multiprocessing's default start method on Linux before 3.14)"}
			d.Evidence = append(d.Evidence, "no lineage was read: whether the process is a forked child (its parent pid, multiprocessing or os.fork in the frames below the cut) would settle it")
		} else if lw.allocator != "" {
			d.Summary = fmt.Sprintf("%s waits for %s in %s, an allocator's own lock, and no thread in sight holds it: an allocator holds its lock only while it runs, so process %d is most likely a forked child whose parent had another thread inside the allocator at fork()",
				threadLabel(t), lock, site, p.Pid)
			d.Chain = []string{waits, only,
				"an allocator takes this lock only inside its own functions and waits for nothing while it holds it, so its holder is a thread that does not run here",
				"most likely a thread of the parent at fork(): fork() copied the lock locked into the child (or the thread re-entered the allocator from a hook or a signal handler)"}
			d.Evidence = append(d.Evidence, "no lineage was read: whether the process is a forked child (its parent pid, the fork frames cut from the paste) would settle it")
		} else if lw.fork.heading != "" {
			d.Summary = fmt.Sprintf("the paste names process %d a child (%q) and its only thread, %s, waits for %s in %s that no thread of the child can release: a child forked without exec keeps the locks its parent's threads held at fork(), locked",
				p.Pid, lw.fork.heading, threadLabel(t), lock, site)
			d.Chain = []string{fmt.Sprintf("the paste's heading %q names the process a child", lw.fork.heading), waits, only,
				"a lock no thread of the process can release, in a child: most likely copied locked by fork() from a parent thread that held it, which does not exist in the child"}
			d.Evidence = append(d.Evidence, "no lineage was read: the child is the reporter's word; its parent pid and whether it exec'd (a forked child runs its parent's program) would settle it")
		} else if lw.fork.ok {
			d.Summary = fmt.Sprintf("process %d is a forked child by its frames (its only thread is inside `%s`): %s waits for %s in %s that no thread of the child can release; a lock a parent thread held at fork() stays locked in the child",
				p.Pid, lw.fork.frame, threadLabel(t), lock, site)
			how := fmt.Sprintf("the stack goes through `%s`", lw.fork.frame)
			if lw.fork.certain {
				how += fmt.Sprintf(" and `%s`, which runs only in the child", lw.fork.marker)
			} else {
				how += ", which a child inherits from the call that forked it"
			}
			d.Chain = []string{how, waits, only,
				"the lock was copied locked by fork(): its holder was a thread of the parent, which does not exist in the child"}
			d.Evidence = append(d.Evidence, "no lineage was read: the fork is inferred from the frames")
		} else {
			d.Summary = fmt.Sprintf("%s waits for %s in %s that no thread of process %d can release; its frames match a known bug of a lock held across fork(), so process %d is most likely a forked child and the holder a thread of its parent",
				threadLabel(t), lock, site, p.Pid, p.Pid)
			d.Chain = []string{waits, only,
				fmt.Sprintf("the frames match known issue `%s` (%s): a lock held by a thread of the parent when it forked", lw.rule.ID, lw.rule.Title),
				"so the holder is most likely a thread of the parent at fork(), which does not exist in the child (or the waiter itself, or a thread that exited)"}
		}
	case "signal-handler-reentry":
		d.Refs = signalReentryRefs
		d.Summary = fmt.Sprintf("%s waits for %s in %s, an allocator's own lock, which no other thread in sight holds, and the process is no forked child's lone thread (%s): the thread most likely re-entered the allocator from a signal handler (a crash handler that allocates after a fault inside the allocator) and waits for itself; the paste is cut above the frames that would show it",
			threadLabel(t), lock, site, lw.others)
		d.Chain = []string{waits, only, lw.others,
			"an allocator takes this lock only inside its own functions and waits for nothing while it holds it: a thread that never gets it is most likely waiting for itself",
			"the re-entry most often behind such a wait is a signal handler that allocates (a crash or stack-trace handler after a fault inside the allocator, a profiler's sample), more rarely a hook or an exception allocated mid-allocation (self-deadlock)"}
		d.Fix = "Call only async-signal-safe functions in a signal handler (signal-safety(7)): a crash handler must not allocate (preallocate its buffers, write(2) the report, use backtrace_symbols_fd). If the frames below show no `<signal handler called>`, look for a hook or interposer that allocates while the allocator holds its lock."
		d.Evidence = append(d.Evidence, "the frames below the cut would settle it: `<signal handler called>` (or a handler such as `*_signal_handler`) above the allocator's first entry is this verdict; the allocator entered twice with a hook between is a self-deadlock")
		d.Hints = append(d.Hints, attachHint(p.Pid, "to read the whole stack and the mutex owner"))
	case "lock-order-cycle":
		d.Refs = lockOrderRefs
		d.Summary = fmt.Sprintf("%s waits for %s in %s, which most likely another thread holds while it waits in turn (a lock-order cycle); the paste does not show that thread",
			threadLabel(t), lock, site)
		d.Chain = []string{waits, lw.elsewhere,
			"no thread in the paste runs: the holder most likely waits for a lock this thread (or a thread waiting behind it) holds, the usual shape of a lock-order cycle; it may also be blocked on something else while holding the lock"}
		d.Evidence = append(d.Evidence, "the holder's stack is not in the paste: all threads' stacks (gdb `thread apply all bt`) would show which thread holds the lock and what it waits for")
	case "fork-after-accelerator-init":
		d.Refs = []string{
			"https://man7.org/linux/man-pages/man2/fork.2.html",
			"https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods",
		}
		in := lw.driverFrame.Name()
		d.Summary = fmt.Sprintf("%s, the only thread of process %d, is stuck in the %s driver (`%s`) waiting for %s: a process that initialised the driver runs the driver's own threads and this one has none, so it is most likely a child forked after its parent initialised the driver",
			threadLabel(t), p.Pid, lw.driver.family, in, lock)
		d.Chain = []string{
			fmt.Sprintf("%s calls into the %s driver: `%s`", threadLabel(t), lw.driver.family, in),
			waits, only,
			"a driver that was initialised in this process would have its threads (and the lock's holder) here; fork() copies the driver's memory and locks but not its threads",
		}
		d.Evidence = append(d.Evidence, fmt.Sprintf("`%s` recognised as a %s frame by its %s", in, lw.driver.family, map[bool]string{true: "module", false: "name"}[lw.driverFrame.Module != ""]),
			"no lineage and no mapped modules were read: the fork is inferred from the missing driver threads")
	default:
		d.Refs = selfDeadlockRefs
		d.Summary = fmt.Sprintf("%s waits for %s in %s that no other thread of process %d can release: it most likely holds it already",
			threadLabel(t), lock, site, p.Pid)
		d.Chain = []string{waits, only,
			"so the holder is the waiter itself, taking the lock a second time, or a thread that exited holding it, or (in a forked child) a thread of the parent at fork()"}
		if lw.dispatch != "" {
			dispatchSyncDiagnosis(&d, lw, waits, only)
		} else if lw.allocator != "" {
			d.Summary = fmt.Sprintf("%s waits for %s in %s, an allocator's own lock, which no other thread in sight holds, and the process is no forked child's lone thread (%s): an allocator holds its lock only while it runs, so the holder is most likely this thread, which re-entered the allocator",
				threadLabel(t), lock, site, lw.others)
			why := lw.others
			if lw.reentry != "" {
				d.Summary = fmt.Sprintf("%s waits for %s in %s, an allocator's own lock, which it holds already: %s",
					threadLabel(t), lock, site, lw.reentry)
				why = lw.reentry
			}
			d.Chain = []string{waits, only, why,
				"an allocator takes this lock only inside its own functions and waits for nothing while it holds it: a thread that never gets it is waiting for itself",
				"the allocator was re-entered on this thread while it held the lock: from a hook it calls (an interposed pthread or malloc hook that allocates), an exception allocated mid-allocation (__cxa_allocate_exception), an unwinder, or a signal handler"}
			d.Fix = "Keep the allocator from being entered again while it runs: a hook or interposer it calls (a malloc or pthread hook, a profiler's or tracer's wrapper) must not allocate, nor throw, and a signal handler must not allocate (signal-safety(7)); fixes of this kind are usually in the hook's library (allocate its buffers up front) or in the allocator (drop the lock before calling out)."
			d.Evidence = append(d.Evidence, "the frames below the cut would show the allocator's first entry on this thread")
			d.Hints = append(d.Hints, attachHint(p.Pid, "to read the mutex owner"))
		} else if lw.reentry != "" {
			d.Summary = fmt.Sprintf("%s waits for %s in %s, which it already holds: its own stack shows it re-entering the code that took the lock",
				threadLabel(t), lock, site)
			d.Chain = []string{waits, lw.reentry, only}
			if lw.pyReentry {
				d.Fix = pyReentryFix
			} else if _, caller := a.wait(t); onceWait(t, caller) {
				d.Fix = onceReentryFix
			}
		} else if lw.rule != nil {
			d.Chain = append(d.Chain, fmt.Sprintf("the frames match known issue `%s`, in which the thread re-locks a lock it holds", lw.rule.ID))
		} else {
			d.Summary += " (or its holder exited, or the process is a forked child)"
		}
	}
	if lw.partial {
		d.Evidence = append(d.Evidence, "the paste holds only this thread: the other threads' stacks (gdb `thread apply all bt`) would show whether one of them holds the lock")
	}
	d.Evidence = append(d.Evidence, "no mutex owner was read: the verdict rests on frame names and thread states")
	if ask := ownerAsk(a, t); ask != "" {
		d.Evidence = append(d.Evidence, ask)
	}
	return d
}

// ownerAsk is the one gdb command that settles a lone waiter's verdict
// when its lock is a glibc pthread mutex, which records its holder: the
// frame of the lock call, then the mutex's __owner, read three ways.
// "" for another lock or a dump gdb did not print.
func ownerAsk(a *analysis, t *stacks.Thread) string {
	if !a.src.printedBy("gdb") || stacks.TopCut(t) {
		return "" // the frame numbers are the paste's own only from #0
	}
	_, caller := a.wait(t)
	for i, f := range t.Stack[:min(caller, len(t.Stack))] {
		if r := nativeRow(f); r != nil && r.Role.IsLock() && r.Owner == stacks.OwnerPthreadMutex && funcKey(f) != "lll_lock_wait" {
			return fmt.Sprintf("the mutex records its holder: in gdb, `frame %d` (`%s`) then `p mutex->__data.__owner` (or `p *mutex`) names it: "+
				"%s's own LWP, it re-took its own lock; the LWP of another thread of the process, a cycle through that thread; "+
				"a tid that is no thread of the process, a thread of the parent copied locked by fork(), or one that exited holding it",
				i, frameName(f), threadLabel(t))
		}
	}
	return ""
}

// --- what a snapshot lacks ----------------------------------------------

var evidenceWords = map[string]string{
	"owners":  "no mutex owner",
	"lineage": "no process lineage",
	"cpu":     "no CPU figures",
}

// noteAbsentEvidence adds to each deadlock claim the facts its verdict
// rests on that the snapshot lacks ("no mutex owner in a gdb dump"), with
// the way to get them, and keeps such a claim from high confidence.
func noteAbsentEvidence(a *analysis, ds []Diagnosis) {
	for i := range ds {
		d := &ds[i]
		if !d.Deadlock || goroutineDiagnosis(a, *d) {
			continue // Go's mutexes record no owner: no attach would read one
		}
		e := a.diagEvidence(*d) // only now: it reads every thread of the diagnosis's processes
		have := map[string]bool{"owners": e.Owners, "lineage": e.Lineage, "cpu": e.CPU}
		var missing []string
		sig := Lookup(d.ID)
		if sig == nil {
			continue
		}
		for _, need := range sig.Needs {
			if !have[need] {
				missing = append(missing, evidenceWords[need])
			}
		}
		if len(missing) == 0 {
			continue
		}
		if d.Confidence == High {
			d.Confidence = Medium
		}
		d.Evidence = append(d.Evidence, fmt.Sprintf("%s in %s", joinStrings(missing), a.src.text()))
		if !a.src.live() {
			d.Hints = append(d.Hints, attachHint(firstPid(d), "on the live process for certainty"))
		}
	}
}

// noteUnreadGoroutines: a Go program read as OS threads (its goroutines
// could not be read: no DWARF, as `go test` builds) shows its scheduler
// parked in futex and epoll waits whatever its goroutines do, so no
// verdict about it is more than a guess: low confidence, and the
// evidence says why.
func noteUnreadGoroutines(a *analysis, ds []Diagnosis) {
	unread := func(p *stacks.Process) bool {
		return strings.HasPrefix(p.Runtime, "go") && len(p.Threads) > 0 && p.Threads[0].Goroutine() == nil
	}
	if !slices.ContainsFunc(a.Snap.Processes, unread) {
		return
	}
	for i := range ds {
		d := &ds[i]
		for _, p := range a.diagProcs(d) {
			if !unread(p) {
				continue
			}
			d.Confidence = Low
			if !d.Deadlock {
				// Its OS threads idle in futex and epoll waits whether its
				// goroutines deadlock or not: nothing is ruled out.
				d.Title = "A Go program whose goroutines were not read: no verdict on them"
				d.Summary = "goroutines not read, so a deadlock is not ruled out: its OS threads are " +
					strings.TrimPrefix(d.Summary, "not a deadlock, ")
				d.Fix = "Read its goroutines before trusting this: build it with -ldflags='-s=false -w=false' (go test and go run strip DWARF) " +
					"and attach again, or take its goroutine dump."
				d.Hints = append(d.Hints, Hint{Action: HintGoroutineDump, Pid: max(p.Pid, 0), Why: "to read its goroutines"})
			}
			d.Evidence = append(d.Evidence, fmt.Sprintf("pid %d is a Go program (%s) read as OS threads: its goroutines, where a Go hang shows, "+
				"were not read (see the process's notes); build it with DWARF (go test -ldflags='-s=false -w=false') or take its goroutine dump (SIGQUIT)",
				p.Pid, p.Runtime))
			break
		}
	}
}
