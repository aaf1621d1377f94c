package main

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// sparseFile is a file of n bytes that takes no disk space: limitMemory
// reads only its size.
func sparseFile(t *testing.T, n int64) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "dump.txt")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(n); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return name
}

// The budget by input size: the collector's defaults under 16 MiB; above
// it a limit from the start, with the collector off until it is reached:
// earlyLimit of the size and the binary's resident pages. The watch turns the collector on (GOGC=50, under 85%
// of the size or the early limit, the larger) when what is live comes
// near it; restore puts everything back.
func TestMemBudget(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	limit0 := debug.SetMemoryLimit(-1)
	percent0 := debug.SetGCPercent(-1)
	debug.SetGCPercent(percent0)
	gcPercent := func() int { p := debug.SetGCPercent(0); debug.SetGCPercent(p); return p }
	limit := func() int64 { return debug.SetMemoryLimit(-1) }

	if b := limitMemory([]string{sparseFile(t, 8<<20)}); !b.off || gcPercent() != percent0 || limit() != limit0 {
		t.Errorf("8 MiB: off %v, GOGC %d, limit %d: want the defaults", b.off, gcPercent(), limit())
	}
	// sizes whose limit is far above what the test process holds: a
	// limit under it makes the watch lift it at once
	for _, size := range []int64{100 << 20, 1 << 30} {
		name := sparseFile(t, size)
		fileBefore := residentFile()
		b := limitMemory([]string{name})
		fileAfter := residentFile()
		early := b.early
		if early != earlyLimit(size, fileBefore) && early != earlyLimit(size, fileAfter) {
			t.Errorf("%d MiB: early limit %d, want earlyLimit of it and %d-%d resident", size>>20, early, fileBefore, fileAfter)
		}
		if gcPercent() != -1 || limit() != early {
			t.Errorf("%d MiB: GOGC %d, limit %d: want the collector off under a limit of %d", size>>20, gcPercent(), limit(), early)
		}
		if !b.check(early / 2) {
			t.Errorf("%d MiB: live at half the limit lifted it", size>>20)
		}
		if b.check(int64(float64(early)/earlyLiveFactor) + 1) {
			t.Errorf("%d MiB: live past 1/%v of the limit kept it", size>>20, earlyLiveFactor)
		}
		if lifted := max(early, size/100*85); gcPercent() != 50 || limit() != lifted {
			t.Errorf("%d MiB lifted: GOGC %d, limit %d: want GOGC=50 under %d", size>>20, gcPercent(), limit(), lifted)
		}
		if b.check(0) {
			t.Errorf("%d MiB: the watch goes on after the lift", size>>20)
		}
		b.restore()
		if gcPercent() != percent0 || limit() != limit0 {
			t.Errorf("%d MiB restored: GOGC %d, limit %d: want %d, %d", size>>20, gcPercent(), limit(), percent0, limit0)
		}
	}
}

// The limit from the start: the size less the resident file pages and
// fileGrowth, at least half the size, at most maxEarlyLimit.
func TestEarlyLimit(t *testing.T) {
	for _, c := range []struct{ total, resident, want int64 }{
		{32 << 20, 9 << 20, 32<<20 - 9<<20 - fileGrowth - 1<<20},
		{100 << 20, 11 << 20, 100<<20 - 11<<20 - fileGrowth - 100<<20/32},
		{16 << 20, 12 << 20, 8 << 20}, // the binary's pages and more: half
		{1 << 30, 11 << 20, maxEarlyLimit},
	} {
		if got := earlyLimit(c.total, c.resident); got != c.want {
			t.Errorf("earlyLimit(%d MiB, %d MiB) = %d, want %d", c.total>>20, c.resident>>20, got, c.want)
		}
	}
}

// residentFile reads the process's resident file pages: a test binary
// maps its own text, so more than a megabyte and less than its size.
func TestResidentFile(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(exe)
	if err != nil {
		t.Fatal(err)
	}
	if got := residentFile(); got == fileFloor || got < 1<<20 || got > fi.Size()+8<<20 {
		t.Errorf("residentFile() = %d, want between 1 MiB and about the binary's size %d (not the fallback %d)", got, fi.Size(), fileFloor)
	}
}
