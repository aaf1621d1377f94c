package main

import (
	"strings"
	"testing"
)

// TestAnalyzeNoVerdict: a paste that holds too little for any verdict
// exits 4, not 0 ("nothing looks hung"), and says what it held and what
// to paste instead; a dump with a verdict of no hang still exits 0.
func TestAnalyzeNoVerdict(t *testing.T) {
	_, stderr, code, err := runWith("", "analyze", dump("pprof-goroutine/abba_debug1.txt"))
	if err != nil || code != exitNoVerdict || !strings.Contains(stderr, "no verdict from this evidence (1 process, 11 threads") || !strings.Contains(stderr, "debug=2") {
		t.Errorf("debug=1 profile: code %d err %v stderr %q", code, err, stderr)
	}
	oneThread := "Thread 7 (Thread 0x7f00 (LWP 12)):\n#0  0x00007f00 in ?? ()\n#1  0x00007f01 in ?? ()\n#2  0x00007f02 in ?? ()\n#3  0x00007f03 in ?? ()\n"
	out, stderr, code, _ := runWith(oneThread, "analyze", "-")
	if code != exitNoVerdict || !strings.Contains(stderr, "thread apply all bt") ||
		!strings.Contains(out, "holds 1 of the process's 7 or more threads") || !strings.Contains(out, "4 of 4 frames have no symbol") {
		t.Errorf("one thread of seven: code %d\nstdout %s\nstderr %s", code, out, stderr)
	}
	if _, _, code, _ := runWith("", "analyze", dump("gdb/sleeper.txt")); code != exitOK {
		t.Errorf("sleeper: code %d, want 0", code)
	}
}

// TestAnalyzeSkippedSummarised: junk between frames is said in a few
// lines, not one a skipped range.
func TestAnalyzeSkippedSummarised(t *testing.T) {
	var b strings.Builder
	b.WriteString("Thread 1 (Thread 0x7f00 (LWP 12)):\n")
	for i := 0; i < 5000; i++ {
		b.WriteString("#0  0x00007f00 in pthread_mutex_lock () from /lib/libc.so.6\nsome junk a reader wrote\n")
	}
	_, stderr, _, err := runWith(b.String(), "analyze", "-")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stderr, "\n"); n > maxSkipLines+3 || !strings.Contains(stderr, "more ranges skipped") {
		t.Errorf("%d lines on stderr:\n%.2000s", n, stderr)
	}
}
