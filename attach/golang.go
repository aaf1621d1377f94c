package attach

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach/goproc"
	"github.com/hangdoc/hangdoc/stacks"
)

// goTarget is a Go process read goroutine by goroutine: its threads are
// stopped only to copy their registers, then delve (over a read-only
// backend, attach/goproc) walks the goroutines from memory while the
// process runs.
type goTarget struct {
	reader     *goproc.Reader
	goroutines map[int]*stacks.Thread // by goroutine id, across samples
	osThreads  map[int]*threadAcc
	samples    int
}

// goRuntime is Go: its goroutines replace the OS threads, live and in
// a core (gocore.go).
type goRuntime struct{}

func (goRuntime) coreMerge(*coreProcess, *stacks.Evidence) {}

// live puts tg on the Go path when its executable is a Go program whose
// goroutines can be read (through DWARF, or without it by its release's
// layout; opts.GoWithoutDWARF forces the latter); otherwise tg stays on
// the native path and a note says why.
func (goRuntime) live(tg *target, opts Options) runtimeReader {
	version, ok := goproc.Version(procPath(tg.pid, "exe"))
	if !ok {
		return nil
	}
	if !goLive {
		tg.proc.Runtime = version
		tg.proc.Notes = append(tg.proc.Notes, "goroutines not read, OS threads shown instead: a live Go program's goroutines are read on x86-64 only")
		return nil
	}
	open := goproc.Open
	if opts.GoWithoutDWARF {
		open = goproc.OpenWithoutDWARF
	}
	r, err := open(tg.pid)
	if err != nil {
		// Runtime still says Go: the heuristics then know these threads
		// are not where a Go program's hang shows.
		tg.proc.Runtime = version
		tg.proc.Notes = append(tg.proc.Notes, fmt.Sprintf("goroutines not read, OS threads shown instead: %v", err))
		return nil
	}
	tg.proc.Runtime = r.GoVersion()
	return &goTarget{reader: r, goroutines: map[int]*stacks.Thread{}, osThreads: map[int]*threadAcc{}}
}

func (gt *goTarget) ownStacks() bool { return true }
func (gt *goTarget) merge(*target)   {}

// sample takes one sample of a Go process: every OS thread's registers
// under its own bounded stop (each thread is let go before the next is
// stopped), then every goroutine read from memory. When no goroutine
// could be read on the first sample, the process goes back to the
// native sampler (false).
func (gt *goTarget) sample(s *sampler, tg *target, first bool) bool {
	tids, ok := tg.tasks()
	if !ok {
		return true
	}
	var regs []goproc.ThreadRegs
	states := map[int]taskStat{}
	for _, tid := range tids {
		st, err := readStat(tg.pid, tid)
		if err != nil || st.State == 'Z' || st.State == 'X' {
			continue
		}
		states[tid] = st
		r, err := s.stopRegs(tg, tid)
		if err != nil {
			addNote(&tg.proc.Notes, err.Error())
			continue
		}
		regs = append(regs, goproc.ThreadRegs{Tid: tid, Regs: goRegs(&r)})
	}
	if len(regs) == 0 {
		if len(states) == 0 {
			tg.exited = true
		}
		return true
	}
	res, err := gt.reader.Read(regs, goproc.Options{MaxDepth: s.opts.MaxDepth, Threads: s.opts.Threads})
	if err != nil {
		if threadGone(tg.pid, tg.pid) {
			tg.exited = true
			return true
		}
		if gt.samples == 0 {
			// No goroutine could be read: show the OS threads instead.
			tg.proc.Notes = append(tg.proc.Notes, fmt.Sprintf("goroutines not read, OS threads shown instead: %v", err))
			tg.proc.Runtime, tg.runtime = "", nil
			return false
		}
		addNote(&tg.proc.Notes, fmt.Sprintf("sample %d: %v", gt.samples+1, err))
		return true
	}
	gt.samples++
	for _, n := range res.Notes {
		addNote(&tg.proc.Notes, n)
	}
	seen := map[int]bool{}
	for _, g := range res.Goroutines {
		seen[g.Tid] = true
		th := gt.goroutines[g.Tid]
		if th == nil {
			th = &stacks.Thread{Tid: g.Tid, Name: g.Name}
			if !first {
				th.Notes = append(th.Notes, "goroutine started during sampling")
			}
			gt.goroutines[g.Tid] = th
			tg.proc.Threads = append(tg.proc.Threads, th)
		}
		th.State, th.Stack, th.Runtime = g.State, g.Stack, g.Runtime
		for _, n := range g.Notes {
			addNote(&th.Notes, n)
		}
		th.AddSample(stacks.Sample{State: g.State, Stack: g.Stack})
	}
	for id, th := range gt.goroutines {
		if !seen[id] {
			addNote(&th.Notes, "goroutine exited during sampling")
		}
	}
	if s.opts.Threads {
		gt.osThreadsSample(tg, states, res.OSThreads, first)
	}
	return true
}

