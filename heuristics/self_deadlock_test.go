package heuristics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// The OpenBLAS shape: exec_blas_async holds server_lock and calls
// blas_thread_init, which locks it again.
func openblasRelock(kind uint32) *stacks.Snapshot {
	return live(proc(4700,
		on(thread(4711, "worker", mutexFrames("blas_thread_init", "exec_blas_async", "dgemm_")...),
			named(lockWait(0x7f00aa00, 4711, kind), "server_lock")),
		on(thread(4700, "main", joinFrames("main")...), joinWait(4711)),
	))
}

func TestSelfDeadlock(t *testing.T) {
	d := one(t, "self-deadlock", openblasRelock(0))
	complete(t, d)
	if d.Confidence != High {
		t.Errorf("confidence %s, want high", d.Confidence)
	}
	if want := "thread 4711 `worker` waits for mutex `server_lock` (0x7f00aa00) which it already holds"; d.Summary != want {
		t.Errorf("summary %q\nwant %q", d.Summary, want)
	}
	has(t, "chain", d.Chain[0], "`blas_thread_init`")
	sameInts(t, "tids", d.Tids, 4711)
	sameInts(t, "pids", d.Pids, 4700)
	// not also a one-thread lock-order cycle, nor anything else
	for _, id := range []string{"lock-order-cycle", "orphaned-lock", "fork-inherited-lock", "lost-wakeup", "signal-handler-reentry"} {
		none(t, id, openblasRelock(0))
	}
}

func TestSelfDeadlockRecursiveIsNot(t *testing.T) {
	none(t, "self-deadlock", openblasRelock(kindRecursive))
	none(t, "self-deadlock", openblasRelock(kindRecursive|kindRobust))
}

func TestSelfDeadlockErrorcheck(t *testing.T) {
	d := one(t, "self-deadlock", openblasRelock(kindErrCheck))
	if d.Confidence != Medium {
		t.Errorf("confidence %s, want medium", d.Confidence)
	}
	has(t, "chain", d.Chain[2], "EDEADLK", "stuck anyway")
}

func TestSelfDeadlockOwnedByAnother(t *testing.T) {
	none(t, "self-deadlock", live(proc(1,
		on(thread(1, "a", mutexFrames("f")...), lockWait(0x10, 2, 0)),
		thread(2, "b", "compute"),
	)))
}

func TestSelfDeadlockPastedDump(t *testing.T) {
	snap := pasted(proc(4700,
		thread(4711, "worker", mutexFrames("blas_thread_init", "exec_blas_async")...),
		thread(4700, "main", joinFrames("main")...),
	))
	d := one(t, "self-deadlock", snap)
	complete(t, d)
	if d.Confidence != Low {
		t.Errorf("confidence %s, want low", d.Confidence)
	}
	has(t, "summary", d.Summary, "thread 4711 `worker`", "`blas_thread_init`")
	lacks(t, "summary", d.Summary, "held by")
	none(t, "lock-order-cycle", snap)
	// one thread's bt pasted alone: the others may hold the lock, so the
	// verdict is hedged and says what would settle it
	alone := one(t, "self-deadlock", pasted(proc(4700, snap.Processes[0].Threads[0])))
	if alone.Confidence != Low {
		t.Errorf("one thread pasted alone: confidence %s, want low", alone.Confidence)
	}
	has(t, "evidence", strings.Join(alone.Evidence, "\n"), "the paste holds only this thread", "thread apply all bt")
	// a running thread could be the holder: no claim
	snap.Processes[0].Threads = append(snap.Processes[0].Threads, spinning(thread(4712, "busy", "compute")))
	none(t, "self-deadlock", snap)
}

// TestSelfDeadlockReturnedCall: a call tree drawn by hand (RTKLIB#170's
// real paste) shows the first lock(&lock_trace) had returned while its
// caller is still on the stack, and the innermost call locks the same
// name again: a self-deadlock. The variants are that paste edited by
// hand: an unlock of it between, another lock, a lock through a pointer.
func TestSelfDeadlockReturnedCall(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "testdata", "corpus", "abridged-rtklib-170-trace-relocks-lock-trace", "dump.txt"))
	if err != nil {
		t.Fatal(err)
	}
	paste := string(b)
	parse := func(text string) *stacks.Snapshot {
		t.Helper()
		snap, _, _, err := stacks.Parse(strings.NewReader(text), "")
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	d := one(t, "self-deadlock", parse(paste))
	complete(t, d)
	if d.Confidence != Medium {
		t.Errorf("confidence %s, want medium", d.Confidence)
	}
	has(t, "summary", d.Summary, "`lock_trace`", "`traceswap` took earlier", "`lock` returned")
	has(t, "evidence", strings.Join(d.Evidence, "\n"), "the same lock `lock_trace`", "returned call `lock`")

	unlocked := strings.Replace(paste, "        reppath()  ", "        unlock(&lock_trace) rtkcmn.c:2775\n        reppath()  ", 1)
	if unlocked == paste {
		t.Fatal("the paste changed: no reppath line to put an unlock before")
	}
	none(t, "self-deadlock", parse(unlocked))
	other := strings.Replace(paste, "lock(&lock_trace)       rtkcmn.c:2772  first lock", "lock(&lock_log)         rtkcmn.c:2772  first lock", 1)
	none(t, "self-deadlock", parse(other))
	pointer := strings.ReplaceAll(paste, "&lock_trace", "&t->lock")
	none(t, "self-deadlock", parse(pointer))
}
