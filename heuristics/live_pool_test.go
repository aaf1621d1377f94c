package heuristics_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// An idle pool is a hang only when nobody can give it work: four workers
// asleep on the queue's condition variable while main, which alone would
// signal it, waits in pthread_join for a worker (a shutdown that forgot
// the stop flag and the broadcast). Nothing runs and nothing can wake
// them: lost-wakeup, naming the workers and main.
func TestLiveIdlePoolJoined(t *testing.T) {
	bin := patient.Build(t, "idle_pool.c", patient.O2g...)
	l := startLive(t, []string{bin, "join"}, nil)
	pid, main := l.p.Pid, l.p.Int(t, "main")
	workers := idlePoolWorkers(t, l)
	for _, w := range workers {
		wantFrames(t, l.thread(t, pid, w), "pthread_cond_wait", "wait_for_task", "worker_main")
	}
	wantFrames(t, l.thread(t, pid, main), "shut_down_pool", "main")

	if d := l.top(t, "lost-wakeup"); d != nil {
		wantPids(t, d, pid)
		wantTids(t, d, "the workers", workers...)
		wantTids(t, d, "main, joining", main)
		wantSays(t, d, "wait_for_task")
	}
}

// The control: the same idle pool while main waits in accept() for a
// client that would bring work. The pool is waiting for work, not stuck:
// no deadlock may be claimed; the verdict names main's accept.
func TestLiveControlIdlePool(t *testing.T) {
	bin := patient.Build(t, "idle_pool.c", patient.O2g...)
	l := startLive(t, []string{bin, "accept"}, nil)
	pid, main := l.p.Pid, l.p.Int(t, "main")
	port := l.p.Int(t, "port")
	idlePoolWorkers(t, l)
	wantFrames(t, l.thread(t, pid, main), "serve", "main")

	l.wantNoDeadlock(t)
	if d := l.wantVerdict(t, "io-wait"); d != nil {
		wantTids(t, d, "main, accepting", main)
		wantSays(t, d, strconv.Itoa(port))
	}
}

// idlePoolWorkers returns the tids the patient printed as "worker=…".
func idlePoolWorkers(t *testing.T, l *live) []int {
	t.Helper()
	var ws []int
	for _, line := range l.p.Early() {
		if v, ok := strings.CutPrefix(line, "worker="); ok {
			tid, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("patient line %q: %v", line, err)
			}
			ws = append(ws, tid)
		}
	}
	if len(ws) != 4 {
		t.Fatalf("patient printed %d workers, want 4: %v", len(ws), l.p.Early())
	}
	return ws
}
