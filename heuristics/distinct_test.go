package heuristics

import (
	"slices"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// distinctThreads takes a thread the paste shows twice once, by its
// fuller stack, whatever the order of the tids; threads without a tid
// are each their own.
func TestDistinctThreads(t *testing.T) {
	frames := func(n int) []stacks.Frame { return make([]stacks.Frame, n) }
	th := func(tid, n int) *stacks.Thread { return &stacks.Thread{Tid: tid, Stack: frames(n)} }
	tids := func(ts []*stacks.Thread) []int {
		var out []int
		for _, t := range ts {
			out = append(out, t.Tid*100+len(t.Stack))
		}
		return out
	}
	for _, c := range []struct {
		name string
		in   []*stacks.Thread
		want []int // tid*100 + frames
	}{
		{"falling", []*stacks.Thread{th(9, 3), th(0, 1), th(7, 2), th(0, 4), th(3, 5)}, []int{903, 1, 702, 4, 305}},
		{"rising", []*stacks.Thread{th(1, 3), th(2, 2), th(5, 1)}, []int{103, 202, 501}},
		{"shown twice, the fuller kept", []*stacks.Thread{th(4, 2), th(6, 1), th(4, 7)}, []int{407, 601}},
		{"shown twice, the first fuller", []*stacks.Thread{th(8, 9), th(2, 1), th(8, 3)}, []int{809, 201}},
		{"unordered, all distinct", []*stacks.Thread{th(5, 1), th(9, 1), th(2, 1)}, []int{501, 901, 201}},
	} {
		if got := tids(distinctThreads(&stacks.Process{Threads: c.in})); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
