package heuristics_test

// Live patients that hang inside real libraries, not the project's own
// pthread wrappers: Abseil's Mutex, GLib's GMutex, libstdc++'s
// static-init guards, call_once and shared_mutex, gperftools' tcmalloc,
// jemalloc, glibc's internal locks across fork() and in a signal handler,
// Rust's std and parking_lot, CPython's threading.Lock, Open MPI under
// mpirun; and controls that are not deadlocks (an idle GLib main loop, an
// idle asyncio loop, an idle Go HTTP server, OpenMP compute, MPI ranks
// all progressing). The libraries are Debian's (scripts/deps/libs.txt);
// each patient is built once (internal/patient caches it) and says,
// before "ready", the TIDs of the threads the verdict must name.
// Attaching, logging and the assertions are live_test.go's.

import (
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// pkgConfig returns the compiler and linker flags of the pkg-config
// packages (a library -dev package installs its .pc file).
func pkgConfig(t *testing.T, pkgs ...string) []string {
	t.Helper()
	pc := patient.RequireTool(t, "pkg-config")
	out, err := exec.Command(pc, append([]string{"--cflags", "--libs"}, pkgs...)...).CombinedOutput()
	if err != nil {
		patient.Missing(t, "pkg-config %s: %v: %s (scripts/install-deps.sh installs scripts/deps/libs.txt)", strings.Join(pkgs, " "), err, strings.TrimSpace(string(out)))
	}
	return strings.Fields(string(out))
}

// A patient's command line, built.
type argvFunc func(t *testing.T) []string

// native builds a C or C++ patient -O2 -g against the pkg-config packages.
func native(src string, pkgs ...string) argvFunc {
	return func(t *testing.T) []string {
		flags := slices.Clone(patient.O2g)
		if len(pkgs) > 0 {
			flags = append(flags, pkgConfig(t, pkgs...)...)
		}
		return []string{patient.Build(t, src, flags...)}
	}
}

func python(src string) argvFunc {
	return func(t *testing.T) []string {
		patient.RequireTool(t, patient.Python)
		return []string{patient.Python, patient.Build(t, src)}
	}
}

func rust(src string) argvFunc {
	return func(t *testing.T) []string { return []string{patient.Build(t, src, patient.RustO2g...)} }
}

func cargo(crate string) argvFunc {
	return func(t *testing.T) []string { return []string{patient.BuildCargo(t, crate)} }
}

// A hang inside a library: the top diagnosis is one of ids, a deadlock
// claim naming the process and the threads the patient printed as
// threads ("ab=<tid>"), and mentioning each of says.
type libHang struct {
	name    string
	argv    argvFunc
	ids     []string
	threads []string
	says    []string
	// worker: the hang is in the process the patient printed as
	// "worker=<pid>" (a supervisor runs a chancy hang again in fresh
	// processes until one hangs): attach to it, and the verdict names it.
	worker bool
}

var libHangs = []libHang{
	{name: "AbslABBA", argv: native("absl_abba.cpp", "absl_synchronization"),
		ids: []string{"lock-order-cycle"}, threads: []string{"ab", "ba"}},
	{name: "GLibABBA", argv: native("glib_abba.c", "glib-2.0"),
		ids: []string{"lock-order-cycle"}, threads: []string{"ab", "ba"}},
	{name: "GLibRelock", argv: native("glib_relock.c", "glib-2.0"),
		ids: []string{"self-deadlock"}, threads: []string{"worker"}},
	{name: "StaticInitCycle", argv: native("cxx_static_init.cpp"),
		ids: []string{"lock-order-cycle"}, threads: []string{"config", "registry"}},
	{name: "CallOnceReentry", argv: native("cxx_call_once.cpp"),
		ids: []string{"self-deadlock"}, threads: []string{"loader"}},
	{name: "TcmallocSignalHandler", argv: native("tcmalloc_sighandler.c", "libtcmalloc"),
		ids: []string{"signal-handler-reentry"}, threads: []string{"grower"}, says: []string{"on_sigusr1"}},
	{name: "TcmallocHookReentry", argv: native("tcmalloc_hook_reentry.c", "libtcmalloc"),
		ids: []string{"self-deadlock"}, threads: []string{"grower"}, says: []string{"record_mapping", "allocator"}},
	{name: "JemallocSignalHandler", argv: native("jemalloc_sighandler.c", "jemalloc"),
		ids: []string{"signal-handler-reentry"}, threads: []string{"churner"}, says: []string{"on_sigusr1"}, worker: true},
	{name: "GlibcTzsetSignalHandler", argv: native("glibc_tzset_sighandler.c"),
		ids: []string{"signal-handler-reentry"}, threads: []string{"clock"}, says: []string{"on_sigalrm", "__tz_convert"}},
	{name: "SharedMutexCycle", argv: native("cxx_shared_mutex.cpp"),
		ids: []string{"lock-order-cycle"}, threads: []string{"reader", "writer"}},
	{name: "SharedReadMutexCycle", argv: native("cxx_shared_read_mutex.cpp"),
		ids: []string{"lock-order-cycle"}, threads: []string{"reader", "writer"}},
	{name: "ExitPathJoinsIdleWorker", argv: native("cxx_exit_join.cpp"),
		ids: []string{"lost-wakeup"}, threads: []string{"main", "worker"}, says: []string{"exit path", "never told to stop"}},
	{name: "CondWaitHoldingMutex", argv: native("cxx_cond_hold.cpp"),
		ids: []string{"lock-order-cycle"}, threads: []string{"consumer", "producer"}, says: []string{"waits to be woken"}},
	{name: "RustMutexABBA", argv: rust("rust_abba.rs"),
		ids: []string{"lock-order-cycle"}, threads: []string{"ab", "ba"}},
	{name: "PythonABBA", argv: python("py_abba.py"),
		ids: []string{"lock-order-cycle"}, threads: []string{"ab", "ba"}},
	{name: "PythonImportJoin", argv: python("py_import_join.py"),
		ids: []string{"lock-order-cycle"}, threads: []string{"main", "importer"}, says: []string{"_ModuleLock.acquire", "py_import_join_mod.py"}},
	{name: "RustRecvHoldingMutex", argv: rust("rust_recv_hold.rs"),
		ids: []string{"lock-order-cycle"}, threads: []string{"receiver", "sender"}, says: []string{"held across a wait"}},
	{name: "RustRwLockRecursiveRead", argv: rust("rust_rwlock_reread.rs"),
		ids: []string{"self-deadlock"}, threads: []string{"reader", "writer"}, says: []string{"recursive read"}},
	{name: "PythonQueueHold", argv: python("py_queue_hold.py"),
		ids: []string{"lock-order-cycle"}, threads: []string{"producer", "consumer"}, says: []string{"held across a wait", "`produce`"}},
	{name: "PythonPoolStarvation", argv: python("py_pool_starvation.py"),
		ids: []string{"self-deadlock"}, threads: []string{"worker"}, says: []string{"thread-pool starvation", "`outer`"}},
	{name: "PythonFinalizerReentry", argv: python("py_finalizer_reentry.py"),
		ids: []string{"self-deadlock"}, threads: []string{"main"}, says: []string{"Collector.activate", "weakref callback"}},
	{name: "ParkingLotRelock", argv: cargo("rust_parking_lot"),
		ids: []string{"self-deadlock"}, threads: []string{"worker"}, says: []string{"Cache::evict"}},
}

func TestLiveLib(t *testing.T) {
	for _, c := range libHangs {
		t.Run(c.name, func(t *testing.T) {
			var pids func(p *patient.Proc) []int
			if c.worker {
				pids = func(p *patient.Proc) []int { return []int{p.Int(t, "worker")} }
			}
			l := startLive(t, c.argv(t), pids)
			pid := l.p.Pid
			if c.worker {
				pid = l.p.Int(t, "worker")
			}
			if d := l.top(t, c.ids...); d != nil {
				wantPids(t, d, pid)
				for _, name := range c.threads {
					wantTids(t, d, name, l.p.Int(t, name))
				}
				wantSays(t, d, c.says...)
			}
		})
	}
}

// glibc's fork() resets malloc's, stdio's and the loader's locks in the
// child, not tzset_lock: a thread of the parent held it (in localtime,
// blocked opening the time zone file) when main forked.
func TestLiveLibGlibcTzsetFork(t *testing.T) {
	l := startLive(t, native("glibc_tzset_fork.c")(t), forkPids(t))
	parent, child := l.p.Pid, l.p.Int(t, "child")
	wantForkChild(t, l, child, parent, l.p.Int(t, "owner"))
	wantFrames(t, l.thread(t, child, child), "__tz_convert", "log_stamp", "main")
	if d := l.top(t, "fork-inherited-lock"); d != nil {
		wantTids(t, d, "the child's waiting thread", child)
		wantPids(t, d, child)
		wantSummary(t, d, strconv.Itoa(child))
	}
}

// mpirunArgv builds an Open MPI patient and returns the mpirun command
// that runs it on four ranks (oversubscribed: the machine may have fewer
// cores; as root, with Open MPI's two consent variables).
func mpirunArgv(t *testing.T, src string) []string {
	t.Helper()
	mpirun := patient.RequireTool(t, "mpirun")
	bin := native(src, "ompi-c")(t)[0]
	if os.Geteuid() == 0 {
		t.Setenv("OMPI_ALLOW_RUN_AS_ROOT", "1")
		t.Setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
	}
	return []string{mpirun, "-np", "4", "--oversubscribe", bin}
}

// mpiTree attaches to mpirun and its descendants, as `hangdoc attach
// --tree` does: the ranks are mpirun's children.
func mpiTree(p *patient.Proc) []int { return attach.Descendants(p.Pid) }

// Three ranks wait in MPI_Barrier; rank 3 re-locks a mutex on its way
// there. The collective's verdict names rank 3, and rank 3's own verdict
// (the self-deadlock) is there too.
func TestLiveLibMPIStraggler(t *testing.T) {
	l := startLive(t, mpirunArgv(t, "mpi_straggler.c"), mpiTree)
	straggler := l.p.Int(t, "straggler")
	var waiting []int
	for r := 0; r < 3; r++ {
		waiting = append(waiting, l.p.Int(t, "rank"+strconv.Itoa(r)))
	}
	for _, pid := range append([]int{straggler}, waiting...) {
		l.process(t, pid)
	}
	wantFrames(t, l.thread(t, straggler, straggler), "pthread_mutex_lock", "flush_checkpoint", "write_checkpoint", "main")

	if d := l.top(t, "collective-straggler", "self-deadlock"); d != nil && d.ID == "self-deadlock" {
		wantTids(t, d, "rank 3's thread", straggler)
	}
	d := l.find("collective-straggler")
	if d == nil {
		t.Fatalf("diagnosis: no collective-straggler for ranks %v waiting in MPI_Barrier", waiting)
	}
	if !d.Deadlock {
		t.Errorf("diagnosis: collective-straggler has Deadlock false")
	}
	if len(d.Pids) == 0 || d.Pids[0] != straggler {
		t.Errorf("diagnosis: collective-straggler pids %v, want the straggler %d first", d.Pids, straggler)
	}
	if slices.Contains(d.Pids, l.p.Pid) {
		t.Errorf("diagnosis: collective-straggler names mpirun (pid %d), the launcher, as a rank: %s", l.p.Pid, d.Summary)
	}
	wantPids(t, d, waiting...)
	wantSummary(t, d, strconv.Itoa(straggler))
	if sd := l.find("self-deadlock"); sd == nil || !slices.Contains(sd.Tids, straggler) {
		t.Errorf("diagnosis: no self-deadlock for the straggler's thread %d (its own root cause)", straggler)
	}
}

// Controls: not a deadlock. Each is asleep or working the way a healthy
// program is; no diagnosis may claim a deadlock, nor a spin.
type libControl struct {
	name string
	argv argvFunc
	pids func(p *patient.Proc) []int
}

var libControls = []libControl{
	{name: "GLibMainLoop", argv: native("glib_mainloop.c", "glib-2.0")},
	{name: "AsyncioIdle", argv: python("asyncio_idle.py")},
	{name: "MPIProgress", argv: func(t *testing.T) []string { return mpirunArgv(t, "mpi_progress.c") }, pids: mpiTree},
	{name: "OpenMPCompute", argv: func(t *testing.T) []string {
		return []string{patient.Build(t, "openmp_compute.c", append(slices.Clone(patient.O2g), "-fopenmp")...)}
	}},
}

func TestLiveLibControls(t *testing.T) {
	for _, c := range libControls {
		t.Run(c.name, func(t *testing.T) {
			l := startLive(t, c.argv(t), c.pids)
			l.wantNoDeadlock(t)
			if d := l.find("spin-wait-starved"); d != nil {
				t.Errorf("control: spin claimed: %s", d.Summary)
			}
		})
	}
}

// An idle net/http server: the accept loop waits in the netpoller and
// every other goroutine waits for work.
func TestLiveLibControlGoHTTP(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.StartGo(t, patient.BuildGo(t, "httpidle"))
	l := attachLive(t, p, []int{p.Pid})
	l.wantNoDeadlock(t)
}

// The jemalloc handler relock as the live run catches it in about four
// runs in ten: the signal landed inside pthread_mutex_trylock, after the
// lock word was set and before the owner was written (lock 2, owner 0).
// The frames on both sides of the signal frame still say it.
func TestLiveLibJemallocTrylockSnapshot(t *testing.T) {
	f, err := os.Open("testdata/livelib/jemalloc_trylock.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	snap, _, err := stacks.ParseHangdocJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	const churner = 3775
	th := snap.Processes[0].Threads[1]
	if th.Tid != churner || th.Wait == nil || th.Wait.Mutex == nil || th.Wait.Mutex.Owner != 0 {
		t.Fatalf("snapshot: thread %d, wait %+v: not the trylock case", th.Tid, th.Wait)
	}
	l := &live{snap: snap, diags: heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses}
	if d := l.top(t, "signal-handler-reentry"); d != nil {
		wantTids(t, d, "the churner", churner)
		wantSays(t, d, "on_sigusr1")
	}
}
