package stacks

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// Delve's terminal output (dlv attach, dlv core, dlv debug): the
// goroutine list of `goroutines` and `goroutines -t` and the stacks of
// `bt` and `stack -full`, as delve v1.27 prints them (service/api
// PrintStack and the terminal's formatGoroutine):
//
//	(dlv)   Goroutine 19 - User: /src/sync/mutex.go:46 sync.(*Mutex).Lock (0x499d7f) [sync.Mutex.Lock 11215473547171]
//		0  0x00000000004896b1 in runtime.gopark
//		    at /usr/local/go/src/runtime/proc.go:463
//	[11 goroutines]
//	(dlv) Switched from 0 to 19 (thread 1535)
//	(dlv) 0  0x000000000047de6e in runtime.gopark
//	   at /usr/local/go/src/runtime/proc.go:463
//	       m = ("*internal/sync.Mutex")(0x38105ec8a080)
//
// Each goroutine becomes a Thread as the runtime's own dump gives it
// (Tid the goroutine id, Runtime.Status the wait reason in brackets).
// The number after the wait reason is the runtime's clock when the wait
// began, not how long it lasted: no wait times (an older delve printed a
// duration: Runtime.WaitMinutes). Without brackets a
// goroutine was not waiting: "running" when it is on a thread, else
// "runnable". Delve prints an inlined call with the PC of the frame it
// was inlined into: such frames are Inlined. `stack -full` prints
// arguments and locals under each frame; pointers among them become
// Args ("0x38105ec8a080"), so the mutex a goroutine waits for is
// Runtime.Object as in a runtime dump. A `goroutines` list without -t
// gives one location per goroutine (its topmost user frame), said in a
// note. A goroutine shown twice with its stack, or a second dlv session,
// is another process.

func init() {
	registerFormat(&Format{Name: "delve", Sniff: sniffDelve, Parse: ParseDelve, Begins: beginsDelve})
}

var (
	dlvHeaderRE = lazyre.New(`^(?:\* )?Goroutine (\d+) - (?:User|Runtime|Go|Start): (\S+):(\d+) (\S+) \(0x([0-9a-f]+)\)(?: \(thread (\d+)\))?(?: \[(.+)\])?$`)
	dlvFrameRE  = lazyre.New(`^(\d+)\s+0x([0-9a-f]+) in (\S.*)$`)
	dlvAtRE     = lazyre.New(`^at (\S.*):(\d+)$`)
	dlvVarRE    = lazyre.New(`^([A-Za-z_~.][\w.~#]*) = (.+)$`)
	dlvTotalRE  = lazyre.New(`^\[(\d+) goroutines\]$`)
	dlvSwitchRE = lazyre.New(`^Switched from -?\d+ to (\d+) \(thread \d+\)$`)
	dlvPtrRE    = lazyre.New(`^\((?:"[^"]+"|[^()]+)\)\((0x[0-9a-f]+)\)$`)
	// the wait began at this time of the runtime's clock (delve v1.2x),
	// or as a duration of that clock (older delve)
	dlvSinceRE = lazyre.New(` (?:\d+|\d[\d.hmsuµn]*s)$`)
	dlvSniffRE = lazyre.New(`(?m)^[\s>]*(?:\(dlv\) )?(?:\* )?Goroutine \d+ - (?:User|Runtime|Go|Start): \S+:\d+ |^[\s>]*(?:\(dlv\) )?\d+\s+0x[0-9a-f]{16} in \S+\r?\n[\s>]*at \S+:\d+`)
)

// dlvChatter are lines of dlv's own talk around the output read.
var dlvChatter = []string{"Command failed: ", "Process ", "exit", "detach", "Labels: ", "frame: ", "defer ", "deferred by "}

func sniffDelve(head []byte) int {
	return 3 * len(dlvSniffRE.FindAllIndex(sniffText(head), 40))
}

func beginsDelve(t, next string) bool {
	// dlv's prompt is its own
	return t == "Type 'help' for list of commands." || strings.HasPrefix(t, "(dlv) ") ||
		(t[0] == 'G' || t[0] == '*') && strings.Contains(t, "Goroutine ") && dlvHeaderRE.MatchString(t)
}

// maxDelveFrames bounds one stack (delve prints 50 by default).
const maxDelveFrames = 4096

