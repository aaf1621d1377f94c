package stacks

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// The frame-list reader: the last resort for a paste no tool's reader
// knows, which still holds stacks. People abridge stacks by hand (one
// function a line, a tree drawn with └─), and tools hangdoc has no reader
// for print them plainly: Abseil's and glog's "@ 0x… func", bcc's
// deadlock detector ("0x… func"), the sanitizers' reports (TSan's
// lock-order-inversion: "#0 func file:line (module+0x…)"), gdb frames without their "#N", Arm
// DDT's merged-stack CSV ("procs,threads,func (file:line)"), Delve's
// "N  0x… in func / at file:line" (its own reader, delve.go, reads the
// commands' whole output; this reads their lines pasted alone). Every run of frame lines is a thread,
// named by the line before it; a tree whose first frame is an entry point
// (main, _start, start_thread) is read outermost first and turned over.
// It is detected only when no other format recognises the input.

func init() {
	registerFormat(&Format{Name: "frames", Sniff: sniffFrames, Parse: ParseFrames, Fallback: true})
}

var (
	flTreeRE        = lazyre.New(`^(?:[│|├└┣┗╰\\+` + "`" + `─-]+\s*)+`)
	flAtRE          = lazyre.New(`^@\s+0x[0-9a-fA-F]+\s+(?:\d+\s+)?(\S.*)$`)
	flPCRE          = lazyre.New(`^(?:\d+\s+)?0x[0-9a-fA-F]+(?:\s+in)?\s+(\S.*)$`)
	flGDBRE         = lazyre.New(`^([^\s(]+) \(.*\)(?: (?:at (\S+):(\d+)|from (\S+)))?$`)
	flFileRE        = lazyre.New(`^([^\s(]+) \((\S+?):(\d+)\)$`)
	flEmptyParamsRE = lazyre.New(`^([^\s(]+)\(\) \(\S`)
	flBareRE        = lazyre.New(`^[A-Za-z_$][\w:.~<>$()*\[\]]*(?:\+0x[0-9a-f]+)?$`)
	flCSVRE         = lazyre.New(`^\d+,\d+,(\s*)(\S.*)$`)
	flAtFileRE      = lazyre.New(`^at (\S+?):(\d+)(?::\d+)?$`)
	flSymsRE        = lazyre.New(`^(?:\[\d+\]\s+)?(\S+)\(([^()\s]*?)(?:\+0x[0-9a-fA-F]+)?\) \[0x([0-9a-fA-F]+)\]$`) // glibc's backtrace_symbols
	flRustRE        = lazyre.New(`^\d+:\s+(?:0x([0-9a-fA-F]+) - )?(\S.*?)(?:::h[0-9a-f]{16})?$`)
	flFileOnlyRE    = lazyre.New(`^File: '(\S+?):(\d+)'$`)
	// gdb's `info line *ADDR` answer, one a frame when a reporter had
	// only addresses: "0x560ed is in je_malloc_mutex_lock_slow
	// (include/jemalloc/internal/atomic.h:69)."
	flInfoLineRE = lazyre.New(`^0x([0-9a-fA-F]+) is in (\S+) \((\S+?):(\d+)\)\.?$`)
	// a frame of a hand-written tree with a file:line column and the
	// reader's words after it: "lock(&lock_trace) rtkcmn.c:2772  first lock"
	flColsRE    = lazyre.New(`^([A-Za-z_][\w:.~]*)\((.*?)\)\s+(\S+\.\w+):(\d+)(?:\s{2,}(\S.*))?$`)
	flBlockedRE = lazyre.New(`^Thread: (\d+) waits for thread: (\d+)`)
	flRankRE    = lazyre.New(`^\[(\d+)\]\s+`)
	// MPICH's progress-timeout report (MPIR_CVAR_DEBUG_PROGRESS_TIMEOUT):
	// "[1.009] 2 pending requests in pool 0", then one line a request
	// ("ac000000: MPIDIG_do_irecv: source=1, tag=0, …"), then the
	// backtrace.
	flMPICHRE    = lazyre.New(`^(?:\[[\d.]+\]\s+)?(\d+ pending requests? in pool \d+)$`)
	flMPICHReqRE = lazyre.New(`^([0-9a-f]{8}):\s*(.*)$`)
	// Delve's `goroutines -t`: "Goroutine 200 - User: file:line func (0x…)
	// [chan send 3h2m1.5s]" (a "*" marks the current one).
	flDelveRE = lazyre.New(`^\*?\s*RuntimeThread (\d+) - \w+: .*\[([a-zA-Z][^\]]*?)(?: (\d[\d.hmsuµn]*s))?\]$`)
	// the sanitizers' symbolized frame: "#1 t1 /tmp/x.c:4 (x+0x11df)",
	// "0 pthread_mutex_lock <null> (app+0x42f3e5)", a C++ signature with
	// spaces, a column after the line, a BuildId after the module
	// a Go function with its import path: "internal/sync.(*Mutex).Lock",
	// "github.com/x/y.(*T).M", "golang.org/x/sync/errgroup.(*Group).Wait"
	flGoPathRE  = lazyre.New(`^(?:[\w.-]+/)+[\w.-]*\.(?:\(\*?[\w.\[\]]+\)\.)?[\w$.\[\]]+$`)
	flSanRE     = lazyre.New(`^#?\d+\s+(\S.*?)\s+(?:<null>|(\S+?):(\d+)(?::\d+)?)\s+\(([^()\s]+?)\+0x([0-9a-fA-F]+)\)(?:\s+\(BuildId: [0-9a-fA-F]+\))?$`)
	flThreadRE  = lazyre.New(`\b(?:[Tt]hread|[Gg]oroutine|LWP|tid|TID)[ #=:]*(\d+)`)
	flEntryFunc = map[string]bool{"main": true, "_start": true, "start_thread": true, "clone": true, "clone3": true, "__libc_start_main": true, "runtime.main": true, "runtime.goexit": true, "<module>": true}
)

