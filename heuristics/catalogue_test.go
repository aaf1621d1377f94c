package heuristics

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// designIDs are the stable ids of docs/DESIGN.md's signature catalogue
// table, read from the document itself.
func designIDs(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../docs/DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "## Signature catalogue")
	if !ok {
		t.Fatal("docs/DESIGN.md has no Signature catalogue section")
	}
	table, _, _ = strings.Cut(table, "\n## ")
	ids := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z-]+)` \\|").FindAllStringSubmatch(table, -1) {
		ids[m[1]] = true
	}
	if len(ids) < 10 {
		t.Fatalf("only %d ids in docs/DESIGN.md's catalogue table", len(ids))
	}
	return ids
}

func TestCatalogueEntries(t *testing.T) {
	design := designIDs(t)
	seen := map[string]bool{}
	for _, s := range Catalogue {
		if !design[s.ID] {
			t.Errorf("%q is not in docs/DESIGN.md's catalogue table", s.ID)
		}
		if seen[s.ID] {
			t.Errorf("%q registered twice", s.ID)
		}
		seen[s.ID] = true
		if s.Title == "" || s.Explain == "" || s.Fix == "" || s.Match == nil || s.Rank == 0 {
			t.Errorf("%q: title, explanation, fix, matcher and rank are all needed: %+v", s.ID, s)
		}
		if Lookup(s.ID) != s {
			t.Errorf("Lookup(%q) does not find it", s.ID)
		}
	}
	for id := range design {
		if !seen[id] {
			t.Errorf("docs/DESIGN.md's catalogue names %q, which is not registered", id)
		}
	}
}

func TestDiagnoseEmpty(t *testing.T) {
	for _, snap := range []*stacks.Snapshot{live(), pasted(proc(1)), live(proc(1, thread(1, "idle")))} {
		if ds := Diagnose(snap, Options{}).Diagnoses; len(ds) != 0 {
			t.Errorf("empty snapshot: %s", dump(ds))
		}
	}
}

func TestDiagnoseRanksForkBeforeLostWakeup(t *testing.T) {
	snap := forkChild(nil)
	snap.Processes = append([]*stacks.Process{lostWakeup()}, snap.Processes...)
	ds := Diagnose(snap, Options{}).Diagnoses
	ids := map[string]int{}
	for i, d := range ds {
		if _, ok := ids[d.ID]; !ok {
			ids[d.ID] = i
		}
	}
	f, okF := ids["fork-inherited-lock"]
	l, okL := ids["lost-wakeup"]
	if !okF || !okL || f > l || ds[0].ID != "fork-inherited-lock" {
		t.Errorf("want fork-inherited-lock first, then lost-wakeup: %v", ds)
	}
	if ds[0].Fix == "" || ds[0].Title == "" {
		t.Errorf("Diagnose fills title and fix from the catalogue: %+v", ds[0])
	}
}

// Every lock diagnosis, through Diagnose, on its own shape: the top one
// is the signature the shape is about.
func TestDiagnoseTopLockVerdict(t *testing.T) {
	cases := map[string]*stacks.Snapshot{
		"self-deadlock":          openblasRelock(0),
		"fork-inherited-lock":    forkChild(nil),
		"orphaned-lock":          orphan(801, 0),
		"lock-order-cycle":       live(abba(11, 12)),
		"loader-lock":            loaderDeadlock(true),
		"lost-wakeup":            live(lostWakeup()),
		"signal-handler-reentry": live(proc(50, on(thread(51, "victim", mutexFrames("log_event", "on_usr1", "<signal>", "log_event")...), lockWait(0x10, 51, 0)))),
	}
	for want, snap := range cases {
		ds := Diagnose(snap, Options{}).Diagnoses
		if len(ds) == 0 || ds[0].ID != want {
			t.Errorf("%s: got %s", want, dump(ds))
		}
	}
}

// Each signature declares the evidence it needs with itself, in words
// noteAbsentEvidence can say; derived verdicts run after the roots.
func TestSignaturesDeclareTheirNeeds(t *testing.T) {
	for _, s := range Catalogue {
		for _, n := range s.Needs {
			if evidenceWords[n] == "" {
				t.Errorf("%s needs %q, which no snapshot field says", s.ID, n)
			}
		}
	}
	if s := Lookup("self-deadlock"); s == nil || len(s.Needs) == 0 {
		t.Error("self-deadlock declares no need for mutex owners")
	}
	seenDerived := false
	for _, s := range runOrder() {
		if s.Derived {
			seenDerived = true
		} else if seenDerived {
			t.Errorf("root signature %s runs after a derived one", s.ID)
		}
	}
}
