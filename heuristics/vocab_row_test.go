package heuristics

import "testing"

// Teaching hangdoc a lock family is one row of stacks/vocabulary.json:
// libuv's uv_mutex_lock and uv_rwlock_*lock (Node.js, libuv programs)
// were added as one row, and a paste of two threads trimmed at those
// frames (the futex frames above them cut, as reporters do) now reads as
// two lock waits in a cycle; a thread in libuv's uv_cond_wait, a
// condition (the same row's sibling), is not a lock wait.
func TestLibuvLockRow(t *testing.T) {
	snap := pasted(proc(700,
		thread(701, "worker", "uv_mutex_lock", "queue_push", "worker_loop", "start_thread"),
		thread(702, "flusher", "uv_rwlock_wrlock", "cache_flush", "flusher_loop", "start_thread")))
	d, ok := top(snap)
	if !ok || d.ID != "lock-order-cycle" || !nbHasTid(d, 701) || !nbHasTid(d, 702) {
		t.Fatalf("got %q %v: %s", d.ID, d.Tids, d.Summary)
	}
	idle := pasted(proc(700,
		thread(701, "worker", "uv_cond_wait", "worker_loop", "start_thread"),
		thread(702, "flusher", "uv_rwlock_wrlock", "cache_flush", "flusher_loop", "start_thread")))
	for _, d := range Diagnose(idle, Options{}).Diagnoses {
		if d.ID == "lock-order-cycle" {
			t.Errorf("a condition wait read as a lock wait: %s", d.Summary)
		}
	}
}
