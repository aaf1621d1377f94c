package heuristics

// self-deadlock for goroutines: a goroutine locks a sync.Mutex it holds,
// or read-locks a sync.RWMutex it holds for reading while a writer waits
// (a recursive RLock, which Go compiles and sync documents as
// forbidden). Registered under the native signature's id
// (self_deadlock.go calls matchGoSelfDeadlock).

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

// goSelf is a goroutine that waits for a lock it may hold.
type goSelf struct {
	g      *gor
	ev     holdEvidence
	held   bool // ev was found (else: the writer and reader alone tell it)
	writer *gor // the writer waiting on the same RWMutex (RLock)
	// lone: a reader waits and no writer is in sight (a paste of the
	// stuck goroutine alone); a reader waits only behind a writer, and
	// nothing that runs could be it.
	lone bool
}

// goSelfDeadlocks finds goroutines waiting to lock an object that a
// frame below the one locking received (the outer frame holds it), when
// no other goroutine may hold it. A recursive RLock needs a writer
// waiting on the same RWMutex: without one it does not block, so a
// reader waiting with no writer in sight and nothing running that could
// hold the lock for writing is a paste that left the writer out; the
// recursive RLock is then the likely cause, and the verdict says so
// with low confidence.
func goSelfDeadlocks(gp *goProc) []goSelf {
	if !gp.selfsDone {
		gp.selfs, gp.selfsDone = detectGoSelfDeadlocks(gp), true
	}
	return gp.selfs
}

func detectGoSelfDeadlocks(gp *goProc) []goSelf {
	objs := map[uint64]bool{}
	for _, g := range gp.user() {
		if isGoLockWait(g.kind) && g.obj != 0 {
			objs[g.obj] = true
		}
	}
	if len(objs) == 0 {
		return goUnknownRLocks(gp)
	}
	holders := goHolders(gp, objs)
	writers := map[uint64]*gor{}
	running := false
	for _, g := range gp.user() {
		if g.kind == stacks.GoWaitWLock && g.obj != 0 && writers[g.obj] == nil {
			writers[g.obj] = g
		}
		running = running || g.kind == goRunning
	}
	var out []goSelf
	for _, g := range gp.user() {
		if !isGoLockWait(g.kind) || g.obj == 0 {
			continue
		}
		others := false
		for _, h := range holders[g.obj] {
			if h.holder != g {
				others = true
			}
		}
		if others {
			continue // another goroutine may hold it: not this signature's to say
		}
		ev, held := mayHold(g, g.obj, g.wait.Caller+1)
		s := goSelf{g: g, ev: ev, held: held}
		switch g.kind {
		case stacks.GoWaitRLock:
			// A reader waits only while a writer holds or waits for the
			// lock; a writer waiting and no other holder: the readers
			// holding it are among the waiting readers.
			s.writer = writers[g.obj]
			if s.writer != nil && !held && otherLockWaiter(gp, g, s.writer) {
				continue // the read lock may be that waiter's: a cycle through the writer, not a recursion
			}
			if s.writer == nil {
				if running || len(holders[g.obj]) > 0 {
					continue // the writer may be the one that runs, or one that holds it
				}
				s.lone = true
			}
		case stacks.GoWaitMutex, stacks.GoWaitWLock:
			if !held && !loneCutLocker(gp, g) {
				continue
			}
			s.lone = !held
		}
		out = append(out, s)
	}
	return out
}

// otherLockWaiter: a goroutine other than the reader and the writer of
// an RWMutex waits for a lock of its own. A reader queued behind a
// waiting writer is a recursive RLock only when nothing else could hold
// the read lock the writer waits for; a goroutine that holds it while it
// waits for another lock (whose holder waits in turn) makes a cycle
// through the writer (writer preference), which the reader's own stack,
// showing no earlier read lock, does not tell from recursion.
func otherLockWaiter(gp *goProc, reader, writer *gor) bool {
	for _, o := range gp.user() {
		if o != reader && o != writer && isGoLockWait(o.kind) && (o.obj == 0 || o.obj != reader.obj) && o.kind != stacks.GoWaitRLock {
			return true
		}
	}
	return false
}

