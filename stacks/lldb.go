package stacks

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// ParseLLDB reads lldb backtrace text — the output of `bt all`,
// `thread backtrace all`, `bt` or `thread list`, from `lldb --batch` or
// pasted from an interactive session — into a snapshot.
//
// Thread headers give the thread's index, name and, when lldb shows it
// (`thread list`, or a thread-format that has it), its tid: lldb's `bt`
// does not print tids, so a dump of `thread list` followed by `bt all`
// has them and one of `bt all` alone has none. A thread listed again
// (the stop report lldb prints on attach lists frame #0 of every thread
// before `bt all` lists them whole) is replaced by its latest listing.
//
// Frames are `frame #N: 0xPC MODULE`FUNC(ARGS) at FILE:LINE:COL`, with
// `+ OFFSET` instead of a location when there is no debug information,
// ` [opt]`/` [artificial]` flags and `OUTER [inlined] INNER` for inlined
// functions. Frame.Func is the function without lldb's argument list
// ("hangdoc_patient::Relay<int, 0>::forward"; a symbol printed without
// arguments keeps its parameter types, "std::thread::join()"); the
// arguments go to Frame.Args. lldb's `___lldb_unnamed_symbolN` (no
// symbol covers the PC) reads as an unknown function, and the signal
// trampoline (`__restore_rt`, `_sigtramp`, …) is a Signal frame.
//
// Inlined frames are those lldb marks `[inlined]`, and those it prints
// under the name of the function they are inlined into, without
// arguments, right above that function's own frame (lldb 14 does so for
// inlined functions whose name it cannot find, glibc's futex_wait for
// one). Their PCs are as lldb printed them.
//
// lldb's chatter (prompts, `Process N stopped`, `Executable module set
// to …`, source listings after a stop, Python tracebacks of a broken
// lldb Python module) is understood; `warning:`/`error:` lines become
// notes. Like ParseGDB, it returns what it understood and the line ranges
// it did not; the error is non-nil only when nothing could be read, or
// when reading r failed.
func ParseLLDB(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &lldbParser{}
	readErr := scanTextLines(r, p.line)
	snap, err := readResult(p.finish(), readErr, p.emptyError)
	return snap, p.skipped.list, err
}

type lldbProc struct {
	p       *Process
	threads []*lldbThread
	byIndex map[int]*lldbThread
}

type lldbThread struct {
	t      *Thread
	index  int // lldb's thread index, 0 for frames without a header
	lastNo int // number of the last frame read, -1 before any
	info   []lldbFrameInfo
	raw    []string // frame text, to tell an echoed frame
}

// lldbFrameInfo is what inlining is told from.
type lldbFrameInfo struct {
	concrete string // the function the frame's code belongs to, as FuncBase has it
	outer    string // for "A [inlined] B", A as printed
	marked   bool   // lldb printed "[inlined]"
	args     bool   // lldb printed an argument list
	located  bool   // lldb printed " at FILE:LINE" (debug information)
}

type lldbParser struct {
	lineTrack
	procs   []*lldbProc
	proc    *lldbProc
	cur     *lldbThread
	notes   procNotes
	anyArgs bool

	traceback bool // inside a Python traceback lldb printed
}

var (
	lldbProcessRE = lazyre.New(`^Process (\d+) (?:stopped|detached|resuming|exited|launched|attached|running|is running|interrupted)\b`)
	lldbAttachRE  = lazyre.New(`^\(lldb\)\s+(?:process attach|attach)\b.*?(?:--pid|-p)\s+(\d+)`)
	lldbExeRE     = lazyre.New(`^(?:Executable module set to "(.+)"\.?|Current executable set to '(.+)' \([^()]*\)\.?|\(lldb\) target create "([^"]+)"(?: --core "[^"]+")?)$`)
	lldbTidRE     = lazyre.New(`\btid = (0x[0-9a-fA-F]+|\d+)`)
	lldbCommandRE = lazyre.New(`^[$#] +(?:sudo +)?(?:\S*/)?lldb(?:-\d+)?(?: (?:.*? )?(?:-p|--attach-pid) +(\d+)\b.*| .*)?$`)
	lldbSourceRE  = lazyre.New(`^(?:-> +)?\d+ *\t|^-> +\d+`)
)

var lldbNoise = []string{
	"(lldb)", "Architecture set to", "Core file '", "Target ", "Platform: ",
	"Attaching to process", "There is a running process", "Command \"",
	"Executable module set to", "Current executable set to", "Process ",
}

