// Package module reads the ELF objects a process has mapped (load
// segments, build id, symbols, call-frame information, line tables) and
// places them at one process's load addresses (Space). A File is parsed
// once and shared between processes through a Cache; it holds link-time
// addresses only and is never changed after Open.
package module

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/frame"

	"github.com/hangdoc/hangdoc/attach/elfnote"
)

// ErrNotELF is wrapped by the error for a file that is not ELF at all
// (fonts, locale archives and data files are mapped too).
var ErrNotELF = errors.New("not an ELF file")

// errNotRegular is wrapped by the error for a device, FIFO or directory,
// which Open refuses to open.
var errNotRegular = errors.New("not a regular file")

// maxSection bounds the size of a section read into memory, so that a
// corrupt header (or a compressed bomb) cannot exhaust memory.
const maxSection = 1 << 30

// Options says how to find what belongs to a file besides the file itself.
type Options struct {
	// OriginalPath is the file's path as the process sees it (the path in
	// /proc/PID/maps). It names the file in messages and locates separate
	// debug files. Default: the opened path.
	OriginalPath string
	// Root is the process's root directory (/proc/PID/root), under which
	// debug files are looked up first so that containers work. Default "/".
	Root string
	// NoDebugFiles skips the search for separate debug files.
	NoDebugFiles bool
	// Debuginfod, when not nil, fetches the debug file by build id when
	// none is found on disk.
	Debuginfod *Debuginfod
}

// File is one parsed ELF object. Addresses in it are link-time addresses
// (add a Space's bias for runtime ones). It is safe for concurrent use.
type File struct {
	Path      string      // the path opened
	Name      string      // Options.OriginalPath, or Path
	Type      elf.Type    // ET_EXEC or ET_DYN
	Machine   elf.Machine // EM_X86_64, EM_AARCH64, …
	BuildID   string      // hex, "" when the file has none
	Loads     []elf.ProgHeader
	DebugPath string // the separate debug file used, "" when none
	// Notes say what was found wrong or missing but did not stop the file
	// from being used ("libfoo.so: .eh_frame: …: its CFI is not used").
	Notes []string

	syms  []Symbol
	fdes  frame.FrameDescriptionEntries
	dwarf debugInfo
	lines lineTable
	inl   inlineTable
	// gopcln names functions and lines from the Go runtime's pclntab
	// when the symbol table or DWARF was stripped (nil otherwise).
	gopcln *goLines
}

// Error says which file could not be read, and where in it.
type Error struct {
	File    string // base name of the file
	Section string // ".eh_frame", …; "" for the ELF headers
	Off     int64  // offset of the problem, -1 when unknown
	Err     error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	b.WriteString(": ")
	if e.Section != "" {
		b.WriteString(e.Section)
		if e.Off >= 0 {
			fmt.Fprintf(&b, " at %#x", e.Off)
		}
		b.WriteString(": ")
	} else if e.Off >= 0 {
		fmt.Fprintf(&b, "at %#x: ", e.Off)
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Open reads the ELF file at path. The path is used as given: callers
// pass /proc/PID/map_files/… or /proc/PID/root/… themselves.
func Open(path string) (*File, error) {
	return OpenWith(path, Options{})
}

// mappedPath is the path the process maps the file opened at path from,
// when the caller gave it: what the File, errors and notes are named by.
func (o Options) mappedPath(path string) string {
	if o.OriginalPath != "" {
		return o.OriginalPath
	}
	return path
}

// OpenWith is Open with options for naming the file and finding its
// separate debug file.
func OpenWith(path string, opts Options) (*File, error) {
	osf, err := openRegular(path)
	if err != nil {
		return nil, &Error{File: filepath.Base(opts.mappedPath(path)), Off: -1, Err: err}
	}
	return openFile(osf, path, opts)
}

// OpenBytes reads an ELF image held in memory, such as the vDSO copied out
// of a process.
func OpenBytes(name string, data []byte) (*File, error) {
	return parse(bytes.NewReader(data), int64(len(data)), nil, name, Options{OriginalPath: name, NoDebugFiles: true})
}

// openRegular opens path only if it is a regular file: opening a device
// that a process has mapped (a GPU, /dev/mem) can have side effects.
func openRegular(path string) (*os.File, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%v)", errNotRegular, fi.Mode().Type())
	}
	return os.Open(path)
}

// openFile parses osf; it takes ownership of osf.
func openFile(osf *os.File, path string, opts Options) (*File, error) {
	fi, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, err
	}
	return parse(osf, fi.Size(), osf, path, opts)
}

