package heuristics

// A lone waiter for a lock a shared library's own code takes. The dumps
// are written by hand in gdb's format (elfutils-style `???` frames with
// the library's path), with other libraries than the corpus report the
// rule was found on (cairo-dock#247, GIO).

import "testing"

const libLockTop = "#0  futex_wait (private=0, expected=2, futex_word=0x7f00000a1420) at ../sysdeps/nptl/futex-internal.h:146\n" +
	"#1  __GI___lll_lock_wait (futex=futex@entry=0x7f00000a1420, private=0) at ./nptl/lowlevellock.c:49\n" +
	"#2  0x00007f0000001000 in ___pthread_mutex_lock (mutex=0x7f00000a1420) at ./nptl/pthread_mutex_lock.c:128\n" +
	"#3  0x00007f0000002000 in ??? () at /usr/lib/x86_64-linux-gnu/libfontstack-3.so.1\n" +
	"#4  0x00007f0000002100 in fs_face_load () at /usr/lib/x86_64-linux-gnu/libfontstack-3.so.1\n" +
	"#5  0x0000550000001000 in viewer_render_label () at /usr/bin/vie"

// A bare bt (the paste may not hold the process's other threads):
// entered once, the library's own lock is another thread's, a hedged
// cycle, not a self-deadlock.
func TestLibraryLockEnteredOnceIsHeldElsewhere(t *testing.T) {
	d, ok := top(parseDump(t, libLockTop))
	if !ok || d.ID != "lock-order-cycle" || d.Confidence != Low {
		t.Fatalf("a library's lock, entered once: top %s (%s) %s, want lock-order-cycle (low)", d.ID, d.Confidence, d.Summary)
	}
	has(t, "chain", d.Chain[1], "libfontstack-3.so.1", "entered once")
}

// The library again further down (a callback into the program that
// re-enters it): the thread may hold the lock itself; no such reading.
func TestLibraryLockReenteredStaysSelf(t *testing.T) {
	again := libLockTop[:len(libLockTop)-len("#5  0x0000550000001000 in viewer_render_label () at /usr/bin/vie")] +
		"#5  0x0000550000001000 in viewer_on_glyph () at viewer.c:40\n" +
		"#6  0x00007f0000002200 in ??? () at /usr/lib/x86_64-linux-gnu/libfontstack-3.so.1\n" +
		"#7  0x00007f0000002300 in fs_layout_run () at /usr/lib/x86_64-linux-gnu/libfontstack-3.so.1\n" +
		"#8  0x0000550000001100 in viewer_draw () at /usr/bin/vie"
	if d, ok := top(parseDump(t, again)); ok && d.ID == "lock-order-cycle" {
		t.Errorf("the library re-entered below: %s (%s) %s", d.ID, d.Confidence, d.Summary)
	}
}
