package attach

import (
	"encoding/binary"
	"fmt"
	"path/filepath"
	"time"

	"github.com/hangdoc/hangdoc/attach/module"
	"github.com/hangdoc/hangdoc/attach/python"
	"github.com/hangdoc/hangdoc/attach/unwind"
	"github.com/hangdoc/hangdoc/internal/lazyre"
	"github.com/hangdoc/hangdoc/stacks"
)

// pyTarget is the CPython interpreter of a target, found on its first
// sample; reader is nil when the process runs none or it cannot be read.
type pyTarget struct {
	reader *python.Reader
	// merged counts, per tid, the samples whose stacks already carry
	// Python frames.
	merged map[int]int
	// gil is set once the GIL's state was read in some sample.
	gil bool
	// takeGIL holds the PCs found to be in take_gil (learned from
	// threads asleep on the GIL's condition variable): every frame at one
	// of them is named so in every sample, so that a stack does not seem
	// to change between samples because only one of them was named.
	takeGIL map[uint64]bool
}

// evalFrameFunc is the C function that runs Python frames: each of its
// frames on a native stack stands for the Python frames it runs.
const evalFrameFunc = "_PyEval_EvalFrameDefault"

// interpreterFile matches the files that may hold _PyRuntime: the
// interpreter itself (python3.11, python3) or libpython3.x.so.
var interpreterFile = lazyre.New(`^(lib)?python\d(\.\d+)?[a-z]*(\.so.*)?$`)

// symbolSource is what finding _PyRuntime needs of an address space.
type symbolSource interface {
	Lookup(pc uint64) *module.Loaded
	Modules() []stacks.Module
}

// pythonRuntime is CPython: its frames are merged into the native
// stacks, live after each sample and in a core after the unwind.
type pythonRuntime struct{}

// live looks for CPython's _PyRuntime in the modules of tg and prepares
// a reader; a process without one gets no note, one that has it but
// cannot be read gets a note saying why.
func (pythonRuntime) live(tg *target, _ Options) runtimeReader {
	src, ok := tg.space.(symbolSource)
	if !ok {
		return nil
	}
	r := findInterpreter(tg.proc, src, liveMemory(tg.pid))
	if r == nil {
		return nil
	}
	return &pyTarget{reader: r, merged: map[int]int{}, takeGIL: map[uint64]bool{}}
}

func (pythonRuntime) coreThreads(*coreProcess) (bool, string) { return false, "" }

func (py *pyTarget) sample(*sampler, *target, bool) bool { return false }
func (py *pyTarget) ownStacks() bool                     { return false }

// finish says whether the GIL's holder was read in some sample.
func (py *pyTarget) finish(_ *target, _ time.Duration, ev *stacks.Evidence) {
	if py.gil {
		ev.GIL = true
	}
}