// loneCutLocker: g, waiting to lock a mutex, is the only goroutine of a
// paste of some of the program's goroutines (goProc.fragment), and its
// own stack is cut before the go statement that started it: the frames
// that hold the lock, when it re-entered it through a callback, are
// below the cut, and no goroutine in sight could hold it.
func loneCutLocker(gp *goProc, g *gor) bool {
	return len(gp.all) == 1 && gp.fragment() && g.rt().CreatedBy.Func == "" && g.rt().WaitMinutes > 0
}

// goUnknownRLocks: a dump that names no lock object (an abridged paste,
// a pprof profile without arguments, arguments printed as `0x2?`) and
// shows one goroutine waiting to write-lock an RWMutex, readers waiting
// to read-lock one, each for a minute or more, and nothing running: most
// likely one RWMutex, read locked again behind the waiting writer (low
// confidence). A paste that holds only such readers, no writer and
// nothing else, is the lone reader of goSelfDeadlocks without its
// address: a reader waits only behind a writer, which the paste left out.
func goUnknownRLocks(gp *goProc) []goSelf {
	var writers, readers []*gor
	others := false
	for _, g := range gp.user() {
		switch {
		case g.kind == goRunning:
			return nil
		case g.obj != 0:
			others = true
		case g.kind == stacks.GoWaitWLock:
			writers = append(writers, g)
		case g.kind == stacks.GoWaitRLock && g.rt().WaitMinutes > 0:
			readers = append(readers, g)
		default:
			others = true
		}
	}
	if len(readers) == 0 || len(writers) > 1 {
		return nil
	}
	var out []goSelf
	for _, r := range readers {
		switch {
		case len(writers) == 1 && otherLockWaiter(gp, r, writers[0]):
			// another goroutine blocked on a lock may hold the read lock
			// the writer waits for: a cycle through the writer
		case len(writers) == 1:
			out = append(out, goSelf{g: r, writer: writers[0]})
		case !others:
			out = append(out, goSelf{g: r, lone: true})
		}
	}
	return out
}

// matchGoSelfDeadlock gives self-deadlock for goroutines.
func matchGoSelfDeadlock(a *analysis) []Diagnosis {
	return perGoProc(a, goSelfDeadlocks, goSelfDiagnosis)
}

