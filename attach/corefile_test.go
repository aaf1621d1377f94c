package attach_test

// Core files against live attaches: for each native patient of
// heuristics/live_test.go, the same process is attached live, then
// dumped with gcore (live first: gdb's attach interrupts every blocked
// system call, and a sleep it interrupted comes back as restart_syscall,
// which would change what the live attach sees), and the core must give
// the same threads, stacks, waits and mutex owners, and the same top
// diagnosis naming the same threads.
//
// Left out, because a core cannot show them:
//   - fence_spin (spin-wait-starved) and the busy control (progressing):
//     both rest on CPU time growing between samples; a core is one
//     instant without CPU figures, and a spinning thread in it is merely
//     a thread in user space.
//   - the Python fork patient: not native; its lock has no owner and its
//     verdict rests on the fork lineage alone (see below).
//
// Forked children: a core of the child alone has no parent, so
// Process.Fork (the parent's threads and modules) cannot be filled. The
// live attach is therefore of the child alone too, with the lineage it
// reads from the parent's /proc dropped — what a core can know — and the
// two must agree. Without lineage, a child waiting for a mutex whose
// owner is a parent thread at fork() is diagnosed orphaned-lock (the
// owner is no thread of the process) where a live attach with lineage
// says fork-inherited-lock; the waiter and the owner are the same.

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/unwind"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// coreLiveOpts samples as heuristics/live_test.go does.
var coreLiveOpts = attach.Options{Samples: 3, Interval: 100 * time.Millisecond}

type coreCase struct {
	name string
	argv func(t *testing.T) []string
	fork bool // the target is the forked child the patient prints as child=
}

func coreCases() []coreCase {
	build := func(src string, extra ...func(t *testing.T) []string) func(t *testing.T) []string {
		return func(t *testing.T) []string {
			flags := slices.Clone(patient.O2g)
			for _, e := range extra {
				flags = append(flags, e(t)...)
			}
			return []string{patient.Build(t, src, flags...)}
		}
	}
	fakeAccel := func(t *testing.T) []string {
		return patient.Link(patient.BuildLib(t, "fakeaccel.c", patient.O2g...), "fakeaccel")
	}
	o2 := func(t *testing.T) []string { return []string{patient.Build(t, "mutex_o2.c", patient.O2...)} }
	return []coreCase{
		{name: "devicepool_fork", argv: build("devicepool_fork.cpp", fakeAccel), fork: true},
		{name: "openblas_relock", argv: build("openblas_relock.c"), fork: true},
		{name: "cuda_fork", argv: build("cuda_fork.c", fakeAccel), fork: true},
		{name: "abba", argv: build("abba.c")},
		{name: "cycle3", argv: build("cycle3.c")},
		{name: "sigrelock", argv: build("sigrelock.c")},
		{name: "orphan", argv: build("orphan.c")},
		{name: "mutex_o2", argv: o2},
		{name: "sleeper", argv: build("sleeper.c")},
		{name: "socket_wait", argv: build("socket_wait.c")},
	}
}

func TestCoreMatchesLive(t *testing.T) {
	patient.RequirePtrace(t)
	patient.RequireTool(t, "gcore")
	for _, c := range coreCases() {
		t.Run(c.name, func(t *testing.T) {
			p := patient.Start(t, c.argv(t)...)
			target := p.Pid
			if c.fork {
				target = p.Int(t, "child")
				p.KillChildAtEnd(t, target)
			}
			live := attachLive(t, target, c.fork)
			path := patient.Gcore(t, target, t.TempDir())
			snap, err := attach.Core(path, attach.CoreOptions{})
			if err != nil {
				t.Fatalf("Core(%s): %v", path, err)
			}
			checkCoreSnapshot(t, snap, target)
			if pp, lp := snap.Processes[0].PPid, live.Processes[0].PPid; pp != lp {
				t.Errorf("ppid %d, live %d", pp, lp)
			}
			compareCoreLive(t, snap, live)
		})
	}
}

