package heuristics

import (
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/stacks"
)

const (
	libc      = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	fakeaccel = "/tmp/patients/libfakeaccel.so"
	libcuda   = "/usr/lib/x86_64-linux-gnu/libcuda.so.1"
)

// cudaForkSnap is testdata/patients/cuda_fork.c: the parent (100)
// initialised libfakeaccel.so, whose driver thread 101 holds the context
// lock, and forked child 200, which waits on that lock in the driver.
func cudaForkSnap() *stacks.Snapshot {
	parent := nbModules(nbProc(100,
		nbThread(100, "cuda_fork", nbTimes(3, nbBlocked("wait4", nbFrames("wait4@"+libc, "waitpid@"+libc, "main@/t/cuda_fork")))...),
		nbThread(101, "fakeaccel-drv", nbTimes(3, nbBlocked("clock_nanosleep", nbFrames("clock_nanosleep@"+libc, "nanosleep@"+libc, "fakeaccel_service_queue@"+fakeaccel, "fakeaccel_driver_main@"+fakeaccel, "start_thread@"+libc)))...),
	), "/t/cuda_fork", libc, fakeaccel)
	childStack := nbFrames("__lll_lock_wait@"+libc, "pthread_mutex_lock@"+libc, "fakeaccel_submit@"+fakeaccel, "fakeaccel_launch@"+fakeaccel, "run_worker@/t/cuda_fork", "main@/t/cuda_fork")
	child := nbForked(nbModules(nbProc(200,
		nbThread(200, "cuda_fork", nbTimes(3, nbOnMutex(101, "fakeaccel_ctx_lock", childStack))...),
	), "/t/cuda_fork", libc, fakeaccel), 100, []int{100, 101}, "/t/cuda_fork", libc, fakeaccel)
	return nbSnap(true, parent, child)
}

func TestForkAccelFakeDriver(t *testing.T) {
	ds := nbMatch(t, "fork-after-accelerator-init", cudaForkSnap())
	if len(ds) != 1 {
		t.Fatalf("got %d diagnoses, want 1", len(ds))
	}
	d := ds[0]
	if d.Confidence != High || !d.Deadlock {
		t.Errorf("confidence %s, deadlock %v", d.Confidence, d.Deadlock)
	}
	if len(d.Pids) != 2 || d.Pids[0] != 200 || d.Pids[1] != 100 || !nbHasTid(d, 200) || !nbHasTid(d, 101) {
		t.Errorf("pids %v tids %v, want child 200 and parent 100, waiter 200 and owner 101", d.Pids, d.Tids)
	}
	for _, want := range []string{"forked child 200", "`libfakeaccel.so`", "fake accelerator (test stand-in)", "parent 100", "`fakeaccel_submit`", "`fakeaccel_ctx_lock`", "parent thread 101"} {
		if !strings.Contains(d.Summary, want) {
			t.Errorf("summary %q lacks %q", d.Summary, want)
		}
	}
	text := strings.Join(append(d.Chain, d.Evidence...), "\n")
	for _, want := range []string{"fork() copied", "__owner 101", "fakeaccel_service_queue", "driver mapped in the parent: " + fakeaccel} {
		if !strings.Contains(text, want) {
			t.Errorf("chain and evidence lack %q:\n%s", want, text)
		}
	}
	if !strings.Contains(Lookup("fork-after-accelerator-init").Explain, "test stand-in") {
		t.Error("the explanation does not say libfakeaccel.so is a test stand-in")
	}
}

func TestForkAccelDiagnoseIsFirstAndLeavesTheParentAlone(t *testing.T) {
	ds := Diagnose(cudaForkSnap(), Options{}).Diagnoses
	if len(ds) == 0 || ds[0].ID != "fork-after-accelerator-init" {
		t.Fatalf("diagnoses %v, want fork-after-accelerator-init first", nbIDs(ds))
	}
	for _, d := range ds {
		if !d.Deadlock {
			t.Errorf("the parent waiting for its hung child got %s: %s", d.ID, d.Summary)
		}
		if d.KnownIssue != nil && d.ID == "fork-after-accelerator-init" {
			t.Errorf("the fake driver matched a real driver's known issue %s", d.KnownIssue.ID)
		}
	}
}

func TestForkAccelCUDAKnownIssue(t *testing.T) {
	// A real driver, no mutex owner (the driver's own futex): medium, and
	// the CUDA rule names the PyTorch error.
	child := nbForked(nbModules(nbProc(200,
		nbThread(200, "python", nbTimes(3, nbBlocked("futex", nbFrames("futex_wait@"+libc, "pthread_cond_wait@"+libc, "cuInit_internal@"+libcuda, "cuInit@"+libcuda, "cudart::globalState::initializeDriver@/x/libcudart.so.12", "cudaGetDeviceCount@/x/libcudart.so.12", "main")))...),
	), libc, libcuda), 100, []int{100, 101, 102}, libc, libcuda, "/x/libcudart.so.12")
	ds := Diagnose(nbSnap(true, child), Options{}).Diagnoses
	got := nbFind(ds, "fork-after-accelerator-init")
	if len(got) != 1 || got[0].Confidence != Medium {
		t.Fatalf("got %+v", got)
	}
	if !strings.Contains(got[0].Summary, "CUDA driver `libcuda.so.1`") || !strings.Contains(got[0].Summary, "`cuInit_internal`") {
		t.Errorf("summary %q", got[0].Summary)
	}
	if ki := got[0].KnownIssue; ki == nil || ki.ID != "cuda-forked-subprocess" {
		t.Errorf("known issue %+v", ki)
	} else if !strings.Contains(got[0].Fix, "spawn") || !strings.Contains(got[0].Fix, "TORCHINDUCTOR_COMPILE_THREADS=1") {
		t.Errorf("fix %q", got[0].Fix)
	}
}

