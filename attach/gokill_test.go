package attach_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

	runs := 20
	killed := killDuringAttach(t, bin, p.Pid, runs)

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
