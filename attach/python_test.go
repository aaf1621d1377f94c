package attach

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach/python"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

func TestMergePython(t *testing.T) {
	nat := func(name string) stacks.Frame {
		return stacks.Frame{Func: name, Module: "/usr/bin/python3.11", PC: 0x1000}
	}
	py := func(name string, line int, entry bool) python.Frame {
		return python.Frame{Func: name, File: "/a.py", Line: line, Entry: entry}
	}
	pyF := func(name string, line int) stacks.Frame { return stacks.Frame{Func: name, File: "/a.py", Line: line} }
	native := []stacks.Frame{nat("futex_wait"), nat("PyThread_acquire_lock_timed"), nat(evalFrameFunc), nat("map_next"), nat(evalFrameFunc), nat("Py_RunMain"), nat("_start")}
	pyFrames := []python.Frame{py("take", 40, false), py("inner", 30, true), py("outer", 20, false), py("<module>", 10, true)}
	want := []stacks.Frame{nat("futex_wait"), nat("PyThread_acquire_lock_timed"), pyF("take", 40), pyF("inner", 30), nat("map_next"), pyF("outer", 20), pyF("<module>", 10), nat("Py_RunMain"), nat("_start")}
	if got := mergePython(native, pyFrames); !reflect.DeepEqual(got, want) {
		t.Errorf("merge:\n got %v\nwant %v", got, want)
	}
	// The unwinder stopped early: the Python frames it did not reach follow.
	got := mergePython(native[:3], pyFrames)
	want = []stacks.Frame{nat("futex_wait"), nat("PyThread_acquire_lock_timed"), pyF("take", 40), pyF("inner", 30), pyF("outer", 20), pyF("<module>", 10)}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("short native stack:\n got %v\nwant %v", got, want)
	}
	// More evaluator frames than Python calls (a thread between frames):
	// the extra evaluator frames stay.
	got = mergePython(native, pyFrames[:2])
	if len(got) != 8 || got[5].Func != evalFrameFunc {
		t.Errorf("extra evaluator frame: %v", got)
	}
	if got := mergePython(native, nil); !reflect.DeepEqual(got, native) {
		t.Errorf("no Python frames: %v", got)
	}
}

// pyFrames returns the Python frames of a stack (no module, a .py file
// or a frozen module).
func pyFrames(st []stacks.Frame) []stacks.Frame {
	var out []stacks.Frame
	for _, f := range st {
		if stacks.IsPythonFrame(f) {
			out = append(out, f)
		}
	}
	return out
}

