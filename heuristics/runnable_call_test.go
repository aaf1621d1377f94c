package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// oneRunnable is a core's snapshot (one sample, syscalls read) of a
// process whose only thread is runnable with the given frames on top:
// the shape a core of testdata/patients/sleeper.c had under load when
// gcore stopped it just as its clock_nanosleep returned (state R, the
// call no longer in progress, so no syscall to read).
func oneRunnable(frames ...string) *stacks.Snapshot {
	t := thread(101, "patient", frames...)
	t.State = "R"
	t.SetSamples(nil)
	snap := live(proc(101, t))
	snap.Source, snap.Samples = "core", 1
	snap.Evidence.CPU, snap.Evidence.Lineage = false, false
	return snap
}

// One observation of a thread runnable in a blocking call's wrapper is
// that call returning, not work: the frames say what it does.
func TestOneSampleRunnableInCall(t *testing.T) {
	d, ok := top(oneRunnable("clock_nanosleep", "__GI___nanosleep", "sleep", "main"))
	if !ok || d.ID != "sleeping" {
		t.Fatalf("top %q (%s), want sleeping", d.ID, d.Summary)
	}
	d, ok = top(oneRunnable("__libc_read", "read_request", "serve", "main"))
	if !ok || d.ID != "io-wait" {
		t.Fatalf("top %q (%s), want io-wait", d.ID, d.Summary)
	}
}

// A runnable thread whose innermost frame is its own code works, even
// when a blocking call is further out (it returned long ago), and a
// thread seen runnable in several samples is left to its CPU figures.
func TestOneSampleRunnableWorks(t *testing.T) {
	d, ok := top(oneRunnable("crunch", "read_loop", "__libc_read", "main"))
	if !ok || d.ID != "progressing" {
		t.Fatalf("top %q (%s), want progressing", d.ID, d.Summary)
	}
	th := spinning(thread(101, "patient", "clock_nanosleep", "__GI___nanosleep", "poll_loop", "main"))
	d, ok = top(live(proc(101, th)))
	if !ok || d.ID == "sleeping" {
		t.Fatalf("busy poller: top %q (%s), want a verdict of work", d.ID, d.Summary)
	}
}
