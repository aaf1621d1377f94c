package module

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-delve/delve/pkg/dwarf/frame"
)

// Space implements unwind.Tables; checked structurally so that unwind may
// import this package one day without an import cycle in tests.
var _ interface {
	FDEForPC(pc uint64) *frame.FrameDescriptionEntry
} = (*Space)(nil)

// TestSpaceLive starts the patients, loads their maps and symbolizes the
// addresses they print.
func TestSpaceLive(t *testing.T) {
	b := progs(t)
	for _, v := range []string{"withlib", "nopie", "deleted"} {
		t.Run(v, func(t *testing.T) {
			path := b[v]
			if v == "deleted" {
				// map_files still reaches a file unlinked after exec.
				path = copyFile(t, b["O2"], t.TempDir())
			}
			pid, addrs := startPatient(t, path)
			if v == "deleted" {
				os.Remove(path)
			}
			c := NewCache()
			defer c.Close()
			s, notes, err := c.LoadProcess(pid)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range notes {
				t.Logf("note: %s", n)
			}

			nmVariant := v
			if v == "deleted" {
				nmVariant = "O2"
			}
			nm := nmAddrs(t, b[nmVariant])
			fr := s.Symbolize(addrs["fn"])
			if fr.Func != "line_marker" || fr.Module != path || fr.Offset != nm["line_marker"] || fr.PC != addrs["fn"] {
				t.Errorf("Symbolize(fn) = %+v, want line_marker in %s at offset %#x", fr, path, nm["line_marker"])
			}
			if v == "nopie" {
				if fr.File == "" || fr.Line == 0 {
					t.Errorf("nopie is built with -g: no line in %+v", fr)
				}
				if l := s.Lookup(addrs["fn"]); l == nil || l.Bias != 0 {
					t.Errorf("ET_EXEC bias = %+v, want 0", l)
				}
			}

			// Runtime addresses in CFI, so EstablishFrame takes the runtime pc.
			fde := s.FDEForPC(addrs["fn"] + 1)
			if fde == nil || fde.Begin() != addrs["fn"] {
				t.Errorf("FDEForPC(fn) = %v, want one that begins at %#x", fde, addrs["fn"])
			} else if _, err := fde.EstablishFrame(addrs["fn"] + 1); err != nil {
				t.Errorf("EstablishFrame: %v", err)
			}

			// main's return address is in libc.
			ret := s.SymbolizeCaller(addrs["ret"])
			libc := s.Lookup(addrs["ret"])
			if libc == nil || !strings.Contains(filepath.Base(ret.Module), "libc") {
				t.Fatalf("SymbolizeCaller(ret) = %+v, want a frame in libc", ret)
			}
			if libc.File.DebugPath != "" && ret.Func != "__libc_start_call_main" {
				t.Errorf("with libc's debug file %s: SymbolizeCaller(ret) = %+v, want __libc_start_call_main", libc.File.DebugPath, ret)
			}
			if ret.PC != addrs["ret"] || ret.Offset != addrs["ret"]-libc.Bias {
				t.Errorf("SymbolizeCaller(ret) PC/offset = %#x/%#x, want %#x/%#x", ret.PC, ret.Offset, addrs["ret"], addrs["ret"]-libc.Bias)
			}
			if fr := s.Symbolize(addrs["libc"]); !strings.Contains(fr.Func, "nanosleep") {
				t.Errorf("Symbolize(dlsym nanosleep) = %+v", fr)
			}
			if s.FDEForPC(addrs["libc"]) == nil {
				t.Error("no FDE for nanosleep in libc")
			}

			// The vDSO, copied out of the process.
			vd := s.Lookup(addrs["vdso"])
			if vd == nil || vd.Path != "[vdso]" || vd.Bias != addrs["vdso"] {
				t.Fatalf("Lookup(vdso) = %+v", vd)
			}
			var found bool
			for _, sym := range vd.File.Symbols() {
				if strings.Contains(sym.Name, "clock_gettime") {
					found = true
					if fr := s.Symbolize(sym.Value + vd.Bias); fr.Func != sym.Name {
						t.Errorf("Symbolize(vdso %s) = %+v", sym.Name, fr)
					}
					if s.FDEForPC(sym.Value+vd.Bias) == nil {
						t.Errorf("no FDE for vdso %s", sym.Name)
					}
				}
			}
			if !found {
				t.Errorf("vdso has no clock_gettime among %d symbols", len(vd.File.Symbols()))
			}

			if v == "withlib" {
				fr := s.Symbolize(addrs["shared"])
				lib := nmAddrs(t, b["lib"])
				if fr.Func != "shared_local" || filepath.Base(fr.Module) != "libshared.so" || fr.Offset != lib["shared_local"] {
					t.Errorf("Symbolize(shared) = %+v, want shared_local in libshared.so at %#x", fr, lib["shared_local"])
				}
			}

			mods := s.Modules()
			seen := map[string]bool{}
			for _, m := range mods {
				seen[filepath.Base(m.Path)] = true
				if m.Start >= m.End {
					t.Errorf("module %+v: empty range", m)
				}
			}
			for _, want := range []string{filepath.Base(path), "[vdso]"} {
				if !seen[want] {
					t.Errorf("Modules lacks %s: %+v", want, mods)
				}
			}
		})
	}
}

// TestSpaceSharedFile places one File at two biases, as two processes
// would: each must see its own runtime FDEs and the File must not change.
func TestSpaceSharedFile(t *testing.T) {
	b := progs(t)
	f, err := Open(b["lib"])
	if err != nil {
		t.Fatal(err)
	}
	addr := nmAddrs(t, b["lib"])["shared_fn"]
	begin := f.FDE(addr).Begin()
	for _, bias := range []uint64{0x7f0000000000, 0x7f1000000000, 0x7f0000000000} {
		s := NewSpace()
		for _, m := range kernelMappings(f, bias, "/usr/lib/libshared.so") {
			if _, ok := s.Add(f, m); !ok {
				t.Fatalf("Add(%+v) refused", m)
			}
		}
		fr := s.Symbolize(bias + addr)
		if fr.Func != "shared_fn" || fr.Offset != addr || fr.Line == 0 {
			t.Errorf("bias %#x: Symbolize = %+v", bias, fr)
		}
		fde := s.FDEForPC(bias + addr)
		if fde == nil || fde.Begin() != bias+begin {
			t.Fatalf("bias %#x: FDEForPC = %v, want Begin %#x", bias, fde, bias+begin)
		}
		if again := s.FDEForPC(bias + addr + 1); again != fde {
			t.Error("the translated FDE is not cached")
		}
		if f.FDE(addr).Begin() != begin {
			t.Fatal("the shared File's FDE was moved")
		}
		if s.FDEForPC(bias-1) != nil || s.Symbolize(bias-1).Module != "" {
			t.Error("an address below the module resolved")
		}
	}
}

func TestSpaceCxx(t *testing.T) {
	b := progs(t)
	f, err := Open(b["cxx"])
	if err != nil {
		t.Fatal(err)
	}
	s := NewSpace()
	const bias = 0x555555554000
	for _, m := range kernelMappings(f, bias, "/opt/worker") {
		s.Add(f, m)
	}
	if fr := s.Symbolize(bias + nmAddrs(t, b["cxx"])["_Z6workeri"]); fr.Func != "worker(int)" {
		t.Errorf("Symbolize(worker) = %+v, want worker(int)", fr)
	}
}
