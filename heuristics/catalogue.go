package heuristics

import (
	"sort"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// Signature is one catalogue entry: a stable id, what it names, the fix,
// and a matcher that reads the analysis and returns its diagnoses.
type Signature struct {
	ID      string
	Title   string
	Explain string // for `hangdoc signatures`: what it is and why it hangs
	Fix     string // the generic fix; a diagnosis may say it more precisely
	// Rank orders diagnoses: lower is more specific (a fork-inherited
	// lock explains the cycle-free wait better than lost-wakeup does).
	Rank  int
	Match func(a *analysis) []Diagnosis
	// Needs is the evidence the verdict rests on when a live attach reads
	// it ("owners", "lineage", "cpu"): a snapshot without it gets at most
	// medium and a line saying what is missing and how to get it.
	Needs []string
	// Derived marks a verdict that reads other signatures' findings
	// (waiting-on-process links to the stuck process's finding, the calm
	// verdicts stand back where a deadlock was found): it runs after the
	// root signatures, whose findings it reads through their accessors.
	Derived bool
}

// Catalogue lists every built-in signature, most specific first. Each
// entry lives in a file of its own with its tests.
var Catalogue []*Signature

// register adds a signature; each entry's file calls it from init.
func register(s *Signature) { Catalogue = append(Catalogue, s) }

// Lookup returns the signature with the given id, or nil.
func Lookup(id string) *Signature {
	for _, s := range Catalogue {
		if s.ID == id {
			return s
		}
	}
	return nil
}

// Options tune Diagnose.
type Options struct {
	// Rules are known-issue rules besides the built-in ones (--rules FILE).
	Rules []Rule
}

// Diagnose runs the catalogue over a snapshot and returns its result:
// the diagnoses, the most specific and most certain first, and the
// wait-for graph they were read from. A snapshot that is not stuck gets
// no deadlock claim.
func Diagnose(snap *stacks.Snapshot, opts Options) *Result {
	a := newAnalysis(snap)
	rules := RulesInForce(opts.Rules)
	a.rules = rules
	var out []Diagnosis
	for _, s := range runOrder() {
		for _, d := range s.Match(a) {
			if d.ID == "" {
				d.ID = s.ID
			}
			if d.Title == "" {
				d.Title = s.Title
			}
			if d.Fix == "" {
				d.Fix = strings.Join(strings.Fields(s.Fix), " ") // the catalogue wraps its prose; a fix is one line
			}
			out = append(out, d)
		}
	}
	out = refine(a, out, rules)
	addPythonSites(a, out)
	noteAbsentEvidence(a, out)
	noteUnreadGoroutines(a, out)
	rank(out)
	return a.result(out)
}

// runOrder is the catalogue with root signatures first, then derived
// verdicts, each by rank.
func runOrder() []*Signature {
	c := sortedCatalogue()
	sort.SliceStable(c, func(i, j int) bool { return !c[i].Derived && c[j].Derived })
	return c
}

func sortedCatalogue() []*Signature {
	c := append([]*Signature(nil), Catalogue...)
	sort.SliceStable(c, func(i, j int) bool { return c[i].Rank < c[j].Rank })
	return c
}

// rank puts deadlocks before verdicts that are not, then certainty, then
// the catalogue's order of specificity.
func rank(ds []Diagnosis) {
	order := map[string]int{}
	for i, s := range sortedCatalogue() {
		order[s.ID] = i
	}
	conf := map[string]int{High: 0, Medium: 1, Low: 2}
	sort.SliceStable(ds, func(i, j int) bool {
		a, b := ds[i], ds[j]
		if a.Deadlock != b.Deadlock {
			return a.Deadlock
		}
		if (a.KnownIssue != nil) != (b.KnownIssue != nil) {
			return a.KnownIssue != nil
		}
		if conf[a.Confidence] != conf[b.Confidence] {
			return conf[a.Confidence] < conf[b.Confidence]
		}
		return order[a.ID] < order[b.ID]
	})
}
