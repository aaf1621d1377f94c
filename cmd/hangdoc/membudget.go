package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync"
)

// A large dump's analysis should need no more memory than the dump's own
// size (issue #13). The Go collector lets the heap grow to twice what is
// live before it collects (GOGC=100). For `hangdoc analyze` of files
// totalling S bytes, S of 16 MiB and more, the Go runtime's memory limit
// is set from the start and the collector runs only when it is reached
// (GOGC off): a gdb dump's heap stays well below it (its snapshot is a
// quarter of its size), and the collector runs a few times instead of
// at every 50% of growth. The limit is S less what is resident besides
// the Go runtime's memory: the binary's pages, read from
// /proc/self/status when the limit is set (9.4 MB of a static build
// then), fileGrowth for the pages the analysis touches after (1.7 MB
// more by its end) and a margin of S/32. A static binary maps nothing
// else, so the process's resident size stays under S while what is live
// fits the limit. The limit is at least half of S, and at most
// maxEarlyLimit.
//
// A watch after each collection turns the collector back on as soon as
// what is live passes 1/earlyLiveFactor of the limit: GOGC=50 from then
// on, under a limit of 85% of S or the early one, the larger. Past about
// 96 MiB that is 85% of S, which leaves room above what is live (a limit
// close to it makes the collector run without end: the 100 MB goroutine
// dump took 1.5-2.5 times its CPU so). Under it the early limit holds:
// the collector runs more often there (the runtime caps it at half the
// CPU) and the dump is small enough for that to cost tenths of a
// second: the 32 MB goroutine dump, when it lifted the limit (at a
// factor of 1.5), took 0.56-0.60 s instead of 0.38-0.42, against
// panicparse's 5.2-6.0 s.
//
// Measured (GNU time, interleaved rounds, load 10-15, CPU as wall times
// wait for a core), with a fixed floor of 24 MiB for the binary before:
// the 100 MB gdb dump, text CPU 1.37 -> 1.14 s, RSS 87 -> 86 MB; JSON
// 1.50 -> 1.34 s, 91 -> 87 MB (32 -> 9 collections). The 32 MB gdb dump,
// text 0.49 -> 0.43 s, 45 -> 40 MB; JSON 0.55 -> 0.48 s, 50 -> 40 MB.
// Goroutine dumps (lifted in the heuristics): 32 MB text 0.81 -> 0.77 s,
// 62 -> 57 MB; 100 MB about as with GOGC=50 (3.1-3.4 s, 109-112 MB). The
// GOGC=50 regime before: peak RSS of the 100 MB gdb dump 146 -> 98 MB, of
// the 100 MB goroutine dump 241 -> 212 MB. GOMEMLIMIT or GOGC, when set,
// are the user's say and are left alone.

const (
	minBudgetInput = 16 << 20 // smaller inputs keep the collector's defaults
	// fileGrowth: the binary's pages the analysis touches after the
	// limit is set, with a margin (1.7 MB measured on a 32 MB dump)
	fileGrowth = 2 << 20
	// fileFloor stands in for the binary's resident pages where
	// /proc/self/status cannot be read
	fileFloor = 12 << 20
	// maxEarlyLimit caps the limit from the start: a large file that is
	// mostly no dump (a whole log) makes garbage, not a snapshot, and
	// should not fill its size before the first collection
	maxEarlyLimit = 256 << 20
	// the watch lifts the early limit when what is live passes 1/this
	// of it (91%). The runtime counts 7-9 MB besides the heap (its
	// metadata, free pages not yet returned), so the collector runs
	// often before that, at most half the CPU (the runtime's cap). At
	// 1.5 the 32 MB goroutine dump's peak (14 MB live under a 20 MiB
	// limit) lifted it: 34.2-34.5 MB of RSS; 32.4-32.8 MB at 1.1, in
	// about the same time (0.49-0.79 s and 0.53-0.65 s)
	earlyLiveFactor = 1.1
)

// memBudget is what analyze set, and what it replaced.
type memBudget struct {
	total       int64
	prevPercent int
	prevLimit   int64
	limited     bool
	off         bool // nothing was changed

	mu    sync.Mutex // the watch runs in the finalizer goroutine
	early int64      // the limit set from the start, while it holds; 0 when none
}

// limitMemory sets the collector's budget for inputs of the named files
// (their total size; standard input and files whose size is unknown add
// nothing).
func limitMemory(names []string) *memBudget {
	if os.Getenv("GOMEMLIMIT") != "" || os.Getenv("GOGC") != "" {
		return &memBudget{off: true}
	}
	b := &memBudget{}
	for _, name := range names {
		if name == "-" {
			continue
		}
		if fi, err := os.Stat(name); err == nil && fi.Mode().IsRegular() {
			b.total += fi.Size()
		}
	}
	if b.total < minBudgetInput {
		b.off = true
		return b
	}
	limit := earlyLimit(b.total, residentFile())
	b.early = limit
	b.prevLimit, b.limited = debug.SetMemoryLimit(limit), true
	b.prevPercent = debug.SetGCPercent(-1)
	b.watch()
	return b
}

// earlyLimit is the limit from the start for inputs of total bytes, with
// resident bytes of file pages when it is set.
// The last 1/32 of the size is a margin: without it the 100 MB gdb
// dump's JSON, which never lifts the limit, peaked at 98.8-105.2 MB of
// RSS (95.5-95.7 MB with it).
func earlyLimit(total, resident int64) int64 {
	return min(max(total-resident-fileGrowth-total/32, total/2), maxEarlyLimit)
}

// gcSentinel is garbage from birth: its finalizer runs after the next
// collection (it holds a pointer, so it is no tiny allocation sharing a
// block with live ones).
type gcSentinel struct{ b *memBudget }

// watch looks at what is live after the next collection, and again
// after each one while the early limit holds.
func (b *memBudget) watch() {
	runtime.SetFinalizer(&gcSentinel{b}, func(s *gcSentinel) {
		if s.b.check(liveHeap()) {
			s.b.watch()
		}
	})
}

// check turns the collector on (GOGC=50) when live bytes are too close
// to the early limit, and raises the limit to 85% of S when that is
// higher; false when the watch is over.
func (b *memBudget) check(live int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.early == 0 {
		return false
	}
	if live >= 0 && float64(live)*earlyLiveFactor <= float64(b.early) {
		return true
	}
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(max(b.early, b.total/100*85))
	b.early = 0
	return false
}

// residentFile is how much of the process's memory is file pages (the
// binary's), from /proc/self/status; fileFloor when unknown.
func residentFile() int64 {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return fileFloor
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, "RssFile:"); ok {
			var kb int64
			if _, err := fmt.Sscan(rest, &kb); err == nil && kb > 0 {
				return kb << 10
			}
		}
	}
	return fileFloor
}

// liveHeap is the heap live at the last collection; -1 when unknown.
func liveHeap() int64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() == metrics.KindUint64 {
		return int64(min(s[0].Value.Uint64(), math.MaxInt64))
	}
	return -1
}

// restore puts the collector's settings back (tests run analyze in
// their own process).
func (b *memBudget) restore() {
	if b.off {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.early = 0 // the watch stops
	debug.SetGCPercent(b.prevPercent)
	if b.limited {
		debug.SetMemoryLimit(b.prevLimit)
	}
}
