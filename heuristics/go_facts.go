package heuristics

// Facts about goroutines that the Go signatures share (go_*.go): what
// each goroutine waits on (from its frames, else its status), whether it
// is one of the runtime's own, and which mutexes it may hold. Go mutexes
// record no owner, so "may hold" is inferred from the arguments a dump
// printed: a frame that received a pointer to the mutex, or to the
// struct it is a field of, and has not returned.

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// goRunning is the kind of a goroutine on a CPU, runnable or in a
// system call: it can still change something.
const goRunning = "running"

// goStatusKinds maps a goroutine status (the runtime's wait reason) to a
// wait kind, for stacks whose frames do not show it (a panic's dump hides
// the runtime's frames).
var goStatusKinds = map[string]string{
	"sync.Mutex.Lock":         stacks.GoWaitMutex,
	"sync.RWMutex.RLock":      stacks.GoWaitRLock,
	"sync.RWMutex.Lock":       stacks.GoWaitWLock,
	"sync.WaitGroup.Wait":     stacks.GoWaitWaitGroup,
	"sync.Cond.Wait":          stacks.GoWaitCond,
	"chan send":               stacks.GoWaitSend,
	"chan receive":            stacks.GoWaitRecv,
	"chan send (nil chan)":    stacks.GoWaitBlock,
	"chan receive (nil chan)": stacks.GoWaitBlock,
	"select":                  stacks.GoWaitSelect,
	"select (no cases)":       stacks.GoWaitBlock,
	"sleep":                   stacks.GoWaitSleep,
	"IO wait":                 stacks.GoWaitIO,
	"running":                 goRunning,
	"runnable":                goRunning,
	"syscall":                 goRunning,
	"preempted":               goRunning,
}

// gor is one goroutine as the Go signatures see it. What its stack and
// runtime facts say (gorFacts) is shared by the goroutines alike: 24
// bytes a goroutine, not 96, for a dump of 100,000 of them (its thread
// and runtime facts are read through ref, not kept twice).
type gor struct {
	ref ThreadRef
	*gorFacts
}

// gorFacts is what a goroutine's stack and runtime facts say of it;
// nobody writes into one once newGor made it.
type gorFacts struct {
	wait stacks.GoWait
	kind string // a stacks.GoWait* kind, goRunning, or "" (parked for the runtime, unknown)
	obj  uint64 // Runtime.Object
	// system: one of the runtime's own (GC workers, finalizers, the
	// scheduler's M stacks, the signal loop, `go test`'s alarm).
	system bool
}

// goProc is a process whose threads are goroutines.
type goProc struct {
	p   *stacks.Process
	all []*gor
	// byID orders all's indices by goroutine id (byTid), made on first
	// use; nil while all is in id order itself (a dump as the runtime
	// prints it): a map of every id cost 4 MB for 146,000 goroutines.
	byID    []int32
	indexed bool
	users   []*gor // user's answer
	// selfs are goSelfDeadlocks' findings, made on first use: several
	// signatures ask (self-deadlock, the asleep verdicts, left-locked).
	selfs     []goSelf
	selfsDone bool
}

// byTid returns the goroutine with id tid (the last one, if a process
// shows it twice), nil when there is none; id 0 names none.
func (gp *goProc) byTid(tid int) *gor {
	if tid == 0 {
		return nil
	}
	if !gp.indexed {
		gp.indexed = true
		if !slices.IsSortedFunc(gp.all, func(x, y *gor) int { return cmp.Compare(x.ref.Thread.Tid, y.ref.Thread.Tid) }) {
			gp.byID = make([]int32, len(gp.all))
			for i := range gp.byID {
				gp.byID[i] = int32(i)
			}
			slices.SortStableFunc(gp.byID, func(x, y int32) int { return cmp.Compare(gp.all[x].ref.Thread.Tid, gp.all[y].ref.Thread.Tid) })
		}
	}
	at := func(i int) *gor {
		if gp.byID != nil {
			return gp.all[gp.byID[i]]
		}
		return gp.all[i]
	}
	// the first index past tid, then one back: the last of its id
	i := sort.Search(len(gp.all), func(i int) bool { return at(i).ref.Thread.Tid > tid })
	if i > 0 && at(i-1).ref.Thread.Tid == tid {
		return at(i - 1)
	}
	return nil
}

