package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// abba: thread 11 `transfer` holds accounts_a and waits for accounts_b,
// thread 12 `audit` the other way round; main joins.
func abba(ownerA, ownerB int) *stacks.Process {
	return proc(10,
		on(thread(10, "main", joinFrames("main")...), joinWait(11)),
		on(thread(11, "transfer", mutexFrames("transfer", "worker")...), named(lockWait(0x601040, ownerB, 0), "accounts_b")),
		on(thread(12, "audit", mutexFrames("audit", "worker")...), named(lockWait(0x601080, ownerA, 0), "accounts_a")),
	)
}

func TestLockOrderCycleABBA(t *testing.T) {
	d := one(t, "lock-order-cycle", live(abba(11, 12)))
	complete(t, d)
	if d.Confidence != High {
		t.Errorf("confidence %s", d.Confidence)
	}
	want := "2 threads deadlock in a cycle: thread 11 `transfer` waits for mutex `accounts_b` (0x601040) held by thread 12 `audit`, " +
		"which waits for mutex `accounts_a` (0x601080) held by thread 11 `transfer`"
	if d.Summary != want {
		t.Errorf("summary\n got %s\nwant %s", d.Summary, want)
	}
	sameInts(t, "tids", d.Tids, 11, 12)
	has(t, "fix", d.Fix, "`accounts_b`", "`accounts_a`", "one global order")
	if len(d.Chain) != 3 || !strings.Contains(d.Chain[2], "closes the cycle") {
		t.Errorf("chain %q", d.Chain)
	}
	for _, id := range []string{"self-deadlock", "orphaned-lock", "loader-lock", "lost-wakeup"} {
		none(t, id, live(abba(11, 12)))
	}
}

func TestLockOrderCycleThree(t *testing.T) {
	p := proc(20,
		on(thread(21, "a", mutexFrames("step_a")...), lockWait(0x1, 22, 0)),
		on(thread(22, "b", mutexFrames("step_b")...), lockWait(0x2, 23, 0)),
		on(thread(23, "c", mutexFrames("step_c")...), lockWait(0x3, 21, 0)),
	)
	d := one(t, "lock-order-cycle", live(p))
	sameInts(t, "tids", d.Tids, 21, 22, 23)
	has(t, "summary", d.Summary, "3 threads", "held by thread 22 `b`", "held by thread 23 `c`", "held by thread 21 `a`")
}

func TestLockOrderCycleTwoDisjoint(t *testing.T) {
	p := abba(11, 12)
	q := proc(30,
		on(thread(31, "x", mutexFrames("fx")...), lockWait(0x10, 32, 0)),
		on(thread(32, "y", mutexFrames("fy")...), lockWait(0x20, 31, 0)),
	)
	ds := match(t, "lock-order-cycle", live(p, q))
	if len(ds) != 2 {
		t.Fatalf("%d diagnoses, want 2: %s", len(ds), dump(ds))
	}
	sameInts(t, "first cycle", ds[0].Tids, 11, 12)
	sameInts(t, "second cycle", ds[1].Tids, 31, 32)
}

// The cxx_mutex patient: main holds the mutex and joins the thread that
// waits for it.
func TestLockOrderCycleThroughJoin(t *testing.T) {
	p := proc(40,
		on(thread(40, "main", joinFrames("std::thread::join()", "main")...), joinWait(41)),
		on(thread(41, "locker", mutexFrames("std::mutex::lock()", "hangdoc_patient::Guarded<int>::update(int)")...), lockWait(0x4040, 40, 0)),
	)
	d := one(t, "lock-order-cycle", live(p))
	has(t, "summary", d.Summary, "waits in pthread_join for thread 41 `locker`", "held by thread 40 `main`")
	has(t, "fix", d.Fix, "before pthread_join")
	lacks(t, "fix", d.Fix, "global order")
}

func TestLockOrderNoCycle(t *testing.T) {
	// a chain to a running thread is contention, not a deadlock
	none(t, "lock-order-cycle", live(proc(1,
		on(thread(1, "a", mutexFrames("f")...), lockWait(0x1, 2, 0)),
		spinning(thread(2, "b", "compute")),
	)))
}

func TestLockOrderCycleElision(t *testing.T) {
	// owners are read, but lock elision recorded none: no owner claimed
	d := one(t, "lock-order-cycle", live(abba(0, 0)))
	if d.Confidence != Low {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "2 threads of process 10 wait for locks, 1 more waits", "no owner is recorded")
	for _, c := range append(d.Chain, d.Summary) {
		lacks(t, "text", c, "held by")
	}
	sameInts(t, "tids", d.Tids, 11, 12)
	none(t, "self-deadlock", live(abba(0, 0)))
	none(t, "orphaned-lock", live(abba(0, 0)))
}

func TestLockOrderCyclePastedDump(t *testing.T) {
	p := proc(10, thread(10, "main", joinFrames("main")...),
		thread(11, "transfer", mutexFrames("transfer")...), thread(12, "audit", mutexFrames("audit")...))
	d := one(t, "lock-order-cycle", pasted(p))
	if d.Confidence != Low {
		t.Errorf("confidence %s", d.Confidence)
	}
	// main's stack cut short in the futex: still blocked, not a sleeper
	p.Threads[0] = thread(10, "main", "__futex_abstimed_wait_common64")
	one(t, "lock-order-cycle", pasted(p))
	none(t, "lost-wakeup", pasted(p))
	// a thread blocked elsewhere (I/O) may be the holder: no claim
	p.Threads = append(p.Threads, on(thread(13, "net", "read", "serve"), &stacks.Wait{Syscall: "read", Fd: 3}))
	none(t, "lock-order-cycle", pasted(p))
}
