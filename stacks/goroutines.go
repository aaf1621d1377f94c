package stacks

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unsafe"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// ParseGoroutines reads a Go goroutine dump into a snapshot: what a Go
// program prints on SIGQUIT (any GOTRACEBACK: "all", "system" with
// gp=/m= and fp=/sp=/pc=, "crash" with one section per M and register
// dumps), on a panic (`go test`'s "panic: test timed out after 10m0s"),
// on "fatal error: all goroutines are asleep - deadlock!", and what
// debug.Stack, runtime.Stack(buf, true) and pprof's goroutine profile
// with debug=2 write. Old (Go 1.19: "created by main.main", "semacquire")
// and new (Go 1.21 and later: "created by main.main in goroutine 1",
// "gp=0x… m=nil") layouts both read.
//
// Each dump becomes one Process (pid unknown: 0; Message holds the panic,
// fatal error or signal line); a file holding several dumps gives several
// processes. Each goroutine becomes one Thread: Tid is the goroutine id,
// Name "goroutine N", State the nearest Linux letter ("R" running or
// runnable, "S" waiting, in a syscall or idle), and Goroutine carries the
// wait reason, the minutes waited, "locked to thread" and the creating
// frame. Frame.Func is the Go name as printed ("sync.(*Mutex).Lock",
// "main.(*server).handle.func1", "main.Map[...]"; "panic" becomes
// runtime.gopanic, the function the runtime prints that way), File and
// Line come from the line under it, PC from its pc= when GOTRACEBACK
// shows it. The printed arguments go into Frame.Args, raw and unnamed
// ("0xc000012345", "{0x4b6f40?, 0x5350a0?}", "0x0?"): the receiver of
// sync.(*Mutex).lockSlow is the mutex's address, and Runtime.Object
// the address of the mutex, WaitGroup or channel the goroutine waits on
// when the arguments show it (goWaitObject). A frame printed with
// "(...)" was inlined into the frame below it (Frame.Inlined).
//
// Markdown fences, "> " quoting, terminal colours, CRLF, CI timestamps
// and prose around the dump are handled as for every text format; lines
// that are not part of a dump come back as Skipped ranges, and frames cut
// mid-line are kept with a note. The input is read one line at a time:
// memory grows with the goroutines kept, not with the input.
//
// The error is non-nil only when no goroutine could be read (it names the
// line), or when reading r failed (the snapshot then holds what came
// before).
func ParseGoroutines(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &goParser{intern: map[string]string{}}
	readErr := scanLinesAhead(r, p.line)
	p.eof()
	var snap *Snapshot
	if len(p.procs) > 0 {
		snap = &Snapshot{Schema: Schema, Source: "goroutines", Samples: 1, Processes: p.procs}
		snap.Evidence.Arguments = p.anyArgs
	}
	snap, err := readResult(snap, readErr, p.emptyError)
	return snap, p.skipped.list, err
}

// scanLinesAhead is scanTextLines with the lines read (and cleaned) in
// a goroutine of their own, a batch ahead of fn: on two cores reading
// and parsing a large dump overlap. Lines are strings, handed over as
// they are.
func scanLinesAhead(r io.Reader, fn func(textLine)) error {
	const batch = 512
	full := make(chan []textLine, 4)
	free := make(chan []textLine, 5)
	var err error
	go func() {
		defer close(full)
		sc := newLineScanner(r)
		for {
			var b []textLine
			select {
			case b = <-free:
				b = b[:0]
			default:
				b = make([]textLine, 0, batch)
			}
			for len(b) < batch {
				l, ok := sc.next()
				if !ok {
					err = sc.err
					if len(b) > 0 {
						full <- b
					}
					return
				}
				b = append(b, l)
			}
			full <- b
		}
	}()
	for b := range full {
		for _, l := range b {
			fn(l)
		}
		clear(b) // the lines are not kept by the batch once parsed
		select {
		case free <- b:
		default:
		}
	}
	return err // written before full was closed
}

// goPending is a line waiting for the location line under it.
type goPending struct {
	kind  int // goFrame, goCreatedBy, goBare
	no    int // its line number
	frame Frame
	cut   bool // the function line was cut mid-way
	text  string
	gid   int // goCreatedBy: "in goroutine N"
}

