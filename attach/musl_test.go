package attach_test

// Patients linked against musl (musl-gcc, Debian's musl-tools), dynamic
// and static, attached live: the same verdicts as their glibc twins in
// heuristics/live_test.go. musl's libc has CFI for four functions, so
// the waits' frames are found by scanning the stack; a default musl
// mutex records no owner (its lock word is EBUSY plus a waiters bit), so
// the verdicts rest on the locks' addresses, the threads' states and the
// frames, and are not high confidence: what cannot be read is a note.

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// muslBuilds are the two ways a program links against musl.
var muslBuilds = []struct {
	name  string
	flags []string
}{
	{"dynamic", patient.O2g},
	{"static", append([]string{"-static"}, patient.O2g...)},
}

// muslLive builds a patient with musl-gcc, starts it, attaches to the
// pids pids gives and diagnoses what it read.
func muslLive(t *testing.T, src string, flags []string, pids func(p *patient.Proc) []int) (*patient.Proc, *stacks.Snapshot, []heuristics.Diagnosis) {
	t.Helper()
	patient.RequireTool(t, "musl-gcc")
	patient.RequirePtrace(t)
	bin := patient.BuildCC(t, "musl-gcc", src, flags...)
	p := patient.Start(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := attach.Attach(ctx, pids(p), attach.Options{Samples: 2, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	for _, d := range ds {
		t.Logf("verdict: [%s, %s] %s", d.ID, d.Confidence, d.Summary)
	}
	for _, pr := range snap.Processes {
		if !slices.ContainsFunc(pr.Notes, func(n string) bool { return strings.HasPrefix(n, "musl libc:") }) {
			t.Errorf("process %d: no note that musl records no owner: %q", pr.Pid, pr.Notes)
		}
	}
	return p, snap, ds
}

func muslThread(t *testing.T, snap *stacks.Snapshot, pid, tid int) *stacks.Thread {
	t.Helper()
	for _, p := range snap.Processes {
		if p.Pid == pid {
			return threadOf(t, p, tid)
		}
	}
	t.Fatalf("no process %d in the snapshot", pid)
	return nil
}

// wantMuslWait checks that a thread waits for the mutex named sym, its
// frames (found by scanning through musl's libc) reaching the callers.
func wantMuslWait(t *testing.T, th *stacks.Thread, sym string, frames ...string) {
	t.Helper()
	if w := th.Wait; w == nil || w.Mutex == nil || w.Mutex.Symbol != sym {
		t.Errorf("thread %d: wait %+v, want mutex %s", th.Tid, th.Wait, sym)
	} else if w.Mutex.Owner != 0 || w.Mutex.Lock&0x7fffffff != 16 {
		t.Errorf("thread %d: %s: owner %d, lock %#x; a default musl mutex records no owner and locks with EBUSY (16)", th.Tid, sym, w.Mutex.Owner, w.Mutex.Lock)
	}
	var names []string
	for _, f := range th.Stack {
		names = append(names, strings.TrimLeft(f.Func, "_")) // static musl: __pthread_mutex_timedlock
	}
	at := 0
	for _, want := range frames {
		i := slices.Index(names[at:], want)
		if i < 0 {
			t.Errorf("thread %d: frames %q lack %s (in order %q)", th.Tid, names, want, frames)
			return
		}
		at += i + 1
	}
}

func topDiagnosis(t *testing.T, ds []heuristics.Diagnosis, id string, tids ...int) *heuristics.Diagnosis {
	t.Helper()
	if len(ds) == 0 || ds[0].ID != id {
		t.Errorf("top diagnosis is not %s", id)
		return nil
	}
	for _, tid := range tids {
		if !slices.Contains(ds[0].Tids, tid) {
			t.Errorf("%s names threads %v, want %d among them", id, ds[0].Tids, tid)
		}
	}
	return &ds[0]
}

func TestMuslABBA(t *testing.T) {
	for _, b := range muslBuilds {
		t.Run(b.name, func(t *testing.T) {
			p, snap, ds := muslLive(t, "abba.c", b.flags, func(p *patient.Proc) []int { return []int{p.Pid} })
			ab, ba := p.Int(t, "ab"), p.Int(t, "ba")
			wantMuslWait(t, muslThread(t, snap, p.Pid, ab), "lock_b", "pthread_mutex_timedlock", "take_b_after_a", "transfer_ab")
			wantMuslWait(t, muslThread(t, snap, p.Pid, ba), "lock_a", "pthread_mutex_timedlock", "take_a_after_b", "transfer_ba")
			if w := muslThread(t, snap, p.Pid, p.Pid).Wait; w == nil || w.JoinTid != ab {
				t.Errorf("main thread: wait %+v, want a join of %d (musl's struct pthread tid)", w, ab)
			}
			topDiagnosis(t, ds, "lock-order-cycle", ab, ba)
		})
	}
}

func TestMuslOpenBLASRelock(t *testing.T) {
	for _, b := range muslBuilds {
		t.Run(b.name, func(t *testing.T) {
			p, snap, ds := muslLive(t, "openblas_relock.c", b.flags, func(p *patient.Proc) []int { return []int{p.Int(t, "child"), p.Pid} })
			child := p.Int(t, "child")
			wantMuslWait(t, muslThread(t, snap, child, child), "server_lock", "pthread_mutex_timedlock", "blas_thread_init", "exec_blas_async", "dgemm_", "main")
			if d := topDiagnosis(t, ds, "self-deadlock", child); d != nil && (d.KnownIssue == nil || !strings.Contains(d.KnownIssue.ID, "openblas")) {
				t.Errorf("self-deadlock without the OpenBLAS known issue: %+v", d.KnownIssue)
			}
		})
	}
}

func TestMuslForkInheritedLock(t *testing.T) {
	for _, b := range muslBuilds {
		t.Run(b.name, func(t *testing.T) {
			p, snap, ds := muslLive(t, "tree_pipe.c", b.flags, func(p *patient.Proc) []int {
				return []int{p.Pid, p.Int(t, "child"), p.Int(t, "client")}
			})
			child, client := p.Int(t, "child"), p.Int(t, "client")
			wantMuslWait(t, muslThread(t, snap, child, child), "registry_lock", "pthread_mutex_timedlock", "registry_register", "run_worker", "main")
			topDiagnosis(t, ds, "fork-inherited-lock", child)
			for _, waiter := range []int{p.Pid, client} {
				if !slices.ContainsFunc(ds, func(d heuristics.Diagnosis) bool {
					return d.ID == "waiting-on-process" && len(d.Pids) > 0 && d.Pids[0] == waiter
				}) {
					t.Errorf("no waiting-on-process for %d, which waits on the stuck worker %d", waiter, child)
				}
			}
		})
	}
}
