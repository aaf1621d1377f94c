package heuristics

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

// A writer-preferring rwlock (Rust std's futex RwLock, parking_lot's
// RwLock) makes a new reader wait while a writer waits. A thread waiting
// to read beside a thread waiting to write, with no other lock waiter and
// nothing running that could hold the lock, most likely holds a read
// lock already: a recursive read, the writer waits for it and it waits
// behind the writer (Go's sync.RWMutex form: go_self_deadlock.go). The
// vocabulary says which functions wait on which side (a row's "rw").

// rwSide says whether t waits to read (1) or to write (2) a
// writer-preferring rwlock, 0 for any other wait.
func rwSide(t *stacks.Thread, caller int) int {
	for _, f := range t.Stack[:min(caller+1, len(t.Stack))] {
		switch nativeRow(f).RWSide() {
		case "read":
			return 1
		case "write":
			return 2
		}
	}
	return 0
}

func matchNativeRecursiveRead(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for p := range a.liveProcs() {
		var readers, writers []*stacks.Thread
		other := false
		fs := a.factsIn(p)
		for i, t := range p.Threads {
			if samplesWith(t, fs[i]).kind == wkRunning {
				other = true
				break
			}
			class, caller := fs[i].class, fs[i].caller
			if !class.isLock() {
				continue
			}
			switch rwSide(t, caller) {
			case 1:
				readers = append(readers, t)
			case 2:
				writers = append(writers, t)
			default:
				other = true
			}
		}
		if other || len(readers) == 0 || len(writers) == 0 {
			continue
		}
		r, w, ok := sameRWLock(readers, writers)
		if !ok {
			continue // the frames name the locks, and no reader waits on a writer's
		}
		d := Diagnosis{
			Deadlock:   true,
			Confidence: Low,
			Summary: fmt.Sprintf("most likely a recursive read lock: %s waits to read-lock an rwlock while %s waits to write-lock it, and no other thread could hold it",
				threadLabel(r), threadLabel(w)),
			Chain: []string{
				fmt.Sprintf("%s waits to read-lock the rwlock", threadLabel(r)),
				fmt.Sprintf("%s waits to write-lock it: the lock prefers writers, so new readers wait behind it", threadLabel(w)),
				"no other thread waits for a lock or runs: the read lock the writer waits for is most likely the reader's own, taken further up its stack",
			},
			Evidence: []string{stackLine(r), stackLine(w)},
			Refs:     []string{"https://doc.rust-lang.org/std/sync/struct.RwLock.html#method.read"},
		}
		d.nameIn(p, r.Tid, w.Tid)
		ds = append(ds, d)
	}
	return ds
}

// sameRWLock picks a reader and a writer that wait on one rwlock: the
// first pair whose frames name the same lock, or, when the frames of the
// first reader or writer name none, those two; false when every lock is
// named and no reader waits on a writer's.
func sameRWLock(readers, writers []*stacks.Thread) (*stacks.Thread, *stacks.Thread, bool) {
	lockOf := func(t *stacks.Thread) (uint64, bool) {
		l, _, ok := waitArgLock(t)
		return l.Addr, ok
	}
	r0, rok := lockOf(readers[0])
	w0, wok := lockOf(writers[0])
	if !rok || !wok {
		return readers[0], writers[0], true
	}
	if r0 == w0 {
		return readers[0], writers[0], true
	}
	named := map[uint64]*stacks.Thread{} // the first writer waiting on each lock its frames name
	for _, w := range writers {
		if wa, ok := lockOf(w); ok && named[wa] == nil {
			named[wa] = w
		}
	}
	for _, r := range readers {
		if ra, ok := lockOf(r); ok && named[ra] != nil {
			return r, named[ra], true
		}
	}
	return nil, nil, false
}
