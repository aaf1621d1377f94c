package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// designIDs are the stable ids of DESIGN.md's signature catalogue.
var designIDs = set(
	"lock-order-cycle", "self-deadlock", "fork-inherited-lock", "orphaned-lock", "spin-wait-starved",
	"fork-after-accelerator-init", "collective-straggler", "waiting-on-process", "signal-handler-reentry",
	"loader-lock", "gil-deadlock", "lost-wakeup", "stopped", "progressing", "io-wait", "sleeping",
	// Go (go_*.go)
	"channel-no-partner", "waitgroup-never-done", "all-goroutines-asleep", "goroutine-leak",
)

func TestCatalogueEntries(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range Catalogue {
		if !designIDs[s.ID] {
			t.Errorf("%q is not an id of the design's catalogue", s.ID)
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
	for _, id := range []string{"lock-order-cycle", "self-deadlock", "fork-inherited-lock", "orphaned-lock",
		"signal-handler-reentry", "loader-lock", "lost-wakeup"} {
		if !seen[id] {
			t.Errorf("%q is not registered", id)
		}
	}
}

func TestDiagnoseEmpty(t *testing.T) {
	for _, snap := range []*stacks.Snapshot{live(), pasted(proc(1)), live(proc(1, thread(1, "idle")))} {
		if ds := Diagnose(snap, Options{}); len(ds) != 0 {
			t.Errorf("empty snapshot: %s", dump(ds))
		}
	}
}

func TestDiagnoseRanksForkBeforeLostWakeup(t *testing.T) {
	snap := forkChild(nil)
	snap.Processes = append([]*stacks.Process{lostWakeup()}, snap.Processes...)
	ds := Diagnose(snap, Options{})
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
		ds := Diagnose(snap, Options{})
		if len(ds) == 0 || ds[0].ID != want {
			t.Errorf("%s: got %s", want, dump(ds))
		}
	}
}