// attachLive attaches to pid alone; for a forked child, the lineage read
// from its parent is dropped, as a core of the child cannot have it.
func attachLive(t *testing.T, pid int, dropLineage bool) *stacks.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := attach.Attach(ctx, []int{pid}, coreLiveOpts)
	if err != nil {
		t.Fatalf("Attach(%d): %v", pid, err)
	}
	if dropLineage {
		snap.Evidence.Lineage = false
		for _, p := range snap.Processes {
			p.Fork, p.Children = nil, nil
		}
	}
	return snap
}

// checkCoreSnapshot checks what every core snapshot of process pid says
// about itself.
func checkCoreSnapshot(t *testing.T, snap *stacks.Snapshot, pid int) {
	t.Helper()
	if snap.Source != "core" || snap.Samples != 1 || snap.Schema != stacks.Schema {
		t.Errorf("source %q, samples %d, schema %q; want core, 1, %s", snap.Source, snap.Samples, snap.Schema, stacks.Schema)
	}
	if want := (stacks.Evidence{Owners: true, Syscalls: true}); snap.Evidence != want {
		t.Errorf("evidence %+v, want %+v", snap.Evidence, want)
	}
	if len(snap.Processes) != 1 {
		t.Fatalf("%d processes, want 1", len(snap.Processes))
	}
	proc := snap.Processes[0]
	if proc.Pid != pid {
		t.Errorf("pid %d, want %d", proc.Pid, pid)
	}
	if proc.Exe == "" || len(proc.Modules) == 0 {
		t.Errorf("exe %q, %d modules: want the executable and its libraries", proc.Exe, len(proc.Modules))
	}
	if !slices.ContainsFunc(proc.Modules, func(m stacks.Module) bool { return m.Path == "[vdso]" }) {
		t.Errorf("no [vdso] among the modules")
	}
	for _, n := range proc.Notes {
		if strings.Contains(n, "missing") || strings.Contains(n, "mismatch") || strings.Contains(n, "truncated") {
			t.Errorf("process note on a whole core of this machine: %s", n)
		}
	}
}

// compareCoreLive holds a core's snapshot against the live one of the
// same process: the same threads, each with the same stack, wait and
// mutex, and the same top diagnosis naming the same threads.
func compareCoreLive(t *testing.T, core, live *stacks.Snapshot) {
	t.Helper()
	cp, lp := core.Processes[0], live.Processes[0]
	cd := heuristics.Diagnose(core, heuristics.Options{}).Diagnoses
	ld := heuristics.Diagnose(live, heuristics.Options{}).Diagnoses
	t.Logf("live: %s", verdict(ld))
	t.Logf("core: %s", verdict(cd))
	t.Cleanup(func() {
		if t.Failed() {
			for _, th := range cp.Threads {
				t.Logf("core thread %d %q %s wait %s notes %q\n%s", th.Tid, th.Name, th.State, waitText(th.Wait), th.Notes, stackString(th.Stack))
			}
			for _, th := range lp.Threads {
				t.Logf("live thread %d %q %s wait %s notes %q\n%s", th.Tid, th.Name, th.State, waitText(th.Wait), th.Notes, stackString(th.Stack))
			}
			t.Logf("core notes: %q", cp.Notes)
		}
	})

	if cp.Exe != lp.Exe {
		t.Errorf("exe %q, live %q", cp.Exe, lp.Exe)
	}
	if got, want := tidsOf(cp.Threads), tidsOf(lp.Threads); !slices.Equal(got, want) {
		t.Fatalf("threads %v, live %v", got, want)
	}
	for i, ct := range cp.Threads {
		lt := lp.Threads[i]
		if ct.Tid == cp.Pid && ct.Name != lt.Name {
			t.Errorf("main thread %d: name %q, live %q", ct.Tid, ct.Name, lt.Name)
		}
		if got, want := frameIDs(ct.Stack), frameIDs(lt.Stack); !slices.Equal(got, want) {
			t.Errorf("thread %d: stack\n  %q\nlive\n  %q", ct.Tid, got, want)
		}
		if got, want := waitText(ct.Wait), waitText(lt.Wait); got != want {
			t.Errorf("thread %d: wait %s, live %s", ct.Tid, got, want)
		}
	}

	if len(ld) == 0 || len(cd) == 0 {
		t.Fatalf("diagnoses: %d from the core, %d live; want some from both", len(cd), len(ld))
	}
	c, l := cd[0], ld[0]
	if c.ID != l.ID || c.Deadlock != l.Deadlock {
		t.Errorf("top diagnosis %s (deadlock %v), live %s (deadlock %v)", c.ID, c.Deadlock, l.ID, l.Deadlock)
	}
	if got, want := sorted(c.Tids), sorted(l.Tids); !slices.Equal(got, want) {
		t.Errorf("%s: tids %v, live %v", c.ID, got, want)
	}
	if got, want := sorted(c.Pids), sorted(l.Pids); !slices.Equal(got, want) {
		t.Errorf("%s: pids %v, live %v", c.ID, got, want)
	}
}

