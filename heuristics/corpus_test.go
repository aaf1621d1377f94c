package heuristics_test

// The corpus of real reports (testdata/corpus, see its README): hang
// reports pasted in public trackers and Q&A threads, each with its URL and
// the cause its maintainers named. Every report goes the way `hangdoc
// analyze` takes it (format detected from the text, then Diagnose) and is
// scored top-1: the first diagnosis must carry the expected id; a control
// (not a deadlock) must get no deadlock claim at all, as the exit code
// would say. The floors hold what the corpus scores today, so a change that
// loses a report fails; raise them when a change wins some.

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

const corpusDir = "../testdata/corpus"

var corpusTable = flag.Bool("corpus-table", false, "TestCorpus: log one line per report (detected format, threads, frames, skipped lines, verdict)")

// Floors measured on this corpus; see TestCorpus.
const (
	corpusFloorTop1     = 149 // reports whose top verdict is right (measured 149/175: a lone waiter for a shared library's own lock, that library entered once on the stack shown, is held elsewhere: a futex wait under a frame cut inside a lock function's name (std Mutex::) is a lock wait: CPython's C-API lock acquire (PyThread_acquire_lock over the timed one) whose taker is cut, in a headerless bt, is a fork child's: a jemalloc arena bin lock, which its fork handlers re-initialise, is no fork child's: a join pasted alone, the joined thread not in the paste, is a hedged lock-and-join cycle: a SIGQUIT dump whose goroutines all wait on channels, none runs or sleeps on a timer, names the send (channel-no-partner): a paste that starts at a locker class's constructor (the futex frames trimmed) is a lock wait: a lone allocator-lock waiter of a multi-threaded process cut above its first entry is a handler's re-entry, hedged; a lone cut goroutine locker in a fragment, a reader behind a writer beside another lock waiter, a handler waiting for its program's own spin lock over a cut, AppScope's internal musl lock after fork (a rule's locks read a paste's lock argument), a re-entered asker whose lines are in headers, gdb info line frames, parking_lot_core's word lock, a debug=1 profile's hidden runtime frames)
	corpusMaxFalseClaim = 0   // controls that get a deadlock claim (0 since 1af509c)
	// high confidence must be right 19 times in 20 (DESIGN.md)
	corpusHighWrongMax = 0.05
)

// corpusMeta is a report's meta.json.
type corpusMeta struct {
	URL      string `json:"url"`
	Title    string `json:"title"`
	Cause    string `json:"cause"`
	Category string `json:"category"`
	Expected string `json:"expected"` // a signature id; for a control the verdict one would hope for
	Deadlock bool   `json:"deadlock"` // false: a control, no deadlock may be claimed
	Format   string `json:"format"`
	Language string `json:"language"`
	Partial  bool   `json:"partial"`
	// Blind is hangdoc's verdict on the report when it was added, before
	// any rule was written or tuned on it: "right" or "wrong: <verdict>".
	// Empty for reports hangdoc had already seen. It measures how well the
	// rules generalise to reports they were not made from.
	Blind string `json:"blind"`
}

// corpusResult is one report's outcome.
type corpusResult struct {
	name       string
	meta       corpusMeta
	parseErr   error
	format     string // detected
	threads    int
	frames     int
	skipped    int
	top        *heuristics.Diagnosis
	falseClaim bool // a control with a deadlock claim
	right      bool
}

func loadCorpus(t *testing.T) []corpusResult {
	t.Helper()
	metas, err := filepath.Glob(filepath.Join(corpusDir, "*", "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(metas) == 0 {
		t.Fatalf("no reports under %s", corpusDir)
	}
	sort.Strings(metas)
	var out []corpusResult
	seen := map[string]string{} // dump text -> report that holds it
	for _, mp := range metas {
		dir := filepath.Dir(mp)
		r := corpusResult{name: filepath.Base(dir)}
		if dump, err := os.ReadFile(filepath.Join(dir, "dump.txt")); err == nil {
			if other, dup := seen[string(dump)]; dup {
				t.Errorf("%s: the same dump as %s (one report, one folder)", r.name, other)
			}
			seen[string(dump)] = r.name
		}
		raw, err := os.ReadFile(mp)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &r.meta); err != nil {
			t.Fatalf("%s: %v", mp, err)
		}
		if r.meta.URL == "" || r.meta.Cause == "" || r.meta.Category == "" || r.meta.Format == "" {
			t.Errorf("%s: url, cause, category and format are required", mp)
		}
		if r.meta.Deadlock && heuristics.Lookup(r.meta.Expected) == nil {
			t.Errorf("%s: expected %q is not a signature id (hangdoc signatures)", mp, r.meta.Expected)
		}
		r.diagnose(t, filepath.Join(dir, "dump.txt"))
		out = append(out, r)
	}
	return out
}

// diagnose reads the dump as `hangdoc analyze FILE` does and scores it.
func (r *corpusResult) diagnose(t *testing.T, path string) {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snap, skipped, format, err := stacks.Parse(f, "")
	r.format, r.skipped = format, len(skipped)
	if err != nil {
		r.parseErr = err
		return
	}
	for _, p := range snap.Processes {
		r.threads += len(p.Threads)
		for _, th := range p.Threads {
			r.frames += len(th.Stack)
		}
	}
	diags := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	if len(diags) > 0 {
		r.top = &diags[0]
	}
	if !r.meta.Deadlock {
		for _, d := range diags {
			if d.Deadlock {
				r.falseClaim = true
			}
		}
		r.right = !r.falseClaim
		return
	}
	r.right = r.top != nil && r.top.ID == r.meta.Expected
}