const (
	goFrame     = iota // "main.f(0x1)"
	goCreatedBy        // "created by main.main in goroutine 1"
	goBare             // a name without parentheses: a cgo symbolizer frame, or a frame cut before its '('
)

type goParser struct {
	procs    []*Process
	proc     *Process
	seen     map[int]*Thread // goroutine id → thread of proc (id 0 excluded: one per M)
	cur      *Thread         // goroutine being read; nil outside one
	drop     bool            // cur repeats a goroutine already read: read its lines, keep nothing
	cutFirst bool            // the input began inside a goroutine (cutGoroutine)
	frames   []Frame         // cur's frames so far; its Stack when the next goroutine starts
	pend     *goPending      // &pbuf while a line waits for its location, else nil
	pbuf     goPending

	ancestor     bool // in an "[originating from goroutine N]:" block of cur
	panicText    bool // after "panic:"/"fatal error:": indented lines belong to the message
	runningTests bool // after the "running tests:" of a `go test` timeout
	sawSep       bool // a "-----" in this dump (GOTRACEBACK=crash prints one section per M)
	sepLine      int  // the line of the last "-----": a signal line right after it continues the dump
	debug1       bool // a pprof debug=1 profile was seen

	skipped   skipList
	lastText  int // number of the last non-blank line
	prevText  int // number of the non-blank line before it
	firstText int
	anyArgs   bool

	intern map[string]string
	notes  map[string]bool // process notes already given, for proc
	stacks stackTable
	calls  memo[goCall]     // frame lines read so far (share.go): a pool's stack repeats them
	locs   memo[goLocation] // location lines read so far

	gbuf     RuntimeThread // the facts of the goroutine being read, cur.Runtime until it ends
	runtimes runtimeTable
	slab     threadSlab
	names    []byte // goroutine names are cut from it (goroutineName)
}

// goroutineName is "goroutine N", cut from a block of names shared by
// a few hundred goroutines: one allocation per block, not two a
// goroutine (the number, then the name). The block's bytes are never
// written again once a name covers them.
func (p *goParser) goroutineName(id int) string {
	const block = 4 << 10
	if cap(p.names)-len(p.names) < len("goroutine ")+20 {
		p.names = make([]byte, 0, block)
	}
	start := len(p.names)
	p.names = append(p.names, "goroutine "...)
	p.names = strconv.AppendInt(p.names, int64(id), 10)
	return unsafe.String(&p.names[start], len(p.names)-start)
}

// goCall is what parseGoCall read of a frame line.
type goCall struct {
	f            Frame
	args         []Arg
	complete, ok bool
}

func (p *goParser) parseCall(t string) goCall {
	f, args, complete, ok := parseGoCall(t)
	if ok {
		f.Func = p.str(f.Func)
	}
	return goCall{f, args, complete, ok}
}

// goLocation is what parseGoLocation read of a location line.
type goLocation struct {
	file string
	line int
	pc   uint64
	ok   bool
}

func (p *goParser) parseLocation(t string) goLocation {
	file, line, pc, ok := parseGoLocation(t)
	if ok {
		file = p.str(file)
	}
	return goLocation{file, line, pc, ok}
}

// goInternMax bounds the strings kept for sharing (function names and
// file paths repeat across goroutines; a garbled input must not grow
// the table without end).
const goInternMax = 1 << 16

func (p *goParser) str(s string) string {
	if v, ok := p.intern[s]; ok {
		return v
	}
	s = strings.Clone(s) // do not pin the whole line
	if len(p.intern) < goInternMax {
		p.intern[s] = s
	}
	return s
}

func (p *goParser) line(l textLine) {
	t := l.text
	if p.pend != nil {
		if p.location(l) {
			return
		}
		p.flushPending(false)
	}
	if t == "" {
		return
	}
	if p.firstText == 0 {
		p.firstText = l.no
	}
	p.dispatch(l)
	p.prevText, p.lastText = p.lastText, l.no
}