func TestForkAccelNearMisses(t *testing.T) {
	inDriver := nbFrames("__lll_lock_wait@"+libc, "pthread_mutex_lock@"+libc, "fakeaccel_submit@"+fakeaccel, "fakeaccel_launch@"+fakeaccel, "main")
	child := func(pm []string, mods []string, samples ...stacks.Sample) *stacks.Process {
		return nbForked(nbModules(nbProc(200, nbThread(200, "worker", samples...)), mods...), 100, []int{100, 101}, pm...)
	}
	cases := []struct {
		name string
		p    *stacks.Process
	}{
		{"the child loaded the driver itself", child([]string{libc}, []string{libc, fakeaccel}, nbTimes(3, nbOnMutex(300, "", inDriver))...)},
		{"stuck, but not in the driver (the tt-metal DevicePool child)", child([]string{libc, fakeaccel}, []string{libc, fakeaccel},
			nbTimes(3, nbOnMutex(101, "", nbFrames("__lll_lock_wait@"+libc, "pthread_mutex_lock@"+libc, "DevicePool::open_device@/t/devicepool_fork", "main@/t/devicepool_fork")))...)},
		{"in the driver but progressing", child([]string{libc, fakeaccel}, []string{libc, fakeaccel},
			nbRunning(0, nbFrames("fakeaccel_submit@"+fakeaccel, "main")), nbRunning(40, nbFrames("memcpy@"+libc, "fakeaccel_launch@"+fakeaccel, "main")), nbRunning(40, nbFrames("fakeaccel_launch@"+fakeaccel, "main")))},
		{"libdevice.so outside tt-metal", child([]string{libc, "/usr/lib/libdevice.so"}, []string{libc},
			nbTimes(3, nbBlocked("futex", nbFrames("futex_wait@"+libc, "dev_open@/usr/lib/libdevice.so", "main")))...)},
	}
	for _, c := range cases {
		if ds := nbMatch(t, "fork-after-accelerator-init", nbSnap(true, c.p)); len(ds) != 0 {
			t.Errorf("%s: claimed %s", c.name, ds[0].Summary)
		}
	}
	// Not a forked child at all.
	p := nbModules(nbProc(200, nbThread(200, "worker", nbTimes(3, nbOnMutex(101, "", inDriver))...)), libc, fakeaccel)
	if ds := nbMatch(t, "fork-after-accelerator-init", nbSnap(true, p)); len(ds) != 0 {
		t.Errorf("a process that is not a forked child: claimed %s", ds[0].Summary)
	}
}

func TestForkAccelDriverNames(t *testing.T) {
	for path, want := range map[string]string{
		"/usr/lib/x86_64-linux-gnu/libcuda.so.1":                   "CUDA",
		"/usr/local/cuda/lib64/libcudart.so.12.4.127":              "CUDA",
		"/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.550.54":         "NVIDIA driver",
		"/opt/conda/lib/libnccl.so.2":                              "NCCL (CUDA)",
		"/opt/rocm/lib/libamdhip64.so.6":                           "ROCm HIP",
		"/opt/rocm/lib/libhsa-runtime64.so.1":                      "ROCm HSA",
		"/usr/lib/x86_64-linux-gnu/libze_loader.so.1":              "oneAPI Level Zero",
		"/home/u/tt-metal/build/lib/libtt_metal.so":                "tt-metal",
		"/home/u/tt-metal/build/lib/libdevice.so":                  "tt-metal UMD",
		"/home/u/.venv/lib/python3.10/site-packages/ttnn/_ttnn.so": "tt-metal (ttnn)",
		"/tmp/p/libfakeaccel.so":                                   "fake accelerator (test stand-in)",
		"/usr/lib/libdevice.so":                                    "",
		"/usr/lib/x86_64-linux-gnu/libcudnn.so.9":                  "",
		"/usr/lib/x86_64-linux-gnu/libc.so.6":                      "",
	} {
		d, ok := driverOf(path)
		if ok != (want != "") || d.family != want {
			t.Errorf("%s: %q, %v; want %q", path, d.family, ok, want)
		}
	}
}

func TestForkAccelWithoutParentModules(t *testing.T) {
	// Lineage without the parent's modules: the child's own mappings
	// stand in, and an owner read cannot make it high.
	snap := cudaForkSnap()
	child := snap.Processes[1]
	child.Fork.ParentModules = nil
	ds := nbMatch(t, "fork-after-accelerator-init", nbSnap(true, child))
	if len(ds) != 1 || ds[0].Confidence != Medium || !strings.Contains(strings.Join(ds[0].Chain, "\n"), "taken as inherited") {
		t.Fatalf("got %+v", ds)
	}
}

func TestForkAccelFromADump(t *testing.T) {
	// A pasted dump: no modules in frames; the driver's API names speak.
	child := nbForked(nbModules(nbProc(200,
		nbDump(200, "python", "__lll_lock_wait", "pthread_mutex_lock", "cuCtxCreate_v2", "main"),
	), libcuda), 100, nil, libcuda)
	child.Threads[0].State = "S"
	ds := nbMatch(t, "fork-after-accelerator-init", nbSnap(false, child))
	if len(ds) != 1 || ds[0].Confidence != Low {
		t.Fatalf("got %+v", ds)
	}
}