// sniffFrames counts the lines that read as frames.
func sniffFrames(head []byte) int {
	n := 0
	for _, line := range strings.Split(string(sniffText(head)), "\n") {
		t := strings.TrimSpace(line)
		if _, ok := frameListLine(t); ok || flBlockedRE.MatchString(t) {
			n++
		}
	}
	if n < 2 {
		return 0
	}
	return n
}

// frameListLine reads one line as a frame.
func frameListLine(t string) (Frame, bool) {
	if t == "" {
		return Frame{}, false
	}
	if m := flCSVRE.FindStringSubmatch(t); m != nil {
		t = m[2]
	}
	if m := flSymsRE.FindStringSubmatch(t); m != nil {
		pc, _ := strconv.ParseUint(m[3], 16, 64)
		return Frame{Func: Demangle(m[2]), Module: m[1], PC: pc}, true
	}
	if m := flSanRE.FindStringSubmatch(t); m != nil {
		line, _ := strconv.Atoi(m[3])
		pc, _ := strconv.ParseUint(m[5], 16, 64)
		return Frame{Func: m[1], File: m[2], Line: line, Module: m[4], PC: pc}, true
	}
	if m := flColsRE.FindStringSubmatch(t); m != nil {
		line, _ := strconv.Atoi(m[4])
		return Frame{Func: m[1], File: m[3], Line: line, Args: sourceCallArgs(m[2])}, true
	}
	if m := flInfoLineRE.FindStringSubmatch(t); m != nil {
		off, _ := strconv.ParseUint(m[1], 16, 64)
		line, _ := strconv.Atoi(m[4])
		return Frame{Func: m[2], File: m[3], Line: line, Offset: off}, true
	}
	if m := flFileOnlyRE.FindStringSubmatch(t); m != nil {
		line, _ := strconv.Atoi(m[2])
		return Frame{File: m[1], Line: line}, true
	}
	if m := flRustRE.FindStringSubmatch(t); m != nil && (m[1] != "" || strings.Contains(m[2], "::")) && !strings.ContainsAny(m[2], " ") {
		pc, _ := strconv.ParseUint(m[1], 16, 64)
		return Frame{Func: m[2], PC: pc}, true
	}
	if m := flTreeRE.FindStringIndex(t); m != nil && m[1] < len(t) {
		t = strings.TrimSpace(t[m[1]:])
	}
	var pc uint64
	if m := flAtRE.FindStringSubmatch(t); m != nil {
		pc = leadingPC(t[1:])
		t = m[1]
	} else if m := flPCRE.FindStringSubmatch(t); m != nil {
		pc = leadingPC(t)
		t = m[1]
	}
	if m := flEmptyParamsRE.FindStringSubmatchIndex(t); m != nil {
		// "std::thread::join() (thread.cc:112)": a symbolizer's empty
		// parameter list before the location
		t = t[:m[3]] + t[m[3]+2:]
	}
	f := Frame{PC: pc}
	switch m := flGDBRE.FindStringSubmatch(t); {
	case m != nil && !strings.Contains(m[1], ","):
		f.Func, f.File, f.Module = m[1], m[2], m[4]
		f.Line, _ = strconv.Atoi(m[3])
		if fm := flFileRE.FindStringSubmatch(t); fm != nil && f.File == "" {
			f.File = fm[2]
			f.Line, _ = strconv.Atoi(fm[3])
		}
		return f, true
	case flGoPathRE.MatchString(t):
		f.Func = t
		return f, true
	case flBareRE.MatchString(t) && (pc != 0 || strings.ContainsAny(t, "_.:(") || strings.Contains(t, "::")):
		f.Func = strings.TrimSuffix(t, "()")
		if i := strings.Index(f.Func, "+0x"); i > 0 {
			f.Func = f.Func[:i]
		}
		f.Func = Demangle(f.Func)
		return f, true
	case pc != 0 && !strings.Contains(t, "  "):
		// "0x… func (args) …" that is no known spelling: the first word
		f.Func = Demangle(strings.Fields(t)[0])
		return f, true
	}
	return Frame{}, false
}

