package module

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"io"
	"sync"
)

// debugInfo is a file's DWARF, read on first use (a line or an inline
// lookup), not at Open: most files are only ever asked for symbols and
// CFI, and DWARF is the costly part. Once read, the sections live in
// memory and the descriptor is closed.
type debugInfo struct {
	mu     sync.Mutex
	src    *elf.File // the file holding DWARF, until read
	closer io.Closer // its descriptor
	done   bool
	data   *dwarf.Data
	err    error
}

// get returns the DWARF data, reading it the first time; nil (and the
// reason, or nil when the file has no DWARF) when it cannot be had.
func (d *debugInfo) get(base string) (*dwarf.Data, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done {
		return d.data, d.err
	}
	d.done = true
	if d.src == nil {
		return nil, nil
	}
	defer func() {
		if p := recover(); p != nil {
			d.data, d.err = nil, fmt.Errorf("%s: .debug_info: corrupt: %v", base, p)
		}
		d.release()
	}()
	d.data, d.err = d.src.DWARF()
	if d.err != nil {
		d.data, d.err = nil, &Error{File: base, Section: ".debug_info", Off: -1, Err: d.err}
	}
	return d.data, d.err
}

// release drops the ELF file and closes its descriptor. Called with d.mu
// held.
func (d *debugInfo) release() {
	if d.closer != nil {
		d.closer.Close()
	}
	d.src, d.closer = nil, nil
}

// close gives up reading the DWARF if it was not read yet.
func (d *debugInfo) close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.done {
		d.done = true
		d.release()
	}
	return nil
}

// eachUnit calls fn with the top entry of every unit of d, in order.
func eachUnit(d *dwarf.Data, base string, fn func(e *dwarf.Entry)) error {
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return &Error{File: base, Section: ".debug_info", Off: -1, Err: err}
		}
		if e == nil {
			return nil
		}
		fn(e)
		r.SkipChildren()
	}
}
