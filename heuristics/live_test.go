package heuristics_test

// Integration tests: attach to live patients (testdata/patients), run the
// catalogue over what attach read, and assert the top diagnosis — its id,
// the threads it names, the owner it found (for a fork, the parent's
// thread) — and, for the controls, that no deadlock is claimed. Each test
// checks the snapshot's evidence first (mutex owners, fork lineage, CPU),
// so a failure says whether attach did not read a fact or the heuristics
// did not use it; on failure the snapshot and the diagnoses are dumped as
// JSON into the test log. The verdict line (the Summary of the top
// diagnosis, the report's first line) is always logged as "verdict: …".

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// Sampling for every live test: three samples 100 ms apart are enough to
// see a spinning thread's CPU grow and a busy thread's stack change.
var liveOpts = attach.Options{Samples: 3, Interval: 100 * time.Millisecond}

// live is one patient, attached and diagnosed.
type live struct {
	p     *patient.Proc
	snap  *stacks.Snapshot
	diags []heuristics.Diagnosis
}

// startLive starts argv, then attaches to the pids that pids returns (the
// patient's own pid when pids is nil) in one Attach call, and diagnoses
// the snapshot. On failure the snapshot and diagnoses go to the log.
func startLive(t *testing.T, argv []string, pids func(p *patient.Proc) []int) *live {
	t.Helper()
	patient.RequirePtrace(t)
	p := patient.Start(t, argv...)
	targets := []int{p.Pid}
	if pids != nil {
		targets = pids(p)
	}
	return attachLive(t, p, targets)
}

// attachLive attaches to targets, the running patient p's processes, and
// diagnoses the snapshot (a patient started otherwise: patient.StartGo).
func attachLive(t *testing.T, p *patient.Proc, targets []int) *live {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	snap, err := attach.Attach(ctx, targets, liveOpts)
	if err != nil {
		t.Fatalf("Attach(%v): %v", targets, err)
	}
	l := &live{p: p, snap: snap, diags: heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses}
	t.Cleanup(func() {
		if t.Failed() {
			l.dump(t)
		}
	})
	if len(l.diags) == 0 {
		t.Logf("verdict: (no diagnosis)")
	} else {
		d := l.diags[0]
		t.Logf("verdict: [%s, %s, deadlock=%v] %s", d.ID, d.Confidence, d.Deadlock, d.Summary)
		for _, d := range l.diags[1:] {
			t.Logf("  also: [%s, %s, deadlock=%v] %s", d.ID, d.Confidence, d.Deadlock, d.Summary)
		}
	}
	return l
}

func (l *live) dump(t *testing.T) {
	t.Helper()
	b, err := json.MarshalIndent(l.snap, "", "  ")
	if err != nil {
		t.Logf("snapshot: %v", err)
	} else {
		t.Logf("snapshot:\n%s", b)
	}
	b, err = json.MarshalIndent(l.diags, "", "  ")
	if err != nil {
		t.Logf("diagnoses: %v", err)
	} else {
		t.Logf("diagnoses:\n%s", b)
	}
}

// forkPids attaches to the child (printed as "child=<pid>") and the parent.
func forkPids(t *testing.T) func(p *patient.Proc) []int {
	return func(p *patient.Proc) []int {
		child := p.Int(t, "child")
		p.KillChildAtEnd(t, child)
		return []int{child, p.Pid}
	}
}

// --- the snapshot's evidence -------------------------------------------

func (l *live) process(t *testing.T, pid int) *stacks.Process {
	t.Helper()
	for _, p := range l.snap.Processes {
		if p.Pid == pid {
			return p
		}
	}
	t.Fatalf("evidence: process %d not in the snapshot", pid)
	return nil
}

func (l *live) thread(t *testing.T, pid, tid int) *stacks.Thread {
	t.Helper()
	for _, th := range l.process(t, pid).Threads {
		if th.Tid == tid {
			return th
		}
	}
	t.Fatalf("evidence: thread %d not in process %d", tid, pid)
	return nil
}

func funcName(f stacks.Frame) string {
	if f.Signal {
		return "<signal handler called>"
	}
	name := f.Func
	if i := strings.IndexByte(name, '@'); i > 0 {
		name = name[:i]
	}
	return stacks.FuncBase(name)
}

// wantFrames checks that the thread's stack holds the functions in order,
// innermost first (others may come between).
func wantFrames(t *testing.T, th *stacks.Thread, funcs ...string) {
	t.Helper()
	if !hasFramesInOrder(th.Stack, funcs) {
		t.Errorf("evidence: thread %d %q: stack lacks %q in order:\n%s", th.Tid, th.Name, funcs, stackString(th.Stack))
	}
}

