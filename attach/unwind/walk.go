package unwind

import (
	"fmt"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// maxFPFrame bounds how far above SP a frame pointer may point before the
// frame-pointer fallback distrusts it.
const maxFPFrame = 16 << 20

// state is what the walk knows about one frame.
type state struct {
	regs Regs
	// absent marks registers unknown because the caller never supplied
	// them (as opposed to clobbered by a call): only those make it worth
	// reading the full register file and unwinding again.
	absent uint64
}

// stop ends a walk: reason becomes Result.Stop, needs Result.NeedsRegs.
type stop struct {
	reason string
	needs  bool
}

// step is the way from one frame to its caller.
type step struct {
	caller state
	cfa    uint64
	method string // how the caller was found
	// outermost is set when the CFI says there is no caller (the return
	// address column is undefined, as in _start and clone3).
	outermost bool
	// entry is where the frame's function begins when the step found
	// it (the target of the caller's call), 0 otherwise.
	entry uint64
}

// Unwind walks the stack that starts at regs (the PC and the stack
// pointer must be valid). It never fails: it returns the frames it found
// and why it stopped. tables may be nil (frame pointers and signal
// frames only).
func Unwind(regs Regs, mem Memory, tables Tables, opt Options) Result {
	maxDepth := opt.MaxDepth
	if maxDepth <= 0 {
		maxDepth = 512
	}
	a := opt.Arch
	if a == nil {
		a = AMD64
	}
	w := walker{mem: mem, tables: tables, arch: a}
	var res Result
	cur := state{regs: regs, absent: a.allRegs() &^ regs.Valid}
	for _, r := range []int{a.PC, a.SP} {
		if !regs.Has(r) {
			res.Stop, res.NeedsRegs = "needs register "+a.RegName(r), true
			return res
		}
	}
	method, exact := "regs", true
	for {
		pc := cur.regs.Val[a.PC]
		f := Frame{PC: pc, Method: method, Regs: cur.regs}
		fde, lpc, signal := w.find(pc, exact)
		f.LookupPC, f.Signal = lpc, signal
		st, err := w.step(cur, fde, lpc, signal)
		if err == nil {
			f.CFA, f.Entry = st.cfa, st.entry
		}
		res.Frames = append(res.Frames, f)
		if err != nil {
			res.Stop, res.NeedsRegs = err.reason, err.needs
			return res
		}
		next := st.caller
		npc, nsp, sp := next.regs.Val[a.PC], next.regs.Val[a.SP], cur.regs.Val[a.SP]
		switch {
		case npc == 0 && (st.outermost || st.method != "cfi"):
			res.Stop = StopEnd
			return res
		case npc == 0:
			// The CFI read a return address of 0 from the stack: either a
			// runtime that ends its stacks that way, or tables that do not
			// describe this code. Say so rather than call it complete.
			res.Stop = StopZeroRA
			return res
		case !signal && nsp <= sp,
			// A signal may have run on an alternate stack, below the
			// interrupted one: only refuse a frame identical to this one.
			signal && nsp == sp && npc == pc:
			res.Stop = StopNoGrowth
			return res
		case len(res.Frames) >= maxDepth:
			res.Stop = StopDepth
			return res
		}
		cur, method, exact = next, st.method, signal
	}
}

type walker struct {
	mem    Memory
	tables Tables
	arch   *Arch
}

func (w *walker) fde(pc uint64) *frame.FrameDescriptionEntry {
	if w.tables == nil {
		return nil
	}
	return w.tables.FDEForPC(pc)
}

// isSignalFDE reports an FDE whose CIE carries the 'S' augmentation
// (glibc's hand-written CFI for __restore_rt).
func isSignalFDE(fde *frame.FrameDescriptionEntry) bool {
	return fde != nil && fde.CIE != nil && strings.IndexByte(fde.CIE.Augmentation, 'S') > 0
}

// find returns the FDE covering a frame, the PC to look it up (and
// symbolise) with, and whether it is a signal frame. exact is set for the
// first frame and above a signal frame, where PC is the next instruction
// to run, not a return address.
func (w *walker) find(pc uint64, exact bool) (*frame.FrameDescriptionEntry, uint64, bool) {
	if exact || pc == 0 {
		fde := w.fde(pc)
		return fde, pc, isSignalFDE(fde) || (fde == nil && w.isRestoreRT(pc))
	}
	// A return address may sit just past the end of the calling function
	// (a call to a noreturn function), so look up PC-1 ...
	fde := w.fde(pc - 1)
	if isSignalFDE(fde) {
		// ... except for signal frames, where PC is where the handler
		// returns to (glibc starts their FDE a byte early for unwinders
		// that subtract anyway).
		if !fde.Cover(pc) {
			fde = w.fde(pc)
		}
		return fde, pc, true
	}
	if fde == nil || !fde.Cover(pc) {
		if f := w.fde(pc); isSignalFDE(f) || (f == nil && w.isRestoreRT(pc)) {
			return f, pc, true
		}
	}
	return fde, pc - 1, false
}

func (w *walker) isRestoreRT(pc uint64) bool {
	b := make([]byte, len(w.arch.sigreturn))
	n, _ := w.mem.ReadAt(b, pc)
	return n == len(b) && w.arch.isSigreturn(b)
}

// step finds the caller of the frame in cur.
func (w *walker) step(cur state, fde *frame.FrameDescriptionEntry, lpc uint64, signal bool) (step, *stop) {
	switch {
	case fde != nil:
		return w.stepCFI(cur, fde, lpc)
	case signal:
		return w.stepSigframe(cur)
	default:
		// No CFI: scan for the return address first (frame pointers are
		// rarely kept where CFI is missing, musl's libc), then try them.
		if st, ok := w.stepScan(cur, lpc); ok {
			return st, nil
		}
		return w.stepFP(cur, lpc)
	}
}

// stepSigframe restores the registers the kernel saved in the signal
// frame (struct rt_sigframe) that SP points at when the handler returns
// to the sigreturn trampoline.
func (w *walker) stepSigframe(cur state) (step, *stop) {
	a := w.arch
	buf := make([]byte, 8*len(a.sigRegs))
	base := cur.regs.Val[a.SP] + a.sigcontext
	if n, _ := w.mem.ReadAt(buf, base); n != len(buf) {
		return step{}, &stop{reason: fmt.Sprintf("memory unreadable at %#x", base+uint64(n))}
	}
	var st step
	for i, r := range a.sigRegs {
		st.caller.regs.Set(r, le64(buf[i*8:]))
	}
	st.cfa = st.caller.regs.Val[a.SP]
	st.method = "signal"
	return st, nil
}

// stepFP follows the frame-pointer chain: [fp] is the caller's frame
// pointer and [fp+8] the return address (rbp on x86-64, x29 on arm64).
// Used only where no CFI covers the PC, and only when the frame pointer
// plausibly points into this stack above SP.
func (w *walker) stepFP(cur state, lpc uint64) (step, *stop) {
	a := w.arch
	r := &cur.regs
	if !r.Has(a.FP) {
		if cur.absent&(1<<a.FP) != 0 {
			return step{}, &stop{reason: "needs register " + a.RegName(a.FP), needs: true}
		}
		return step{}, &stop{reason: fmt.Sprintf("no unwind info for %#x", lpc)}
	}
	bp, sp := r.Val[a.FP], r.Val[a.SP]
	if bp < sp || bp-sp > maxFPFrame || bp%8 != 0 {
		return step{}, &stop{reason: fmt.Sprintf("no unwind info for %#x", lpc)}
	}
	var buf [16]byte
	if n, _ := w.mem.ReadAt(buf[:], bp); n != len(buf) {
		return step{}, &stop{reason: fmt.Sprintf("memory unreadable at %#x", bp+uint64(n))}
	}
	var st step
	st.caller.regs.Set(a.FP, le64(buf[0:]))
	st.caller.regs.Set(a.PC, le64(buf[8:]))
	st.caller.regs.Set(a.SP, bp+16)
	// The other callee-saved registers may have been saved anywhere in
	// the frame: they are unknown, and no register read would fix that.
	st.cfa = bp + 16
	st.method = "fp"
	return st, nil
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}