func (p *goParser) dispatch(l textLine) {
	t := l.text
	if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
		return
	}
	if p.panicText && l.indent == 0 {
		p.panicText, p.runningTests = false, false
	}
	switch {
	case strings.HasPrefix(t, "goroutine "):
		if p.header(l) {
			return
		}
		if strings.HasPrefix(t, "goroutine profile: total ") {
			p.debug1 = true
			p.skip(l.no, goDebug1Why)
			return
		}
		if t == "goroutine running on other thread; stack unavailable" && p.cur != nil {
			p.threadNote("stack unavailable: running on another thread when the dump was taken")
			return
		}
	case strings.HasPrefix(t, "created by "):
		if p.cur != nil {
			p.createdBy(l)
			return
		}
	case strings.HasPrefix(t, "[originating from goroutine "):
		if p.cur != nil {
			p.ancestor = true
			p.threadNote(strings.TrimSuffix(t, ":") + ": the ancestor's frames (GODEBUG=tracebackancestors) are not kept")
			return
		}
	case t == "...additional frames elided...":
		if p.cur != nil {
			if !p.ancestor {
				p.threadNote("frames elided by the runtime: the stack is deeper than the dump shows")
			}
			return
		}
	case strings.HasPrefix(t, "...") && strings.HasSuffix(t, " frames elided..."):
		if p.cur != nil {
			if !p.ancestor {
				p.threadNote(strings.Trim(t, ".") + " by the runtime between the frames shown")
			}
			return
		}
	case strings.HasPrefix(t, "non-Go function at pc="):
		if p.cur != nil {
			f := Frame{}
			f.PC, _ = strconv.ParseUint(strings.TrimPrefix(t[len("non-Go function at pc="):], "0x"), 16, 64)
			p.addFrame(f)
			return
		}
	}
	if p.cur == nil && p.proc == nil && len(p.procs) == 0 && l.indent == 0 {
		if f, _, _, ok := parseGoCall(t); ok && isGoFuncName(f.Func) {
			p.cutGoroutine(l)
		}
	}
	if p.cur != nil {
		if c := p.calls.get(t, p.parseCall); c.ok {
			f := c.f
			f.Args = c.args // shared by every frame of this text: nobody writes into them
			p.setPending(goPending{kind: goFrame, no: l.no, frame: f, cut: !c.complete || l.cut})
			return
		}
	}
	if p.meta(l) {
		return
	}
	if p.cur != nil && (isGoBareName(t) || isCIdent(t)) {
		p.setPending(goPending{kind: goBare, no: l.no, text: t, cut: l.cut})
		return
	}
	if p.debug1 && (t[0] == '#' || isDigit(t[0]) && strings.Contains(t, " @ 0x")) {
		p.skip(l.no, goDebug1Why)
		return
	}
	p.skip(l.no, "not a stack")
}

const goDebug1Why = "pprof goroutine profile with debug=1 (counts, no goroutines): take it with debug=2"

// location reads l as the location line of the pending frame ("\tFILE:LINE
// +0xOFF [fp=… sp=… pc=…]"); it reports whether it was one.
func (p *goParser) location(l textLine) bool {
	pd := p.pend
	var loc goLocation
	if strings.Contains(l.text, " fp=") {
		loc = p.parseLocation(l.text) // fp= and sp= differ from goroutine to goroutine: not kept
	} else {
		loc = p.locs.get(l.text, p.parseLocation)
	}
	file, line, pc, ok := loc.file, loc.line, loc.pc, loc.ok
	if !ok {
		if l.text == "" || pd.kind == goBare || l.indent == 0 || strings.ContainsAny(l.text, " (") {
			return false
		}
		// An indented path cut before its ":LINE" (a paste cut mid-line).
		file, ok = l.text, true
		pd.cut = true
	}
	if pd.kind == goBare {
		// A symbolised cgo frame ("name" over "\tfile:line pc=0x…"), or
		// a Go frame cut before its '(' over a location.
		if pc == 0 && !strings.HasSuffix(l.text, ")") && strings.Contains(l.text, " +0x") {
			pd.cut = true
		}
		pd.frame.Func = p.str(pd.text)
		if pd.text == "non-Go function" {
			pd.frame.Func = ""
		}
		pd.kind = goFrame
	}
	pd.frame.File = p.str(file)
	pd.frame.Line = line
	if pc != 0 {
		pd.frame.PC = pc
	}
	if l.cut {
		pd.cut = true
	}
	p.flushPending(true)
	p.prevText, p.lastText = p.lastText, l.no
	return true
}

