package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// An initialiser that reaches its own pthread_once through another
// function: the asker (helper) is on the stack once, the once twice (run
// here: /tmp once.c, `void init(void){ helper(); }`, `void helper(void){
// pthread_once(&o, init); }`, attached live; frames as hangdoc read them).
func TestOnceReenteredThroughInitialiser(t *testing.T) {
	st := nbFrames("futex_wait", "futex_wait_simple", "__pthread_once_slow", "helper", "init", "__pthread_once_slow", "main", "__libc_start_call_main")
	snap := nbSnap(true, nbProc(10, nbThread(10, "once", nbTimes(3, nbBlocked("futex", st))...)))
	ds := Diagnose(snap, Options{}).Diagnoses
	if len(ds) == 0 || ds[0].ID != "self-deadlock" || ds[0].Confidence != Medium {
		t.Fatalf("got %v", ds)
	}
	text := strings.Join(ds[0].Chain, "\n")
	if !strings.Contains(text, "inside one at #5") || !strings.Contains(ds[0].Fix, "its own initialiser") {
		t.Errorf("chain %q fix %q", text, ds[0].Fix)
	}

	// Silent: a once waiter not inside a once itself waits for another
	// thread's initialiser (which runs): no re-entry is claimed.
	waiter := nbFrames("futex_wait", "futex_wait_simple", "__pthread_once_slow", "helper", "worker", "start_thread")
	initer := func(ticks uint64, leaf string) stacks.Sample {
		return nbRunning(ticks, nbFrames(leaf, "init", "__pthread_once_slow", "main"))
	}
	snap = nbSnap(true, nbProc(10,
		nbThread(10, "once", initer(0, "load"), initer(40, "parse"), initer(40, "load")),
		nbThread(11, "worker", nbTimes(3, nbBlocked("futex", waiter))...)))
	for _, d := range Diagnose(snap, Options{}).Diagnoses {
		if d.Deadlock || strings.Contains(strings.Join(d.Chain, "\n"), "re-entered its own once") {
			t.Errorf("a wait for another thread's initialiser: %s %s", d.ID, d.Summary)
		}
	}
}
