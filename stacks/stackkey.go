package stacks

import (
	"strconv"
	"strings"
)

// StackKeyKind says which of its frames' facts make two stacks the same.
type StackKeyKind int

const (
	// GroupKey: the same function (or, with no symbol, the same module
	// offset) at the same line in every frame; arguments and addresses
	// may differ. Threads with one key are one group of a report.
	GroupKey StackKeyKind = iota
	// PlaceKey: the same function names where there are any, module and
	// offset (or the PC) for unnamed frames. The innermost frame of a
	// loop moves between samples, so an unnamed innermost frame counts
	// by its module alone. A thread whose samples have one key has not
	// left its place.
	PlaceKey
	// ExactKey: the same functions at the same program counters: a
	// thread that did not move at all.
	ExactKey
)

// StackKey is a stack's identity of the kind asked: the one definition of
// "the same stack" for grouping (GroupThreads) and for comparing a
// thread's samples (heuristics).
func StackKey(st []Frame, kind StackKeyKind) string {
	var b strings.Builder
	for i, f := range st {
		switch kind {
		case GroupKey:
			b.WriteString(f.Module)
			b.WriteByte('!')
			if f.Func != "" {
				b.WriteString(f.Func)
			} else {
				b.WriteString(strconv.FormatUint(f.Offset, 16))
			}
			if f.Line != 0 {
				b.WriteByte(':')
				b.WriteString(strconv.Itoa(f.Line))
			}
			if f.Signal {
				b.WriteString("<signal>")
			}
			b.WriteByte('\n')
			continue
		}
		if i > 0 {
			b.WriteByte('|')
		}
		switch {
		case kind == ExactKey:
			b.WriteString(f.Func)
			b.WriteString("@" + strconv.FormatUint(f.PC, 16))
			if f.PC == 0 {
				b.WriteString(f.Module + "+" + strconv.FormatUint(f.Offset, 16))
			}
		case f.Func != "":
			b.WriteString(f.Func)
		case f.Signal:
			b.WriteString("<signal>")
		case i == 0:
			b.WriteString(f.Module)
		case f.Module != "":
			b.WriteString(f.Module + "+" + strconv.FormatUint(f.Offset, 16))
		default:
			b.WriteString(strconv.FormatUint(f.PC, 16))
		}
	}
	return b.String()
}
