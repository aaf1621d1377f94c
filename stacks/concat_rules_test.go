package stacks_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// The rules that tell a second dump in one paste from more of the first
// (split.go), each on stored dumps pasted as people paste them, and each
// with the case where it must stay silent. Where a dump is edited for a
// case (blank lines taken out, two dumps cut together), the edit is said.

// shapes parses in and gives each process's shape (procShape) and the
// formats read.
func shapes(t *testing.T, in string) ([]string, string) {
	t.Helper()
	snap, _, format, err := stacks.Parse(strings.NewReader(in), "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range snap.Processes {
		out = append(out, procShape(p))
	}
	return out, format
}

func stored(t *testing.T, format, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "dumps", format, name))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b, '\n') // as TestConcatenatedDumps pastes them
	}
	return string(b)
}

// wantBoth: stored dumps a then b pasted together read as the processes
// of each, as each reads alone.
func wantBoth(t *testing.T, a, b string) {
	t.Helper()
	var in string
	var want []string
	for _, f := range []string{a, b} {
		dir, name := filepath.Split(f)
		x := stored(t, filepath.Clean(dir), name)
		alone, _ := shapes(t, x)
		in += x
		want = append(want, alone...)
	}
	wantShapes(t, a+" + "+b, in, want...)
}

func wantShapes(t *testing.T, what, in string, want ...string) {
	t.Helper()
	got, format := shapes(t, in)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s (%s): processes\n got %q\nwant %q", what, format, got, want)
	}
}

// TestFaulthandlerLayoutBeginsADump: faulthandler writes a blank line
// between the threads of one dump and none between two dumps, so a
// header right under a frame begins another process once the paste
// shows those blank lines. A parent's dump and its forked child's
// (pyfork_lock_sigusr1) pasted twice are four processes: the second
// parent's first thread id is new to the child's dump, so the id rule
// alone took it into the child.
func TestFaulthandlerLayoutBeginsADump(t *testing.T) {
	fork := stored(t, "faulthandler", "pyfork_lock_sigusr1.txt")
	parent, child := "threads: 0/6 0/6", "threads: 0/7"
	wantShapes(t, "parent and child, twice", fork+fork, parent, child, parent, child)

	// silent: a paste that lost every blank line shows no layout; the
	// threads of one dump stay one process (lock_sigabrt, edited: its
	// blank lines taken out)
	abort := stored(t, "faulthandler", "lock_sigabrt.txt")
	wantShapes(t, "one dump", abort, "threads: 0/6 0/2")
	wantShapes(t, "one dump, blank lines lost", strings.ReplaceAll(abort, "\n\n", "\n"), "threads: 0/6 0/2")

	// silent: dump_traceback_later's "Timeout (…)!" line under the
	// last frame keeps a repeat's dumps samples of one process
	repeat := stored(t, "faulthandler", "lock_timeout_repeat.txt")
	snap, _, _, err := stacks.Parse(strings.NewReader(repeat), "")
	if err != nil || len(snap.Processes) != 1 || snap.Samples != 2 {
		t.Fatalf("timeout repeat: %v, want one process in 2 samples (%v)", snap, err)
	}
}

// TestGoRegistersEndARun: Go's runtime ends a SIGQUIT dump with the
// registers and exits; goroutines after them are another run's, though
// their ids repeat (log_two_dumps pasted twice: goroutine 21's
// debug.Stack of the second run was taken into the first run's dump).
func TestGoRegistersEndARun(t *testing.T) {
	log := stored(t, "goroutines", "log_two_dumps.txt")
	one, _ := shapes(t, log)
	if len(one) != 2 {
		t.Fatalf("log_two_dumps alone: %q", one)
	}
	wantShapes(t, "log_two_dumps twice", log+log, one[0], one[1], one[0], one[1])

	// silent: GOTRACEBACK=crash prints each M's section under "-----"
	// after the registers: one dump
	crash := stored(t, "goroutines", "abba_sigquit_crash.txt")
	if got, _ := shapes(t, crash); len(got) != 1 {
		t.Errorf("abba_sigquit_crash: %d processes, want 1: %q", len(got), got)
	}
}

