package module

import (
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

func TestSymbols(t *testing.T) {
	b := progs(t)
	tests := []struct {
		variant string
		names   []string
	}{
		{"O2", []string{"line_marker", "other_fn", "main"}},
		{"O0g", []string{"line_marker", "other_fn", "main"}},
		{"nopie", []string{"line_marker", "other_fn", "main"}},
		{"lib", []string{"shared_fn", "shared_local", "shared_report"}},
		{"libstripped", []string{"shared_fn", "shared_report"}}, // .dynsym only
	}
	for _, tt := range tests {
		t.Run(tt.variant, func(t *testing.T) {
			path := b[tt.variant]
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			nmPath := path
			if tt.variant == "libstripped" {
				nmPath = b["lib"] // nm has nothing to say about a stripped file
			}
			addrs := nmAddrs(t, nmPath)
			for _, name := range tt.names {
				addr, ok := addrs[name]
				if !ok {
					t.Fatalf("nm does not list %s", name)
				}
				for _, a := range []uint64{addr, addr + 1} {
					sym, ok := f.Symbol(a)
					if !ok || sym.Name != name || sym.Value != addr {
						t.Errorf("Symbol(%#x) = %+v, %v; want %s at %#x", a, sym, ok, name, addr)
					}
				}
			}
		})
	}
}

func TestSymbolsSortedAndBounded(t *testing.T) {
	f, err := Open(progs(t)["O2"])
	if err != nil {
		t.Fatal(err)
	}
	syms := f.Symbols()
	for i := 1; i < len(syms); i++ {
		if syms[i-1].Value >= syms[i].Value {
			t.Fatalf("symbols not sorted and unique: %+v then %+v", syms[i-1], syms[i])
		}
	}
	if _, ok := f.Symbol(0); ok {
		t.Error("address 0 has a symbol")
	}
	if _, ok := f.Symbol(1 << 60); ok {
		t.Error("address 1<<60 has a symbol")
	}
}

func TestStripped(t *testing.T) {
	b := progs(t)
	f, err := Open(b["stripped"])
	if err != nil {
		t.Fatal(err)
	}
	addr := nmAddrs(t, b["O2"])["line_marker"]
	if sym, ok := f.Symbol(addr); ok {
		t.Errorf("stripped PIE names %#x %q: local symbols should be gone", addr, sym.Name)
	}
	// strip keeps .eh_frame: the stack can still be walked.
	if fde := f.FDE(addr); fde == nil {
		t.Errorf("stripped file: no FDE for line_marker at %#x", addr)
	}
	if f.BuildID == "" {
		t.Error("no build id")
	}
}

func TestLines(t *testing.T) {
	b := progs(t)
	src, err := os.ReadFile("testdata/prog.c")
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, "LINE_MARKER") {
			want = i + 1
		}
	}
	for _, v := range []string{"O0g", "nopie"} {
		f, err := Open(b[v])
		if err != nil {
			t.Fatal(err)
		}
		addr := nmAddrs(t, b[v])["line_marker"]
		file, line, ok := f.Line(addr)
		// Optimised code may start at the first line of the body.
		if !ok || filepath.Base(file) != "prog.c" || line != want && !(v == "nopie" && line == want+1) {
			t.Errorf("%s: Line(%#x) = %s:%d %v, want prog.c:%d", v, addr, file, line, ok, want)
		}
		if err := f.LinesError(); err != nil {
			t.Errorf("%s: LinesError: %v", v, err)
		}
		f.Close()
	}
	// Without -g there is no line, and no error either.
	f, err := Open(b["O2"])
	if err != nil {
		t.Fatal(err)
	}
	if file, line, ok := f.Line(nmAddrs(t, b["O2"])["line_marker"]); ok {
		t.Errorf("O2: Line = %s:%d, want none", file, line)
	}
}

