package attach_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// startGo builds and starts a Go patient of testdata/gorun and waits
// until it is stuck.
func startGo(t *testing.T, name string, env ...string) *patient.Proc {
	t.Helper()
	patient.RequirePtrace(t)
	return patient.StartGo(t, patient.BuildGo(t, name), env...)
}

// attachGo reads a Go patient live and checks what every Go read must
// give: the runtime's version, no message, goroutines with ids.
func attachGo(t *testing.T, pid int, opts attach.Options) *stacks.Process {
	t.Helper()
	if opts.Samples == 0 {
		opts.Samples, opts.Interval = 2, 20*time.Millisecond
	}
	snap, err := attach.Attach(context.Background(), []int{pid}, opts)
	if err != nil {
		t.Fatalf("attach %d: %v", pid, err)
	}
	p := snap.Processes[0]
	if !strings.HasPrefix(p.Runtime, "go1.") || p.Message != "" {
		t.Fatalf("runtime %q, message %q: want a Go version and no message (notes: %v)", p.Runtime, p.Message, p.Notes)
	}
	for _, th := range p.Threads {
		if th.Goroutine() == nil || th.Goroutine().ID != th.Tid || th.Tid <= 0 {
			t.Fatalf("thread %d is not a goroutine: %+v", th.Tid, th)
		}
		if len(th.Samples()) == 0 || len(th.Stack) == 0 {
			t.Fatalf("goroutine %d: %d samples, %d frames", th.Tid, len(th.Samples()), len(th.Stack))
		}
	}
	return p
}

// sigquitDump makes the patient print its goroutine dump (SIGQUIT) and
// parses it: an independent reading of the same goroutines.
func sigquitDump(t *testing.T, p *patient.Proc) *stacks.Process {
	t.Helper()
	dump := p.QuitDump(t)
	snap, _, err := stacks.ParseGoroutines(bytes.NewReader(dump))
	if err != nil {
		t.Fatalf("parse the SIGQUIT dump: %v\n%s", err, dump)
	}
	return snap.Processes[0]
}

// withStatus returns the goroutines in a status.
func withStatus(p *stacks.Process, status string) []*stacks.Thread {
	var out []*stacks.Thread
	for _, th := range p.Threads {
		if th.Goroutine() != nil && th.Goroutine().Status == status {
			out = append(out, th)
		}
	}
	return out
}

func byID(p *stacks.Process) map[int]*stacks.Thread {
	m := map[int]*stacks.Thread{}
	for _, th := range p.Threads {
		if th.Tid != 0 { // the dump's scheduler stacks (goroutine 0) are not goroutines
			m[th.Tid] = th
		}
	}
	return m
}

// frameIndex is the index of the first frame of fn, -1 if none.
func frameIndex(st []stacks.Frame, fn string) int {
	for i, f := range st {
		if f.Func == fn {
			return i
		}
	}
	return -1
}

// dumpArg is argument i of the frame fn as the dump printed it, as an
// address; it fails the test when the dump does not give it exactly
// (a value printed with "?" is a guess).
func dumpArg(t *testing.T, th *stacks.Thread, fn string, i int) uint64 {
	t.Helper()
	k := frameIndex(th.Stack, fn)
	if k < 0 || len(th.Stack[k].Args) <= i {
		t.Fatalf("dump: goroutine %d has no argument %d of %s: %+v", th.Tid, i, fn, th.Stack)
	}
	v := th.Stack[k].Args[i].Value
	n, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64)
	if err != nil || strings.HasSuffix(v, "?") {
		t.Fatalf("dump: goroutine %d: argument %d of %s is %q, not an exact address", th.Tid, i, fn, v)
	}
	return n
}

// liveArgs are the arguments the live read gave frame fn, by name, as
// addresses; it fails the test when the frame is missing or an argument
// is not an exact address.
func liveArgs(t *testing.T, th *stacks.Thread, fn string) map[string]uint64 {
	t.Helper()
	k := frameIndex(th.Stack, fn)
	if k < 0 {
		t.Fatalf("goroutine %d has no frame %s: %+v", th.Tid, fn, th.Stack)
	}
	out := map[string]uint64{}
	for _, a := range th.Stack[k].Args {
		n, err := strconv.ParseUint(strings.TrimPrefix(a.Value, "0x"), 16, 64)
		if err != nil || !strings.HasPrefix(a.Value, "0x") {
			t.Fatalf("goroutine %d: %s: argument %s=%q is not an address", th.Tid, fn, a.Name, a.Value)
		}
		out[a.Name] = n
	}
	return out
}

