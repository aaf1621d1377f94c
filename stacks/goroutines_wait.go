package stacks

import (
	"strings"
)

// GoWait is what a goroutine's frames say it waits on.
type GoWait struct {
	// Kind is one of the GoWait* constants; "" when the stack is in no
	// wait hangdoc knows.
	Kind string
	// Frame is the index of the sync or channel frame the goroutine waits
	// in (sync.(*Mutex).Lock, runtime.chansend1, runtime.selectgo); the
	// frames past it are the code that asked to wait.
	Frame int
	// Caller is the index of the first frame past the wait machinery: the
	// user code that locked, sent or waited (len(stack) when none).
	Caller int
}

// Kinds of goroutine waits.
const (
	GoWaitMutex     = "mutex"     // sync.(*Mutex).Lock
	GoWaitRLock     = "rlock"     // sync.(*RWMutex).RLock
	GoWaitWLock     = "wlock"     // sync.(*RWMutex).Lock
	GoWaitWaitGroup = "waitgroup" // sync.(*WaitGroup).Wait
	GoWaitCond      = "cond"      // sync.(*Cond).Wait
	GoWaitSend      = "chan send" // runtime.chansend1
	GoWaitRecv      = "chan recv" // runtime.chanrecv1/2
	GoWaitSelect    = "select"    // runtime.selectgo, select with cases
	GoWaitBlock     = "select {}" // runtime.block: select with no cases, nil channel
	GoWaitSleep     = "sleep"     // time.Sleep
	GoWaitIO        = "io"        // the network poller
)

// goWaitFrames maps the frames a goroutine waits in to the kind of wait.
// The innermost that appears decides; the runtime's own frames above
// them (gopark, semacquire1, lockSlow) are machinery.
var goWaitFrames = map[string]string{
	"sync.(*Mutex).Lock":             GoWaitMutex,
	"sync.(*Mutex).lockSlow":         GoWaitMutex, // Go before 1.24, and not inlined
	"sync.(*RWMutex).RLock":          GoWaitRLock,
	"sync.(*RWMutex).Lock":           GoWaitWLock,
	"sync.(*WaitGroup).Wait":         GoWaitWaitGroup,
	"sync.(*Cond).Wait":              GoWaitCond,
	"runtime.chansend1":              GoWaitSend,
	"runtime.chanrecv1":              GoWaitRecv,
	"runtime.chanrecv2":              GoWaitRecv,
	"runtime.selectgo":               GoWaitSelect,
	"runtime.block":                  GoWaitBlock,
	"time.Sleep":                     GoWaitSleep,
	"internal/poll.runtime_pollWait": GoWaitIO,
}

// goWaitMachinery are the frames above a wait frame that only implement
// it: the caller of the wait is past them.
func goWaitMachinery(fn string) bool {
	return strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "sync.") ||
		strings.HasPrefix(fn, "internal/sync.") || strings.HasPrefix(fn, "internal/poll.") ||
		strings.HasPrefix(fn, "time.Sleep")
}

// GoMachineryFrame says whether the function fn is the Go runtime's, sync's
// or another internal package's: frames whose pointer arguments are the
// objects a goroutine waits on, not ones it holds, and not the program's
// own frames.
func GoMachineryFrame(fn string) bool {
	return strings.HasPrefix(fn, "runtime.") || strings.HasPrefix(fn, "sync.") || strings.HasPrefix(fn, "internal/")
}

// GoWaitOf reads what a goroutine's stack waits in: the innermost frame
// of goWaitFrames (an RWMutex over the Mutex it is built on), and the
// first frame past the runtime, sync and poll machinery. A stack in no
// known wait (a goroutine running, parked by the scheduler) gives Kind "".
func GoWaitOf(stack []Frame) GoWait {
	w := GoWait{Frame: -1, Caller: len(stack)}
	for i, f := range stack {
		if k, ok := goWaitFrames[f.Func]; ok {
			if w.Kind == "" || w.Kind == GoWaitMutex && (k == GoWaitRLock || k == GoWaitWLock) {
				w.Kind, w.Frame = k, i
			}
			continue
		}
		if goWaitMachinery(f.Func) {
			continue
		}
		if w.Kind == "" {
			return GoWait{Frame: -1, Caller: len(stack)}
		}
		w.Caller = i
		return w
	}
	return w
}

// goWaitObject is the address of the sync object or channel a goroutine
// waits on, read from the arguments the dump printed: the receiver of
// the sync frame (the first word of sync.(*Mutex).lockSlow, of
// sync.(*WaitGroup).Wait), the hchan of runtime.chansend/chanrecv, and,
// where those were inlined ("(...)") or printed as unreliable ("0x0?"),
// the semaphore address runtime.semacquire1 got, less the offset of that
// semaphore in the object (the same in every Go from 1.19 on). 0 when
// none is known.
func goWaitObject(stack []Frame) uint64 {
	w := GoWaitOf(stack)
	if w.Kind == "" {
		return 0
	}
	recv := func(names ...string) uint64 {
		for _, f := range stack[:w.Caller] {
			for _, n := range names {
				if f.Func == n {
					if v, ok := goFirstWord(f); ok {
						return v
					}
				}
			}
		}
		return 0
	}
	sema := func(off uint64) uint64 {
		if v := recv("runtime.semacquire1"); v > off {
			return v - off
		}
		return 0
	}
	switch w.Kind {
	case GoWaitMutex:
		// sync.Mutex is internal/sync.Mutex (Go 1.24) at offset 0, or
		// itself: state int32, sema uint32.
		if v := recv("sync.(*Mutex).Lock", "sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).Lock"); v != 0 {
			return v
		}
		return sema(4)
	case GoWaitRLock:
		// RWMutex{w Mutex; writerSem uint32 @8; readerSem uint32 @12; …}
		if v := recv("sync.(*RWMutex).RLock"); v != 0 {
			return v
		}
		return sema(12)
	case GoWaitWLock:
		if v := recv("sync.(*RWMutex).Lock"); v != 0 {
			return v
		}
		// Waiting for another writer: on w, the first field.
		if v := recv("sync.(*Mutex).lockSlow", "internal/sync.(*Mutex).lockSlow"); v != 0 {
			return v
		}
		return sema(8) // waiting for the readers: writerSem
	case GoWaitWaitGroup:
		// WaitGroup{noCopy; state atomic.Uint64; sema uint32 @8}
		if v := recv("sync.(*WaitGroup).Wait"); v != 0 {
			return v
		}
		return sema(8)
	case GoWaitSend:
		return recv("runtime.chansend", "runtime.chansend1")
	case GoWaitRecv:
		return recv("runtime.chanrecv", "runtime.chanrecv1", "runtime.chanrecv2")
	}
	return 0
}

// goFirstWord is a frame's first argument word when the dump printed it
// as exact: a hex word without the "?" the runtime adds to a value that
// may be stale (a register argument it did not spill).
func goFirstWord(f Frame) (uint64, bool) {
	if len(f.Args) == 0 || f.Inlined {
		return 0, false
	}
	a := f.Args[0]
	if !a.Exact || a.Addr < 4096 {
		return 0, false // nil, or a small integer: not an address
	}
	return a.Addr, true
}
