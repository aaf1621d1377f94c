package stacks

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

// The dumps in testdata/dumps/faulthandler were written by CPython 3.11.2
// (/usr/bin/python3 on Debian 12) on the project's Python patients:
//
//	lock_timeout_repeat.txt      python3 -c 'import faulthandler, runpy, sys;
//	                             faulthandler.dump_traceback_later(2, repeat=True);
//	                             sys.argv = ["testdata/patients/lock.py"];
//	                             runpy.run_path("testdata/patients/lock.py", run_name="__main__")'
//	                             (stderr for 5 s, two dumps)
//	pyfork_lock_sigusr1.txt      the same with faulthandler.register(signal.SIGUSR1,
//	                             all_threads=True) on pyfork_lock.py; kill -USR1 the
//	                             parent, then the child
//	lock_sigusr2_current_only.txt register(signal.SIGUSR2, all_threads=False) on lock.py
//	lock_sigabrt.txt             python3 -X faulthandler testdata/patients/lock.py,
//	                             kill -ABRT after "ready"
//
// The pasted ones are made from those: pasted_ci_log.txt (CI timestamps,
// pytest chatter, the shell's "Aborted (core dumped)"), pasted_issue.md
// (prose, a fence, the last line cut). py314_c_stack.txt follows the
// layout of Python 3.14's C stack ("Current thread's C stack trace") from
// the faulthandler documentation's example and Python/traceback.c.

func TestParseFaulthandlerGolden(t *testing.T) {
	checkDumpGoldens(t, "faulthandler", ParseFaulthandler, 0)
}

func TestParseFaulthandlerTimeoutRepeat(t *testing.T) {
	snap, skipped := parseStoredDump(t, "faulthandler", "lock_timeout_repeat.txt", ParseFaulthandler)
	if len(skipped) != 0 {
		t.Errorf("skipped %v", skipped)
	}
	if len(snap.Processes) != 1 || snap.Samples != 2 || time.Duration(snap.Interval) != 2*time.Second {
		t.Fatalf("%d processes, %d samples, interval %v: two timeouts of one process are two samples 2 s apart",
			len(snap.Processes), snap.Samples, snap.Interval)
	}
	p := snap.Processes[0]
	if len(p.Threads) != 2 || !reflect.DeepEqual(p.Notes, []string{"faulthandler: Timeout (0:00:02)!"}) {
		t.Fatalf("threads %d, notes %q", len(p.Threads), p.Notes)
	}
	holder, main := p.Threads[0], p.Threads[1]
	if holder.Tid != 0 || holder.Handle() != 0x00007f0c67fff6c0 || main.Handle() != 0x00007f0c6cf2b2c0 {
		t.Errorf("handles %#x %#x (tid %d): faulthandler prints pthread_t, not a tid", holder.Handle(), main.Handle(), holder.Tid)
	}
	want := []Frame{
		{Func: "main", File: "testdata/patients/lock.py", Line: 48},
		{Func: "<module>", File: "testdata/patients/lock.py", Line: 52},
		{Func: "_run_code", File: "<frozen runpy>", Line: 88},
	}
	if !reflect.DeepEqual(main.Stack[:3], want) {
		t.Errorf("main\n got %+v\nwant %+v", main.Stack[:3], want)
	}
	if got := funcs(holder.Stack); !reflect.DeepEqual(got, []string{"wait", "wait", "holder", "run", "_bootstrap_inner", "_bootstrap"}) {
		t.Errorf("holder %q", got)
	}
	for _, th := range p.Threads {
		if len(th.Samples()) != 2 || !reflect.DeepEqual(th.Samples()[0].Stack, th.Stack) || !reflect.DeepEqual(th.Samples()[1].Stack, th.Stack) {
			t.Errorf("thread %#x: samples %+v", th.Handle(), th.Samples())
		}
	}
}