// checkLiveArgs checks that the live read of frame fn of goroutine th
// gave exactly the pointer arguments named, each equal to the word the
// dump printed at the same position (want maps name to position).
func checkLiveArgs(t *testing.T, th, d *stacks.Thread, fn string, want map[string]int) {
	t.Helper()
	got := liveArgs(t, th, fn)
	if len(got) != len(want) {
		t.Errorf("goroutine %d: %s: live arguments %v, want %d (%v)", th.Tid, fn, got, len(want), want)
	}
	for name, i := range want {
		if v, ok := got[name]; !ok || v != dumpArg(t, d, fn, i) {
			t.Errorf("goroutine %d: %s: live %s=%#x (read %v), the dump's argument %d is %#x", th.Tid, fn, name, v, ok, i, dumpArg(t, d, fn, i))
		}
	}
}

// TestGoAbba: the two transfers of the ABBA patient wait in
// sync.Mutex.Lock at `to.mu.Lock()` in main.(*bank).transfer, each on the
// other's account mutex; the objects are the receivers the runtime's own
// dump prints for internal/sync.(*Mutex).lockSlow, and the `to` argument
// of transfer.
func TestGoAbba(t *testing.T) {
	p := startGo(t, "abba")
	live := attachGo(t, p.Pid, attach.Options{})
	dump := sigquitDump(t, p)

	line := patient.GoSourceLine(t, "abba", "to.mu.Lock()")
	locks := withStatus(live, "sync.Mutex.Lock")
	if len(locks) != 2 {
		t.Fatalf("%d goroutines in sync.Mutex.Lock, want 2", len(locks))
	}
	objects := map[uint64]bool{}
	for _, th := range locks {
		g := th.Goroutine()
		k := frameIndex(th.Stack, "main.(*bank).transfer")
		if k < 0 || !strings.HasSuffix(th.Stack[k].File, "gorun/abba/main.go") || th.Stack[k].Line != line {
			t.Errorf("goroutine %d: want main.(*bank).transfer at abba/main.go:%d, stack %+v", g.ID, line, th.Stack)
		}
		if frameIndex(th.Stack, "sync.(*Mutex).Lock") < 0 {
			t.Errorf("goroutine %d: no sync.(*Mutex).Lock frame", g.ID)
		}
		if g.CreatedBy.Func != "main.main" || g.CreatedByID != 1 || !strings.HasSuffix(g.CreatedBy.File, "abba/main.go") {
			t.Errorf("goroutine %d: created by %+v in goroutine %d, want main.main in goroutine 1", g.ID, g.CreatedBy, g.CreatedByID)
		}
		objects[g.Object] = true
		d := byID(dump)[g.ID]
		if d == nil {
			t.Fatalf("goroutine %d is not in the dump", g.ID)
		}
		if want := dumpArg(t, d, "internal/sync.(*Mutex).lockSlow", 0); g.Object != want {
			t.Errorf("goroutine %d: object %#x, the dump's lockSlow receiver is %#x", g.ID, g.Object, want)
		}
		if to := dumpArg(t, d, "main.(*bank).transfer", 2); g.Object != to {
			t.Errorf("goroutine %d: object %#x, transfer's `to` (whose mu is its first field) is %#x", g.ID, g.Object, to)
		}
		// The live read gives transfer's pointer arguments as the dump
		// prints them (receiver, from, to; n is no pointer).
		checkLiveArgs(t, th, d, "main.(*bank).transfer", map[string]int{"b": 0, "from": 1, "to": 2})
	}
	if len(objects) != 2 || objects[0] {
		t.Errorf("objects %v: want two different addresses", objects)
	}
	// With the arguments, each holder is inferred live as from the dump:
	// the goroutine whose transfer received the other's mutex as `from`.
	top := heuristics.Diagnose(&stacks.Snapshot{Processes: []*stacks.Process{live}}, heuristics.Options{}).Diagnoses[0]
	if top.ID != "lock-order-cycle" || top.Confidence != heuristics.Medium {
		t.Fatalf("live diagnosis %s %s, want lock-order-cycle medium: %s", top.ID, top.Confidence, top.Summary)
	}
	for _, w := range locks {
		holders := 0
		for _, h := range locks {
			if h == w || liveArgs(t, h, "main.(*bank).transfer")["from"] != w.Goroutine().Object {
				continue
			}
			holders++
			if !strings.Contains(top.Summary, fmt.Sprintf("%#x, which goroutine %d may hold", w.Goroutine().Object, h.Tid)) {
				t.Errorf("live diagnosis does not name goroutine %d as the holder of %#x: %s", h.Tid, w.Goroutine().Object, top.Summary)
			}
		}
		if holders != 1 {
			t.Errorf("goroutine %d waits for %#x: %d other transfers received it as `from`, want 1", w.Tid, w.Goroutine().Object, holders)
		}
	}
	if main := byID(live)[1]; main == nil || main.Goroutine().Status != "sync.WaitGroup.Wait" || main.Goroutine().CreatedBy.Func != "" {
		t.Errorf("goroutine 1: %+v, want main in sync.WaitGroup.Wait, no creator", main)
	}
	compareWithDump(t, live, dump)
}