// frameIDs says what must be the same in two unwinds of one stack by
// the same unwinder and symboliser: PC, function, module, signal frame.
func frameIDs(st []stacks.Frame) []string {
	out := make([]string, len(st))
	for i, f := range st {
		out[i] = fmt.Sprintf("%#x %s %s %v", f.PC, f.Func, filepath.Base(f.Module), f.Signal)
	}
	return out
}

func verdict(ds []heuristics.Diagnosis) string {
	if len(ds) == 0 {
		return "(no diagnosis)"
	}
	d := ds[0]
	return fmt.Sprintf("[%s, %s, deadlock=%v, tids %v] %s", d.ID, d.Confidence, d.Deadlock, d.Tids, d.Summary)
}

func tidsOf(ts []*stacks.Thread) []int {
	var out []int
	for _, t := range ts {
		out = append(out, t.Tid)
	}
	return sorted(out)
}

func sorted(xs []int) []int {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

// waitText is what a wait says that a core and a live attach both read:
// the call, its futex word and operation, the mutex and the join.
// Wchan and fd targets come from /proc only.
func waitText(w *stacks.Wait) string {
	if w == nil {
		return "none"
	}
	s := fmt.Sprintf("%s(nr %d", w.Syscall, w.Nr)
	if w.Syscall == "futex" {
		s += fmt.Sprintf(" %#x %s", w.Addr, w.Op)
		if w.Value != nil {
			s += fmt.Sprintf(" value %d", *w.Value)
		}
	}
	if w.Fd != 0 {
		s += fmt.Sprintf(" fd %d", w.Fd)
	}
	if m := w.Mutex; m != nil {
		s += fmt.Sprintf(" mutex %#x %q lock %d owner %d kind %d", m.Addr, m.Symbol, m.Lock, m.Owner, m.Kind)
	}
	if w.JoinTid != 0 {
		s += fmt.Sprintf(" join %d", w.JoinTid)
	}
	return s + ")"
}

// TestKernelCoreMatchesLive has the kernel dump a deadlocked patient
// (SIGABRT, patient.StartDumpable) after a live attach: a kernel core
// leaves out file-backed code, which comes from the files, and orders
// its threads with the dumping one first.
func TestKernelCoreMatchesLive(t *testing.T) {
	patient.RequirePtrace(t)
	dir := t.TempDir()
	p := patient.StartDumpable(t, dir, patient.Build(t, "abba.c", patient.O2g...))
	live := attachLive(t, p.Pid, false)
	path := p.KernelCore(t)
	snap, err := attach.Core(path, attach.CoreOptions{})
	if err != nil {
		t.Fatalf("Core(%s): %v", path, err)
	}
	checkCoreSnapshot(t, snap, p.Pid)
	// Cores are named through the same path as live stacks: libc's
	// inlined futex_wait (its DWARF is libc6-dbg's) is a frame of the
	// lock waiters, marked inlined, in the core as live.
	inlined := 0
	for _, th := range snap.Processes[0].Threads {
		for _, f := range th.Stack {
			if f.Inlined && f.Func == "futex_wait" {
				inlined++
			}
		}
	}
	if inlined < 2 {
		t.Errorf("%d lock waiters of the core with an inlined futex_wait frame, want 2", inlined)
	}
	// The process is gone: the live snapshot was read before, and
	// SIGABRT interrupted the same calls. (The kernel's pr_ppid is the
	// parent's thread that forked, not its pid: not compared.)
	compareCoreLive(t, snap, live)
	if findNote(snap.Processes[0].Notes, "SIGABRT") == "" {
		t.Errorf("no note saying the core was written on SIGABRT: %q", snap.Processes[0].Notes)
	}

	// The kernel writes the notes first and memory in address order:
	// a core cut short loses the high addresses, where stacks are.
	// Cut inside the main thread's stack: the other threads are still
	// read, and the note says the core is truncated; cut just after the
	// notes: nothing can be unwound, and the error says why.
	cf, err := core.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	var mainSP, firstLoad uint64
	for _, th := range cf.Threads {
		if th.TID == p.Pid {
			mainSP = th.Regs.Val[unwind.RSP]
		}
	}
	firstLoad = ^uint64(0)
	var cut int64
	for _, s := range cf.Segments {
		if s.FileSize > 0 {
			firstLoad = min(firstLoad, s.FileOff)
		}
		if mainSP >= s.Addr && mainSP-s.Addr < s.FileSize {
			cut = int64(s.FileOff + (mainSP - s.Addr))
		}
	}
	if cut == 0 {
		t.Fatalf("main thread's stack pointer %#x is in no segment of the core", mainSP)
	}
	snap, err = attach.Core(truncatedCopy(t, path, cut), attach.CoreOptions{})
	if err != nil {
		t.Errorf("core cut in the main thread's stack: %v", err)
	} else {
		proc := snap.Processes[0]
		if findNote(proc.Notes, "truncated") == "" {
			t.Errorf("cut core: no note saying it is truncated: %q", proc.Notes)
		}
		for _, th := range proc.Threads {
			switch {
			case th.Tid == p.Pid && (machineFrameCount(th.Stack) > 1 || len(th.Notes) == 0):
				t.Errorf("main thread, its stack cut off: %d machine frames, notes %q", machineFrameCount(th.Stack), th.Notes)
			case th.Tid != p.Pid && (th.Wait == nil || th.Wait.Mutex == nil):
				t.Errorf("thread %d: mutex wait not read from a core cut after its stack: wait %s", th.Tid, waitText(th.Wait))
			}
		}
	}
	_, err = attach.Core(truncatedCopy(t, path, int64(firstLoad)+1), attach.CoreOptions{})
	if !errors.Is(err, attach.ErrNoStacks) || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("core cut after its notes: err %v, want ErrNoStacks saying the core is truncated", err)
	}
}

