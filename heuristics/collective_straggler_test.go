package heuristics

import (
	"slices"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// rankSnap is one rank's snapshot, as a dump of it parses: its label is
// the input's name, its main thread speaks for it, and an NCCL proxy
// thread polls beside it in every rank.
func rankSnap(label string, pid int, main ...string) *stacks.Snapshot {
	p := proc(pid,
		thread(pid, "python", main...),
		thread(pid+1, "nccl-proxy", "__GI___poll", "ncclProxyService", "start_thread", "clone3"),
	)
	p.Label = label
	return pasted(p)
}

func allReduceRank(label string, pid int, inner ...string) *stacks.Snapshot {
	return rankSnap(label, pid, append(inner, "allreduce_ring", "ncclAllReduce", "c10d::ProcessGroupNCCL::allreduce", "train_step", "main")...)
}

// The "done when" case: four ranks dumped one by one, three in an
// all-reduce (one polls, two sleep in a futex) and one in a fence wait,
// merged as hangdoc analyze merges them.
func fourRanks() *stacks.Snapshot {
	return stacks.Merge(
		allReduceRank("rank0.txt", 4000, "__GI___poll"),
		allReduceRank("rank1.txt", 4100, "futex_wait", "__GI___lll_lock_wait"),
		rankSnap("rank2.txt", 4200, "fence_wait", "mlx::core::eval_impl", "train_step", "main"),
		allReduceRank("rank3.txt", 4300, "__GI___poll"),
	)
}

func TestCollectiveStraggler(t *testing.T) {
	d := one(t, "collective-straggler", fourRanks())
	complete(t, d)
	has(t, "summary", d.Summary, "rank `rank2.txt` (pid 4200)", "3 of 4 ranks wait in `c10d::ProcessGroupNCCL::allreduce`", "in `fence_wait` instead", "thread 4200")
	if d.Tids[0] != 4200 || d.Pids[0] != 4200 {
		t.Errorf("tids %v pids %v: want the straggler's first", d.Tids, d.Pids)
	}
	for _, pid := range []int{4000, 4100, 4300} {
		if !slices.Contains(d.Pids, pid) {
			t.Errorf("pids %v lack the waiting rank %d", d.Pids, pid)
		}
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "3 ranks wait in `c10d::ProcessGroupNCCL::allreduce`", "rank0.txt", "rank `rank2.txt` (pid 4200): thread 4200 `python`")
	has(t, "evidence", strings.Join(d.Evidence, "\n"), "fence_wait ← mlx::core::eval_impl", "one sample per rank")
	has(t, "fix", d.Fix, "rank `rank2.txt` (pid 4200)", "`fence_wait`")
	if d.Confidence != Medium {
		t.Errorf("confidence %s, want medium (one sample per rank)", d.Confidence)
	}

	// In the whole catalogue it comes first, refined by the MLX fence
	// issue (reported for distributed runs), and says what it lacked.
	all := Diagnose(fourRanks(), Options{}).Diagnoses
	top := all[0]
	if top.ID != "collective-straggler" || top.KnownIssue == nil || top.KnownIssue.ID != "mlx-fence-fast-synch" {
		t.Fatalf("top %s (known issue %+v): %s", top.ID, top.KnownIssue, dump(all))
	}
	has(t, "evidence", strings.Join(top.Evidence, "\n"), "no CPU figures in a gdb dump")
}

// With several samples that agree, from live attaches, it is sure.
func TestCollectiveStragglerLive(t *testing.T) {
	mk := func(label string, pid int, frames ...string) *stacks.Snapshot {
		p := proc(pid, thread(pid, "rank", frames...))
		p.Label = label
		return live(p)
	}
	coll := func(inner string) []string {
		return []string{inner, "MPIDI_CH3I_Progress", "PMPI_Barrier", "step", "main"}
	}
	snap := stacks.Merge(
		mk("host-a", 10, coll("poll")...),
		mk("host-b", 20, coll("poll")...),
		mk("host-c", 30, "read", "load_shard", "step", "main"),
		mk("host-d", 40, coll("epoll_wait")...),
		mk("host-e", 50, coll("poll")...),
	)
	d := one(t, "collective-straggler", snap)
	has(t, "summary", d.Summary, "`host-c` (pid 30)", "4 of 5 ranks wait in `PMPI_Barrier`", "`load_shard`")
	if d.Confidence != High {
		t.Errorf("confidence %s, want high: three samples agree", d.Confidence)
	}

	// A straggler still working: slow, not stuck.
	busy := spinning(thread(30, "rank", "crunch", "step", "main"))
	busy.Samples()[1].Stack = []stacks.Frame{{Func: "crunch_more"}, {Func: "step"}, {Func: "main"}}
	snap.Processes[2].Threads = []*stacks.Thread{busy}
	d = one(t, "collective-straggler", snap)
	if d.Confidence != Low {
		t.Errorf("confidence %s, want low for a rank whose stack moves", d.Confidence)
	}
	has(t, "chain", strings.Join(d.Chain, "\n"), "still working")
}

// Two ranks in one collective and two in another: no majority, no claim;
// everyone in the collective: no straggler; fewer than three ranks: no
// claim; helper threads in every rank do not make a rank "in" one.
func TestCollectiveStragglerNot(t *testing.T) {
	none(t, "collective-straggler", stacks.Merge(
		allReduceRank("r0", 100, "poll"), allReduceRank("r1", 200, "poll"),
		rankSnap("r2", 300, "poll", "ncclBroadcast", "main"), rankSnap("r3", 400, "poll", "ncclBroadcast", "main"),
	))
	none(t, "collective-straggler", stacks.Merge(
		allReduceRank("r0", 100, "poll"), allReduceRank("r1", 200, "poll"), allReduceRank("r2", 300, "poll"),
	))
	none(t, "collective-straggler", stacks.Merge(
		allReduceRank("r0", 100, "poll"), rankSnap("r1", 200, "fence_wait", "main"),
	))
	// Only the proxies poll in NCCL; the main threads compute: no claim.
	none(t, "collective-straggler", stacks.Merge(
		rankSnap("r0", 100, "matmul", "main"), rankSnap("r1", 200, "matmul", "main"), rankSnap("r2", 300, "load", "main"),
	))
	// "string" and ring buffers are not a ring pass.
	none(t, "collective-straggler", stacks.Merge(
		rankSnap("r0", 100, "std::__cxx11::basic_string<char>::append", "main"),
		rankSnap("r1", 200, "ring_buffer_read", "main"), rankSnap("r2", 300, "ring_buffer_read", "main"),
		rankSnap("r3", 400, "x", "main"),
	))
}

// A rank in a different collective is a straggler too: the ranks issued
// collectives in different orders. Two stragglers are both named.
func TestCollectiveStragglerOrder(t *testing.T) {
	snap := stacks.Merge(
		allReduceRank("r0", 100, "poll"), allReduceRank("r1", 200, "poll"), allReduceRank("r2", 300, "poll"),
		allReduceRank("r3", 400, "poll"), allReduceRank("r4", 500, "poll"),
		rankSnap("r5", 600, "poll", "gloo::barrier", "main"),
		rankSnap("r6", 700, "sem_wait", "DataLoader::next", "main"),
	)
	d := one(t, "collective-straggler", snap)
	has(t, "summary", d.Summary, "2 of 7 ranks are not in the collective the other 5 wait in (`c10d::ProcessGroupNCCL::allreduce`)", "`r5` (pid 600) in `gloo::barrier`", "`r6` (pid 700) in `DataLoader::next`")
	has(t, "chain", strings.Join(d.Chain, "\n"), "different collective, `gloo::barrier`")
}

func TestCollectiveFrames(t *testing.T) {
	yes := []string{"ncclAllReduce", "ncclKernel_AllReduce_RING_LL_Sum_float", "PMPI_Allreduce", "MPI_Barrier", "gloo::AllreduceRing::run",
		"mlx::core::distributed::ring::all_sum", "allreduce_ring", "RingAllReduce", "c10d::ProcessGroupGloo::broadcast", "jaccl::send",
		"torch.distributed.all_gather", "reduce_scatter_tensor", "pthread_barrier_wait", "ring::send"}
	no := []string{"std::__cxx11::basic_string<char>::append", "during_init", "__pthread_cond_broadcast", "pthread_cond_broadcast", "ring_buffer_read", "io_uring_wait_cqe", "tostring", "compute"}
	for _, n := range yes {
		if !collectiveFrame(stacks.Frame{Func: n}) {
			t.Errorf("%s: not taken for a collective", n)
		}
	}
	for _, n := range no {
		if collectiveFrame(stacks.Frame{Func: n}) {
			t.Errorf("%s: taken for a collective", n)
		}
	}
}

// A busy rank whose thread did not stop in time in the last sample has no
// stack there: its earlier sample still puts it in the collective (seen on
// Open MPI ranks polling in opal_progress on a loaded machine,
// cmd/hangdoc's TestSlurmReadmeCluster).
func TestCollectiveStragglerLastSampleUnknown(t *testing.T) {
	snap := fourRanks()
	for _, p := range snap.Processes {
		for _, th := range p.Threads {
			if th.Tid == 4000 {
				th.SetSamples([]stacks.Sample{{State: "R", Stack: th.Stack}, {State: "R"}})
				th.Stack = nil
			}
		}
	}
	d := one(t, "collective-straggler", snap)
	if d.Pids[0] != 4200 {
		t.Errorf("pids %v: want the straggler 4200 first", d.Pids)
	}
}

// TestStragglerDDTGroups: DDT's merged-stack export (hand-written here in
// its CSV form: processes, threads, the tree) counts the ranks of each
// group; the ranks are weighed by those counts, so the one rank in a
// file read is the straggler of the six in MPI_Allreduce. All seven in
// the collective: no straggler.
func TestStragglerDDTGroups(t *testing.T) {
	const ddt = "Processes,Threads,Function\n" +
		"7,7,main (solver.c:88)\n" +
		"6,6,  PMPI_Allreduce (pallreduce.c:110)\n" +
		"6,6,    ompi_coll_tuned_allreduce_intra_dec_fixed (coll_tuned_decision_fixed.c:216)\n" +
		"6,6,      ompi_request_default_wait (req_wait.c:42)\n" +
		"6,6,        opal_progress (opal_progress.c:231)\n" +
		"1,1,  write_checkpoint (checkpoint.c:41)\n" +
		"1,1,    read (read.c:26)\n"
	snap, _, _, err := stacks.Parse(strings.NewReader(ddt), "")
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Processes) != 7 {
		t.Fatalf("%d processes, want one a rank (7)", len(snap.Processes))
	}
	d := one(t, "collective-straggler", snap)
	if !strings.Contains(d.Summary, "6 of 7 ranks wait in `PMPI_Allreduce`") || !strings.Contains(d.Summary, "write_checkpoint") {
		t.Errorf("summary: %s", d.Summary)
	}
	all := strings.ReplaceAll(strings.ReplaceAll(ddt, "6,6,", "7,7,"), "1,1,  write_checkpoint (checkpoint.c:41)\n1,1,    read (read.c:26)\n", "")
	snap, _, _, err = stacks.Parse(strings.NewReader(all), "")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range Diagnose(snap, Options{}).Diagnoses {
		if d.ID == "collective-straggler" {
			t.Errorf("every rank is in the collective, yet: %s", d.Summary)
		}
	}
}