// compareWithDump checks that a live read and the SIGQUIT dump of the
// same process give the same goroutines, and for the goroutines of the
// program (those with a main.* frame) the same status, top frame of the
// program, creator and thread lock. Each patient has one goroutine that
// keeps moving (a ticker running the GC, a polling main): a goroutine at
// another line of the program in the two reads, or running in either,
// moved in between and is let off the status check; only one may.
func compareWithDump(t *testing.T, live, dump *stacks.Process) {
	t.Helper()
	l, d := byID(live), byID(dump)
	for id := range l {
		if d[id] == nil {
			t.Errorf("goroutine %d read live is not in the dump", id)
		}
	}
	for id := range d {
		if l[id] == nil {
			t.Errorf("goroutine %d of the dump was not read live", id)
		}
	}
	compared, moved := 0, 0
	for id, lt := range l {
		dt := d[id]
		if dt == nil {
			continue
		}
		lu, du := topUser(lt.Stack), topUser(dt.Stack)
		if lu < 0 && du < 0 {
			continue
		}
		lc, dc := lt.Goroutine().CreatedBy, dt.Goroutine().CreatedBy
		if lc.Func != dc.Func || lc.Line != dc.Line || lt.Goroutine().CreatedByID != dt.Goroutine().CreatedByID {
			t.Errorf("goroutine %d: created by %s:%d in %d live, %s:%d in %d in the dump", id, lc.Func, lc.Line, lt.Goroutine().CreatedByID, dc.Func, dc.Line, dt.Goroutine().CreatedByID)
		}
		if lt.Goroutine().LockedToThread != dt.Goroutine().LockedToThread {
			t.Errorf("goroutine %d: locked to thread %v live, %v in the dump", id, lt.Goroutine().LockedToThread, dt.Goroutine().LockedToThread)
		}
		ls, ds := lt.Goroutine().Status, dt.Goroutine().Status
		samePlace := lu >= 0 && du >= 0 && lt.Stack[lu].Func == dt.Stack[du].Func && lt.Stack[lu].Line == dt.Stack[du].Line
		if !samePlace || moving(ls) || moving(ds) {
			moved++
			t.Logf("goroutine %d moved between the reads: %q at %v live, %q at %v in the dump", id, ls, lt.Stack, ds, dt.Stack)
			continue
		}
		if ls != ds {
			t.Errorf("goroutine %d: status %q live, %q in the dump, at the same place %s:%d", id, ls, ds, lt.Stack[lu].Func, lt.Stack[lu].Line)
		}
		if lw, dw := lt.Goroutine().WaitMinutes, dt.Goroutine().WaitMinutes; lw != dw && lw+1 != dw {
			t.Errorf("goroutine %d: waited %d minutes live, %d in the dump taken after", id, lw, dw)
		}
		compareArgs(t, lt, dt)
		compared++
	}
	if moved > 1 {
		t.Errorf("%d goroutines of the program moved between the live read and the dump; the patients have one that keeps moving", moved)
	}
	if compared == 0 {
		t.Error("no goroutine of the program compared")
	}
}

