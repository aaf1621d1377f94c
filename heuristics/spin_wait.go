package heuristics

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/internal/lazyre"
	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "spin-wait-starved",
		Title: "A thread spins waiting for work that nothing is doing",
		Explain: `A thread is running in every sample with the same stack, its CPU time growing
all the time, inside a wait, fence, poll or spin loop, while every other thread
of the process sleeps: the value it polls for (a counter, a flag, a fence) can
only be produced by a thread or device that is not working on it. It will spin
for ever at 100% CPU. The MLX Metal Fence::wait hang under MLX_METAL_FAST_SYNCH=1
is the motivating case: the waiter expects a counter value the producer never
reaches. Needs CPU figures and at least two samples; from frame names alone the
claim is low confidence.`,
		Fix: `Find the value the loop waits for and who should produce it: the producer has
exited, waits for something else, or will never reach that value (an off-by-one
in the count, an update lost on an error path). Make the producer signal on
every path, bound the wait with a timeout, and block on a futex, condition
variable or event instead of spinning.`,
		Needs: []string{"cpu"},
		Rank:  35,
		Match: matchSpinWait,
	})
}

// spinFuncs are the names of wait, fence, poll and spin loops.
var spinFuncs = lazyre.New(`(?i)(wait|fence|poll|spin|yield|pause|busy_?wait|cpu_relax|backoff)`)

// yieldFrames are the calls a spin loop makes to give up the CPU; they
// are skipped when comparing stacks, so a loop sampled inside sched_yield
// and outside it counts as the same.
var yieldFrames = lazyre.New(`^(sched_yield|thrd_yield|pthread_yield|syscall_cancel_arch|internal_syscall_cancel|syscall_cancel)$`)

// spinner is one thread that spins.
type spinner struct {
	f     threadFacts
	loop  string // the loop function
	named bool   // the loop function's name says it waits
	cpu   float64
}

func matchSpinWait(a *analysis) []Diagnosis {
	var out []Diagnosis
	for _, p := range a.Snap.Processes {
		if d, ok := spinWaitIn(a, p); ok {
			out = append(out, d)
		}
	}
	return out
}

// spinWaitIn looks for spinning threads in one process.
func spinWaitIn(a *analysis, p *stacks.Process) (Diagnosis, bool) {
	type out struct {
		d  Diagnosis
		ok bool
	}
	r := result(a, fmt.Sprintf("spin-wait %d", p.Pid), func(a *analysis) out {
		d, ok := detectSpinWaitIn(a, p)
		return out{d, ok}
	})
	return r.d, r.ok
}

func detectSpinWaitIn(a *analysis, p *stacks.Process) (Diagnosis, bool) {
	cpuEvidence := a.Snap.Evidence.CPU
	var spins []spinner
	spinning := map[*stacks.Thread]bool{} // the others' facts are copied only when a thread spins
	for t, f := range a.samplesIn(p) {
		if f.zombie {
			continue
		}
		if s, ok := asSpinner(a, f, cpuEvidence); ok {
			spins = append(spins, s)
			spinning[t] = true
		}
	}
	if len(spins) == 0 {
		return Diagnosis{}, false
	}
	others := make([]threadFacts, 0, len(p.Threads)-len(spins))
	for t, f := range a.samplesIn(p) {
		if !f.zombie && !spinning[t] {
			others = append(others, f)
		}
	}
	// The work could be running: then it is not starved.
	spinTids := map[int]bool{}
	for _, s := range spins {
		spinTids[s.f.t.Tid] = true
	}
	producerAsleep := false
	for _, o := range others {
		if threadWorks(o) {
			return Diagnosis{}, false
		}
		if w := o.lastWait(); o.kind == wkFutex && !(w != nil && spinTids[w.JoinTid]) {
			producerAsleep = true
		}
	}
	named := false
	for _, s := range spins {
		named = named || s.named
	}
	if !named && !producerAsleep {
		// A loop of unknown purpose alone at 100% is as likely a
		// computation as a spin: not a claim.
		return Diagnosis{}, false
	}
	sort.SliceStable(spins, func(i, j int) bool {
		if spins[i].named != spins[j].named {
			return spins[i].named
		}
		return spins[i].cpu > spins[j].cpu
	})
	return spinDiagnosis(a, p, spins, others, cpuEvidence), true
}

