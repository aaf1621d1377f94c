package heuristics

import (
	"fmt"
	"sort"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "goroutine-leak",
		Title: "Goroutines pile up parked at one place: a leak",
		Explain: "Many goroutines, started at one go statement, are parked at one channel operation, select or " +
			"lock, most of them for a long time: each was meant to finish when a reply, a cancellation or a " +
			"close came, and it never did. The program may still work, but it grows until it runs out of " +
			"memory, and whatever the goroutines hold stays held.",
		Fix: "Give every goroutine a way to end: select on a context's Done channel (and cancel it), close the " +
			"channel they wait on, or make a reply channel buffered so the sender does not wait for a reader " +
			"that left. go.uber.org/goleak in tests catches the next one.",
		Rank:  70,
		Match: matchGoLeak,
	})
}

// goLeakMin is how many goroutines parked at one place make a leak on
// their own; goLeakShareMin sending at one place, over half the
// goroutines, for ten minutes or more, make one too.
const (
	goLeakMin      = 1000
	goLeakShareMin = 100
)

// goLeak is a group of goroutines parked at one place.
type goLeak struct {
	gs      []*gor
	creator stacks.Frame // the go statement most of them came from
	created int          // how many came from it
	minutes int          // the median of their wait minutes
	// pasted: found by goPastedLeaks in a few goroutines that stand for
	// more (low confidence).
	pasted bool
	// goleak: the goroutines goleak reported at the end of a test.
	goleak bool
}

// goLeaks groups the user goroutines blocked for ever by their stack
// (same functions, any argument: panicparse's "any pointer") and keeps
// the groups that are large.
func goLeaks(gp *goProc) []goLeak {
	users := gp.user()
	blocked := make([]*gor, 0, len(users))
	for _, g := range users {
		if g.blockedForever() || g.parkedUnknown() {
			blocked = append(blocked, g)
		}
	}
	if len(blocked) < goLeakShareMin {
		return nil
	}
	var out []goLeak
	// grouped as they are, not by their threads and a map back to them
	// (1.5 MB at 47,000 goroutines)
	for _, grp := range stacks.GroupBy(blocked, func(g *gor) *stacks.Thread { return g.ref.Thread }) {
		n := len(grp.Threads)
		if n < goLeakShareMin {
			break // largest first
		}
		l := goLeak{gs: grp.Threads}
		mins := make([]int, 0, n)
		// creators by their go statement (a struct key: a string made per
		// goroutine was most of this pass's garbage on a large dump)
		creators := map[goCreatorKey]int{}
		frames := map[goCreatorKey]stacks.Frame{}
		for _, g := range grp.Threads {
			mins = append(mins, g.rt().WaitMinutes)
			cf := g.rt().CreatedBy
			k := goCreatorKey{cf.Func, cf.File, cf.Line}
			creators[k]++
			frames[k] = cf
		}
		sort.Ints(mins)
		l.minutes = mins[n/2]
		for k, c := range creators {
			if c > l.created || c == l.created && goCreatorText(frames[k]) < goCreatorText(l.creator) {
				l.created, l.creator = c, frames[k]
			}
		}
		// Fewer, but most of the program's goroutines, all stuck sending
		// for ten minutes: results nobody collects. (Idle workers wait in
		// a receive or a select: a pool of a few hundred is not a leak.)
		if n < goLeakMin && !(2*n > len(users) && l.minutes >= 10 && l.gs[0].kind == stacks.GoWaitSend) {
			continue
		}
		if l.created*2 < n {
			continue // started from many places: a pool, not a leak from one go statement
		}
		out = append(out, l)
	}
	return out
}

// goCreatorKey is a go statement: the creating frame's function and place.
type goCreatorKey struct {
	fn, file string
	line     int
}

// goCreatorText orders creators that started as many goroutines.
func goCreatorText(f stacks.Frame) string { return fmt.Sprintf("%s %s:%d", f.Func, f.File, f.Line) }