func (p *lldbParser) line(l textLine) {
	if !p.next(l) {
		return
	}
	t := l.text
	if p.traceback {
		if l.indent > 0 {
			return
		}
		p.traceback = false
		p.note(nil, "lldb: "+t)
		return
	}
	sel := strings.TrimPrefix(t, "* ")
	if strings.HasPrefix(sel, "frame #") && p.frameLine(l, sel) {
		return
	}
	if strings.HasPrefix(sel, "thread #") && p.header(l, sel) {
		return
	}
	if len(sel) > 3 && sel[0] == '#' && isDigit(sel[1]) && p.guiFrameLine(l, sel) {
		return
	}
	if p.meta(l) {
		return
	}
	p.skip(l.no, "not a stack")
}

// meta handles lldb's chatter; it reports whether the line was understood.
func (p *lldbParser) meta(l textLine) bool {
	t := l.text
	switch {
	case strings.HasPrefix(t, "warning: "), strings.HasPrefix(t, "error: "):
		p.note(nil, "lldb: "+t)
		return true
	case t == "Traceback (most recent call last):":
		p.traceback = true // lldb's Python module is broken; the backtraces are not
		return true
	case p.cur != nil && lldbSourceRE.MatchString(t):
		return true // source lines lldb lists after a stop location
	case t == "^":
		return true
	}
	if m := lldbCommandRE.FindStringSubmatch(t); m != nil {
		// the command line, as a shell echoed it: "$ lldb -p 1234 --batch …"
		if m[1] != "" {
			p.setPid(m[1])
		}
		return true
	}
	if m := lldbAttachRE.FindStringSubmatch(t); m != nil {
		p.setPid(m[1])
		return true
	}
	if m := lldbProcessRE.FindStringSubmatch(t); m != nil {
		p.setPid(m[1])
		p.cur = nil
		return true
	}
	if strings.HasPrefix(t, "process ") && allDigits(t[len("process "):]) {
		p.setPid(t[len("process "):]) // lldb gui's Threads pane: the tree's root
		p.cur = nil
		return true
	}
	if m := lldbExeRE.FindStringSubmatch(t); m != nil {
		exe := m[1]
		if exe == "" {
			exe = m[2]
		}
		if exe == "" {
			exe = m[3] // (lldb) target create "EXE" --core "CORE"
		}
		if pr := p.process(); pr.p.Exe == "" {
			pr.p.Exe = exe
		}
		return true
	}
	for _, pre := range lldbNoise {
		if strings.HasPrefix(t, pre) {
			if pre == "Process " || pre == "Target " {
				// only lldb's own sentences: "Process 12 …", "Target 0: (x) stopped."
				rest := t[len(pre):]
				if rest == "" || !isDigit(rest[0]) {
					return false
				}
			}
			return true
		}
	}
	return false
}

// setPid names the current process, or starts another one when the dump
// moves on to a process other than the one whose threads were read.
func (p *lldbParser) setPid(s string) {
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return
	}
	pr := p.process()
	switch {
	case pr.p.Pid == pid:
	case pr.p.Pid == 0:
		pr.p.Pid = pid
	default:
		np := p.newProc()
		np.p.Pid = pid
	}
}

func (p *lldbParser) process() *lldbProc {
	if p.proc == nil {
		p.newProc()
	}
	return p.proc
}

func (p *lldbParser) newProc() *lldbProc {
	pr := &lldbProc{p: &Process{}, byIndex: map[int]*lldbThread{}}
	p.procs = append(p.procs, pr)
	p.proc = pr
	p.cur = nil
	return pr
}