// TestPyBtThenSession: gdb's py-bt is a backtrace: another session's
// lines after it (libthread_db's line, an info threads table) begin
// another process, as after a frame.
func TestPyBtThenSession(t *testing.T) {
	pybt := stored(t, "gdb", "pybt_sonic_mgmt_22212_pasted.md")
	alone, _ := shapes(t, pybt)
	stripped := stored(t, "gdb", "variant_stripped.txt")
	want := append(append([]string{}, alone...), "threads: 30415/8 30414/8 30406/8")
	wantShapes(t, "py-bt, then a gdb session", pybt+stripped, want...)

	// silent: py-bt, then thread apply all bt in the same session (no
	// session line between; hand-made: the first py-bt block of the
	// paste, then abba's threads without its attach lines)
	first := pybt[:strings.Index(pybt, "```\n\n")]
	abba := stored(t, "gdb", "abba.txt")
	threads := abba[strings.Index(abba, "\nThread ")+1:]
	got, _ := shapes(t, first+"(gdb) thread apply all bt\n\n"+threads)
	if len(got) != 1 {
		t.Errorf("py-bt then bt in one session: %q, want one process", got)
	}
}

// TestGDBPromptUnderFrames: gdb's prompt or its info threads header
// under another dump (a list of frames, an IntelliJ thread dump) begins
// a gdb session; at the start of a paste it says nothing (gdb's
// `blocked` command, read as frames).
func TestGDBPromptUnderFrames(t *testing.T) {
	wantBoth(t, "frames/rtklib_call_tree.txt", "gdb/info_threads_icinga2_pasted.txt")
	wantBoth(t, "jstack/intellij_pasted.txt", "gdb/info_threads_logcabin_pasted.txt")

	// silent: the prompt begins the paste
	blocked := stored(t, "frames", "gdb_blocked_command.txt")
	if _, format := shapes(t, blocked); format != "frames" {
		t.Errorf("gdb_blocked_command read as %s, want frames", format)
	}
}

// TestCrashReportExceptionBlock: a crash report excerpt that starts at
// its exception block ("Exception Type:" over "Exception Codes:") begins
// a crash report after another dump: py-spy's last thread took the
// line for a frame.
func TestCrashReportExceptionBlock(t *testing.T) {
	wantBoth(t, "py-spy/lock.txt", "crash-report/cwlutils_8badf00d.txt")
	pyspy := stored(t, "py-spy", "lock.txt")

	// silent: an "Exception Type:" line alone is no report (prose)
	in := pyspy + "Exception Type: see the log\n"
	if got, format := shapes(t, in); format != "py-spy" || len(got) != 1 {
		t.Errorf("py-spy then a prose line: %s, %q", format, got)
	}
}

// wantOne: in reads as one process.
func wantOne(t *testing.T, what, in string) {
	t.Helper()
	if got, format := shapes(t, in); len(got) != 1 {
		t.Errorf("%s (%s): %d processes, want one: %q", what, format, len(got), got)
	}
}

// TestDumpHeaderAfterThreads: a dump's own header (jstack's "Full thread
// dump", pprof's "goroutine profile: total N", spindump's "Date/Time:")
// after threads were read begins another dump: an excerpt pasted first
// (a deadlock summary, IntelliJ's threads, a few pprof records, a hang
// report's heaviest stack) took the whole dump after it.
func TestDumpHeaderAfterThreads(t *testing.T) {
	wantBoth(t, "jstack/summary_only_pasted.txt", "jstack/monitor_abba.txt")
	wantBoth(t, "jstack/intellij_pasted.txt", "jstack/jcmd_thread_print_monitor.txt")
	wantBoth(t, "jstack/markdown_headings_pasted.txt", "jstack/reentrant_abba.txt")
	wantBoth(t, "pprof-goroutine/yunikorn_rlock.txt", "pprof-goroutine/abba_debug1.txt")
	wantBoth(t, "spindump/pasted_heaviest_only.md", "spindump/mutex_o2_heavy.txt")

	// silent: jcmd's "PID:" line and the header over its threads, a
	// jstack -l dump's summary after its threads: one dump each
	wantOne(t, "jcmd", stored(t, "jstack", "jcmd_thread_print_monitor.txt"))
	wantOne(t, "jstack -l", stored(t, "jstack", "reentrant_abba_l.txt"))
	wantOne(t, "pprof", stored(t, "pprof-goroutine", "abba_debug1.txt"))
}

// TestJstackSummaryOfOtherThreads: a deadlock summary that names a
// thread the jstack dump before it lacks is another JVM's (clinit_cycle
// has no summary of its own: the JVM does not see class-init cycles).
func TestJstackSummaryOfOtherThreads(t *testing.T) {
	wantBoth(t, "jstack/clinit_cycle.txt", "jstack/summary_only_pasted.txt")
	wantBoth(t, "jstack/clinit_cycle.txt", "jstack/markdown_headings_pasted.txt")

	// silent: monitor_abba's summary names its own threads
	wantOne(t, "monitor_abba", stored(t, "jstack", "monitor_abba.txt"))
}

