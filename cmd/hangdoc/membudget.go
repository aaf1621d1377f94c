package main

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// A large dump's analysis should need no more memory than the dump's own
// size (issue #13). The Go collector lets the heap grow to twice what is
// live before it collects (GOGC=100). For `hangdoc analyze` of files
// totalling S bytes, S of 16 MiB and more:
//
//   - when S less rssFloor (what the process holds besides the Go heap:
//     the binary's pages, libc, the runtime's own; about 18-21 MB on a
//     tiny input, 11 MB of it the binary's file pages) is at least
//     minMemLimit, that is the Go runtime's memory limit from the start
//     and the collector runs only when it is reached (GOGC off): a
//     gdb dump's heap then stays far below it (its snapshot is a
//     quarter of its size) and the collector runs a few times instead
//     of every 50% of growth. A watch after each collection gives the
//     collector GOGC=50 back, limit lifted, as soon as what is live
//     passes 1/liveFactor of the limit: a limit close to what is live
//     makes the collector run without end (the 100 MB goroutine dump
//     took 1.5-2.5 times its CPU so).
//   - otherwise, while the input is parsed, the heap may grow to 1.5
//     times what is live (GOGC=50); so to the end when 85% of S is under
//     minMemLimit; else once it is parsed a soft limit of 85% of S holds
//     the heuristics' and the report's heap, when the heap then live is
//     at most 1/liveFactor of it (the heuristics need about twice that
//     at their peak), and the collector's defaults come back when not.
//
// Measured on the 100 MB gdb dump of `make bench` (GNU time, same
// minute, load 10-15, CPU as wall times wait for a core): text CPU
// 1.30-1.58 -> 1.11-1.17 s with the limit from the start (GOMEMLIMIT
// 72MiB GOGC=off), RSS 83-86 -> 82 MB; JSON 1.46-1.51 -> 1.22 s, RSS 95
// -> 83 MB. The GOGC=50 regime before it: peak RSS of the 100 MB gdb
// dump 146 -> 98 MB, of the 100 MB goroutine dump 241 -> 212 MB; of the
// 32 MB ones 55 -> 48 MB and 83 -> 73 MB (+0.1 s CPU each). GOMEMLIMIT
// or GOGC, when set, are the user's say and are left alone.

const (
	minBudgetInput = 16 << 20 // smaller inputs keep the collector's defaults
	minMemLimit    = 64 << 20 // the lowest limit analyze sets
	rssFloor       = 24 << 20 // resident besides the Go runtime's memory, with a margin
	liveFactor     = 2.5
	// the watch lifts the early limit when what is live passes this
	// share of it: the heuristics and the JSON report add a third to
	// the snapshot at their peak
	earlyLiveFactor = 1.5
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
	// lifted: the watch took the early limit away (GOGC=50 to the end:
	// the collector's defaults, after the parse, let a 100 MB goroutine
	// dump's heap reach twice its 80 MB live)
	lifted bool
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
	if limit := b.total - rssFloor; limit >= minMemLimit {
		b.early = limit
		b.prevLimit, b.limited = debug.SetMemoryLimit(limit), true
		b.prevPercent = debug.SetGCPercent(-1)
		b.watch()
		return b
	}
	b.prevPercent = debug.SetGCPercent(50)
	return b
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

// check lifts the early limit when live bytes are too close to it (then
// GOGC=50 rules, as for smaller inputs); false when the limit is gone.
func (b *memBudget) check(live int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.early == 0 {
		return false
	}
	if live >= 0 && float64(live)*earlyLiveFactor <= float64(b.early) {
		return true
	}
	b.early, b.lifted = 0, true
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(b.total / 100 * 85)
	return false
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

// parsed sets the soft limit once the inputs are parsed, or gives the
// collector its defaults back when the budget cannot be kept.
func (b *memBudget) parsed() {
	if b.off {
		return
	}
	b.mu.Lock()
	early := b.early != 0 || b.lifted
	b.mu.Unlock()
	if early {
		return // the limit from the start holds, or GOGC=50 since the watch lifted it
	}
	limit := b.total / 100 * 85
	if limit <= minMemLimit {
		return // GOGC=50 to the end: the heap stays near what is live
	}
	runtime.GC() // what is live now, not at the last collection (tens of ms for a large dump)
	if live := liveHeap(); live < 0 || float64(live)*liveFactor > float64(limit) {
		debug.SetGCPercent(b.prevPercent)
		b.off = true
		return
	}
	b.prevLimit, b.limited = debug.SetMemoryLimit(limit), true
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
