package heuristics

// A join that the paste holds alone. A thread waits for another to exit
// (pthread_join, std::thread::join) and the paste holds only the joiner:
// the joined thread is not in it, so nothing shows why it does not exit.
// The hang people paste this way is most often a join made while holding
// a lock the joined thread needs on its way out (a stop or teardown path
// run under a component's lock): the joiner waits for the thread, the
// thread for the lock, a cycle through a lock and a join. Hedged (low):
// the joined thread's stack settles it (a lock wait: the cycle; a wait
// for a stop flag or a condition: a lost wake-up; work: slow progress).

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

// loneJoiner finds a process of a paste whose one thread waits to join
// a thread the paste does not hold, with no timeout, and none runs.
func loneJoiner(a *analysis, p *stacks.Process) (ThreadRef, bool) {
	if p.Exited || a.allThreads(p) || p.Fork != nil {
		return ThreadRef{}, false // every thread is in the snapshot: the joined one's own verdict speaks
	}
	ts := a.distinct(p)
	if len(ts) != 1 {
		return ThreadRef{}, false
	}
	t := ts[0]
	class, caller := a.wait(t)
	if class != waitJoin || a.running(t) || isTimedWait(t.Stack, caller) {
		return ThreadRef{}, false
	}
	if w := threadWait(t); w != nil && w.JoinTid != 0 {
		if _, ok := a.threadIn(p, w.JoinTid); ok {
			return ThreadRef{}, false
		}
	}
	return ThreadRef{Proc: p, Thread: t}, true
}

func loneJoinerDiagnosis(a *analysis, r ThreadRef) Diagnosis {
	t := r.Thread
	_, caller := a.wait(t)
	asker := "?"
	if caller < len(t.Stack) {
		asker = frameName(t.Stack[caller])
	}
	d := Diagnosis{Deadlock: true, Confidence: Low, Refs: lockOrderRefs}
	d.name(r)
	d.Summary = fmt.Sprintf("%s waits in %s for a thread to exit that the paste does not show: a join that never returns is most often made while holding a lock the joined thread needs on its way out (a lock and a join taken in opposite orders)",
		threadLabel(t), waitSite(t))
	d.Chain = []string{
		fmt.Sprintf("%s joins a thread (`%s` asks), with no timeout", threadLabel(t), asker),
		"the joined thread has not exited, and its stack is not in the paste",
		"the usual cause: the joiner holds a lock (taken further down its stack, in the caller that started the stop or teardown) that the joined thread waits for before it can exit",
	}
	d.Evidence = []string{stackLine(t),
		"the joined thread's stack would settle it (gdb `thread apply all bt`): waiting for a lock this thread holds is the cycle; waiting for a stop flag or a condition that nobody will signal is a lost wake-up; still working is slow progress"}
	d.Fix = "Do not join a thread while holding a lock it may take: release the lock before the join (signal the thread to stop, unlock, then join), or have the thread's exit path avoid the lock."
	return d
}
