package heuristics

// lock-order-cycle for goroutines: goroutines blocked on each other's
// sync.Mutex / sync.RWMutex. Registered under the native signature's id
// (lock_order_cycle.go calls matchGoLockCycle): one id, one entry in the
// catalogue, whatever the runtime.

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// goLockStep is one edge of a cycle: waiter waits for obj, which holder
// may hold (ev says why).
type goLockStep struct {
	waiter, holder *gor
	obj            uint64
	ev             holdEvidence
}

// goLockCycle is a cycle of lock waits; inferred is false for the
// fallback that found no holder at all.
type goLockCycle struct {
	steps    []goLockStep
	inferred bool
	// scope >= 0: a hold-and-wait of one goroutine (go_hold_wait.go),
	// the index of the frame that holds the other lock.
	scope int
	// writerPref: the fallback through an RWMutex's waiting writer
	// (goWriterPrefCycle): steps are a reader, the writer, and the
	// goroutines waiting on other locks.
	writerPref bool
}

func isGoLockWait(kind string) bool {
	return kind == stacks.GoWaitMutex || kind == stacks.GoWaitRLock || kind == stacks.GoWaitWLock
}

// goHolders finds, for each object some goroutine waits to lock, the
// goroutines that may hold it (mayHold over their frames that have not
// returned, the one that waits excluded). The pointer arguments are
// indexed once, so a dump of 100,000 goroutines stays linear.
func goHolders(gp *goProc, objs map[uint64]bool) map[uint64][]goLockStep {
	type ptr struct {
		v     uint64
		g     *gor
		frame int
	}
	var ptrs []ptr
	for _, g := range gp.user() {
		from := 0
		if g.kind != goRunning && g.wait.Caller < len(g.ref.Thread.Stack) {
			from = g.wait.Caller
		}
		for i := from; i < len(g.ref.Thread.Stack); i++ {
			f := g.ref.Thread.Stack[i]
			if stacks.GoMachineryFrame(f.Func) {
				continue
			}
			for _, a := range f.Args {
				if v, ok := goPointerArg(a); ok {
					ptrs = append(ptrs, ptr{v, g, i})
				}
			}
		}
	}
	sort.Slice(ptrs, func(i, j int) bool { return ptrs[i].v < ptrs[j].v })
	out := map[uint64][]goLockStep{}
	for obj := range objs {
		lo := uint64(0)
		if obj >= goStructSpan {
			lo = obj - goStructSpan + 1
		}
		best := map[*gor]holdEvidence{}
		for i := sort.Search(len(ptrs), func(i int) bool { return ptrs[i].v >= lo }); i < len(ptrs) && ptrs[i].v <= obj; i++ {
			p := ptrs[i]
			if isGoLockWait(p.g.kind) && (p.g.obj == obj || p.v == p.g.obj) {
				continue // it waits for obj, or the pointer is the lock it waits for: a mutex, not a struct around obj
			}
			h := holdEvidence{frame: p.frame, arg: p.v, exact: p.v == obj}
			if old, ok := best[p.g]; !ok || h.exact && !old.exact || h.exact == old.exact && h.frame > old.frame {
				best[p.g] = h
			}
		}
		for g, h := range best {
			out[obj] = append(out[obj], goLockStep{holder: g, obj: obj, ev: h})
		}
		sort.Slice(out[obj], func(i, j int) bool { return out[obj][i].holder.ref.Thread.Tid < out[obj][j].holder.ref.Thread.Tid })
	}
	return out
}

