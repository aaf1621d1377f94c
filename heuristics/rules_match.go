package heuristics

// The matching engine of the known-issue rules: which rules are in force,
// and how a rule's conditions are tested against a diagnosis and the
// threads and modules it names. The rules file format, its loading and
// validation are in rules.go.

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// RulesInForce are the built-in rules with the user's added, a user rule
// with a built-in's id replacing it in place: the rules Diagnose applies.
func RulesInForce(user []Rule) []Rule { return mergeRules(append(builtinRules(), user...)) }

// mergeRules lets a later rule replace an earlier one with the same id
// (a user's --rules file overrides a built-in), in the earlier's place.
func mergeRules(rules []Rule) []Rule {
	at := map[string]int{}
	var out []Rule
	for _, r := range rules {
		if i, ok := at[r.ID]; ok {
			out[i] = r
			continue
		}
		at[r.ID] = len(out)
		out = append(out, r)
	}
	return out
}

// refine adds known issues to the diagnoses the rules match. The first
// matching rule wins; a diagnosis a matcher already refined is left as
// it is.
func refine(a *analysis, ds []Diagnosis, rules []Rule) []Diagnosis {
	rules = mergeRules(rules)
	for i := range ds {
		d := &ds[i]
		if d.KnownIssue != nil {
			continue
		}
		for j := range rules {
			r := &rules[j]
			why, ok := r.match(a, d)
			if !ok {
				continue
			}
			d.KnownIssue = &KnownIssue{ID: r.ID, Title: r.Title, Fix: r.Fix, Links: append([]string(nil), r.Links...), Explain: r.Explain}
			if !r.KeepFix {
				d.Fix = r.Fix
			}
			for _, l := range r.Links {
				if !containsString(d.Refs, l) {
					d.Refs = append(d.Refs, l)
				}
			}
			d.Evidence = append(d.Evidence, fmt.Sprintf("known issue `%s` matched: %s", r.ID, why))
			d.Summary += fmt.Sprintf(" (known issue `%s`)", r.ID)
			break
		}
	}
	return ds
}

