package stacks

import (
	"strings"
	"testing"
)

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
	if ba.Handle() == 0 || ba.Stack[0].Func != "ba" || ba.Stack[0].Line != 12 {
		t.Errorf("ba: %+v", ba.Stack[0])
	}
}

func FuzzParsePyTraceback(f *testing.F) {
	fuzzDumps(f, "python-traceback", ParsePyTraceback, nil,
		"+++++ Timeout +++++\n~~~~ Stack of MainThread (1) ~~~~\n  File \"a.py\", line 1, in f\n    x()\n")
}

// TestPyStackNative: pystack's native frames, `(C) File "x.c", line N,
// in f (lib)`, most recent call last, read with their library; its
// thread header names the thread.
func TestPyStackNative(t *testing.T) {
	snap, _ := parseStoredDump(t, "python-traceback", "pystack_native_threadpoolctl_239_pasted.txt", ParsePyTraceback)
	st := snap.Processes[0].Threads[0].Stack
	if len(st) != 6 || st[0].Func != "dl_iterate_phdr" || st[0].File != "./elf/dl-iteratephdr.c" || st[0].Line != 39 || st[0].Module != "/usr/lib/x86_64-linux-gnu/libc.so.6" || st[5].Func != "__backtrace" {
		t.Errorf("stack %+v", st)
	}
	in := "Traceback for thread 4711 (python3) [Has the GIL] (most recent call last):\n" +
		"    (Python) File \"/x.py\", line 3, in main\n        f()\n" +
		"    (C) File \"???\", line 0, in ??? (libfoo.so)\n"
	snap, _, err := ParsePyTraceback(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	th := snap.Processes[0].Threads[0]
	if th.Tid != 4711 || th.Name != "python3" || len(th.Stack) != 2 || th.Stack[0].Module != "libfoo.so" || th.Stack[1].Func != "main" || th.Stack[1].Line != 3 {
		t.Errorf("thread %+v", th)
	}
}
