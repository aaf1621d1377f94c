package unwind_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/hangdoc/hangdoc/attach/unwind"
)

// FuzzUnwind feeds random registers, random stack bytes and random CFI
// instructions (for one FDE at 0x5000, beside the fixed synthetic ones)
// to the unwinder: it must neither panic nor run past MaxDepth.
//
// Input: rip, rsp, rbp (8 bytes each), valid mask (4), CFI length (1),
// CFI, then the memory at 0x7000.
func FuzzUnwind(f *testing.F) {
	seed := func(rip, rsp, rbp uint64, valid uint32, cfi []byte, mem ...uint64) []byte {
		var b []byte
		b = binary.LittleEndian.AppendUint64(b, rip)
		b = binary.LittleEndian.AppendUint64(b, rsp)
		b = binary.LittleEndian.AppendUint64(b, rbp)
		b = binary.LittleEndian.AppendUint32(b, valid)
		b = append(b, byte(len(cfi)))
		b = append(b, cfi...)
		for _, w := range mem {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
		return b
	}
	all := uint32(1<<unwind.NumRegs - 1)
	f.Add(seed(fnA+0x10, sp0, 0, all, nil, 0xbbbb, fnB+0x20, 0))
	f.Add(seed(0x5010, sp0, sp0+16, all, []byte{cfaDefCFA, unwind.RBP, 16, cfaOffset | unwind.RBP, 2}, 0, 0, sp0+0x20, 0x5020, 0, 0))
	f.Add(seed(0x5010, sp0, 0, 1<<unwind.RSP|1<<unwind.RIP, []byte{cfaDefCFAExpr, 2, opBreg | unwind.RBP, 16}))
	f.Add(seed(0x9000, sp0, sp0, all, nil, sp0, 0x9000))
	f.Add(seed(0x5000, sp0, 0, all, []byte{0x0a, 0x0b, 0x0b, 0x0b}))          // restore_state without remember
	f.Add(seed(0x5000, sp0, 0, all, []byte{0x02}))                            // truncated advance_loc1
	f.Add(seed(0x5000, sp0, 0, all, []byte{cfaDefCFAExpr, 3, 0x23, 0x96, 0})) // plus_uconst on an empty stack

	synth := synthTables(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 29 {
			return
		}
		le := binary.LittleEndian
		var regs unwind.Regs
		regs.Val[unwind.RIP] = le.Uint64(data)
		regs.Val[unwind.RSP] = le.Uint64(data[8:])
		regs.Val[unwind.RBP] = le.Uint64(data[16:])
		regs.Valid = uint64(le.Uint32(data[24:]))
		n := int(data[28])
		rest := data[29:]
		if n > len(rest) {
			n = len(rest)
		}
		cfi, stack := rest[:n], rest[n:]
		tables := append(frame.FrameDescriptionEntries(nil), synth...)
		if fdes, err := parseQuiet(cfi); err == nil {
			tables = tables.Append(fdes)
		}
		mem := unwind.Overlay{Base: sp0, Data: stack}
		const max = 64
		res := unwind.Unwind(regs, mem, fdeTable(tables), unwind.Options{MaxDepth: max})
		if len(res.Frames) > max {
			t.Fatalf("%d frames past MaxDepth %d", len(res.Frames), max)
		}
		if res.Stop == "" {
			t.Fatal("no stop reason")
		}
	})
}

// parseQuiet builds an FDE at 0x5000 with instructions cfi.
func parseQuiet(cfi []byte) (fdes frame.FrameDescriptionEntries, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	return frame.Parse(ehFrameBytes("zR", fdeSpec{0x5000, 0x100, cfi}), binary.LittleEndian, 0, 8, 0x100000)
}
