package module

import (
	"debug/dwarf"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
)

// lineTable maps addresses to file:line from .debug_line. It is read on
// the first lookup, not at Open: most files are only ever asked for
// symbols and CFI, and DWARF is the costly part.
type lineTable struct {
	mu     sync.Mutex
	loaded bool
	err    error
	rows   []lineRow
	files  []string
}

type lineRow struct {
	addr uint64
	file uint32 // index in files
	line int32
	end  bool // end of a sequence: no line from here
}

// Line returns the source file and line of the link-time address addr.
func (f *File) Line(addr uint64) (file string, line int, ok bool) {
	t := &f.lines
	t.mu.Lock()
	if !t.loaded {
		t.load(&f.dwarf, filepath.Base(f.Name))
	}
	t.mu.Unlock()
	rows := t.rows
	if len(rows) == 0 {
		return f.gopcln.line(addr)
	}
	i := sort.Search(len(rows), func(i int) bool { return rows[i].addr > addr }) - 1
	if i < 0 || rows[i].end || rows[i].line <= 0 {
		return "", 0, false
	}
	return t.files[rows[i].file], int(rows[i].line), true
}

// LinesError says why the line table could not be read, once a lookup
// has tried; nil when it was read or there is none.
func (f *File) LinesError() error {
	f.lines.mu.Lock()
	defer f.lines.mu.Unlock()
	return f.lines.err
}

// load reads every compilation unit's line program into one table sorted
// by address. Called with t.mu held.
func (t *lineTable) load(dw *debugInfo, base string) {
	t.loaded = true
	d, err := dw.get(base)
	if d == nil {
		t.err = err
		return
	}
	defer func() {
		if p := recover(); p != nil {
			t.rows, t.files, t.err = nil, nil, fmt.Errorf("%s: .debug_line: corrupt: %v", base, p)
		}
	}()
	index := map[string]uint32{}
	err = eachUnit(d, base, func(e *dwarf.Entry) {
		if e.Tag != dwarf.TagCompileUnit {
			return
		}
		lr, err := d.LineReader(e)
		if err != nil {
			t.err = &Error{File: base, Section: ".debug_line", Off: -1, Err: err}
			return
		}
		if lr == nil {
			return
		}
		var le dwarf.LineEntry
		seq := len(t.rows) // where the current sequence's rows begin
		for lr.Next(&le) == nil {
			row := lineRow{addr: le.Address, line: int32(le.Line), end: le.EndSequence}
			if row.end {
				// Rows at the very address their sequence ends at cover
				// nothing (musl's crt1.o ends with one): kept, they would
				// sort after the end and name every address beyond.
				for len(t.rows) > seq && t.rows[len(t.rows)-1].addr == row.addr {
					t.rows = t.rows[:len(t.rows)-1]
				}
				seq = len(t.rows) + 1
			}
			if le.File != nil {
				n, ok := index[le.File.Name]
				if !ok {
					n = uint32(len(t.files))
					t.files = append(t.files, le.File.Name)
					index[le.File.Name] = n
				}
				row.file = n
			} else {
				row.line = 0
			}
			t.rows = append(t.rows, row)
		}
	})
	if err != nil {
		t.err = err
	}
	// At one address an end of sequence goes before the start of the next
	// sequence, so that the last row at or below an address is in effect.
	sort.SliceStable(t.rows, func(i, j int) bool {
		a, b := t.rows[i], t.rows[j]
		if a.addr != b.addr {
			return a.addr < b.addr
		}
		return a.end && !b.end
	})
}
