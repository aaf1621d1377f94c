package unwind_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/hangdoc/hangdoc/attach/unwind"
)

// Hand-built CFI and memory, for the cases real programs do not show on
// demand.

// CFA instructions used below.
const (
	cfaDefCFA       = 0x0c // reg, offset
	cfaDefCFAOffset = 0x0e // offset
	cfaDefCFAExpr   = 0x0f // block
	cfaExpression   = 0x10 // reg, block
	cfaValOffset    = 0x14
	cfaRestore      = 0xc0 // | reg
	cfaOffset       = 0x80 // | reg, factored offset
	cfaUndefined    = 0x07 // reg
	cfaSameValue    = 0x08 // reg
	cfaRegister     = 0x09 // reg, reg
	cfaAdvance      = 0x40 // | delta
	opBreg          = 0x70 // | reg, sleb offset
	opDeref         = 0x06
)

type fdeSpec struct {
	begin, size uint64
	instrs      []byte
}

// ehFrameBytes builds an .eh_frame section: one CIE with augmentation
// aug, x86-64's CFA=rsp+8 and RA at CFA-8, then one FDE per spec, with
// absolute 8-byte addresses.
func ehFrameBytes(aug string, specs ...fdeSpec) []byte {
	var b []byte
	le := binary.LittleEndian
	cie := []byte{0, 0, 0, 0, 1} // CIE id 0, version 1
	cie = append(cie, aug...)
	cie = append(cie, 0, 1, 0x78, 16) // code align 1, data align -8, RA column 16
	cie = append(cie, 1, 0x00)        // augmentation data: R = absolute pointers
	cie = append(cie, cfaDefCFA, unwind.RSP, 8, cfaOffset|unwind.RIP, 1)
	b = le.AppendUint32(b, uint32(len(cie)))
	b = append(b, cie...)
	for _, s := range specs {
		start := len(b)
		var body []byte
		body = le.AppendUint32(body, uint32(start+4)) // pointer back to the CIE at 0
		body = le.AppendUint64(body, s.begin)
		body = le.AppendUint64(body, s.size)
		body = append(body, 0) // no augmentation data
		body = append(body, s.instrs...)
		b = le.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
	}
	return b
}

// ehFrame builds an .eh_frame and parses it with delve.
func ehFrame(t testing.TB, aug string, specs ...fdeSpec) frame.FrameDescriptionEntries {
	t.Helper()
	fdes, err := frame.Parse(ehFrameBytes(aug, specs...), binary.LittleEndian, 0, 8, 0x100000)
	if err != nil {
		t.Fatal(err)
	}
	return fdes
}

type fdeTable frame.FrameDescriptionEntries

func (f fdeTable) FDEForPC(pc uint64) *frame.FrameDescriptionEntry {
	fde, err := frame.FrameDescriptionEntries(f).FDEForPC(pc)
	if err != nil {
		return nil
	}
	return fde
}

// stackMem is memory at base, built a word at a time.
type stackMem struct {
	base  uint64
	words []uint64
}

func (s *stackMem) put(addr, v uint64) {
	i := int((addr - s.base) / 8)
	for len(s.words) <= i {
		s.words = append(s.words, 0)
	}
	s.words[i] = v
}

func (s *stackMem) overlay(code map[uint64][]byte) unwind.Memory {
	data := make([]byte, 8*len(s.words))
	for i, w := range s.words {
		binary.LittleEndian.PutUint64(data[8*i:], w)
	}
	var next unwind.Memory
	for addr, c := range code {
		next = unwind.Overlay{Base: addr, Data: c, Next: next}
	}
	return unwind.Overlay{Base: s.base, Data: data, Next: next}
}

func regsOf(kv ...uint64) unwind.Regs {
	var r unwind.Regs
	for i := 0; i < len(kv); i += 2 {
		r.Set(int(kv[i]), kv[i+1])
	}
	return r
}

