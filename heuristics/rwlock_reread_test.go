package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// TestNativeRecursiveRead: hand-built Rust frames (as gdb prints a
// rustc 1.8x std RwLock): a reader waits in read_contended while a writer
// waits in write_contended and nothing else could hold the lock: most
// likely a recursive read (self-deadlock, low). Silent: a third thread
// waiting for a mutex (the read lock may be its: a cycle), and the
// reader alone.
func TestNativeRecursiveRead(t *testing.T) {
	reader := func() []string {
		return []string{"syscall", "std::sys::pal::unix::futex::futex_wait", "std::sys::sync::rwlock::futex::RwLock::read_contended",
			"std::sync::poison::rwlock::RwLock<T>::read", "app::Cache::lookup", "app::Cache::get", "std::sys::backtrace::__rust_begin_short_backtrace"}
	}
	writer := []string{"syscall", "std::sys::pal::unix::futex::futex_wait", "std::sys::sync::rwlock::futex::RwLock::write_contended",
		"std::sync::poison::rwlock::RwLock<T>::write", "app::Cache::refresh", "std::sys::backtrace::__rust_begin_short_backtrace"}
	snap := pasted(proc(900, thread(901, "reader", reader()...), thread(902, "refresher", writer...)))
	d, ok := top(snap)
	if !ok || d.ID != "self-deadlock" || d.Confidence != Low || !nbHasTid(d, 901) {
		t.Fatalf("got %q %s %v: %s", d.ID, d.Confidence, d.Tids, d.Summary)
	}
	third := pasted(proc(900, thread(901, "reader", reader()...), thread(902, "refresher", writer...),
		thread(903, "other", "syscall", "std::sys::pal::unix::futex::futex_wait", "std::sys::sync::mutex::futex::Mutex::lock_contended",
			"std::sync::poison::mutex::Mutex<T>::lock", "app::Store::put")))
	alone := pasted(proc(900, thread(901, "reader", reader()...)))
	for name, snap := range map[string]*stacks.Snapshot{"third lock waiter": third, "reader alone": alone} {
		for _, d := range Diagnose(snap, Options{}).Diagnoses {
			if d.ID == "self-deadlock" {
				t.Errorf("%s: %s", name, d.Summary)
			}
		}
	}
}
