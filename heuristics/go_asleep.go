package heuristics

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "all-goroutines-asleep",
		Title: "Every goroutine is blocked; only timers hide it from the Go runtime",
		Explain: "The Go runtime aborts with \"fatal error: all goroutines are asleep - deadlock!\" when no " +
			"goroutine can run and no timer is pending. A ticker, a sleeping poll loop or a pending time.After " +
			"keeps that check quiet: the program then hangs instead, every goroutine parked on a mutex, a " +
			"channel or a WaitGroup. Given when no more precise Go signature explains the goroutines.",
		Fix: "Follow the chain: each goroutine waits on something another blocked goroutine would have to do. " +
			"Break the cycle (unlock, send, close or call Done on the path that returns early), and give the " +
			"waits a way out (a context with a deadline, select on ctx.Done()).",
		Derived: true,
		Rank:    85,
		Match:   matchGoAllAsleep,
	})
}

// goAsleepFinding is a Go process where no user goroutine can run.
type goAsleepFinding struct {
	blocked, timers []*gor
	// pollers wait on the network poller: traffic could wake them, but
	// not the blocked ones, which have waited a minute or more.
	pollers     []*gor
	runtimeSaid bool // the runtime's own detector fired
}

// goAsleep reports a process whose user goroutines are all blocked on
// sync objects, channels or selects, or sleeping (the timers): nothing
// runs, nothing waits on I/O. A program idle by design waits like that
// too (workers in a select for jobs), so it takes a wait that idleness
// does not explain: a lock, a WaitGroup or a channel send, or the
// runtime's own message, or a test that timed out. Goroutines on the
// network poller (a listener's accept loop) are allowed beside a lock,
// WaitGroup or send blocked a minute or more: traffic wakes them, not
// the blocked ones.
func goAsleep(gp *goProc) *goAsleepFinding {
	if gp.fragment() {
		return nil // "every goroutine" cannot be read from some of them
	}
	f := &goAsleepFinding{runtimeSaid: strings.Contains(gp.p.Message, "all goroutines are asleep")}
	telling, long := false, false
	f.blocked = make([]*gor, 0, len(gp.user())) // grown, 3.2 MB of garbage at 47,000 goroutines
	for _, g := range gp.user() {
		switch {
		case g.blockedForever():
			f.blocked = append(f.blocked, g)
			switch g.kind {
			case stacks.GoWaitMutex, stacks.GoWaitRLock, stacks.GoWaitWLock, stacks.GoWaitWaitGroup, stacks.GoWaitSend:
				telling = true
				long = long || g.rt().WaitMinutes > 0
			}
		case g.kind == stacks.GoWaitSleep:
			f.timers = append(f.timers, g)
		case g.kind == stacks.GoWaitIO:
			f.pollers = append(f.pollers, g)
		case g.kind == "" && g.rt().Status == "semacquire":
			f.blocked = append(f.blocked, g)
			telling = true
		default:
			return nil // it runs, waits on I/O, or on what hangdoc does not know
		}
	}
	if len(f.blocked) == 0 || !telling && !f.runtimeSaid || len(f.pollers) > 0 && !long {
		return nil
	}
	return f
}

func matchGoAllAsleep(a *analysis) []Diagnosis {
	var ds []Diagnosis
	for _, gp := range goProcs(a) {
		f := goAsleep(gp)
		if f == nil {
			continue
		}
		// The precise signatures say more; this one is for what they do
		// not explain.
		if len(goLockCycles(gp)) > 0 || len(goSelfDeadlocks(gp)) > 0 || len(goOrphanedChannels(gp)) > 0 ||
			len(goStuckWaitGroups(gp)) > 0 || len(goLeaks(gp)) > 0 {
			continue
		}
		ds = append(ds, goAsleepDiagnosis(gp, f))
	}
	return ds
}

func goAsleepDiagnosis(gp *goProc, f *goAsleepFinding) Diagnosis {
	d := Diagnosis{Deadlock: true, Confidence: Medium,
		Refs: []string{"https://go.dev/ref/spec#Channel_types", "https://pkg.go.dev/sync"}}
	d.nameGoroutines(f.blocked...)
	minutes := 0
	for _, g := range f.blocked {
		minutes = max(minutes, g.rt().WaitMinutes)
	}
	switch {
	case f.runtimeSaid:
		d.Confidence = High // the runtime checked that nothing can run
		d.Summary = fmt.Sprintf("the Go runtime found every goroutine asleep: %d goroutines blocked for ever", len(f.blocked))
	case strings.HasPrefix(gp.p.Message, "panic: test timed out"):
		d.Summary = fmt.Sprintf("the test hung: every goroutine is blocked (%d), none runs", len(f.blocked))
	default:
		if minutes == 0 || len(f.pollers) > 0 {
			d.Confidence = Low // parked under a minute, or traffic may yet change things
		}
		d.Summary = fmt.Sprintf("every goroutine is blocked for ever (%d) and none runs", len(f.blocked))
		if len(f.pollers) > 0 {
			d.Summary = fmt.Sprintf("every goroutine is blocked for ever (%d) but %d on the network poller, and none runs",
				len(f.blocked), len(f.pollers))
		}
		if len(f.timers) > 0 {
			d.Summary += fmt.Sprintf("; only %s keeps the runtime from reporting \"all goroutines are asleep\"",
				timersText(f.timers))
		}
	}
	var chain []string
	for _, g := range f.blocked {
		chain = append(chain, g.label()+" "+g.waitText())
		d.Evidence = append(d.Evidence, g.stackLine())
	}
	d.Chain = limitList(chain, 8)
	for _, g := range f.timers {
		d.Chain = append(d.Chain, g.label()+" "+g.waitText()+": a timer, the only thing that still wakes")
	}
	var polls []string
	for _, g := range f.pollers {
		polls = append(polls, g.label()+" "+g.waitText()+": traffic would wake it, not the goroutines above")
	}
	d.Chain = append(d.Chain, limitList(polls, 3)...)
	d.Evidence = limitList(d.Evidence, 8)
	if msg := runtimeMessage(gp.p); msg != "" {
		d.Evidence = append(d.Evidence, "the runtime said: "+msg)
	}
	switch {
	case f.runtimeSaid:
	case len(f.pollers) > 0:
		d.Evidence = append(d.Evidence, "no user goroutine runs or is in a system call; those on the network poller "+
			"wake on traffic, which the blocked goroutines do not wait for")
	default:
		d.Evidence = append(d.Evidence, "no user goroutine runs, none waits on I/O or in a system call")
	}
	return d
}

func timersText(ts []*gor) string {
	if len(ts) == 1 {
		return ts[0].label() + "'s sleep"
	}
	return fmt.Sprintf("the sleep of %d goroutines", len(ts))
}
