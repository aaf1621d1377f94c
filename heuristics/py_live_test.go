package heuristics_test

// Python patients, live: the interpreter is the machine's /usr/bin/python3
// (Debian CPython 3.11.2); TestLivePythonGILDeadlock also runs under every
// pyenv CPython 3.11+ present (forEachPython). Each test asserts the diagnosis id, the threads
// and the owner it names. The Python file:line of the waiting thread is
// asserted once the snapshot has Python frames (the live CPython reader
// replaces each _PyEval_EvalFrameDefault by the Python frames it runs);
// until then a live snapshot of Python has native frames only and the
// test logs that the check is pending (see pyLine).

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

func pyFrames(th *stacks.Thread) []stacks.Frame {
	var out []stacks.Frame
	for _, f := range th.Stack {
		if stacks.IsPythonFrame(f) {
			out = append(out, f)
		}
	}
	return out
}

// pyLine checks that the thread's Python frames include file:line and that
// the diagnosis says it, once the snapshot has Python frames; without
// them (no live Python reader yet) it logs the check as pending and
// returns false.
func pyLine(t *testing.T, th *stacks.Thread, d *heuristics.Diagnosis, file string, line int) bool {
	t.Helper()
	py := pyFrames(th)
	if len(py) == 0 {
		t.Logf("pending: thread %d has no Python frames in this snapshot (native only); %s:%d not checked", th.Tid, file, line)
		return false
	}
	found := false
	for _, f := range py {
		if filepath.Base(f.File) == file && f.Line == line {
			found = true
		}
	}
	if !found {
		t.Errorf("evidence: thread %d: Python frames lack %s:%d:\n%s", th.Tid, file, line, stackString(th.Stack))
	}
	if d != nil {
		want := file + ":" + strconv.Itoa(line)
		if !strings.Contains(d.Summary, want) && !strings.Contains(strings.Join(d.Evidence, "\n"), want) {
			t.Errorf("diagnosis %s: neither summary %q nor evidence names %s", d.ID, d.Summary, want)
		}
	}
	return true
}

// buildGILExt compiles py_gilext.c into DIR/py_gilext.so with the headers
// of the interpreter python (from python3-config beside it) and returns
// DIR.
func buildGILExt(t *testing.T, python string) string {
	t.Helper()
	gcc := patient.RequireTool(t, "gcc")
	config := python + "-config"
	if _, err := os.Stat(config); err != nil {
		if python == patient.Python && os.Getenv("CI") == "true" {
			t.Fatalf("%s missing: scripts/install-deps.sh installs python3-dev", config)
		}
		t.Skipf("%s missing (python3-dev)", config)
	}
	out, err := exec.Command(config, "--includes").Output()
	if err != nil {
		t.Fatalf("%s --includes: %v", config, err)
	}
	dir := t.TempDir()
	args := append([]string{"-shared", "-fPIC", "-O1", "-g"}, strings.Fields(string(out))...)
	args = append(args, "-o", filepath.Join(dir, "py_gilext.so"), filepath.Join(patient.Dir(t), "py_gilext.c"), "-lpthread")
	if b, err := exec.Command(gcc, args...).CombinedOutput(); err != nil {
		t.Fatalf("gcc %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	return dir
}

// forEachPython runs test with Debian's patient.Python, then with each
// pyenv CPython 3.11 or later ($PYENV_ROOT or ~/.pyenv, versions/X/bin/
// python3), as subtests named by version. pyenv's interpreters are not
// installed by the project's scripts: without them the pyenv subtest
// skips, even in CI.
func forEachPython(t *testing.T, test func(t *testing.T, python string)) {
	t.Run("debian", func(t *testing.T) {
		patient.RequireTool(t, patient.Python)
		test(t, patient.Python)
	})
	root := os.Getenv("PYENV_ROOT")
	if root == "" {
		home, _ := os.UserHomeDir()
		root = filepath.Join(home, ".pyenv")
	}
	paths, _ := filepath.Glob(filepath.Join(root, "versions", "3.1[1-9]*", "bin", "python3"))
	if len(paths) == 0 {
		t.Run("pyenv", func(t *testing.T) {
			t.Skipf("no pyenv CPython 3.11+ under %s/versions: those interpreters are not installed by scripts/install-deps.sh; only Debian's %s was tested", root, patient.Python)
		})
	}
	for _, p := range paths {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(p))), func(t *testing.T) { test(t, p) })
	}
}

// main holds the GIL and waits in pthread_mutex_lock for ext_mutex, which
// regainer holds while it waits for the GIL in take_gil.
func TestLivePythonGILDeadlock(t *testing.T) {
	forEachPython(t, testLivePythonGILDeadlock)
}