// findInterpreter finds _PyRuntime in the interpreter, libpython or the
// executable that embeds it, and returns a reader for it; nil, with a
// note on proc when the process has an interpreter that cannot be read.
// It sets proc.Runtime. Live processes and core files share it.
func findInterpreter(proc *stacks.Process, src symbolSource, mem unwind.Memory) *python.Reader {
	var seen string // an interpreter-named file without _PyRuntime
	for _, m := range src.Modules() {
		base := filepath.Base(m.Path)
		named := interpreterFile.MatchString(base)
		// The executable may embed the interpreter under any name
		// (uwsgi, a statically linked python).
		if !named && m.Path != proc.Exe {
			continue
		}
		l := src.Lookup(m.Start)
		if l == nil {
			continue
		}
		var runtime, pyVersion uint64
		for _, s := range l.File.Symbols() {
			switch s.Name {
			case "_PyRuntime":
				runtime = s.Value + l.Bias
			case "Py_Version":
				pyVersion = s.Value + l.Bias
			}
		}
		if runtime == 0 {
			if named {
				seen = base
			}
			continue
		}
		v, ok := python.VersionFromName(base)
		if !ok {
			v, _ = python.VersionFromName(filepath.Base(proc.Exe))
		}
		// Only the minor version is known from a name (3.10 has no
		// Py_Version).
		version := fmt.Sprintf("%d.%d", v.Major(), v.Minor())
		if pyVersion != 0 {
			var b [8]byte
			if n, _ := mem.ReadAt(b[:], pyVersion); n == 8 {
				if hex := python.Version(binary.LittleEndian.Uint64(b[:])); hex.Major() == 3 {
					v, version = hex, hex.String()
				}
			}
		}
		if v != 0 && !python.Supported(v) {
			proc.Notes = append(proc.Notes, fmt.Sprintf("%s: CPython %s is not supported (hangdoc reads 3.11 and later): Python frames are not shown, native stacks are", base, version))
			return nil
		}
		r, err := python.NewReader(mem, runtime, v)
		if err != nil {
			proc.Notes = append(proc.Notes, fmt.Sprintf("%s: the Python interpreter cannot be read (%v): Python frames are not shown, native stacks are", base, err))
			return nil
		}
		proc.Runtime = "CPython " + r.Version().String()
		return r
	}
	if seen != "" {
		proc.Notes = append(proc.Notes, fmt.Sprintf("%s: no _PyRuntime symbol found (a CPython before 3.7, or stripped of its dynamic symbols): Python frames are not shown, native stacks are", seen))
	}
	return nil
}

// merge reads the interpreter after a sample and merges each
// thread's Python frames into the native stack just sampled: every
// _PyEval_EvalFrameDefault frame is replaced by the Python frames it
// runs, as py-spy dump --native shows them. It reads memory only; the
// threads run on (or sleep) meanwhile, so a thread that moved between
// its native sample and this read may show frames from either moment.
func (py *pyTarget) merge(tg *target) {
	st := readInterpreter(tg.proc, py.reader)
	if st == nil {
		return
	}
	if st.GIL {
		py.gil = true
	}
	byTid := pyThreadsByTid(st)
	for tid, acc := range tg.threads {
		n := len(acc.t.Samples())
		if n == 0 || py.merged[tid] == n {
			continue
		}
		py.merged[tid] = n
		if pc := mergeLastSample(acc.t, st, byTid[tid]); pc != 0 {
			py.takeGIL[pc] = true
		}
	}
	if len(py.takeGIL) > 0 {
		for _, acc := range tg.threads {
			nameTakeGILAt(acc.t, py.takeGIL)
		}
	}
}

// nameTakeGILAt names take_gil every unnamed frame of t's samples whose
// PC is one of pcs.
func nameTakeGILAt(t *stacks.Thread, pcs map[uint64]bool) {
	for _, sm := range t.Samples() {
		st := sm.Stack
		for j := range st {
			if st[j].Func == "" && pcs[st[j].PC] {
				st[j].Func = "take_gil"
			}
		}
	}
}

// readInterpreter reads r once; what could not be read becomes a note.
func readInterpreter(proc *stacks.Process, r *python.Reader) *python.State {
	st, err := r.Read()
	if st == nil {
		addNote(&proc.Notes, fmt.Sprintf("Python thread states unreadable: %v", err))
		return nil
	}
	if err != nil {
		addNote(&proc.Notes, fmt.Sprintf("Python thread states partly read: %v", err))
	}
	if !st.GIL && st.GILErr != nil {
		addNote(&proc.Notes, fmt.Sprintf("the GIL's holder is unknown (%v): no thread is marked as holding it", st.GILErr))
	}
	return st
}

func pyThreadsByTid(st *python.State) map[int]*python.Thread {
	byTid := map[int]*python.Thread{}
	for i := range st.Threads {
		byTid[st.Threads[i].OSTid] = &st.Threads[i]
	}
	return byTid
}

