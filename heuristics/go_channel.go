package heuristics

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "channel-no-partner",
		Title: "A goroutine sends or receives on a channel no live goroutine can reach",
		Explain: "An unbuffered channel send waits for a receiver, a receive for a sender. When the goroutine that " +
			"made the channel has left the function that made it (a caller that gave up after a timeout and " +
			"returned) and no other goroutine holds the channel, nobody will ever take the other side: the " +
			"goroutine and everything it references leak for ever. A send or receive on a nil channel blocks " +
			"for ever by definition.",
		Fix: "Give the channel a buffer of one when the receiver may give up (make(chan T, 1)), or select on the " +
			"send with a context's Done channel; close channels the receivers range over; never send on a nil channel.",
		Rank:  42,
		Match: matchGoChannelNoPartner,
	})
}

// goOrphan is a goroutine blocked on a channel that nobody can complete.
type goOrphan struct {
	g       *gor
	nilChan bool
	// runtimeProved: the runtime found every goroutine asleep while
	// every blocked one waits on a channel: nobody can ever take the
	// other side, whoever made the channel.
	runtimeProved bool
	// creatorLeft says how the goroutine's creator left the channel
	// behind ("goroutine 1 has left `main.get`").
	creatorLeft string
	// longSend: a plain send parked goLongSendMinutes or more, in a dump
	// that does not say who made the channel (a paste of the goroutine
	// alone), while nothing runs that could receive.
	longSend bool
	// allAsleep: no user goroutine runs, waits on I/O or sleeps on a
	// timer, and every blocked one waits on a channel (goAsleep without
	// the runtime's word): nobody is left to receive what it sends.
	// cut: the dump may not hold every goroutine.
	allAsleep, cut bool
}

// goLongSendMinutes is how long a plain channel send must have waited to
// be taken for one nobody will receive, when the dump cannot show who
// made the channel. A receive is never judged so: timers, signals and
// idle work queues feed receives after any wait.
const goLongSendMinutes = 10

// goOrphanedChannels finds goroutines in a channel send or receive (not a
// select) that no live goroutine can complete: on a nil channel, or on a
// channel made by a function their creator has returned from, which no
// other goroutine received as an argument and no sibling made in the
// same place still runs with.
func goOrphanedChannels(gp *goProc) []goOrphan {
	var out []goOrphan
	users := gp.user()
	if gp.p.Message == stacks.GoLeakMessage {
		return nil // goleak's report: goroutine-leak names them
	}
	if onlyChannelsAsleep(gp, users) {
		for _, g := range users {
			if g.kind == stacks.GoWaitSend || g.kind == stacks.GoWaitRecv {
				out = append(out, goOrphan{g: g, runtimeProved: true})
			}
		}
		return out
	}
	if out := asleepSends(gp); len(out) > 0 {
		return out
	}
	notifiers := goSignalNotifiers(gp)
	piled := map[*gor]bool{} // a pile of them is a leak (goPastedLeaks), which says more
	for _, l := range goPastedLeaks(gp) {
		for _, g := range l.gs {
			piled[g] = true
		}
	}
	reach := newGoReach(users)
	anyRuns := goAnyRuns(users)
	for _, g := range users {
		switch {
		case strings.Contains(g.rt().Status, "(nil chan)"):
			out = append(out, goOrphan{g: g, nilChan: true})
			continue
		case g.kind != stacks.GoWaitSend && g.kind != stacks.GoWaitRecv:
			continue
		case g.kind == stacks.GoWaitRecv && notifiers[g.rt().CreatedByID]:
			continue // a signal may feed it (goSignalNotifiers)
		case g.kind == stacks.GoWaitRecv && notifiers[0] && g.rt().CreatedByID == 0 && g.rt().WaitMinutes == 0:
			continue // before Go 1.21 a dump names no creating goroutine: any recent receive may be a signal channel
		}
		cr := g.rt().CreatedBy.Func
		if cr == "" && g.kind == stacks.GoWaitSend && g.rt().WaitMinutes >= goLongSendMinutes && !piled[g] && !anyRuns && !reach.reached(g) {
			out = append(out, goOrphan{g: g, longSend: true})
			continue
		}
		if cr == "" {
			continue // the main goroutine: a signal.Notify channel, a timer, … may feed it
		}
		left, ok := goCreatorLeft(gp, g)
		if !ok {
			continue
		}
		if reach.reached(g) {
			continue
		}
		out = append(out, goOrphan{g: g, creatorLeft: left})
	}
	return out
}

