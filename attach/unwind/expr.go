package unwind

import (
	"bytes"
	"fmt"

	"github.com/go-delve/delve/pkg/dwarf/leb128"
	"github.com/go-delve/delve/pkg/dwarf/op"
)

// checkExpr vets a CFI expression before delve's evaluator runs it: that
// evaluator trusts its input, so a crafted .eh_frame could make it
// allocate what a DW_OP_implicit_value length asks (terabytes, a fatal
// out of memory, no panic to recover) or loop for ever on a backward
// DW_OP_skip. Only the operations CFI has use for are let through, each
// with its operands inside the expression, and branches only forwards.
func checkExpr(expr []byte) (err error) {
	defer func() {
		if p := recover(); p != nil { // delve's LEB128 decoder panics on a cut number
			err = fmt.Errorf("truncated operand: %v", p)
		}
	}()
	buf := bytes.NewBuffer(expr)
	for buf.Len() > 0 {
		at := len(expr) - buf.Len()
		o, _ := buf.ReadByte()
		code := op.Opcode(o)
		var n int // fixed operand bytes
		switch {
		case code >= op.DW_OP_lit0 && code <= op.DW_OP_lit31, code >= op.DW_OP_reg0 && code <= op.DW_OP_reg31:
		case code >= op.DW_OP_breg0 && code <= op.DW_OP_breg31:
			leb128.DecodeSigned(buf)
		default:
			switch code {
			case op.DW_OP_deref, op.DW_OP_dup, op.DW_OP_drop, op.DW_OP_over, op.DW_OP_swap, op.DW_OP_rot,
				op.DW_OP_abs, op.DW_OP_and, op.DW_OP_div, op.DW_OP_minus, op.DW_OP_mod, op.DW_OP_mul,
				op.DW_OP_neg, op.DW_OP_not, op.DW_OP_or, op.DW_OP_plus, op.DW_OP_shl, op.DW_OP_shr,
				op.DW_OP_shra, op.DW_OP_xor, op.DW_OP_eq, op.DW_OP_ge, op.DW_OP_gt, op.DW_OP_le,
				op.DW_OP_lt, op.DW_OP_ne, op.DW_OP_nop, op.DW_OP_call_frame_cfa, op.DW_OP_stack_value:
			case op.DW_OP_const1u, op.DW_OP_const1s, op.DW_OP_pick, op.DW_OP_deref_size:
				n = 1
			case op.DW_OP_const2u, op.DW_OP_const2s:
				n = 2
			case op.DW_OP_const4u, op.DW_OP_const4s:
				n = 4
			case op.DW_OP_const8u, op.DW_OP_const8s, op.DW_OP_addr:
				n = 8
			case op.DW_OP_constu, op.DW_OP_plus_uconst, op.DW_OP_regx:
				leb128.DecodeUnsigned(buf)
			case op.DW_OP_consts:
				leb128.DecodeSigned(buf)
			case op.DW_OP_bregx:
				leb128.DecodeUnsigned(buf)
				leb128.DecodeSigned(buf)
			case op.DW_OP_skip, op.DW_OP_bra:
				if buf.Len() < 2 {
					return fmt.Errorf("truncated operation %#x at byte %d", o, at)
				}
				b := buf.Next(2)
				if int16(uint16(b[0])|uint16(b[1])<<8) < 0 {
					return fmt.Errorf("backward branch (%#x) at byte %d: a loop", o, at)
				}
			default:
				return fmt.Errorf("operation %#x at byte %d is not one CFI uses", o, at)
			}
		}
		if n > 0 {
			if buf.Len() < n {
				return fmt.Errorf("truncated operation %#x at byte %d", o, at)
			}
			buf.Next(n)
		}
	}
	return nil
}
