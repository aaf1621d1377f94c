package heuristics_test

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// TestJavaCycleWords: a Java monitor cycle read from a pasted jstack (a
// real paste, testdata/dumps/jstack/README.md) is told in Java's words:
// the fix takes the monitors in one order or uses Lock.tryLock, not
// std::scoped_lock or pthread_mutex_trylock, and the evidence gives the
// holder the dump named, not a lock word that a paste does not carry.
func TestJavaCycleWords(t *testing.T) {
	for _, name := range []string{"markdown_headings_pasted.txt", "monitor_abba.txt"} {
		t.Run(name, func(t *testing.T) {
			snap := parseJstackDump(t, name)
			ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
			if len(ds) == 0 || ds[0].ID != "lock-order-cycle" {
				t.Fatalf("diagnoses %+v: want lock-order-cycle first", ds)
			}
			d := ds[0]
			if !strings.Contains(d.Fix, "tryLock") || strings.Contains(d.Fix, "pthread") || strings.Contains(d.Fix, "std::") {
				t.Errorf("fix %q: want Java's words", d.Fix)
			}
			for _, e := range d.Evidence {
				if strings.Contains(e, "lock word 0") {
					t.Errorf("evidence %q: a pasted dump has no lock word", e)
				}
			}
			for _, r := range d.Refs {
				if strings.Contains(r, "pthread") {
					t.Errorf("reference %s: a Java cycle", r)
				}
			}
		})
	}
}

// TestJavaCycleJSON: a Java thread's lock wait is its Java facts in the
// model (Runtime, no native Wait), and hangdoc/v1 writes it as
// wait.mutex as it always did: the document read back names the same
// cycle between the same threads.
func TestJavaCycleJSON(t *testing.T) {
	snap := parseJstackDump(t, "monitor_abba.txt")
	for _, th := range snap.Processes[0].Threads {
		if th.Wait != nil || th.Runtime == nil || th.Runtime.Kind != stacks.KindJava {
			t.Fatalf("thread %q: wait %+v, runtime %+v: want Java facts only", th.Name, th.Wait, th.Runtime)
		}
	}
	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	back, _, err := stacks.ParseHangdocJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	want := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	got := heuristics.Diagnose(back, heuristics.Options{}).Diagnoses
	if len(want) == 0 || len(got) == 0 || want[0].ID != "lock-order-cycle" || got[0].ID != want[0].ID ||
		!slices.Equal(got[0].Tids, want[0].Tids) || got[0].Confidence != want[0].Confidence {
		t.Errorf("read back: %+v\nwant %+v", got, want)
	}
}

// parseJstackDump reads a stored jstack dump (testdata/dumps/jstack).
func parseJstackDump(t *testing.T, name string) *stacks.Snapshot {
	t.Helper()
	f, err := os.Open("../testdata/dumps/jstack/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snap, _, _, err := stacks.Parse(f, "")
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
