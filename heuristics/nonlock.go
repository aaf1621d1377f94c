package heuristics

// Facts about one thread that the signatures which are not about a lock
// owner (spin-wait-starved, fork-after-accelerator-init, progressing,
// io-wait, sleeping) share: how its samples compare, whether it burns
// CPU, and what kind of wait it is blocked in.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
	"github.com/hangdoc/hangdoc/stacks"
)

// waitKind is what a thread's last sample shows it doing.
type waitKind int

const (
	wkUnknown waitKind = iota // no stack, no syscall: nothing to say
	wkRunning                 // on a CPU, or runnable
	wkIO                      // read, recv, poll, accept, … on an fd
	wkSleep                   // nanosleep, clock_nanosleep, pause: a timer
	wkFutex                   // a mutex, condition variable, semaphore, join
	wkChild                   // wait4/waitid: waits on another process
	wkSignal                  // sigwait, sigsuspend: waits for a signal
	wkOther                   // blocked in some other system call
)

// threadFacts is what the non-lock signatures read about one thread:
// the thread, and what its samples say, which threads of one stack in a
// pasted dump share (facts.go).
type threadFacts struct {
	t *stacks.Thread
	*sampleFacts
}

// sampleFacts is what a thread's samples say.
type sampleFacts struct {
	samples []stacks.Sample
	// nonEmpty is how many samples have a stack.
	nonEmpty int
	// same: every sample with a stack has the same function-level stack;
	// exact: the same program counters too.
	same, exact bool
	// changed: two samples' function-level stacks differ.
	changed bool
	// running: state R in every sample.
	running bool
	// cpuGrows: at least two samples and CPU ticks grew between every
	// two of them.
	cpuGrows bool
	ticks    []uint64
	kind     waitKind
	// call names the system call (or libc function) the thread is
	// blocked in, for kinds other than wkRunning and wkUnknown.
	call string
	// zombie: the thread has exited (state Z or X).
	zombie bool
	// texts of stackEvidence and calledFrom, made on first use: they
	// read the samples alone, which threads alike share
	evidenceTail, calledFromText *string
}

// factsOf reads a thread's samples. A source that keeps only the last
// observation (a pasted dump) gets one sample made from Stack, State and
// Wait.
func factsOf(t *stacks.Thread) threadFacts {
	f := threadFacts{t: t, sampleFacts: &sampleFacts{samples: t.Samples()}}
	if len(f.samples) == 0 {
		f.samples = []stacks.Sample{{State: t.State, Stack: t.Stack, Wait: threadWait(t)}}
	}
	f.running = true
	f.same, f.exact = true, true
	var first, firstExact string
	for _, s := range f.samples {
		f.ticks = append(f.ticks, s.CPUTicks)
		if s.State != "R" {
			f.running = false
		}
		if len(s.Stack) == 0 {
			continue
		}
		if len(f.samples) == 1 {
			f.nonEmpty++ // one sample: nothing to compare it with
			continue
		}
		k, ke := stacks.StackKey(s.Stack, stacks.PlaceKey), stacks.StackKey(s.Stack, stacks.ExactKey)
		if f.nonEmpty == 0 {
			first, firstExact = k, ke
		} else {
			if k != first {
				f.same, f.changed = false, true
			}
			if ke != firstExact {
				f.exact = false
			}
		}
		f.nonEmpty++
	}
	if f.nonEmpty == 0 {
		f.same, f.exact = false, false
	}
	f.cpuGrows = len(f.samples) >= 2
	for _, s := range f.samples[1:] {
		if s.CPUTicks == 0 {
			f.cpuGrows = false
		}
	}
	last := f.samples[len(f.samples)-1]
	f.zombie = last.State == "Z" || last.State == "X" || t.State == "Z" || t.State == "X"
	f.kind, f.call = classifySample(last)
	if f.kind == wkRunning && len(f.samples) == 1 {
		f.kind, f.call = runnableInCall(last)
	}
	if k, call, ok := runtimeWaitKind(t); ok {
		f.kind, f.call = k, call // a goroutine's status says it better than frames without libc
	}
	return f
}

