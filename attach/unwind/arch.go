package unwind

import (
	"bytes"
	"debug/elf"
	"fmt"
)

// Arch is what the walk knows of one architecture: its DWARF register
// numbering, which registers a call preserves, its frame-pointer chain
// and the kernel's signal frame.
type Arch struct {
	Name     string
	Machine  elf.Machine
	PC, SP   int // where Regs keeps the program counter and stack pointer
	FP       int // the frame pointer
	NumRegs  int
	regNames []string
	// calleeSaved are the registers a call preserves unless the CFI says
	// where the callee saved them.
	calleeSaved uint64
	// linkReg is the register a call leaves the return address in (-1
	// when the call pushes it): with no CFI rule for it, a frame has not
	// saved it yet and the caller's PC is the register's value.
	linkReg int
	// sigreturn is the code the kernel returns a signal handler to.
	sigreturn []byte
	// sigcontext is the offset of the saved registers from the stack
	// pointer at sigreturn, and sigRegs their order in it.
	sigcontext uint64
	sigRegs    []int
	// scan is set where the walk can decode calls to scan the stack for
	// a return address (scan.go).
	scan bool
}

// AMD64 is x86-64.
var AMD64 = &Arch{
	Name: "x86-64", Machine: elf.EM_X86_64,
	PC: RIP, SP: RSP, FP: RBP, NumRegs: NumRegs, linkReg: -1,
	regNames: []string{"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"},
	// System V ABI, figure 3.4.
	calleeSaved: 1<<RBX | 1<<RBP | 1<<12 | 1<<13 | 1<<14 | 1<<15,
	// glibc's (and most libcs') __restore_rt: mov $15,%rax
	// (rt_sigreturn); syscall.
	sigreturn: []byte{0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05},
	// struct rt_sigframe { char *pretcode; struct ucontext uc; … }: when
	// the handler returns, pretcode has been popped and SP points at uc,
	// whose uc_mcontext (struct sigcontext) is 40 bytes in (uc_flags,
	// uc_link, a 24-byte stack_t). It begins r8..r15, rdi, rsi, rbp,
	// rbx, rdx, rax, rcx, rsp, rip.
	sigcontext: 40,
	sigRegs:    []int{8, 9, 10, 11, 12, 13, 14, 15, RDI, RSI, RBP, RBX, RDX, RAX, RCX, RSP, RIP},
	scan:       true,
}

// ARM64 is AArch64 (Linux, LP64).
var ARM64 = &Arch{
	Name: "arm64", Machine: elf.EM_AARCH64,
	PC: PC, SP: SP, FP: FP, NumRegs: NumRegsARM64, linkReg: LR,
	regNames: arm64Names(),
	// AAPCS64: x19-x29 survive a call (x30 holds the return address).
	calleeSaved: (1<<30 - 1) &^ (1<<19 - 1),
	// The kernel's vDSO __kernel_rt_sigreturn (and qemu-user's copy of
	// it): mov x8, #139 (rt_sigreturn); svc #0.
	sigreturn: []byte{0x68, 0x11, 0x80, 0xd2, 0x01, 0x00, 0x00, 0xd4},
	// struct rt_sigframe { struct siginfo info (128 bytes); struct
	// ucontext uc; }: SP points at it when the handler returns; uc's
	// uc_mcontext is at 176 (uc_flags, uc_link, a 24-byte stack_t, an
	// 8-byte sigset and 120 bytes of padding, then 16-byte aligned), and
	// struct sigcontext is fault_address, then x0-x30, sp, pc.
	sigcontext: 128 + 176 + 8,
	sigRegs:    arm64SigRegs(),
}

func arm64Names() []string {
	names := make([]string, NumRegsARM64)
	for i := range 29 {
		names[i] = fmt.Sprintf("x%d", i)
	}
	names[FP], names[LR], names[SP], names[PC] = "x29", "x30", "sp", "pc"
	return names
}

func arm64SigRegs() []int {
	regs := make([]int, 0, 33)
	for i := range 31 {
		regs = append(regs, i)
	}
	return append(regs, SP, PC)
}

// ForMachine returns the Arch of an ELF machine, nil when hangdoc does
// not unwind it.
func ForMachine(m elf.Machine) *Arch {
	for _, a := range []*Arch{AMD64, ARM64} {
		if a.Machine == m {
			return a
		}
	}
	return nil
}

// RegName names DWARF register i ("rbp", "x29"), or "r<i>" beyond the
// integer set.
func (a *Arch) RegName(i int) string {
	if i >= 0 && i < len(a.regNames) {
		return a.regNames[i]
	}
	return fmt.Sprintf("r%d", i)
}

// allRegs is the mask of a complete register file.
func (a *Arch) allRegs() uint64 { return 1<<a.NumRegs - 1 }

// isSigreturn says whether code is the signal return trampoline.
func (a *Arch) isSigreturn(code []byte) bool { return bytes.Equal(code, a.sigreturn) }

// ARM64UserRegs maps arm64's struct user_pt_regs (x0-x30, sp, pc, then
// pstate, as PTRACE_GETREGSET and a core's NT_PRSTATUS give it) to a
// register file in DWARF numbering.
func ARM64UserRegs(words []uint64) Regs {
	var r Regs
	for i, v := range words[:min(len(words), 31)] {
		r.Set(i, v)
	}
	if len(words) > 32 {
		r.Set(SP, words[31])
		r.Set(PC, words[32])
	}
	return r
}