// osThreadsSample records the OS threads of a Go process (--threads), their
// stacks unwound by delve from the registers of this sample.
func (gt *goTarget) osThreadsSample(tg *target, states map[int]taskStat, frames map[int][]stacks.Frame, first bool) {
	for tid, st := range states {
		acc := threadAccFor(gt.osThreads, &tg.proc.OSThreads, tid, st, first)
		delta := st.Ticks - acc.lastTicks
		acc.lastTicks, acc.ticks = st.Ticks, acc.ticks+delta
		acc.t.Name, acc.t.State = st.Name, string(st.State)
		if st, ok := frames[tid]; ok {
			acc.t.Stack = st
		} else {
			// Its registers were not read in this sample (born since, or
			// its stop failed): the last stack read stands, said so.
			addNote(&acc.t.Notes, "registers not read in every sample: the stack shown is the last one read")
		}
		acc.t.AddSample(stacks.Sample{State: string(st.State), CPUTicks: delta, Stack: acc.t.Stack})
	}
}

// finish computes the OS threads' CPU once sampling is over.
func (gt *goTarget) finish(_ *target, wall time.Duration, _ *stacks.Evidence) {
	for _, acc := range gt.osThreads {
		acc.t.CPU = float64(acc.ticks) / clockTicks / wall.Seconds() * 100
	}
}

// stopRegs copies one thread's registers under a bounded ptrace stop on
// the sampler's tracer, as stop does, and lets the thread go at once.
func (s *sampler) stopRegs(tg *target, tid int) (unix.PtraceRegs, error) {
	var (
		regs unix.PtraceRegs
		held time.Duration
		err  error
	)
	s.tracer.do(func() { regs, held, err = regsOnThisThread(tid, s.opts.StopTimeout) })
	s.stops++
	if held > s.maxHeld {
		s.maxHeld = held
	}
	switch {
	case err == errStopTimeout:
		s.tracer.close() // releases the thread still seized (see tracer)
		s.tracer = newTracer()
		return regs, fmt.Errorf("thread %d did not stop within %v; let go, goroutines it ran may be shown as last parked", tid, s.opts.StopTimeout)
	case err != nil && isPermission(err):
		return regs, fmt.Errorf("thread %d could not be stopped (%v): is another debugger attached? (`grep TracerPid /proc/%d/status`)", tid, err, tg.pid)
	}
	return regs, err
}

// regsOnThisThread is stopOnThisThread without the stack copy: seize,
// interrupt, wait (bounded), PTRACE_GETREGS, detach. Nothing is written
// and no ptrace option is set.
func regsOnThisThread(tid int, timeout time.Duration) (unix.PtraceRegs, time.Duration, error) {
	var regs unix.PtraceRegs
	if err := unix.PtraceSeize(tid); err != nil {
		return regs, 0, fmt.Errorf("seize thread %d: %w", tid, err)
	}
	start := time.Now()
	if err := unix.PtraceInterrupt(tid); err != nil {
		detach(tid, 0)
		return regs, 0, fmt.Errorf("interrupt thread %d: %w", tid, err)
	}
	pending, err := waitStop(tid, timeout)
	if err != nil {
		return regs, time.Since(start), err // still seized: the caller abandons the tracer
	}
	err = unix.PtraceGetRegs(tid, &regs)
	derr := detach(tid, pending)
	held := time.Since(start)
	if err != nil {
		return regs, held, fmt.Errorf("registers of thread %d: %w", tid, err)
	}
	if derr != nil && !errors.Is(derr, unix.ESRCH) {
		return regs, held, fmt.Errorf("detach thread %d: %w", tid, derr)
	}
	return regs, held, nil
}
