package heuristics

// orphaned-lock for goroutines: goroutines wait to lock a sync.Mutex (or
// write-lock a sync.RWMutex) that no goroutine of the dump may hold. Go
// mutexes record no owner, but a dump prints the pointers each frame
// received: the waiters' own frames show the mutex (or the struct it is a
// field of), so a holder would show it too, unless it has returned. A
// locker that returned without unlocking (an early return or a panic
// recovered above a Lock with no deferred Unlock) leaves exactly this.
// Registered under the native signature's id (orphaned_lock.go calls
// matchGoLeftLocked).

import (
	"fmt"
	"slices"
	"time"

	"github.com/hangdoc/hangdoc/stacks"
)

// goLeftLock is a mutex that goroutines wait for and none holds.
type goLeftLock struct {
	obj     uint64
	waiters []*gor
	// seen is a waiter frame that received the mutex's pointer: the
	// dump shows such pointers, so a holder's frames would have it too.
	seen holdEvidence
	by   *gor
	// calm: every other goroutine is parked for good (no network wait,
	// timer or system call that could come back and unlock it).
	calm bool
	// hidden: the waiters' frames print no pointer to it (optimised code
	// prints "0x0?"): a holder's frames would hide it as well, so the
	// verdict rests on there being no goroutine that could hold it while
	// it waits (a channel, a WaitGroup, a Cond).
	hidden bool
}

func goLeftLocked(gp *goProc, snap *stacks.Snapshot) []goLeftLock {
	if gp.p.Message == "" && gp.byTid(1) == nil {
		return nil // not shown whole (no goroutine 1, no runtime message): the holder may be one the paste left out
	}
	byObj := map[uint64][]*gor{}
	var objs []uint64
	calm, holdWaits := true, false
	readers := map[uint64]bool{} // RWMutexes a reader waits for: the read lock may be held by one of them
	for _, g := range gp.user() {
		switch g.kind {
		case goRunning:
			return nil // it may hold the lock and let it go
		case stacks.GoWaitMutex, stacks.GoWaitWLock:
			if g.obj == 0 {
				return nil // a lock wait whose mutex is not known: which one it is, is not either
			}
			if byObj[g.obj] == nil {
				objs = append(objs, g.obj)
			}
			byObj[g.obj] = append(byObj[g.obj], g)
		case stacks.GoWaitRLock:
			holdWaits = true // a reader may hold one lock and want another
			readers[g.obj] = true
		case stacks.GoWaitIO, stacks.GoWaitSleep, "":
			calm = false // a handler or a timer may yet run and unlock it (any goroutine may)
		case stacks.GoWaitSend, stacks.GoWaitRecv, stacks.GoWaitSelect, stacks.GoWaitCond, stacks.GoWaitWaitGroup:
			calm, holdWaits = false, true // it may hold the mutex while it waits
		}
	}
	if len(objs) == 0 {
		return nil
	}
	set := map[uint64]bool{}
	for _, o := range objs {
		set[o] = true
	}
	for _, x := range goSelfDeadlocks(gp) {
		delete(set, x.g.obj) // a waiter's own frames re-enter it: self-deadlock's
	}
	holders := goHolders(gp, set)
	var out []goLeftLock
	for _, obj := range objs {
		if !set[obj] || readers[obj] || len(holders[obj]) > 0 {
			continue // another goroutine may hold it: the lock signatures say who
		}
		o := goLeftLock{obj: obj, waiters: byObj[obj], calm: calm}
		found, self := false, false
		for _, w := range o.waiters {
			if _, held := mayHold(w, obj, w.wait.Caller+1); held {
				self = true // below its Lock, a frame of its own may hold it: self-deadlock's
				break
			}
			if ev, ok := mayHold(w, obj, w.wait.Caller); ok && !found {
				o.seen, o.by, found = ev, w, true
			}
		}
		if self {
			continue
		}
		if slices.ContainsFunc(o.waiters, goStackCut) {
			continue // its own frames below the cut may hold it
		}
		if !found {
			// The dump hides the pointers: a holder may be any blocked
			// goroutine. With one mutex waited on and no goroutine
			// blocked where it could hold one, none can be; one on the
			// network may (a lock held across a call), unless the lock
			// has been waited for long (longLockWait).
			if holdWaits || len(objs) > 1 || !calm && !slices.ContainsFunc(o.waiters, func(w *gor) bool { return longLockWait(w, snap) }) {
				continue
			}
			o.hidden = true
		}
		out = append(out, o)
	}
	return out
}

