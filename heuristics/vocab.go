package heuristics

// The heuristics' view of the frame vocabulary (stacks/vocabulary.json):
// every question "is this frame a lock, a condvar, a futex, a system
// call of this kind" is answered by the table's row for the frame.

import (
	"github.com/hangdoc/hangdoc/stacks"
)

// nativeRow is the vocabulary row of a frame of native code. A managed
// runtime's rows (Go's sync and channels) are left out: a goroutine's
// status says what it waits on better than its frames, and go_facts
// reads that.
func nativeRow(f stacks.Frame) *stacks.VocabRow {
	if stacks.IsPythonFrame(f) {
		return nil // a Python function named wait or lock is not libc's
	}
	r := stacks.FrameRow(f)
	if r == nil || r.Runtime != "" {
		return nil
	}
	return r
}

func frameRole(f stacks.Frame) stacks.Role {
	if r := nativeRow(f); r != nil {
		return r.Role
	}
	return ""
}

// isFutexFrame: the low-level wait or system call plumbing under a
// blocking wait, which says that a thread is blocked, not on what.
func isFutexFrame(f stacks.Frame) bool {
	r := frameRole(f)
	return r == stacks.RolePark || r == stacks.RoleSyscall
}

// isLockFrame: the frame takes a lock some thread holds (a mutex, rwlock,
// spin lock, low-level lock, or a once-initialiser another thread runs).
func isLockFrame(f stacks.Frame) bool {
	r := nativeRow(f)
	return r != nil && r.Role.IsLock() && !r.AnyReleaser
}

// isPyLockFrame: the frame takes a lock any thread may release (Python's
// Lock, which Event and Condition park on).
func isPyLockFrame(f stacks.Frame) bool {
	r := nativeRow(f)
	return r != nil && r.Role.IsLock() && r.AnyReleaser
}

// isCondFrame: a condition variable, semaphore or barrier wait, which
// records no owner.
func isCondFrame(f stacks.Frame) bool { return frameRole(f) == stacks.RoleCond }

// isGILFrame: the frame takes CPython's GIL back.
func isGILFrame(f stacks.Frame) bool { return frameRole(f) == stacks.RoleGIL }

// isWaitMachinery: a frame of a wait itself (lock, condvar, join, once,
// futex or syscall plumbing), not of the code that asked to wait.
func isWaitMachinery(f stacks.Frame) bool {
	switch frameRole(f) {
	case stacks.RoleAcquire, stacks.RoleSpin, stacks.RoleOnce, stacks.RoleCond, stacks.RoleJoin, stacks.RolePark, stacks.RoleSyscall:
		return true
	}
	return false
}

// callKindOf says what kind of wait a system call (or the libc wrapper
// named for it) is.
func callKindOf(name string) (waitKind, bool) {
	if name == "futex" || name == "futex_waitv" {
		return wkFutex, true
	}
	r := stacks.VocabularyInForce().Call(name)
	if l := stacks.VocabularyInForce().Lookup(name); l != nil && l.Role == stacks.RoleChild {
		r = l // glibc's __libc_wait is wait(2), not musl's internal __wait
	}
	if r == nil {
		return wkUnknown, false
	}
	switch r.Role {
	case stacks.RoleIO:
		return wkIO, true
	case stacks.RoleSleep:
		return wkSleep, true
	case stacks.RoleChild:
		return wkChild, true
	case stacks.RoleSigwait:
		return wkSignal, true
	case stacks.RoleYield:
		return wkRunning, true
	}
	return wkUnknown, false
}

// heldFamily names the lock a frame holds while it runs: a lock-holding
// library's function ("malloc", "stdio"), or a lock function of such a
// library (flockfile is stdio's); "" for others.
func heldFamily(f stacks.Frame) string {
	r := nativeRow(f)
	if r != nil && (r.Role == stacks.RoleHolds || r.Role.IsLock() && stacks.VocabularyInForce().Holding(r.Family)) {
		return r.Family
	}
	return ""
}