// asleepSends are the plain sends of a process where every user
// goroutine is blocked for ever on a channel (a send, a receive, a
// select) and none runs, waits on I/O or sleeps on a timer (goAsleep):
// no goroutine will ever receive what they send. The send is the wait
// to name; "every goroutine asleep" is its consequence.
func asleepSends(gp *goProc) []goOrphan {
	f := goAsleep(gp)
	if f == nil || f.runtimeSaid || len(f.timers) > 0 || len(f.pollers) > 0 {
		return nil // the runtime's word: onlyChannelsAsleep; a timer or traffic may yet wake one
	}
	cut := false
	for _, g := range f.blocked {
		switch g.kind {
		case stacks.GoWaitSend, stacks.GoWaitRecv, stacks.GoWaitSelect:
		default:
			return nil // a lock or a WaitGroup: their own signatures say more
		}
		cut = cut || stacks.StackCut(g.ref.Thread)
	}
	var out []goOrphan
	for _, g := range f.blocked {
		if g.kind == stacks.GoWaitSend {
			out = append(out, goOrphan{g: g, allAsleep: true, cut: cut})
		}
	}
	return out
}

// onlyChannelsAsleep: the runtime reported "all goroutines are asleep"
// and every user goroutine it stopped waits in a plain channel send or
// receive or a select — no lock or WaitGroup, whose own signatures say
// more — with at least one plain send or receive to name.
func onlyChannelsAsleep(gp *goProc, users []*gor) bool {
	if !strings.Contains(gp.p.Message, "all goroutines are asleep") {
		return false
	}
	plain := false
	for _, g := range users {
		switch g.kind {
		case stacks.GoWaitSend, stacks.GoWaitRecv:
			plain = true
		case stacks.GoWaitSelect:
		default:
			if !strings.Contains(g.rt().Status, "chan ") {
				return false
			}
		}
	}
	return plain
}

// goSignalNotifiers are the goroutines that started os/signal's loop:
// they called signal.Notify, whose channel the signal handler reaches
// from then on, whoever else holds it. A receive they started (cmd/go's
// processSignals: Notify, then go func() { <-sig }()) may be fed by a
// signal. Known from Go 1.21 on, whose dumps name the creating goroutine;
// before, the map holds 0: some goroutine called signal.Notify.
func goSignalNotifiers(gp *goProc) map[int]bool {
	out := map[int]bool{}
	for _, g := range gp.all {
		if strings.HasPrefix(g.rt().CreatedBy.Func, "os/signal.Notify") {
			out[g.rt().CreatedByID] = true // 0: signal.Notify was called, by a goroutine the dump does not name
		}
	}
	return out
}

// goCreatorLeft reports whether the goroutine that started g is gone or
// no longer in the function with the go statement, which made (or held)
// the channel.
func goCreatorLeft(gp *goProc, g *gor) (string, bool) {
	cr := g.rt().CreatedBy.Func
	inFunc := func(c *gor) bool {
		for _, f := range c.ref.Thread.Stack {
			if f.Func == cr {
				return true
			}
		}
		return false
	}
	if id := g.rt().CreatedByID; id != 0 {
		c := gp.byTid(id)
		switch {
		case c == nil:
			return fmt.Sprintf("goroutine %d, which started it in `%s`, has exited", id, cr), true
		case inFunc(c):
			return "", false
		}
		return fmt.Sprintf("goroutine %d, which started it in `%s`, has returned from it (it is now in %s)",
			id, cr, c.where()), true
	}
	for _, c := range gp.all {
		if c != g && inFunc(c) {
			return "", false
		}
	}
	return fmt.Sprintf("no goroutine is still in `%s`, which started it", cr), true
}

