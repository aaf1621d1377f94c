package stacks

import (
	"slices"
	"strings"
	"testing"
)

// Written by hand in IntelliJ IDEA's thread-dump form (as in
// testdata/dumps/jstack/intellij_pasted.txt): the paste holds one
// thread, which names the thread it waits for and the one it blocks.
// The named threads that are not in the paste become threads without a
// stack, and the one the waiter blocks waits for a lock the waiter holds.
func TestJstackAbsentOwners(t *testing.T) {
	const paste = `"worker@12" prio=5 tid=0x7 nid=NA waiting for monitor entry
  java.lang.Thread.State: BLOCKED
	 blocks flusher@20
	 waiting for flusher@20 to release lock on <0x4d2> (a com.example.Cache)
	  at com.example.Cache.put(Cache.java:88)
	  at com.example.Worker.run(Worker.java:31)
`
	snap, _, err := ParseJstack(strings.NewReader(paste))
	if err != nil {
		t.Fatal(err)
	}
	ts := snap.Processes[0].Threads
	if len(ts) != 2 {
		t.Fatalf("%d threads, want the worker and the absent flusher", len(ts))
	}
	w, f := ts[0], ts[1]
	if f.Name != "flusher@20" || len(f.Stack) != 0 || len(f.Notes) == 0 || f.Tid == w.Tid {
		t.Errorf("absent owner read as %+v", f)
	}
	if r := w.Runtime; r == nil || r.Object != 0x4d2 || r.Holder != f.Tid {
		t.Errorf("worker's Java facts %+v, want 0x4d2 held by %d", r, f.Tid)
	}
	if r := f.Runtime; r == nil || r.Object == 0 || r.Holder != w.Tid || !slices.Contains(w.Runtime.Held, r.Object) {
		t.Errorf("flusher's Java facts %+v, want a lock the worker %d holds", r, w.Tid)
	}

	// Without "blocks" the absent owner waits for nothing the dump says.
	snap, _, err = ParseJstack(strings.NewReader(strings.Replace(paste, "\t blocks flusher@20\n", "", 1)))
	if err != nil {
		t.Fatal(err)
	}
	if f := snap.Processes[0].Threads[1]; f.Wait != nil || f.Runtime.LockWait() != nil {
		t.Errorf("absent owner without blocks got a wait: %+v", f.Runtime)
	}
}
