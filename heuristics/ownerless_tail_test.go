package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// readLockSnap is testdata/patients/cxx_shared_read_mutex.cpp as a live
// attach reads it (hand-built): the reader waits for the mutex the writer
// holds (owner read), the writer waits to write-lock a pthread_rwlock,
// which records no owner for its readers; main joins. third, when set, is
// one more thread doing what it says.
func readLockSnap(third *stacks.Thread) *stacks.Snapshot {
	mutexWait := nbFrames("futex_wait", "__lll_lock_wait", "pthread_mutex_lock", "read_then_lock", "start_thread")
	rwWait := nbFrames("__futex_abstimed_wait_common", "__pthread_rwlock_wrlock_full64", "pthread_rwlock_wrlock", "lock_then_write", "start_thread")
	threads := []*stacks.Thread{
		nbThread(10, "main", nbTimes(3, nbJoining(11))...),
		nbThread(11, "reader", nbTimes(3, nbOnMutex(12, "data_mu", mutexWait))...),
		nbThread(12, "writer", nbTimes(3, nbBlocked("futex", rwWait))...),
	}
	if third != nil {
		threads = append(threads, third)
	}
	return nbSnap(true, nbProc(10, threads...))
}

func TestOwnerlessTailClosesCycle(t *testing.T) {
	ds := Diagnose(readLockSnap(nil), Options{}).Diagnoses
	if len(ds) == 0 || ds[0].ID != "lock-order-cycle" {
		t.Fatalf("got %v", ds)
	}
	d := ds[0]
	if d.Confidence != Medium || !nbHasTid(d, 11) || !nbHasTid(d, 12) || nbHasTid(d, 10) {
		t.Errorf("confidence %s, tids %v", d.Confidence, d.Tids)
	}
	for _, want := range []string{"`reader` waits for mutex `data_mu`", "held by thread 12 `writer`", "pthread_rwlock_wrlock", "records no owner", "most likely thread 11 `reader`"} {
		if !strings.Contains(d.Summary, want) {
			t.Errorf("summary %q lacks %q", d.Summary, want)
		}
	}
}

func TestOwnerlessTailStaysSilent(t *testing.T) {
	cases := map[string]*stacks.Thread{
		// it may yet release the read lock
		"a thread runs": nbThread(13, "cruncher", nbRunning(0, nbFrames("crunch", "start_thread")), nbRunning(50, nbFrames("mix", "crunch", "start_thread")), nbRunning(50, nbFrames("crunch", "start_thread"))),
	}
	for name, third := range cases {
		for _, d := range Diagnose(readLockSnap(third), Options{}).Diagnoses {
			if strings.Contains(d.Summary, "records no owner") {
				t.Errorf("%s: %s %s", name, d.ID, d.Summary)
			}
		}
	}
	// a paste has no owners: the stack-only rule speaks, not this one
	paste := readLockSnap(nil)
	paste.Evidence = stacks.Evidence{}
	for _, d := range Diagnose(paste, Options{}).Diagnoses {
		if strings.Contains(d.Summary, "records no owner") {
			t.Errorf("paste: %s %s", d.ID, d.Summary)
		}
	}
}

// condHoldSnap is testdata/patients/cxx_cond_hold.cpp as a live attach
// reads it (hand-built): the consumer holds mutex m while it waits on a
// condition variable; the producer, which would signal, waits for m.
func condHoldSnap(wait string) *stacks.Snapshot {
	condWait := nbFrames("__futex_abstimed_wait_common", "__pthread_cond_wait_common", wait, "consume", "start_thread")
	mutexWait := nbFrames("futex_wait", "__lll_lock_wait", "pthread_mutex_lock", "produce", "start_thread")
	return nbSnap(true, nbProc(10,
		nbThread(10, "main", nbTimes(3, nbJoining(11))...),
		nbThread(11, "consumer", nbTimes(3, nbBlocked("futex", condWait))...),
		nbThread(12, "producer", nbTimes(3, nbOnMutex(11, "m", mutexWait))...),
	))
}

func TestCondWaitHoldingMutex(t *testing.T) {
	ds := Diagnose(condHoldSnap("pthread_cond_wait"), Options{}).Diagnoses
	if len(ds) == 0 || ds[0].ID != "lock-order-cycle" || ds[0].Confidence != Medium || !nbHasTid(ds[0], 11) || !nbHasTid(ds[0], 12) {
		t.Fatalf("got %v", ds)
	}
	for _, want := range []string{"waits to be woken", "while it holds mutex `m`", "most likely thread 12 `producer`"} {
		if !strings.Contains(ds[0].Summary, want) {
			t.Errorf("summary %q lacks %q", ds[0].Summary, want)
		}
	}
	if !strings.Contains(ds[0].Fix, "Do not hold mutex `m`") {
		t.Errorf("fix %q", ds[0].Fix)
	}
	for _, d := range ds {
		if d.ID == "lost-wakeup" {
			t.Errorf("also lost-wakeup: %s", d.Summary)
		}
	}
	// Silent: a timed wait will wake on its own and may let go of m.
	for _, d := range Diagnose(condHoldSnap("pthread_cond_timedwait"), Options{}).Diagnoses {
		if strings.Contains(d.Summary, "waits to be woken") {
			t.Errorf("timed wait: %s", d.Summary)
		}
	}
}