// goChannelReached: another live goroutine could take the other side: a
// frame of it received the channel, or it is a sibling started by the
// same go statement's function that is not blocked the same way on it.
func goChannelReached(users []*gor, g *gor) bool {
	for _, o := range users {
		if o == g {
			continue
		}
		if g.obj != 0 && o.obj == g.obj && o.kind == g.kind {
			continue // blocked the same way on it: no partner
		}
		if g.obj != 0 {
			for _, f := range o.ref.Thread.Stack {
				if stacks.GoMachineryFrame(f.Func) {
					continue
				}
				for _, a := range f.Args {
					if v, ok := goPointerArg(a); ok && v == g.obj {
						return true
					}
				}
			}
		}
		sibling := o.rt().CreatedBy.Func == g.rt().CreatedBy.Func && o.rt().CreatedByID == g.rt().CreatedByID
		if sibling && o.kind != stacks.GoWaitSend && o.kind != stacks.GoWaitRecv {
			return true // started in the same place, not stuck on a channel of its own: it may hold this one
		}
	}
	return false
}

// goReach answers goChannelReached for the goroutines of users from one
// pass over them: a pass per goroutine asked was quadratic (1.8 s of
// CPU on the 300,000 goroutines of a 100 MB dump, most of them leaked
// sends no partner reaches).
type goReach struct {
	users []*gor
	refs  map[uint64]int    // goroutines a frame of which holds the value
	same  map[goObjKind]int // of those, the ones blocked on that object in that way
	open  map[goSite]int    // goroutines per go statement not in a plain send or receive
}

type goObjKind struct {
	obj  uint64
	kind string
}

type goSite struct {
	fn string
	by int
}

func newGoReach(users []*gor) *goReach {
	r := &goReach{users: users, refs: map[uint64]int{}, same: map[goObjKind]int{}, open: map[goSite]int{}}
	for _, o := range users {
		var held []uint64
		for _, f := range o.ref.Thread.Stack {
			if stacks.GoMachineryFrame(f.Func) {
				continue
			}
			for _, a := range f.Args {
				if v, ok := goPointerArg(a); ok && !slices.Contains(held, v) {
					held = append(held, v)
				}
			}
		}
		for _, v := range held {
			r.refs[v]++
			if o.obj == v {
				r.same[goObjKind{v, o.kind}]++
			}
		}
		if o.kind != stacks.GoWaitSend && o.kind != stacks.GoWaitRecv {
			r.open[goSite{o.rt().CreatedBy.Func, o.rt().CreatedByID}]++
		}
	}
	return r
}

// reached is goChannelReached(r.users, g). For a goroutine in a plain
// send or receive, the others that count are those whose frames hold
// its channel less those blocked on it the same way (g among them when
// it holds it itself), and its siblings in no plain send or receive
// (never g itself, nor blocked as it is).
func (r *goReach) reached(g *gor) bool {
	if g.kind != stacks.GoWaitSend && g.kind != stacks.GoWaitRecv {
		return goChannelReached(r.users, g)
	}
	if g.obj != 0 && r.refs[g.obj]-r.same[goObjKind{g.obj, g.kind}] > 0 {
		return true
	}
	return r.open[goSite{g.rt().CreatedBy.Func, g.rt().CreatedByID}] > 0
}

// goAnyRuns: a user goroutine runs, is runnable or in a system call.
func goAnyRuns(users []*gor) bool {
	for _, g := range users {
		if g.kind == goRunning {
			return true
		}
	}
	return false
}

func matchGoChannelNoPartner(a *analysis) []Diagnosis {
	return perGoProc(a, goOrphanedChannels, func(_ *goProc, o goOrphan) Diagnosis { return goOrphanDiagnosis(o) })
}

