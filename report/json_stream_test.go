package report

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// The streamed document is byte for byte what json.Encoder writes for
// the whole Document with the same indent (C1 escapes aside), on every
// stored snapshot and on the edge cases of an empty or missing list.
func TestJSONStreamsTheEncodersBytes(t *testing.T) {
	files, _ := filepath.Glob("testdata/snapshots/*.json")
	if len(files) == 0 {
		t.Fatal("no stored snapshots")
	}
	var snaps []*stacks.Snapshot
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		snap, _, err := stacks.ParseHangdocJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		snaps = append(snaps, snap)
	}
	// parsed dumps too: their threads share stacks (stacks/share.go),
	// which the stream marshals once
	for _, d := range []string{"gdb/threads10.txt", "goroutines/leak_sigquit.txt", "goroutines/abba_sigquit_system.txt"} {
		f, err := os.Open(filepath.Join("..", "testdata", "dumps", d))
		if err != nil {
			t.Fatal(err)
		}
		snap, _, _, err := stacks.Parse(f, "")
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		snaps = append(snaps, snap)
		files = append(files, d)
	}
	snaps = append(snaps, nil, &stacks.Snapshot{Schema: "hangdoc/v1"},
		&stacks.Snapshot{Schema: "hangdoc/v1", Processes: []*stacks.Process{}},
		&stacks.Snapshot{Schema: "hangdoc/v1", Processes: []*stacks.Process{{Pid: 1}, {Pid: 2, Threads: []*stacks.Thread{}}}})
	for i, snap := range snaps {
		var diags []heuristics.Diagnosis
		if snap != nil {
			diags = heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
		}
		if diags == nil {
			diags = []heuristics.Diagnosis{}
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("", "  ")
		if err := enc.Encode(Document{Snapshot: snap, Diagnoses: diags}); err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := JSON(&got, &heuristics.Result{Snap: snap, Diagnoses: diags}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), escapeControls(want.Bytes())) {
			name := "edge case"
			if i < len(files) {
				name = files[i]
			}
			t.Errorf("%s: streamed JSON differs from the encoder's:\n got %.600s\nwant %.600s", name, got.String(), want.String())
		}
	}
}