// header reads a thread header: `thread #2, name = 'ant', stop reason = …`
// from `bt`, or `thread #2: tid = 1235, 0x… libc.so.6`f at x.c:3:1,
// name = 'ant', …` from `thread list`.
func (p *lldbParser) header(l textLine, t string) bool {
	rest := t[len("thread #"):]
	j := 0
	for j < len(rest) && isDigit(rest[j]) {
		j++
	}
	if j == 0 || j > 9 {
		return false
	}
	if j < len(rest) && rest[j] != ',' && rest[j] != ':' {
		return false
	}
	idx, _ := strconv.Atoi(rest[:j])
	rest = rest[j:]
	listed := strings.HasPrefix(rest, ":")

	tid := 0
	if m := lldbTidRE.FindStringSubmatch(rest); m != nil {
		if v, err := strconv.ParseInt(m[1], 0, 64); err == nil && v > 0 && v < 1<<31 {
			tid = int(v)
		}
	}
	name, hasName := lldbQuoted(rest, "name = '")

	pr := p.process()
	lt := pr.byIndex[idx]
	if lt == nil {
		lt = &lldbThread{t: &Thread{Number: strconv.Itoa(idx)}, index: idx}
		pr.byIndex[idx] = lt
		pr.threads = append(pr.threads, lt)
	} else {
		// listed again: the latest listing replaces the earlier one
		lt.t.Stack, lt.info, lt.raw, lt.t.Notes = nil, nil, nil, nil
	}
	lt.lastNo = -1
	if tid > 0 {
		lt.t.Tid = tid
	}
	if hasName {
		lt.t.Name = name
	}
	p.cur = lt
	p.skipped.close()

	if listed {
		// `thread list`: the stop location is frame #0
		loc := strings.TrimSpace(rest[1:])
		if m := lldbTidRE.FindStringIndex(loc); m != nil && m[0] == 0 {
			loc = strings.TrimPrefix(strings.TrimSpace(loc[m[1]:]), ",")
			loc = strings.TrimSpace(loc)
		}
		if strings.HasPrefix(loc, "0x") {
			end := len(loc)
			for _, key := range []string{", name = '", ", queue = '", ", activity = ", ", stop reason = "} {
				if k := strings.Index(loc, key); k >= 0 && k < end {
					end = k
				}
			}
			p.addFrame(l, lt, 0, loc[:end])
		}
	}
	return true
}

// lldbQuoted returns the value after key up to the closing quote: the
// quote followed by ", " or the end of s.
func lldbQuoted(s, key string) (string, bool) {
	i := strings.Index(s, key)
	if i < 0 {
		return "", false
	}
	v := s[i+len(key):]
	if e := strings.Index(v, "', "); e >= 0 {
		return v[:e], true
	}
	if strings.HasSuffix(v, "'") {
		return v[:len(v)-1], true
	}
	return v, true // cut mid-way
}

// frameLine reads `frame #N: …`.
func (p *lldbParser) frameLine(l textLine, t string) bool {
	rest := t[len("frame #"):]
	j := 0
	for j < len(rest) && isDigit(rest[j]) {
		j++
	}
	if j == 0 || j > 7 || j == len(rest) || rest[j] != ':' {
		return false
	}
	num, _ := strconv.Atoi(rest[:j])
	body := strings.TrimSpace(rest[j+1:])

	lt := p.cur
	switch {
	case lt == nil:
		lt = p.implicitThread()
	case num <= lt.lastNo:
		// frames without a header (`frame select`, `up`, or a paste
		// without the thread line): a thread of their own
		lt = p.implicitThread()
	}
	if num > lt.lastNo+1 {
		addThreadNote(lt.t, missingFrames(lt.lastNo, num))
	}
	lt.lastNo = num
	p.addFrame(l, lt, num, body)
	p.skipped.close()
	return true
}

// guiFrameLine reads a frame of lldb gui's Threads pane (its box and
// tree taken off by repair_tui.go): "#3: SDL_WaitEventTimeout_REAL +
// 485", a symbol and the offset into it, no PC, no module.
func (p *lldbParser) guiFrameLine(l textLine, t string) bool {
	rest := t[1:]
	j := digitsEnd(rest, 0)
	if j == 0 || j > 7 || j+1 >= len(rest) || rest[j] != ':' || rest[j+1] != ' ' {
		return false
	}
	body := strings.TrimSpace(rest[j+2:])
	if body == "" || strings.ContainsAny(body, "`(") || strings.HasPrefix(body, "0x") {
		return false // not the pane's form
	}
	num, _ := strconv.Atoi(rest[:j])
	lt := p.cur
	if lt == nil || num <= lt.lastNo {
		lt = p.implicitThread()
	}
	if num > lt.lastNo+1 {
		addThreadNote(lt.t, missingFrames(lt.lastNo, num))
	}
	lt.lastNo = num
	name := body
	if i := strings.LastIndex(body, " + "); i > 0 && allDigits(body[i+3:]) {
		name = body[:i]
	}
	if strings.IndexByte(name, ' ') >= 0 {
		return false
	}
	f := Frame{Func: name, Signal: lldbSignalFuncs[name]}
	if l.cut {
		addThreadNote(lt.t, cutFrame(l.no, num))
	}
	lt.t.Stack = append(lt.t.Stack, f)
	lt.info = append(lt.info, lldbFrameInfo{concrete: FuncBase(name)})
	lt.raw = append(lt.raw, body)
	p.skipped.close()
	return true
}