// goProcs returns the processes of the snapshot whose threads are
// goroutines (a goroutine dump, a live read of a Go process), built
// once per snapshot: every Go signature reads them.
func goProcs(a *analysis) []*goProc {
	return result(a, "goProcs", buildGoProcs)
}

func buildGoProcs(a *analysis) []*goProc {
	var out []*goProc
	memo := map[gorKey]*gorFacts{}
	for _, p := range a.Snap.Processes {
		var gp *goProc
		var slab []gor // the process's gors, allocated at once
		for _, t := range p.Threads {
			if t.Goroutine() == nil {
				continue
			}
			if gp == nil {
				gp = &goProc{p: p, all: make([]*gor, 0, len(p.Threads))}
				slab = make([]gor, 0, len(p.Threads))
			}
			slab = append(slab, newGorMemo(p, t, memo))
			g := &slab[len(slab)-1]
			gp.all = append(gp.all, g)
		}
		if gp != nil {
			out = append(out, gp)
		}
	}
	return out
}

// fragment: the dump holds some goroutines of the program, not all: it
// prints goroutine ids (a goroutine dump) but not goroutine 1, which
// runs main for as long as the program lives, and no runtime message
// says it is whole. A paste of the stuck goroutine alone is one.
func (gp *goProc) fragment() bool {
	if gp.p.Message != "" || gp.byTid(1) != nil {
		return false
	}
	for _, g := range gp.all {
		if g.ref.Thread.Tid <= 0 {
			return false // ids not printed: completeness not known either way
		}
	}
	return len(gp.all) > 0
}

// gorKey is what a gor's facts depend on: the stack (by the identity
// of the []Frame a parser shares among equal stacks), the status, the go
// statement's function, a missing id, the object waited on.
type gorKey struct {
	stack   *stacks.Frame
	n       int
	status  string
	creator string
	noID    bool
	obj     uint64
}

// newGorMemo is newGor, reading the stack once for goroutines alike and
// sharing their facts.
func newGorMemo(p *stacks.Process, t *stacks.Thread, memo map[gorKey]*gorFacts) gor {
	if len(t.Stack) == 0 {
		return *newGor(p, t)
	}
	rt := t.Goroutine()
	k := gorKey{&t.Stack[0], len(t.Stack), rt.Status, rt.CreatedBy.Func, t.Tid == 0, rt.Object}
	if f, ok := memo[k]; ok {
		return gor{ref: ThreadRef{Proc: p, Thread: t}, gorFacts: f}
	}
	g := newGor(p, t)
	memo[k] = g.gorFacts
	return *g
}

func newGor(p *stacks.Process, t *stacks.Thread) *gor {
	f := &gorFacts{obj: t.Goroutine().Object}
	g := &gor{ref: ThreadRef{Proc: p, Thread: t}, gorFacts: f}
	f.wait = stacks.GoWaitOf(t.Stack)
	status := t.Goroutine().Status
	switch {
	case goStatusKinds[status] == goRunning:
		f.kind = goRunning
	case f.wait.Kind != "":
		f.kind = f.wait.Kind
	default:
		f.kind = goStatusKinds[status]
		if f.kind != "" {
			f.wait.Caller = 0 // the dump hid the wait's frames: the first one shown asked
		}
	}
	f.system = isSystemGoroutine(t)
	return g
}