func (r corpusResult) got() string {
	switch {
	case r.parseErr != nil:
		return "parse error: " + r.parseErr.Error()
	case r.top == nil:
		return "no verdict"
	}
	return fmt.Sprintf("%s (%s)", r.top.ID, r.top.Confidence)
}

// tally counts right answers per key.
type tally map[string][2]int

func (t tally) add(key string, right bool) {
	c := t[key]
	c[1]++
	if right {
		c[0]++
	}
	t[key] = c
}

func (t tally) line(title string) string {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, t[k][0], t[k][1]))
	}
	return title + ": " + strings.Join(parts, ", ")
}

func TestCorpus(t *testing.T) {
	results := loadCorpus(t)
	var right, controls, falseClaims int
	byConf, byCat, byFormat := tally{}, tally{}, tally{}
	var misses, parseFailures []string
	var blind, blindRight, blindNow int // reports added blind (corpusMeta.Blind)
	for _, r := range results {
		if r.right {
			right++
		}
		if !r.meta.Deadlock {
			controls++
			if r.falseClaim {
				falseClaims++
			}
		}
		conf := "none"
		if r.top != nil {
			conf = r.top.Confidence
		}
		byConf.add(conf, r.right)
		cat := r.meta.Category
		if !r.meta.Deadlock {
			cat = "control"
		}
		byCat.add(cat, r.right)
		byFormat.add(r.meta.Format, r.parseErr == nil)
		if r.parseErr != nil {
			parseFailures = append(parseFailures, fmt.Sprintf("%s (%s): %v", r.name, r.meta.Format, r.parseErr))
		}
		if *corpusTable {
			t.Logf("report %s: %s as %s, %d threads, %d frames, %d skipped: expected %s, got %s", r.name, r.meta.Format, r.format, r.threads, r.frames, r.skipped, r.meta.Expected, r.got())
		}
		if r.meta.Blind != "" {
			blind++
			if r.meta.Blind == "right" {
				blindRight++
			}
			if r.right {
				blindNow++
			}
		}
		if !r.right {
			misses = append(misses, fmt.Sprintf("%s: expected %s, got %s", r.name, r.meta.Expected, r.got()))
		}
	}
	t.Logf("corpus: %d/%d top-1, %d false deadlock claims on controls (%d controls)", right, len(results), falseClaims, controls)
	t.Logf("blind: %d/%d right when added, before any rule was tuned on them (%d/%d now)", blindRight, blind, blindNow, blind)
	t.Log(byConf.line("top right by confidence"))
	t.Log(byCat.line("top right by category"))
	t.Log(byFormat.line("parsed by format"))
	for _, m := range parseFailures {
		t.Logf("parse failure: %s", m)
	}
	for _, m := range misses {
		t.Logf("miss: %s", m)
	}
	if right < corpusFloorTop1 {
		t.Errorf("corpus: %d/%d top-1 is below the floor of %d", right, len(results), corpusFloorTop1)
	}
	if falseClaims > corpusMaxFalseClaim {
		t.Errorf("corpus: %d false deadlock claims on controls, at most %d allowed", falseClaims, corpusMaxFalseClaim)
	}
}

// corpusHighWrongKnown are the reports whose high-confidence verdict is
// wrong today (measured when the reports were added): they are reported,
// not counted, so that the check below catches a new one. Remove a name
// when its verdict is fixed.
var corpusHighWrongKnown = map[string]bool{
	// empty since 737a8f0: the three runtime "all goroutines are asleep"
	// dumps that read all-goroutines-asleep now get channel-no-partner
}

// TestCorpusHighConfidence holds the promise of DESIGN.md: a high
// confidence top verdict is right at least 19 times in 20.
func TestCorpusHighConfidence(t *testing.T) {
	var high, wrong int
	var wrongs []string
	for _, r := range loadCorpus(t) {
		if r.top == nil || r.top.Confidence != heuristics.High {
			continue
		}
		high++
		if r.right {
			if corpusHighWrongKnown[r.name] {
				t.Logf("%s is right now: remove it from corpusHighWrongKnown", r.name)
			}
			continue
		}
		line := fmt.Sprintf("%s: expected %s, got %s", r.name, r.meta.Expected, r.got())
		if corpusHighWrongKnown[r.name] {
			t.Logf("known wrong at high confidence: %s", line)
			continue
		}
		wrong++
		wrongs = append(wrongs, line)
	}
	t.Logf("corpus: %d high-confidence verdicts, %d wrong besides the %d known", high, wrong, len(corpusHighWrongKnown))
	if high > 0 && float64(wrong) > corpusHighWrongMax*float64(high) {
		t.Errorf("corpus: %d of %d high-confidence verdicts are wrong (more than %.0f%%):\n%s", wrong, high, corpusHighWrongMax*100, strings.Join(wrongs, "\n"))
	}
}