// truncatedCopy writes the first n bytes of the file at path to a new
// file and returns its path.
func truncatedCopy(t *testing.T, path string, n int64) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := filepath.Join(t.TempDir(), filepath.Base(path)+".cut"+strconv.FormatInt(n, 10))
	w, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, n)); err != nil {
		t.Fatal(err)
	}
	return out
}

// coreOf starts the mutex_o2 patient from a copy of its binary in a
// directory of its own, lets prepare change that copy while the patient
// runs, and returns the patient, the original binary and a gcore.
func coreOf(t *testing.T, prepare func(bin string)) (*patient.Proc, string, string) {
	t.Helper()
	patient.RequirePtrace(t)
	src := patient.Build(t, "mutex_o2.c", patient.O2...)
	dir := t.TempDir()
	bin := filepath.Join(dir, "mutex_o2")
	copyFile(t, src, bin, 0o755)
	p := patient.Start(t, bin)
	prepare(bin)
	return p, src, patient.Gcore(t, p.Pid, dir)
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, mode); err != nil {
		t.Fatal(err)
	}
}

// TestCoreDeletedBinary: the executable was deleted while the process
// ran. The core names it; the note says it is missing and what to do;
// the libc frames and the lock evidence are still read; --exe with the
// same build restores the names, --exe with another build is refused.
func TestCoreDeletedBinary(t *testing.T) {
	p, src, path := coreOf(t, func(bin string) {
		if err := os.Remove(bin); err != nil {
			t.Fatal(err)
		}
	})
	snap, err := attach.Core(path, attach.CoreOptions{})
	if err != nil {
		t.Fatalf("Core: %v", err)
	}
	proc := snap.Processes[0]
	note := findNote(proc.Notes, "mutex_o2: missing:")
	if note == "" || !strings.Contains(note, "deleted") || !strings.Contains(note, "--exe") {
		t.Errorf("no note saying the deleted executable is missing and to pass --exe: %q", proc.Notes)
	}
	waiters := 0
	for _, th := range proc.Threads {
		if th.Tid == p.Pid {
			continue
		}
		if indexOf(names(th.Stack), "pthread_mutex_lock") < 0 {
			t.Errorf("thread %d: no libc pthread_mutex_lock frame without the executable:\n%s", th.Tid, stackString(th.Stack))
		}
		if w := th.Wait; w != nil && w.Mutex != nil && w.Mutex.Owner == p.Pid {
			waiters++
		}
	}
	if waiters != 4 {
		t.Errorf("%d workers wait on a mutex owned by main (%d), want 4", waiters, p.Pid)
	}
	inExe := false
	for _, f := range mainThread(t, proc).Stack {
		inExe = inExe || f.Func == "" && strings.HasSuffix(f.Module, "/mutex_o2")
	}
	if !inExe {
		t.Errorf("main: no unnamed frame placed in the missing executable:\n%s", stackString(mainThread(t, proc).Stack))
	}

	snap, err = attach.Core(path, attach.CoreOptions{Exe: src})
	if err != nil {
		t.Fatalf("Core --exe %s: %v", src, err)
	}
	proc = snap.Processes[0]
	if n := findNote(proc.Notes, "mutex_o2"); n != "" {
		t.Errorf("--exe with the right build: note %q", n)
	}
	ant := -1
	for _, th := range proc.Threads {
		if indexOf(names(th.Stack), "ant_bite") >= 0 {
			ant = th.Tid
			if w := th.Wait; w == nil || w.Mutex == nil || w.Mutex.Symbol != "the_lock" {
				t.Errorf("ant %d: wait %s, want the_lock", th.Tid, waitText(w))
			}
		}
	}
	if ant < 0 {
		t.Errorf("--exe: no thread in ant_bite")
	}

	// Another build's symbols would name every frame wrong: refused.
	other := patient.Build(t, "abba.c", patient.O2...)
	if _, err = attach.Core(path, attach.CoreOptions{Exe: other}); err == nil || !strings.Contains(err.Error(), other+" is not the build the process ran") {
		t.Errorf("--exe with another build: %v, want it refused naming it", err)
	}
}

