package goproc

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"go/constant"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-delve/delve/pkg/dwarf/godwarf"
	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/proc/linutil"
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/stacks"
)

// Version returns the Go version an executable was built with ("go1.26.8")
// and whether it is a Go program at all: the build information the
// linker writes into every Go binary (.go.buildinfo).
func Version(exe string) (string, bool) {
	bi, err := buildinfo.ReadFile(exe)
	if err != nil {
		return "", false
	}
	return bi.GoVersion, true
}

// ThreadRegs are one OS thread's registers, captured under a ptrace stop
// that has already ended, or read from a core.
type ThreadRegs struct {
	Tid  int
	Regs Regs
}

// Regs are an x86-64 thread's registers as PTRACE_GETREGS and
// NT_PRSTATUS give them: delve's copy of the kernel's struct, which
// builds on every host (unix.PtraceRegs is the host's own).
type Regs = linutil.AMD64PtraceRegs

// Reader reads the goroutines of one process, sample after sample, or
// of one core file. It is not safe for concurrent use.
type Reader struct {
	pid     int
	what    string // "pid 123" or "core of pid 123", for messages
	exe     string // the executable delve reads the debug information of
	version string
	p       *process
	target  *proc.Target
	rt      *runtimeInfo // read on the first sample
	// live is false for a core: its clock stopped when it was written.
	live bool
	// bare reads the runtime's structures without DWARF (nil when the
	// executable has DWARF: delve reads it).
	bare *bare
}

// Open loads the executable's debug information (the slow part: DWARF,
// line tables) without stopping or touching the process.
func Open(pid int) (*Reader, error) { return openLive(pid, false) }

// OpenWithoutDWARF is Open that reads the runtime's structures by the
// release's layout even when the executable has DWARF (tests compare
// the two readers on one process).
func OpenWithoutDWARF(pid int) (*Reader, error) { return openLive(pid, true) }

func openLive(pid int, bare bool) (*Reader, error) {
	what := fmt.Sprintf("pid %d", pid)
	entry, err := entryPoint(pid)
	if err != nil {
		return nil, err
	}
	// The mapped file, even if deleted or replaced.
	r, err := open(what, fmt.Sprintf("/proc/%d/exe", pid), entry, liveMemory(pid), bare)
	if err != nil {
		return nil, err
	}
	r.pid, r.live = pid, true
	if r.bare != nil {
		r.bare.live = true
	}
	return r, nil
}

// OpenCore is Open for a core file of process pid: exe is the
// executable it ran (the very build), entry its entry point as the
// core's auxiliary vector gives it (AT_ENTRY), mem the core's memory,
// with the mapped files behind what the core left out (a kernel core
// holds no read-only data of the executable).
//
// withoutDWARF reads the runtime's structures by the release's layout
// even when the executable has DWARF.
func OpenCore(pid int, exe string, entry uint64, mem Memory, withoutDWARF bool) (*Reader, error) {
	r, err := open(fmt.Sprintf("core of pid %d", pid), exe, entry, mem, withoutDWARF)
	if err != nil {
		return nil, err
	}
	r.pid = pid
	return r, nil
}

func open(what, exe string, entry uint64, mem Memory, withoutDWARF bool) (*Reader, error) {
	version, ok := Version(exe)
	if !ok {
		return nil, fmt.Errorf("%s: not a Go program (no Go build information in its executable)", what)
	}
	if withoutDWARF {
		b, err := openBare(what, exe, entry, mem, version)
		if err != nil {
			return nil, err
		}
		return &Reader{what: what, exe: exe, version: version, bare: b}, nil
	}
	if err := hasDWARF(exe); err != nil {
		b, berr := openBare(what, exe, entry, mem, version)
		if berr != nil {
			return nil, fmt.Errorf("%s: %v; %v", what, err, strings.TrimPrefix(berr.Error(), what+": "))
		}
		return &Reader{what: what, exe: exe, version: version, bare: b}, nil
	}
	p := &process{mem: mem, entryPoint: entry, bi: proc.NewBinaryInfo("linux", "amd64", true),
		threads: map[int]*thread{}, breakpoints: proc.NewBreakpointMap()}
	// Loaded here so that the target built on the first sample finds it
	// (AddImage skips an image it has) and no thread waits for DWARF.
	if err := p.bi.LoadBinaryInfo(exe, entry, nil); err != nil {
		return nil, fmt.Errorf("%s: Go debug information: %v", what, err)
	}
	return &Reader{what: what, exe: exe, version: version, p: p}, nil
}

