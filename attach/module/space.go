package module

import (
	"debug/elf"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/hangdoc/hangdoc/stacks"
)

// Loaded is a File placed in one process at a load bias.
type Loaded struct {
	File       *File
	Path       string // the path the process maps it from (/proc/PID/maps)
	Start, End uint64 // lowest start and highest end of its mappings
	Bias       uint64 // runtime address = link-time address + Bias

	mu   sync.Mutex
	fdes map[*frame.FrameDescriptionEntry]*frame.FrameDescriptionEntry
}

// Space is the set of files one process has mapped, at their runtime
// addresses. Build it with Add (or Cache.Load), then use it from any
// number of goroutines.
type Space struct {
	mods  []*Loaded
	spans []span // one per mapping, sorted by start; mappings never overlap
}

type span struct {
	start, end uint64
	l          *Loaded
}

// NewSpace returns an empty Space.
func NewSpace() *Space { return &Space{} }

// Add places mapping m of file f. Mappings of one load of a file join one
// Loaded, the one whose bias they agree with; ok is false when m maps no
// part of f's segments (a file mapped as data).
func (s *Space) Add(f *File, m Mapping) (l *Loaded, ok bool) {
	biases := f.biases(m)
	if len(biases) == 0 {
		return nil, false
	}
	for _, cand := range s.mods {
		if cand.File == f && slices.Contains(biases, cand.Bias) {
			l = cand
			break
		}
	}
	if l == nil {
		l = &Loaded{File: f, Path: m.Path, Start: m.Start, End: m.End, Bias: biases[0]}
		s.mods = append(s.mods, l)
	}
	l.Start, l.End = min(l.Start, m.Start), max(l.End, m.End)
	i := sort.Search(len(s.spans), func(i int) bool { return s.spans[i].start >= m.Start })
	s.spans = slices.Insert(s.spans, i, span{m.Start, m.End, l})
	return l, true
}

// Lookup returns the file mapped at runtime address pc, or nil.
func (s *Space) Lookup(pc uint64) *Loaded {
	i := sort.Search(len(s.spans), func(i int) bool { return s.spans[i].end > pc })
	if i < len(s.spans) && s.spans[i].start <= pc {
		return s.spans[i].l
	}
	return nil
}

