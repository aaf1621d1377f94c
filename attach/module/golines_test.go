package module

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// TestGoStrippedNames: a Go binary linked with -s -w (as go test and go
// run link) has neither a symbol table nor DWARF, yet its functions and
// lines are named from the runtime's pclntab exactly as the same
// program built with both names them (stripping moves no code).
func TestGoStrippedNames(t *testing.T) {
	full, err := Open(patient.BuildGo(t, "abba"))
	if err != nil {
		t.Fatal(err)
	}
	stripped, err := Open(patient.BuildGo(t, "abba", "-ldflags=-s -w"))
	if err != nil {
		t.Fatal(err)
	}
	if len(stripped.Symbols()) != 0 {
		t.Fatalf("the -s -w build has %d symbols: not stripped", len(stripped.Symbols()))
	}
	checked := 0
	for _, s := range full.Symbols() {
		if !s.Func || !(strings.HasPrefix(s.Name, "main.") || strings.HasPrefix(s.Name, "sync.") || strings.HasPrefix(s.Name, "runtime.g")) {
			continue
		}
		for _, addr := range []uint64{s.Value, s.Value + s.Size/2} {
			got, ok := stripped.Symbol(addr)
			// the symbol table marks assembly functions ".abi0"; the
			// pclntab names them without it
			if !ok || got.Name != strings.TrimSuffix(s.Name, ".abi0") {
				t.Errorf("%#x: stripped build names %q (%v), the full build %q", addr, got.Name, ok, s.Name)
				continue
			}
			wf, wl, wok := full.Line(addr)
			gf, gl, gok := stripped.Line(addr)
			if wok && (!gok || wf != gf || wl != gl) { // where DWARF has no line, the pclntab may have one
				t.Errorf("%#x in %s: stripped %s:%d (%v), DWARF %s:%d (%v)", addr, s.Name, gf, gl, gok, wf, wl, wok)
			}
			checked++
		}
	}
	if checked < 100 {
		t.Fatalf("only %d addresses compared", checked)
	}
	t.Logf("%d addresses: the same function and file:line from the pclntab as from the symbol table and DWARF", checked)
}
