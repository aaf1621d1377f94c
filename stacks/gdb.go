package stacks

import (
	"encoding/binary"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// ParseGDB reads gdb backtrace text — the output of `thread apply all bt`,
// `bt` or `bt full`, from gdb -batch or pasted from an interactive session
// into a bug tracker or a CI log — into a snapshot of one process.
//
// It understands frames with and without addresses, `from LIB` and
// `at FILE:LINE` trailers, `<signal handler called>`, C++ names with
// templates, lambdas and operators, frames wrapped over several lines by a
// narrow terminal, thread headers, the chatter gdb prints around them
// (`[New LWP …]`, `[Inferior 1 (process N) detached]`, `warning: …`,
// source-line echoes), `bt full` locals, Markdown fences and `> ` quoting,
// terminal colors, CI timestamps and lines cut mid-way. Frame.Func is the
// function as gdb printed it without gdb's argument list
// ("std::thread::join()" keeps the parameter list that is part of the
// symbol; FuncBase drops it).
//
// Inlined frames are marked when the dump shows addresses: gdb prints the
// address on the innermost frame of a machine frame only, so frames
// without an address that follow one belong to it, and all but the last of
// such a run are inlined into it.
//
// ParseGDB returns what it understood and the line ranges it did not; the
// error is non-nil only when nothing could be read (it names the line), or
// when reading r failed (the snapshot then holds what came before).
func ParseGDB(r io.Reader) (*Snapshot, []Skipped, error) {
	sc := newLineScanner(r)
	p := &gdbParser{proc: &Process{}, win: &lineWindow{sc: sc}}
	p.run()
	p.finish()
	readErr := sc.err
	var snap *Snapshot
	if len(p.proc.Threads) > 0 {
		snap = &Snapshot{Schema: Schema, Source: "gdb", Samples: 1, Processes: []*Process{p.proc}}
		snap.Evidence.Arguments = hasArgs(p.proc)
	}
	snap, err := readResult(snap, readErr, p.emptyError)
	return snap, p.skipped.list, err
}

// hasArgs says whether any frame of the process carries arguments.
func hasArgs(p *Process) bool {
	for _, t := range p.Threads {
		for _, f := range t.Stack {
			if len(f.Args) > 0 {
				return true
			}
		}
	}
	return false
}

// gdbThread is a thread of the paste; what reading its frames needs is
// in its gdbReading, which seal gives back for the next thread: a dump
// of 34,000 threads kept 4.4 MB of these at the end of its parse, 2.2
// without the reading part.
type gdbThread struct {
	t        *Thread
	gdbNo    string
	rawFirst string
	*gdbReading
	header bool // started by a "Thread N (…):" header
	pyBT   bool // under "Traceback (most recent call first):" (py-bt)
	sealed bool // its stack is final and shared (share.go)
	table  bool // read from an `info threads` row: one frame, until its backtrace comes
	chain  bool // a hand-written call chain (repair.go): its frames are the lines after its header
	// ownNo: gdbNo is the paste's own thread number (not the repair's
	// count of chains)
	ownNo bool
}

// gdbReading is the state of a thread whose frames are being read.
type gdbReading struct {
	lastNo  int // number of the last frame read, -1 before any
	hasAddr []bool
	// key is the ids of its frames' texts (gdbFrame.id, 4 bytes each),
	// while every frame has one: equal keys are equal stacks, found
	// without hashing the frames (seal)
	key     []byte
	keyBad  bool // a frame without an id was added
	srcNext bool // a py-bt frame was read: its source line may follow
	// onScratch: its Stack and hasAddr are the parser's scratch buffers
	onScratch bool
	chainLine int // the chain's last line so far
}

// newThread starts a thread whose frames are read from lastNo on.
func (p *gdbParser) newThread(lastNo int) *gdbThread {
	r := p.freeReading
	if r != nil {
		p.freeReading = nil
	} else {
		r = &gdbReading{}
	}
	r.lastNo = lastNo
	return &gdbThread{t: p.slab.next(), gdbReading: r}
}

// doneReading gives a sealed thread's reading state to the next thread.
func (p *gdbParser) doneReading(gt *gdbThread) {
	*gt.gdbReading = gdbReading{}
	p.freeReading, gt.gdbReading = gt.gdbReading, nil
}

// gdbFrame is what parseGDBFrame makes of one frame's text.
type gdbFrame struct {
	f                 Frame
	hasAddr, complete bool
	// id numbers the parses of frame texts from 1: each is one text,
	// whether the table kept it or not, so equal ids are equal texts
	id uint32
}

type gdbParser struct {
	win     *lineWindow // the input, read as the parser goes
	proc    *Process
	threads []*gdbThread
	cur     *gdbThread
	skipped skipList
	anyAddr bool           // some frame shows an address: inlined frames can be told
	frames  memo[gdbFrame] // frame texts parsed so far (share.go)
	// texts, copied once each: a thread's first frame (rawFirst) and
	// name, which would otherwise each hold their whole input line
	// (about 20 MB of a 100 MB dump's, until the end of the parse)
	texts memo[string]
	rows  map[string]*gdbThread // `info threads` rows by gdb's thread number
	// freeReading: a sealed thread's reading state, for the next one
	freeReading *gdbReading
	curRow      *gdbThread // the row marked `*`, gdb's current thread
	// scratch buffers for the frames of the thread being read (seal)
	scratch     []Frame
	scratchAddr []bool
	scratchKey  []byte
	scratchBusy bool
	stacks      stackTable
	frameIDs    uint32             // ids given so far (gdbFrame.id)
	byKey       map[string][]Frame // shared stacks by their threads' key
	slab        threadSlab

	ctxTid  int    // from "[Switching to thread …]" / "[Current thread is …]"
	ctxNo   string // gdb's thread number from the same line, or from a person's (proseThread)
	proseNo bool   // ctxNo is a person's
	// pendingNotes are a reader's notes above the next thread's frames
	pendingNotes []string
	endsOnFrame  bool // the last line read so far is (the end of) a frame
	notes        map[string]bool

	firstText int // first non-blank line, for the error
	// lastText and prevText are the numbers of the last non-blank line
	// read, and of the last one before the current item: a skipped range
	// grows over blank lines only.
	lastText, prevText int
}

var (
	// a header cut mid-way: "Thread 5 (Thread 0x7f… (LWP 48"
	cutHeaderRE = lazyre.New(`^Thread \d+(?:\.\d+)? \((?:Thread 0x|LWP |process )`)
	// "Thread 2 "worker" received signal SIGINT", "Thread 1 hit Breakpoint 1, …"
	threadEventRE = lazyre.New(`^Thread \d+(?:\.\d+)? .*(?: received signal | hit )`)
	lwpRE         = lazyre.New(`\((?:LWP|lwp) (\d+)\)|^(?:LWP|process|Thread) (\d+)\b`)
	locRE         = lazyre.New(`^0x[0-9a-fA-F]+ in \S.* \(.*\)|^[^\s(#][^(]* \(.*\) (?:at \S.*:\d+|from \S+)$`)
	srcRE         = lazyre.New(`^\d+\t|^\d+\s+in\s+\S|^\d+\s+\S+: No such file or directory\.$`)
	inferRE       = lazyre.New(`^\[Inferior \d+ \(process (\d+)\) `)
	attachRE      = lazyre.New(`^Attaching to (?:program: (.+), )?process (\d+)`)
	detachRE      = lazyre.New(`^Detaching from program: (.+), process (\d+)`)
	switchRE      = lazyre.New(`^\[(?:Switching to|Current) thread (?:is )?(\S+) \((.*?)\)\](?:#\d+\s.*)?$`)
	coreRE        = lazyre.New("^Core was generated by [`'](.*)'\\.?$")
	readRE        = lazyre.New(`^Reading symbols from (.+?)\.\.\.`)
	// `info threads`: "  Id   Target Id   Frame" over one row a thread,
	// "* 1    Thread 0x7f… (LWP 29368) "abba" __futex_… (…) at f.c:57"
	infoHeadRE = lazyre.New(`^Id\s+Target Id\s+Frame$`)
	infoRowRE  = lazyre.New(`^(?:\* +)?(\d+(?:\.\d+)?) +((?:Thread 0x[0-9a-fA-F]+ \((?:LWP|lwp) \d+\)|LWP \d+|process \d+)(?: "[^"]*")?) +(\S.*)$`)
)

// noise is gdb chatter around backtraces: understood, and nothing to keep.
var noisePrefixes = []string{
	"[New LWP ", "[New Thread ", "[Thread debugging using", "[Thread ", "[LWP ",
	"Using host libthread_db", "Reading symbols from", "Attaching to ", "Detaching from ",
	"Core was generated by", "Program terminated with signal", "Program received signal",
	"Continuing.", "Quit", "(gdb)", "--Type <RET> for more",
	"Downloading ", "Download failed", "This GDB supports auto-downloading",
	"Enable debuginfod for this session", "Debuginfod has been disabled",
	"To make this setting permanent", "[Inferior ", "[Switching to ", "[Current thread ",
	"Missing separate debuginfo", "Try: apt-get install", "Try: dnf --enablerepo",
	"Try: yum --enablerepo", "Use `info auto-load", "No symbol table is loaded",
	"For help, type \"help\"", "Type \"apropos word\"", "GNU gdb ", "Copyright (C) ",
	"License GPLv3+", "This is free software", "There is NO WARRANTY", "This GDB was configured",
	"Type \"show ", "For bug reporting instructions", "Find the GDB manual",
	"<https://www.gnu.org/software/gdb/", "<http://www.gnu.org/software/gdb/",
}

func (p *gdbParser) run() {
	for i := 0; ; i++ {
		l, ok := p.win.line(i)
		if !ok {
			return
		}
		p.win.forget(i) // nothing before line i is looked at again
		if l.text == "" {
			continue
		}
		if p.firstText == 0 {
			p.firstText = l.no
		}
		p.prevText = p.lastText
		i = p.item(i, l)
		last, _ := p.win.line(i)
		p.lastText = last.no
	}
}

// item reads the non-blank line i (and the lines a terminal wrapped it
// onto) and returns the index of its last line.
func (p *gdbParser) item(i int, l textLine) int {
	if isFence(l.text) {
		return i
	}
	if last, ok := p.infoThreads(i, l); ok {
		return last
	}
	p.endsOnFrame = false
	if num, ok := frameNumber(l.text); ok {
		text, last := p.joinWrapped(i, l.text)
		lastLine, _ := p.win.line(last)
		p.frame(l, num, text[1+len(num):], lastLine.cut || l.cut)
		p.endsOnFrame = true
		return last
	}
	if strings.HasPrefix(l.text, "Thread ") {
		if no, inside, ok := gdbHeader(l.text); ok {
			p.header(l, []string{l.text, no, inside})
			return i
		}
		if cutHeaderRE.MatchString(l.text) {
			p.header(l, nil)
			return i
		}
	}
	if p.pyBT(l) {
		return i
	}
	if p.readerNote(i, l) {
		return i
	}
	if p.cur != nil && len(p.cur.t.Stack) > 0 && l.indent >= 2 {
		return i // a `bt full` local, indented under its frame
	}
	if p.meta(l) {
		return i
	}
	if p.proseThread(l.text) {
		return i
	}
	if p.cur != nil && len(p.cur.t.Stack) > 0 && p.isLocal(l) {
		return i
	}
	if locRE.MatchString(l.text) || p.isWrappedLocation(i, l) {
		// gdb echoing where the process stopped ("foo (…) at x.c:3"):
		// the same frame comes again in the backtrace.
		_, last := p.joinWrapped(i, l.text)
		return last
	}
	p.skip(l.no, "not a stack")
	return i
}

// readerNoteRE is a sentence a person wrote between frames: "The arena
// lock is acquired at line src/arena.c:2853 in arena_dalloc_bin_run".
// A `bt full` local always has its " = ".
var readerNoteRE = lazyre.New(`^[A-Z][a-z']*(?: [\w'./:,()-]+){2,}[.!]?$`)

// readerNote keeps a person's sentence right above a frame (line i+1)
// as a note of the thread, saying where it stood: what it says (where a
// lock was taken) is evidence a reader of the report needs beside the
// frames.
func (p *gdbParser) readerNote(i int, l textLine) bool {
	t := l.text
	if strings.Contains(t, " = ") || strings.HasPrefix(t, "Thread ") || !readerNoteRE.MatchString(t) {
		return false
	}
	if next, ok := p.win.line(i + 1); !ok || next.text == "" || next.text[0] != '#' {
		return false
	} else if _, ok := frameNumber(next.text); !ok {
		return false
	}
	if gt := p.cur; gt != nil && len(gt.t.Stack) > 0 {
		p.threadNote(gt, fmt.Sprintf("line %d: a reader's note after frame #%d (%s): %q", l.no, gt.lastNo, gt.t.Stack[len(gt.t.Stack)-1].Name(), t))
	} else {
		p.pendingNotes = append(p.pendingNotes, fmt.Sprintf("line %d: a reader's note above the first frame: %q", l.no, t))
	}
	return true
}

// proseRE is a person's line that names the thread whose frames follow:
// "Thread 1 is trying to get a lock in a free() :".
var proseRE = lazyre.New(`^[Tt]hread (\d{1,6}) (?:is|was|has|holds|waits|tries|blocks|hangs|gets|takes)\b.*:$`)

// proseThread takes the thread number from a person's line that names
// the thread of the frames under it, for the thread they begin.
func (p *gdbParser) proseThread(t string) bool {
	m := proseRE.FindStringSubmatch(t)
	if m == nil {
		return false
	}
	p.seal(p.cur)
	p.cur = nil
	p.ctxTid, p.ctxNo, p.proseNo = 0, m[1], true
	return true
}

// isWrappedLocation says whether line i starts a stop location that gdb
// wrapped over the next lines.
func (p *gdbParser) isWrappedLocation(i int, l textLine) bool {
	text, last := p.joinWrapped(i, l.text)
	return last > i && locRE.MatchString(text)
}

// joinWrapped joins to the frame (or location) at line i the lines a
// narrow terminal wrapped it onto: indented by a few blanks more than the
// frame, while the frame's parentheses are open or starting with "at " or
// "from ". It returns the whole text and the index of its last line.
func (p *gdbParser) joinWrapped(i int, text string) (string, int) {
	first, _ := p.win.line(i)
	base := first.indent
	depth := 0
	last := i
	for last-i < maxWrapLines {
		next, ok := p.win.line(last + 1)
		if !ok || next.text == "" || next.indent <= base || next.indent > base+6 {
			break
		}
		if last == i {
			depth = parenDepth(text) // only now: most frames are followed by the next frame, not a continuation
		}
		// gdb breaks a long frame before its "at"/"from", or before the
		// argument list of a name that ends the line
		tail := strings.HasPrefix(next.text, "at ") || strings.HasPrefix(next.text, "from ") ||
			depth == 0 && strings.HasPrefix(next.text, "(") && !strings.HasSuffix(text, ")")
		if depth <= 0 && !tail {
			break
		}
		if strings.HasSuffix(text, "(") {
			text += next.text
		} else {
			text = strings.TrimRight(text, " ") + " " + next.text
		}
		depth += parenDepth(next.text)
		last++
	}
	return text, last
}

// maxWrapLines bounds how many lines one wrapped frame may span; gdb on an
// 80-column terminal needs a handful even for long C++ names.
const maxWrapLines = 64

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// digitsEnd returns the index after the decimal digits of s from i.
func digitsEnd(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// gdbHeader reads a thread header, "Thread N (INSIDE):" (N may be
// "2.1"), without a regexp: a large dump has one a thread.
func gdbHeader(t string) (no, inside string, ok bool) {
	rest, ok := strings.CutPrefix(t, "Thread ")
	if !ok {
		return "", "", false
	}
	i := digitsEnd(rest, 0)
	if i == 0 {
		return "", "", false
	}
	if i < len(rest) && rest[i] == '.' {
		j := digitsEnd(rest, i+1)
		if j == i+1 {
			return "", "", false
		}
		i = j
	}
	if !strings.HasPrefix(rest[i:], " (") || !strings.HasSuffix(rest, "):") || i+2 > len(rest)-2 {
		return "", "", false
	}
	return rest[:i], rest[i+2 : len(rest)-2], true
}

// gdbBeginNo returns N when t is a thread header of the kind that
// begins a gdb dump: "Thread N (Thread 0x… (LWP M) …):", "Thread N (LWP
// M):", "Thread N (process M):", with no other parentheses; N without a
// ".1" inferior suffix.
func gdbBeginNo(t string) (string, bool) {
	no, in, ok := gdbHeader(t)
	if !ok {
		return "", false
	}
	no, _, _ = strings.Cut(no, ".")
	var rest string
	switch {
	case strings.HasPrefix(in, "Thread 0x"):
		j := 9
		for j < len(in) && isHex(in[j]) {
			j++
		}
		if j == 9 || !strings.HasPrefix(in[j:], " (LWP ") {
			return "", false
		}
		k := digitsEnd(in, j+6)
		if k == j+6 || k == len(in) || in[k] != ')' {
			return "", false
		}
		rest = in[k+1:]
	case strings.HasPrefix(in, "LWP "), strings.HasPrefix(in, "process "):
		j := strings.IndexByte(in, ' ') + 1
		k := digitsEnd(in, j)
		if k == j {
			return "", false
		}
		rest = in[k:]
	default:
		return "", false
	}
	if strings.ContainsAny(rest, "()") {
		return "", false
	}
	return no, true
}

// frameNumber returns N from a line starting "#N" and a blank.
func frameNumber(s string) (string, bool) {
	if len(s) < 3 || s[0] != '#' || !isDigit(s[1]) {
		return "", false
	}
	i := 1
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == len(s) || s[i] != ' ' && s[i] != '\t' {
		return "", false
	}
	return s[1:i], true
}

// meta handles gdb chatter; it reports whether the line was understood.
func (p *gdbParser) meta(l textLine) bool {
	t := l.text
	switch {
	case strings.HasPrefix(t, "warning: "), strings.HasPrefix(t, "Warning: "):
		p.note("gdb: " + t)
		return true
	case strings.HasPrefix(t, "Backtrace stopped:"), strings.HasPrefix(t, "(More stack frames follow"),
		strings.HasPrefix(t, "Cannot access memory at address"), strings.HasPrefix(t, "Python Exception"):
		if p.cur != nil {
			p.threadNote(p.cur, "gdb: "+t)
		} else {
			p.note("gdb: " + t)
		}
		return true
	case t == "No locals." || t == "No symbol table info available." || t == "No stack.":
		return true
	case isDigit(t[0]) && srcRE.MatchString(t):
		return true // a source line gdb echoes after a stop location
	}
	switch {
	case strings.HasPrefix(t, "[Inferior "):
		if m := inferRE.FindStringSubmatch(t); m != nil {
			p.setPid(m[1])
		}
	case strings.HasPrefix(t, "Attaching to "):
		if m := attachRE.FindStringSubmatch(t); m != nil {
			p.setExe(m[1])
			p.setPid(m[2])
		}
	case strings.HasPrefix(t, "Detaching from "):
		if m := detachRE.FindStringSubmatch(t); m != nil {
			p.setExe(m[1])
			p.setPid(m[2])
		}
	case strings.HasPrefix(t, "Core was generated by"):
		if m := coreRE.FindStringSubmatch(t); m != nil && p.proc.Cmdline == nil {
			p.proc.Cmdline = strings.Fields(m[1])
			if len(p.proc.Cmdline) > 0 {
				p.setExe(p.proc.Cmdline[0])
			}
		}
	case strings.HasPrefix(t, "Reading symbols from "):
		if m := readRE.FindStringSubmatch(t); m != nil {
			p.setExe(m[1])
		}
	case strings.HasPrefix(t, "[Switching to thread ") || strings.HasPrefix(t, "[Current thread is "):
		if m := switchRE.FindStringSubmatch(t); m != nil {
			if tid, _ := parseLWP(m[2]); tid > 0 {
				p.ctxTid = tid
			}
			p.ctxNo = threadNo(m[1])
			p.cur = nil // frames after it belong to that thread's bt
			return true
		}
	case strings.HasPrefix(t, "Thread "):
		if threadEventRE.MatchString(t) {
			return true
		}
	}
	if _, ok := processHeading(t); ok {
		return true // split.go gave the process its pid
	}
	for _, pre := range noisePrefixes {
		if strings.HasPrefix(t, pre) {
			return true
		}
	}
	return false
}

func (p *gdbParser) setPid(s string) {
	if n, err := strconv.Atoi(s); err == nil && n > 0 && p.proc.Pid == 0 {
		p.proc.Pid = n
	}
}

func (p *gdbParser) setExe(s string) {
	s = strings.TrimSpace(s)
	if s != "" && p.proc.Exe == "" {
		p.proc.Exe = s
	}
}

func (p *gdbParser) note(n string) {
	if p.notes == nil {
		p.notes = map[string]bool{}
	}
	if p.notes[n] || len(p.notes) >= 50 {
		return
	}
	p.notes[n] = true
	p.proc.Notes = append(p.proc.Notes, n)
}

func (p *gdbParser) threadNote(gt *gdbThread, n string) {
	for _, have := range gt.t.Notes {
		if have == n {
			return
		}
	}
	if len(gt.t.Notes) < 20 {
		gt.t.Notes = append(gt.t.Notes, n)
	}
}

// isLocal says whether l is a `bt full` local variable line.
func (p *gdbParser) isLocal(l textLine) bool {
	if l.indent >= 2 {
		return true
	}
	// A paste that lost its indentation: "name = value".
	i := strings.Index(l.text, " = ")
	if i <= 0 {
		return false
	}
	for _, c := range l.text[:i] {
		if !(c == '_' || c == '$' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// skip records that line no was not understood; the range grows over
// blank lines only.
func (p *gdbParser) skip(no int, why string) { p.skipped.addAfter(no, p.prevText, why) }

func (p *gdbParser) header(l textLine, m []string) {
	gt := p.newThread(-1)
	gt.header = true
	if m != nil {
		gt.gdbNo = strings.Clone(m[1]) // not a piece of its line, which it would keep
		gt.chain = m[2] == chainHeader || m[2] == numberedChainHeader
		gt.chainLine = l.no
		gt.ownNo = m[2] != chainHeader
		gt.t.Tid, gt.t.Name = parseLWP(m[2])
		gt.t.Name = p.text(gt.t.Name)
		if row := p.tableRow(gt.gdbNo, gt.t.Tid); row != nil {
			// the backtrace of a thread `info threads` listed: its frames
			// replace the row's one
			p.ctxTid, p.ctxNo = 0, ""
			p.skipped.close()
			p.seal(p.cur)
			p.cur = p.fromRow(row)
			p.cur.header = true
			return
		}
	} else {
		// A header cut mid-way: "Thread 5 (Thread 0x7f… (LWP 48"
		rest := l.text[len("Thread "):]
		j := 0
		for j < len(rest) && (isDigit(rest[j]) || rest[j] == '.') {
			j++
		}
		gt.gdbNo = rest[:j]
		if tid, name := parseLWP(rest[j:]); tid > 0 && strings.Contains(rest, "LWP "+strconv.Itoa(tid)+")") {
			gt.t.Tid, gt.t.Name = tid, name
		}
		gt.t.Notes = append(gt.t.Notes, fmt.Sprintf("line %d: thread header cut", l.no))
	}
	p.ctxTid, p.ctxNo = 0, ""
	p.skipped.close()
	p.seal(p.cur)
	p.threads = append(p.threads, gt)
	p.cur = gt
}

// text returns s copied out of its line, the same copy for equal texts.
func (p *gdbParser) text(s string) string {
	if s == "" {
		return ""
	}
	return p.texts.get(s, func(k string) string { return k })
}

// infoThreads reads a line of gdb's `info threads` table: its column
// header, or a row, which gives a thread with its first frame.
func (p *gdbParser) infoThreads(i int, l textLine) (int, bool) {
	t := l.text
	if t[0] == 'I' && infoHeadRE.MatchString(t) {
		return i, true
	}
	if !isDigit(t[0]) && t[0] != '*' {
		return i, false
	}
	m := infoRowRE.FindStringSubmatch(t)
	if m == nil {
		return i, false
	}
	joined, last := p.joinWrapped(i, t) // a long row's frame wraps as a frame line does
	if last > i {
		m = infoRowRE.FindStringSubmatch(joined)
	}
	f, hasAddr, complete := parseGDBFrame(m[3])
	if f.Func == "" && !hasAddr {
		return i, false
	}
	gt := p.newThread(0)
	gt.gdbNo, gt.table, gt.rawFirst = m[1], true, m[3]
	gt.t.Tid, gt.t.Name = parseLWP(m[2])
	if !complete || l.cut {
		p.threadNote(gt, cutFrame(l.no, 0))
	}
	if hasAddr {
		p.anyAddr = true
	}
	gt.t.Stack, gt.hasAddr, gt.keyBad = []Frame{f}, []bool{hasAddr}, true
	p.seal(p.cur)
	p.cur = nil
	p.threads = append(p.threads, gt)
	if p.rows == nil {
		p.rows = map[string]*gdbThread{}
	}
	p.rows[gt.gdbNo] = gt
	if t[0] == '*' {
		p.curRow = gt
	}
	p.skipped.close()
	return last, true
}

// tableRow is the thread an `info threads` row gave for gdb's thread
// number no (and tid, when the header names one), nil when none.
func (p *gdbParser) tableRow(no string, tid int) *gdbThread {
	gt := p.rows[no]
	if gt == nil || !gt.table || tid != 0 && gt.t.Tid != tid {
		return nil
	}
	return gt
}

// rowOfBT is the `info threads` row a headerless backtrace starting
// with frame text first belongs to: the thread "[Switching to thread …]"
// named, else the row whose frame is that frame.
func (p *gdbParser) rowOfBT(first string) *gdbThread {
	if len(p.rows) == 0 {
		return nil
	}
	if c := p.curRow; p.ctxTid == 0 && c != nil && c.table && c.rawFirst == first {
		return c // gdb's current thread, `*` in the table
	}
	for _, gt := range p.threads {
		if gt.table && (p.ctxTid != 0 && gt.t.Tid == p.ctxTid || p.ctxTid == 0 && gt.rawFirst == first) {
			return gt
		}
	}
	return nil
}

// fromRow makes a table row's thread the one whose backtrace is read
// next: its frames replace the row's.
func (p *gdbParser) fromRow(gt *gdbThread) *gdbThread {
	gt.table, gt.lastNo = false, -1
	gt.t.Stack, gt.hasAddr = nil, nil
	gt.key, gt.keyBad = nil, false
	return gt
}

// seal makes the stack of a thread whose frames have all been read the
// one its equals share; without an address seen yet, inlined frames
// cannot be marked and finish does it.
// A thread being read appends its frames to the parser's scratch
// buffers, which seal copies out of (once per distinct stack when it
// can share): the stacks of a large dump are not grown frame by frame.
func (p *gdbParser) seal(gt *gdbThread) {
	if gt == nil || gt.sealed {
		return
	}
	scratch := gt.onScratch
	if scratch {
		p.scratch, p.scratchAddr, p.scratchKey = gt.t.Stack[:0], gt.hasAddr[:0], gt.key[:0]
		gt.onScratch, p.scratchBusy = false, false
	}
	if !p.anyAddr {
		if scratch {
			gt.t.Stack, gt.hasAddr = slices.Clone(gt.t.Stack), slices.Clone(gt.hasAddr)
			gt.key = slices.Clone(gt.key)
		}
		return
	}
	// a stack whose frame texts came before, in this order, is the one
	// they made then (markInlined reads nothing else): one map lookup of
	// a few bytes a frame, not a hash of every string of every frame
	keyed := len(gt.t.Stack) > 0 && !gt.keyBad && len(gt.key) == 4*len(gt.t.Stack)
	if keyed {
		if st, ok := p.byKey[string(gt.key)]; ok {
			gt.t.Stack, gt.sealed = st, true
			p.doneReading(gt)
			return
		}
	}
	markInlined(gt)
	gt.t.Stack = p.stacks.share(gt.t.Stack, scratch)
	if keyed && len(p.byKey) < maxMemo {
		if p.byKey == nil {
			p.byKey = map[string][]Frame{}
		}
		p.byKey[string(gt.key)] = gt.t.Stack
	}
	gt.sealed = true
	p.doneReading(gt)
}

// threadNo is s when it is a gdb thread number ("14", "2.1"), else "".
func threadNo(s string) string {
	i := digitsEnd(s, 0)
	if i > 0 && i < len(s) && s[i] == '.' {
		i = digitsEnd(s, i+1)
	}
	if i == 0 || i != len(s) || i > 12 {
		return ""
	}
	return s
}

// parseLWP reads the tid and the name from the inside of a thread header:
// `Thread 0x7f… (LWP 1234) "name"`, `LWP 1234`, `process 1234`.
func parseLWP(s string) (int, string) {
	tid := 0
	if strings.HasPrefix(s, "Thread 0x") {
		// lwpRE's second branch cannot match "Thread 0x…": its first is
		// the leftmost "(LWP N)"
		for i := strings.IndexByte(s, '('); i >= 0; {
			r := s[i+1:]
			if strings.HasPrefix(r, "LWP ") || strings.HasPrefix(r, "lwp ") {
				if j := digitsEnd(r, 4); j > 4 && j < len(r) && r[j] == ')' {
					tid, _ = strconv.Atoi(r[4:j])
					break
				}
			}
			k := strings.IndexByte(r, '(')
			if k < 0 {
				break
			}
			i += 1 + k
		}
	} else if m := lwpRE.FindStringSubmatch(s); m != nil {
		v := m[1]
		if v == "" {
			v = m[2]
		}
		tid, _ = strconv.Atoi(v)
	}
	name := ""
	if i, j := strings.IndexByte(s, '"'), strings.LastIndexByte(s, '"'); i < j {
		name = s[i+1 : j] // the first quote to the last
	}
	return tid, name
}

func (p *gdbParser) frame(l textLine, numStr, body string, cut bool) {
	num, err := strconv.Atoi(numStr)
	if err != nil || num > 1<<20 {
		p.skip(l.no, "frame number out of range")
		return
	}
	body = strings.TrimSpace(body)
	gt := p.cur
	if gt != nil && gt.chain {
		if l.no != gt.chainLine+1 {
			p.seal(gt) // a hand-written chain's frames follow its header: these are gdb's
			gt, p.cur = nil, nil
		} else {
			gt.chainLine = l.no
		}
	}
	if gt == nil && num > 0 && p.frameEcho(num, body) {
		return
	}
	switch {
	case gt == nil && num == 0 && p.rowOfBT(body) != nil:
		gt = p.fromRow(p.rowOfBT(body)) // `bt` after `info threads`: the row's thread
		p.cur = gt
	case gt == nil:
		gt = p.implicitThread()
	case num == 0 && len(gt.t.Stack) > 0:
		// A new backtrace without a header: `bt` run again, or gdb's
		// echo of frame #0 right before the real `bt`.
		if len(gt.t.Stack) == 1 && gt.rawFirst == body {
			gt.t.Stack = gt.t.Stack[:0]
			gt.hasAddr = gt.hasAddr[:0]
			gt.key, gt.keyBad = gt.key[:0], false
			gt.lastNo = -1
		} else {
			gt = p.implicitThread()
		}
	case num <= gt.lastNo:
		gt = p.implicitThread()
	}
	if len(gt.t.Stack) == 0 {
		gt.rawFirst = p.text(body)
		for _, n := range p.pendingNotes {
			p.threadNote(gt, n)
		}
		p.pendingNotes = nil
	}
	if num > gt.lastNo+1 {
		p.threadNote(gt, missingFrames(gt.lastNo, num))
	}
	gt.lastNo = num
	pf := p.frames.get(body, func(s string) gdbFrame {
		f, hasAddr, complete := parseGDBFrame(s)
		p.frameIDs++
		return gdbFrame{f, hasAddr, complete, p.frameIDs}
	})
	f, hasAddr, complete := pf.f, pf.hasAddr, pf.complete
	if gt.t.Stack == nil && !p.scratchBusy {
		gt.t.Stack, gt.hasAddr, gt.key = p.scratch[:0], p.scratchAddr[:0], p.scratchKey[:0]
		gt.onScratch, p.scratchBusy = true, true
	}
	if pf.id <= maxMemo { // past it the table is full: the ids are new each time
		gt.key = binary.LittleEndian.AppendUint32(gt.key, pf.id)
	} else {
		gt.keyBad = true
	}
	if hasAddr {
		p.anyAddr = true
	}
	if !complete || cut {
		p.threadNote(gt, cutFrame(l.no, num))
	}
	gt.t.Stack = append(gt.t.Stack, f)
	gt.hasAddr = append(gt.hasAddr, hasAddr)
	p.skipped.close()
}

// frameEcho tells gdb's echo of the frame `frame N`, `up` or `down`
// selected ("#2  0x… in pthread_mutex_lock ()" after "[Switching to
// thread …]") from a backtrace: it is frame N of the thread switched to,
// already read, and starts no thread of its own.
func (p *gdbParser) frameEcho(num int, body string) bool {
	if p.ctxTid == 0 {
		return false
	}
	f, _, _ := parseGDBFrame(body)
	for _, gt := range p.threads {
		if gt.t.Tid == p.ctxTid && num < len(gt.t.Stack) {
			g := gt.t.Stack[num]
			return g.Func == f.Func && g.PC == f.PC
		}
	}
	return false
}

// implicitThread starts a thread that has no header (`bt`, or frames
// pasted without it); its tid is known only from a "[Switching to …]".
func (p *gdbParser) implicitThread() *gdbThread {
	gt := p.newThread(-1)
	gt.gdbNo = p.ctxNo
	gt.t.Tid = p.ctxTid
	if p.proseNo {
		p.ctxNo, p.proseNo = "", false // a person named this one thread
	}
	p.seal(p.cur)
	p.threads = append(p.threads, gt)
	p.cur = gt
	return gt
}

// parseGDBFrame reads what follows "#N  " on a frame line. complete is
// false when the line was cut before the end of the argument list.
func parseGDBFrame(body string) (f Frame, hasAddr, complete bool) {
	if strings.HasPrefix(body, "0x") {
		pc, ok, rest, _ := framePC(body)
		if strings.HasPrefix(rest, "  ") {
			// pstack variants pad the columns: "0x…  in  f ()  from lib"
			if t := strings.TrimLeft(rest, " "); strings.HasPrefix(t, "in ") {
				rest = " in " + strings.TrimLeft(t[len("in "):], " ")
			}
		}
		switch {
		case strings.HasPrefix(rest, " in "):
			if ok {
				f.PC = pc
				hasAddr = true
			}
			body = rest[len(" in "):]
		case rest == "":
			// cut inside or right after the address: it may be partial
			return f, true, false
		case rest == " " || rest == " i":
			if ok {
				f.PC = pc
			}
			return f, true, false
		}
	}
	if body == "<signal handler called>" {
		f.Signal = true
		return f, hasAddr, true
	}
	body = parseTrailer(&f, body)
	name, args, complete := splitGDBArgs(body)
	if name == "??" {
		name = ""
	}
	if !complete && strings.HasSuffix(name, "()") && parenDepth(name) == 0 {
		// "arena_malloc() at src/arena.c:12" (Android's debuggerd, a
		// person's copy): no argument list, the name's own "()"
		complete = true
		if isCIdent(name[:len(name)-2]) {
			name = name[:len(name)-2]
		}
	}
	f.Func = name
	f.Args = parseGDBArgList(args)
	return f, hasAddr, complete
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseTrailer takes " at FILE:LINE" or " from LIB" off the end of body
// and fills the frame with it.
func parseTrailer(f *Frame, body string) string {
	if i := strings.LastIndex(body, " from "); i > 0 && strings.HasSuffix(strings.TrimRight(body[:i], " "), ")") {
		lib := body[i+len(" from "):]
		if lib != "" && !strings.ContainsAny(lib, " ()") {
			f.Module = lib
			return strings.TrimRight(body[:i], " ")
		}
	}
	for end := len(body); end > 0; {
		i := strings.LastIndex(body[:end], " at ")
		if i <= 0 {
			break
		}
		if strings.HasSuffix(strings.TrimRight(body[:i], " "), ")") {
			loc := body[i+len(" at "):]
			if c := strings.LastIndexByte(loc, ':'); c > 0 {
				if n, err := strconv.Atoi(loc[c+1:]); err == nil && n >= 0 {
					f.File, f.Line = loc[:c], n
					return strings.TrimRight(body[:i], " ")
				}
			}
			if end == len(body) && loc != "" && !strings.ContainsAny(loc, " :()") {
				// a paste cut inside the file name ("… (sig=17, info=…) at
				// ../s"): the argument list before it is whole
				f.File = loc
				return strings.TrimRight(body[:i], " ")
			}
		}
		end = i
	}
	return body
}

// finish drops gdb's echoes of frame #0, marks inlined frames and fills
// the process.
func (p *gdbParser) finish() {
	if gt := p.cur; gt != nil && p.endsOnFrame && !gt.chain && len(gt.t.Stack) > 1 {
		// an excerpt that ends on a frame short of the thread's first
		// function: what called it (a signal handler, the lock's first
		// taker) was cut away
		if f := gt.t.Stack[len(gt.t.Stack)-1]; f.Func != "" && !flEntryFunc[FuncBase(f.Func)] && !strings.HasPrefix(f.Func, "__clone") && !strings.HasPrefix(f.Func, "__libc_start") {
			p.threadNote(gt, fmt.Sprintf("the paste ends at frame #%d (%s), before the thread's first function (start_thread, clone, main): the stack below it is cut", gt.lastNo, f.Func))
		}
	}
	// the maps below are made only when some thread asks them: on a
	// dump of 100,000 threads, hashing every first frame and thread
	// number took a tenth of the parse
	lone := func(gt *gdbThread) bool { return !gt.header && !gt.table && !gt.pyBT && len(gt.t.Stack) == 1 }
	var firsts map[string]int  // raw #0 line -> threads with more than that frame
	var framed map[string]bool // thread numbers whose gdb frames the paste holds
	for _, gt := range p.threads {
		if firsts == nil && lone(gt) {
			firsts = map[string]int{}
			for _, gt := range p.threads {
				if len(gt.t.Stack) > 1 {
					firsts[gt.rawFirst]++
				}
			}
		}
		if framed == nil && gt.chain && gt.ownNo {
			framed = map[string]bool{}
			for _, gt := range p.threads {
				if !gt.chain && gt.gdbNo != "" && len(gt.t.Stack) > 0 {
					framed[gt.gdbNo] = true
				}
			}
		}
	}
	rows := 0
	for _, gt := range p.threads {
		if lone(gt) && firsts[gt.rawFirst] > 0 {
			continue // the stop location gdb printed before the backtraces
		}
		if gt.chain && gt.ownNo && framed[gt.gdbNo] {
			p.note(fmt.Sprintf("thread %s's hand-written call chain left out: the paste holds its frames", gt.gdbNo))
			continue
		}
		if gt.table {
			rows++
		}
		p.seal(gt)
		if !gt.sealed {
			gt.t.Stack = p.stacks.share(gt.t.Stack, false)
		}
		if len(gt.t.Stack) == 0 {
			p.threadNote(gt, "no frames in the dump")
		}
		if gt.t.Stack == nil {
			gt.t.Stack = []Frame{}
		}
		if !gt.chain || gt.ownNo {
			gt.t.Number = gt.gdbNo
		}
		p.proc.Threads = append(p.proc.Threads, gt.t)
		if (gt.gdbNo == "1" || gt.gdbNo == "1.1") && p.proc.Pid == 0 && gt.t.Tid > 0 {
			p.proc.Pid = gt.t.Tid // gdb's thread 1 is the main thread
		}
	}
	if rows > 0 {
		p.note(fmt.Sprintf("%d threads come from gdb's `info threads` table alone, with the frame each stopped in: `thread apply all bt` prints their stacks", rows))
	}
}

// markInlined groups frames into machine frames: gdb prints an address on
// the innermost frame of each machine frame (except frame #0, which may
// have none), so frames without one after it are the same machine frame;
// all but the last of a group are inlined, and all share its PC.
func markInlined(gt *gdbThread) {
	st := gt.t.Stack
	start := 0
	for i := 1; i <= len(st); i++ {
		if i < len(st) && !gt.hasAddr[i] && !st[i].Signal && !st[i-1].Signal {
			continue
		}
		// st[start:i] is one machine frame
		pc := st[start].PC
		for j := start; j < i; j++ {
			if j < i-1 {
				st[j].Inlined = true
			}
			if st[j].PC == 0 {
				st[j].PC = pc
			}
		}
		start = i
	}
}

func (p *gdbParser) emptyError() error {
	return nothingRead(p.firstText, p.skipped.list, "empty input: no gdb backtrace",
		`not a gdb backtrace: no frame ("#0  …") or thread header ("Thread 2 (…):")`)
}

// pyBT reads gdb's `py-bt` (CPython's gdb extension): "Traceback (most
// recent call first):" under a thread header, then `File "…", line N,
// in f` frames (each followed by its source line) and `<built-in method
// …>` frames, most recent first like gdb's own.
func (p *gdbParser) pyBT(l textLine) bool {
	t := l.text
	if t == "Traceback (most recent call first):" || t == "Unable to locate python frame" {
		if p.cur == nil || p.cur.pyBT && len(p.cur.t.Stack) > 0 {
			p.cur = p.implicitThread() // a second py-bt: another thread
		}
		p.cur.pyBT = true
		return true
	}
	if p.cur == nil || !p.cur.pyBT {
		return false
	}
	if f, ok := pyTracebackFrame(t); ok {
		p.cur.t.Stack = append(p.cur.t.Stack, f)
		p.cur.hasAddr = append(p.cur.hasAddr, false)
		p.cur.keyBad = true
		p.cur.srcNext = true
		return true
	}
	if strings.HasPrefix(t, "<built-in method ") || strings.HasPrefix(t, "<built-in function ") || strings.HasPrefix(t, "Waiting for the GIL") || strings.HasPrefix(t, "(frame information optimized out)") {
		name := strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(t, "<built-in method "), "<built-in function "), ">")
		if i := strings.Index(name, " of "); i > 0 {
			// "__enter__ of _thread.RLock object at remote 0x…": the
			// method of a named type keeps its type (_thread.RLock.__enter__
			// is a lock acquire; a bare __enter__ says nothing)
			typ, _, ok := strings.Cut(strings.TrimPrefix(name[i:], " of "), " object")
			name = name[:i]
			if ok && typ != "module" && !strings.ContainsAny(typ, " <>") {
				name = typ + "." + name
			}
		}
		p.cur.t.Stack = append(p.cur.t.Stack, Frame{Func: name})
		p.cur.hasAddr = append(p.cur.hasAddr, false)
		p.cur.keyBad = true
		p.cur.srcNext = false
		return true
	}
	if p.cur.srcNext && l.indent >= 4 {
		p.cur.srcNext = false
		return true // the frame's source line
	}
	return false
}
