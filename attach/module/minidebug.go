package module

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"

	"github.com/ulikunitz/xz"
)

// maxMiniDebug bounds the decompressed size of .gnu_debugdata: Fedora's
// hold a symbol table of a few hundred kilobytes.
const maxMiniDebug = 256 << 20

// readMiniDebugInfo returns the symbols of .gnu_debugdata (MiniDebugInfo):
// an xz-compressed ELF file holding the symbol table that strip removed,
// the functions .dynsym does not name (Fedora, RHEL and CentOS ship every
// binary so, for gdb and systemd's backtraces). No section: nothing.
func readMiniDebugInfo(ef *elf.File, base string) ([]Symbol, []string) {
	s := ef.Section(".gnu_debugdata")
	if s == nil {
		return nil, nil
	}
	fail := func(err error) ([]Symbol, []string) {
		return nil, []string{(&Error{File: base, Section: ".gnu_debugdata", Off: int64(s.Offset), Err: err}).Error() + ": its symbols are not used"}
	}
	data, err := sectionData(s)
	if err != nil {
		return fail(err)
	}
	r, err := xz.NewReader(bytes.NewReader(data))
	if err != nil {
		return fail(err)
	}
	img, err := io.ReadAll(io.LimitReader(r, maxMiniDebug+1))
	switch {
	case err != nil:
		return fail(fmt.Errorf("xz: %v", err))
	case len(img) > maxMiniDebug:
		return fail(errors.New("decompresses to more than 256 MiB"))
	}
	mini, err := elf.NewFile(bytes.NewReader(img))
	if err != nil {
		return fail(err)
	}
	// The symbols' section indexes are the mini file's, whose section
	// headers copy the stripped file's (objcopy --only-keep-debug keeps
	// them, as NOBITS): appendSymbols reads flags from them.
	return readSymbols(mini, base+" (.gnu_debugdata)")
}