func TestFDE(t *testing.T) {
	b := progs(t)
	for _, v := range []string{"O2", "O0g", "nopie", "lib"} {
		f, err := Open(b[v])
		if err != nil {
			t.Fatal(err)
		}
		name := "line_marker"
		if v == "lib" {
			name = "shared_fn"
		}
		addr := nmAddrs(t, b[v])[name]
		fde := f.FDE(addr + 1)
		if fde == nil {
			t.Errorf("%s: no FDE for %s at %#x", v, name, addr)
			continue
		}
		if fde.Begin() != addr {
			t.Errorf("%s: FDE for %s begins at %#x, want %#x", v, name, fde.Begin(), addr)
		}
		if _, err := fde.EstablishFrame(addr + 1); err != nil {
			t.Errorf("%s: EstablishFrame: %v", v, err)
		}
		fdes := f.FDEs()
		for i := 1; i < len(fdes); i++ {
			if fdes[i-1].Begin() > fdes[i].Begin() {
				t.Fatalf("%s: FDEs not sorted", v)
			}
		}
	}
}

func TestCxxNames(t *testing.T) {
	b := progs(t)
	f, err := Open(b["cxx"])
	if err != nil {
		t.Fatal(err)
	}
	var sawWorker, sawBar bool
	for name, addr := range nmAddrs(t, b["cxx"]) {
		sym, ok := f.Symbol(addr)
		if !ok {
			continue
		}
		switch d := stacks.Demangle(sym.Name); {
		case d == "worker(int)":
			sawWorker = true
		case stacks.FuncBase(d) == "ns::Foo<int>::bar":
			sawBar = true
		case strings.Contains(name, "3FooIiE3bar"):
			t.Errorf("%s demangles to %q", name, d)
		}
	}
	if !sawWorker || !sawBar {
		t.Errorf("worker(int) found: %v, ns::Foo<int>::bar found: %v", sawWorker, sawBar)
	}
}

func TestDebugFileByBuildID(t *testing.T) {
	b := progs(t)
	f0, err := Open(b["buildid"])
	if err != nil {
		t.Fatal(err)
	}
	if f0.BuildID == "" {
		t.Fatal("no build id")
	}
	// Lay the debug file out under a fake root, as a container would.
	root := t.TempDir()
	dir := filepath.Join(root, "usr/lib/debug/.build-id", f0.BuildID[:2])
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	copyData(t, b["buildid.debug"], filepath.Join(dir, f0.BuildID[2:]+".debug"))

	f, err := OpenWith(b["buildid"], Options{OriginalPath: "/opt/app/prog", Root: root})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !strings.HasPrefix(f.DebugPath, root) {
		t.Fatalf("DebugPath = %q, want one under %s", f.DebugPath, root)
	}
	addr := nmAddrs(t, b["buildid.debug"])["line_marker"]
	if sym, ok := f.Symbol(addr); !ok || sym.Name != "line_marker" {
		t.Errorf("Symbol(%#x) = %q %v, want line_marker from the debug file", addr, sym.Name, ok)
	}
	if file, _, ok := f.Line(addr); !ok || filepath.Base(file) != "prog.c" {
		t.Errorf("Line(%#x) = %q %v, want prog.c from the debug file", addr, file, ok)
	}
	if f.FDE(addr) == nil {
		t.Error("no FDE: .eh_frame of the stripped file should be used")
	}

	// A debug file with another build id is refused, with a note.
	copyData(t, b["O2"], filepath.Join(dir, f0.BuildID[2:]+".debug"))
	f2, err := OpenWith(b["buildid"], Options{Root: root, OriginalPath: "/opt/app/prog"})
	if err != nil {
		t.Fatal(err)
	}
	if f2.DebugPath != "" || !hasNote(f2.Notes, "build id") {
		t.Errorf("mismatched debug file: DebugPath %q, Notes %q", f2.DebugPath, f2.Notes)
	}
}