// loadAverage is the machine's 1-minute load average.
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(f[0], 64)
	return v, err == nil
}

// wantFramesInASample is wantFrames for a running thread: some sample's
// stack has funcs in order.
func wantFramesInASample(t *testing.T, th *stacks.Thread, funcs ...string) {
	t.Helper()
	for _, s := range th.Samples() {
		if hasFramesInOrder(s.Stack, funcs) {
			return
		}
	}
	t.Errorf("evidence: thread %d %q: no sample of %d has %q in order; last:\n%s", th.Tid, th.Name, len(th.Samples()), funcs, stackString(th.Stack))
}

func hasFramesInOrder(st []stacks.Frame, funcs []string) bool {
	i := 0
	for _, f := range st {
		if i < len(funcs) && funcName(f) == funcs[i] {
			i++
		}
	}
	return i == len(funcs)
}

func stackString(st []stacks.Frame) string {
	var b strings.Builder
	for i, f := range st {
		inl := ""
		if f.Inlined {
			inl = " (inlined)"
		}
		fmt.Fprintf(&b, "  #%-2d %#014x %s%s  %s\n", i, f.PC, f.Name(), inl, f.Module)
	}
	return b.String()
}

// wantMutexWait checks that attach read the mutex the thread waits on:
// its owner and, when sym is not "", the symbol that names it.
func wantMutexWait(t *testing.T, th *stacks.Thread, owner int, sym string) {
	t.Helper()
	if th.Wait == nil || th.Wait.Mutex == nil {
		t.Errorf("evidence: thread %d %q: no mutex read for its wait (wait %+v)", th.Tid, th.Name, th.Wait)
		return
	}
	m := th.Wait.Mutex
	if m.Owner != owner {
		t.Errorf("evidence: thread %d: mutex %#x owner %d, want %d", th.Tid, m.Addr, m.Owner, owner)
	}
	if m.Lock == 0 {
		t.Errorf("evidence: thread %d: mutex %#x lock word 0 (free), want locked", th.Tid, m.Addr)
	}
	if sym != "" && !strings.Contains(m.Symbol, sym) {
		t.Errorf("evidence: thread %d: mutex %#x symbol %q, want %q", th.Tid, m.Addr, m.Symbol, sym)
	}
}

// wantForkChild checks the fork lineage attach read for the child.
func wantForkChild(t *testing.T, l *live, child, parent int, parentTids ...int) {
	t.Helper()
	proc := l.process(t, child)
	if !l.snap.Evidence.Lineage {
		t.Errorf("evidence: snapshot says lineage is not known (Evidence %+v)", l.snap.Evidence)
	}
	if proc.PPid != parent {
		t.Errorf("evidence: child %d: ppid %d, want %d", child, proc.PPid, parent)
	}
	if proc.Fork == nil {
		t.Errorf("evidence: child %d: Fork not set (a forked child that never exec'd)", child)
		return
	}
	if proc.Fork.ParentPid != parent {
		t.Errorf("evidence: child %d: Fork.ParentPid %d, want %d", child, proc.Fork.ParentPid, parent)
	}
	for _, tid := range parentTids {
		if !slices.Contains(proc.Fork.ParentThreads, tid) {
			t.Errorf("evidence: child %d: Fork.ParentThreads %v lacks the parent's thread %d", child, proc.Fork.ParentThreads, tid)
		}
	}
	if pp := l.process(t, parent); !slices.Contains(pp.Children, child) {
		t.Errorf("evidence: parent %d: Children %v lacks %d", parent, pp.Children, child)
	}
}

func hasModule(mods []string, sub string) bool {
	return slices.ContainsFunc(mods, func(m string) bool { return strings.Contains(m, sub) })
}

func modulePaths(p *stacks.Process) []string {
	var out []string
	for _, m := range p.Modules {
		out = append(out, m.Path)
	}
	return out
}

// --- the diagnoses ---------------------------------------------------

// top checks that the first diagnosis is one of ids and a deadlock claim,
// and returns it (nil when it is not).
func (l *live) top(t *testing.T, ids ...string) *heuristics.Diagnosis {
	t.Helper()
	if len(l.diags) == 0 {
		t.Errorf("diagnosis: none, want %s", strings.Join(ids, " or "))
		return nil
	}
	d := &l.diags[0]
	if !slices.Contains(ids, d.ID) {
		t.Errorf("diagnosis: top is %q (%s), want %s", d.ID, d.Summary, strings.Join(ids, " or "))
		return nil
	}
	if !d.Deadlock {
		t.Errorf("diagnosis: %s has Deadlock false", d.ID)
	}
	if d.Summary == "" {
		t.Errorf("diagnosis: %s has no summary", d.ID)
	}
	if d.Fix == "" {
		t.Errorf("diagnosis: %s has no fix", d.ID)
	}
	return d
}

