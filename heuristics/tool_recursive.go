package heuristics

// go-deadlock's "Recursive locking" report: a goroutine locks a lock it
// holds, by go-deadlock's count (stacks/godeadlock.go reads it as two
// threads, the current place and the previous one). The count is keyed
// on goroutine ids, which the runtime reuses (since Go 1.23 at once), so
// a finished goroutine's lock can look like the current goroutine's: the
// claim is evidence of a self-deadlock only when the two stacks show one
// acquire nested in the other, the current stack passing through the
// frame that took the lock first. The same call site twice is what a
// reused id gives, and no claim is made of it.

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
	"github.com/hangdoc/hangdoc/stacks"
)

var (
	recursiveClaimRE = lazyre.New(`^POTENTIAL DEADLOCK: Recursive locking`)
	recursiveCurRE   = lazyre.New(`: current goroutine (\d+) lock (\S+)$`)
)

// recursiveLock is a report whose current acquire is nested in the
// previous one: outer is the frame of the previous stack that took the
// lock, at the index it has in the current stack.
type recursiveLock struct {
	cur, prev ThreadRef
	outer     int
}

// findRecursiveLocks returns the Recursive locking reports whose current
// stack runs inside the frame that took the lock before.
func findRecursiveLocks(a *analysis) []recursiveLock {
	var out []recursiveLock
	for _, p := range a.Snap.Processes {
		var cur *stacks.Thread
		for _, t := range p.Threads {
			if !recursiveClaimRE.MatchString(t.Name) {
				cur = nil
				continue
			}
			if recursiveCurRE.MatchString(t.Name) {
				cur = t
				continue
			}
			if cur == nil {
				continue
			}
			if i, ok := nestedAcquire(cur.Stack, t.Stack); ok {
				out = append(out, recursiveLock{cur: ThreadRef{p, cur}, prev: ThreadRef{p, t}, outer: i})
			}
			cur = nil
		}
	}
	return out
}

// nestedAcquire says whether the acquire of stack cur runs inside the
// frame that made the acquire of stack prev: below the lock's own frames,
// prev's callers are cur's outermost frames, frame for frame, and prev's
// acquiring function is on cur's stack just inside them, at another line
// or with more calls inside it. It returns that frame's index in cur.
func nestedAcquire(cur, prev []stacks.Frame) (int, bool) {
	c, p := acquireSite(cur), acquireSite(prev)
	if c < 0 || p < 0 {
		return 0, false
	}
	nc, np := len(cur)-c, len(prev)-p // program frames of each
	if nc < np {
		return 0, false
	}
	for k := 1; k < np; k++ {
		if !sameSite(cur[len(cur)-k], prev[len(prev)-k]) {
			return 0, false
		}
	}
	i := len(cur) - np // cur's frame in prev's acquiring function
	if cur[i].Func != prev[p].Func || i == c && cur[i].Line == prev[p].Line {
		return 0, false
	}
	return i, true
}

// acquireSite is the index of the innermost frame below a report's
// lock frames (go-deadlock's own, sync's): the program's call that
// locked. -1 when the stack has none.
func acquireSite(st []stacks.Frame) int {
	for i, f := range st {
		k := f.Func
		if k == "" || strings.Contains(k, "go-deadlock.") || strings.HasPrefix(k, "sync.") || nativeRow(f) != nil {
			continue
		}
		return i
	}
	return -1
}

func sameSite(x, y stacks.Frame) bool {
	return x.Func == y.Func && x.File == y.File && x.Line == y.Line
}

// recursiveClaimDiagnoses says the self-deadlocks go-deadlock's nested
// Recursive locking reports show.
func recursiveClaimDiagnoses(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, r := range findRecursiveLocks(a) {
		st := r.cur.Thread.Stack
		inner, outer := frameName(st[acquireSite(st)]), frameName(st[r.outer])
		gid, lock := "", ""
		if m := recursiveCurRE.FindStringSubmatch(r.cur.Thread.Name); m != nil {
			gid, lock = m[1], m[2]
		}
		d := Diagnosis{
			Deadlock:   true,
			Confidence: Low,
			Refs:       selfDeadlockRefs,
			Summary: fmt.Sprintf("go-deadlock reports recursive locking: goroutine %s locks %s in `%s`, inside `%s`, which took the same lock and still holds it",
				gid, lock, inner, outer),
			Chain: []string{
				fmt.Sprintf("go-deadlock: the previous place where goroutine %s grabbed lock %s is `%s`", gid, lock, frameName(r.prev.Thread.Stack[acquireSite(r.prev.Thread.Stack)])),
				fmt.Sprintf("the current lock runs inside that frame (`%s`, called from the same callers): the acquire is nested in the first", outer),
				"a Go sync.Mutex (and an RWMutex's Lock) does not count re-locks: the goroutine waits for itself",
			},
			Evidence: []string{stackLine(r.cur.Thread), stackLine(r.prev.Thread),
				"a detector's report, not a goroutine dump: go-deadlock keys held locks on goroutine ids, which the runtime reuses; the nested stacks, not the claim, are the evidence"},
		}
		d.name(r.cur, r.prev)
		ds = append(ds, d)
	}
	return ds
}
