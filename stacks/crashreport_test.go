package stacks

import (
	"strings"
	"testing"
)

func TestCrashReportGoldens(t *testing.T) { checkDumpGoldens(t, "crash-report", ParseCrashReport, 0) }

// TestCrashReportThreads: the threads of a report with their numbers,
// names or queues, frames with module, address and symbol (or the
// image's offset when unsymbolicated, or the source line), Markdown's
// bold "**psynch_mutexwait" back to its underscores; the header gives
// the pid, the path and the watchdog's reason.
func TestCrashReportThreads(t *testing.T) {
	snap, skipped := parseStoredDump(t, "crash-report", "looseleaf_deadlock.txt", ParseCrashReport)
	checkSkipped(t, skipped)
	p := snap.Processes[0]
	if p.Pid != 914 || !strings.HasSuffix(p.Exe, "/LooseLeaf") || !strings.Contains(p.Message, "8badf00d") {
		t.Errorf("pid %d exe %q message %q", p.Pid, p.Exe, p.Message)
	}
	th := p.Threads[0]
	if th.Tid != 0 || th.Name != "Thread 0 Dispatch queue: com.apple.main-thread" || len(th.Stack) != 3 {
		t.Fatalf("thread %+v", th)
	}
	if f := th.Stack[0]; f.Func != "__psynch_mutexwait" || f.Module != "libsystem_kernel.dylib" || f.PC != 0x32750ba8 {
		t.Errorf("frame 0 %+v", f)
	}
	if f := th.Stack[2]; f.Func != "-[MMScrapsOnPaperState addScrapWithPath:andRotation:andScale:]" || f.File != "MMScrapsOnPaperState.m" || f.Line != 364 {
		t.Errorf("frame 2 %+v", f)
	}
	snap, _ = parseStoredDump(t, "crash-report", "cwlutils_8badf00d.txt", ParseCrashReport)
	th = snap.Processes[0].Threads[0]
	if f := th.Stack[2]; f.Func != "" || f.Module != "SolutoHomeKit" || f.Offset != 301620 {
		t.Errorf("unsymbolicated frame %+v", f)
	}
	if len(th.Notes) != 1 || !strings.Contains(th.Notes[0], "crashed") {
		t.Errorf("crashed thread notes %q", th.Notes)
	}
	snap, _ = parseStoredDump(t, "crash-report", "mailcore2_webthread.txt", ParseCrashReport)
	if ths := snap.Processes[0].Threads; len(ths) != 2 || ths[0].Name != "Thread 4 WebThread" || len(ths[0].Stack) != 14 {
		t.Errorf("threads %+v", ths)
	}
}

// TestCrashReportDetected: a report is told from a spindump by its
// header (a Process: line followed by Path: and Identifier:) and from
// other frame lists by its thread headers, without --input-format.
func TestCrashReportDetected(t *testing.T) {
	for _, f := range storedDumps(t, "crash-report") {
		snap, _, format, err := Parse(strings.NewReader(string(readStoredDump(t, "crash-report", f[strings.LastIndexByte(f, '/')+1:]))), "")
		if err != nil || format != "crash-report" || len(snap.Processes) != 1 {
			t.Errorf("%s: format %q, %v", f, format, err)
		}
	}
}

func TestCrashReportBadInput(t *testing.T) {
	for _, in := range []string{"", "Process:  x [1]\nPath: /x\n", "hello\n"} {
		if _, _, err := ParseCrashReport(strings.NewReader(in)); err == nil || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: error %v, want one line", in, err)
		}
	}
}

func FuzzParseCrashReport(f *testing.F) {
	fuzzDumps(f, "crash-report", ParseCrashReport, nil,
		"Thread 0 Crashed::  Dispatch queue: q\n0   libsystem_kernel.dylib   0x1 **x + 8\n1   a b   0x2 0x1 + 0x10\t// y + 0x4\n2   m   0x3 f (a.c:1)\nBinary Images:\n")
}
