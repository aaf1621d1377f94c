package goproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"go/constant"
	"strconv"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"
	"github.com/go-delve/delve/pkg/proc"
	"golang.org/x/sys/unix"
)

// The Go runtime's internals read through DWARF: the strings it prints,
// where the fields of runtime.g and runtime.sudog delve does not expose
// lie, the goroutines' extra fields, channels and the semaphore table.

// Goroutine statuses (runtime/runtime2.go).
const (
	gRunning = 2
	gSyscall = 3
	gWaiting = 4
	gLeaked  = 10
	gScan    = 0x1000
)

// now is the runtime's clock (nanotime) at the read: the monotonic clock
// for a live process. A core's clock stopped when it was written, at a
// time no note records: the latest time the runtime itself wrote down
// (the last network poll, the end of the last GC, the start of a wait)
// is the nearest known before it, so waits read from a core are at
// least as long as said.
func (r *Reader) now(gs []*proc.G) int64 {
	if r.live {
		return monotonicNow()
	}
	var latest int64
	for _, g := range gs {
		latest = max(latest, g.WaitSince)
	}
	scope, err := proc.ThreadScope(r.target, r.target.CurrentThread())
	if err != nil {
		return latest
	}
	for _, expr := range []string{"runtime.sched.lastpoll", "runtime.memstats.last_gc_nanotime"} {
		if v, err := scope.EvalExpression(expr, proc.LoadConfig{MaxVariableRecurse: 1, MaxStructFields: -1}); err == nil {
			latest = max(latest, intValue(v))
		}
	}
	return latest
}

// intValue is an integer variable's value, or that of the one integer
// field of a wrapper (atomic.Int64); 0 when unreadable.
func intValue(v *proc.Variable) int64 {
	if v == nil || v.Unreadable != nil {
		return 0
	}
	if v.Value != nil {
		n, _ := constant.Int64Val(constant.ToInt(v.Value))
		return n
	}
	for i := range v.Children {
		if n := intValue(&v.Children[i]); n != 0 {
			return n
		}
	}
	return 0
}

// monotonicNow is the clock the runtime's nanotime reads on Linux.
func monotonicNow() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// runtimeInfo is what is read once from the runtime: the strings it
// prints and where the fields delve does not expose are.
type runtimeInfo struct {
	statusStrings []string
	waitReasons   []string
	allgs         uint64 // address of runtime.allgs (a slice header)
	semtable      uint64
	semCount      int64
	semStride     int64
	// offsets in runtime.g
	gGoid, gParentGoid, gLockedm, gWaiting int64
	// offsets in runtime.sudog
	sG, sElem, sNext, sPrev, sWaitlink, sC int64
	semRootTreap                           int64
	// sema offsets by wait reason: where the semaphore a waiter sleeps
	// on lies in the object it waits for; -1 when unknown.
	semaOffsets map[string]int64
}

