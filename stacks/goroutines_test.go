package stacks

import (
	"github.com/hangdoc/hangdoc/internal/bigdump"

	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// The dumps under testdata/dumps/goroutines are taken here from the
// patients under testdata/gorun (gen.sh there regenerates them), with
// pasted variants.

func readGoDump(t testing.TB, name string) []byte {
	t.Helper()
	return readStoredDump(t, "goroutines", name)
}

func parseGoFile(t *testing.T, name string) (*Snapshot, []Skipped) {
	t.Helper()
	return parseStoredDump(t, "goroutines", name, ParseGoroutines)
}

func parseGoString(t *testing.T, in string) (*Snapshot, []Skipped) {
	t.Helper()
	snap, skipped, err := ParseGoroutines(strings.NewReader(in))
	if err != nil {
		t.Fatalf("%q: %v", in, err)
	}
	return snap, skipped
}

func goroutine(t *testing.T, p *Process, id int) *Thread {
	t.Helper()
	for _, th := range p.Threads {
		if th.Tid == id && th.Goroutine() != nil {
			return th
		}
	}
	t.Fatalf("no goroutine %d", id)
	return nil
}

// goroutinesWith returns the goroutines whose stack has fn, by id.
func goroutinesWith(p *Process, fn string) []*Thread {
	var out []*Thread
	for _, th := range p.Threads {
		for _, f := range th.Stack {
			if f.Func == fn {
				out = append(out, th)
				break
			}
		}
	}
	return out
}

func frameOf(t *testing.T, th *Thread, fn string) Frame {
	t.Helper()
	for _, f := range th.Stack {
		if f.Func == fn {
			return f
		}
	}
	t.Fatalf("goroutine %d: no frame %s in %q", th.Tid, fn, funcs(th.Stack))
	return Frame{}
}

func argValues(f Frame) []string {
	var out []string
	for _, a := range f.Args {
		if a.Name != "" {
			out = append(out, a.Name+"=")
		}
		out = append(out, a.Value)
	}
	return out
}

// goGoldenMax is the largest dump given a golden file: the leak's 1,000
// goroutines would make one of megabytes; TestParseGoroutinesLeak checks
// it instead.
const goGoldenMax = 256 << 10

func TestParseGoroutinesGolden(t *testing.T) {
	checkDumpGoldens(t, "goroutines", ParseGoroutines, goGoldenMax)
}

// Every dump produced here reads whole: nothing skipped, every goroutine
// with frames, a status, and (but for goroutine 1 and the M stacks) the
// frame that created it.
func TestParseGoroutinesRealDumps(t *testing.T) {
	real := []string{
		"abba_sigquit.txt", "abba_sigquit_crash.txt", "abba_sigquit_system.txt", "abba_pprof_debug2.txt",
		"abba_runtime_stack.txt", "rlock_sigquit.txt", "chansend_sigquit.txt", "waitgroup_sigquit.txt",
		"waitgroup_debug_stack.txt", "leak_sigquit.txt", "deadlock_fatal.txt", "gotest_timeout.txt",
		"go119_abba_sigquit.txt", "go119_rlock_sigquit.txt", "go119_gotest_timeout.txt", "server_sigquit.txt",
	}
	for _, name := range real {
		t.Run(name, func(t *testing.T) {
			snap, skipped := parseGoFile(t, name)
			if len(skipped) != 0 {
				t.Errorf("skipped %v", skipped)
			}
			if snap.Source != "goroutines" || snap.Schema != Schema || len(snap.Processes) != 1 {
				t.Fatalf("snapshot %+v", snap)
			}
			if !snap.Evidence.Arguments && name != "waitgroup_debug_stack.txt" {
				t.Errorf("no arguments read")
			}
			p := snap.Processes[0]
			if p.Pid != 0 || len(p.Notes) > 1 {
				t.Errorf("pid %d notes %q", p.Pid, p.Notes)
			}
			ids := map[int]bool{}
			for _, th := range p.Threads {
				g := th.Goroutine()
				if g == nil || g.Status == "" || th.State == "" || len(th.Stack) == 0 || len(th.Notes) != 0 {
					t.Errorf("goroutine %+v (%+v)", th, g)
					continue
				}
				if th.Tid != 0 {
					if ids[th.Tid] {
						t.Errorf("goroutine %d twice", th.Tid)
					}
					ids[th.Tid] = true
				}
				if want := "goroutine " + strconv.Itoa(th.Tid); !strings.HasPrefix(th.Name, want) {
					t.Errorf("name %q", th.Name)
				}
				main := th.Tid <= 1
				if (g.CreatedBy.Func == "") != main || g.CreatedBy.Func != "" && (g.CreatedBy.File == "" || g.CreatedBy.Line == 0) {
					t.Errorf("goroutine %d: created by %+v", th.Tid, g.CreatedBy)
				}
				for i, f := range th.Stack {
					if f.Func == "" || f.File == "" || f.Line == 0 {
						t.Errorf("goroutine %d #%d: %+v", th.Tid, i, f)
					}
				}
			}
		})
	}
}

// The ABBA patient: each transfer goroutine waits in sync.Mutex.Lock for
// the mutex the other holds, which the arguments show: lockSlow's
// receiver is the other transfer's first account (the mutex is its first
// field).
func TestParseGoroutinesABBA(t *testing.T) {
	tests := []struct {
		file, status, lockSlow string
		minutes, creator       int
	}{
		{"abba_sigquit.txt", "sync.Mutex.Lock", "internal/sync.(*Mutex).lockSlow", 2, 1},
		{"abba_sigquit_system.txt", "sync.Mutex.Lock", "internal/sync.(*Mutex).lockSlow", 0, 1},
		{"abba_sigquit_crash.txt", "sync.Mutex.Lock", "internal/sync.(*Mutex).lockSlow", 0, 1},
		{"abba_pprof_debug2.txt", "sync.Mutex.Lock", "internal/sync.(*Mutex).lockSlow", 0, 1},
		{"abba_runtime_stack.txt", "sync.Mutex.Lock", "internal/sync.(*Mutex).lockSlow", 0, 1},
		{"pasted_issue.md", "sync.Mutex.Lock", "internal/sync.(*Mutex).lockSlow", 2, 1},
		{"go119_abba_sigquit.txt", "semacquire", "sync.(*Mutex).lockSlow", 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			snap, _ := parseGoFile(t, tt.file)
			p := snap.Processes[0]
			ws := goroutinesWith(p, "main.(*bank).transfer")
			if len(ws) != 2 {
				t.Fatalf("%d goroutines in transfer", len(ws))
			}
			for i, th := range ws {
				g := th.Goroutine()
				if g.Status != tt.status || g.WaitMinutes != tt.minutes || th.State != "S" || g.LockedToThread {
					t.Errorf("goroutine %d: %+v state %s", th.Tid, g, th.State)
				}
				if g.CreatedBy.Func != "main.main" || !strings.HasSuffix(g.CreatedBy.File, "/main.go") ||
					g.CreatedBy.Line != 56+i || g.CreatedByID != tt.creator {
					t.Errorf("goroutine %d created by %+v in %d", th.Tid, g.CreatedBy, g.CreatedByID)
				}
				want := []string{"runtime.gopark", "runtime.goparkunlock", "runtime.semacquire1", "sync.runtime_SemacquireMutex",
					"sync.(*Mutex).lockSlow", "sync.(*Mutex).Lock", "main.(*bank).transfer", "main.main.func" + strconv.Itoa(i+1), "runtime.goexit"}
				if tt.lockSlow != "sync.(*Mutex).lockSlow" {
					want = []string{"runtime.gopark", "runtime.goparkunlock", "runtime.semacquire1", "internal/sync.runtime_SemacquireMutex",
						"internal/sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).Lock", "sync.(*Mutex).Lock", "main.(*bank).transfer",
						"main.main.func" + strconv.Itoa(i+1), "runtime.goexit"}
				}
				if strings.Contains(tt.file, "pprof") || strings.Contains(tt.file, "stack") {
					want = want[3 : len(want)-1] // runtime frames are hidden below GOTRACEBACK=system
				}
				if got := funcs(th.Stack); !reflect.DeepEqual(got, want) {
					t.Errorf("goroutine %d\n got %q\nwant %q", th.Tid, got, want)
				}
				for _, f := range th.Stack {
					if f.Inlined != (len(f.Args) == 0 && f.Func != "runtime.goexit" && !strings.HasPrefix(f.Func, "main.main.func")) {
						t.Errorf("goroutine %d %s: inlined %v args %q", th.Tid, f.Func, f.Inlined, argValues(f))
					}
					if f.Inlined && f.PC != 0 {
						t.Errorf("inlined %s has a pc", f.Func)
					}
				}
				if sys := !strings.Contains(tt.file, "pprof") && !strings.Contains(tt.file, "stack"); sys != (th.Stack[0].PC != 0) {
					t.Errorf("goroutine %d #0 pc %#x: fp/sp/pc shown %v", th.Tid, th.Stack[0].PC, sys)
				}
			}
			a, b := ws[0], ws[1]
			ta, tb := frameOf(t, a, "main.(*bank).transfer"), frameOf(t, b, "main.(*bank).transfer")
			la, lb := frameOf(t, a, tt.lockSlow), frameOf(t, b, tt.lockSlow)
			if len(ta.Args) != 4 || len(tb.Args) != 4 || len(la.Args) != 1 || len(lb.Args) != 1 {
				t.Fatalf("args: %q %q %q %q", argValues(ta), argValues(tb), argValues(la), argValues(lb))
			}
			// transfer(b, from, to, n): a waits for its "to", which is b's "from", and back.
			if la.Args[0].Value != ta.Args[2].Value || la.Args[0].Value != tb.Args[1].Value ||
				lb.Args[0].Value != tb.Args[2].Value || lb.Args[0].Value != ta.Args[1].Value {
				t.Errorf("lock addresses do not cross: %q %q / %q %q", argValues(la), argValues(ta), argValues(lb), argValues(tb))
			}
			if ta.Args[3].Value != "0xa" || tb.Args[3].Value != "0x14" {
				t.Errorf("amounts %q %q", ta.Args[3].Value, tb.Args[3].Value)
			}
			if ta.Line != 37 || !strings.HasSuffix(ta.File, "abba/main.go") && !strings.HasSuffix(ta.File, "abba-go119/main.go") {
				t.Errorf("transfer at %s:%d", ta.File, ta.Line)
			}
			main := goroutine(t, p, 1)
			if main.Goroutine().CreatedBy.Func != "" || main.Goroutine().CreatedByID != 0 {
				t.Errorf("goroutine 1 created by %+v", main.Goroutine().CreatedBy)
			}
		})
	}
}