// find returns the first diagnosis with the id, or nil.
func (l *live) find(id string) *heuristics.Diagnosis {
	for i := range l.diags {
		if l.diags[i].ID == id {
			return &l.diags[i]
		}
	}
	return nil
}

func wantTids(t *testing.T, d *heuristics.Diagnosis, what string, tids ...int) {
	t.Helper()
	for _, tid := range tids {
		if !slices.Contains(d.Tids, tid) {
			t.Errorf("diagnosis %s: tids %v lack %d (%s)", d.ID, d.Tids, tid, what)
		}
	}
}

func wantPids(t *testing.T, d *heuristics.Diagnosis, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if !slices.Contains(d.Pids, pid) {
			t.Errorf("diagnosis %s: pids %v lack %d", d.ID, d.Pids, pid)
		}
	}
}

func wantConfidence(t *testing.T, d *heuristics.Diagnosis, c string) {
	t.Helper()
	if d.Confidence != c {
		t.Errorf("diagnosis %s: confidence %q, want %q (a mutex owner was read)", d.ID, d.Confidence, c)
	}
}

// wantSummary checks that the verdict line names each of words (a TID, a
// lock's symbol, an fd).
func wantSummary(t *testing.T, d *heuristics.Diagnosis, words ...string) {
	t.Helper()
	for _, w := range words {
		if !strings.Contains(d.Summary, w) {
			t.Errorf("diagnosis %s: summary %q does not name %q", d.ID, d.Summary, w)
		}
	}
}

// wantSays checks that the summary, chain or evidence mention each word.
func wantSays(t *testing.T, d *heuristics.Diagnosis, words ...string) {
	t.Helper()
	all := d.Summary + "\n" + strings.Join(d.Chain, "\n") + "\n" + strings.Join(d.Evidence, "\n")
	for _, w := range words {
		if !strings.Contains(all, w) {
			t.Errorf("diagnosis %s: neither summary, chain nor evidence mentions %q", d.ID, w)
		}
	}
}

// wantKnownIssue checks that a known upstream bug refines the diagnosis
// and that its id, title or links mention one of words (any case).
func wantKnownIssue(t *testing.T, d *heuristics.Diagnosis, words ...string) {
	t.Helper()
	k := d.KnownIssue
	if k == nil {
		t.Errorf("diagnosis %s: no known issue, want one about %s", d.ID, strings.Join(words, "/"))
		return
	}
	text := strings.ToLower(k.ID + " " + k.Title + " " + strings.Join(k.Links, " "))
	for _, w := range words {
		if strings.Contains(text, strings.ToLower(w)) {
			if k.Fix == "" {
				t.Errorf("diagnosis %s: known issue %s has no fix", d.ID, k.ID)
			}
			return
		}
	}
	t.Errorf("diagnosis %s: known issue %q (%s) is not about %s", d.ID, k.ID, k.Title, strings.Join(words, "/"))
}

// wantNoDeadlock is the controls' one promise: no deadlock claim at all.
func (l *live) wantNoDeadlock(t *testing.T) {
	t.Helper()
	for _, d := range l.diags {
		if d.Deadlock {
			t.Errorf("control: deadlock claimed: [%s] %s", d.ID, d.Summary)
		}
	}
}

// wantVerdict checks that the control's top diagnosis is the expected
// verdict that is not a deadlock.
func (l *live) wantVerdict(t *testing.T, id string) *heuristics.Diagnosis {
	t.Helper()
	if len(l.diags) == 0 {
		t.Errorf("control: no diagnosis, want %s", id)
		return nil
	}
	d := &l.diags[0]
	if d.ID != id {
		t.Errorf("control: top is %q (%s), want %s", d.ID, d.Summary, id)
		return nil
	}
	return d
}

// --- the patients ----------------------------------------------------

func buildFakeAccel(t *testing.T) []string {
	t.Helper()
	dir := patient.BuildLib(t, "fakeaccel.c", patient.O2g...)
	return patient.Link(dir, "fakeaccel")
}