func (p *goParser) setPending(pd goPending) {
	p.pbuf = pd
	p.pend = &p.pbuf
}

// flushPending keeps the pending frame or creator; located says whether
// its location line was read.
func (p *goParser) flushPending(located bool) {
	pd := p.pend
	p.pend = nil
	switch pd.kind {
	case goBare:
		// A name alone, with no location under it: not a frame, unless
		// it is the last thing in the input (a paste cut mid-line).
		p.skip(pd.no, "not a stack")
		return
	case goCreatedBy:
		if p.ancestor || p.drop || p.cur == nil || p.cur.Goroutine() == nil {
			return
		}
		g := p.cur.Goroutine()
		g.CreatedBy = pd.frame
		g.CreatedByID = pd.gid
		if pd.cut {
			p.threadNote(fmt.Sprintf("line %d: \"created by\" cut mid-way", pd.no))
		}
		return
	}
	if p.ancestor {
		return
	}
	if pd.cut {
		p.threadNote(cutFrame(pd.no, len(p.frames)))
	} else if !located {
		p.threadNote(fmt.Sprintf("line %d: frame #%d has no file:line under it", pd.no, len(p.frames)))
	}
	p.addFrame(pd.frame)
}

func (p *goParser) addFrame(f Frame) {
	if p.ancestor || p.drop || p.cur == nil {
		return
	}
	if len(f.Args) > 0 {
		p.anyArgs = true
	}
	p.frames = append(p.frames, f)
}

func (p *goParser) eof() {
	if p.pend != nil {
		if p.pend.kind == goBare && isGoFuncName(p.pend.text) {
			// The input ends on a Go name: a frame cut mid-line.
			p.pend.kind = goFrame
			p.pend.frame.Func = p.str(p.pend.text)
			p.pend.cut = true
		}
		p.flushPending(false)
	}
	p.endProcess()
}

// header reads "goroutine N [gp=0x… m=N|nil [mp=0x…]] [STATUS, N minutes,
// locked to thread]:"; it reports whether l was one.
func (p *goParser) header(l textLine) bool {
	t := l.text[len("goroutine "):]
	i := 0
	for i < len(t) && isDigit(t[i]) {
		i++
	}
	if i == 0 || i > 19 || i == len(t) || t[i] != ' ' {
		return false
	}
	id, err := strconv.Atoi(t[:i])
	if err != nil {
		return false
	}
	rest := t[i+1:]
	m, gp := "", strings.HasPrefix(rest, "gp=")
	for strings.HasPrefix(rest, "gp=") || strings.HasPrefix(rest, "m=") || strings.HasPrefix(rest, "mp=") {
		sp := strings.IndexByte(rest, ' ')
		if sp < 0 {
			rest = ""
			break
		}
		if strings.HasPrefix(rest, "m=") {
			m = rest[2:sp]
		}
		rest = rest[sp+1:]
	}
	cut := false
	if i := strings.Index(rest, "]:"); i > 0 && strings.HasPrefix(strings.TrimSpace(rest[i+2:]), "#") {
		rest = rest[:i+2] // a reader's "   # name" after the header
	}
	switch {
	case strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]:"):
		rest = rest[1 : len(rest)-2]
	case strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]"):
		rest = rest[1 : len(rest)-1] // pasted without the colon
	case strings.HasPrefix(rest, "[") && !strings.Contains(rest, "]"):
		rest, cut = rest[1:], true
	case rest == "" && l.cut:
		cut = true
	default:
		return false
	}
	gv := RuntimeThread{Kind: KindGoroutine}
	parseGoStatus(rest, &gv)
	gv.Status = p.str(gv.Status) // a few statuses, each kept once, not the header line under each

	if p.pend != nil {
		p.flushPending(false)
	}
	p.setCur(nil, false)
	// The goroutine's runtime facts are gathered in p.gbuf until it ends
	// (setCur), then shared with the goroutines alike.
	p.gbuf = gv
	g := &p.gbuf
	p.ancestor, p.panicText = false, false
	p.skipped.close()
	if p.proc == nil {
		p.startProcess()
	}
	if old := p.seen[id]; old != nil && id != 0 {
		switch {
		case len(old.Stack) == 0 && len(old.Notes) <= 1:
			// Printed first without its stack ("running on other
			// thread"); the crash section of its M prints it in full.
			old.Notes = nil
			old.Runtime = g
			old.State = GoroutineState(g.Status)
			p.setCur(old, false)
			return true
		case p.sawSep && gp:
			// GOTRACEBACK=crash prints a goroutine again under its M.
			p.setCur(old, true)
			return true
		default:
			// The same goroutine again: a second dump in the same input.
			p.endProcess()
			p.startProcess()
		}
	}
	th := p.slab.next()
	*th = Thread{Tid: id, Name: p.goroutineName(id), State: GoroutineState(g.Status), Runtime: g}
	if id == 0 && m != "" && m != "nil" {
		th.Name += " (m" + m + ")" // the scheduler stack of one M
	}
	p.proc.Threads = append(p.proc.Threads, th)
	if id != 0 {
		p.seen[id] = th
	}
	p.setCur(th, false)
	if cut {
		p.threadNote(fmt.Sprintf("line %d: goroutine header cut mid-way", l.no))
	}
	return true
}