// goLockCycles returns the cycles of goroutines that wait to lock what
// the next one may hold, each once; when there is none, the fallback:
// goroutines wait on two different mutexes or more, nothing points at
// any of them, and no goroutine runs that could unlock one.
func goLockCycles(gp *goProc) []goLockCycle {
	var waiters []*gor
	objs := map[uint64]bool{}
	for _, g := range gp.user() {
		if isGoLockWait(g.kind) && g.obj != 0 {
			waiters = append(waiters, g)
			objs[g.obj] = true
		}
	}
	if len(waiters) < 2 || len(objs) < 2 {
		if c, ok := goWriterPrefCycle(gp); ok {
			return []goLockCycle{c}
		}
		return goHoldWaits(gp)
	}
	holders := goHolders(gp, objs)
	isWaiter := map[*gor]bool{}
	for _, w := range waiters {
		isWaiter[w] = true
	}
	var cycles []goLockCycle
	const maxCycles, maxSteps = 16, 100000
	steps := 0
	// The steps out of a waiter are the holders of its lock that wait
	// too, read off holders as the walk comes to it (a map of them made
	// first was 5.7 MB on the 32 MB goroutine dump of `make bench`). One
	// path, one set and one walk serve all starts: the walk leaves them
	// as it found them.
	var path []goLockStep
	var start *gor
	onPath := map[*gor]bool{}
	var dfs func(g *gor)
	dfs = func(g *gor) {
		for _, s := range holders[g.obj] {
			if !isWaiter[s.holder] || s.holder == g {
				continue
			}
			s.waiter = g
			if steps++; steps > maxSteps || len(cycles) >= maxCycles {
				return
			}
			h := s.holder
			switch {
			case h == start:
				c := append(append([]goLockStep(nil), path...), s)
				cycles = append(cycles, goLockCycle{steps: c, inferred: true, scope: -1})
			case !onPath[h] && h.ref.Thread.Tid > start.ref.Thread.Tid && len(path) < 8:
				onPath[h] = true
				path = append(path, s)
				dfs(h)
				path = path[:len(path)-1]
				delete(onPath, h)
			}
		}
	}
	for _, start = range waiters {
		onPath[start] = true
		dfs(start)
		delete(onPath, start)
	}
	if len(cycles) > 0 {
		return cycles
	}
	// The fallback: no pointer names any holder.
	for obj := range objs {
		if len(holders[obj]) > 0 {
			return goHoldWaits(gp)
		}
	}
	for _, g := range gp.user() {
		if !g.blockedForever() && g.kind != stacks.GoWaitSleep {
			return goHoldWaits(gp) // it runs, or waits on I/O: it may unlock one
		}
	}
	sort.Slice(waiters, func(i, j int) bool { return waiters[i].ref.Thread.Tid < waiters[j].ref.Thread.Tid })
	c := goLockCycle{scope: -1}
	for _, w := range waiters {
		c.steps = append(c.steps, goLockStep{waiter: w, obj: w.obj})
	}
	return []goLockCycle{c}
}

// goWriterPrefCycle: a dump that names no lock object shows a reader
// queued behind the one writer waiting on an RWMutex, and goroutines
// waiting on other locks, each for a minute or more, nothing running or
// waiting on I/O. A writer-preferring RWMutex makes a new reader wait
// for the writer, and the writer for the read lock already held: by the
// reader itself (a recursive RLock, goUnknownRLocks) or by a goroutine
// blocked on another lock; with such a goroutine in sight the second
// is the likely one, a cycle through the writer.
func goWriterPrefCycle(gp *goProc) (goLockCycle, bool) {
	var readers, writers, others []*gor
	for _, g := range gp.user() {
		switch {
		case g.obj != 0:
			return goLockCycle{}, false // named objects: the pointer-based search decides
		case g.kind == stacks.GoWaitRLock && g.rt().WaitMinutes > 0:
			readers = append(readers, g)
		case g.kind == stacks.GoWaitWLock && g.rt().WaitMinutes > 0:
			writers = append(writers, g)
		case g.kind == stacks.GoWaitMutex && g.rt().WaitMinutes > 0:
			others = append(others, g)
		case !g.blockedForever() && g.kind != stacks.GoWaitSleep:
			return goLockCycle{}, false // it runs or waits on I/O: it may release one
		}
	}
	if len(readers) == 0 || len(writers) != 1 || len(others) == 0 {
		return goLockCycle{}, false
	}
	c := goLockCycle{scope: -1, writerPref: true}
	for _, g := range append(append([]*gor{readers[0], writers[0]}, others...), readers[1:]...) {
		c.steps = append(c.steps, goLockStep{waiter: g})
	}
	return c, true
}

const goLockFix = "Lock these mutexes in one fixed order everywhere: where code needs two at once, order them " +
	"by a stable key (an id, never the argument order) before locking, or guard them with one lock. Go's " +
	"mutexes record no owner: `go test -race` does not see this; a lock-order checker (sasha-s/go-deadlock) " +
	"in tests does."

// matchGoLockCycle gives lock-order-cycle for goroutines.
func matchGoLockCycle(a *analysis) []Diagnosis {
	return perGoProc(a, goLockCycles, goLockCycleDiagnosis)
}