func (p *lldbParser) implicitThread() *lldbThread {
	pr := p.process()
	lt := &lldbThread{t: &Thread{}, lastNo: -1}
	pr.threads = append(pr.threads, lt)
	p.cur = lt
	return lt
}

func (p *lldbParser) addFrame(l textLine, lt *lldbThread, num int, body string) {
	f, info, complete := parseLLDBFrame(body)
	if !complete || l.cut {
		addThreadNote(lt.t, cutFrame(l.no, num))
	}
	if len(f.Args) > 0 {
		p.anyArgs = true
	}
	lt.t.Stack = append(lt.t.Stack, f)
	lt.info = append(lt.info, info)
	lt.raw = append(lt.raw, body)
}

// lldbSignalFuncs are the signal trampolines: the frame the kernel pushed
// for a signal handler (gdb's "<signal handler called>").
var lldbSignalFuncs = map[string]bool{
	"__restore_rt": true, "_sigtramp": true, "__kernel_rt_sigreturn": true,
	"<signal handler called>": true, "__sigreturn": true,
}

// parseLLDBFrame reads what follows "frame #N: ". complete is false when
// the line was cut before its end.
func parseLLDBFrame(body string) (f Frame, info lldbFrameInfo, complete bool) {
	complete = true
	if !strings.HasPrefix(body, "0x") {
		return f, info, false
	}
	pc, ok, rest, cut := framePC(body)
	if cut {
		return f, info, false
	}
	if ok {
		f.PC = pc
	}
	if rest == "" {
		return f, info, true // a frame lldb printed with no module
	}
	if rest[0] != ' ' {
		return f, info, false
	}
	rest = strings.TrimSpace(rest)
	tick := strings.IndexByte(rest, '`')
	if tick < 0 || strings.IndexByte(rest[:tick], ' ') >= 0 {
		// no function: "libfoo.so", or just a location
		if i := strings.Index(rest, " at "); i >= 0 {
			rest = lldbLocation(&f, rest, i)
		} else if strings.HasPrefix(rest, "at ") {
			rest = lldbLocation(&f, " "+rest, 0)
		}
		if mod := strings.TrimSpace(rest); mod != "" && !strings.ContainsAny(mod, " `") {
			f.Module = mod
		}
		return f, info, true
	}
	f.Module = rest[:tick]
	s := rest[tick+1:]

	// flags lldb appends
	for {
		before := s
		s = strings.TrimSuffix(s, " [opt]")
		s = strings.TrimSuffix(s, " [artificial]")
		if s == before {
			break
		}
	}
	// " at FILE:LINE[:COL]": the last " at " (arguments may hold one, but
	// never at the end of the line)
	if i := strings.LastIndex(s, " at "); i > 0 {
		if loc := s[i+len(" at "):]; lldbIsLocation(loc) {
			s = lldbLocation(&f, s, i)
			info.located = true
		} else if strings.HasSuffix(loc, ":") && !strings.ContainsAny(loc, " ()") {
			s = s[:i] // "at x.c:" cut before its line
			f.File = strings.TrimSuffix(loc, ":")
			complete = false
		}
	}
	// " + OFFSET" (no debug information)
	if i := strings.LastIndex(s, " + "); i > 0 && allDigits(s[i+3:]) {
		s = s[:i]
	}
	concrete, inner := s, s
	if i := strings.Index(s, " [inlined] "); i >= 0 {
		concrete, inner = s[:i], s[i+len(" [inlined] "):]
		info.marked = true
		f.Inlined = true
	}
	name, args, ok := splitLLDBArgs(inner)
	if !ok {
		complete = false
	}
	if info.marked {
		concrete, _, _ = splitLLDBArgs(concrete)
		info.outer = concrete
	} else {
		concrete = name
	}
	// "f(int) const", "f() const" and "f" (arguments dropped) are one function
	info.concrete = FuncBase(concrete)
	info.args = args != nil
	f.Args = args
	if strings.HasPrefix(name, "___lldb_unnamed_symbol") {
		name = "" // lldb's name for code no symbol covers
	}
	f.Func = name
	if lldbSignalFuncs[name] {
		f.Signal = true
	}
	return f, info, complete
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// lldbIsLocation says whether s is "FILE:LINE" or "FILE:LINE:COL".
func lldbIsLocation(s string) bool {
	c := strings.LastIndexByte(s, ':')
	if c <= 0 || !allDigits(s[c+1:]) {
		return false
	}
	if c2 := strings.LastIndexByte(s[:c], ':'); c2 > 0 && allDigits(s[c2+1:c]) {
		c = c2
	}
	return c > 0 && !strings.ContainsAny(s[:c], "()`")
}

// lldbLocation fills the frame's file and line from s[i+4:] (" at …") and
// returns what comes before.
func lldbLocation(f *Frame, s string, i int) string {
	loc := s[i+len(" at "):]
	c := strings.LastIndexByte(loc, ':')
	if c <= 0 {
		return s[:i]
	}
	file, line := loc[:c], loc[c+1:]
	if c2 := strings.LastIndexByte(file, ':'); c2 > 0 && allDigits(file[c2+1:]) {
		file, line = file[:c2], file[c2+1:]
	}
	if n, err := strconv.Atoi(line); err == nil && n >= 0 {
		f.File, f.Line = file, n
	}
	return s[:i]
}

// splitLLDBArgs splits a function as lldb prints it with its arguments —
// "ns::f(a=1, b=<unavailable>) const" — into the name and the
// arguments. lldb writes the arguments inside the first parenthesis of
// the demangled name that follows its first template argument list, in
// place of the parameter types; a name printed without arguments
// ("std::thread::join()", "main") is returned whole with nil args. ok is
// false when the argument list does not close (a line cut mid-way).
func splitLLDBArgs(s string) (name string, args []Arg, ok bool) {
	open := lldbArgsParen(s)
	if open < 0 {
		return strings.TrimSpace(s), nil, true
	}
	close := closeParen(s, open)
	if close < 0 {
		// cut mid-way: arguments or parameter types, either way not the name
		return lldbName(s[:open]), nil, false
	}
	args, isArgs := splitArgs(s[open+1 : close])
	if !isArgs && close+1 < len(s) && s[close+1] == '(' {
		// "operator()(this=…)": the arguments follow the operator's parentheses
		next := closeParen(s, close+1)
		if next < 0 {
			return lldbName(s[:close+1]), nil, false
		}
		if args, isArgs = splitArgs(s[close+2 : next]); isArgs {
			return strings.TrimSpace(s[:close+1]), args, true
		}
	}
	if !isArgs {
		return strings.TrimSpace(s), nil, true
	}
	return lldbName(s[:open]), args, true
}

func lldbName(s string) string {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "operator") {
		s += "()" // "operator()(this=…)": lldb wrote the arguments into its parentheses
	}
	return s
}