// runnableInCall reads a lone sample of a runnable thread whose innermost
// frame is a blocking call's wrapper: the call has just returned (a
// timer expired, a read got its bytes) and the thread has not yet run
// on. One observation cannot say it works; its frames say what it was
// doing, as for a dump without states (a core caught a sleeper's
// clock_nanosleep as it returned). Any other frame on top: running.
func runnableInCall(s stacks.Sample) (waitKind, string) {
	for i, f := range s.Stack {
		if i >= 3 || stacks.IsPythonFrame(f) {
			break
		}
		n := stacks.CallName(f.Func)
		if n == "" || frameRole(f) == stacks.RoleSyscall {
			continue
		}
		if k, ok := callKindOf(f.Func); ok && k != wkRunning {
			return refineSelect(k, n, nil, s.Stack), n
		}
		break // the innermost named frame is not a call: it runs
	}
	return wkRunning, ""
}

// Callers that turn a select or poll without fds into a sleep.
var sleepyCallers = lazyre.New(`(?i)(^|[^a-z])(u?sleep|pysleep|time_sleep|g_usleep|nanosleep|msleep|sleep_for|sleep_until)([^a-z]|$)`)

// classifySample says what a sample's thread is doing, from the kernel's
// syscall when the source read it, else from the innermost frames.
func classifySample(s stacks.Sample) (waitKind, string) {
	if s.Wait != nil && s.Wait.Syscall != "" && s.Wait.Syscall != "none" && s.Wait.Nr >= 0 {
		k, ok := callKindOf(s.Wait.Syscall)
		if !ok {
			k = wkOther
		}
		return refineSelect(k, s.Wait.Syscall, s.Wait, s.Stack), s.Wait.Syscall
	}
	if s.State == "R" {
		if pyAcquireOnTop(s.Stack) {
			// py-spy marks a thread active by its name when it cannot
			// match it to its OS thread; a Python stack whose innermost
			// frame takes a lock waits for it (the acquire sleeps in C)
			return wkFutex, ""
		}
		return wkRunning, ""
	}
	// No syscall read (a pasted dump, or /proc could not say): the
	// innermost libc frames name the call.
	for i, f := range s.Stack {
		if i >= 6 || stacks.IsPythonFrame(f) {
			break // a Python function named poll or read is not the syscall
		}
		n := stacks.CallName(f.Func)
		if n == "" || frameRole(f) == stacks.RoleSyscall {
			continue
		}
		if k, ok := callKindOf(f.Func); ok {
			return refineSelect(k, n, nil, s.Stack), n
		}
		if isWaitMachinery(f) {
			return wkFutex, n
		}
	}
	if len(s.Stack) == 0 {
		return wkUnknown, ""
	}
	if s.State == "" {
		// A dump without states: a stack that is in no known wait was
		// most likely running.
		return wkUnknown, ""
	}
	return wkOther, ""
}

// refineSelect makes a select or poll called from a sleep function (no
// fds, only a timeout: Python's time.sleep on old versions, usleep
// emulations) a sleep.
func refineSelect(k waitKind, call string, w *stacks.Wait, st []stacks.Frame) waitKind {
	if k != wkIO {
		return k
	}
	switch call {
	case "select", "pselect6", "pselect", "poll", "ppoll":
	default:
		return k
	}
	if w != nil && w.FdTarget != "" {
		return k
	}
	for i, f := range st {
		if i >= 8 {
			break
		}
		n := stacks.CallName(f.Func)
		if n == call {
			continue
		}
		if sleepyCallers.MatchString(f.Func) {
			return wkSleep
		}
	}
	return k
}

// label names the thread for a person: "thread 4711 `worker`".
func (f threadFacts) label() string { return whoThread(f.t) }

// whoThread names a thread for a person: "thread 4711 `worker`".
func whoThread(t *stacks.Thread) string {
	if t.Goroutine() != nil {
		return goroutineLabel(t)
	}
	return threadLabel(t)
}

// lastStack is the stack of the thread's last sample with one.
func (f threadFacts) lastStack() []stacks.Frame {
	for i := len(f.samples) - 1; i >= 0; i-- {
		if len(f.samples[i].Stack) > 0 {
			return f.samples[i].Stack
		}
	}
	return f.t.Stack
}

