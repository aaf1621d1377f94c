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
// 90% of the size while the size less the RSS floor is under the lowest
// limit, the size less the floor above it, capped. The watch lifts it
// (GOGC=50, under 85% of the size when that is above the lowest limit)
// when what is live comes near it; restore puts everything back.
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
	for _, c := range []struct {
		size, early, lifted int64 // lifted: the limit after the lift
	}{
		{32 << 20, 32 << 20 / 10 * 9, limit0},
		{100 << 20, 100<<20 - rssFloor, 100 << 20 / 100 * 85},
		{1 << 30, maxEarlyLimit, 1 << 30 / 100 * 85},
	} {
		b := limitMemory([]string{sparseFile(t, c.size)})
		if b.early != c.early || gcPercent() != -1 || limit() != c.early {
			t.Errorf("%d MiB: early %d, GOGC %d, limit %d: want the collector off under a limit of %d", c.size>>20, b.early, gcPercent(), limit(), c.early)
		}
		if !b.check(c.early / 2) {
			t.Errorf("%d MiB: live at half the limit lifted it", c.size>>20)
		}
		if b.check(int64(float64(c.early)/earlyLiveFactor) + 1) {
			t.Errorf("%d MiB: live past 1/%v of the limit kept it", c.size>>20, earlyLiveFactor)
		}
		if gcPercent() != 50 || limit() != c.lifted {
			t.Errorf("%d MiB lifted: GOGC %d, limit %d: want GOGC=50 under %d", c.size>>20, gcPercent(), limit(), c.lifted)
		}
		if b.check(0) {
			t.Errorf("%d MiB: the watch goes on after the lift", c.size>>20)
		}
		b.restore()
		if gcPercent() != percent0 || limit() != limit0 {
			t.Errorf("%d MiB restored: GOGC %d, limit %d: want %d, %d", c.size>>20, gcPercent(), limit(), percent0, limit0)
		}
	}
}
