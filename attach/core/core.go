// Package core reads x86-64 and arm64 Linux ELF core files (written by
// the kernel, by gdb's gcore, or by qemu-user for the program it runs): the threads and their registers, the memory dumped
// in PT_LOAD segments, and the mapped files. It is small on purpose: it
// knows the notes the unwinder and the symboliser need, no more.
package core

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/hangdoc/hangdoc/attach/unwind"
)

// File is an opened core file. Its ReadAt reads the dumped memory and
// makes it an unwind.Memory; it is safe for concurrent use when the
// underlying io.ReaderAt is.
type File struct {
	Arch *unwind.Arch // the machine: how Threads' registers are numbered

	PID  int    // process id, from NT_PRPSINFO (0 when absent)
	PPID int    // parent's id, from NT_PRPSINFO (0 when absent; the kernel writes the id of the parent's thread that forked)
	Name string // pr_fname: the command name (15 bytes from the kernel, up to 16 from gcore)
	Args string // pr_psargs: the start of the command line

	Threads  []Thread  // one per NT_PRSTATUS, in file order (kernel cores: the crashing thread first)
	Mappings []Mapping // from NT_FILE: the file-backed mappings
	Segments []Segment // PT_LOAD segments, sorted by address
	Auxv     []AuxEntry

	r      io.ReaderAt
	size   int64
	closer io.Closer
}

// Thread is one NT_PRSTATUS note.
type Thread struct {
	TID    int
	Signal int // pr_cursig: the signal that stopped the thread, 0 if none
	Regs   unwind.Regs
	// OrigRAX is orig_rax: the number of the system call through which
	// the thread last entered the kernel (rdi, rsi, rdx, r10, r8 and r9
	// in Regs are its arguments), -1 when it entered otherwise (an
	// interrupt, a fault).
	OrigRAX int64
	// RAX is rax: for a system call the stop interrupted, -EINTR or one
	// of the kernel's restart codes (-ERESTARTSYS …); once the call has
	// returned, its result.
	RAX    int64
	FSBase uint64 // the thread pointer (glibc's struct pthread)
	GSBase uint64
}

// Mapping is one file-backed mapping from NT_FILE.
type Mapping struct {
	Start, End uint64
	Offset     uint64 // file offset in bytes (NT_FILE stores pages; converted)
	Path       string
	// Perms ("r-xp") come from the PT_LOAD segment at Start; "" when the
	// core has none (gcore leaves out unmodified code).
	Perms string
}

// Segment is one PT_LOAD program header: Size bytes of the target's
// memory at Addr, of which the first FileSize are in the core at FileOff.
// The rest (a kernel core leaves out file-backed text, a truncated core
// loses its tail) is unreadable.
type Segment struct {
	Addr, Size        uint64
	FileOff, FileSize uint64
	Flags             uint32 // PF_X 1, PF_W 2, PF_R 4
}

// AuxEntry is one entry of the auxiliary vector (NT_AUXV).
type AuxEntry struct {
	Tag, Val uint64
}

// Auxv tags worth knowing.
const (
	AtPhdr        = 3  // the executable's program headers
	AtEntry       = 9  // the executable's entry point
	AtSysinfoEhdr = 33 // the vDSO's ELF header
)

// AuxVal returns the value of an auxiliary-vector tag.
func (f *File) AuxVal(tag uint64) (uint64, bool) {
	for _, a := range f.Auxv {
		if a.Tag == tag {
			return a.Val, true
		}
	}
	return 0, false
}

// Open reads the core file at path. On a damaged core it returns what it
// could read together with an error; the File is nil only when the file
// is not a core it can read at all.
func Open(path string) (*File, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	f, err := NewFile(fh, st.Size())
	if f == nil {
		fh.Close()
		return nil, err
	}
	f.closer = fh
	return f, err
}

// Close closes the file Open opened.
func (f *File) Close() error {
	if f.closer == nil {
		return nil
	}
	return f.closer.Close()
}

// FormatError says what is wrong and where: "core: note at 0x1f4:
// truncated". Off is a file offset.
type FormatError struct {
	What string // "ELF header", "program header", "note", "NT_FILE" …
	Off  uint64
	Msg  string
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("core: %s at %#x: %s", e.What, e.Off, e.Msg)
}

// ELF constants used here.
const (
	etCore     = 4
	ptLoad     = 1
	ptNote     = 4
	pnXNum     = 0xffff
	ehdrSize   = 64
	phdrSize   = 56
	maxPhdrs   = 1 << 22  // far more mappings than any process has
	maxNoteSeg = 64 << 20 // notes are kilobytes per thread
)