// attachPython attaches to a Python patient and checks that its
// interpreter was read: Runtime is "CPython "+version ("CPython 3.x" when
// version is ""), the GIL's state is known, no note about Python.
func attachPython(t *testing.T, pid int, samples int, version string) *stacks.Snapshot {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	snap, err := Attach(ctx, []int{pid}, Options{Samples: samples, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Attach(%d): %v", pid, err)
	}
	p := snap.Processes[0]
	if want := "CPython " + version; version != "" && p.Runtime != want || !strings.HasPrefix(p.Runtime, "CPython 3.") {
		t.Errorf("Runtime %q, want CPython %s (notes %q)", p.Runtime, version, p.Notes)
	}
	for _, n := range p.Notes {
		if strings.Contains(n, "Python") || strings.Contains(n, "GIL") {
			t.Errorf("note: %s", n)
		}
	}
	if !snap.Evidence.GIL {
		t.Errorf("Evidence.GIL not set")
	}
	return snap
}

func threadByTid(t *testing.T, p *stacks.Process, tid int) *stacks.Thread {
	t.Helper()
	th := p.ThreadByTid(tid)
	if th == nil {
		t.Fatalf("no thread %d", tid)
	}
	return th
}

func checkNoEvaluator(t *testing.T, th *stacks.Thread) {
	t.Helper()
	for _, f := range th.Stack {
		if f.Func == evalFrameFunc {
			t.Errorf("thread %d: %s left in the stack: %s", th.Tid, evalFrameFunc, frameList(th.Stack))
		}
	}
	for _, f := range pyFrames(th.Stack) {
		if f.Module != "" || f.Line <= 0 || f.Func == "" {
			t.Errorf("thread %d: Python frame %+v: want Func, File, Line and no Module", th.Tid, f)
		}
	}
}

func frameList(st []stacks.Frame) string {
	var b strings.Builder
	for i, f := range st {
		fmt.Fprintf(&b, "\n  #%d %s", i, f.Name())
		if f.File != "" {
			fmt.Fprintf(&b, " %s:%d", f.File, f.Line)
		}
	}
	return b.String()
}

// TestPythonLock: in lock.py main waits in lock.acquire(); the Python
// frames name that line, under the native lock wait.
func TestPythonLock(t *testing.T) {
	patient.RequirePtrace(t)
	forEachPython(t, testPythonLock)
}

func testPythonLock(t *testing.T, interp pyInterp) {
	script := patient.Build(t, "lock.py")
	p := patient.Start(t, interp.Path, script)
	snap := attachPython(t, p.Pid, 2, interp.Version)
	proc := snap.Processes[0]
	main := threadByTid(t, proc, p.Pid)
	checkNoEvaluator(t, main)
	src := filepath.Join(patient.Dir(t), "lock.py")
	py := pyFrames(main.Stack)
	want := []stacks.Frame{
		{Func: "main", File: script, Line: patient.SourceLine(t, src, "lock.acquire()  # forever")},
		{Func: "<module>", File: script, Line: patient.SourceLine(t, src, "    main()")},
	}
	if !reflect.DeepEqual(py, want) {
		t.Errorf("main's Python frames:%s\nwant:%s", frameList(py), frameList(want))
	}
	// The native wait stays above the Python frame that waits.
	names := stackNames(main.Stack)
	if i, j := indexOfName(names, "PyThread_acquire_lock_timed"), indexOfName(names, "main"); i < 0 || j < i {
		t.Errorf("main: PyThread_acquire_lock_timed (#%d) not above main (#%d):%s", i, j, frameList(main.Stack))
	}
	for _, th := range proc.Threads {
		if th.HoldsGIL() {
			t.Errorf("thread %d holds the GIL while every thread sleeps", th.Tid)
		}
		if th.Tid != p.Pid {
			checkNoEvaluator(t, th)
			hp := pyFrames(th.Stack)
			line := patient.SourceLine(t, src, "threading.Event().wait()  # forever")
			if i := indexOfFrame(hp, "holder"); i < 0 || hp[i].Line != line {
				t.Errorf("holder: no frame holder at line %d:%s", line, frameList(hp))
			}
		}
	}
	// Every sample carries the Python frames, not only the last.
	for i, sm := range main.Samples() {
		if len(pyFrames(sm.Stack)) != 2 {
			t.Errorf("sample %d of main: Python frames%s", i, frameList(sm.Stack))
		}
	}
}

// TestPythonForkChild: the forked child of pyfork_lock.py waits in
// lock.acquire() in child_main; its one thread state is read from the
// child's copy of the interpreter.
func TestPythonForkChild(t *testing.T) {
	patient.RequirePtrace(t)
	patient.RequireTool(t, patient.Python)
	script := patient.Build(t, "pyfork_lock.py")
	p := patient.Start(t, patient.Python, script)
	child := p.Int(t, "child")
	snap := attachPython(t, child, 1, "")
	proc := snap.Processes[0]
	if len(proc.Threads) != 1 {
		t.Fatalf("child: %d threads, want 1", len(proc.Threads))
	}
	th := proc.Threads[0]
	checkNoEvaluator(t, th)
	src := filepath.Join(patient.Dir(t), "pyfork_lock.py")
	py := pyFrames(th.Stack)
	want := []stacks.Frame{
		{Func: "child_main", File: script, Line: patient.SourceLine(t, src, "lock.acquire()  # forever: the holder")},
		{Func: "main", File: script, Line: patient.SourceLine(t, src, "        child_main(parent)")},
		{Func: "<module>", File: script, Line: patient.SourceLine(t, src, "    main()")},
	}
	if !reflect.DeepEqual(py, want) {
		t.Errorf("child's Python frames:%s\nwant:%s", frameList(py), frameList(want))
	}
}

// TestPythonEmbedded: a C program runs Python through libpython3.11.so;
// _PyRuntime is found in the library, not the executable.
func TestPythonEmbedded(t *testing.T) {
	patient.RequirePtrace(t)
	const inc = "/usr/include/python3.11"
	if _, err := os.Stat(filepath.Join(inc, "Python.h")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CPython 3.11 headers missing (%v): scripts/install-deps.sh installs python3-dev", err)
		}
		t.Skipf("no CPython 3.11 headers: %v", err)
	}
	bin := patient.Build(t, "py_embed.c", "-O2", "-I"+inc, "-lpython3.11")
	p := patient.Start(t, bin)
	snap := attachPython(t, p.Pid, 1, "")
	main := threadByTid(t, snap.Processes[0], p.Pid)
	checkNoEvaluator(t, main)
	src := filepath.Join(patient.Dir(t), "py_embed.c")
	// The code's line 1 is the line after "static const char code[]".
	line := patient.SourceLine(t, src, "# BLOCK embedded") - patient.SourceLine(t, src, "static const char code[]")
	want := []stacks.Frame{{Func: "block", File: "embedded.py", Line: line}, {Func: "<module>", File: "embedded.py", Line: line + 3}}
	if py := pyFrames(main.Stack); !reflect.DeepEqual(py, want) {
		t.Errorf("embedded Python frames:%s\nwant:%s", frameList(py), frameList(want))
	}
	if names := stackNames(main.Stack); indexOfName(names, "PyEval_EvalCode") < indexOfName(names, "block") {
		t.Errorf("the C caller PyEval_EvalCode is not below the Python frames:%s", frameList(main.Stack))
	}
}