func containsString(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

// match says whether the rule applies to a diagnosis, and why.
func (r *Rule) match(a *analysis, d *Diagnosis) (string, bool) {
	if !containsString(r.Base, d.ID) {
		return "", false
	}
	re, _, err := r.compile()
	if err != nil {
		return "", false
	}
	procs := a.diagProcs(d)
	var named []ThreadRef
	for _, tid := range d.Tids {
		if ref, ok := a.DiagThread(d, tid); ok {
			named = append(named, ref)
		}
	}
	if len(named) == 0 {
		for _, p := range procs {
			for _, t := range p.Threads {
				named = append(named, ThreadRef{Proc: p, Thread: t})
			}
		}
	}
	var why []string
	if r.Forked {
		ok := false
		for _, p := range procs {
			if p.Fork != nil {
				ok = true
				why = append(why, fmt.Sprintf("pid %d is a forked child of %d", p.Pid, p.Fork.ParentPid))
				break
			}
			// No lineage read (a dump): the frames may show the child's
			// side of fork().
			if ev := forkChildSide(p); ev.ok && !a.Snap.Evidence.Lineage {
				ok = true
				why = append(why, fmt.Sprintf("pid %d is a forked child by its frames (`%s`)", p.Pid, ev.frame))
				break
			}
		}
		if !ok {
			return "", false
		}
	}
	if len(re.frames) > 0 {
		ok := false
		for _, ref := range named {
			if allMatchFrames(re.frames, ref.Thread) {
				ok = true
				why = append(why, fmt.Sprintf("frames %s in %s", quoteAll(r.Frames), whoThread(ref.Thread)))
				break
			}
		}
		if !ok {
			return "", false
		}
	}
	for i, x := range re.anyFrames {
		ref, ok := anyThreadFrame(x, procs)
		if !ok {
			return "", false
		}
		why = append(why, fmt.Sprintf("frame `%s` in %s", r.AnyFrames[i], whoThread(ref)))
	}
	for i, x := range re.modules {
		m, ok := anyModule(x, procs)
		if !ok {
			return "", false
		}
		why = append(why, fmt.Sprintf("module `%s` (%s)", m, r.Modules[i]))
	}
	for i, x := range re.cmdline {
		ok := false
		for _, p := range procs {
			cmd := strings.Join(p.Cmdline, " ")
			if cmd == "" {
				cmd = p.Exe
			}
			if x.MatchString(cmd) {
				ok = true
				why = append(why, fmt.Sprintf("command line of pid %d (%s)", p.Pid, r.Cmdline[i]))
				break
			}
		}
		if !ok {
			return "", false
		}
	}
	for i, x := range re.locks {
		ok := false
		for _, ref := range named {
			for _, sym := range waitLockSymbols(ref.Thread) {
				if x.MatchString(sym) {
					ok = true
					why = append(why, fmt.Sprintf("lock `%s` (%s)", sym, r.Locks[i]))
					break
				}
			}
			if ok {
				break
			}
		}
		if !ok {
			return "", false
		}
	}
	return strings.Join(why, "; "), true
}

// threadFrames lists every frame of a thread across its samples.
func threadFrames(t *stacks.Thread) [][]stacks.Frame {
	out := [][]stacks.Frame{t.Stack}
	for _, s := range t.Samples() {
		out = append(out, s.Stack)
	}
	return out
}

func threadWaits(t *stacks.Thread) []*stacks.Wait {
	var out []*stacks.Wait
	if w := threadWait(t); w != nil {
		out = append(out, w)
	}
	for _, s := range t.Samples() {
		if s.Wait != nil {
			out = append(out, s.Wait)
		}
	}
	return out
}

// waitLockSymbols are the symbols of the locks a thread waits on: its
// waits' mutexes (a live attach reads them), else the lock its wait
// frames' arguments name (a pasted gdb dump: `__lock (l=0x… <sym>)`).
func waitLockSymbols(t *stacks.Thread) []string {
	var out []string
	for _, w := range threadWaits(t) {
		if w.Mutex != nil && w.Mutex.Symbol != "" {
			out = append(out, w.Mutex.Symbol)
		}
	}
	if l, _, ok := waitArgLock(t); ok && l.Symbol != "" {
		out = append(out, l.Symbol)
	}
	return out
}

func frameMatches(x *regexp.Regexp, f stacks.Frame) bool {
	return f.Func != "" && (x.MatchString(f.Func) || x.MatchString(stacks.CallName(f.Func)))
}

// allMatchFrames: every regexp matches a frame of one of the thread's
// stacks (the same sample).
func allMatchFrames(res []*regexp.Regexp, t *stacks.Thread) bool {
	for _, st := range threadFrames(t) {
		all := len(st) > 0
		for _, x := range res {
			hit := false
			for _, f := range st {
				if frameMatches(x, f) {
					hit = true
					break
				}
			}
			if !hit {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func anyThreadFrame(x *regexp.Regexp, procs []*stacks.Process) (*stacks.Thread, bool) {
	for _, p := range procs {
		for _, t := range p.Threads {
			for _, st := range threadFrames(t) {
				for _, f := range st {
					if frameMatches(x, f) {
						return t, true
					}
				}
			}
		}
	}
	return nil, false
}

func anyModule(x *regexp.Regexp, procs []*stacks.Process) (string, bool) {
	for _, p := range procs {
		for _, m := range p.Modules {
			if x.MatchString(m.Path) {
				return m.Path, true
			}
		}
		if p.Fork != nil {
			for _, m := range p.Fork.ParentModules {
				if x.MatchString(m) {
					return m, true
				}
			}
		}
		for _, t := range p.Threads {
			for _, st := range threadFrames(t) {
				for _, f := range st {
					if f.Module != "" && x.MatchString(f.Module) {
						return f.Module, true
					}
				}
			}
		}
	}
	return "", false
}

func quoteAll(xs []string) string {
	var out []string
	for _, x := range xs {
		out = append(out, "`"+x+"`")
	}
	return strings.Join(out, ", ")
}
