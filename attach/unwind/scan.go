package unwind

import "encoding/binary"

// CodeMap is implemented by Tables that know where code is mapped and
// where functions begin. With it the walk can find a caller where no
// CFI covers a PC and no frame pointer is kept: musl's libc.so carries
// CFI for four functions only, and musl's static libc none, so every
// wait in musl starts in code without unwind tables.
type CodeMap interface {
	// Code returns the executable segment that holds pc (its start names
	// the module), false when pc is in no module's code.
	Code(pc uint64) (start, end uint64, ok bool)
	// FuncBefore returns the start of the last function symbol at or
	// before pc in pc's module, false when none is known. A stripped
	// library knows only its exported functions.
	FuncBefore(pc uint64) (uint64, bool)
}

const (
	// maxScan bounds how far above SP the scan looks for a return address.
	maxScan = 4 << 10
	// maxFunc bounds the distance from a function's start to a PC in it.
	maxFunc = 64 << 10
)

// stepScan finds the caller of a frame that no CFI covers by scanning the
// stack above SP for the first word that is a return address of a call
// into this frame's function. Earlier calls leave their return addresses
// in stack that later frames reserve and never write (musl's
// pthread_mutex_timedlock under a fork child's inherited stack), so a
// word in code just after a call is not enough: the call's target,
// followed through jumps, PLT stubs and GOT slots, must begin the
// function that holds pc (no known function starts between the target
// and pc) or jump there within its first bytes, as HPCToolkit's
// deep_validate_return_addr confirms a trolled return address against
// the routine it returns from. A call whose target cannot be read (a
// call through a register, a PLT slot not yet bound) is taken only from
// another module: its target is unknown, not wrong. The callee-saved
// registers of the caller are unknown afterwards: the frames skipped may
// have saved them anywhere.
func (w *walker) stepScan(cur state, pc uint64) (step, bool) {
	code, ok := w.tables.(CodeMap)
	if !ok || !w.arch.scan {
		return step{}, false
	}
	here, _, ok := code.Code(pc)
	if !ok {
		return step{}, false
	}
	sp := cur.regs.Val[RSP]
	var buf [maxScan]byte
	n, _ := w.mem.ReadAt(buf[:], sp)
	for off := 0; off+8 <= n; off += 8 {
		ra := binary.LittleEndian.Uint64(buf[off:])
		caller, _, ok := code.Code(ra)
		if !ok || ra-caller < 7 {
			continue
		}
		entry, ok := w.returnsFrom(code, ra, caller, pc, here)
		if !ok {
			continue
		}
		var st step
		st.caller.regs.Set(RIP, ra)
		st.caller.regs.Set(RSP, sp+uint64(off)+8)
		st.cfa, st.method, st.entry = sp+uint64(off)+8, "scan", entry
		return st, true
	}
	return step{}, false
}

// returnsFrom says whether ra, in the module whose code starts at
// caller, follows a call that can have led to pc, in the module whose
// code starts at here; entry is the start of pc's function when the
// call's target proves it, 0 otherwise.
func (w *walker) returnsFrom(code CodeMap, ra, caller, pc, here uint64) (entry uint64, ok bool) {
	var insn [7]byte
	if k, _ := w.mem.ReadAt(insn[:], ra-7); k != len(insn) {
		return 0, false
	}
	var target uint64
	switch {
	case insn[2] == 0xe8: // call rel32
		target = ra + uint64(int64(int32(binary.LittleEndian.Uint32(insn[3:]))))
	case insn[1] == 0xff && insn[2] == 0x15: // call *disp32(%rip): -fno-plt's call through the GOT
		slot, err := readWord(w.mem, ra+uint64(int64(int32(binary.LittleEndian.Uint32(insn[3:])))))
		if err != nil {
			return 0, caller != here
		}
		target = slot
	case indirectCall(insn):
		// through a register or memory the scan cannot follow: it may go
		// anywhere, so only a call into another module is taken
		return 0, caller != here
	default:
		return 0, false
	}
	target = w.throughJumps(target)
	tmod, _, ok := code.Code(target)
	switch {
	case !ok:
		return 0, false
	case tmod == here && callsInto(code, target, pc):
		return target, true
	case tmod == here:
		return 0, w.tailCallsInto(code, target, pc)
	default:
		// still in the caller's module: a PLT stub whose slot is not yet
		// bound (lazy binding) or not decoded; elsewhere: a call that
		// went to a third module, not to pc's
		return 0, here != caller && tmod == caller
	}
}

