package goproc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// pclntab reads the runtime's own function table (.gopclntab, the
// pcHeader of runtime/symtab.go, Go 1.18 and later): which function
// holds a PC, its frame size at that PC (the pcsp table), its file and
// line, the calls inlined there (FUNCDATA_InlTree) and where its
// arguments are (FUNCDATA_ArgInfo) — what the runtime's traceback
// uses, and what every Go binary keeps when -s -w strip its symbol
// table and DWARF. debug/gosym gives names and lines but no frame
// sizes, inline trees or funcdata, hence this reader.
//
// Addresses here are the link-time ones; the caller subtracts a PIE's
// load bias.
type pclntab struct {
	l                    *layout
	minLC                uint64
	nfunc                int
	funcnametab, cutab   []byte
	filetab, pctab, ftab []byte
	text                 uint64 // moduledata.text: entryOff is relative to it
	gofunc               uint64 // moduledata.gofunc: funcdata offsets are relative to it
	rodata               func(addr uint64, n int) ([]byte, bool)
}

// pclntab magics (runtime/symtab.go).
const (
	pclntabMagic118 = 0xfffffff0 // Go 1.18, 1.19
	pclntabMagic120 = 0xfffffff1 // Go 1.20 and later
)

// Indexes of the pcdata tables and funcdata (internal/abi/symtab.go).
const (
	pcdataInlTreeIndex = 2
	pcdataArgLiveIndex = 3
	funcdataInlTree    = 3
	funcdataArgInfo    = 5
	funcdataArgLive    = 6
)

func newPclntab(data []byte, l *layout, text, gofunc uint64, rodata func(uint64, int) ([]byte, bool)) (*pclntab, error) {
	if len(data) < 72 {
		return nil, errors.New(".gopclntab: too short")
	}
	magic := binary.LittleEndian.Uint32(data)
	if magic != pclntabMagic118 && magic != pclntabMagic120 || data[4] != 0 || data[5] != 0 || data[7] != 8 {
		return nil, fmt.Errorf(".gopclntab: header %#x: not the 64-bit table of Go 1.18 or later", magic)
	}
	t := &pclntab{l: l, minLC: uint64(data[6]), text: text, gofunc: gofunc, rodata: rodata}
	word := func(i int) uint64 { return binary.LittleEndian.Uint64(data[8+8*i:]) }
	t.nfunc = int(word(0))
	sub := func(i int) ([]byte, error) {
		off := word(i)
		if off >= uint64(len(data)) {
			return nil, fmt.Errorf(".gopclntab: table %d at %#x past the end (%#x)", i, off, len(data))
		}
		return data[off:], nil
	}
	var err error
	if t.funcnametab, err = sub(3); err != nil {
		return nil, err
	}
	if t.cutab, err = sub(4); err != nil {
		return nil, err
	}
	if t.filetab, err = sub(5); err != nil {
		return nil, err
	}
	if t.pctab, err = sub(6); err != nil {
		return nil, err
	}
	if t.ftab, err = sub(7); err != nil {
		return nil, err
	}
	if t.nfunc <= 0 || uint64(len(t.ftab)) < uint64(t.nfunc+1)*8 {
		return nil, fmt.Errorf(".gopclntab: %d functions do not fit the table", t.nfunc)
	}
	return t, nil
}

// fn is one function of the table.
type fn struct {
	t     *pclntab
	off   int // of its _func in ftab
	entry uint64
	end   uint64
}

func (t *pclntab) u32(b []byte, off int) uint32 {
	if off < 0 || off+4 > len(b) {
		return 0
	}
	return binary.LittleEndian.Uint32(b[off:])
}

// find is the function holding pc, false when none does.
func (t *pclntab) find(pc uint64) (fn, bool) {
	if pc < t.text {
		return fn{}, false
	}
	rel := pc - t.text
	// ftab: nfunc+1 pairs {entryOff, funcOff}; the last entry is the end.
	i := sort.Search(t.nfunc+1, func(i int) bool { return uint64(t.u32(t.ftab, 8*i)) > rel }) - 1
	if i < 0 || i >= t.nfunc {
		return fn{}, false
	}
	off := int(t.u32(t.ftab, 8*i+4))
	if off <= 0 || off+int(t.l.funcSize) > len(t.ftab) {
		return fn{}, false
	}
	return fn{t: t, off: off, entry: t.text + uint64(t.u32(t.ftab, 8*i)), end: t.text + uint64(t.u32(t.ftab, 8*i+8))}, true
}

func (f fn) field(off int) uint32 { return f.t.u32(f.t.ftab, f.off+off) }

