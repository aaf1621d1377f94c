package stacks

import (
	"io"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// ParseEUStack reads the output of elfutils' eu-stack (`eu-stack -p PID`,
// `eu-stack --core FILE`) into a snapshot, one process per `PID N - …`
// header, one thread per `TID N:` line.
//
// It understands every output option: `-a` (the activation column, "- 1"
// on frames whose PC is a return address), `-m` (" - MODULE" after the
// symbol), `-s` (the source line on the next line, indented),
// `-i`/`-d`/`-v` (DWARF names and inlined frames, which repeat the PC of
// the frame they are inlined into), `-b` (build id, module start and PC
// offset on a line of their own), `-l` (the module map, which fills
// Process.Modules: path, address range and build id; eu-stack does not
// print the load bias, left 0), `-q` (no symbols), `-r` (mangled names,
// demangled here) and `-1` (no PID line). Its stderr messages ("tid N: shown max
// number of frames", "dwfl_thread_getframes tid N …: …") become notes.
//
// eu-stack prints no thread names and no arguments. Frame.Func is the
// symbol as eu-stack printed it: an ELF symbol by default
// ("__pthread_mutex_lock@GLIBC_2.2.5", "std::mutex::lock()"), the DWARF
// name with -d, -i or -v ("___pthread_mutex_lock"). Frame.Offset, when -b
// shows it, is the PC relative to the start of its module (the load bias
// for shared objects and position-independent executables).
//
// Inlined frames can be told only when the dump has them (-i, -v): a
// frame whose PC is the next frame's is inlined into it. A dump where no
// two frames in a row share a PC under different names was taken without
// -i, and there frames in a row with one PC are recursion.
//
// Like ParseGDB, it returns what it understood and the line ranges it did
// not; the error is non-nil only when nothing could be read, or when
// reading r failed.
func ParseEUStack(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &euParser{}
	readErr := scanTextLines(r, p.line)
	snap, err := readResult(p.finish(), readErr, p.emptyError)
	return snap, p.skipped.list, err
}

type euProc struct {
	p       *Process
	threads []*euThread
	byTid   map[int]*euThread
}

type euThread struct {
	t      *Thread
	lastNo int
}

type euParser struct {
	lineTrack
	procs   []*euProc
	byPid   map[int]*euProc
	proc    *euProc
	cur     *euThread
	slab    threadSlab
	frame   *Frame // the last frame read, for its source and build-id lines
	fIndent int    // the indentation of its line
	module  *Module
	modLine int // lines read under a module of the module map
	inMap   bool
	notes   procNotes
}

var (
	euPidRE     = lazyre.New(`^PID (\d+) - (.+)$`)
	euTidRE     = lazyre.New(`^TID (\d+):$`)
	euModuleRE  = lazyre.New(`^0x([0-9a-fA-F]+)-0x([0-9a-fA-F]+) (.+)$`)
	euBuildIDRE = lazyre.New(`^\[([0-9a-fA-F]+)\]@0x([0-9a-fA-F]+)\+0x([0-9a-fA-F]+)$`)
	euIDRE      = lazyre.New(`^\[([0-9a-fA-F]+)\]$`)
	euSourceRE  = lazyre.New(`^\S+:\d+(?::\d+)?$`)
	euMsgTidRE  = lazyre.New(`\btid (\d+)\b`)
	euBareMsgRE = lazyre.New(`^tid \d+: `)
	euCommandRE = lazyre.New(`^[$#] +(?:sudo +)?(?:\S*/)?eu-stack(?: |$)`)
)

func (p *euParser) line(l textLine) {
	if !p.next(l) {
		return
	}
	if l.text[0] == '#' && p.frameLine(l) {
		return
	}
	if p.meta(l) {
		return
	}
	if p.inMap && p.mapLine(l) {
		return
	}
	if p.frame != nil && p.frameDetail(l) {
		return
	}
	p.frame = nil
	p.skip(l.no, "not a stack")
}

// meta reads headers and eu-stack's messages.
func (p *euParser) meta(l textLine) bool {
	t := l.text
	if strings.HasPrefix(t, "PID ") {
		if m := euPidRE.FindStringSubmatch(t); m != nil {
			pid, err := strconv.Atoi(m[1])
			if err != nil {
				return false
			}
			p.switchProc(pid)
			p.inMap = strings.HasSuffix(m[2], "module memory map")
			p.module = nil
			p.cur, p.frame = nil, nil
			p.skipped.close()
			return true
		}
	}
	if strings.HasPrefix(t, "TID ") {
		if m := euTidRE.FindStringSubmatch(t); m != nil {
			tid, err := strconv.Atoi(m[1])
			if err != nil || tid <= 0 {
				return false
			}
			p.thread(tid, true)
			p.inMap = false
			p.frame = nil
			p.skipped.close()
			return true
		}
	}
	if euCommandRE.MatchString(t) {
		return true // the command line, as a shell echoed it
	}
	msg, ok := strings.CutPrefix(t, "eu-stack: ")
	if !ok && euBareMsgRE.MatchString(t) {
		msg, ok = t, true // "tid N: …" without the program's name
	}
	if ok {
		p.frame = nil
		if m := euMsgTidRE.FindStringSubmatch(msg); m != nil {
			if tid, err := strconv.Atoi(m[1]); err == nil && tid > 0 {
				et := p.thread(tid, false)
				addThreadNote(et.t, "eu-stack: "+strings.TrimPrefix(msg, "tid "+m[1]+": "))
				return true
			}
		}
		p.notes.add(p.process().p, "eu-stack: "+msg)
		return true
	}
	return false
}

func (p *euParser) switchProc(pid int) {
	if pr := p.byPid[pid]; pr != nil {
		p.proc = pr
		return
	}
	if p.proc != nil && p.proc.p.Pid == 0 {
		p.proc.p.Pid = pid // threads read before (eu-stack -1 prints no PID line)
		p.byPid[pid] = p.proc
		return
	}
	p.newProc(pid)
}

func (p *euParser) newProc(pid int) *euProc {
	pr := &euProc{p: &Process{Pid: pid}, byTid: map[int]*euThread{}}
	p.procs = append(p.procs, pr)
	p.proc = pr
	if p.byPid == nil {
		p.byPid = map[int]*euProc{}
	}
	if pid != 0 {
		p.byPid[pid] = pr
	}
	return pr
}

func (p *euParser) process() *euProc {
	if p.proc == nil {
		p.newProc(0)
	}
	return p.proc
}

// thread returns the thread tid of the current process; header says a
// "TID N:" line starts it (again).
func (p *euParser) thread(tid int, header bool) *euThread {
	pr := p.process()
	et := pr.byTid[tid]
	if et == nil {
		et = &euThread{t: p.slab.next(), lastNo: -1}
		et.t.Tid = tid
		pr.byTid[tid] = et
		pr.threads = append(pr.threads, et)
	} else if header && len(et.t.Stack) > 0 {
		// listed again: the latest listing replaces the earlier one
		et.t.Stack, et.t.Notes, et.lastNo = nil, nil, -1
	}
	if header {
		p.cur = et
	}
	return et
}

// frameLine reads "#N  0xPC[ - 1] [SYMBOL][ - MODULE]".
func (p *euParser) frameLine(l textLine) bool {
	num, ok := frameNumber(l.text)
	if !ok {
		return false
	}
	body := strings.TrimLeft(l.text[1+len(num):], " \t")
	if !strings.HasPrefix(body, "0x") {
		return false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n > 1<<20 {
		p.skip(l.no, "frame number out of range")
		return true
	}
	f, complete := parseEUFrame(body)
	if strings.HasPrefix(f.Func, "in ") {
		// gdb's "#0  0x… in f ()": not eu-stack's
		p.frame = nil
		p.skip(l.no, "not an eu-stack frame")
		return true
	}
	et := p.cur
	switch {
	case et == nil:
		et = p.implicitThread()
	case n <= et.lastNo:
		et = p.implicitThread()
	}
	if n > et.lastNo+1 {
		addThreadNote(et.t, missingFrames(et.lastNo, n))
	}
	et.lastNo = n
	if !complete || l.cut {
		addThreadNote(et.t, cutFrame(l.no, n))
	}
	et.t.Stack = append(et.t.Stack, f)
	p.frame = &et.t.Stack[len(et.t.Stack)-1]
	p.fIndent = l.indent
	p.inMap = false
	p.skipped.close()
	return true
}

// implicitThread holds frames without a "TID N:" line before them.
func (p *euParser) implicitThread() *euThread {
	pr := p.process()
	et := &euThread{t: p.slab.next(), lastNo: -1}
	pr.threads = append(pr.threads, et)
	p.cur = et
	return et
}

// parseEUFrame reads what follows "#N  ". complete is false when the line
// was cut inside the address.
func parseEUFrame(body string) (f Frame, complete bool) {
	pc, ok, rest, cut := framePC(body)
	if cut {
		return f, false
	}
	if ok {
		f.PC = pc
	}
	if rest == "" {
		return f, ok
	}
	if rest[0] != ' ' {
		return Frame{}, false
	}
	// the activation column (-a): "- 1" or four blanks
	if strings.HasPrefix(rest, " - 1") && (len(rest) == 4 || rest[4] == ' ') {
		rest = rest[4:]
	}
	rest = strings.TrimSpace(rest)
	sym := rest
	if i := strings.LastIndex(" "+rest, " - "); i >= 0 {
		// " - MODULE" (-m): the module is a path, "[vdso: N]" or a name
		mod := rest[i+2:]
		if i == 0 {
			mod = rest[2:]
		}
		if mod != "" && (mod[0] == '/' || mod[0] == '[' || !strings.ContainsRune(mod, ' ')) {
			f.Module = mod
			if i == 0 {
				sym = ""
			} else {
				sym = strings.TrimSpace(rest[:i-1])
			}
		}
	}
	if strings.HasPrefix(sym, "_Z") || strings.HasPrefix(sym, "_R") {
		sym = Demangle(sym)
	}
	if sym == "??" {
		sym = ""
	}
	f.Func = sym
	if lldbSignalFuncs[noSymbolVersion(sym)] {
		f.Signal = true
	}
	return f, true
}

// noSymbolVersion drops a symbol version ("@GLIBC_2.2.5", "@@…").
func noSymbolVersion(s string) string {
	if i := strings.IndexByte(s, '@'); i > 0 {
		return s[:i]
	}
	return s
}

// frameDetail reads the lines eu-stack prints under a frame: its build
// id, module start and offset (-b), and its source line (-s).
func (p *euParser) frameDetail(l textLine) bool {
	t := l.text
	if t[0] == '[' {
		if m := euBuildIDRE.FindStringSubmatch(t); m != nil {
			start, err := strconv.ParseUint(m[2], 16, 64)
			if err == nil && p.frame.PC >= start {
				p.frame.Offset = p.frame.PC - start
			}
			return true
		}
	}
	if l.indent > p.fIndent || euSourceRE.MatchString(t) {
		file, line := t, 0
		if c := strings.LastIndexByte(t, ':'); c > 0 && allDigits(t[c+1:]) {
			file, line = t[:c], atoiOr0(t[c+1:])
			if c2 := strings.LastIndexByte(file, ':'); c2 > 0 && allDigits(file[c2+1:]) {
				file, line = file[:c2], atoiOr0(file[c2+1:])
			}
		}
		if p.frame.File == "" {
			p.frame.File, p.frame.Line = file, line
		}
		return true
	}
	return false
}

func atoiOr0(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// mapLine reads the module map of -l: "0xSTART-0xEND NAME", then, each
// indented, "[BUILD-ID]", the ELF file ("-" when none) and the debug
// file.
func (p *euParser) mapLine(l textLine) bool {
	t := l.text
	if strings.HasPrefix(t, "0x") {
		if m := euModuleRE.FindStringSubmatch(t); m != nil {
			start, err1 := strconv.ParseUint(m[1], 16, 64)
			end, err2 := strconv.ParseUint(m[2], 16, 64)
			if err1 != nil || err2 != nil {
				return false
			}
			pr := p.process().p
			if len(pr.Modules) >= 1<<16 {
				return true
			}
			pr.Modules = append(pr.Modules, Module{Path: m[3], Start: start, End: end})
			p.module = &pr.Modules[len(pr.Modules)-1]
			p.modLine = 0
			return true
		}
	}
	if p.module == nil {
		return false
	}
	if m := euIDRE.FindStringSubmatch(t); m != nil && p.modLine == 0 {
		p.module.BuildID = strings.ToLower(m[1])
		return true
	}
	if l.indent < 2 && !strings.HasPrefix(t, "/") && t != "-" {
		return false
	}
	p.modLine++
	if p.modLine == 1 && t != "-" {
		p.module.Path = t // the ELF file; the header has its base name only
	}
	return p.modLine <= 2
}

// finish builds the snapshot; nil when no thread was read.
func (p *euParser) finish() *Snapshot {
	// -i evidence: two frames in a row at one PC under different names
	inlines := false
	for _, pr := range p.procs {
		for _, et := range pr.threads {
			st := et.t.Stack
			for i := 0; i+1 < len(st) && !inlines; i++ {
				if st[i].PC != 0 && st[i].PC == st[i+1].PC && st[i].Func != st[i+1].Func {
					inlines = true
				}
			}
		}
	}
	snap := &Snapshot{Schema: Schema, Source: "eu-stack", Samples: 1}
	for _, pr := range p.procs {
		for _, et := range pr.threads {
			st := et.t.Stack
			if inlines {
				for i := 0; i+1 < len(st); i++ {
					if st[i].PC != 0 && st[i].PC == st[i+1].PC && !st[i].Signal && !st[i+1].Signal {
						st[i].Inlined = true
					}
				}
			}
			for _, f := range st {
				if f.Func == "_start" && f.Module != "" && pr.p.Exe == "" && et.t.Tid == pr.p.Pid {
					pr.p.Exe = f.Module
				}
			}
			if len(st) == 0 {
				addThreadNote(et.t, "no frames in the dump")
				et.t.Stack = []Frame{}
			}
			pr.p.Threads = append(pr.p.Threads, et.t)
		}
		if len(pr.p.Threads) > 0 {
			snap.Processes = append(snap.Processes, pr.p)
		}
	}
	if len(snap.Processes) == 0 {
		return nil
	}
	return snap
}

func (p *euParser) emptyError() error {
	return nothingRead(p.firstText, p.skipped.list, "empty input: no eu-stack output",
		`not eu-stack output: no thread ("TID 1234:") or frame ("#0  0x…")`)
}
