package stacks

import "testing"

func TestPyTracebackGoldens(t *testing.T) {
	checkDumpGoldens(t, "python-traceback", ParsePyTraceback, 0)
}

// TestPyTracebackCurrentFrames: the watchdog's dump of a lock-order
// deadlock names both threads, innermost frame first.
func TestPyTracebackCurrentFrames(t *testing.T) {
	snap, skipped := parseStoredDump(t, "python-traceback", "current_frames_abba.txt", ParsePyTraceback)
	checkSkipped(t, skipped)
	p := snap.Processes[0]
	if len(p.Threads) != 3 {
		t.Fatalf("%d threads", len(p.Threads))
	}
	ba := threadByName(t, p, "ba")
	if ba.Handle == 0 || ba.Stack[0].Func != "ba" || ba.Stack[0].Line != 12 {
		t.Errorf("ba: %+v", ba.Stack[0])
	}
}

func FuzzParsePyTraceback(f *testing.F) {
	fuzzDumps(f, "python-traceback", ParsePyTraceback, nil,
		"+++++ Timeout +++++\n~~~~ Stack of MainThread (1) ~~~~\n  File \"a.py\", line 1, in f\n    x()\n")
}
