package stacks

import (
	"reflect"
	"strings"
	"testing"
)

// py-spy cannot be installed here (no PyPI), so the dumps in
// testdata/dumps/py-spy are built from py-spy's own printing code —
// src/dump.rs (print_traces, print_trace), src/stack_trace.rs
// (StackTrace, Frame, LocalVariable, status_str, format_threadid),
// src/python_spy.rs (shorten_filename), src/native_stack_trace.rs (native
// frame names and files) and src/coredump.rs (the core-file header) in
// benfred/py-spy 0.3.14–0.4.x — with the stacks the project's Python
// patients have (line numbers from the real faulthandler dumps of the
// same patients; native frames from testdata/dumps/gdb/python_lock.txt):
//
//	lock.txt                      py-spy dump --pid N on lock.py
//	lock_native_locals.txt        --native --locals
//	lock_native.json              --native --json
//	pyfork_lock_subprocesses.txt  --subprocesses on pyfork_lock.py: the
//	                              child is printed after each parent thread,
//	                              as dump.rs does
//	pyfork_lock_startup_core.txt  --core of the parent while main still held
//	                              the GIL: "(gil)", no status on the others
//	pasted_issue.md               prose, a fence, "(active+gil)", a quoted
//	                              dump cut mid-line
//	pasted_json.md                --json in a ```json fence

func TestParsePySpyGolden(t *testing.T) {
	checkDumpGoldens(t, "py-spy", ParsePySpy, 0)
}

func TestParsePySpyText(t *testing.T) {
	snap, skipped := parseStoredDump(t, "py-spy", "lock.txt", ParsePySpy)
	if len(skipped) != 0 || len(snap.Processes) != 1 {
		t.Fatalf("skipped %v, %d processes", skipped, len(snap.Processes))
	}
	p := snap.Processes[0]
	if p.Pid != 4137 || p.Exe != "/usr/bin/python3.11" || !reflect.DeepEqual(p.Cmdline, []string{"/usr/bin/python3", "testdata/patients/lock.py"}) {
		t.Errorf("pid %d exe %q cmdline %q", p.Pid, p.Exe, p.Cmdline)
	}
	main, holder := p.Threads[0], p.Threads[1]
	if main.Tid != 4137 || main.Name != "MainThread" || main.State != "S" || main.HoldsGIL() {
		t.Errorf("main %+v", main)
	}
	if want := []Frame{{Func: "main", File: "lock.py", Line: 48}, {Func: "<module>", File: "lock.py", Line: 52}}; !reflect.DeepEqual(main.Stack, want) {
		t.Errorf("main stack %+v", main.Stack)
	}
	if holder.Tid != 4139 || holder.Name != "holder" || len(holder.Stack) != 6 || !reflect.DeepEqual(holder.Stack[2], Frame{Func: "holder", File: "lock.py", Line: 41}) {
		t.Errorf("holder %+v", holder)
	}
}

func TestParsePySpyNativeLocals(t *testing.T) {
	snap, skipped := parseStoredDump(t, "py-spy", "lock_native_locals.txt", ParsePySpy)
	if len(skipped) != 0 || !snap.Evidence.Arguments {
		t.Fatalf("skipped %v, arguments evidence %v", skipped, snap.Evidence.Arguments)
	}
	holder := snap.Processes[0].Threads[1]
	f0, f1, f3 := holder.Stack[0], holder.Stack[1], holder.Stack[3]
	if !reflect.DeepEqual(f0, Frame{Func: "__futex_abstimed_wait_common", Module: "libc.so.6"}) {
		t.Errorf("#0 %+v", f0)
	}
	if f1.Func != "" || f1.PC != 0x7f2e65a50cff || f1.Module != "libc.so.6" {
		t.Errorf("#1 %+v: an unsymbolised native frame has a PC and no name", f1)
	}
	wantArgs := []Arg{NewArg("self", "<Condition at 0x7f2e6587a5d0>"), NewArg("timeout", "None")}
	if f3.Func != "wait" || f3.Line != 320 || !reflect.DeepEqual(f3.Args, wantArgs) {
		t.Errorf("#3 %+v: arguments kept, locals not", f3)
	}
	main := snap.Processes[0].Threads[0]
	if m := main.Stack[3]; m.Func != "main" || m.Args != nil {
		t.Errorf("main() has locals only: %+v", m)
	}
	if got := funcs(main.Stack); got[len(got)-1] != "__libc_start_main_impl" {
		t.Errorf("main %q", got)
	}
}