const (
	fnA = 0x1000 // leaf-ish: push rbx at +1, CFA rsp+16, rbx at CFA-16
	fnB = 0x2000 // plain: CFA rsp+8
	fnC = 0x3000 // -O0 style: CFA rbp+16 after +4
	sp0 = 0x7000
)

func synthTables(t testing.TB) fdeTable {
	return fdeTable(ehFrame(t, "zR",
		fdeSpec{fnA, 0x100, []byte{cfaAdvance | 1, cfaDefCFAOffset, 16, cfaOffset | unwind.RBX, 2,
			cfaAdvance | 0x20, cfaRestore | unwind.RBX, cfaDefCFAOffset, 8}},
		fdeSpec{fnB, 0x100, nil},
		fdeSpec{fnC, 0x100, []byte{cfaAdvance | 4, cfaDefCFA, unwind.RBP, 16, cfaOffset | unwind.RBP, 2}},
	))
}

func TestSynthCFI(t *testing.T) {
	tables := synthTables(t)
	var m stackMem
	m.base = sp0
	// A at fnA+0x10 (rbx pushed): [sp]=saved rbx, [sp+8]=RA into B.
	m.put(sp0, 0xbbbb)
	m.put(sp0+8, fnB+0x20)
	// B: CFA = sp0+16+8, RA at sp0+16 → 0 ends the stack, but the CFI
	// promised a caller: reported as StopZeroRA, not a clean end.
	m.put(sp0+16, 0)
	regs := regsOf(unwind.RIP, fnA+0x10, unwind.RSP, sp0, unwind.RBX, 0x1111, unwind.RAX, 7)
	res := unwind.Unwind(regs, m.overlay(nil), tables, unwind.Options{})
	if res.Stop != unwind.StopZeroRA || len(res.Frames) != 2 {
		t.Fatalf("stop %q, %d frames", res.Stop, len(res.Frames))
	}
	a, b := res.Frames[0], res.Frames[1]
	if a.LookupPC != a.PC || a.Method != "regs" || a.CFA != sp0+16 {
		t.Errorf("frame 0: %+v", a)
	}
	if b.PC != fnB+0x20 || b.LookupPC != fnB+0x1f || b.Method != "cfi" || b.CFA != sp0+24 {
		t.Errorf("frame 1: %+v", b)
	}
	if !b.Regs.Has(unwind.RBX) || b.Regs.Val[unwind.RBX] != 0xbbbb {
		t.Errorf("rbx in the caller: %#x (valid %v), want the saved 0xbbbb", b.Regs.Val[unwind.RBX], b.Regs.Has(unwind.RBX))
	}
	if b.Regs.Has(unwind.RAX) {
		t.Errorf("rax is caller-saved: it must be unknown in the caller")
	}

	// After DW_CFA_restore rbx (fnA+0x21), delve says "undefined": rbx is
	// back to the caller's value and must carry over.
	m.put(sp0, fnB+0x20)
	m.put(sp0+8, 0)
	regs = regsOf(unwind.RIP, fnA+0x30, unwind.RSP, sp0, unwind.RBX, 0x1111)
	res = unwind.Unwind(regs, m.overlay(nil), tables, unwind.Options{})
	if len(res.Frames) != 2 || res.Frames[1].Regs.Val[unwind.RBX] != 0x1111 || !res.Frames[1].Regs.Has(unwind.RBX) {
		t.Errorf("rbx after restore: %+v", res.Frames)
	}
}