// parseGoStatus reads what is between the brackets of a goroutine
// header: "sync.Mutex.Lock, 12 minutes, locked to thread".
func parseGoStatus(s string, g *RuntimeThread) {
	if i := strings.Index(s, " labels:{"); i >= 0 {
		s = s[:i] // pprof labels (GODEBUG=tracebacklabels=1) come last
	}
	// Cut, not Split: a header is read per goroutine, and most hold one
	// part or two.
	status, rest, more := strings.Cut(s, ", ")
	status = strings.Replace(status, " (scan)", "", 1) // a GC artefact of the moment
	var later []string                                 // parts of the status after the first, rare: joined once
	for more {
		var part string
		part, rest, more = strings.Cut(rest, ", ")
		switch {
		case strings.HasSuffix(part, " minutes"):
			if n, err := strconv.Atoi(strings.TrimSuffix(part, " minutes")); err == nil && n >= 0 {
				g.WaitMinutes = n
			}
		case part == "locked to thread":
			g.LockedToThread = true
		case strings.HasPrefix(part, "synctest bubble "):
		default:
			later = append(later, part) // a status of a later Go: kept whole
		}
	}
	if len(later) > 0 {
		status += ", " + strings.Join(later, ", ")
	}
	g.Status = status
}

// GoroutineState is the Linux state letter nearest a goroutine status:
// what a goroutine dump and a live read of a Go process give as
// Thread.State.
func GoroutineState(status string) string {
	switch status {
	case "running", "runnable", "preempted", "copystack":
		return "R"
	case "dead":
		return "X"
	}
	return "S"
}

func (p *goParser) createdBy(l textLine) {
	if p.pend != nil {
		p.flushPending(false)
	}
	t := l.text[len("created by "):]
	pd := goPending{kind: goCreatedBy, no: l.no, cut: l.cut}
	if i := strings.LastIndex(t, " in goroutine "); i > 0 {
		if n, err := strconv.Atoi(t[i+len(" in goroutine "):]); err == nil && n >= 0 {
			pd.gid = n
			t = t[:i]
		}
	}
	pd.frame.Func = p.str(goFuncName(t))
	p.setPending(pd)
}

