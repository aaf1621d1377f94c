package patient

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// A running patient: started in its own process group, its lines read,
// asked (by signal) for a line, killed and reaped in cleanup.

// Proc is a running patient.
type Proc struct {
	Pid  int
	Argv []string

	cmd    *exec.Cmd
	stderr *capBuffer

	mu     sync.Mutex
	lines  []string      // stdout lines not yet taken
	eof    bool          // stdout closed: the patient exited
	notify chan struct{} // signalled when lines or eof change

	killOnce sync.Once
	release  chan struct{} // closed once reaped: frees the forking thread

	early []string // lines before "ready", as Start read them

	core string // where the kernel writes its core, for StartDumpable
}

// Start runs argv (a patient built by Build, or Python and a script) in a
// process group of its own, waits up to 10 s for its "ready" line and
// registers a cleanup that SIGKILLs the group and reaps the patient. If the
// patient exits or is not ready in time, the test fails with its stderr.
func Start(t testing.TB, argv ...string) *Proc {
	t.Helper()
	return start(t, "", argv)
}

// start is Start, run in the directory dir ("" for the test's own).
func start(t testing.TB, dir string, argv []string) *Proc {
	t.Helper()
	return launch(t, launchSpec{argv: argv, dir: dir, stderrMax: 64 << 10, ready: "ready", settle: true})
}

// launchSpec says how launch runs a patient.
type launchSpec struct {
	argv      []string
	dir       string
	env       []string // nil: the test's environment
	stderrMax int      // stderr kept, its last bytes
	ready     string   // the line that says the patient is in its state
	// settle waits, after the ready line, for the patient's threads to
	// sleep (a C or Python patient's last thread still has to reach its
	// wait).
	settle bool
}

// launch starts a patient and waits for its ready line (see Start).
func launch(t testing.TB, spec launchSpec) *Proc {
	t.Helper()
	argv := spec.argv
	if len(argv) == 0 {
		t.Fatal("patient.Start: no command")
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		t.Fatalf("patient: %v", err)
	}
	p := &Proc{Argv: argv, stderr: &capBuffer{max: spec.stderrMax}, notify: make(chan struct{}, 1)}
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Dir = spec.dir
	p.cmd.Env = spec.env
	p.cmd.Stdout = wr
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:   true,
		Pdeathsig: syscall.SIGKILL, // the test binary died: so does the patient
	}
	p.cmd.WaitDelay = 5 * time.Second
	// Pdeathsig fires when the thread that forked the patient exits, not
	// the process: a test's ptrace code may end a locked OS thread, and it
	// must not be this one. Fork from a thread of our own, kept until the
	// patient is reaped.
	started := make(chan error, 1)
	p.release = make(chan struct{})
	go func() {
		runtime.LockOSThread()
		err := p.cmd.Start()
		started <- err
		if err == nil {
			<-p.release
		}
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		rd.Close()
		wr.Close()
		t.Fatalf("patient: start %s: %v", argv[0], err)
	}
	wr.Close()
	p.Pid = p.cmd.Process.Pid
	t.Cleanup(func() { p.Kill(t) })
	go p.readLines(rd)

	deadline := time.Now().Add(readyTimeout)
	line, err := p.NextLine(readyTimeout)
	for err == nil && line != spec.ready {
		p.early = append(p.early, line)
		line, err = p.NextLine(max(time.Until(deadline), time.Millisecond))
	}
	if err != nil {
		p.Kill(t) // reaped: its stderr is complete
		t.Fatalf("patient %s (pid %d): no %q line: %v\nstderr:\n%s", filepath.Base(argv[0]), p.Pid, spec.ready, err, p.Stderr())
	}
	if spec.settle {
		// The thread that printed "ready" still has to reach its own
		// wait: give it (not a busy patient's runners) a moment to get
		// there.
		if !p.Settle(settleTimeout) {
			// A busy patient (a spinner) never settles; a blocking one
			// that did not may be read mid-way: the log says which.
			t.Logf("patient %s (pid %d): not every thread asleep in a syscall %v after ready", filepath.Base(spec.argv[0]), p.Pid, settleTimeout)
		}
	}
	return p
}

// Early returns the lines the patient wrote before "ready" ("child=4712",
// "owner=4702", …), which Start read while waiting for it.
func (p *Proc) Early() []string { return append([]string(nil), p.early...) }

// Int returns n from the line "name=n" the patient wrote before "ready"
// (a forked patient says "child=<pid>", the TID of a lock's owner
// "owner=<tid>", …) and fails the test when there is no such line.
func (p *Proc) Int(t testing.TB, name string) int {
	t.Helper()
	for _, l := range p.early {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatalf("patient %d: line %q: %v", p.Pid, l, err)
			}
			return n
		}
	}
	t.Fatalf("patient %d: no line %q before \"ready\" (lines: %q)", p.Pid, name+"=…", p.early)
	return 0
}

func (p *Proc) readLines(r io.ReadCloser) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		p.mu.Lock()
		p.lines = append(p.lines, sc.Text())
		p.mu.Unlock()
		p.wake()
	}
	// A line longer than 1 MiB ends the reading; the patients never write one.
	p.mu.Lock()
	p.eof = true
	p.mu.Unlock()
	p.wake()
}

func (p *Proc) wake() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

