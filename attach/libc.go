package attach

import (
	"debug/elf"
	"path/filepath"
	"strings"

	"github.com/hangdoc/hangdoc/attach/module"
)

// libc is the C library a process runs on: it decides how a
// pthread_mutex_t is laid out and whether it records its owner.
type libc int

const (
	glibc libc = iota // glibc, and anything not known to be musl
	musl
)

// muslNote is said of a musl process: what its mutexes cannot tell.
const muslNote = "musl libc: a default (normal) mutex records no owner, only that it is locked: which thread holds one is not known; recursive, error-checking, robust and priority-inheritance mutexes record it"

// libcOf says which C library a process uses, from the paths it maps
// (musl's loader and libc are one file, ld-musl-<arch>.so.1, which
// Alpine also names libc.musl-<arch>.so.1) and, for a static executable,
// from the executable: glibc links its ABI note (.note.ABI-tag, from
// crt1.o) into every program, static or not; musl does not.
func libcOf(paths []string, exe string) libc {
	for _, p := range paths {
		if isMuslPath(p) {
			return musl
		}
	}
	if exe == "" {
		return glibc
	}
	f, err := elf.Open(exe)
	if err != nil {
		return glibc
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			// dynamic: its loader says (Debian maps musl's loader as
			// /usr/lib/x86_64-linux-musl/libc.so, the symlink's target)
			b := make([]byte, min(p.Filesz, 4096))
			n, _ := p.ReadAt(b, 0)
			if isMuslPath(strings.TrimRight(string(b[:n]), "\x00")) {
				return musl
			}
			return glibc
		}
	}
	if f.Section(".note.ABI-tag") != nil || f.Section(".go.buildinfo") != nil {
		return glibc
	}
	if syms, err := f.Symbols(); err == nil && !hasSymbol(syms, "__init_libc") {
		return glibc // a static program with symbols, and not musl's
	}
	return musl
}

func isMuslPath(p string) bool {
	b := filepath.Base(p)
	return strings.HasPrefix(b, "ld-musl-") || strings.HasPrefix(b, "libc.musl-")
}

func hasSymbol(syms []elf.Symbol, name string) bool {
	for _, s := range syms {
		if s.Name == name {
			return true
		}
	}
	return false
}

// mappedPaths lists the files of a process's mappings.
func mappedPaths(maps []module.Mapping) []string {
	var out []string
	for _, m := range maps {
		if strings.HasPrefix(m.Path, "/") {
			out = append(out, m.Path)
		}
	}
	return out
}