// ParseDelve reads delve's goroutine lists and stacks (see above).
func ParseDelve(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &dlvParser{switched: -1}
	readErr := scanTextLines(r, p.line)
	p.endProcess()
	var snap *Snapshot
	if len(p.procs) > 0 {
		snap = &Snapshot{Schema: Schema, Source: "delve", Samples: 1, Processes: p.procs}
		snap.Evidence.Arguments = p.anyArgs
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "empty input: no delve output",
			`not delve output: no goroutine ("Goroutine 1 - User: …") or frame ("0  0x… in main.main" over "at file.go:12")`)
	})
	return snap, p.track.skipped.list, err
}

type dlvParser struct {
	track    lineTrack
	procs    []*Process
	proc     *Process
	byID     map[int]*Thread
	listed   map[*Thread]Frame // goroutines of a list without -t: their one location
	cur      *Thread
	frames   []Frame
	frameInd int // indent of the last frame line, so its variables are told from a new frame
	switched int // the goroutine `goroutine N` switched to, -1 none
	total    int // what "[N goroutines]" counted, 0 when not said
	anyArgs  bool
}

func (p *dlvParser) line(l textLine) {
	if !p.track.next(l) {
		return
	}
	t := l.text
	for strings.HasPrefix(t, "(dlv)") {
		t = strings.TrimSpace(strings.TrimPrefix(t, "(dlv)"))
	}
	if t == "" {
		return
	}
	if t == "Type 'help' for list of commands." || strings.HasPrefix(t, "Would you like to kill the process?") {
		p.endProcess() // a session begins or ends: another process
		return
	}
	if m := dlvHeaderRE.FindStringSubmatch(t); m != nil {
		p.header(m)
		return
	}
	if m := dlvFrameRE.FindStringSubmatch(t); m != nil {
		p.frame(m, l.indent)
		return
	}
	if m := dlvAtRE.FindStringSubmatch(t); m != nil && len(p.frames) > 0 {
		f := &p.frames[len(p.frames)-1]
		f.File = m[1]
		f.Line, _ = strconv.Atoi(m[2])
		return
	}
	if m := dlvVarRE.FindStringSubmatch(t); m != nil && len(p.frames) > 0 && l.indent > p.frameInd {
		f := &p.frames[len(p.frames)-1]
		v := m[2]
		if pm := dlvPtrRE.FindStringSubmatch(v); pm != nil {
			v = pm[1]
		}
		if strings.HasPrefix(v, "(unreadable ") {
			return // optimised away at this PC: nothing to keep
		}
		if len(v) > maxArgValue {
			v = v[:maxArgValue] + "…"
		}
		if len(f.Args) < maxArgs {
			f.Args = append(f.Args, NewArg(m[1], v))
			p.anyArgs = true
		}
		return
	}
	if m := dlvTotalRE.FindStringSubmatch(t); m != nil {
		p.endThread()
		p.total, _ = strconv.Atoi(m[1])
		return
	}
	if m := dlvSwitchRE.FindStringSubmatch(t); m != nil {
		p.endThread()
		p.switched, _ = strconv.Atoi(m[1])
		return
	}
	if strings.HasPrefix(t, "error: ") && p.cur != nil {
		p.note(p.cur, "delve could not read a frame: "+strings.TrimPrefix(t, "error: "))
		return
	}
	if t == "(truncated)" && p.cur != nil {
		p.note(p.cur, "the stack is cut at delve's depth: `goroutines -t 100` or `bt 100` prints more")
		return
	}
	for _, c := range dlvChatter {
		if strings.HasPrefix(t, c) {
			return
		}
	}
	p.track.skip(l.no, "not delve output")
}

// header starts the goroutine a header line names.
func (p *dlvParser) header(m []string) {
	p.endThread()
	id, _ := strconv.Atoi(m[1])
	line, _ := strconv.Atoi(m[3])
	pc, _ := strconv.ParseUint(m[5], 16, 64)
	loc := Frame{Func: m[4], File: m[2], Line: line, PC: pc}
	if p.proc == nil {
		p.startProcess()
	}
	if th := p.byID[id]; th != nil {
		if _, ok := p.listed[th]; !ok {
			// shown with its stack already: another dump, another process
			p.endProcess()
			p.startProcess()
		} else {
			p.cur = th // a list without -t, then the stacks
			return
		}
	}
	g := &RuntimeThread{Kind: KindGoroutine, ID: id}
	switch {
	case m[7] != "":
		g.Status = dlvSinceRE.ReplaceAllString(m[7], "")
		since := strings.TrimPrefix(m[7], g.Status+" ")
		if d, err := time.ParseDuration(strings.ReplaceAll(since, "µ", "u")); err == nil && since != m[7] {
			g.WaitMinutes = int(d.Minutes()) // an older delve's duration
		}
	case m[6] != "":
		g.Status = "running" // on a thread, no wait reason
	default:
		g.Status = "runnable"
	}
	th := &Thread{Tid: id, Name: fmt.Sprintf("goroutine %d", id), State: GoroutineState(g.Status), Runtime: g}
	p.add(th)
	p.listed[th] = loc
	p.cur = th
}