func TestSynthStops(t *testing.T) {
	tables := synthTables(t)
	var m stackMem
	m.base = sp0
	for _, tc := range []struct {
		name  string
		regs  unwind.Regs
		mem   unwind.Memory
		stop  string
		needs bool
	}{
		{"rbp-based CFA, only rsp+rip", regsOf(unwind.RIP, fnC+8, unwind.RSP, sp0), m.overlay(nil), "needs register rbp", true},
		{"no rip", regsOf(unwind.RSP, sp0), m.overlay(nil), "needs register rip", true},
		{"stack unreadable", regsOf(unwind.RIP, fnB, unwind.RSP, 0x100), m.overlay(nil), "memory unreadable at 0x100", false},
		{"no unwind info, no rbp", regsOf(unwind.RIP, 0x9000, unwind.RSP, sp0, unwind.RBP, 0), m.overlay(nil), "no unwind info for 0x9000", false},
		{"no unwind info, rbp absent", regsOf(unwind.RIP, 0x9000, unwind.RSP, sp0), m.overlay(nil), "needs register rbp", true},
	} {
		res := unwind.Unwind(tc.regs, tc.mem, tables, unwind.Options{})
		if res.Stop != tc.stop || res.NeedsRegs != tc.needs {
			t.Errorf("%s: stop %q needs %v, want %q %v", tc.name, res.Stop, res.NeedsRegs, tc.stop, tc.needs)
		}
	}

	// A CFA that does not move: CFA = rsp+8, the return address points
	// back into the same function with the same SP... impossible with
	// CFA=rsp+8, so use an FDE whose CFA is rsp+0 and RA a value offset.
	loop := fdeTable(ehFrame(t, "zR", fdeSpec{0x5000, 0x100, []byte{cfaDefCFAOffset, 0, cfaValOffset, unwind.RIP, 0}}))
	res := unwind.Unwind(regsOf(unwind.RIP, 0x5010, unwind.RSP, sp0), m.overlay(nil), loop, unwind.Options{})
	if res.Stop != unwind.StopNoGrowth {
		t.Errorf("loop: stop %q", res.Stop)
	}

	// Clobbered, not absent: the caller's CFA is in rax, which a call
	// clobbers; reading registers would not help.
	weird := fdeTable(ehFrame(t, "zR", fdeSpec{fnB, 0x100, nil}, fdeSpec{0x6000, 0x100, []byte{cfaDefCFA, unwind.RAX, 8}}))
	m.put(sp0, 0x6010)
	res = unwind.Unwind(regsOf(unwind.RIP, fnB, unwind.RSP, sp0, unwind.RAX, 1), m.overlay(nil), weird, unwind.Options{})
	if res.Stop != "register rax unknown" || res.NeedsRegs {
		t.Errorf("clobbered rax: stop %q needs %v", res.Stop, res.NeedsRegs)
	}
}

// sigcontext writes the kernel's rt_sigframe at uc: uc_mcontext at +40,
// r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip.
func sigcontext(m *stackMem, uc uint64, regs unwind.Regs) {
	order := []int{8, 9, 10, 11, 12, 13, 14, 15, unwind.RDI, unwind.RSI, unwind.RBP, unwind.RBX, unwind.RDX, unwind.RAX, unwind.RCX, unwind.RSP, unwind.RIP}
	for i, r := range order {
		m.put(uc+40+8*uint64(i), regs.Val[r])
	}
}