// TestPythonCore reads the Python frames of a core (gcore) of
// py_stacks.py and checks them against a live attach of the same,
// sleeping, process: same threads, same Python frames.
func TestPythonCore(t *testing.T) {
	patient.RequirePtrace(t)
	patient.RequireTool(t, patient.Python)
	p := patient.Start(t, patient.Python, patient.Build(t, "py_stacks.py"))
	if !p.Settle(5 * time.Second) {
		t.Fatalf("py_stacks.py did not settle")
	}
	live := attachPython(t, p.Pid, 1, "").Processes[0]
	path := patient.Gcore(t, p.Pid, t.TempDir())
	snap, err := Core(path, CoreOptions{})
	if err != nil {
		t.Fatal(err)
	}
	proc := snap.Processes[0]
	if !strings.HasPrefix(proc.Runtime, "CPython 3.") || !snap.Evidence.GIL {
		t.Errorf("core: Runtime %q, Evidence.GIL %v (notes %q)", proc.Runtime, snap.Evidence.GIL, proc.Notes)
	}
	frames := 0
	for _, lt := range live.Threads {
		want := pyFrames(lt.Stack)
		got := pyFrames(threadByTid(t, proc, lt.Tid).Stack)
		if len(want) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("thread %d: core's Python frames:%s\nlive:%s", lt.Tid, frameList(got), frameList(want))
		}
		frames += len(got)
	}
	t.Logf("core and live attach agree on %d threads, %d Python frames", len(live.Threads), frames)
}

// TestPythonMatchesFaulthandler attaches to py_stacks.py, then makes the
// interpreter dump its own view of every thread (faulthandler on
// SIGUSR1) and compares the two, thread by thread and line by line.
func TestPythonMatchesFaulthandler(t *testing.T) {
	patient.RequirePtrace(t)
	forEachPython(t, testPythonMatchesFaulthandler)
}