// isSystemGoroutine: the runtime's own goroutines, which every Go
// program has and no user code waits for.
func isSystemGoroutine(t *stacks.Thread) bool {
	if t.Tid == 0 && t.Goroutine().Status != "" {
		return true // an M's scheduler stack (GOTRACEBACK=system, crash); a goroutine whose header a paste cut has no status
	}
	if strings.HasPrefix(t.Goroutine().CreatedBy.Func, "runtime.") {
		return true // GC workers, sweeper, scavenger, finalizers, forcegc
	}
	user := false
	for _, f := range t.Stack {
		switch {
		case f.Func == "os/signal.loop", strings.HasPrefix(f.Func, "testing.(*M).startAlarm"):
			return true
		case !strings.HasPrefix(f.Func, "runtime."):
			user = true
		}
	}
	return !user && len(t.Stack) > 0
}

// user returns the goroutines that are not the runtime's, listed once
// per snapshot (the Go signatures ask many times); nobody writes to it.
func (gp *goProc) user() []*gor {
	if gp.users == nil {
		gp.users = make([]*gor, 0, len(gp.all)) // grown, 1.65 MB of garbage at 47,000 goroutines
		for _, g := range gp.all {
			if !g.system {
				gp.users = append(gp.users, g)
			}
		}
		gp.users = slices.Clip(gp.users)
	}
	return gp.users
}

// blockedForever: parked on something only another goroutine can end (a
// sync object, a channel, a select), as opposed to a timer, the network
// poller or a CPU.
func (g *gor) blockedForever() bool {
	switch g.kind {
	case stacks.GoWaitMutex, stacks.GoWaitRLock, stacks.GoWaitWLock, stacks.GoWaitWaitGroup, stacks.GoWaitCond,
		stacks.GoWaitSend, stacks.GoWaitRecv, stacks.GoWaitSelect, stacks.GoWaitBlock:
		return true
	}
	return false
}

// parkedUnknown: parked in the runtime for a reason the dump hides (a
// debug=1 profile's "waiting", its runtime frames cut): many at one
// place are a pile, though no one of them says it is blocked for ever.
func (g *gor) parkedUnknown() bool {
	return g.kind == "" && g.rt().Status == "waiting"
}

func (g *gor) label() string {
	if g.ref.Thread.Tid == 0 {
		return "the goroutine whose header the paste cut"
	}
	return goroutineLabel(g.ref.Thread)
}

// place is the function a goroutine is parked in, past the runtime's and
// sync's frames: where goroutines that pile up are alike.
func (g *gor) place() string {
	for i := min(g.wait.Caller, len(g.ref.Thread.Stack)); i < len(g.ref.Thread.Stack); i++ {
		if fn := g.ref.Thread.Stack[i].Func; fn != "" && !stacks.GoMachineryFrame(fn) {
			return fn
		}
	}
	for _, f := range g.ref.Thread.Stack {
		if f.Func != "" && !stacks.GoMachineryFrame(f.Func) {
			return f.Func
		}
	}
	return ""
}

// callerFrame is the frame that asked to wait (the code that called
// Lock, sent, waited), or the innermost frame when none is known.
func (g *gor) callerFrame() (stacks.Frame, bool) {
	st := g.ref.Thread.Stack
	switch {
	case g.wait.Caller < len(st):
		return st[g.wait.Caller], true
	case len(st) > 0:
		return st[0], true
	}
	return stacks.Frame{}, false
}

// where is "`main.(*bank).transfer` at /src/main.go:37": the code that
// waits.
func (g *gor) where() string {
	f, ok := g.callerFrame()
	if !ok {
		return "(no stack)"
	}
	return frameAt(f)
}

// frameAt is "`fn` at file:line".
func frameAt(f stacks.Frame) string {
	s := "`" + frameName(f) + "`"
	if f.File != "" {
		s += fmt.Sprintf(" at %s:%d", f.File, f.Line)
	}
	return s
}

// objText names a waited object: "mutex 0xc000012345", "mutex (address
// not known)": a dump may not print it, a live read may not find it.
func objText(what string, obj uint64) string {
	if obj == 0 {
		return what + " (address not known)"
	}
	return fmt.Sprintf("%s %#x", what, obj)
}

