package heuristics

// A lone allocator-lock waiter whose paste is cut before the allocator's
// first entry, as pastes in trackers cut it. The dumps are written by hand
// in gdb's format, with other programs' names than the corpus reports the
// rule was found on (gperftools#411, openj9#17208, jemalloc#3012).

import (
	"strings"
	"testing"
)

// allocWaitTop is a thread numbered after thread 1 (so the process has
// other threads, which the paste does not show) waiting for a tcmalloc
// central free list's spin lock.
const allocWaitTop = "Thread 7 (Thread 0x7f00000a0700 (LWP 4242)):\n" +
	"#0  0x00007f0000001000 in sys_futex () from /usr/lib/libtcmalloc.so.4\n" +
	"#1  0x00007f0000001100 in base::internal::SpinLockDelay () from /usr/lib/libtcmalloc.so.4\n" +
	"#2  0x00007f0000001200 in SpinLock::SlowLock () from /usr/lib/libtcmalloc.so.4\n" +
	"#3  0x00007f0000001300 in tcmalloc::CentralFreeList::RemoveRange () from /usr/lib/libtcmalloc.so.4\n" +
	"#4  0x00007f0000001400 in tc_malloc () from /usr/lib/libtcmalloc.so.4\n" +
	"#5  0x0000000000401000 in render_label ()\n"

