package heuristics

import (
	"slices"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// The index finds every thread of a tid, in snapshot order, whether the
// snapshot's one process lists its threads up (with repeats), down (as
// gdb does) or in no order, and across processes.
func TestTidIndex(t *testing.T) {
	proc := func(pid int, tids ...int) *stacks.Process {
		p := &stacks.Process{Pid: pid}
		for _, tid := range tids {
			p.Threads = append(p.Threads, &stacks.Thread{Tid: tid})
		}
		return p
	}
	for _, c := range []struct {
		name  string
		procs []*stacks.Process
		fast  bool // searched in the process's own list
	}{
		{"ascending with repeats", []*stacks.Process{proc(1, 1, 2, 2, 5, 9)}, true},
		{"descending", []*stacks.Process{proc(1, 9, 5, 2, 1)}, true},
		{"no order", []*stacks.Process{proc(1, 5, 1, 9, 2, 2)}, false},
		{"two processes", []*stacks.Process{proc(1, 1, 2, 5), proc(2, 2, 9)}, false},
		{"empty", []*stacks.Process{proc(1)}, true},
	} {
		snap := &stacks.Snapshot{Processes: c.procs}
		ix := newTidIndex(snap, 0)
		if got := ix.proc != nil; got != c.fast {
			t.Errorf("%s: searched in the process's list %v, want %v", c.name, got, c.fast)
		}
		for _, tid := range []int{0, 1, 2, 3, 5, 9, 10} {
			var want []ThreadRef
			for _, p := range c.procs {
				for _, th := range p.Threads {
					if th.Tid == tid {
						want = append(want, ThreadRef{Proc: p, Thread: th})
					}
				}
			}
			got := slices.Collect(ix.of(tid))
			if !slices.Equal(got, want) {
				t.Errorf("%s: of(%d) = %v, want %v", c.name, tid, got, want)
			}
			first, ok := ix.first(tid)
			if ok != (len(want) > 0) || ok && first != want[0] {
				t.Errorf("%s: first(%d) = %v, %v; want the first of %v", c.name, tid, first, ok, want)
			}
		}
	}
}

// orderRefs lists each tid and pid once, in the order given, whether
// the tids rise, fall or repeat; refs without a thread add nothing.
func TestOrderRefs(t *testing.T) {
	p1, p2 := &stacks.Process{Pid: 1}, &stacks.Process{Pid: 2}
	ref := func(p *stacks.Process, tid int) ThreadRef {
		return ThreadRef{Proc: p, Thread: &stacks.Thread{Tid: tid}}
	}
	for _, c := range []struct {
		refs       []ThreadRef
		pids, tids []int
	}{
		{[]ThreadRef{ref(p1, 1), ref(p1, 2), ref(p2, 7)}, []int{1, 2}, []int{1, 2, 7}},
		{[]ThreadRef{ref(p2, 9), ref(p1, 5), ref(p1, 2)}, []int{2, 1}, []int{9, 5, 2}},
		{[]ThreadRef{ref(p1, 5), ref(p1, 2), ref(p1, 5), {Proc: p2}, ref(p1, 9), ref(p1, 2)}, []int{1}, []int{5, 2, 9}},
		{nil, nil, []int{}},
	} {
		pids, tids := orderRefs(c.refs, func(r ThreadRef) ThreadRef { return r })
		if !slices.Equal(pids, c.pids) || !slices.Equal(tids, c.tids) {
			t.Errorf("orderRefs(%v) = %v, %v; want %v, %v", c.refs, pids, tids, c.pids, c.tids)
		}
	}
}
