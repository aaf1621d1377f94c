package stacks

import (
	"strings"
	"testing"
)

func TestGoDeadlockGoldens(t *testing.T) { checkDumpGoldens(t, "go-deadlock", ParseGoDeadlock, 0) }

func FuzzParseGoDeadlock(f *testing.F) {
	fuzzDumps(f, "go-deadlock", ParseGoDeadlock, nil,
		"POTENTIAL DEADLOCK: Inconsistent locking. saw this ordering in one goroutine:\nhappened before\na.go:1 main.f { mu.Lock() } <<<<<\n\nhappened after\na.go:2 main.g { mu2.Lock() } <<<<<\n",
		"POTENTIAL DEADLOCK:\nPrevious place where the lock was grabbed\ngoroutine 5 lock 0xc000010000\n  main.f()\n      /x/a.go:1 +0x1f\n\nHave been trying to lock it again for more than 30s\ngoroutine 7 lock 0xc000010000\n  main.g()\n      /x/a.go:2 +0x2f\n\nHere is what goroutine 5 doing now\ngoroutine 5 [chan receive]:\nmain.f(0x1)\n\t/x/a.go:3 +0x1d\ncreated by main.main in goroutine 1\n\t/x/a.go:9 +0x20\n")
}

// TestGoDeadlockTimeout: the timeout report, hand-written after
// deadlock.go's checkDeadlock (the older two-line stack of printStack,
// then runtime.Stack's goroutine): each stack a thread named by the
// header and its label, the goroutine and the lock in its notes.
func TestGoDeadlockTimeout(t *testing.T) {
	in := "POTENTIAL DEADLOCK:\nPrevious place where the lock was grabbed\ngoroutine 5 lock 0xc000010000\n  main.f()\n      /x/a.go:1 +0x1f\n\n" +
		"Have been trying to lock it again for more than 30s\ngoroutine 7 lock 0xc000010000\n  main.g()\n      /x/a.go:2 +0x2f\n\n" +
		"Here is what goroutine 5 doing now\ngoroutine 5 [chan receive]:\nmain.f(0x1)\n\t/x/a.go:3 +0x1d\ncreated by main.main in goroutine 1\n\t/x/a.go:9 +0x20\n"
	snap, skipped, err := ParseGoDeadlock(strings.NewReader(in))
	if err != nil || len(skipped) > 0 {
		t.Fatalf("err %v, skipped %v", err, skipped)
	}
	ths := snap.Processes[0].Threads
	want := []struct{ name, fn, file string }{
		{"POTENTIAL DEADLOCK: Previous place where the lock was grabbed", "main.f", "/x/a.go"},
		{"POTENTIAL DEADLOCK: Have been trying to lock it again for more than 30s", "main.g", "/x/a.go"},
		{"POTENTIAL DEADLOCK: Here is what goroutine 5 doing now", "main.f", "/x/a.go"},
	}
	if len(ths) != len(want) {
		t.Fatalf("%d threads, want %d", len(ths), len(want))
	}
	for i, w := range want {
		th := ths[i]
		if th.Name != w.name || len(th.Stack) != 1 || th.Stack[0].Func != w.fn || th.Stack[0].File != w.file || len(th.Notes) != 1 {
			t.Errorf("thread %d: %q %+v %q", i, th.Name, th.Stack, th.Notes)
		}
	}
	if !strings.Contains(ths[1].Notes[0], "goroutine 7, lock 0xc000010000") {
		t.Errorf("notes %q", ths[1].Notes)
	}
}