// TestGoDumpPrinterFirst: the goroutine that prints a dump comes first
// in it, running, in debug.Stack or pprof's debug=2 writer: after
// goroutines it begins another dump, with ids new to the first.
func TestGoDumpPrinterFirst(t *testing.T) {
	wantBoth(t, "goroutines/deadlock_fatal.txt", "goroutines/waitgroup_debug_stack.txt")
	wantBoth(t, "goroutines/waitgroup_debug_stack.txt", "goroutines/abba_pprof_debug2.txt")
	wantBoth(t, "goroutines/go119_gotest_timeout.txt", "goroutines/log_two_dumps.txt")
	// a second goroutine running with its stack: runtime.Stack's dump
	// starts at its caller, after debug.Stack's goroutine
	wantBoth(t, "goroutines/waitgroup_debug_stack.txt", "goroutines/abba_runtime_stack.txt")

	// silent: pprof's debug=2 dump begins with its writer, then the
	// others; a goroutine running on another thread is no printer
	wantOne(t, "debug=2", stored(t, "goroutines", "abba_pprof_debug2.txt"))
	deadlock := stored(t, "goroutines", "deadlock_fatal.txt")
	wantOne(t, "a running goroutine without a stack (hand-made)",
		deadlock+"\ngoroutine 40 [running]:\n\tgoroutine running on other thread; stack unavailable\n")
}

// TestPySpyJSONThenText: py-spy's --json array, then a text dump: JSON
// has no "Process N:" line, so it begins another process (its pid may
// be the same: the same process dumped twice).
func TestPySpyJSONThenText(t *testing.T) {
	wantBoth(t, "py-spy/lock_native.json", "py-spy/lock.txt")
	wantBoth(t, "py-spy/pasted_json.md", "py-spy/pyfork_lock_subprocesses.txt")
	wantBoth(t, "py-spy/lock.txt", "py-spy/lock_native.json")

	// silent: --subprocesses prints several processes, each its own
	wantShapes(t, "subprocesses", stored(t, "py-spy", "pyfork_lock_subprocesses.txt"),
		mustShapes(t, stored(t, "py-spy", "pyfork_lock_subprocesses.txt"))...)
}

func mustShapes(t *testing.T, in string) []string {
	t.Helper()
	got, _ := shapes(t, in)
	return got
}

// TestGDBThreadOrder: thread apply all bt (and pstack) lists threads
// from the highest number down to 1; after thread 1, a higher number
// begins another session's list (pstack of mutex_o2, then of threads10:
// its threads 12-6 were taken into the first, and the repeat at thread 5
// cut the second in two).
func TestGDBThreadOrder(t *testing.T) {
	wantBoth(t, "gdb/pstack_mutex_o2.txt", "gdb/pstack_threads10.txt")
	wantBoth(t, "gdb/mutex_o0g_core.txt", "gdb/pstack_threads10.txt")

	// silent: thread apply all -ascending bt lists them upwards
	// (pstack_mutex_o2 with its threads in reverse order, hand-made)
	pstack := stored(t, "gdb", "pstack_mutex_o2.txt")
	var blocks []string
	for _, b := range strings.SplitAfter(pstack, "\n\n") {
		blocks = append([]string{b}, blocks...)
	}
	wantOne(t, "ascending", strings.Join(blocks, ""))
}

// TestGDBTableThenThreads: an info threads table lists each thread
// with its LWP; a thread header whose number has another LWP in the
// table, or which the table lacks, is another process's. gdb's "info
// threads" prompt after a backtrace or a table is another listing.
func TestGDBTableThenThreads(t *testing.T) {
	wantBoth(t, "gdb/info_threads_logcabin_pasted.txt", "gdb/pstack_mutex_o2.txt") // row 5 is LWP 5790, the header's 20841
	wantBoth(t, "gdb/info_threads_icinga2_pasted.txt", "gdb/pstack_threads10.txt") // rows 70-62: no thread 12
	wantBoth(t, "gdb/pstack_mutex_o2.txt", "gdb/info_threads_logcabin_pasted.txt")
	wantBoth(t, "gdb/info_threads_icinga2_pasted.txt", "gdb/info_threads_logcabin_pasted.txt")

	// silent: one session's table, then the backtraces of its threads
	wantOne(t, "table then bt", stored(t, "gdb", "variant_info_threads_bt.txt"))
}

