// Package unwind walks a native x86-64 or arm64 stack from a set of
// registers and a view of memory, using DWARF call-frame information
// (.eh_frame and .debug_frame), the kernel's signal frames, and frame
// pointers or (x86-64) a scan of the stack for return addresses as a last
// resort. It never touches a process: registers and memory come in through
// small interfaces, so the same code unwinds live threads, core files and
// bytes in tests.
package unwind

import "github.com/go-delve/delve/pkg/dwarf/frame"

// DWARF register numbers on x86-64 (System V ABI, figure 3.36).
const (
	RAX = 0
	RDX = 1
	RCX = 2
	RBX = 3
	RSI = 4
	RDI = 5
	RBP = 6
	RSP = 7
	R8  = 8
	R15 = 15
	RIP = 16 // the return-address column

	NumRegs = 17 // x86-64's integer registers and rip
)

// DWARF register numbers on arm64 (AADWARF64): x0-x30 are 0-30.
const (
	X0  = 0
	X8  = 8  // the system call number
	FP  = 29 // x29, the frame pointer
	LR  = 30 // x30, the link register: the return-address column
	SP  = 31
	PC  = 32 // not a DWARF column: where Regs keeps the program counter
	X30 = LR

	NumRegsARM64 = 33
)

// MaxRegs is the size of the largest register file (arm64's).
const MaxRegs = NumRegsARM64

// Regs is a register file in DWARF numbering (of one Arch); Valid has
// bit i set when register i is known (a thread read from
// /proc/PID/task/TID/syscall only knows its stack pointer and PC).
type Regs struct {
	Val   [MaxRegs]uint64
	Valid uint64
}

func (r *Regs) Set(i int, v uint64) { r.Val[i] = v; r.Valid |= 1 << i }
func (r *Regs) Has(i int) bool      { return r.Valid&(1<<i) != 0 }

// Memory reads the target's memory. A short read returns the bytes read
// and an error.
type Memory interface {
	ReadAt(p []byte, addr uint64) (int, error)
}

// Tables finds the call-frame information covering a PC (a runtime
// address). It returns nil when no module or FDE covers it.
type Tables interface {
	FDEForPC(pc uint64) *frame.FrameDescriptionEntry
}

// RegName names x86-64 DWARF register i ("rbp").
func RegName(i int) string { return AMD64.RegName(i) }

// Frame is one frame of an unwound stack, innermost first.
type Frame struct {
	// PC is the instruction pointer: for the first frame and for a frame
	// interrupted by a signal, the next instruction to run; for the others,
	// the return address.
	PC uint64
	// LookupPC is the address to symbolise and to look CFI up with: PC-1
	// for call-return frames (the call may be the last instruction of the
	// function), PC otherwise.
	LookupPC uint64
	// CFA is the canonical frame address (the caller's SP), 0 when it
	// could not be computed (the last frame of a failed unwind).
	CFA uint64
	// Signal marks the kernel's signal frame (glibc's __restore_rt): the
	// frame above it was interrupted, not called.
	Signal bool
	// Method says how this frame was found: "regs" for the first frame,
	// "cfi" (call-frame information of the frame below), "signal" (the
	// kernel's rt_sigframe read without CFI), "fp" (frame-pointer chain,
	// a guess) or "scan" (the first return address into the frame below
	// found on the stack, where no CFI and no frame pointer say: a guess).
	Method string
	// Entry is the start of the frame's function when the unwind found
	// it (the target of the call its caller made, for a caller found by
	// a scan), 0 otherwise: a symbol that begins before it is not this
	// function's (a stripped library names only its exported functions).
	Entry uint64
	// Regs are the registers known in this frame.
	Regs Regs
}

// Result is an unwound stack and why it ended.
type Result struct {
	Frames []Frame
	// Stop says why the walk ended: "end of stack", "depth limit",
	// "sp did not grow", "memory unreadable at 0x…", "needs register rbp",
	// "no unwind info for 0x…", "bad CFI for 0x…: …".
	Stop string
	// NeedsRegs is set when the walk stopped for want of a register the
	// caller did not supply: reading the full register file and unwinding
	// again may go further.
	NeedsRegs bool
}

// Complete reports whether the walk reached the outermost frame.
func (r *Result) Complete() bool { return r.Stop == StopEnd }

// Options tune Unwind.
type Options struct {
	MaxDepth int // frames at most (default 512)
	// Arch is the target's architecture (default AMD64): the numbering
	// of Regs and how frames are laid out.
	Arch *Arch
}

// Stop reasons that callers may compare against.
const (
	StopEnd      = "end of stack"
	StopDepth    = "depth limit"
	StopNoGrowth = "sp did not grow"
	StopZeroRA   = "return address 0 where the unwind tables promised a caller"
)
