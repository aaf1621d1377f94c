package stacks

import (
	"strings"
	"testing"
)

func TestPprofGoldens(t *testing.T) { checkDumpGoldens(t, "pprof-goroutine", ParsePprofGoroutine, 0) }

// TestPprofRecords: each record is as many goroutines as it counts; a
// lock wait is told from the sync frames.
func TestPprofRecords(t *testing.T) {
	snap, skipped := parseStoredDump(t, "pprof-goroutine", "abba_debug1.txt", ParsePprofGoroutine)
	checkSkipped(t, skipped)
	p := snap.Processes[0]
	if len(p.Threads) != 11 {
		t.Fatalf("%d goroutines, want the profile's total, 11", len(p.Threads))
	}
	locks := 0
	for _, th := range p.Threads {
		if th.Goroutine().Status == "sync.Mutex.Lock" {
			locks++
		}
	}
	if locks != 2 {
		t.Errorf("%d goroutines in sync.Mutex.Lock, want 2", locks)
	}
}

func FuzzParsePprofGoroutine(f *testing.F) {
	fuzzDumps(f, "pprof-goroutine", ParsePprofGoroutine, nil, "goroutine profile: total 1\n1 @ 0x1\n#\t0x1\tmain.main+0x1\t/a.go:1\n")
}

// TestPprofCutFrame: a record whose frame line the paste cut inside its
// file name keeps the frame's function (82 goroutines in
// main.DNSExchange.func1, dnscrypt-proxy#2136; they were 82 goroutines
// without a frame), and says what was cut.
func TestPprofCutFrame(t *testing.T) {
	snap, _, format, err := Parse(strings.NewReader(string(readStoredDump(t, "pprof-goroutine", "dnscrypt_cut_frame.txt"))), "")
	if err != nil || format != "pprof-goroutine" {
		t.Fatalf("format %q, %v", format, err)
	}
	p := snap.Processes[0]
	if len(p.Threads) != 82 || len(p.Threads[0].Stack) != 1 || p.Threads[0].Stack[0].Func != "main.DNSExchange.func1" {
		t.Fatalf("%d goroutines, first %+v", len(p.Threads), p.Threads[0])
	}
	if n := strings.Join(p.Notes, "|"); !strings.Contains(n, "cut mid-way inside its file name") {
		t.Errorf("notes %q", p.Notes)
	}
}
