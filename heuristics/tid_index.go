package heuristics

import (
	"cmp"
	"slices"

	"github.com/hangdoc/hangdoc/stacks"
)

// tidIndex finds a snapshot's threads by tid: every ThreadRef once,
// ordered by tid (snapshot order among equal tids), searched by
// bisection. A map of every tid cost a dump of 146,000 goroutines 10 MB
// more than the refs themselves, held for the whole analysis.
type tidIndex []ThreadRef

func newTidIndex(snap *stacks.Snapshot, n int) tidIndex {
	refs := make(tidIndex, 0, n)
	sorted := true
	descending := true // gdb lists threads from the highest number down
	for _, p := range snap.Processes {
		for _, t := range p.Threads {
			if len(refs) > 0 {
				last := refs[len(refs)-1].Thread.Tid
				sorted = sorted && t.Tid >= last
				descending = descending && t.Tid < last
			}
			refs = append(refs, ThreadRef{Proc: p, Thread: t})
		}
	}
	switch {
	case sorted:
	case descending:
		slices.Reverse(refs) // no two tids equal: the stable order reversed
	default:
		slices.SortStableFunc(refs, func(x, y ThreadRef) int { return cmp.Compare(x.Thread.Tid, y.Thread.Tid) })
	}
	return refs
}

// of returns the threads with tid, in snapshot order; nobody appends to
// it (its capacity is clipped).
func (ix tidIndex) of(tid int) []ThreadRef {
	lo, _ := slices.BinarySearchFunc(ix, tid, func(r ThreadRef, tid int) int { return cmp.Compare(r.Thread.Tid, tid) })
	hi := lo
	for hi < len(ix) && ix[hi].Thread.Tid == tid {
		hi++
	}
	if hi == lo {
		return nil
	}
	return ix[lo:hi:hi]
}
