package module

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to Open: it may fail, never panic, and a
// File it returns must answer lookups without panicking. Real seeds (a
// tiny static executable and a tiny shared object, both with symbols and
// .eh_frame) are in testdata/fuzz/FuzzOpen; nothing is compiled here,
// because fuzz workers are killed without cleaning up after themselves.
func FuzzOpen(f *testing.F) {
	f.Add([]byte("\x7fELF"))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "fuzz.so")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		file, err := Open(p)
		if err != nil {
			if file != nil {
				t.Fatal("a File and an error")
			}
			return
		}
		defer file.Close()
		for _, s := range file.Symbols() {
			file.Symbol(s.Value)
		}
		for _, fde := range file.FDEs() {
			if file.FDE(fde.Begin()) == nil {
				t.Fatalf("no FDE at the Begin of %v", fde)
			}
		}
		for _, p := range file.Loads {
			file.Line(p.Vaddr)
			file.Bias(Mapping{Start: 0x7f0000000000, End: 0x7f0000001000, Offset: p.Off &^ 0xfff, Perms: "r-xp"})
		}
	})
}
