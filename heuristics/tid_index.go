package heuristics

import (
	"cmp"
	"iter"
	"slices"

	"github.com/hangdoc/hangdoc/stacks"
)

// tidIndex finds a snapshot's threads by tid, searched by bisection.
// A snapshot of one process whose threads come in tid order, up or down
// (gdb lists them from the highest number down), is searched in the
// process's own list; any other keeps every ThreadRef once, ordered by
// tid (snapshot order among equal tids). A map of every tid cost a dump
// of 146,000 goroutines 10 MB more than the refs themselves, held for
// the whole analysis; the refs, 0.7 MB of a dump of 47,000.
type tidIndex struct {
	refs []ThreadRef
	// or one process, its threads in ascending order or, when desc, in
	// strictly descending order
	proc    *stacks.Process
	threads []*stacks.Thread
	desc    bool
}

func newTidIndex(snap *stacks.Snapshot, n int) tidIndex {
	sorted, descending := true, true
	for _, p := range snap.Processes {
		for i := 1; i < len(p.Threads) && (sorted || descending); i++ {
			last, tid := p.Threads[i-1].Tid, p.Threads[i].Tid
			sorted = sorted && tid >= last
			descending = descending && tid < last
		}
	}
	if len(snap.Processes) == 1 && (sorted || descending) {
		p := snap.Processes[0]
		return tidIndex{proc: p, threads: p.Threads, desc: !sorted}
	}
	refs := make([]ThreadRef, 0, n)
	for _, p := range snap.Processes {
		for _, t := range p.Threads {
			refs = append(refs, ThreadRef{Proc: p, Thread: t})
		}
	}
	slices.SortStableFunc(refs, func(x, y ThreadRef) int { return cmp.Compare(x.Thread.Tid, y.Thread.Tid) })
	return tidIndex{refs: refs}
}

// of yields the threads with tid, in snapshot order.
func (ix tidIndex) of(tid int) iter.Seq[ThreadRef] {
	return func(yield func(ThreadRef) bool) {
		if ix.proc == nil {
			lo, _ := slices.BinarySearchFunc(ix.refs, tid, func(r ThreadRef, tid int) int { return cmp.Compare(r.Thread.Tid, tid) })
			for i := lo; i < len(ix.refs) && ix.refs[i].Thread.Tid == tid; i++ {
				if !yield(ix.refs[i]) {
					return
				}
			}
			return
		}
		order := func(t *stacks.Thread, tid int) int { return cmp.Compare(t.Tid, tid) }
		if ix.desc {
			order = func(t *stacks.Thread, tid int) int { return cmp.Compare(tid, t.Tid) }
		}
		lo, _ := slices.BinarySearchFunc(ix.threads, tid, order)
		for i := lo; i < len(ix.threads) && ix.threads[i].Tid == tid; i++ {
			if !yield(ThreadRef{Proc: ix.proc, Thread: ix.threads[i]}) {
				return
			}
		}
	}
}

// first is the first thread with tid, in snapshot order.
func (ix tidIndex) first(tid int) (ThreadRef, bool) {
	for r := range ix.of(tid) {
		return r, true
	}
	return ThreadRef{}, false
}