func TestSynthSignalByCode(t *testing.T) {
	const restore = 0x4000
	tables := synthTables(t)
	code := map[uint64][]byte{restore: {0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05}}
	var m stackMem
	m.base = sp0
	// Handler B at sp0 returns to __restore_rt; the kernel's frame
	// follows; the interrupted A ran at fnA+0x10 with its own stack.
	m.put(sp0, restore)
	uc := uint64(sp0 + 8)
	interrupted := regsOf(unwind.RIP, fnA+0x10, unwind.RSP, sp0+0x400, unwind.RBX, 0x77, unwind.RBP, 0x55, 15, 0xf)
	sigcontext(&m, uc, interrupted)
	m.put(sp0+0x400, 0xbbbb)   // A's saved rbx
	m.put(sp0+0x408, fnB+0x20) // A's return address
	m.put(sp0+0x410, 0)        // B's: end (through CFI: StopZeroRA)

	res := unwind.Unwind(regsOf(unwind.RIP, fnB+4, unwind.RSP, sp0), m.overlay(code), tables, unwind.Options{})
	if res.Stop != unwind.StopZeroRA || len(res.Frames) != 4 {
		t.Fatalf("stop %q, frames %+v", res.Stop, res.Frames)
	}
	sig, a := res.Frames[1], res.Frames[2]
	if !sig.Signal || sig.PC != restore || sig.LookupPC != restore || sig.CFA != sp0+0x400 {
		t.Errorf("signal frame: %+v", sig)
	}
	if a.Method != "signal" || a.PC != fnA+0x10 || a.LookupPC != a.PC || a.Regs.Val[15] != 0xf || a.Regs.Val[unwind.RBP] != 0x55 {
		t.Errorf("interrupted frame: %+v", a)
	}
	if res.Frames[3].PC != fnB+0x20 || res.Frames[3].Regs.Val[unwind.RBX] != 0xbbbb {
		t.Errorf("frame after the interrupted one: %+v", res.Frames[3])
	}

	// The same, stopped right at __restore_rt (frame 0).
	res = unwind.Unwind(regsOf(unwind.RIP, restore, unwind.RSP, uc), m.overlay(code), tables, unwind.Options{})
	if len(res.Frames) != 3 || !res.Frames[0].Signal || res.Frames[1].PC != fnA+0x10 {
		t.Errorf("from __restore_rt: %+v", res.Frames)
	}
}

// TestSynthSignalFDE uses glibc's kind of CFI for __restore_rt: a CIE
// with 'S', the FDE one byte early, the CFA and every register as
// expressions on rsp.
func TestSynthSignalFDE(t *testing.T) {
	const restore = 0x4000
	// DW_OP_breg7 (rsp) off, off as SLEB128 (all offsets here are < 8192).
	rspPlus := func(off int) []byte {
		if off < 64 {
			return []byte{opBreg | unwind.RSP, byte(off)}
		}
		return []byte{opBreg | unwind.RSP, byte(off&0x7f | 0x80), byte(off >> 7)}
	}
	block := func(b []byte) []byte { return append([]byte{byte(len(b))}, b...) }
	instrs := append([]byte{cfaDefCFAExpr}, block(append(rspPlus(40+15*8), opDeref))...) // oRSP
	for i, r := range []int{8, 9, 10, 11, 12, 13, 14, 15, unwind.RDI, unwind.RSI, unwind.RBP, unwind.RBX, unwind.RDX, unwind.RAX, unwind.RCX} {
		instrs = append(instrs, cfaExpression, byte(r))
		instrs = append(instrs, block(rspPlus(40+8*i))...)
	}
	instrs = append(instrs, cfaExpression, unwind.RIP)
	instrs = append(instrs, block(rspPlus(40+16*8))...) // oRIP
	tables := fdeTable(append(synthTables(t), ehFrame(t, "zRS", fdeSpec{restore - 1, 10, instrs})...))

	var m stackMem
	m.base = sp0
	m.put(sp0, restore)
	uc := uint64(sp0 + 8)
	sigcontext(&m, uc, regsOf(unwind.RIP, fnA+0x10, unwind.RSP, sp0+0x100, unwind.RBX, 0x77, 12, 0xc))
	m.put(sp0+0x100, 0xbbbb)
	m.put(sp0+0x108, 0) // through CFI: StopZeroRA

	res := unwind.Unwind(regsOf(unwind.RIP, fnB+4, unwind.RSP, sp0), m.overlay(nil), tables, unwind.Options{})
	if res.Stop != unwind.StopZeroRA || len(res.Frames) != 3 {
		t.Fatalf("stop %q, frames %+v", res.Stop, res.Frames)
	}
	sig, a := res.Frames[1], res.Frames[2]
	if !sig.Signal || sig.LookupPC != restore || sig.CFA != sp0+0x100 {
		t.Errorf("signal frame: %+v", sig)
	}
	if a.Method != "cfi" || a.PC != fnA+0x10 || a.LookupPC != a.PC || a.Regs.Val[12] != 0xc || !a.Regs.Has(12) {
		t.Errorf("interrupted frame: %+v", a)
	}

	// An expression on an absent register asks for registers.
	tables = fdeTable(ehFrame(t, "zR", fdeSpec{0x5000, 0x100, []byte{cfaDefCFAExpr, 2, opBreg | unwind.RBP, 16}}))
	res = unwind.Unwind(regsOf(unwind.RIP, 0x5000, unwind.RSP, sp0), m.overlay(nil), tables, unwind.Options{})
	if res.Stop != "needs register rbp" || !res.NeedsRegs {
		t.Errorf("expression on absent rbp: stop %q needs %v", res.Stop, res.NeedsRegs)
	}
}

