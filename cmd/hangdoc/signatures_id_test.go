package main

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
)

// TestSignaturesOne: `hangdoc signatures ID` explains one signature and
// the known issues that refine it; a known issue's id explains it and
// what it refines; an unknown id is a usage error that says where the
// list is.
func TestSignaturesOne(t *testing.T) {
	out, _, err := runSignaturesCmd(t, "self-deadlock")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Signatures (1)") || !strings.Contains(out, "\nself-deadlock\n") || strings.Contains(out, "\nlock-order-cycle\n") {
		t.Errorf("signatures self-deadlock: want that one signature only:\n%s", out)
	}
	refines := 0
	for _, r := range heuristics.RulesInForce(nil) {
		for _, b := range r.Base {
			if b == "self-deadlock" {
				refines++
				if !strings.Contains(out, "\n"+r.ID+"\n") {
					t.Errorf("known issue %s refines self-deadlock and is not listed", r.ID)
				}
			}
		}
	}
	if refines == 0 {
		t.Fatal("no built-in rule refines self-deadlock: the test proves nothing")
	}
	rule := heuristics.RulesInForce(nil)[0]
	out, _, err = runSignaturesCmd(t, rule.ID)
	if err != nil || !strings.Contains(out, "Known issues (1)") || !strings.Contains(out, "\n"+rule.Base[0]+"\n") {
		t.Errorf("signatures %s: %v\n%s", rule.ID, err, out)
	}
	_, _, err = runSignaturesCmd(t, "no-such-thing")
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "hangdoc signatures") {
		t.Errorf("unknown id: %v, want a usage error pointing at the list", err)
	}
}

// TestSignaturesJSONMatchers: `signatures --format json` gives each
// rule's matchers as a --rules file writes them (docs/rules.md), so a
// listed rule can be copied into one.
func TestSignaturesJSONMatchers(t *testing.T) {
	out, _, err := runSignaturesCmd(t, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		KnownIssues []map[string]any `json:"known_issues"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, k := range doc.KnownIssues {
		for field := range k {
			seen[field] = true
		}
	}
	for _, field := range []string{"id", "base", "frames", "modules", "cmdline", "forked", "title", "fix", "links", "source"} {
		if !seen[field] {
			t.Errorf("no known issue in the JSON has %q", field)
		}
	}
	// Each listed rule reads back as a rules file.
	var rules struct {
		Rules []json.RawMessage `json:"rules"`
	}
	for _, k := range doc.KnownIssues {
		delete(k, "source")
		b, _ := json.Marshal(k)
		rules.Rules = append(rules.Rules, b)
	}
	b, _ := json.Marshal(rules)
	path := t.TempDir() + "/listed.json"
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := heuristics.LoadRulesFile(path); err != nil {
		t.Errorf("the listed rules do not load as a rules file: %v", err)
	}
}
