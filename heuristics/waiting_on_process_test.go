package heuristics

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// Hand-made process trees for waiting-on-process: who waits on whom, and
// whether the one waited on is stuck.

func waitChild(pid int) *stacks.Wait {
	return &stacks.Wait{Syscall: "wait4", Nr: 61, ChildPid: pid}
}

func pipeRead(fd, ino int, peers ...int) *stacks.Wait {
	return &stacks.Wait{Syscall: "read", Nr: 0, Fd: fd, FdTarget: "pipe:[" + strconv.Itoa(ino) + "]", PeerPids: peers}
}

func pipeWrite(fd, ino int, peers ...int) *stacks.Wait {
	return &stacks.Wait{Syscall: "write", Nr: 1, Fd: fd, FdTarget: "pipe:[" + strconv.Itoa(ino) + "]", PeerPids: peers}
}

func sleepWait() *stacks.Wait { return &stacks.Wait{Syscall: "clock_nanosleep", Nr: 230} }

// withChildren sets a process's children.
func withChildren(p *stacks.Process, kids ...int) *stacks.Process {
	p.Children = kids
	return p
}

// The tree of the tree_pipe patient: the worker 101 is stuck in
// fork-inherited-lock, the parent 100 waits for it, the client 103 reads
// a pipe only 101 writes.
func treeSnap() *stacks.Snapshot {
	parent := withChildren(proc(100,
		on(thread(100, "runner", "wait4", "waitpid", "main"), waitChild(101)),
		on(thread(102, "registry-gc", "clock_nanosleep", "nanosleep", "registry_collect", "registry_gc_main"), sleepWait()),
	), 103, 101)
	worker := forked(proc(101,
		on(thread(101, "runner", mutexFrames("registry_register", "run_worker", "main")...), named(lockWait(0x5000, 102, 0), "registry_lock")),
	), 100, 100, 102)
	worker.PPid = 100
	client := forked(proc(103,
		on(thread(103, "runner", "read", "await_result", "run_client", "main"), pipeRead(3, 777, 101)),
	), 100, 100)
	return live(parent, worker, client)
}

func TestWaitingOnProcessTree(t *testing.T) {
	ds := Diagnose(treeSnap(), Options{}).Diagnoses
	ids := nbIDs(ds)
	if len(ids) < 3 || ids[0] != "fork-inherited-lock" || ids[1] != "waiting-on-process" || ids[2] != "waiting-on-process" {
		t.Fatalf("ids %v, want fork-inherited-lock then two waiting-on-process:%s", ids, dump(ds))
	}
	for _, d := range ds {
		if !d.Deadlock {
			t.Errorf("a calm verdict beside the deadlock: [%s] %s", d.ID, d.Summary)
		}
	}
	byWaiter := map[int]Diagnosis{}
	for _, d := range nbFind(ds, "waiting-on-process") {
		complete(t, d)
		byWaiter[d.Pids[0]] = d
	}
	p := byWaiter[100]
	has(t, "parent's summary", p.Summary, "pid 100 `runner` waits in `wait4` for its child pid 101", "stuck in fork-inherited-lock", "registry_lock", "thread 102")
	sameInts(t, "parent's tids", p.Tids, 100, 101)
	sameInts(t, "parent's pids", p.Pids, 100, 101)
	if p.Confidence != High {
		t.Errorf("parent: confidence %s, want high (the owner was read)", p.Confidence)
	}
	c := byWaiter[103]
	has(t, "client's summary", c.Summary, "pid 103", "`read` on a pipe (fd 3, `pipe:[777]`) whose write end only pid 101", "stuck in fork-inherited-lock")
	sameInts(t, "client's tids", c.Tids, 103, 101)
	has(t, "client's chain", strings.Join(c.Chain, "\n"), "pid 101 `runner` is stuck in fork-inherited-lock", "the fork-inherited-lock diagnosis is the cause")
	has(t, "client's fix", c.Fix, "Fix pid 101 first", "timeout")
}