// A dump says where it came from; one that shows no process says nothing.
func TestParseGoroutinesMessages(t *testing.T) {
	tests := []struct{ file, msg, note string }{
		{"abba_sigquit.txt", "SIGQUIT: quit", ""},
		{"abba_pprof_debug2.txt", "", ""},
		{"waitgroup_debug_stack.txt", "", ""},
		{"deadlock_fatal.txt", "fatal error: all goroutines are asleep - deadlock!", ""},
		{"gotest_timeout.txt", "panic: test timed out after 2s", "running test: TestStore (2s)"},
		{"go119_gotest_timeout.txt", "panic: test timed out after 2s", ""}, // Go 1.19 does not name the tests
		{"ci_log.txt", "panic: test timed out after 2s", "running test: TestStore (2s)"},
	}
	for _, tt := range tests {
		snap, _ := parseGoFile(t, tt.file)
		p := snap.Processes[0]
		if p.Message != tt.msg || strings.Join(p.Notes, "|") != tt.note {
			t.Errorf("%s: message %q notes %q, want %q %q", tt.file, p.Message, p.Notes, tt.msg, tt.note)
		}
	}
}

// GOTRACEBACK=crash: every M prints its own section after "-----", with
// its scheduler stack (goroutine 0) and registers; each M's goroutine 0
// is a thread of its own, named after the M, and nothing is skipped.
func TestParseGoroutinesCrash(t *testing.T) {
	snap, skipped := parseGoFile(t, "abba_sigquit_crash.txt")
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	var ms []string
	for _, th := range p.Threads {
		if th.Tid == 0 {
			ms = append(ms, th.Name)
			if th.Goroutine().Status != "idle" || th.Stack[len(th.Stack)-1].Func != "runtime.mcall" && th.Stack[len(th.Stack)-1].Func != "runtime.mstart" {
				t.Errorf("%s: %s %q", th.Name, th.Goroutine().Status, funcs(th.Stack))
			}
		}
	}
	raw := string(readGoDump(t, "abba_sigquit_crash.txt"))
	if n := strings.Count(raw, "\n-----\n") + 1; len(ms) != n || ms[0] != "goroutine 0 (m0)" {
		t.Errorf("M stacks %q, want %d", ms, n)
	}
	if len(p.Threads) != strings.Count(raw, "\ngoroutine ") {
		t.Errorf("%d threads", len(p.Threads))
	}
}

