package goproc

import (
	"debug/elf"
	"debug/gosym"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// pclntabOf is the .gopclntab and .text of a Go binary.
func pclntabOf(t testing.TB, bin string) ([]byte, *elf.Section) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := f.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	return data, f.Section(".text")
}

// TestPclntabMatchesGosym: every function's name, entry and end, and
// the file and line of every 16th PC, as the standard library's
// debug/gosym reads them from the same table, for both toolchains here
// (the frame sizes and inline trees debug/gosym does not read are
// checked against delve's unwinding by TestGoStrippedVerdicts).
func TestPclntabMatchesGosym(t *testing.T) {
	for rel, bin := range toolchains(t) {
		data, text := pclntabOf(t, bin)
		tab, err := newPclntab(data, layouts[rel], text.Addr, 0, func(uint64, int) ([]byte, bool) { return nil, false })
		if err != nil {
			t.Fatal(err)
		}
		ref, err := gosym.NewTable(nil, gosym.NewLineTable(data, text.Addr))
		if err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, want := range ref.Funcs {
			f, ok := tab.find(want.Entry)
			if !ok || f.name() != want.Name || f.entry != want.Entry || f.end != want.End {
				t.Fatalf("%s: %s [%#x, %#x): read %q [%#x, %#x) %v", rel, want.Name, want.Entry, want.End, f.name(), f.entry, f.end, ok)
			}
			for pc := want.Entry; pc < want.End; pc += 16 {
				file, line, _ := ref.PCToLine(pc)
				if line <= 0 {
					continue // a marker symbol without a line table (go:textfipsstart)
				}
				c := f.calls(pc) // no inline tree without funcdata: the line table's own position
				if got := c[len(c)-1]; got.file != file || got.line != line {
					t.Fatalf("%s: %s at %#x: %s:%d, gosym %s:%d", rel, want.Name, pc, got.file, got.line, file, line)
				}
				checked++
			}
		}
		t.Logf("%s: %d functions, %d PCs", rel, len(ref.Funcs), checked)
	}
}

// FuzzPclntab: a corrupt table gives an error or answers, never a panic.
func FuzzPclntab(f *testing.F) {
	data, text := pclntabOf(f, patient.BuildGo(f, "abba", "-ldflags=-s -w"))
	f.Add(data[:min(len(data), 1<<16)])
	f.Add(data[:80])
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, l := range layouts {
			tab, err := newPclntab(b, l, text.Addr, text.Addr, func(a uint64, n int) ([]byte, bool) {
				if n < 0 || n > 1<<12 {
					return nil, false
				}
				return b[:min(len(b), n)], len(b) >= n
			})
			if err != nil {
				continue
			}
			for pc := text.Addr; pc < text.Addr+4096; pc += 61 {
				if fn, ok := tab.find(pc); ok {
					fn.calls(pc)
					fn.spDelta(pc)
					fn.funcdata(funcdataArgInfo)
					fn.pcdata(pcdataArgLiveIndex, pc)
				}
			}
			tab.byName("runtime.semacquire1")
		}
	})
}
