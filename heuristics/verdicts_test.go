package heuristics

// Tests of progressing, io-wait and sleeping: each process gets at most
// one, and never one when a lock signature's ground is there.

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// calm runs the three verdicts' matchers and returns what they claim.
func calm(t *testing.T, snap *stacks.Snapshot) []Diagnosis {
	t.Helper()
	var out []Diagnosis
	for _, id := range []string{"progressing", "io-wait", "sleeping"} {
		for _, d := range nbMatch(t, id, snap) {
			d.ID = id
			out = append(out, d)
		}
	}
	return out
}

// busySnap is testdata/patients/busy.c: two crunchers whose stacks move
// (their recursion depth differs from sample to sample), main joins.
func busySnap() *stacks.Snapshot {
	crunch := func(depth int) []stacks.Frame {
		specs := []string{"mix_leaf"}
		for i := 0; i < depth; i++ {
			specs = append(specs, "crunch_level")
		}
		return nbFrames(append(specs, "cruncher_main", "start_thread")...)
	}
	return nbSnap(true, nbProc(10,
		nbThread(10, "busy", nbTimes(3, nbJoining(11))...),
		nbThread(11, "cruncher-0", nbRunning(0, crunch(3)), nbRunning(50, crunch(9)), nbRunning(49, crunch(1))),
		nbThread(12, "cruncher-1", nbRunning(0, crunch(5)), nbRunning(30, crunch(5)), nbRunning(31, crunch(12))),
	))
}

func TestProgressingBusy(t *testing.T) {
	ds := calm(t, busySnap())
	if len(ds) != 1 || ds[0].ID != "progressing" {
		t.Fatalf("got %v", nbIDs(ds))
	}
	d := ds[0]
	if d.Deadlock || d.Confidence != High || d.Pids[0] != 10 || !nbHasTid(d, 11) || !nbHasTid(d, 12) {
		t.Errorf("deadlock %v, confidence %s, pids %v, tids %v", d.Deadlock, d.Confidence, d.Pids, d.Tids)
	}
	for _, want := range []string{"not a deadlock, pid 10 `busy` is working", "thread 11 `cruncher-0` is the busiest at 99% CPU", "`mix_leaf`", "2 of 3 threads"} {
		if !strings.Contains(d.Summary, want) {
			t.Errorf("summary %q lacks %q", d.Summary, want)
		}
	}
	all := Diagnose(busySnap(), Options{}).Diagnoses
	for _, x := range all {
		if x.Deadlock {
			t.Errorf("busy control got a deadlock claim: %s %s", x.ID, x.Summary)
		}
	}
}

func TestProgressingOneBusyFunction(t *testing.T) {
	// A computation in one function: the same stack in every sample, but
	// at full CPU with no wait name and nobody waiting: progressing.
	snap := nbSnap(true, nbProc(10, nbThread(10, "solver", nbTimes(3, nbRunning(50, nbFrames("dgemm_kernel", "solve", "main")))...)))
	ds := calm(t, snap)
	if len(ds) != 1 || ds[0].ID != "progressing" || !strings.Contains(ds[0].Summary, "100% CPU") {
		t.Fatalf("got %+v", ds)
	}
	if len(nbMatch(t, "spin-wait-starved", snap)) != 0 {
		t.Error("a computation was called a spin")
	}
}

// socketSnap is testdata/patients/socket_wait.c.
func socketSnap() *stacks.Snapshot {
	return nbSnap(true, nbProc(10,
		nbThread(10, "socket_wait", nbTimes(3, nbJoining(11))...),
		nbThread(11, "net-reader", nbTimes(3, nbOnFd("recvfrom", 5, "socket:[81234] 127.0.0.1:40312 -> 127.0.0.1:5555", nbFrames("__libc_recv", "read_request", "reader_main", "start_thread")))...),
	))
}

