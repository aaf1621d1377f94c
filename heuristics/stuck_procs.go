package heuristics

import (
	"fmt"
	"slices"

	"github.com/hangdoc/hangdoc/stacks"
)

// Which processes are stuck, and why: the roots waiting-on-process
// links a waiting process to (a process with a deadlock verdict of its
// own, or one whose threads all wait), and the chains of process waits
// that lead to them. The signature is waiting_on_process.go; the waits
// themselves are process_waits.go.

// stuckProc says why a process is stuck: a root finding of its own, a
// wait on another stuck process (next), or a ring of waits.
type stuckProc struct {
	id   string // the signature that names the root ("fork-inherited-lock")
	what string // the root finding as a sentence
	tids []int  // the root's stuck threads
	conf string
	next *procWait // the wait that makes a process stuck, when not a root
	ring []procWait
}

// rootOf is the finding of a deadlock signature that explains p, read
// from the graph and the detectors the signatures share (not from their
// diagnoses), with the confidence that signature gives it.
func rootOf(a *analysis, p *stacks.Process) (*stuckProc, bool) {
	if p.Exited {
		return nil, false
	}
	if p.Fork != nil {
		if d, ok := forkAccelIn(a, p); ok {
			return &stuckProc{id: "fork-after-accelerator-init", what: d.Summary, tids: d.Tids, conf: d.Confidence}, true
		}
	}
	if d, ok := spinWaitIn(a, p); ok {
		return &stuckProc{id: "spin-wait-starved", what: d.Summary, tids: d.Tids, conf: d.Confidence}, true
	}
	if !a.LockDiagnosed(p) {
		return nil, false
	}
	var reentries []reentry
	reentriesRead := false
	reentered := func(t *stacks.Thread) *reentry {
		if !reentriesRead {
			reentriesRead, reentries = true, findReentries(a)
		}
		for i := range reentries {
			if reentries[i].waiter.Thread == t {
				return &reentries[i]
			}
		}
		return nil
	}
	for _, e := range a.graph.Edges {
		if e.From.Proc != p || e.Kind != EdgeMutex || !stuckOnOwner(e) {
			continue
		}
		s := &stuckProc{what: Step(e), tids: []int{e.From.Thread.Tid}, conf: a.graphConfidence(p)}
		switch e.Lock.Owner.Kind {
		case OwnerForkParent:
			s.id = "fork-inherited-lock"
		case OwnerGone:
			s.id = "orphaned-lock"
		case OwnerReused:
			s.id, s.conf = "orphaned-lock", Medium
		default:
			s.id = "self-deadlock"
			if reentered(e.From.Thread) != nil {
				s.id = "signal-handler-reentry"
			} else if e.Lock.Mutex.Kind&kindMask == kindErrCheck {
				s.conf = Medium
			}
		}
		return s, true
	}
	for _, c := range a.cycles {
		if len(c) < 2 || !slices.ContainsFunc(c, func(e Edge) bool { return e.From.Proc == p }) {
			continue
		}
		s := &stuckProc{id: "lock-order-cycle", what: ChainText(c), conf: a.graphConfidence(edgeProcs(c)...)}
		for _, e := range c {
			if e.Kind == EdgeMutex && waitsForLoaderLock(e.From.Thread) {
				s.id = "loader-lock"
			}
			s.tids = appendNew(s.tids, e.From.Thread.Tid)
		}
		return s, true
	}
	for _, t := range p.Threads {
		if r := reentered(t); r != nil {
			return &stuckProc{id: "signal-handler-reentry", conf: Medium, tids: []int{r.waiter.Thread.Tid},
				what: fmt.Sprintf("%s waits in a signal handler for a lock the code it interrupted holds", threadLabel(r.waiter.Thread))}, true
		}
	}
	for _, r := range findArgRelocks(a) {
		if r.ref.Proc == p {
			return &stuckProc{id: "self-deadlock", conf: Medium, tids: []int{r.ref.Thread.Tid},
				what: fmt.Sprintf("%s waits for a lock that an outer frame of its own took", threadLabel(r.ref.Thread))}, true
		}
	}
	if ws := a.stuckLockWaiters(p); len(ws) > 0 {
		s := &stuckProc{id: "self-deadlock", conf: Low}
		switch {
		case p.Fork != nil:
			s.id = "fork-inherited-lock"
			if lw, ok := a.forkedSelfRelock(p); ok {
				s.id = lw.id
			}
			if a.Snap.Evidence.CPU {
				s.conf = Medium
			}
		case len(ws) > 1:
			s.id = "lock-order-cycle"
		}
		for _, w := range ws {
			s.tids = append(s.tids, w.Thread.Tid)
		}
		s.what = fmt.Sprintf("%s waits for a lock in %s that no running thread can release", threadLabel(ws[0].Thread), waitSite(ws[0].Thread))
		return s, true
	}
	return nil, false
}

