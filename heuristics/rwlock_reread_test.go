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

// TestNativeRecursiveReadParkingLotAndLocks: parking_lot's RwLock waits
// (hand-built frames, the vocabulary's rw rows) are read the same way;
// when the frames name the rwlock each waits on (self of the contended
// call), the reader and the writer must wait on the same one: two
// threads waiting on two different rwlocks are no recursive read.
func TestNativeRecursiveReadParkingLotAndLocks(t *testing.T) {
	reader := func() *stacks.Thread {
		return thread(901, "reader", "syscall", "parking_lot_core::parking_lot::park", "parking_lot::raw_rwlock::RawRwLock::lock_shared_slow",
			"lock_api::rwlock::RwLock<R,T>::read", "app::Index::find", "app::Index::get", "std::sys::backtrace::__rust_begin_short_backtrace")
	}
	writer := func() *stacks.Thread {
		return thread(902, "writer", "syscall", "parking_lot_core::parking_lot::park", "parking_lot::raw_rwlock::RawRwLock::lock_exclusive_slow",
			"lock_api::rwlock::RwLock<R,T>::write", "app::Index::insert", "std::sys::backtrace::__rust_begin_short_backtrace")
	}
	claims := func(snap *stacks.Snapshot) bool {
		for _, d := range Diagnose(snap, Options{}).Diagnoses {
			if d.ID == "self-deadlock" && d.Confidence == Low && nbHasTid(d, 901) {
				return true
			}
		}
		return false
	}
	if !claims(pasted(proc(900, reader(), writer()))) {
		t.Error("parking_lot: no recursive read named")
	}
	withLocks := func(ra, wa string) *stacks.Snapshot {
		r, w := reader(), writer()
		r.Stack[2].Args = []stacks.Arg{stacks.NewArg("self", ra)}
		w.Stack[2].Args = []stacks.Arg{stacks.NewArg("self", wa)}
		return pasted(proc(900, r, w))
	}
	if !claims(withLocks("0x55d0c0a010", "0x55d0c0a010")) {
		t.Error("one rwlock named by both: no recursive read named")
	}
	if claims(withLocks("0x55d0c0a010", "0x55d0c0a050")) {
		t.Error("two different rwlocks: a recursive read named")
	}
}
