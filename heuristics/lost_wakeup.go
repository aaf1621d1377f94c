package heuristics

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "lost-wakeup",
		Title: "Every thread sleeps waiting to be woken, and nobody will",
		Explain: "All threads of the process sleep on condition variables, semaphores or futexes (or wait " +
			"behind them), none runs, and no lock cycle explains it. Whatever was to wake them already " +
			"happened before they waited (a signal with no waiter is lost), was skipped on an error path, " +
			"or belonged to a thread that exited.",
		Fix: "Wait in a loop on a predicate that the waker sets under the same mutex before it signals " +
			"(pthread_cond_signal with no waiter is lost; the predicate is not). Check that every path of " +
			"the producer signals, including errors and shutdown, that the thread meant to signal is still " +
			"alive, and use pthread_cond_broadcast when waiters wait for different conditions on one condvar.",
		Needs:   []string{"cpu"},
		Derived: true,
		Rank:    90,
		Match:   matchLostWakeup,
	})
}

// lostWakeup returns the threads of a process that all sleep, none
// running, at least one on a condvar, semaphore or futex; nil otherwise.
// timed is set when one of the waits has a timeout (it polls).
func (a *analysis) lostWakeup(p *stacks.Process) (sleepers, behind []*stacks.Thread, timed bool) {
	if p.Exited || a.LockDiagnosed(p) || !a.allThreads(p) {
		// a paste of one thread's stack: the thread that would wake it
		// may be any of those left out (an idle worker's `bt` reads so)
		return nil, nil, false
	}
	for _, t := range p.Threads {
		class, caller := a.wait(t)
		if a.running(t) {
			return nil, nil, false
		}
		switch class {
		case waitCond, waitPyLock:
			sleepers = append(sleepers, t)
		case waitLock, waitJoin, waitFutex:
			behind = append(behind, t) // waits for a thread that sleeps, or for nobody known
		default:
			return nil, nil, false
		}
		timed = timed || isTimedWait(t.Stack, caller)
	}
	if len(sleepers) == 0 {
		return nil, nil, false
	}
	return sleepers, behind, timed
}

func matchLostWakeup(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, p := range a.Snap.Processes {
		sleepers, behind, timed := a.lostWakeup(p)
		if sleepers == nil {
			continue
		}
		conf := Medium
		if !a.Snap.Evidence.CPU || timed {
			conf = Low // "none runs" is a guess, or a timed wait polls
		}
		also := ""
		if len(behind) > 0 {
			also = " or wait behind those that do"
		}
		d := Diagnosis{
			Deadlock:   true,
			Confidence: conf,
			Summary: fmt.Sprintf("process %d: all %d threads sleep (%s)%s and none runs: the wake-up they wait for was lost or will never come",
				p.Pid, len(p.Threads), describeSleep(sleepers), also),
			Refs: []string{
				"https://man7.org/linux/man-pages/man3/pthread_cond_wait.3p.html",
				"https://man7.org/linux/man-pages/man3/pthread_cond_signal.3p.html",
				"https://man7.org/linux/man-pages/man3/sem_wait.3.html",
			},
		}
		if fix, ref := sleepFix(sleepers); fix != "" {
			d.Fix, d.Refs = fix, []string{ref}
		}
		var refs []ThreadRef
		for _, t := range sleepers {
			d.Chain = append(d.Chain, threadLabel(t)+" "+a.Doing(t))
			refs = append(refs, ThreadRef{p, t})
		}
		for _, t := range behind {
			if es := a.WaitsFor(t); len(es) > 0 && es[0].To.Thread != nil {
				d.Chain = append(d.Chain, Step(es[0])+", which "+a.Doing(es[0].To.Thread))
			} else {
				d.Chain = append(d.Chain, threadLabel(t)+" "+a.Doing(t))
			}
			refs = append(refs, ThreadRef{p, t})
		}
		if j := exitJoiner(a, behind); j != nil {
			d.Chain = append(d.Chain, fmt.Sprintf("%s joins from the process's exit path (%s): the threads it joins were never told to stop", threadLabel(j), exitFrame(j)))
			d.Fix = "The exit path (a static object's destructor, an atexit handler, a module's cleanup) joins worker threads that still wait for work: " +
				"tell them to stop first (set the stop flag under their mutex and notify their condition variable, or post their semaphore), then join; " +
				"or stop the pool explicitly before main returns."
		}
		d.Chain = append(d.Chain, "no lock cycle, no lock owner that is gone or forked away, and no running thread explains the wait")
		if timed {
			d.Evidence = append(d.Evidence, "some waits have a timeout: those threads wake up and sleep again (a polling loop), which is less sure to be a hang")
		}
		if !a.Snap.Evidence.CPU {
			d.Evidence = append(d.Evidence, "no CPU figures: that no thread runs rests on the stacks alone")
		}
		for _, g := range stacks.GroupThreads(p.Threads) {
			line := stackLine(g.Threads[0])
			if n := len(g.Threads); n > 1 {
				line = fmt.Sprintf("%d threads like %s", n, line)
			}
			d.Evidence = append(d.Evidence, line)
		}
		d.name(refs...)
		ds = append(ds, d)
	}
	return ds
}