func TestParsePySpyJSONMatchesText(t *testing.T) {
	text, _ := parseStoredDump(t, "py-spy", "lock_native_locals.txt", ParsePySpy)
	for _, name := range []string{"lock_native.json", "pasted_json.md"} {
		t.Run(name, func(t *testing.T) {
			js, skipped := parseStoredDump(t, "py-spy", name, ParsePySpy)
			if name == "lock_native.json" && len(skipped) != 0 {
				t.Errorf("skipped %v", skipped)
			}
			if name == "pasted_json.md" {
				checkSkipped(t, skipped, "line 1 skipped: not a py-spy dump")
			}
			p := js.Processes[0]
			if p.Pid != 4137 || len(p.Threads) != 2 {
				t.Fatalf("pid %d, %d threads", p.Pid, len(p.Threads))
			}
			for i, th := range p.Threads {
				tt := text.Processes[0].Threads[i]
				if th.Tid != tt.Tid || th.Name != tt.Name || th.State != tt.State {
					t.Errorf("thread %d: json %d %q %q, text %d %q %q", i, th.Tid, th.Name, th.State, tt.Tid, tt.Name, tt.State)
				}
				var names, textNames []string
				for _, f := range th.Stack {
					names = append(names, f.Func)
				}
				for _, f := range tt.Stack {
					if f.Func != "" {
						textNames = append(textNames, f.Func)
					}
				}
				if !reflect.DeepEqual(names, textNames) {
					t.Errorf("thread %d\n json %q\n text %q", i, names, textNames)
				}
			}
			f := p.Threads[1].Stack[2]
			if f.File != "/usr/lib/python3.11/threading.py" || f.Module != "" || p.Threads[1].Stack[0].Module != "/lib/x86_64-linux-gnu/libc.so.6" {
				t.Errorf("json keeps full paths: %+v / %+v", f, p.Threads[1].Stack[0])
			}
		})
	}
}

func TestParsePySpySubprocesses(t *testing.T) {
	snap, skipped := parseStoredDump(t, "py-spy", "pyfork_lock_subprocesses.txt", ParsePySpy)
	if len(skipped) != 0 || len(snap.Processes) != 2 {
		t.Fatalf("skipped %v, %d processes", skipped, len(snap.Processes))
	}
	parent, child := snap.Processes[0], snap.Processes[1]
	var pt []int
	for _, th := range parent.Threads {
		pt = append(pt, th.Tid)
	}
	if !reflect.DeepEqual(pt, []int{5210, 5214}) {
		t.Errorf("parent threads %v: the holder printed after the child block is the parent's", pt)
	}
	if len(child.Threads) != 1 || child.PPid != 5210 || child.Threads[0].Stack[0].Func != "child_main" {
		t.Errorf("child ppid %d threads %+v", child.PPid, child.Threads)
	}
	if !reflect.DeepEqual(parent.Children, []int{5215}) || child.Fork == nil || child.Fork.ParentPid != 5210 ||
		!reflect.DeepEqual(child.Fork.ParentThreads, []int{5210, 5214}) || !snap.Evidence.Lineage {
		t.Errorf("children %v fork %+v lineage %v", parent.Children, child.Fork, snap.Evidence.Lineage)
	}
}