// TestFaulthandlerProcessEnd: faulthandler's "Extension modules: …"
// line and the shell's line for the signal that killed the process come
// after a dump's last thread: a thread header after them is another
// dump, though the paste shows no blank line between its threads.
func TestFaulthandlerProcessEnd(t *testing.T) {
	wantBoth(t, "faulthandler/py_gilext.txt", "faulthandler/pyfork_lock_sigusr1.txt")
	wantBoth(t, "faulthandler/pasted_ci_log.txt", "faulthandler/pyfork_lock_sigusr1.txt")

	// silent: a fatal error's dump with its extension modules is one
	wantOne(t, "py_gilext", stored(t, "faulthandler", "py_gilext.txt"))
}

// TestWrappedFrameThenHeader: a frame as wide as a wrap (70-80 columns)
// at the end of a paste is not joined to the next dump's first line
// when the line under that one tells its header (a crash report's
// "Exception Type:" over "Exception Codes:"); a CI log's "##[group]"
// line is no frame's rest either.
func TestWrappedFrameThenHeader(t *testing.T) {
	wantBoth(t, "crash-report/mailcore2_webthread.txt", "crash-report/cwlutils_8badf00d.txt")
	wantBoth(t, "jstack/intellij_pasted.txt", "crash-report/cwlutils_8badf00d.txt")
	wantBoth(t, "frames/bcc_deadlock_report.txt", "crash-report/cwlutils_8badf00d.txt")
}

// TestYearIsNoGrepNumber: two CI logs' time stamps, one of 2024 over
// one of 2025, looked like grep -n's "2024-" and "2025-": the prefix
// was cut mid-stamp and the rest of the stamp stayed on the frame.
func TestYearIsNoGrepNumber(t *testing.T) {
	wantBoth(t, "eu-stack/pasted_issue.md", "goroutines/ci_log.txt")

	// silent: grep -n -C's numbers still come off
	in := "12-Thread 1 (Thread 0x7f0 (LWP 5)):\n13:#0  0x00007f0 in __lll_lock_wait () from /lib64/libpthread.so.0\n14-#1  0x00007f1 in main () at m.c:3\n"
	wantShapes(t, "grep -n -C", in, "threads: 5/2")
}

// TestCoredumpIndentation: coredumpctl info indents a thread's header
// and its frames alike, the journal's message neither: a header at
// another indentation than the frame above it is another paste's (an
// indented excerpt, then a flush one: both were one process).
func TestCoredumpIndentation(t *testing.T) {
	wantBoth(t, "systemd-coredump/varnish_4121_threads_excerpt.txt", "systemd-coredump/libvirt_bots_1350_excerpt.txt")

	// silent: one entry's threads at one indentation (and a second
	// entry's header before its threads: TestCoredumpDetected)
	wantOne(t, "libvirt", stored(t, "systemd-coredump", "libvirt_bots_1350_excerpt.txt"))
}

// TestPyBtThenThreads: gdb's py-bt prints the current thread's Python
// stack without a thread header; a thread header right after it, with
// no prompt between, is another paste's (pstack's threads were taken
// into the py-bt's process).
func TestPyBtThenThreads(t *testing.T) {
	wantBoth(t, "gdb/pybt_sonic_mgmt_22212_pasted.md", "gdb/pstack_mutex_o2.txt")
	wantBoth(t, "gdb/pybt_sonic_mgmt_22212_pasted.md", "gdb/pstack_threads10.txt")
	// silent: with the prompt of the next command between, one session
	// (TestPyBtThenSession)
}

// TestFaulthandlerLayoutAhead: a dump of one thread shows no blank line
// between threads, so a header right under its last frame is told by
// the lines after it: where the next dump shows faulthandler's blank
// line between its threads, the paste keeps them, and the header began
// another dump.
func TestFaulthandlerLayoutAhead(t *testing.T) {
	wantBoth(t, "faulthandler/lock_sigusr2_current_only.txt", "faulthandler/pyfork_lock_sigusr1.txt")
	wantBoth(t, "faulthandler/py_logging_fork_worker.txt", "faulthandler/pyfork_lock_sigusr1.txt")

	// silent: where the paste lost every blank line, the threads after
	// stay one dump (lock_sigabrt, edited: its blank lines taken out)
	abort := strings.ReplaceAll(stored(t, "faulthandler", "lock_sigabrt.txt"), "\n\n", "\n")
	wantOne(t, "blank lines lost", abort)
}