// describeSleep says what the sleepers sleep on ("condition variables
// and semaphores"), as the outermost wait frame of each tells.
func describeSleep(ts []*stacks.Thread) string {
	seen := map[string]bool{}
	var kinds []string
	for _, t := range ts {
		if k := sleepKind(t); !seen[k] {
			seen[k] = true
			kinds = append(kinds, k)
		}
	}
	return joinStrings(kinds)
}

func sleepKind(t *stacks.Thread) string {
	kind := "futexes"
	_, caller := waitOf(t)
	for _, f := range t.Stack[:min(caller, len(t.Stack))] {
		switch k := funcKey(f); {
		case isPyLockFrame(f):
			kind = "Python locks"
		case isBarrierFrame(f):
			kind = "barriers"
		case strings.HasPrefix(k, "sem_"), strings.HasPrefix(k, "new_sem_"), strings.Contains(strings.ToLower(k), "semaphore"):
			kind = "semaphores"
		case isCondFrame(f) && k != "do_futex_wait":
			kind = "condition variables"
		}
	}
	return kind
}

// isBarrierFrame: a barrier or latch wait (the vocabulary's
// pthread_barrier row), which no signal ends: only the last party.
func isBarrierFrame(f stacks.Frame) bool {
	r := nativeRow(f)
	return r != nil && r.Family == "pthread_barrier"
}

// sleepFix is the fix when every sleeper sleeps on one kind of object
// whose wake-up is not a condvar's signal: a semaphore's post, a
// barrier's last party. "" leaves the signature's condvar fix.
func sleepFix(sleepers []*stacks.Thread) (fix, ref string) {
	kind := ""
	for i, t := range sleepers {
		k := sleepKind(t)
		if i > 0 && k != kind {
			return "", ""
		}
		kind = k
	}
	switch kind {
	case "barriers":
		return "A barrier lets its threads go only when the number of parties it was made for has arrived, " +
				"and these are all that came: find the party that never arrives (it exited, returned on an error " +
				"path, or waits elsewhere), or make the count given to pthread_barrier_init (std::barrier, " +
				"std::latch) the number of threads that really wait on it.",
			"https://man7.org/linux/man-pages/man3/pthread_barrier_wait.3p.html"
	case "semaphores":
		return "A semaphore wait returns only after a post: check that every path of the thread meant to " +
				"post (errors and shutdown too) calls sem_post once per wait it owes, that it is still alive, " +
				"and the semaphore's initial count; a post made before the waiter started is kept, so the " +
				"missing post never happened.",
			"https://man7.org/linux/man-pages/man3/sem_post.3.html"
	}
	return "", ""
}

func joinStrings(xs []string) string {
	switch len(xs) {
	case 0:
		return ""
	case 1:
		return xs[0]
	}
	s := xs[0]
	for _, x := range xs[1 : len(xs)-1] {
		s += ", " + x
	}
	return s + " and " + xs[len(xs)-1]
}

// exitJoiner is the thread of behind that joins from the process's exit
// path (exit's handlers, a static destructor), nil if none.
func exitJoiner(a *analysis, behind []*stacks.Thread) *stacks.Thread {
	for _, t := range behind {
		if class, _ := a.wait(t); class == waitJoin && exitFrame(t) != "" {
			return t
		}
	}
	return nil
}

// exitFrame names the exit-path frame on t's stack: glibc's
// __run_exit_handlers or __cxa_finalize (atexit handlers and static
// destructors run under them), or "".
func exitFrame(t *stacks.Thread) string {
	for _, f := range t.Stack {
		switch k := funcKey(f); k {
		case "__run_exit_handlers", "run_exit_handlers", "__cxa_finalize", "_dl_fini":
			return "`" + k + "`"
		}
	}
	return ""
}
