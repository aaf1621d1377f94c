package heuristics_test

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
)

// A paste of one goroutine (no goroutine 1, no SIGQUIT banner or runtime
// message: a fragment of the dump) waiting minutes to lock a mutex, its
// stack cut before the go statement that started it: "every goroutine is
// blocked" cannot be read from it; the frames below the cut that may hold
// the lock can, so it is a re-entered lock, low (syncthing#2987's shape,
// written by hand with other names). Its stack whole, nothing on it holds
// the lock: no claim of re-entry; with goroutine 1 in the dump, the
// whole-dump verdict as before.
func TestGoLoneLockerInFragment(t *testing.T) {
	frames := with(mutexWait("0xc000300000"), "main.(*hub).Notify(0xc000300000, 0x1) /src/hub.go:80", "main.(*store).saveLocked(0xc000400000) /src/store.go:120")
	cut := gr(28, "sync.Mutex.Lock, 2 minutes", "", frames...)
	cut = cut[:strings.Index(cut, "runtime.goexit")] // the paste ends before the goroutine's start
	ds := diagnoseGoText(t, cut)
	if d := ds[0]; d.ID != "self-deadlock" || d.Confidence != heuristics.Low || !strings.Contains(d.Summary, "paste holds no other goroutine") {
		t.Errorf("lone cut locker: got %s %s: %s", d.ID, d.Confidence, d.Summary)
	}
	for _, d := range ds {
		if d.ID == "all-goroutines-asleep" {
			t.Errorf("a fragment read as every goroutine: %s", d.Summary)
		}
	}
	whole := gr(28, "sync.Mutex.Lock, 2 minutes", "main.startHub /src/hub.go:20 in 1", frames...)
	for _, d := range diagnoseGoText(t, whole) {
		if d.ID == "self-deadlock" || d.ID == "all-goroutines-asleep" {
			t.Errorf("a whole stack that holds nothing, in a fragment: %s %s", d.ID, d.Summary)
		}
	}
	fresh := strings.Replace(cut, ", 2 minutes", "", 1)
	for _, d := range diagnoseGoText(t, fresh) {
		if d.ID == "self-deadlock" {
			t.Errorf("a lock waited for under a minute: %s", d.Summary)
		}
	}
	mainSelect := gr(1, "select (no cases)", "", "runtime.gopark(0x1?) /go/src/runtime/proc.go:462", "runtime.block() /go/src/runtime/select.go:104", "main.main() /src/main.go:9")
	if d := diagnoseGoText(t, mainSelect+"\n"+cut)[0]; d.ID != "all-goroutines-asleep" {
		t.Errorf("goroutine 1 in the dump: got %s, want all-goroutines-asleep: %s", d.ID, d.Summary)
	}
}

// A dump with no lock addresses (Go 1.20+ prints `RLock(...)` and `0x…?`):
// a reader queued behind the one writer of an RWMutex, and a third
// goroutine waiting on another mutex, all for minutes, nothing running:
// the read lock the writer waits for may be the third goroutine's, a
// cycle through the writer (sarama#3191's shape, written by hand with
// other names). Without the third goroutine the reader alone could hold
// it: the recursive RLock stays the verdict.
func TestGoWriterPreferenceCycle(t *testing.T) {
	reader := "goroutine 11 [sync.RWMutex.RLock, 40 minutes]:\n" +
		"sync.runtime_SemacquireRWMutexR(0xc000100098?, 0x8e?, 0xc000100080?)\n\truntime/sema.go:100 +0x25\n" +
		"sync.(*RWMutex).RLock(...)\n\tsync/rwmutex.go:72\n" +
		"example.com/q.(*table).snapshot(0xc000200000)\n\texample.com/q/table.go:51 +0x33d\n"
	writer := "goroutine 12 [sync.RWMutex.Lock, 40 minutes]:\n" +
		"sync.runtime_SemacquireRWMutex(0xc000300f00?, 0x0?, 0xc000200080?)\n\truntime/sema.go:105 +0x25\n" +
		"sync.(*RWMutex).Lock(0xc000400cb0?)\n\tsync/rwmutex.go:153 +0x6a\n" +
		"example.com/q.(*table).drop(0xc000200000, 0x0)\n\texample.com/q/table.go:90 +0x5a\n"
	other := "goroutine 13 [sync.Mutex.Lock, 40 minutes]:\n" +
		"sync.runtime_SemacquireMutex(0x0?, 0xc0?, 0x5c78a8?)\n\truntime/sema.go:95 +0x25\n" +
		"sync.(*Mutex).lockSlow(0xc000500008?)\n\tsync/mutex.go:173 +0x15d\n" +
		"sync.(*Mutex).Lock(...)\n\tsync/mutex.go:92\n" +
		"example.com/q.(*table).flush(0xc000200000)\n\texample.com/q/table.go:120 +0x77\n"
	d := diagnoseGoText(t, reader+"\n"+writer+"\n"+other)[0]
	if d.ID != "lock-order-cycle" || d.Confidence != heuristics.Low || !strings.Contains(d.Summary, "through a waiting writer") {
		t.Errorf("reader, writer and another lock waiter: got %s %s: %s", d.ID, d.Confidence, d.Summary)
	}
	if d := diagnoseGoText(t, reader+"\n"+writer)[0]; d.ID != "self-deadlock" {
		t.Errorf("reader and writer alone: got %s %s, want the recursive RLock (self-deadlock)", d.ID, d.Summary)
	}
}