// NewFile reads a core from r, which holds size bytes. Like Open, it
// returns what it understood together with an error for what it did not.
func NewFile(r io.ReaderAt, size int64) (*File, error) {
	var eh [ehdrSize]byte
	if err := readFull(r, size, eh[:], 0); err != nil {
		return nil, &FormatError{"ELF header", 0, "truncated"}
	}
	le := binary.LittleEndian
	switch {
	case string(eh[:4]) != "\x7fELF":
		return nil, &FormatError{"ELF header", 0, "not an ELF file"}
	case eh[4] != 2 || eh[5] != 1:
		return nil, &FormatError{"ELF header", 4, "not a little-endian 64-bit ELF file"}
	case le.Uint16(eh[16:]) != etCore:
		return nil, &FormatError{"ELF header", 16, fmt.Sprintf("ELF type %d, not a core file", le.Uint16(eh[16:]))}
	case unwind.ForMachine(elf.Machine(le.Uint16(eh[18:]))) == nil:
		return nil, &FormatError{"ELF header", 18, fmt.Sprintf("machine %d (%s), not x86-64 or arm64", le.Uint16(eh[18:]), elf.Machine(le.Uint16(eh[18:])))}
	}
	phoff := le.Uint64(eh[32:])
	phentsize := uint64(le.Uint16(eh[54:]))
	phnum := uint64(le.Uint16(eh[56:]))
	if phnum == pnXNum {
		// More than 65534 segments: the count is in section 0's sh_info.
		shoff := le.Uint64(eh[40:])
		var b [4]byte
		if err := readFull(r, size, b[:], shoff+44); err != nil {
			return nil, &FormatError{"section header 0", shoff, "truncated"}
		}
		phnum = uint64(le.Uint32(b[:]))
	}
	if phentsize < phdrSize {
		return nil, &FormatError{"ELF header", 54, fmt.Sprintf("program header size %d, want %d", phentsize, phdrSize)}
	}
	if phnum > maxPhdrs || phnum*phentsize > uint64(size) {
		return nil, &FormatError{"ELF header", 56, fmt.Sprintf("%d program headers do not fit the file", phnum)}
	}

	f := &File{r: r, size: size, Arch: unwind.ForMachine(elf.Machine(le.Uint16(eh[18:])))}
	var errs []error
	var ph [phdrSize]byte
	for i := range phnum {
		off := phoff + i*phentsize
		if err := readFull(r, size, ph[:], off); err != nil {
			errs = append(errs, &FormatError{"program header", off, "truncated"})
			break
		}
		typ, flags := le.Uint32(ph[0:]), le.Uint32(ph[4:])
		poff, vaddr := le.Uint64(ph[8:]), le.Uint64(ph[16:])
		filesz, memsz := le.Uint64(ph[32:]), le.Uint64(ph[40:])
		align := le.Uint64(ph[48:])
		switch typ {
		case ptLoad:
			s := Segment{Addr: vaddr, Size: memsz, FileOff: poff, FileSize: min(filesz, memsz), Flags: flags}
			if poff > uint64(size) || s.FileSize > uint64(size)-poff {
				// A truncated core: keep what is there.
				errs = append(errs, &FormatError{"program header", off, fmt.Sprintf("segment %#x-%#x extends past the end of the file", vaddr, vaddr+memsz)})
				if poff < uint64(size) {
					s.FileSize = min(s.FileSize, uint64(size)-poff)
				} else {
					s.FileSize = 0
				}
			}
			if vaddr+memsz < vaddr {
				errs = append(errs, &FormatError{"program header", off, fmt.Sprintf("segment %#x of size %#x wraps around", vaddr, memsz)})
				continue
			}
			f.Segments = append(f.Segments, s)
		case ptNote:
			if filesz > maxNoteSeg || poff > uint64(size) || filesz > uint64(size)-poff {
				errs = append(errs, &FormatError{"program header", off, fmt.Sprintf("note segment at %#x, size %#x, past the end of the file", poff, filesz)})
				continue
			}
			data := make([]byte, filesz)
			if err := readFull(r, size, data, poff); err != nil {
				errs = append(errs, &FormatError{"note segment", poff, err.Error()})
				continue
			}
			if err := f.parseNotes(data, poff, align); err != nil {
				errs = append(errs, err)
			}
		}
	}
	sort.SliceStable(f.Segments, func(i, j int) bool { return f.Segments[i].Addr < f.Segments[j].Addr })
	for i := range f.Mappings {
		m := &f.Mappings[i]
		if s := f.segment(m.Start); s != nil && s.Addr == m.Start {
			m.Perms = perms(s.Flags)
		}
	}
	return f, errors.Join(errs...)
}

// perms spells segment flags the way /proc/PID/maps does.
func perms(flags uint32) string {
	b := []byte("---p")
	for i, c := range "rwx" {
		if flags&(4>>i) != 0 {
			b[i] = byte(c)
		}
	}
	return string(b)
}

// readFull reads len(p) bytes at off, which must lie inside the file.
func readFull(r io.ReaderAt, size int64, p []byte, off uint64) error {
	if off > uint64(size) || uint64(len(p)) > uint64(size)-off {
		return io.ErrUnexpectedEOF
	}
	n, err := r.ReadAt(p, int64(off))
	if n == len(p) {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// ReadAt reads the target's memory at addr from the PT_LOAD segments.
// Memory the core does not hold (no segment, or past a segment's
// FileSize) ends the read with an *unwind.UnreadableError.
func (f *File) ReadAt(p []byte, addr uint64) (int, error) {
	n := 0
	for n < len(p) {
		a := addr + uint64(n)
		if a < addr {
			return n, &unwind.UnreadableError{Addr: a}
		}
		s := f.segment(a)
		if s == nil || a-s.Addr >= s.FileSize {
			return n, &unwind.UnreadableError{Addr: a}
		}
		in := a - s.Addr
		m := int(min(uint64(len(p)-n), s.FileSize-in))
		if err := readFull(f.r, f.size, p[n:n+m], s.FileOff+in); err != nil {
			return n, fmt.Errorf("core: reading %#x: %w", a, err)
		}
		n += m
	}
	return n, nil
}

// segment returns the segment holding addr, or nil.
func (f *File) segment(addr uint64) *Segment {
	i := sort.Search(len(f.Segments), func(i int) bool { return f.Segments[i].Addr > addr })
	// Segments do not overlap in a sane core; when they do, prefer the
	// one that starts last (and check a few before it).
	for j := i - 1; j >= 0 && j >= i-4; j-- {
		if s := &f.Segments[j]; addr-s.Addr < s.Size {
			return s
		}
	}
	return nil
}
