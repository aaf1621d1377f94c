package heuristics_test

// Stack-only evidence: gdb dumps of the patients (testdata/dumps/gdb,
// produced by TestGDBDumpsFromPatients with -gdb-dumps) are parsed and
// diagnosed, and each verdict is held against what the live attach gives
// the same patient (live_test.go). A dump has no mutex owners, no CPU
// figures, no syscalls and no lineage: where it cannot know what attach
// knows, the test asserts the weaker verdict it can give and that it makes
// no false claim (no owner it did not read, no high confidence). The
// controls get no deadlock claim from their dumps either.

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

var gdbDumps = flag.Bool("gdb-dumps", false, "run the patients under gdb and rewrite testdata/dumps/gdb/<patient>.txt (then go test ./stacks -run Golden -update for the goldens)")

const gdbDumpDir = "../testdata/dumps/gdb"

// dumpPatient is one patient whose gdb dump is stored: how to build and
// run it, and which process gdb looks at.
type dumpPatient struct {
	file   string // the dump, under testdata/dumps/gdb
	source string
	accel  bool // links libfakeaccel.so
	child  bool // gdb on the forked child ("child=<pid>"), not the patient
}

var dumpPatients = []dumpPatient{
	{file: "openblas_relock_child.txt", source: "openblas_relock.c", child: true},
	{file: "devicepool_fork_child.txt", source: "devicepool_fork.cpp", accel: true, child: true},
	{file: "cuda_fork_child.txt", source: "cuda_fork.c", accel: true, child: true},
	{file: "abba.txt", source: "abba.c"},
	{file: "cycle3.txt", source: "cycle3.c"},
	{file: "orphan.txt", source: "orphan.c"},
	{file: "sigrelock.txt", source: "sigrelock.c"},
	{file: "fence_spin.txt", source: "fence_spin.c"},
	{file: "sleeper.txt", source: "sleeper.c"},
	{file: "busy.txt", source: "busy.c"},
	{file: "socket_wait.txt", source: "socket_wait.c"},
}

