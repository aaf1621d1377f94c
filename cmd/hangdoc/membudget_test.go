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

// The budget by input size: the collector's defaults under 16 MiB,
// GOGC=50 up to where the size less the RSS floor reaches the lowest
// limit, above it a limit of the size less the floor from the start with
// the collector off until it is reached, lifted (GOGC=50, 85% of the size)
// when what is live comes near it; restore puts everything back.
func TestMemBudget(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	limit0, percent0 := debug.SetMemoryLimit(-1), debug.SetGCPercent(-1)
	debug.SetGCPercent(percent0)
	gcPercent := func() int { p := debug.SetGCPercent(0); debug.SetGCPercent(p); return p }

	if b := limitMemory([]string{sparseFile(t, 8<<20)}); !b.off || gcPercent() != percent0 {
		t.Errorf("8 MiB: off %v, GOGC %d: want the defaults", b.off, gcPercent())
	}

	b := limitMemory([]string{sparseFile(t, 32<<20)})
	if b.off || b.early != 0 || gcPercent() != 50 || debug.SetMemoryLimit(-1) != limit0 {
		t.Errorf("32 MiB: early %d, GOGC %d, limit %d: want GOGC=50 and no limit", b.early, gcPercent(), debug.SetMemoryLimit(-1))
	}
	b.restore()

	size := int64(100 << 20)
	b = limitMemory([]string{sparseFile(t, size)})
	want := size - rssFloor
	if b.early != want || gcPercent() != -1 || debug.SetMemoryLimit(-1) != want {
		t.Errorf("100 MiB: early %d, GOGC %d, limit %d: want the collector off under a limit of %d", b.early, gcPercent(), debug.SetMemoryLimit(-1), want)
	}
	b.parsed()
	if debug.SetMemoryLimit(-1) != want {
		t.Errorf("parsed changed the early limit")
	}
	if !b.check(want / 2) {
		t.Errorf("live at half the limit lifted it")
	}
	if b.check(int64(float64(want)/earlyLiveFactor) + 1) {
		t.Errorf("live at 1/%v of the limit kept it", earlyLiveFactor)
	}
	if gcPercent() != 50 || debug.SetMemoryLimit(-1) != size/100*85 {
		t.Errorf("lifted: GOGC %d, limit %d: want GOGC=50 under 85%% of the input", gcPercent(), debug.SetMemoryLimit(-1))
	}
	if b.check(0) {
		t.Errorf("the watch goes on after the lift")
	}
	b.parsed()
	b.restore()
	if gcPercent() != percent0 || debug.SetMemoryLimit(-1) != limit0 {
		t.Errorf("restored: GOGC %d, limit %d: want %d, %d", gcPercent(), debug.SetMemoryLimit(-1), percent0, limit0)
	}
}
