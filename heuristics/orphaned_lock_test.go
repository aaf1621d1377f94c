package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

func orphan(owner int, kind uint32, others ...*stacks.Process) *stacks.Snapshot {
	p := proc(800,
		thread(800, "main", joinFrames("main")...),
		on(thread(802, "reader", mutexFrames("read_config", "reader_main")...), named(lockWait(0x6010a0, owner, kind), "config_lock")),
	)
	return live(append([]*stacks.Process{p}, others...)...)
}

func TestOrphanedLock(t *testing.T) {
	d := one(t, "orphaned-lock", orphan(801, 0))
	complete(t, d)
	if d.Confidence != High {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "thread 802 `reader`", "`config_lock` (0x6010a0)", "thread 801, which no longer exists", "exited without unlocking")
	sameInts(t, "tids", d.Tids, 802, 801)
	lacks(t, "chain", d.Chain[0], "EOWNERDEAD")
	none(t, "self-deadlock", orphan(801, 0))
	none(t, "lost-wakeup", orphan(801, 0))
}

func TestOrphanedLockReusedTid(t *testing.T) {
	// 801 exited; its id now names a thread of an unrelated process.
	other := proc(900, thread(801, "nginx", "epoll_wait", "main"))
	d := one(t, "orphaned-lock", orphan(801, 0, other))
	complete(t, d)
	if d.Confidence != Medium {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "recorded as held by thread 801", "`nginx` of unrelated process 900", "not the owner")
	lacks(t, "summary", d.Summary, "held by thread 801 `nginx`")
	sameInts(t, "tids", d.Tids, 802)
	none(t, "lock-order-cycle", orphan(801, 0, other))
}

func TestOrphanedRobustMutex(t *testing.T) {
	snap := orphan(801, kindRobust)
	snap.Processes[0].Threads[1].Wait.Mutex.Lock = futexOwnerDied | 801
	d := one(t, "orphaned-lock", snap)
	chain := ""
	for _, c := range d.Chain {
		chain += c + "\n"
	}
	has(t, "chain", chain, "robust", "EOWNERDEAD", "pthread_mutex_consistent")
	has(t, "evidence", d.Evidence[0], "robust", "owner-died")
}

func TestOrphanedInForkedChild(t *testing.T) {
	snap := orphan(801, 0)
	forked(snap.Processes[0], 700, 700, 701)
	d := one(t, "orphaned-lock", snap)
	has(t, "chain", d.Chain[1], "forked child", "parent 700")
	none(t, "fork-inherited-lock", snap)
}

func TestOrphanedNotWithoutOwner(t *testing.T) {
	// lock elision: the lock word is taken but no owner is recorded
	none(t, "orphaned-lock", orphan(0, 0))
}
