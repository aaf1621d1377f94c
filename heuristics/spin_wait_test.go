package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

// fenceSnap is the MLX Fence::wait shape (testdata/patients/fence_spin.c):
// the waiter runs fence_wait at full CPU with the same stack; the producer
// sleeps on a condition variable; main joins the waiter.
func fenceSnap(cpu bool, n int) *stacks.Snapshot {
	waiter := nbThread(11, "fence-waiter", nbTimes(n, nbRunning(50, nbFrames("fence_wait@/t/fence_spin", "fence_waiter_main@/t/fence_spin", "start_thread@/lib/libc.so.6", "clone3@/lib/libc.so.6")))...)
	producer := nbThread(12, "fence-producer", nbTimes(n, nbBlocked("futex", nbFrames("__futex_abstimed_wait_common", "pthread_cond_wait", "producer_idle", "fence_producer_main", "start_thread")))...)
	main := nbThread(10, "fence_spin", nbTimes(n, nbJoining(11))...)
	snap := nbSnap(cpu, nbProc(10, main, waiter, producer))
	if !cpu {
		for _, th := range snap.Processes[0].Threads {
			th.CPU = 0
			for i := range th.Samples() {
				th.Samples()[i].CPUTicks = 0
			}
		}
	}
	return snap
}

func TestSpinWaitFence(t *testing.T) {
	ds := nbMatch(t, "spin-wait-starved", fenceSnap(true, 3))
	if len(ds) != 1 {
		t.Fatalf("got %d diagnoses, want 1: %+v", len(ds), ds)
	}
	d := ds[0]
	if d.Confidence != High || !d.Deadlock || len(d.Tids) != 1 || d.Tids[0] != 11 || d.Pids[0] != 10 {
		t.Errorf("confidence %s, deadlock %v, tids %v, pids %v", d.Confidence, d.Deadlock, d.Tids, d.Pids)
	}
	for _, want := range []string{"thread 11 `fence-waiter`", "100% CPU", "`fence_wait`", "all 3 samples"} {
		if !strings.Contains(d.Summary, want) {
			t.Errorf("summary %q lacks %q", d.Summary, want)
		}
	}
	ev := strings.Join(d.Evidence, "\n")
	for _, want := range []string{"CPU ticks per sample: —, 50, 50", "fence_wait ← fence_waiter_main", "loop frame `fence_wait` in `fence_spin`"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	chain := strings.Join(d.Chain, "\n")
	if !strings.Contains(chain, "thread 12 `fence-producer` sleeps in a futex wait (in `producer_idle`)") || !strings.Contains(chain, "waits to join thread 11") {
		t.Errorf("chain does not say who sleeps:\n%s", chain)
	}
}

func TestSpinWaitDiagnoseRefinesMLXAndClaimsNoVerdict(t *testing.T) {
	ds := Diagnose(fenceSnap(true, 3), Options{}).Diagnoses
	if len(ds) == 0 || ds[0].ID != "spin-wait-starved" {
		t.Fatalf("top diagnosis: %v", nbIDs(ds))
	}
	if ki := ds[0].KnownIssue; ki == nil || ki.ID != "mlx-fence-fast-synch" {
		t.Errorf("known issue %+v, want mlx-fence-fast-synch", ki)
	}
	if !strings.Contains(ds[0].Fix, "MLX_METAL_FAST_SYNCH") {
		t.Errorf("fix not replaced by the known issue's: %q", ds[0].Fix)
	}
	for _, id := range []string{"progressing", "io-wait", "sleeping"} {
		if len(nbFind(ds, id)) > 0 {
			t.Errorf("a spinning process also got %s: %v", id, nbIDs(ds))
		}
	}
}

func TestSpinWaitNearMisses(t *testing.T) {
	waitStack := nbFrames("fence_wait", "fence_waiter_main", "start_thread")
	sleeper := func() *stacks.Thread {
		return nbThread(12, "producer", nbTimes(3, nbBlocked("futex", nbFrames("futex_wait", "pthread_cond_wait", "producer_idle")))...)
	}
	cases := []struct {
		name string
		snap *stacks.Snapshot
	}{
		{"producer runs and its stack moves", nbSnap(true, nbProc(10,
			nbThread(11, "waiter", nbTimes(3, nbRunning(50, waitStack))...),
			nbThread(12, "producer",
				nbRunning(0, nbFrames("produce", "producer_main")),
				nbRunning(50, nbFrames("encode", "produce", "producer_main")),
				nbRunning(50, nbFrames("flush", "producer_main")))))},
		{"CPU did not grow in one sample", nbSnap(true, nbProc(10,
			nbThread(11, "waiter", nbRunning(0, waitStack), nbRunning(50, waitStack), nbRunning(0, waitStack)), sleeper()))},
		{"stack changed", nbSnap(true, nbProc(10,
			nbThread(11, "waiter", nbRunning(0, waitStack), nbRunning(50, nbFrames("fence_update", "fence_waiter_main")), nbRunning(50, waitStack)), sleeper()))},
		{"not running in every sample", nbSnap(true, nbProc(10,
			nbThread(11, "waiter", nbRunning(0, waitStack), stacks.Sample{State: "S", CPUTicks: 50, Stack: waitStack}, nbRunning(50, waitStack)), sleeper()))},
		{"blocked in pthread_cond_wait", nbSnap(true, nbProc(10,
			nbThread(11, "waiter", nbTimes(3, nbBlocked("futex", nbFrames("futex_wait", "pthread_cond_wait", "wait_for_work")))...), sleeper()))},
		{"one sample without CPU figures and no wait name", nbSnap(false, nbProc(10,
			nbThread(11, "cruncher", nbRunning(0, nbFrames("mix_leaf", "crunch", "main"))), sleeper()))},
		{"an unnamed loop with nobody waiting for it", nbSnap(true, nbProc(10,
			nbThread(11, "cruncher", nbTimes(3, nbRunning(50, nbFrames("mix_leaf", "crunch", "main")))...)))},
	}
	for _, c := range cases {
		if ds := nbMatch(t, "spin-wait-starved", c.snap); len(ds) != 0 {
			t.Errorf("%s: claimed %+v", c.name, ds[0].Summary)
		}
	}
}

func TestSpinWaitFromFrameNamesOnlyIsLow(t *testing.T) {
	// One sample of a live attach without CPU figures, and a pasted dump.
	for name, snap := range map[string]*stacks.Snapshot{
		"one sample": fenceSnap(false, 1),
		"dump": nbSnap(false, nbProc(10,
			nbDump(11, "waiter", "mlx::core::Fence::wait(mlx::core::Stream, mlx::core::array const&)", "mlx::core::eval_impl", "main"),
			nbDump(12, "producer", "__futex_abstimed_wait_common", "pthread_cond_wait@@GLIBC_2.3.2", "worker_loop"))),
	} {
		ds := nbMatch(t, "spin-wait-starved", snap)
		if len(ds) != 1 || ds[0].Confidence != Low || ds[0].Tids[0] != 11 {
			t.Errorf("%s: got %+v, want one low-confidence claim on 11", name, ds)
			continue
		}
		if !strings.Contains(strings.Join(ds[0].Evidence, "\n"), "frame names only") {
			t.Errorf("%s: evidence does not say it is from names only: %v", name, ds[0].Evidence)
		}
	}
}

func TestSpinWaitSchedYieldLoop(t *testing.T) {
	// OpenBLAS's exec_blas_async_wait spins with sched_yield: sampled in
	// and out of the syscall, it is the same loop.
	inYield := nbRunning(40, nbFrames("sched_yield", "exec_blas_async_wait", "exec_blas", "dgemv_thread_n", "main"))
	inYield.Wait = &stacks.Wait{Syscall: "sched_yield", Nr: 24}
	outside := nbRunning(45, nbFrames("exec_blas_async_wait", "exec_blas", "dgemv_thread_n", "main"))
	snap := nbSnap(true, nbProc(10,
		nbThread(10, "python", nbRunning(0, outside.Stack), inYield, outside, inYield),
		nbThread(11, "blas", nbTimes(4, nbBlocked("futex", nbFrames("futex_wait", "pthread_cond_wait", "blas_thread_server")))...)))
	ds := nbMatch(t, "spin-wait-starved", snap)
	if len(ds) != 1 || !strings.Contains(ds[0].Summary, "`exec_blas_async_wait`") {
		t.Fatalf("got %+v", ds)
	}
}

func TestSpinWaitUnnamedLoopSamePCs(t *testing.T) {
	// A stripped binary: no names, the same PCs in every sample, full
	// CPU, and a thread asleep that could be the producer.
	st := []stacks.Frame{{PC: 0x401136, Module: "/t/a.out", Offset: 0x1136}, {PC: 0x401190, Module: "/t/a.out", Offset: 0x1190}}
	snap := nbSnap(true, nbProc(10,
		nbThread(11, "", nbTimes(3, nbRunning(50, st))...),
		nbThread(12, "", nbTimes(3, nbBlocked("futex", nbFrames("futex_wait")))...)))
	ds := nbMatch(t, "spin-wait-starved", snap)
	if len(ds) != 1 || ds[0].Confidence != Low {
		t.Fatalf("got %+v, want one low-confidence claim", ds)
	}
	// The PC moved: a computation, not a claim.
	moved := append([]stacks.Frame(nil), st...)
	moved[0].PC, moved[0].Offset = 0x401140, 0x1140
	snap.Processes[0].Threads[0] = nbThread(11, "", nbRunning(0, st), nbRunning(50, moved), nbRunning(50, st))
	if ds := nbMatch(t, "spin-wait-starved", snap); len(ds) != 0 {
		t.Errorf("moving PCs claimed: %+v", ds)
	}
}

// An MPI rank busy-polls its progress engine while it waits in a
// collective (hand-written, the shape of Open MPI's stacks): CPU in
// every sample, the same stack, a waiting name, and still no spin claim:
// it waits for the other ranks, and collective-straggler names the one
// that is elsewhere.
func TestCollectivePollingIsNoSpin(t *testing.T) {
	sleeper := func() *stacks.Thread {
		return nbThread(12, "producer", nbTimes(3, nbBlocked("futex", nbFrames("futex_wait", "pthread_cond_wait", "producer_idle")))...)
	}
	rank := nbFrames("opal_progress", "ompi_request_default_wait", "ompi_coll_base_barrier_intra_recursivedoubling", "PMPI_Barrier", "main")
	snap := nbSnap(true, nbProc(10, nbThread(11, "rank0", nbTimes(3, nbRunning(50, rank))...), sleeper()))
	if ds := nbMatch(t, "spin-wait-starved", snap); len(ds) != 0 {
		t.Errorf("a rank polling in MPI_Barrier is claimed a spin: %s", ds[0].Summary)
	}
	// the same polling outside a collective is a spin
	loop := nbFrames("poll_for_flag", "ompi_request_default_wait_flag", "main")
	snap = nbSnap(true, nbProc(10, nbThread(11, "rank0", nbTimes(3, nbRunning(50, loop))...), sleeper()))
	if ds := nbMatch(t, "spin-wait-starved", snap); len(ds) != 1 {
		t.Errorf("a polling loop outside a collective: %d spin claims, want 1", len(ds))
	}
}
