package heuristics

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hangdoc/hangdoc/internal/lazyre"
	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "collective-straggler",
		Title: "One rank is not in the collective the other ranks wait in",
		Explain: `Several processes of one distributed job (ranks: one dump per rank or host
merged with hangdoc analyze, or ranks attached together) are grouped by where
their main thread is, as STAT does. Most ranks wait in the same collective
operation (an all-reduce, barrier, broadcast, all-gather, a ring pass; NCCL, MPI,
gloo, JACCL) and a minority, typically one rank, is somewhere else. A collective
completes only when every rank joins it: the waiting ranks wait for the
straggler, and the straggler's stack says what it waits for instead (a fence,
a device, I/O, a lock, another collective issued in a different order).`,
		Fix: `Find why the straggler rank does not reach the collective: diagnose it on its
own (hangdoc attach on that rank), and look for a collective skipped or issued
in a different order on one rank (a branch that differs between ranks, an early
return, an exception caught on one rank), a wait on a device, fence or I/O that
never completes, or a rank that crashed. NCCL_DEBUG=INFO and
TORCH_DISTRIBUTED_DEBUG=DETAIL show which collective each rank issued.`,
		Needs:   []string{"cpu"},
		Derived: true,
		Rank:    45,
		Match:   matchCollectiveStraggler,
	})
}

var collectiveRefs = []string{
	"https://hpc.llnl.gov/software/development-environment-software/stat-stack-trace-analysis-tool",
	"https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html",
	"https://pytorch.org/docs/stable/distributed.html#debugging-torch-distributed-applications",
}

var (
	// collectiveRE matches the functions of collective operations and
	// the libraries that run them.
	collectiveRE = lazyre.New(`(?i)all_?reduce|barrier|broadcast|all_?gather|reduce_?scatter|all_?to_?all|ncclkernel|nccl|(^|[^a-z])p?mpi_|gloo|jaccl|collective`)
	// ringRE matches a ring pass ("allreduce_ring", "ring::send",
	// "RingAllReduce"), not "string" or "during".
	ringRE = lazyre.New(`(^|[^A-Za-z])[Rr]ing([^a-z]|$)|[a-z]Ring([^a-z]|$)`)
	// notCollectiveRE: names that match the words above but are not a
	// wait in a collective.
	notCollectiveRE = lazyre.New(`(?i)^_*pthread_cond_|ring_?buf`)
	// helperThreadRE: the background threads of communication libraries,
	// in every rank whatever its main thread does.
	helperThreadRE = lazyre.New(`(?i)proxy|watchdog|heartbeat|progress_?thread|async_?job`)
)

// collectiveFrame: a frame of a collective operation: a vocabulary row
// of the collective role (Open MPI's progress engine, MPI, NCCL, Gloo),
// or a name that says so. The names' answer is kept per function name:
// the regexps are read once per distinct name, not once per frame.
func collectiveFrame(f stacks.Frame) bool {
	if f.Func == "" || f.Signal {
		return false
	}
	if frameRole(f) == stacks.RoleCollective {
		return true
	}
	if v, ok := collectiveNames.Load(f.Func); ok {
		return v.(bool)
	}
	v := !notCollectiveRE.MatchString(f.Func) && (collectiveRE.MatchString(f.Func) || ringRE.MatchString(f.Func))
	collectiveNames.Store(f.Func, v)
	return v
}

// collectiveNames memoises collectiveFrame's reading of a name.
var collectiveNames sync.Map

// rankView is one process of the job as the straggler analysis sees it.
type rankView struct {
	p    *stacks.Process
	lead *stacks.Thread // the thread that speaks for the rank; nil when none
	// coll is the collective the lead thread waits in: its outermost
	// collective frame (the call the program made, "ncclAllReduce"), ""
	// when it is in none. collAt is that frame's index.
	coll   string
	collAt int
}

