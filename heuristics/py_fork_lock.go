package heuristics

// The Python side of fork-inherited-lock: a forked child blocked
// acquiring a Python lock (threading.Lock, the lock of a logging handler
// or of the stream it writes to, a queue.Queue's mutex) that a thread of
// its multi-threaded parent held at fork(). A Python lock records no
// owner; what names the holder is the parent's snapshot, when the tree
// was attached: the parent thread whose Python stack is inside the
// lock's critical section (a logging handler's emit), or the one parent
// thread that was blocked, not forking, not waiting for the child.

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// pyForkFix is the fix for a Python child of fork, by the lock and the
// worker machinery its frames show.
func pyForkFix(kind, worker string) string {
	spawn := "Start the worker processes with the 'spawn' or 'forkserver' start method, so they do not inherit the parent's threads' locks: multiprocessing.set_start_method(\"spawn\") at program start, or ctx = multiprocessing.get_context(\"spawn\") and ctx.Process(…) / ctx.Pool(…) (forkserver is the default on Linux from Python 3.14)."
	if worker == "" {
		spawn = "Do not os.fork() a process that runs threads: use subprocess (fork and exec), or multiprocessing with the 'spawn' or 'forkserver' start method (multiprocessing.get_context(\"spawn\"))."
	}
	switch kind {
	case "logging":
		return spawn + " Python re-initialises logging's own locks in the child of os.fork() (3.8+), not the locks of what a handler writes to (the stream's buffer, a socket, a queue) nor of handlers that replace createLock: in a forked worker, configure logging afresh instead of writing through the parent's handlers, or send records to the parent (logging.handlers.QueueHandler on a multiprocessing queue, with a QueueListener in the parent)."
	case "queue":
		return spawn + " A queue.Queue is for threads of one process: its mutex is copied locked when a thread of the parent was inside put() or get() at the fork; pass work to processes through multiprocessing.Queue or a Pipe."
	}
	return spawn + " A lock that must survive fork can be made so: os.register_at_fork(before=lock.acquire, after_in_parent=lock.release, after_in_child=lock.release), so no thread holds it at the fork."
}

// pyLockWords names the lock for a summary.
func pyLockWords(kind string) string {
	switch kind {
	case "logging":
		return "a logging lock (a handler's, or the stream's it writes to)"
	case "queue":
		return "a queue.Queue's lock"
	}
	return "a Python lock"
}

// pyHolder is a parent thread that may hold the child's lock.
type pyHolder struct {
	ref ThreadRef
	// inside: its Python frames are inside the lock's critical section
	// (a logging handler's handle/emit), not just blocked.
	inside bool
}

// pyParentHolders picks, in the parent's snapshot, the threads that may
// have held the child's lock at fork(): those inside a logging handler
// when the child waits in logging, else the parent's blocked threads
// other than the one that forked (which waits for the child, or runs the
// child's own outer frames).
func pyParentHolders(a *analysis, child *stacks.Process, waiter *stacks.Thread, kind string) []pyHolder {
	parent := a.Process(child.Fork.ParentPid)
	if parent == nil {
		return nil
	}
	var inside, blocked []pyHolder
	for _, t := range parent.Threads {
		if a.running(t) || forkerThread(child, waiter, t) {
			continue
		}
		r := ThreadRef{Proc: parent, Thread: t}
		if kind == "logging" && inLoggingHandler(t) {
			inside = append(inside, pyHolder{ref: r, inside: true})
			continue
		}
		blocked = append(blocked, pyHolder{ref: r})
	}
	if len(inside) > 0 {
		return inside
	}
	return blocked
}

// forkerThread: the parent thread that forked the child: it waits for
// the child (wait4, waitpid, join) or its outermost Python frames are the
// child thread's (the child is a copy of it).
func forkerThread(child *stacks.Process, waiter, t *stacks.Thread) bool {
	if w := t.Wait; w != nil && (w.ChildPid == child.Pid || w.Syscall == "wait4" || w.Syscall == "waitid") {
		return true
	}
	for _, f := range t.Stack {
		if k := funcKey(f); k == "wait4" || k == "waitpid" || k == "os_waitpid_impl" || k == "waitid" {
			return true
		}
	}
	outer := func(st []stacks.Frame) []stacks.Frame {
		var py []stacks.Frame
		for _, f := range st {
			if stacks.IsPythonFrame(f) {
				py = append(py, f)
			}
		}
		return py
	}
	pc, pt := outer(waiter.Stack), outer(t.Stack)
	if len(pc) == 0 || len(pt) == 0 {
		return false
	}
	// the same outermost Python function, from the same line
	c, p := pc[len(pc)-1], pt[len(pt)-1]
	return c.File == p.File && c.Func == p.Func && c.Line == p.Line
}