// GoVersion is the runtime's version, "go1.26.8".
func (r *Reader) GoVersion() string { return r.version }

// RefusedWrites counts the changes delve asked to make to the target and
// was refused: breakpoints, memory, registers.
func (r *Reader) RefusedWrites() int64 {
	if r.p == nil {
		return 0 // nothing but memory reads
	}
	return r.p.refused.Load()
}

// withoutDWARFNote is the note of a Go process read without DWARF.
const withoutDWARFNote = "no DWARF: goroutines read without DWARF from the runtime's own structures (pclntab, allgs, the release's struct layout); frame arguments are the words the runtime's traceback prints, without names"

// WithoutDWARF says the goroutines are read from the runtime's
// structures by the release's layout, not through DWARF.
func (r *Reader) WithoutDWARF() bool { return r.bare != nil }

// hasDWARF checks that the executable carries the debug information
// goroutines are read with (delve would print a warning on stderr and
// read nothing useful).
func hasDWARF(exe string) error {
	f, err := elf.Open(exe)
	if err != nil {
		return err
	}
	defer f.Close()
	if f.Section(".debug_info") == nil && f.Section(".zdebug_info") == nil {
		return errors.New("the executable has no DWARF debug information (built with -ldflags=-w, stripped, or by go test or go run, which link with -s -w: go test -ldflags='-s=false -w=false' keeps it)")
	}
	return nil
}

// entryPoint reads AT_ENTRY from the process's auxiliary vector: the
// relocated entry point delve needs to place a PIE.
func entryPoint(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, fmt.Errorf("pid %d: %v", pid, err)
	}
	for i := 0; i+16 <= len(b); i += 16 {
		if binary.LittleEndian.Uint64(b[i:]) == atEntry {
			return binary.LittleEndian.Uint64(b[i+8:]), nil
		}
	}
	return 0, fmt.Errorf("pid %d: no entry point in /proc/%d/auxv", pid, pid)
}

// Options bound a read.
type Options struct {
	MaxDepth int  // frames per stack at most
	Threads  bool // also unwind every OS thread
}

// Result is one sample of the process.
type Result struct {
	Goroutines []*stacks.Thread // Tid is the goroutine id
	// OSThreads holds each OS thread's stack by tid, when asked for.
	OSThreads map[int][]stacks.Frame
	// Notes say what could not be read.
	Notes []string
}

