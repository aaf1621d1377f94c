package heuristics

import (
	"github.com/hangdoc/hangdoc/stacks"
)

// ThreadRef is a thread and the process it belongs to.
type ThreadRef struct {
	Proc   *stacks.Process
	Thread *stacks.Thread
}

// Analysis is what every signature reads: the snapshot, indexes over it
// and the wait-for graph, built once per Diagnose.
type Analysis struct {
	Snap  *stacks.Snapshot
	procs map[int]*stacks.Process
	// threads by tid: tids are unique across the processes of one
	// snapshot on one machine (they share one pid namespace).
	threads map[int]ThreadRef
}

// NewAnalysis indexes a snapshot.
func NewAnalysis(snap *stacks.Snapshot) *Analysis {
	a := &Analysis{Snap: snap, procs: map[int]*stacks.Process{}, threads: map[int]ThreadRef{}}
	for _, p := range snap.Processes {
		a.procs[p.Pid] = p
		for _, t := range p.Threads {
			a.threads[t.Tid] = ThreadRef{Proc: p, Thread: t}
		}
	}
	return a
}

// Process returns the process with the given pid, or nil.
func (a *Analysis) Process(pid int) *stacks.Process { return a.procs[pid] }

// Thread returns the thread with the given tid, if the snapshot has it.
func (a *Analysis) Thread(tid int) (ThreadRef, bool) {
	r, ok := a.threads[tid]
	return r, ok
}
