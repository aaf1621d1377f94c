package goproc

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// bareFrame is one physical frame: its PC (runtime address), the
// functions active there (inlined calls first), and where its
// arguments start (the caller's SP).
type bareFrame struct {
	pc, argp uint64
	fn       fn
	sym      uint64 // link-time PC the lines and inline tree are read at
	calls    []call
}

// Function flags (internal/abi.FuncFlag).
const (
	funcFlagTopFrame = 1 << 0
	funcFlagSPWrite  = 1 << 1
)

// unwind walks a goroutine's stack from pc and sp with the frame sizes
// of the pcsp tables (amd64: the return address is just above the
// frame), as the runtime's unwinder does, to a top frame
// (runtime.goexit, mstart) or depth frames. lo and hi bound the stack
// when known (0, 0 for an OS thread's). trap says pc is the
// instruction itself (a thread stopped there), not a return address.
func (b *bare) unwind(pc, sp uint64, trap bool, lo, hi uint64, depth int) ([]bareFrame, error) {
	if depth <= 0 {
		depth = 512
	}
	var out []bareFrame
	for len(out) < depth {
		if pc == 0 {
			return out, nil
		}
		link := pc - b.bias
		f, ok := b.tab.find(link)
		if !ok {
			if len(out) == 0 {
				return out, fmt.Errorf("PC %#x is in no Go function", pc)
			}
			return out, fmt.Errorf("return address %#x is in no Go function", pc)
		}
		sym := link
		if !trap && link > f.entry {
			sym-- // a return address: the call is the instruction before
		}
		delta := f.spDelta(link)
		fr := bareFrame{pc: pc, fn: f, sym: sym, calls: f.calls(sym)}
		if delta >= 0 {
			fr.argp = sp + uint64(delta) + 8
		}
		out = append(out, fr)
		flag := f.t.ftab[f.off+int(f.t.l.funcSize)-3]
		if flag&funcFlagTopFrame != 0 {
			return out, nil
		}
		if delta < 0 {
			return out, fmt.Errorf("no frame size for %s at %#x", f.name(), pc)
		}
		if flag&funcFlagSPWrite != 0 && len(out) > 1 {
			// It switched stacks (systemstack, morestack): its
			// caller is on another stack.
			return out, nil
		}
		ret, ok := b.mem.u64(fr.argp - 8)
		if !ok {
			return out, fmt.Errorf("return address at %#x unreadable", fr.argp-8)
		}
		if hi != 0 && (fr.argp < lo || fr.argp > hi) {
			return out, fmt.Errorf("frame of %s at %#x outside the stack [%#x, %#x)", f.name(), fr.argp, lo, hi)
		}
		trap = strings.HasSuffix(f.name(), "runtime.sigpanic") // the caller faulted at its PC
		pc, sp = ret, fr.argp
	}
	return out, nil
}

// framesOfBare converts the physical frames, each inlined call a frame
// of its own with the physical frame's PC, as delve gives them.
func framesOfBare(frames []bareFrame) []stacks.Frame {
	out := make([]stacks.Frame, 0, len(frames))
	for _, f := range frames {
		for _, c := range f.calls {
			out = append(out, stacks.Frame{Func: c.name, File: c.file, Line: c.line, PC: f.pc, Inlined: c.inlined})
		}
	}
	return out
}

// Argument info encoding (internal/abi: TraceArgs*).
const (
	traceArgsEndSeq         = 0xff
	traceArgsStartAgg       = 0xfe
	traceArgsEndAgg         = 0xfd
	traceArgsDotdotdot      = 0xfc
	traceArgsOffsetTooLarge = 0xfb
	traceArgsMaxLen         = (5*3+2)*10 + 1
)

// frameArgs gives the program's frames (not the runtime's, sync's or
// internal/'s, and not inlined calls) of the first maxArgFrames
// physical frames their argument words, as the runtime's traceback
// prints them (printArgs): from the frame's argument area by its
// FUNCDATA_ArgInfo, a word whose spill slot is not live there marked
// "?" as the runtime marks it. Without DWARF they have no names.
func (b *bare) frameArgs(st []stacks.Frame, frames []bareFrame) {
	j := 0
	for i, f := range frames {
		for k, c := range f.calls {
			if i < maxArgFrames && !c.inlined && k == len(f.calls)-1 && !stacks.GoMachineryFrame(c.name) && f.argp != 0 {
				st[j].Args = b.args(f)
			}
			j++
		}
	}
}

func (b *bare) args(f bareFrame) []stacks.Arg {
	info, ok := f.fn.funcdata(funcdataArgInfo)
	if !ok {
		return nil
	}
	p, ok := b.tab.rodata(info, traceArgsMaxLen)
	if !ok {
		// The table may end before the bound does: read what there is.
		for n := traceArgsMaxLen - 1; n > 0 && !ok; n /= 2 {
			p, ok = b.tab.rodata(info, n)
		}
		if !ok {
			return nil
		}
	}
	var live []byte
	startOffset := uint8(0xff)
	liveIdx := f.fn.pcdata(pcdataArgLiveIndex, f.sym)
	if a, ok := f.fn.funcdata(funcdataArgLive); ok {
		if live, ok = b.tab.rodata(a, 1+int(max(liveIdx, 0))+32); ok {
			startOffset = live[0]
		} else if live, ok = b.tab.rodata(a, 1); ok {
			startOffset = live[0]
		}
	}
	isLive := func(off, slot uint8) bool {
		if live == nil || liveIdx <= 0 || off < startOffset {
			return true
		}
		i := int(liveIdx) + int(slot/8)
		return i < len(live) && live[i]&(1<<(slot%8)) != 0
	}
	area := make([]byte, 256) // offsets are bytes: the area is at most 255+8
	if _, err := b.mem.ReadAt(area, f.argp); err != nil {
		return nil
	}
	var out []stacks.Arg
	var cur strings.Builder
	depth, start, slot := 0, true, uint8(0)
	emit := func() {
		if depth == 0 && cur.Len() > 0 {
			out = append(out, stacks.NewArg("", cur.String()))
			cur.Reset()
		}
	}
	comma := func() {
		if !start && depth > 0 {
			cur.WriteString(", ")
		}
	}
	for pi := 0; pi < len(p); {
		o := p[pi]
		pi++
		switch o {
		case traceArgsEndSeq:
			return out
		case traceArgsStartAgg:
			comma()
			cur.WriteString("{")
			depth++
			start = true
			continue
		case traceArgsEndAgg:
			cur.WriteString("}")
			depth--
			emit()
		case traceArgsDotdotdot:
			comma()
			cur.WriteString("...")
			emit()
		case traceArgsOffsetTooLarge:
			comma()
			cur.WriteString("_")
			emit()
		default:
			if pi >= len(p) {
				return out
			}
			sz := p[pi]
			pi++
			comma()
			x := binary.LittleEndian.Uint64(area[o:])
			if sz < 8 {
				x = x << (64 - 8*uint(sz)) >> (64 - 8*uint(sz))
			}
			fmt.Fprintf(&cur, "%#x", x)
			if !isLive(o, slot) {
				cur.WriteString("?")
			}
			if o >= startOffset {
				slot++
			}
			emit()
		}
		start = false
	}
	return out
}