// meta handles what surrounds the goroutines of a dump; it reports
// whether the line was understood.
func (p *goParser) meta(l textLine) bool {
	t := l.text
	switch {
	case p.panicText && l.indent > 0:
		// "\trunning tests:", "\t\tTestStore (2s)", "\tpanic: …" of a
		// panic while panicking.
		switch {
		case t == "running tests:":
			p.runningTests = true
		case p.runningTests:
			p.procNote("running test: " + t)
		default:
			p.procNote(t)
		}
		return true
	case strings.HasPrefix(t, "SIG") && isGoSignalLine(t):
		if p.proc != nil && len(p.proc.Threads) > 0 && (p.sepLine == 0 || p.sepLine != p.lastText) {
			p.endProcess()
		}
		p.message(t)
		p.setCur(nil, false)
		return true
	case goleakRE.MatchString(t) || strings.HasSuffix(t, "found unexpected goroutines:"):
		// go.uber.org/goleak's report: the goroutines a test left behind
		p.message(GoLeakMessage)
		return true
	case strings.HasPrefix(t, "PC=0x") && strings.Contains(t, " m="):
		return true // where the signal found the M that printed the dump
	case strings.HasPrefix(t, "[signal ") && strings.HasSuffix(t, "]"):
		if p.proc != nil {
			p.procNote(t)
		}
		return true
	case t == "-----":
		p.sawSep, p.sepLine = true, l.no
		p.setCur(nil, false)
		return true
	case strings.HasPrefix(t, "panic: "), strings.HasPrefix(t, "fatal error: "),
		strings.HasPrefix(t, "fatal: morestack on "):
		if p.proc != nil && len(p.proc.Threads) > 0 {
			p.endProcess()
		}
		p.message(t)
		p.setCur(nil, false)
		p.panicText = true
		return true
	case isGoRegisterLine(t):
		return true
	case strings.HasPrefix(t, "runtime: ") || strings.HasPrefix(t, "runtime/cgo: "):
		if p.proc != nil {
			p.procNote(t)
		}
		return true
	}
	// `go test` and `go run` around the dump.
	for _, pre := range []string{"FAIL\t", "ok  \t", "--- FAIL: ", "--- PASS: ", "--- SKIP: ", "=== RUN ", "=== PAUSE ",
		"=== CONT ", "=== NAME ", "exit status ", "*** Test killed", "testing: "} {
		if strings.HasPrefix(t, pre) {
			return true
		}
	}
	return t == "FAIL" || t == "PASS"
}

// isGoSignalLine matches the runtime's "SIGQUIT: quit", "SIGSEGV:
// segmentation violation".
func isGoSignalLine(t string) bool {
	i := strings.Index(t, ": ")
	if i < 4 || i > 12 {
		return false
	}
	for _, c := range []byte(t[3:i]) {
		if !(c >= 'A' && c <= 'Z' || isDigit(c)) {
			return false
		}
	}
	return true
}

// isGoRegisterLine matches a register of the runtime's dump after a
// signal: "rax    0xca", "rflags 0x286", "r12     0x0" (arm64: "pc",
// "lr", "fault").
func isGoRegisterLine(t string) bool {
	sp := strings.IndexByte(t, ' ')
	if sp < 1 || sp > 7 {
		return false
	}
	for _, c := range []byte(t[:sp]) {
		if !(c >= 'a' && c <= 'z' || isDigit(c)) {
			return false
		}
	}
	v := strings.TrimLeft(t[sp:], " ")
	if !strings.HasPrefix(v, "0x") || len(v) < 3 || len(v) > 18 {
		return false
	}
	for _, c := range []byte(v[2:]) {
		if !isHex(c) {
			return false
		}
	}
	return true
}

// setCur ends the goroutine being read, giving it its stack (exactly
// as long as it is: a dump of 100,000 goroutines keeps no slack), and
// starts reading th.
func (p *goParser) setCur(th *Thread, drop bool) {
	if p.cur != nil && !p.drop && len(p.frames) > 0 {
		if len(p.cur.Stack) == 0 {
			p.cur.Stack = p.stacks.share(p.frames, true) // share.go: equal stacks, one copy
		} else {
			p.cur.Stack = append(p.cur.Stack[:len(p.cur.Stack):len(p.cur.Stack)], p.frames...)
		}
		if g := p.cur.Goroutine(); g != nil {
			g.Object = goWaitObject(p.cur.Stack)
		}
	}
	if p.cur != nil && p.cur.Runtime == &p.gbuf {
		p.cur.Runtime = p.runtimes.share(p.gbuf)
	}
	p.frames = p.frames[:0]
	p.cur, p.drop = th, drop
}

// cutGoroutine starts the goroutine a paste begins inside of: frames
// before the first header (an excerpt cut above them) are the end of a
// goroutine whose id and status are lost. Its Tid is 0 and its status
// "": the heuristics tell it from an M's stack, which has a status.
func (p *goParser) cutGoroutine(l textLine) {
	p.startProcess()
	p.cutFirst = true
	th := &Thread{Name: "goroutine (header cut)", State: "S", Runtime: &RuntimeThread{Kind: KindGoroutine}}
	p.proc.Threads = append(p.proc.Threads, th)
	p.setCur(th, false)
	p.threadNote(fmt.Sprintf("line %d: the paste starts inside this goroutine: its header (id, status) is not in it", l.no))
}

