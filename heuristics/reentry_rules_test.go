package heuristics

// The re-entry and fork-child rules on stacks built here (hand-written
// frames, the shapes of the corpus reports' classes with other names):
// what each rule claims and, as much, where it must stay silent.

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// A thread pool's lock (OpenMP's runtime, here LLVM libomp's team
// allocation) waited for by a process's only thread: a child forked
// after the pool started. Not when the dump shows the process with other
// threads, nor when the lock is asked for by code that is no pool's.
func TestPoolLockInLoneThread(t *testing.T) {
	omp := func(tid int) *stacks.Thread {
		return thread(tid, "", "__lll_lock_wait", "pthread_mutex_lock", "__kmp_acquire_bootstrap_lock", "__kmp_allocate_team", "__kmp_fork_call", "__kmpc_fork_call", "compute", "main")
	}
	d := one(t, "fork-inherited-lock", pasted(proc(0, omp(0))))
	has(t, "summary", d.Summary, "thread pool", "__kmp_allocate_team", "forked after its parent started the pool")
	if d.Confidence != Low {
		t.Errorf("confidence %s, want low", d.Confidence)
	}
	// a thread gdb numbers after thread 1 (its LWP, no pid): the process has other threads, the pool's workers among them
	none(t, "fork-inherited-lock", pasted(proc(0, omp(4242))))
	// the same lock asked for by the program's own code
	none(t, "fork-inherited-lock", pasted(proc(0, thread(0, "", "__lll_lock_wait", "pthread_mutex_lock", "cache_get", "compute", "main"))))
}

// dispatch_sync from the main thread, or from a block a serial queue
// runs, waits for the queue that thread drains: a hedged self-deadlock.
// From a block of a global (concurrent) queue it is no such wait.
func TestDispatchSyncOntoOwnQueue(t *testing.T) {
	wait := []string{"semaphore_wait_trap", "_os_semaphore_wait", "_dispatch_sync_f_slow"}
	main := thread(0, "com.apple.main-thread", append(wait, "-[Cache reload]", "__CFRunLoopRun", "CFRunLoopRunSpecific", "NSApplicationMain", "main")...)
	d := one(t, "self-deadlock", pasted(proc(0, main)))
	has(t, "summary", d.Summary, "dispatch_sync onto the current queue")
	has(t, "fix", d.Fix, "dispatch_async")
	block := thread(0, "", append(wait, "-[Store save]", "_dispatch_client_callout", "_dispatch_lane_serial_drain", "_dispatch_lane_invoke", "_dispatch_workloop_worker_thread", "_pthread_wqthread")...)
	d = one(t, "self-deadlock", pasted(proc(0, block)))
	has(t, "chain", d.Chain[1], "serial dispatch queue", "_dispatch_lane_serial_drain")
	global := thread(0, "com.apple.root.default-qos", append(wait, "-[Store save]", "_dispatch_call_block_and_release", "_dispatch_client_callout", "_dispatch_root_queue_drain", "_dispatch_worker_thread3", "_pthread_wqthread")...)
	for _, ds := range Diagnose(pasted(proc(0, global)), Options{}).Diagnoses {
		if strings.Contains(ds.Summary, "dispatch_sync onto the current queue") {
			t.Errorf("a global queue's block: %s", ds.Summary)
		}
	}
}

// A spin lock's sleeping slow path caught running in one sample (the
// thread woke between two futex sleeps of SpinLockDelay) is still a
// wait: the process's lone lock waiter gets its verdict. Burning CPU in
// the same frames, it is running, and no deadlock is claimed.
func TestSpinWaiterCaughtBetweenSleeps(t *testing.T) {
	spin := func(cpu float64, ticks uint64) *stacks.Snapshot {
		g := thread(4243, "grower", "syscall", "base::internal::SpinLockDelay", "SpinLock::SlowLock", "tcmalloc::allocate_full_malloc_oom", "record_mapping", "MallocHook::InvokeSbrkHookSlow", "sbrk", "tcmalloc::allocate_full_malloc_oom", "grower_main", "start_thread", "clone3")
		g.CPU = cpu
		g.Samples()[1].State, g.Samples()[1].CPUTicks = "R", ticks
		main := thread(4242, "main", "__futex_abstimed_wait_common", "__pthread_clockjoin_ex", "pthread_join", "main")
		return live(proc(4242, main, g))
	}
	d := one(t, "self-deadlock", spin(1, 2))
	has(t, "summary", d.Summary, "allocator is on the stack twice", "record_mapping")
	none(t, "self-deadlock", spin(60, 30))
}
