package heuristics

// Rule is a known-issue rule: it refines a base diagnosis by frames and
// modules. (Being built: see the issue "Name the deadlock".)
type Rule struct {
	ID string `json:"id"`
}

func builtinRules() []Rule { return nil }

func refine(a *Analysis, ds []Diagnosis, rules []Rule) []Diagnosis { return ds }
