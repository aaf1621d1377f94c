package module

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/hangdoc/hangdoc/attach/procmem"
)

// Cache shares parsed Files between samples, attaches and processes: a
// file is known by device, inode, size and modification time, so the
// /proc/PID/map_files/… of two processes that map the same libc give one
// File. It is safe for concurrent use; a file being parsed by one
// goroutine is waited for by the others.
type Cache struct {
	mu    sync.Mutex
	files map[fileKey]*entry
	vdsos map[string]*entry // by content: one per kernel
}

type fileKey struct {
	dev, ino uint64
	size     int64
	mtime    int64
}

type entry struct {
	done chan struct{}
	f    *File
	err  error
}

// NewCache returns an empty cache.
func NewCache() *Cache {
	return &Cache{files: map[fileKey]*entry{}, vdsos: map[string]*entry{}}
}

// Open is OpenWith through the cache. The options of the first open of a
// file decide its name and debug file.
func (c *Cache) Open(path string, opts Options) (*File, error) {
	osf, err := openRegular(path)
	if err != nil {
		return nil, &Error{File: filepath.Base(opts.mappedPath(path)), Off: -1, Err: err}
	}
	fi, err := osf.Stat()
	if err != nil {
		osf.Close()
		return nil, &Error{File: filepath.Base(opts.mappedPath(path)), Off: -1, Err: err}
	}
	key := fileKey{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		key.dev, key.ino = uint64(st.Dev), st.Ino
	}
	e, found := getEntry(c, c.files, key)
	if found {
		osf.Close()
		<-e.done
		return e.f, e.err
	}
	e.f, e.err = openFile(osf, path, opts)
	close(e.done)
	return e.f, e.err
}

// getEntry returns the entry for key in m, creating it (found false: the
// caller must fill it and close done) if there was none.
func getEntry[K comparable](c *Cache, m map[K]*entry, key K) (e *entry, found bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e = m[key]; e != nil {
		return e, true
	}
	e = &entry{done: make(chan struct{})}
	m[key] = e
	return e, false
}

// Len returns how many files the cache holds, failed ones included.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.files) + len(c.vdsos)
}

// Close releases the descriptors the cached files keep for reading line
// tables. Files already handed out stay usable for symbols and CFI.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.files {
		<-e.done
		if e.f != nil {
			e.f.Close()
		}
	}
	return nil
}

// LoadProcess reads /proc/PID/maps and loads it (see Load).
func (c *Cache) LoadProcess(pid int) (*Space, []string, error) {
	mf, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return nil, nil, err
	}
	defer mf.Close()
	maps, err := ParseMaps(mf)
	if err != nil {
		return nil, nil, fmt.Errorf("/proc/%d/maps: %v", pid, err)
	}
	s, notes := c.Load(pid, maps)
	return s, notes, nil
}

// Load opens every ELF object among the mappings of process pid (through
// /proc/PID/map_files, which works for deleted files and across mount
// namespaces, or else /proc/PID/root/PATH) and places it. The vDSO is
// copied out of the process's memory. Files that cannot be read are left
// out with a note; mappings that are not ELF (fonts, locale archives,
// data files) or not regular files (devices) are skipped silently.
func (c *Cache) Load(pid int, maps []Mapping) (*Space, []string) {
	return c.LoadWith(pid, maps, nil)
}

// LoadWith is Load that fetches missing debug files through d (nil: no
// fetching).
func (c *Cache) LoadWith(pid int, maps []Mapping, d *Debuginfod) (*Space, []string) {
	s := NewSpace()
	var notes []string
	noted := map[string]bool{}
	for _, m := range maps {
		var f *File
		var err error
		switch {
		case m.Path == "[vdso]":
			f, err = c.vdso(pid, m)
		case m.Inode != 0 && strings.HasPrefix(m.Path, "/"):
			f, err = c.openMapped(pid, m, d)
		default:
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrNotELF) && !errors.Is(err, errNotRegular) && !noted[m.Path] {
				noted[m.Path] = true
				notes = append(notes, err.Error())
			}
			continue
		}
		if _, ok := s.Add(f, m); ok && !noted[m.Path] {
			noted[m.Path] = true
			notes = append(notes, f.Notes...)
		}
	}
	return s, notes
}

// openMapped opens the file behind mapping m of process pid.
func (c *Cache) openMapped(pid int, m Mapping, d *Debuginfod) (*File, error) {
	root := fmt.Sprintf("/proc/%d/root", pid)
	opts := Options{OriginalPath: m.Path, Root: root, Debuginfod: d}
	f, err := c.Open(fmt.Sprintf("/proc/%d/map_files/%x-%x", pid, m.Start, m.End), opts)
	var pe *fs.PathError
	if err == nil || !errors.As(err, &pe) || m.Deleted {
		return f, err
	}
	// map_files needs CAP_SYS_ADMIN; the path may be a newer file than
	// the one mapped (a package upgrade), which the inode tells.
	p := filepath.Join(root, m.Path)
	if fi, err := os.Stat(p); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Ino != m.Inode {
			return nil, &Error{File: filepath.Base(m.Path), Off: -1, Err: errors.New("replaced on disk since it was mapped")}
		}
	}
	return c.Open(p, opts)
}

// vdso copies the vDSO image out of the process: it is not a file.
func (c *Cache) vdso(pid int, m Mapping) (*File, error) {
	size := m.End - m.Start
	if size == 0 || size > 1<<20 || m.Start > 1<<62 {
		return nil, &Error{File: "[vdso]", Off: -1, Err: fmt.Errorf("implausible size %#x", size)}
	}
	buf := make([]byte, size)
	if _, err := procmem.Read(pid, buf, m.Start); err != nil {
		return nil, &Error{File: "[vdso]", Off: -1, Err: err}
	}
	e, found := getEntry(c, c.vdsos, string(buf))
	if found {
		<-e.done
		return e.f, e.err
	}
	e.f, e.err = OpenBytes("[vdso]", buf)
	close(e.done)
	return e.f, e.err
}