// The recursive RLock: the reader waits in RLock under its own read lock
// (get → lookup on the same cache), the writer in Lock.
func TestParseGoroutinesRLock(t *testing.T) {
	for _, file := range []string{"rlock_sigquit.txt", "quoted_reply.txt", "go119_rlock_sigquit.txt"} {
		t.Run(file, func(t *testing.T) {
			snap, _ := parseGoFile(t, file)
			p := snap.Processes[0]
			rs, ws := goroutinesWith(p, "main.(*cache).lookup"), goroutinesWith(p, "main.(*cache).set")
			if len(rs) != 1 || len(ws) != 1 {
				t.Fatalf("readers %d writers %d", len(rs), len(ws))
			}
			r, w := rs[0], ws[0]
			wantR, wantW := "sync.RWMutex.RLock", "sync.RWMutex.Lock"
			if strings.HasPrefix(file, "go119") {
				wantR, wantW = "semacquire", "semacquire"
			}
			if r.Goroutine().Status != wantR || w.Goroutine().Status != wantW {
				t.Errorf("statuses %q %q", r.Goroutine().Status, w.Goroutine().Status)
			}
			lookup, get := frameOf(t, r, "main.(*cache).lookup"), frameOf(t, r, "main.(*cache).get")
			if strings.TrimSuffix(lookup.Args[0].Value, "?") != get.Args[0].Value {
				t.Errorf("lookup %q, get %q: the same cache", argValues(lookup), argValues(get))
			}
			frameOf(t, r, "sync.(*RWMutex).RLock")
			frameOf(t, w, "sync.(*RWMutex).Lock")
		})
	}
}

// Pasted variants give the same goroutines as the dumps they come from,
// and say which lines were prose.
func TestParseGoroutinesPasted(t *testing.T) {
	// gen.sh wraps each dump in a few lines of prose: after lines after
	// the dump's end is the closing prose's line.
	tests := []struct {
		file, from string
		first      string
		after      int
	}{
		{"pasted_issue.md", "abba_sigquit.txt", "lines 1–2", 7},
		{"quoted_reply.txt", "rlock_sigquit.txt", "line 1", 3},
		{"ci_log.txt", "gotest_timeout.txt", "lines 1–2", 3},
		{"no_tabs.txt", "deadlock_fatal.txt", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, skipped := parseGoFile(t, tt.file)
			want, _ := parseGoFile(t, tt.from)
			var wantSkipped []string
			if tt.first != "" {
				n := bytes.Count(readGoDump(t, tt.from), []byte("\n"))
				wantSkipped = []string{tt.first + " skipped: not a stack", fmt.Sprintf("line %d skipped: not a stack", n+tt.after)}
			}
			checkSkipped(t, skipped, wantSkipped...)
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(want)
			if !bytes.Equal(gj, wj) {
				t.Errorf("%s and %s differ:\n%s", tt.file, tt.from, firstLineDiff(string(wj), string(gj)))
			}
		})
	}

	// Two dumps in one log: two processes.
	snap, skipped := parseGoFile(t, "log_two_dumps.txt")
	n := bytes.Count(readGoDump(t, "waitgroup_debug_stack.txt"), []byte("\n"))
	checkSkipped(t, skipped, "lines 1–2 skipped: not a stack", fmt.Sprintf("line %d skipped: not a stack", n+3))
	a, _ := parseGoFile(t, "waitgroup_debug_stack.txt")
	b, _ := parseGoFile(t, "waitgroup_sigquit.txt")
	gj, _ := json.Marshal(snap.Processes)
	wj, _ := json.Marshal(append(a.Processes, b.Processes...))
	if !bytes.Equal(gj, wj) {
		t.Errorf("log: %s", firstLineDiff(string(wj), string(gj)))
	}
}