// kindNoun names what a wait kind waits on.
func kindNoun(kind string) string {
	switch kind {
	case stacks.GoWaitMutex:
		return "sync.Mutex"
	case stacks.GoWaitRLock, stacks.GoWaitWLock:
		return "sync.RWMutex"
	case stacks.GoWaitWaitGroup:
		return "sync.WaitGroup"
	case stacks.GoWaitCond:
		return "sync.Cond"
	case stacks.GoWaitSend, stacks.GoWaitRecv:
		return "channel"
	}
	return kind
}

// waitText says what a goroutine does: "waits to lock sync.Mutex 0x… in
// `main.f` at main.go:12".
func (g *gor) waitText() string {
	var s string
	switch g.kind {
	case stacks.GoWaitMutex:
		s = "waits to lock " + objText("sync.Mutex", g.obj)
	case stacks.GoWaitRLock:
		s = "waits to read-lock " + objText("sync.RWMutex", g.obj)
	case stacks.GoWaitWLock:
		s = "waits to write-lock " + objText("sync.RWMutex", g.obj)
	case stacks.GoWaitWaitGroup:
		s = "waits in Wait on " + objText("sync.WaitGroup", g.obj)
	case stacks.GoWaitCond:
		s = "waits on a sync.Cond"
	case stacks.GoWaitSend:
		s = "waits to send on " + objText("channel", g.obj)
	case stacks.GoWaitRecv:
		s = "waits to receive from " + objText("channel", g.obj)
	case stacks.GoWaitSelect:
		s = "waits in a select"
	case stacks.GoWaitBlock:
		s = "is parked for ever (" + g.rt().Status + ")"
	case stacks.GoWaitSleep:
		s = "sleeps"
	case stacks.GoWaitIO:
		s = "waits on the network poller"
	case goRunning:
		s = "is " + g.rt().Status
	default:
		s = "is parked (" + g.rt().Status + ")"
	}
	s += " in " + g.where()
	if m := g.rt().WaitMinutes; m > 0 {
		s += fmt.Sprintf(", for %d minutes or more", m)
	}
	return s
}

// goStackLine shows a goroutine's user frames from the one that waits,
// for the evidence.
func (g *gor) stackLine() string {
	return g.label() + " [" + g.rt().Status + "]: " + goUserFrames(g.ref.Thread.Stack, g.wait.Caller, 4)
}

// goUserFrames renders up to n frames from index from: "f (file:line) ← g".
func goUserFrames(st []stacks.Frame, from, n int) string {
	if from >= len(st) {
		from = 0
	}
	var parts []string
	for _, f := range st[from:] {
		if f.Func == "runtime.goexit" || f.Func == "runtime.main" {
			continue
		}
		if len(parts) == n {
			parts = append(parts, "…")
			break
		}
		s := frameName(f)
		if f.File != "" {
			s += fmt.Sprintf(" (%s:%d)", shortPath(f.File), f.Line)
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no stack"
	}
	return strings.Join(parts, " ← ")
}

// shortPath keeps the last two elements of a path: "abba/main.go".
func shortPath(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return p
	}
	if j := strings.LastIndexByte(p[:i], '/'); j >= 0 {
		return p[j+1:]
	}
	return p
}

// goStructSpan is how far past a pointer argument a mutex may lie and
// still be taken for a field of the struct it points to.
const goStructSpan = 256

// holdEvidence is why a goroutine may hold a sync object.
type holdEvidence struct {
	frame int    // the frame that received the pointer
	arg   uint64 // the pointer
	exact bool   // the pointer is the object's own address
}

func (h holdEvidence) text(g *gor, obj uint64) string {
	f := g.ref.Thread.Stack[h.frame]
	rel := "the object itself"
	if !h.exact {
		rel = fmt.Sprintf("%#x bytes before it: the struct it is a field of", obj-h.arg)
	}
	return fmt.Sprintf("%s has not returned from %s, which received %#x (%s)", g.label(), frameAt(f), h.arg, rel)
}

