package heuristics

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "waitgroup-never-done",
		Title: "sync.WaitGroup.Wait that no live goroutine can satisfy",
		Explain: "Wait returns when the counter reaches zero. When no goroutine that could call Done is left (the " +
			"workers have returned, Add was called once too often, a worker returned early without Done), the " +
			"counter never reaches zero and Wait blocks for ever.",
		Fix: "Call Add exactly once per goroutine started, right before its go statement (or use WaitGroup.Go, " +
			"Go 1.25), and Done in a defer at the top of the goroutine, so every return path counts.",
		Rank:  44,
		Match: matchGoWaitGroupNeverDone,
	})
}

// goStuckWG is a WaitGroup some goroutines wait on and no goroutine can
// call Done on.
type goStuckWG struct {
	obj     uint64
	waiters []*gor
}

// goStuckWaitGroups finds the WaitGroups waited on for which no other
// live goroutine could call Done: none received a pointer to it (or to
// the struct it is a field of), and none is a closure started from the
// function that waits (which could capture it). A named function started
// with no such argument cannot reach a WaitGroup local to the waiter.
func goStuckWaitGroups(gp *goProc) []goStuckWG {
	byObj := map[uint64][]*gor{}
	var order []uint64
	users := gp.user()
	for _, g := range users {
		if g.kind != stacks.GoWaitWaitGroup {
			continue
		}
		key := g.obj
		if key == 0 {
			key = uint64(g.ref.Thread.Tid) << 1 // unknown: each waiter alone, never equal to an address
			key |= 1
		}
		if byObj[key] == nil {
			order = append(order, key)
		}
		byObj[key] = append(byObj[key], g)
	}
	var out []goStuckWG
	for _, key := range order {
		ws := byObj[key]
		obj := key
		if key&1 == 1 {
			obj = 0
		}
		if goDoneReachable(users, ws, obj) {
			continue
		}
		out = append(out, goStuckWG{obj: obj, waiters: ws})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].waiters[0].ref.Thread.Tid < out[j].waiters[0].ref.Thread.Tid })
	return out
}

// goDoneReachable: some goroutine other than the waiters could call Done.
func goDoneReachable(users, waiters []*gor, obj uint64) bool {
	isWaiter := map[*gor]bool{}
	callers := map[string]bool{}
	for _, w := range waiters {
		isWaiter[w] = true
		if f, ok := w.callerFrame(); ok && w.wait.Caller < len(w.ref.Thread.Stack) {
			callers[f.Func] = true
		}
	}
	for _, o := range users {
		if isWaiter[o] {
			continue
		}
		if _, ok := mayHold(o, obj, 0); ok {
			return true
		}
		entry := goEntry(o)
		for fn := range callers {
			if strings.HasPrefix(entry, fn+".func") || strings.HasPrefix(entry, fn+".gowrap") {
				return true // a closure of the waiting function: it may have captured the WaitGroup
			}
		}
		if len(callers) == 0 {
			return true // the waiting frame is not in the dump: nothing to reason from
		}
	}
	return false
}

// goEntry is the function a goroutine started in: its outermost frame
// but the runtime's.
func goEntry(g *gor) string {
	st := g.ref.Thread.Stack
	for i := len(st) - 1; i >= 0; i-- {
		if fn := st[i].Func; fn != "runtime.goexit" && fn != "runtime.main" {
			return fn
		}
	}
	return ""
}

func matchGoWaitGroupNeverDone(a *analysis) []Diagnosis {
	return perGoProc(a, goStuckWaitGroups, goWaitGroupDiagnosis)
}

func goWaitGroupDiagnosis(gp *goProc, s goStuckWG) Diagnosis {
	w := s.waiters[0]
	d := Diagnosis{Deadlock: true, Confidence: Medium,
		Refs: []string{"https://pkg.go.dev/sync#WaitGroup"}}
	d.nameGoroutines(s.waiters...)
	who, verb := w.label(), "waits"
	if len(s.waiters) > 1 {
		who = fmt.Sprintf("%d goroutines (%s, …)", len(s.waiters), w.label())
		verb = "wait"
	}
	d.Summary = fmt.Sprintf("%s %s on %s in %s, and no live goroutine can call Done on it",
		who, verb, objText("sync.WaitGroup", s.obj), w.where())
	for _, g := range s.waiters {
		d.Chain = append(d.Chain, g.label()+" "+g.waitText())
		d.Evidence = append(d.Evidence, g.stackLine())
	}
	var others []string
	for _, o := range gp.user() {
		if o.kind != stacks.GoWaitWaitGroup || o.obj != s.obj {
			others = append(others, o.label()+" "+o.waitText())
		}
	}
	if len(others) == 0 {
		d.Chain = append(d.Chain, "no other goroutine of the program is alive: the workers have returned")
	} else {
		d.Chain = append(d.Chain, "the other goroutines are not workers of it (none received it, none is a closure "+
			"of the waiting function):")
		d.Chain = append(d.Chain, limitList(others, 5)...)
	}
	d.Evidence = append(d.Evidence, "a WaitGroup records no goroutines: that none can call Done is inferred from "+
		"the arguments and entry functions of the live ones (a WaitGroup in a global would escape this)")
	d.Fix = fmt.Sprintf("The counter of the WaitGroup waited on in %s never reaches zero: call Add once per "+
		"goroutine started, right before its go statement (or wg.Go, Go 1.25), and defer wg.Done() first thing "+
		"in each goroutine so that every return path counts.", w.where())
	return d
}