// compareArgs checks that every argument the live read gave a frame is
// a word the dump printed for the same frame (the n-th frame of that
// function in each): the live read takes what the frame's debug
// information locates and never guesses. A word the dump marks "?" (its
// spill slot may be stale) counts; a frame whose words the dump cut
// ("...") is not checked.
func compareArgs(t *testing.T, live, dump *stacks.Thread) {
	t.Helper()
	seen := map[string]int{}
	for _, lf := range live.Stack {
		nth := seen[lf.Func]
		seen[lf.Func]++
		if len(lf.Args) == 0 {
			continue
		}
		var df *stacks.Frame
		for i := range dump.Stack {
			if dump.Stack[i].Func == lf.Func {
				if nth == 0 {
					df = &dump.Stack[i]
					break
				}
				nth--
			}
		}
		if df == nil {
			t.Errorf("goroutine %d: %s has arguments live but is not in the dump", live.Tid, lf.Func)
			continue
		}
		words := map[string]bool{}
		cut := false
		for _, a := range df.Args {
			cut = cut || a.Value == "..."
			for _, w := range strings.FieldsFunc(a.Value, func(r rune) bool { return strings.ContainsRune("{}, ?", r) }) {
				words[w] = true
			}
		}
		if cut {
			continue
		}
		for _, a := range lf.Args {
			if !words[a.Value] {
				t.Errorf("goroutine %d: %s: live argument %s=%s is none of the words the dump printed: %+v", live.Tid, lf.Func, a.Name, a.Value, df.Args)
			}
		}
	}
}

func moving(status string) bool {
	return status == "running" || status == "runnable" || status == "syscall"
}

// topUser is the index of the first main.* frame.
func topUser(st []stacks.Frame) int {
	for i, f := range st {
		if strings.HasPrefix(f.Func, "main.") {
			return i
		}
	}
	return -1
}

// TestGoRLock: the recursive RLock and the writer's Lock wait on the same
// sync.RWMutex, the cache's mu (its first field, so the cache's address
// the dump prints as lookup's receiver).
func TestGoRLock(t *testing.T) {
	p := startGo(t, "rlock")
	live := attachGo(t, p.Pid, attach.Options{})
	dump := sigquitDump(t, p)
	r, w := withStatus(live, "sync.RWMutex.RLock"), withStatus(live, "sync.RWMutex.Lock")
	if len(r) != 1 || len(w) != 1 {
		t.Fatalf("%d goroutines in RLock, %d in Lock; want 1 and 1", len(r), len(w))
	}
	ro, wo := r[0].Goroutine().Object, w[0].Goroutine().Object
	if ro == 0 || ro != wo {
		t.Fatalf("RLock waits on %#x, Lock on %#x: want the same RWMutex", ro, wo)
	}
	if k := frameIndex(r[0].Stack, "main.(*cache).lookup"); k < 0 || r[0].Stack[k].Line != patient.GoSourceLine(t, "rlock", "recursive read lock") {
		t.Errorf("RLock goroutine: want main.(*cache).lookup at the recursive RLock: %+v", r[0].Stack)
	}
	if k := frameIndex(w[0].Stack, "main.(*cache).set"); k < 0 {
		t.Errorf("Lock goroutine: no main.(*cache).set: %+v", w[0].Stack)
	}
	if c := dumpArg(t, byID(dump)[r[0].Tid], "main.(*cache).lookup", 0); c != ro {
		t.Errorf("object %#x, the dump's cache (lookup's receiver) is %#x", ro, c)
	}
	// The receivers, read live, are the dump's (the string keys and the
	// func are no pointers).
	checkLiveArgs(t, r[0], byID(dump)[r[0].Tid], "main.(*cache).lookup", map[string]int{"c": 0})
	checkLiveArgs(t, r[0], byID(dump)[r[0].Tid], "main.(*cache).get", map[string]int{"c": 0})
	checkLiveArgs(t, w[0], byID(dump)[w[0].Tid], "main.(*cache).set", map[string]int{"c": 0})
	compareWithDump(t, live, dump)
}