func matchGoLeftLocked(a *analysis) []Diagnosis {
	return perGoProc(a, func(gp *goProc) []goLeftLock { return goLeftLocked(gp, a.Snap) }, goLeftLockedDiagnosis)
}

// longLockWait: the goroutine has waited for its lock a minute or more
// (the dump says so), or in every sample of a live read that spans a
// second or more: a Go lock is held for microseconds in a healthy
// program, not across samples.
func longLockWait(g *gor, snap *stacks.Snapshot) bool {
	if g.rt().WaitMinutes > 0 {
		return true
	}
	if len(g.ref.Thread.Samples()) < 2 || time.Duration(snap.Interval)*time.Duration(len(g.ref.Thread.Samples())-1) < time.Second {
		return false
	}
	for _, s := range g.ref.Thread.Samples() {
		if k := stacks.GoWaitOf(s.Stack).Kind; k != stacks.GoWaitMutex && k != stacks.GoWaitWLock {
			return false
		}
	}
	return true
}

func goLeftLockedDiagnosis(gp *goProc, o goLeftLock) Diagnosis {
	lock := "sync.Mutex"
	if o.waiters[0].kind == stacks.GoWaitWLock {
		lock = "sync.RWMutex"
	}
	d := Diagnosis{ID: "orphaned-lock", Deadlock: true, Confidence: Medium,
		Refs: []string{"https://pkg.go.dev/sync#Mutex", "https://go.dev/ref/spec#Defer_statements"}}
	if !o.calm || o.hidden {
		d.Confidence = Low
	}
	d.nameGoroutines(o.waiters...)
	who := o.waiters[0].label() + " waits"
	if n := len(o.waiters); n > 1 {
		who = fmt.Sprintf("%d goroutines (%s, …) wait", n, o.waiters[0].label())
	}
	d.Summary = fmt.Sprintf("most likely a %s left locked: %s to lock %s in %s, and no goroutine of the dump holds it: "+
		"its last locker returned without unlocking", lock, who, objText(lock, o.obj), o.waiters[0].where())
	for i, w := range o.waiters {
		if i == 4 {
			d.Chain = append(d.Chain, fmt.Sprintf("and %d more wait for it", len(o.waiters)-4))
			break
		}
		d.Chain = append(d.Chain, w.label()+" "+w.waitText())
	}
	if o.hidden {
		d.Chain = append(d.Chain,
			"no goroutine runs, none waits where it could hold a mutex meanwhile (a channel, a select, a WaitGroup, a Cond), and no other mutex is waited on: no goroutine of the dump can be holding it",
			"Go mutexes record no owner, and these frames print no pointers (optimised code), so that no frame holds it is inferred from where each goroutine waits")
	} else {
		d.Chain = append(d.Chain,
			fmt.Sprintf("no other goroutine has a frame that received a pointer to it, though the dump prints such pointers (%s)", o.seen.text(o.by, o.obj)),
			"Go mutexes record no owner: a holder that has not returned would show the pointer; one that returned without Unlock shows nothing")
	}
	if !o.calm {
		d.Evidence = append(d.Evidence, "some goroutines wait on the network, a timer or a select: any goroutine may unlock a Go mutex, so one of those could yet do it, which is less likely than a missing Unlock")
	}
	for _, w := range o.waiters[:min(len(o.waiters), 4)] {
		d.Evidence = append(d.Evidence, w.stackLine())
	}
	d.Fix = fmt.Sprintf("Find the path that locks this %s and returns (or panics into a recover) without unlocking: "+
		"put `defer mu.Unlock()` right after every Lock, or unlock before each early return.", lock)
	if slices.ContainsFunc(o.waiters, func(w *gor) bool { return w.kind == stacks.GoWaitWLock }) {
		d.Fix += " For an RWMutex, the same holds for RLock without RUnlock: a read lock left held blocks every writer."
	}
	return d
}

// goStackCut: the goroutine's stack does not reach its start (the paste
// or the runtime's 100-frame limit cut it): no "created by", no
// runtime.goexit or runtime.main at the bottom.
func goStackCut(g *gor) bool {
	if g.rt().CreatedBy.Func != "" {
		return false
	}
	st := g.ref.Thread.Stack
	if len(st) == 0 {
		return true
	}
	last := st[len(st)-1].Func
	return last != "runtime.goexit" && last != "runtime.main" && last != "main.main"
}
