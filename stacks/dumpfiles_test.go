package stacks

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Golden tests, fuzz invariants, linear-time checks and benchmarks every
// dump reader shares. Each format's dumps live in
// testdata/dumps/<format name>; next to each dump X.ext is
// X.golden.json, what the reader made of it. `go test ./stacks -update`
// rewrites the golden files.

var updateGoldens = flag.Bool("update", false, "rewrite testdata/dumps/*/*.golden.json from the readers' output")

type dumpParser func(io.Reader) (*Snapshot, []Skipped, error)

// dumpGolden is what a golden file holds for one dump.
type dumpGolden struct {
	Skipped  []Skipped `json:"skipped"`
	Error    string    `json:"error,omitempty"`
	Snapshot *Snapshot `json:"snapshot"`
}

// storedDumps lists the dumps of a format: every file of its directory
// but the golden ones.
func storedDumps(t testing.TB, format string) []string {
	t.Helper()
	all, err := filepath.Glob(filepath.Join("..", "testdata", "dumps", format, "*"))
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range all {
		if !strings.Contains(filepath.Base(f), ".golden.") && filepath.Base(f) != "README.md" {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		t.Fatalf("no dumps under testdata/dumps/%s", format)
	}
	return files
}

// readStoredDump returns the bytes of one stored dump.
func readStoredDump(t testing.TB, format, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", format, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkDumpGoldens parses every dump of a format and compares the result
// with its golden file, or rewrites the golden files with -update. A dump
// over maxBytes (when not 0) has no golden file and is skipped.
func checkDumpGoldens(t *testing.T, format string, parse dumpParser, maxBytes int) {
	for _, file := range storedDumps(t, format) {
		name := filepath.Base(file)
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if maxBytes > 0 && len(b) > maxBytes {
				t.Skipf("%d bytes: no golden file for a dump this large", len(b))
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
			if *updateGoldens {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./stacks -run %s -update to create it)", err, t.Name()[:strings.IndexByte(t.Name(), '/')])
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from %s; rerun with -update if the change is intended\n%s",
					name, filepath.Base(golden), firstLineDiff(string(want), string(got)))
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
	snap, skipped, err := parse(bytes.NewReader(readStoredDump(t, format, name)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return snap, skipped
}

// dumpSkipped gives the skipped ranges as a person reads them; nil for
// none.
func dumpSkipped(s []Skipped) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.String())
	}
	return out
}

// checkSkipped compares the skipped ranges, as a person reads them, with
// want (none when want is empty).
func checkSkipped(t *testing.T, skipped []Skipped, want ...string) {
	t.Helper()
	if got := dumpSkipped(skipped); !reflect.DeepEqual(got, want) {
		t.Errorf("skipped\n got %q\nwant %q", got, want)
	}
}

// funcs lists a stack's function names as Frame.Name gives them.
func funcs(st []Frame) []string {
	out := make([]string, len(st))
	for i, f := range st {
		out[i] = f.Name()
	}
	return out
}

func threadByName(t *testing.T, p *Process, name string) *Thread {
	t.Helper()
	th := p.ThreadNamed(name)
	if th == nil {
		t.Fatalf("no thread named %q", name)
	}
	return th
}

func threadByTid(t *testing.T, p *Process, tid int) *Thread {
	t.Helper()
	th := p.ThreadByTid(tid)
	if th == nil {
		t.Fatalf("no thread %d", tid)
	}
	return th
}

// checkFuncs compares a stack's function names (as funcs gives them)
// with want.
func checkFuncs(t *testing.T, what string, st []Frame, want ...string) {
	t.Helper()
	if got := funcs(st); !reflect.DeepEqual(got, want) {
		t.Errorf("%s\n got %q\nwant %q", what, got, want)
	}
}

// checkInlined compares the Inlined flags of a stack's innermost frames
// with want.
func checkInlined(t *testing.T, what string, st []Frame, want ...bool) {
	t.Helper()
	if len(st) < len(want) {
		t.Fatalf("%s: %d frames, want %d or more", what, len(st), len(want))
	}
	for i, w := range want {
		if st[i].Inlined != w {
			t.Errorf("%s #%d %s: Inlined %v, want %v", what, i, st[i].Func, st[i].Inlined, w)
		}
	}
}

// frameCase is a line holding one frame, the frame it reads as, and
// whether the line is cut mid-way (the thread then has a note).
type frameCase struct {
	line string
	want Frame
	cut  bool
}

// checkFrameLines parses each line alone: one thread of one frame,
// nothing skipped.
func checkFrameLines(t *testing.T, parse dumpParser, tests []frameCase) {
	t.Helper()
	for _, tt := range tests {
		snap, skipped, err := parse(strings.NewReader(tt.line + "\n"))
		if err != nil || len(skipped) != 0 {
			t.Errorf("%s: err %v skipped %v", tt.line, err, skipped)
			continue
		}
		th := snap.Processes[0].Threads[0]
		if len(th.Stack) != 1 {
			t.Errorf("%s: %d frames", tt.line, len(th.Stack))
			continue
		}
		if got := th.Stack[0]; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s\n got %+v\nwant %+v", tt.line, got, tt.want)
		}
		if cut := len(th.Notes) > 0; cut != tt.cut {
			t.Errorf("%s: cut %v (notes %q), want %v", tt.line, cut, th.Notes, tt.cut)
		}
	}
}

// errorCase is an input a reader finds no dump in, and its error.
type errorCase struct{ in, want string }

// checkParseErrors parses each input: no snapshot, and a LineError that
// reads as want.
func checkParseErrors(t *testing.T, parse dumpParser, tests []errorCase) {
	t.Helper()
	for _, tt := range tests {
		snap, _, err := parse(strings.NewReader(tt.in))
		var le *LineError
		if snap != nil || !errors.As(err, &le) || err.Error() != tt.want {
			t.Errorf("%.60q: snap %v err %v, want %q", tt.in, snap, err, tt.want)
		}
	}
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

// fuzzDumps is the fuzz target of a reader: seeded with every stored
// dump of format (cut to 64 KiB: the fuzzer mutates small inputs best)
// and with seeds, it holds checkDumpResult on any input, then more, when
// given, on the snapshot.
func fuzzDumps(f *testing.F, format string, parse dumpParser, more func(*testing.T, *Snapshot), seeds ...string) {
	for _, file := range storedDumps(f, format) {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		if len(b) > 64<<10 {
			b = b[:64<<10]
		}
		f.Add(b)
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		snap, skipped, err := parse(bytes.NewReader(in))
		checkDumpResult(t, in, snap, skipped, err)
		if snap != nil && more != nil {
			more(t, snap)
		}
	})
}

// Bounds on a parse of a linear-time input: well under a second unloaded
// for a linear reader; a quadratic one takes 10¹⁰ steps and more on
// 200000 lines or 256 KiB lines squared. toolLinearBound, for the inputs
// of several MB of toolLinearCases, is loose for machines busy with other
// tests.
const (
	linearBound     = 5 * time.Second
	toolLinearBound = 20 * time.Second
)

// checkDumpLinear parses inputs that would take quadratic time in a
// careless reader; each must finish within bound. want says which of
// them yield a snapshot (true) and which an error (false); the others
// may do either.
func checkDumpLinear(t *testing.T, parse dumpParser, cases map[string]string, want map[string]bool, bound time.Duration) {
	for name, in := range cases {
		start := time.Now()
		snap, _, err := parse(strings.NewReader(in))
		if ok, listed := want[name]; listed && (ok && (err != nil || snap == nil) || !ok && err == nil) {
			t.Errorf("%s: snapshot %v, err %v", name, snap != nil, err)
		}
		if d := time.Since(start); d > bound {
			t.Errorf("%s: %v for %d bytes", name, d, len(in))
		}
	}
}

// allSnapshotsBut is the want of checkDumpLinear where every case yields
// a snapshot but those named, which yield an error.
func allSnapshotsBut(cases map[string]string, errs ...string) map[string]bool {
	want := map[string]bool{}
	for name := range cases {
		want[name] = !slices.Contains(errs, name)
	}
	return want
}

// benchmarkDumps reports parse speed (MB/s) over every stored dump of a
// format.
func benchmarkDumps(b *testing.B, format string, parse dumpParser) {
	var all [][]byte
	size := 0
	for _, file := range storedDumps(b, format) {
		d, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		all = append(all, d)
		size += len(d)
	}
	b.SetBytes(int64(size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, d := range all {
			if _, _, err := parse(bytes.NewReader(d)); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// benchmarkBigDump reports parse speed (MB/s) on in, a large synthetic
// dump, and, measured once after the timed runs, the peak heap of a parse
// of it read from a file as `hangdoc analyze FILE` reads it
// (peak-heap-MB, and peak/input: the peak over the input's size).
func benchmarkBigDump(b *testing.B, in []byte, parse dumpParser) {
	size := len(in)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := parse(bytes.NewReader(in)); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	path := filepath.Join(b.TempDir(), "dump.txt")
	if err := os.WriteFile(path, in, 0o644); err != nil {
		b.Fatal(err)
	}
	in = nil // as `hangdoc analyze FILE` does: the input is read, not held
	peak, _ := heapPeak(func() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		if _, _, err := parse(f); err != nil {
			b.Fatal(err)
		}
	})
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
	b.ReportMetric(float64(peak)/float64(size), "peak/input")
}

// heapPeak samples the live heap (objects, garbage not yet collected
// included) while f runs, without stopping the world, and returns the
// highest value over the heap before f.
func heapPeak(f func()) (peak, before uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	before = read()
	var max atomic.Uint64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			if v := read(); v > max.Load() {
				max.Store(v)
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(stop)
	wg.Wait()
	if v := read(); v > max.Load() {
		max.Store(v)
	}
	if m := max.Load(); m > before {
		return m - before, before
	}
	return 0, before
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
