package attach

import (
	"encoding/binary"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/unwind"
)

// coreSyscall reads the system call a core's thread was blocked in from
// its registers, as /proc/PID/task/TID/syscall gives it for a live one:
// orig_rax is the call, rdi, rsi, rdx, r10, r8 and r9 its arguments.
// A thread counts as blocked when the call was interrupted by the stop
// that wrote the core (rax holds -EINTR or one of the kernel's restart
// codes); a call that had returned, or none, means the thread was
// running in user space.
func coreSyscall(cf *core.File, mem unwind.Memory, th core.Thread) (syscallState, bool) {
	if cf.Arch == unwind.ARM64 {
		return coreSyscallARM64(mem, th)
	}
	if th.OrigRAX < 0 {
		return syscallState{}, false
	}
	switch th.RAX {
	case -int64(unix.EINTR),
		-512, // ERESTARTSYS
		-513, // ERESTARTNOINTR
		-514, // ERESTARTNOHAND
		-516: // ERESTART_RESTARTBLOCK
	default:
		return syscallState{}, false
	}
	r := th.Regs.Val
	return syscallState{
		Nr:   th.OrigRAX,
		Args: [6]uint64{r[unwind.RDI], r[unwind.RSI], r[unwind.RDX], r[10], r[unwind.R8], r[9]},
		SP:   r[unwind.RSP],
		PC:   r[unwind.RIP],
	}, true
}

// coreSyscallARM64 is coreSyscall for an arm64 core, whose NT_PRSTATUS
// does not record the call (no orig_x0): a thread is in one when its PC
// is at an svc #0 (the kernel's cores: the call is rewound to restart,
// x0 restored to its first argument) or just past one (qemu-user's: the
// call still runs on the host, or returned -EINTR to the thread that
// took the signal, whose first argument is then lost). x8 is its
// number, x0-x5 its arguments.
func coreSyscallARM64(mem unwind.Memory, th core.Thread) (syscallState, bool) {
	const svc0 = 0xd4000001
	r := th.Regs.Val
	at := func(pc uint64) bool {
		var b [4]byte
		n, _ := mem.ReadAt(b[:], pc)
		return n == 4 && binary.LittleEndian.Uint32(b[:]) == svc0
	}
	pc := r[unwind.PC]
	if !at(pc) && !at(pc-4) {
		return syscallState{}, false
	}
	sc := syscallState{
		Arch: unwind.ARM64, Nr: int64(r[unwind.X8]),
		Args: [6]uint64{r[0], r[1], r[2], r[3], r[4], r[5]},
		SP:   r[unwind.SP], PC: pc,
	}
	if x0 := int64(r[0]); x0 < 0 && x0 >= -4095 && !at(pc) {
		// x0 is the call's result (-EINTR), not its argument: take the
		// register the code copied the argument from, if it did.
		sc.Args[0] = 0
		if m, ok := copiedToX0(mem, pc-4); ok && th.Regs.Has(m) {
			sc.Args[0] = r[m]
		}
	}
	return sc, true
}

// copiedToX0 finds, in the few instructions before the svc at pc, the
// "mov x0, xM" that set its first argument, and returns M, unless an
// instruction after it writes x0 or xM: glibc's futex waits keep the
// futex's address in a callee-saved register (mov x0, x19; …; svc #0).
func copiedToX0(mem unwind.Memory, svc uint64) (int, bool) {
	const movX0 = 0xaa0003e0 // orr x0, xzr, xM
	written := map[uint32]bool{}
	for i := uint64(1); i <= 8; i++ {
		var b [4]byte
		if n, _ := mem.ReadAt(b[:], svc-4*i); n != 4 {
			return 0, false
		}
		insn := binary.LittleEndian.Uint32(b[:])
		if insn&^(31<<16) == movX0 {
			m := (insn >> 16) & 31
			return int(m), m != 31 && !written[m]
		}
		rd := insn & 31
		if rd == 0 || insn>>26&7 == 5 { // writes x0, or a branch: give up
			return 0, false
		}
		written[rd] = true
	}
	return 0, false
}
