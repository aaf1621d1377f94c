package attach_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// goCore reads a Go program's core and checks what every Go core must
// give: a core snapshot of goroutines, the runtime's version, and the OS
// threads apart.
func goCore(t *testing.T, path string, opts attach.CoreOptions) (*stacks.Snapshot, *stacks.Process) {
	t.Helper()
	start := time.Now()
	snap, err := attach.Core(path, opts)
	if err != nil {
		t.Fatalf("core %s: %v", path, err)
	}
	t.Logf("core read in %v", time.Since(start).Round(time.Millisecond))
	p := snap.Processes[0]
	if snap.Source != "core" || !strings.HasPrefix(p.Runtime, "go1.") || len(p.Threads) == 0 || len(p.OSThreads) == 0 {
		t.Fatalf("source %q, runtime %q, %d goroutines, %d OS threads: want a core of goroutines (notes %v)", snap.Source, p.Runtime, len(p.Threads), len(p.OSThreads), p.Notes)
	}
	for _, th := range p.Threads {
		if th.Goroutine() == nil || th.Goroutine().ID != th.Tid || len(th.Stack) == 0 || len(th.Samples()) != 1 {
			t.Fatalf("thread %d is not a goroutine with a stack: %+v", th.Tid, th)
		}
	}
	for _, th := range p.OSThreads {
		if th.Goroutine() != nil || len(th.Stack) == 0 {
			t.Errorf("OS thread %d: goroutine %v, %d frames", th.Tid, th.Goroutine(), len(th.Stack))
		}
	}
	return snap, p
}

// TestGoCoreAbba: gcore of the ABBA patient, read by attach.Core, gives
// the goroutines a live attach gives just before (ids, statuses, top
// frames of the program, creators, objects, transfer's pointer
// arguments) and the same diagnosis: lock-order-cycle at medium with
// both holders named. The patient runs on after the core.
func TestGoCoreAbba(t *testing.T) {
	bin := patient.BuildGo(t, "abba")
	p := startGo(t, "abba")
	live := attachGo(t, p.Pid, attach.Options{Samples: 1})
	before, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	path := patient.Gcore(t, p.Pid, t.TempDir())
	if err := p.Signal(0); err != nil {
		t.Fatalf("the patient did not survive gcore: %v", err)
	}
	snap, c := goCore(t, path, attach.CoreOptions{Exe: bin})
	if c.Runtime != live.Runtime || c.Pid != p.Pid {
		t.Errorf("core: runtime %q of pid %d, live %q of pid %d", c.Runtime, c.Pid, live.Runtime, p.Pid)
	}
	compareWithDump(t, live, c)

	cores, lives := byID(c), byID(live)
	for _, lt := range withStatus(live, "sync.Mutex.Lock") {
		ct := cores[lt.Tid]
		if ct == nil || ct.Goroutine().Status != "sync.Mutex.Lock" || ct.Goroutine().Object != lt.Goroutine().Object || ct.Goroutine().Object == 0 {
			t.Fatalf("goroutine %d: core %+v, live waits for %#x in sync.Mutex.Lock", lt.Tid, ct, lt.Goroutine().Object)
		}
		la, ca := liveArgs(t, lt, "main.(*bank).transfer"), liveArgs(t, ct, "main.(*bank).transfer")
		if len(ca) != 3 || fmt.Sprint(ca) != fmt.Sprint(la) {
			t.Errorf("goroutine %d: transfer's arguments %v in the core, %v live", lt.Tid, ca, la)
		}
		k, lk := frameIndex(ct.Stack, "main.(*bank).transfer"), frameIndex(lt.Stack, "main.(*bank).transfer")
		if k != lk || ct.Stack[k].File != lt.Stack[lk].File || ct.Stack[k].Line != lt.Stack[lk].Line {
			t.Errorf("goroutine %d: transfer at frame %d %s:%d in the core, %d %s:%d live", lt.Tid, k, ct.Stack[k].File, ct.Stack[k].Line, lk, lt.Stack[lk].File, lt.Stack[lk].Line)
		}
	}
	// Every goroutine that waits in the same place in both reads waits
	// for the same object (the keep-alive ticker's channel too). The live
	// read does not stop the process: a goroutine the ticker wakes while
	// it is read can show its wait reason with the sudog already cleared
	// (object 0, seen once in 15 runs under stress), and then re-park at
	// the same PC before gcore. Only a read that found an object on both
	// sides is compared; the two lock waiters above are checked always.
	for id, lt := range lives {
		ct := cores[id]
		if ct == nil || ct.Goroutine().Status != lt.Goroutine().Status || len(ct.Stack) != len(lt.Stack) || ct.Stack[0].PC != lt.Stack[0].PC {
			continue
		}
		if lt.Goroutine().Object == 0 || ct.Goroutine().Object == 0 {
			continue
		}
		if ct.Goroutine().Object != lt.Goroutine().Object {
			t.Errorf("goroutine %d (%s): object %#x in the core, %#x live", id, lt.Goroutine().Status, ct.Goroutine().Object, lt.Goroutine().Object)
		}
	}
	if len(cores) != len(lives) {
		t.Errorf("%d goroutines in the core, %d live", len(cores), len(lives))
	}
	// The runtime may start an M at any time (and never ends one): the
	// core holds at least the threads listed before gcore and at most
	// those listed after it (seen: 4 in the core, 5 after, under load).
	after, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.OSThreads); n < len(before) || n > len(after) {
		t.Errorf("%d OS threads in the core, /proc lists %d before gcore and %d after", n, len(before), len(after))
	}

	liveTop := heuristics.Diagnose(&stacks.Snapshot{Processes: []*stacks.Process{live}}, heuristics.Options{}).Diagnoses[0]
	top := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses[0]
	if top.ID != "lock-order-cycle" || top.Confidence != heuristics.Medium || top.Summary != liveTop.Summary {
		t.Fatalf("core diagnosis %s %s %q, live %s %s %q", top.ID, top.Confidence, top.Summary, liveTop.ID, liveTop.Confidence, liveTop.Summary)
	}
	for _, w := range withStatus(c, "sync.Mutex.Lock") {
		if !strings.Contains(top.Summary, fmt.Sprintf("%#x, which goroutine", w.Goroutine().Object)) {
			t.Errorf("the diagnosis names no holder of %#x: %s", w.Goroutine().Object, top.Summary)
		}
	}

	// Without --exe the executable is the file the core's NT_FILE note
	// names: the same read.
	_, named := goCore(t, path, attach.CoreOptions{})
	if len(named.Threads) != len(c.Threads) || named.Runtime != c.Runtime {
		t.Errorf("without --exe: %d goroutines of %q, with it %d of %q", len(named.Threads), named.Runtime, len(c.Threads), c.Runtime)
	}
}

