package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/go-delve/delve/pkg/dwarf/op"
)

// stepCFI applies the CFI row for lpc: the CFA rule gives the caller's
// SP, the register rules the caller's registers, the return-address
// column its PC.
func (w *walker) stepCFI(cur state, fde *frame.FrameDescriptionEntry, lpc uint64) (step, *stop) {
	fc, err := establish(fde, lpc)
	if err != nil {
		return step{}, &stop{reason: fmt.Sprintf("bad CFI for %#x: %v", lpc, err)}
	}
	a := w.arch
	r := &cur.regs
	var cfa uint64
	switch fc.CFA.Rule {
	case frame.RuleCFA:
		reg := fc.CFA.Reg
		if reg >= uint64(a.NumRegs) {
			return step{}, &stop{reason: fmt.Sprintf("bad CFI for %#x: CFA in register %d", lpc, reg)}
		}
		if !r.Has(int(reg)) {
			return step{}, w.missing(cur, int(reg))
		}
		cfa = r.Val[reg] + uint64(fc.CFA.Offset)
	case frame.RuleExpression:
		v, s := w.eval(cur, 0, fc.CFA.Expression)
		if s != nil {
			return step{}, s
		}
		cfa = v
	default:
		return step{}, &stop{reason: fmt.Sprintf("bad CFI for %#x: no CFA rule", lpc)}
	}

	var st step
	st.cfa, st.method = cfa, "cfi"
	n := &st.caller
	// Callee-saved registers carry over unless a rule says where they
	// were saved; caller-saved ones are clobbered by the call.
	n.regs.Valid = r.Valid & a.calleeSaved
	n.absent = cur.absent & a.calleeSaved
	for i := range a.NumRegs {
		if n.regs.Has(i) {
			n.regs.Val[i] = r.Val[i]
		}
	}
	// The caller's SP is the CFA unless a rule says otherwise (as gdb
	// and delve assume: compilers do not emit a rule for rsp).
	n.regs.Set(a.SP, cfa)

	ra := fc.RetAddrReg
	if ra >= uint64(a.NumRegs) {
		return step{}, &stop{reason: fmt.Sprintf("bad CFI for %#x: return address in register %d", lpc, ra)}
	}
	for reg, rule := range fc.Regs {
		if reg >= uint64(a.NumRegs) || reg == ra {
			continue // vector registers do not matter; RA comes last
		}
		if rule.Rule == frame.RuleUndefined {
			// delve turns DW_CFA_restore into "undefined" (it does not
			// keep the CIE's initial rules); for a callee-saved register
			// that means "back to its value at entry", i.e. carry over.
			if a.calleeSaved&(1<<reg) == 0 {
				n.regs.Valid &^= 1 << reg
				n.absent &^= 1 << reg
			}
			continue
		}
		v, s := w.rule(cur, int(reg), rule, cfa)
		n.regs.Val[reg] = v
		n.setKnown(int(reg), s)
	}

	rule, ok := fc.Regs[ra]
	switch {
	case !ok && int(ra) == a.linkReg:
		// No rule for the link register: the function has not saved it
		// (a leaf, or before its prologue), the return address is in it.
		rule = frame.DWRule{Rule: frame.RuleSameVal}
	case !ok || rule.Rule == frame.RuleUndefined:
		// _start and clone3 mark the outermost frame this way.
		n.regs.Set(a.PC, 0)
		st.outermost = true
		return st, nil
	}
	v, s := w.rule(cur, int(ra), rule, cfa)
	if s != nil {
		return step{}, s
	}
	n.regs.Set(a.PC, v)
	if int(ra) == a.linkReg {
		// After the return the caller's link register still holds it.
		n.regs.Set(a.linkReg, v)
	}
	return st, nil
}

// setKnown records whether a rule produced register reg; s says why not.
func (n *state) setKnown(reg int, s *stop) {
	if s == nil {
		n.regs.Valid |= 1 << reg
		n.absent &^= 1 << reg
		return
	}
	n.regs.Valid &^= 1 << reg
	if s.needs {
		n.absent |= 1 << reg
	} else {
		n.absent &^= 1 << reg
	}
}

