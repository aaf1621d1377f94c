// Package attach reads live processes (and, later, core files) into a
// stacks.Snapshot without harming them: nothing is written to the target,
// threads are stopped only when their registers are needed, each stop is
// bounded, and a SIGKILL of hangdoc leaves the target running.
package attach

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/hangdoc/hangdoc/attach/module"
	"github.com/hangdoc/hangdoc/stacks"
)

// Options says how to sample.
type Options struct {
	Samples  int           // how many times every thread is sampled (default 3)
	Interval time.Duration // time between samples (default 500ms)
	MaxDepth int           // frames per stack at most (default 512)
	// StopTimeout bounds each ptrace stop: a thread that does not reach
	// its stop in time is let go and its stack reported as unknown.
	StopTimeout time.Duration
	// Progress, when set, is called after each sample with the sample's
	// number (from 1), the number of samples, and the threads and
	// processes read so far.
	Progress func(sample, samples, threads, processes int)
	// Threads also reads the OS threads of a Go process (whose Threads
	// are its goroutines) into Process.OSThreads.
	Threads bool
	// GoWithoutDWARF reads Go processes' goroutines from the runtime's
	// structures by their release's layout even when the executable
	// has DWARF (tests compare the two readers).
	GoWithoutDWARF bool
	// JVM reads a JVM's Java threads through the JDK's jcmd (jvm.go): the
	// JVM's own attach mechanism, which starts a thread and a socket in
	// the JVM that stay; off, the report says how to get them.
	JVM bool
	// Debuginfod says how debug files missing on disk are fetched from
	// the servers in DEBUGINFOD_URLS (debuginfod.go).
	Debuginfod DebuginfodOptions

	fetch *module.Debuginfod // made from Debuginfod for one attach
}

func (o *Options) defaults() {
	if o.Samples <= 0 {
		o.Samples = 3
	}
	if o.Interval <= 0 {
		o.Interval = 500 * time.Millisecond
	}
	if o.MaxDepth <= 0 {
		o.MaxDepth = 512
	}
	if o.StopTimeout <= 0 {
		o.StopTimeout = 100 * time.Millisecond
	}
	o.fetch = o.Debuginfod.client()
}

// Stats says what an attach cost the target.
type Stats struct {
	Stops   int           // ptrace stops, all threads and samples
	MaxHeld time.Duration // longest time one thread was held stopped
	Wall    time.Duration
}

// Attach samples the processes and returns what it read. An error means
// nothing useful could be read (no such process, ptrace refused); it is
// an *Error that names the process it is about. A process that exits
// mid-sample is returned with Exited set and what was read before.
func Attach(ctx context.Context, pids []int, opts Options) (*stacks.Snapshot, error) {
	snap, _, err := AttachStats(ctx, pids, opts)
	return snap, err
}

// AttachStats is Attach that also says what the attach cost the target.
func AttachStats(ctx context.Context, pids []int, opts Options) (*stacks.Snapshot, Stats, error) {
	opts.defaults()
	start := time.Now()
	snap := &stacks.Snapshot{
		Schema:   stacks.Schema,
		Source:   "attach",
		Taken:    start.UTC(),
		Samples:  opts.Samples,
		Interval: stacks.Duration(opts.Interval),
		Evidence: stacks.Evidence{Owners: true, CPU: true, Syscalls: true, Lineage: true},
	}
	// Everything that can be read without stopping is read first:
	// mappings, modules, symbols and unwind tables.
	var targets []*target
	for _, pid := range pids {
		tg, err := openTargetWith(pid, opts)
		if err != nil {
			return nil, Stats{}, pidError(pid, err)
		}
		targets = append(targets, tg)
		snap.Processes = append(snap.Processes, tg.proc)
	}

	s := &sampler{opts: opts, tracer: newTracer()}
	defer func() { s.tracer.close() }()
	snap.Samples = 0 // the samples taken: a cancelled attach reports fewer
sampling:
	for i := 0; i < opts.Samples; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				break sampling // report what was read
			case <-time.After(opts.Interval):
			}
		}
		snap.Samples++
		threads, procs := 0, 0
		for _, tg := range targets {
			if !tg.exited {
				s.sampleTarget(tg, i == 0)
			}
			threads += len(tg.proc.Threads)
			if !tg.exited { // sampling may have found it gone
				procs++
			}
		}
		if opts.Progress != nil {
			opts.Progress(i+1, opts.Samples, threads, procs)
		}
	}
	wall := time.Since(start)
	for _, tg := range targets {
		if err := tg.finish(wall, &snap.Evidence); err != nil {
			return nil, Stats{}, pidError(tg.pid, err)
		}
	}
	return snap, Stats{Stops: s.stops, MaxHeld: s.maxHeld, Wall: wall}, nil
}