// lldbArgsParen finds the parenthesis lldb writes the arguments into, as
// lldb does: the first '(' after the first template argument list when a
// '<' comes before the first '(', skipping "(anonymous namespace)".
func lldbArgsParen(s string) int {
	open := strings.IndexByte(s, '(')
	if lt := strings.IndexByte(s, '<'); lt >= 0 && open >= 0 && lt < open {
		depth := 1
		i := lt + 1
		for ; i < len(s) && depth > 0; i++ {
			switch s[i] {
			case '<':
				depth++
			case '>':
				depth--
			}
		}
		if depth > 0 {
			return -1
		}
		open = strings.IndexByte(s[i:], '(')
		if open >= 0 {
			open += i
		}
	}
	for open >= 0 && strings.HasPrefix(s[open:], "(anonymous namespace)") {
		next := strings.IndexByte(s[open+len("(anonymous namespace)"):], '(')
		if next < 0 {
			return -1
		}
		open += len("(anonymous namespace)") + next
	}
	return open
}

// splitArgs splits "a=1, b=(x`y), c=\"s, t\"" into arguments; isArgs is
// false when a piece is not name=value (parameter types, not arguments).
// An empty list is not an argument list.
func splitArgs(s string) (args []Arg, isArgs bool) {
	if strings.TrimSpace(s) == "" {
		return nil, false
	}
	depth := 0
	start := 0
	var q quoteState
	add := func(piece string) bool {
		piece = strings.TrimSpace(piece)
		eq := strings.IndexByte(piece, '=')
		if eq <= 0 {
			return false
		}
		name := piece[:eq]
		if strings.ContainsAny(name, " <>*&,") && name != "(null)" {
			return false
		}
		if len(args) < maxArgs {
			args = append(args, NewArg(name, clipText(piece[eq+1:], maxArgValue)))
		}
		return true
	}
	for i := 0; i < len(s); i++ {
		if q.skip(s, &i) {
			continue
		}
		switch s[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 && i+1 < len(s) && s[i+1] == ' ' {
				if !add(s[start:i]) {
					return nil, false
				}
				start = i + 2
			}
		}
	}
	if !add(s[start:]) {
		return nil, false
	}
	return args, true
}