// rule computes one register of the caller.
func (w *walker) rule(cur state, reg int, rule frame.DWRule, cfa uint64) (uint64, *stop) {
	r := &cur.regs
	switch rule.Rule {
	case frame.RuleSameVal:
		if !r.Has(reg) {
			return 0, w.missing(cur, reg)
		}
		return r.Val[reg], nil
	case frame.RuleOffset:
		return w.load(cfa + uint64(rule.Offset))
	case frame.RuleValOffset:
		return cfa + uint64(rule.Offset), nil
	case frame.RuleRegister:
		switch src := rule.Reg; {
		case src >= uint64(w.arch.NumRegs):
			return 0, &stop{reason: fmt.Sprintf("%s saved in register %d", w.arch.RegName(reg), src)}
		case !r.Has(int(src)):
			return 0, w.missing(cur, int(src))
		default:
			return r.Val[src], nil
		}
	case frame.RuleExpression:
		addr, s := w.eval(cur, cfa, rule.Expression)
		if s != nil {
			return 0, s
		}
		return w.load(addr)
	case frame.RuleValExpression:
		v, s := w.eval(cur, cfa, rule.Expression)
		return v, s
	}
	return 0, &stop{reason: fmt.Sprintf("%s: unsupported CFI rule %d", w.arch.RegName(reg), rule.Rule)}
}

func (w *walker) load(addr uint64) (uint64, *stop) {
	v, err := readWord(w.mem, addr)
	if err != nil {
		return 0, &stop{reason: fmt.Sprintf("memory unreadable at %#x", addr)}
	}
	return v, nil
}

// missing is the stop for a rule that needs an unknown register.
func (w *walker) missing(cur state, reg int) *stop {
	if cur.absent&(1<<reg) != 0 {
		return &stop{reason: "needs register " + w.arch.RegName(reg), needs: true}
	}
	return &stop{reason: "register " + w.arch.RegName(reg) + " unknown"}
}

// establish runs the CFI program up to pc. delve's interpreter panics on
// truncated instructions; a bad table must not take hangdoc down.
func establish(fde *frame.FrameDescriptionEntry, pc uint64) (fc *frame.FrameContext, err error) {
	defer func() {
		if p := recover(); p != nil {
			fc, err = nil, fmt.Errorf("%v", p)
		}
	}()
	return fde.EstablishFrame(pc)
}

// eval runs a DWARF expression (DW_CFA_def_cfa_expression,
// DW_CFA_expression, DW_CFA_val_expression) with delve's evaluator.
func (w *walker) eval(cur state, cfa uint64, expr []byte) (v uint64, s *stop) {
	if err := checkExpr(expr); err != nil {
		return 0, &stop{reason: fmt.Sprintf("bad CFI expression: %v", err)}
	}
	dr := op.DwarfRegisters{
		ByteOrder: binary.LittleEndian,
		PCRegNum:  uint64(w.arch.PC), SPRegNum: uint64(w.arch.SP), BPRegNum: uint64(w.arch.FP),
		CFA: int64(cfa),
	}
	for i := range w.arch.NumRegs {
		if cur.regs.Has(i) {
			dr.AddReg(uint64(i), op.DwarfRegisterFromUint64(cur.regs.Val[i]))
		}
	}
	// delve calls this the first time the expression touches a register
	// we did not give it; it does not say which one, its error does.
	touched := false
	dr.SetLoadMoreCallback(func() { touched = true })
	defer func() {
		if p := recover(); p != nil {
			v, s = 0, &stop{reason: fmt.Sprintf("bad CFI expression: %v", p)}
		}
	}()
	val, pieces, err := op.ExecuteStackProgram(dr, expr, 8, w.mem.ReadAt)
	if touched {
		reg := -1
		if err != nil {
			var n int
			if _, e := fmt.Sscanf(err.Error(), "register %d not available", &n); e == nil && n >= 0 && n < w.arch.NumRegs {
				reg = n
			}
		} else if len(pieces) == 1 && pieces[0].Kind == op.RegPiece && pieces[0].Val < uint64(w.arch.NumRegs) {
			reg = int(pieces[0].Val)
		}
		if reg >= 0 {
			return 0, w.missing(cur, reg)
		}
		return 0, &stop{reason: "needs a register", needs: cur.absent != 0}
	}
	if err != nil {
		var ue *UnreadableError
		if errors.As(err, &ue) {
			return 0, &stop{reason: ue.Error()}
		}
		return 0, &stop{reason: fmt.Sprintf("bad CFI expression: %v", err)}
	}
	if pieces != nil && (len(pieces) != 1 || pieces[0].Kind != op.RegPiece) {
		return 0, &stop{reason: "bad CFI expression: not an address"}
	}
	return uint64(val), nil
}
