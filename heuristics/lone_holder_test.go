package heuristics

import (
	"os"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// One thread of a real gdb dump, as pastes hold it: testdata/dumps/gdb/
// abba.txt is gdb's `thread apply all bt` of the abba patient (two
// threads each holding one mutex and waiting for the other); the paste
// keeps only thread 3's section. The thread began in start_thread, so
// the process has other threads the paste left out, and nothing on its
// stack shows it holding lock_a: the holder is most likely one of them,
// the other side of a cycle.
func TestLoneWaiterOfStartedThread(t *testing.T) {
	raw, err := os.ReadFile("../testdata/dumps/gdb/abba.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	from := strings.Index(text, "Thread 3 (")
	to := strings.Index(text, "Thread 2 (")
	if from < 0 || to < from {
		t.Fatalf("abba.txt: no thread 3 section")
	}
	snap, _, _, err := stacks.Parse(strings.NewReader(text[from:to]), "gdb")
	if err != nil {
		t.Fatal(err)
	}
	d := one(t, "lock-order-cycle", snap)
	complete(t, d)
	sameInts(t, "tids", d.Tids, 355)
	if d.Confidence != Low {
		t.Errorf("confidence %s, want low", d.Confidence)
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "lock_a", "started by the process")
	none(t, "self-deadlock", snap)
}

// Written by hand: a lone waiter on a recursive lock is not waiting for
// itself (a holder re-taking a recursive lock does not wait), so the
// holder is another thread; on a plain lock with nothing to say the
// process has other threads (a bare `bt` of the main thread), the
// self-deadlock reading stays.
func TestLoneWaiterOnRecursiveLock(t *testing.T) {
	rec := thread(4711, "", "__lll_lock_wait", "pthread_mutex_lock", "g_rec_mutex_lock", "gst_element_set_state_func", "on_pad_added")
	d := one(t, "lock-order-cycle", pasted(proc(100, rec)))
	has(t, "chain", d.Chain[1], "`g_rec_mutex_lock` takes a recursive lock")
	none(t, "self-deadlock", pasted(proc(100, rec)))

	rec = thread(4711, "", "__lll_lock_wait", "pthread_mutex_lock", "__gthread_recursive_mutex_lock", "Object::lock")
	one(t, "lock-order-cycle", pasted(proc(100, rec)))

	plain := thread(4711, "", "__lll_lock_wait", "pthread_mutex_lock", "g_mutex_lock", "cache_lookup", "main")
	one(t, "self-deadlock", pasted(proc(100, plain)))
	none(t, "lock-order-cycle", pasted(proc(100, plain)))

	// The whole process is this one thread (its main, tid = pid): a
	// holder elsewhere would have to have exited; no cycle is claimed.
	whole := thread(100, "", "__lll_lock_wait", "pthread_mutex_lock", "g_rec_mutex_lock", "flush", "main")
	none(t, "lock-order-cycle", pasted(proc(100, whole)))
}