// inLoggingHandler: the thread's Python stack is inside a logging
// Handler's handle() (which holds the handler's lock around emit) or
// inside its emit (which holds the stream's).
func inLoggingHandler(t *stacks.Thread) bool {
	for _, f := range t.Stack {
		if stacks.IsPythonFrame(f) && pyLoggingFile(f) && (f.Func == "emit" || f.Func == "handle" || f.Func == "flush" ||
			strings.HasSuffix(f.Func, ".emit") || strings.HasSuffix(f.Func, ".handle")) {
			return true
		}
	}
	return false
}

// refinePythonFork makes a fork-inherited-lock diagnosis of a Python
// child say it in Python: which lock (logging, queue, threading), where
// the child waits (its Python file:line), the worker machinery and the
// fix for it (the start method), and, with the parent's snapshot, the
// parent thread that held the lock and its Python line.
func refinePythonFork(a *analysis, d *Diagnosis, child *stacks.Process, waiter *stacks.Thread) {
	if !pyLockAcquire(waiter) && !hasPyFrames(waiter) {
		return
	}
	kind, worker := pyLockKind(waiter), pyWorker(child)
	d.Fix = pyForkFix(kind, worker)
	if d.Refs == nil {
		d.Refs = forkRefs
	}
	if where := pyWhere(waiter); where != "" {
		d.Summary += fmt.Sprintf("; in Python, %s waits for %s in %s", threadLabel(waiter), pyLockWords(kind), where)
		d.Chain = append(d.Chain, fmt.Sprintf("in Python, %s waits for %s in %s", threadLabel(waiter), pyLockWords(kind), where))
	}
	switch worker {
	case "multiprocessing":
		d.Chain = append(d.Chain, "the child is a multiprocessing worker started with the 'fork' start method (multiprocessing/popen_fork.py, process.py _bootstrap): it inherits every lock the parent's threads held")
	case "dataloader":
		d.Chain = append(d.Chain, "the child is a PyTorch DataLoader worker (torch/utils/data/_utils/worker.py `_worker_loop`) forked from a parent that runs threads")
	}
	if kind == "logging" {
		d.Chain = append(d.Chain, "Python re-initialises the logging module's lock and every Handler's lock in the child of os.fork(); a lock it does not know (the handler's stream buffer, a custom or queue lock) stays as the fork copied it")
	}
	if child.Fork == nil {
		return
	}
	hs := pyParentHolders(a, child, waiter, kind)
	for _, h := range hs {
		t := h.ref.Thread
		where := pyOrWaitSite(t)
		switch {
		case h.inside:
			d.Chain = append(d.Chain, fmt.Sprintf("in the parent %d, %s is inside a logging handler, %s, holding the handler's lock and its stream's, and it %s: their copies in the child were locked", child.Fork.ParentPid, threadLabel(t), where, a.Doing(t)))
		case len(hs) == 1:
			d.Chain = append(d.Chain, fmt.Sprintf("in the parent %d, the only other blocked thread is %s, in %s: most likely the holder (a Python lock records no owner)", child.Fork.ParentPid, threadLabel(t), where))
		default:
			d.Chain = append(d.Chain, fmt.Sprintf("in the parent %d, %s, blocked in %s, may be the holder (a Python lock records no owner)", child.Fork.ParentPid, threadLabel(t), where))
		}
		d.Evidence = append(d.Evidence, stackLine(t))
	}
	if len(hs) == 1 || len(hs) > 0 && hs[0].inside {
		for _, h := range hs {
			d.Tids = appendNew(d.Tids, h.ref.Thread.Tid)
			d.Pids = appendNew(d.Pids, h.ref.Proc.Pid)
		}
		t := hs[0].ref.Thread
		if w := pyWhere(t); w != "" {
			d.Summary += fmt.Sprintf("; the parent's %s held it, at %s", threadLabel(t), w)
		}
	}
}