// asSpinner says whether a thread spins: running in every sample with
// the same stack and growing CPU time (or, without CPU figures, on a CPU
// in a loop whose name says it waits).
func asSpinner(a *analysis, f threadFacts, cpuEvidence bool) (spinner, bool) {
	if f.kind != wkRunning && f.kind != wkUnknown {
		return spinner{}, false
	}
	if g := f.t.Goroutine(); g != nil && g.Status != "running" {
		return spinner{}, false // runnable at runtime.gopark: just woken, not spinning
	}
	st := f.lastStack()
	if len(st) == 0 {
		return spinner{}, false
	}
	for _, fr := range st {
		if frameRole(fr) == stacks.RoleCollective {
			// A rank polls its progress engine while it waits for the
			// others (opal_progress): a collective waiter, not a spin;
			// collective-straggler names the rank that is elsewhere.
			return spinner{}, false
		}
	}
	loop, named := spinLoopFunc(st)
	s := spinner{f: f, loop: loop, named: named, cpu: threadCPU(a, f)}
	if cpuEvidence && len(f.samples) >= 2 {
		if !f.running || !f.cpuGrows || !sameSpinStack(f) {
			return spinner{}, false
		}
		if named {
			return s, true
		}
		// No name to go by: the same program counters in every one of
		// at least three samples, pinned to a CPU.
		return s, f.exact && len(f.samples) >= 3 && s.cpu >= 80
	}
	// One sample never shows a spin: a thread caught once in a spin
	// lock or a poll loop is as likely blocked there (a gdb dump of a
	// spin lock's waiter is a lock wait), unless a known upstream bug
	// says that loop spins. Several samples without CPU
	// figures: only the loop's name speaks, and not a Python function's
	// (a dump of Python frames alone does not say whether C code under
	// them blocks).
	if len(f.samples) < 2 && !knownSpin(a, f.t) || !named || stacks.IsPythonFrame(st[0]) {
		return spinner{}, false
	}
	last := f.samples[len(f.samples)-1]
	return s, last.State == "R" || (last.State == "" && f.kind == wkUnknown)
}

// knownSpin: a known upstream bug whose frames are the thread's says it
// spins there (MLX's Fence::wait): the one case where a single sample
// carries a spin claim.
func knownSpin(a *analysis, t *stacks.Thread) bool {
	ref, ok := a.Ref(t)
	if !ok {
		return false
	}
	for i := range a.rules {
		d := Diagnosis{ID: "spin-wait-starved"}
		d.nameIn(ref.Proc, t.Tid)
		if _, ok := a.rules[i].match(a, &d); ok {
			return true
		}
	}
	return false
}

// spinLoopFunc is the loop function among the innermost frames: the
// first of the three innermost named frames (yield calls skipped) whose
// name says it waits, else the innermost named frame.
func spinLoopFunc(st []stacks.Frame) (string, bool) {
	seen := 0
	first := ""
	for _, f := range st {
		if f.Func == "" || f.Signal {
			continue
		}
		n := stacks.CallName(f.Func)
		if yieldFrames.MatchString(n) {
			continue
		}
		if first == "" {
			first = f.Func
		}
		if spinFuncs.MatchString(f.Func) {
			return f.Func, true
		}
		if seen++; seen == 3 {
			break
		}
	}
	return first, false
}

// sameSpinStack compares the thread's samples with yield calls skipped.
func sameSpinStack(f threadFacts) bool {
	key := ""
	n := 0
	for _, s := range f.samples {
		if len(s.Stack) == 0 {
			continue
		}
		st := s.Stack
		for len(st) > 0 && yieldFrames.MatchString(stacks.CallName(st[0].Func)) {
			st = st[1:]
		}
		k := stacks.StackKey(st, stacks.PlaceKey)
		if n > 0 && k != key {
			return false
		}
		key = k
		n++
	}
	return n >= 2
}

// threadWorks says whether a thread that does not spin makes progress:
// it runs and its stack moves, or it burns CPU.
func threadWorks(f threadFacts) bool {
	if f.zombie {
		return false
	}
	if f.changed {
		return true
	}
	if f.cpuGrows && f.kind == wkRunning {
		return true
	}
	if f.t.CPU >= 10 {
		return true // busy between samples, caught at the same place
	}
	return f.kind == wkRunning && len(f.samples) == 1
}

// threadCPU is a thread's CPU share in percent: the sampler's figure, or
// one computed from the ticks and the interval.
func threadCPU(a *analysis, f threadFacts) float64 {
	if f.t.CPU > 0 {
		return f.t.CPU
	}
	iv := time.Duration(a.Snap.Interval).Seconds()
	if iv <= 0 || len(f.ticks) < 2 {
		return 0
	}
	var sum uint64
	for _, t := range f.ticks[1:] {
		sum += t
	}
	// Linux counts CPU time in USER_HZ ticks, 100 a second.
	return float64(sum) / 100 / (iv * float64(len(f.ticks)-1)) * 100
}

