package report_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/stacks"
)

// A diagnosis of 2,000 threads keeps the text report's verdict short:
// 25 chain lines, then how many more.
func TestTextCapsLongLists(t *testing.T) {
	d := heuristics.Diagnosis{ID: "io-wait", Confidence: "high", Summary: "s", Fix: "f"}
	for i := 0; i < 2000; i++ {
		d.Chain = append(d.Chain, fmt.Sprintf("thread %d blocks in read", i))
	}
	var b bytes.Buffer
	snap := &stacks.Snapshot{Schema: stacks.Schema}
	if err := report.Text(&b, &heuristics.Result{Snap: snap, Diagnoses: []heuristics.Diagnosis{d}}, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Count(out, "blocks in read") != 25 || !strings.Contains(out, "… and 1975 more") {
		t.Errorf("want 25 chain lines and '… and 1975 more':\n%.2000s", out)
	}
}

// TestReadmeGoExample: the README's Go verdict is the one hangdoc gives
// the go_abba golden today, word for word.
func TestReadmeGoExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	golden, err := os.ReadFile("testdata/golden/go_abba.txt")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(golden), "\n")
	if !strings.Contains(string(readme), "\n"+first+"\n") {
		t.Errorf("README's Go example is not today's verdict on go_abba:\n%s", first)
	}
}
