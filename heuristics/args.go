package heuristics

// Lock addresses a dump shows in frame arguments. gdb prints the
// arguments of every frame it has debug information for:
// `___pthread_mutex_lock (mutex=0x5555… <server_lock>)`,
// `pass_on (mine=0x… <lock_c>, next=0x… <lock_a>)`. Without mutex owners
// (a pasted dump), they are the only way to tell which lock a thread waits
// for, which threads wait for the same one, and which other locks a
// thread's own frames have in hand. Everything here is used only for
// threads whose wait attach did not read (Thread.Wait.Mutex is nil).

import (
	"fmt"

	"github.com/hangdoc/hangdoc/stacks"
)

// argLock is a lock as a dump's arguments name it.
type argLock struct {
	Addr   uint64
	Symbol string // "server_lock", "work_cond+40"; "" when gdb printed none
}

func (l argLock) String() string {
	if l.Symbol != "" {
		return fmt.Sprintf("mutex `%s` (%#x)", l.Symbol, l.Addr)
	}
	return fmt.Sprintf("mutex %#x", l.Addr)
}

// argAddr is the lock an address argument may name (stacks.NewArg read
// its address and symbol). Null and small values are not addresses of a
// lock.
func argAddr(a stacks.Arg) (argLock, bool) {
	if a.Addr < 0x1000 {
		return argLock{}, false
	}
	return argLock{Addr: a.Addr, Symbol: a.Symbol}, true
}

// lockArgNames are the parameter names of the lock in glibc's mutex and
// rwlock functions, libstdc++'s wrappers and the usual spellings
// elsewhere; "this" of a lock method (std::mutex::lock) is the lock too.
var lockArgNames = set("mutex", "__mutex", "m", "__m", "mtx", "mu", "lock", "lk", "rwlock", "__rwlock",
	"futex", "futex_word", "this")

// waitArgLock returns the lock a thread waits for as its wait frames'
// arguments name it, and the index of the frame that named it. It reads
// only the frames of the wait itself (lock and futex internals), innermost
// first, preferring a lock function's argument to a bare futex word.
func waitArgLock(t *stacks.Thread) (argLock, int, bool) {
	class, caller := waitOf(t)
	if w := threadWait(t); class != waitLock || (w != nil && w.Mutex != nil) {
		return argLock{}, -1, false
	}
	fallback, fallbackAt := argLock{}, -1
	for i, f := range t.Stack[:min(caller, len(t.Stack))] {
		lockFn := isLockFrame(f)
		if !lockFn && !isFutexFrame(f) {
			continue
		}
		row := nativeRow(f)
		for _, a := range f.Args {
			if !row.HasLockArg(a.Name) && (!lockArgNames[a.Name] || row != nil && row.Guard) {
				continue // a locker class's this is the guard, not the lock
			}
			l, ok := argAddr(a)
			if !ok {
				continue
			}
			if lockFn {
				if l.Symbol == "" && fallback.Symbol != "" && fallback.Addr == l.Addr {
					l.Symbol = fallback.Symbol
				}
				return l, i, true
			}
			if fallbackAt < 0 {
				fallback, fallbackAt = l, i
			}
		}
	}
	return fallback, fallbackAt, fallbackAt >= 0
}

// argAddrsIn lists the address arguments of the frames from..to-1 with
// the index of the frame each is in.
func argAddrsIn(st []stacks.Frame, from, to int) (ls []argLock, at []int) {
	for i := max(from, 0); i < min(to, len(st)); i++ {
		for _, a := range st[i].Args {
			if l, ok := argAddr(a); ok {
				ls = append(ls, l)
				at = append(at, i)
			}
		}
	}
	return ls, at
}

// joinArgTid is the thread a pthread_join waits for as the futex wait
// under it shows: glibc waits on the joined thread's tid word with the
// tid as the expected value. 0 when the frames do not say, or when the
// value names no thread of the process.
func joinArgTid(p *stacks.Process, t *stacks.Thread) int {
	class, caller := waitOf(t)
	if class != waitJoin || t.Wait != nil && t.Wait.JoinTid != 0 {
		return 0
	}
	for _, f := range t.Stack[:min(caller, len(t.Stack))] {
		if !isFutexFrame(f) {
			continue
		}
		for _, a := range f.Args {
			if a.Name != "expected" {
				continue
			}
			n, ok := a.Int()
			tid := int(n)
			if !ok || tid <= 0 || tid == t.Tid {
				continue
			}
			for _, o := range p.Threads {
				if o.Tid == tid {
					return tid
				}
			}
		}
	}
	return 0
}

// argWaiter is a thread that waits for a lock its arguments name.
type argWaiter struct {
	ref  ThreadRef
	lock argLock
	// held are the other locks (addresses some thread of the process
	// waits for) that the thread's frames past the wait were called
	// with: most likely locks it took on the way, and holds.
	held []argLock
}

// argLockView is what the arguments tell about one process's locks.
type argLockView struct {
	waiters []argWaiter
	byAddr  map[uint64][]int // lock address → indexes into waiters
	order   []uint64         // lock addresses in the order first seen
}

// argLocks reads the lock arguments of the waiters of a process. It is
// empty when no waiter's arguments name its lock.
func argLocks(p *stacks.Process, ws []ThreadRef) argLockView {
	v := argLockView{byAddr: map[uint64][]int{}}
	for _, w := range ws {
		l, _, ok := waitArgLock(w.Thread)
		if !ok {
			continue
		}
		if _, seen := v.byAddr[l.Addr]; !seen {
			v.order = append(v.order, l.Addr)
		}
		v.byAddr[l.Addr] = append(v.byAddr[l.Addr], len(v.waiters))
		v.waiters = append(v.waiters, argWaiter{ref: w, lock: l})
	}
	for i := range v.waiters {
		w := &v.waiters[i]
		_, caller := waitOf(w.ref.Thread)
		ls, _ := argAddrsIn(w.ref.Thread.Stack, caller, len(w.ref.Thread.Stack))
		for _, l := range ls {
			if l.Addr == w.lock.Addr || len(v.byAddr[l.Addr]) == 0 || containsLock(w.held, l.Addr) {
				continue
			}
			w.held = append(w.held, v.lockAt(l.Addr, l))
		}
	}
	return v
}

func containsLock(ls []argLock, addr uint64) bool {
	for _, l := range ls {
		if l.Addr == addr {
			return true
		}
	}
	return false
}

// lockAt returns the lock at addr with the best name any waiter gave it.
func (v argLockView) lockAt(addr uint64, l argLock) argLock {
	for _, i := range v.byAddr[addr] {
		if w := v.waiters[i]; w.lock.Symbol != "" {
			return w.lock
		}
	}
	return l
}

// of returns the lock the thread waits for, if its arguments name it.
func (v argLockView) of(t *stacks.Thread) (argWaiter, bool) {
	for _, w := range v.waiters {
		if w.ref.Thread == t {
			return w, true
		}
	}
	return argWaiter{}, false
}
