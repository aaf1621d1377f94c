package attach

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/elfnote"
	"github.com/hangdoc/hangdoc/attach/module"
)

// The files a core names: found under --root (or --exe), checked against
// the build ids the core holds, and placed at the addresses the process
// mapped them.

// exeIsCoreBuild refuses an --exe that is not the build the core's
// process ran: its symbols would name every frame wrong. The core's
// build id for the executable decides when it holds one, else the
// executable's first page (a Go binary has no GNU build id); nothing to
// compare passes.
func exeIsCoreBuild(cf *core.File, exe string) error {
	name := coreExePath(cf)
	var ms []core.Mapping
	for _, m := range cf.Mappings {
		if strings.TrimSuffix(m.Path, deletedSuffix) == name {
			ms = append(ms, m)
		}
	}
	if name == "" || len(ms) == 0 {
		return nil
	}
	if want, _, _ := coreBuildID(cf, ms); want != "" {
		f, err := modules.Open(exe, module.Options{OriginalPath: exe})
		if err != nil {
			return fmt.Errorf("--exe %s: %v", exe, err)
		}
		if f.BuildID != want {
			have := "has no build id"
			if f.BuildID != "" {
				have = "is build " + f.BuildID
			}
			return fmt.Errorf("%s is not the build the process ran (the core names build %s, it %s); pass that very executable with --exe", exe, want, have)
		}
		return nil
	}
	return sameFirstPage(cf, name, exe)
}

// sameFirstPage checks that exe is the build the process ran when the
// core holds the first page of its executable (the kernel and gcore
// dump it: ELF header, program headers, notes): a Go binary carries no
// GNU build id to compare, and delve reading the runtime with another
// build's debug information reads nonsense. Nothing to compare passes.
func sameFirstPage(cf *core.File, name, exe string) error {
	const page = 4096
	for _, m := range cf.Mappings {
		if m.Offset != 0 || strings.TrimSuffix(m.Path, deletedSuffix) != name || m.End-m.Start < page {
			continue
		}
		mapped := make([]byte, page)
		if n, _ := cf.ReadAt(mapped, m.Start); n < page {
			return nil
		}
		f, err := os.Open(exe)
		if err != nil {
			return err
		}
		defer f.Close()
		onDisk := make([]byte, page)
		n, _ := f.ReadAt(onDisk, 0)
		if !bytes.Equal(mapped[:n], onDisk[:n]) || n == 0 {
			return fmt.Errorf("%s is not the build the process ran (its first page differs from the one in the core); pass that very executable with --exe", exe)
		}
		return nil
	}
	return nil
}

// exeHost is the file on this machine the core's executable is read
// from: --exe, or the file its NT_FILE path names when that passed the
// checks (present, the same build); "" when there is none.
func (c *coreModules) exeHost(opts CoreOptions) string {
	if opts.Exe != "" {
		return opts.Exe
	}
	if c.exe == "" {
		return ""
	}
	for raw, host := range c.files {
		if strings.TrimSuffix(raw, deletedSuffix) == c.exe && host != "" {
			return host
		}
	}
	return ""
}

// coreModules is a core's address space as module sees it.
type coreModules struct {
	space *module.Space
	notes []string
	exe   string // the executable's path, as the core names it
	// files maps an NT_FILE path to the file read for it on this
	// machine; "" when none is usable (missing, another build).
	files map[string]string
}

// resolve implements core.FileBacked.Resolve: code the core left out is
// read only from the files that passed the checks.
func (c *coreModules) resolve(path string) (string, bool) {
	host := c.files[path]
	return host, host != ""
}

const deletedSuffix = " (deleted)"

// loadCoreModules opens the files a core's NT_FILE note names (under
// opts.Root, the executable from opts.Exe when given), checks each
// against the build id the core holds for it, and places them; the vDSO
// comes from the core's memory.
func loadCoreModules(cf *core.File, opts CoreOptions) *coreModules {
	c := &coreModules{space: module.NewSpace(), files: map[string]string{}}
	c.exe = coreExePath(cf)
	// One file per path, its mappings in address order.
	var paths []string
	byPath := map[string][]core.Mapping{}
	for _, m := range cf.Mappings {
		if _, ok := byPath[m.Path]; !ok {
			paths = append(paths, m.Path)
		}
		byPath[m.Path] = append(byPath[m.Path], m)
	}
	exePlaced := false
	for _, raw := range paths {
		ms := byPath[raw]
		name, deleted := strings.CutSuffix(raw, deletedSuffix)
		if !filepath.IsAbs(name) {
			continue
		}
		isExe := name == c.exe
		host := filepath.Join(opts.Root, filepath.Clean(name))
		if isExe && opts.Exe != "" {
			host = opts.Exe
		}
		f, note := c.open(cf, ms, name, host, deleted, isExe, opts)
		if note != "" {
			c.notes = append(c.notes, note)
		}
		if f == nil {
			continue
		}
		c.files[raw] = host
		added := false
		for _, m := range ms {
			if _, ok := c.space.Add(f, module.Mapping{Start: m.Start, End: m.End, Offset: m.Offset, Perms: m.Perms, Path: name, Deleted: deleted}); ok {
				added = true
			}
		}
		if added {
			c.notes = append(c.notes, f.Notes...)
			exePlaced = exePlaced || isExe
		}
	}
	if opts.Exe != "" && !exePlaced {
		c.placeExe(cf, opts.Exe)
	}
	if c.exe == "" {
		c.exe = opts.Exe
	}
	c.addVDSO(cf)
	return c
}

