package module

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// TestPLTNamesMatchObjdump: every PLT stub objdump -d labels
// ("0000000000001030 <pthread_create@plt>:") is named so by Symbol, at
// its first byte and its last, in lazy .plt, .plt.got, IBT's .plt.sec, a
// C++ program (mangled names), a shared library and system binaries; and
// no stub objdump does not label is named.
func TestPLTNamesMatchObjdump(t *testing.T) {
	objdump, err := exec.LookPath("objdump")
	if err != nil {
		patient.Missing(t, "objdump not installed (binutils)")
	}
	b := progs(t)
	paths := []string{b["O2"], b["stripped"], b["cxx"], b["ibt"], b["withlib"], b["lib"]}
	for _, p := range []string{"/usr/bin/ls", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"} {
		if _, err := os.Stat(p); err == nil {
			paths = append(paths, p)
		}
	}
	label := regexp.MustCompile(`(?m)^([0-9a-f]+) <([^>]+@plt)>:$`)
	secPLT := false
	for _, path := range paths {
		out, err := exec.Command(objdump, "-d", "--no-show-raw-insn", path).Output()
		if err != nil {
			t.Fatalf("objdump -d %s: %v", path, err)
		}
		want := label.FindAllStringSubmatch(string(out), -1)
		if len(want) == 0 {
			t.Errorf("%s: objdump labels no PLT stub", path)
			continue
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ours := 0
		for _, s := range f.Symbols() {
			if strings.HasSuffix(s.Name, "@plt") {
				ours++
			}
		}
		if ours != len(want) {
			t.Errorf("%s: %d PLT stubs named, objdump labels %d", path, ours, len(want))
		}
		for _, w := range want {
			addr, _ := strconv.ParseUint(w[1], 16, 64)
			for _, at := range []uint64{addr, addr + 7} {
				if s, ok := f.Symbol(at); !ok || s.Name != w[2] {
					t.Errorf("%s: Symbol(%#x) = %q %v, objdump: %s at %#x", path, at, s.Name, ok, w[2], addr)
				}
			}
		}
		secPLT = secPLT || strings.Contains(string(out), "Disassembly of section .plt.sec:")
		f.Close()
	}
	if !secPLT {
		t.Errorf("no binary with a .plt.sec among %q: the IBT variant did not get one", paths)
	}
}
