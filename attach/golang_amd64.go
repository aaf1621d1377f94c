package attach

import (
	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach/goproc"
)

// goLive: live Go programs are read goroutine by goroutine on this host.
const goLive = true

// goRegs is what PTRACE_GETREGS gave, as goproc reads it.
func goRegs(r *unix.PtraceRegs) goproc.Regs {
	return goproc.Regs{
		R15: r.R15, R14: r.R14, R13: r.R13, R12: r.R12, Rbp: r.Rbp, Rbx: r.Rbx,
		R11: r.R11, R10: r.R10, R9: r.R9, R8: r.R8, Rax: r.Rax, Rcx: r.Rcx,
		Rdx: r.Rdx, Rsi: r.Rsi, Rdi: r.Rdi, Orig_rax: r.Orig_rax, Rip: r.Rip,
		Cs: r.Cs, Eflags: r.Eflags, Rsp: r.Rsp, Ss: r.Ss, Fs_base: r.Fs_base,
		Gs_base: r.Gs_base, Ds: r.Ds, Es: r.Es, Fs: r.Fs, Gs: r.Gs,
	}
}