// A paste cut inside a frame's arguments keeps the frame, the arguments
// read whole, and a note.
func TestParseGoroutinesCut(t *testing.T) {
	snap, skipped := parseGoFile(t, "cut_midline.txt")
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	last := p.Threads[len(p.Threads)-1]
	if last.Tid != 3 || last.Goroutine().Status != "chan send" || last.Goroutine().WaitMinutes != 2 {
		t.Fatalf("last goroutine %+v", last.Goroutine())
	}
	if got := funcs(last.Stack); !reflect.DeepEqual(got, []string{"runtime.gopark", "runtime.chansend", "runtime.chansend1"}) {
		t.Errorf("stack %q", got)
	}
	f := last.Stack[2]
	if !reflect.DeepEqual(argValues(f), []string{"0x2faf080?"}) || f.File != "" || len(last.Notes) != 1 ||
		!strings.Contains(last.Notes[0], "frame #2 cut mid-way") {
		t.Errorf("cut frame %+v notes %q", f, last.Notes)
	}
}

// A leak: the 1,000 goroutines parked at one select are one group.
func TestParseGoroutinesLeak(t *testing.T) {
	snap, _ := parseGoFile(t, "leak_sigquit.txt")
	p := snap.Processes[0]
	groups := GroupThreads(p.Threads)
	g := groups[0]
	if len(g.Threads) != 1000 || g.Stack[len(g.Stack)-2].Func != "main.(*server).handle.func1" {
		t.Fatalf("largest group: %d goroutines in %q", len(g.Threads), funcs(g.Stack))
	}
	for _, th := range g.Threads {
		if gr := th.Goroutine(); gr.Status != "select" || gr.WaitMinutes != 1 || gr.CreatedBy.Func != "main.(*server).handle" {
			t.Fatalf("goroutine %d: %+v", th.Tid, gr)
		}
	}
}