// cutGoCores reads the core cut short at many lengths: each read gives
// a one-line error, or a snapshot whose notes say the core is damaged;
// never a panic (which Core turns into an "internal error"). A kernel
// core has its notes first, so most cuts keep the threads and lose
// memory: the goroutines are read from what is left, or the OS threads
// are shown with a note.
func cutGoCores(t *testing.T, path, bin string) {
	whole, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fracs := []float64{0.0001, 0.001, 0.01, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 0.9, 0.95, 0.99, 0.999}
	goroutines, threads, errs := 0, 0, 0
	for _, frac := range fracs {
		n := int64(float64(len(whole)) * frac)
		cut := filepath.Join(dir, "core")
		writeSparse(t, cut, whole[:n])
		snap, err := attach.Core(cut, attach.CoreOptions{Exe: bin})
		if err != nil {
			errs++
			if msg := err.Error(); strings.Contains(msg, "\n") || strings.Contains(msg, "internal error") {
				t.Errorf("cut at %d of %d bytes: %q, want a one-line error and no panic", n, len(whole), msg)
			}
			continue
		}
		p := snap.Processes[0]
		notes := strings.Join(p.Notes, "\n")
		if !strings.Contains(notes, "truncated") || strings.Contains(notes, "internal error") {
			t.Errorf("cut at %d of %d bytes: notes %q, want one that says the core is truncated, and no panic", n, len(whole), notes)
		}
		if len(p.Threads) > 0 && p.Threads[0].Goroutine() != nil {
			goroutines++
		} else {
			threads++
			if !strings.Contains(notes, "goroutines not read") {
				t.Errorf("cut at %d of %d bytes: OS threads without a note saying why: %q", n, len(whole), notes)
			}
		}
	}
	t.Logf("%d cuts: %d read goroutine by goroutine, %d as OS threads, %d errors", len(fracs), goroutines, threads, errs)
	if goroutines == 0 {
		t.Error("no cut core was read goroutine by goroutine")
	}
}

