package heuristics_test

// Re-entry classes as pastes show them: a live patient's gdb dump (gdb
// run here on the hung patient), whole and cut the way excerpts in
// trackers are cut (a thread's block only, ending mid-stack). Each cut
// is made by the test from the real dump, not written by hand.

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// diagnosePaste parses text as a paste (format detected, as analyze
// does) and diagnoses it.
func diagnosePaste(t *testing.T, name, text string) []heuristics.Diagnosis {
	t.Helper()
	snap, _, _, err := stacks.Parse(strings.NewReader(text), "")
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, text)
	}
	ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	for _, d := range ds {
		t.Logf("%s: [%s, %s] %s", name, d.ID, d.Confidence, d.Summary)
	}
	return ds
}

// threadBlock cuts one thread's block out of a `thread apply all bt`
// dump: from the header line that contains header up to (not including)
// the first later line that contains stop ("" for the whole block).
func threadBlock(t *testing.T, dump, header, stop string) string {
	t.Helper()
	var out []string
	in := false
	for _, l := range strings.Split(dump, "\n") {
		switch {
		case !in && strings.HasPrefix(l, "Thread ") && strings.Contains(l, header):
			in = true
		case in && (strings.HasPrefix(l, "Thread ") || stop != "" && strings.Contains(l, stop)):
			return strings.Join(out, "\n") + "\n"
		}
		if in {
			out = append(out, l)
		}
	}
	if !in {
		t.Fatalf("no thread %q in the dump:\n%s", header, dump)
	}
	return strings.Join(out, "\n") + "\n"
}

// A tcmalloc mmap/sbrk hook that allocates, run by tcmalloc with its page
// heap lock held: the grower waits for its own lock. Whole, the dump shows
// the allocator twice with the hook between; cut above the hook (the
// grower's block alone, ending in the inner allocation), it still shows
// a numbered thread of a multi-threaded process waiting for an
// allocator's lock, so no fork child's lone thread, and the first entry
// is below the cut: hedged, the likelier re-entry there is a signal
// handler's (the evidence names the hook's self-deadlock as the other
// reading, and the frames that tell them apart).
// Cut to a bare `bt` without its header, nothing rules a fork child out.
func TestTcmallocHookReentryPastes(t *testing.T) {
	patient.RequirePtrace(t)
	argv := native("tcmalloc_hook_reentry.c", "libtcmalloc")(t)
	p := patient.Start(t, argv...)
	grower := p.Int(t, "grower")
	dump := patient.GDBBacktrace(t, p.Pid)

	top := pasteTop(t, grower)
	top("whole dump", diagnosePaste(t, "whole dump", dump), "self-deadlock", heuristics.Medium, "allocator is on the stack twice", "record_mapping")
	cut := threadBlock(t, dump, `"grower"`, "record_mapping")
	top("grower cut above the hook", diagnosePaste(t, "grower cut above the hook", cut), "signal-handler-reentry", heuristics.Low, "after thread 1")
	bare := cut[strings.Index(cut, "\n")+1:]
	ds := diagnosePaste(t, "bare bt", bare)
	if len(ds) == 0 || ds[0].ID != "fork-inherited-lock" || ds[0].Confidence != heuristics.Low {
		t.Errorf("bare bt: got %v, want fork-inherited-lock (low): an allocator's lock with no holder and no thread number", verdicts(ds))
	}
}

// pasteTop returns a check of a paste's top verdict: its id and
// confidence, the thread it must name, and words its summary must say.
func pasteTop(t *testing.T, tid int) func(name string, ds []heuristics.Diagnosis, id, conf string, says ...string) {
	return func(name string, ds []heuristics.Diagnosis, id, conf string, says ...string) {
		t.Helper()
		if len(ds) == 0 || ds[0].ID != id || ds[0].Confidence != conf {
			t.Errorf("%s: got %v, want %s (%s)", name, verdicts(ds), id, conf)
			return
		}
		if !slices.Contains(ds[0].Tids, tid) {
			t.Errorf("%s: %s names threads %v, not %d", name, id, ds[0].Tids, tid)
		}
		for _, s := range says {
			if !strings.Contains(ds[0].Summary, s) {
				t.Errorf("%s: summary does not say %q: %s", name, s, ds[0].Summary)
			}
		}
	}
}

// A crash reporter's handler that allocates, run by a signal that landed
// inside tcmalloc with its page heap lock held. Whole, the dump shows
// both sides of the signal frame; cut below print_stacktrace (the
// handler and the signal frame lost, as a paste cut mid-stack loses
// them), the stack capture above the allocator's wait still says a crash
// handler runs: signal-handler-reentry, hedged.
func TestCrashReportReentryPastes(t *testing.T) {
	patient.RequirePtrace(t)
	argv := native("tcmalloc_crash_report.c", "libtcmalloc")(t)
	p := patient.Start(t, argv...)
	grower := p.Int(t, "grower")
	dump := patient.GDBBacktrace(t, p.Pid)
	top := pasteTop(t, grower)
	top("whole dump", diagnosePaste(t, "whole dump", dump), "signal-handler-reentry", heuristics.Medium, "on_fatal")
	cut := threadBlock(t, dump, `"grower"`, "on_fatal")
	top("cut below print_stacktrace", diagnosePaste(t, "cut below print_stacktrace", cut), "signal-handler-reentry", heuristics.Low, "print_stacktrace", "crash handler")
}

// A multiprocessing worker forked while a parent thread held a buffered
// file's lock (blocked writing to a full pipe) flushes the file and waits
// for ever. The worker's stack as faulthandler prints it in the worker
// (the parent registered it on SIGUSR1 before the fork) has Python
// frames only: the fork is read from multiprocessing's frames, the wait
// from the flush the thread stopped in.
func TestFaulthandlerFlushForkPaste(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	dumpFile := filepath.Join(t.TempDir(), "faulthandler.txt")
	p := patient.Start(t, patient.Python, patient.Build(t, "py_flush_fork.py"), dumpFile)
	child := p.Int(t, "child")
	if err := syscall.Kill(child, syscall.SIGUSR1); err != nil {
		t.Fatalf("SIGUSR1 to the worker %d: %v", child, err)
	}
	var dump string
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, _ := os.ReadFile(dumpFile)
		if dump = string(b); strings.Contains(dump, "in <module>") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no faulthandler dump from the worker in 10 s: %q", dump)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ds := diagnosePaste(t, "worker's faulthandler dump", dump)
	if len(ds) == 0 || ds[0].ID != "fork-inherited-lock" || ds[0].Confidence != heuristics.Low {
		t.Fatalf("got %v, want fork-inherited-lock (low)", verdicts(ds))
	}
	for _, s := range []string{"forked child", "flush_journal", "buffer lock"} {
		if !strings.Contains(ds[0].Summary, s) {
			t.Errorf("summary does not say %q: %s", s, ds[0].Summary)
		}
	}
}

func verdicts(ds []heuristics.Diagnosis) []string {
	var s []string
	for _, d := range ds {
		s = append(s, d.ID+" ("+d.Confidence+")")
	}
	return s
}