// One goroutine per input, in the layouts of several Go versions and of
// cgo, and cut in several places.
func TestParseGoroutinesFrames(t *testing.T) {
	tests := []struct {
		in    string
		want  Frame
		notes string
	}{
		{"main.(*T).m(0xc000012345, {0x1, 0x2}, 0x0?, ...)\n\t/x/y.go:12 +0x1d",
			Frame{Func: "main.(*T).m", File: "/x/y.go", Line: 12,
				Args: []Arg{NewArg("", "0xc000012345"), NewArg("", "{0x1, 0x2}"), NewArg("", "0x0?"), NewArg("", "...")}}, ""},
		{"sync.(*Mutex).Lock(...)\n\t/usr/local/go/src/sync/mutex.go:46",
			Frame{Func: "sync.(*Mutex).Lock", File: "/usr/local/go/src/sync/mutex.go", Line: 46, Inlined: true}, ""},
		{"example.com/m/v2.Map[...](...)\n\t/m/map.go:3",
			Frame{Func: "example.com/m/v2.Map[...]", File: "/m/map.go", Line: 3, Inlined: true}, ""},
		{"main.(*List[...]).Push(0x1, {0x2, {0x3, 0x4}})\n\t/m/list.go:3 +0x1",
			Frame{Func: "main.(*List[...]).Push", File: "/m/list.go", Line: 3, Args: []Arg{NewArg("", "0x1"), NewArg("", "{0x2, {0x3, 0x4}}")}}, ""},
		{"panic({0x4b6f40?, 0x5350a0?})\n\t/usr/local/go/src/runtime/panic.go:791 +0x132",
			Frame{Func: "runtime.gopanic", File: "/usr/local/go/src/runtime/panic.go", Line: 791, Args: []Arg{NewArg("", "{0x4b6f40?, 0x5350a0?}")}}, ""},
		{"runtime.goexit({})\n\t/usr/local/go/src/runtime/asm_amd64.s:1771 +0x1 fp=0xc000 sp=0xc000 pc=0x4845e1",
			Frame{Func: "runtime.goexit", File: "/usr/local/go/src/runtime/asm_amd64.s", Line: 1771, PC: 0x4845e1, Args: []Arg{NewArg("", "{}")}}, ""},
		{"main.main()\n\tC:/Users/dev/app/main.go:10 +0x25", Frame{Func: "main.main", File: "C:/Users/dev/app/main.go", Line: 10}, ""},
		{"main.main()\n\t_testmain.go:47 +0x1aa", Frame{Func: "main.main", File: "_testmain.go", Line: 47}, ""},
		{"main.(*T).String(0x0)\n\t<autogenerated>:1 +0x2c", Frame{Func: "main.(*T).String", File: "<autogenerated>", Line: 1, Args: []Arg{NewArg("", "0x0")}}, ""},
		{"main.f(_, 0x1)\n\t/dir with space/f.go:9 +0x1", Frame{Func: "main.f", File: "/dir with space/f.go", Line: 9, Args: []Arg{NewArg("", "_"), NewArg("", "0x1")}}, ""},
		{"gopkg.in/yaml%2ev3.(*parser).parse(0x1)\n\t/y.go:1 +0x1", Frame{Func: "gopkg.in/yaml%2ev3.(*parser).parse", File: "/y.go", Line: 1, Args: []Arg{NewArg("", "0x1")}}, ""},
		{"non-Go function at pc=0x7f0000001000", Frame{PC: 0x7f0000001000}, ""},
		{"cfoo\n\t/src/foo.c:12 pc=0x401000", Frame{Func: "cfoo", File: "/src/foo.c", Line: 12, PC: 0x401000}, ""},
		{"non-Go function\n\tpc=0x401000", Frame{PC: 0x401000}, ""},
		// without the tab a web form ate
		{"main.run(0x1)\n/src/run.go:5 +0x10", Frame{Func: "main.run", File: "/src/run.go", Line: 5, Args: []Arg{NewArg("", "0x1")}}, ""},
		// cut
		{"main.(*bank).transfer(0xc0000a8010, {0x1, 0x2}, 0xc00", Frame{Func: "main.(*bank).transfer",
			Args: []Arg{NewArg("", "0xc0000a8010"), NewArg("", "{0x1, 0x2}")}}, "line 2: frame #0 cut mid-way; its function name may be partial"},
		{"main.(*bank).transfer(0xc0000a8010, {0x1, 0x", Frame{Func: "main.(*bank).transfer",
			Args: []Arg{NewArg("", "0xc0000a8010")}}, "line 2: frame #0 cut mid-way; its function name may be partial"},
		{"main.(*bank).tra", Frame{Func: "main.(*bank).tra"}, "line 2: frame #0 cut mid-way; its function name may be partial"},
		{"main.main()\n\t/tmp/app/ma", Frame{Func: "main.main", File: "/tmp/app/ma"}, "line 2: frame #0 cut mid-way; its function name may be partial"},
		{"main.main()", Frame{Func: "main.main"}, "line 2: frame #0 has no file:line under it"},
	}
	for _, tt := range tests {
		snap, skipped := parseGoString(t, "goroutine 7 [running]:\n"+tt.in)
		th := snap.Processes[0].Threads[0]
		if len(skipped) != 0 || len(th.Stack) != 1 {
			t.Errorf("%q: skipped %v, %d frames", tt.in, skipped, len(th.Stack))
			continue
		}
		if got := th.Stack[0]; !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%q\n got %+v\nwant %+v", tt.in, got, tt.want)
		}
		if got := strings.Join(th.Notes, "|"); got != tt.notes {
			t.Errorf("%q: notes %q, want %q", tt.in, got, tt.notes)
		}
	}
}

func TestParseGoroutinesHeaders(t *testing.T) {
	tests := []struct {
		header string
		want   RuntimeThread
		state  string
		name   string
		notes  string
	}{
		{"goroutine 7 [sync.Mutex.Lock, 12 minutes, locked to thread]:", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "sync.Mutex.Lock", WaitMinutes: 12, LockedToThread: true}, "S", "", ""},
		{"goroutine 7 gp=0xc000102000 m=3 mp=0xc000100008 [running]:", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "running"}, "R", "", ""},
		{"goroutine 0 gp=0x5f4880 m=4 mp=0xc000100008 [idle]:", RuntimeThread{Kind: KindGoroutine, ID: 0, Status: "idle"}, "S", "goroutine 0 (m4)", ""},
		{"goroutine 7 gp=0xc000102000 m=nil [syscall, 5 minutes]:", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "syscall", WaitMinutes: 5}, "S", "", ""},
		{"goroutine 7 [runnable]:", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "runnable"}, "R", "", ""},
		{"goroutine 7 [chan receive (nil chan), 1 minutes]:", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "chan receive (nil chan)", WaitMinutes: 1}, "S", "", ""},
		{"goroutine 7 [select (no cases)]:", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "select (no cases)"}, "S", "", ""},
		{"goroutine 7 [GC worker (idle) (scan)]:", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "GC worker (idle)"}, "S", "", ""},
		{"goroutine 7 [chan send (durable), synctest bubble 3]:", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "chan send (durable)"}, "S", "", ""},
		{`goroutine 7 [select, 3 minutes, locked to thread labels:{"k": "v]:", "w": "x, y"}]:`, RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "select", WaitMinutes: 3, LockedToThread: true}, "S", "", ""},
		{"goroutine 7 [IO wait]", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "IO wait"}, "S", "", ""},
		{"goroutine 7 [IO wa", RuntimeThread{Kind: KindGoroutine, ID: 7, Status: "IO wa"}, "S", "", "line 1: goroutine header cut mid-way"},
		{"goroutine 9223372036854775807 [dead]:", RuntimeThread{Kind: KindGoroutine, ID: 9223372036854775807, Status: "dead"}, "X", "", ""},
	}
	for _, tt := range tests {
		snap, skipped := parseGoString(t, tt.header+"\nmain.main()\n\t/m.go:1 +0x1\n")
		th := snap.Processes[0].Threads[0]
		want := tt.want
		want.ID = 0 // the id is the Tid: goroutines alike share their RuntimeThread (share.go)
		if len(skipped) != 0 || th.Goroutine() == nil || !reflect.DeepEqual(*th.Goroutine(), want) || th.State != tt.state || th.Tid != tt.want.ID {
			t.Errorf("%s: skipped %v, %+v %s", tt.header, skipped, th.Goroutine(), th.State)
		}
		name := tt.name
		if name == "" {
			name = "goroutine " + strconv.Itoa(tt.want.ID)
		}
		if th.Name != name || strings.Join(th.Notes, "|") != tt.notes {
			t.Errorf("%s: name %q notes %q", tt.header, th.Name, th.Notes)
		}
	}
	for _, bad := range []string{"goroutine 99999999999999999999 [running]:", "goroutine x [running]:", "goroutine 7 running", "goroutine  [x]:"} {
		if _, _, err := ParseGoroutines(strings.NewReader(bad + "\nmain.main()\n\t/m.go:1\n")); err == nil {
			t.Errorf("%q read as a header", bad)
		}
	}
}

