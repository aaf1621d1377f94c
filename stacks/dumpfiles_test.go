package stacks

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Golden tests, fuzz invariants and linear-time checks shared by the
// py-spy, faulthandler, sample, spindump and hangdoc-json readers. Each
// format's dumps live in testdata/dumps/<format name>; next to each dump
// X.ext is X.golden.json, what the reader made of it.

type dumpParser func(io.Reader) (*Snapshot, []Skipped, error)

// dumpGolden is what a golden file holds for one dump.
type dumpGolden struct {
	Skipped  []Skipped `json:"skipped"`
	Error    string    `json:"error,omitempty"`
	Snapshot *Snapshot `json:"snapshot"`
}

func storedDumps(t testing.TB, format string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join("..", "testdata", "dumps", format, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if !strings.Contains(filepath.Base(f), ".golden.") {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no dumps under testdata/dumps/%s", format)
	}
	return files
}

// checkDumpGoldens parses every dump of a format and compares the result with
// its golden file, or rewrites the golden files when update is set.
func checkDumpGoldens(t *testing.T, format string, parse dumpParser, update bool, flagName string) {
	for _, file := range storedDumps(t, format) {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			snap, skipped, err := parse(bytes.NewReader(b))
			g := dumpGolden{Skipped: skipped, Snapshot: snap}
			if err != nil {
				g.Error = err.Error()
			}
			got, err := json.MarshalIndent(g, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(file, filepath.Ext(file)) + ".golden.json"
			if update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./stacks -run Golden -%s to create it)", err, flagName)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s; rerun with -%s if the change is intended\n%s",
					name, filepath.Base(golden), flagName, firstLineDiff(string(want), string(got)))
			}
		})
	}
}

// firstLineDiff shows the first line where two texts differ.
func firstLineDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n want: " + w + "\n  got: " + g
		}
	}
	return ""
}

// parseStoredDump parses one stored dump and fails the test on an error.
func parseStoredDump(t *testing.T, format, name string, parse dumpParser) (*Snapshot, []Skipped) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", format, name))
	if err != nil {
		t.Fatal(err)
	}
	snap, skipped, err := parse(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return snap, skipped
}

func dumpSkipped(s []Skipped) []string {
	out := []string{}
	for _, x := range s {
		out = append(out, x.String())
	}
	return out
}

func dumpFrameNames(st []Frame) []string {
	out := make([]string, len(st))
	for i, f := range st {
		out[i] = f.Name()
	}
	return out
}

// checkDumpResult holds what every reader promises, whatever its input:
// an error names a line of the input and comes with no snapshot, or a
// snapshot has at least one thread and every stack is a list; skipped
// ranges are in order, within the input, with a reason; the snapshot
// encodes as JSON.
func checkDumpResult(t *testing.T, in []byte, snap *Snapshot, skipped []Skipped, err error) {
	t.Helper()
	nlines := bytes.Count(in, []byte("\n")) + 1
	if err != nil {
		var le *LineError
		if snap != nil || !errors.As(err, &le) || le.Line < 0 || le.Line > nlines {
			t.Fatalf("snap %v err %v (%d lines)", snap, err, nlines)
		}
	} else {
		if snap == nil || snap.Schema != Schema {
			t.Fatalf("no error and no snapshot: %+v", snap)
		}
		threads := 0
		for _, p := range snap.Processes {
			if p == nil {
				t.Fatal("nil process")
			}
			for _, th := range p.Threads {
				if th == nil || th.Stack == nil {
					t.Fatalf("process %d: nil thread or stack", p.Pid)
				}
				threads++
			}
		}
		if threads == 0 && snap.Source != "hangdoc-json" && snap.Source != "attach" {
			t.Fatalf("no error and no thread: %+v", snap)
		}
		if _, err := json.Marshal(snap); err != nil {
			t.Fatal(err)
		}
	}
	last := 0
	for _, s := range skipped {
		if s.From <= last || s.To < s.From || s.To > nlines || s.Why == "" {
			t.Fatalf("bad skipped ranges %v (%d lines)", skipped, nlines)
		}
		last = s.To
	}
}

// checkDumpLinear parses inputs that would take quadratic time in a careless
// reader; each must finish in a few seconds. want says which of them
// should yield a snapshot (the others an error).
func checkDumpLinear(t *testing.T, parse dumpParser, cases map[string]string, want map[string]bool) {
	for name, in := range cases {
		start := time.Now()
		snap, _, err := parse(strings.NewReader(in))
		if ok, listed := want[name]; listed && ok != (err == nil && snap != nil) {
			t.Errorf("%s: snapshot %v, err %v", name, snap != nil, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %v for %d bytes", name, d, len(in))
		}
	}
}

// brokenReader returns its data, then an error.
type brokenReader struct{ data []byte }

func (r *brokenReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, errors.New("disk on fire")
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}
