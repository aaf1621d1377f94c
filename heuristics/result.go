package heuristics

import "github.com/hangdoc/hangdoc/stacks"

// Result is what Diagnose found: the diagnoses and the wait-for graph
// they rest on. Every renderer draws from it and nothing analyses again,
// so a graph never shows a wait the verdicts do not have.
type Result struct {
	Snap      *stacks.Snapshot
	Diagnoses []Diagnosis // the most specific and most certain first
	// Graph is the wait-for graph: mutex, join and child waits (nil:
	// none recorded).
	Graph *Graph
	// Cycles are the graph's elementary cycles of mutex and join waits,
	// each once, starting at its lowest tid.
	Cycles [][]Edge
	// GoWaits are the program's goroutines that wait on a known object,
	// with those that may hold it, as the Go signatures inferred them.
	GoWaits []GoWait
	// ProcessWaits are the threads' waits on other processes (a child, a
	// pipe's or a socket's other end), as waiting-on-process follows them.
	ProcessWaits []ProcessWait
}

// result is the analysis's part that the renderers draw, with the
// diagnoses read from it.
func (a *analysis) result(ds []Diagnosis) *Result {
	return &Result{Snap: a.Snap, Diagnoses: ds, Graph: a.graph, Cycles: a.cycles, GoWaits: a.GoWaits(), ProcessWaits: a.ProcessWaits()}
}

// Process returns the process with the given pid (the first one, when a
// paste repeats it), or nil.
func (r *Result) Process(pid int) *stacks.Process {
	if r.Snap == nil {
		return nil
	}
	for _, p := range r.Snap.Processes {
		if p.Pid == pid {
			return p
		}
	}
	return nil
}
