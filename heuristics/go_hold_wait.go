package heuristics

// Hold-and-wait from one goroutine's stack: it waits to lock a sync
// mutex while a frame further down, which has not returned, holds a
// lock of its own (a vocabulary row of the holds role for Go: a
// database's write transaction, db.Update(func(tx) …)). A goroutine that
// holds A and waits for B is one half of a lock-order cycle; the other
// half (B's holder waiting for A) is often not in the paste. Said with
// low confidence, and only when nothing of the dump runs that could
// release B. Reported under lock-order-cycle (go_lock_cycle.go).

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

// goHeldScope is the frame of a goroutine that holds a lock while it
// runs, below its wait; -1 when none.
func goHeldScope(g *gor) int {
	for i := g.wait.Caller + 1; i < len(g.ref.Thread.Stack); i++ {
		if r := stacks.FrameRow(g.ref.Thread.Stack[i]); r != nil && r.Runtime == "go" && r.Role == stacks.RoleHolds {
			return i
		}
	}
	return -1
}

// goHoldWaits finds the lock waiters that hold a lock scope, when no
// user goroutine runs.
func goHoldWaits(gp *goProc) []goLockCycle {
	var out []goLockCycle
	for _, g := range gp.user() {
		if g.kind == goRunning {
			return nil
		}
	}
	for _, g := range gp.user() {
		if !isGoLockWait(g.kind) {
			continue
		}
		if i := goHeldScope(g); i >= 0 {
			out = append(out, goLockCycle{steps: []goLockStep{{waiter: g, obj: g.obj}}, scope: i})
		}
	}
	return out
}

func goHoldWaitDiagnosis(c goLockCycle) Diagnosis {
	g := c.steps[0].waiter
	scope := g.ref.Thread.Stack[c.scope]
	row := stacks.FrameRow(scope)
	d := Diagnosis{ID: "lock-order-cycle", Deadlock: true, Confidence: Low,
		Refs: []string{"https://pkg.go.dev/sync#Mutex", "https://github.com/sasha-s/go-deadlock"}}
	d.nameGoroutines(g)
	d.Summary = fmt.Sprintf("most likely a lock-order cycle: %s %s while it holds the %s of %s further down its stack",
		g.label(), g.waitText(), row.Family, frameAt(scope))
	d.Chain = append(d.Chain,
		g.label()+" "+g.waitText(),
		fmt.Sprintf("it has not returned from %s, which holds the %s while its callback runs", frameAt(scope), row.Family),
		"whoever holds the mutex may in turn wait for that lock: each waits for the other (the other goroutine is not in the dump, or its wait does not show the lock)")
	d.Evidence = append(d.Evidence, g.stackLine(), fmt.Sprintf("%s: %s", row.Family, row.Doc),
		"no goroutine of the dump runs that could release the mutex; Go mutexes record no owner, so the holder is not known: low confidence")
	d.Fix = fmt.Sprintf("Do not take the mutex inside the %s (%s): take it before the transaction begins, in the "+
		"order every other path uses, or do the locked work outside the callback. A lock-order checker "+
		"(sasha-s/go-deadlock) in tests finds the paths that take them the other way round.", row.Family, frameAt(scope))
	return d
}
