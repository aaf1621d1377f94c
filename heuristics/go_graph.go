package heuristics

import "github.com/hangdoc/hangdoc/stacks"

// GoWait is one goroutine's wait on a known object, as the graph
// renderers draw it: goroutine → object → the goroutines that may hold
// it (inferred: Go mutexes record no owner).
type GoWait struct {
	Goroutine ThreadRef
	Object    uint64
	// Kind is the stacks.GoWait* kind: a lock, a WaitGroup, a channel.
	Kind    string
	Holders []ThreadRef // for a lock wait, the goroutines that may hold it
}

// GoWaits lists the goroutines of the program (not the runtime's own)
// that wait on an object whose address is known, in snapshot order.
func (a *analysis) GoWaits() []GoWait {
	var out []GoWait
	for _, gp := range goProcs(a) {
		objs := map[uint64]bool{}
		var ws []*gor
		for _, g := range gp.user() {
			if g.obj == 0 || g.kind == "" || g.kind == goRunning || g.kind == stacks.GoWaitSelect {
				continue
			}
			ws = append(ws, g)
			if isGoLockWait(g.kind) {
				objs[g.obj] = true
			}
		}
		holders := goHolders(gp, objs)
		for _, g := range ws {
			w := GoWait{Goroutine: g.ref, Object: g.obj, Kind: g.kind}
			if isGoLockWait(g.kind) {
				for _, s := range holders[g.obj] {
					w.Holders = append(w.Holders, s.holder.ref)
				}
			}
			out = append(out, w)
		}
	}
	return out
}
