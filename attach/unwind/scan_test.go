package unwind

import "testing"

// The call instructions a return address may follow, as the scan for
// a caller without CFI decodes them (objdump's bytes).
func TestIndirectCall(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want bool
	}{
		{[]byte{0xff, 0xd0}, true},                          // call *%rax
		{[]byte{0x41, 0xff, 0xd3}, true},                    // call *%r11
		{[]byte{0xff, 0x15, 1, 2, 3, 4}, true},              // call *0x4030201(%rip)
		{[]byte{0xff, 0x50, 0x08}, true},                    // call *0x8(%rax)
		{[]byte{0xff, 0x54, 0x24, 0x08}, true},              // call *0x8(%rsp)
		{[]byte{0xff, 0x94, 0xc3, 1, 0, 0, 0}, true},        // call *0x1(%rbx,%rax,8)
		{[]byte{0xff, 0xe0}, false},                         // jmp *%rax
		{[]byte{0x48, 0x89, 0xe5}, false},                   // mov %rsp,%rbp
		{[]byte{0xe8, 1, 2, 3, 4}, false},                   // call rel32 is not indirect
		{[]byte{0x90, 0x90, 0x90, 0x90, 0x90, 0x90}, false}, // nops
	} {
		var insn [7]byte
		copy(insn[7-len(c.b):], c.b)
		if got := indirectCall(insn); got != c.want {
			t.Errorf("indirectCall(% x) = %v, want %v", c.b, got, c.want)
		}
	}
}

// arm64's struct user_pt_regs, from PTRACE_GETREGSET or a core's
// NT_PRSTATUS: x0-x30, sp, pc, pstate, in DWARF numbering.
func TestARM64UserRegs(t *testing.T) {
	var words [34]uint64
	for i := range words {
		words[i] = 100 + uint64(i)
	}
	r := ARM64UserRegs(words[:])
	for i := range 31 {
		if !r.Has(i) || r.Val[i] != 100+uint64(i) {
			t.Errorf("x%d = %d (known %v), want %d", i, r.Val[i], r.Has(i), 100+i)
		}
	}
	if r.Val[FP] != 129 || r.Val[LR] != 130 || r.Val[SP] != 131 || r.Val[PC] != 132 {
		t.Errorf("x29 %d, x30 %d, sp %d, pc %d; want 129, 130, 131, 132", r.Val[FP], r.Val[LR], r.Val[SP], r.Val[PC])
	}
	if r.Valid != ARM64.allRegs() {
		t.Errorf("valid %#x, want every register (%#x)", r.Valid, ARM64.allRegs())
	}
}
