package heuristics

import (
	"path/filepath"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// funcKey is a frame's function in the spelling every comparison uses
// (stacks.FuncKey: no parameters, version, clone suffix, alias prefix or
// leading underscores).
func funcKey(f stacks.Frame) string { return stacks.FuncKey(f.Func) }

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// waitClass is what a blocked thread waits on, as its frames tell.
type waitClass int

const (
	notWaiting waitClass = iota
	waitLock             // a mutex, rwlock or low-level lock: somebody holds it
	waitPyLock           // a Python lock: a Lock, or the lock behind an Event
	waitCond             // a condition variable, a semaphore, a bare futex: nobody holds it
	waitJoin             // pthread_join: the joined thread must exit
	waitFutex            // blocked in a futex, on what the (cut) stack does not say
)

func (c waitClass) isLock() bool { return c == waitLock || c == waitPyLock }

// blockedIn walks a stack from the innermost frame across the wait
// machinery (futex internals, lock, condvar and join functions) and
// returns what the innermost of them waits on and the index of the first
// frame past them: the code that asked to wait. A thread reacquiring the
// mutex inside pthread_cond_wait waits on the lock, not the condvar.
// futex is set when only futex internals were seen.
func blockedIn(stack []stacks.Frame) (class waitClass, caller int, futex bool) {
	for i, f := range stack {
		r := nativeRow(f)
		var c waitClass
		switch {
		case f.Signal:
			return class, i, futex
		case f.Func == "" && class == notWaiting && !futex:
			continue // unsymbolised libc under the wait
		case r != nil && (r.Role == stacks.RolePark || r.Role == stacks.RoleSyscall):
			futex = true
			continue
		case r != nil && (r.Role == stacks.RoleYield || r.Role == stacks.RoleSleep) && class == notWaiting && i+1 < len(stack) && frameRole(stack[i+1]).IsLock():
			// A spin lock's slow path gives the CPU away between tries
			// (sched_yield) or backs off in a short sleep (tcmalloc's
			// SpinLockDelay, nanosleep in an old SpinLock::SlowLock): one
			// sample of it is a lock wait, not a sleep.
			continue
		case r != nil && r.Role.IsLock() && r.AnyReleaser:
			c = waitPyLock
		case r != nil && r.Role.IsLock():
			c = waitLock
		case r != nil && r.Role == stacks.RoleCond:
			c = waitCond
		case r != nil && r.Role == stacks.RoleJoin:
			c = waitJoin
		case class == notWaiting && futex && r == nil && f.Func != "" && !stacks.IsPythonFrame(f) && takesLocks(f):
			// A function named for taking a lock right over a bare futex
			// wait is a lock's slow path the vocabulary does not know
			// (musl's static lock(), a library's own mutex).
			c = waitLock
		default:
			if class == waitCond && stacks.IsPythonFrame(f) {
				// py-spy hides the interpreter's frames: a semaphore wait
				// called straight from Python code is a Python lock's
				class = waitPyLock
			}
			return class, i, futex
		}
		// The innermost decides (a condvar reacquiring its mutex waits on
		// the lock), but a Python lock is built on a semaphore or condvar.
		if class == notWaiting || c == waitPyLock && class == waitCond {
			class = c
		}
	}
	return class, len(stack), futex
}

// waitOf says what a thread waits on: the mutex or join target attach
// read first, then the frames, then the syscall. caller is the index of
// the frame that asked to wait. A futex wait called from code of its
// own is a bare futex, nobody holds it; one whose stack ends in the
// futex internals (a dump cut short) could be anything.
func waitOf(t *stacks.Thread) (class waitClass, caller int) {
	class, caller, futex := blockedIn(t.Stack)
	if class == notWaiting && !futex && t.Goroutine() == nil {
		class, caller = goLockInList(t.Stack)
	}
	if class == notWaiting && !futex && pyAcquireOnTop(t.Stack) {
		class, caller = waitPyLock, 0
	}
	if class == notWaiting && !futex && cutAllocatorWait(t) {
		class, caller = waitLock, 0
	}
	w := threadWait(t)
	if class == notWaiting && !futex && (w == nil || w.Syscall == "") {
		// A signal came to a thread blocked in a wait (a watchdog's
		// SIGABRT, a profiler's tick) and the dump caught its handler,
		// which waits for nothing: the thread waits where the signal
		// interrupted it.
		if sig := signalFrame(t.Stack); sig >= 0 {
			if c, at, f := blockedIn(t.Stack[sig+1:]); c != notWaiting {
				class, caller, futex = c, sig+1+at, f
			}
		}
	}
	if class == notWaiting && futex && caller == len(t.Stack)-1 && cutLockFrame(t) {
		class, caller = waitLock, len(t.Stack) // the futex wait of a lock whose frame the paste cut inside its name
	}
	switch {
	case w != nil && w.Mutex != nil:
		return waitLock, caller
	case w != nil && w.JoinTid != 0:
		return waitJoin, caller
	case class != notWaiting:
		return class, caller
	case w != nil && w.Syscall == "futex", futex && (w == nil || w.Syscall == ""):
		if caller >= len(t.Stack) {
			return waitFutex, caller
		}
		if mutexProtocolWait(w) {
			return waitLock, caller
		}
		return waitCond, caller
	}
	return notWaiting, caller
}

// mutexProtocolWait says whether a bare futex wait, one the frames do not
// name, is a lock's slow path by the futex protocol itself: a plain
// FUTEX_WAIT (not the BITSET form condition variables, semaphores and
// joins use) expecting the word to be 2, "locked, with waiters", the
// state every futex mutex in the classic protocol sleeps on (glibc's
// lll_lock, GLib's GMutex, whose slow path has no exported name, Rust's
// std Mutex, most hand-rolled locks). The kernel read the value, so it
// is no guess from names.
func mutexProtocolWait(w *stacks.Wait) bool {
	return w != nil && w.Value != nil && *w.Value == 2 &&
		(w.Op == "FUTEX_WAIT" || w.Op == "FUTEX_WAIT_PRIVATE")
}

// inMutexLock reports whether the innermost frames block in a lock
// acquisition (pthread_mutex_lock, __lll_lock_wait, std::mutex::lock, …).
func inMutexLock(stack []stacks.Frame) bool {
	c, _, _ := blockedIn(stack)
	return c == waitLock
}

// loaderPrefixes are the dynamic loader's entry points and internals.
var loaderPrefixes = []string{
	"dl_", "dlopen", "dlmopen", "dlclose", "dlsym", "dlvsym", "dladdr", "dlinfo", "dlerror",
	"tls_get_addr", "update_get_addr", "rtld_",
}

// isLoaderFrame: a loader function, or any code in ld.so itself.
func isLoaderFrame(f stacks.Frame) bool {
	k := funcKey(f)
	for _, p := range loaderPrefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	base := filepath.Base(f.Module)
	return strings.HasPrefix(base, "ld-linux") || strings.HasPrefix(base, "ld.so") || strings.HasPrefix(base, "ld64.so")
}

// inLoader reports whether any frame is in the dynamic loader (dlopen,
// _dl_*, dl_iterate_phdr, __tls_get_addr, _dl_catch_*): a thread there
// holds, or waits for, the loader's lock.
func inLoader(stack []stacks.Frame) bool {
	for i := range stack {
		if loaderFrameAt(stack, i) {
			return true
		}
	}
	return false
}

// loaderFrameAt: stack[i] is the loader's, by isLoaderFrame or as
// ld.so's call_init (elf/dl-init.c) running a shared object's
// constructors: a paste without modules names it only by its callee.
func loaderFrameAt(stack []stacks.Frame, i int) bool {
	return isLoaderFrame(stack[i]) || funcKey(stack[i]) == "call_init" && i > 0 && ctorFrame(stack[i-1])
}

// ctorFrame: a shared object's or program's static constructors, as
// the C++ compiler and crt name them.
func ctorFrame(f stacks.Frame) bool {
	k := funcKey(f)
	return strings.HasPrefix(k, "GLOBAL__sub_I_") || strings.HasPrefix(k, "static_initialization_and_destruction") || k == "do_global_ctors_aux"
}

// loadedCtors returns the outermost frame of the static constructors a
// stack runs (through the object's _init), and whether what called them
// is the loader running a loaded object's constructors rather than the
// program's start: a program's constructors are called by libc's start
// code (__libc_csu_init, __libc_start_main), or by ld.so's _dl_init from
// _dl_start_user before main; any other caller (call_init, _dl_init
// under dlopen, an unsymbolised frame, as ld.so's often are) is dlopen's,
// which holds the loader lock while they run. A stack that ends in the
// constructors says nothing.
func loadedCtors(st []stacks.Frame) (int, bool) {
	i := 0
	for i < len(st) && !ctorFrame(st[i]) {
		i++
	}
	if i == len(st) {
		return -1, false
	}
	for i+1 < len(st) && (ctorFrame(st[i+1]) || funcKey(st[i+1]) == "init") {
		i++
	}
	if i+1 == len(st) {
		return i, false
	}
	switch funcKey(st[i+1]) {
	case "libc_csu_init", "libc_start_main", "libc_start_call_main", "libc_start_main_impl":
		return i, false
	}
	for _, f := range st[i+1:] {
		switch funcKey(f) {
		case "dl_start_user", "dl_start", "dl_start_final":
			return i, false // ld.so running the first constructors, before main
		}
	}
	return i, true
}

// signalFrame returns the index of the innermost signal frame, -1 when
// the stack has none: frames before it run in the handler, frames after
// it were interrupted.
func signalFrame(stack []stacks.Frame) int {
	for i, f := range stack {
		if f.Signal || frameRole(f) == stacks.RoleSigframe {
			return i
		}
	}
	return -1
}

// signalSplit says where a stack's signal handler ends: its frames are
// stack[:handlerEnd], the interrupted code's start at below. With a
// signal frame, below is the frame after it. A paste whose
// `<signal handler called>` line was lost (Markdown leaves an empty `#6`
// that parsers drop) still names its handler (handle_fatal_signal,
// *_signal_handler, …): the frames below the handler's were interrupted,
// unless the handler is the thread's start (a signal-handling thread's
// loop). A paste cut below the code that captures or prints the
// thread's own stack trace (a crash handler's work), with nothing named
// under it, stands for the handler the cut took: the frames below it
// are the interrupted ones, unseen. ok is false when the stack shows no
// handler.
func signalSplit(stack []stacks.Frame) (handlerEnd, below int, byName, ok bool) {
	if i := signalFrame(stack); i >= 0 {
		return i, i + 1, false, true
	}
	for i, f := range stack {
		if frameRole(f) != stacks.RoleHandler && !handlerSignature(f) {
			continue
		}
		// A handler passes the signal number on (job_waitsafe(sig=17, info,
		// context) -> job_reap(sig=17)): the kernel called the outermost
		// of the frames that look like one.
		for i+1 < len(stack) && (frameRole(stack[i+1]) == stacks.RoleHandler || handlerSignature(stack[i+1])) {
			i++
		}
		rest := stack[i+1:]
		if len(rest) > 0 && isThreadStart(rest[0]) {
			return 0, 0, false, false
		}
		// nothing below it: the paste was cut there (every stack ends in a
		// thread start), the interrupted frames are unseen
		return i + 1, i + 1, true, true
	}
	for i := len(stack) - 1; i >= 0; i-- {
		if frameRole(stack[i]) == stacks.RoleStackTrace {
			// no thread starts in a stack capture: a stack that ends
			// there, or in frames without names, was cut
			if !namedFrom(stack, i+1) {
				return i + 1, i + 1, true, true
			}
			break
		}
	}
	return 0, 0, false, false
}

// handlerSignature: a frame called as a signal handler is, by the
// arguments a dump printed: a signal number first (sig=11, signo=6,
// signum=…), alone (sa_handler) or with the siginfo and the context
// (sa_sigaction): `bt_handler (sig=11, info=0x…, ctx=0x…)`. A handler's
// name is anything; its signature is not.
func handlerSignature(f stacks.Frame) bool {
	if len(f.Args) != 1 && len(f.Args) != 3 {
		return false
	}
	switch strings.ToLower(f.Args[0].Name) {
	case "sig", "signo", "signum", "signr", "sig_num", "signal", "signal_number", "sign", "s":
	default:
		return false
	}
	if n, ok := f.Args[0].Int(); !ok || n < 1 || n > 64 {
		return false
	}
	if len(f.Args) == 1 {
		return f.Args[0].Name != "s" && f.Args[0].Name != "signal" // a lone s= or signal= says too little
	}
	info, ctx := strings.ToLower(f.Args[1].Name), strings.ToLower(f.Args[2].Name)
	return strings.Contains(info, "info") && (strings.Contains(ctx, "ctx") || strings.Contains(ctx, "context") || strings.HasPrefix(ctx, "uc") || ctx == "secret" || ctx == "data" || ctx == "arg" || ctx == "args" || ctx == "ptr" || ctx == "unused")
}

// crashReport: the frame that ends a handler's frames is a crash
// reporter's stack capture, not a handler known by its name.
func crashReport(stack []stacks.Frame, handlerEnd int) bool {
	return handlerEnd > 0 && frameRole(stack[handlerEnd-1]) == stacks.RoleStackTrace
}

// isThreadStart: the frames a thread begins in, below any code of its own.
func isThreadStart(f stacks.Frame) bool {
	switch funcKey(f) {
	case "start_thread", "clone", "clone3", "thread_start", "pthread_start", "libc_start_main", "libc_start_call_main", "start":
		return true
	}
	return false
}

// isTimedWait: a wait with a timeout returns by itself; the thread polls
// rather than sleeps for ever. (pthread_join runs __pthread_clockjoin_ex
// without a timeout, hence the _np.)
func isTimedWait(stack []stacks.Frame, caller int) bool {
	for _, f := range stack[:min(caller, len(stack))] {
		k := strings.ToLower(funcKey(f))
		for _, s := range []string{"timedwait", "clockwait", "timedlock", "clocklock", "wait_for", "wait_until", "timedjoin_np", "clockjoin_np"} {
			if strings.Contains(k, s) {
				return true
			}
		}
	}
	return false
}

// frameName is a frame's function for a summary line: its qualified
// name without parameters, symbol version or glibc's alias prefix
// ("__GI___dl_iterate_phdr" reads "__dl_iterate_phdr").
func frameName(f stacks.Frame) string {
	if f.Func == "" || f.Signal {
		return f.Name()
	}
	name := f.Func
	if i := strings.IndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	name = strings.TrimPrefix(stacks.FuncBase(name), "__GI_")
	if strings.HasPrefix(name, "___") {
		name = name[1:]
	}
	return name
}

// goLockInList: a Go stack pasted as a bare frame list (a hand-abridged
// goroutine, no "goroutine N [status]:" header, so no goroutine was read)
// whose innermost frame is sync's mutex wait is a lock wait like any
// other; goroutines read as such are judged by their status instead.
func goLockInList(st []stacks.Frame) (waitClass, int) {
	if len(st) == 0 || stacks.IsPythonFrame(st[0]) {
		return notWaiting, 0
	}
	r := stacks.FrameRow(st[0])
	if r == nil || r.Runtime != "go" || !r.Role.IsLock() {
		return notWaiting, 0
	}
	i := 1
	for i < len(st) && stacks.FrameRow(st[i]) == r {
		i++
	}
	return waitLock, i
}

// cutLockFrame: the paste ends inside the name of the thread's last
// frame, and every function of the vocabulary whose name begins so
// takes a lock (a Rust std Mutex:: cut after its type).
func cutLockFrame(t *stacks.Thread) bool {
	n := len(t.Stack) - 1
	if n < 1 || stacks.TopCut(t) || !stacks.FrameCut(t, n) {
		return false
	}
	return stacks.VocabularyInForce().PrefixTakesLock(t.Stack[n].Func)
}