// A chain: 200 waits for any child; its child 201 reads a pipe from 202,
// which waits for a mutex it holds.
func TestWaitingOnProcessChain(t *testing.T) {
	snap := live(
		withChildren(proc(200, on(thread(200, "sh", "wait4", "main"), &stacks.Wait{Syscall: "wait4", Nr: 61})), 201),
		withChildren(proc(201, on(thread(201, "driver", "read", "main"), pipeRead(5, 42, 202))), 202),
		proc(202, on(thread(202, "server", mutexFrames("handle", "main")...), named(lockWait(0x6000, 202, 0), "state_lock"))),
	)
	snap.Processes[1].PPid, snap.Processes[2].PPid = 200, 201
	ds := Diagnose(snap, Options{}).Diagnoses
	if ds[0].ID != "self-deadlock" {
		t.Fatalf("top %s, want self-deadlock:%s", ds[0].ID, dump(ds))
	}
	links := nbFind(ds, "waiting-on-process")
	if len(links) != 2 {
		t.Fatalf("%d waiting-on-process, want 2 (200 and 201):%s", len(links), dump(ds))
	}
	d := links[0]
	if d.Pids[0] != 200 {
		d = links[1]
	}
	has(t, "summary", d.Summary, "pid 200 `sh` waits in `wait4` for its child pid 201 `driver`, which blocks in `read` on a pipe", "only pid 202 `server` holds, which is stuck in self-deadlock")
	sameInts(t, "tids", d.Tids, 200, 201, 202)
	sameInts(t, "pids", d.Pids, 200, 201, 202)
}

// The child waited for is not stuck: no deadlock, and the child's own
// verdict comes first.
func TestWaitingOnProcessCalmChild(t *testing.T) {
	snap := live(
		withChildren(proc(300, on(thread(300, "make", "wait4", "main"), waitChild(301))), 301),
		proc(301, on(thread(301, "sleep", "clock_nanosleep", "main"), sleepWait())),
	)
	snap.Processes[1].PPid = 300
	ds := Diagnose(snap, Options{}).Diagnoses
	if ids := nbIDs(ds); !slices.Equal(ids, []string{"sleeping", "waiting-on-process"}) {
		t.Fatalf("ids %v, want sleeping then waiting-on-process:%s", ids, dump(ds))
	}
	d := ds[1]
	if d.Deadlock {
		t.Errorf("deadlock claimed for a parent of a sleeping child: %s", d.Summary)
	}
	has(t, "summary", d.Summary, "not a deadlock", "pid 300 `make` waits in `wait4` for its child pid 301 `sleep`", "sleeps on a timer")
}

// The children were not attached: say how to see them.
func TestWaitingOnProcessChildNotSampled(t *testing.T) {
	snap := live(withChildren(proc(400, on(thread(400, "runner", "wait4", "main"), &stacks.Wait{Syscall: "wait4", Nr: 61})), 401, 402))
	d := one(t, "waiting-on-process", snap)
	if d.Deadlock || d.Confidence != Low {
		t.Errorf("deadlock %v, confidence %s; want a low, calm hint", d.Deadlock, d.Confidence)
	}
	has(t, "summary", d.Summary, "401, 402", "not sampled")
	wantHints(t, d, Hint{Action: HintAttach, Pid: 400, Tree: true, Why: "to follow the wait"})
}

// A reader whose writer is alive and not stuck: io-wait, as before.
func TestWaitingOnProcessPeerNotStuck(t *testing.T) {
	snap := live(
		proc(500, on(thread(500, "reader", "read", "main"), pipeRead(0, 9, 501))),
		proc(501, on(thread(501, "writer", "clock_nanosleep", "main"), sleepWait())),
	)
	none(t, "waiting-on-process", snap)
	ds := Diagnose(snap, Options{}).Diagnoses
	if len(nbFind(ds, "io-wait")) != 1 {
		t.Errorf("want io-wait for the reader:%s", dump(ds))
	}
}

// One of two writers of the pipe is stuck, the other is not: the reader
// is not stuck.
func TestWaitingOnProcessOneStuckWriterOfTwo(t *testing.T) {
	snap := live(
		proc(510, on(thread(510, "reader", "read", "main"), pipeRead(4, 9, 511, 512))),
		proc(511, on(thread(511, "stuck", mutexFrames("main")...), lockWait(0x7000, 511, 0))),
		proc(512, on(thread(512, "writer", "clock_nanosleep", "main"), sleepWait())),
	)
	none(t, "waiting-on-process", snap)
}

