package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/stacks"
)

// The heuristics give a next step as data; the text and markdown reports
// say it as the command to type, JSON keeps the data.
func TestHintsInWords(t *testing.T) {
	d := heuristics.Diagnosis{ID: "waiting-on-process", Confidence: heuristics.Low, Summary: "waits for its children 401, 402, which were not sampled",
		Hints: []heuristics.Hint{
			{Action: heuristics.HintAttach, Pid: 400, Tree: true, Why: "to follow the wait"},
			{Action: heuristics.HintAttach, Samples: 3, Why: "to confirm it with CPU figures"},
			{Action: heuristics.HintGoroutineDump, Pid: 9, Why: "to read its goroutines"},
		}}
	res := &heuristics.Result{Snap: &stacks.Snapshot{Schema: stacks.Schema}, Diagnoses: []heuristics.Diagnosis{d}}
	var txt, md, js bytes.Buffer
	if err := report.Text(&txt, res, report.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := report.Markdown(&md, res, report.MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := report.JSON(&js, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  next: run `hangdoc attach --tree 400` to follow the wait\n",
		"  next: run `hangdoc attach --samples 3 PID` to confirm it with CPU figures\n",
		"  next: send it SIGQUIT (`kill -QUIT 9`) and run `hangdoc analyze` on the goroutine dump it prints to read its goroutines\n",
	} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, txt.String())
		}
	}
	if want := "**Next:** run `hangdoc attach --tree 400` to follow the wait.\n"; !strings.Contains(md.String(), want) {
		t.Errorf("markdown lacks %q:\n%s", want, md.String())
	}
	if want := `"hints": [`; !strings.Contains(js.String(), want) || strings.Contains(js.String(), "hangdoc attach") {
		t.Errorf("json: want the hints as data, not words:\n%s", js.String())
	}
}