// TestCoreReplacedBinary: the executable was replaced by another build
// while the process ran; the build id the core holds tells.
func TestCoreReplacedBinary(t *testing.T) {
	other := patient.Build(t, "mutex_o2.c", patient.O0g...)
	_, _, path := coreOf(t, func(bin string) {
		tmp := bin + ".new"
		copyFile(t, other, tmp, 0o755)
		if err := os.Rename(tmp, bin); err != nil {
			t.Fatal(err)
		}
	})
	snap, err := attach.Core(path, attach.CoreOptions{})
	if err != nil {
		t.Fatalf("Core: %v", err)
	}
	if n := findNote(snap.Processes[0].Notes, "mutex_o2: build id mismatch"); n == "" {
		t.Errorf("no build id mismatch note: %q", snap.Processes[0].Notes)
	}
	for _, m := range snap.Processes[0].Modules {
		if strings.HasSuffix(m.Path, "mutex_o2") {
			t.Errorf("the replaced executable was placed: %+v", m)
		}
	}
}

// TestCoreWithoutFiles: none of the mapped files is under Root; nothing
// can be unwound, and the error says which files are missing.
func TestCoreWithoutFiles(t *testing.T) {
	_, _, path := coreOf(t, func(string) {})
	_, err := attach.Core(path, attach.CoreOptions{Root: t.TempDir()})
	if !errors.Is(err, attach.ErrNoStacks) || !strings.Contains(err.Error(), "libc.so.6: missing:") {
		t.Fatalf("err %v, want ErrNoStacks naming the missing libc", err)
	}
	t.Logf("%v", err)
}