// TestStragglerProgressTimeout: MPICH's progress-timeout reports
// (hand-written here in their form, under mpirun -l's rank labels): a
// rank waiting in MPI_Allreduce past the timeout waits for a rank that
// has not joined (low); a rank in MPI_Recv with an unexpected message
// from another rank pending is the straggler itself; in MPI_Recv with
// nothing unexpected, nothing says who holds whom: no claim.
func TestStragglerProgressTimeout(t *testing.T) {
	coll := "[3] [2.001] 1 pending requests in pool 0\n[3]     ac000002: MPIDIG_do_isend: dest=0, tag=-10, data_sz=8\n" +
		"[3] /opt/mpich/lib/libmpi.so.12(MPL_backtrace_show+0x39) [0x7f641d260f09]\n" +
		"[3] /opt/mpich/lib/libmpi.so.12(+0x2fbe2c) [0x7f641d127e2c]\n" +
		"[3] /opt/mpich/lib/libmpi.so.12(MPI_Allreduce+0x30a) [0x7f641ceeea5a]\n" +
		"[3] ./solver(+0x126d) [0x56039857f26d]\n[3] /lib/x86_64-linux-gnu/libc.so.6(__libc_start_main+0x80) [0x7f641cc0ce40]\n"
	snap, _, _, err := stacks.Parse(strings.NewReader(coll), "")
	if err != nil {
		t.Fatal(err)
	}
	d := one(t, "collective-straggler", snap)
	if d.Confidence != Low || !strings.Contains(d.Summary, "rank 3 has waited in `MPI_Allreduce`") {
		t.Errorf("%s: %s", d.Confidence, d.Summary)
	}
	recv := func(reqs string) string {
		return "2 pending requests in pool 0\n" + reqs +
			"/opt/mpich/lib/libmpi.so.12(MPL_backtrace_show+0x39) [0x7ff500f13a59]\n" +
			"/opt/mpich/lib/libmpi.so.12(MPI_Recv+0x46d) [0x7ff500c42efd]\n./solver(+0x125f) [0x5603973bd25f]\n"
	}
	snap, _, _, err = stacks.Parse(strings.NewReader(recv("    ac000000: MPIDIG_do_irecv: source=4, tag=7, count=1, datatype=4c000405\n"+
		"    ac000001: create_unexp_rreq: source=2, tag=1, data_sz=0\n")), "")
	if err != nil {
		t.Fatal(err)
	}
	d = one(t, "collective-straggler", snap)
	if !strings.Contains(d.Summary, "is the straggler") || !strings.Contains(d.Summary, "for rank 4") || !strings.Contains(d.Summary, "from rank 2 arrived unexpected") {
		t.Errorf("%s", d.Summary)
	}
	snap, _, _, err = stacks.Parse(strings.NewReader(recv("    ac000000: MPIDIG_do_irecv: source=4, tag=7, count=1, datatype=4c000405\n")), "")
	if err != nil {
		t.Fatal(err)
	}
	none(t, "collective-straggler", snap)
}