func TestParseFaulthandlerSignalParentAndChild(t *testing.T) {
	snap, _ := parseStoredDump(t, "faulthandler", "pyfork_lock_sigusr1.txt", ParseFaulthandler)
	if len(snap.Processes) != 2 || snap.Samples != 1 {
		t.Fatalf("%d processes, %d samples: the child's dump repeats the parent's thread id, so it is another dump", len(snap.Processes), snap.Samples)
	}
	parent, child := snap.Processes[0], snap.Processes[1]
	if len(parent.Threads) != 2 || len(child.Threads) != 1 {
		t.Fatalf("parent %d threads, child %d", len(parent.Threads), len(child.Threads))
	}
	if child.Threads[0].Handle() != parent.Threads[1].Handle() {
		t.Errorf("child thread %#x, parent main %#x", child.Threads[0].Handle(), parent.Threads[1].Handle())
	}
	if got := funcs(child.Threads[0].Stack)[:2]; !reflect.DeepEqual(got, []string{"child_main", "main"}) {
		t.Errorf("child %q", got)
	}
	if n := strings.Join(child.Notes, "|"); !strings.Contains(n, "dump 2 of 2") || !strings.Contains(n, "fork()ed") {
		t.Errorf("child notes %q", child.Notes)
	}
	for _, th := range []*Thread{parent.Threads[1], child.Threads[0]} {
		if len(th.Notes) != 1 || !strings.Contains(th.Notes[0], "current thread") {
			t.Errorf("thread %#x notes %q", th.Handle(), th.Notes)
		}
	}
}

func TestParseFaulthandlerAbort(t *testing.T) {
	for _, name := range []string{"lock_sigabrt.txt", "pasted_ci_log.txt"} {
		t.Run(name, func(t *testing.T) {
			snap, skipped := parseStoredDump(t, "faulthandler", name, ParseFaulthandler)
			p := snap.Processes[0]
			if len(snap.Processes) != 1 || len(p.Threads) != 2 || p.Notes[0] != "faulthandler: Fatal Python error: Aborted" {
				t.Fatalf("%d processes, notes %q", len(snap.Processes), p.Notes)
			}
			main := p.Threads[1]
			if main.Stack[0].Func != "main" || main.Stack[0].Line != 48 || !strings.HasSuffix(main.Stack[0].File, "patients/lock.py") {
				t.Errorf("main #0 %+v", main.Stack[0])
			}
			if name == "pasted_ci_log.txt" {
				checkSkipped(t, skipped, "lines 1–6 skipped: not a faulthandler dump", "line 21 skipped: not a faulthandler dump")
				if p.Notes[len(p.Notes)-1] != "Aborted (core dumped)" {
					t.Errorf("notes %q: the shell's last word is kept", p.Notes)
				}
			}
		})
	}
}

func TestParseFaulthandlerCStack(t *testing.T) {
	snap, _ := parseStoredDump(t, "faulthandler", "py314_c_stack.txt", ParseFaulthandler)
	p := snap.Processes[0]
	cur := p.Threads[1]
	if len(cur.Notes) != 2 || !strings.HasPrefix(cur.Notes[1], "C stack (most recent call first): _Py_DumpStack (python3.14) < ?? 0x32dcbd (python3.14)") ||
		!strings.HasSuffix(cur.Notes[1], "ffi_call (libffi.so.8) < <truncated rest of calls>") {
		t.Errorf("current thread notes %q", cur.Notes)
	}
	if len(p.Threads[0].Notes) != 0 {
		t.Errorf("the C stack is the current thread's: %q", p.Threads[0].Notes)
	}
	if !reflect.DeepEqual(p.Notes, []string{"faulthandler: Fatal Python error: Segmentation fault", "Extension modules: _ctypes (total: 1)"}) {
		t.Errorf("notes %q", p.Notes)
	}
}

