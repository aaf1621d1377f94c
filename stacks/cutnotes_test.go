package stacks

import (
	"strings"
	"testing"
)

// What a paste cut, read back from the parser's own notes.
func TestCutNotes(t *testing.T) {
	dump := `Thread 2 (Thread 0x7f5e1b7fe640 (LWP 4712) "worker"):
#3  0x000055d0c0a011c9 in worker (arg=0x0) at abba.c:21
#4  0x00007f5e1c294ac3 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442

Thread 1 (Thread 0x7f5e1c5a1740 (LWP 4711) "main"):
#0  0x00007f5e1c291117 in __futex_abstimed_wait_common64 (private=128, cancel=true, abstime=0x0, op=265, expected=4712, futex_word=0x7f5e1b7fe910) at ./nptl/futex-internal.c:57
#1  0x00007f5e1c29d6e4 in __GI___pthread_clockjoin_ex (threadid=140042`
	snap, _, err := ParseGDB(strings.NewReader(dump))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*Thread{}
	for _, th := range snap.Processes[0].Threads {
		byName[th.Name] = th
	}
	w, m := byName["worker"], byName["main"]
	if w == nil || m == nil {
		t.Fatalf("threads %+v", snap.Processes[0].Threads)
	}
	if !TopCut(w) || TopCut(m) {
		t.Errorf("TopCut: worker %v (notes %q), main %v; want true, false", TopCut(w), w.Notes, TopCut(m))
	}
	if StackCut(w) || !StackCut(m) {
		t.Errorf("StackCut: worker %v, main %v (notes %q); want false, true", StackCut(w), StackCut(m), m.Notes)
	}
}
