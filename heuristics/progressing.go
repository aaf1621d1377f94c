package heuristics

import (
	"fmt"
	"sort"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "progressing",
		Title: "Not a deadlock: the process is working",
		Explain: `Stacks change between samples, or threads burn CPU: the process is doing
work, perhaps slowly, perhaps in a loop that does not end, but nothing is
blocked for ever. hangdoc names the busiest thread and where it is. Given only
to a process that no deadlock signature claims.`,
		Fix: `Nothing is deadlocked. If it is too slow, profile it (perf top -p PID,
py-spy top --pid PID) instead of debugging a hang; if it should have finished,
look at what the busiest thread loops over, and sample again later to see
whether it moves on.`,
		Derived: true,
		Rank:    110,
		Match:   matchCalm("progressing", progressingDiagnosis),
	})
}

func progressingDiagnosis(a *analysis, p *stacks.Process, all []threadFacts) Diagnosis {
	var working []threadFacts
	for _, f := range all {
		if threadWorks(f) {
			working = append(working, f)
		}
	}
	sort.SliceStable(working, func(i, j int) bool { return threadCPU(a, working[i]) > threadCPU(a, working[j]) })
	b := working[0]
	samples := len(b.samples)
	cpuKnown := cpuMeasured(a, b)
	d := Diagnosis{
		Confidence: High,
		Deadlock:   false,
		Refs:       []string{},
		Evidence:   []string{},
	}
	d.nameIn(p, factTids(working)...)
	if samples < 2 {
		d.Confidence = Low
	}
	where := innermostOwnFunc(b.lastStack())
	if where == "" {
		where = "??"
	}
	busiest := fmt.Sprintf("%s is the busiest", b.label())
	if cpuKnown {
		busiest += fmt.Sprintf(" at %.0f%% CPU", threadCPU(a, b))
	}
	changed := 0
	for _, f := range all {
		if f.changed {
			changed++
		}
	}
	d.Summary = fmt.Sprintf("not a deadlock, %s is working: %s, in `%s`", whoProc(p), busiest, where)
	switch {
	case changed > 0:
		d.Summary += fmt.Sprintf("; stacks changed between samples in %d of %d threads", changed, len(all))
	case samples < 2:
		d.Summary += " (one sample: running, not compared)"
	}

	skip := map[int]bool{}
	for i, f := range working {
		skip[f.t.Tid] = true
		if i < 4 {
			d.Chain = append(d.Chain, workText(a, f, cpuMeasured(a, f)))
		}
	}
	if len(working) > 4 {
		d.Chain = append(d.Chain, fmt.Sprintf("and %d more threads work", len(working)-4))
	}
	for _, o := range othersText(all, skip) {
		d.Chain = append(d.Chain, o)
	}
	for i, f := range working {
		if i == 4 {
			break
		}
		for j, s := range f.samples {
			if len(s.Stack) == 0 {
				continue
			}
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s sample %d (%s): %s", f.label(), j+1, s.State, chainOfFrames(s.Stack, 6)))
		}
		if cpuMeasured(a, f) {
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s CPU ticks per sample: %s (interval %v)", f.label(), ticksPerSample(f.ticks), a.Snap.Interval))
		}
	}
	return d
}

// cpuMeasured says whether the sampler measured f's own CPU: it did for an
// OS thread sampled twice or more, never for a goroutine, which runs on
// whichever thread the scheduler gives it (its samples carry no ticks, and
// "0% CPU" would be a figure nobody measured).
func cpuMeasured(a *analysis, f threadFacts) bool {
	if r := f.t.Runtime; r != nil && r.Kind == stacks.KindGoroutine {
		return false
	}
	return a.Snap.Evidence.CPU && len(f.samples) >= 2
}

// workText says how a working thread shows its work.
func workText(a *analysis, f threadFacts, cpuKnown bool) string {
	var how []string
	if cpuKnown {
		how = append(how, fmt.Sprintf("%.0f%% CPU", threadCPU(a, f)))
	}
	if f.changed {
		how = append(how, fmt.Sprintf("stack changed across %d samples", len(f.samples)))
	} else if len(f.samples) > 1 {
		how = append(how, "same stack in every sample")
	}
	if f.kind == wkRunning {
		how = append(how, "running")
	}
	s := fmt.Sprintf("%s works (%s)", f.label(), joinComma(how))
	if fn := innermostOwnFunc(f.lastStack()); fn != "" {
		s += fmt.Sprintf(", last in `%s`", fn)
	}
	return s
}

func joinComma(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
