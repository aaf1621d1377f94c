package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/stacks"
)

// A markdown report of a 2,000-thread process must fit a GitHub comment
// and still carry the verdict, the chain, the fix and one entry for every
// distinct stack group.
func TestMarkdownOf2000ThreadsFitsAComment(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "threads200.c", patient.O2g...), "2000")
	out, _, err := run("attach", "--samples", "1", "--format", "json", strconv.Itoa(p.Pid))
	if err != nil {
		t.Fatal(err)
	}
	snap, _, err := stacks.ParseHangdocJSON(strings.NewReader(out))
	if err != nil {
		t.Fatalf("attach --format json: %v", err)
	}
	file := filepath.Join(t.TempDir(), "snap.json")
	if err := os.WriteFile(file, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	md, _, err := run("analyze", "--format", "markdown", file)
	if err != nil {
		t.Fatal(err)
	}
	if len(md) > report.GitHubCommentLimit {
		t.Fatalf("markdown of %d threads is %d characters, over %d", len(snap.Processes[0].Threads), len(md), report.GitHubCommentLimit)
	}
	verdict := regexp.MustCompile(`^\*\*[a-z-]+\*\* \((high|medium|low) confidence\): `)
	if !verdict.MatchString(md) {
		t.Errorf("no verdict line first:\n%.300s", md)
	}
	if !strings.Contains(md, "**Fix:**") {
		t.Errorf("no fix in the markdown report")
	}
	groups := stacks.GroupThreads(snap.Processes[0].Threads)
	for _, g := range groups {
		if fn := g.Stack[0].Func; fn != "" && !strings.Contains(md, fn) {
			t.Errorf("stack group of %d threads topped by %s is not in the report", len(g.Threads), fn)
		}
	}
	t.Logf("%d threads, %d stack groups: markdown %d characters", len(snap.Processes[0].Threads), len(groups), len(md))
}
