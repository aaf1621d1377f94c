package heuristics

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// glibc pthread_mutex_t __kind bits and the special owners of a robust
// mutex (nptl/pthreadP.h).
const (
	kindMask      = 3 // NORMAL 0, RECURSIVE 1, ERRORCHECK 2, ADAPTIVE 3
	kindRecursive = 1
	kindErrCheck  = 2
	kindRobust    = 16
	kindPI        = 32
	kindPP        = 64
	kindPShared   = 128

	ownerInconsistent  = 0x80000000 // EOWNERDEAD returned, pthread_mutex_consistent not yet called
	ownerNotRecovrable = 0x7fffffff // unlocked while inconsistent: every lock fails with ENOTRECOVERABLE
	futexOwnerDied     = 0x40000000 // the kernel's mark in a robust lock word
)

// LockKey names a mutex within one address space: a forked child's copy
// of its parent's mutex has the same address and is another lock.
type LockKey struct {
	Pid  int
	Addr uint64
}

// OwnerKind says what became of the thread a mutex records as its owner.
type OwnerKind int

const (
	// OwnerUnknown: no owner recorded. Owners were not read, __owner is 0
	// while the lock is taken (lock elision, a lock changing hands), or
	// the owner is in a process the snapshot does not have.
	OwnerUnknown OwnerKind = iota
	// OwnerLive: a thread of the process (of any sampled process, for a
	// process-shared mutex).
	OwnerLive
	// OwnerForkParent: a thread of the parent at fork(); it holds the
	// parent's lock, and nobody will ever unlock the child's copy.
	OwnerForkParent
	// OwnerGone: no thread has that id: it exited holding the lock.
	OwnerGone
	// OwnerReused: the id now names a thread of an unrelated process, which
	// cannot hold this process's private mutex: the real owner is gone.
	OwnerReused
)

// Owner is a mutex's recorded owner, resolved against the snapshot.
type Owner struct {
	Kind OwnerKind
	Tid  int
	// Thread is the thread the id names in the snapshot, if any: the
	// owner (OwnerLive), the parent's thread (OwnerForkParent), the
	// unrelated thread (OwnerReused).
	Thread ThreadRef
}

// Lock is a mutex some thread waits for.
type Lock struct {
	Key     LockKey
	Mutex   *stacks.Mutex // as its first waiter read it
	Owner   Owner
	Waiters []ThreadRef
}

// EdgeKind says how a thread waits for another.
type EdgeKind int

const (
	EdgeMutex EdgeKind = iota // From waits for Lock, held by To
	EdgeJoin                  // From waits in pthread_join for To
	EdgeChild                 // From waits in wait4/waitid for its process's children
)

// Edge is one wait in the wait-for graph.
type Edge struct {
	Kind EdgeKind
	From ThreadRef
	Lock *Lock // EdgeMutex
	// To is the thread waited for: the lock's live owner or the joined
	// thread. To.Thread is nil when there is none in the snapshot.
	To ThreadRef
	// Children are the pids a wait4/waitid waits for (EdgeChild).
	Children []int
}

// Graph is the wait-for graph of a snapshot: threads wait for mutexes
// (keyed per address space), mutexes are held by threads; joins wait for
// threads, wait4 for child processes.
type Graph struct {
	Locks []*Lock
	Edges []Edge
	out   map[*stacks.Thread][]int // waiting thread → indexes into Edges
}