// name says which rank a process is: its label (the input's name), else
// its pid.
func (r rankView) name() string {
	if r.p.Label != "" {
		if r.p.Pid > 0 {
			return fmt.Sprintf("`%s` (pid %d)", r.p.Label, r.p.Pid)
		}
		return "`" + r.p.Label + "`"
	}
	return fmt.Sprintf("pid %d", r.p.Pid)
}

// where says where a rank's lead thread is: its innermost frame that is
// not libc's wait plumbing.
func (r rankView) where() string {
	switch {
	case r.p.Exited:
		return "it exited during sampling"
	case r.lead == nil || len(r.lead.Stack) == 0:
		return "no stack"
	case r.coll != "":
		return "`" + r.coll + "`"
	}
	if fn := innermostOwnFunc(r.lead.Stack); fn != "" {
		return "`" + frameName(stacks.Frame{Func: fn}) + "`"
	}
	return "`" + frameName(r.lead.Stack[0]) + "`"
}

// rankOf picks a process's lead thread, STAT's "main thread": the main
// thread (tid = pid) when the snapshot has it, else the first thread in a
// collective that is not a library's helper, else the first thread.
func rankOf(p *stacks.Process) rankView {
	r := rankView{p: p, collAt: -1}
	for _, t := range p.Threads {
		if p.Pid > 0 && t.Tid == p.Pid {
			r.lead = t
		}
	}
	if r.lead == nil {
		memo := map[stackID]int{}
		for _, t := range p.Threads {
			if i := byStack(memo, t.Stack, func() int { return outermostCollective(t.Stack) }); i >= 0 && !helperThread(t) {
				r.lead = t
				break
			}
		}
	}
	if r.lead == nil && len(p.Threads) > 0 {
		r.lead = p.Threads[0]
	}
	if r.lead != nil {
		if i := outermostCollective(r.lead.Stack); i >= 0 {
			r.coll, r.collAt = frameName(r.lead.Stack[i]), i
			// A busy rank stopped mid-spin may unwind short (the progress
			// engine's frames, not the call below them): the longest
			// sample of the same thread says which collective it is in.
			longest := r.lead.Stack
			for _, sm := range r.lead.Samples() {
				if len(sm.Stack) > len(longest) && outermostCollective(sm.Stack) >= 0 {
					longest = sm.Stack
				}
			}
			if len(longest) > len(r.lead.Stack) {
				r.coll = frameName(longest[outermostCollective(longest)])
			}
		} else if len(r.lead.Stack) == 0 {
			// A busy rank's thread that did not stop in time in the last
			// sample has no stack; an earlier sample says where it is.
			for j := len(r.lead.Samples()) - 1; j >= 0; j-- {
				if st := r.lead.Samples()[j].Stack; len(st) > 0 {
					if i := outermostCollective(st); i >= 0 {
						r.coll = frameName(st[i])
					}
					break
				}
			}
		}
	}
	return r
}

func outermostCollective(st []stacks.Frame) int {
	for i := len(st) - 1; i >= 0; i-- {
		if collectiveFrame(st[i]) {
			return i
		}
	}
	return -1
}

func helperThread(t *stacks.Thread) bool {
	if helperThreadRE.MatchString(t.Name) {
		return true
	}
	for _, f := range t.Stack {
		if helperThreadRE.MatchString(f.Func) {
			return true
		}
	}
	return false
}