func TestIOWaitSocket(t *testing.T) {
	ds := calm(t, socketSnap())
	if len(ds) != 1 || ds[0].ID != "io-wait" {
		t.Fatalf("got %v", nbIDs(ds))
	}
	d := ds[0]
	want := "not a deadlock, waiting on I/O: thread 11 `net-reader` blocks in `recvfrom` on fd 5 (`socket:[81234] 127.0.0.1:40312 -> 127.0.0.1:5555`)"
	if d.Summary != want || d.Deadlock || d.Confidence != High || len(d.Tids) != 1 || d.Tids[0] != 11 {
		t.Errorf("got %q (deadlock %v, %s, tids %v)\nwant %q", d.Summary, d.Deadlock, d.Confidence, d.Tids, want)
	}
	if !strings.Contains(strings.Join(d.Chain, "\n"), "called from `read_request`") {
		t.Errorf("chain %v", d.Chain)
	}
	for _, x := range Diagnose(socketSnap(), Options{}).Diagnoses {
		if x.Deadlock {
			t.Errorf("socket control got a deadlock claim: %s %s", x.ID, x.Summary)
		}
	}
}

func TestIOWaitPipeAndPoll(t *testing.T) {
	snap := nbSnap(true, nbProc(10,
		nbThread(10, "cat", nbTimes(2, nbOnFd("read", 0, "pipe:[5678]", nbFrames("read", "main")))...),
		nbThread(11, "poller", nbTimes(2, nbBlocked("poll", nbFrames("__GI___poll", "event_loop", "start_thread")))...),
	))
	ds := calm(t, snap)
	if len(ds) != 1 || ds[0].ID != "io-wait" || !strings.Contains(ds[0].Summary, "fd 0 (`pipe:[5678]`)") || !strings.Contains(ds[0].Summary, "1 more threads wait on I/O") {
		t.Fatalf("got %+v", ds)
	}
	if !strings.Contains(strings.Join(ds[0].Chain, "\n"), "`poll` (on several fds)") {
		t.Errorf("chain %v", ds[0].Chain)
	}
}

// sleeperSnap is testdata/patients/sleeper.c.
func sleeperSnap() *stacks.Snapshot {
	nap := nbFrames("clock_nanosleep", "__nanosleep", "nap_forever", "main")
	return nbSnap(true, nbProc(10,
		nbThread(10, "sleeper", nbTimes(3, nbBlocked("clock_nanosleep", nap))...),
		nbThread(11, "napper", nbTimes(3, nbBlocked("clock_nanosleep", nbFrames("clock_nanosleep", "__nanosleep", "nap_forever", "napper", "start_thread")))...),
	))
}

func TestSleeping(t *testing.T) {
	ds := calm(t, sleeperSnap())
	if len(ds) != 1 || ds[0].ID != "sleeping" {
		t.Fatalf("got %v", nbIDs(ds))
	}
	want := "not a deadlock, sleeping on a timer: thread 10 `sleeper` and thread 11 `napper` sleep in `clock_nanosleep`"
	if ds[0].Summary != want || ds[0].Deadlock || ds[0].Confidence != High {
		t.Errorf("got %q (%v, %s), want %q", ds[0].Summary, ds[0].Deadlock, ds[0].Confidence, want)
	}
	for _, x := range Diagnose(sleeperSnap(), Options{}).Diagnoses {
		if x.Deadlock {
			t.Errorf("sleeper control got a deadlock claim: %s %s", x.ID, x.Summary)
		}
	}
	// The main thread exited (sleeper main-exits): a zombie is skipped.
	snap := sleeperSnap()
	main := snap.Processes[0].Threads[0]
	main.State, main.Stack, main.Wait = "Z", nil, nil
	main.SetSamples([]stacks.Sample{{State: "Z"}, {State: "Z"}, {State: "Z"}})
	if ds := calm(t, snap); len(ds) != 1 || ds[0].ID != "sleeping" || len(ds[0].Tids) != 1 || ds[0].Tids[0] != 11 {
		t.Errorf("main exited: got %+v", ds)
	}
}

func TestSleepingFromFrames(t *testing.T) {
	// A pasted dump (no states, no syscalls): sleep(3), and Python's old
	// time.sleep, a select without fds.
	snap := nbSnap(false, nbProc(10,
		nbDump(10, "sh", "__GI___clock_nanosleep", "__GI___nanosleep", "__sleep", "main"),
		nbDump(11, "python3", "__GI___select", "pysleep", "time_sleep", "_PyEval_EvalFrameDefault"),
	))
	ds := calm(t, snap)
	if len(ds) != 1 || ds[0].ID != "sleeping" || ds[0].Confidence != Medium || len(ds[0].Tids) != 2 {
		t.Fatalf("got %+v", ds)
	}
	if !strings.Contains(ds[0].Summary, "`clock_nanosleep`, `select`") {
		t.Errorf("summary %q", ds[0].Summary)
	}
}