// note adds a note to process pr, or to the current one when pr is nil.
func (p *lldbParser) note(pr *Process, n string) {
	if pr == nil {
		pr = p.process().p
	}
	p.notes.add(pr, n)
}

// finish marks inlined frames, drops frames lldb echoed on their own
// (`frame select`), and builds the snapshot; nil when no thread was read.
func (p *lldbParser) finish() *Snapshot {
	snap := &Snapshot{Schema: Schema, Source: "lldb", Samples: 1}
	for _, pr := range p.procs {
		// frames lldb printed on their own (`frame select`, `up`) repeat
		// a frame of a listed thread
		echoes := map[string]bool{}
		for _, lt := range pr.threads {
			if lt.index == 0 && len(lt.raw) == 1 {
				echoes[lt.raw[0]] = false
			}
		}
		if len(echoes) > 0 {
			for _, lt := range pr.threads {
				if lt.index > 0 {
					for _, r := range lt.raw {
						if _, ok := echoes[r]; ok {
							echoes[r] = true
						}
					}
				}
			}
		}
		for _, lt := range pr.threads {
			if lt.index == 0 && len(lt.raw) == 1 && echoes[lt.raw[0]] {
				continue // a frame lldb printed again after a backtrace
			}
			markLLDBInlined(lt)
			if len(lt.t.Stack) == 0 {
				addThreadNote(lt.t, "no frames in the dump")
				lt.t.Stack = []Frame{}
			}
			pr.p.Threads = append(pr.p.Threads, lt.t)
			if lt.index == 1 && pr.p.Pid == 0 && lt.t.Tid > 0 {
				pr.p.Pid = lt.t.Tid // lldb's thread #1 is the main thread
			}
		}
		if len(pr.p.Threads) > 0 {
			snap.Processes = append(snap.Processes, pr.p)
		}
	}
	if len(snap.Processes) == 0 {
		return nil
	}
	snap.Evidence.Arguments = p.anyArgs
	return snap
}

// markLLDBInlined marks the frames lldb prints under the name of the
// function they are inlined into: no "[inlined]", no arguments, a source
// location, and the next frame in the same function. When the outermost
// frame of a machine frame is an inlined one ("A [inlined] B" followed by
// a frame of another function), lldb left out A's own frame (lldb 14 does
// for some inlined chains): it is put back, named as the "[inlined]"
// line names it, with that frame's PC.
func markLLDBInlined(lt *lldbThread) {
	st, info := lt.t.Stack, lt.info
	var out []Frame // made only when a frame is put back
	for i := range st {
		in := info[i]
		if !in.marked && !in.args && in.located && in.concrete != "" &&
			i+1 < len(st) && info[i+1].concrete == in.concrete {
			st[i].Inlined = true
		}
		if out != nil {
			out = append(out, st[i])
		}
		if in.marked && in.outer != "" && i+1 < len(st) && info[i+1].concrete != in.concrete {
			if out == nil {
				out = append(make([]Frame, 0, len(st)+4), st[:i+1]...)
			}
			out = append(out, Frame{Func: in.outer, Module: st[i].Module, PC: st[i].PC})
			addThreadNote(lt.t, fmt.Sprintf("lldb printed no frame for %s, into which frame #%d is inlined: added", in.outer, i))
		}
	}
	if out != nil {
		lt.t.Stack = out
	}
	lt.info, lt.raw = nil, nil
}

func (p *lldbParser) emptyError() error {
	return nothingRead(p.firstText, p.skipped.list, "empty input: no lldb backtrace",
		`not an lldb backtrace: no frame ("frame #0: 0x…") or thread header ("thread #1, …")`)
}