func TestParsePySpyGIL(t *testing.T) {
	snap, _ := parseStoredDump(t, "py-spy", "pyfork_lock_startup_core.txt", ParsePySpy)
	p := snap.Processes[0]
	if !p.Threads[0].HoldsGIL() || p.Threads[0].State != "" || p.Threads[1].HoldsGIL() {
		t.Errorf("core: main %+v holder %+v", p.Threads[0], p.Threads[1])
	}
	if p.Exe != "" || len(p.Notes) != 1 || p.Notes[0] != "py-spy read a core file (signal 0): core.5210" {
		t.Errorf("exe %q notes %q", p.Exe, p.Notes)
	}

	snap, skipped := parseStoredDump(t, "py-spy", "pasted_issue.md", ParsePySpy)
	checkSkipped(t, skipped,
		"lines 1–4 skipped: not a py-spy dump",
		"lines 24–25 skipped: not a py-spy dump",
		"line 35 skipped: not a py-spy dump")
	if len(snap.Processes) != 2 {
		t.Fatalf("%d processes", len(snap.Processes))
	}
	main := snap.Processes[0].Threads[0]
	if !main.HoldsGIL() || main.State != "R" || main.Stack[0].Func != "blocked_in_futex" {
		t.Errorf("active+gil: %+v", main)
	}
	child := snap.Processes[1].Threads[0]
	if len(child.Stack) != 3 || child.Stack[2].Func != "<module>" || len(child.Notes) != 1 || !strings.Contains(child.Notes[0], "cut") {
		t.Errorf("cut child %+v", child)
	}
}

func TestParsePySpyFrames(t *testing.T) {
	tests := []struct {
		line string
		want Frame
	}{
		{"wait (threading.py:320)", Frame{Func: "wait", File: "threading.py", Line: 320}},
		{"<module> (<frozen runpy>:88)", Frame{Func: "<module>", File: "<frozen runpy>", Line: 88}},
		{"main (app.py)", Frame{Func: "main", File: "app.py"}},
		{"take_gil (ceval_gil.c:273)", Frame{Func: "take_gil", File: "ceval_gil.c", Line: 273}},
		{"(anonymous namespace)::run (libfoo.so)", Frame{Func: "(anonymous namespace)::run", Module: "libfoo.so"}},
		{"0x7f00 (?)", Frame{PC: 0x7f00}},
		{"f (dir (1)/x.py:3)", Frame{Func: "f", File: "dir (1)/x.py", Line: 3}},
	}
	for _, tt := range tests {
		got, ok := parsePySpyFrame(tt.line)
		if !ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %+v %v, want %+v", tt.line, got, ok, tt.want)
		}
	}
	for _, bad := range []string{"(x.py:1)", "f", "f ()", "f(x.py:1)"} {
		if f, ok := parsePySpyFrame(bad); ok {
			t.Errorf("%q read as %+v", bad, f)
		}
	}
}

func TestParsePySpyHeaders(t *testing.T) {
	in := `Thread 0x7F2E659BF2C0 (active): "MainThread"
    f (a.py:1)
Thread 12
    g (b.py:2)
Thread 13 (idle)
Error: Failed to merge native and python frames (Have 2 native and 3 python)
`
	snap, skipped, err := ParsePySpy(strings.NewReader(in))
	if err != nil || len(skipped) != 0 {
		t.Fatalf("err %v skipped %v", err, skipped)
	}
	p := snap.Processes[0]
	if len(p.Threads) != 3 || p.Threads[0].Handle() != 0x7F2E659BF2C0 || p.Threads[0].Tid != 0 || p.Threads[0].State != "R" ||
		p.Threads[1].Tid != 12 || p.Threads[1].Name != "" || len(p.Threads[2].Stack) != 0 {
		t.Errorf("threads %+v %+v %+v", p.Threads[0], p.Threads[1], p.Threads[2])
	}
	if len(p.Notes) != 1 || !strings.HasPrefix(p.Notes[0], "py-spy: Error: Failed to merge") {
		t.Errorf("notes %q", p.Notes)
	}
}

func TestParsePySpyErrors(t *testing.T) {
	checkParseErrors(t, ParsePySpy, []errorCase{
		{"", "empty input: no py-spy dump"},
		{"hello\n", `line 1: not a py-spy dump: no thread ("Thread 4137 (idle): \"MainThread\"") with frames ("    main (app.py:12)")`},
		{"[]", "line 1: py-spy --json: no thread in the array"},
		{"[{\"thread_id\": 1, \"frames\": [", "line 1: py-spy --json: unexpected EOF"},
		{"[\n{\"thread_id\": \"x\"}]", `line 2: py-spy --json: json: cannot unmarshal string into Go struct field pySpyTrace.thread_id of type uint64`},
	})
	snap, _, err := ParsePySpy(&brokenReader{data: []byte("Thread 1 (idle)\n    f (a.py:1)\n")})
	if err == nil || snap == nil {
		t.Errorf("read error: snap %v err %v", snap, err)
	}
}

