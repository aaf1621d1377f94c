package heuristics

// A Python thread that waits on another process, read from its Python
// frames: a multiprocessing connection or queue (a pipe to a worker
// process), a multiprocessing pool's result, a subprocess's wait or
// communicate. Its stack alone says another process is to answer; when
// no thread of the process runs, the hang is in that process, which a
// paste does not show. waiting-on-process says so (not a deadlock
// claim), before io-wait, which would only see a select.

import (
	"fmt"
	"path"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// pyProcessWaitSites: the stdlib modules (path suffix) whose functions
// wait on another process, and what that process is.
var pyProcessWaitSites = []struct {
	file  string
	funcs []string
	what  string
}{
	{"multiprocessing/connection.py", []string{"wait", "recv", "recv_bytes", "_recv_bytes", "_recv", "poll", "_poll"}, "a pipe to another process (multiprocessing connection)"},
	{"multiprocessing/queues.py", []string{"get", "_poll"}, "a multiprocessing queue another process feeds"},
	{"multiprocessing/pool.py", []string{"get", "wait"}, "a result of a multiprocessing pool's worker process"},
	{"concurrent/futures/process.py", []string{"result", "wait", "_process_worker"}, "a process pool's worker"},
	{"subprocess.py", []string{"wait", "_wait", "_try_wait", "communicate", "_communicate", "check_output", "run", "call", "check_call"}, "a child process (subprocess)"},
	{"popen_fork.py", []string{"wait", "poll"}, "a child process (multiprocessing Process.join)"},
}

// pyWaitMachinery: modules whose frames sit above the call that says
// what is waited on (threading's Condition.wait, selectors' select).
func pyWaitMachinery(base string) bool {
	return base == "threading.py" || base == "selectors.py" || base == "socket.py"
}

// pyProcessWaitOf reads what process a thread waits on from its
// innermost Python frames past the wait machinery; "" when it waits on
// none (or the frames are not Python's).
func pyProcessWaitOf(t *stacks.Thread) (string, stacks.Frame) {
	for _, f := range t.Stack {
		if !stacks.IsPythonFrame(f) || f.File == "" {
			continue
		}
		file := strings.ReplaceAll(f.File, "\\", "/")
		if pyWaitMachinery(path.Base(file)) {
			continue
		}
		for _, s := range pyProcessWaitSites {
			if (file == s.file || strings.HasSuffix(file, "/"+s.file)) && pyFuncIn(f.Func, s.funcs) {
				return s.what, f
			}
		}
		return "", stacks.Frame{}
	}
	return "", stacks.Frame{}
}

// pyFuncIn: a py-spy or faulthandler function name ("wait",
// "Popen.wait" with --full-names) is one of names.
func pyFuncIn(fn string, names []string) bool {
	if i := strings.LastIndexByte(fn, '.'); i >= 0 {
		fn = fn[i+1:]
	}
	for _, n := range names {
		if fn == n {
			return true
		}
	}
	return false
}

// pyProcessWait is a thread of p waiting on another process.
type pyProcessWait struct {
	t     *stacks.Thread
	what  string
	frame stacks.Frame
}

// pyProcessWaitIn finds the first thread of p that waits on another
// process, when no thread of p runs.
func pyProcessWaitIn(a *analysis, p *stacks.Process) (pyProcessWait, bool) {
	var found pyProcessWait
	ok := false
	for t, f := range a.samplesIn(p) {
		if t.State == "R" || threadWorks(f) {
			return pyProcessWait{}, false
		}
		if what, fr := pyProcessWaitOf(t); what != "" && !ok {
			found, ok = pyProcessWait{t: t, what: what, frame: fr}, true
		}
	}
	return found, ok
}

func pyProcessWaitDiagnosis(a *analysis, p *stacks.Process, w pyProcessWait) Diagnosis {
	ref := ThreadRef{Proc: p, Thread: w.t}
	d := Diagnosis{Deadlock: false, Confidence: Low, Refs: []string{"https://docs.python.org/3/library/multiprocessing.html#multiprocessing-programming",
		"https://docs.python.org/3/library/subprocess.html#subprocess.Popen.communicate"}}
	d.name(ref)
	who := "the process"
	if p.Pid > 0 {
		who = whoProc(p)
	}
	d.Summary = fmt.Sprintf("waits on another process: %s waits in `%s` (%s:%d) for %s, and no thread of %s runs: whatever hangs is in that process, which the snapshot does not show",
		threadLabel(w.t), w.frame.Func, w.frame.File, w.frame.Line, w.what, who)
	d.Chain = append(d.Chain, fmt.Sprintf("%s %s", threadLabel(w.t), a.Doing(w.t)))
	d.Evidence = append(d.Evidence, stackLine(w.t))
	for _, t := range p.Threads {
		if t == w.t {
			continue
		}
		d.Tids = appendNew(d.Tids, t.Tid)
		d.Chain = append(d.Chain, fmt.Sprintf("%s %s", threadLabel(t), a.Doing(t)))
		if len(d.Evidence) < 4 {
			d.Evidence = append(d.Evidence, stackLine(t))
		}
	}
	d.Chain = append(d.Chain, "the other threads wait too (for work, or for what the waiting thread would hand on): none runs")
	h := attachHint(p.Pid, "on the parent to follow the wait")
	h.Tree = true
	d.Hints = append(d.Hints, h)
	d.Fix = "Dump the process waited on (py-spy dump --pid CHILD): its own stack says why it does not answer (a worker that died or hangs after fork, a child blocked writing " +
		"a full pipe the parent does not read: use communicate(), not wait()). Bound the wait (a timeout on get, recv, wait or " +
		"result) so a dead worker fails the caller instead of hanging it."
	return d
}