// lastWait is the wait of the thread's last sample.
func (f threadFacts) lastWait() *stacks.Wait {
	if w := f.samples[len(f.samples)-1].Wait; w != nil {
		return w
	}
	return threadWait(f.t)
}

// innermostOwnFunc is the innermost frame with a function name that is not
// a libc syscall wrapper, or "" when none is.
func innermostOwnFunc(st []stacks.Frame) string {
	for _, f := range st {
		if f.Func == "" || f.Signal {
			continue
		}
		if _, ok := callKindOf(f.Func); ok || isWaitMachinery(f) {
			continue
		}
		return f.Func
	}
	return ""
}

// chainOfFrames renders a stack as "f ← g ← h" with at most n frames.
func chainOfFrames(st []stacks.Frame, n int) string {
	var parts []string
	for i, f := range st {
		if i == n {
			parts = append(parts, fmt.Sprintf("… (%d more)", len(st)-n))
			break
		}
		s := f.Name()
		if f.Module != "" && f.Func == "" {
			s = fmt.Sprintf("%s+%#x", filepath.Base(f.Module), f.Offset)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ← ")
}

// ticksPerSample renders CPU ticks per sample: "—, 50, 49" (the first sample
// has nothing to compare with).
func ticksPerSample(ticks []uint64) string {
	var parts []string
	for i, t := range ticks {
		if i == 0 {
			parts = append(parts, "—")
			continue
		}
		parts = append(parts, fmt.Sprint(t))
	}
	return strings.Join(parts, ", ")
}

// whoProc names a process for a person: "pid 4700 `python3`".
func whoProc(p *stacks.Process) string {
	name := ""
	for _, t := range p.Threads {
		if t.Tid == p.Pid {
			name = t.Name
		}
	}
	if name == "" && p.Exe != "" {
		name = filepath.Base(p.Exe)
	}
	if name == "" {
		return fmt.Sprintf("pid %d", p.Pid)
	}
	return fmt.Sprintf("pid %d `%s`", p.Pid, name)
}

// lockOwnedWait reports whether some thread of p waits on a mutex whose
// owner is known and not running (the owner sleeps, is blocked, has
// exited, is a parent thread across fork, or is the waiter itself). Such
// a process belongs to the lock signatures: the verdicts that are not a
// deadlock leave it alone.
func lockOwnedWait(a *analysis, p *stacks.Process) bool {
	for t, f := range a.samplesIn(p) {
		w := f.lastWait()
		if w == nil || w.Mutex == nil || w.Mutex.Owner == 0 {
			continue
		}
		owner := w.Mutex.Owner
		if owner == t.Tid {
			return true
		}
		ref, ok := a.threadIn(p, owner)
		if !ok {
			return true // exited, or a thread of the parent at fork
		}
		of := a.samplesOf(ref.Thread)
		if of.kind != wkRunning && !of.changed && !heldAcrossCall(a, ref.Thread) {
			return true
		}
	}
	return false
}

// heldAcrossCall: owner, a mutex's holder, is blocked on I/O or asleep on
// a timer, itself or at the end of a chain of holders (each waiting for a
// mutex the next holds): the lock is held across a blocking call, and
// io-wait or sleeping says what the process waits for, with the threads
// queued behind it (io_wait.go heldAcrossWait).
func heldAcrossCall(a *analysis, owner *stacks.Thread) bool {
	k := a.samplesOf(holderChainEnd(a, owner)).kind
	return k == wkIO || k == wkSleep
}

// holderChainEnd follows t's waits for mutexes to their holders, as far
// as a holder that waits for no mutex (8 steps at most: a cycle is the
// lock signatures'), and returns that last holder; t itself when it
// waits for none.
func holderChainEnd(a *analysis, t *stacks.Thread) *stacks.Thread {
	for range 8 {
		es := a.WaitsFor(t)
		if len(es) == 0 || es[0].Kind != EdgeMutex || es[0].To.Thread == nil {
			break
		}
		t = es[0].To.Thread
	}
	return t
}

// factTids lists the tids of threads.
func factTids(fs []threadFacts) []int {
	var out []int
	for _, f := range fs {
		out = append(out, f.t.Tid)
	}
	return out
}

// calmVerdict is the one verdict that is not a deadlock a process gets:
// "progressing", "io-wait", "sleeping", or "" when it gets none. A
// process some deadlock signature of this file set claims, or whose
// threads wait on a mutex with a known owner that does not run (the lock
// signatures' ground), or that waits on a child process, or on a pipe
// or socket whose other end a stuck process holds (waiting-on-process),
// gets none.
func calmVerdict(a *analysis, p *stacks.Process) (string, []threadFacts) {
	type out struct {
		v   string
		all []threadFacts
	}
	r := result(a, fmt.Sprintf("calm verdict %d", p.Pid), func(a *analysis) out {
		v, all := detectCalmVerdict(a, p)
		return out{v, all}
	})
	return r.v, r.all
}

func detectCalmVerdict(a *analysis, p *stacks.Process) (string, []threadFacts) {
	if p.Exited || len(p.Threads) == 0 || isStopped(p) || lockOwnedWait(a, p) || a.LockDiagnosed(p) {
		return "", nil
	}
	if waitsOnStuck(a, p) {
		return "", nil // it waits on a pipe or socket to a stuck process: waiting-on-process says so
	}
	if _, ok := pyProcessWaitIn(a, p); ok && len(a.Snap.Processes) == 1 {
		return "", nil // a Python thread waits on another process: waiting-on-process says so
	}
	if _, ok := spinWaitIn(a, p); ok {
		return "", nil
	}
	if p.Fork != nil {
		if _, ok := forkAccelIn(a, p); ok {
			return "", nil
		}
	}
	var all []threadFacts
	for _, f := range a.samplesIn(p) {
		if !f.zombie {
			all = append(all, f)
		}
	}
	pick := func(keep func(threadFacts) bool) []threadFacts {
		var out []threadFacts
		for _, f := range all {
			if keep(f) {
				out = append(out, f)
			}
		}
		return out
	}
	if fs := pick(threadWorks); len(fs) > 0 {
		return "progressing", all
	}
	if len(pick(func(f threadFacts) bool { return f.kind == wkChild })) > 0 {
		return "", nil
	}
	if fs := pick(func(f threadFacts) bool { return f.kind == wkIO }); len(fs) > 0 {
		return "io-wait", all
	}
	if fs := pick(func(f threadFacts) bool { return f.kind == wkSleep }); len(fs) > 0 {
		return "sleeping", all
	}
	return "", nil
}

// othersText says what the threads not in skip are doing, one a line.
func othersText(all []threadFacts, skip map[int]bool) []string {
	const shown = 6 // as limitList(out, shown): only the lines shown are written
	var out []string
	n := 0
	for _, f := range all {
		if skip[f.t.Tid] {
			continue
		}
		if n++; n <= shown {
			out = append(out, sleeperText(f))
		}
	}
	if n > shown {
		out = append(out, fmt.Sprintf("and %d more", n-shown))
	}
	return out
}

// matchCalm is the matcher of one verdict that is not a deadlock: each
// process gets the one calmVerdict gives it, at most.
func matchCalm(verdict string, diagnose func(a *analysis, p *stacks.Process, all []threadFacts) Diagnosis) func(*analysis) []Diagnosis {
	return func(a *analysis) []Diagnosis {
		var out []Diagnosis
		for _, p := range a.Snap.Processes {
			if v, all := calmVerdict(a, p); v == verdict {
				out = append(out, diagnose(a, p, all))
			}
		}
		return out
	}
}

// calledFrom is ", called from `fn`" naming the thread's innermost own
// function, or "" when it has none.
func (f threadFacts) calledFrom() string {
	if f.calledFromText == nil {
		s := ""
		if fn := innermostOwnFunc(f.lastStack()); fn != "" {
			s = fmt.Sprintf(", called from `%s`", fn)
		}
		f.calledFromText = &s
	}
	return *f.calledFromText
}

// stackEvidence says whether the thread's stack held across the samples,
// and what it is.
func (f threadFacts) stackEvidence() string {
	if f.evidenceTail == nil {
		same := "in the only sample"
		if len(f.samples) > 1 && f.same {
			same = fmt.Sprintf("same stack in all %d samples", len(f.samples))
		}
		s := fmt.Sprintf(": %s; stack: %s", same, chainOfFrames(f.lastStack(), 8))
		f.evidenceTail = &s
	}
	return f.label() + *f.evidenceTail
}
