package heuristics_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
)

// waitProc polls /proc/PID/status until ok says its lines are what the
// test waits for, or fails after 10 s.
func waitProc(t *testing.T, pid int, what string, ok func(status string) bool) {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	var last string
	for time.Now().Before(end) {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if last = string(b); ok(last) {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("pid %d: not %s after 10 s; status:\n%s", pid, what, last)
}

// statusLine is the value of a /proc/PID/status line ("State", "TracerPid").
func statusLine(status, key string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, key+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func diagnoseLive(t *testing.T, pid int) []heuristics.Diagnosis {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := attach.Attach(ctx, []int{pid}, liveOpts)
	if err != nil {
		t.Fatalf("Attach(%d): %v", pid, err)
	}
	diags := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	for _, d := range diags {
		t.Logf("[%s, %s] %s", d.ID, d.Confidence, d.Summary)
	}
	if len(diags) == 0 {
		t.Fatal("no diagnosis")
	}
	for _, d := range diags {
		if d.ID == "sleeping" || d.ID == "io-wait" || d.ID == "progressing" {
			t.Errorf("a stopped process got %s: %s", d.ID, d.Summary)
		}
	}
	return diags
}

// A sleeper stopped with SIGSTOP is stopped, not sleeping: it will not
// wake up by itself.
func TestStoppedBySignal(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "sleeper.c", patient.O2...))
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitProc(t, p.Pid, "stopped", func(s string) bool { return strings.HasPrefix(statusLine(s, "State"), "T") })
	diags := diagnoseLive(t, p.Pid)
	d := diags[0]
	if d.ID != "stopped" || d.Confidence != heuristics.High || !d.Deadlock {
		t.Fatalf("top = %s (%s, deadlock=%v), want stopped (high, deadlock)", d.ID, d.Confidence, d.Deadlock)
	}
	if !strings.Contains(d.Summary, "SIGSTOP or SIGTSTP") {
		t.Errorf("summary does not name the possible signals: %s", d.Summary)
	}
	if want := fmt.Sprintf("kill -CONT %d", p.Pid); !strings.Contains(d.Fix, want) {
		t.Errorf("fix does not say %q: %s", want, d.Fix)
	}
	if len(d.Tids) != 2 {
		t.Errorf("tids = %v, want the sleeper's 2 threads", d.Tids)
	}
	// hangdoc left it as it found it: stopped.
	waitProc(t, p.Pid, "still stopped", func(s string) bool { return strings.HasPrefix(statusLine(s, "State"), "T") })
}

// A process gdb holds is in a tracing stop: the verdict names gdb's pid
// and says to detach it.
func TestStoppedByTracer(t *testing.T) {
	patient.RequirePtrace(t)
	gdb := patient.RequireTool(t, "gdb")
	p := patient.Start(t, patient.Build(t, "sleeper.c", patient.O2...))
	// gdb attaches, then waits in a shell command, holding the process.
	cmd := exec.Command(gdb, "-q", "-nx", "-batch", "-ex", "set debuginfod enabled off",
		"-ex", "shell sleep 120", "-p", strconv.Itoa(p.Pid))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	want := strconv.Itoa(cmd.Process.Pid)
	waitProc(t, p.Pid, "held by gdb", func(s string) bool {
		return statusLine(s, "TracerPid") == want && strings.HasPrefix(statusLine(s, "State"), "t")
	})
	// gdb stops every thread, one after the other.
	tasks, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	for tid := range tasks {
		waitProc(t, tid, "in a tracing stop", func(s string) bool { return strings.HasPrefix(statusLine(s, "State"), "t") })
	}
	d := diagnoseLive(t, p.Pid)[0]
	if d.ID != "stopped" || !d.Deadlock {
		t.Fatalf("top = %s, want stopped", d.ID)
	}
	if !strings.Contains(d.Summary, "tracer pid "+want+" `gdb`") {
		t.Errorf("summary does not name gdb (pid %s): %s", want, d.Summary)
	}
	if !strings.Contains(d.Fix, "detach") {
		t.Errorf("fix does not say to detach the debugger: %s", d.Fix)
	}
}
