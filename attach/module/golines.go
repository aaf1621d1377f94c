package module

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
)

// goLines names the functions and source lines of a Go binary whose
// symbol table or DWARF was stripped — `go test` and `go run` link with
// -s -w — from the runtime's own pclntab, which no Go binary lacks (the
// runtime needs it for its tracebacks).
type goLines struct {
	tab *gosym.Table
}

// maxPclntab bounds the pclntab read into memory.
const maxPclntab = 256 << 20

// readGoLines returns the pclntab table of ef, nil when it has none or
// it cannot be read (a note says why).
func readGoLines(ef *elf.File, base string, f *File) (g *goLines) {
	sec := ef.Section(".gopclntab")
	text := ef.Section(".text")
	if sec == nil || text == nil || sec.Type == elf.SHT_NOBITS || sec.Size > maxPclntab {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			g = nil
			f.note(fmt.Sprintf("%s: .gopclntab: corrupt (%v): Go function names are not used", base, p))
		}
	}()
	data, err := sec.Data()
	if err != nil {
		f.note((&Error{File: base, Section: ".gopclntab", Off: -1, Err: err}).Error() + ": Go function names are not used")
		return nil
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
	if err != nil {
		f.note(fmt.Sprintf("%s: .gopclntab: %v: Go function names are not used", base, err))
		return nil
	}
	return &goLines{tab: tab}
}

// symbol is the Go function holding the link-time address addr.
func (g *goLines) symbol(addr uint64) (Symbol, bool) {
	if g == nil {
		return Symbol{}, false
	}
	fn := g.tab.PCToFunc(addr)
	if fn == nil {
		return Symbol{}, false
	}
	return Symbol{Name: fn.Name, Value: fn.Entry, Size: fn.End - fn.Entry, Func: true, end: fn.End}, true
}

// line is the source file and line of the link-time address addr.
func (g *goLines) line(addr uint64) (string, int, bool) {
	if g == nil {
		return "", 0, false
	}
	file, line, fn := g.tab.PCToLine(addr)
	if fn == nil || line <= 0 {
		return "", 0, false
	}
	return file, line, true
}
