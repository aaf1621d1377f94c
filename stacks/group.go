package stacks

import (
	"sort"
	"strings"
)

// Group is a set of threads of one process whose stacks are the same, as
// panicparse buckets goroutines: forty workers parked at one place are one
// entry in a report, not forty.
type Group struct {
	Threads []*Thread
	Stack   []Frame
}

// runtimeOnly says whether a group is goroutines of the Go runtime itself
// (GC workers, the finalizer, the scavenger): every frame in runtime.
func runtimeOnly(g Group) bool {
	if g.Threads[0].Goroutine() == nil {
		return false
	}
	for _, f := range g.Stack {
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
	index := map[string]int{}
	var groups []Group
	// a stack the parser shared among threads (share.go) is keyed once
	type slice struct {
		first *Frame
		n     int
	}
	keys := map[slice]string{}
	for _, t := range threads {
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
			groups = append(groups, Group{Stack: t.Stack})
		}
		groups[i].Threads = append(groups[i].Threads, t)
	}
	sort.SliceStable(groups, func(i, j int) bool {
		if ri, rj := runtimeOnly(groups[i]), runtimeOnly(groups[j]); ri != rj {
			return rj // the Go runtime's own goroutines after the program's
		}
		if len(groups[i].Threads) != len(groups[j].Threads) {
			return len(groups[i].Threads) > len(groups[j].Threads)
		}
		return groups[i].Threads[0].Tid < groups[j].Threads[0].Tid
	})
	return groups
}