// open opens the file behind one NT_FILE path and checks it; a nil File
// with a note says why it is not used, a nil File without one that it is
// not an ELF object (data files, fonts, locale archives are mapped too).
func (c *coreModules) open(cf *core.File, ms []core.Mapping, name, host string, deleted, isExe bool, opts CoreOptions) (*module.File, string) {
	base := filepath.Base(name)
	want, isELF, headerRead := coreBuildID(cf, ms)
	if headerRead && !isELF {
		return nil, "" // the core holds its first page: not ELF
	}
	fix := "copy it from the machine the core came from"
	if isExe {
		fix += " or pass --exe"
	}
	fi, err := os.Stat(host)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if !isELF && !isExe && !mapsCode(ms) {
			return nil, "" // a data file, most likely: its absence costs nothing
		}
		where := host + " not found"
		if deleted && host == filepath.Join(opts.Root, name) {
			where = fmt.Sprintf("%s was deleted while the process ran (the core names it %q) and is not there now", host, name+deletedSuffix)
		}
		return nil, fmt.Sprintf("%s: missing: %s; %s; its frames are unnamed and its unwind tables unknown", base, where, fix)
	case err != nil:
		return nil, fmt.Sprintf("%s: %v", base, unwrapPathError(err))
	case !fi.Mode().IsRegular():
		return nil, "" // a device or a FIFO: never opened
	}
	mopts := module.Options{OriginalPath: name, Root: opts.Root, Debuginfod: opts.fetch}
	if host == opts.Exe {
		mopts.OriginalPath = host // its debug link is beside it
	}
	f, err := modules.Open(host, mopts)
	if err != nil {
		if errors.Is(err, module.ErrNotELF) {
			return nil, ""
		}
		return nil, err.Error()
	}
	switch {
	case want != "" && f.BuildID != want:
		have := "has no build id"
		if f.BuildID != "" {
			have = "is build " + f.BuildID
		}
		return nil, fmt.Sprintf("%s: build id mismatch: the process mapped build %s, but %s %s; %s; its frames are unnamed", base, want, host, have, fix)
	case want == "" && deleted && host == filepath.Join(opts.Root, name):
		return f, fmt.Sprintf("%s: was deleted while the process ran and the core does not hold its build id: %s may be another build", base, host)
	}
	return f, ""
}

// mapsCode says whether a file is mapped executable, or with permissions
// the core does not give (gcore leaves out code it did not dump).
func mapsCode(ms []core.Mapping) bool {
	for _, m := range ms {
		if m.Perms == "" || strings.Contains(m.Perms, "x") {
			return true
		}
	}
	return false
}

// coreExePath is the path of the mapping that holds the executable's
// entry point (or program headers), as the core names it.
func coreExePath(cf *core.File) string {
	for _, tag := range []uint64{core.AtEntry, core.AtPhdr} {
		at, ok := cf.AuxVal(tag)
		if !ok || at == 0 {
			continue
		}
		for _, m := range cf.Mappings {
			if at >= m.Start && at < m.End {
				return strings.TrimSuffix(m.Path, deletedSuffix)
			}
		}
	}
	return ""
}