// The runtime's own markers: elided frames, a stack it could not read,
// ancestors, "created by" in both layouts.
func TestParseGoroutinesMarkers(t *testing.T) {
	in := `goroutine 1 [running]:
main.deep(0x64)
	/m.go:5 +0x1
...120 frames elided...
main.deep(0x1)
	/m.go:5 +0x1
...additional frames elided...
created by main.start in goroutine 42
	/m.go:9 +0x2

goroutine 2 [running]:
	goroutine running on other thread; stack unavailable
created by main.main
	/m.go:10 +0x3

goroutine 3 [chan receive]:
main.child()
	/m.go:20 +0x4
created by main.parent in goroutine 2
	/m.go:19 +0x5
[originating from goroutine 2]:
main.parent(...)
	/m.go:19 +0x5
created by main.main
	/m.go:10 +0x3
`
	snap, skipped := parseGoString(t, in)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	p := snap.Processes[0]
	g1, g2, g3 := goroutine(t, p, 1), goroutine(t, p, 2), goroutine(t, p, 3)
	if len(g1.Stack) != 2 || strings.Join(g1.Notes, "|") != "120 frames elided by the runtime between the frames shown|frames elided by the runtime: the stack is deeper than the dump shows" ||
		g1.Goroutine().CreatedBy.Func != "main.start" || g1.Goroutine().CreatedByID != 42 || g1.Goroutine().CreatedBy.Line != 9 {
		t.Errorf("g1 %q %q %+v", funcs(g1.Stack), g1.Notes, g1.Goroutine())
	}
	if len(g2.Stack) != 0 || g2.Stack == nil || len(g2.Notes) != 1 || !strings.Contains(g2.Notes[0], "stack unavailable") ||
		g2.Goroutine().CreatedBy.Func != "main.main" || g2.Goroutine().CreatedByID != 0 {
		t.Errorf("g2 %+v %+v", g2, g2.Goroutine())
	}
	if got := funcs(g3.Stack); !reflect.DeepEqual(got, []string{"main.child"}) || g3.Goroutine().CreatedBy.Func != "main.parent" ||
		len(g3.Notes) != 1 || !strings.Contains(g3.Notes[0], "[originating from goroutine 2]") {
		t.Errorf("g3 %q %+v %q", got, g3.Goroutine(), g3.Notes)
	}
}

// A goroutine first printed without its stack (running on another M) is
// filled in by the crash section of that M; a goroutine printed again
// with its stack starts a second dump.
func TestParseGoroutinesRepeats(t *testing.T) {
	in := `SIGQUIT: quit
PC=0x1 m=0 sigcode=0

goroutine 5 gp=0xc1 m=2 mp=0xc2 [running]:
	goroutine running on other thread; stack unavailable

goroutine 1 gp=0xc3 m=nil [sleep]:
time.Sleep(0x3b9aca00)
	/go/src/runtime/time.go:300 +0x1
main.main()
	/m.go:5 +0x2

-----

SIGQUIT: quit
PC=0x2 m=2 sigcode=0

goroutine 5 gp=0xc1 m=2 mp=0xc2 [running]:
main.spin()
	/m.go:9 +0x3
created by main.main in goroutine 1
	/m.go:4 +0x4

goroutine 1 gp=0xc3 m=nil [sleep]:
time.Sleep(0x3b9aca00)
	/go/src/runtime/time.go:300 +0x1
main.main()
	/m.go:5 +0x2
rax    0x0
rflags 0x246

goroutine 1 [running]:
main.main()
	/m.go:7 +0x9
`
	snap, skipped := parseGoString(t, in)
	if len(skipped) != 0 || len(snap.Processes) != 2 {
		t.Fatalf("skipped %v, %d processes", skipped, len(snap.Processes))
	}
	p := snap.Processes[0]
	if len(p.Threads) != 2 || p.Message != "SIGQUIT: quit" || len(p.Notes) != 0 {
		t.Fatalf("threads %d message %q notes %q", len(p.Threads), p.Message, p.Notes)
	}
	g5 := goroutine(t, p, 5)
	if got := funcs(g5.Stack); !reflect.DeepEqual(got, []string{"main.spin"}) || len(g5.Notes) != 0 || g5.Goroutine().CreatedBy.Func != "main.main" || g5.State != "R" {
		t.Errorf("g5 %q %q %+v", got, g5.Notes, g5.Goroutine())
	}
	if g1 := goroutine(t, p, 1); len(g1.Stack) != 2 {
		t.Errorf("g1 %q", funcs(g1.Stack))
	}
	if q := snap.Processes[1]; len(q.Threads) != 1 || q.Message != "" || q.Threads[0].Stack[0].Line != 7 {
		t.Errorf("second dump %+v", q)
	}
}

