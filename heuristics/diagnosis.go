// Package heuristics names why a snapshot is stuck: it builds the wait-for
// graph and matches the signature catalogue. It sees only stacks.Snapshot,
// never where the snapshot came from.
package heuristics

import (
	"slices"

	"github.com/hangdoc/hangdoc/stacks"
)

// Diagnosis is one named finding, in the hangdoc/v1 JSON contract.
type Diagnosis struct {
	ID         string `json:"id"`
	Title      string `json:"title"`
	Confidence string `json:"confidence"` // "high" (an owner was read), "medium", "low" (frame names only)
	Pids       []int  `json:"pids"`
	Tids       []int  `json:"tids"`
	// Summary is the verdict in one line: "thread 4711 `worker` waits for
	// mutex server_lock (0x7f…) which it already holds".
	Summary string `json:"summary"`
	// Chain is the wait chain a person can follow, one step a line:
	// thread → lock → owner → what the owner does.
	Chain    []string `json:"chain"`
	Evidence []string `json:"evidence"`
	Fix      string   `json:"fix"`
	Refs     []string `json:"refs"`
	// Hints are the next steps that would show more (hint.go).
	Hints []Hint `json:"hints,omitempty"`
	// KnownIssue is set when a known upstream bug refines the diagnosis.
	KnownIssue *KnownIssue `json:"known_issue,omitempty"`
	// Deadlock is false for the verdicts that are not a hang
	// (progressing, io-wait, sleeping).
	Deadlock bool `json:"deadlock"`
	// procs are the processes of the threads the diagnosis was named
	// from (name): a paste may hold two processes of one pid (two dumps
	// without pids are both pid 0) whose tids repeat, which Pids and Tids
	// cannot tell apart.
	procs []*stacks.Process
}

// name makes the diagnosis about the given threads, waiters first, then
// owners: their pids and tids, each once in that order, and their
// processes.
func (d *Diagnosis) name(refs ...ThreadRef) {
	nameBy(d, refs, func(r ThreadRef) ThreadRef { return r })
}

// nameBy is name of the threads of items: a caller holding more than the
// ThreadRef of each (a goroutine's facts) names them without a slice of
// refs (0.7 MB for a leak of 47,000 goroutines).
func nameBy[T any](d *Diagnosis, items []T, ref func(T) ThreadRef) {
	d.Pids, d.Tids = orderRefs(items, ref)
	for _, item := range items {
		if r := ref(item); r.Thread != nil && !slices.Contains(d.procs, r.Proc) {
			d.procs = append(d.procs, r.Proc)
		}
	}
}

// nameIn makes the diagnosis about process p and, of its threads, the
// given tids: the verdicts about one process (io-wait, sleeping,
// stopped...), which name it before or without its threads.
func (d *Diagnosis) nameIn(p *stacks.Process, tids ...int) {
	d.Pids, d.Tids, d.procs = []int{p.Pid}, append([]int{}, tids...), []*stacks.Process{p}
}

// About says whether the diagnosis is about process p: one of the
// processes it was named from, or, for a pid none of those has (a fork
// parent added by pid alone), any process of a pid it names. A paste's
// processes may share a pid and tids, so a renderer asks this rather
// than matching Pids.
func (d *Diagnosis) About(p *stacks.Process) bool {
	if slices.Contains(d.procs, p) {
		return true
	}
	return slices.Contains(d.Pids, p.Pid) && !slices.ContainsFunc(d.procs, func(q *stacks.Process) bool { return q.Pid == p.Pid })
}

// KnownIssue names an upstream bug that a diagnosis matches.
type KnownIssue struct {
	ID      string   `json:"id"`
	Title   string   `json:"title"`
	Fix     string   `json:"fix"`
	Links   []string `json:"links"`
	Explain string   `json:"explain,omitempty"`
}

// Confidence levels, most certain first.
const (
	High   = "high"
	Medium = "medium"
	Low    = "low"
)