// mergeLastSample puts the Python frames of pt (nil for a thread that
// runs no Python) into t's last sample and its stack, and says whether it
// holds the GIL (its Runtime).
// It returns the PC of take_gil when the thread waits for the GIL.
func mergeLastSample(t *stacks.Thread, st *python.State, pt *python.Thread) (takeGIL uint64) {
	n := len(t.Samples())
	if n == 0 {
		return 0
	}
	if st.GIL {
		t.Runtime = nil
		if pt != nil && pt.HoldsGIL {
			t.Runtime = stacks.PythonHoldingGIL()
		}
	}
	sm := &t.Samples()[n-1]
	if waitsForGIL(sm.Wait, st.GILWait) {
		takeGIL = nameTakeGIL(sm.Stack)
	}
	if pt == nil {
		return takeGIL
	}
	if pt.Err != nil {
		addNote(&t.Notes, fmt.Sprintf("Python frames may be incomplete: %v", pt.Err))
	}
	sm.Stack = mergePython(sm.Stack, pt.Frames)
	t.Stack = sm.Stack
	return takeGIL
}

// coreMerge reads the CPython interpreter of a core file into its
// threads' stacks, as merge does after each live sample, and says
// whether the GIL's state was read.
func (pythonRuntime) coreMerge(c *coreProcess, ev *stacks.Evidence) {
	proc := c.proc
	r := findInterpreter(proc, c.mods.space, c.mem)
	if r == nil {
		return
	}
	st := readInterpreter(proc, r)
	if st == nil {
		return
	}
	byTid := pyThreadsByTid(st)
	pcs := map[uint64]bool{}
	for _, t := range proc.Threads {
		if pc := mergeLastSample(t, st, byTid[t.Tid]); pc != 0 {
			pcs[pc] = true
		}
	}
	for _, t := range proc.Threads {
		nameTakeGILAt(t, pcs)
	}
	ev.GIL = st.GIL
}

// mergePython replaces each evaluator frame of native (innermost first)
// by the Python frames that evaluator call runs: the frames up to and
// including the next one marked Entry. Python frames left over (the
// native unwind stopped early, or no native stack could be read) follow
// the native frames.
func mergePython(native []stacks.Frame, py []python.Frame) []stacks.Frame {
	if len(py) == 0 {
		return native
	}
	out := make([]stacks.Frame, 0, len(native)+len(py))
	next := 0
	segment := func() {
		for next < len(py) {
			f := py[next]
			next++
			out = append(out, stacks.Frame{Func: f.Func, File: f.File, Line: f.Line})
			if f.Entry {
				return
			}
		}
	}
	for _, f := range native {
		if f.Func == evalFrameFunc && next < len(py) {
			segment()
			continue
		}
		out = append(out, f)
	}
	for next < len(py) {
		segment()
	}
	return out
}

// waitsForGIL says whether a futex wait is on the GIL's condition
// variable or mutex.
func waitsForGIL(w *stacks.Wait, ranges [][2]uint64) bool {
	if w == nil || w.Syscall != "futex" || w.Addr == 0 {
		return false
	}
	for _, r := range ranges {
		if w.Addr >= r[0] && w.Addr < r[1] {
			return true
		}
	}
	return false
}

// nameTakeGIL names take_gil on the stack of a thread that waits for the
// GIL when the interpreter's symbols do not (take_gil is static, and
// distributions strip .symtab): the first unnamed frame under the
// condition-variable wait is the caller of pthread_cond_*wait, which only
// take_gil is in CPython's GIL code. It returns that frame's PC.
func nameTakeGIL(stack []stacks.Frame) uint64 {
	for i := range stack {
		switch stack[i].Func {
		case "take_gil":
			return stack[i].PC
		case "":
			if i > 0 && stack[i].Module != "" && interpreterFile.MatchString(filepath.Base(stack[i].Module)) {
				stack[i].Func = "take_gil"
				return stack[i].PC
			}
			return 0
		}
	}
	return 0
}