func readRuntimeInfo(t *proc.Target) (*runtimeInfo, error) {
	scope, err := proc.ThreadScope(t, t.CurrentThread())
	if err != nil {
		return nil, fmt.Errorf("runtime: %v", err)
	}
	rt := &runtimeInfo{semaOffsets: map[string]int64{}}
	rt.statusStrings, err = stringArray(scope, "runtime.gStatusStrings")
	if err != nil {
		return nil, err
	}
	rt.waitReasons, err = stringArray(scope, "runtime.waitReasonStrings")
	if err != nil {
		return nil, err
	}
	addr := func(expr string) (uint64, error) {
		v, err := scope.EvalExpression(expr, proc.LoadConfig{})
		if err != nil {
			return 0, fmt.Errorf("runtime: %s: %v", expr, err)
		}
		return v.Addr, nil
	}
	if rt.allgs, err = addr("runtime.allgs"); err != nil {
		return nil, err
	}
	semtable, err := scope.EvalExpression("runtime.semtable", proc.LoadConfig{})
	if err != nil {
		return nil, fmt.Errorf("runtime: runtime.semtable: %v", err)
	}
	rt.semtable = semtable.Addr
	if at, ok := semtable.RealType.(*godwarf.ArrayType); ok && at.Count > 0 {
		rt.semCount, rt.semStride = at.Count, at.Type.Size()
		if st, ok := at.Type.(*godwarf.StructType); ok {
			rt.semRootTreap = fieldOffset(st, "root")
			if rootT := fieldType(st, "root"); rootT != nil {
				rt.semRootTreap += fieldOffset(rootT, "treap")
			}
		}
	}
	bi := t.BinInfo()
	g, err := structType(bi, "runtime.g")
	if err != nil {
		return nil, err
	}
	rt.gGoid, rt.gLockedm, rt.gWaiting = fieldOffset(g, "goid"), fieldOffset(g, "lockedm"), fieldOffset(g, "waiting")
	rt.gParentGoid = fieldOffset(g, "parentGoid") // Go 1.21 and later
	if rt.gGoid < 0 {
		return nil, errors.New("runtime: runtime.g has no goid")
	}
	if s, err := structType(bi, "runtime.sudog"); err == nil {
		rt.sG, rt.sElem, rt.sNext, rt.sPrev = fieldOffset(s, "g"), pointerOffset(s, "elem"), fieldOffset(s, "next"), fieldOffset(s, "prev")
		rt.sWaitlink, rt.sC = fieldOffset(s, "waitlink"), pointerOffset(s, "c")
	}
	// Go 1.24 moved sync.Mutex's state into internal/sync.Mutex, at
	// the start of sync.Mutex.
	mutexSema := int64(-1)
	if m, err := structType(bi, "internal/sync.Mutex"); err == nil {
		mutexSema = fieldOffset(m, "sema")
	} else if m, err := structType(bi, "sync.Mutex"); err == nil {
		mutexSema = fieldOffset(m, "sema")
	}
	rt.semaOffsets["sync.Mutex.Lock"] = mutexSema
	rt.semaOffsets["sync.RWMutex.RLock"], rt.semaOffsets["sync.RWMutex.Lock"] = -1, -1
	if rw, err := structType(bi, "sync.RWMutex"); err == nil {
		rt.semaOffsets["sync.RWMutex.RLock"] = fieldOffset(rw, "readerSem")
		rt.semaOffsets["sync.RWMutex.Lock"] = fieldOffset(rw, "writerSem")
	}
	rt.semaOffsets["sync.WaitGroup.Wait"] = -1
	if wg, err := structType(bi, "sync.WaitGroup"); err == nil {
		rt.semaOffsets["sync.WaitGroup.Wait"] = fieldOffset(wg, "sema")
		if rt.semaOffsets["sync.WaitGroup.Wait"] < 0 {
			// Go 1.19: state2 is the semaphore of a 64-bit aligned
			// WaitGroup (always, on 64-bit).
			rt.semaOffsets["sync.WaitGroup.Wait"] = fieldOffset(wg, "state2")
		}
	}
	return rt, nil
}

func stringArray(scope *proc.EvalScope, expr string) ([]string, error) {
	v, err := scope.EvalExpression(expr, proc.LoadConfig{MaxStringLen: 128, MaxArrayValues: 256, MaxVariableRecurse: 1, MaxStructFields: -1})
	if err != nil {
		return nil, fmt.Errorf("runtime: %s: %v", expr, err)
	}
	out := make([]string, len(v.Children))
	for i, c := range v.Children {
		out[i] = strings.Trim(c.Value.ExactString(), `"`)
		if s, err := strconv.Unquote(c.Value.ExactString()); err == nil {
			out[i] = s
		}
	}
	return out, nil
}

func structType(bi *proc.BinaryInfo, name string) (*godwarf.StructType, error) {
	t, err := bi.FindType(name)
	if err != nil {
		return nil, fmt.Errorf("runtime: type %s: %v", name, err)
	}
	st, ok := resolve(t).(*godwarf.StructType)
	if !ok {
		return nil, fmt.Errorf("runtime: type %s is not a struct", name)
	}
	return st, nil
}

func resolve(t godwarf.Type) godwarf.Type {
	for {
		td, ok := t.(*godwarf.TypedefType)
		if !ok {
			return t
		}
		t = td.Type
	}
}

// fieldOffset is the byte offset of a field of a struct, -1 when the
// struct has none of that name.
func fieldOffset(t godwarf.Type, name string) int64 {
	st, ok := resolve(t).(*godwarf.StructType)
	if !ok {
		return -1
	}
	for _, f := range st.Field {
		if f.Name == name {
			return f.ByteOffset
		}
	}
	return -1
}

// pointerOffset is fieldOffset for a pointer field that Go 1.26 wraps
// in maybeTraceablePtr{vp, vu}: vu always holds the address (vp is nil
// while the pointer is hidden from the GC).
func pointerOffset(t godwarf.Type, name string) int64 {
	off := fieldOffset(t, name)
	ft := fieldType(t, name)
	for off >= 0 && ft != nil {
		st, ok := resolve(ft).(*godwarf.StructType)
		if !ok {
			return off
		}
		if vu := fieldOffset(st, "vu"); vu >= 0 {
			return off + vu
		}
		if len(st.Field) != 1 {
			return -1
		}
		off += st.Field[0].ByteOffset
		ft = st.Field[0].Type
	}
	return off
}