func testLivePythonGILDeadlock(t *testing.T, python string) {
	dir := buildGILExt(t, python)
	script := patient.Build(t, "py_gilext.py")
	l := startLive(t, []string{python, script, dir}, nil)
	pid := l.p.Pid
	owner, waiter := l.p.Int(t, "owner"), l.p.Int(t, "waiter")
	if waiter != pid {
		t.Fatalf("patient: waiter %d is not the main thread %d", waiter, pid)
	}

	holder := l.thread(t, pid, waiter)
	wantFrames(t, holder, "pthread_mutex_lock", "lock")
	wantMutexWait(t, holder, owner, "ext_mutex")
	regainer := l.thread(t, pid, owner)
	// 3.13's PyEval_RestoreThread tail-calls _PyThreadState_Attach, so
	// its frame is gone: take_gil is on every version's stack. take_gil
	// wakes every 5 ms, so a sample may find it awake above its
	// pthread_cond_timedwait (in _PyThreadState_MustExit, 3.12.1, once).
	wantFrames(t, regainer, "take_gil", "hold_then_regain")

	if d := l.top(t, "gil-deadlock"); d != nil {
		wantTids(t, d, "the GIL holder and the mutex owner", waiter, owner)
		wantPids(t, d, pid)
		wantConfidence(t, d, heuristics.High)
		wantSummary(t, d, strconv.Itoa(waiter), strconv.Itoa(owner), "ext_mutex", "holds the GIL", "hold_then_regain")
		pyLine(t, holder, d, "py_gilext.py", patient.SourceLine(t, script, "ext.lock()  # forever"))
	}
	for _, id := range []string{"lost-wakeup", "lock-order-cycle", "self-deadlock"} {
		if l.find(id) != nil {
			t.Errorf("diagnosis: %s claimed beside the GIL deadlock", id)
		}
	}
}

// The main thread takes back the GIL it holds (py_gilext.c's
// regain_held, the shape of pybind11's gil_scoped_acquire with a lost
// thread state): the interpreter records it as the GIL's holder while it
// waits in take_gil. Debian's 3.11 only: 3.13 aborts instead of waiting.
func TestLivePythonGILRetake(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	dir := buildGILExt(t, patient.Python)
	script := patient.Build(t, "py_gil_reacquire.py")
	l := startLive(t, []string{patient.Python, script, dir}, nil)
	pid := l.p.Pid
	waiter := l.p.Int(t, "waiter")
	wantFrames(t, l.thread(t, pid, waiter), "take_gil", "regain_held")
	if d := l.top(t, "self-deadlock"); d != nil {
		wantTids(t, d, "the thread that holds the GIL and waits for it", waiter)
		wantConfidence(t, d, heuristics.High)
		wantSummary(t, d, "records", "GIL's holder", "regain_held")
	}
	if l.find("gil-deadlock") != nil || l.find("lost-wakeup") != nil {
		t.Errorf("diagnosis: a GIL deadlock or lost wake-up claimed beside the GIL taken back by its holder")
	}
}

// A logging StreamHandler's stream lock held across the fork of a
// multiprocessing worker (see py_logging_fork.py for why this, and not
// the handler lock, is what hangs on 3.11). The tree is attached: the
// parent's logger thread, blocked in write() inside emit, is named.
func TestLivePythonLoggingFork(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	script := patient.Build(t, "py_logging_fork.py")
	l := startLive(t, []string{patient.Python, script}, forkPids(t))
	parent, child := l.p.Pid, l.p.Int(t, "child")
	owner := l.p.Int(t, "owner")

	wantForkChild(t, l, child, parent, owner)
	th := l.thread(t, child, child)
	wantFrames(t, th, "PyThread_acquire_lock")
	if len(l.process(t, child).Threads) != 1 {
		t.Errorf("evidence: child has %d threads, want 1", len(l.process(t, child).Threads))
	}
	logger := l.thread(t, parent, owner)
	if logger.Wait == nil || logger.Wait.Syscall != "write" {
		t.Errorf("evidence: the parent's logger %d does not block in write(): %+v", owner, logger.Wait)
	}

	d := l.top(t, "fork-inherited-lock")
	if d == nil {
		return
	}
	wantTids(t, d, "the worker's waiting thread", child)
	wantPids(t, d, child, parent)
	if d.Confidence == heuristics.High {
		t.Errorf("diagnosis: high confidence without an owner read")
	}
	wantFix(t, d, "spawn", "forkserver")
	if pyLine(t, th, d, "py_logging_fork.py", patient.SourceLine(t, script, "# forever: the stream's lock")) {
		// Python frames: the worker machinery, the logging lock and the
		// parent's thread inside the handler are named.
		wantSummary(t, d, "logging", "logging/__init__.py")
		wantTids(t, d, "the parent's logger inside emit", owner)
		wantSays(t, d, "multiprocessing worker", "inside a logging handler")
		pyLine(t, logger, nil, "py_logging_fork.py", patient.SourceLine(t, script, "# blocks in write()"))
	}
}

