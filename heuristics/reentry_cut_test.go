package heuristics

// Signal re-entry as pastes cut it: a spin lock's back-off sleep under a
// handler, a last frame cut inside its name, a handler known only by its
// (sig, info, context) arguments whose line is cut inside the file name,
// and i386's vDSO syscall entry on top. The dumps are written by hand in
// gdb's format, with other programs' names than the corpus reports the
// rules were found on (gperftools#206, att/ast#563).

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

func parseDump(t *testing.T, text string) *stacks.Snapshot {
	t.Helper()
	snap, _, _, err := stacks.Parse(strings.NewReader(text), "")
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// pollLoopSleep is a program's own poll loop sleeping in usleep: a sleep,
// with the code that called it shown.
const pollLoopSleep = "#0  0x00007f0000001000 in nanosleep () from /lib64/libc.so.6\n" +
	"#1  0x00007f0000001100 in usleep () from /lib64/libc.so.6\n" +
	"#2  0x0000000000402000 in poll_loop ()\n" +
	"#3  0x0000000000403000 in main ()\n"

// A spin lock's slow path that backs off in nanosleep is a lock wait in
// one sample: the thread is not sleeping on a timer.
func TestSpinLockBackoffSleepIsLockWait(t *testing.T) {
	snap := parseDump(t, "#0  0x00007f0000001000 in nanosleep () from /lib64/libc.so.6\n"+
		"#1  0x0000000000401000 in SpinLock::SlowLock ()\n"+
		"#2  0x0000000000402000 in Cache::Refill ()\n"+
		"#3  0x0000000000403000 in worker_main ()\n"+
		"#4  0x00007f0000002000 in start_thread () from /lib64/libpthread.so.0\n")
	if c, _ := waitOf(snap.Processes[0].Threads[0]); c != waitLock {
		t.Errorf("nanosleep under SpinLock::SlowLock: wait %v, want a lock wait", c)
	}
	if d, ok := top(snap); ok && d.ID == "sleeping" {
		t.Errorf("a spin lock's back-off read as %s: %s", d.ID, d.Summary)
	}
	// a sleep called by the program's own loop stays a sleep
	if d, ok := top(parseDump(t, pollLoopSleep)); !ok || d.ID != "sleeping" {
		t.Errorf("a poll loop's usleep: top %s, want sleeping", d.ID)
	}
}

// A handler that allocates over a signal frame whose interrupted frame is
// the paste's last line, cut inside its name: what the signal interrupted
// is not known, so the handler most likely interrupted the allocator (low).
// With that frame whole and outside the allocator, no re-entry is shown.
func TestReentryOverCutInterruptedFrame(t *testing.T) {
	handler := "#0  0x00007f0000001000 in __lll_lock_wait_private () from /lib64/libc.so.6\n" +
		"#1  0x00007f0000001100 in malloc () from /lib64/libc.so.6\n" +
		"#2  0x0000000000401000 in format_report ()\n" +
		"#3  0x0000000000402000 in on_fatal ()\n" +
		"#4  <signal handler called>\n"
	cut := parseDump(t, handler+"#5  0x00007f0000001200 in _int_mal")
	d, ok := top(cut)
	if !ok || d.ID != "signal-handler-reentry" || d.Confidence != Low {
		t.Fatalf("cut interrupted frame: top %s (%s) %s, want signal-handler-reentry (low)", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "on_fatal", "malloc")
	whole := parseDump(t, handler+"#5  0x0000000000403000 in render_frame ()\n#6  0x0000000000404000 in main ()\n")
	if d, ok := top(whole); ok && d.ID == "signal-handler-reentry" {
		t.Errorf("interrupted in render_frame, outside the allocator: %s %s", d.ID, d.Summary)
	}
}

// i386: __kernel_vsyscall over the lock wait; the handler passes its
// signal number on (child_reaper(sig=17) called by on_sigchld(sig, info,
// ctx)), and the paste ends inside on_sigchld's file name: its arguments
// still make it the handler the kernel called, the interrupted frames are
// below the cut.
func TestReentryHandlerBySignatureCutInFile(t *testing.T) {
	snap := parseDump(t, "#0  0xb7700c31 in __kernel_vsyscall ()\n"+
		"#1  0xb7600b62 in __lll_lock_wait_private () at ../sysdeps/unix/sysv/linux/i386/lowlevellock.S:97\n"+
		"#2  0xb7580f9f in _int_free (av=0xb7737780 <main_arena>, p=0x9f501b8, have_lock=0) at malloc.c:3962\n"+
		"#3  0x080fc9f0 in buffer_release (b=0x9f501c0) at buffer.c:150\n"+
		"#4  0x080a29e4 in child_reaper (sig=17) at reaper.c:486\n"+
		"#5  0x080a2498 in on_sigchld (sig=17, info=0xbfee080c, ctx=0xbfee088c) at ../sr")
	th := snap.Processes[0].Threads[0]
	if f := th.Stack[5]; len(f.Args) != 3 {
		t.Fatalf("frame cut inside its file name: args %v, want the three of its whole argument list", f.Args)
	}
	d, ok := top(snap)
	if !ok || d.ID != "signal-handler-reentry" {
		t.Fatalf("top %s %s, want signal-handler-reentry", d.ID, d.Summary)
	}
	has(t, "summary", d.Summary, "on_sigchld", "_int_free")
}

// A stack capture (gperftools' or Abseil's GetStackTrace*) waiting for the
// loader's lock with the paste cut right under it stands for the signal
// handler a profiler or crash handler runs it in; the same capture called
// from code the paste shows (a heap profiler sampling inside malloc, down
// to main) is no handler.
func TestStackCaptureOverCutIsHandler(t *testing.T) {
	top3 := "#0  __lll_lock_wait () at ../nptl/sysdeps/unix/sysv/linux/x86_64/lowlevellock.S:135\n" +
		"#1  0x00007f0000001000 in __GI___pthread_mutex_lock (mutex=0x7f0000900990 <_rtld_global+2352>) at ../nptl/pthread_mutex_lock.c:114\n" +
		"#2  0x00007f0000002000 in __GI___dl_iterate_phdr (callback=0x7f0000003000, data=0x7ffd00000430) at dl-iteratephdr.c:41\n" +
		"#3  0x00007f0000004000 in _ULx86_64_step () from /usr/lib/x86_64-linux-gnu/libunwind.so.8\n" +
		"#4  0x00007f0000005000 in absl::lts_20230125::GetStackTrace(void**, int, int) () from /usr/lib/libabsl_stacktrace.so\n"
	cut := parseDump(t, top3+"#5  0x00007f0000006000 in ?? () from /usr/lib/libsampler.so\n")
	d, ok := top(cut)
	if !ok || d.ID != "signal-handler-reentry" || d.Confidence != Low {
		t.Fatalf("stack capture over a cut: top %s (%s) %s, want signal-handler-reentry (low)", d.ID, d.Confidence, d.Summary)
	}
	shown := parseDump(t, top3+"#5  0x00007f0000007000 in RecordAllocation () from /usr/lib/libheapprof.so\n"+
		"#6  0x00007f0000008000 in malloc () from /usr/lib/libheapprof.so\n#7  0x0000000000401000 in main ()\n")
	if d, ok := top(shown); ok && d.ID == "signal-handler-reentry" {
		t.Errorf("a capture called from malloc down to main read as a handler: %s", d.Summary)
	}
}

// gdb's `info threads` table shows one frame a thread: a thread in
// nanosleep there says nothing of why it sleeps (a loop polling for
// workers that may never be woken), so `sleeping` is hedged low; with its
// callers shown it stays medium.
func TestSleepingFromOneFrameIsLow(t *testing.T) {
	table := "(gdb) info threads\n" +
		"  Id   Target Id         Frame \n" +
		"  3    Thread 0x7f0000003700 (LWP 2003) \"pool\" pthread_cond_wait@@GLIBC_2.3.2 () at ../sysdeps/unix/sysv/linux/x86_64/pthread_cond_wait.S:185\n" +
		"  2    Thread 0x7f0000002700 (LWP 2002) \"pool\" pthread_cond_wait@@GLIBC_2.3.2 () at ../sysdeps/unix/sysv/linux/x86_64/pthread_cond_wait.S:185\n" +
		"* 1    Thread 0x7f0000001740 (LWP 2001) \"pool\" 0x00007f000000191d in nanosleep () at ../sysdeps/unix/syscall-template.S:81\n"
	d, ok := top(parseDump(t, table))
	if !ok || d.ID != "sleeping" || d.Confidence != Low {
		t.Fatalf("info threads table: top %s (%s), want sleeping (low)", d.ID, d.Confidence)
	}
	if d, ok := top(parseDump(t, pollLoopSleep)); !ok || d.ID != "sleeping" || d.Confidence != Medium {
		t.Errorf("a sleep with its callers: top %s (%s), want sleeping (medium)", d.ID, d.Confidence)
	}
}

// A handler known by its (sig, info, context) arguments waits for a spin
// lock of the program's own (a compare-and-swap loop, no futex, no
// library the vocabulary knows) and the paste ends in the handler: the
// paste's only thread, so nothing in sight holds the lock but the code the
// signal interrupted (low). Shown with the interrupted frames (which do
// not take the lock), or beside another thread that could hold it, it is
// no re-entry. Written by hand in gdb's format, with other names than the
// report it was found on (hpctoolkit#5).
func TestReentryHandlerOwnLockCut(t *testing.T) {
	handler := "#0  0x00007f0000001000 in spin_lock (l=0x7f0000090d48 <stats_lock>) at src/spin.h:40\n" +
		"#1  0x00007f0000001100 in stats_add (n=3) at src/stats.c:88\n" +
		"#2  0x00007f0000001200 in on_timer_tick (sig=34, siginfo=0x7ffd00002a70, uc=0x7ffd00002940) at src/timer.c:120\n"
	d, ok := top(parseDump(t, handler))
	if !ok || d.ID != "signal-handler-reentry" || d.Confidence != Low {
		t.Fatalf("handler over a cut: top %s (%s) %s, want signal-handler-reentry (low)", d.ID, d.Confidence, d.Summary)
	}
	has(t, "summary", d.Summary, "stats_lock", "on_timer_tick", "no other thread in the paste")
	shown := handler + "#3  <signal handler called>\n#4  0x00007f0000001300 in poll () from /lib64/libc.so.6\n#5  0x0000000000401000 in main ()\n"
	if d, ok := top(parseDump(t, shown)); ok && d.ID == "signal-handler-reentry" {
		t.Errorf("interrupted in poll, which takes no lock: %s %s", d.ID, d.Summary)
	}
	two := "Thread 2 (Thread 0x7f0000002700 (LWP 2002)):\n" + handler +
		"\nThread 1 (Thread 0x7f0000001740 (LWP 2001)):\n#0  0x00007f0000001400 in stats_flush (fd=3) at src/stats.c:120\n#1  0x0000000000401000 in main ()\n"
	if d, ok := top(parseDump(t, two)); ok && d.ID == "signal-handler-reentry" {
		t.Errorf("another thread could hold the lock: %s %s", d.ID, d.Summary)
	}
}