func leadingPC(s string) uint64 {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "0x"); i >= 0 {
		s = s[i+2:]
		end := 0
		for end < len(s) && isHex(s[end]) {
			end++
		}
		v, _ := strconv.ParseUint(s[:end], 16, 64)
		return v
	}
	return 0
}

// ParseFrames reads a list of frames in no tool's format (see above).
func ParseFrames(r io.Reader) (*Snapshot, []Skipped, error) {
	first := &Process{}
	p := &flParser{proc: first}
	readErr := scanTextLines(r, p.line)
	p.end()
	if len(p.rankOrder) > 0 {
		if len(first.Threads) > 0 {
			p.ranks = append(p.ranks, first)
		}
		for _, rp := range p.rankOrder {
			if len(rp.Threads) > 0 || rp.Message != "" {
				p.ranks = append(p.ranks, rp)
			}
		}
		p.proc = first
		first.Threads = nil
	}
	var snap *Snapshot
	if len(p.ranks) > 0 {
		snap = &Snapshot{Schema: Schema, Source: "frames", Samples: 1, Processes: p.ranks}
		p.ranks[0].Notes = append(p.ranks[0].Notes, fmt.Sprintf("read as DDT's merged stacks: %d groups of ranks, one process a rank, no pids or thread ids", p.groups))
		if len(p.proc.Threads) > 0 {
			snap.Processes = append(snap.Processes, p.proc)
		}
	} else if len(p.proc.Threads) > 0 {
		snap = &Snapshot{Schema: Schema, Source: "frames", Samples: 1, Processes: []*Process{p.proc}}
		snap.Evidence.Owners = p.owners
		p.proc.Notes = append(p.proc.Notes, "read as a plain list of frames: no thread ids, states or lock addresses; a tool's own dump (gdb `thread apply all bt`, `kill -QUIT` for Go, `py-spy dump --native`, jstack) says more")
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "no frames in the input", "no frames found")
	})
	return snap, p.track.skipped.list, err
}