func TestDebugFileByDebuglink(t *testing.T) {
	b := progs(t)
	f, err := OpenWith(b["debuglink"], Options{OriginalPath: b["debuglink"]})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.DebugPath != b["debuglink"]+".debug" {
		t.Fatalf("DebugPath = %q, want %s.debug (notes %q)", f.DebugPath, b["debuglink"], f.Notes)
	}
	addr := nmAddrs(t, b["debuglink"]+".debug")["line_marker"]
	if sym, ok := f.Symbol(addr); !ok || sym.Name != "line_marker" {
		t.Errorf("Symbol(%#x) = %q %v", addr, sym.Name, ok)
	}
	// NoDebugFiles leaves it alone.
	g, err := OpenWith(b["debuglink"], Options{OriginalPath: b["debuglink"], NoDebugFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := g.Symbol(addr); ok || g.DebugPath != "" {
		t.Error("NoDebugFiles: debug file used")
	}
}

func copyData(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTruncated(t *testing.T) {
	b := progs(t)
	dir := t.TempDir()
	for _, v := range []string{"O2", "lib", "O0g"} {
		data, err := os.ReadFile(b[v])
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{len(data) / 2, len(data) - 1, 100, 64, 10, 0} {
			p := filepath.Join(dir, "trunc.so")
			if err := os.WriteFile(p, data[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := OpenWith(p, Options{OriginalPath: "/usr/lib/libtrunc.so"})
			if err == nil {
				t.Errorf("%s cut to %d bytes: Open succeeded (%d symbols)", v, n, len(f.Symbols()))
				continue
			}
			if !strings.HasPrefix(err.Error(), "libtrunc.so: ") {
				t.Errorf("%s cut to %d bytes: error %q does not name the file", v, n, err)
			}
		}
	}
}

func TestCorruptEhFrame(t *testing.T) {
	b := progs(t)
	off, size := sectionRange(t, b["O2"], ".eh_frame")
	data, err := os.ReadFile(b["O2"])
	if err != nil {
		t.Fatal(err)
	}
	addr := nmAddrs(t, b["O2"])["line_marker"]
	dir := t.TempDir()
	fills := map[string]func([]byte){
		"ff": func(p []byte) {
			for i := range p {
				p[i] = 0xff
			}
		},
		"random": func(p []byte) { rand.New(rand.NewSource(1)).Read(p) },
		"bad-cie-pointer": func(p []byte) {
			// Keep the first CIE, break the CIE pointer of the entry after it.
			n := int(uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24)
			if n+12 < len(p) {
				p[n+8], p[n+9], p[n+10], p[n+11] = 0x55, 0x55, 0x55, 0x55
			}
		},
	}
	for name, fill := range fills {
		t.Run(name, func(t *testing.T) {
			bad := append([]byte(nil), data...)
			fill(bad[off : off+size])
			p := filepath.Join(dir, "prog_"+name)
			if err := os.WriteFile(p, bad, 0o755); err != nil {
				t.Fatal(err)
			}
			f, err := Open(p)
			if err != nil {
				t.Fatalf("Open: %v (a bad .eh_frame alone must not fail Open)", err)
			}
			if sym, ok := f.Symbol(addr); !ok || sym.Name != "line_marker" {
				t.Errorf("symbols lost: %q %v", sym.Name, ok)
			}
			if name != "random" { // random bytes may happen to parse
				if !hasNote(f.Notes, ".eh_frame") || len(f.FDEs()) != 0 {
					t.Errorf("Notes %q, %d FDEs; want a note and none", f.Notes, len(f.FDEs()))
				}
				if !hasNote(f.Notes, filepath.Base(p)+": .eh_frame") {
					t.Errorf("note does not say where: %q", f.Notes)
				}
			}
		})
	}
}

func TestNotELF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "data.bin")
	os.WriteFile(p, []byte("just some data, not an object"), 0o644)
	if _, err := Open(p); !errors.Is(err, ErrNotELF) {
		t.Errorf("Open(data) = %v, want ErrNotELF", err)
	}
	if _, err := Open("/dev/null"); !errors.Is(err, errNotRegular) {
		t.Errorf("Open(/dev/null) = %v, want a not-regular error", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Open(missing) succeeded")
	}
}

func TestErrorFormat(t *testing.T) {
	e := &Error{File: "libfoo.so", Section: ".eh_frame", Off: 0x1c0, Err: errors.New("unknown augmentation 'zQ'")}
	if got, want := e.Error(), "libfoo.so: .eh_frame at 0x1c0: unknown augmentation 'zQ'"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
