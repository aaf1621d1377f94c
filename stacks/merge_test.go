package stacks

import (
	"strings"
	"testing"
	"time"
)

func TestMerge(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	a := &Snapshot{Schema: Schema, Source: "attach", Taken: t0.Add(time.Second), Samples: 3, Interval: Duration(100 * time.Millisecond),
		Evidence:  Evidence{Owners: true, CPU: true, Syscalls: true, Lineage: true},
		Processes: []*Process{{Pid: 10, Label: "rank0"}, {Pid: 11, Label: "rank0"}}}
	b := &Snapshot{Schema: Schema, Source: "gdb", Taken: t0, Samples: 1,
		Evidence:  Evidence{Owners: false, CPU: false, Syscalls: false, Arguments: true},
		Processes: []*Process{{Pid: 20, Label: "rank1.txt"}}}
	c := &Snapshot{Schema: Schema, Source: "attach", Samples: 5, Interval: Duration(100 * time.Millisecond),
		Evidence:  Evidence{Owners: true, CPU: true, Syscalls: true, Lineage: true},
		Processes: []*Process{{Pid: 30, Label: "rank2"}}}

	m := Merge(a, nil, b, c)
	if m.Schema != Schema || m.Source != "merged" {
		t.Errorf("schema %q source %q, want %q and merged", m.Schema, m.Source, Schema)
	}
	var got []string
	for _, p := range m.Processes {
		got = append(got, p.Label)
	}
	if strings.Join(got, ",") != "rank0,rank0,rank1.txt,rank2" {
		t.Errorf("processes %q: want the inputs' in order", got)
	}
	if m.Evidence != (Evidence{}) {
		t.Errorf("evidence %+v: want only what every input has (nothing here)", m.Evidence)
	}
	if m.Samples != 1 {
		t.Errorf("samples %d, want the fewest (1)", m.Samples)
	}
	if !m.Taken.Equal(t0) {
		t.Errorf("taken %v, want the earliest %v", m.Taken, t0)
	}
	if m.Interval != 0 {
		t.Errorf("interval %v: the inputs disagree, want 0", m.Interval)
	}

	// Same source, same interval: kept; evidence is the intersection.
	m = Merge(a, c)
	if m.Source != "attach" || m.Samples != 3 || m.Interval != a.Interval {
		t.Errorf("source %q samples %d interval %v", m.Source, m.Samples, m.Interval)
	}
	if want := (Evidence{Owners: true, CPU: true, Syscalls: true, Lineage: true}); m.Evidence != want {
		t.Errorf("evidence %+v, want %+v", m.Evidence, want)
	}

	// One input: the same facts.
	m = Merge(b)
	if m.Source != "gdb" || m.Evidence != b.Evidence || len(m.Processes) != 1 || m.Samples != 1 {
		t.Errorf("one input: %+v", m)
	}

	// No input: an empty snapshot, not nil.
	m = Merge()
	if m == nil || m.Processes == nil || len(m.Processes) != 0 || m.Schema != Schema {
		t.Errorf("no input: %+v", m)
	}
}

// Ranks on different hosts reuse pids: the merged snapshot keeps them and
// says so on the later process.
func TestMergeSamePid(t *testing.T) {
	a := &Snapshot{Source: "gdb", Processes: []*Process{{Pid: 1, Label: "host-a"}}}
	b := &Snapshot{Source: "gdb", Processes: []*Process{{Pid: 1, Label: "host-b"}}}
	m := Merge(a, b)
	if len(m.Processes) != 2 || m.Processes[0].Pid != 1 || m.Processes[1].Pid != 1 {
		t.Fatalf("processes %+v", m.Processes)
	}
	if len(m.Processes[0].Notes) != 0 {
		t.Errorf("first process got notes %q", m.Processes[0].Notes)
	}
	if n := m.Processes[1].Notes; len(n) != 1 || !strings.Contains(n[0], "pid 1 also appears in input 1") {
		t.Errorf("second process notes %q", n)
	}
}

// A paste of a py-spy dump (GIL holders known) and a gdb dump: the merged
// snapshot knows who holds the GIL in neither, the py-spy process keeps
// it as its own evidence, the gdb process has none of its own.
func TestMergeEvidencePerProcess(t *testing.T) {
	py := &Snapshot{Source: "py-spy", Evidence: Evidence{GIL: true, Arguments: true}, Processes: []*Process{{Pid: 7}}}
	gdb := &Snapshot{Source: "gdb", Evidence: Evidence{Arguments: true}, Processes: []*Process{{Pid: 8}}}
	m := mergePieces([]*Snapshot{py, gdb})
	if m.Evidence.GIL || !m.Evidence.Arguments {
		t.Errorf("snapshot evidence %+v, want arguments only", m.Evidence)
	}
	if ev := m.Processes[0].Evidence; ev == nil || !ev.GIL {
		t.Errorf("py-spy process evidence %+v, want its own GIL", ev)
	}
	if ev := m.Processes[1].Evidence; ev != nil {
		t.Errorf("gdb process evidence %+v, want none of its own (the snapshot's)", ev)
	}
}