func (p *goParser) startProcess() {
	p.proc = &Process{}
	p.seen = map[int]*Thread{}
	p.notes = map[string]bool{}
	p.sawSep, p.sepLine = false, 0
}

// endProcess closes the process being read; one with no goroutine is
// dropped, its message and notes with it.
func (p *goParser) endProcess() {
	p.setCur(nil, false)
	pr := p.proc
	p.proc, p.seen = nil, nil
	if pr == nil || len(pr.Threads) == 0 || len(pr.Threads) == 1 && p.cutFirst && pr.Threads[0].Goroutine().Status == "" && pr.Threads[0].Tid == 0 {
		return // nothing, or only frames no header followed: not a goroutine dump
	}
	for _, th := range pr.Threads {
		if th.Stack == nil {
			th.Stack = []Frame{}
			if len(th.Notes) == 0 {
				th.Notes = append(th.Notes, "no frames in the dump")
			}
		}
	}
	p.procs = append(p.procs, pr)
}

// GoLeakMessage is the message of a process whose dump is goleak's
// report of the goroutines a test left running.
const GoLeakMessage = "goleak: found unexpected goroutines"

// goleakRE is goleak's line before each goroutine it reports.
var goleakRE = lazyre.New(`^Goroutine \d+ in state [^,]+, with .+ on top of the stack:$`)

func (p *goParser) message(t string) {
	if p.proc == nil {
		p.startProcess()
	}
	if p.proc.Message == "" {
		p.proc.Message = t
	} else if t != p.proc.Message {
		p.procNote(t)
	}
}

func (p *goParser) procNote(n string) {
	if p.proc == nil || p.notes[n] || len(p.notes) >= 50 {
		return
	}
	p.notes[n] = true
	p.proc.Notes = append(p.proc.Notes, n)
}

func (p *goParser) threadNote(n string) {
	if p.cur == nil || p.drop {
		return
	}
	for _, have := range p.cur.Notes {
		if have == n {
			return
		}
	}
	if len(p.cur.Notes) < 20 {
		p.cur.Notes = append(p.cur.Notes, n)
	}
}

func (p *goParser) skip(no int, why string) {
	before := p.lastText // the non-blank line before no
	if no == p.lastText {
		before = p.prevText
	}
	p.skipped.addAfter(no, before, why)
}

func (p *goParser) emptyError() error {
	return nothingRead(p.firstText, p.skipped.list, "empty input: no goroutine dump",
		`not a Go goroutine dump: no goroutine header ("goroutine 1 [running]:")`)
}

// parseGoCall reads a frame line, "pkg.(*T).m(0xc000012345, {0x1, 0x2})".
// The argument list starts at the first '(' that does not follow a '.'
// (which would open a receiver type). complete is false when the line
// was cut before the list closed; the argument cut then is dropped.
func parseGoCall(t string) (f Frame, args []Arg, complete, ok bool) {
	open := -1
	for i := 1; i < len(t); i++ {
		if t[i] == '(' && t[i-1] != '.' {
			open = i
			break
		}
		if t[i] == ' ' || t[i] == '\t' {
			return f, nil, false, false
		}
	}
	if open < 0 {
		return f, nil, false, false
	}
	name := goFuncName(t[:open])
	if !isGoFuncName(name) {
		return f, nil, false, false
	}
	body := t[open+1:]
	complete = strings.HasSuffix(body, ")") && goBalanced(body[:len(body)-1])
	if complete {
		body = body[:len(body)-1]
	}
	f.Func = name
	switch {
	case body == "...":
		f.Inlined = true // the runtime prints "(...)" for an inlined call
	case body != "":
		// One copy of the list for all its values: the line itself is
		// not kept.
		args = splitGoArgs(strings.Clone(body), complete)
	}
	return f, args, complete, true
}

