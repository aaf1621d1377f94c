package heuristics

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// topOf diagnoses a pasted dump as `hangdoc analyze` does and returns its
// first verdict.
func topOf(t *testing.T, text, format string) Diagnosis {
	t.Helper()
	snap, _, _, err := stacks.Parse(strings.NewReader(text), format)
	if err != nil {
		t.Fatal(err)
	}
	ds := Diagnose(snap, Options{}).Diagnoses
	if len(ds) == 0 {
		t.Fatalf("no verdict")
	}
	return ds[0]
}

func corpusDump(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile("../testdata/corpus/" + name + "/dump.txt")
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// A real lldb paste (pytorch#11419): the main thread waits in take_gil,
// asked for by pybind11's gil_scoped_acquire, the only thread in the
// paste. pybind11's known bug of restoring a thread state on a thread
// that holds the GIL makes it a self-deadlock; the same lone GIL wait
// asked for by the interpreter itself (hand-written: time.sleep taking
// the GIL back) stays the hedged gil-deadlock, with nothing to say the
// waiter holds it.
func TestLoneGILWaiterOfPybind11Guard(t *testing.T) {
	d := topOf(t, corpusDump(t, "lldb-pytorch-11419-pybind11-gil-reacquire-py37"), "")
	if d.ID != "self-deadlock" || d.Confidence != Low {
		t.Fatalf("got %s (%s), want self-deadlock (low): %s", d.ID, d.Confidence, dump([]Diagnosis{d}))
	}
	if d.KnownIssue == nil || d.KnownIssue.ID != "pybind11-gil-scoped-acquire-held" {
		t.Errorf("known issue %+v, want pybind11-gil-scoped-acquire-held", d.KnownIssue)
	}
	has(t, "summary", d.Summary, "GIL guard", "waits for itself")

	sleeper := `* thread #1, name = 'python3', stop reason = signal SIGSTOP
  * frame #0: 0x00007fff773e8a16 libsystem_kernel.dylib` + "`" + `__psynch_cvwait + 10
    frame #1: 0x00007fff775b1589 libsystem_pthread.dylib` + "`" + `_pthread_cond_wait + 732
    frame #2: 0x000000010015ff01 python` + "`" + `take_gil + 417
    frame #3: 0x0000000100160246 python` + "`" + `PyEval_RestoreThread + 22
    frame #4: 0x0000000100190246 python` + "`" + `time_sleep + 118
`
	d = topOf(t, sleeper, "lldb")
	if d.ID != "gil-deadlock" || d.KnownIssue != nil {
		t.Errorf("interpreter's own GIL wait: got %s %+v, want gil-deadlock without a known issue", d.ID, d.KnownIssue)
	}
}

// A real goroutine paste (milvus#32435): one goroutine, read-locking an
// RWMutex whose address the paste does not give (`0x2?`), for 1026
// minutes. A reader waits only behind a writer, which the paste left
// out: most likely a recursive RLock (low). With another goroutine in the
// paste (hand-written: one blocked in a network read), that goroutine
// could hold the lock for writing, and the lone-reader reading goes.
func TestGoLoneReaderWithoutAddress(t *testing.T) {
	text := corpusDump(t, "goroutines-milvus-32435-recursive-rlock-segmentmanager")
	d := topOf(t, text, "")
	if d.ID != "self-deadlock" || d.Confidence != Low {
		t.Fatalf("got %s (%s), want self-deadlock (low): %s", d.ID, d.Confidence, dump([]Diagnosis{d}))
	}
	has(t, "summary", d.Summary, "recursive RLock", "address not known")

	reader := `goroutine 7 [sync.RWMutex.RLock, 12 minutes]:
sync.runtime_SemacquireRWMutexR(0x2?, 0x10?, 0x59ce2e0?)
	/usr/local/go/src/runtime/sema.go:82 +0x26
sync.(*RWMutex).RLock(...)
	/usr/local/go/src/sync/rwmutex.go:71
example.com/store.(*Store).Get(0xc0005b2db0?, 0x1?)
	/src/store/store.go:40 +0x45

goroutine 9 [IO wait, 12 minutes]:
internal/poll.runtime_pollWait(0x7f22dfe541a0, 0x72)
	/usr/local/go/src/runtime/netpoll.go:306 +0x89
internal/poll.(*FD).Read(0xc000fc8080, {0xc001798000, 0x8000, 0x8000})
	/usr/local/go/src/internal/poll/fd_unix.go:167 +0x299
example.com/store.(*Store).reload(0xc0005b2db0)
	/src/store/store.go:90 +0x45
`
	snap, _, _, err := stacks.Parse(strings.NewReader(reader), "goroutines")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Diagnose(snap, Options{}).Diagnoses {
		if d.ID == "self-deadlock" {
			t.Errorf("a goroutine that may hold the lock is in the paste: got %s", dump([]Diagnosis{d}))
		}
	}
}

// Two real `thread N` + `bt` sessions of one lock waiter each: istgt#197
// (gdb's thread 14, a connection worker) and wlroots#1857 (thread 1, the
// compositor's main thread). Nothing on either stack shows the waiter
// holding its lock. Thread 14 is one of at least 14 threads the paste
// does not show, so the holder is most likely one of them (a lock-order
// cycle, low); of thread 1 nothing says the process has another, and the
// self-deadlock reading stays.
func TestLoneWaiterNumberedByGDB(t *testing.T) {
	d := topOf(t, corpusDump(t, "gdb-istgt-197-trans-mutex-wait-lu-task-mutex"), "")
	if d.ID != "lock-order-cycle" || d.Confidence != Low {
		t.Fatalf("thread 14: got %s (%s), want lock-order-cycle (low): %s", d.ID, d.Confidence, dump([]Diagnosis{d}))
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "after thread 1", "the paste does not show")
	sameInts(t, "tids", d.Tids, 2268)

	d = topOf(t, corpusDump(t, "gdb-wlroots-1857-egl-mutex-same-thread"), "")
	if d.ID != "self-deadlock" {
		t.Errorf("thread 1: got %s (%s), want self-deadlock: %s", d.ID, d.Confidence, dump([]Diagnosis{d}))
	}
}

// A real excerpt (RawTherapee#4576) that starts inside one thread's stack
// (its frames #0-#8 cut) and holds thread 1338 waiting for the GDK lock.
// The fragment's wait is not in the paste, so it neither runs nor
// waits as far as the paste shows: 1338 is the one thread whose wait is
// there, and the fragment says the process has others: lock-order-cycle
// (low). Without the fragment's top cut (hand-made: its first frame
// renumbered #0, a thread in a sigc functor, running as far as a paste
// can say), the paste has a thread that is not waiting, and no lone
// waiter verdict is given.
func TestLoneWaiterBesideAFragment(t *testing.T) {
	text := corpusDump(t, "gdb-rawtherapee-4576-gdk-mutex-vs-updater-mutex-annotated")
	d := topOf(t, text, "")
	if d.ID != "lock-order-cycle" || d.Confidence != Low {
		t.Fatalf("got %s (%s), want lock-order-cycle (low): %s", d.ID, d.Confidence, dump([]Diagnosis{d}))
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "innermost frames it cut")
	sameInts(t, "tids", d.Tids, 9319)

	whole := strings.Replace(text, "#9  0x0000555555e3f4e2", "#0  0x0000555555e3f4e2", 1)
	for _, n := range []string{"10", "11", "12", "13", "14", "15"} {
		m, _ := strconv.Atoi(n)
		whole = strings.Replace(whole, "#"+n+" 0x", "#"+strconv.Itoa(m-9)+"  0x", 1)
	}
	snap, _, _, err := stacks.Parse(strings.NewReader(whole), "gdb")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Diagnose(snap, Options{}).Diagnoses {
		if d.ID == "lock-order-cycle" || d.ID == "self-deadlock" {
			t.Errorf("a thread not waiting is in the paste: got %s", dump([]Diagnosis{d}))
		}
	}
}

// A real annotated paste (libwebsockets#2734): a thread waits in
// lws_mutex_refcount_lock, libwebsockets' owner-counting mutex, which its
// owner re-takes without waiting (the vocabulary says recursive): the
// waiter waits for another thread's hold, most likely one side of a
// cycle, not for itself.
func TestLoneWaiterOnRefcountMutex(t *testing.T) {
	d := topOf(t, corpusDump(t, "gdb-libwebsockets-2734-pt-lock-context-lock-annotated"), "")
	if d.ID != "lock-order-cycle" || d.Confidence != Low {
		t.Fatalf("got %s (%s), want lock-order-cycle (low): %s", d.ID, d.Confidence, dump([]Diagnosis{d}))
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "`lws_mutex_refcount_lock` takes a recursive lock")
}

// Written by hand: on macOS a thread id is not a pid, so a lone waiter
// whose tid differs from the pid is not thereby one of several threads
// (a thread of a .dylib stack keeps the self-deadlock reading, hedged).
func TestLoneWaiterTidOnMacOS(t *testing.T) {
	th := thread(4241641, "", "__psynch_mutexwait", "_pthread_mutex_firstfit_lock_slow", "cache_lookup")
	for i := range th.Stack {
		th.Stack[i].Module = "/usr/lib/system/libsystem_pthread.dylib"
	}
	th.Stack[2].Module = "/Applications/App.app/Contents/MacOS/App"
	snap := pasted(proc(78156, th))
	none(t, "lock-order-cycle", snap)
	one(t, "self-deadlock", snap)
}