// TestGDBDumpsFromPatients runs each patient, waits until it hangs, and
// stores `gdb -batch -ex 'thread apply all bt' -p PID` as it printed it.
// It runs only with -gdb-dumps: the stored dumps are the test data.
func TestGDBDumpsFromPatients(t *testing.T) {
	if !*gdbDumps {
		t.Skip("run with -gdb-dumps to produce the dumps again")
	}
	patient.RequirePtrace(t)
	patient.RequireTool(t, "gdb")
	for _, dp := range dumpPatients {
		t.Run(dp.file, func(t *testing.T) {
			flags := slices.Clone(patient.O2g)
			if dp.accel {
				flags = append(flags, buildFakeAccel(t)...)
			}
			bin := patient.Build(t, dp.source, flags...)
			p := patient.Start(t, bin)
			pid := p.Pid
			if dp.child {
				pid = p.Int(t, "child")
				p.KillChildAtEnd(t, pid)
			}
			out := patient.GDBBacktrace(t, pid)
			if err := os.WriteFile(filepath.Join(gdbDumpDir, dp.file), []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// diagnoseDump parses a stored dump and runs the catalogue over it.
func diagnoseDump(t *testing.T, name string) (*stacks.Snapshot, []heuristics.Diagnosis) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(gdbDumpDir, name))
	if err != nil {
		t.Fatal(err)
	}
	snap, skipped, err := stacks.ParseGDB(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for _, s := range skipped {
		t.Logf("%s: %s", name, s)
	}
	ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
	for i, d := range ds {
		pre := "verdict"
		if i > 0 {
			pre = "  also"
		}
		t.Logf("%s: [%s, %s, deadlock=%v] %s", pre, d.ID, d.Confidence, d.Deadlock, d.Summary)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, d := range ds {
				t.Logf("%s chain:\n  %s\nevidence:\n  %s", d.ID, strings.Join(d.Chain, "\n  "), strings.Join(d.Evidence, "\n  "))
			}
		}
	})
	return snap, ds
}

// dumpTop checks the first diagnosis: one of ids, a deadlock claim, not
// high confidence (a dump has no owner to be sure with), and saying which
// evidence the dump lacked. It returns it, or nil.
func dumpTop(t *testing.T, ds []heuristics.Diagnosis, ids ...string) *heuristics.Diagnosis {
	t.Helper()
	if len(ds) == 0 {
		t.Errorf("diagnosis: none, want %s", strings.Join(ids, " or "))
		return nil
	}
	d := &ds[0]
	if !slices.Contains(ids, d.ID) {
		t.Errorf("diagnosis: top is %q (%s), want %s", d.ID, d.Summary, strings.Join(ids, " or "))
		return nil
	}
	if !d.Deadlock || d.Summary == "" || d.Fix == "" {
		t.Errorf("diagnosis %s: deadlock %v, summary %q, fix %q", d.ID, d.Deadlock, d.Summary, d.Fix)
	}
	if d.Confidence == heuristics.High {
		t.Errorf("diagnosis %s: high confidence from a dump without owners", d.ID)
	}
	if !slices.ContainsFunc(d.Hints, func(h heuristics.Hint) bool { return h.Action == heuristics.HintAttach }) {
		t.Errorf("diagnosis %s: no hint to attach to the live process: %+v", d.ID, d.Hints)
	}
	return d
}

// noOwnerClaim: without owners, no diagnosis says which thread holds a
// lock as if it had been read ("held by thread N"), or that an owner
// exited.
func noOwnerClaim(t *testing.T, ds []heuristics.Diagnosis) {
	t.Helper()
	for _, d := range ds {
		for _, s := range append([]string{d.Summary}, d.Chain...) {
			if strings.Contains(s, "records thread") || strings.Contains(s, "which no longer exists") ||
				strings.Contains(s, "which it already holds") {
				t.Errorf("diagnosis %s claims an owner a dump cannot show: %q", d.ID, s)
			}
		}
	}
}

func mainThread(t *testing.T, snap *stacks.Snapshot) (*stacks.Process, *stacks.Thread) {
	t.Helper()
	p := snap.Processes[0]
	th := p.ThreadByTid(p.Pid)
	if th == nil {
		t.Fatalf("no main thread (tid %d) in the dump", p.Pid)
	}
	return p, th
}

func threadNamed(t *testing.T, snap *stacks.Snapshot, name string) *stacks.Thread {
	t.Helper()
	th := snap.Processes[0].ThreadNamed(name)
	if th == nil {
		t.Fatalf("no thread %q in the dump", name)
	}
	return th
}

// tidOf is a thread's id in the dump, by name, or the main thread's.
func tidOf(t *testing.T, snap *stacks.Snapshot, name string) int {
	t.Helper()
	if name == "" {
		_, th := mainThread(t, snap)
		return th.Tid
	}
	return threadNamed(t, snap, name).Tid
}

// The OpenBLAS child: its only thread waits for server_lock. With no
// owner, what the dump says is that nobody else could release it, and
// the known issue's frames say it is the thread's own lock: the same
// verdict as the live attach, at low confidence.
func TestDumpOpenBLASRelock(t *testing.T) {
	snap, ds := diagnoseDump(t, "openblas_relock_child.txt")
	child := tidOf(t, snap, "")
	if d := dumpTop(t, ds, "self-deadlock"); d != nil {
		wantTids(t, d, "the child's only thread", child)
		wantConfidence(t, d, heuristics.Low)
		wantSummary(t, d, strconv.Itoa(child), "server_lock")
		wantKnownIssue(t, d, "openblas")
		wantSays(t, d, "no mutex owner in a gdb dump")
	}
	noOwnerClaim(t, ds)
}

// The tt-metal child: the dump cannot see the fork, but the known issue's
// frames (DevicePool) name a lock held across fork(): fork-inherited-lock
// as live, without the parent's thread (not in the dump).
func TestDumpDevicePoolFork(t *testing.T) {
	snap, ds := diagnoseDump(t, "devicepool_fork_child.txt")
	child := tidOf(t, snap, "")
	if d := dumpTop(t, ds, "fork-inherited-lock"); d != nil {
		wantTids(t, d, "the child's waiting thread", child)
		wantPids(t, d, child)
		wantConfidence(t, d, heuristics.Low)
		wantKnownIssue(t, d, "tt-metal", "devicepool")
		wantSummary(t, d, "DevicePool", "forked child")
		wantSays(t, d, "no process lineage")
	}
	noOwnerClaim(t, ds)
}

// The CUDA-style child: one thread stuck on a lock inside the driver and
// none of the driver's threads beside it.
func TestDumpCUDAFork(t *testing.T) {
	snap, ds := diagnoseDump(t, "cuda_fork_child.txt")
	child := tidOf(t, snap, "")
	if d := dumpTop(t, ds, "fork-after-accelerator-init", "fork-inherited-lock"); d != nil {
		wantTids(t, d, "the child's thread in the driver", child)
		wantConfidence(t, d, heuristics.Low)
		wantSummary(t, d, "fakeaccel_submit", "fakeaccel_ctx_lock", "forked")
	}
	noOwnerClaim(t, ds)
}

// ABBA: two threads wait for two different locks, none runs; the dump's
// arguments name the locks but not who holds them (the frames were not
// called with them): a low-confidence cycle.
func TestDumpABBA(t *testing.T) {
	snap, ds := diagnoseDump(t, "abba.txt")
	ab, ba := tidOf(t, snap, "transfer-ab"), tidOf(t, snap, "transfer-ba")
	if d := dumpTop(t, ds, "lock-order-cycle"); d != nil {
		wantTids(t, d, "both threads of the cycle", ab, ba)
		wantPids(t, d, snap.Processes[0].Pid)
		wantSummary(t, d, "lock_a", "lock_b")
		if d.Confidence != heuristics.Low {
			t.Errorf("confidence %s, want low: who holds which lock is not in the dump", d.Confidence)
		}
	}
	noOwnerClaim(t, ds)
}

// A cycle of three: pass_on(mine, next) shows each thread's held lock in
// its arguments, and the cycle closes through them.
func TestDumpCycle3(t *testing.T) {
	snap, ds := diagnoseDump(t, "cycle3.txt")
	tids := []int{tidOf(t, snap, "stage-0"), tidOf(t, snap, "stage-1"), tidOf(t, snap, "stage-2")}
	if d := dumpTop(t, ds, "lock-order-cycle"); d != nil {
		wantTids(t, d, "the three threads of the cycle", tids...)
		wantConfidence(t, d, heuristics.Medium)
		wantSummary(t, d, "lock_a", "lock_b", "lock_c", "most likely")
		wantSays(t, d, "`pass_on` was called with")
	}
	if n := count(ds, "lock-order-cycle"); n != 1 {
		t.Errorf("%d lock-order-cycle diagnoses, want 1", n)
	}
}

// The orphaned lock: the owner's id is what tells it from a re-lock, and
// a dump has none. The weaker verdict: the only thread waits for a lock
// no thread can release; it says the holder may have exited, and claims
// no owner.
func TestDumpOrphan(t *testing.T) {
	snap, ds := diagnoseDump(t, "orphan.txt")
	main := tidOf(t, snap, "")
	if d := dumpTop(t, ds, "self-deadlock", "orphaned-lock"); d != nil {
		wantTids(t, d, "main, the waiter", main)
		wantConfidence(t, d, heuristics.Low)
		wantSummary(t, d, "state_lock", "exited")
		if d.KnownIssue != nil {
			t.Errorf("known issue %s on a lock no known issue names", d.KnownIssue.ID)
		}
	}
	if d := find(ds, "orphaned-lock"); d != nil {
		t.Errorf("orphaned-lock claimed without an owner id: %s", d.Summary)
	}
	noOwnerClaim(t, ds)
}

// The signal handler re-takes log_lock: log_write on both sides of the
// signal frame.
func TestDumpSignalRelock(t *testing.T) {
	snap, ds := diagnoseDump(t, "sigrelock.txt")
	logger := tidOf(t, snap, "logger")
	if d := dumpTop(t, ds, "signal-handler-reentry"); d != nil {
		wantTids(t, d, "the thread in its own signal handler", logger)
		wantConfidence(t, d, heuristics.Medium)
		wantSummary(t, d, strconv.Itoa(logger), "log_lock", "on_sigusr1")
	}
	noOwnerClaim(t, ds)
}

// The MLX fence: without CPU figures only the loop's name speaks, at low
// confidence, with the known issue.
func TestDumpFenceSpin(t *testing.T) {
	snap, ds := diagnoseDump(t, "fence_spin.txt")
	waiter := tidOf(t, snap, "fence-waiter")
	if d := dumpTop(t, ds, "spin-wait-starved"); d != nil {
		wantTids(t, d, "the spinning waiter", waiter)
		wantConfidence(t, d, heuristics.Low)
		wantSummary(t, d, strconv.Itoa(waiter), "fence_wait")
		wantKnownIssue(t, d, "mlx")
		wantSays(t, d, "no CPU figures in a gdb dump")
	}
}

// mutex_o2: four threads wait for the_lock; main, the only other thread,
// joins one of them (the futex it waits on carries that thread's id).
func TestDumpMutexJoinCycle(t *testing.T) {
	snap, ds := diagnoseDump(t, "mutex_o2.txt")
	main, ant := tidOf(t, snap, ""), tidOf(t, snap, "ant")
	if d := dumpTop(t, ds, "lock-order-cycle"); d != nil {
		wantTids(t, d, "main and the joined thread", main, ant)
		wantConfidence(t, d, heuristics.Medium)
		wantSummary(t, d, "the_lock", "joins")
		wantSays(t, d, "the only thread of the process not waiting for it")
	}
}

// lock_across_read: the fetcher holds cache_lock across recv() and the
// reader waits for it; a gdb dump records no owner, so the holder is the
// one thread not waiting on a lock, join or wake-up: io-wait (medium)
// with the reader queued behind it, and no deadlock claim.
func TestDumpLockAcrossRead(t *testing.T) {
	snap, ds := diagnoseDump(t, "lock_across_read.txt")
	fetcher, reader := tidOf(t, snap, "fetcher"), tidOf(t, snap, "reader")
	for _, d := range ds {
		if d.Deadlock {
			t.Errorf("deadlock claimed: [%s] %s", d.ID, d.Summary)
		}
	}
	if len(ds) == 0 || ds[0].ID != "io-wait" {
		t.Fatalf("verdicts %v, want io-wait first", ids(ds))
	}
	d := &ds[0]
	wantTids(t, d, "the fetcher", fetcher)
	wantConfidence(t, d, heuristics.Medium)
	wantSummary(t, d, "most likely holds across that call")
	wantSays(t, d, strconv.Itoa(reader)+" `reader` waits for a lock")
	if !strings.Contains(d.Fix, "Do not hold a mutex across a blocking call") {
		t.Errorf("fix %q", d.Fix)
	}
}

// Controls: no deadlock claim from their dumps either.
func TestDumpControls(t *testing.T) {
	for _, c := range []struct{ file, verdict string }{
		{"sleeper.txt", "sleeping"},
		{"socket_wait.txt", "io-wait"},
		{"busy.txt", ""},
	} {
		t.Run(c.file, func(t *testing.T) {
			_, ds := diagnoseDump(t, c.file)
			for _, d := range ds {
				if d.Deadlock {
					t.Errorf("control: deadlock claimed: [%s] %s", d.ID, d.Summary)
				}
			}
			if c.verdict != "" && (len(ds) == 0 || ds[0].ID != c.verdict) {
				t.Errorf("control: verdicts %v, want %s first", ids(ds), c.verdict)
			}
		})
	}
}

func find(ds []heuristics.Diagnosis, id string) *heuristics.Diagnosis {
	for i := range ds {
		if ds[i].ID == id {
			return &ds[i]
		}
	}
	return nil
}

func ids(ds []heuristics.Diagnosis) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// gdbRank is one rank's `thread apply all bt`, as a person pastes it:
// the main thread's frames (innermost first) and an NCCL proxy thread.
func gdbRank(pid int, frames ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Thread 2 (Thread 0x7f00000%d (LWP %d) \"nccl-proxy\"):\n", pid, pid+1)
	b.WriteString("#0  0x00007f0000001000 in __GI___poll (fds=0x7f0000a000, nfds=2, timeout=-1) at ../sysdeps/unix/sysv/linux/poll.c:29\n")
	b.WriteString("#1  0x00007f0000002000 in ncclProxyService (_args=0x55000000) from /usr/lib/libnccl.so.2\n")
	b.WriteString("#2  0x00007f0000003000 in start_thread (arg=<optimized out>) at ./nptl/pthread_create.c:442\n\n")
	fmt.Fprintf(&b, "Thread 1 (Thread 0x7f00001%d (LWP %d) \"python\"):\n", pid, pid)
	for i, f := range frames {
		fmt.Fprintf(&b, "#%d  0x00007f00000%05x in %s ()\n", i, 0x1000*(i+1), f)
	}
	fmt.Fprintf(&b, "[Inferior 1 (process %d) detached]\n", pid)
	return b.String()
}

// The multi-rank "done when": four dumps, three ranks in an all-reduce
// (ncclAllReduce → allreduce_ring → futex or poll) and one in a fence
// wait, parsed, labelled with their file names and merged as hangdoc
// analyze does: the verdict names the straggler rank and its frame.
func TestDumpRanksStraggler(t *testing.T) {
	coll := []string{"allreduce_ring", "ncclAllReduce", "train_step", "main"}
	dumps := map[string]string{
		"rank0.txt": gdbRank(5000, append([]string{"__GI___poll"}, coll...)...),
		"rank1.txt": gdbRank(5100, append([]string{"futex_wait", "__GI___lll_lock_wait"}, coll...)...),
		"rank2.txt": gdbRank(5200, append([]string{"__GI___poll"}, coll...)...),
		"rank3.txt": gdbRank(5300, "fence_wait", "mlx::core::gpu::eval", "train_step", "main"),
	}
	var snaps []*stacks.Snapshot
	for _, name := range []string{"rank0.txt", "rank1.txt", "rank2.txt", "rank3.txt"} {
		snap, skipped, err := stacks.ParseGDB(strings.NewReader(dumps[name]))
		if err != nil || len(skipped) != 0 {
			t.Fatalf("%s: %v, skipped %v", name, err, skipped)
		}
		for _, p := range snap.Processes {
			p.Label = name
		}
		snaps = append(snaps, snap)
	}
	ds := heuristics.Diagnose(stacks.Merge(snaps...), heuristics.Options{}).Diagnoses
	if len(ds) == 0 || ds[0].ID != "collective-straggler" {
		t.Fatalf("verdicts %v, want collective-straggler first", ids(ds))
	}
	d := ds[0]
	t.Logf("verdict: [%s, %s] %s", d.ID, d.Confidence, d.Summary)
	wantSummary(t, &d, "rank3.txt", "5300", "`fence_wait`", "3 of 4 ranks wait in `ncclAllReduce`")
	wantTids(t, &d, "the straggler's main thread", 5300)
	wantPids(t, &d, 5000, 5100, 5200, 5300)
	if !d.Deadlock || d.Confidence == heuristics.High {
		t.Errorf("deadlock %v confidence %s", d.Deadlock, d.Confidence)
	}
}