// Cut below the program's frame: the allocator's first entry (a handler
// over it, or a hook) is not in the paste, and the process is no forked
// child's lone thread: a signal handler's re-entry, hedged, with the
// frames that would settle it.
func TestLoneAllocatorWaiterCutIsHandlerReentry(t *testing.T) {
	d, ok := top(parseDump(t, allocWaitTop+"#6  0x0000000000402000 in draw_sc"))
	if !ok || d.ID != "signal-handler-reentry" || d.Confidence != Low {
		t.Fatalf("cut allocator waiter: top %s (%s) %s, want signal-handler-reentry (low)", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "allocator", "signal handler")
	has(t, "evidence", strings.Join(d.Evidence, "; "), "<signal handler called>", "self-deadlock")
}

// The same wait with the whole stack down to its thread's start: no
// handler is on it, so no handler re-entry (the allocator was re-entered
// some other way: a self-deadlock).
func TestLoneAllocatorWaiterWholeStackNoHandler(t *testing.T) {
	d, ok := top(parseDump(t, allocWaitTop+
		"#6  0x0000000000402000 in draw_scene ()\n"+
		"#7  0x00007f0000002000 in start_thread () from /lib64/libpthread.so.0\n"+
		"#8  0x00007f0000002100 in clone () from /lib64/libc.so.6\n"))
	if !ok || d.ID != "self-deadlock" {
		t.Fatalf("whole stack: top %s (%s) %s, want self-deadlock", d.ID, d.Confidence, d.Summary)
	}
}

// A headerless bt (one thread, nothing says the process has others): a
// forked child's lone thread stays the likelier reading.
func TestLoneAllocatorWaiterHeaderlessStaysFork(t *testing.T) {
	d, ok := top(parseDump(t, "#0  0x00007f0000001000 in sys_futex () from /usr/lib/libtcmalloc.so.4\n"+
		"#1  0x00007f0000001100 in base::internal::SpinLockDelay () from /usr/lib/libtcmalloc.so.4\n"+
		"#2  0x00007f0000001200 in SpinLock::SlowLock () from /usr/lib/libtcmalloc.so.4\n"+
		"#3  0x00007f0000001300 in tcmalloc::CentralFreeList::RemoveRange () from /usr/lib/libtcmalloc.so.4\n"+
		"#4  0x00007f0000001400 in tc_malloc () from /usr/lib/libtcmalloc.so.4\n"+
		"#5  0x0000000000401000 in render_label ()\n"+
		"#6  0x0000000000402000 in draw_sc"))
	if !ok || d.ID != "fork-inherited-lock" {
		t.Fatalf("headerless cut allocator waiter: top %s (%s) %s, want fork-inherited-lock", d.ID, d.Confidence, d.Summary)
	}
}

// The allocator's lock call goes through a tracer's wrapper of
// pthread_mutex_lock in its own library: the wrapper is a hook that
// re-enters the allocator (self-deadlock), not a handler's re-entry. A
// wrapper whose name is not the primitive's says nothing.
func TestLoneAllocatorWaiterInterposedLock(t *testing.T) {
	dump := func(wrapper string) string {
		return "Thread 3 (Thread 0x7f00000a0700 (LWP 4243)):\n" +
			"#0  0x00007f0000001000 in __lll_lock_wait () from /lib64/libpthread.so.0\n" +
			"#1  0x00007f0000001100 in pthread_mutex_lock () from /lib64/libpthread.so.0\n" +
			"#2  0x00007f0000003000 in " + wrapper + " () from /opt/tracer/libtrace_inject.so\n" +
			"#3  0x00007f0000004000 in je_malloc_mutex_lock_slow (mutex=0x7f0000009000 <je_arenas_lock>) at src/mutex.c:90\n" +
			"#4  0x00007f0000004100 in je_arena_choose_hard () at src/jemalloc.c:500\n" +
			"#5  0x00007f0000004200 in je_mall"
	}
	d, ok := top(parseDump(t, dump("TRACE_pthread_mutex_lock_hook")))
	if !ok || d.ID != "self-deadlock" {
		t.Fatalf("interposed pthread_mutex_lock: top %s (%s) %s, want self-deadlock", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "TRACE_pthread_mutex_lock_hook", "interposed")
	if d, ok := top(parseDump(t, dump("trace_record_event"))); !ok || d.ID != "signal-handler-reentry" {
		t.Errorf("a wrapper not named for the primitive: top %s %s, want signal-handler-reentry", d.ID, d.Summary)
	}
}

// A headerless cut bt waiting for a jemalloc arena bin lock: jemalloc's
// fork handlers re-initialise that lock in a child, so no fork child
// inherits it: a handler's re-entry (hedged). Its extent mutex pool,
// which the handlers did not cover (jemalloc#2019), stays a fork child's.
func TestLoneJemallocBinLockIsNoForkChild(t *testing.T) {
	wait := "#0  0x00007f0000001000 in __lll_lock_wait () from /lib64/libpthread.so.0\n" +
		"#1  0x00007f0000001100 in pthread_mutex_lock () from /lib64/libpthread.so.0\n" +
		"#2  0x00007f0000002000 in je_malloc_mutex_lock (mutex=0x7f0000009000) at include/jemalloc/internal/mutex.h:77\n"
	bin := wait + "#3  0x00007f0000002100 in je_arena_tcache_fill_small (arena=0x7f000000a000, binind=3) at src/arena.c:1475\n" +
		"#4  0x00007f0000002200 in je_tcache_alloc_small_hard (tcache=0x7f000000b000, binind=3) at src/tcache.c:72\n" +
		"#5  0x00007f0000002300 in je_imalloc (size=<optimized out>)"
	d, ok := top(parseDump(t, bin))
	if !ok || d.ID != "signal-handler-reentry" || d.Confidence != Low {
		t.Fatalf("jemalloc bin lock, headerless: top %s (%s) %s, want signal-handler-reentry (low)", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "jemalloc_prefork")
	pool := wait + "#3  0x00007f0000002100 in mutex_pool_lock (key=140609337947776) at include/jemalloc/internal/mutex_pool.h:45\n" +
		"#4  0x00007f0000002200 in extent_lock (extent=0x7f000000c000) at include/jemalloc/internal/extent_inlines.h:14\n" +
		"#5  0x00007f0000002300 in extent_lock_from_addr (tsdn=0x7f000000d000) at src/ext"
	if d, ok := top(parseDump(t, pool)); !ok || d.ID != "fork-inherited-lock" {
		t.Errorf("jemalloc extent mutex pool, headerless: top %s (%s) %s, want fork-inherited-lock", d.ID, d.Confidence, d.Summary)
	}
}
