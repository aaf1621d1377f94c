package heuristics

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "fork-after-accelerator-init",
		Title: "A forked child uses the accelerator driver its parent initialised",
		Explain: `The process is a child that fork()ed without exec from a parent that had an
accelerator driver loaded and initialised (CUDA: libcuda, libcudart, libnvidia-*,
libnccl; ROCm: libamdhip64, libhsa-runtime64; oneAPI Level Zero: libze_loader;
Tenstorrent tt-metal; Metal), and one of its threads is stuck in or on that
driver. fork() copies the driver's memory (its locks, held by driver threads
that do not exist in the child, and its device state) but not its threads,
device contexts or file-descriptor mappings: the child's first call into the
driver waits for ever on a lock no thread will release, or fails. PyTorch
reports the same mistake as "Cannot re-initialize CUDA in forked subprocess".
libfakeaccel.so, the fake driver the test patients load, is matched like a real
driver: it is a test stand-in.`,
		Fix: `Start workers with the spawn or forkserver start method (Python:
multiprocessing.set_start_method("spawn") or get_context("spawn"); PyTorch:
torch.multiprocessing with spawn; DataLoader(multiprocessing_context="spawn")),
or initialise the driver only in the child, after fork, never in the parent.`,
		// Before fork-inherited-lock (10): when both claim a wait, this
		// one says more (the lock is the driver's, the fix is spawn).
		Needs: []string{"lineage"},
		Rank:  8,
		Match: matchForkAfterAccel,
	})
}

// accelDriver is one family of accelerator driver libraries, matched on
// the file name of a mapped object.
type accelDriver struct {
	re     *lazyre.RE
	family string
	// api matches the driver's entry points by name, for dumps whose
	// frames carry no module.
	api *lazyre.RE
}

var accelDrivers = []accelDriver{
	{lazyre.New(`^libcuda\.so`), "CUDA", lazyre.New(`^cu[A-Z]`)},
	{lazyre.New(`^libcudart\.so`), "CUDA", lazyre.New(`^cuda[A-Z]`)},
	{lazyre.New(`^libnvidia-[A-Za-z0-9_-]+\.so`), "NVIDIA driver", nil},
	{lazyre.New(`^libnccl\.so`), "NCCL (CUDA)", lazyre.New(`^nccl[A-Z]`)},
	{lazyre.New(`^libamdhip64\.so`), "ROCm HIP", lazyre.New(`^hip[A-Z]`)},
	{lazyre.New(`^libhsa-runtime64\.so`), "ROCm HSA", lazyre.New(`^hsa_`)},
	{lazyre.New(`^libhsakmt\.so`), "ROCm HSA", lazyre.New(`^hsaKmt`)},
	{lazyre.New(`^libze_loader\.so`), "oneAPI Level Zero", lazyre.New(`^ze[A-Z]`)},
	{lazyre.New(`^libze_intel_gpu\.so`), "oneAPI Level Zero", nil},
	{lazyre.New(`^libtt_metal\.so`), "tt-metal", lazyre.New(`^tt::(tt_metal|umd)::`)},
	{lazyre.New(`^_ttnn[A-Za-z0-9_.-]*\.so`), "tt-metal (ttnn)", nil},
	{lazyre.New(`^libtt_umd\.so|^libdevice\.so`), "tt-metal UMD", nil}, // libdevice.so only under a tt-metal path: see driverOf
	{lazyre.New(`^libmetal\.so|^Metal$`), "Metal", nil},
	{lazyre.New(`^libfakeaccel\.so`), "fake accelerator (test stand-in)", lazyre.New(`^fakeaccel_`)},
}

var ttMetalPath = lazyre.New(`(?i)tt[-_]?metal|tenstorrent`)

// driverOf says whether a mapped object is an accelerator driver.
func driverOf(path string) (accelDriver, bool) {
	base := filepath.Base(path)
	for _, d := range accelDrivers {
		if !d.re.MatchString(base) {
			continue
		}
		if strings.HasPrefix(base, "libdevice.so") && !ttMetalPath.MatchString(path) {
			continue // libdevice.so is too common a name outside tt-metal
		}
		return d, true
	}
	return accelDriver{}, false
}

// inheritedDriver is a driver library the child has from its parent.
type inheritedDriver struct {
	path, base string
	drv        accelDriver
}

// inheritedDrivers lists the drivers a forked child inherited: those the
// parent had mapped. With no parent modules read, the child's own
// mappings stand in (a child that did not exec keeps its parent's).
func inheritedDrivers(p *stacks.Process) (ds []inheritedDriver, fromParent bool) {
	seen := map[string]bool{}
	add := func(path string) {
		if d, ok := driverOf(path); ok && !seen[filepath.Base(path)] {
			seen[filepath.Base(path)] = true
			ds = append(ds, inheritedDriver{path: path, base: filepath.Base(path), drv: d})
		}
	}
	if len(p.Fork.ParentModules) > 0 {
		for _, m := range p.Fork.ParentModules {
			add(m)
		}
		return ds, true
	}
	for _, m := range p.Modules {
		add(m.Path)
	}
	return ds, false
}