// frame adds a frame line; one outside a goroutine listing is a bt.
func (p *dlvParser) frame(m []string, indent int) {
	n, _ := strconv.Atoi(m[1])
	if p.cur != nil && n == 0 && len(p.frames) > 0 {
		p.endThread() // a second bt
	}
	if p.cur == nil {
		if p.proc == nil {
			p.startProcess()
		}
		p.cur = p.btThread()
	}
	pc, _ := strconv.ParseUint(m[2], 16, 64)
	if len(p.frames) < maxDelveFrames {
		p.frames = append(p.frames, Frame{Func: strings.TrimSpace(m[3]), PC: pc})
	}
	p.frameInd = indent
}

// btThread is the goroutine a bt prints: the one switched to, else the
// current one, which the output does not name.
func (p *dlvParser) btThread() *Thread {
	id := p.switched
	p.switched = -1
	if th := p.byID[id]; id >= 0 && th != nil {
		if _, ok := p.listed[th]; ok {
			return th
		}
		p.endProcess() // its stack was read: another process
		p.startProcess()
	}
	th := &Thread{Name: "current goroutine"}
	if id >= 0 {
		th = &Thread{Tid: id, Name: fmt.Sprintf("goroutine %d", id), Runtime: &RuntimeThread{Kind: KindGoroutine, ID: id}}
	}
	p.add(th)
	return th
}

func (p *dlvParser) add(th *Thread) {
	p.proc.Threads = append(p.proc.Threads, th)
	if th.Goroutine() != nil {
		p.byID[th.Tid] = th
	}
}

// endThread gives the goroutine being read its frames.
func (p *dlvParser) endThread() {
	th := p.cur
	p.cur = nil
	if th == nil {
		return
	}
	if len(p.frames) == 0 {
		if _, ok := p.listed[th]; ok && th.Stack == nil {
			th.Stack = []Frame{p.listed[th]}
		}
		return
	}
	st := append([]Frame(nil), p.frames...)
	p.frames = p.frames[:0]
	for i := 0; i+1 < len(st); i++ {
		st[i].Inlined = st[i].PC != 0 && st[i].PC == st[i+1].PC // delve gives an inlined call its caller's PC
	}
	th.Stack = st
	delete(p.listed, th)
	if g := th.Goroutine(); g != nil {
		if g.Status == "" {
			g.Status = goStatusOf(st)
			th.State = GoroutineState(g.Status)
		}
		g.Object = goWaitObject(st)
	}
}

func (p *dlvParser) note(th *Thread, n string) {
	for _, have := range th.Notes {
		if have == n {
			return
		}
	}
	if len(th.Notes) < 10 {
		th.Notes = append(th.Notes, n)
	}
}

func (p *dlvParser) startProcess() {
	p.proc = &Process{Threads: []*Thread{}, Runtime: "go"}
	p.byID = map[int]*Thread{}
	p.listed = map[*Thread]Frame{}
	p.total = 0
}

// endProcess files the process being read, if it has a goroutine.
func (p *dlvParser) endProcess() {
	p.endThread()
	pr := p.proc
	p.proc, p.switched = nil, -1
	if pr == nil || len(pr.Threads) == 0 {
		return
	}
	if n := len(p.listed); n > 0 {
		pr.Notes = append(pr.Notes, fmt.Sprintf("%d goroutines come from delve's `goroutines` list, which gives one location each (the topmost user frame): `goroutines -t` prints their stacks", n))
	}
	if p.total > len(pr.Threads) {
		pr.Notes = append(pr.Notes, fmt.Sprintf("delve counted %d goroutines and the paste holds %d: the rest is not in the paste", p.total, len(pr.Threads)))
	}
	for _, th := range pr.Threads {
		if th.Stack == nil {
			th.Stack = []Frame{}
		}
	}
	p.procs = append(p.procs, pr)
}
