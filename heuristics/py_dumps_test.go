package heuristics_test

// Python dumps of the Python patients, fed through the same path as
// `hangdoc analyze` (stacks.Parse, then Diagnose): the same ids as the
// live attach where the dump carries the evidence.
//
// Where the dumps come from:
//   - testdata/dumps/faulthandler/py_*.txt are real: the patients run
//     under /usr/bin/python3 -X faulthandler and were sent SIGABRT once
//     stuck (the worker of py_logging_fork.py, its parent in a second run,
//     py_gilext.py), stderr kept as printed.
//   - testdata/dumps/py-spy/py_*_native.txt are hand-written: py-spy is not
//     installable here (no PyPI, no Debian package). They are the live
//     snapshots of the same patients (hangdoc attach --format json, with
//     the live CPython reader: tids, Python frames, lines, GIL holder)
//     printed the way py-spy dump --native prints them
//     (benfred/py-spy src/native_stack_trace.rs: interpreter frames other
//     than the eval loop, time_sleep and PyGILState_Ensure are dropped,
//     so take_gil and PyThread_acquire_lock do not show; Python frames by
//     co_name and shortened file; native frames by library or source
//     file; "(active+gil)" for the GIL holder).

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

func analyzeDump(t *testing.T, format, name string) []heuristics.Diagnosis {
	t.Helper()
	path := filepath.Join("..", "testdata", "dumps", format, name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snap, _, got, err := stacks.Parse(f, "") // detected, as `hangdoc analyze` does
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if got != format {
		t.Errorf("%s: read as %q, want %q", path, got, format)
	}
	ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	for _, d := range ds {
		t.Logf("[%s, %s, deadlock=%v] %s", d.ID, d.Confidence, d.Deadlock, d.Summary)
	}
	return ds
}

func topIs(t *testing.T, ds []heuristics.Diagnosis, id string) *heuristics.Diagnosis {
	t.Helper()
	if len(ds) == 0 || ds[0].ID != id || !ds[0].Deadlock {
		t.Fatalf("top diagnosis is not %s", id)
	}
	return &ds[0]
}

func noClaim(t *testing.T, ds []heuristics.Diagnosis, ids ...string) {
	t.Helper()
	for _, d := range ds {
		if slices.Contains(ids, d.ID) {
			t.Errorf("%s claimed: %s", d.ID, d.Summary)
		}
	}
}

func says(t *testing.T, d *heuristics.Diagnosis, what, s string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(s, p) {
			t.Errorf("%s %s %q: missing %q", d.ID, what, s, p)
		}
	}
}

func TestPySpyDumpGILDeadlock(t *testing.T) {
	d := topIs(t, analyzeDump(t, "py-spy", "py_gilext_native.txt"), "gil-deadlock")
	if !slices.Equal(d.Tids, []int{528, 529}) {
		t.Errorf("tids %v, want the GIL holder 528 and the GIL waiter 529", d.Tids)
	}
	if d.Confidence == heuristics.High {
		t.Errorf("high confidence without a mutex owner")
	}
	says(t, d, "summary", d.Summary, "528 `MainThread` holds the GIL", "529 `regainer` waits for the GIL", "hold_then_regain", "py_gilext.py:34")
}

func TestPySpyDumpLoggingForkWorker(t *testing.T) {
	d := topIs(t, analyzeDump(t, "py-spy", "py_logging_fork_worker_native.txt"), "fork-inherited-lock")
	if !slices.Equal(d.Tids, []int{532}) {
		t.Errorf("tids %v, want the worker's 532", d.Tids)
	}
	says(t, d, "summary", d.Summary, "forked child by its frames", "logging lock", "`flush` at logging/__init__.py:1094", "`work` at py_logging_fork.py:60")
	says(t, d, "fix", d.Fix, "spawn")
}

// --subprocesses: the parent is in the dump, and its logger thread, inside
// the handler's emit, is named with its line.
func TestPySpyDumpLoggingForkTree(t *testing.T) {
	ds := analyzeDump(t, "py-spy", "py_logging_fork_subprocesses_native.txt")
	d := topIs(t, ds, "fork-inherited-lock")
	if !slices.Equal(d.Tids, []int{532, 531}) {
		t.Errorf("tids %v, want the worker 532 and the parent's logger 531", d.Tids)
	}
	says(t, d, "summary", d.Summary, "py_logging_fork.py:60", "the parent's thread 531 `logger` held it, at `emit` at logging/__init__.py:1113, called from `flood` at py_logging_fork.py:55")
	says(t, d, "chain", strings.Join(d.Chain, "\n"), "multiprocessing worker", "inside a logging handler")
}

// faulthandler: Python frames only. The worker is a forked child by
// multiprocessing's frames and stopped inside logging: a low-confidence
// fork-inherited-lock with its line.
func TestFaulthandlerDumpLoggingForkWorker(t *testing.T) {
	d := topIs(t, analyzeDump(t, "faulthandler", "py_logging_fork_worker.txt"), "fork-inherited-lock")
	if d.Confidence != heuristics.Low {
		t.Errorf("confidence %s, want low: no native frame shows the lock wait", d.Confidence)
	}
	says(t, d, "summary", d.Summary, "forked child", "logging", "py_logging_fork.py:60")
	says(t, d, "fix", d.Fix, "spawn")
}

// The parent alone, or the GIL patient: Python frames cannot show a lock
// held across fork nor a thread waiting for the GIL: no such claim.
func TestFaulthandlerDumpsClaimNothingTheyCannotShow(t *testing.T) {
	noClaim(t, analyzeDump(t, "faulthandler", "py_logging_fork_parent.txt"), "fork-inherited-lock", "gil-deadlock")
	noClaim(t, analyzeDump(t, "faulthandler", "py_gilext.txt"), "gil-deadlock", "fork-inherited-lock")
}
