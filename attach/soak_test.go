package attach_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
)

// envInt reads a positive count from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var n int
	if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive count", name, v)
	}
	return n
}

// soakAttaches is 1000 with HANGDOC_SOAK=1 (make soak), 100 otherwise.
func soakAttaches() int {
	if os.Getenv("HANGDOC_SOAK") == "1" {
		return 1000
	}
	return 100
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(es) - 1 // the directory ReadDir itself held open
}

// heapInuse is the live heap after a collection.
func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// Soak heap bound: the heap in use (after a GC) at every measurement
// stays under 5/4 of the first measurement (after 10 attaches) plus
// soakHeapSlack. Measured on 2 cores, 1000 attaches to the invariants
// patient: 11.6-12.0 MiB throughout, the whole series within 160 KiB of
// its first value (module tables and symbol caches are per attach and
// dropped with it). The bound (about +5 MiB) is some 30 times that
// noise, yet a leak of 5 KiB per attach fails the 1000-attach soak and
// one of 50 KiB per attach the 100-attach CI run.
const (
	soakHeapNum, soakHeapDen = 5, 4
	soakHeapSlack            = 2 << 20
)

// TestSoak attaches many times, in one process and through the library
// path a long-running caller uses, to a busy patient that checks its own
// invariants: hangdoc's heap and file descriptors must stay flat, the
// patient must notice nothing, and every thread must be released.
func TestSoak(t *testing.T) {
	patient.RequirePtrace(t)
	n := soakAttaches()
	p := patient.Start(t, patient.Build(t, "invariants.c", patient.O2g...))
	before := checkInvariants(t, p)

	var (
		fds    []int
		heaps  []uint64
		stops  int
		start  = time.Now()
		series strings.Builder
	)
	for i := 1; i <= n; i++ {
		snap, st, err := attach.AttachStats(context.Background(), []int{p.Pid}, attach.Options{Samples: 1})
		if err != nil {
			t.Fatalf("attach %d: %v", i, err)
		}
		if got := len(snap.Processes[0].Threads); got < 8 {
			t.Fatalf("attach %d: %d threads, want 8", i, got)
		}
		stops += st.Stops
		if i%10 == 0 {
			fds = append(fds, openFDs(t))
			heaps = append(heaps, heapInuse())
			fmt.Fprintf(&series, " %d:%dKiB/%dfd", i, heaps[len(heaps)-1]>>10, fds[len(fds)-1])
		}
	}
	elapsed := time.Since(start)
	checkReleased(t, p.Pid)
	after := checkInvariants(t, p)
	t.Logf("%d attaches in %v (%v each), %d ptrace stops\nheap/fds every 10 attaches:%s\nbefore: %s\nafter:  %s",
		n, elapsed.Round(time.Millisecond), (elapsed / time.Duration(n)).Round(time.Microsecond), stops, series.String(), before, after)

	if stops == 0 {
		t.Error("no thread was ever stopped: the soak did not exercise ptrace stops")
	}
	// Growth is a leak; one fewer is a file opened before the loop
	// (another test's, in this process) that the GC closed meanwhile.
	for i, fd := range fds {
		if fd > fds[0] {
			t.Errorf("open fds after %d attaches: %d, after the first 10: %d (a descriptor leaks)", (i+1)*10, fd, fds[0])
			break
		}
	}
	bound := heaps[0]*soakHeapNum/soakHeapDen + soakHeapSlack
	var peak uint64
	for _, h := range heaps {
		peak = max(peak, h)
	}
	if peak > bound {
		t.Errorf("heap in use peaked at %d KiB, over the bound %d KiB (5/4 of the first %d KiB + %d KiB): memory grows with attaches",
			peak>>10, bound>>10, heaps[0]>>10, soakHeapSlack>>10)
	}
	// A leak small enough to fit under the bound still shows as a trend:
	// compare the last tenth of the series with the first tenth.
	k := max(1, len(heaps)/10)
	var first, last uint64
	for i := 0; i < k; i++ {
		first += heaps[i]
		last += heaps[len(heaps)-1-i]
	}
	t.Logf("heap: first %d KiB, peak %d KiB, last %d KiB; mean of first/last tenth %d/%d KiB; fds %d..%d",
		heaps[0]>>10, peak>>10, heaps[len(heaps)-1]>>10, first/uint64(k)>>10, last/uint64(k)>>10, fds[0], fds[len(fds)-1])
}
