package heuristics

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "sleeping",
		Title: "Not a deadlock: the process sleeps on a timer",
		Explain: `No thread runs, none waits on I/O and none is stuck on a lock: threads sleep
in nanosleep, clock_nanosleep, pause, sleep, usleep, or a select without fds.
They wake up by themselves. Given only to a process that no deadlock signature
claims.`,
		Fix: `Nothing is deadlocked: the process sleeps and will wake up. If it should be
working, look at why it sleeps: a retry or back-off loop, a rate limit, a poll
interval, or a sleep-and-check loop waiting for something another process
should do.`,
		Derived: true,
		Rank:    130,
		Match:   matchCalm("sleeping", sleepingDiagnosis),
	})
}

func sleepingDiagnosis(a *analysis, p *stacks.Process, all []threadFacts) Diagnosis {
	var sl []threadFacts
	for _, f := range all {
		if f.kind == wkSleep {
			sl = append(sl, f)
		}
	}
	d := Diagnosis{Confidence: High, Deadlock: false, Refs: []string{}}
	d.nameIn(p, factTids(sl)...)
	var names []string
	calls := map[string]bool{}
	var callList []string
	kernel := true
	for _, f := range sl {
		names = append(names, f.label())
		if !calls[f.call] {
			calls[f.call] = true
			callList = append(callList, "`"+f.call+"`")
		}
		if f.lastWait() == nil {
			kernel = false
		}
	}
	if !kernel {
		d.Confidence = Medium
	}
	if !kernel && !sleepCallerShown(sl) {
		// gdb's `info threads` table gives one frame a thread: who
		// sleeps, and why (a poll loop waiting for the other threads to
		// finish work they may never be woken for), is not shown
		d.Confidence = Low
	}
	verb := "sleeps"
	if len(sl) > 1 {
		verb = "sleep"
	}
	who := strings.Join(limitList(names, 3), ", ")
	if len(sl) == 2 {
		who = names[0] + " and " + names[1]
	}
	d.Summary = fmt.Sprintf("not a deadlock, sleeping on a timer: %s %s in %s", who, verb, strings.Join(callList, ", "))
	skip := map[int]bool{}
	for _, f := range sl {
		skip[f.t.Tid] = true
		d.Chain = append(d.Chain, fmt.Sprintf("%s sleeps in `%s`", f.label(), f.call)+f.calledFrom())
		d.Evidence = append(d.Evidence, f.stackEvidence())
	}
	behind := heldAcrossWait(a, p, sl)
	skipBehind(&d, behind, skip)
	for _, o := range othersText(all, skip) {
		d.Chain = append(d.Chain, o)
	}
	if len(behind) > 0 {
		d.Fix = fmt.Sprintf("Do not sleep holding %s: release it before the sleep (a retry or back-off loop under a lock makes every thread that needs it wait as long), "+
			"or wait on a condition variable that releases it.", lockName(behind[0]))
	}
	return d
}

// sleepCallerShown: some sleeper's stack shows the code that called the
// sleep, not only the sleep itself.
func sleepCallerShown(sl []threadFacts) bool {
	for _, f := range sl {
		if len(f.lastStack()) > 1 {
			return true
		}
	}
	return false
}
