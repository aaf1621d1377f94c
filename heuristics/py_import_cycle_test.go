package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// importSnap is testdata/patients/py_import_join.py as a paste of Python
// frames shows it (hand-built from hangdoc's live read of it): the
// importer waits in importlib's module lock, main runs the module's top
// level under importlib and joins. mainTop replaces main's innermost
// frames when set.
func importSnap(mainTop ...stacks.Frame) *stacks.Snapshot {
	const boot = "<frozen importlib._bootstrap>"
	importer := pyStack(
		pyf("_ModuleLock.acquire", boot, 120), pyf("_lock_unlock_module", boot, 224),
		pyf("run", "/app/py_import_join_mod.py", 16), pyf("Thread.run", "/usr/lib/python3.11/threading.py", 982),
		pyf("Thread._bootstrap_inner", "/usr/lib/python3.11/threading.py", 1045), pyf("Thread._bootstrap", "/usr/lib/python3.11/threading.py", 1002))
	importer.Tid, importer.Name = 11, "importer"
	top := []stacks.Frame{pyf("Thread._wait_for_tstate_lock", "/usr/lib/python3.11/threading.py", 1132), pyf("Thread.join", "/usr/lib/python3.11/threading.py", 1112)}
	if len(mainTop) > 0 {
		top = mainTop
	}
	main := pyStack(append(top,
		pyf("<module>", "/app/py_import_join_mod.py", 34), pyf("_call_with_frames_removed", boot, 241),
		pyf("exec_module", "<frozen importlib._bootstrap_external>", 940), pyf("_load_unlocked", boot, 690),
		pyf("_find_and_load_unlocked", boot, 1147), pyf("_find_and_load", boot, 1176),
		pyf("<module>", "/app/py_import_join.py", 24))...)
	main.Tid, main.Name = 10, "MainThread"
	return &stacks.Snapshot{Schema: stacks.Schema, Source: "py-spy", Processes: []*stacks.Process{{Pid: 100, Threads: []*stacks.Thread{main, importer}}}}
}

func TestPyImportCycle(t *testing.T) {
	d, ok := top(importSnap())
	if !ok || d.ID != "lock-order-cycle" || d.Confidence != Medium || !nbHasTid(d, 10) || !nbHasTid(d, 11) {
		t.Fatalf("got %s %s %v: %s", d.ID, d.Confidence, d.Tids, d.Summary)
	}
	for _, want := range []string{"through an import", "`_ModuleLock.acquire`", "/app/py_import_join_mod.py", "`Thread.join` for thread 11"} {
		if !strings.Contains(d.Summary, want) {
			t.Errorf("summary %q lacks %q", d.Summary, want)
		}
	}
	for _, x := range Diagnose(importSnap(), Options{}).Diagnoses {
		if x.ID == "self-deadlock" || x.ID == "lost-wakeup" {
			t.Errorf("also %s: %s", x.ID, x.Summary)
		}
	}
}

func TestPyImportCycleStaysSilent(t *testing.T) {
	claims := func(snap *stacks.Snapshot) string {
		for _, d := range Diagnose(snap, Options{}).Diagnoses {
			if strings.Contains(d.Summary, "through an import") {
				return d.Summary
			}
		}
		return ""
	}
	// the importing thread works: the import may yet finish
	busy := importSnap(pyf("parse", "/app/py_import_join_mod.py", 20))
	busy.Processes[0].Threads[0].State = "R"
	busy.Processes[0].Threads[0].Samples()[0].State = "R"
	if s := claims(busy); s != "" {
		t.Errorf("the importer runs: %s", s)
	}
	// the script's own top level holds no module lock: no import under way
	snap := importSnap()
	main := snap.Processes[0].Threads[0]
	main.Stack = []stacks.Frame{main.Stack[0], main.Stack[1], pyf("<module>", "/app/script.py", 3)}
	main.Samples()[0].Stack = main.Stack
	if s := claims(snap); s != "" {
		t.Errorf("no import under way: %s", s)
	}
	// two imports under way: which one the waiter waits for is not known
	two := importSnap()
	other := pyStack(two.Processes[0].Threads[0].Stack...)
	other.Tid = 12
	two.Processes[0].Threads = append(two.Processes[0].Threads, other)
	if s := claims(two); s != "" {
		t.Errorf("two imports: %s", s)
	}
}