// coreBuildID reads the build id of a mapped ELF file from the core's
// memory at its first mapping (file offset 0), where the kernel (with
// the default coredump_filter) and gcore dump the first page: the ELF
// header, the program headers and, in practice, the build-id note.
// isELF and headerRead say what the core told: headerRead false when it
// does not hold the first bytes at all.
func coreBuildID(cf *core.File, ms []core.Mapping) (id string, isELF, headerRead bool) {
	i := slices.IndexFunc(ms, func(m core.Mapping) bool { return m.Offset == 0 })
	if i < 0 {
		return "", false, false
	}
	start, size := ms[i].Start, ms[i].End-ms[i].Start
	var eh [64]byte
	if n, _ := cf.ReadAt(eh[:], start); n < len(eh) {
		return "", false, false
	}
	if string(eh[:4]) != elf.ELFMAG {
		return "", false, true
	}
	le := binary.LittleEndian
	if eh[elf.EI_CLASS] != byte(elf.ELFCLASS64) || eh[elf.EI_DATA] != byte(elf.ELFDATA2LSB) {
		return "", true, true
	}
	phoff, phentsize, phnum := le.Uint64(eh[32:]), uint64(le.Uint16(eh[54:])), uint64(le.Uint16(eh[56:]))
	if phentsize < 56 || phnum == 0 || phnum > 64 || phoff >= size || phnum*phentsize > size-phoff {
		return "", true, true
	}
	ph := make([]byte, phnum*phentsize)
	if n, _ := cf.ReadAt(ph, start+phoff); n < len(ph) {
		return "", true, true
	}
	for j := uint64(0); j < phnum; j++ {
		p := ph[j*phentsize:]
		if elf.ProgType(le.Uint32(p)) != elf.PT_NOTE {
			continue
		}
		off, sz := le.Uint64(p[8:]), le.Uint64(p[32:])
		if off >= size || sz > size-off || sz > 64<<10 {
			continue
		}
		notes := make([]byte, sz)
		if n, _ := cf.ReadAt(notes, start+off); n < len(notes) {
			continue
		}
		if id := elfnote.GNUBuildID(notes, binary.LittleEndian); id != "" {
			return id, true, true
		}
	}
	return "", true, true
}

// placeExe places the executable given with --exe when no NT_FILE
// mapping names it (a core without that note): its entry point in the
// auxiliary vector gives its load bias.
func (c *coreModules) placeExe(cf *core.File, exe string) {
	base := filepath.Base(exe)
	entry, ok := cf.AuxVal(core.AtEntry)
	if !ok {
		c.notes = append(c.notes, fmt.Sprintf("%s: not placed: the core names no mapping of it and has no entry point (AT_ENTRY) to place it by", base))
		return
	}
	ef, err := elf.Open(exe)
	if err != nil {
		c.notes = append(c.notes, fmt.Sprintf("%s: %v", base, err))
		return
	}
	defer ef.Close()
	f, err := modules.Open(exe, module.Options{})
	if err != nil {
		c.notes = append(c.notes, err.Error())
		return
	}
	var bias uint64
	if ef.Type == elf.ET_DYN {
		bias = entry - ef.Entry
	}
	const page = 0xfff
	for _, p := range ef.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		perms := []byte("---p")
		for i, fl := range []elf.ProgFlag{elf.PF_R, elf.PF_W, elf.PF_X} {
			if p.Flags&fl != 0 {
				perms[i] = "rwx"[i]
			}
		}
		start := (bias + p.Vaddr) &^ page
		end := (bias + p.Vaddr + p.Memsz + page) &^ page
		c.space.Add(f, module.Mapping{Start: start, End: end, Offset: p.Off &^ page, Perms: string(perms), Path: exe})
		if p.Filesz > 0 {
			// The core leaves the file's pages out (qemu-user's cores
			// have no NT_FILE): the code is read from the file, as gdb
			// does, for the unwinder's look at instructions.
			cf.Mappings = append(cf.Mappings, core.Mapping{Start: start, End: (bias + p.Vaddr + p.Filesz + page) &^ page, Offset: p.Off &^ page, Perms: string(perms), Path: exe})
		}
	}
	c.files[exe] = exe
	c.notes = append(c.notes, f.Notes...)
	c.exe = exe
}

// addVDSO places the vDSO, copied out of the core's memory at
// AT_SYSINFO_EHDR: it is no file.
func (c *coreModules) addVDSO(cf *core.File) {
	at, ok := cf.AuxVal(core.AtSysinfoEhdr)
	if !ok || at == 0 {
		return
	}
	for _, s := range cf.Segments {
		if at < s.Addr || at-s.Addr >= s.Size {
			continue
		}
		size := s.Addr + s.Size - at
		if size > 1<<20 {
			break
		}
		img := make([]byte, size)
		if n, _ := cf.ReadAt(img, at); n < len(img) {
			break
		}
		f, err := module.OpenBytes("[vdso]", img)
		if err != nil {
			c.notes = append(c.notes, err.Error())
			return
		}
		c.space.Add(f, module.Mapping{Start: at, End: at + size, Perms: "r-xp", Path: "[vdso]"})
		return
	}
	c.notes = append(c.notes, "[vdso]: not in the core; frames in it are unnamed")
}
