package module

import (
	"debug/elf"
	"testing"
)

const libcPath = "/usr/lib/x86_64-linux-gnu/libc.so.6"

// libcSize is the size of what Open parses eagerly: CFI and symbols.
func libcSize(b *testing.B) int64 {
	ef, err := elf.Open(libcPath)
	if err != nil {
		b.Skip(err)
	}
	defer ef.Close()
	var n uint64
	for _, name := range []string{".eh_frame", ".debug_frame", ".symtab", ".dynsym", ".dynstr", ".strtab"} {
		if s := ef.Section(name); s != nil {
			n += s.Size
		}
	}
	return int64(n)
}

// BenchmarkOpenLibc is a cold Open of the system libc: headers, symbols
// and CFI (the line table is lazy), without and with its debug file.
func BenchmarkOpenLibc(b *testing.B) {
	size := libcSize(b)
	for _, bc := range []struct {
		name string
		opts Options
	}{{"nodebug", Options{NoDebugFiles: true}}, {"debugfile", Options{OriginalPath: libcPath}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			var syms, fdes int
			for b.Loop() {
				f, err := OpenWith(libcPath, bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				syms, fdes = len(f.Symbols()), len(f.FDEs())
				f.Close()
			}
			b.ReportMetric(float64(syms), "symbols")
			b.ReportMetric(float64(fdes), "FDEs")
		})
	}
}

// BenchmarkCachedLookup is what each frame of each sample costs once the
// files are cached: the module, its FDE and its symbol for a PC.
func BenchmarkCachedLookup(b *testing.B) {
	c := NewCache()
	defer c.Close()
	f, err := c.Open(libcPath, Options{OriginalPath: libcPath})
	if err != nil {
		b.Skip(err)
	}
	const bias = 0x7f0000000000
	s := NewSpace()
	for _, m := range kernelMappings(f, bias, libcPath) {
		s.Add(f, m)
	}
	var pcs []uint64
	for _, sym := range f.Symbols() {
		if sym.Func && f.FDE(sym.Value) != nil {
			pcs = append(pcs, bias+sym.Value+sym.Size/2)
		}
	}
	b.Run("FDEForPC+Symbolize", func(b *testing.B) {
		i := 0
		for b.Loop() {
			pc := pcs[i%len(pcs)]
			i++
			if s.FDEForPC(pc) == nil {
				b.Fatalf("no FDE at %#x", pc)
			}
			s.Symbolize(pc)
		}
	})
	b.Run("CacheOpen", func(b *testing.B) {
		for b.Loop() {
			if _, err := c.Open(libcPath, Options{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkColdInlines is what a cold attach pays for names in files
// with DWARF: Open, then the line and inline lookups of the PCs of a
// sample (64 addresses in 64 functions spread over the file), with and
// without the inline lookups. libc's DWARF is in its debug file
// (libc6-dbg); libstdc++'s unstripped build is libstdc++6-12-dbg's.
func BenchmarkColdInlines(b *testing.B) {
	for _, lib := range []struct{ name, path string }{
		{"libc", libcPath},
		{"libstdc++", "/usr/lib/x86_64-linux-gnu/debug/libstdc++.so.6.0.30"},
	} {
		f, err := OpenWith(lib.path, Options{OriginalPath: lib.path})
		if err != nil {
			b.Logf("%s: %v", lib.name, err)
			continue
		}
		var pcs []uint64
		funcs := 0
		for _, sym := range f.Symbols() {
			if sym.Func && sym.Size > 0 {
				funcs++
			}
		}
		step := max(funcs/64, 1)
		i := 0
		for _, sym := range f.Symbols() {
			if sym.Func && sym.Size > 0 {
				if i%step == 0 {
					pcs = append(pcs, sym.Value+sym.Size/2)
				}
				i++
			}
		}
		f.Close()
		for _, inl := range []bool{false, true} {
			name := lib.name + "/lines"
			if inl {
				name += "+inlines"
			}
			b.Run(name, func(b *testing.B) {
				var found int
				for b.Loop() {
					f, err := OpenWith(lib.path, Options{OriginalPath: lib.path})
					if err != nil {
						b.Fatal(err)
					}
					found = 0
					for _, pc := range pcs {
						f.Line(pc)
						if inl {
							_, in := f.Inlines(pc)
							found += len(in)
						}
					}
					f.Close()
				}
				b.ReportMetric(float64(found), "inlined")
			})
		}
	}
}
