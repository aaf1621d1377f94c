package heuristics

import (
	"bytes"
	"os"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// Two stored dumps pasted one after the other keep the verdict of each
// (stacks' TestConcatenatedDumps tries the pairs; these are the rules
// that lost one).

func pastedPair(t *testing.T, a, b string) (*stacks.Snapshot, []Diagnosis) {
	t.Helper()
	var in []byte
	for _, f := range []string{a, b} {
		x, err := os.ReadFile("../testdata/dumps/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasSuffix(x, []byte("\n")) {
			x = append(x, '\n')
		}
		in = append(in, x...)
	}
	snap, _, _, err := stacks.Parse(bytes.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	return snap, Diagnose(snap, Options{}).Diagnoses
}

// TestToolClaimsPerProcess: two detector reports without pids (both pid
// 0) are two claims, each about its own process; by pid they were one
// diagnosis of both, and a claim silenced another pid-0 process's own
// lock-order verdict.
func TestToolClaimsPerProcess(t *testing.T) {
	for _, pair := range [][2]string{
		{"go-deadlock/rwmutex_inconsistent_locking.txt", "go-deadlock/rwmutex_inconsistent_locking.txt"},
		{"frames/bcc_deadlock_report.txt", "go-deadlock/rwmutex_inconsistent_locking.txt"},
		// a claim leaves alone the lone lock waiter of another process
		// (an lldb core of pid 0 after bcc's report, also pid 0)
		{"frames/bcc_deadlock_report.txt", "lldb/variant_core_bt_all.txt"},
	} {
		snap, ds := pastedPair(t, pair[0], pair[1])
		if len(snap.Processes) != 2 {
			t.Fatalf("%s + %s: %d processes", pair[0], pair[1], len(snap.Processes))
		}
		for _, p := range snap.Processes {
			n := 0
			for _, d := range ds {
				if d.ID == "lock-order-cycle" && d.About(p) {
					n++
					for _, q := range snap.Processes {
						if q != p && d.About(q) {
							t.Errorf("%s + %s: one claim about both processes: %s", pair[0], pair[1], d.Summary)
						}
					}
				}
			}
			if n != 1 {
				t.Errorf("%s + %s: %d lock-order-cycle claims about a process, want 1", pair[0], pair[1], n)
			}
		}
	}
}

// TestProgressTimeoutBesideOtherProcesses: an MPICH rank's progress-
// timeout report says which rank straggles when the paste holds too few
// ranks for the majority rule; pasted with two unrelated processes
// (three in all) it was not asked. Silent: the unrelated processes
// alone give no straggler.
func TestProgressTimeoutBesideOtherProcesses(t *testing.T) {
	_, ds := pastedPair(t, "frames/mpich_backtrace_symbols.txt", "py-spy/py_logging_fork_subprocesses_native.txt")
	ids := map[string]bool{}
	for _, d := range ds {
		ids[d.ID] = true
	}
	if !ids["collective-straggler"] || !ids["fork-inherited-lock"] {
		t.Errorf("verdicts %v, want collective-straggler and fork-inherited-lock", ids)
	}
	_, ds = pastedPair(t, "py-spy/py_logging_fork_subprocesses_native.txt", "py-spy/lock.txt")
	for _, d := range ds {
		if d.ID == "collective-straggler" {
			t.Errorf("collective-straggler without an MPI rank: %s", d.Summary)
		}
	}
}