// stuckProcs says which processes of the snapshot are stuck and why: the
// roots a deadlock signature explains; then, round by round, the
// processes none of whose threads works that wait on a stuck one (so a
// chain is followed by its shortest way); then rings of such processes
// waiting on each other, and what waits on them.
func stuckProcs(a *analysis) map[int]*stuckProc {
	// calmVerdict asks once per process and signature; a tree of many
	// processes sharing one pipe (make's jobserver) must not pay each time.
	if a.stuck == nil {
		a.stuck = findStuckProcs(a)
	}
	return a.stuck
}

func findStuckProcs(a *analysis) map[int]*stuckProc {
	stuck := map[int]*stuckProc{}
	var waits []procWait
	for _, p := range a.Snap.Processes {
		if s, ok := rootOf(a, p); ok {
			stuck[p.Pid] = s
		}
		ws, _ := procWaits(a, p)
		waits = append(waits, ws...)
	}
	if len(waits) == 0 {
		return stuck
	}
	works := map[int]bool{}
	for _, p := range a.Snap.Processes {
		for _, t := range p.Threads {
			if threadWorks(a.samplesOf(t)) {
				works[p.Pid] = true
			}
		}
	}
	propagate := func() {
		for {
			round := map[int]*stuckProc{}
			for i := range waits {
				w := &waits[i]
				from := w.from.Proc.Pid
				to := stuck[w.to.Pid]
				if stuck[from] != nil || round[from] != nil || to == nil || works[from] || !w.blocked(stuck) {
					continue
				}
				round[from] = &stuckProc{id: to.id, conf: to.conf, next: w}
			}
			if len(round) == 0 {
				return
			}
			for pid, s := range round {
				stuck[pid] = s
			}
		}
	}
	propagate()
	// Rings: follow, from each process not yet stuck, its first wait on
	// another such process; coming back to a process on the path closes
	// a ring.
	first := map[int]*procWait{}
	for i := range waits {
		w := &waits[i]
		from := w.from.Proc.Pid
		if first[from] == nil && stuck[from] == nil && stuck[w.to.Pid] == nil && !works[from] && !works[w.to.Pid] && w.only() {
			first[from] = w
		}
	}
	for _, p := range a.Snap.Processes {
		var path []int
		for pid := p.Pid; first[pid] != nil && stuck[pid] == nil; pid = first[pid].to.Pid {
			if i := slices.Index(path, pid); i >= 0 {
				var ring []procWait
				for _, q := range path[i:] {
					ring = append(ring, *first[q])
				}
				for _, q := range path[i:] {
					stuck[q] = &stuckProc{id: "waiting-on-process", conf: Medium, ring: ring}
				}
				break
			}
			path = append(path, pid)
		}
	}
	propagate()
	return stuck
}

// waitsOnStuck reports whether a thread of p waits on a pipe or socket
// whose other end is held by a stuck process of the snapshot (a parent
// in wait4 is declined by calmVerdict anyway). Cheap when no thread has
// peers in the snapshot.
func waitsOnStuck(a *analysis, p *stacks.Process) bool {
	ws, _ := procWaits(a, p)
	if !slices.ContainsFunc(ws, func(w procWait) bool { return w.kind != "child" }) {
		return false
	}
	stuck := stuckProcs(a)
	for _, w := range ws {
		if w.kind != "child" && w.blocked(stuck) {
			return true
		}
	}
	return false
}

// chainFrom follows the waits from a stuck process to the root: the hops
// and the root (nil for a ring, which ends the chain).
func chainFrom(stuck map[int]*stuckProc, pid int) (hops []procWait, root *stacks.Process, s *stuckProc) {
	seen := map[int]bool{}
	for s = stuck[pid]; s != nil && s.next != nil && !seen[pid]; s = stuck[pid] {
		seen[pid] = true
		hops = append(hops, *s.next)
		pid = s.next.to.Pid
	}
	if s != nil && s.ring == nil {
		if len(hops) > 0 {
			root = hops[len(hops)-1].to
		}
	}
	return hops, root, s
}