func matchForkAfterAccel(a *analysis) []Diagnosis {
	var out []Diagnosis
	for _, p := range a.Snap.Processes {
		if p.Fork == nil {
			// No lineage (a pasted dump): a lone thread stuck on a lock
			// inside a driver, with none of the driver's threads beside it.
			if lw, ok := a.loneWaiterOf(p); ok && lw.id == "fork-after-accelerator-init" {
				out = append(out, a.loneWaiterDiagnosis(lw))
			}
			continue
		}
		if d, ok := forkAccelIn(a, p); ok {
			out = append(out, d)
		}
	}
	return out
}

// stuckInDriver is a child thread stuck in or on a driver.
type stuckInDriver struct {
	f     threadFacts
	drv   inheritedDriver
	frame stacks.Frame // the innermost driver frame
	// owner is the parent thread that holds the mutex the thread waits
	// on, 0 when none is known.
	owner int
	mutex *stacks.Mutex
	// byName: the driver frame was recognised by its function name
	// only (no module in the frame).
	byName bool
}

func forkAccelIn(a *analysis, p *stacks.Process) (Diagnosis, bool) {
	drivers, fromParent := inheritedDrivers(p)
	if len(drivers) == 0 {
		return Diagnosis{}, false
	}
	parentTids := map[int]bool{}
	for _, t := range p.Fork.ParentThreads {
		parentTids[t] = true
	}
	childTids := map[int]bool{}
	for _, t := range p.Threads {
		childTids[t.Tid] = true
	}
	var stuck []stuckInDriver
	for _, t := range p.Threads {
		f := a.samplesOf(t)
		if f.zombie || !threadStuck(f) {
			continue
		}
		s, ok := driverFrame(f.lastStack(), drivers)
		if !ok {
			continue
		}
		s.f = f
		if w := f.lastWait(); w != nil && w.Mutex != nil && w.Mutex.Owner != 0 && w.Mutex.Owner != t.Tid {
			o := w.Mutex.Owner
			if parentTids[o] || !childTids[o] {
				s.owner, s.mutex = o, w.Mutex
			}
		}
		stuck = append(stuck, s)
	}
	if len(stuck) == 0 {
		return Diagnosis{}, false
	}
	sort.SliceStable(stuck, func(i, j int) bool { return stuck[i].owner != 0 && stuck[j].owner == 0 })
	return forkAccelDiagnosis(a, p, stuck, fromParent), true
}

// threadStuck says whether a thread makes no progress: its stack is the
// same in every sample (blocked, or spinning in one place). With one
// sample, only a thread blocked in the kernel counts.
func threadStuck(f threadFacts) bool {
	if f.nonEmpty >= 2 {
		return f.same
	}
	switch f.kind {
	case wkFutex, wkIO, wkSleep, wkOther, wkChild, wkSignal:
		return true
	}
	return false
}

// driverFrame finds the innermost frame of the stack in one of the
// drivers: by its module, or, for frames without one, by the driver's
// API names.
func driverFrame(st []stacks.Frame, drivers []inheritedDriver) (stuckInDriver, bool) {
	for _, fr := range st {
		if fr.Module != "" {
			base := filepath.Base(fr.Module)
			for _, d := range drivers {
				if base == d.base {
					return stuckInDriver{drv: d, frame: fr}, true
				}
			}
			continue
		}
		for _, d := range drivers {
			if d.drv.api != nil && d.drv.api.MatchString(fr.Func) {
				return stuckInDriver{drv: d, frame: fr, byName: true}, true
			}
		}
	}
	return stuckInDriver{}, false
}

