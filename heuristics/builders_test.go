package heuristics

import (
	"slices"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// Builders for hand-made snapshots: a test says the shape of a hang in a
// few lines, the way a person would draw it.

// live is a snapshot from a live attach: owners, CPU, syscalls, lineage.
func live(procs ...*stacks.Process) *stacks.Snapshot {
	return &stacks.Snapshot{Schema: stacks.Schema, Source: "attach", Samples: 3, Processes: procs,
		Evidence: stacks.Evidence{Owners: true, CPU: true, Syscalls: true, Lineage: true}}
}

// pasted is a snapshot from a pasted dump: frame names only.
func pasted(procs ...*stacks.Process) *stacks.Snapshot {
	return &stacks.Snapshot{Schema: stacks.Schema, Source: "gdb", Samples: 1, Processes: procs}
}

func proc(pid int, threads ...*stacks.Thread) *stacks.Process {
	return &stacks.Process{Pid: pid, PPid: 1, Exe: "/usr/bin/patient", State: "S", Threads: threads}
}

// forked marks p a fork of parent that did not exec.
func forked(p *stacks.Process, parent int, parentThreads ...int) *stacks.Process {
	p.PPid = parent
	p.Fork = &stacks.Fork{ParentPid: parent, ParentThreads: parentThreads}
	return p
}

// thread builds a sleeping thread; frames are innermost first, "<signal>"
// stands for the kernel's signal frame, "??" for a frame without a
// symbol. It has three idle samples.
func thread(tid int, name string, frames ...string) *stacks.Thread {
	t := &stacks.Thread{Tid: tid, Name: name, State: "S"}
	for _, f := range frames {
		switch f {
		case "<signal>":
			t.Stack = append(t.Stack, stacks.Frame{Signal: true})
		case "??":
			t.Stack = append(t.Stack, stacks.Frame{})
		default:
			t.Stack = append(t.Stack, stacks.Frame{Func: f})
		}
	}
	for range 3 {
		t.AddSample(stacks.Sample{State: "S", Stack: t.Stack})
	}
	return t
}

// on sets what a thread waits on, in its last sample too.
func on(t *stacks.Thread, w *stacks.Wait) *stacks.Thread {
	t.Wait = w
	for i := range t.Samples() {
		t.Samples()[i].Wait = w
	}
	return t
}

// spinning makes a thread run at full CPU.
func spinning(t *stacks.Thread) *stacks.Thread {
	t.State, t.CPU = "R", 100
	for i := range t.Samples() {
		t.Samples()[i].State, t.Samples()[i].CPUTicks = "R", 10
	}
	return t
}

// lockWait is a futex wait on a pthread mutex, as attach reads it.
func lockWait(addr uint64, owner int, kind uint32) *stacks.Wait {
	lock := uint32(2)
	if owner == 0 {
		lock = 1
	}
	return &stacks.Wait{Syscall: "futex", Nr: 202, Addr: addr, Op: "FUTEX_WAIT_PRIVATE",
		Mutex: &stacks.Mutex{Addr: addr, Lock: lock, Owner: owner, Kind: kind}}
}

// named gives a lock wait's mutex a symbol.
func named(w *stacks.Wait, symbol string) *stacks.Wait {
	w.Mutex.Symbol = symbol
	return w
}

func futexWait(addr uint64) *stacks.Wait {
	return &stacks.Wait{Syscall: "futex", Nr: 202, Addr: addr, Op: "FUTEX_WAIT_BITSET_PRIVATE"}
}

func joinWait(tid int) *stacks.Wait {
	return &stacks.Wait{Syscall: "futex", Nr: 202, Op: "FUTEX_WAIT_BITSET", JoinTid: tid}
}

// Frames of the usual waits, innermost first; callers append their own.
func mutexFrames(caller ...string) []string {
	return append([]string{"__futex_abstimed_wait_common64", "__lll_lock_wait", "___pthread_mutex_lock"}, caller...)
}

func condFrames(caller ...string) []string {
	return append([]string{"__futex_abstimed_wait_common64", "__pthread_cond_wait_common", "___pthread_cond_wait"}, caller...)
}

func joinFrames(caller ...string) []string {
	return append([]string{"__futex_abstimed_wait_common64", "__pthread_clockjoin_ex"}, caller...)
}

// match runs one signature's matcher.
func match(t *testing.T, id string, snap *stacks.Snapshot) []Diagnosis {
	t.Helper()
	s := Lookup(id)
	if s == nil {
		t.Fatalf("no signature %q", id)
	}
	return s.Match(newAnalysis(snap))
}

// one expects exactly one diagnosis and returns it.
func one(t *testing.T, id string, snap *stacks.Snapshot) Diagnosis {
	t.Helper()
	ds := match(t, id, snap)
	if len(ds) != 1 {
		t.Fatalf("%s: %d diagnoses, want 1: %s", id, len(ds), dump(ds))
	}
	return ds[0]
}

func none(t *testing.T, id string, snap *stacks.Snapshot) {
	t.Helper()
	if ds := match(t, id, snap); len(ds) != 0 {
		t.Fatalf("%s: want none, got %s", id, dump(ds))
	}
}

func dump(ds []Diagnosis) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n  [" + d.ID + " " + d.Confidence + "] " + d.Summary)
		for _, c := range d.Chain {
			b.WriteString("\n    → " + c)
		}
	}
	return b.String()
}

// has checks that s contains every part.
func has(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s %q: missing %q", what, s, p)
		}
	}
}

// wantHints checks a diagnosis's hints, in order.
func wantHints(t *testing.T, d Diagnosis, want ...Hint) {
	t.Helper()
	if !slices.Equal(d.Hints, want) {
		t.Errorf("%s: hints %+v, want %+v", d.ID, d.Hints, want)
	}
}

func lacks(t *testing.T, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if strings.Contains(s, p) {
			t.Errorf("%s %q: should not say %q", what, s, p)
		}
	}
}

func sameInts(t *testing.T, what string, got []int, want ...int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s = %v, want %v", what, got, want)
			return
		}
	}
}

// complete checks the fields every diagnosis must have.
func complete(t *testing.T, d Diagnosis) {
	t.Helper()
	if d.Summary == "" || len(d.Chain) == 0 || len(d.Evidence) == 0 || len(d.Refs) == 0 ||
		len(d.Pids) == 0 || len(d.Tids) == 0 || !d.Deadlock || d.Confidence == "" {
		t.Errorf("incomplete diagnosis: %+v", d)
	}
}
