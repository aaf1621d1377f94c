package attach

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach/unwind"
)

// The arm64 register file a live stop copies (PTRACE_GETREGSET into
// unix.PtraceRegs) in the unwinder's numbering. Runs on arm64 only: make
// lint runs it under qemu-user.
func TestRegsFromPtraceARM64(t *testing.T) {
	var p unix.PtraceRegs
	for i := range p.Regs {
		p.Regs[i] = 1000 + uint64(i)
	}
	p.Sp, p.Pc, p.Pstate = 2000, 3000, 4000
	r := regsFromPtrace(&p)
	if r.Val[0] != 1000 || r.Val[unwind.FP] != 1029 || r.Val[unwind.LR] != 1030 || r.Val[unwind.SP] != 2000 || r.Val[unwind.PC] != 3000 {
		t.Errorf("x0 %d, x29 %d, x30 %d, sp %d, pc %d; want 1000, 1029, 1030, 2000, 3000",
			r.Val[0], r.Val[unwind.FP], r.Val[unwind.LR], r.Val[unwind.SP], r.Val[unwind.PC])
	}
	if hostArch != unwind.ARM64 || !r.Has(unwind.PC) || !r.Has(unwind.SP) {
		t.Errorf("host arch %s, pc known %v, sp known %v", hostArch.Name, r.Has(unwind.PC), r.Has(unwind.SP))
	}
}