// A busy rank stopped mid-spin may unwind short: its last stack ends in
// the progress engine (opal_progress) without the MPI call below it, while
// an earlier sample shows MPI_Barrier. It is still in the barrier: seen in
// a CI=true run of TestSlurmReadmeCluster at high load, where 2 of 4 ranks
// in MPI_Barrier and 1 in "opal_progress" gave no majority and no verdict.
func TestCollectiveStragglerShortUnwind(t *testing.T) {
	mk := func(pid int, frames ...string) *stacks.Snapshot {
		p := proc(pid, thread(pid, "rank", frames...))
		p.Label = "rank" + string(rune('0'+pid/10))
		return live(p)
	}
	barrier := []string{"poll", "opal_progress", "ompi_request_default_wait", "PMPI_Barrier", "step", "main"}
	snap := stacks.Merge(mk(10, barrier...), mk(20, barrier...), mk(30, barrier...),
		mk(40, "futex_wait", "__lll_lock_wait", "pthread_mutex_lock", "flush_checkpoint", "step", "main"))
	short := snap.Processes[2].Threads[0]
	short.Stack = []stacks.Frame{{Func: "mca_btl_vader_component_progress"}, {Func: "opal_progress"}}
	short.Samples()[len(short.Samples())-1].Stack = short.Stack
	d := one(t, "collective-straggler", snap)
	has(t, "summary", d.Summary, "3 of 4 ranks wait in `PMPI_Barrier`")
	if d.Pids[0] != 40 {
		t.Errorf("pids %v: want the straggler 40 first", d.Pids)
	}
}