func TestVerdictsLeaveLockGroundAlone(t *testing.T) {
	nap := nbFrames("clock_nanosleep", "nanosleep", "hold_and_sleep", "main")
	lockStack := nbFrames("__lll_lock_wait", "pthread_mutex_lock", "worker", "start_thread")
	cases := []struct {
		name string
		snap *stacks.Snapshot
	}{
		{"re-locks a mutex it holds", nbSnap(true, nbProc(10,
			nbThread(10, "main", nbTimes(3, nbBlocked("clock_nanosleep", nap))...),
			nbThread(11, "worker", nbTimes(3, nbOnMutex(11, "server_lock", lockStack))...)))},
		{"waits on a mutex whose owner is gone", nbSnap(true, nbProc(10,
			nbThread(10, "main", nbTimes(3, nbOnFd("read", 3, "pipe:[1]", nbFrames("read", "main")))...),
			nbThread(11, "worker", nbTimes(3, nbOnMutex(99, "", lockStack))...)))},
		{"waits for a child process", nbSnap(true, nbProc(10,
			nbThread(10, "parent", nbTimes(3, nbBlocked("wait4", nbFrames("wait4", "waitpid", "main")))...),
			nbThread(11, "ticker", nbTimes(3, nbBlocked("clock_nanosleep", nap))...)))},
		{"every thread on condition variables (lost-wakeup ground)", nbSnap(true, nbProc(10,
			nbThread(10, "main", nbTimes(3, nbJoining(11))...),
			nbThread(11, "consumer", nbTimes(3, nbBlocked("futex", nbFrames("futex_wait", "pthread_cond_wait", "consumer")))...)))},
	}
	for _, c := range cases {
		if ds := calm(t, c.snap); len(ds) != 0 {
			t.Errorf("%s: got %s: %s", c.name, ds[0].ID, ds[0].Summary)
		}
	}
}

// A mutex held across a sleep (a retry loop under a lock): sleeping, with
// the thread queued behind the lock and a fix not to sleep holding it (it
// was no verdict at all: the calm verdicts left the lock wait to the lock
// signatures, and none claims a holder on a timer).
func TestVerdictsMutexHeldAcrossSleep(t *testing.T) {
	nap := nbFrames("clock_nanosleep", "nanosleep", "hold_and_sleep", "main")
	snap := nbSnap(true, nbProc(10,
		nbThread(10, "main", nbTimes(3, nbBlocked("clock_nanosleep", nap))...),
		nbThread(11, "worker", nbTimes(3, nbOnMutex(10, "state_lock", nbFrames("__lll_lock_wait", "pthread_mutex_lock", "worker", "start_thread")))...)))
	ds := calm(t, snap)
	if len(ds) != 1 || ds[0].ID != "sleeping" || ds[0].Deadlock {
		t.Fatalf("got %+v", ds)
	}
	d := ds[0]
	if !strings.Contains(d.Summary, "state_lock") || !strings.Contains(strings.Join(d.Chain, "\n"), "thread 11 `worker` waits for mutex `state_lock`") ||
		!strings.Contains(d.Fix, "Do not sleep holding mutex `state_lock`") {
		t.Errorf("summary %q\nchain %q\nfix %q", d.Summary, d.Chain, d.Fix)
	}
}

func TestVerdictsMutexOwnerRunning(t *testing.T) {
	// Contention on a lock whose owner works: progressing, not a claim
	// left to the lock signatures.
	snap := nbSnap(true, nbProc(10,
		nbThread(10, "main", nbRunning(0, nbFrames("compress", "main")), nbRunning(40, nbFrames("deflate", "compress", "main")), nbRunning(45, nbFrames("compress", "main"))),
		nbThread(11, "worker", nbTimes(3, nbOnMutex(10, "", nbFrames("__lll_lock_wait", "pthread_mutex_lock", "worker")))...)))
	if ds := calm(t, snap); len(ds) != 1 || ds[0].ID != "progressing" || ds[0].Tids[0] != 10 {
		t.Fatalf("got %+v", ds)
	}
}