func TestParseGoroutinesErrors(t *testing.T) {
	debug1 := "goroutine profile: total 3\n2 @ 0x43b1c5 0x44a8f2\n#\t0x43b1c5\truntime.gopark+0xe5\t/go/src/runtime/proc.go:398\n"
	checkParseErrors(t, ParseGoroutines, []errorCase{
		{"", "empty input: no goroutine dump"},
		{"\n\n  \n", "empty input: no goroutine dump"},
		{"hello\nworld\n", `line 1: not a Go goroutine dump: no goroutine header ("goroutine 1 [running]:")`},
		{"\n\nSIGQUIT: quit\nPC=0x1 m=0 sigcode=0\n", `line 3: not a Go goroutine dump: no goroutine header ("goroutine 1 [running]:")`},
		{"main.main()\n\t/m.go:1 +0x1\n", `line 1: not a Go goroutine dump: no goroutine header ("goroutine 1 [running]:")`},
		{debug1, `line 1: not a Go goroutine dump: no goroutine header ("goroutine 1 [running]:")`},
	})
	if _, skipped, _ := ParseGoroutines(strings.NewReader(debug1)); len(skipped) != 1 || !strings.Contains(skipped[0].Why, "debug=2") || skipped[0].To != 3 {
		t.Errorf("debug=1: skipped %v", skipped)
	}
}

func TestParseGoroutinesReadError(t *testing.T) {
	snap, _, err := ParseGoroutines(&brokenReader{data: []byte("goroutine 1 [running]:\nmain.main()\n\t/m.go:1 +0x1\n")})
	if err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("err %v", err)
	}
	if snap == nil || len(snap.Processes[0].Threads) != 1 || len(snap.Processes[0].Threads[0].Stack) != 1 {
		t.Fatalf("what was read before the error is lost: %+v", snap)
	}
}

func TestParseGoroutinesLongLine(t *testing.T) {
	in := "goroutine 1 [running]:\nmain." + strings.Repeat("x", 1<<20) + "(0x1)\n\t/m.go:1 +0x1\nmain.main()\n\t/m.go:2 +0x1\n"
	snap, _ := parseGoString(t, in)
	st := snap.Processes[0].Threads[0].Stack
	if len(st) != 2 || st[1].Func != "main.main" || len(st[0].Func) > maxLine {
		t.Fatalf("%d frames", len(st))
	}
}

// Detection picks "goroutines" for Go dumps and leaves gdb dumps (of Go
// programs too) to gdb.
func TestDetectGoroutines(t *testing.T) {
	gdbOfGo := "Thread 1 (Thread 0x7f0 (LWP 5)):\n#0  runtime.futex () at /usr/lib/go/src/runtime/sys_linux_amd64.s:557\n#1  0x000000000042f6a6 in runtime.futexsleep (addr=0x5b2ea8, val=0) at /usr/lib/go/src/runtime/os_linux.go:69\n"
	if _, _, name, _ := Parse(strings.NewReader(gdbOfGo), ""); name != "gdb" {
		t.Errorf("gdb of a Go program detected as %q", name)
	}
	one := "goroutine 1 [running]:\nmain.main()\n\t/m.go:3 +0x1d\n"
	if _, _, name, err := Parse(strings.NewReader(one), ""); name != "goroutines" || err != nil {
		t.Errorf("debug.Stack detected as %q (%v)", name, err)
	}
}

func FuzzParseGoroutines(f *testing.F) {
	fuzzDumps(f, "goroutines", ParseGoroutines, func(t *testing.T, snap *Snapshot) {
		for _, p := range snap.Processes {
			if len(p.Threads) == 0 {
				t.Fatalf("a process without goroutines")
			}
			seen := map[int]bool{}
			for _, th := range p.Threads {
				g := th.Goroutine()
				if th.Stack == nil || g == nil || th.State == "" {
					t.Fatalf("thread %+v", th)
				}
				if th.Tid != 0 && seen[th.Tid] {
					t.Fatalf("goroutine %d twice in a process", th.Tid)
				}
				seen[th.Tid] = true
				if len(th.Notes) > 20 {
					t.Fatalf("%d notes", len(th.Notes))
				}
				for _, f := range th.Stack {
					if len(f.Args) > maxGoArgs {
						t.Fatalf("%d args", len(f.Args))
					}
				}
			}
		}
	},
		"goroutine 1 [running]:\nmain.f({0x1, {\n\t/m.go:1 +0x\ncreated by \n",
		"goroutine 0 [idle]:\n-----\nSIGQUIT: quit\ngoroutine 0 [idle]:\ngoroutine 1 [x]:\n\tgoroutine running on other thread; stack unavailable\ngoroutine 1 [y]:\na.b()\n\tpc=0x1\n",
		"panic: x\n\trunning tests:\n\t\tT (1s)\n[originating from goroutine 1]:\ngoroutine 1 [a, 1 minutes, labels:{\"]:\"}]:\nx.y\n")
}