// The tt-metal case: the child opens a device on a DevicePool whose mutex
// the parent's pool-refresh thread held at fork().
func TestLiveDevicePoolFork(t *testing.T) {
	patient.RequireTool(t, "g++")
	patient.RequireTool(t, "gcc")
	bin := patient.Build(t, "devicepool_fork.cpp", append(slices.Clone(patient.O2g), buildFakeAccel(t)...)...)
	l := startLive(t, []string{bin}, forkPids(t))
	parent, child := l.p.Pid, l.p.Int(t, "child")
	owner, driver := l.p.Int(t, "owner"), l.p.Int(t, "driver")

	wantForkChild(t, l, child, parent, owner, driver)
	if cp := l.process(t, child); cp.Fork != nil && !hasModule(cp.Fork.ParentModules, "libfakeaccel.so") && !hasModule(modulePaths(cp), "libfakeaccel.so") {
		t.Errorf("evidence: libfakeaccel.so neither in the child's modules nor its parent's")
	}
	waiter := l.thread(t, child, child)
	wantFrames(t, waiter, "pthread_mutex_lock", "DevicePool::open_device", "main")
	wantMutexWait(t, waiter, owner, "DevicePool")
	wantFrames(t, l.thread(t, parent, owner), "DevicePool::rescan_devices", "DevicePool::refresh")

	if d := l.top(t, "fork-inherited-lock"); d != nil {
		wantTids(t, d, "the child's waiting thread", child)
		wantTids(t, d, "the parent's pool-refresh, the owner at fork", owner)
		wantPids(t, d, child)
		wantConfidence(t, d, heuristics.High)
		wantSummary(t, d, strconv.Itoa(child), strconv.Itoa(owner))
		wantKnownIssue(t, d, "tt-metal", "devicepool")
	}
}

// The OpenBLAS case: exec_blas_async holds server_lock into
// blas_thread_init, which locks it again, in a forked child.
func TestLiveOpenBLASRelock(t *testing.T) {
	bin := patient.Build(t, "openblas_relock.c", patient.O2g...)
	l := startLive(t, []string{bin}, forkPids(t))
	parent, child := l.p.Pid, l.p.Int(t, "child")

	wantForkChild(t, l, child, parent)
	waiter := l.thread(t, child, child)
	wantFrames(t, waiter, "pthread_mutex_lock", "blas_thread_init", "exec_blas_async", "exec_blas", "dgemm_", "main")
	wantMutexWait(t, waiter, child, "server_lock")

	if d := l.top(t, "self-deadlock"); d != nil {
		wantTids(t, d, "the child's thread, waiter and owner", child)
		wantPids(t, d, child)
		wantConfidence(t, d, heuristics.High)
		wantSummary(t, d, strconv.Itoa(child), "server_lock")
		wantKnownIssue(t, d, "openblas")
	}
	// The owner is the waiter, not a thread of the parent: no
	// fork-inherited-lock claim for it.
	if d := l.find("fork-inherited-lock"); d != nil && slices.Contains(d.Tids, child) {
		t.Errorf("diagnosis: fork-inherited-lock claimed for a lock the child itself holds: %s", d.Summary)
	}
}