func TestParseFaulthandlerLines(t *testing.T) {
	in := `Stack (most recent call first):
  File "a.py", line 3 in f
  File ???, line ??? in ???
  <no Python frame>
Thread 0x0000000000000001 (most recent call first):
  Garbage-collecting
  File "b.py", line 7 in g
  ...
Thread 0x00000000000000
  File "/usr/lib/python3.11/thread`
	snap, skipped, err := ParseFaulthandler(strings.NewReader(in))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("err %v skipped %v", err, skipped)
	}
	th := snap.Processes[0].Threads
	if len(th) != 3 {
		t.Fatalf("%d threads", len(th))
	}
	if want := []Frame{{Func: "f", File: "a.py", Line: 3}, {}}; !reflect.DeepEqual(th[0].Stack, want) {
		t.Errorf("stack %+v", th[0].Stack)
	}
	if th[1].Handle() != 1 || !reflect.DeepEqual(th[1].Notes, []string{"garbage-collecting", "more than 100 frames: the outermost are not in the dump"}) {
		t.Errorf("thread 1 %#x notes %q", th[1].Handle(), th[1].Notes)
	}
	if len(th[2].Stack) != 1 || th[2].Stack[0].File != "/usr/lib/python3.11/thread" || len(th[2].Notes) != 2 {
		t.Errorf("cut thread %+v notes %q", th[2].Stack, th[2].Notes)
	}
}

func TestParseFaulthandlerErrors(t *testing.T) {
	checkParseErrors(t, ParseFaulthandler, []errorCase{
		{"", "empty input: no faulthandler dump"},
		{"\n \n", "empty input: no faulthandler dump"},
		{"hello\n", `line 1: not a faulthandler dump: no thread ("Thread 0x… (most recent call first):") or frame ("  File \"…\", line N in f")`},
		{"Fatal Python error: Aborted\n\nbye\n", `line 3: not a faulthandler dump: no thread ("Thread 0x… (most recent call first):") or frame ("  File \"…\", line N in f")`},
	})
	snap, _, err := ParseFaulthandler(&brokenReader{data: []byte("Stack (most recent call first):\n  File \"a.py\", line 3 in f\n")})
	if err == nil || snap == nil || len(snap.Processes[0].Threads[0].Stack) != 1 {
		t.Errorf("read error: snap %v err %v", snap, err)
	}
}

func FuzzParseFaulthandler(f *testing.F) {
	fuzzDumps(f, "faulthandler", ParseFaulthandler, nil,
		"Thread 0x1 (most recent call first):\nThread 0x1 (most recent call first):\n  File \"\n",
		"Timeout (0:00:01.5)!\nCurrent thread's C stack trace (most recent call first):\n  Binary file \"\", at [0x1]\n",
	)
}

func TestParseFaulthandlerLinearTime(t *testing.T) {
	frame := "  File \"x.py\", line 1 in f\n"
	checkDumpLinear(t, ParseFaulthandler, map[string]string{
		"frames":       "Stack (most recent call first):\n" + strings.Repeat(frame, 60000),
		"threads":      strings.Repeat("Thread 0x1 (most recent call first):\n"+frame, 25000),
		"new threads":  strings.Repeat("Current thread 0x2 (most recent call first):\nThread 0x3 (most recent call first):\n", 25000),
		"timeouts":     strings.Repeat("Timeout (0:00:01)!\nThread 0x1 (most recent call first):\n"+frame, 15000),
		"c stack":      "Current thread 0x2 (most recent call first):\nCurrent thread's C stack trace (most recent call first):\n" + strings.Repeat("  Binary file \"/x\", at f+0x1 [0x2]\n", 40000),
		"prose":        strings.Repeat("zz\n\n", 40000),
		"long name":    "Stack (most recent call first):\n  File \"" + strings.Repeat("a", 1<<20) + "\", line 1 in f\n",
		"fatal events": strings.Repeat("Fatal Python error: x\n", 40000),
	}, map[string]bool{"frames": true, "threads": true, "prose": false, "fatal events": false}, linearBound)
}
