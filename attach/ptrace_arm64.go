package attach

import (
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach/unwind"
)

// hostArch is the architecture hangdoc runs on, and so a live target's.
// Live arm64 is compiled and its register mapping unit-tested, but it
// has not run on an arm64 machine yet.
var hostArch = unwind.ARM64

// regsFromPtrace maps PTRACE_GETREGSET's NT_PRSTATUS (struct
// user_pt_regs) to DWARF register numbers, as a core's is.
func regsFromPtrace(r *unix.PtraceRegs) unwind.Regs {
	return unwind.ARM64UserRegs(append(r.Regs[:], r.Sp, r.Pc, r.Pstate))
}
