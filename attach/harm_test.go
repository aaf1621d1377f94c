package attach_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
)

// checkReleased fails the test if any thread of pid is in a ptrace stop
// or still has a tracer: hangdoc must leave nothing of itself behind.
func checkReleased(t testing.TB, pid int) {
	t.Helper()
	// A tracer's exit releases its tracees as part of the exit; give the
	// kernel a moment to finish it before calling a stuck thread a failure.
	var last string
	for try := 0; try < 50; try++ {
		last = ""
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			t.Fatalf("patient %d is gone: %v", pid, err)
		}
		for _, e := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/status", pid, e.Name()))
			if err != nil {
				continue
			}
			st := string(b)
			if strings.Contains(st, "\nState:\tt") || !strings.Contains(st, "\nTracerPid:\t0\n") {
				last = fmt.Sprintf("thread %s still traced or in a ptrace stop:\n%s", e.Name(), st)
				break
			}
		}
		if last == "" {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal(last)
}

// checkInvariants asks the invariants patient whether anything it checks
// was disturbed: a lost record, an EINTR, a late timer; and whether it
// still behaves normally: it handled the SIGUSR1 asking, and its signals
// thread could still dlopen libm and call into it (dlopen=ok).
func checkInvariants(t *testing.T, p *patient.Proc) string {
	t.Helper()
	line := p.Ask(t, syscall.SIGUSR1, "ok ", 5*time.Second)
	if !strings.HasPrefix(line, "ok ") || !strings.Contains(line, " dlopen=ok ") ||
		!strings.Contains(line, " eintr=0 ") || !strings.HasSuffix(line, " short=0") {
		t.Fatalf("patient's invariants broken: %s", line)
	}
	return line
}

// waitUSR2 polls the invariants patient until it has handled n SIGUSR2.
func waitUSR2(t *testing.T, p *patient.Proc, n int) {
	t.Helper()
	want := fmt.Sprintf(" usr2=%d ", n)
	var line string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if line = checkInvariants(t, p); strings.Contains(line, want) {
			return
		}
	}
	t.Fatalf("SIGUSR2 %d was not handled (lost while a thread was held?): %s", n, line)
}

// TestAttachKeepsInvariants attaches 50 times to a busy patient that
// checks its own invariants; it must notice nothing.
func TestAttachKeepsInvariants(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "invariants.c", patient.O2g...))
	before := checkInvariants(t, p)
	stops := 0
	for i := 0; i < 50; i++ {
		// One SIGUSR2 lands in the middle of each attach: none may be
		// lost, even when it arrives while a thread is held.
		sent := make(chan struct{})
		go func() { time.Sleep(2 * time.Millisecond); p.Signal(syscall.SIGUSR2); close(sent) }()
		snap, st, err := attach.AttachStats(context.Background(), []int{p.Pid}, attach.Options{Samples: 2, Interval: 5 * time.Millisecond})
		if err != nil {
			t.Fatalf("attach %d: %v", i, err)
		}
		if n := len(snap.Processes[0].Threads); n < 8 {
			t.Fatalf("attach %d: %d threads, want 8", i, n)
		}
		stops += st.Stops
		checkReleased(t, p.Pid)
		// This attach's signal must be handled before the next is sent:
		// two SIGUSR2 pending at once are one (a standard signal does
		// not queue), which under load looked like a lost signal.
		<-sent
		waitUSR2(t, p, i+1)
	}
	if stops == 0 {
		t.Fatal("no thread was ever stopped: the test did not exercise ptrace stops")
	}
	time.Sleep(50 * time.Millisecond)
	after := checkInvariants(t, p)
	if !strings.Contains(after, " usr2=50 ") {
		t.Errorf("SIGUSR2 count after 50 signals, one per attach: %s", after)
	}
	t.Logf("50 attaches, %d ptrace stops\nbefore: %s\nafter:  %s", stops, before, after)
}

// hangdocBinary is the hangdoc binary built from this checkout.
func hangdocBinary(t *testing.T) string { return patient.Hangdoc(t) }

// TestKillDuringAttach SIGKILLs hangdoc at random moments of an attach,
// 50 times (HANGDOC_KILL_RUNS; make soak runs 100): each time, every thread of the target must leave its ptrace
// stop and the target must go on undisturbed.
func TestKillDuringAttach(t *testing.T) {
	patient.RequirePtrace(t)
	bin := hangdocBinary(t)
	p := patient.Start(t, patient.Build(t, "invariants.c", patient.O2g...))
	runs := envInt(t, "HANGDOC_KILL_RUNS", 50)
	killed := killDuringAttach(t, bin, p.Pid, runs)
	line := checkInvariants(t, p)
	t.Logf("%d of %d runs killed mid-attach; patient: %s", killed, runs, line)
}

// killDuringAttach runs `hangdoc attach` (the binary bin) on pid runs
// times, SIGKILLs it at a random moment of each attach and checks after
// each kill that every thread of pid was released. It fails the test if
// fewer than half the runs were killed mid-way, and returns how many were.
func killDuringAttach(t *testing.T, bin string, pid, runs int) int {
	t.Helper()
	return killDuringAttachWithin(t, bin, pid, runs, 120*time.Millisecond)
}

// killDuringAttachWithin is killDuringAttach with the kill spread over
// window: a Go target takes longer to load (delve reads its DWARF) before
// its samples start.
func killDuringAttachWithin(t *testing.T, bin string, pid, runs int, window time.Duration) int {
	t.Helper()
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	killed := 0
	for i := 0; i < runs; i++ {
		cmd := exec.Command(bin, "attach", "--samples", "20", "--interval", "2ms", fmt.Sprint(pid))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Startup (module loading) takes some milliseconds; sampling the
		// 20 rounds some more: spread the kill over both.
		time.Sleep(time.Duration(rng.Int63n(int64(window))))
		cmd.Process.Kill()
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			killed++
		} else if err != nil {
			t.Fatalf("run %d: hangdoc failed before it was killed: %v", i, err)
		}
		checkReleased(t, pid)
	}
	if killed < runs/2 {
		t.Fatalf("only %d of %d runs were killed mid-way: the kill came too late to test anything", killed, runs)
	}
	return killed
}

// TestStoppedProcessStaysStopped: a process stopped (state T) before
// hangdoc came is left stopped, and runs again on SIGCONT.
func TestStoppedProcessStaysStopped(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "invariants.c", patient.O2g...))
	if err := syscall.Kill(p.Pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStates(t, p.Pid, "T")
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 2, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range snap.Processes[0].Threads {
		if th.State != "T" || len(th.Stack) == 0 {
			t.Errorf("thread %d: state %s, %d frames; want T and a stack", th.Tid, th.State, len(th.Stack))
		}
	}
	time.Sleep(50 * time.Millisecond)
	waitStates(t, p.Pid, "T")
	syscall.Kill(p.Pid, syscall.SIGCONT)
	checkInvariants(t, p)
}

// waitStates waits until every thread of pid is in the given state.
func waitStates(t *testing.T, pid int, state string) {
	t.Helper()
	var tasks map[int]string
	for try := 0; try < 200; try++ {
		var err error
		tasks, err = patient.Tasks(pid)
		if err != nil {
			t.Fatal(err)
		}
		all := true
		for _, s := range tasks {
			all = all && s == state
		}
		if all {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("pid %d: thread states %v, want all %s", pid, tasks, state)
}

var ()
