package heuristics

import (
	"regexp"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// Re-locks seen in arguments: a thread waits for the lock an outer frame
// of its own stack was called with (self-deadlock's stack-only evidence).
// The arguments are read by args.go.

// argRelock is a thread whose own outer frames were called with the lock
// it now waits for, by a function that takes it: a lock function (the
// outer acquisition, returned on another path of the stack) or the very
// function that asks for the lock again (a recursion that re-locks).
type argRelock struct {
	ref   ThreadRef
	lock  argLock
	inner int // the frame whose argument names the waited lock
	asker int // the frame that asked for the lock
	outer int // the outer frame called with the same address
}

// findArgRelocks finds the threads that wait for a lock an outer frame
// of theirs was called with, outside signal handlers (a handler that
// re-takes a lock is signal-handler-reentry's).
func findArgRelocks(a *analysis) []argRelock { return result(a, "stack relocks", detectArgRelocks) }

func detectArgRelocks(a *analysis) []argRelock {
	var out []argRelock
	for p, t := range a.liveThreads() {
		if signalFrame(t.Stack) >= 0 {
			continue
		}
		l, inner, ok := waitArgLock(t)
		if !ok {
			continue
		}
		_, caller := a.wait(t)
		if caller >= len(t.Stack) {
			continue
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
			out = append(out, argRelock{ref: ThreadRef{p, t}, lock: l, inner: inner, asker: caller, outer: at[j]})
			break
		}
	}
	return out
}

// takesLocks: a function whose name says it takes a lock (LOCK_COMMAND,
// lock_and_call, with_lock_held, Foo::lock, MutexLock, acquire_…,
// mutex_enter), not one that releases it, and not "block" or "clock".
func takesLocks(f stacks.Frame) bool {
	k := funcKey(f)
	l := strings.ToLower(k)
	if strings.Contains(l, "unlock") || strings.Contains(l, "release") {
		return false
	}
	return lockWordRE.MatchString(k)
}

var lockWordRE = regexp.MustCompile(`(?i:(^|[_:.])(lock|acquire|mutex_enter))|[a-z](Lock|Acquire)([A-Z_(]|$)`)
