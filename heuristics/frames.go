package heuristics

import (
	"path/filepath"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// funcKey reduces a frame's function to a name the predicates compare:
// no parameters, no symbol version, no GCC clone suffix, no glibc alias
// prefix and no leading underscores, so "__GI___pthread_mutex_lock",
// "___pthread_mutex_lock" and "pthread_mutex_lock@@GLIBC_2.2.5" all read
// "pthread_mutex_lock". Symbols, gdb and pasted dumps spell them apart.
func funcKey(f stacks.Frame) string {
	name := f.Func
	if i := strings.IndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	name = stacks.FuncBase(name)
	for _, clone := range []string{".isra", ".part", ".constprop", ".cold", ".lto_priv", ".localalias"} {
		if i := strings.Index(name, clone); i > 0 {
			name = name[:i]
		}
	}
	name = strings.TrimPrefix(name, "__GI_")
	return strings.TrimLeft(name, "_")
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// futexFuncs are the libc internals under every blocking wait: they say
// that a thread is blocked, not on what.
var futexFuncs = set(
	"futex_wait", "futex_wait_simple", "futex_wait_cancelable",
	"futex_abstimed_wait", "futex_abstimed_wait_common", "futex_abstimed_wait_common64",
	"futex_abstimed_wait_cancelable64", "futex_reltimed_wait", "futex_lock_pi", "futex_lock_pi64",
	"syscall", "syscall_cancel", "syscall_cancel_arch", "internal_syscall_cancel",
)

// lockFuncs take a lock somebody holds: pthread mutexes, rwlocks and
// glibc's low-level locks (malloc arenas, stdio, the loader).
var lockFuncs = set(
	"pthread_mutex_lock", "pthread_mutex_timedlock", "pthread_mutex_clocklock",
	"pthread_mutex_clocklock_common", "pthread_mutex_lock_full", "pthread_mutex_cond_lock",
	"pthread_mutex_cond_lock_full", "pthread_mutex_lock_pi",
	"lll_lock_wait", "lll_lock_wait_private", "lll_mutex_lock_optimized", "lll_clocklock_wait", "lll_timedlock_wait",
	"lll_robust_lock_wait", "lll_lock_elision", "lll_robust_lock",
	"pthread_rwlock_rdlock", "pthread_rwlock_wrlock", "pthread_rwlock_timedrdlock",
	"pthread_rwlock_timedwrlock", "pthread_rwlock_clockrdlock", "pthread_rwlock_clockwrlock",
	"pthread_rwlock_rdlock_full", "pthread_rwlock_wrlock_full",
	"pthread_rwlock_rdlock_full64", "pthread_rwlock_wrlock_full64",
	"gthread_mutex_lock", "gthread_recursive_mutex_lock", "gthrw_pthread_mutex_lock",
	"rtld_lock_lock_recursive", "rtld_lock_default_lock_recursive",
	"IO_flockfile", "flockfile",
)

// pyLockFuncs acquire a Python lock: a threading.Lock, or the lock an
// Event or a Condition parks on.
var pyLockFuncs = set(
	"PyThread_acquire_lock_timed", "PyThread_acquire_lock", "acquire_timed",
	"lock_PyThread_acquire_lock", "rlock_acquire", "PyMutex_LockTimed",
	"PyMutex_LockSlow", "PyMutex_Lock", "PySemaphore_Wait", "PyParkingLot_Park",
)

// condFuncs sleep until somebody wakes them: condition variables and
// semaphores, which record no owner.
var condFuncs = set(
	"pthread_cond_wait", "pthread_cond_timedwait", "pthread_cond_clockwait",
	"pthread_cond_wait_common", "pthread_cond_timedwait64",
	"sem_wait", "sem_timedwait", "sem_clockwait", "new_sem_wait_slow", "new_sem_wait_slow64",
	"do_futex_wait", "std::thread::park",
)

var joinFuncs = set(
	"pthread_join", "pthread_timedjoin_np", "pthread_clockjoin_np", "pthread_clockjoin_ex",
	"pthread_join_common", "std::thread::join",
)

func isLockFrame(k string) bool {
	if lockFuncs[k] || strings.HasPrefix(k, "L_lock_") {
		return true
	}
	l := strings.ToLower(k)
	switch {
	case strings.Contains(l, "lock_guard<"), strings.Contains(l, "scoped_lock<"):
		return true
	case strings.Contains(l, "unique_lock<") && (strings.HasSuffix(l, "::lock") || strings.HasSuffix(l, "::unique_lock")):
		return true
	case strings.Contains(l, "mutex") && (strings.HasSuffix(l, "::lock") || strings.HasSuffix(l, "::lock_shared") ||
		strings.Contains(l, "lock_contended") || strings.Contains(l, "lock_slow")):
		// std::mutex::lock, Rust's futex Mutex::lock_contended,
		// parking_lot's RawMutex::lock_slow
		return true
	}
	return false
}

func isCondFrame(k string) bool {
	if condFuncs[k] {
		return true
	}
	l := strings.ToLower(k)
	return strings.Contains(l, "condition_variable") && strings.Contains(l, "wait") ||
		strings.Contains(l, "condvar") && strings.Contains(l, "wait") ||
		strings.Contains(l, "semaphore") && strings.Contains(l, "acquire") ||
		strings.Contains(l, "atomic_wait") ||
		strings.HasPrefix(l, "parking_lot_core::parking_lot::park")
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
		k := funcKey(f)
		var c waitClass
		switch {
		case f.Signal:
			return class, i, futex
		case f.Func == "" && class == notWaiting && !futex:
			continue // unsymbolised libc under the wait
		case futexFuncs[k]:
			futex = true
			continue
		case isLockFrame(k):
			c = waitLock
		case pyLockFuncs[k]:
			c = waitPyLock
		case isCondFrame(k):
			c = waitCond
		case joinFuncs[k]:
			c = waitJoin
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
	w := t.Wait
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
		return waitCond, caller
	}
	return notWaiting, caller
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
	for _, f := range stack {
		if isLoaderFrame(f) {
			return true
		}
	}
	return false
}

// signalFrame returns the index of the innermost signal frame, -1 when
// the stack has none: frames before it run in the handler, frames after
// it were interrupted.
func signalFrame(stack []stacks.Frame) int {
	for i, f := range stack {
		if f.Signal || funcKey(f) == "restore_rt" {
			return i
		}
	}
	return -1
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