// Read walks every goroutine from memory, using the registers captured
// for the threads that run one. The threads are not stopped: parked
// goroutines do not move, and a goroutine that ran meanwhile is read as
// it was at its capture or as it is now.
func (r *Reader) Read(regs []ThreadRegs, opts Options) (*Result, error) {
	if len(regs) == 0 {
		return nil, errors.New("no thread registers")
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = 512
	}
	if r.bare != nil {
		return r.bare.read(regs, opts)
	}
	r.p.threads = make(map[int]*thread, len(regs))
	current := &thread{p: r.p, tid: regs[0].Tid, regs: regs[0].Regs}
	for _, tr := range regs {
		th := &thread{p: r.p, tid: tr.Tid, regs: tr.Regs}
		r.p.threads[tr.Tid] = th
		if tr.Tid == r.pid {
			current = th
		}
	}
	r.p.pages = newPageCache()
	defer func() { r.p.pages = nil }()
	if err := r.openTarget(current); err != nil {
		return nil, err
	}
	res := &Result{}
	if r.rt == nil {
		rt, err := readRuntimeInfo(r.target)
		if err != nil {
			return nil, err
		}
		r.rt = rt
	}
	gs, _, err := proc.GoroutinesInfo(r.target, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: goroutines: %v", r.what, err)
	}
	extra := r.rt.readGs(r.p)
	var sema map[uint64]uint64
	now := r.now(gs)
	for _, g := range gs {
		if g.Unreadable != nil {
			if n := fmt.Sprintf("a goroutine could not be read: %v", g.Unreadable); !slices.Contains(res.Notes, n) {
				res.Notes = append(res.Notes, n)
			}
			continue
		}
		x := extra[uint64(g.ID)]
		gr := &stacks.Goroutine{ID: int(g.ID), Status: r.rt.status(g), LockedToThread: x.lockedm != 0}
		if gr.ID != 1 && g.GoPC != 0 {
			loc := g.Go()
			gr.CreatedBy = frameOf(loc)
			gr.CreatedBy.PC = loc.PC
			gr.CreatedByGoroutine = int(x.parentGoid)
		}
		st := g.Status &^ gScan
		if (st == gWaiting || st == gSyscall) && g.WaitSince != 0 && now > g.WaitSince {
			gr.WaitMinutes = int((now - g.WaitSince) / int64(time.Minute))
		}
		th := &stacks.Thread{Tid: gr.ID, Name: "goroutine " + strconv.Itoa(gr.ID), State: stacks.GoroutineState(gr.Status), Goroutine: gr}
		frames, err := r.stacktrace(g, opts.MaxDepth)
		var at []int
		th.Stack, at = framesOf(frames)
		wait := syncWait(gr.Status, th.Stack)
		switch {
		case strings.HasPrefix(wait, "chan send") || strings.HasPrefix(wait, "chan receive"):
			if !strings.Contains(wait, "nil chan") {
				gr.Object = r.rt.chanOf(r.p, x.waiting)
			}
		case r.rt.semaOffset(wait) >= 0:
			if sema == nil {
				sema = r.rt.readSemtable(r.p)
			}
			if addr, ok := sema[x.addr]; ok {
				gr.Object = addr - uint64(r.rt.semaOffset(wait))
			}
		}
		if argsWanted(wait) {
			for j, i := range at {
				th.Stack[j].Args = r.pointerArgs(g, frames, i)
			}
		}
		if g.Thread == nil {
			r.parkedTop(th.Stack, frames)
		}
		if err != nil {
			th.Notes = append(th.Notes, fmt.Sprintf("stack may be incomplete: %v", err))
		}
		res.Goroutines = append(res.Goroutines, th)
	}
	if opts.Threads {
		res.OSThreads = map[int][]stacks.Frame{}
		for _, tr := range regs {
			frames, _ := proc.ThreadStacktrace(r.target, r.p.threads[tr.Tid], opts.MaxDepth)
			res.OSThreads[tr.Tid], _ = framesOf(frames)
		}
	}
	return res, nil
}

// shortDepth is the depth a stack is first read to: delve allocates
// room for the whole depth per goroutine, which over 10,000 goroutines
// costs seconds at 512; the few deeper stacks are read again in full.
const shortDepth = 48

func (r *Reader) stacktrace(g *proc.G, depth int) ([]proc.Stackframe, error) {
	frames, err := proc.GoroutineStacktrace(r.target, g, min(depth, shortDepth), 0)
	if len(frames) > shortDepth && depth > shortDepth {
		frames, err = proc.GoroutineStacktrace(r.target, g, depth, 0)
	}
	return frames, err
}

// openTarget makes delve's target on the first sample, like
// core.OpenCore does, and refreshes it on the next ones.
//
// Making a target sets delve's unrecovered-panic and fatal-throw
// breakpoints: process.WriteBreakpoint refuses them, so they are never
// written (RefusedWrites counts them).
func (r *Reader) openTarget(current *thread) error {
	if r.target != nil {
		r.target.ClearCaches() // the process ran since the last sample
		return nil
	}
	_, addTarget := proc.NewGroup(r.p, proc.NewTargetGroupConfig{
		DisableAsyncPreempt: false, // true would write runtime.debug.asyncpreemptoff
		CanDump:             false,
	})
	t, err := addTarget(r.p, r.pid, current, r.exe, proc.StopAttached, "")
	if err != nil {
		return fmt.Errorf("%s: %v", r.what, err)
	}
	r.target = t
	return nil
}

// parkedTop gives the top frame of a parked goroutine the line the
// runtime prints for it: its saved PC is a return address (gopark's call
// into mcall), so the line is that of the call, as for every frame
// below it.
func (r *Reader) parkedTop(st []stacks.Frame, frames []proc.Stackframe) {
	if len(st) == 0 || frames[0].Inlined || frames[0].Current.Fn == nil {
		return
	}
	pc := frames[0].Current.PC
	if pc <= frames[0].Current.Fn.Entry {
		return
	}
	if file, line, fn := r.p.bi.PCToLine(pc - 1); fn == frames[0].Current.Fn {
		st[0].File, st[0].Line = file, line
	}
}

