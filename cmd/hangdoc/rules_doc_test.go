package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestRulesDocExample: docs/rules.md's worked example loads, and on the
// dump it names gives what the document shows: the known issue's title,
// link and fix under the verdict.
func TestRulesDocExample(t *testing.T) {
	b, err := os.ReadFile("../../docs/rules.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```json\n(.*?)```").FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("docs/rules.md has no json example")
	}
	rules := filepath.Join(t.TempDir(), "ant.json")
	if err := os.WriteFile(rules, []byte(m[1]), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, code, err := runIn("analyze", "--rules", rules, filepath.Join("..", "..", "testdata", "dumps", "gdb", "mutex_o2.txt"))
	if err != nil || code != exitHang {
		t.Fatalf("exit %d, %v", code, err)
	}
	for _, want := range []string{
		"lock-order-cycle (medium confidence)",
		"  known issue: ant_bite needs the_lock, which main holds while it joins the ant\n    https://example.org/issues/42\n",
		"  fix: Upgrade to 2.1, which releases the_lock before pthread_join.\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%.1500s", want, out)
		}
		if !strings.Contains(string(b), strings.TrimSpace(strings.SplitN(want, "\n", 2)[0])) {
			t.Errorf("docs/rules.md does not show %q", want)
		}
	}
	json, _, _, err := runIn("analyze", "--format", "json", "--rules", rules, filepath.Join("..", "..", "testdata", "dumps", "gdb", "mutex_o2.txt"))
	if err != nil || !strings.Contains(json, `"id": "ant-join-under-lock"`) {
		t.Errorf("JSON: %v, no known_issue ant-join-under-lock", err)
	}
}
