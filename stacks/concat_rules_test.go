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