func matchCollectiveStraggler(a *analysis) []Diagnosis {
	var all []rankView
	for _, p := range a.Snap.Processes {
		all = append(all, rankOf(p))
	}
	ranks := withoutLaunchers(all)
	if len(ranks) < 3 {
		return matchProgressTimeout(a) // a paste of a rank or two (collective_timeout.go)
	}
	// Group the ranks in a collective by the collective they called.
	groups := map[string][]int{}
	var order []string
	for i, r := range ranks {
		if r.coll == "" || r.p.Exited {
			continue
		}
		k := funcKey(stacks.Frame{Func: r.coll})
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	if len(order) == 0 {
		return matchProgressTimeout(a) // no majority: a rank's own report may still say (other processes pasted with it)
	}
	sort.SliceStable(order, func(i, j int) bool { return len(groups[order[i]]) > len(groups[order[j]]) })
	major := groups[order[0]]
	if len(major) < 2 || 2*len(major) <= len(ranks) || len(major) == len(ranks) {
		return matchProgressTimeout(a)
	}
	inMajor := map[int]bool{}
	for _, i := range major {
		inMajor[i] = true
	}
	var waiting, stragglers []rankView
	for i, r := range ranks {
		if inMajor[i] {
			waiting = append(waiting, r)
		} else {
			stragglers = append(stragglers, r)
		}
	}
	return []Diagnosis{stragglerDiagnosis(a, ranks, waiting, stragglers)}
}

// stragglerWorks says whether a rank outside the collective is seen
// working in two or more samples.
func stragglerWorks(a *analysis, r rankView) bool {
	return r.lead != nil && !r.p.Exited && len(r.lead.Samples()) >= 2 && threadWorks(a.samplesOf(r.lead))
}

// withoutLaunchers drops the processes that started the ranks: one that
// is an ancestor (through the snapshot's parent pids) of a process in a
// collective and is in none itself is the job's launcher (mpirun, mpiexec
// and its hydra proxies, torchrun, srun's step daemon), which waits for
// its children, not a rank that the collective waits for.
func withoutLaunchers(ranks []rankView) []rankView {
	byPid := map[int]*stacks.Process{}
	for _, r := range ranks {
		if r.p.Pid > 0 {
			byPid[r.p.Pid] = r.p
		}
	}
	launcher := map[int]bool{}
	for _, r := range ranks {
		if r.coll == "" {
			continue
		}
		seen := map[int]bool{}
		for pp := byPid[r.p.PPid]; pp != nil && !seen[pp.Pid]; pp = byPid[pp.PPid] {
			seen[pp.Pid] = true
			launcher[pp.Pid] = true
		}
	}
	var out []rankView
	for _, r := range ranks {
		if r.coll != "" || !launcher[r.p.Pid] {
			out = append(out, r)
		}
	}
	return out
}

func stragglerDiagnosis(a *analysis, ranks, waiting, stragglers []rankView) Diagnosis {
	coll := waiting[0].coll
	d := Diagnosis{Deadlock: true, Confidence: Medium, Refs: collectiveRefs}

	var names []string
	for _, s := range stragglers {
		names = append(names, s.name())
	}
	if len(stragglers) == 1 {
		s := stragglers[0]
		d.Summary = fmt.Sprintf("rank %s is not in the collective: %d of %d ranks wait in `%s`, and it is in %s instead",
			s.name(), len(waiting), len(ranks), coll, s.where())
		if s.lead != nil && s.coll == "" && !s.p.Exited {
			d.Summary += fmt.Sprintf(" (%s)", threadLabel(s.lead))
		}
	} else {
		var where []string
		if len(stragglers) > 3 {
			// Many stragglers (a DDT group of ranks): how many are where.
			count := map[string]int{}
			var order []string
			for _, s := range stragglers {
				if count[s.where()] == 0 {
					order = append(order, s.where())
				}
				count[s.where()]++
			}
			for _, w := range order {
				where = append(where, fmt.Sprintf("%d in %s", count[w], w))
			}
		} else {
			for _, s := range stragglers {
				where = append(where, fmt.Sprintf("%s in %s", s.name(), s.where()))
			}
		}
		d.Summary = fmt.Sprintf("%d of %d ranks are not in the collective the other %d wait in (`%s`): %s",
			len(stragglers), len(ranks), len(waiting), coll, strings.Join(where, "; "))
	}

	// The chain: where the majority waits, then each straggler.
	var wnames []string
	for _, w := range waiting {
		wnames = append(wnames, w.name())
	}
	leaf := ""
	if l := waiting[0].lead; l != nil && len(l.Stack) > 0 {
		leaf = fmt.Sprintf(" (innermost `%s`)", frameName(l.Stack[0]))
	}
	d.Chain = append(d.Chain, fmt.Sprintf("%d ranks wait in `%s`%s: %s", len(waiting), coll, leaf, strings.Join(limitList(wnames, 8), ", ")))
	for _, s := range stragglers {
		switch {
		case s.p.Exited:
			d.Chain = append(d.Chain, fmt.Sprintf("rank %s exited during sampling: it will never join", s.name()))
		case s.coll != "":
			d.Chain = append(d.Chain, fmt.Sprintf("rank %s waits in a different collective, `%s`: the ranks issued collectives in different orders", s.name(), s.coll))
		case s.lead != nil:
			d.Chain = append(d.Chain, fmt.Sprintf("rank %s: %s %s, in no collective", s.name(), threadLabel(s.lead), a.Doing(s.lead)))
		}
	}
	d.Chain = append(d.Chain, fmt.Sprintf("a collective completes only when every rank joins it: the %d waiting ranks wait for %s", len(waiting), strings.Join(names, " and ")))

	// Evidence: the stragglers' stacks, one stack per group of waiters.
	for _, s := range stragglers {
		if s.lead != nil {
			d.Evidence = append(d.Evidence, fmt.Sprintf("rank %s, %s", s.name(), stackLineN(s.lead, 10)))
		}
	}
	seen := map[string]bool{}
	for _, w := range waiting {
		if w.lead == nil {
			continue
		}
		k := stacks.StackKey(w.lead.Stack, stacks.PlaceKey)
		if seen[k] {
			continue
		}
		seen[k] = true
		d.Evidence = append(d.Evidence, fmt.Sprintf("rank %s, %s", w.name(), stackLineN(w.lead, min(w.collAt+2, 12))))
	}
	d.Evidence = append(d.Evidence, "ranks grouped by the outermost collective frame of their main thread (as STAT groups stack traces)")

	// Confidence: several samples that agree make it a hang; a straggler
	// whose stack moves is slow rather than stuck.
	steady := a.Snap.Samples >= 2
	for _, r := range append(append([]rankView(nil), waiting...), stragglers...) {
		if r.lead == nil {
			continue
		}
		f := a.samplesOf(r.lead)
		if f.changed {
			steady = false
		}
	}
	for _, s := range stragglers {
		if stragglerWorks(a, s) {
			d.Confidence = Low
			d.Chain = append(d.Chain, fmt.Sprintf("rank %s is still working (its stack changes between samples): it may be slow rather than stuck", s.name()))
		}
	}
	if !slices.ContainsFunc(stragglers, func(r rankView) bool { return !stragglerWorks(a, r) }) {
		// Every rank outside the collective is working toward it: the
		// job is slow or progressing, which is no deadlock.
		d.Deadlock = false
	}
	if steady && d.Confidence == Medium {
		d.Confidence = High
	}
	if a.Snap.Samples < 2 {
		d.Evidence = append(d.Evidence, "one sample per rank: ranks caught in a collective they were about to leave look the same; take two or more samples to confirm")
	}

	var refs []ThreadRef
	for _, r := range append(append([]rankView(nil), stragglers...), waiting...) {
		if r.lead != nil {
			refs = append(refs, ThreadRef{Proc: r.p, Thread: r.lead})
		} else {
			d.Pids = appendNew(d.Pids, r.p.Pid)
		}
	}
	leadless := d.Pids // the ranks without a lead thread first, as before
	d.name(refs...)
	for _, p := range d.Pids {
		leadless = appendNew(leadless, p)
	}
	d.Pids = leadless
	if len(stragglers) == 1 {
		s := stragglers[0]
		d.Fix = fmt.Sprintf("Find why rank %s does not reach `%s`: it is in %s; diagnose that rank on its own. "+
			"Look for a collective skipped or issued in a different order on that rank (a branch that differs between ranks, an early return, "+
			"an exception caught on one rank), a wait on a device, fence or I/O that never completes, or a crash. NCCL_DEBUG=INFO and "+
			"TORCH_DISTRIBUTED_DEBUG=DETAIL show which collective each rank issued.", s.name(), coll, s.where())
		d.Hints = append(d.Hints, attachHint(s.p.Pid, "to diagnose that rank on its own"))
	}
	return d
}
