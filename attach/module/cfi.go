package module

import (
	"debug/elf"
	"errors"
	"fmt"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// readCFI parses .eh_frame (when withEH) and .debug_frame of ef into FDEs
// sorted by their link-time Begin. A section that does not parse is left
// out with a note: the file stays usable for symbols.
func (f *File) readCFI(ef *elf.File, base string, withEH bool) frame.FrameDescriptionEntries {
	ptrSize := 8
	if ef.Class == elf.ELFCLASS32 {
		ptrSize = 4
	}
	var all frame.FrameDescriptionEntries
	for _, name := range []string{".eh_frame", ".debug_frame"} {
		s := ef.Section(name)
		if s == nil || s.Type == elf.SHT_NOBITS || (name == ".eh_frame" && !withEH) {
			continue
		}
		var ehAddr uint64
		if name == ".eh_frame" {
			// delve tells the two formats apart by a non-zero address.
			if s.Addr == 0 {
				f.note((&Error{File: base, Section: name, Off: -1, Err: errors.New("section has no address")}).Error() + ": its call-frame information is not used")
				continue
			}
			ehAddr = s.Addr
		}
		fdes, err := parseFrames(s, ef, ptrSize, ehAddr)
		if err != nil {
			f.note((&Error{File: base, Section: name, Off: -1, Err: err}).Error() + ": its call-frame information is not used")
			continue
		}
		all = all.Append(f.inText(fdes))
	}
	return all
}

// parseFrames runs delve's parser, which panics on some corrupt input.
func parseFrames(s *elf.Section, ef *elf.File, ptrSize int, ehAddr uint64) (fdes frame.FrameDescriptionEntries, err error) {
	defer func() {
		if p := recover(); p != nil {
			fdes, err = nil, fmt.Errorf("corrupt: %v", p)
		}
	}()
	data, err := sectionData(s)
	if err != nil {
		return nil, err
	}
	return frame.Parse(data, ef.ByteOrder, 0, ptrSize, ehAddr)
}

// inText keeps the FDEs that lie inside an executable segment: this drops
// the entries of functions the linker discarded (Begin 0 or -1 in
// .debug_frame) and nonsense from a damaged section.
func (f *File) inText(fdes frame.FrameDescriptionEntries) frame.FrameDescriptionEntries {
	out := fdes[:0]
	for _, fde := range fdes {
		if fde == nil || fde.CIE == nil || fde.End() <= fde.Begin() {
			continue
		}
		for _, p := range f.Loads {
			if p.Flags&elf.PF_X != 0 && fde.Begin() >= p.Vaddr && fde.End() <= p.Vaddr+p.Memsz {
				out = append(out, fde)
				break
			}
		}
	}
	return out
}

// FDEs returns the file's FDEs sorted by link-time Begin; do not modify
// them (they are shared by every process that maps the file).
func (f *File) FDEs() frame.FrameDescriptionEntries { return f.fdes }

// FDE returns the FDE covering the link-time address addr, or nil.
func (f *File) FDE(addr uint64) *frame.FrameDescriptionEntry {
	fde, err := f.fdes.FDEForPC(addr)
	if err != nil {
		return nil
	}
	return fde
}