// framesOf converts delve's frames; at[j] is the index in frames of
// out[j].
func framesOf(frames []proc.Stackframe) (out []stacks.Frame, at []int) {
	out = make([]stacks.Frame, 0, len(frames))
	for i, f := range frames {
		if f.Current.PC == 0 && f.Call.Fn == nil {
			continue // past the outermost frame of a thread
		}
		fr := frameOf(f.Call)
		fr.PC = f.Current.PC
		fr.Inlined = f.Inlined
		out = append(out, fr)
		at = append(at, i)
	}
	return out, at
}

// syncWait is the status a goroutine's sync wait has since Go 1.20
// ("sync.Mutex.Lock", …): before, the runtime said "semacquire" for
// every one of them, and only the frames tell which.
func syncWait(status string, st []stacks.Frame) string {
	if status != "semacquire" {
		return status
	}
	switch stacks.GoWaitOf(st).Kind {
	case stacks.GoWaitMutex:
		return "sync.Mutex.Lock"
	case stacks.GoWaitRLock:
		return "sync.RWMutex.RLock"
	case stacks.GoWaitWLock:
		return "sync.RWMutex.Lock"
	case stacks.GoWaitWaitGroup:
		return "sync.WaitGroup.Wait"
	}
	return status
}

// argsWanted: the statuses whose goroutines get their frame arguments
// read, the waits whose holders or partners the heuristics look for by
// the pointers frames received (as in a dump). Only these: reading
// arguments for the 10,000 goroutines of a leak would cost seconds.
func argsWanted(status string) bool {
	switch status {
	case "sync.Mutex.Lock", "sync.RWMutex.RLock", "sync.RWMutex.Lock", "sync.WaitGroup.Wait":
		return true
	}
	return strings.HasPrefix(status, "chan send") || strings.HasPrefix(status, "chan receive")
}

// maxArgFrames bounds the frames whose arguments are read.
const maxArgFrames = 16

// argsLoad reads an argument's own words only: a pointer's value, not
// what it points to.
var argsLoad = proc.LoadConfig{FollowPointers: false, MaxVariableRecurse: 0}

// pointerArgs reads the pointer-valued formal arguments of frame i, a
// frame of the program (not of the runtime, sync or internal/), as
// "name=0xADDR" the way a dump prints argument words. delve reads them
// through the frame's DWARF locations; an argument optimised away or
// held in a register of an outer frame (which unwinding does not
// recover) is unreadable and left out, never guessed. Reading evaluates
// no expression and calls no function in the target.
func (r *Reader) pointerArgs(g *proc.G, frames []proc.Stackframe, i int) (out []stacks.Arg) {
	fn := frames[i].Call.Fn
	if i >= maxArgFrames || fn == nil || stacks.GoMachineryFrame(fn.Name) {
		return nil
	}
	// The target runs while it is read: a frame that changed under
	// delve's evaluator costs its arguments, not the read.
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	tid := 0
	if g.Thread != nil {
		tid = g.Thread.ThreadID()
	}
	scope := proc.FrameToScope(r.target, r.target.Memory(), g, tid, frames[i:]...)
	vars, err := scope.FunctionArguments(argsLoad)
	if err != nil {
		return nil
	}
	for _, v := range vars {
		if v.Unreadable != nil || v.Flags&proc.VariableReturnArgument != 0 {
			continue
		}
		if v.Kind != reflect.Ptr && v.Kind != reflect.UnsafePointer || len(v.Children) != 1 {
			continue
		}
		if p := v.Children[0].Addr; p != 0 {
			out = append(out, stacks.Arg{Name: v.Name, Value: fmt.Sprintf("%#x", p)})
		}
	}
	return out
}

func frameOf(loc proc.Location) stacks.Frame {
	fr := stacks.Frame{File: loc.File, Line: loc.Line}
	if loc.Fn != nil {
		fr.Func = loc.Fn.Name
	}
	return fr
}

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

// Goroutine statuses (runtime/runtime2.go).
const (
	gRunning = 2
	gSyscall = 3
	gWaiting = 4
	gLeaked  = 10
	gScan    = 0x1000
)

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
	st := g.Status &^ gScan
	s := "???"
	if st < uint64(len(rt.statusStrings)) {
		s = rt.statusStrings[st]
	}
	if (st == gWaiting || st == gLeaked) && g.WaitReason > 0 && g.WaitReason < int64(len(rt.waitReasons)) {
		s = rt.waitReasons[g.WaitReason]
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
