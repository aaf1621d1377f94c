package attach

import (
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach/unwind"
)

// hostArch is the architecture hangdoc runs on, and so a live target's.
var hostArch = unwind.AMD64

// regsFromPtrace maps PTRACE_GETREGS to DWARF register numbers.
func regsFromPtrace(r *unix.PtraceRegs) unwind.Regs {
	var u unwind.Regs
	for i, v := range [unwind.NumRegs]uint64{
		r.Rax, r.Rdx, r.Rcx, r.Rbx, r.Rsi, r.Rdi, r.Rbp, r.Rsp,
		r.R8, r.R9, r.R10, r.R11, r.R12, r.R13, r.R14, r.R15, r.Rip,
	} {
		u.Set(i, v)
	}
	return u
}
