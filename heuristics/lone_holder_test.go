package heuristics

import (
	"os"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// One thread of a real gdb dump, as pastes hold it: testdata/dumps/gdb/
// abba.txt is gdb's `thread apply all bt` of the abba patient (two
// threads each holding one mutex and waiting for the other); the paste
// keeps only thread 3's section. The thread began in start_thread, so
// the process has other threads the paste left out, and nothing on its
// stack shows it holding lock_a: the holder is most likely one of them,
// the other side of a cycle.
func TestLoneWaiterOfStartedThread(t *testing.T) {
	raw, err := os.ReadFile("../testdata/dumps/gdb/abba.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	from := strings.Index(text, "Thread 3 (")
	to := strings.Index(text, "Thread 2 (")
	if from < 0 || to < from {
		t.Fatalf("abba.txt: no thread 3 section")
	}
	snap, _, _, err := stacks.Parse(strings.NewReader(text[from:to]), "gdb")
	if err != nil {
		t.Fatal(err)
	}
	d := one(t, "lock-order-cycle", snap)
	complete(t, d)
	sameInts(t, "tids", d.Tids, 355)
	if d.Confidence != Low {
		t.Errorf("confidence %s, want low", d.Confidence)
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "lock_a", "started by the process")
	none(t, "self-deadlock", snap)
}

// Written by hand: a lone waiter on a recursive lock is not waiting for
// itself (a holder re-taking a recursive lock does not wait), so the
// holder is another thread; on a plain lock with nothing to say the
// process has other threads (a bare `bt` of the main thread), the
// self-deadlock reading stays.
func TestLoneWaiterOnRecursiveLock(t *testing.T) {
	rec := thread(4711, "", "__lll_lock_wait", "pthread_mutex_lock", "g_rec_mutex_lock", "gst_element_set_state_func", "on_pad_added")
	d := one(t, "lock-order-cycle", pasted(proc(100, rec)))
	has(t, "chain", d.Chain[1], "`g_rec_mutex_lock` takes a recursive lock")
	none(t, "self-deadlock", pasted(proc(100, rec)))

	rec = thread(4711, "", "__lll_lock_wait", "pthread_mutex_lock", "__gthread_recursive_mutex_lock", "Object::lock")
	one(t, "lock-order-cycle", pasted(proc(100, rec)))

	plain := thread(4711, "", "__lll_lock_wait", "pthread_mutex_lock", "g_mutex_lock", "cache_lookup", "main")
	one(t, "self-deadlock", pasted(proc(100, plain)))
	none(t, "lock-order-cycle", pasted(proc(100, plain)))

	// The whole process is this one thread (its main, tid = pid): a
	// holder elsewhere would have to have exited; no cycle is claimed.
	whole := thread(100, "", "__lll_lock_wait", "pthread_mutex_lock", "g_rec_mutex_lock", "flush", "main")
	none(t, "lock-order-cycle", pasted(proc(100, whole)))
}

// A paste that shows one thread twice (gdb's `thread 3` switch and two
// `frame` outputs, then its `bt`) is one thread: thread 3's frames of the
// real abba dump, frames #0 and #4 shown first on their own as gdb's
// `frame` prints them, are one lone waiter, not two waiters in a cycle among
// themselves.
func TestThreadShownTwice(t *testing.T) {
	raw, err := os.ReadFile("../testdata/dumps/gdb/abba.txt")
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	sec := text[strings.Index(text, "Thread 3 ("):strings.Index(text, "Thread 2 (")]
	frames := sec[strings.Index(sec, "#0 "):]
	lines := strings.SplitAfter(frames, "\n")
	paste := "[Switching to thread 3 (Thread 0x7fba623906c0 (LWP 355))]\n" + lines[0] + lines[4] + frames
	snap, _, _, err := stacks.Parse(strings.NewReader(paste), "gdb")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(snap.Processes[0].Threads); n != 2 {
		t.Fatalf("the parser read %d threads, want the 2 copies", n)
	}
	d := one(t, "lock-order-cycle", snap)
	sameInts(t, "tids", d.Tids, 355)
	lacks(t, "summary", d.Summary, "2 threads")
}

// Written by hand in gdb's py-bt form: a Python thread waiting in an
// RLock's __enter__, the one thread of the paste. An RLock's holder
// re-takes it without waiting, so the holder is another thread; `poll`
// further down is another file's poll, not a re-entry.
func TestPyBTRLockWaiter(t *testing.T) {
	const paste = `Thread 31 (Thread 0x7f654cff9700 (LWP 23498)):
Traceback (most recent call first):
  <built-in method __enter__ of _thread.RLock object at remote 0x7f65684549f0>
  File "/srv/app/attribute.py", line 511, in poll
    with self.__read_lock:
  File "/srv/app/device.py", line 372, in poll
    return self.__pollReply(attrs, req_id)
  File "/usr/lib/python3.5/threading.py", line 862, in run
    self._target(*self._args, **self._kwargs)
`
	snap, _, _, err := stacks.Parse(strings.NewReader(paste), "gdb")
	if err != nil {
		t.Fatal(err)
	}
	if f := snap.Processes[0].Threads[0].Stack[0].Func; f != "_thread.RLock.__enter__" {
		t.Errorf("frame 0 is %q, want the method with its type", f)
	}
	d := one(t, "lock-order-cycle", snap)
	has(t, "chain", strings.Join(d.Chain, "\n"), "recursive lock")
	none(t, "self-deadlock", snap)
}

// Go stacks pasted as bare frame lists, as people abridge them: the two
// ABBA goroutines of the real SIGQUIT dump testdata/dumps/goroutines/
// abba_sigquit.txt, each cut to its function names from sync's mutex
// wait outwards, headers dropped (no goroutine id, no status). Two lock
// waiters and nothing running: most likely a lock-order cycle (low).
func TestGoFrameListLockWaiters(t *testing.T) {
	raw, err := os.ReadFile("../testdata/dumps/goroutines/abba_sigquit.txt")
	if err != nil {
		t.Fatal(err)
	}
	var lists []string
	for _, block := range strings.Split(string(raw), "\n\n") {
		i := strings.Index(block, "internal/sync.runtime_SemacquireMutex(")
		if i < 0 {
			continue
		}
		var fns []string
		for _, line := range strings.Split(block[i:], "\n") {
			if line == "" || line[0] == '\t' || line[0] == ' ' || strings.HasPrefix(line, "created by") {
				continue
			}
			if i := strings.LastIndexByte(line, '('); i > 0 {
				line = line[:i] // the arguments
			}
			fns = append(fns, line)
		}
		lists = append(lists, strings.Join(fns, "\n"))
	}
	if len(lists) != 2 {
		t.Fatalf("%d goroutines in a mutex wait in abba_sigquit.txt, want the 2 of the cycle", len(lists))
	}
	snap, _, _, err := stacks.Parse(strings.NewReader(strings.Join(lists, "\n\n")+"\n"), "frames")
	if err != nil {
		t.Fatal(err)
	}
	d := one(t, "lock-order-cycle", snap)
	if d.Confidence != Low {
		t.Errorf("confidence %s, want low", d.Confidence)
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "main.(*bank).transfer")

}
