package module

import (
	"bytes"
	"debug/elf"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
)

// debugFile is a separate debug file (objcopy --only-keep-debug) that
// holds the symbols, DWARF and .debug_frame stripped from a file.
type debugFile struct {
	path string
	ef   *elf.File
	osf  *os.File
}

// findDebugFile looks where gdb does: by build id, by .gnu_debuglink,
// then by path under /usr/lib/debug. Each place is tried under root
// first (the process's view, for containers) and then under "/" for the
// build-id place, where the id proves it is the right file.
func findDebugFile(f *File, ef *elf.File, name, root string) *debugFile {
	roots := []string{"/"}
	if root != "" && filepath.Clean(root) != "/" {
		roots = []string{root, "/"}
	}
	if id := f.BuildID; len(id) > 2 {
		for _, r := range roots {
			p := filepath.Join(r, "usr/lib/debug/.build-id", id[:2], id[2:]+".debug")
			if df := f.tryDebugFile(p, 0); df != nil {
				return df
			}
		}
	}
	if !filepath.IsAbs(name) {
		return nil
	}
	dir := filepath.Dir(name)
	if link, crc, ok := debugLink(ef); ok {
		for _, p := range []string{
			filepath.Join(dir, link),
			filepath.Join(dir, ".debug", link),
			filepath.Join("/usr/lib/debug", dir, link),
		} {
			if df := f.tryDebugFile(filepath.Join(roots[0], p), crc); df != nil {
				return df
			}
		}
	}
	for _, p := range []string{filepath.Join("/usr/lib/debug", name), filepath.Join("/usr/lib/debug", name+".debug")} {
		if df := f.tryDebugFile(filepath.Join(roots[0], p), 0); df != nil {
			return df
		}
	}
	return nil
}

// tryDebugFile opens path and checks that it belongs to f: the build ids
// match when both have one, or else the debuglink CRC (when not 0) does.
func (f *File) tryDebugFile(path string, crc uint32) (df *debugFile) {
	osf, err := openRegular(path)
	if err != nil {
		return nil
	}
	defer func() {
		if p := recover(); p != nil {
			df = nil
		}
		if df == nil {
			osf.Close()
		}
	}()
	ef, err := elf.NewFile(osf)
	if err != nil {
		f.note(fmt.Sprintf("%s: debug file %s: %v: not used", filepath.Base(f.Name), path, err))
		return nil
	}
	if ef.Section(".symtab") == nil && ef.Section(".debug_info") == nil {
		return nil // the stripped file itself, or an empty stub
	}
	id := buildID(ef)
	switch {
	case f.BuildID != "" && id != "":
		if id != f.BuildID {
			f.note(fmt.Sprintf("%s: debug file %s has build id %s, want %s: not used", filepath.Base(f.Name), path, id, f.BuildID))
			return nil
		}
	case crc != 0:
		h := crc32.NewIEEE()
		if _, err := io.Copy(h, io.NewSectionReader(osf, 0, 1<<62)); err != nil || h.Sum32() != crc {
			f.note(fmt.Sprintf("%s: debug file %s: CRC does not match .gnu_debuglink: not used", filepath.Base(f.Name), path))
			return nil
		}
	}
	return &debugFile{path: path, ef: ef, osf: osf}
}

// debugLink reads .gnu_debuglink: a file name, NUL, padding to 4 bytes,
// and the CRC-32 of the debug file.
func debugLink(ef *elf.File) (name string, crc uint32, ok bool) {
	s := ef.Section(".gnu_debuglink")
	if s == nil {
		return "", 0, false
	}
	data, err := sectionData(s)
	if err != nil {
		return "", 0, false
	}
	i := bytes.IndexByte(data, 0)
	if i <= 0 {
		return "", 0, false
	}
	off := (i + 4) &^ 3
	if off+4 > len(data) {
		return "", 0, false
	}
	name = string(data[:i])
	if name != filepath.Base(name) {
		return "", 0, false // a name, never a path
	}
	return name, ef.ByteOrder.Uint32(data[off:]), true
}
