package heuristics

import (
	"fmt"
)

func init() {
	register(&Signature{
		ID:    "orphaned-lock",
		Title: "Mutex owner exited without unlocking",
		Explain: "The thread a mutex records as its owner no longer exists: it returned, called pthread_exit, " +
			"was cancelled or crashed while holding the lock, and nobody else may unlock it. A robust mutex " +
			"would have told the next locker (EOWNERDEAD); a normal one waits for ever.",
		Fix: "Unlock on every path out of the locked region: RAII guards (std::lock_guard, std::unique_lock), " +
			"pthread_cleanup_push around cancellation points, no return or pthread_exit with the lock held. " +
			"For a lock shared with threads or processes that can die, use a robust mutex " +
			"(pthread_mutexattr_setrobust) and handle EOWNERDEAD with pthread_mutex_consistent.",
		Needs: []string{"owners"},
		Rank:  50,
		Match: matchOrphanedLock,
	})
}

// orphanedLocks returns the locks whose recorded owner is gone, or whose
// owner id now names a thread of an unrelated process. A parent thread at
// fork is fork-inherited-lock's, not these.
func orphanedLocks(a *analysis) []*Lock {
	var ls []*Lock
	for _, l := range a.graph.Locks {
		if l.Owner.Kind == OwnerGone || l.Owner.Kind == OwnerReused {
			ls = append(ls, l)
		}
	}
	return ls
}

func matchOrphanedLock(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, l := range orphanedLocks(a) {
		p, o, m := l.Waiters[0].Proc, l.Owner, l.Mutex
		first := Edge{Kind: EdgeMutex, From: l.Waiters[0], Lock: l}
		d := Diagnosis{
			Deadlock:   true,
			Confidence: a.graphConfidence(p),
			Evidence:   []string{a.mutexFacts(m)},
			Refs: []string{
				"https://man7.org/linux/man-pages/man3/pthread_mutexattr_setrobust.3.html",
				"https://man7.org/linux/man-pages/man3/pthread_mutex_consistent.3.html",
				"https://man7.org/linux/man-pages/man3/pthread_cleanup_push.3.html",
			},
		}
		if o.Kind == OwnerReused {
			// The id was recycled: say whose it is now, and do not call
			// that thread the owner.
			d.Confidence = Medium
			d.Summary = fmt.Sprintf("%s: the owner exited without unlocking", Step(first))
			d.Chain = []string{fmt.Sprintf("%s records thread %d as its owner; process %d has no thread %d", mutexLabel(m), o.Tid, p.Pid, o.Tid),
				fmt.Sprintf("tid %d now names %s of process %d, which cannot hold this process's private mutex: the id was reused after the owner exited",
					o.Tid, nameOrThread(o.Thread.Thread), o.Thread.Proc.Pid)}
			d.Evidence = append(d.Evidence, fmt.Sprintf("tid %d belongs to process %d (%s), not to process %d", o.Tid, o.Thread.Proc.Pid, o.Thread.Proc.Exe, p.Pid))
		} else {
			d.Summary = fmt.Sprintf("%s: it exited without unlocking", Step(first))
			d.Chain = []string{fmt.Sprintf("%s records thread %d as its owner; process %d has no thread %d: it exited while holding the lock", mutexLabel(m), o.Tid, p.Pid, o.Tid)}
			d.Evidence = append(d.Evidence, fmt.Sprintf("thread %d is not among the %d threads of process %d", o.Tid, len(p.Threads), p.Pid))
		}
		if p.Fork != nil {
			d.Chain = append(d.Chain, fmt.Sprintf("process %d is a forked child, but thread %d is not among parent %d's threads either: it may have been a parent thread that exited since; either way nothing will unlock the child's copy", p.Pid, o.Tid, p.Fork.ParentPid))
			d.Evidence = append(d.Evidence, lineage(p))
		}
		if m.Kind&kindRobust != 0 {
			d.Chain = append(d.Chain, "the mutex is robust: when its owner died the next locker should have got EOWNERDEAD and called pthread_mutex_consistent; threads still waiting mean the robust protocol was not followed (the owner died in a way the kernel's robust list did not record, or the mutex was not made consistent)")
		}
		for _, w := range l.Waiters {
			d.Chain = append(d.Chain, Step(Edge{Kind: EdgeMutex, From: w, Lock: l}))
			d.Evidence = append(d.Evidence, stackLine(w.Thread))
		}
		d.name(l.Waiters...)
		if o.Kind == OwnerGone {
			d.Tids = appendNew(d.Tids, o.Tid)
		}
		ds = append(ds, d)
	}
	return append(ds, matchGoLeftLocked(a)...)
}
