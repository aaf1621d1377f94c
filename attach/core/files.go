package core

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/hangdoc/hangdoc/attach/unwind"
)

// FileBacked reads a core's memory and, where the core holds none, the
// files mapped there (NT_FILE), as gdb does: cores leave out file-backed
// code and read-only data, and the unwinder sometimes needs code bytes
// (a signal trampoline without CFI is recognised by its instructions).
// The files are opened lazily under Root and must be the ones the process
// mapped; a rebuilt binary gives wrong answers.
type FileBacked struct {
	Core *File
	Root string // prefix for the mapped paths ("" or "/" for this machine)
	// Resolve, when set, replaces Root: it says where the file a mapping
	// names (its NT_FILE path) is on this machine, read as given, or ok
	// false to leave that mapping unread (a missing file, or one whose
	// build id does not match the core's).
	Resolve func(path string) (host string, ok bool)

	mu    sync.Mutex
	files map[string]*os.File // nil when the file could not be opened
}

// WithFiles returns f's memory backed by the mapped files under root.
func (f *File) WithFiles(root string) *FileBacked {
	return &FileBacked{Core: f, Root: root}
}

// ReadAt implements unwind.Memory.
func (m *FileBacked) ReadAt(p []byte, addr uint64) (int, error) {
	n := 0
	for {
		k, err := m.Core.ReadAt(p[n:], addr+uint64(n))
		n += k
		if n == len(p) {
			return n, nil
		}
		a := addr + uint64(n)
		mp := m.Core.mapping(a)
		if mp == nil {
			return n, err
		}
		// Read the file up to the end of the mapping or the next byte
		// the core does hold, whichever comes first.
		want := min(uint64(len(p)-n), mp.End-a)
		if s := m.Core.nextSegment(a); s != nil && s.Addr-a < want {
			want = s.Addr - a
		}
		fh := m.open(mp.Path)
		if fh == nil {
			return n, err
		}
		k, _ = fh.ReadAt(p[n:n+int(want)], int64(mp.Offset+(a-mp.Start)))
		n += k
		if uint64(k) < want {
			return n, &unwind.UnreadableError{Addr: addr + uint64(n)}
		}
		if n == len(p) {
			return n, nil
		}
	}
}

func (m *FileBacked) open(path string) *os.File {
	m.mu.Lock()
	defer m.mu.Unlock()
	if fh, ok := m.files[path]; ok {
		return fh
	}
	if m.files == nil {
		m.files = map[string]*os.File{}
	}
	root, name, ok := m.Root, path, true
	if m.Resolve != nil {
		root = "/"
		name, ok = m.Resolve(path)
	}
	var fh *os.File
	if ok {
		var err error
		if fh, err = openRegular(root, name); err != nil {
			fh = nil
		}
	}
	m.files[path] = fh
	return fh
}

// openRegular opens root/path if it is a regular file under root. The
// paths come from the core and are not to be trusted: a FIFO or a device
// could block or have side effects on open or read.
func openRegular(root, path string) (*os.File, error) {
	if !filepath.IsAbs(path) {
		return nil, errors.New("not an absolute path")
	}
	// Clean first: "/../x" is "/x", so the path cannot climb above root.
	full := filepath.Join(root, filepath.Clean(path))
	fh, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	if st, err := fh.Stat(); err != nil || !st.Mode().IsRegular() {
		fh.Close()
		return nil, errors.New("not a regular file")
	}
	return fh, nil
}

// Close closes the mapped files opened so far (not the core).
func (m *FileBacked) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p, fh := range m.files {
		if fh != nil {
			fh.Close()
		}
		delete(m.files, p)
	}
	return nil
}

// mapping returns the NT_FILE mapping holding addr, or nil.
func (f *File) mapping(addr uint64) *Mapping {
	for i := range f.Mappings {
		if mp := &f.Mappings[i]; addr >= mp.Start && addr < mp.End {
			return mp
		}
	}
	return nil
}

// nextSegment returns the first segment with data in the core that
// starts after addr, or nil.
func (f *File) nextSegment(addr uint64) *Segment {
	for i := range f.Segments {
		if s := &f.Segments[i]; s.Addr > addr && s.FileSize > 0 {
			return s
		}
	}
	return nil
}