// writeSparse writes b to path leaving holes where it is zero: a Go
// program's core is mostly unfaulted heap.
func writeSparse(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const block = 64 << 10
	for off := 0; off < len(b); off += block {
		chunk := b[off:min(off+block, len(b))]
		if strings.Trim(string(chunk), "\x00") == "" {
			continue
		}
		if _, err := f.WriteAt(chunk, int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(int64(len(b))); err != nil {
		t.Fatal(err)
	}
}

// TestGoCoreKernel: a Go service under systemd runs with
// GOTRACEBACK=crash, and SIGQUIT then has the runtime abort with a core
// written by the kernel; that core gives the ABBA's goroutines and
// diagnosis as gcore's does.
func TestGoCoreKernel(t *testing.T) {
	bin := patient.BuildGo(t, "abba")
	dir := t.TempDir()
	path, out := kernelGoCore(t, bin, dir)
	snap, c := goCore(t, path, attach.CoreOptions{Exe: bin})
	locks := withStatus(c, "sync.Mutex.Lock")
	if len(locks) != 2 {
		t.Fatalf("%d goroutines in sync.Mutex.Lock, want 2\nruntime's dump:\n%s", len(locks), out)
	}
	for _, th := range locks {
		args := liveArgs(t, th, "main.(*bank).transfer")
		if th.Goroutine().Object == 0 || args["to"] != th.Goroutine().Object {
			t.Errorf("goroutine %d waits for %#x, transfer's to is %#x", th.Tid, th.Goroutine().Object, args["to"])
		}
	}
	// The runtime printed its goroutines just before it aborted: the
	// core gives the same ones.
	dump, _, err := stacks.ParseGoroutines(strings.NewReader(out))
	if err != nil {
		t.Fatalf("parse the runtime's crash dump: %v\n%s", err, out)
	}
	compareWithDump(t, c, dump.Processes[0])
	top := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses[0]
	if top.ID != "lock-order-cycle" || top.Confidence != heuristics.Medium || strings.Count(top.Summary, "which goroutine") != 2 {
		t.Fatalf("kernel core: diagnosis %s %s %q, want lock-order-cycle medium naming both holders", top.ID, top.Confidence, top.Summary)
	}
	if notes := strings.Join(c.Notes, "\n"); !strings.Contains(notes, "SIGABRT") {
		t.Errorf("notes %q: want the signal that wrote the core", notes)
	}

	t.Run("truncated", func(t *testing.T) { cutGoCores(t, path, bin) })
}

// kernelGoCore runs the Go patient bin in dir as a systemd service runs
// Go programs that should leave a core (GOTRACEBACK=crash), waits until
// it is stuck, sends SIGQUIT and returns the core the kernel wrote and
// the goroutine dump the runtime printed first. It skips the test (fails
// it when CI=true) when the kernel writes no core a test can find, as
// patient.StartDumpable does.
func kernelGoCore(t *testing.T, bin, dir string) (string, string) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		t.Fatal(err)
	}
	pattern := strings.TrimSpace(string(b))
	if pattern == "" || strings.ContainsAny(pattern, "|%/") {
		patient.Missing(t, "kernel.core_pattern is %q, not a plain file name: the kernel does not write the core into the process's directory", pattern)
	}
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &lim); err != nil || lim.Max == 0 {
		patient.Missing(t, "core dumps are off: the hard RLIMIT_CORE is 0 (%v)", err)
	}
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOTRACEBACK=crash")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	patient.StartKept(t, cmd)
	lim.Cur = lim.Max
	if err := unix.Prlimit(cmd.Process.Pid, unix.RLIMIT_CORE, &lim, nil); err != nil {
		t.Fatalf("prlimit RLIMIT_CORE: %v", err)
	}
	stuck := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "stuck" {
				stuck <- true
			}
		}
		close(stuck)
	}()
	select {
	case ok := <-stuck:
		if !ok {
			t.Fatalf("the patient exited before it was stuck: %s", stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the patient was not stuck within 10 s")
	}
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the patient did not abort within 60 s of SIGQUIT")
	}
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.CoreDump() {
		t.Fatalf("the patient ended %v without a core\n%s", cmd.ProcessState, stderr.String())
	}
	path := filepath.Join(dir, pattern)
	if u, _ := os.ReadFile("/proc/sys/kernel/core_uses_pid"); strings.TrimSpace(string(u)) == "1" {
		path += "." + strconv.Itoa(cmd.Process.Pid)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the kernel says it dumped a core, but: %v", err)
	}
	return path, stderr.String()
}

// TestGoCoreLeak: the 10,000 goroutines of the leak patient are read
// from its core, each parked in select where the program created it.
func TestGoCoreLeak(t *testing.T) {
	const requests = 10_000
	p := startGo(t, "leak", fmt.Sprintf("HANGDOC_LEAK_N=%d", requests))
	start := time.Now()
	path := patient.Gcore(t, p.Pid, t.TempDir())
	t.Logf("gcore took %v", time.Since(start).Round(time.Millisecond))
	_, c := goCore(t, path, attach.CoreOptions{})
	want := patient.GoSourceLine(t, "leak", "go func() {")
	leaked := 0
	for _, th := range c.Threads {
		g := th.Goroutine()
		if !strings.HasSuffix(g.CreatedBy.File, "leak/main.go") || g.CreatedBy.Line != want {
			continue
		}
		leaked++
		if g.Status != "select" || g.CreatedByID != 1 {
			t.Fatalf("goroutine %d: %s, created in %d; want select, created in 1", g.ID, g.Status, g.CreatedByID)
		}
	}
	if leaked != requests {
		t.Fatalf("%d leaked goroutines read from the core (of %d), want %d", leaked, len(c.Threads), requests)
	}
}