// goFuncName is the function as the runtime prints it, with the one
// name it rewrites put back: runtime.gopanic prints as "panic".
func goFuncName(s string) string {
	if s == "panic" {
		return "runtime.gopanic"
	}
	return s
}

// isGoFuncName says whether s can be a function name in a Go traceback:
// package-qualified, no blanks, no argument list.
func isGoFuncName(s string) bool {
	if s == "runtime.gopanic" {
		return true
	}
	if len(s) < 3 || !strings.Contains(s, ".") || s[0] == '.' || s[0] == '(' || s[0] == '[' || s[len(s)-1] == '.' {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c <= ' ', c == ',', c == '"', c == '\'', c == '{', c == '}', c == '=', c == ':', c == '#', c == '`':
			return false
		}
	}
	return true
}

// isGoBareName matches a function name standing alone on a line: a cgo
// symbolizer's frame, or a Go frame cut before its '('.
func isGoBareName(t string) bool {
	if t == "non-Go function" {
		return true
	}
	if !isGoFuncName(t) {
		return false
	}
	// Parentheses only around a receiver type: ".(*T)".
	for i := 1; i < len(t); i++ {
		if t[i] == '(' && t[i-1] != '.' {
			return false
		}
	}
	return true
}

// isCIdent matches a C function name, as a cgo symbolizer prints one
// over its "\tFILE:LINE pc=0x…".
func isCIdent(t string) bool {
	if t == "" || isDigit(t[0]) {
		return false
	}
	for i := 0; i < len(t); i++ {
		if !isIdentByte(t[i]) {
			return false
		}
	}
	return true
}

// goBalanced says whether the braces of an argument list are closed.
func goBalanced(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
			if depth < 0 {
				return false
			}
		case '(', ')':
			return false
		}
	}
	return depth == 0
}

// maxGoArgs bounds the arguments kept per frame; the runtime prints at
// most ten words and "...".
const maxGoArgs = 32

// splitGoArgs splits "0x1, {0x2, 0x3}, ..." at the commas outside
// braces. With complete false the last piece was cut and is dropped.
func splitGoArgs(s string, complete bool) []Arg {
	n, depth := 1, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	args := make([]Arg, 0, min(n, maxGoArgs)) // exactly: a large dump has many
	depth, start := 0, 0
	for i := 0; i <= len(s) && len(args) < maxGoArgs; i++ {
		if i < len(s) {
			switch s[i] {
			case '{':
				depth++
				continue
			case '}':
				depth--
				continue
			case ',':
				if depth != 0 {
					continue
				}
			default:
				continue
			}
		} else if !complete {
			break
		}
		if v := strings.TrimSpace(s[start:i]); v != "" {
			args = append(args, NewArg("", v))
		}
		start = i + 1
	}
	if len(args) == 0 {
		return nil
	}
	return args
}

// parseGoLocation reads "FILE:LINE [+0xOFF] [fp=0x… sp=0x… pc=0x…]", or
// a cgo symbolizer's "[FILE:LINE ]pc=0x…".
func parseGoLocation(t string) (file string, line int, pc uint64, ok bool) {
	if t == "" || strings.HasSuffix(t, ")") {
		return "", 0, 0, false
	}
	hasPC := false
	for {
		sp := strings.LastIndexByte(t, ' ')
		tok := t[sp+1:]
		switch {
		case strings.HasPrefix(tok, "pc=0x"):
			v, err := strconv.ParseUint(tok[len("pc=0x"):], 16, 64)
			if err != nil {
				return "", 0, 0, false
			}
			pc, hasPC = v, true
		case strings.HasPrefix(tok, "fp=0x"), strings.HasPrefix(tok, "sp=0x"), strings.HasPrefix(tok, "+0x"):
		default:
			sp = -2
		}
		if sp == -2 {
			break
		}
		if sp < 0 {
			t = ""
			break
		}
		t = t[:sp]
	}
	if t == "" {
		return "", 0, pc, hasPC
	}
	c := strings.LastIndexByte(t, ':')
	if c <= 0 || c == len(t)-1 {
		return "", 0, 0, false
	}
	n, err := strconv.Atoi(t[c+1:])
	if err != nil || n < 0 {
		return "", 0, 0, false
	}
	return t[:c], n, pc, true
}