func testPythonMatchesFaulthandler(t *testing.T, interp pyInterp) {
	script := patient.Build(t, "py_stacks.py")
	p := patient.Start(t, interp.Path, script)
	if !p.Settle(5 * time.Second) {
		t.Fatalf("py_stacks.py did not settle")
	}
	snap := attachPython(t, p.Pid, 1, interp.Version)
	proc := snap.Processes[0]

	// The names, tids and pthread ids the patient announced.
	tidOf := map[uint64]int{}
	nameOf := map[int]string{}
	for _, l := range p.Early() {
		var name string
		var tid int
		var ident uint64
		if n, _ := fmt.Sscanf(l, "thread %s tid=%d ident=%d", &name, &tid, &ident); n == 3 {
			tidOf[ident], nameOf[tid] = tid, name
		}
	}
	if len(tidOf) != 4 {
		t.Fatalf("patient announced %d threads, want 4: %q", len(tidOf), p.Early())
	}
	if err := p.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	var dump string
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if dump = p.Stderr(); strings.Count(dump, "hread 0x") == 4 && strings.Contains(dump, "in <module>") {
			break
		}
	}
	fsnap, _, err := stacks.ParseFaulthandler(strings.NewReader(dump))
	if err != nil || len(fsnap.Processes) == 0 {
		t.Fatalf("faulthandler dump: %v\n%s", err, dump)
	}
	src := filepath.Join(patient.Dir(t), "py_stacks.py")
	threads, frames := 0, 0
	for _, ft := range fsnap.Processes[0].Threads {
		tid := tidOf[ft.Handle()]
		if tid == 0 {
			t.Errorf("faulthandler thread %#x: not announced by the patient", ft.Handle())
			continue
		}
		ours := pyFrames(threadByTid(t, proc, tid).Stack)
		name := nameOf[tid]
		if len(ours) != len(ft.Stack) {
			t.Errorf("thread %s (%d): %d Python frames, faulthandler has %d:\nours:%s\nfaulthandler:%s", name, tid, len(ours), len(ft.Stack), frameList(ours), frameList(ft.Stack))
			continue
		}
		for i, o := range ours {
			f := ft.Stack[i]
			// faulthandler prints co_name, we co_qualname.
			if o.File != f.File || o.Line != f.Line || (o.Func != f.Func && !strings.HasSuffix(o.Func, "."+f.Func)) {
				t.Errorf("thread %s frame %d: ours %s %s:%d, faulthandler %s %s:%d", name, i, o.Func, o.File, o.Line, f.Func, f.File, f.Line)
			}
			frames++
		}
		threads++
		// The innermost frame of the patient's own code is where it blocks.
		block := patient.SourceLine(t, src, "# BLOCK "+name)
		found := false
		for _, o := range ours {
			if o.File == script {
				found = o.Line == block
				break
			}
		}
		if !found {
			t.Errorf("thread %s: innermost py_stacks.py frame is not line %d:%s", name, block, frameList(ours))
		}
	}
	if threads != 4 {
		t.Errorf("%d threads compared, want 4", threads)
	}
	t.Logf("CPython %s: faulthandler and hangdoc agree on %d threads, %d Python frames", interp.Version, threads, frames)

	// What reading the interpreter costs a sample (memory reads only).
	tg, err := openTarget(p.Pid)
	if err != nil {
		t.Fatal(err)
	}
	if py, ok := tg.runtime.(*pyTarget); ok {
		const n = 50
		start := time.Now()
		for i := 0; i < n; i++ {
			if _, err := py.reader.Read(); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("reading the interpreter (4 threads, %d frames): %v a sample", frames, time.Since(start)/n)
	}

	// locker runs two evaluator calls (map() calls back into Python):
	// take is separated from locker_main by the native frames of map.
	for tid, name := range nameOf {
		if name != "locker" {
			continue
		}
		st := threadByTid(t, proc, tid).Stack
		names := stackNames(st)
		i, j := indexOfName(names, "take"), indexOfName(names, "locker_main")
		if i < 0 || j != i+1+countNative(st[i+1:j]) || countNative(st[i+1:j]) == 0 {
			t.Errorf("locker: take (#%d) and locker_main (#%d) not separated by native frames:%s", i, j, frameList(st))
		}
	}
}

func countNative(st []stacks.Frame) int {
	n := 0
	for _, f := range st {
		if f.Module != "" {
			n++
		}
	}
	return n
}

// TestPythonGILHolder: in py_stacks_gil.py main spins holding the GIL
// and w1, w2 wait for it in take_gil.
func TestPythonGILHolder(t *testing.T) {
	patient.RequirePtrace(t)
	forEachPython(t, testPythonGILHolder)
}

