package heuristics

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// TestDiagnosisKeepsItsProcesses: a paste of dumps of two machines (or
// two pasted dumps without pids, all pid 0) may hold two processes of
// one pid whose thread ids repeat. Here the two real dumps are edited for
// the test: the jstack dump gets jcmd's "353:" line (the gdb dump's pid)
// and the gdb dump's LWP 354 and 355 become the jstack dump's 24969 and
// 24972, so that both cycles are between tids 24969 and 24972 of pid 353. Each
// diagnosis is weighed by its own process's evidence: the Java cycle
// high (the JVM prints owners), the gdb one low, as when the tids differ
// (TestOwnersPerProcess); by pid and tid alone the Java cycle took in
// the gdb process too and came out medium.
func TestDiagnosisKeepsItsProcesses(t *testing.T) {
	java, err := os.ReadFile("../testdata/dumps/jstack/monitor_abba.txt")
	if err != nil {
		t.Fatal(err)
	}
	gdb, err := os.ReadFile("../testdata/dumps/gdb/abba.txt")
	if err != nil {
		t.Fatal(err)
	}
	renumbered := strings.NewReplacer("LWP 354", "LWP 24969", "LWP 355", "LWP 24972").Replace(string(gdb))
	in := append([]byte("353:\n"), java...)
	snap, _, format, err := stacks.Parse(bytes.NewReader(append(in, renumbered...)), "")
	if err != nil || format != "jstack+gdb" || len(snap.Processes) != 2 {
		t.Fatalf("format %q, %d processes, %v", format, len(snap.Processes), err)
	}
	jp, gp := snap.Processes[0], snap.Processes[1]
	if jp.Pid != gp.Pid {
		t.Fatalf("pids %d and %d: the test wants two processes of one pid", jp.Pid, gp.Pid)
	}
	var confs []string
	for _, d := range Diagnose(snap, Options{}).Diagnoses {
		if d.ID == "lock-order-cycle" {
			confs = append(confs, d.Confidence)
		}
	}
	if strings.Join(confs, " ") != High+" "+Low {
		t.Errorf("lock-order-cycle confidences %v: want high (jstack) then low (gdb)", confs)
	}
}
