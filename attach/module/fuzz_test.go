package module

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to Open: it may fail, never panic, and a
// File it returns must answer lookups without panicking.
func FuzzOpen(f *testing.F) {
	f.Add([]byte("\x7fELF"))
	f.Add([]byte{})
	// Real objects, whole and cut, when a compiler is at hand.
	if _, err := os.Stat("/usr/bin/gcc"); err == nil {
		b := progs(f)
		for _, v := range []string{"O2", "lib", "stripped"} {
			data, err := os.ReadFile(b[v])
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
			f.Add(data[:len(data)/3])
		}
	}
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
