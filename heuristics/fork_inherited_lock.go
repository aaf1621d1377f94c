package heuristics

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "fork-inherited-lock",
		Title: "Forked child waits for a lock held by a parent thread at fork()",
		Explain: "fork() copies the whole address space, every locked mutex included, but only the thread " +
			"that called it. A lock another thread of the parent held at that moment stays locked in the " +
			"child, owned by a thread that does not exist there: the first time the child takes it, it waits " +
			"for ever. Thread pools (OpenBLAS, OpenMP), malloc, loggers and device pools are the usual locks.",
		Fix: "Do not fork a multi-threaded process without exec: use posix_spawn (or fork immediately followed " +
			"by exec), or Python multiprocessing's 'spawn' or 'forkserver' start method. A library that must " +
			"survive fork takes its locks in a pthread_atfork prepare handler and releases them in the parent " +
			"and child handlers, or re-initialises them in the child.",
		Needs: []string{"owners", "lineage"},
		Rank:  10,
		Match: matchForkInheritedLock,
	})
}

var forkRefs = []string{
	"https://man7.org/linux/man-pages/man2/fork.2.html",
	"https://man7.org/linux/man-pages/man3/pthread_atfork.3.html",
	"https://man7.org/linux/man-pages/man3/posix_spawn.3.html",
	"https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods",
}

// forkLocks returns the locks of forked children owned by a parent
// thread at fork.
func forkLocks(a *analysis) []*Lock {
	var ls []*Lock
	for _, l := range a.graph.Locks {
		if l.Owner.Kind == OwnerForkParent {
			ls = append(ls, l)
		}
	}
	return ls
}

func lineage(p *stacks.Process) string {
	return fmt.Sprintf("process %d was forked from %d and did not exec; the parent's threads when sampled: %s",
		p.Pid, p.Fork.ParentPid, joinInts(p.Fork.ParentThreads))
}

func matchForkInheritedLock(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, l := range forkLocks(a) {
		p, o := l.Waiters[0].Proc, l.Owner
		first := Edge{Kind: EdgeMutex, From: l.Waiters[0], Lock: l}
		d := Diagnosis{
			Deadlock:   true,
			Confidence: a.graphConfidence(p),
			Summary: fmt.Sprintf("forked child %d: %s; fork() copied it locked and no thread of the child will unlock it",
				p.Pid, Step(first)),
			Chain: []string{
				fmt.Sprintf("process %d forked %d while its thread %d held %s", p.Fork.ParentPid, p.Pid, o.Tid, mutexLabel(l.Mutex)),
				fmt.Sprintf("fork() copied the mutex, locked and owned by thread %d, but not the thread: thread %d does not exist in the child", o.Tid, o.Tid),
			},
			Evidence: []string{lineage(p), a.mutexFacts(l.Mutex)},
			Refs:     forkRefs,
		}
		for _, w := range l.Waiters {
			d.Chain = append(d.Chain, Step(Edge{Kind: EdgeMutex, From: w, Lock: l}))
			d.Evidence = append(d.Evidence, stackLine(w.Thread))
		}
		if pt := o.Thread.Thread; pt != nil {
			d.Chain = append(d.Chain, fmt.Sprintf("in the parent, %s %s (it holds the parent's copy, not the child's)", threadLabel(pt), a.Doing(pt)))
		}
		d.name(l.Waiters...)
		d.Pids = appendNew(d.Pids, p.Fork.ParentPid)
		d.Tids = appendNew(d.Tids, o.Tid)
		ds = append(ds, d)
	}
	// Without owners (a Python lock, a pasted dump): a forked child whose
	// threads all wait on locks, none running.
	for _, p := range a.Snap.Processes {
		ws := a.stuckLockWaiters(p)
		if p.Fork == nil || len(ws) == 0 {
			continue
		}
		if lw, ok := a.forkedSelfRelock(p); ok && lw.id == "self-deadlock" {
			continue // a known issue says the thread re-locks its own lock
		}
		t := ws[0].Thread
		conf := Low
		if a.Snap.Evidence.CPU {
			conf = Medium
		}
		d := Diagnosis{
			Deadlock:   true,
			Confidence: conf,
			Summary: fmt.Sprintf("forked child %d: %s waits for a lock in %s that no thread of the child can release; a lock held by a thread of parent %d when it forked stays locked in the child",
				p.Pid, threadLabel(t), waitSite(t), p.Fork.ParentPid),
			Chain: []string{
				fmt.Sprintf("process %d forked %d without exec; the child has %d thread(s), the parent had %d", p.Fork.ParentPid, p.Pid, len(p.Threads), len(p.Fork.ParentThreads)),
				"every thread of the child waits for a lock (or a join) and none runs; no owner was recorded for the lock (it is not a pthread mutex, or owners were not read)",
				"a lock that only a thread of the parent could release was copied locked by fork()",
			},
			Evidence: []string{lineage(p)},
			Refs:     forkRefs,
		}
		for _, w := range ws {
			d.Evidence = append(d.Evidence, stackLine(w.Thread))
		}
		d.name(ws...)
		d.Pids = appendNew(d.Pids, p.Fork.ParentPid)
		refinePythonFork(a, &d, p, t)
		ds = append(ds, d)
	}
	// No lineage (a pasted dump): a process whose one thread waits on a
	// lock, and whose frames say it is a forked child, or match a known
	// issue of a lock held across fork().
	for _, p := range a.Snap.Processes {
		if d, ok := pyOnlyForkDiagnosis(a, p); ok {
			ds = append(ds, d)
			continue
		}
		if lw, ok := a.loneWaiterOf(p); ok && lw.id == "fork-inherited-lock" {
			d := a.loneWaiterDiagnosis(lw)
			if lw.rule == nil {
				refinePythonFork(a, &d, p, lw.ref.Thread)
			}
			ds = append(ds, d)
		}
	}
	return ds
}

func appendNew(xs []int, x int) []int {
	if x == 0 || contains(xs, x) {
		return xs
	}
	return append(xs, x)
}
