package heuristics

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// A writer-preferring rwlock (Rust std's futex RwLock, parking_lot's
// RwLock) makes a new reader wait while a writer waits. A thread waiting
// to read beside a thread waiting to write, with no other lock waiter and
// nothing running that could hold the lock, most likely holds a read
// lock already: a recursive read, the writer waits for it and it waits
// behind the writer (Go's sync.RWMutex form: go_self_deadlock.go).
var (
	rwReadWaits  = []string{"RwLock::read_contended", "RawRwLock::lock_shared_slow", "RawRwLock::lock_shared_recursive"}
	rwWriteWaits = []string{"RwLock::write_contended", "RawRwLock::lock_exclusive_slow"}
)

// rwSide says whether t waits to read (1) or to write (2) a
// writer-preferring rwlock, 0 for any other wait.
func rwSide(t *stacks.Thread, caller int) int {
	for i, f := range t.Stack {
		if i > caller {
			break
		}
		k := stacks.FuncKey(f.Func)
		for _, s := range rwReadWaits {
			if strings.Contains(k, s) {
				return 1
			}
		}
		for _, s := range rwWriteWaits {
			if strings.Contains(k, s) {
				return 2
			}
		}
	}
	return 0
}

func matchNativeRecursiveRead(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, p := range a.Snap.Processes {
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
		r, w := readers[0], writers[0]
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
