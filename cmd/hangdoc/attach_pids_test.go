package main

import (
	"encoding/json"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// jsonReport is the JSON report as the tests read it.
type jsonReport struct {
	stacks.Snapshot
	Diagnoses []struct {
		ID      string `json:"id"`
		Summary string `json:"summary"`
	} `json:"diagnoses"`
}

func parseReport(t *testing.T, out string) jsonReport {
	t.Helper()
	var r jsonReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return r
}

func diagIDs(r jsonReport) []string {
	var ids []string
	for _, d := range r.Diagnoses {
		ids = append(ids, d.ID)
	}
	return ids
}

// TestAttachSamePidTwice: a pid named twice is one process, and gets the
// verdict it gets alone (it used to be read twice, and the second copy's
// owner thread looked gone: a false orphaned-lock).
func TestAttachSamePidTwice(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "mutex_o2.c", patient.O2...))
	pid := strconv.Itoa(p.Pid)
	once, _, _, err := runIn("attach", "--samples", "1", "--format", "json", pid)
	if err != nil {
		t.Fatal(err)
	}
	twice, _, _, err := runIn("attach", "--samples", "1", "--format", "json", pid, pid)
	if err != nil {
		t.Fatal(err)
	}
	r1, r2 := parseReport(t, once), parseReport(t, twice)
	if len(r2.Processes) != 1 {
		t.Errorf("attach %s %s read %d processes, want 1", pid, pid, len(r2.Processes))
	}
	if a, b := strings.Join(diagIDs(r1), ","), strings.Join(diagIDs(r2), ","); a != b {
		t.Errorf("verdicts once %s, twice %s: want the same", a, b)
	}
	for _, id := range diagIDs(r2) {
		if id == "orphaned-lock" {
			t.Errorf("false orphaned-lock with the pid named twice")
		}
	}
}

// TestAttachGoodAndBadPid: a pid that cannot be read gets an error line
// and is left out; the others are reported. Nothing named and one left
// out exits 3 (could not analyse), a hang named exits 1.
func TestAttachGoodAndBadPid(t *testing.T) {
	patient.RequirePtrace(t)
	hung := patient.Start(t, patient.Build(t, "mutex_o2.c", patient.O2...))
	calm := patient.Start(t, patient.Build(t, "sleeper.c", patient.O2...))
	for _, c := range []struct {
		pid  int
		code int
	}{{hung.Pid, exitHang}, {calm.Pid, exitAnalysis}} {
		out, errOut, code, err := runIn("attach", "--samples", "1", "--format", "json", strconv.Itoa(c.pid), "99999999")
		if err != nil {
			t.Fatalf("attach %d 99999999: %v", c.pid, err)
		}
		r := parseReport(t, out)
		if len(r.Processes) != 1 || r.Processes[0].Pid != c.pid {
			t.Errorf("attach %d 99999999: %d processes, want the good pid's report", c.pid, len(r.Processes))
		}
		if !strings.Contains(errOut, "left out") || !strings.Contains(errOut, "no such process: pid 99999999") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("stderr %q: want one line saying pid 99999999 is left out and why", errOut)
		}
		if code != c.code {
			t.Errorf("attach %d 99999999: exit %d, want %d", c.pid, code, c.code)
		}
	}
	// Every pid bad: the error is the command's.
	if _, _, code, err := runIn("attach", "99999998", "99999999"); err == nil || code != exitAnalysis {
		t.Errorf("two bad pids: exit %d, %v; want exit 3 and an error", code, err)
	}
}

// TestAttachInterruptedSamples: SIGTERM during --samples 100 ends the
// sampling; the report says how many samples were taken, in JSON and in
// text, not the number asked for.
func TestAttachInterruptedSamples(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "sleeper.c", patient.O2...))
	for _, format := range []string{"json", "text"} {
		cmd := exec.Command(hangdocBin(t), "attach", "--samples", "100", "--interval", "100ms", "--format", format, strconv.Itoa(p.Pid))
		var out strings.Builder
		cmd.Stdout = &out
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond) // the case; any moment after start must hold
		if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			cmd.Process.Kill()
			t.Fatal("hangdoc did not end 60 s after SIGTERM")
		}
		if format == "json" {
			r := parseReport(t, out.String())
			taken := len(r.Processes[0].Threads[0].Samples())
			if r.Samples != taken || taken >= 100 || taken < 1 {
				t.Errorf("JSON says %d samples, the threads have %d: want the number taken (< 100)", r.Samples, taken)
			}
			t.Logf("json: %d samples taken", taken)
			continue
		}
		m := regexp.MustCompile(`(\d+) samples? `).FindStringSubmatch(out.String())
		if m == nil || m[1] == "100" {
			t.Errorf("text report says %v: want the number taken\n%s", m, out.String())
		}
	}
}