func buildGraph(a *analysis) *Graph {
	g := &Graph{out: map[*stacks.Thread][]int{}}
	// by process, not pid: pasted processes may share a pid (0, unknown)
	type procLock struct {
		p    *stacks.Process
		addr uint64
	}
	locks := map[procLock]*Lock{}
	// locks known only by the owner the dump names, by process and owner
	named := map[procLock]*Lock{}
	for p, t := range a.liveThreads() {
		from := ThreadRef{Proc: p, Thread: t}
		w := threadWait(t)
		switch {
		case w == nil:
		case w.Mutex != nil && !steadyMutex(t, w.Mutex):
			// the samples disagree on the lock or its owner: the
			// thread moved on, and owners read at different moments
			// could draw a cycle that never was
		case w.Mutex != nil:
			key := procLock{p, w.Mutex.Addr}
			l := locks[key]
			if l == nil {
				l = &Lock{Key: LockKey{p.Pid, w.Mutex.Addr}, Mutex: w.Mutex, Owner: a.resolveOwner(p, w.Mutex)}
				locks[key] = l
				g.Locks = append(g.Locks, l)
			}
			l.Waiters = append(l.Waiters, from)
			to := ThreadRef{}
			if l.Owner.Kind == OwnerLive {
				to = l.Owner.Thread
			}
			g.add(Edge{Kind: EdgeMutex, From: from, Lock: l, To: to})
		case w.BlockedByTid != 0 && (w.BlockedByPid == 0 || p.Pid <= 0 || w.BlockedByPid == p.Pid):
			// The dump names the owner (a macOS turnstile's "blocked by
			// … thread 0x…"): an owner as good as one read from a
			// mutex, of a lock whose address the dump does not give.
			r, live := a.threadIn(p, w.BlockedByTid)
			if c, _ := waitOf(t); live && c == waitJoin {
				g.add(Edge{Kind: EdgeJoin, From: from, To: r})
				continue
			}
			key := procLock{p, uint64(w.BlockedByTid)}
			l := named[key]
			if l == nil {
				l = &Lock{Key: LockKey{p.Pid, 0}, Mutex: &stacks.Mutex{Owner: w.BlockedByTid}, Owner: Owner{Kind: OwnerUnknown, Tid: w.BlockedByTid}}
				if live {
					l.Owner = Owner{Kind: OwnerLive, Tid: w.BlockedByTid, Thread: r}
				}
				named[key] = l
				g.Locks = append(g.Locks, l)
			}
			l.Waiters = append(l.Waiters, from)
			to := ThreadRef{}
			if live {
				to = r
			}
			g.add(Edge{Kind: EdgeMutex, From: from, Lock: l, To: to})
		case w.JoinTid != 0:
			to := ThreadRef{}
			if r, ok := a.threadIn(p, w.JoinTid); ok {
				to = r
			}
			g.add(Edge{Kind: EdgeJoin, From: from, To: to})
		case w.Syscall == "wait4" || w.Syscall == "waitid":
			g.add(Edge{Kind: EdgeChild, From: from, Children: p.Children})
		}
	}
	return g
}

// steadyMutex: every sample that read a mutex for the thread read the
// same mutex and owner as the last one.
func steadyMutex(t *stacks.Thread, m *stacks.Mutex) bool {
	for _, s := range t.Samples() {
		if s.Wait != nil && s.Wait.Mutex != nil &&
			(s.Wait.Mutex.Addr != m.Addr || s.Wait.Mutex.Owner != m.Owner) {
			return false
		}
	}
	return true
}

func (g *Graph) add(e Edge) {
	g.out[e.From.Thread] = append(g.out[e.From.Thread], len(g.Edges))
	g.Edges = append(g.Edges, e)
}

// resolveOwner finds the thread a mutex's __owner names. The id is only
// meaningful in the mutex's own process, except for a process-shared
// mutex, and for a forked child, where it names a parent thread.
func (a *analysis) resolveOwner(p *stacks.Process, m *stacks.Mutex) Owner {
	tid := m.Owner
	if tid <= 0 || uint32(tid) == ownerInconsistent || uint32(tid) == ownerNotRecovrable {
		return Owner{Kind: OwnerUnknown}
	}
	// the id names a thread of p itself first, else the parent's at a
	// fork, else any other process's
	r, seen := a.threadIn(p, tid)
	if !seen && p.Fork != nil {
		r, seen = a.ThreadOf(p.Fork.ParentPid, tid)
	}
	if !seen {
		r, seen = a.threads.first(tid)
	}
	switch {
	case seen && r.Proc == p:
		return Owner{Kind: OwnerLive, Tid: tid, Thread: r}
	case seen && m.Kind&kindPShared != 0:
		return Owner{Kind: OwnerLive, Tid: tid, Thread: r}
	case m.Kind&kindPShared != 0:
		return Owner{Kind: OwnerUnknown, Tid: tid} // in a process not sampled
	case p.Fork != nil && (contains(p.Fork.ParentThreads, tid) || seen && r.Proc.Pid == p.Fork.ParentPid):
		return Owner{Kind: OwnerForkParent, Tid: tid, Thread: r}
	case seen:
		return Owner{Kind: OwnerReused, Tid: tid, Thread: r}
	}
	return Owner{Kind: OwnerGone, Tid: tid}
}