// modules caches parsed ELF files across samples, attaches and
// processes: a long-running caller pays for libc once.
var modules = module.NewCache()

// targetMaps makes the checks Attach makes before it samples anything
// and reads the process's mappings; an error is an *Error.
func targetMaps(pid int) (taskStat, []module.Mapping, error) {
	st, maps, err := readTargetMaps(pid)
	return st, maps, pidError(pid, err)
}

func readTargetMaps(pid int) (taskStat, []module.Mapping, error) {
	st, err := checkTarget(pid)
	if err != nil {
		return st, nil, err
	}
	maps, err := readMaps(pid)
	switch {
	case isPermission(err):
		return st, nil, permissionError(pid, err)
	case isNotExist(err):
		return st, nil, fmt.Errorf("%w: pid %d", ErrProcessGone, pid)
	case err != nil:
		return st, nil, fmt.Errorf("pid %d: %v", pid, err)
	}
	return st, maps, nil
}

// openTarget checks the pid and loads its modules.
func openTarget(pid int) (*target, error) { return openTargetWith(pid, Options{}) }

func openTargetWith(pid int, opts Options) (*target, error) {
	st, maps, err := targetMaps(pid)
	if err != nil {
		return nil, err
	}
	exe, _ := os.Readlink(procPath(pid, "exe"))
	proc := &stacks.Process{
		Pid: pid, PPid: st.PPid, Exe: exe,
		Cmdline: readCmdline(pid), State: string(st.State),
		Stop: readStop(pid, st),
	}
	space, notes := modules.LoadWith(pid, maps, opts.fetch)
	proc.Modules, proc.Notes = space.Modules(), append(notes, fetchedNotes(opts.fetch)...)
	tg := &target{
		pid: pid, stat: st, maps: maps, space: space, proc: proc,
		threads: map[int]*threadAcc{}, symbols: map[uint64][]stacks.Frame{},
	}
	tg.libc = libcOf(mappedPaths(maps), procPath(pid, "exe"))
	if tg.libc == musl {
		proc.Notes = append(proc.Notes, muslNote)
	}
	tg.lineage()
	tg.openRuntime(opts)
	if tg.runtime == nil || !tg.runtime.ownStacks() {
		warmSymbols(space, pid, exe)
	}
	return tg, nil
}

// warmSymbols reads, before any thread is stopped, the line and inline
// tables (DWARF, read on first use) of the files the stacks will need
// first: the executable's, and those where blocked threads stand as /proc
// tells without a stop. Otherwise the first sample of a cold attach reads
// them between two threads' stops, and reads its threads further apart.
func warmSymbols(space *module.Space, pid int, exe string) {
	for _, m := range space.Modules() {
		if m.Path == exe {
			space.SymbolizeInline(m.Start) // the line table is read whole
		}
	}
	tids, err := listTasks(pid)
	if err != nil {
		return
	}
	seen := map[*module.Loaded]bool{}
	for _, tid := range tids {
		sc, err := readSyscall(pid, tid)
		if err != nil || sc.Running || sc.PC == 0 {
			continue
		}
		if l := space.Lookup(sc.PC); l != nil && !seen[l] {
			seen[l] = true
			space.SymbolizeInline(sc.PC)
		}
	}
}

// finish computes per-thread figures once sampling is over; the
// runtime's reader finishes first, and says what evidence it read in ev.
func (tg *target) finish(wall time.Duration, ev *stacks.Evidence) error {
	if len(tg.proc.Threads) == 0 {
		return fmt.Errorf("%w: pid %d", ErrProcessGone, tg.pid)
	}
	if _, err := os.Stat(procPath(tg.pid)); err != nil {
		tg.exited = true
	}
	if tg.exited {
		tg.proc.Exited = true
		tg.proc.Notes = append(tg.proc.Notes, "the process exited during sampling; what was read before is shown")
	}
	if tg.runtime != nil {
		tg.runtime.finish(tg, wall, ev)
	}
	for _, acc := range tg.threads {
		acc.t.CPU = float64(acc.ticks) / clockTicks / wall.Seconds() * 100
		if !tg.exited && threadGone(tg.pid, acc.t.Tid) {
			acc.t.Notes = append(acc.t.Notes, "thread exited during sampling")
		}
	}
	return nil
}

func threadGone(pid, tid int) bool {
	_, err := os.Stat(taskPath(pid, tid, "stat"))
	return err != nil
}