// NextLine returns the next line the patient wrote on stdout, waiting up to
// timeout for it. It fails with io.EOF once the patient closed stdout.
func (p *Proc) NextLine(timeout time.Duration) (string, error) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		p.mu.Lock()
		if len(p.lines) > 0 {
			l := p.lines[0]
			p.lines = p.lines[1:]
			p.mu.Unlock()
			return l, nil
		}
		eof := p.eof
		p.mu.Unlock()
		if eof {
			return "", fmt.Errorf("patient exited (%s): %w", p.exitStatus(), io.EOF)
		}
		select {
		case <-p.notify:
		case <-deadline.C:
			return "", fmt.Errorf("no line from the patient within %v", timeout)
		}
	}
}

// Expect returns the first stdout line that starts with prefix, skipping
// others, and fails the test if none comes within timeout.
func (p *Proc) Expect(t testing.TB, prefix string, timeout time.Duration) string {
	t.Helper()
	end := time.Now().Add(timeout)
	for {
		left := time.Until(end)
		if left <= 0 {
			left = time.Millisecond
		}
		l, err := p.NextLine(left)
		if err != nil {
			t.Fatalf("patient %d: waiting for a line starting with %q: %v\nstderr:\n%s", p.Pid, prefix, err, p.Stderr())
		}
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
}

// Ask sends sig to the patient and returns the first line it then writes
// that starts with prefix ("maxgap_ns=", "ok ", …); a line starting with
// "FAIL" is returned too, so the caller sees what went wrong.
func (p *Proc) Ask(t testing.TB, sig syscall.Signal, prefix string, timeout time.Duration) string {
	t.Helper()
	if err := p.Signal(sig); err != nil {
		t.Fatalf("patient %d: %v", p.Pid, err)
	}
	end := time.Now().Add(timeout)
	for {
		l, err := p.NextLine(max(time.Until(end), time.Millisecond))
		if err != nil {
			t.Fatalf("patient %d: after %v, waiting for %q: %v\nstderr:\n%s", p.Pid, sig, prefix, err, p.Stderr())
		}
		if strings.HasPrefix(l, prefix) || strings.HasPrefix(l, "FAIL") {
			return l
		}
	}
}

// Signal sends sig to the patient (its main process, not the group).
func (p *Proc) Signal(sig syscall.Signal) error {
	if err := syscall.Kill(p.Pid, sig); err != nil {
		return fmt.Errorf("kill -%d %d: %w", sig, p.Pid, err)
	}
	return nil
}

// Stderr returns what the patient wrote on stderr so far (the last 64 KiB).
func (p *Proc) Stderr() string { return p.stderr.String() }

// Kill SIGKILLs the patient's process group and reaps the patient. Start
// registers it as a cleanup; calling it earlier is fine.
func (p *Proc) Kill(t testing.TB) {
	p.killOnce.Do(func() {
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
		_ = syscall.Kill(p.Pid, syscall.SIGKILL)
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
			close(p.release)
		case <-time.After(reapTimeout):
			// keep the forking thread: its exit would not matter now,
			// but the patient is still there to be looked at
			t.Logf("patient %d: not reaped %v after SIGKILL (state %s)", p.Pid, reapTimeout, State(p.Pid))
		}
	})
}

// KillChildAtEnd kills the patient's process group (a child it forked is
// in it) when the test ends and checks that the child died with it; a
// child that survived is reported and killed by pid.
func (p *Proc) KillChildAtEnd(t testing.TB, child int) {
	t.Cleanup(func() {
		p.Kill(t)
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
			if st := State(child); st == "" || st == "Z" || st == "X" {
				return
			}
		}
		t.Errorf("forked child %d still alive (state %s) after the patient's process group was killed", child, State(child))
		_ = syscall.Kill(child, syscall.SIGKILL)
	})
}

// Wait waits up to timeout for the patient to exit by itself, reaps it
// and returns its wait status; its stderr (Stderr) is complete then. If
// the patient is still running after timeout, Wait SIGKILLs its group and
// fails the test. Wait replaces Kill: call at most one of them first.
func (p *Proc) Wait(t testing.TB, timeout time.Duration) syscall.WaitStatus {
	t.Helper()
	var late bool
	p.killOnce.Do(func() {
		done := make(chan error, 1)
		go func() { done <- p.cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(timeout):
			late = true
			_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
			_ = syscall.Kill(p.Pid, syscall.SIGKILL)
			<-done
		}
		close(p.release)
	})
	if late {
		t.Fatalf("patient %d: still running %v after it was due to exit\nstderr:\n%s", p.Pid, timeout, p.Stderr())
	}
	if p.cmd.ProcessState == nil {
		t.Fatalf("patient %d: already killed and reaped", p.Pid)
	}
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ws
}

func (p *Proc) exitStatus() string {
	// The reader saw EOF: the patient is exiting or gone. Peek without
	// reaping (Kill does that): /proc tells whether it is a zombie.
	if st := State(p.Pid); st != "" {
		return "state " + st
	}
	return "gone"
}

// capBuffer keeps the last max bytes written to it; safe for concurrent use.
type capBuffer struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (b *capBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

func (b *capBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// StartKept starts cmd with Pdeathsig set, from an OS thread kept locked
// until the test ends. Pdeathsig fires when the thread that forked the
// child exits, not the process: hangdoc's tracer ends OS threads of the
// test binary, and a child forked from one would be killed mid-test. The
// child is SIGKILLed and reaped when the test ends.
func StartKept(t testing.TB, cmd *exec.Cmd) {
	t.Helper()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	started, release := make(chan error, 1), make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := cmd.Start()
		started <- err
		if err == nil {
			<-release
		}
	}()
	if err := <-started; err != nil {
		t.Fatalf("start %s: %v", cmd.Path, err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		close(release)
	})
}
