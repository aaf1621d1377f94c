package heuristics

import (
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// A producer that exited before signalling: consumers sleep on a
// condvar, main joins them.
func lostWakeup() *stacks.Process {
	return proc(60,
		on(thread(60, "main", joinFrames("main")...), joinWait(61)),
		on(thread(61, "consumer", condFrames("queue_pop", "consumer_main")...), futexWait(0x604000)),
		on(thread(62, "consumer", condFrames("queue_pop", "consumer_main")...), futexWait(0x604000)),
		on(thread(63, "gate", "do_futex_wait", "__new_sem_wait_slow64", "sem_wait", "gate_main"), futexWait(0x604100)),
	)
}

func TestLostWakeup(t *testing.T) {
	d := one(t, "lost-wakeup", live(lostWakeup()))
	complete(t, d)
	if d.Confidence != Medium {
		t.Errorf("confidence %s", d.Confidence)
	}
	has(t, "summary", d.Summary, "process 60", "all 4 threads sleep", "condition variables and semaphores) or wait behind those that do")
	sameInts(t, "tids", d.Tids, 61, 62, 63, 60)
	has(t, "chain", d.Chain[0], "thread 61 `consumer` sleeps in", "`queue_pop`")
	has(t, "chain", d.Chain[3], "thread 60 `main` waits in pthread_join for thread 61 `consumer`, which sleeps")
	has(t, "evidence", d.Evidence[0], "2 threads like thread 61")
}

func TestLostWakeupWeaker(t *testing.T) {
	if d := one(t, "lost-wakeup", pasted(lostWakeup())); d.Confidence != Low {
		t.Errorf("pasted: confidence %s", d.Confidence)
	}
	p := lostWakeup()
	p.Threads[1] = on(thread(61, "consumer", "__futex_abstimed_wait_common64", "__pthread_cond_wait_common", "pthread_cond_timedwait", "queue_pop"), futexWait(0x604000))
	if d := one(t, "lost-wakeup", live(p)); d.Confidence != Low {
		t.Errorf("timed wait: confidence %s", d.Confidence)
	}
}

func TestLostWakeupNot(t *testing.T) {
	cases := map[string]*stacks.Thread{
		"a thread runs":        spinning(thread(64, "producer", "produce", "producer_main")),
		"a thread waits on io": on(thread(64, "net", "recv", "serve"), &stacks.Wait{Syscall: "recvfrom", Fd: 5, FdTarget: "socket:[9]"}),
		"a thread sleeps":      on(thread(64, "timer", "clock_nanosleep", "nanosleep", "tick"), &stacks.Wait{Syscall: "clock_nanosleep"}),
		// a lock whose owner exited explains the hang: orphaned-lock says it
		"an orphaned lock": on(thread(64, "stuck", mutexFrames("queue_push")...), lockWait(0x604200, 999, 0)),
	}
	for name, th := range cases {
		t.Run(name, func(t *testing.T) {
			p := lostWakeup()
			p.Threads = append(p.Threads, th)
			none(t, "lost-wakeup", live(p))
		})
	}
	// only lock and join waits: not a sleep at all
	none(t, "lost-wakeup", live(abba(11, 12)))
}

func TestLostWakeupBehindALock(t *testing.T) {
	// 64 waits for a mutex held by 61, which sleeps on a condvar (holding
	// another lock): no cycle, nobody runs.
	p := lostWakeup()
	p.Threads = append(p.Threads, on(thread(64, "stats", mutexFrames("stats_read")...), named(lockWait(0x604300, 61, 0), "stats_lock")))
	d := one(t, "lost-wakeup", live(p))
	has(t, "chain", d.Chain[len(d.Chain)-2], "thread 64 `stats` waits for mutex `stats_lock`", "held by thread 61 `consumer`, which sleeps")
}

// Written by hand: one worker's `bt` pasted alone (no thread id of the
// main thread, so not every thread is in the paste) sleeps on its
// queue's condvar; whoever would signal it may be any thread left out,
// so no lost wake-up is claimed. The whole process, its main thread
// listed, joining that worker, is one.
func TestLostWakeupNeedsEveryThread(t *testing.T) {
	worker := thread(4711, "pool-worker", condFrames("wait_for_task", "worker_main", "start_thread")...)
	none(t, "lost-wakeup", pasted(proc(100, worker)))

	main := thread(100, "pool", joinFrames("shut_down_pool", "main")...)
	d := one(t, "lost-wakeup", pasted(proc(100, worker, main)))
	sameInts(t, "pids", d.Pids, 100)
}
