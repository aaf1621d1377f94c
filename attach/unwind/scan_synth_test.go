package unwind_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/hangdoc/hangdoc/attach/unwind"
)

// Hand-built stacks for the scan of callers without CFI: a program
// (exe) calls into a libc without unwind tables (musl's), through PLT
// stubs or the GOT, and an earlier call has left its return address in
// stack the waiting frames reserved and never wrote (as a forked child
// inherits its parent's). The layout follows what gdb showed of
// testdata/patients/openblas_relock.c's musl child: the stale word is
// patient_task_blocked_in's return from atoi@plt, above the real return
// from pthread_mutex_lock@plt.

const (
	exeCode, exeEnd = 0x400000, 0x410000
	libCode, libEnd = 0x7f0000, 0x800000

	libLock      = libCode + 0x100 // exported pthread_mutex_lock: jmp timedlock
	libTimedlock = libCode + 0x200 // exported: calls libWait at +0xf0
	libWait      = libCode + 0x400 // internal (no symbol): the futex wait
	libAtoi      = libCode + 0x800 // exported

	exeGOT     = exeCode + 0x9000 // slots: lock, atoi
	exeBlocked = exeCode + 0x100  // calls atoi at +0x40
	exeInit    = exeCode + 0x200  // calls lock at +0x20
)

// scanTables is a Tables without CFI and a CodeMap with two modules.
type scanTables struct{ syms []uint64 }

func (scanTables) FDEForPC(uint64) *frame.FrameDescriptionEntry { return nil }

func (scanTables) Code(pc uint64) (uint64, uint64, bool) {
	switch {
	case pc >= exeCode && pc < exeEnd:
		return exeCode, exeEnd, true
	case pc >= libCode && pc < libEnd:
		return libCode, libEnd, true
	}
	return 0, 0, false
}

func (s scanTables) FuncBefore(pc uint64) (uint64, bool) {
	start, found := uint64(0), false
	for _, sym := range s.syms {
		if sym <= pc && (!found || sym > start) && sameModule(sym, pc) {
			start, found = sym, true
		}
	}
	return start, found
}

func sameModule(a, b uint64) bool { return (a >= libCode) == (b >= libCode) }

var le = binary.LittleEndian

// callRel32 is "call target" placed at at.
func callRel32(at, target uint64) []byte {
	return le.AppendUint32([]byte{0xe8}, uint32(target-(at+5)))
}

// site places insn, a call, so that it ends at ra, after nops up to the
// seven bytes the scan reads before a return address.
func site(code map[uint64][]byte, ra uint64, insn []byte) {
	code[ra-7] = append(slices.Repeat([]byte{0x90}, 7-len(insn)), insn...)
}

// ripRel is an instruction of prefix and a disp32 to slot, placed at at.
func ripRel(at uint64, prefix []byte, slot uint64) []byte {
	end := at + uint64(len(prefix)) + 4
	return le.AppendUint32(slices.Clone(prefix), uint32(slot-end))
}

