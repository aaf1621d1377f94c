package heuristics

import (
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
	"github.com/hangdoc/hangdoc/stacks"
)

// Re-locks seen in arguments: a thread waits for the lock an outer frame
// of its own stack was called with (self-deadlock's stack-only evidence).
// The arguments are read by args.go.

// argRelock is a thread whose own outer frames were called with the lock
// it now waits for, by a function that takes it: a lock function (the
// outer acquisition, returned on another path of the stack) or the very
// function that asks for the lock again (a recursion that re-locks). A
// call tree drawn by hand may show the outer acquisition itself, a lock
// call that had returned (stacks.Thread.Returned) while its caller is
// still on the stack.
type argRelock struct {
	ref      ThreadRef
	lock     argLock
	inner    int                  // the frame whose argument names the waited lock
	asker    int                  // the frame that asked for the lock
	outer    int                  // the outer frame called with the same lock, or the one that made the returned call
	returned *stacks.ReturnedCall // the returned call that took the lock, when the tree shows one
	// expr is the lock as the paste wrote it in both calls
	// ("&lock_trace"), when the paste gives expressions, not addresses.
	expr string
}

// findArgRelocks finds the threads that wait for a lock an outer frame
// of theirs was called with, outside signal handlers (a handler that
// re-takes a lock is signal-handler-reentry's).
func findArgRelocks(a *analysis) []argRelock { return result(a, "stack relocks", detectArgRelocks) }

func detectArgRelocks(a *analysis) []argRelock {
	var out []argRelock
	type found struct {
		r  argRelock
		ok bool
	}
	memo := factMemo[found]{}
	for p, t := range a.liveThreads() {
		f := perStack(memo, t, func() found {
			if signalFrame(t.Stack) >= 0 {
				return found{}
			}
			if r, ok := a.addrRelock(t); ok {
				return found{r, true}
			}
			r, ok := exprRelock(t)
			return found{r, ok}
		})
		if f.ok {
			f.r.ref = ThreadRef{p, t}
			out = append(out, f.r)
		}
	}
	return out
}

// addrRelock: the address the thread's lock wait names is an argument of
// an outer frame that takes it, or of a lock call that had returned.
func (a *analysis) addrRelock(t *stacks.Thread) (argRelock, bool) {
	l, inner, ok := waitArgLock(t)
	if !ok {
		return argRelock{}, false
	}
	_, caller := a.wait(t)
	if caller >= len(t.Stack) {
		return argRelock{}, false
	}
	asker := funcKey(t.Stack[caller])
	ls, at := argAddrsIn(t.Stack, caller+1, len(t.Stack))
	for j, o := range ls {
		f := t.Stack[at[j]]
		if o.Addr != l.Addr || !(isLockFrame(f) || funcKey(f) == asker || takesLocks(f)) {
			continue
		}
		if o.Symbol != "" && l.Symbol == "" {
			l.Symbol = o.Symbol
		}
		return argRelock{lock: l, inner: inner, asker: caller, outer: at[j]}, true
	}
	if rc := heldReturnedLock(t, caller, func(a stacks.Arg) bool { o, ok := argAddr(a); return ok && o.Addr == l.Addr }); rc != nil {
		return argRelock{lock: l, inner: inner, asker: caller, outer: rc.Caller, returned: rc}, true
	}
	return argRelock{}, false
}

// exprRelock: a paste that writes calls as source ("lock(&lock_trace)")
// shows the thread's innermost call taking a lock named by the same
// expression as an outer frame that takes locks, or as a lock call that
// had returned while its caller is still on the stack. Only a plain
// name or a member of one ("&g_lock", "&state.mu"): through a pointer
// ("&node->lock") the same text may be another object.
func exprRelock(t *stacks.Thread) (argRelock, bool) {
	if len(t.Stack) == 0 || !(isLockFrame(t.Stack[0]) || takesLocks(t.Stack[0])) {
		return argRelock{}, false
	}
	key := lockExprOf(t.Stack[0])
	if key == "" {
		return argRelock{}, false
	}
	same := func(a stacks.Arg) bool { return a.Name == "" && lockExpr(a) == key }
	r := argRelock{lock: argLock{Symbol: key}, asker: 0, expr: key}
	for i := 1; i < len(t.Stack); i++ {
		f := t.Stack[i]
		if (isLockFrame(f) || takesLocks(f)) && slices.ContainsFunc(f.Args, same) {
			r.outer = i
			return r, true
		}
	}
	if rc := heldReturnedLock(t, 0, same); rc != nil {
		r.outer, r.returned = rc.Caller, rc
		return r, true
	}
	return argRelock{}, false
}

// heldReturnedLock is the last lock call of the thread's returned calls,
// made by the asker or a frame outer to it, with an argument that names
// the lock, and released by no returned call after it.
func heldReturnedLock(t *stacks.Thread, asker int, names func(stacks.Arg) bool) *stacks.ReturnedCall {
	var held *stacks.ReturnedCall
	returned := t.Returned()
	for i := range returned {
		rc := &returned[i]
		if rc.Caller < asker || !slices.ContainsFunc(rc.Args, names) {
			continue
		}
		switch {
		case isLockFrame(rc.Frame) || takesLocks(rc.Frame):
			held = rc
		case releasesLock(rc.Frame):
			held = nil
		}
	}
	return held
}

// lockExprOf is the lock a source call's unnamed argument names.
func lockExprOf(f stacks.Frame) string {
	for _, a := range f.Args {
		if k := lockExpr(a); a.Name == "" && k != "" {
			return k
		}
	}
	return ""
}

// lockExpr is an argument written as a plain name or a member of one,
// its address taken or not ("&lock_trace", "g.mu"), without the "&".
func lockExpr(a stacks.Arg) string {
	if a.Addr != 0 || !lockExprRE.MatchString(a.Value) {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(a.Value, "&"))
}

var lockExprRE = lazyre.New(`^&?\s*[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*$`)

// releasesLock: a function whose name says it releases a lock.
func releasesLock(f stacks.Frame) bool {
	l := strings.ToLower(funcKey(f))
	return strings.Contains(l, "unlock") || strings.Contains(l, "release")
}

// takesLocks: a function whose name says it takes a lock (LOCK_COMMAND,
// lock_and_call, with_lock_held, Foo::lock, MutexLock, acquire_…,
// mutex_enter), not one that releases it, and not "block" or "clock".
func takesLocks(f stacks.Frame) bool {
	return !releasesLock(f) && lockWordRE.MatchString(funcKey(f))
}

var lockWordRE = lazyre.New(`(?i:(^|[_:.])(lock|acquire|mutex_enter))|[a-z](Lock|Acquire)([A-Z_(]|$)`)