func FuzzParsePySpy(f *testing.F) {
	fuzzDumps(f, "py-spy", ParsePySpy, nil,
		"Process 1: a\nProcess 1: a\nParent Process 1: a\nThread 1\n    f (\n",
		"```\n[\n{\"frames\": [{\"name\": \"0x\", \"locals\": [{\"arg\": true}]}]}\n]\n```\n",
	)
}

func TestParsePySpyLinearTime(t *testing.T) {
	frame := "    f (x.py:1)\n"
	checkDumpLinear(t, ParsePySpy, map[string]string{
		"frames":      "Thread 1 (idle): \"a\"\n" + strings.Repeat(frame, 60000),
		"threads":     strings.Repeat("Thread 1 (idle): \"a\"\n"+frame, 25000),
		"processes":   strings.Repeat("Process 7: x\nParent Process 7: x\nThread 1 (idle)\n"+frame, 15000),
		"children":    strings.Repeat("Process 8: x\nParent Process 7: x\nThread 1 (idle)\n"+frame+"Thread 2 (idle)\n"+frame, 15000),
		"args":        "Thread 1\n    f (x.py:1)\n        Arguments:\n" + strings.Repeat("            a: 1\n", 60000),
		"parens":      "Thread 1\n    f " + strings.Repeat("(", 60000) + "x)\n",
		"prose":       strings.Repeat("zz\n\n", 40000),
		"json":        "[" + strings.Repeat(`{"thread_id":1,"frames":[{"name":"f","filename":"x.py","line":1}]},`, 25000) + `{"thread_id":2}]`,
		"json nested": "[" + strings.Repeat("[", 40000),
	}, map[string]bool{"frames": true, "threads": true, "json": true, "prose": false, "json nested": false}, linearBound)
}

// TestParsePySpyHeaderWithoutID: a hand-abridged dump drops the thread
// ids ("Thread (idle): "MainThread""); the status still makes the line a
// header, and the paste is sniffed as py-spy. "Thread" alone is not one.
func TestParsePySpyHeaderWithoutID(t *testing.T) {
	in := "Thread (idle): \"MainThread\"\n    wait (threading.py:359)\n    get (queue.py:180)\n" +
		"Thread (active+gil): \"worker\"\n    run (w.py:3)\n"
	snap, skipped, format, err := Parse(strings.NewReader(in), "")
	if err != nil || len(skipped) != 0 || format != "py-spy" {
		t.Fatalf("format %q err %v skipped %v", format, err, skipped)
	}
	p := snap.Processes[0]
	if len(p.Threads) != 2 || p.Threads[0].Name != "MainThread" || p.Threads[0].State != "S" || len(p.Threads[0].Stack) != 2 ||
		p.Threads[1].State != "R" || !p.Threads[1].HoldsGIL() {
		t.Errorf("threads %+v %+v", p.Threads[0], p.Threads[1])
	}
	if pyThreadRE.MatchString("Thread") || pyThreadRE.MatchString(`Thread: "x"`) {
		t.Error("a header without an id nor a status")
	}
}

// TestIsPythonFrameNotGoWrapper: Go's compiler-made wrapper methods are
// at "<autogenerated>": not Python's "<string>" or "<frozen …>".
func TestIsPythonFrameNotGoWrapper(t *testing.T) {
	if IsPythonFrame(Frame{Func: "pkg.(*T).M", File: "<autogenerated>", Line: 74}) {
		t.Error("a Go wrapper at <autogenerated> read as Python")
	}
	if !IsPythonFrame(Frame{Func: "<module>", File: "<string>", Line: 1}) || !IsPythonFrame(Frame{Func: "_run", File: "<frozen runpy>"}) {
		t.Error("Python's <string> and <frozen …> files are Python")
	}
}