// goPastedLeaks finds, in a dump too small for goLeaks (a paste of a
// few goroutines standing for many), two goroutines or more parked in
// one function, at least one in a plain channel send for
// goLongSendMinutes or more, the others sending too or cut before their
// status, and nothing running. Idle workers wait in a receive or a
// select, never in a send: a send that waits that long has lost its
// receiver, and several at one place are a pile.
func goPastedLeaks(gp *goProc) []goLeak {
	users := gp.user()
	if len(users) >= goLeakShareMin || goAnyRuns(users) {
		return nil
	}
	byPlace := map[string][]*gor{}
	var order []string
	for _, g := range users {
		if g.kind != stacks.GoWaitSend && !(g.kind == "" && g.rt().Status == "") {
			continue
		}
		pl := g.place()
		if pl == "" {
			continue
		}
		if byPlace[pl] == nil {
			order = append(order, pl)
		}
		byPlace[pl] = append(byPlace[pl], g)
	}
	var out []goLeak
	for _, pl := range order {
		gs := byPlace[pl]
		long := -1
		for i, g := range gs {
			if g.kind == stacks.GoWaitSend && g.rt().WaitMinutes >= goLongSendMinutes && (long < 0 || g.rt().WaitMinutes > gs[long].rt().WaitMinutes) {
				long = i
			}
		}
		if len(gs) < 2 || long < 0 {
			continue
		}
		gs[0], gs[long] = gs[long], gs[0] // the one that says what they wait on speaks for them
		l := goLeak{gs: gs, minutes: gs[0].rt().WaitMinutes, pasted: true}
		for _, g := range gs {
			if cf := g.rt().CreatedBy; cf.Func != "" && l.creator.Func == "" {
				l.creator = cf
			}
		}
		for _, g := range gs {
			if g.rt().CreatedBy.Func == l.creator.Func || g.rt().CreatedBy.Func == "" {
				l.created++
			}
		}
		out = append(out, l)
	}
	return out
}

// goleakLeaks: a dump that is go.uber.org/goleak's report lists only the
// goroutines a test left running: they leaked, by the tool's check at
// the end of the test, wherever they wait.
func goleakLeaks(gp *goProc) []goLeak {
	if gp.p.Message != stacks.GoLeakMessage {
		return nil
	}
	l := goLeak{goleak: true}
	for _, g := range gp.user() {
		l.gs = append(l.gs, g)
		if l.creator.Func == "" {
			l.creator = g.rt().CreatedBy
		}
		if g.rt().CreatedBy.Func == l.creator.Func {
			l.created++
		}
	}
	if len(l.gs) == 0 {
		return nil
	}
	return []goLeak{l}
}

func matchGoLeak(a *analysis) []Diagnosis {
	return perGoProc(a, func(gp *goProc) []goLeak {
		if ls := goleakLeaks(gp); len(ls) > 0 {
			return ls
		}
		return append(goLeaks(gp), goPastedLeaks(gp)...)
	}, goLeakDiagnosis)
}

