package goproc

import (
	"debug/buildinfo"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/proc/linutil"

	"github.com/hangdoc/hangdoc/attach/procmem"
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
	r, err := open(what, fmt.Sprintf("/proc/%d/exe", pid), entry, procmem.Live(pid), bare)
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
		gr := &stacks.RuntimeThread{Kind: stacks.KindGoroutine, ID: int(g.ID), Status: r.rt.status(g), LockedToThread: x.lockedm != 0}
		if gr.ID != 1 && g.GoPC != 0 {
			loc := g.Go()
			gr.CreatedBy = frameOf(loc)
			gr.CreatedBy.PC = loc.PC
			gr.CreatedByID = int(x.parentGoid)
		}
		st := g.Status &^ gScan
		if (st == gWaiting || st == gSyscall) && g.WaitSince != 0 && now > g.WaitSince {
			gr.WaitMinutes = int((now - g.WaitSince) / int64(time.Minute))
		}
		th := &stacks.Thread{Tid: gr.ID, Name: "goroutine " + strconv.Itoa(gr.ID), State: stacks.GoroutineState(gr.Status), Runtime: gr}
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
		res.add(th, err)
	}
	res.addOSThreads(regs, opts, func(tr ThreadRegs) []stacks.Frame {
		var frames []proc.Stackframe
		if th := r.p.threads[tr.Tid]; th != nil {
			frames, _ = proc.ThreadStacktrace(r.target, th, opts.MaxDepth)
		}
		if st, _ := framesOf(frames); len(st) > 0 {
			return st
		}
		// delve could not unwind it (a thread born since the thread list
		// was read, or caught in a prologue): its PC is still its place.
		file, line, fn := r.target.BinInfo().PCToLine(tr.Regs.Rip)
		fr := stacks.Frame{File: file, Line: line, PC: tr.Regs.Rip}
		if fn != nil {
			fr.Func = fn.Name
		}
		return []stacks.Frame{fr}
	})
	return res, nil
}

// add appends a goroutine read; an unwind that stopped early is a note.
// Both readers (DWARF and bare) end each goroutine with it.
func (res *Result) add(th *stacks.Thread, err error) {
	if err != nil {
		th.Notes = append(th.Notes, fmt.Sprintf("stack may be incomplete: %v", err))
	}
	res.Goroutines = append(res.Goroutines, th)
}

// addOSThreads unwinds every OS thread by stackOf, when opts asks for
// them.
func (res *Result) addOSThreads(regs []ThreadRegs, opts Options, stackOf func(ThreadRegs) []stacks.Frame) {
	if !opts.Threads {
		return
	}
	res.OSThreads = make(map[int][]stacks.Frame, len(regs))
	for _, tr := range regs {
		res.OSThreads[tr.Tid] = stackOf(tr)
	}
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
			out = append(out, stacks.NewArg(v.Name, fmt.Sprintf("%#x", p)))
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
