package core_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/unwind"
	"github.com/hangdoc/hangdoc/internal/patient"
)

// twoPatient builds testdata/two.c and starts it with start
// (patient.Start, or patient.StartDumpable for a kernel core) as dir/two,
// a link to the binary, so that its name is "two" (the cached binary's
// name is longer than a core keeps); it returns the patient, the binary's
// path, the address of its marker and its TIDs.
func twoPatient(t *testing.T, dir string, start func(argv0 string) *patient.Proc) (*patient.Proc, string, uint64, []int) {
	t.Helper()
	exe := patient.BuildFile(t, filepath.Join("testdata", "two.c"), "-O2", "-pthread")
	two := filepath.Join(dir, "two")
	if err := os.Symlink(exe, two); err != nil {
		t.Fatal(err)
	}
	p := start(two)
	marker := uint64(p.Int(t, "marker"))
	tasks, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for tid := range tasks {
		tids = append(tids, tid)
	}
	return p, exe, marker, tids
}

// checkCore checks what any core of the patient (the binary exe) must
// show.
func checkCore(t *testing.T, path, exe string, pid int, marker uint64, tids []int) *core.File {
	t.Helper()
	f, err := core.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	if f.PID != pid || f.Name != "two" {
		t.Errorf("process %d %q, want %d two", f.PID, f.Name, pid)
	}
	var got []int
	for _, th := range f.Threads {
		got = append(got, th.TID)
		sp := th.Regs.Val[unwind.RSP]
		p := make([]byte, 8)
		if _, err := f.ReadAt(p, sp); err != nil {
			t.Errorf("thread %d: stack at %#x unreadable: %v", th.TID, sp, err)
		}
		if th.FSBase == 0 {
			t.Errorf("thread %d: no fs_base", th.TID)
		}
	}
	slices.Sort(got)
	slices.Sort(tids)
	if !slices.Equal(got, tids) {
		t.Errorf("threads %v, want %v", got, tids)
	}
	p := make([]byte, 19)
	if _, err := f.ReadAt(p, marker); err != nil || string(p) != "hangdoc-core-marker" {
		t.Errorf("marker at %#x: %q %v", marker, p, err)
	}
	if !slices.ContainsFunc(f.Mappings, func(m core.Mapping) bool { return m.Path == exe }) {
		t.Errorf("no mapping of %s in %+v", exe, f.Mappings)
	}
	if _, ok := f.AuxVal(core.AtSysinfoEhdr); !ok {
		t.Errorf("no AT_SYSINFO_EHDR in auxv")
	}
	return f
}

func TestGcore(t *testing.T) {
	dir := t.TempDir()
	p, exe, marker, tids := twoPatient(t, dir, func(two string) *patient.Proc { return patient.Start(t, two) })
	checkCore(t, patient.Gcore(t, p.Pid, dir), exe, p.Pid, marker, tids)
}

// TestKernelCore has the kernel dump the patient (SIGABRT); it needs a
// core_pattern that writes plain files (patient.StartDumpable). Kernel
// cores leave out file-backed code: FileBacked must read it from the
// mapped files.
func TestKernelCore(t *testing.T) {
	dir := t.TempDir()
	proc, exe, marker, tids := twoPatient(t, dir, func(two string) *patient.Proc { return patient.StartDumpable(t, dir, two) })
	f := checkCore(t, proc.KernelCore(t), exe, proc.Pid, marker, tids)

	// The first bytes of the executable's code are not in the core but
	// are in the file.
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	want, _ := text.Data()
	var base uint64
	for _, m := range f.Mappings {
		if m.Path == exe && m.Offset == 0 {
			base = m.Start // PIE, first PT_LOAD at 0
			break
		}
	}
	addr := base + text.Addr
	for _, m := range f.Mappings {
		if m.Path == exe && addr >= m.Start && addr < m.End && m.Perms != "r-xp" {
			t.Errorf("code mapping %+v: perms %q, want r-xp", m, m.Perms)
		}
	}
	p := make([]byte, 16)
	var ue *unwind.UnreadableError
	if _, err := f.ReadAt(p, addr); !errors.As(err, &ue) {
		t.Errorf("kernel core holds the code at %#x (err %v)?", addr, err)
	}
	mem := f.WithFiles("")
	defer mem.Close()
	if n, err := mem.ReadAt(p, addr); err != nil || !bytes.Equal(p[:n], want[:16]) {
		t.Errorf("code at %#x from the file: % x %v, want % x", addr, p[:n], err, want[:16])
	}
}
