package heuristics

import (
	"slices"

	"github.com/hangdoc/hangdoc/stacks"
)

// ProcessWait is one thread's wait on another process, as
// waiting-on-process reads it: a wait4 or waitid on a child (the one it
// names, or each child when it waits for any), a read or write of a pipe
// or a socket whose other end that process holds.
type ProcessWait struct {
	From ThreadRef
	// To is the process waited on; nil for a child the snapshot does
	// not have (ToPid names it).
	To    *stacks.Process
	ToPid int
	Kind  string // "child", "pipe-read", "pipe-write", "socket"
}

// ProcessWaits lists every thread's waits on other processes, in
// snapshot order: the same waits the verdicts follow, so that a graph
// draws what they name.
func (a *Analysis) ProcessWaits() []ProcessWait {
	var out []ProcessWait
	for _, p := range a.Snap.Processes {
		ws, unsampled := procWaits(a, p)
		for _, w := range ws {
			out = append(out, ProcessWait{From: w.from, To: w.to, ToPid: w.to.Pid, Kind: w.kind})
		}
		if len(unsampled) == 0 {
			continue
		}
		// procWaits names the children not sampled, not who waits for
		// them: the threads whose wait4 or waitid takes them.
		for _, t := range p.Threads {
			for _, e := range a.WaitsFor(t) {
				if e.Kind != EdgeChild {
					continue
				}
				kids := e.Children
				if t.Wait.ChildPid > 0 {
					kids = []int{t.Wait.ChildPid}
				}
				for _, pid := range kids {
					if slices.Contains(unsampled, pid) {
						out = append(out, ProcessWait{From: e.From, ToPid: pid, Kind: "child"})
					}
				}
			}
		}
	}
	return out
}
