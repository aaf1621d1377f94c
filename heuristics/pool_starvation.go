package heuristics

// Thread-starvation deadlock: a task of a bounded thread pool waits for
// the result of another task it submitted to the same pool. When every
// worker does that, no worker is left to run the tasks they wait for, and
// the pool waits on itself ("Java Concurrency in Practice" 8.1.1). The
// frames say it: a pool worker's loop (Python's concurrent.futures
// `_worker`, Java's ThreadPoolExecutor$Worker.run) with a wait for a
// future above it (Future.result, FutureTask.get, CompletableFuture.get
// or join). One idle worker, or any thread that runs, sleeps or waits on
// I/O (it may complete a future), and the rule stays silent.

import (
	"fmt"
	"path"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// poolWorkerFrame: the loop of a bounded pool's worker thread.
func poolWorkerFrame(f stacks.Frame) bool {
	switch {
	case f.Func == "_worker" && strings.HasSuffix(strings.ReplaceAll(f.File, "\\", "/"), "concurrent/futures/thread.py"):
		return true
	case strings.HasPrefix(f.Func, "java.util.concurrent.ThreadPoolExecutor$Worker.run"),
		strings.HasPrefix(f.Func, "java.util.concurrent.ThreadPoolExecutor.runWorker"):
		return true
	}
	return false
}

// futureWaitFrame: a blocking wait for a future's result.
func futureWaitFrame(f stacks.Frame) bool {
	switch {
	case f.Func == "Future.result" && path.Base(strings.ReplaceAll(f.File, "\\", "/")) == "_base.py":
		return true
	case strings.HasPrefix(f.Func, "java.util.concurrent.FutureTask.get"),
		strings.HasPrefix(f.Func, "java.util.concurrent.CompletableFuture.get"),
		strings.HasPrefix(f.Func, "java.util.concurrent.CompletableFuture.join"):
		return true
	}
	return false
}

// futureWaiter says whether t waits for a future (the wait innermost of
// its frames that say anything) and whether it is a pool's worker.
func futureWaiter(t *stacks.Thread) (waits, worker bool) {
	for _, f := range t.Stack {
		if !waits && futureWaitFrame(f) {
			waits = true
		}
		if poolWorkerFrame(f) {
			return waits, true
		}
	}
	return waits, false
}

// poolStarvation is a process whose pool workers all wait for futures.
type poolStarvation struct {
	p       *stacks.Process
	workers []ThreadRef
	// where is the first worker's own frame below the future wait
	where stacks.Frame
}

// findPoolStarvations returns the starved pools, once per snapshot
// (LockDiagnosed and self-deadlock both read them).
func findPoolStarvations(a *analysis) []poolStarvation {
	return result(a, "pool starvations", detectPoolStarvations)
}

func detectPoolStarvations(a *analysis) []poolStarvation {
	var out []poolStarvation
	for p := range a.liveProcs() {
		var s poolStarvation
		ok := true
		for _, t := range a.distinct(p) {
			waits, worker := futureWaiter(t)
			if a.running(t) || worker && !waits {
				ok = false // a free worker takes the next task; a running thread may finish one
				break
			}
			if !waits {
				// any other thread must wait on the pool too (a join, a
				// lock, a condition): one on I/O or a timer may complete
				// a future yet
				class, _ := a.wait(t)
				if k := a.samplesOf(t).kind; k == wkIO || k == wkSleep || k == wkRunning || k == wkSignal || class == notWaiting {
					ok = false // or it is doing what its frames do not say
					break
				}
				continue
			}
			if worker {
				s.workers = append(s.workers, ThreadRef{Proc: p, Thread: t})
			}
		}
		if ok && len(s.workers) > 0 {
			s.p = p
			s.where = futureCaller(s.workers[0].Thread)
			out = append(out, s)
		}
	}
	return out
}

// futureCaller is the frame that called the future wait.
func futureCaller(t *stacks.Thread) stacks.Frame {
	for i, f := range t.Stack {
		if futureWaitFrame(f) && i+1 < len(t.Stack) {
			return t.Stack[i+1]
		}
	}
	return stacks.Frame{}
}

func poolStarvationDiagnosis(a *analysis, s poolStarvation) Diagnosis {
	n := len(s.workers)
	d := Diagnosis{Deadlock: true, Confidence: Medium, Refs: []string{
		"https://docs.python.org/3/library/concurrent.futures.html#threadpoolexecutor",
		"https://docs.oracle.com/javase/8/docs/api/java/util/concurrent/ThreadPoolExecutor.html",
	}}
	who := "the only worker of its thread pool waits"
	if n > 1 {
		who = fmt.Sprintf("all %d workers of its thread pool wait", n)
	}
	where := frameName(s.where)
	if stacks.IsPythonFrame(s.where) {
		where = pyLoc(s.where)
	} else if where != "" {
		where = "`" + where + "`"
	}
	d.Summary = fmt.Sprintf("thread-pool starvation in %s: %s for the result of a future (from %s), so no worker is free to run the tasks they wait for: the pool waits on itself",
		whoProc(s.p), who, where)
	for _, w := range s.workers {
		d.Chain = append(d.Chain, fmt.Sprintf("%s, a pool worker, waits for a future's result in %s", threadLabel(w.Thread), pyOrWaitSite(w.Thread)))
		d.Evidence = append(d.Evidence, stackLine(w.Thread))
	}
	d.Chain = append(d.Chain,
		"no worker of the pool is idle and no thread runs: a task submitted to the pool waits in its queue for a worker that will never come free",
		"each waiting worker holds its place in the pool until its future completes, and the future needs a free worker")
	d.Evidence = append(d.Evidence, "the pool is known by its worker frames; which pool a future belongs to is not read, so a future that another source completes (an I/O callback, another pool) would break the inference; none of the other threads runs or waits on I/O")
	d.Fix = "Do not block a pool's task on another task of the same bounded pool: call the inner work directly, submit nested tasks to a separate pool, " +
		"or chain them (add_done_callback, CompletableFuture.thenCompose) instead of waiting. A bigger pool only moves the limit."
	d.name(s.workers...)
	return d
}