func spinDiagnosis(a *analysis, p *stacks.Process, spins []spinner, others []threadFacts, cpuEvidence bool) Diagnosis {
	s := spins[0]
	n := len(s.f.samples)
	loop := s.loop
	if loop == "" {
		loop = "??"
	}
	conf := Low
	switch {
	case cpuEvidence && n >= 2 && s.named:
		conf = High
	case cpuEvidence && n >= 2:
		conf = Low // the same PCs at 100% CPU, no name to go by
	}
	cpu := fmt.Sprintf("%.0f%% CPU", s.cpu)
	if !cpuEvidence {
		cpu = "CPU not measured"
	}
	d := Diagnosis{
		Confidence: conf,
		Deadlock:   true,
		Refs:       []string{},
	}
	d.nameIn(p)
	for _, sp := range spins {
		d.Tids = append(d.Tids, sp.f.t.Tid)
	}
	sampled := "in the only sample"
	if n > 1 {
		sampled = fmt.Sprintf("with the same stack in all %d samples", n)
	}
	d.Summary = fmt.Sprintf("%s spins at %s in `%s` %s while no other thread runs", s.f.label(), cpu, loop, sampled)
	if !cpuEvidence {
		d.Summary = fmt.Sprintf("%s runs in the wait loop `%s` %s while no other thread runs (CPU not measured)", s.f.label(), loop, sampled)
	}
	if len(spins) > 1 {
		d.Summary += fmt.Sprintf(" (%d threads spin)", len(spins))
	}

	d.Chain = append(d.Chain, fmt.Sprintf("%s runs `%s` (%s; %s)", s.f.label(), loop, cpu, strings.TrimPrefix(sampled, "with ")))
	d.Chain = append(d.Chain, "it polls for a value (a counter, flag or fence) that only another thread or a device can produce")
	var sleepers []string
	for _, o := range others {
		sleepers = append(sleepers, sleeperText(o))
	}
	if len(sleepers) == 0 {
		d.Chain = append(d.Chain, "no other thread exists in the process: the producer has exited, or is a device or another process")
	} else {
		d.Chain = append(d.Chain, "nothing that could produce it runs: "+strings.Join(limitList(sleepers, 4), "; "))
	}

	for _, sp := range spins {
		d.Evidence = append(d.Evidence, fmt.Sprintf("%s stack: %s", sp.f.label(), chainOfFrames(sp.f.lastStack(), 8)))
		if cpuEvidence && len(sp.f.ticks) > 1 {
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s CPU ticks per sample: %s (interval %v; %.0f%% CPU; state %s in every sample)",
				sp.f.label(), ticksPerSample(sp.f.ticks), a.Snap.Interval, sp.cpu, statesText(sp.f)))
		}
		if f, ok := frameNamed(sp.f.lastStack(), sp.loop); ok && f.Module != "" {
			d.Evidence = append(d.Evidence, fmt.Sprintf("loop frame `%s` in `%s` at %s+%#x", f.Name(), filepath.Base(f.Module), filepath.Base(f.Module), f.Offset))
		}
		if !sp.named {
			d.Evidence = append(d.Evidence, "no frame name says wait or spin: claimed from identical program counters at full CPU only")
		}
	}
	if !cpuEvidence || n < 2 {
		d.Evidence = append(d.Evidence, "claimed from frame names only: two or more samples with CPU figures would confirm it")
		h := attachHint(p.Pid, "to confirm it with CPU figures")
		h.Samples = 3
		d.Hints = append(d.Hints, h)
	}
	return d
}

// sleeperText says what a thread that does not run is doing.
func sleeperText(f threadFacts) string {
	what := "is blocked"
	switch f.kind {
	case wkFutex:
		what = "sleeps in a futex wait"
		if w := f.lastWait(); w != nil && w.JoinTid != 0 {
			what = fmt.Sprintf("waits to join thread %d", w.JoinTid)
		}
	case wkIO:
		what = fmt.Sprintf("waits on I/O in `%s`", f.call)
	case wkSleep:
		what = fmt.Sprintf("sleeps in `%s`", f.call)
	case wkChild:
		what = "waits for a child process"
	case wkSignal:
		what = "waits for a signal"
	case wkRunning:
		what = "is runnable but its stack does not move"
	case wkUnknown:
		what = "state unknown"
	case wkOther:
		if f.call != "" {
			what = fmt.Sprintf("is blocked in `%s`", f.call)
		}
	}
	if fn := innermostOwnFunc(f.lastStack()); fn != "" {
		what += fmt.Sprintf(" (in `%s`)", fn)
	}
	return f.label() + " " + what
}

func statesText(f threadFacts) string {
	seen := map[string]bool{}
	var out []string
	for _, s := range f.samples {
		if !seen[s.State] {
			seen[s.State] = true
			out = append(out, s.State)
		}
	}
	return strings.Join(out, "/")
}

func frameNamed(st []stacks.Frame, fn string) (stacks.Frame, bool) {
	for _, f := range st {
		if f.Func == fn {
			return f, true
		}
	}
	return stacks.Frame{}, false
}

// limitList keeps the first n items and says how many more there were.
func limitList(items []string, n int) []string {
	if len(items) <= n {
		return items
	}
	out := append([]string(nil), items[:n]...)
	return append(out, fmt.Sprintf("and %d more", len(items)-n))
}