// The MLX case: fence_wait spins for an update the producer never makes.
func TestLiveFenceSpin(t *testing.T) {
	bin := patient.Build(t, "fence_spin.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	pid := l.p.Pid
	waiterTid, producerTid := l.p.Int(t, "waiter"), l.p.Int(t, "producer")

	if !l.snap.Evidence.CPU {
		t.Errorf("evidence: snapshot says CPU figures are not known (Evidence %+v)", l.snap.Evidence)
	}
	waiter := l.thread(t, pid, waiterTid)
	wantFrames(t, waiter, "fence_wait", "fence_waiter_main")
	// A spinning thread takes a whole core on an idle machine and what
	// the scheduler leaves it on a loaded one: its CPU is not 0, and the
	// per-sample ticks below grow in every sample.
	if waiter.CPU <= 0 {
		t.Errorf("evidence: waiter %d: CPU %.0f%%, want a spinning thread's (> 0)", waiterTid, waiter.CPU)
	}
	if len(waiter.Samples()) != liveOpts.Samples {
		t.Errorf("evidence: waiter %d: %d samples, want %d", waiterTid, len(waiter.Samples()), liveOpts.Samples)
	}
	// Under load a spinning thread may not reach its stop within the
	// sampler's bound: that sample is let go unread, and says so. Once
	// is the load's; the other samples must show the spin.
	unread := 0
	for i, s := range waiter.Samples() {
		if len(s.Stack) == 0 && unread == 0 && slices.ContainsFunc(waiter.Notes, func(n string) bool { return strings.Contains(n, "did not stop") }) {
			unread++
			continue
		}
		if len(s.Stack) == 0 || funcName(s.Stack[0]) != "fence_wait" {
			t.Errorf("evidence: waiter %d, sample %d: innermost frame is not fence_wait:\n%s", waiterTid, i, stackString(s.Stack))
		}
		if i > 0 && s.CPUTicks == 0 {
			t.Errorf("evidence: waiter %d, sample %d: no CPU ticks since the previous sample", waiterTid, i)
		}
	}
	wantFrames(t, l.thread(t, pid, producerTid), "pthread_cond_wait", "producer_idle")

	if d := l.top(t, "spin-wait-starved"); d != nil {
		wantTids(t, d, "the spinning waiter", waiterTid)
		wantPids(t, d, pid)
		wantSummary(t, d, strconv.Itoa(waiterTid))
		wantSays(t, d, "fence_wait")
	}
}

// The CUDA case: a forked worker calls into a driver whose context lock
// the parent's driver thread held at fork().
func TestLiveCUDAFork(t *testing.T) {
	patient.RequireTool(t, "gcc")
	bin := patient.Build(t, "cuda_fork.c", append(slices.Clone(patient.O2g), buildFakeAccel(t)...)...)
	l := startLive(t, []string{bin}, forkPids(t))
	parent, child := l.p.Pid, l.p.Int(t, "child")
	owner := l.p.Int(t, "owner")

	wantForkChild(t, l, child, parent, owner)
	if cp := l.process(t, child); cp.Fork != nil && !hasModule(cp.Fork.ParentModules, "libfakeaccel.so") {
		t.Errorf("evidence: child %d: Fork.ParentModules lacks libfakeaccel.so: %v", child, cp.Fork.ParentModules)
	}
	waiter := l.thread(t, child, child)
	wantFrames(t, waiter, "pthread_mutex_lock", "fakeaccel_submit", "fakeaccel_launch", "run_worker", "main")
	wantMutexWait(t, waiter, owner, "fakeaccel_ctx_lock")
	for _, f := range waiter.Stack {
		if funcName(f) == "fakeaccel_launch" && !strings.HasSuffix(f.Module, "libfakeaccel.so") {
			t.Errorf("evidence: frame fakeaccel_launch in module %q, want libfakeaccel.so", f.Module)
		}
	}

	// Both fit: the top may be either, but the accelerator verdict must
	// be there, naming the child's thread in the driver.
	if d := l.top(t, "fork-after-accelerator-init", "fork-inherited-lock"); d != nil {
		wantTids(t, d, "the child's thread in the driver", child)
		wantPids(t, d, child)
		wantSummary(t, d, strconv.Itoa(child))
	}
	if d := l.find("fork-after-accelerator-init"); d == nil {
		t.Errorf("diagnosis: no fork-after-accelerator-init (libfakeaccel.so with its driver thread in the parent)")
	} else {
		wantTids(t, d, "the child's thread in the driver", child)
		wantSays(t, d, "libfakeaccel")
	}
	if d := l.find("fork-inherited-lock"); d == nil {
		t.Errorf("diagnosis: no fork-inherited-lock (fakeaccel_ctx_lock owned by the parent's driver thread %d)", owner)
	} else {
		wantTids(t, d, "the waiter and the parent's driver thread", child, owner)
		wantConfidence(t, d, heuristics.High)
	}
}

// ABBA on lock_a and lock_b.
func TestLiveABBA(t *testing.T) {
	bin := patient.Build(t, "abba.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	pid := l.p.Pid
	ab, ba := l.p.Int(t, "ab"), l.p.Int(t, "ba")

	wantMutexWait(t, l.thread(t, pid, ab), ba, "lock_b")
	wantMutexWait(t, l.thread(t, pid, ba), ab, "lock_a")
	wantFrames(t, l.thread(t, pid, ab), "pthread_mutex_lock", "take_b_after_a", "transfer_ab")
	wantFrames(t, l.thread(t, pid, ba), "pthread_mutex_lock", "take_a_after_b", "transfer_ba")

	if d := l.top(t, "lock-order-cycle"); d != nil {
		wantTids(t, d, "both threads of the cycle", ab, ba)
		wantPids(t, d, pid)
		wantConfidence(t, d, heuristics.High)
		wantSays(t, d, "lock_a", "lock_b")
	}
	if n := count(l.diags, "lock-order-cycle"); n != 1 {
		t.Errorf("diagnosis: %d lock-order-cycle diagnoses, want 1 (one cycle)", n)
	}
}

// A cycle of three: stage-i holds lock i and wants lock i+1.
func TestLiveCycle3(t *testing.T) {
	bin := patient.Build(t, "cycle3.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	pid := l.p.Pid
	tids := []int{l.p.Int(t, "t0"), l.p.Int(t, "t1"), l.p.Int(t, "t2")}
	syms := []string{"lock_a", "lock_b", "lock_c"}

	for i, tid := range tids {
		th := l.thread(t, pid, tid)
		wantFrames(t, th, "pthread_mutex_lock", "pass_on", "stage_main")
		wantMutexWait(t, th, tids[(i+1)%3], syms[(i+1)%3])
	}
	if d := l.top(t, "lock-order-cycle"); d != nil {
		wantTids(t, d, "the three threads of the cycle", tids...)
		wantPids(t, d, pid)
		wantConfidence(t, d, heuristics.High)
		wantSays(t, d, syms...)
	}
	if n := count(l.diags, "lock-order-cycle"); n != 1 {
		t.Errorf("diagnosis: %d lock-order-cycle diagnoses, want 1 (one cycle)", n)
	}
}

// A signal handler re-takes log_lock, which its thread holds.
func TestLiveSignalRelock(t *testing.T) {
	bin := patient.Build(t, "sigrelock.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	pid := l.p.Pid
	logger := l.p.Int(t, "logger")

	th := l.thread(t, pid, logger)
	wantFrames(t, th, "pthread_mutex_lock", "log_write", "on_sigusr1", "<signal handler called>", "log_write", "logger_main")
	wantMutexWait(t, th, logger, "log_lock")

	if d := l.top(t, "signal-handler-reentry", "self-deadlock"); d != nil {
		if d.ID == "self-deadlock" && d.KnownIssue == nil {
			t.Errorf("diagnosis: self-deadlock not refined to a signal-handler re-entry (no known issue): %s", d.Summary)
		}
		wantTids(t, d, "the thread in its own signal handler", logger)
		wantPids(t, d, pid)
		wantConfidence(t, d, heuristics.High)
		wantSummary(t, d, strconv.Itoa(logger), "log_lock")
		wantSays(t, d, "on_sigusr1")
	}
}

// A thread exited holding state_lock; main waits for it.
func TestLiveOrphanedLock(t *testing.T) {
	bin := patient.Build(t, "orphan.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	pid := l.p.Pid
	owner := l.p.Int(t, "owner")

	proc := l.process(t, pid)
	if len(proc.Threads) != 1 {
		t.Errorf("evidence: %d threads, want main alone (the helper that printed ready exits)", len(proc.Threads))
	}
	if proc.Fork != nil {
		t.Errorf("evidence: Fork set on a process that never forked: %+v", proc.Fork)
	}
	th := l.thread(t, pid, pid)
	wantFrames(t, th, "pthread_mutex_lock", "update_state", "main")
	wantMutexWait(t, th, owner, "state_lock")

	if d := l.top(t, "orphaned-lock"); d != nil {
		wantTids(t, d, "main, the waiter", pid)
		wantPids(t, d, pid)
		wantConfidence(t, d, heuristics.High)
		wantSummary(t, d, strconv.Itoa(pid), "state_lock", strconv.Itoa(owner))
	}
}

// A Python threading.Lock held by a thread across os.fork(). A Python lock
// records no owner: for now only the fork lineage is asserted, and the
// diagnosis is logged.
func TestLivePythonForkLock(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	script := patient.Build(t, "pyfork_lock.py")
	l := startLive(t, []string{patient.Python, script}, forkPids(t))
	parent, child := l.p.Pid, l.p.Int(t, "child")
	owner := l.p.Int(t, "owner")

	wantForkChild(t, l, child, parent, owner)
	th := l.thread(t, child, child)
	if th.Wait == nil || th.Wait.Syscall != "futex" {
		t.Errorf("evidence: the child's thread does not wait in a futex: %+v", th.Wait)
	}
	wantFrames(t, th, "PyThread_acquire_lock_timed")
	if len(l.process(t, child).Threads) != 1 {
		t.Errorf("evidence: child has %d threads, want 1", len(l.process(t, child).Threads))
	}
	// A Python lock records no owner: the verdict rests on the fork
	// lineage and a child whose only thread waits on a lock.
	if d := l.top(t, "fork-inherited-lock"); d != nil {
		wantTids(t, d, "the child's waiting thread", child)
		wantPids(t, d, child)
		if d.Confidence == heuristics.High {
			t.Errorf("diagnosis: high confidence without an owner read")
		}
	}
}

// Controls: no deadlock claim.

func TestLiveControlSleeper(t *testing.T) {
	bin := patient.Build(t, "sleeper.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	l.wantNoDeadlock(t)
	if d := l.wantVerdict(t, "sleeping"); d != nil {
		wantPids(t, d, l.p.Pid)
	}
}

func TestLiveControlBusy(t *testing.T) {
	bin := patient.Build(t, "busy.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	pid := l.p.Pid
	c0, c1 := l.p.Int(t, "c0"), l.p.Int(t, "c1")
	// Each cruncher used some CPU and together at least a tenth of a
	// core: on a loaded machine (a parallel test run) one alone may get
	// less.
	total := 0.0
	for _, tid := range []int{c0, c1} {
		th := l.thread(t, pid, tid)
		if th.CPU <= 0 {
			t.Errorf("evidence: cruncher %d: no CPU, want a busy thread's", tid)
		}
		total += th.CPU
		// A running thread can be caught between two calls (in
		// cruncher_main itself, seen once in 20 runs under load): one
		// sample with the computation on its stack is what shows it.
		wantFramesInASample(t, th, "crunch_level", "cruncher_main")
	}
	// Two crunchers get at least a tenth of a core under `stress --cpu 2`
	// (the CI condition); when the machine is loaded beyond twice its
	// cores (a developer box at load 20 gave them 4-9% together), their
	// share says nothing about the measurement and only CPU > 0 is
	// asserted.
	if load, ok := loadAverage(); total < 10 && (!ok || load < 2*float64(runtime.NumCPU())) {
		t.Errorf("evidence: the crunchers used %.0f%% CPU together at load %.1f, want a busy process's (≥ 10%%)", total, load)
	}
	l.wantNoDeadlock(t)
	if find := l.find("spin-wait-starved"); find != nil {
		t.Errorf("control: a computation taken for a spin-wait: %s", find.Summary)
	}
	if d := l.wantVerdict(t, "progressing"); d != nil {
		wantPids(t, d, pid)
	}
}

func TestLiveControlSocket(t *testing.T) {
	bin := patient.Build(t, "socket_wait.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	pid := l.p.Pid
	reader, fd, port := l.p.Int(t, "reader"), l.p.Int(t, "fd"), l.p.Int(t, "port")

	th := l.thread(t, pid, reader)
	wantFrames(t, th, "read_request", "reader_main")
	if w := th.Wait; w == nil {
		t.Errorf("evidence: reader %d: no wait", reader)
	} else {
		if w.Fd != fd {
			t.Errorf("evidence: reader %d: waits on fd %d, want %d (wait %+v)", reader, w.Fd, fd, w)
		}
		if !strings.HasPrefix(w.FdTarget, "socket:") || !strings.Contains(w.FdTarget, "127.0.0.1:"+strconv.Itoa(port)) {
			t.Errorf("evidence: reader %d: fd target %q, want a socket with peer 127.0.0.1:%d", reader, w.FdTarget, port)
		}
	}
	l.wantNoDeadlock(t)
	if d := l.wantVerdict(t, "io-wait"); d != nil {
		wantTids(t, d, "the reader", reader)
		wantPids(t, d, pid)
		wantSummary(t, d, strconv.Itoa(fd))
		wantSays(t, d, "127.0.0.1:"+strconv.Itoa(port))
	}
}

func count(ds []heuristics.Diagnosis, id string) int {
	n := 0
	for _, d := range ds {
		if d.ID == id {
			n++
		}
	}
	return n
}

// A process tree hung by one inherited lock: the worker C is stuck in
// fork-inherited-lock (registry_lock, held by the parent's registry-gc
// at fork), the parent P waits in waitpid for C, and the client K reads
// a pipe whose write end only C holds. The report reads as one chain:
// the lock first, then whom it holds up, each link naming it.
func TestLiveTreePipe(t *testing.T) {
	bin := patient.Build(t, "tree_pipe.c", patient.O2g...)
	var tree []int
	l := startLive(t, []string{bin}, func(p *patient.Proc) []int {
		child, client := p.Int(t, "child"), p.Int(t, "client")
		p.KillChildAtEnd(t, child)
		p.KillChildAtEnd(t, client)
		tree = attach.Descendants(p.Pid)
		return tree
	})
	parent, child, client := l.p.Pid, l.p.Int(t, "child"), l.p.Int(t, "client")
	owner := l.p.Int(t, "owner")
	for _, pid := range []int{parent, child, client} {
		if !slices.Contains(tree, pid) {
			t.Errorf("evidence: Descendants(%d) = %v lacks %d", parent, tree, pid)
		}
	}

	// The evidence: the lineage, the lock, the wait4 and the pipe's peer.
	wantForkChild(t, l, child, parent, owner)
	worker := l.thread(t, child, child)
	wantFrames(t, worker, "pthread_mutex_lock", "registry_register", "run_worker", "main")
	wantMutexWait(t, worker, owner, "registry_lock")
	if w := l.thread(t, parent, parent).Wait; w == nil || w.Syscall != "wait4" || w.ChildPid != child {
		t.Errorf("evidence: parent %d: wait %+v, want wait4 for child %d", parent, w, child)
	}
	reader := l.thread(t, client, client)
	wantFrames(t, reader, "await_result", "run_client", "main")
	if w := reader.Wait; w == nil || w.Syscall != "read" || !strings.HasPrefix(w.FdTarget, "pipe:[") || !slices.Equal(w.PeerPids, []int{child}) {
		t.Errorf("evidence: client %d: wait %+v, want a read on a pipe whose only writer is %d", client, w, child)
	}

	// The root cause first.
	if d := l.top(t, "fork-inherited-lock"); d != nil {
		wantTids(t, d, "the worker's waiting thread and the parent's owner", child, owner)
		wantPids(t, d, child)
		wantSummary(t, d, strconv.Itoa(child), strconv.Itoa(owner))
	}
	// Then the processes it holds up, each linked to it.
	links := map[int]*heuristics.Diagnosis{}
	for i := range l.diags {
		d := &l.diags[i]
		if d.ID != "waiting-on-process" {
			continue
		}
		if i == 0 {
			t.Errorf("diagnosis: waiting-on-process ranked before the deadlock it links to")
		}
		if len(d.Pids) > 0 {
			links[d.Pids[0]] = d
		}
	}
	for _, c := range []struct {
		waiter int
		how    string
	}{{parent, "wait4"}, {client, "pipe"}} {
		d := links[c.waiter]
		if d == nil {
			t.Errorf("diagnosis: no waiting-on-process for %d (the %s to %d)", c.waiter, c.how, child)
			continue
		}
		if !d.Deadlock {
			t.Errorf("diagnosis: waiting-on-process for %d: Deadlock false, but %d is deadlocked", c.waiter, child)
		}
		if len(d.Tids) < 2 || d.Tids[0] != c.waiter || !slices.Contains(d.Tids, child) {
			t.Errorf("diagnosis: waiting-on-process for %d: tids %v, want the waiter %d first, then %d", c.waiter, d.Tids, c.waiter, child)
		}
		wantPids(t, d, c.waiter, child)
		wantConfidence(t, d, heuristics.High)
		wantSummary(t, d, strconv.Itoa(c.waiter), strconv.Itoa(child), c.how, "fork-inherited-lock", strconv.Itoa(owner), "registry_lock")
	}
	if n := count(l.diags, "waiting-on-process"); n != 2 {
		t.Errorf("diagnosis: %d waiting-on-process diagnoses, want 2 (parent and client)", n)
	}
	// Nothing calls the waiters calm.
	for _, d := range l.diags {
		if !d.Deadlock && (slices.Contains(d.Pids, parent) || slices.Contains(d.Pids, client)) {
			t.Errorf("diagnosis: a waiter behind the deadlock called %s: %s", d.ID, d.Summary)
		}
	}
}

// A read of a pipe whose write end no other process holds, only the
// reader's own (a parent that forgot to close it after fork): io-wait,
// saying so and how to fix it; no deadlock claim.
func TestLiveControlSelfPipe(t *testing.T) {
	bin := patient.Build(t, "self_pipe.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	pid := l.p.Pid
	reader, fd := l.p.Int(t, "reader"), l.p.Int(t, "fd")
	th := l.thread(t, pid, reader)
	wantFrames(t, th, "read_child_output", "main")
	if w := th.Wait; w == nil || w.Fd != fd || !w.PeerSelf || len(w.PeerPids) != 0 {
		t.Errorf("evidence: reader %d: wait %+v, want fd %d, no peer pids, peer_self", reader, w, fd)
	}
	l.wantNoDeadlock(t)
	if d := l.wantVerdict(t, "io-wait"); d != nil {
		wantTids(t, d, "the reader", reader)
		wantSummary(t, d, "held by no other process")
		if !strings.Contains(d.Fix, "close this process's own copy") {
			t.Errorf("fix %q does not say to close the write end", d.Fix)
		}
	}
}

// A mutex held across a blocking recv: io-wait names the recv and the
// thread queued on the lock behind it; no deadlock claim (no cycle: the
// other end may yet write), and the fix says not to hold the lock
// across the call.
func TestLiveLockHeldAcrossRead(t *testing.T) {
	bin := patient.Build(t, "lock_across_read.c", patient.O2g...)
	l := startLive(t, []string{bin}, nil)
	pid := l.p.Pid
	fetcher, reader := l.p.Int(t, "fetcher"), l.p.Int(t, "reader")
	wantMutexWait(t, l.thread(t, pid, reader), fetcher, "cache_lock")
	l.wantNoDeadlock(t)
	if d := l.wantVerdict(t, "io-wait"); d != nil {
		wantTids(t, d, "the fetcher", fetcher)
		wantSummary(t, d, "cache_lock", "holds across that call")
		wantSays(t, d, strconv.Itoa(reader))
		if !strings.Contains(d.Fix, "Do not hold mutex `cache_lock`") {
			t.Errorf("fix %q does not say to release the lock before the call", d.Fix)
		}
	}
}