// FDEForPC implements unwind.Tables: the FDE covering runtime address pc,
// with runtime addresses, so that EstablishFrame(pc) can be called with
// the same pc. The File's FDEs are shared between processes with
// different biases, so a translated copy is made (once) per Loaded.
func (s *Space) FDEForPC(pc uint64) *frame.FrameDescriptionEntry {
	l := s.Lookup(pc)
	if l == nil {
		return nil
	}
	fde := l.File.FDE(pc - l.Bias)
	if fde == nil || l.Bias == 0 {
		return fde
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.fdes[fde]; ok {
		return c
	}
	if l.fdes == nil {
		l.fdes = map[*frame.FrameDescriptionEntry]*frame.FrameDescriptionEntry{}
	}
	// The copy shares the CIE, which holds no address, and the
	// instructions, which are relative to Begin. (DW_CFA_set_loc would
	// carry a link-time address; compilers do not emit it in .eh_frame.)
	c := *fde
	c.Translate(l.Bias)
	l.fdes[fde] = &c
	return &c
}

// Code implements unwind.CodeMap: the executable load segment of the
// module mapped at pc, in runtime addresses.
func (s *Space) Code(pc uint64) (start, end uint64, ok bool) {
	l := s.Lookup(pc)
	if l == nil || pc < l.Bias {
		return 0, 0, false
	}
	off := pc - l.Bias
	for _, ph := range l.File.Loads {
		if ph.Flags&elf.PF_X != 0 && off >= ph.Vaddr && off-ph.Vaddr < ph.Memsz {
			return ph.Vaddr + l.Bias, ph.Vaddr + ph.Memsz + l.Bias, true
		}
	}
	return 0, 0, false
}

// FuncBefore implements unwind.CodeMap: the start of the last function
// symbol at or before pc in its module.
func (s *Space) FuncBefore(pc uint64) (uint64, bool) {
	l := s.Lookup(pc)
	if l == nil || pc < l.Bias {
		return 0, false
	}
	off := pc - l.Bias
	syms := l.File.syms
	for i := sort.Search(len(syms), func(i int) bool { return syms[i].Value > off }) - 1; i >= 0; i-- {
		if syms[i].Func {
			return syms[i].Value + l.Bias, true
		}
	}
	return 0, false
}

// Symbolize names runtime address pc: function (demangled), module,
// offset from the load bias, file and line. For a caller's frame, whose
// PC is a return address, use SymbolizeCaller.
func (s *Space) Symbolize(pc uint64) stacks.Frame {
	fr := stacks.Frame{PC: pc}
	l := s.Lookup(pc)
	if l == nil {
		return fr
	}
	fr.Module, fr.Offset = l.Path, pc-l.Bias
	if sym, ok := l.File.Symbol(fr.Offset); ok {
		fr.Func = stacks.Demangle(sym.Name)
	}
	if file, line, ok := l.File.Line(fr.Offset); ok {
		fr.File, fr.Line = file, line
	}
	return fr
}

// SymbolizeInline is Symbolize with the functions inlined at pc, as gdb
// and eu-stack -i list them: the innermost inlined function first, at the
// line pc is on, each marked Inlined and all at pc; the function holding
// them last, at the call site of the outermost one.
func (s *Space) SymbolizeInline(pc uint64) []stacks.Frame {
	fr := s.Symbolize(pc)
	l := s.Lookup(pc)
	if l == nil {
		return []stacks.Frame{fr}
	}
	fn, inl := l.File.Inlines(fr.Offset)
	if fn != "" {
		fr.Func = fn
	}
	if len(inl) == 0 {
		return []stacks.Frame{fr}
	}
	out := make([]stacks.Frame, 0, len(inl)+1)
	file, line := fr.File, fr.Line
	for _, in := range inl {
		out = append(out, stacks.Frame{Func: in.Func, Module: fr.Module, Offset: fr.Offset, PC: pc, File: file, Line: line, Inlined: true})
		file, line = in.CallFile, in.CallLine
	}
	fr.File, fr.Line = file, line
	return append(out, fr)
}

// SymbolizeCaller is Symbolize for a return address: it names the call
// instruction before ret (the return address of a call to a noreturn
// function may already be in the next function) but reports ret as PC.
func (s *Space) SymbolizeCaller(ret uint64) stacks.Frame {
	if ret == 0 {
		return s.Symbolize(ret)
	}
	fr := s.Symbolize(ret - 1)
	fr.PC = ret
	if fr.Module != "" {
		fr.Offset++
	}
	return fr
}

// Modules lists the loaded files by address, for the snapshot.
func (s *Space) Modules() []stacks.Module {
	out := make([]stacks.Module, 0, len(s.mods))
	for _, l := range s.mods {
		out = append(out, stacks.Module{Path: l.Path, Start: l.Start, End: l.End, Bias: l.Bias, BuildID: l.File.BuildID})
	}
	slices.SortFunc(out, func(a, b stacks.Module) int {
		switch {
		case a.Start < b.Start:
			return -1
		case a.Start > b.Start:
			return 1
		}
		return 0
	})
	return out
}

// DataSymbol names the object at runtime address addr ("server_lock"),
// "" when no symbol covers it. Unlike Lookup it also covers a module's
// .bss, which lies in anonymous memory after the file's last mapping.
func (s *Space) DataSymbol(addr uint64) string {
	for _, l := range s.mods {
		if addr < l.Bias {
			continue
		}
		off := addr - l.Bias
		for _, ph := range l.File.Loads {
			if off >= ph.Vaddr && off-ph.Vaddr < ph.Memsz {
				if sym, ok := l.File.Symbol(off); ok && !sym.Func {
					name := stacks.Demangle(sym.Name)
					if off > sym.Value {
						// A lock inside a larger object: the loader's
						// _dl_load_lock is _rtld_global+0x988.
						name += fmt.Sprintf("+%#x", off-sym.Value)
					}
					return name
				}
				return ""
			}
		}
	}
	return ""
}