func TestScanSkipsStaleReturnAddress(t *testing.T) {
	const (
		pltLock   = exeCode + 0x10
		pltAtoi   = exeCode + 0x20
		waitPC    = libWait + 0x50
		timedRA   = libTimedlock + 0xf5 // after the call to libWait
		initRA    = exeInit + 0x25      // after the call to lock
		blockedRA = exeBlocked + 0x45   // after the call to atoi: stale
	)
	// the stubs' forms: .plt, .plt.sec after -z ibt (endbr64; bnd jmp)
	stubs := map[string][]byte{
		"plt":     {0xff, 0x25},
		"plt.sec": {0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25},
	}
	for _, tc := range []struct {
		name string
		// blockedCall is the stale caller's call to atoi, ending at blockedRA
		blockedCall func() []byte
		stub        string
		atoiSlot    uint64 // what atoi's GOT slot holds
		wantCaller  uint64 // the frame found above pthread_mutex_timedlock
	}{
		{"call atoi@plt", func() []byte { return callRel32(blockedRA-5, pltAtoi) }, "plt", libAtoi, initRA},
		{"call atoi@plt.sec", func() []byte { return callRel32(blockedRA-5, pltAtoi) }, "plt.sec", libAtoi, initRA},
		{"call *atoi@GOTPCREL(%rip)", func() []byte { return ripRel(blockedRA-6, []byte{0xff, 0x15}, exeGOT+8) }, "plt", libAtoi, initRA},
		// a slot not yet bound points back into the PLT: the target is
		// unknown, so the word is taken as before
		{"lazy atoi@plt", func() []byte { return callRel32(blockedRA-5, pltAtoi) }, "plt", pltAtoi + 6, blockedRA},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code := map[uint64][]byte{
				// pthread_mutex_lock tries its fast path, then jumps
				libLock: append([]byte{0x8b, 0x07, 0x85, 0xc0}, le.AppendUint32([]byte{0xe9}, uint32(libTimedlock-(libLock+9)))...),
				libAtoi: {0x31, 0xc0, 0xc3},
				pltLock: ripRel(pltLock, stubs[tc.stub], exeGOT),
				pltAtoi: ripRel(pltAtoi, stubs[tc.stub], exeGOT+8),
				exeGOT:  le.AppendUint64(le.AppendUint64(nil, libLock), tc.atoiSlot),
			}
			site(code, timedRA, callRel32(timedRA-5, libWait))
			site(code, initRA, callRel32(initRA-5, pltLock))
			site(code, blockedRA, tc.blockedCall())
			var m stackMem
			m.base = sp0
			m.put(sp0+0x08, timedRA) // libWait's caller
			m.put(sp0+0x10, 0x80)    // pthread_mutex_timedlock's locals ...
			m.put(sp0+0x18, blockedRA)
			m.put(sp0+0x20, exeGOT) // into the exe, after no call
			m.put(sp0+0x28, initRA)
			tables := scanTables{syms: []uint64{libLock, libTimedlock, libAtoi, exeBlocked, exeInit}}
			res := unwind.Unwind(regsOf(unwind.RIP, waitPC, unwind.RSP, sp0), m.overlay(code), tables, unwind.Options{})
			var pcs []uint64
			for _, f := range res.Frames {
				pcs = append(pcs, f.PC)
			}
			if want := []uint64{waitPC, timedRA, tc.wantCaller}; len(pcs) < 3 || !slices.Equal(pcs[:3], want) {
				t.Fatalf("frames %#x (stop %q), want %#x first", pcs, res.Stop, want)
			}
			if res.Frames[1].Method != "scan" || res.Frames[2].Method != "scan" {
				t.Errorf("methods %q, %q, want scan", res.Frames[1].Method, res.Frames[2].Method)
			}
			if res.Frames[0].Entry != libWait {
				t.Errorf("wait's entry %#x, want %#x (the call's target)", res.Frames[0].Entry, libWait)
			}
		})
	}
}

// A call resolved through the PLT to the function that holds pc gives
// that function's start, as a direct call does; a call that went to
// another module altogether is no caller of pc.
func TestScanResolvedPLTEntry(t *testing.T) {
	const (
		pltRead = exeCode + 0x10
		libRead = libCode + 0x300
		readPC  = libRead + 0x12
		mainRA  = exeInit + 0x25
		thirdRA = exeInit + 0x45 // after a call to code no module holds
	)
	code := map[uint64][]byte{
		pltRead: ripRel(pltRead, []byte{0xff, 0x25}, exeGOT),
		exeGOT:  le.AppendUint64(le.AppendUint64(nil, libRead), 0x900000),
	}
	site(code, mainRA, callRel32(mainRA-5, pltRead))
	site(code, thirdRA, ripRel(thirdRA-6, []byte{0xff, 0x15}, exeGOT+8))
	var m stackMem
	m.base = sp0
	m.put(sp0, thirdRA)
	m.put(sp0+8, mainRA)
	tables := scanTables{syms: []uint64{libLock, libRead, exeInit}}
	res := unwind.Unwind(regsOf(unwind.RIP, readPC, unwind.RSP, sp0), m.overlay(code), tables, unwind.Options{})
	if len(res.Frames) < 2 || res.Frames[1].PC != mainRA {
		t.Fatalf("frames %+v (stop %q), want read's caller at %#x", res.Frames, res.Stop, uint64(mainRA))
	}
	if res.Frames[0].Entry != libRead {
		t.Errorf("read's entry %#x, want %#x (the PLT slot's target)", res.Frames[0].Entry, uint64(libRead))
	}
}