func (f fn) name() string { return f.t.funcName(int32(f.field(4))) }

func (t *pclntab) funcName(off int32) string {
	if off < 0 || int(off) >= len(t.funcnametab) {
		return ""
	}
	return cstring(t.funcnametab[off:])
}

func cstring(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// value is the pc-value table at offset off evaluated at pc (the
// runtime's pcvalue); -1 when the table has none.
func (f fn) value(off uint32, pc uint64) int32 {
	if off == 0 || int(off) >= len(f.t.pctab) {
		return -1
	}
	p := f.t.pctab[off:]
	val, at := int32(-1), f.entry
	for first := true; ; first = false {
		uv, n := binary.Uvarint(p)
		if n <= 0 || uv == 0 && !first {
			return -1
		}
		p = p[n:]
		val += int32(-(uint32(uv) & 1) ^ (uint32(uv) >> 1))
		pcd, n := binary.Uvarint(p)
		if n <= 0 {
			return -1
		}
		p = p[n:]
		at += pcd * f.t.minLC
		if pc < at {
			return val
		}
	}
}

// spDelta is the frame size at pc: how far the SP is below the return
// address (pcsp).
func (f fn) spDelta(pc uint64) int32 { return f.value(f.field(16), pc) }

func (f fn) npcdata() int   { return int(f.field(28)) }
func (f fn) nfuncdata() int { return int(f.t.ftab[f.off+int(f.t.l.funcSize)-1]) }

// pcdata is pcdata table i at pc, -1 when the function has none.
func (f fn) pcdata(i int, pc uint64) int32 {
	if i >= f.npcdata() {
		return -1
	}
	return f.value(f.field(int(f.t.l.funcSize)+4*i), pc)
}

// funcdata is the address of funcdata i, false when there is none.
func (f fn) funcdata(i int) (uint64, bool) {
	if i >= f.nfuncdata() || f.t.gofunc == 0 {
		return 0, false
	}
	off := f.field(int(f.t.l.funcSize) + 4*f.npcdata() + 4*i)
	if off == ^uint32(0) {
		return 0, false
	}
	return f.t.gofunc + uint64(off), true
}

// fileLine is the source position of pc, of the innermost function
// inlined there.
func (f fn) fileLine(pc uint64) (string, int) {
	line := f.value(f.field(24), pc)
	file := f.value(f.field(20), pc)
	if file < 0 {
		return "", int(line)
	}
	cu := f.field(32)
	off := f.t.u32(f.t.cutab, 4*int(cu+uint32(file)))
	if off == ^uint32(0) || int(off) >= len(f.t.filetab) {
		return "", int(line)
	}
	return cstring(f.t.filetab[off:]), int(line)
}

// call is one function of a physical frame: its inlined calls first,
// the function itself last.
type call struct {
	name    string
	file    string
	line    int
	inlined bool
}

// maxInlineDepth bounds a walk of an inline tree read from the target.
const maxInlineDepth = 64

// calls are the functions active at pc, innermost first (the
// runtime's inlineUnwinder).
func (f fn) calls(pc uint64) []call {
	var out []call
	tree, hasTree := f.funcdata(funcdataInlTree)
	for range maxInlineDepth {
		file, line := f.fileLine(pc)
		ix := int32(-1)
		if hasTree {
			ix = f.pcdata(pcdataInlTreeIndex, pc)
		}
		if ix < 0 {
			break
		}
		b, ok := f.t.rodata(tree+uint64(ix)*uint64(f.t.l.inlSize), int(f.t.l.inlSize))
		if !ok {
			break
		}
		name := f.t.funcName(int32(binary.LittleEndian.Uint32(b[f.t.l.inlName:])))
		out = append(out, call{name: name, file: file, line: line, inlined: true})
		pc = f.entry + uint64(int64(int32(binary.LittleEndian.Uint32(b[f.t.l.inlParentPC:]))))
	}
	file, line := f.fileLine(pc)
	return append(out, call{name: f.name(), file: file, line: line})
}

// byName is the function of that name (a linear search: used once per
// read for a few runtime functions).
func (t *pclntab) byName(name string) (fn, bool) {
	for i := 0; i < t.nfunc; i++ {
		off := int(t.u32(t.ftab, 8*i+4))
		if off <= 0 || off+int(t.l.funcSize) > len(t.ftab) {
			continue
		}
		if t.funcName(int32(t.u32(t.ftab, off+4))) == name {
			return fn{t: t, off: off, entry: t.text + uint64(t.u32(t.ftab, 8*i)), end: t.text + uint64(t.u32(t.ftab, 8*i+8))}, true
		}
	}
	return fn{}, false
}