// parse reads the file through r. closer, if not nil, is closed before
// parse returns unless the line table keeps it for later.
func parse(r io.ReaderAt, size int64, closer io.Closer, path string, opts Options) (f *File, err error) {
	name := opts.mappedPath(path)
	base := filepath.Base(name)
	keep := false
	defer func() {
		// debug/elf and delve are not meant to panic, but a reader of
		// untrusted files must not take hangdoc down if they do.
		if p := recover(); p != nil {
			f, err = nil, &Error{File: base, Off: -1, Err: fmt.Errorf("internal error reading the file: %v", p)}
			keep = false
		}
		if closer != nil && !keep {
			closer.Close()
		}
	}()

	var magic [4]byte
	if _, err := r.ReadAt(magic[:], 0); err != nil || string(magic[:]) != elf.ELFMAG {
		return nil, &Error{File: base, Off: -1, Err: ErrNotELF}
	}
	ef, err := elf.NewFile(r)
	if err != nil {
		return nil, &Error{File: base, Off: -1, Err: err}
	}
	if ef.Type != elf.ET_EXEC && ef.Type != elf.ET_DYN {
		return nil, &Error{File: base, Off: -1, Err: fmt.Errorf("ELF type %v: not an executable or shared object", ef.Type)}
	}
	f = &File{Path: path, Name: name, Type: ef.Type, Machine: ef.Machine}
	if err := f.readLoads(ef, size, base); err != nil {
		return nil, err
	}
	if err := checkSections(ef, size, base); err != nil {
		return nil, err
	}
	f.BuildID = buildID(ef)

	syms, notes := readSymbols(ef, base)
	f.Notes = append(f.Notes, notes...)
	f.fdes = f.readCFI(ef, base, true)

	// Symbols, DWARF and .debug_frame may live in a separate debug file.
	dwarfFile, dwarfCloser := ef, closer
	debugSymtab := false
	if !opts.NoDebugFiles && (ef.Section(".debug_info") == nil || ef.Section(".symtab") == nil) {
		df := findDebugFile(f, ef, name, opts.Root)
		if df == nil && opts.Debuginfod != nil {
			if p := opts.Debuginfod.debugFile(f.BuildID, base); p != "" {
				df = f.tryDebugFile(p, 0)
			}
		}
		if df != nil {
			f.DebugPath = df.path
			debugSymtab = df.ef.Section(".symtab") != nil
			dsyms, notes := readSymbols(df.ef, filepath.Base(df.path))
			syms = append(syms, dsyms...)
			f.Notes = append(f.Notes, notes...)
			f.fdes = f.fdes.Append(f.readCFI(df.ef, filepath.Base(df.path), false))
			if ef.Section(".debug_info") == nil && df.ef.Section(".debug_info") != nil {
				dwarfFile, dwarfCloser = df.ef, df.osf
			} else {
				df.osf.Close()
			}
		}
	}
	// MiniDebugInfo, when no full symbol table was found.
	if ef.Section(".symtab") == nil && !debugSymtab {
		msyms, notes := readMiniDebugInfo(ef, base)
		syms = append(syms, msyms...)
		f.Notes = append(f.Notes, notes...)
	}
	syms = append(syms, pltSymbols(ef)...)
	f.syms = buildSymtab(syms)
	hasLines := dwarfFile.Section(".debug_info") != nil && dwarfFile.Section(".debug_line") != nil
	if len(f.syms) == 0 || !hasLines {
		f.gopcln = readGoLines(ef, base, f)
	}
	if hasLines {
		f.dwarf.src, f.dwarf.closer = dwarfFile, dwarfCloser
		keep = dwarfCloser == closer
	} else if dwarfCloser != closer && dwarfCloser != nil {
		dwarfCloser.Close()
	}
	return f, nil
}

func (f *File) note(s string) { f.Notes = append(f.Notes, s) }

// Close releases the file descriptor kept for reading the line table on
// first use; after it, lines not read yet are not available. Symbols and
// CFI stay usable.
func (f *File) Close() error { return f.dwarf.close() }

// readLoads keeps the PT_LOAD headers and rejects a file whose segments
// extend past its end: a truncated file.
func (f *File) readLoads(ef *elf.File, size int64, base string) error {
	for _, p := range ef.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		end := p.Off + p.Filesz
		if end < p.Off || end > uint64(size) {
			return &Error{File: base, Section: "PT_LOAD", Off: int64(p.Off),
				Err: fmt.Errorf("segment of %#x bytes extends past the end of the file (%d bytes): truncated?", p.Filesz, size)}
		}
		f.Loads = append(f.Loads, p.ProgHeader)
	}
	if len(f.Loads) == 0 {
		return &Error{File: base, Off: -1, Err: errors.New("no PT_LOAD segment")}
	}
	return nil
}

// checkSections rejects a file whose sections lie past its end.
func checkSections(ef *elf.File, size int64, base string) error {
	for _, s := range ef.Sections {
		if s.Type == elf.SHT_NOBITS || s.Type == elf.SHT_NULL || s.FileSize == 0 {
			continue
		}
		end := s.Offset + s.FileSize
		if end < s.Offset || end > uint64(size) {
			return &Error{File: base, Section: s.Name, Off: int64(s.Offset),
				Err: fmt.Errorf("section of %#x bytes extends past the end of the file (%d bytes): truncated?", s.FileSize, size)}
		}
	}
	return nil
}

// sectionData reads a section, refusing absurd sizes.
func sectionData(s *elf.Section) ([]byte, error) {
	if s.Type == elf.SHT_NOBITS {
		return nil, errors.New("section has no data in this file")
	}
	if s.Size > maxSection {
		return nil, fmt.Errorf("section of %#x bytes is too large", s.Size)
	}
	return s.Data()
}

// buildID returns the NT_GNU_BUILD_ID note as hex, from a note section or,
// in a file without section headers, a PT_NOTE segment.
func buildID(ef *elf.File) string {
	for _, s := range ef.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		if data, err := sectionData(s); err == nil {
			if id := elfnote.GNUBuildID(data, ef.ByteOrder); id != "" {
				return id
			}
		}
	}
	for _, p := range ef.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 1<<20 {
			continue
		}
		data := make([]byte, p.Filesz)
		if _, err := p.ReadAt(data, 0); err == nil {
			if id := elfnote.GNUBuildID(data, ef.ByteOrder); id != "" {
				return id
			}
		}
	}
	return ""
}