func testPythonGILHolder(t *testing.T, interp pyInterp) {
	script := patient.Build(t, "py_stacks_gil.py")
	p := patient.Start(t, interp.Path, script)
	waiters := map[int]string{}
	for _, l := range p.Early() {
		var name string
		var tid int
		if n, _ := fmt.Sscanf(l, "thread %s tid=%d", &name, &tid); n == 2 && name != "main" {
			waiters[tid] = name
		}
	}
	if len(waiters) != 2 {
		t.Fatalf("waiters %v from %q", waiters, p.Early())
	}
	// The waiters leave time.sleep 0.3 s after starting, into take_gil.
	deadline := time.Now().Add(10 * time.Second)
	for tid := range waiters {
		for !sleepsInFutex(p.Pid, tid) {
			if time.Now().After(deadline) {
				t.Fatalf("waiter %d never slept in a futex", tid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	snap := attachPython(t, p.Pid, 2, interp.Version)
	proc := snap.Processes[0]
	src := filepath.Join(patient.Dir(t), "py_stacks_gil.py")
	main := threadByTid(t, proc, p.Pid)
	if !main.HoldsGIL() {
		t.Errorf("main spins in Python but does not hold the GIL:%s", frameList(main.Stack))
	}
	spin := patient.SourceLine(t, src, "# BLOCK spin")
	if py := pyFrames(main.Stack); len(py) < 1 || py[0].Func != "spin" || py[0].Line < spin-1 || py[0].Line > spin {
		t.Errorf("main: innermost Python frame is not spin at line %d:%s", spin, frameList(py))
	}
	line := patient.SourceLine(t, src, "# BLOCK waiter")
	for tid, name := range waiters {
		th := threadByTid(t, proc, tid)
		if th.HoldsGIL() {
			t.Errorf("%s holds the GIL", name)
		}
		checkNoEvaluator(t, th)
		names := stackNames(th.Stack)
		tg, w := indexOfName(names, "take_gil"), indexOfName(names, "waiter")
		if tg < 0 || w < tg {
			t.Errorf("%s: take_gil (#%d) not above waiter (#%d):%s", name, tg, w, frameList(th.Stack))
		}
		if py := pyFrames(th.Stack); len(py) == 0 || py[0].Line != line {
			t.Errorf("%s: innermost Python frame is not line %d:%s", name, line, frameList(py))
		}
	}
}

func sleepsInFutex(pid, tid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/syscall", pid, tid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(b))
	return len(f) > 0 && f[0] == strconv.Itoa(202)
}

func stackNames(st []stacks.Frame) []string {
	out := make([]string, len(st))
	for i, f := range st {
		out[i] = f.Func
	}
	return out
}

func indexOfName(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

func indexOfFrame(st []stacks.Frame, name string) int {
	for i, f := range st {
		if f.Func == name {
			return i
		}
	}
	return -1
}

// TestPythonUnsupported310: a CPython 3.10 (pyenv's, when installed)
// keeps its native stacks, evaluator frames included, and gets one note
// saying its version is not supported.
func TestPythonUnsupported310(t *testing.T) {
	patient.RequirePtrace(t)
	interps := pyenvPythons("3.10*")
	if len(interps) == 0 {
		t.Skipf("no pyenv CPython 3.10 under %s/versions: it is not installed by scripts/install-deps.sh", pyenvRoot())
	}
	interp := interps[0]
	p := patient.Start(t, interp.Path, patient.Build(t, "lock.py"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	snap, err := Attach(ctx, []int{p.Pid}, Options{Samples: 2, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Attach(%d): %v", p.Pid, err)
	}
	proc := snap.Processes[0]
	var notes []string
	for _, n := range proc.Notes {
		if strings.Contains(n, "Python") {
			notes = append(notes, n)
		}
	}
	want := "libpython3.10.so.1.0: CPython 3.10 is not supported (hangdoc reads 3.11 and later): Python frames are not shown, native stacks are"
	if len(notes) != 1 || notes[0] != want {
		t.Errorf("Python notes %q, want one: %q", notes, want)
	}
	if proc.Runtime != "" || snap.Evidence.GIL {
		t.Errorf("Runtime %q, Evidence.GIL %v: nothing of the interpreter was read", proc.Runtime, snap.Evidence.GIL)
	}
	main := threadByTid(t, proc, p.Pid)
	names := stackNames(main.Stack)
	if i, j := indexOfName(names, "PyThread_acquire_lock_timed"), indexOfName(names, evalFrameFunc); i < 0 || j < i {
		t.Errorf("main's native stack lacks PyThread_acquire_lock_timed above %s:%s", evalFrameFunc, frameList(main.Stack))
	}
	if py := pyFrames(main.Stack); len(py) != 0 {
		t.Errorf("Python frames from an unsupported interpreter:%s", frameList(py))
	}
}