func forkAccelDiagnosis(a *analysis, p *stacks.Process, stuck []stuckInDriver, fromParent bool) Diagnosis {
	s := stuck[0]
	n := len(s.f.samples)
	conf := Medium
	switch {
	case s.owner != 0:
		conf = High
	case n < 2 || s.byName:
		conf = Low
	}
	if !fromParent && conf == High {
		conf = Medium // the driver may have been loaded by the child itself
	}
	d := Diagnosis{
		Confidence: conf,
		Deadlock:   true,
		Refs: []string{
			"https://man7.org/linux/man-pages/man2/fork.2.html",
			"https://docs.python.org/3/library/multiprocessing.html#contexts-and-start-methods",
		},
	}
	d.nameIn(p)
	d.Pids = append(d.Pids, p.Fork.ParentPid) // the parent, by pid alone: it may not be in the paste
	for _, x := range stuck {
		d.Tids = append(d.Tids, x.f.t.Tid)
	}
	if s.owner != 0 {
		d.Tids = append(d.Tids, s.owner)
	}
	drv := fmt.Sprintf("%s driver `%s`", s.drv.drv.family, s.drv.base)
	fn := s.frame.Name()
	how := "is stuck in"
	switch {
	case s.owner != 0:
		how = "waits in"
	case s.f.kind == wkRunning:
		how = "spins in"
	case s.f.kind != wkUnknown:
		how = "blocks in"
	}
	d.Summary = fmt.Sprintf("forked child %d is stuck in the %s its parent %d initialised: %s %s `%s`",
		p.Pid, drv, p.Fork.ParentPid, s.f.label(), how, fn)
	if s.owner != 0 {
		d.Summary += fmt.Sprintf(" on %s held by parent thread %d", heldMutexText(s.mutex), s.owner)
	}

	loaded := fmt.Sprintf("parent %d had `%s` (%s) mapped when it forked child %d without exec", p.Fork.ParentPid, s.drv.base, s.drv.drv.family, p.Pid)
	if !fromParent {
		loaded = fmt.Sprintf("child %d (forked from %d without exec) has `%s` (%s) mapped; the parent's modules were not read, so it is taken as inherited", p.Pid, p.Fork.ParentPid, s.drv.base, s.drv.drv.family)
	}
	d.Chain = append(d.Chain, loaded)
	d.Chain = append(d.Chain, "fork() copied the driver's memory and locks but not its threads, device contexts or mappings")
	step := fmt.Sprintf("%s calls into the driver: `%s`", s.f.label(), fn)
	if s.frame.Module != "" {
		step += fmt.Sprintf(" (`%s`)", filepath.Base(s.frame.Module))
	}
	if s.f.call != "" {
		step += fmt.Sprintf(", and blocks in `%s`", s.f.call)
	}
	d.Chain = append(d.Chain, step)
	if s.owner != 0 {
		d.Chain = append(d.Chain, fmt.Sprintf("it waits on %s, held by thread %d: a thread of the parent at fork, which does not exist in the child, so nothing will unlock it", heldMutexText(s.mutex), s.owner))
	} else {
		d.Chain = append(d.Chain, "the driver waits for a thread, context or device state that did not survive the fork")
	}

	for _, x := range stuck {
		d.Evidence = append(d.Evidence, fmt.Sprintf("%s stack: %s", x.f.label(), chainOfFrames(x.f.lastStack(), 10)))
		d.Evidence = append(d.Evidence, fmt.Sprintf("%s: same stack in %d of %d samples; state %s", x.f.label(), x.f.nonEmpty, len(x.f.samples), statesText(x.f)))
		if x.mutex != nil {
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s waits on %s: __owner %d, __lock %d, __kind %d", x.f.label(), heldMutexText(x.mutex), x.mutex.Owner, x.mutex.Lock, x.mutex.Kind))
		}
		if x.byName {
			d.Evidence = append(d.Evidence, fmt.Sprintf("`%s` recognised as a %s entry point by its name (the frame has no module)", x.frame.Name(), x.drv.drv.family))
		}
	}
	if s.owner != 0 && len(p.Fork.ParentThreads) > 0 {
		d.Evidence = append(d.Evidence, fmt.Sprintf("parent %d's threads: %s", p.Fork.ParentPid, tidListText(p.Fork.ParentThreads, 12)))
	}
	if ref, ok := a.ThreadOf(p.Fork.ParentPid, s.owner); ok && s.owner != 0 && ref.Proc.Pid != p.Pid {
		d.Evidence = append(d.Evidence, fmt.Sprintf("in the parent, %s: %s", whoThread(ref.Thread), chainOfFrames(ref.Thread.Stack, 6)))
	}
	var libs []string
	for _, x := range stuck {
		libs = append(libs, x.drv.path)
	}
	d.Evidence = append(d.Evidence, "driver mapped in the parent: "+strings.Join(uniqStrings(libs), ", "))
	return d
}

// heldMutexText names a mutex: "mutex `server_lock` (0x7f…)".
func heldMutexText(m *stacks.Mutex) string {
	if m == nil {
		return "a mutex"
	}
	if m.Symbol != "" {
		return fmt.Sprintf("mutex `%s` (%#x)", m.Symbol, m.Addr)
	}
	return fmt.Sprintf("mutex %#x", m.Addr)
}

func tidListText(xs []int, n int) string {
	var parts []string
	for i, x := range xs {
		if i == n {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(xs)-n))
			break
		}
		parts = append(parts, fmt.Sprint(x))
	}
	return strings.Join(parts, ", ")
}

func uniqStrings(xs []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range xs {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
