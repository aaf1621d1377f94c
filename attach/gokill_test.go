package attach_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
)

// TestKillDuringAttachGo is TestKillDuringAttach on a Go target: after 20
// attaches killed mid-way, every thread is released and the program still
// panics normally on request (status 2, "panic:" on stderr), so no
// breakpoint, stopped thread or stray SIGTRAP was left behind.
func TestKillDuringAttachGo(t *testing.T) {
	patient.RequirePtrace(t)
	patient.RequireTool(t, "go")
	bin := hangdocBinary(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "panicker")
	build := exec.Command("go", "build", "-o", exe, "./testdata/gorun/panicker")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build panicker: %v\n%s", err, out)
	}
	p := patient.Start(t, exe)
	requireGoPath(t, bin, p.Pid)

	runs := 20
	// Loading the Go binary's debug information takes about 300 ms here,
	// the 20 samples some more, and both vary with the machine's load:
	// time one whole attach and spread the kills over 90% of it.
	start := time.Now()
	if out, err := exec.Command(bin, "attach", "--samples", "20", "--interval", "2ms", fmt.Sprint(p.Pid)).CombinedOutput(); err != nil {
		if ws, ok := err.(*exec.ExitError); !ok || ws.ExitCode() != 0 && ws.ExitCode() != 1 {
			t.Fatalf("hangdoc attach %d: %v\n%s", p.Pid, err, out)
		}
	}
	window := time.Since(start) * 9 / 10
	killed := killDuringAttachWithin(t, bin, p.Pid, runs, window)

	if err := p.Signal(syscall.SIGUSR1); err != nil {
		t.Fatalf("SIGUSR1: %v", err)
	}
	ws := p.Wait(t, 10*time.Second)
	stderr := p.Stderr()
	if !ws.Exited() || ws.ExitStatus() != 2 {
		t.Fatalf("after %d killed attaches, SIGUSR1 ended the Go target with %v (signaled=%v %v), want exit status 2\nstderr:\n%s",
			killed, ws, ws.Signaled(), ws.Signal(), stderr)
	}
	if !strings.Contains(stderr, "panic: ") {
		t.Fatalf("exit status 2 but no \"panic:\" on stderr:\n%s", stderr)
	}
	first, _, _ := strings.Cut(stderr, "\n")
	t.Logf("%d of %d runs killed mid-attach; then: exit status 2, %s", killed, runs, first)
}

// requireGoPath fails the test unless `hangdoc attach` reads pid as a Go
// program (goroutines, the runtime's version): the kill test must kill
// the Go path, not the native one.
func requireGoPath(t *testing.T, bin string, pid int) {
	t.Helper()
	out, err := exec.Command(bin, "attach", "--samples", "1", "--format", "json", fmt.Sprint(pid)).Output()
	if err != nil {
		t.Fatalf("hangdoc attach %d: %v", pid, err)
	}
	var doc struct {
		Processes []struct {
			Runtime string `json:"runtime"`
			Threads []struct {
				Goroutine *struct{ ID int } `json:"goroutine"`
			} `json:"threads"`
		} `json:"processes"`
	}
	if err := json.Unmarshal(out, &doc); err != nil || len(doc.Processes) != 1 {
		t.Fatalf("hangdoc attach --format json: %v\n%s", err, out)
	}
	p := doc.Processes[0]
	if !strings.HasPrefix(p.Runtime, "go1.") || len(p.Threads) == 0 || p.Threads[0].Goroutine == nil {
		t.Fatalf("hangdoc did not take the Go path: runtime %q, %d threads, first %+v", p.Runtime, len(p.Threads), p.Threads)
	}
}

// TestGoAttachLeavesNoTrace: after attaches that read every goroutine and
// OS thread of a Go program, its code is the same byte for byte (no
// breakpoint was written, not even delve's panic hooks), no thread is
// traced or stopped, and a panic it is asked for is an ordinary panic:
// "panic: …" on stderr and exit status 2, not a SIGTRAP.
func TestGoAttachLeavesNoTrace(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.BuildGo(t, "panicker"))
	before, err := attach.TextSegment(p.Pid)
	if err != nil {
		t.Fatal(err)
	}
	var stops int
	for i := 0; i < 5; i++ {
		snap, st, err := attach.AttachStats(context.Background(), []int{p.Pid}, attach.Options{Samples: 3, Interval: 5 * time.Millisecond, Threads: i%2 == 0})
		if err != nil {
			t.Fatalf("attach %d: %v", i, err)
		}
		if pr := snap.Processes[0]; pr.Runtime == "" || len(pr.Threads) == 0 || pr.Threads[0].Goroutine() == nil {
			t.Fatalf("attach %d: not read as a Go program: runtime %q, notes %v", i, pr.Runtime, pr.Notes)
		}
		stops += st.Stops
		checkReleased(t, p.Pid)
	}
	after, err := attach.TextSegment(p.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Fatalf("the text segment changed (%d bytes): something was written into the program", len(before))
	}
	if stops == 0 {
		t.Fatal("no thread was stopped: the test did not exercise the register captures")
	}
	if err := p.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	ws := p.Wait(t, 10*time.Second)
	if !ws.Exited() || ws.ExitStatus() != 2 || !strings.Contains(p.Stderr(), "panic: SIGUSR1 asked for a panic") {
		t.Fatalf("after 5 attaches, the requested panic ended the program with %v (signaled=%v); stderr:\n%s", ws, ws.Signaled(), p.Stderr())
	}
	t.Logf("5 attaches, %d stops; %d bytes of text unchanged; then exit status 2", stops, len(before))
}
