package heuristics

import (
	"bytes"
	"os"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// TestOwnersPerProcess: a paste of a jstack dump and a gdb one names
// the Java monitor cycle at high confidence (the JVM prints the owners),
// as jstack alone does (it was medium: the snapshot has owners only when
// every piece does), and the gdb cycle as gdb alone does (low: no owner
// known): each process is weighed by its own dump's evidence.
func TestOwnersPerProcess(t *testing.T) {
	var in []byte
	for _, f := range []string{"../testdata/dumps/jstack/monitor_abba.txt", "../testdata/dumps/gdb/abba.txt"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in = append(in, b...)
	}
	snap, _, format, err := stacks.Parse(bytes.NewReader(in), "")
	if err != nil || format != "jstack+gdb" || len(snap.Processes) != 2 {
		t.Fatalf("format %q, %v", format, err)
	}
	if snap.Evidence.Owners {
		t.Fatal("the snapshot says owners are known for the gdb process too")
	}
	java, native := snap.Processes[0], snap.Processes[1]
	got := map[*stacks.Process]string{}
	for _, d := range Diagnose(snap, Options{}).Diagnoses {
		if d.ID != "lock-order-cycle" {
			continue
		}
		for _, p := range []*stacks.Process{java, native} {
			for _, tid := range d.Tids {
				for _, th := range p.Threads {
					if th.Tid == tid && (len(d.Pids) == 0 || d.Pids[0] == p.Pid) {
						got[p] = d.Confidence
					}
				}
			}
		}
	}
	if got[java] != High || got[native] != Low {
		t.Errorf("lock-order-cycle confidence: java %q, gdb %q; want high and low", got[java], got[native])
	}
}