type flParser struct {
	proc   *Process
	track  lineTrack
	cur    []Frame
	indent []int
	header string
	csv    bool
	// a DDT tree: the path of frames from the root to the current line
	path    []Frame
	pathInd []int
	pathN   string
	groups  int // the DDT leaves read
	// mpirun -l's ranks, each a process; the first process keeps what
	// no rank label precedes
	rankProc  map[string]*Process
	rankOrder []*Process
	mpich     bool       // an MPICH progress-timeout report is being read
	ranks     []*Process // a process per rank of the DDT leaves
	owners    bool       // gdb's blocked command named owners
	// the run being read: whether a line drew tree marks (└─), the
	// reader's words after a frame's columns, the frames' lines
	marked bool
	words  []string
	lines  []int
}

func (p *flParser) line(l textLine) {
	if !p.track.next(l) {
		if l.text == "" {
			p.end()
		}
		return
	}
	if m := flCSVRE.FindStringSubmatch(l.text); m != nil {
		p.csvLine(l, m)
		return
	}
	if m := flBlockedRE.FindStringSubmatch(l.text); m != nil {
		p.blocked(m)
		return
	}
	if m := flRankRE.FindStringSubmatchIndex(l.text); m != nil && !flSymsRE.MatchString(l.text) {
		p.rank(l.text[m[2]:m[3]]) // mpirun -l's "[rank] " label: that rank's process
		l.text = l.text[m[1]:]
	}
	if m := flMPICHRE.FindStringSubmatch(l.text); m != nil {
		p.end()
		p.proc.Message = "MPICH progress timeout: " + m[1]
		p.mpich, p.header = true, ""
		return
	}
	if m := flMPICHReqRE.FindStringSubmatch(l.text); m != nil && p.mpich && len(p.cur) == 0 {
		if m[2] != "" {
			p.proc.Notes = append(p.proc.Notes, MPICHRequestNote+m[1]+": "+m[2])
		}
		return
	}
	if f, ok := frameListLine(l.text); ok {
		p.cur = append(p.cur, f)
		p.indent = append(p.indent, l.indent)
		p.marked = p.marked || flTreeRE.MatchString(l.text)
		if m := flColsRE.FindStringSubmatch(l.text); m != nil && m[5] != "" {
			p.words = append(p.words, fmt.Sprintf("line %d: a reader's note at %s (%s:%s): %q", l.no, f.Func, m[3], m[4], m[5]))
		}
		p.lines = append(p.lines, l.no)
		return
	}
	if m := flAtFileRE.FindStringSubmatch(l.text); m != nil && len(p.cur) > 0 {
		last := &p.cur[len(p.cur)-1]
		last.File = m[1]
		last.Line, _ = strconv.Atoi(m[2])
		return
	}
	p.end()
	p.header = l.text
	p.track.skip(l.no, "not a frame")
}

// MPICHRequestNote starts the note of a request MPICH's progress-timeout
// report lists as pending for a rank.
const MPICHRequestNote = "MPICH pending request "

// sourceCallArgs reads the arguments of a call written as source
// ("lock(&lock_trace)", "f(a, g(b, c))"): the expressions between the
// top-level commas, unnamed (a paste names no parameter).
func sourceCallArgs(s string) []Arg {
	var args []Arg
	depth, start := 0, 0
	for i := 0; i <= len(s); i++ {
		switch {
		case i < len(s) && strings.IndexByte("([{", s[i]) >= 0:
			depth++
		case i < len(s) && strings.IndexByte(")]}", s[i]) >= 0:
			depth--
		case i == len(s) || s[i] == ',' && depth == 0:
			if v := strings.TrimSpace(s[start:i]); v != "" && len(args) < maxArgs {
				args = append(args, NewArg("", clipText(v, maxArgValue)))
			}
			start = i + 1
		}
	}
	return args
}

