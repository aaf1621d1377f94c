package stacks

import (
	"sort"
	"strings"
)

// Group is a set of threads of one process whose stacks are the same, as
// panicparse buckets goroutines: forty workers parked at one place are one
// entry in a report, not forty.
type Group = GroupOf[*Thread]

// GroupOf is a group of what GroupBy grouped: threads, or what a caller
// knows of each (a goroutine's facts), each standing for its thread.
type GroupOf[T any] struct {
	Threads []T
	Stack   []Frame
}

// runtimeOnly says whether a group whose first thread is first is
// goroutines of the Go runtime itself (GC workers, the finalizer, the
// scavenger): every frame in runtime.
func runtimeOnly(first *Thread, stack []Frame) bool {
	if first.Goroutine() == nil {
		return false
	}
	for _, f := range stack {
		if !strings.HasPrefix(f.Func, "runtime.") {
			return false
		}
	}
	return true
}

// GroupThreads buckets threads by their stack: the same function (or, with
// no symbol, the same module offset) at the same line in every frame;
// arguments and addresses may differ. Groups come largest
// first (the Go runtime's own goroutines last), then by lowest thread id,
// so the order is stable.
func GroupThreads(threads []*Thread) []Group {
	return GroupBy(threads, func(t *Thread) *Thread { return t })
}

// GroupBy is GroupThreads of items, each standing for thread(item): a
// caller that holds more than the thread of each groups those without a
// map back from threads to them.
func GroupBy[T any](items []T, thread func(T) *Thread) []GroupOf[T] {
	index := map[string]int{}
	var groups []GroupOf[T]
	// a stack the parser shared among threads (share.go) is keyed once
	type slice struct {
		first *Frame
		n     int
	}
	keys := map[slice]string{}
	for _, item := range items {
		t := thread(item)
		var k string
		if len(t.Stack) == 0 {
			k = StackKey(t.Stack, GroupKey)
		} else if s := (slice{&t.Stack[0], len(t.Stack)}); keys[s] != "" {
			k = keys[s]
		} else {
			k = StackKey(t.Stack, GroupKey)
			keys[s] = k
		}
		i, ok := index[k]
		if !ok {
			i = len(groups)
			index[k] = i
			groups = append(groups, GroupOf[T]{Stack: t.Stack})
		}
		groups[i].Threads = append(groups[i].Threads, item)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		fi, fj := thread(groups[i].Threads[0]), thread(groups[j].Threads[0])
		if ri, rj := runtimeOnly(fi, groups[i].Stack), runtimeOnly(fj, groups[j].Stack); ri != rj {
			return rj // the Go runtime's own goroutines after the program's
		}
		if len(groups[i].Threads) != len(groups[j].Threads) {
			return len(groups[i].Threads) > len(groups[j].Threads)
		}
		return fi.Tid < fj.Tid
	})
	return groups
}
