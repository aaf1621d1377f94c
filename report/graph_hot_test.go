package report

import (
	"bytes"
	"os"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// TestHotThreadsOfOneProcess: the graph draws hot the threads the top
// diagnosis is about, in its process only. The paste is a real jstack
// dump (a monitor cycle between tids 24969 and 24972) twice, as when one
// pastes two `jstack` dumps of one JVM: two processes without a pid (both
// pid 0) whose tids repeat, each with its cycle and its own diagnosis. The top diagnosis is the first dump's;
// by pid and tid alone the second dump's threads were drawn hot too.
func TestHotThreadsOfOneProcess(t *testing.T) {
	java, err := os.ReadFile("../testdata/dumps/jstack/monitor_abba.txt")
	if err != nil {
		t.Fatal(err)
	}
	snap, _, _, err := stacks.Parse(bytes.NewReader(bytes.Repeat(java, 2)), "")
	if err != nil || len(snap.Processes) != 2 || snap.Processes[0].Pid != snap.Processes[1].Pid {
		t.Fatalf("want two processes of one pid: %d processes, %v", len(snap.Processes), err)
	}
	first, second := snap.Processes[0], snap.Processes[1]
	res := heuristics.Diagnose(snap, heuristics.Options{})
	if len(res.Diagnoses) == 0 || res.Diagnoses[0].ID != "lock-order-cycle" || !res.Diagnoses[0].About(first) || res.Diagnoses[0].About(second) {
		t.Fatalf("top diagnosis %+v: want the first dump's lock-order-cycle", res.Diagnoses)
	}
	hot := hotThreads(res)
	hotIn := func(p *stacks.Process) (n int) {
		for _, th := range p.Threads {
			if hot[th] {
				n++
			}
		}
		return n
	}
	if hotIn(first) != 2 || hotIn(second) != 0 {
		t.Errorf("hot threads: %d of the first dump (want 2), %d of the second (want 0)", hotIn(first), hotIn(second))
	}
}