// rank makes the process of rank n (mpirun -l's label) the one read.
func (p *flParser) rank(n string) {
	if p.rankProc[n] == nil {
		if p.rankProc == nil {
			p.rankProc = map[string]*Process{}
		}
		p.rankProc[n] = &Process{Label: "rank " + n}
		p.rankOrder = append(p.rankOrder, p.rankProc[n])
	}
	if p.proc != p.rankProc[n] {
		p.end()
		p.proc = p.rankProc[n]
	}
}

// blocked reads gdb's `blocked` command (a gdb extension that reads
// mutex owners): "Thread: 48802 waits for thread: 46656 AND DEADLOCKED".
func (p *flParser) blocked(m []string) {
	p.end()
	tid, _ := strconv.Atoi(m[1])
	owner, _ := strconv.Atoi(m[2])
	p.proc.Threads = append(p.proc.Threads, &Thread{Tid: tid, Stack: []Frame{}, State: "S",
		Wait: &Wait{Nr: -1, Mutex: &Mutex{Addr: uint64(tid), Owner: owner, Symbol: "a lock held by thread " + m[2]}}})
	p.owners = true
}

// csvLine reads a line of DDT's merged stacks: each leaf of the tree is
// a thread, its path from the root its stack.
func (p *flParser) csvLine(l textLine, m []string) {
	f, ok := frameListLine(l.text)
	if name := strings.TrimSpace(m[2]); !ok && flBareRE.MatchString(name) {
		f, ok = Frame{Func: name}, true // "poll": a bare name is a frame in the tree
	}
	if !ok {
		p.track.skip(l.no, "not a frame")
		return
	}
	depth := len(m[1])
	for len(p.pathInd) > 0 && p.pathInd[len(p.pathInd)-1] >= depth {
		p.leaf()
		p.path, p.pathInd = p.path[:len(p.path)-1], p.pathInd[:len(p.pathInd)-1]
	}
	p.path = append(p.path, f)
	p.pathInd = append(p.pathInd, depth)
	p.pathN = l.text[:strings.IndexByte(l.text, ',')]
	p.csv = true
}

// leaf makes a thread of the current path when its last frame is a leaf
// (no deeper line came after it).
func (p *flParser) leaf() {
	if !p.csv || len(p.path) == 0 {
		return
	}
	st := make([]Frame, len(p.path))
	for i, f := range p.path {
		st[len(p.path)-1-i] = f
	}
	// Each leaf counts the processes (ranks) whose stack it is: each
	// becomes a process of its own, as the ranks of a job attached
	// together are, so that grouping the ranks weighs them (82 ranks in a
	// barrier, 14 elsewhere).
	p.groups++
	n, _ := strconv.Atoi(p.pathN)
	n = min(max(n, 1), max(flMaxRanks-len(p.ranks), 1))
	for i := range n {
		th := &Thread{Name: p.pathN + " processes", Stack: st}
		if i > 0 {
			th.Stack = append([]Frame(nil), st...)
		}
		p.ranks = append(p.ranks, &Process{Label: fmt.Sprintf("DDT group %d (%s processes) #%d", p.groups, p.pathN, i+1), Threads: []*Thread{th}})
	}
	p.csv = false // only the deepest frame of a branch is a leaf
}

// flMaxRanks caps the processes a DDT export expands to; past it a
// group counts for one.
const flMaxRanks = 4096