func fieldType(t godwarf.Type, name string) godwarf.Type {
	st, ok := resolve(t).(*godwarf.StructType)
	if !ok {
		return nil
	}
	for _, f := range st.Field {
		if f.Name == name {
			return f.Type
		}
	}
	return nil
}

// status is the goroutine's status as the runtime prints it in a dump
// header (runtime.goroutineheader): the wait reason of a waiting
// goroutine, the scheduler status otherwise.
func (rt *runtimeInfo) status(g *proc.G) string {
	return statusText(g.Status, uint64(g.WaitReason), rt.statusStrings, rt.waitReasons)
}

// statusText is runtime.goroutineheader's status of a goroutine whose
// g.atomicstatus and g.waitreason are status and reason, in the
// runtime's own strings (gStatusStrings, waitReasonStrings). Both
// readers (DWARF and bare) name statuses with it.
func statusText(status, reason uint64, statuses, reasons []string) string {
	st := status &^ gScan
	s := "???"
	if st < uint64(len(statuses)) {
		s = statuses[st]
	}
	if (st == gWaiting || st == gLeaked) && reason > 0 && reason < uint64(len(reasons)) {
		s = reasons[reason]
	}
	return s
}

func (rt *runtimeInfo) semaOffset(status string) int64 {
	off, ok := rt.semaOffsets[status]
	if !ok {
		return -1
	}
	return off
}

// gExtra is what delve's G does not give.
type gExtra struct {
	addr       uint64
	parentGoid uint64
	lockedm    uint64
	waiting    uint64
}

// readGs reads, for every goroutine in runtime.allgs, the fields delve
// does not expose, keyed by goroutine id.
func (rt *runtimeInfo) readGs(p *process) map[uint64]gExtra {
	out := map[uint64]gExtra{}
	hdr := make([]byte, 16)
	if _, err := p.ReadMemory(hdr, rt.allgs); err != nil {
		return out
	}
	base, n := binary.LittleEndian.Uint64(hdr), binary.LittleEndian.Uint64(hdr[8:])
	if n > 10_000_000 {
		return out
	}
	ptrs := make([]byte, 8*n)
	if _, err := p.ReadMemory(ptrs, base); err != nil {
		return out
	}
	// One read per g covers the fields wanted.
	offs := []int64{rt.gGoid, rt.gParentGoid, rt.gLockedm, rt.gWaiting}
	lo, hi := rt.gGoid, rt.gGoid
	for _, o := range offs {
		if o >= 0 {
			lo, hi = min(lo, o), max(hi, o)
		}
	}
	if lo < 0 {
		return out
	}
	buf := make([]byte, hi+8-lo)
	word := func(off int64) uint64 {
		if off < 0 {
			return 0
		}
		return binary.LittleEndian.Uint64(buf[off-lo:])
	}
	for i := uint64(0); i < n; i++ {
		g := binary.LittleEndian.Uint64(ptrs[8*i:])
		if g == 0 {
			continue
		}
		if _, err := p.ReadMemory(buf, g+uint64(lo)); err != nil {
			continue
		}
		out[word(rt.gGoid)] = gExtra{addr: g, parentGoid: word(rt.gParentGoid), lockedm: word(rt.gLockedm), waiting: word(rt.gWaiting)}
	}
	return out
}

// chanOf is the channel of the first sudog a goroutine waits on.
func (rt *runtimeInfo) chanOf(p *process, sudog uint64) uint64 {
	if sudog == 0 || rt.sC < 0 {
		return 0
	}
	c, _ := p.u64(sudog, rt.sC)
	return c
}

// readSemtable maps each goroutine sleeping on a runtime semaphore to
// the semaphore's address (semWalk).
func (rt *runtimeInfo) readSemtable(p *process) map[uint64]uint64 {
	if rt.semCount == 0 || rt.sG < 0 || rt.sElem < 0 || rt.sWaitlink < 0 || rt.semRootTreap < 0 {
		return map[uint64]uint64{}
	}
	w := semWalk{g: rt.sG, elem: rt.sElem, waitlink: rt.sWaitlink, prev: rt.sPrev, next: rt.sNext,
		u64: func(addr uint64) (uint64, bool) { return p.u64(addr, 0) }}
	return w.waiters(rt.semtable, rt.semCount, rt.semStride, rt.semRootTreap)
}

// u64 reads the word at base+off.
func (p *process) u64(base uint64, off int64) (uint64, bool) {
	if off < 0 || base == 0 {
		return 0, false
	}
	var b [8]byte
	if _, err := p.ReadMemory(b[:], base+uint64(off)); err != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}

// atEntry is AT_ENTRY, the auxiliary vector's entry point (elf.h).
const atEntry = 9