// TestCoreTruncated cuts a core at many places: each cut gives an error
// or a snapshot that says the core is truncated, never a panic; a cut
// that loses the notes or the stacks is an error that says so.
func TestCoreTruncated(t *testing.T) {
	_, _, path := coreOf(t, func(string) {})
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size()
	ef, err := elf.NewFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// gcore writes the notes last; dataEnd is where the segments end
	// (section headers may follow, which a core reader does not need).
	var notes, lastLoad, dataEnd int64
	for _, p := range ef.Progs {
		switch p.Type {
		case elf.PT_NOTE:
			notes = int64(p.Off)
		case elf.PT_LOAD:
			lastLoad = max(lastLoad, int64(p.Off))
		}
		dataEnd = max(dataEnd, int64(p.Off+p.Filesz))
	}
	cuts := []int64{0, 4, 63, 64, 200, size / 3, size / 2, notes - 1, notes + 100, lastLoad + 1, dataEnd - 1, size - 1}
	for _, cut := range cuts {
		if cut < 0 || cut >= size {
			continue
		}
		t.Run(strconv.FormatInt(cut, 10), func(t *testing.T) {
			snap, err := attach.Core(truncatedCopy(t, path, cut), attach.CoreOptions{})
			if err != nil {
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error of several lines:\n%v", err)
				}
				if cut >= 64 && !strings.Contains(err.Error(), "truncated") {
					t.Errorf("error does not say the core is truncated: %v", err)
				}
				t.Logf("%v", err)
				return
			}
			if n := findNote(snap.Processes[0].Notes, "truncated"); n == "" && cut < dataEnd {
				t.Errorf("a snapshot from a truncated core without a note saying so: %q", snap.Processes[0].Notes)
			} else {
				t.Logf("snapshot with note: %s", n)
			}
		})
	}
}

func findNote(notes []string, sub string) string {
	for _, n := range notes {
		if strings.Contains(n, sub) {
			return n
		}
	}
	return ""
}

// TestCoreGarbled overwrites bytes of a core's program headers and
// notes, a few at a time: Core returns an error or a snapshot, never
// panics or hangs.
func TestCoreGarbled(t *testing.T) {
	_, _, path := coreOf(t, func(string) {})
	garbled := filepath.Join(t.TempDir(), "core.garbled")
	copyFile(t, path, garbled, 0o644)
	f, err := os.OpenFile(garbled, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ef, err := elf.NewFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// The regions worth garbling: ELF and program headers, and the notes.
	regions := [][2]int64{{0, 64 + int64(len(ef.Progs))*56}}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_NOTE {
			regions = append(regions, [2]int64{int64(p.Off), int64(p.Off + p.Filesz)})
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	results := map[string]int{}
	for i := range 60 {
		r := regions[i%len(regions)]
		type saved struct {
			off int64
			b   [1]byte
		}
		var undo []saved
		for range 1 + rng.IntN(8) {
			off := r[0] + rng.Int64N(r[1]-r[0])
			var s saved
			s.off = off
			if _, err := f.ReadAt(s.b[:], off); err != nil {
				t.Fatal(err)
			}
			undo = append(undo, s)
			if _, err := f.WriteAt([]byte{byte(rng.Uint32())}, off); err != nil {
				t.Fatal(err)
			}
		}
		snap, err := attach.Core(f.Name(), attach.CoreOptions{})
		switch {
		case err != nil && strings.Contains(err.Error(), "internal error"):
			t.Errorf("garbling %d: %v", i, err)
		case err != nil:
			results["error"]++
		case snap == nil || len(snap.Processes) != 1:
			t.Errorf("garbling %d: no error and no process", i)
		default:
			results["snapshot"]++
		}
		for j := len(undo) - 1; j >= 0; j-- {
			if _, err := f.WriteAt(undo[j].b[:], undo[j].off); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("%v", results)
}

// machineFrameCount counts the frames of a stack that the unwinder found,
// leaving out the inlined ones named at the same PC.
func machineFrameCount(st []stacks.Frame) int {
	n := 0
	for _, f := range st {
		if !f.Inlined {
			n++
		}
	}
	return n
}
