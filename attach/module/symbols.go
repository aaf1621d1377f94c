package module

import (
	"cmp"
	"debug/elf"
	"errors"
	"slices"
	"sort"
	"strings"
)

// maxUnsized is how far past a symbol without a size an address may lie
// and still be named by it (hand-written assembly often lacks .size).
const maxUnsized = 4096

// Symbol is a function or data object of a File, at its link-time
// address. Name is as in the file, still mangled.
type Symbol struct {
	Name  string
	Value uint64
	Size  uint64 // 0 when the file does not say
	Func  bool

	end  uint64 // Value+Size, or for Size 0 the next symbol or section end
	rank int    // lower is preferred among aliases at one address
}

// readSymbols returns the functions and objects of .symtab and .dynsym.
// An unreadable table is a note, not an error: the other may do.
func readSymbols(ef *elf.File, base string) ([]Symbol, []string) {
	var out []Symbol
	var notes []string
	for _, t := range []struct {
		name string
		read func() ([]elf.Symbol, error)
	}{{".symtab", ef.Symbols}, {".dynsym", ef.DynamicSymbols}} {
		list, err := t.read()
		if err != nil {
			if !errors.Is(err, elf.ErrNoSymbols) {
				notes = append(notes, (&Error{File: base, Section: t.name, Off: -1, Err: err}).Error()+": its symbols are not used")
			}
			continue
		}
		out = appendSymbols(out, ef, list)
	}
	return out, notes
}

func appendSymbols(out []Symbol, ef *elf.File, list []elf.Symbol) []Symbol {
	for _, s := range list {
		if s.Name == "" || s.Section == elf.SHN_UNDEF || s.Section >= elf.SHN_LORESERVE ||
			int(s.Section) >= len(ef.Sections) || s.Name[0] == '$' || strings.HasPrefix(s.Name, ".L") {
			continue
		}
		sec := ef.Sections[s.Section]
		if sec.Flags&elf.SHF_ALLOC == 0 {
			continue
		}
		exec := sec.Flags&elf.SHF_EXECINSTR != 0
		var fn bool
		switch elf.ST_TYPE(s.Info) {
		case elf.STT_FUNC, elf.STT_GNU_IFUNC:
			fn = true
		case elf.STT_OBJECT:
		case elf.STT_NOTYPE:
			// Labels in assembly: only those in code name anything useful.
			if !exec {
				continue
			}
			fn = true
		default: // sections, files, TLS offsets
			continue
		}
		end := s.Value + s.Size
		if s.Size == 0 {
			end = min(sec.Addr+sec.Size, s.Value+maxUnsized)
		}
		if end <= s.Value && s.Size != 0 {
			continue // wraps around: corrupt
		}
		out = append(out, Symbol{Name: s.Name, Value: s.Value, Size: s.Size, Func: fn, end: end, rank: rank(s)})
	}
	return out
}

// rank prefers, among aliases at one address, global over weak over
// local symbols, then public-looking names ("pthread_mutex_lock" over
// "__GI___pthread_mutex_lock").
func rank(s elf.Symbol) int {
	r := 0
	switch elf.ST_BIND(s.Info) {
	case elf.STB_GLOBAL:
	case elf.STB_WEAK:
		r = 1 << 8
	default:
		r = 2 << 8
	}
	if strings.HasPrefix(s.Name, "__GI_") {
		r += 1 << 7
	}
	return r + len(s.Name) - len(strings.TrimLeft(s.Name, "_"))
}

// buildSymtab sorts the symbols by address, keeps the preferred name at
// each address and bounds the symbols that have no size by the next one.
func buildSymtab(syms []Symbol) []Symbol {
	slices.SortFunc(syms, func(a, b Symbol) int {
		if a.Value != b.Value {
			return cmp.Compare(a.Value, b.Value)
		}
		if a.rank != b.rank {
			return a.rank - b.rank
		}
		if len(a.Name) != len(b.Name) {
			return len(a.Name) - len(b.Name)
		}
		return strings.Compare(a.Name, b.Name)
	})
	out := syms[:0]
	for _, s := range syms {
		if n := len(out); n > 0 && out[n-1].Value == s.Value {
			last := &out[n-1]
			if last.Size == 0 && s.Size != 0 {
				last.Size, last.end = s.Size, s.end
			}
			last.Func = last.Func || s.Func
			continue
		}
		out = append(out, s)
	}
	for i := range out {
		if out[i].Size == 0 && i+1 < len(out) && out[i+1].Value < out[i].end {
			out[i].end = out[i+1].Value
		}
	}
	return out
}

// Symbols returns the file's symbols sorted by address; do not modify.
func (f *File) Symbols() []Symbol { return f.syms }

// Symbol returns the symbol covering the link-time address addr: the
// innermost sized symbol that contains it, or the nearest preceding one
// without a size, within maxUnsized and before the next symbol.
func (f *File) Symbol(addr uint64) (Symbol, bool) {
	i := sort.Search(len(f.syms), func(i int) bool { return f.syms[i].Value > addr }) - 1
	// Symbols nest (a local label inside a function): look back a little
	// for one that still covers addr.
	for j := i; j >= 0 && i-j < 16; j-- {
		if addr < f.syms[j].end {
			return f.syms[j], true
		}
	}
	if len(f.syms) == 0 {
		return f.gopcln.symbol(addr)
	}
	return Symbol{}, false
}