// throughJumps follows the jumps a call target may begin with to the
// function that runs: direct ones (musl's __syscall_cp is a jmp to
// __syscall_cp_c) and a PLT stub's jump through its GOT slot (jmp
// *disp32(%rip), after an endbr64 and a bnd prefix in .plt.sec). A slot
// that is not yet bound points back into the PLT.
func (w *walker) throughJumps(target uint64) uint64 {
	for range 3 {
		var b [11]byte
		n, _ := w.mem.ReadAt(b[:], target)
		i := 0
		if n >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa { // endbr64
			i = 4
		}
		if n > i && b[i] == 0xf2 { // bnd
			i++
		}
		switch {
		case n >= i+6 && b[i] == 0xff && b[i+1] == 0x25: // jmp *disp32(%rip)
			next := target + uint64(i) + 6
			slot, err := readWord(w.mem, next+uint64(int64(int32(binary.LittleEndian.Uint32(b[i+2:])))))
			if err != nil {
				return target
			}
			target = slot
		case n >= i+5 && b[i] == 0xe9: // jmp rel32
			target += uint64(i) + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(b[i+1:]))))
		case n >= i+2 && b[i] == 0xeb: // jmp rel8
			target += uint64(i) + 2 + uint64(int64(int8(b[i+1])))
		default:
			return target
		}
	}
	return target
}

// tailCallsInto says whether the function at target jumps, within its
// first bytes, into the function that holds pc: musl's
// pthread_mutex_lock tries its fast path and jumps to
// __pthread_mutex_timedlock, pthread_join to __pthread_timedjoin_np.
func (w *walker) tailCallsInto(code CodeMap, target, pc uint64) bool {
	var b [64]byte
	n, _ := w.mem.ReadAt(b[:], target)
	for i := 0; i+5 <= n; i++ {
		if b[i] != 0xe9 {
			continue
		}
		dest := target + uint64(i) + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(b[i+1:]))))
		if callsInto(code, dest, pc) {
			return true
		}
	}
	return false
}

// callsInto says whether a call to target, in the module of pc, can
// have led to pc: target is at or before pc, no farther than a function
// is long, and no known function begins between them.
func callsInto(code CodeMap, target, pc uint64) bool {
	if target > pc || pc-target > maxFunc {
		return false
	}
	start, known := code.FuncBefore(pc)
	return !known || start <= target
}

// indirectCall reports whether the bytes before a return address end
// with an indirect near call (FF /2): through a register, or through
// memory addressed by a register, a SIB byte, a displacement or RIP.
func indirectCall(b [7]byte) bool {
	for k := 2; k <= 7; k++ { // instruction length, REX prefix excluded
		i := len(b) - k
		if b[i] != 0xff {
			continue
		}
		if modrmLen(b[i+1:]) == k-1 {
			return true
		}
	}
	return false
}

// modrmLen is the length of a ModRM operand of an FF /2 instruction
// (ModRM, SIB and displacement), 0 when the reg field is not 2.
func modrmLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	m := b[0]
	if (m>>3)&7 != 2 {
		return 0
	}
	mod, rm := m>>6, m&7
	n := 1
	if mod != 3 && rm == 4 {
		n++ // SIB
		if mod == 0 && len(b) > 1 && b[1]&7 == 5 {
			n += 4 // SIB with disp32 and no base
		}
	}
	switch {
	case mod == 0 && rm == 5:
		n += 4 // RIP-relative
	case mod == 1:
		n++
	case mod == 2:
		n += 4
	}
	return n
}
