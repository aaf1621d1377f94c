package attach_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// stripped are the flags go test and go run link with: no symbol
// table, no DWARF.
const stripped = "-ldflags=-s -w"

// TestGoStrippedAbba: the ABBA patient linked as go test links (-s -w)
// is read goroutine by goroutine from the runtime's structures: the
// same goroutines, statuses, frames (inlined sync.(*Mutex).Lock too),
// creators and objects as the runtime's own dump, and the verdict of
// its DWARF build: lock-order-cycle at medium with both holders named
// through transfer's argument words.
func TestGoStrippedAbba(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.StartGo(t, patient.BuildGo(t, "abba", stripped))
	live := attachGo(t, p.Pid, attach.Options{})
	dump := sigquitDump(t, p)
	if !strings.Contains(strings.Join(live.Notes, "\n"), "without DWARF") {
		t.Errorf("notes %q: want one saying the goroutines were read without DWARF", live.Notes)
	}
	line := patient.GoSourceLine(t, "abba", "to.mu.Lock()")
	locks := withStatus(live, "sync.Mutex.Lock")
	if len(locks) != 2 {
		t.Fatalf("%d goroutines in sync.Mutex.Lock, want 2", len(locks))
	}
	for _, th := range locks {
		g := th.Goroutine
		k := frameIndex(th.Stack, "main.(*bank).transfer")
		if k < 0 || !strings.HasSuffix(th.Stack[k].File, "gorun/abba/main.go") || th.Stack[k].Line != line {
			t.Errorf("goroutine %d: want main.(*bank).transfer at abba/main.go:%d, stack %+v", g.ID, line, th.Stack)
		}
		if i := frameIndex(th.Stack, "sync.(*Mutex).Lock"); i < 0 || !th.Stack[i].Inlined {
			t.Errorf("goroutine %d: no inlined sync.(*Mutex).Lock frame: %+v", g.ID, th.Stack)
		}
		d := byID(dump)[g.ID]
		if d == nil {
			t.Fatalf("goroutine %d is not in the dump", g.ID)
		}
		if want := dumpArg(t, d, "internal/sync.(*Mutex).lockSlow", 0); g.Object != want {
			t.Errorf("goroutine %d: object %#x, the dump's lockSlow receiver is %#x", g.ID, g.Object, want)
		}
	}
	top := heuristics.Diagnose(&stacks.Snapshot{Processes: []*stacks.Process{live}}, heuristics.Options{})[0]
	if top.ID != "lock-order-cycle" || top.Confidence != heuristics.Medium {
		t.Fatalf("diagnosis %s %s, want lock-order-cycle medium: %s", top.ID, top.Confidence, top.Summary)
	}
	for _, w := range locks {
		if !strings.Contains(top.Summary, fmt.Sprintf("waits for %#x, which goroutine", w.Goroutine.Object)) {
			t.Errorf("the diagnosis names no holder of %#x: %s", w.Goroutine.Object, top.Summary)
		}
	}
	compareWithDump(t, live, dump)
}

// unknownRelease copies a Go binary with its Go version rewritten to
// one whose runtime layout hangdoc does not know (go1.99): the build
// info and the runtime's version string, nothing the program runs on.
func unknownRelease(t *testing.T, bin, version string) string {
	t.Helper()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	v := []byte(version)
	fake := append([]byte("go1.99"), v[len("go1.xx"):]...)
	if len(v) < len("go1.xx") || !bytes.Contains(b, v) {
		t.Fatalf("%s does not hold its version %q", bin, version)
	}
	out := filepath.Join(t.TempDir(), filepath.Base(bin)+"-go1.99")
	if err := os.WriteFile(out, bytes.ReplaceAll(b, v, fake), 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestGoUnknownLayout: a stripped Go binary of a release whose runtime
// layout hangdoc does not know gets one note that says so and how to
// keep the DWARF, and its OS threads (named from the pclntab); every
// verdict on it is low confidence and says the goroutines were not read.
func TestGoUnknownLayout(t *testing.T) {
	patient.RequirePtrace(t)
	bin := patient.BuildGo(t, "abba", stripped)
	p := patient.StartGo(t, unknownRelease(t, bin, goVersionOf(t, bin)))
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	proc := snap.Processes[0]
	note := strings.Join(proc.Notes, "\n")
	if !strings.HasPrefix(proc.Runtime, "go1.99") || strings.Count(note, "runtime layout of go1.99") != 1 || !strings.Contains(note, "-s=false -w=false") {
		t.Fatalf("runtime %q, notes %q: want go1.99 and one note naming the unknown layout and how to keep the DWARF", proc.Runtime, note)
	}
	named := false
	for _, th := range proc.Threads {
		if th.Goroutine != nil || len(th.Stack) == 0 {
			t.Errorf("thread %d: goroutine %v, %d frames: want an OS thread with its stack", th.Tid, th.Goroutine, len(th.Stack))
		}
		named = named || len(th.Stack) > 0 && strings.HasPrefix(th.Stack[0].Func, "runtime.")
	}
	if !named {
		t.Errorf("no OS thread's frames are named: the Go pclntab should name them without DWARF")
	}
	for _, d := range heuristics.Diagnose(snap, heuristics.Options{}) {
		if d.Confidence != heuristics.Low || !strings.Contains(strings.Join(d.Evidence, "\n"), "read as OS threads") {
			t.Errorf("%s %s: want low confidence and evidence that the goroutines were not read: %v", d.ID, d.Confidence, d.Evidence)
		}
	}
}

// goVersionOf is the Go version bin was built with.
func goVersionOf(t *testing.T, bin string) string {
	t.Helper()
	p := patient.StartGo(t, bin)
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	return snap.Processes[0].Runtime
}