func TestVerdictsAtMostOnePerProcess(t *testing.T) {
	snap := nbSnap(true,
		nbProc(10,
			nbThread(10, "server", nbTimes(3, nbOnFd("accept", 3, "socket:[1]", nbFrames("accept", "serve", "main")))...),
			nbThread(11, "indexer", nbRunning(0, nbFrames("hash", "index")), nbRunning(50, nbFrames("sort", "index")), nbRunning(50, nbFrames("hash", "index"))),
			nbThread(12, "ticker", nbTimes(3, nbBlocked("nanosleep", nbFrames("nanosleep", "tick")))...)),
		nbProc(20, nbThread(20, "idle", nbTimes(3, nbBlocked("clock_nanosleep", nbFrames("clock_nanosleep", "main")))...)),
		nbProc(30, nbThread(30, "reader", nbTimes(3, nbOnFd("read", 4, "/dev/ttyS0", nbFrames("read", "main")))...),
			nbThread(31, "napper", nbTimes(3, nbBlocked("clock_nanosleep", nbFrames("clock_nanosleep", "main")))...)),
	)
	got := map[int][]string{}
	for _, d := range calm(t, snap) {
		got[d.Pids[0]] = append(got[d.Pids[0]], d.ID)
	}
	want := map[int]string{10: "progressing", 20: "sleeping", 30: "io-wait"}
	for pid, id := range want {
		if len(got[pid]) != 1 || got[pid][0] != id {
			t.Errorf("pid %d: got %v, want [%s]", pid, got[pid], id)
		}
	}
}

func TestProgressingOneSampleIsLow(t *testing.T) {
	snap := nbSnap(false, nbProc(10, nbThread(10, "make", nbRunning(0, nbFrames("parse", "main")))))
	ds := calm(t, snap)
	if len(ds) != 1 || ds[0].ID != "progressing" || ds[0].Confidence != Low || !strings.Contains(ds[0].Summary, "one sample") {
		t.Fatalf("got %+v", ds)
	}
}

func TestVerdictsIgnoreExitedProcess(t *testing.T) {
	snap := sleeperSnap()
	snap.Processes[0].Exited = true
	if ds := calm(t, snap); len(ds) != 0 {
		t.Errorf("exited process got %s", ds[0].ID)
	}
}

// TestProgressingGoroutinesNoCPUFigure: a live Go attach samples goroutines,
// which carry no CPU ticks of their own (attach/golang.go), though the
// snapshot has CPU evidence for the OS threads. A busy server whose
// goroutines move is progressing, without a "0% CPU" nobody measured (seen
// on TestGoPatientsLive/server: "goroutine 7 is the busiest at 0% CPU").
func TestProgressingGoroutinesNoCPUFigure(t *testing.T) {
	goroutine := func(id int, samples ...stacks.Sample) *stacks.Thread {
		th := nbThread(id, "", samples...)
		th.CPU = 0
		th.Runtime = &stacks.RuntimeThread{Kind: stacks.KindGoroutine, ID: id, Status: "running"}
		return th
	}
	read := nbFrames("internal/poll.(*FD).Read", "net.(*conn).Read", "io.Copy", "main.echo")
	write := nbFrames("internal/poll.(*FD).Write", "net.(*conn).Write", "io.Copy", "main.echo")
	snap := nbSnap(true, nbProc(10,
		goroutine(7, nbRunning(0, read), nbRunning(0, write), nbRunning(0, read)),
		goroutine(8, nbRunning(0, write), nbRunning(0, read), nbRunning(0, write)),
	))
	ds := calm(t, snap)
	if len(ds) != 1 || ds[0].ID != "progressing" {
		t.Fatalf("got %v", nbIDs(ds))
	}
	text := ds[0].Summary + "\n" + strings.Join(ds[0].Chain, "\n") + "\n" + strings.Join(ds[0].Evidence, "\n")
	if strings.Contains(text, "% CPU") || strings.Contains(text, "CPU ticks") {
		t.Errorf("a goroutine got a CPU figure nobody measured:\n%s", text)
	}
	if !strings.Contains(ds[0].Summary, "stacks changed between samples in 2 of 2 threads") {
		t.Errorf("summary %q", ds[0].Summary)
	}
	// an OS thread of the same snapshot keeps its measured figure
	if d := calm(t, busySnap()); len(d) != 1 || !strings.Contains(d[0].Summary, "at 99% CPU") {
		t.Errorf("OS threads lost their CPU figure: %v", d)
	}
}