func goLockCycleDiagnosis(gp *goProc, c goLockCycle) Diagnosis {
	if c.scope >= 0 {
		return goHoldWaitDiagnosis(c)
	}
	var gs []*gor
	for _, s := range c.steps {
		gs = append(gs, s.waiter)
	}
	d := Diagnosis{ID: "lock-order-cycle", Deadlock: true, Confidence: Medium,
		Refs: []string{"https://pkg.go.dev/sync#Mutex", "https://github.com/sasha-s/go-deadlock"}}
	d.nameGoroutines(gs...)
	if c.writerPref {
		r, w := c.steps[0].waiter, c.steps[1].waiter
		d.Confidence = Low
		for _, s := range c.steps {
			d.Chain = append(d.Chain, s.waiter.label()+" "+s.waiter.waitText())
			d.Evidence = append(d.Evidence, s.waiter.stackLine())
		}
		d.Summary = fmt.Sprintf("most likely a lock-order cycle through a waiting writer: %s waits to read-lock an RWMutex in %s "+
			"behind %s, which waits to write-lock one in %s, while %d other goroutine(s) wait on other locks, all for minutes, "+
			"and nothing runs", r.label(), r.where(), w.label(), w.where(), len(c.steps)-2)
		d.Chain = append(d.Chain,
			"an RWMutex with a writer waiting makes every new reader wait: the writer waits for a read lock already held",
			"that read lock is held by the reader itself (a recursive RLock) or by a goroutine that waits on another lock, "+
				"whose holder waits in turn; with such a goroutine here, the cycle through the writer is the likely one")
		d.Evidence = append(d.Evidence, "the dump names no lock address: which goroutine holds what is inferred from the "+
			"waits alone (Go mutexes record no owner); a full dump with arguments (SIGQUIT, debug=2) names the locks")
		d.Fix = "Do not hold a read lock of the RWMutex while waiting for another lock that a goroutine holding it " +
			"(or waiting for its write lock) may need: take the locks in one order everywhere, or release the read lock first. " +
			goLockFix
		return d
	}
	if !c.inferred {
		d.Confidence = Low
		var parts []string
		for _, s := range c.steps {
			parts = append(parts, fmt.Sprintf("%s waits for %#x", s.waiter.label(), s.obj))
			d.Chain = append(d.Chain, s.waiter.label()+" "+s.waiter.waitText())
			d.Evidence = append(d.Evidence, s.waiter.stackLine())
		}
		d.Summary = fmt.Sprintf("%d goroutines wait on %d different locked mutexes and no goroutine could unlock them: %s",
			len(c.steps), len(c.steps), strings.Join(parts, ", "))
		d.Chain = append(d.Chain, "no frame of any goroutine received a pointer to these mutexes, so who holds them is "+
			"not known: a cycle among these goroutines is the likely cause, a goroutine that exited holding one the other")
		d.Evidence = append(d.Evidence, "Go mutexes record no owner and no goroutine's arguments point at these: low confidence")
		d.Fix = goLockFix
		return d
	}
	var sum []string
	for i, s := range c.steps {
		sum = append(sum, fmt.Sprintf("%s waits for %#x, which %s may hold", s.waiter.label(), s.obj, s.holder.label()))
		d.Chain = append(d.Chain, s.waiter.label()+" "+s.waiter.waitText())
		d.Chain = append(d.Chain, fmt.Sprintf("which %s may hold: %s", s.holder.label(), s.ev.text(s.holder, s.obj)))
		d.Evidence = append(d.Evidence, s.waiter.stackLine())
		if i == len(c.steps)-1 {
			d.Chain = append(d.Chain, "which closes the cycle: each waits for the next, and none can go on")
		}
	}
	d.Summary = fmt.Sprintf("%d goroutines deadlock on their mutexes in a cycle: %s", len(c.steps), strings.Join(sum, "; "))
	d.Evidence = append(d.Evidence, "Go mutexes record no owner: each holder is inferred from a frame that received a "+
		"pointer to the mutex (or to the struct it is a field of) and has not returned")
	where := ""
	if f, ok := c.steps[0].waiter.callerFrame(); ok {
		where = fmt.Sprintf(" (in %s)", frameAt(f))
	}
	d.Fix = "Lock these mutexes in one fixed order everywhere" + where + ": where code needs two at once, order them " +
		"by a stable key (an id, never the argument order) before locking, or guard them with one lock. Go's " +
		"mutexes record no owner: a lock-order checker (sasha-s/go-deadlock) in tests finds the other orders."
	return d
}