// pyOnlyFrames: every frame of every thread of p is a Python frame: a
// faulthandler dump, which has no native frames, no states and no waits.
func pyOnlyFrames(p *stacks.Process) bool {
	n := 0
	for _, t := range p.Threads {
		for _, f := range t.Stack {
			if f.Func == "" && f.Module == "" && f.PC == 0 {
				continue // an entry the paste cut mid-way
			}
			if !stacks.IsPythonFrame(f) {
				return false
			}
			n++
		}
	}
	return n > 0
}

// pyLockSite: a Python frame that takes a lock a forked child may find
// held: logging's handler path (Handler.handle and acquire take the
// handler's lock; emit and flush write to the stream under its buffer's
// lock) and logging's module lock; and any function that flushes a
// stream (a stream's flush, multiprocessing's flush of sys.stdout and
// sys.stderr in a new child), which takes the stream's buffer lock.
func pyLockSite(f stacks.Frame) bool {
	if !stacks.IsPythonFrame(f) {
		return false
	}
	name := f.Func
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	if strings.Contains(strings.ToLower(name), "flush") {
		return true
	}
	if !pyLoggingFile(f) {
		return false
	}
	switch name {
	case "acquire", "_acquireLock", "handle", "emit", "flush":
		return true
	}
	return false
}

// pyOnlyForkDiagnosis: a dump of Python frames only whose process is a
// forked child (by lineage, or by multiprocessing's fork frames) and
// whose only thread stopped inside logging's lock-taking path. Without
// native frames the lock wait is inferred from where the thread stopped,
// hence the low confidence.
func pyOnlyForkDiagnosis(a *analysis, p *stacks.Process) (Diagnosis, bool) {
	if p.Exited || len(p.Threads) != 1 || !pyOnlyFrames(p) {
		return Diagnosis{}, false
	}
	fork := forkChildSide(p)
	if p.Fork == nil && !fork.certain && fork.heading == "" {
		return Diagnosis{}, false
	}
	t := p.Threads[0]
	if !pyLockSite(t.Stack[0]) {
		return Diagnosis{}, false
	}
	ref := ThreadRef{Proc: p, Thread: t}
	how := "process lineage"
	switch {
	case p.Fork == nil && fork.heading != "":
		how = fmt.Sprintf("the paste's heading %q", fork.heading)
	case p.Fork == nil:
		how = fmt.Sprintf("its frames (`%s`, then `%s`, which runs only in the child)", fork.frame, fork.marker)
	}
	summary := fmt.Sprintf("%s is a forked child (by %s) whose only thread stopped inside logging, where it takes a handler's lock and the lock of the stream the handler writes to: a parent thread that was logging when the process forked left them locked in the child",
		procWord(p), how)
	if !pyLoggingFile(t.Stack[0]) {
		summary = fmt.Sprintf("%s is a forked child (by %s) whose only thread stopped flushing a stream in `%s`, which takes the stream's buffer lock: a parent thread that was writing to the stream when the process forked left it locked in the child",
			procWord(p), how, frameName(t.Stack[0]))
	}
	d := Diagnosis{
		Deadlock:   true,
		Confidence: Low,
		Summary:    summary,
		Chain: []string{
			fmt.Sprintf("%s is a forked child by %s", procWord(p), how),
			fmt.Sprintf("%s stopped in %s", threadLabel(t), pyWhere(t)),
			"the dump has Python frames only (faulthandler): no native frame says that the thread waits on a lock; the wait is inferred from where it stopped",
		},
		Evidence: []string{stackLine(t), "no native frames, thread states or mutex owners: the verdict rests on the Python frames alone"},
		Hints:    []Hint{attachHint(p.Pid, "on the live process (or py-spy dump --native) for the lock wait itself")},
		Refs:     forkRefs,
	}
	d.name(ref)
	refinePythonFork(a, &d, p, t)
	return d, true
}

// procWord names a process in a sentence: "process 4711", or "the
// process" when the dump gives no pid (faulthandler).
func procWord(p *stacks.Process) string {
	if p.Pid <= 0 {
		return "the process"
	}
	return fmt.Sprintf("process %d", p.Pid)
}