func goSelfDiagnosis(gp *goProc, s goSelf) Diagnosis {
	g := s.g
	gs := []*gor{g}
	if s.writer != nil {
		gs = append(gs, s.writer)
	}
	d := Diagnosis{ID: "self-deadlock", Deadlock: true, Confidence: Medium,
		Refs: []string{"https://pkg.go.dev/sync#Mutex"}}
	d.nameGoroutines(gs...)
	d.Chain = append(d.Chain, g.label()+" "+g.waitText())
	outer := ""
	if s.held {
		f := g.ref.Thread.Stack[s.ev.frame]
		outer = frameAt(f)
		d.Chain = append(d.Chain, "which it may hold itself: "+s.ev.text(g, g.obj))
	}
	d.Evidence = append(d.Evidence, g.stackLine())
	switch {
	case g.kind == stacks.GoWaitRLock && s.lone:
		d.Refs = []string{"https://pkg.go.dev/sync#RWMutex"}
		d.Confidence = Low
		d.Summary = fmt.Sprintf("most likely a recursive RLock behind a waiting writer: %s waits to read-lock "+
			"%s in %s, and no goroutine of the dump holds it for writing or runs", g.label(), objText("sync.RWMutex", g.obj), g.where())
		d.Chain = append(d.Chain,
			"a reader waits only while a writer holds the lock or waits for it; no goroutine of the dump waits "+
				"to write-lock it, holds it as far as the frames show, or runs: the writer is not in the dump",
			"the usual cause: a goroutine holding the read lock read-locks it again after a writer queued; the "+
				"writer waits for the first read lock, the second waits behind the writer")
		d.Evidence = append(d.Evidence, "sync.RWMutex: \"If any goroutine calls Lock while the lock is already held "+
			"by one or more readers, concurrent calls to RLock will block until the writer has acquired (and "+
			"released) the lock\"; a recursive read lock is forbidden for that reason",
			"the goroutines that would settle it are not in the dump: the one in RWMutex.Lock, and the frames "+
				"below the RLock that took the lock first (a full dump: SIGQUIT, or /debug/pprof/goroutine?debug=2)")
		d.Fix = "Look for a path that read-locks this RWMutex while already holding it (an exported method that " +
			"RLocks calling another that RLocks): split the inner one into a variant that expects the lock held. " +
			"If instead a writer holds the lock and waits elsewhere, that wait is the cause."
	case g.kind == stacks.GoWaitRLock:
		d.Refs = []string{"https://pkg.go.dev/sync#RWMutex"}
		d.Summary = fmt.Sprintf("recursive RLock with a writer waiting: %s read-locks %s again in %s "+
			"while %s waits to write-lock it in %s", g.label(), objText("sync.RWMutex", g.obj), g.where(), s.writer.label(), s.writer.where())
		d.Chain = append(d.Chain, s.writer.label()+" "+s.writer.waitText(),
			"a waiting writer makes every new RLock wait, and the writer waits for the read lock the reader holds: "+
				"each waits for the other")
		d.Evidence = append(d.Evidence, s.writer.stackLine(),
			"sync.RWMutex: \"If any goroutine calls Lock while the lock is already held by one or more readers, "+
				"concurrent calls to RLock will block until the writer has acquired (and released) the lock\"; "+
				"a recursive read lock is forbidden for that reason")
		if g.obj == 0 {
			d.Summary = fmt.Sprintf("most likely a recursive RLock behind a waiting writer: %s waits to read-lock an RWMutex in %s "+
				"while %s waits to write-lock one in %s, both for minutes, and nothing runs", g.label(), g.where(), s.writer.label(), s.writer.where())
			d.Evidence = append(d.Evidence, "the dump names no lock address: that both wait on one RWMutex is inferred "+
				"(the only writer waiting, nothing running that could hold another)")
		}
		if !s.held {
			d.Confidence = Low
			d.Evidence = append(d.Evidence, "no frame of any goroutine received a pointer to this RWMutex: the "+
				"read-lock holder is not known; the waiting reader holding it already is the likely cause")
		}
		d.Fix = "Do not take the read lock again while holding it"
		if outer != "" {
			d.Fix += fmt.Sprintf(" (%s holds it and calls %s)", outer, g.where())
		}
		d.Fix += ": split the inner function into a variant that expects the lock held, or take the lock once at the " +
			"outermost call. Recursive read locking is forbidden by sync.RWMutex even though it works until a writer comes."
	case s.lone:
		d.Confidence = Low
		d.Summary = fmt.Sprintf("most likely a re-entered lock: %s waits to lock %s in %s, the paste holds no other "+
			"goroutine, and its stack is cut before the frames that could already hold it", g.label(), objText(kindNoun(g.kind), g.obj), g.where())
		d.Chain = append(d.Chain,
			"the paste is a fragment (no goroutine 1, no runtime message): the goroutines that could hold the lock are not in it",
			"its own stack ends before the go statement that started it: a frame below the cut that locked the same mutex and "+
				"called back into this code (the usual re-entry: a callback or an observer run under the lock) would hold it",
			"a sync.Mutex is not reentrant: such a goroutine waits for itself for ever")
		d.Evidence = append(d.Evidence, "the rest of its stack and the other goroutines (a full dump: SIGQUIT, or "+
			"/debug/pprof/goroutine?debug=2) would show whether a frame of its own or another goroutine holds the lock")
		d.Fix = fmt.Sprintf("Find the caller further down that holds this mutex while it calls out (to a callback, an "+
			"observer, another package): release the lock before the call, or give %s a variant that expects it held.", g.where())
	default:
		d.Summary = fmt.Sprintf("%s locks %s again in %s, while a frame of its own that has not returned "+
			"holds it (%s)", g.label(), objText(kindNoun(g.kind), g.obj), g.where(), outer)
		d.Chain = append(d.Chain, "a sync.Mutex is not reentrant: the goroutine waits for itself for ever")
		d.Fix = fmt.Sprintf("Do not lock a mutex the goroutine already holds: %s holds it and calls %s; split the "+
			"inner function into a variant that expects the lock held (a fooLocked helper), or release the lock "+
			"before the call.", outer, g.where())
	}
	if msg := runtimeMessage(gp.p); msg != "" {
		d.Evidence = append(d.Evidence, "the runtime said: "+msg)
	}
	d.Evidence = append(d.Evidence, "Go mutexes record no owner: the holder is inferred from the pointers the "+
		"frames received, and no other goroutine's frames point at this lock")
	return d
}
