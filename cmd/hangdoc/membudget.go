package main

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// A large dump's analysis should need no more memory than the dump's own
// size (issue #13). The Go collector lets the heap grow to twice what is
// live before it collects (GOGC=100). For `hangdoc analyze` of files
// totalling S bytes, S of 16 MiB and more:
//
//   - while the input is parsed, the heap may grow to 1.5 times what is
//     live (GOGC=50); so to the end when 85% of S is under minMemLimit;
//   - once it is parsed, a soft limit of 85% of S holds the heuristics'
//     and the report's heap (the rest is left for what the limit does
//     not count: the binary's pages, about 12 MB resident), when the
//     heap then live is at most 1/liveFactor of it: the heuristics need
//     about twice that at their peak. A larger snapshot (a goroutine
//     dump's is 60% of its size) cannot fit the budget: a limit under
//     what is live makes the collector run without end (the 100 MB
//     goroutine dump took 1.5-2.5 times its CPU so), and so the
//     collector's defaults come back for the rest.
//
// Measured on the inputs of `make bench` (GNU time, at load 15-25, so
// CPU rather than wall time): peak RSS of the 100 MB gdb dump 146 -> 98
// MB (CPU 3.0 -> 2.8 s), of the 100 MB goroutine dump 241 -> 212 MB
// (4.5 -> 4.7 s); of the 32 MB ones 55 -> 48 MB and 83 -> 73 MB (+0.1 s
// each). GOMEMLIMIT or GOGC,
// when set, are the user's say and are left alone.

const (
	minBudgetInput = 16 << 20 // smaller inputs keep the collector's defaults
	minMemLimit    = 64 << 20 // the lowest limit analyze sets
	liveFactor     = 2.5
)

// memBudget is what analyze set, and what it replaced.
type memBudget struct {
	total       int64
	prevPercent int
	prevLimit   int64
	limited     bool
	off         bool // nothing was changed
}

// limitMemory lowers the collector's GOGC for inputs of the named files
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
	b.prevPercent = debug.SetGCPercent(50)
	return b
}

// parsed sets the soft limit once the inputs are parsed, or gives the
// collector its defaults back when the budget cannot be kept.
func (b *memBudget) parsed() {
	if b.off {
		return
	}
	limit := b.total / 100 * 85
	if limit <= minMemLimit {
		return // GOGC=50 to the end: the heap stays near what is live
	}
	runtime.GC() // what is live now, not at the last collection (tens of ms for a large dump)
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	live := int64(-1)
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = int64(s[0].Value.Uint64())
	}
	if live < 0 || float64(live)*liveFactor > float64(limit) {
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
	debug.SetGCPercent(b.prevPercent)
	if b.limited {
		debug.SetMemoryLimit(b.prevLimit)
	}
}