func TestSynthFramePointers(t *testing.T) {
	var m stackMem
	m.base = sp0
	// Three frames linked by rbp, no CFI at all.
	m.put(sp0+0x10, sp0+0x40) // frame 0's saved rbp
	m.put(sp0+0x18, 0x9100)   // its return address
	m.put(sp0+0x40, sp0+0x80)
	m.put(sp0+0x48, 0x9200)
	m.put(sp0+0x80, 0)
	m.put(sp0+0x88, 0)
	regs := regsOf(unwind.RIP, 0x9000, unwind.RSP, sp0, unwind.RBP, sp0+0x10)
	res := unwind.Unwind(regs, m.overlay(nil), nil, unwind.Options{})
	if res.Stop != unwind.StopEnd || len(res.Frames) != 3 {
		t.Fatalf("stop %q, frames %+v", res.Stop, res.Frames)
	}
	for i, pc := range []uint64{0x9000, 0x9100, 0x9200} {
		f := res.Frames[i]
		if f.PC != pc || (i > 0 && (f.Method != "fp" || f.LookupPC != pc-1)) {
			t.Errorf("frame %d: %+v", i, f)
		}
	}
	// rbp below SP is not a frame pointer.
	res = unwind.Unwind(regsOf(unwind.RIP, 0x9000, unwind.RSP, sp0, unwind.RBP, sp0-16), m.overlay(nil), nil, unwind.Options{})
	if !strings.HasPrefix(res.Stop, "no unwind info") {
		t.Errorf("rbp below sp: stop %q", res.Stop)
	}
}

func TestOverlay(t *testing.T) {
	under := unwind.Overlay{Base: 0x100, Data: []byte("0123456789abcdef")}
	ov := unwind.Overlay{Base: 0x104, Data: []byte("WXYZ"), Next: under}
	for _, tc := range []struct {
		addr uint64
		n    int
		want string
		err  uint64 // unreadable address, 0 for none
	}{
		{0x100, 16, "0123WXYZ89abcdef", 0},
		{0x102, 4, "23WX", 0},
		{0x106, 4, "YZ89", 0},
		{0x105, 2, "XY", 0},
		{0x10e, 4, "ef", 0x110},
		{0xfe, 4, "", 0xfe},
		{^uint64(0) - 1, 4, "", ^uint64(0) - 1},
	} {
		p := make([]byte, tc.n)
		n, err := ov.ReadAt(p, tc.addr)
		if string(p[:n]) != tc.want {
			t.Errorf("ReadAt(%#x, %d) = %q, want %q", tc.addr, tc.n, p[:n], tc.want)
		}
		var ue *unwind.UnreadableError
		switch {
		case tc.err == 0 && err != nil:
			t.Errorf("ReadAt(%#x, %d): %v", tc.addr, tc.n, err)
		case tc.err != 0 && (!errors.As(err, &ue) || ue.Addr != tc.err):
			t.Errorf("ReadAt(%#x, %d): error %v, want unreadable at %#x", tc.addr, tc.n, err, tc.err)
		}
	}
}