func goOrphanDiagnosis(o goOrphan) Diagnosis {
	g := o.g
	d := Diagnosis{Deadlock: true, Confidence: Medium,
		Refs: []string{"https://go.dev/ref/spec#Send_statements", "https://go.dev/wiki/CommonMistakes"}}
	d.nameGoroutines(g)
	op, verb := "send on", "send"
	if g.kind == stacks.GoWaitRecv || strings.Contains(g.rt().Status, "receive") {
		op, verb = "receive from", "receive"
	}
	d.Chain = append(d.Chain, g.label()+" "+g.waitText())
	d.Evidence = append(d.Evidence, g.stackLine())
	if o.nilChan {
		d.Confidence = High
		d.Summary = fmt.Sprintf("%s blocks for ever: a %s a nil channel in %s", g.label(), op, g.where())
		d.Chain = append(d.Chain, "a send or receive on a nil channel never proceeds")
		d.Fix = fmt.Sprintf("The channel used in %s is nil: make it (make(chan T)) before use, or set the select case "+
			"to nil only on purpose, when it must be disabled.", g.where())
		return d
	}
	if o.runtimeProved {
		d.Confidence = High // the runtime checked that no goroutine can run
		d.Summary = fmt.Sprintf("%s waits to %s %s in %s for ever: the Go runtime found every goroutine asleep, "+
			"so no goroutine will ever take the other side", g.label(), op, objText("channel", g.obj), g.where())
		d.Chain = append(d.Chain, "the runtime said: all goroutines are asleep - deadlock!",
			"every other goroutine is blocked on a channel too: none can "+map[string]string{"send": "receive", "receive": "send"}[verb])
		d.Fix = fmt.Sprintf("In %s the %s has no partner left: close the channel when the senders are done (a range "+
			"over it then ends), receive exactly as many values as were sent, or give it a buffer when the other "+
			"side may have gone.", g.where(), verb)
		return d
	}
	if o.allAsleep {
		d.Summary = fmt.Sprintf("%s waits to send on %s in %s, and no goroutine of the dump runs, waits on I/O or on a timer: every other one is blocked on a channel too, so none will ever receive it",
			g.label(), objText("a channel", g.obj), g.where())
		d.Chain = append(d.Chain,
			"a plain send (not in a select) waits for a receiver; every goroutine that could receive is blocked for ever itself",
			"nothing can wake them (no goroutine runs, none sleeps on a timer or waits on the network): the program is stuck for good")
		if o.cut {
			d.Confidence = Low
			d.Evidence = append(d.Evidence, "the paste is cut: goroutines after the cut could still receive; the whole dump (SIGQUIT, or /debug/pprof/goroutine?debug=2) would settle it")
		}
		d.Fix = fmt.Sprintf("In %s the send has no receiver: receive as many values as are sent (or close the channel and range over it), "+
			"give the channel a buffer when the receiver may be gone, or select on the send together with a context's Done channel.", g.where())
		return d
	}
	if o.longSend {
		d.Confidence = Low
		d.Summary = fmt.Sprintf("%s has waited %d minutes or more to send on %s in %s, and no goroutine of the dump "+
			"receives from it or runs: most likely its receiver gave up", g.label(), g.rt().WaitMinutes, objText("a channel", g.obj), g.where())
		d.Chain = append(d.Chain,
			"a plain send (not in a select) waits for a receiver; none of the goroutines shown waits to receive or runs",
			"the usual cause: the goroutine meant to receive returned (a timeout, an error path, a cancelled context) and "+
				"left the sender parked for ever")
		d.Evidence = append(d.Evidence, "the dump does not say who made the channel or started this goroutine, and may "+
			"not hold every goroutine: a full dump (SIGQUIT, or /debug/pprof/goroutine?debug=2) would show whether any "+
			"goroutine still holds the channel")
		d.Fix = fmt.Sprintf("In %s the send has no receiver left: make the channel buffered (make(chan T, 1)) when the "+
			"receiver may give up, or select on the send together with a context's Done channel.", g.where())
		return d
	}
	d.Summary = fmt.Sprintf("%s waits to %s %s that no live goroutine can reach: %s",
		g.label(), op, objText("channel", g.obj), o.creatorLeft)
	cf := g.rt().CreatedBy
	d.Chain = append(d.Chain,
		fmt.Sprintf("it was started by %s; %s", frameAt(cf), o.creatorLeft),
		"no other goroutine received the channel or was started there: nobody will take the other side")
	if g.kind == stacks.GoWaitRecv && g.rt().WaitMinutes == 0 {
		d.Confidence = Low // a timer's channel (time.Tick) is fed by the runtime, not a goroutine
		d.Evidence = append(d.Evidence, "blocked under a minute: a receive from a timer's channel would look the same")
	}
	d.Fix = fmt.Sprintf("In %s the other side gave up: make the channel buffered (make(chan T, 1)) so the %s "+
		"completes without it, or select on the operation together with a context's Done channel so the "+
		"goroutine can leave.", frameAt(cf), verb)
	return d
}
