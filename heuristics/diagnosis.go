// Package heuristics names why a snapshot is stuck: it builds the wait-for
// graph and matches the signature catalogue. It sees only stacks.Snapshot,
// never where the snapshot came from.
package heuristics

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
