package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
)

// runSignaturesCmd runs `hangdoc signatures ARGS` in-process.
func runSignaturesCmd(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return run(append([]string{"signatures"}, args...)...)
}

func TestSignaturesText(t *testing.T) {
	out, _, err := runSignaturesCmd(t)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range heuristics.Catalogue {
		if !strings.Contains(out, "\n"+s.ID+"\n  "+s.Title+".\n") {
			t.Errorf("signature %s missing", s.ID)
		}
	}
	for _, r := range heuristics.BuiltinRules() {
		if !strings.Contains(out, "\n"+r.ID+"\n") || !strings.Contains(out, "  refines: "+strings.Join(r.Base, ", ")+"\n") {
			t.Errorf("known issue %s missing", r.ID)
		}
		for _, l := range r.Links {
			if !strings.Contains(out, "  "+l+"\n") {
				t.Errorf("%s: link %s missing", r.ID, l)
			}
		}
	}
	for _, want := range []string{"fix: Upgrade OpenBLAS to 0.3.31 or later", "test stand-in", "Known issues ("} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for i, line := range strings.Split(out, "\n") {
		if len(line) > 80 && !strings.HasPrefix(line, "  http") {
			t.Errorf("line %d is %d columns: %q", i+1, len(line), line)
		}
	}
	// Most specific first.
	if a, b := strings.Index(out, "\nfork-inherited-lock\n"), strings.Index(out, "\nsleeping\n"); a < 0 || b < a {
		t.Errorf("catalogue not in rank order")
	}
}

type signaturesDoc struct {
	Schema     string `json:"schema"`
	Signatures []struct {
		ID, Title, Explain, Fix string
		Rank                    int
	} `json:"signatures"`
	KnownIssues []struct {
		ID     string   `json:"id"`
		Base   []string `json:"base"`
		Title  string   `json:"title"`
		Fix    string   `json:"fix"`
		Links  []string `json:"links"`
		Source string   `json:"source"`
	} `json:"known_issues"`
}

func TestSignaturesJSON(t *testing.T) {
	out, _, err := runSignaturesCmd(t, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc signaturesDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if doc.Schema != "hangdoc/v1" || len(doc.Signatures) != len(heuristics.Catalogue) || len(doc.KnownIssues) != len(heuristics.BuiltinRules()) {
		t.Fatalf("schema %q, %d signatures, %d known issues", doc.Schema, len(doc.Signatures), len(doc.KnownIssues))
	}
	for _, s := range doc.Signatures {
		if s.Title == "" || s.Explain == "" || s.Fix == "" || strings.Contains(s.Explain, "\n") {
			t.Errorf("%s: title %q, explain %q, fix %q", s.ID, s.Title, s.Explain, s.Fix)
		}
	}
	found := false
	for _, k := range doc.KnownIssues {
		if k.ID == "openblas-fork-relock" {
			found = k.Source == "built-in" && len(k.Links) >= 4 && strings.Contains(k.Fix, "OPENBLAS_NUM_THREADS=1")
		}
	}
	if !found {
		t.Error("openblas-fork-relock missing or incomplete")
	}
}

func TestSignaturesUserRules(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "ours.json")
	os.WriteFile(good, []byte(`{"rules": [
  {"id": "our-pool-relock", "base": ["self-deadlock"], "frames": ["^pool_grow$"], "title": "Our pool re-locks on grow", "fix": "Upgrade libpool to 2.1", "links": ["https://example.org/bugs/12"]},
  {"id": "mlx-fence-fast-synch", "base": ["spin-wait-starved"], "frames": ["Fence::wait"], "title": "Our own words on the fence", "fix": "Unset it"}
]}`), 0o644)
	out, _, err := runSignaturesCmd(t, "--rules", good, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc signaturesDoc
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	var ours, fence bool
	for _, k := range doc.KnownIssues {
		switch k.ID {
		case "our-pool-relock":
			ours = k.Source == good
		case "mlx-fence-fast-synch":
			fence = k.Title == "Our own words on the fence"
		}
	}
	if !ours || !fence || len(doc.KnownIssues) != len(heuristics.BuiltinRules())+1 {
		t.Errorf("user rule listed %v, override %v, %d known issues", ours, fence, len(doc.KnownIssues))
	}
	text, _, err := runSignaturesCmd(t, "--rules", good)
	if err != nil || !strings.Contains(text, "\nour-pool-relock\n  Our pool re-locks on grow.\n  refines: self-deadlock\n  from "+good+"\n") {
		t.Errorf("text listing: %v\n%s", err, text)
	}
}

func TestSignaturesErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"rules": [{"id": "openblas-fork", "base": ["self-deadlock"], "frames": ["("], "title": "t", "fix": "f"}]}`), 0o644)
	for args, want := range map[string]string{
		"--rules " + bad:                  "--rules: " + bad + ": rule 0 (openblas-fork): frames[0]: bad regexp `(`: missing closing )",
		"--rules " + dir + "/absent.json": "no such file",
		"--format xml":                    `--format "xml": want text or json`,
	} {
		_, _, err := runSignaturesCmd(t, strings.Fields(args)...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("signatures %s: got %v, want a one-line usage error with %q", args, err, want)
		}
	}
	if _, _, err := runSignaturesCmd(t, "extra"); err == nil {
		t.Error("signatures with an argument: no error")
	}
}
