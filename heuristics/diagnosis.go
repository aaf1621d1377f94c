// Package heuristics names why a snapshot is stuck: it builds the wait-for
// graph and matches the signature catalogue. It sees only stacks.Snapshot,
// never where the snapshot came from.
package heuristics

// Diagnosis is one named finding, in the hangdoc/v1 JSON contract.
type Diagnosis struct {
	ID         string   `json:"id"`
	Title      string   `json:"title"`
	Confidence string   `json:"confidence"` // "high", "medium", "low"
	Pids       []int    `json:"pids"`
	Tids       []int    `json:"tids"`
	Summary    string   `json:"summary"`
	Evidence   []string `json:"evidence"`
	Fix        string   `json:"fix"`
	Refs       []string `json:"refs"`
}
