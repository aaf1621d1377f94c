package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// forkChild is a child of 5600 whose only thread waits for a pool lock a
// parent thread (5601) held at fork.
func forkChild(parent *stacks.Process) *stacks.Snapshot {
	child := forked(proc(5678,
		on(thread(5678, "python", mutexFrames("DevicePool::instance", "open_device", "main")...),
			named(lockWait(0x7f00bb00, 5601, 0), "pool_mutex")),
	), 5600, 5600, 5601, 5602)
	if parent == nil {
		return live(child)
	}
	return live(parent, child)
}

func TestForkInheritedLock(t *testing.T) {
	d := one(t, "fork-inherited-lock", forkChild(nil))
	complete(t, d)
	if d.Confidence != High {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "forked child 5678", "thread 5678 `python`", "`pool_mutex` (0x7f00bb00)",
		"thread 5601 of the parent process 5600")
	sameInts(t, "pids", d.Pids, 5678, 5600)
	sameInts(t, "tids", d.Tids, 5678, 5601)
	has(t, "evidence", d.Evidence[0], "forked from 5600", "5600, 5601, 5602")
	// a thread named here is not also orphaned
	none(t, "orphaned-lock", forkChild(nil))
	none(t, "self-deadlock", forkChild(nil))
	none(t, "lost-wakeup", forkChild(nil))
}

func TestForkInheritedLockParentSampled(t *testing.T) {
	parent := proc(5600, thread(5600, "python", "main"),
		on(thread(5601, "pool", condFrames("pool_worker")...), futexWait(0x99)))
	d := one(t, "fork-inherited-lock", forkChild(parent))
	last := d.Chain[len(d.Chain)-1]
	has(t, "chain", last, "in the parent, thread 5601 `pool` sleeps", "`pool_worker`")
}

// The parent's thread ids are known only through the parent process of
// the snapshot (Fork.ParentThreads empty).
func TestForkInheritedLockOwnerFoundInParentProcess(t *testing.T) {
	parent := proc(5600, thread(5600, "python", "main"), thread(5601, "pool", "compute"))
	snap := forkChild(parent)
	snap.Processes[1].Fork.ParentThreads = nil
	one(t, "fork-inherited-lock", snap)
}

func TestForkInheritedPythonLock(t *testing.T) {
	// threading.Lock held by a thread across os.fork(): a semaphore, no owner.
	child := forked(proc(7001,
		on(thread(7001, "python3", "do_futex_wait", "__new_sem_wait_slow64", "PyThread_acquire_lock_timed",
			"acquire_timed", "lock_PyThread_acquire_lock", "method_vectorcall_VARARGS_KEYWORDS"), futexWait(0x55)),
	), 7000, 7000, 7002)
	d := one(t, "fork-inherited-lock", live(child))
	complete(t, d)
	if d.Confidence != Medium {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "forked child 7001", "`lock_PyThread_acquire_lock`", "parent 7000")
	none(t, "lost-wakeup", live(child))
	none(t, "self-deadlock", live(child))
	none(t, "lock-order-cycle", live(child))
}

func TestForkInheritedLockNotWithoutFork(t *testing.T) {
	// The same owner id, but the process is no fork: orphaned, not this.
	snap := forkChild(nil)
	snap.Processes[0].Fork = nil
	none(t, "fork-inherited-lock", snap)
	one(t, "orphaned-lock", snap)
}
