package patient

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Every patient builds, says "ready" with all its threads asleep, and is
// gone — reaped, no zombie — once killed.
func TestPatients(t *testing.T) {
	RequireTool(t, "gcc")
	RequireTool(t, "g++")
	o2 := Build(t, "mutex_o2.c", O2...)
	tests := []struct {
		name    string
		argv    []string
		threads int
		busy    bool // some threads run: do not expect every one asleep
	}{
		{"mutex_o2", []string{o2}, 5, false},
		{"mutex_o0g", []string{Build(t, "mutex_o2.c", O0g...)}, 5, false},
		{"mutex_stripped", []string{Strip(t, o2)}, 5, false},
		{"cxx_mutex", []string{Build(t, "cxx_mutex.cpp", O2g...)}, 4, false},
		{"sighandler", []string{Build(t, "sighandler.c", O2g...)}, 2, false},
		{"threads200/10", []string{Build(t, "threads200.c", O2g...), "10"}, 12, true},
		{"invariants", []string{Build(t, "invariants.c", O2g...)}, 9, true},
		{"sleeper", []string{Build(t, "sleeper.c", O2g...)}, 2, false},
		{"lock.py", []string{Python, Build(t, "lock.py")}, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.argv[0] == Python {
				RequireTool(t, Python)
			}
			p := Start(t, tt.argv...)
			tasks, err := p.Tasks()
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != tt.threads {
				t.Errorf("%d threads, want %d", len(tasks), tt.threads)
			}
			if _, ok := tasks[p.Pid]; !ok {
				t.Errorf("main thread %d not among %v", p.Pid, tasks)
			}
			for tid, st := range tasks {
				if st != "S" && (!tt.busy || st != "R") {
					t.Errorf("thread %d in state %s", tid, st)
				}
			}
			p.Kill(t)
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", p.Pid)); err == nil {
				t.Errorf("pid %d still in /proc after Kill (state %s)", p.Pid, State(p.Pid))
			}
		})
	}
}

func TestBuildCaches(t *testing.T) {
	RequireTool(t, "gcc")
	a := Build(t, "sleeper.c", O2...)
	fa, err := os.Stat(a)
	if err != nil {
		t.Fatal(err)
	}
	b := Build(t, "sleeper.c", O2...)
	fb, _ := os.Stat(b)
	if a != b || !fa.ModTime().Equal(fb.ModTime()) {
		t.Errorf("second build: %s (%v), first %s (%v): not reused", b, fb.ModTime(), a, fa.ModTime())
	}
	if c := Build(t, "sleeper.c", O0g...); c == a {
		t.Errorf("other flags, same binary %s", c)
	}
	if !strings.HasPrefix(a, CacheDir()) {
		t.Errorf("%s not under %s", a, CacheDir())
	}
}

func TestHeartbeat(t *testing.T) {
	RequireTool(t, "gcc")
	p := Start(t, Build(t, "threads200.c", O2g...), "20")
	for i := 0; i < 2; i++ {
		line := p.Ask(t, syscall.SIGUSR1, "maxgap_ns=", 5*time.Second)
		ns, err := strconv.ParseInt(strings.TrimPrefix(line, "maxgap_ns="), 10, 64)
		if err != nil || ns <= 0 {
			t.Fatalf("line %q", line)
		}
		t.Logf("%s", line)
	}
}

func TestInvariants(t *testing.T) {
	RequireTool(t, "gcc")
	p := Start(t, Build(t, "invariants.c", O2g...))
	for i := 0; i < 3; i++ {
		if err := p.Signal(syscall.SIGUSR2); err != nil {
			t.Fatal(err)
		}
		// Two pending SIGUSR2s would merge: wait until it is delivered.
		for end := time.Now().Add(5 * time.Second); sigPending(p.Pid, syscall.SIGUSR2); time.Sleep(time.Millisecond) {
			if time.Now().After(end) {
				t.Fatal("SIGUSR2 still pending after 5 s")
			}
		}
	}
	first := p.Ask(t, syscall.SIGUSR1, "ok ", 5*time.Second)
	if !strings.HasPrefix(first, "ok ") || !strings.Contains(first, " usr2=3 ") || !strings.Contains(first, " eintr=0 ") {
		t.Fatalf("report %q", first)
	}
	// The patient's threads keep counting: ask until every count grew
	// (under load one thread may not have run between two asks).
	grew := func(second string) bool {
		return counter(t, second, "counters") > counter(t, first, "counters") &&
			counter(t, second, "records") > counter(t, first, "records") &&
			counter(t, second, "ticks") > counter(t, first, "ticks")
	}
	second := p.Ask(t, syscall.SIGUSR1, "ok ", 5*time.Second)
	for end := time.Now().Add(10 * time.Second); !grew(second) && time.Now().Before(end); {
		second = p.Ask(t, syscall.SIGUSR1, "ok ", 5*time.Second)
	}
	if !grew(second) {
		t.Errorf("no progress between\n%s\n%s", first, second)
	}
}

// sigPending says whether sig is pending for the process or any of its
// threads (/proc/PID/status ShdPnd and SigPnd).
func sigPending(pid int, sig syscall.Signal) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(l, ":")
		if k != "ShdPnd" && k != "SigPnd" {
			continue
		}
		if mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64); err == nil && mask&(1<<(uint(sig)-1)) != 0 {
			return true
		}
	}
	return false
}

func counter(t *testing.T, line, key string) int64 {
	t.Helper()
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("%q: no %s=", line, key)
	return 0
}

// A patient that never says ready fails Start; the cleanup still kills it.
func TestStartNotReady(t *testing.T) {
	ft := &fakeT{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { _ = recover() }()
		Start(ft, "/bin/sh", "-c", "echo oops >&2; exit 3")
	}()
	<-done
	ft.cleanup()
	if !ft.failed || !strings.Contains(ft.msg, "oops") {
		t.Errorf("failed %v, message %q: want a failure showing the patient's stderr", ft.failed, ft.msg)
	}
}

// fakeT records a fatal failure instead of ending the real test.
type fakeT struct {
	testing.TB
	failed   bool
	msg      string
	cleanups []func()
}

func (f *fakeT) Helper()           {}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Logf(format string, args ...any) {
	f.TB.Logf(format, args...)
}
func (f *fakeT) Fatalf(format string, args ...any) {
	f.failed = true
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
func (f *fakeT) Fatal(args ...any) { f.Fatalf("%s", fmt.Sprint(args...)) }
func (f *fakeT) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

func TestGDBBacktrace(t *testing.T) {
	RequireTool(t, "gcc")
	RequirePtrace(t)
	p := Start(t, Build(t, "mutex_o2.c", O2...))
	out := GDBBacktrace(t, p.Pid)
	for _, want := range []string{"ant_bite", "bee_sting", "cat_pounce", "dog_fetch", "Thread 5 ", "detached"} {
		if !strings.Contains(out, want) {
			t.Errorf("gdb output lacks %q:\n%s", want, out)
		}
	}
	// gdb detached: every thread sleeps again, none is left stopped.
	if !p.Settle(2 * time.Second) {
		t.Errorf("patient did not settle after gdb")
	}
	tasks, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	for tid, st := range tasks {
		if st != "S" {
			t.Errorf("thread %d in state %s after gdb detached", tid, st)
		}
	}
}