func goLeakDiagnosis(gp *goProc, l goLeak) Diagnosis {
	g := l.gs[0]
	sort.Slice(l.gs, func(i, j int) bool { return l.gs[i].ref.Thread.Tid < l.gs[j].ref.Thread.Tid })
	d := Diagnosis{Deadlock: true, Confidence: Medium,
		Refs: []string{"https://github.com/uber-go/goleak", "https://go.dev/blog/pipelines"}}
	d.nameGoroutines(l.gs...)
	if (l.minutes == 0 || l.pasted) && !l.goleak { // goleak checked at the test's end that they outlived it
		d.Confidence = Low // parked under a minute: a burst may yet drain; or a few goroutines of a paste
	}
	n := len(l.gs)
	d.Summary = fmt.Sprintf("%d goroutines are parked at one place (%s) in %s", n, g.rt().Status, g.where())
	if l.creator.Func != "" {
		d.Summary += fmt.Sprintf(", started by %s", frameAt(l.creator))
	}
	if l.minutes > 0 {
		d.Summary += fmt.Sprintf(", for %d minutes or more (median)", l.minutes)
	}
	if l.goleak {
		d.Summary = fmt.Sprintf("goleak found %d goroutines left running after the test, in %s", n, g.where())
		if l.creator.Func != "" {
			d.Summary += fmt.Sprintf(", started by %s", frameAt(l.creator))
		}
		for _, o := range l.gs {
			d.Chain = append(d.Chain, o.label()+" "+o.waitText())
		}
		d.Chain = limitList(d.Chain, 8)
		d.Chain = append(d.Chain, "goleak lists the goroutines that outlived the test: each was meant to end (a close, a cancellation, a reply) and did not")
		d.Evidence = append(d.Evidence, g.stackLine(), "the dump is go.uber.org/goleak's report: it checked at the end of the test that these goroutines were still running")
		d.Fix = fmt.Sprintf("Give the goroutines started by %s a way to end when their owner is done: close the channel they "+
			"receive from, or select on a context's Done channel and cancel it in the owner's Close.", frameAt(l.creator))
		return d
	}
	if l.pasted {
		d.Summary = fmt.Sprintf("goroutines pile up in `%s`: %d of the dump are parked there, %s for %d minutes or more in a "+
			"channel send no goroutine of the dump receives", frameName(stacks.Frame{Func: g.place()}), n, g.label(), l.minutes)
		d.Chain = append(d.Chain, g.label()+" "+g.waitText())
		for _, o := range l.gs[1:] {
			d.Chain = append(d.Chain, fmt.Sprintf("%s is parked in the same function (%s)", o.label(), goUserFrames(o.ref.Thread.Stack, 0, 2)))
		}
		if l.creator.Func != "" {
			d.Chain = append(d.Chain, fmt.Sprintf("they were started by %s", frameAt(l.creator)))
		}
		d.Chain = append(d.Chain, "a send that waits that long has lost its receiver; several parked at one place are a pile that grows with each call")
		d.Evidence = append(d.Evidence, g.stackLine(),
			"the dump holds a few goroutines standing for more (a paste): a full dump (SIGQUIT, or "+
				"/debug/pprof/goroutine?debug=1, which counts the goroutines at each stack) shows how many pile up")
		d.Fix = fmt.Sprintf("The goroutines parked in `%s` never end: make the channel they send on buffered when its reader may "+
			"leave, or select on the send together with a context's Done channel; test for leaks with go.uber.org/goleak.", g.place())
		return d
	}
	d.Chain = append(d.Chain,
		fmt.Sprintf("%d of %d goroutines of the program wait here, same stack: %s", n, len(gp.user()),
			goUserFrames(g.ref.Thread.Stack, g.wait.Caller, 4)))
	starter := "The goroutines parked there" // a profile does not say who started them
	if l.creator.Func != "" {
		d.Chain = append(d.Chain, fmt.Sprintf("%d of them were started by %s", l.created, frameAt(l.creator)))
		starter = "The goroutines started by " + frameAt(l.creator)
	}
	d.Chain = append(d.Chain, fmt.Sprintf("goroutines %s", goIDRange(l.gs)))
	if l.minutes > 0 {
		d.Chain = append(d.Chain, fmt.Sprintf("half of them have waited %d minutes or more", l.minutes))
	}
	var working []string
	for _, o := range gp.user() {
		if !o.blockedForever() && !o.parkedUnknown() {
			working = append(working, o.label()+" "+o.waitText())
		}
	}
	if len(working) > 0 {
		d.Chain = append(d.Chain, "the rest of the program goes on:")
		d.Chain = append(d.Chain, limitList(working, 3)...)
	}
	d.Evidence = append(d.Evidence, g.stackLine(), fmt.Sprintf("%d goroutines share this stack (any argument)", n))
	d.Fix = fmt.Sprintf("%s never end: give them a way out in %s (select on a "+
		"context's Done channel and cancel it when the request ends, close the channel they wait on, or make "+
		"the reply channel buffered), and test for leaks with go.uber.org/goleak.", starter, g.where())
	return d
}

// goIDRange shows goroutine ids compactly: "20–1019 (1000)".
func goIDRange(gs []*gor) string {
	lo, hi := gs[0].ref.Thread.Tid, gs[len(gs)-1].ref.Thread.Tid
	if hi-lo+1 == len(gs) {
		return fmt.Sprintf("%d–%d (%d)", lo, hi, len(gs))
	}
	return fmt.Sprintf("%d to %d (%d, not contiguous)", lo, hi, len(gs))
}