// A parent waits for its child, which blocks writing to a full pipe only
// the parent reads: the subprocess PIPE deadlock.
func TestWaitingOnProcessRing(t *testing.T) {
	snap := live(
		withChildren(proc(600, on(thread(600, "python3", "wait4", "Popen.wait", "main"), waitChild(601))), 601),
		proc(601, on(thread(601, "tool", "write", "emit", "main"), pipeWrite(1, 88, 600))),
	)
	snap.Processes[1].PPid = 600
	d := one(t, "waiting-on-process", snap)
	complete(t, d)
	has(t, "summary", d.Summary, "processes 600 and 601 wait on each other", "waits in `wait4` for its child pid 601", "full pipe", "read end only pid 600")
	has(t, "fix", d.Fix, "communicate()")
	for _, id := range nbIDs(Diagnose(snap, Options{}).Diagnoses) {
		if id == "io-wait" {
			t.Errorf("the child of the ring called io-wait")
		}
	}
}

// Two event loops with a connection to each other are not a ring: a
// poll on several fds is left out.
func TestWaitingOnProcessEventLoopsAreNotARing(t *testing.T) {
	ep := func(peer int) *stacks.Wait {
		return &stacks.Wait{Syscall: "epoll_wait", Nr: 232, Fd: 4, FdTarget: "anon_inode:[eventpoll]", Fds: []int{5, 6, 7}, PeerPids: []int{peer}}
	}
	snap := live(
		proc(700, on(thread(700, "client", "epoll_wait", "loop", "main"), ep(701))),
		proc(701, on(thread(701, "server", "epoll_wait", "loop", "main"), ep(700))),
	)
	none(t, "waiting-on-process", snap)
}

// A pasted dump has no peers and no lineage: nothing to link, but the
// stack says the process waits for a child (wait4, glibc's __libc_wait):
// whatever hangs is in the child, which the dump does not show. Said
// with low confidence and no deadlock claim (an idle OpenMP thread
// beside it is no lost wake-up).
func TestWaitingOnProcessPastedDump(t *testing.T) {
	for _, call := range []string{"wait4", "__libc_wait"} {
		snap := pasted(proc(800, thread(800, "main", call, "run_test", "main"), thread(801, "omp", "futex_wait", "gomp_barrier_wait_end", "gomp_thread_start", "start_thread")))
		d := one(t, "waiting-on-process", snap)
		if d.Deadlock || d.Confidence != Low {
			t.Errorf("%s: deadlock %v confidence %s", call, d.Deadlock, d.Confidence)
		}
		has(t, "summary", d.Summary, "for a child process, which the dump does not show")
		sameInts(t, "tids", d.Tids, 800)
		for _, o := range Diagnose(snap, Options{}).Diagnoses {
			if o.Deadlock {
				t.Errorf("%s: a deadlock claimed on a parent waiting for its child: %s %s", call, o.ID, o.Summary)
			}
		}
	}
}

// A parent waits for any of two children, one of them stuck: it waits
// for it (a parent that waits for all its children cannot finish), and
// the link says the wait was for any child.
func TestWaitingOnProcessAnyChild(t *testing.T) {
	snap := live(
		withChildren(proc(900, on(thread(900, "pytest", "wait4", "main"), &stacks.Wait{Syscall: "wait4", Nr: 61})), 901, 902),
		proc(901, on(thread(901, "worker", mutexFrames("main")...), lockWait(0x8000, 901, 0))),
		proc(902, on(thread(902, "worker", "clock_nanosleep", "main"), sleepWait())),
	)
	snap.Processes[1].PPid, snap.Processes[2].PPid = 900, 900
	d := one(t, "waiting-on-process", snap)
	has(t, "summary", d.Summary, "waits in `wait4` for any of its children 901, 902, among them pid 901 `worker`", "stuck in self-deadlock")
	sameInts(t, "tids", d.Tids, 900, 901)
}
