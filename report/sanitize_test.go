package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

func TestSanitize(t *testing.T) {
	cases := map[string]string{
		"worker-1":                "worker-1",
		"\x1b]52;c;ZXZpbA==\a":    `\x1b]52;c;ZXZpbA==\x07`,
		"a\x9bb":                  "a\uFFFDb", // a lone 0x9b byte is invalid UTF-8
		"a\u009bb":                `a\x9bb`,   // the C1 CSI rune
		"bidi\u202eevil":          `bidi\u202eevil`,
		"std::mutex::lock()":      "std::mutex::lock()",
		"tab\tnewline\n":          `tab\x09newline\x0a`,
		string([]byte{0xff, 'x'}): "\uFFFDx",
	}
	for in, want := range cases {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSONEscapesC1AndBidi(t *testing.T) {
	snap := &stacks.Snapshot{Processes: []*stacks.Process{{Pid: 1, Threads: []*stacks.Thread{{Tid: 1, Name: "a\u009b2Jb\u202ec"}}}}}
	var buf bytes.Buffer
	if err := JSON(&buf, &heuristics.Result{Snap: snap}); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(buf.String(), 0x9b) || strings.ContainsRune(buf.String(), 0x202e) {
		t.Fatalf("raw C1 or bidi in JSON: %q", buf.String())
	}
	var back struct{ Processes []*stacks.Process }
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || back.Processes[0].Threads[0].Name != "a\u009b2Jb\u202ec" {
		t.Fatalf("round trip: %v %+v", err, back)
	}
}