// Inputs that would take quadratic time in a careless parser stay fast.
func TestParseGoroutinesLinearTime(t *testing.T) {
	cases := map[string]string{
		"braces":       "goroutine 1 [running]:\nmain.f(" + strings.Repeat("{", 200000) + ")\n",
		"commas":       "goroutine 1 [running]:\nmain.f(" + strings.Repeat("0x1, ", 100000) + ")\n\t/m.go:1\n",
		"parens":       "goroutine 1 [running]:\nmain.f" + strings.Repeat(".(", 100000) + "\n",
		"location":     "goroutine 1 [running]:\nmain.f()\n\t/m.go:1" + strings.Repeat(" +0x1", 100000) + "\n",
		"headers":      strings.Repeat("goroutine 1 [running]:\n", 50000),
		"same id":      strings.Repeat("goroutine 1 [running]:\nmain.main()\n\t/m.go:1 +0x1\n", 30000),
		"zero ids":     "SIGQUIT: quit\n" + strings.Repeat("goroutine 0 gp=0x1 m=1 mp=0x2 [idle]:\n-----\n", 30000),
		"frames":       "goroutine 1 [running]:\n" + strings.Repeat("main.f(0x1)\n\t/m.go:1 +0x1\n", 100000),
		"bare names":   "goroutine 1 [running]:\n" + strings.Repeat("main.f\n", 100000),
		"prose":        strings.Repeat("zz\n\n", 50000),
		"labels":       "goroutine 1 [select" + strings.Repeat(" labels:{", 100000) + "]:\n",
		"statuses":     "goroutine 1 [" + strings.Repeat("a, ", 100000) + "]:\n",
		"created by":   "goroutine 2 [running]:\n" + strings.Repeat("created by main.main in goroutine 1\n", 50000),
		"notes":        "goroutine 1 [running]:\n" + strings.Repeat("...additional frames elided...\n...7 frames elided...\n", 50000),
		"messages":     strings.Repeat("panic: x\ngoroutine 1 [running]:\nfatal error: y\n", 20000),
		"indented":     "panic: x\n" + strings.Repeat("\tnote\n", 100000),
		"intern table": "goroutine 1 [running]:\n" + genDistinctFrames(100000),
	}
	checkDumpLinear(t, ParseGoroutines, cases, allSnapshotsBut(cases, "prose", "indented"), linearBound)
}

func genDistinctFrames(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "main.f%d(0x%x)\n\t/src/f%d.go:%d +0x1\n", i, i, i, i)
	}
	return b.String()
}

// syntheticGoDump builds a dump of about size bytes from the real ones:
// their goroutines, renumbered so that every id is new, under one
// SIGQUIT header, as a service with a very large number of goroutines
// would print it.
func syntheticGoDump(t testing.TB, size int) []byte {
	var texts []string
	for _, name := range bigdump.GoSources {
		texts = append(texts, string(readGoDump(t, name)))
	}
	b, err := bigdump.Goroutines(texts, size)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestParseGoroutinesMemory bounds what a large dump costs: the parser
// reads one line at a time, so memory is the snapshot's (frames,
// arguments) and the GC's slack, not a copy of the input. It logs the
// figures: peak heap during the parse and heap kept by the snapshot,
// both over the input's size.
func TestParseGoroutinesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 32 MB dump")
	}
	in := syntheticGoDump(t, 32<<20)
	path := filepath.Join(t.TempDir(), "dump.txt")
	if err := os.WriteFile(path, in, 0o644); err != nil {
		t.Fatal(err)
	}
	size := len(in)
	in = nil // as `hangdoc analyze FILE` does: the input is read, not held
	var snap *Snapshot
	peak, before := heapPeak(func() {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		snap, _, err = ParseGoroutines(f)
		if err != nil {
			t.Fatal(err)
		}
	})
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	kept := ms.HeapAlloc - before
	n, frames := 0, 0
	for _, th := range snap.Processes[0].Threads {
		n++
		frames += len(th.Stack)
	}
	runtime.KeepAlive(snap)
	mb := float64(size) / (1 << 20)
	t.Logf("%.0f MB dump, %d goroutines, %d frames: peak heap %.0f MB (%.2fx input), snapshot %.0f MB (%.2fx)",
		mb, n, frames, float64(peak)/(1<<20), float64(peak)/float64(size), float64(kept)/(1<<20), float64(kept)/float64(size))
	if peak > 3*uint64(size) {
		t.Errorf("peak heap %.0f MB for a %.0f MB dump: over 3x", float64(peak)/(1<<20), mb)
	}
}

// BenchmarkParseGoroutines reports parse speed (MB/s) and peak heap
// (benchmarkBigDump) on a synthetic dump of about 100 MB made of the real
// ones.
func BenchmarkParseGoroutines(b *testing.B) {
	benchmarkBigDump(b, syntheticGoDump(b, 100<<20), ParseGoroutines)
}

// BenchmarkParseGoroutinesFiles reports parse speed over the stored
// dumps as they are.
func BenchmarkParseGoroutinesFiles(b *testing.B) {
	benchmarkDumps(b, "goroutines", ParseGoroutines)
}
