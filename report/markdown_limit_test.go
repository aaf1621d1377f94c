package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// bigSnapshot is a hand-built process of threads threads in groups
// distinct stacks of depth frames each, every thread with a note.
func bigSnapshot(threads, groups, depth int) *stacks.Snapshot {
	p := &stacks.Process{Pid: 4242, Exe: "/srv/big"}
	for i := 0; i < threads; i++ {
		g := i % groups
		var st []stacks.Frame
		for d := 0; d < depth; d++ {
			st = append(st, stacks.Frame{Func: fmt.Sprintf("group%d_frame%d", g, d), File: "big.c", Line: d + 1})
		}
		p.Threads = append(p.Threads, &stacks.Thread{Tid: 10000 + i, Name: "worker", State: "S", Stack: st, Notes: []string{"a note"}})
	}
	return &stacks.Snapshot{Schema: "hangdoc/v1", Source: "gdb", Samples: 1, Processes: []*stacks.Process{p}}
}

func bigDiagnosis(lines int) heuristics.Diagnosis {
	d := heuristics.Diagnosis{ID: "io-wait", Confidence: "medium", Summary: "not a deadlock", Fix: "Give the read a timeout."}
	for i := 0; i < lines; i++ {
		d.Chain = append(d.Chain, fmt.Sprintf("thread %d `worker` blocks in `read`", 10000+i))
		d.Evidence = append(d.Evidence, fmt.Sprintf("thread %d: fd 3", 10000+i))
	}
	return d
}

// Each level of shortening is reached and every report fits: a small one
// whole, a large one with its verdict, fix and every stack group.
func TestMarkdownFitsTheLimit(t *testing.T) {
	for _, c := range []struct {
		name                    string
		threads, groups, depth  int
		wantWhole, wantAllGroup bool
	}{
		{"small", 10, 2, 5, true, true},
		{"many threads", 5000, 5, 40, false, true},
		{"many groups", 800, 800, 30, false, true},
		{"too many groups for one line each", 5000, 5000, 2, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			diag := bigDiagnosis(c.threads)
			if err := Markdown(&b, &heuristics.Result{Snap: bigSnapshot(c.threads, c.groups, c.depth), Diagnoses: []heuristics.Diagnosis{diag}}, MarkdownOptions{Version: "test"}); err != nil {
				t.Fatal(err)
			}
			md := b.String()
			if len(md) > GitHubCommentLimit {
				t.Fatalf("%d characters, over %d", len(md), GitHubCommentLimit)
			}
			if !strings.HasPrefix(md, "**io-wait** (medium confidence)") || !strings.Contains(md, "**Fix:** Give the read a timeout.") {
				t.Errorf("verdict or fix missing:\n%.400s", md)
			}
			whole := !strings.Contains(md, "GitHub comment")
			if whole != c.wantWhole {
				t.Errorf("whole report %v, want %v", whole, c.wantWhole)
			}
			if !whole && !strings.Contains(md, "--format json") {
				t.Errorf("a shortened report must say where the full one is")
			}
			missing := 0
			for g := 0; g < c.groups; g++ {
				if !strings.Contains(md, fmt.Sprintf("group%d_frame0", g)) {
					missing++
				}
			}
			if (missing == 0) != c.wantAllGroup {
				t.Errorf("%d of %d stack groups missing", missing, c.groups)
			}
			if c.threads > 25 && strings.Count(md, "blocks in") > 25 {
				t.Errorf("%d chain lines: per-thread lines are not cut", strings.Count(md, "blocks in"))
			}
		})
	}
}
