package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// openPty opens a new pseudo-terminal and returns its master and slave.
func openPty(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		patient.Missing(t, "no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		t.Fatalf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		t.Fatalf("ptsname: %v", err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close(); s.Close() })
	return m, s
}

// TestRunTerminalRead: `hangdoc run -- sh -c 'read x'` on a terminal.
// The command runs in a process group of its own, so its read of the
// terminal stops it with SIGTTIN (wchan do_signal_stop): the report says
// stopped by SIGTTIN, not io-wait on fd 0.
func TestRunTerminalRead(t *testing.T) {
	patient.RequirePtrace(t)
	master, slave := openPty(t)
	go io.Copy(io.Discard, master) // the terminal's screen
	rep := filepath.Join(t.TempDir(), "hang.json")
	cmd := exec.Command(hangdocBin(t), "run", "--timeout", "2s", "--samples", "1",
		"--report", rep, "--format", "json", "--", "sh", "-c", "read x")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// hangdoc leads a session whose controlling terminal is the pty, in
	// its foreground process group, as in a shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("hangdoc run did not end within 60 s")
	}
	if code := cmd.ProcessState.ExitCode(); code != exitRunHang {
		t.Errorf("exit %d, want %d (a hang was named)", code, exitRunHang)
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Diagnoses []struct {
			ID      string `json:"id"`
			Summary string `json:"summary"`
			Fix     string `json:"fix"`
		} `json:"diagnoses"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if len(r.Diagnoses) == 0 {
		t.Fatalf("no diagnosis:\n%s", b)
	}
	d := r.Diagnoses[0]
	t.Logf("verdict: [%s] %s", d.ID, d.Summary)
	if d.ID != "stopped" || !strings.Contains(d.Summary, "SIGTTIN") || !strings.Contains(d.Summary, "reads its terminal") {
		t.Errorf("top = [%s] %s, want stopped by SIGTTIN", d.ID, d.Summary)
	}
	if !strings.Contains(d.Fix, "/dev/null") {
		t.Errorf("fix does not say how to give it input: %s", d.Fix)
	}
	for _, d := range r.Diagnoses {
		if d.ID == "io-wait" {
			t.Errorf("io-wait on a stopped reader: %s", d.Summary)
		}
	}
}