func (p *flParser) end() {
	for len(p.path) > 0 {
		p.leaf()
		p.path, p.pathInd = p.path[:len(p.path)-1], p.pathInd[:len(p.pathInd)-1]
	}
	if len(p.cur) == 0 {
		return
	}
	st := p.cur
	var notes []string
	var returned []ReturnedCall
	if !p.marked && callTree(p.indent) {
		st, returned, notes = p.treeStack()
	} else if flEntryFunc[FuncBase(st[0].Func)] && len(st) > 1 && !flEntryFunc[FuncBase(st[len(st)-1].Func)] {
		for i, j := 0, len(st)-1; i < j; i, j = i+1, j-1 {
			st[i], st[j] = st[j], st[i]
		}
	}
	t := &Thread{Stack: st}
	if len(returned) > 0 {
		t.SetReturned(returned)
	}
	if p.header != "" {
		t.Name = clipText(strings.TrimSuffix(p.header, ":"), 120)
		if m := flThreadRE.FindStringSubmatch(p.header); m != nil {
			t.Tid, _ = strconv.Atoi(m[1])
		}
		if m := flDelveRE.FindStringSubmatch(p.header); m != nil {
			// A goroutine as Delve lists it: its wait reason and how long.
			g := &RuntimeThread{Kind: KindGoroutine, ID: t.Tid, Status: m[2]}
			if d, err := time.ParseDuration(strings.ReplaceAll(m[3], "µ", "u")); err == nil && m[3] != "" {
				g.WaitMinutes = int(d.Minutes())
			}
			t.Runtime, t.State, t.Name = g, GoroutineState(g.Status), "goroutine "+m[1]
		}
	}
	t.Notes = append(append(t.Notes, notes...), p.words...)
	p.proc.Threads = append(p.proc.Threads, t)
	p.cur, p.indent, p.header = nil, nil, ""
	p.marked, p.words, p.lines = false, nil, nil
}

// callTree says whether frames indented so are a call tree drawn by
// hand, outermost call first, a callee indented under its caller: the
// indentation grows, and comes back to a level it had (a call that
// returned, then its caller's next call). A stack drawn innermost first
// has no such siblings.
func callTree(indent []int) bool {
	if len(indent) < 3 || indent[len(indent)-1] <= indent[0] {
		return false
	}
	for i := 1; i < len(indent); i++ {
		if indent[i] < indent[0] {
			return false
		}
		if indent[i] <= indent[i-1] && indent[i-1] > indent[0] {
			return true
		}
	}
	return false
}

// treeStack turns a hand-drawn call tree into the stack of its last
// line, innermost first: each line's caller is the nearest line above it
// indented less. The calls that returned before (siblings left behind)
// are said in notes, and those whose caller is still on the stack are
// kept with their arguments (Thread.Returned): a lock they took may
// still be held.
func (p *flParser) treeStack() ([]Frame, []ReturnedCall, []string) {
	var path []int // indices into p.cur
	var notes []string
	caller := map[int]int{} // a returned call's index → its caller's
	for i := range p.cur {
		for len(path) > 0 && p.indent[path[len(path)-1]] >= p.indent[i] {
			j := path[len(path)-1]
			path = path[:len(path)-1]
			if len(path) > 0 {
				caller[j] = path[len(path)-1]
				notes = append(notes, fmt.Sprintf("line %d: %s, called by %s before %s, had returned: the tree shows it, the stack does not", p.lines[j], p.cur[j].Func, p.cur[path[len(path)-1]].Func, p.cur[i].Func))
			}
		}
		path = append(path, i)
	}
	st := make([]Frame, len(path))
	depth := map[int]int{} // a line on the stack → its index there
	for k, i := range path {
		st[len(path)-1-k] = p.cur[i]
		depth[i] = len(path) - 1 - k
	}
	var returned []ReturnedCall
	for j := range p.cur {
		if c, ok := caller[j]; ok {
			if d, onStack := depth[c]; onStack {
				returned = append(returned, ReturnedCall{Frame: p.cur[j], Caller: d})
			}
		}
	}
	return st, returned, notes
}
