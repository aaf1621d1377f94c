package heuristics_test

import (
	"os"
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
			f, err := os.Open("../testdata/dumps/jstack/" + name)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			snap, _, _, err := stacks.Parse(f, "")
			if err != nil {
				t.Fatal(err)
			}
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