// mayHold reports whether goroutine g may hold obj: one of its frames
// from from on (frames that have not returned) received a pointer to
// obj or to a struct within goStructSpan bytes before it. Values the
// runtime marked unreliable ("0x…?") do not count. An exact pointer wins
// over a nearby one; the outermost frame that has one wins among those,
// as it is the one most likely to have taken the lock for the others.
func mayHold(g *gor, obj uint64, from int) (holdEvidence, bool) {
	if obj == 0 {
		return holdEvidence{}, false
	}
	var best holdEvidence
	found := false
	for i := max(from, 0); i < len(g.ref.Thread.Stack); i++ {
		f := g.ref.Thread.Stack[i]
		if stacks.GoMachineryFrame(f.Func) {
			continue
		}
		for _, a := range f.Args {
			p, ok := goPointerArg(a)
			if !ok || p > obj || obj-p >= goStructSpan {
				continue
			}
			h := holdEvidence{frame: i, arg: p, exact: p == obj}
			if !found || h.exact && !best.exact || h.exact == best.exact {
				best, found = h, true
			}
		}
	}
	return best, found
}

// goPointerArg is an argument word a dump printed exactly ("0xc0000…",
// not "0xc0000…?", not a brace group); small values are not pointers.
func goPointerArg(a stacks.Arg) (uint64, bool) {
	if !a.Exact || a.Addr < 1<<16 {
		return 0, false
	}
	return a.Addr, true
}

// nameGoroutines is name for goroutines: their ids are Diagnosis.Tids,
// in the order given.
func (d *Diagnosis) nameGoroutines(gs ...*gor) {
	nameBy(d, gs, func(g *gor) ThreadRef { return g.ref })
}

// goDeadlockClaims reports whether a Go deadlock signature names a
// goroutine of process p: the verdicts that are not a deadlock
// (progressing, io-wait, sleeping) then leave it alone.
func goDeadlockClaims(a *analysis, p *stacks.Process) bool {
	for _, gp := range goProcs(a) {
		if gp.p != p {
			continue
		}
		return len(goLockCycles(gp)) > 0 || len(goSelfDeadlocks(gp)) > 0 || len(goOrphanedChannels(gp)) > 0 ||
			len(goStuckWaitGroups(gp)) > 0 || goAsleep(gp) != nil
	}
	return false
}

// goWaitKind is the kind of wait the non-lock verdicts (nonlock.go) see
// in a goroutine: its status says it better than its frames, which have
// no libc call to name.
func goWaitKind(t *stacks.Thread) (waitKind, string, bool) {
	if t.Goroutine() == nil {
		return wkUnknown, "", false
	}
	switch k := newGor(nil, t).kind; k {
	case goRunning:
		return wkRunning, "", true
	case stacks.GoWaitIO:
		return wkIO, "netpoll", true
	case stacks.GoWaitSleep:
		return wkSleep, "time.Sleep", true
	case "":
		return wkOther, "", true
	default:
		return wkFutex, t.Goroutine().Status, true
	}
}

// goroutineDiagnosis: a diagnosis that names goroutines.
func goroutineDiagnosis(a *analysis, d Diagnosis) bool {
	if len(d.Tids) == 0 {
		return false
	}
	r, ok := a.DiagThread(&d, d.Tids[0])
	return ok && r.Thread.Goroutine() != nil
}

// runtimeMessage is what the runtime said with its dump when it says
// something about the hang ("fatal error: all goroutines are asleep",
// "panic: test timed out"); not the signal that asked for the dump.
func runtimeMessage(p *stacks.Process) string {
	if strings.HasPrefix(p.Message, "SIG") {
		return ""
	}
	return p.Message
}

// perGoProc runs find over each Go process of the snapshot and turns
// each finding into a diagnosis.
func perGoProc[T any](a *analysis, find func(*goProc) []T, diagnose func(*goProc, T) Diagnosis) []Diagnosis {
	var ds []Diagnosis
	for _, gp := range goProcs(a) {
		for _, f := range find(gp) {
			ds = append(ds, diagnose(gp, f))
		}
	}
	return ds
}

// rt is the goroutine's runtime facts (its status, its creator).
func (x *gor) rt() *stacks.RuntimeThread { return x.ref.Thread.Runtime }
