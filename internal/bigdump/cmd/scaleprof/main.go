// Command scaleprof profiles what `hangdoc analyze` does with one big
// dump (bigdump), stage by stage: parse, heuristics, report. It prints
// each stage's time and the live heap after it, and writes CPU and heap
// profiles for `go tool pprof`.
//
//	go run ./internal/bigdump/cmd/scaleprof -kind gdb -mb 100 -cpu cpu.out -heap heap.out
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/bigdump"
	"github.com/hangdoc/hangdoc/report"
	"github.com/hangdoc/hangdoc/stacks"
)

func main() {
	kind := flag.String("kind", "gdb", "gdb or goroutines")
	mb := flag.Int("mb", 100, "size in MiB")
	format := flag.String("format", "text", "text or json")
	cpu := flag.String("cpu", "", "write a CPU profile of the three stages here")
	heap := flag.String("heap", "", "write a heap profile after the heuristics here")
	repeat := flag.Int("repeat", 1, "run the heuristics this many times (a longer CPU profile of them)")
	flag.Parse()
	b, err := bigdump.FromRepo(".", *kind, *mb<<20)
	if err != nil {
		fail(err)
	}
	if *cpu != "" {
		f, err := os.Create(*cpu)
		if err != nil {
			fail(err)
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	cpu0 := cpuTime()
	stage := func(name string, start time.Time) {
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		c := cpuTime()
		fmt.Fprintf(os.Stderr, "%-12s %6.2fs wall %6.2fs CPU  live heap %4d MB\n", name, time.Since(start).Seconds(), (c - cpu0).Seconds(), ms.HeapAlloc>>20)
		cpu0 = c
	}
	t := time.Now()
	snap, _, _, err := stacks.Parse(bytes.NewReader(b), "")
	if err != nil {
		fail(err)
	}
	b = nil
	stage("parse", t)
	t = time.Now()
	res := heuristics.Diagnose(snap, heuristics.Options{})
	for i := 1; i < *repeat; i++ {
		res = heuristics.Diagnose(snap, heuristics.Options{})
	}
	stage("heuristics", t)
	if *heap != "" {
		f, err := os.Create(*heap)
		if err != nil {
			fail(err)
		}
		pprof.WriteHeapProfile(f)
		f.Close()
	}
	t = time.Now()
	if *format == "json" {
		err = report.JSON(io.Discard, res)
	} else {
		err = report.Text(io.Discard, res, report.TextOptions{})
	}
	if err != nil {
		fail(err)
	}
	stage("report", t)
}

// cpuTime is the process's user and system time so far: on a shared
// machine it says more than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "scaleprof:", err)
	os.Exit(2)
}