func contains(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// threadEdge: an edge from one sampled thread to another, the kind cycles
// are made of.
func (e Edge) threadEdge() bool {
	return e.To.Thread != nil && (e.Kind == EdgeMutex || e.Kind == EdgeJoin)
}

// cycles enumerates every elementary cycle of thread edges, each once,
// rooted at its lowest tid: a DFS from each root that only visits higher
// tids (threads, not tids, are the nodes: a paste may repeat tids in
// several processes). Wait-for graphs are small and mostly one edge a
// thread.
func (g *Graph) cycles() [][]Edge {
	roots := make([]*stacks.Thread, 0, len(g.out))
	for t := range g.out {
		roots = append(roots, t)
	}
	first := func(t *stacks.Thread) int { return g.out[t][0] } // the snapshot's order
	sort.Slice(roots, func(i, j int) bool {
		if roots[i].Tid != roots[j].Tid {
			return roots[i].Tid < roots[j].Tid
		}
		return first(roots[i]) < first(roots[j])
	})
	rank := map[*stacks.Thread]int{}
	for i, t := range roots {
		rank[t] = i
	}
	// a thread that waits for nothing is on no cycle
	later := func(t, root *stacks.Thread) bool { r, ok := rank[t]; return ok && r > rank[root] }
	var found [][]Edge
	for _, root := range roots {
		var path []Edge
		onPath := map[*stacks.Thread]bool{root: true}
		var walk func(t *stacks.Thread)
		walk = func(t *stacks.Thread) {
			for _, i := range g.out[t] {
				e := g.Edges[i]
				if !e.threadEdge() {
					continue
				}
				next := e.To.Thread
				switch {
				case next == root:
					found = append(found, append(append([]Edge(nil), path...), e))
				case later(next, root) && !onPath[next]:
					onPath[next] = true
					path = append(path, e)
					walk(next)
					path = path[:len(path)-1]
					onPath[next] = false
				}
			}
		}
		walk(root)
	}
	return found
}

// threadLabel names a thread for a person: "thread 4711 `worker`".
func threadLabel(t *stacks.Thread) string {
	// not fmt: a verdict on 100,000 threads names each
	if t.Name == "" {
		return "thread " + strconv.Itoa(t.Tid)
	}
	return "thread " + strconv.Itoa(t.Tid) + " `" + t.Name + "`"
}

// goroutineLabel names a goroutine by its id: "goroutine 17".
func goroutineLabel(t *stacks.Thread) string { return "goroutine " + strconv.Itoa(t.Tid) }

// nameOrThread is "`nginx`", or "a thread" when it has no name.
func nameOrThread(t *stacks.Thread) string {
	if t.Name == "" {
		return "a thread"
	}
	return "`" + t.Name + "`"
}

// mutexLabel names a mutex: "mutex `server_lock` (0x7f…)" or "mutex 0x7f…".
// Address 0 is a lock known only by the owner the dump names.
func mutexLabel(m *stacks.Mutex) string {
	if m.Addr == 0 && m.Symbol == "" {
		return "a lock"
	}
	if m.Symbol != "" {
		return fmt.Sprintf("mutex `%s` (%#x)", m.Symbol, m.Addr)
	}
	return fmt.Sprintf("mutex %#x", m.Addr)
}

// predicate says what an edge's thread does, without the subject:
// "waits for mutex `a` (0x…) held by thread 4712 `io`".
func (e Edge) predicate() string {
	switch e.Kind {
	case EdgeJoin:
		if e.To.Thread == nil {
			return fmt.Sprintf("waits in pthread_join for thread %d", e.From.Thread.Wait.JoinTid)
		}
		return "waits in pthread_join for " + threadLabel(e.To.Thread)
	case EdgeChild:
		return fmt.Sprintf("waits in %s for its children %s", e.From.Thread.Wait.Syscall, joinInts(e.Children))
	}
	l := e.Lock
	s := "waits for " + mutexLabel(l.Mutex) + " "
	o := l.Owner
	switch o.Kind {
	case OwnerLive:
		if o.Thread.Thread == e.From.Thread {
			return s + "which it already holds"
		}
		if o.Thread.Proc != e.From.Proc {
			return s + fmt.Sprintf("held by %s of process %d", threadLabel(o.Thread.Thread), o.Thread.Proc.Pid)
		}
		return s + "held by " + threadLabel(o.Thread.Thread)
	case OwnerForkParent:
		return s + fmt.Sprintf("held by thread %d of the parent process %d when it forked", o.Tid, e.From.Proc.Fork.ParentPid)
	case OwnerGone:
		return s + fmt.Sprintf("held by thread %d, which no longer exists", o.Tid)
	case OwnerReused:
		return s + fmt.Sprintf("recorded as held by thread %d, an id that now names %s of unrelated process %d, not the owner",
			o.Tid, nameOrThread(o.Thread.Thread), o.Thread.Proc.Pid)
	}
	if o.Tid != 0 {
		return s + fmt.Sprintf("held by thread %d, outside the sampled processes", o.Tid)
	}
	return s + "whose owner is not recorded"
}

// Step says one edge as a sentence: "thread 4711 `worker` waits for mutex
// `server_lock` (0x7f…) held by thread 4712 `io`".
func Step(e Edge) string { return threadLabel(e.From.Thread) + " " + e.predicate() }

// ChainText says a path as one sentence a person can follow: "thread 4711
// `worker` waits for mutex `a` (0x…) held by thread 4712 `io`, which
// waits for mutex 0x… held by thread 4711 `worker`".
func ChainText(path []Edge) string {
	if len(path) == 0 {
		return ""
	}
	return threadLabel(path[0].From.Thread) + " " + chainPredicate(path)
}

// chainPredicate is ChainText without its subject.
func chainPredicate(path []Edge) string {
	var parts []string
	for i, e := range path {
		if i > 0 {
			parts = append(parts, "which "+e.predicate())
		} else {
			parts = append(parts, e.predicate())
		}
	}
	return strings.Join(parts, ", ")
}

// Chain says a path one step a line, for Diagnosis.Chain.
func Chain(path []Edge) []string {
	var lines []string
	for _, e := range path {
		lines = append(lines, Step(e))
	}
	return lines
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// mutexFacts is mutexMemory for a mutex read from memory (a live
// process, a core); a pasted dump has no lock word, only the owner its
// tool named (jstack's "which is held by", a turnstile's "blocked by").
func (a *analysis) mutexFacts(m *stacks.Mutex) string {
	if a.src.live() || a.src.printedBy("core") || m.Lock != 0 || m.Kind != 0 || m.Owner == 0 {
		return mutexMemory(m)
	}
	return fmt.Sprintf("%s: the dump names thread %d as its holder (a pasted dump has no lock word to read)", mutexLabel(m), m.Owner)
}

// mutexMemory says what was read from a mutex, for Evidence.
func mutexMemory(m *stacks.Mutex) string {
	if m.Addr == 0 && m.Symbol == "" {
		return fmt.Sprintf("the dump names thread %d as the owner of the lock waited for (a macOS turnstile's \"blocked by … thread %#x\"); the lock's address and kind are not in it", m.Owner, m.Owner)
	}
	kinds := []string{"normal", "recursive", "errorcheck", "adaptive"}
	kind := kinds[m.Kind&kindMask]
	for _, f := range []struct {
		bit  uint32
		name string
	}{{kindRobust, "robust"}, {kindPI, "priority-inheritance"}, {kindPP, "priority-protect"}, {kindPShared, "process-shared"}} {
		if m.Kind&f.bit != 0 {
			kind += ", " + f.name
		}
	}
	var lock string
	switch {
	case m.Kind&(kindRobust|kindPI) != 0:
		lock = fmt.Sprintf("%#x (owner id %d", m.Lock, m.Lock&0x3fffffff)
		if m.Lock&futexOwnerDied != 0 {
			lock += ", marked owner-died by the kernel"
		}
		lock += ")"
	case m.Lock == 0:
		lock = "0 (free)"
	case m.Lock == 1:
		lock = "1 (locked)"
	default:
		lock = fmt.Sprintf("%d (locked, with waiters)", m.Lock)
	}
	owner := fmt.Sprint(m.Owner)
	switch uint32(m.Owner) {
	case 0:
		owner = "0 (none recorded)"
	case ownerInconsistent:
		owner = "inconsistent (EOWNERDEAD was returned; pthread_mutex_consistent not called yet)"
	case ownerNotRecovrable:
		owner = "not recoverable (unlocked without pthread_mutex_consistent)"
	}
	return fmt.Sprintf("%s: lock word %s, owner %s, kind %d (%s)", mutexLabel(m), lock, owner, m.Kind, kind)
}

// stackLine shows a thread's innermost frames down to a little past the
// code that asked to wait: "thread 4711 `worker`: __lll_lock_wait ←
// pthread_mutex_lock ← blas_thread_init ← exec_blas_async".
func stackLine(t *stacks.Thread) string {
	_, caller := waitOf(t)
	return stackLineN(t, min(max(caller+2, 4), 10))
}

// stackLineN shows a thread's n innermost frames.
func stackLineN(t *stacks.Thread, n int) string {
	if len(t.Stack) == 0 {
		return threadLabel(t) + ": no stack"
	}
	n = min(n, len(t.Stack))
	names := make([]string, n)
	for i, f := range t.Stack[:n] {
		names[i] = frameName(f)
	}
	more := ""
	if n < len(t.Stack) {
		more = " ← …"
	}
	return threadLabel(t) + ": " + strings.Join(names, " ← ") + more
}