func wantFix(t *testing.T, d *heuristics.Diagnosis, words ...string) {
	t.Helper()
	for _, w := range words {
		if !strings.Contains(d.Fix, w) {
			t.Errorf("diagnosis %s: fix %q does not say %q", d.ID, d.Fix, w)
		}
	}
}

// numpy matmuls in a child forked after the parent's threads ran matmuls.
// The patient says whether the child computes (Debian's reference BLAS,
// or OpenBLAS with its atfork handler) or is stuck (OpenBLAS 0.3.30's
// relock); each is asserted as what it is.
func TestLivePythonNumpyFork(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	if err := exec.Command(patient.Python, "-c", "import numpy").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s cannot import numpy: scripts/install-deps.sh installs python3-numpy", patient.Python)
		}
		t.Skipf("%s cannot import numpy (apt-get install python3-numpy)", patient.Python)
	}
	script := patient.Build(t, "py_numpy_fork.py")
	l := startLive(t, []string{patient.Python, script}, forkPids(t))
	parent, child := l.p.Pid, l.p.Int(t, "child")
	var blas, state string
	for _, line := range l.p.Early() {
		if v, ok := strings.CutPrefix(line, "blas="); ok {
			blas = v
		}
	}
	// child_state comes after "blas=" and before "ready"
	for _, line := range l.p.Early() {
		if v, ok := strings.CutPrefix(line, "child_state="); ok {
			state = v
		}
	}
	t.Logf("numpy's BLAS: %s; child: %s", blas, state)
	wantForkChild(t, l, child, parent)
	th := l.thread(t, child, child)
	matmul := patient.SourceLine(t, script, "# the matmul in the forked child")

	switch state {
	case "computing":
		if !strings.Contains(blas, "openblas") {
			// the reference BLAS runs the product in the child's thread
			if n := len(l.process(t, child).Threads); n != 1 {
				t.Errorf("evidence: child has %d threads, want 1 (reference BLAS starts none)", n)
			}
		}
		for _, d := range l.diags {
			if d.Deadlock && slices.Contains(d.Pids, child) {
				t.Errorf("diagnosis: a deadlock claimed for the computing child: [%s] %s", d.ID, d.Summary)
			}
		}
		d := l.find("progressing")
		if d == nil || !slices.Contains(d.Pids, child) {
			t.Errorf("diagnosis: the computing child %d is not called progressing", child)
		}
	case "stuck":
		d := l.top(t, "self-deadlock", "fork-inherited-lock")
		if d == nil {
			return
		}
		wantTids(t, d, "the child's thread", child)
		wantKnownIssue(t, d, "openblas")
		pyLine(t, th, d, "py_numpy_fork.py", matmul)
	default:
		t.Fatalf("patient: child_state %q", state)
	}
}

// Control: two threads computing in pure Python: progressing, no deadlock
// claim (no GIL deadlock either: they hand the GIL to each other).
func TestLivePythonControlCompute(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	script := patient.Build(t, "py_compute.py")
	l := startLive(t, []string{patient.Python, script}, nil)
	pid := l.p.Pid
	cruncher := l.p.Int(t, "cruncher")
	// Two threads share one GIL on a machine that may be loaded: each
	// must have run, not at any given rate.
	for _, th := range l.process(t, pid).Threads {
		ran := th.CPU > 0
		for _, s := range th.Samples() {
			ran = ran || s.CPUTicks > 0 || s.State == "R"
		}
		if !ran {
			t.Errorf("evidence: thread %d (cruncher %d): no CPU in any sample, want a computing thread", th.Tid, cruncher)
		}
	}
	l.wantNoDeadlock(t)
	if l.find("gil-deadlock") != nil {
		t.Errorf("control: two computing threads taken for a GIL deadlock")
	}
	if d := l.wantVerdict(t, "progressing"); d != nil {
		wantPids(t, d, pid)
	}
}

// The threading.Lock patient, the tree attached: the child's wait and the
// parent's holder thread (the only other blocked thread of the parent)
// are named; with Python frames, their lines too.
func TestLivePythonForkLockHolder(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	script := patient.Build(t, "pyfork_lock.py")
	l := startLive(t, []string{patient.Python, script}, forkPids(t))
	parent, child := l.p.Pid, l.p.Int(t, "child")
	owner := l.p.Int(t, "owner")
	d := l.top(t, "fork-inherited-lock")
	if d == nil {
		return
	}
	wantTids(t, d, "the child's waiter and the parent's holder", child, owner)
	wantPids(t, d, child, parent)
	wantSays(t, d, "most likely the holder")
	wantFix(t, d, "spawn", "register_at_fork")
	th := l.thread(t, child, child)
	if pyLine(t, th, d, "pyfork_lock.py", patient.SourceLine(t, script, "# forever: the holder is not in this process")) {
		pyLine(t, l.thread(t, parent, owner), nil, "pyfork_lock.py", patient.SourceLine(t, script, "# forever, holding lock"))
	}
}
