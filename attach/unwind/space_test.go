package unwind_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/module"
)

// testSpace is a core's address space as attach/module sees it: CFI for
// the unwinder, names for the assertions.
type testSpace struct {
	*module.Space
}

// names returns every name of the function covering pc (aliases: gdb
// and module may prefer different ones), the preferred first; nil when
// unknown.
func (s testSpace) names(pc uint64) []string {
	l := s.Lookup(pc)
	if l == nil {
		return nil
	}
	sym, ok := l.File.Symbol(pc - l.Bias)
	if !ok {
		return nil
	}
	out := []string{sym.Name}
	syms := l.File.Symbols()
	for i := sort.Search(len(syms), func(i int) bool { return syms[i].Value >= sym.Value }); i < len(syms) && syms[i].Value == sym.Value; i++ {
		out = append(out, syms[i].Name)
	}
	return out
}

func (s testSpace) name(pc uint64) string {
	if f := s.Symbolize(pc).Func; f != "" {
		return f
	}
	return "??"
}

var spaces = map[string]testSpace{}

// loadSpace places the files a core maps (NT_FILE) and its vDSO (from
// the core's memory) in a module.Space.
func loadSpace(t testing.TB, p *patientCore, cf *core.File) testSpace {
	t.Helper()
	patientsMu.Lock()
	defer patientsMu.Unlock()
	if s, ok := spaces[p.core]; ok {
		return s
	}
	s := testSpace{module.NewSpace()}
	files := map[string]*module.File{}
	for _, m := range cf.Mappings {
		if !strings.HasPrefix(m.Path, "/") {
			continue
		}
		f, seen := files[m.Path]
		if !seen {
			var err error
			if f, err = module.Open(m.Path); err != nil {
				f = nil // not ELF (locale archives), devices
			}
			files[m.Path] = f
		}
		if f != nil {
			s.Add(f, module.Mapping{Start: m.Start, End: m.End, Offset: m.Offset, Perms: m.Perms, Path: m.Path})
		}
	}
	if at, ok := cf.AuxVal(core.AtSysinfoEhdr); ok {
		for _, seg := range cf.Segments {
			if seg.Addr != at || seg.Size > 1<<20 {
				continue
			}
			img := make([]byte, seg.Size)
			if n, _ := cf.ReadAt(img, at); n == len(img) {
				if f, err := module.OpenBytes("[vdso]", img); err == nil {
					s.Add(f, module.Mapping{Start: at, End: at + seg.Size, Perms: "r-xp", Path: "[vdso]"})
				}
			}
		}
	}
	spaces[p.core] = s
	return s
}