// TestGoWaitGroup: main waits in sync.WaitGroup.Wait on the WaitGroup
// the dump prints as Wait's receiver.
func TestGoWaitGroup(t *testing.T) {
	p := startGo(t, "waitgroup")
	live := attachGo(t, p.Pid, attach.Options{})
	dump := sigquitDump(t, p)
	ws := withStatus(live, "sync.WaitGroup.Wait")
	if len(ws) != 1 || ws[0].Tid != 1 {
		t.Fatalf("goroutines in sync.WaitGroup.Wait: %v, want main (1)", ws)
	}
	if wg := dumpArg(t, byID(dump)[1], "sync.(*WaitGroup).Wait", 0); ws[0].Goroutine().Object != wg {
		t.Errorf("object %#x, the dump's WaitGroup is %#x", ws[0].Goroutine().Object, wg)
	}
	compareWithDump(t, live, dump)
}

// TestGoChanSend: fetch waits in "chan send" on the channel the dump
// prints as runtime.chansend's first argument.
func TestGoChanSend(t *testing.T) {
	p := startGo(t, "chansend")
	live := attachGo(t, p.Pid, attach.Options{})
	dump := sigquitDump(t, p)
	cs := withStatus(live, "chan send")
	if len(cs) != 1 {
		t.Fatalf("%d goroutines in chan send, want 1", len(cs))
	}
	g := cs[0]
	if frameIndex(g.Stack, "main.fetch") < 0 || g.Goroutine().CreatedBy.Func != "main.get" {
		t.Errorf("chan send goroutine: want main.fetch created by main.get: created by %+v, %+v", g.Goroutine().CreatedBy, g.Stack)
	}
	if c := dumpArg(t, byID(dump)[g.Tid], "runtime.chansend", 0); g.Goroutine().Object != c {
		t.Errorf("object %#x, the dump's channel is %#x", g.Goroutine().Object, c)
	}
	compareWithDump(t, live, dump)
}

// TestGoLeak: every one of the 10,000 leaked goroutines is read, parked in select, created
// by the server's handler in main.go, by goroutine 1.
func TestGoLeak(t *testing.T) {
	const requests = 10000
	p := startGo(t, "leak", fmt.Sprintf("HANGDOC_LEAK_N=%d", requests))
	live := attachGo(t, p.Pid, attach.Options{Samples: 1})
	want := patient.GoSourceLine(t, "leak", "go func() {")
	leaked := 0
	for _, th := range live.Threads {
		g := th.Goroutine()
		if g.CreatedBy.Func != "main.(*server).handle" {
			continue
		}
		leaked++
		if g.Status != "select" || g.CreatedBy.Line != want || !strings.HasSuffix(g.CreatedBy.File, "leak/main.go") || g.CreatedByID != 1 {
			t.Fatalf("goroutine %d: %s, created by %s:%d in %d; want select, created at leak/main.go:%d in 1",
				g.ID, g.Status, g.CreatedBy.File, g.CreatedBy.Line, g.CreatedByID, want)
		}
		if frameIndex(th.Stack, "main.(*server).handle.func1") < 0 {
			t.Fatalf("goroutine %d: no main.(*server).handle.func1 frame: %+v", g.ID, th.Stack)
		}
	}
	if leaked != requests {
		t.Fatalf("%d leaked goroutines read (of %d goroutines), want one per request: %d", leaked, len(live.Threads), requests)
	}
	t.Logf("%d goroutines, %d leaked", len(live.Threads), leaked)
}

// TestGoThreads: with Threads set, the OS threads come too, each with a
// stack (the Go scheduler's, as delve unwinds it).
func TestGoThreads(t *testing.T) {
	p := startGo(t, "abba")
	live := attachGo(t, p.Pid, attach.Options{Samples: 2, Interval: 10 * time.Millisecond, Threads: true})
	tasks, err := p.Tasks()
	if err != nil {
		t.Fatal(err)
	}
	if len(live.OSThreads) != len(tasks) {
		t.Fatalf("%d OS threads read, /proc lists %d", len(live.OSThreads), len(tasks))
	}
	for _, th := range live.OSThreads {
		if _, ok := tasks[th.Tid]; !ok || len(th.Stack) == 0 || len(th.Samples()) != 2 || th.Goroutine() != nil {
			t.Errorf("OS thread %d: %d frames, %d samples (in /proc: %v)", th.Tid, len(th.Stack), len(th.Samples()), ok)
		}
	}
	without := attachGo(t, p.Pid, attach.Options{Samples: 1})
	if len(without.OSThreads) != 0 {
		t.Errorf("without Threads: %d OS threads", len(without.OSThreads))
	}
}

