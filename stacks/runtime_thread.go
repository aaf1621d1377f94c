package stacks

import "encoding/json"

// The kinds of RuntimeThread: which runtime's thread it is.
const (
	KindGoroutine = "goroutine" // a Go goroutine: Tid is its id
	KindPython    = "python"    // a thread that runs CPython
	KindJava      = "java"      // a JVM's Java thread
)

// RuntimeThread is what a language runtime says of a thread besides its
// stack, one shape for every runtime: a new runtime is a new Kind, not
// new fields of Thread. Fields a runtime does not give stay zero.
type RuntimeThread struct {
	Kind string // KindGoroutine, KindPython, KindJava
	// ID is the runtime's own id of the thread: a Java thread's "#12" (0
	// when the dump prints none). A goroutine's id is its Thread's Tid:
	// a goroutine dump's parser leaves ID 0, as goroutines alike in all
	// their facts share one RuntimeThread (share.go).
	ID int
	// Status is the wait reason, or the scheduler status when there is
	// none, as the runtime prints it. Go: "chan receive",
	// "sync.Mutex.Lock", "select", "IO wait", "sync.WaitGroup.Wait",
	// "semacquire" (Go before 1.20 for every sync wait), "running",
	// "runnable", "syscall", "idle". Java: java.lang.Thread.State,
	// "BLOCKED (on object monitor)", "WAITING (parking)".
	Status string
	// WaitMinutes is how long the thread had been blocked, in whole
	// minutes, as the runtime recorded it: a lower bound (Go starts
	// counting at the first GC after the goroutine blocked and prints
	// nothing under a minute).
	WaitMinutes int
	// Object is the address of what the thread waits on, when known:
	// the sync.Mutex or sync.RWMutex of a Go lock wait, the WaitGroup,
	// the channel. Threads waiting on one object share it. A dump gives
	// it as the receiver argument of the waiting frame; a live read
	// evaluates it. Java: the monitor ("- waiting to lock <0x…>"), the
	// java.util.concurrent lock ("- parking to wait for <0x…>"), the
	// class being initialised (an address made from its name).
	Object uint64
	// ObjectType is what Object is, as the runtime names it (Java: its
	// class, "java.lang.Object",
	// "java.util.concurrent.locks.ReentrantLock$NonfairSync").
	ObjectType string
	// Holder is the tid of the thread that holds Object, when the
	// runtime says (Java: the thread that shows it "- locked", lists it
	// among its "Locked ownable synchronizers", runs the class's
	// <clinit>, or that the deadlock summary names); 0 when unknown.
	Holder int
	// Held are the objects the thread holds (Java: its locked monitors,
	// ownable synchronizers and classes it initialises), in the dump's
	// order.
	Held []uint64
	// CreatedBy is the frame that started the thread (Go: the go
	// statement); zero for a main thread and when the dump omits it.
	CreatedBy Frame
	// CreatedByID is the runtime id of the thread that ran CreatedBy (Go
	// 1.21 and later print it); 0 when unknown.
	CreatedByID int
	// LockedToThread is set for a goroutine wired to its OS thread
	// (runtime.LockOSThread, cgo callbacks, the main goroutine in init).
	LockedToThread bool
	// HoldsGIL is set when the thread held the Python GIL (py-spy's
	// "active+gil" and "gil", a live read of the interpreter).
	HoldsGIL bool
}

// PythonHoldingGIL is the runtime facts of the Python thread that holds
// the GIL. Python threads the runtime says nothing more of have none.
func PythonHoldingGIL() *RuntimeThread {
	return &RuntimeThread{Kind: KindPython, HoldsGIL: true}
}

// LockWait is a wait on Object as a lock with an owner, the shape the
// wait-for graph and hangdoc/v1 give a lock wait (wait.mutex: address,
// class, owner's tid): a Java thread's monitor or j.u.c lock wait. Nil
// for other runtimes, whose objects are no such locks, and when the
// thread waits on none.
func (r *RuntimeThread) LockWait() *Wait {
	if r == nil || r.Kind != KindJava || r.Object == 0 {
		return nil
	}
	return &Wait{Nr: -1, Mutex: &Mutex{Addr: r.Object, Symbol: r.ObjectType, Owner: r.Holder}}
}

// Goroutine is the thread's goroutine facts; nil when it is no goroutine.
func (t *Thread) Goroutine() *RuntimeThread {
	if t.Runtime != nil && t.Runtime.Kind == KindGoroutine {
		return t.Runtime
	}
	return nil
}

// HoldsGIL says whether the thread held the Python GIL.
func (t *Thread) HoldsGIL() bool {
	return t.Runtime != nil && t.Runtime.HoldsGIL
}

// threadFields is Thread without its methods, for its JSON form.
type threadFields Thread

// threadJSON is a Thread in hangdoc/v1: the runtime's facts under the
// names the contract gave them before there was one RuntimeThread.
type threadJSON struct {
	*threadFields
	HoldsGIL  bool           `json:"holds_gil,omitempty"`
	Goroutine *goroutineJSON `json:"goroutine,omitempty"`
}

// goroutineJSON is a goroutine's RuntimeThread in hangdoc/v1.
type goroutineJSON struct {
	ID                 int    `json:"id"`
	Status             string `json:"status"`
	WaitMinutes        int    `json:"wait_minutes,omitempty"`
	LockedToThread     bool   `json:"locked_to_thread,omitempty"`
	CreatedBy          Frame  `json:"created_by,omitzero"`
	CreatedByGoroutine int    `json:"created_by_goroutine,omitempty"`
	Object             uint64 `json:"object,omitempty"`
}

// MarshalJSON writes the thread in hangdoc/v1: its fields, then the
// runtime's facts (the last members, as before there was a Runtime). A
// Java thread's lock wait is its wait.mutex, as before there was a
// Runtime; its other Java facts are not in hangdoc/v1.
func (t Thread) MarshalJSON() ([]byte, error) {
	if t.Wait == nil {
		t.Wait = t.Runtime.LockWait()
	}
	b, err := json.Marshal((*threadFields)(&t))
	if err != nil || t.Runtime == nil {
		return b, err
	}
	b = b[:len(b)-1] // the closing brace
	if t.HoldsGIL() {
		b = append(b, `,"holds_gil":true`...)
	}
	if g := t.Goroutine(); g != nil {
		gj, err := json.Marshal(goroutineJSON{ID: t.Tid, Status: g.Status, WaitMinutes: g.WaitMinutes, LockedToThread: g.LockedToThread,
			CreatedBy: g.CreatedBy, CreatedByGoroutine: g.CreatedByID, Object: g.Object})
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"goroutine":`...), gj...)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads a thread of a hangdoc/v1 document. A document
// says only of the Python thread that holds the GIL that it is one.
func (t *Thread) UnmarshalJSON(b []byte) error {
	j := threadJSON{threadFields: (*threadFields)(t)}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	switch g := j.Goroutine; {
	case g != nil:
		t.Runtime = &RuntimeThread{Kind: KindGoroutine, ID: g.ID, Status: g.Status, WaitMinutes: g.WaitMinutes,
			LockedToThread: g.LockedToThread, CreatedBy: g.CreatedBy, CreatedByID: g.CreatedByGoroutine, Object: g.Object}
	case j.HoldsGIL:
		t.Runtime = PythonHoldingGIL()
	}
	return nil
}