// TestGoExitMidSample: a Go process that exits while it is sampled gives
// what was read before, marked exited, and no error.
func TestGoExitMidSample(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.BuildGo(t, "panicker"))
	asked := false
	askPanic := func(sample, samples, threads, processes int) {
		if sample == 2 && !asked {
			asked = true
			p.Signal(syscall.SIGUSR1) // it panics and exits
		}
	}
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 50, Interval: 20 * time.Millisecond, Progress: askPanic})
	ws := p.Wait(t, 10*time.Second)
	if err != nil {
		t.Fatalf("attach across the exit: %v", err)
	}
	proc := snap.Processes[0]
	if !proc.Exited || len(proc.Threads) == 0 || proc.Threads[0].Goroutine() == nil {
		t.Fatalf("exited %v, %d goroutines: want the goroutines read before the exit, marked exited (notes %v)", proc.Exited, len(proc.Threads), proc.Notes)
	}
	// os/signal's goroutine (runtime.ensureSigM) locks itself to its
	// thread; the program's own goroutines do not.
	locked := 0
	for _, th := range proc.Threads {
		g := th.Goroutine()
		switch {
		case g.CreatedBy.Func == "runtime.ensureSigM" && !g.LockedToThread:
			t.Errorf("goroutine %d (runtime.ensureSigM.func1) not locked to its thread", g.ID)
		case strings.HasPrefix(g.CreatedBy.Func, "main.") && g.LockedToThread:
			t.Errorf("goroutine %d, created by %s, locked to a thread", g.ID, g.CreatedBy.Func)
		}
		if g.LockedToThread {
			locked++
		}
	}
	if locked != 1 {
		t.Errorf("%d goroutines locked to their thread, want 1 (os/signal's)", locked)
	}
	if ws.ExitStatus() != 2 {
		t.Fatalf("patient: %v, want exit status 2", ws)
	}
	t.Logf("%d goroutines, %d samples before the exit; notes %v", len(proc.Threads), len(proc.Threads[0].Samples()), proc.Notes)
}

// go119 is Debian's Go 1.19 (golang-1.19-go, installed by
// scripts/install-deps.sh): a runtime from before Go 1.20, whose sync
// waits all say "semacquire".
const go119 = "/usr/lib/go-1.19/bin/go"

// TestGoOldRuntime: a program built with Go 1.19 is read goroutine by
// goroutine too; the frames tell which sync wait a "semacquire" is, so
// the objects are found and the ABBA is named as on a current Go.
func TestGoOldRuntime(t *testing.T) {
	patient.RequirePtrace(t)
	patient.RequireTool(t, go119)
	p := patient.StartGo(t, patient.BuildGoWith(t, go119, "abba"))
	live := attachGo(t, p.Pid, attach.Options{})
	if !strings.HasPrefix(live.Runtime, "go1.19") {
		t.Fatalf("runtime %q, want go1.19", live.Runtime)
	}
	var objs []uint64
	for _, th := range live.Threads {
		if th.Goroutine().Status == "semacquire" && stacks.GoWaitOf(th.Stack).Kind == stacks.GoWaitMutex {
			objs = append(objs, th.Goroutine().Object)
		}
	}
	if len(objs) != 2 || objs[0] == 0 || objs[1] == 0 || objs[0] == objs[1] {
		t.Fatalf("mutex waits' objects %#x, want two different addresses", objs)
	}
	ds := heuristics.Diagnose(&stacks.Snapshot{Schema: stacks.Schema, Source: "attach", Samples: 2, Processes: []*stacks.Process{live}}, heuristics.Options{}).Diagnoses
	if len(ds) == 0 || ds[0].ID != "lock-order-cycle" || ds[0].Confidence != heuristics.Medium {
		t.Fatalf("diagnosis %v, want lock-order-cycle at medium", ds)
	}
}
