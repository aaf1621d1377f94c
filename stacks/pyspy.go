package stacks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// py-spy dump (src/dump.rs, src/stack_trace.rs in benfred/py-spy) prints,
// for a live process:
//
//	Process 4137: /usr/bin/python3 lock.py
//	Python v3.11.2 (/usr/bin/python3.11)
//	Parent Process 4130: python3 parent.py        (--subprocesses only)
//
//	Thread 4137 (idle): "MainThread"
//	    main (lock.py:48)
//	        Arguments:                             (--locals)
//	            tid: 4137
//	        Locals:
//	            t: <Thread at 0x7f…>
//	    <module> (lock.py:52)
//
// The status is "idle", "active" or "active+gil"; for a core file
// (`py-spy dump --core`) it is "gil" for the thread holding the GIL and
// absent otherwise, after "Signal 6: core.4137". The id is the native
// tid, or the pthread_t in hex (macOS, or no tid known). Frames are
// innermost first: "name (file:line)", "name (file)" when the line is
// unknown; --native adds C frames named after their library
// ("__futex_abstimed_wait_common (libc.so.6)") or their source file.
// --subprocesses prints each child after a line of dashes.
// `py-spy dump --json` prints the StackTrace structs as a JSON array.

func init() {
	registerFormat(&Format{Name: "py-spy", Sniff: sniffPySpy, Parse: ParsePySpy})
}

var (
	pyProcessRE = lazyre.New(`^Process (\d+): ?(.*)$`)
	pyParentRE  = lazyre.New(`^Parent Process (\d+): ?(.*)$`)
	pyVersionRE = lazyre.New(`^Python v(\d[^ ]*)(?: \((.*)\))?$`)
	pySignalRE  = lazyre.New(`^Signal (\d+): (.*)$`)
	// A thread header; the id may be left out by hand ("Thread (idle):
	// "MainThread"") when the status says it is one.
	pyThreadRE = lazyre.New(`^Thread(?: (\d+|0[xX][0-9a-fA-F]+)(?: \((idle|active|active\+gil|gil)\))?| \((idle|active|active\+gil|gil)\))(?:: "(.*)")?$`)
	pyLocalRE  = lazyre.New(`^([A-Za-z_][A-Za-z0-9_]*|\.\d+): (.*)$`)

	pySniffProcRE   = lazyre.New(sniffPrefix + `Process \d+: .*\n(?:\d{4}-\d\d-\d\d\S* )?[ \t>]*Python v\d`)
	pySniffThreadRE = lazyre.New(sniffPrefix + `Thread(?: (?:\d+|0[xX][0-9a-fA-F]+)(?: \((?:idle|active|active\+gil|gil)\))?| \((?:idle|active|active\+gil|gil)\))(?:: ".*")?[ \t]*\r?\n[ \t>]+\S.* \([^()\n]*\)[ \t]*\r?$`)
	pySniffJSONRE   = lazyre.New(`"owns_gil"\s*:\s*(?:true|false)`)
	pySniffJSON2RE  = lazyre.New(`"(?:os_thread_id|thread_id)"\s*:`)
)

func sniffPySpy(head []byte) int {
	head = sniffText(head)
	s := 10*len(pySniffProcRE.FindAllIndex(head, 4)) + 3*len(pySniffThreadRE.FindAllIndex(head, 20))
	if pySniffJSONRE.Match(head) && pySniffJSON2RE.Match(head) {
		s += 20
	}
	return s
}

// ParsePySpy reads `py-spy dump` output: text (with --native, --locals,
// --subprocesses, from a core file) or --json, as printed or pasted into
// a bug report. Python frames carry Func, File (as py-spy printed it:
// shortened to the package path unless --full-filenames) and Line;
// native frames carry Func and Module (the library), or File and Line
// when py-spy had debug info. A thread's State is "S" for idle and "R"
// for active; the thread holds the GIL (Runtime.HoldsGIL) for "active+gil" and "gil". Arguments shown
// by --locals become the frame's Args.
func ParsePySpy(r io.Reader) (*Snapshot, []Skipped, error) {
	br := bufioReader(r)
	if b, err := br.Peek(1 << 10); len(b) > 0 || err == nil {
		if t := bytes.TrimLeft(b, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '[' {
			return parsePySpyJSON(br)
		}
	}
	p := &pyParser{}
	readErr := scanTextLines(br, p.feed)
	if p.json != nil {
		return p.fromPastedJSON(readErr)
	}
	snap := &Snapshot{Schema: Schema, Source: "py-spy", Samples: 1}
	for _, proc := range p.mergeRepeats() {
		if len(proc.Threads) > 0 {
			snap.Processes = append(snap.Processes, proc)
		}
	}
	if len(snap.Processes) == 0 {
		snap = nil
	} else {
		snap.Evidence.Arguments = p.anyArgs
		snap.Evidence.GIL = p.anyStatus
		snap.Evidence.Lineage = linkPySpyChildren(snap.Processes)
	}
	snap, err := readResult(snap, readErr, p.emptyError)
	return snap, p.skipped.list, err
}

// linkPySpyChildren fills Children from the "Parent Process" lines of
// --subprocesses, and Fork for a child that runs its parent's very
// command line: a fork() without exec (multiprocessing's fork start
// method, os.fork), which holds a copy of the parent's locks. It says
// whether the dump showed any lineage.
func linkPySpyChildren(procs []*Process) bool {
	byPid := map[int]*Process{}
	for _, p := range procs {
		byPid[p.Pid] = p
	}
	any := false
	for _, c := range procs {
		parent := byPid[c.PPid]
		if c.PPid == 0 || parent == nil || parent == c {
			continue
		}
		any = true
		parent.Children = append(parent.Children, c.Pid)
		if len(c.Cmdline) == 0 || strings.Join(c.Cmdline, " ") != strings.Join(parent.Cmdline, " ") {
			continue
		}
		f := &Fork{ParentPid: parent.Pid, ParentThreads: []int{}}
		for _, t := range parent.Threads {
			if t.Tid > 0 {
				f.ParentThreads = append(f.ParentThreads, t.Tid)
			}
		}
		c.Fork = f
		c.Notes = appendNote(c.Notes, fmt.Sprintf("runs the command line of its parent %d: taken for a fork() without exec", parent.Pid))
	}
	return any
}

type pyParser struct {
	procs   []*Process
	proc    *Process
	th      *Thread
	section string // "Arguments", "Locals" or "" under the last frame
	skipped skipList
	anyArgs bool
	// anyStatus: a thread line gave its status (idle, active,
	// active+gil, gil): py-spy read who holds the GIL.
	anyStatus bool
	first     int

	// a --json dump pasted inside a fence with prose around it
	json      *bytes.Buffer
	jsonStart int
	inFence   bool
}

func (p *pyParser) feed(l textLine) {
	t := l.text
	if p.json != nil {
		if isFence(t) {
			p.inFence = false
			return
		}
		if p.inFence {
			p.json.WriteString(t)
			p.json.WriteByte('\n')
		}
		return
	}
	if t == "" {
		return
	}
	if p.first == 0 {
		p.first = l.no
	}
	if isFence(t) {
		p.inFence = !p.inFence
		p.skipped.close()
		return
	}
	if t == "[" && p.proc == nil {
		// a JSON array: the --json form, pasted
		p.json = &bytes.Buffer{}
		p.jsonStart = l.no
		p.json.WriteString("[\n")
		p.inFence = true
		return
	}
	if p.line(l) {
		p.skipped.close()
		return
	}
	p.skipped.add(l.no, "not a py-spy dump")
}

func (p *pyParser) newProc() *Process {
	proc := &Process{Threads: []*Thread{}}
	p.procs = append(p.procs, proc)
	p.proc, p.th, p.section = proc, nil, ""
	return proc
}

func (p *pyParser) line(l textLine) bool {
	t := l.text
	switch {
	case strings.HasPrefix(t, "Process "):
		if m := pyProcessRE.FindStringSubmatch(t); m != nil {
			proc := p.proc
			if proc == nil || len(proc.Threads) > 0 || proc.Pid != 0 {
				proc = p.newProc()
			}
			proc.Pid, _ = strconv.Atoi(m[1])
			proc.Cmdline = boundedFields(m[2])
			return true
		}
	case strings.HasPrefix(t, "Parent Process "):
		if m := pyParentRE.FindStringSubmatch(t); m != nil && p.proc != nil {
			p.proc.PPid, _ = strconv.Atoi(m[1])
			return true
		}
	case strings.HasPrefix(t, "Python v"):
		if m := pyVersionRE.FindStringSubmatch(t); m != nil {
			if p.proc == nil {
				p.newProc()
			}
			if m[2] != "" && p.proc.Exe == "" {
				p.proc.Exe = m[2]
			}
			return true
		}
	case strings.HasPrefix(t, "Signal "):
		if m := pySignalRE.FindStringSubmatch(t); m != nil {
			proc := p.newProc()
			proc.Notes = append(proc.Notes, capNote(fmt.Sprintf("py-spy read a core file (signal %s): %s", m[1], m[2])))
			return true
		}
	case strings.HasPrefix(t, "Thread "):
		if m := pyThreadRE.FindStringSubmatch(t); m != nil {
			p.thread(m)
			return true
		}
	case strings.HasPrefix(t, "Error: "), strings.HasPrefix(t, "Warning: "):
		if p.proc == nil {
			p.newProc()
		}
		p.proc.Notes = appendNote(p.proc.Notes, "py-spy: "+t)
		return true
	case strings.Trim(t, "-─") == "" && len(t) >= 3:
		return true // the line --subprocesses prints between processes
	case (strings.HasPrefix(t, "$ ") || strings.HasPrefix(t, "# ")) && strings.Contains(t, "py-spy"):
		return true // the command, pasted with its output
	}
	if p.th == nil {
		return false
	}
	switch {
	case t == "Arguments:" || t == "Locals:":
		p.section = strings.TrimSuffix(t, ":")
		return true
	case p.section != "" && l.indent >= 10:
		if m := pyLocalRE.FindStringSubmatch(t); m != nil {
			if p.section == "Arguments" && len(p.th.Stack) > 0 {
				f := &p.th.Stack[len(p.th.Stack)-1]
				if len(f.Args) < maxPyArgs {
					f.Args = append(f.Args, NewArg(m[1], capValue(m[2])))
					p.anyArgs = true
				}
			}
			return true
		}
		return true // a repr that went on over several lines
	}
	if f, ok := parsePySpyFrame(t); ok {
		p.section = ""
		if len(p.th.Stack) < maxPyFrames {
			p.th.Stack = append(p.th.Stack, f)
		}
		if l.cut {
			p.th.Notes = appendNote(p.th.Notes, fmt.Sprintf("line %d: frame cut mid-way; its name may be partial", l.no))
		}
		return true
	}
	if l.indent >= 2 && !strings.HasSuffix(t, ")") {
		// a frame cut before the end of its "(file:line)"
		p.section = ""
		name := t
		if i := strings.LastIndex(t, " ("); i > 0 {
			name = t[:i]
		}
		if len(p.th.Stack) < maxPyFrames {
			p.th.Stack = append(p.th.Stack, Frame{Func: name})
		}
		p.th.Notes = appendNote(p.th.Notes, fmt.Sprintf("line %d: frame cut mid-way; its name may be partial", l.no))
		return true
	}
	return false
}

// mergeRepeats undoes a quirk of --subprocesses: py-spy prints the
// children after every thread of the parent (dump.rs loops over the
// children inside its loop over the threads), so a child's block comes
// once per parent thread and the parent's next thread follows it. The
// last block of a pid has exactly its threads; the threads an earlier
// block has beyond them are its parent's.
func (p *pyParser) mergeRepeats() []*Process {
	last := map[int]*Process{}
	count := map[int]int{}
	for _, b := range p.procs {
		if b.Pid != 0 {
			last[b.Pid] = b
			count[b.Pid]++
		}
	}
	kept := map[int]*Process{}
	var out []*Process
	for _, b := range p.procs {
		if b.Pid == 0 || count[b.Pid] == 1 {
			out = append(out, b)
			if b.Pid != 0 {
				kept[b.Pid] = b
			}
			continue
		}
		real := last[b.Pid].Threads
		mine := map[[2]uint64]bool{}
		for _, t := range real {
			mine[threadKey(t)] = true
		}
		var extras []*Thread
		for _, t := range b.Threads {
			if !mine[threadKey(t)] {
				extras = append(extras, t)
			}
		}
		if parent := kept[b.PPid]; parent != nil && b.PPid != b.Pid {
			parent.Threads = append(parent.Threads, extras...)
		} else {
			real = append(real, extras...)
		}
		if k := kept[b.Pid]; k != nil {
			if b == last[b.Pid] {
				k.Threads = real
			}
			continue
		}
		b.Notes = appendNote(b.Notes, fmt.Sprintf("py-spy printed this process %d times (--subprocesses prints the children after each thread of the parent)", count[b.Pid]))
		kept[b.Pid] = b
		out = append(out, b)
		if b != last[b.Pid] {
			b.Threads = real
		}
	}
	return out
}

func threadKey(t *Thread) [2]uint64 { return [2]uint64{uint64(t.Tid), t.Handle()} }

// Bounds on what --locals may add to one frame.
const (
	maxPyArgs     = 32
	maxPyArgValue = 256
)

func capValue(s string) string {
	if len(s) <= maxPyArgValue {
		return s
	}
	cut := maxPyArgValue
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// boundedFields splits a command line, keeping at most 256 words.
func boundedFields(s string) []string {
	f := strings.Fields(s)
	if len(f) > 256 {
		f = f[:256]
	}
	if len(f) == 0 {
		return nil
	}
	return f
}

func (p *pyParser) thread(m []string) {
	if p.proc == nil {
		p.newProc()
	}
	status := m[2] + m[3]
	th := &Thread{Name: m[4], Stack: []Frame{}}
	if strings.HasPrefix(m[1], "0x") || strings.HasPrefix(m[1], "0X") {
		h, _ := strconv.ParseUint(m[1][2:], 16, 64)
		th.SetHandle(h)
	} else {
		th.Tid, _ = strconv.Atoi(m[1]) // 0 when the id was left out
	}
	p.anyStatus = p.anyStatus || status != ""
	switch status {
	case "idle":
		th.State = "S"
	case "active":
		th.State = "R"
	case "active+gil":
		th.State, th.Runtime = "R", PythonHoldingGIL()
	case "gil":
		th.Runtime = PythonHoldingGIL()
	}
	p.proc.Threads = append(p.proc.Threads, th)
	p.th, p.section = th, ""
}

// parsePySpyFrame reads "name (file:line)" or "name (file)".
func parsePySpyFrame(t string) (Frame, bool) {
	i, loc := lastParenGroup(t)
	if i <= 0 || t[i-1] != ' ' || loc == "" {
		return Frame{}, false
	}
	name := strings.TrimSpace(t[:i])
	if name == "" {
		return Frame{}, false
	}
	file, line := loc, 0
	if c := strings.LastIndexByte(loc, ':'); c > 0 {
		if n, err := strconv.Atoi(loc[c+1:]); err == nil && n >= 0 {
			file, line = loc[:c], n
		}
	}
	return pySpyFrame(name, file, "", line), true
}

// pySpyFrame builds a frame from py-spy's name, file name, module (set
// for native frames in --json) and line.
func pySpyFrame(name, file, module string, line int) Frame {
	f := Frame{Func: name}
	if strings.HasPrefix(name, "0x") {
		if pc, err := strconv.ParseUint(name[2:], 16, 64); err == nil {
			f.Func, f.PC = "", pc // a native frame with no symbol
		}
	}
	switch {
	case module == "" && isPythonFile(file):
		f.File, f.Line = file, line
	case line > 0 && file != module:
		f.File, f.Line, f.Module = file, line, module // C source from debug info
	default:
		if module == "" {
			module = file
		}
		if module != "?" {
			f.Module = module
		}
	}
	return f
}

// IsPythonFrame says whether a frame runs Python code, as every source
// gives one: no module (not native code) and a Python file, wherever the
// frame came from (a py-spy or faulthandler dump, a live or core read of
// the interpreter).
func IsPythonFrame(f Frame) bool { return f.Module == "" && isPythonFile(f.File) }

// isPythonFile says whether a frame's file name is Python source.
func isPythonFile(f string) bool {
	return strings.HasSuffix(f, ".py") || strings.HasSuffix(f, ".pyw") || strings.HasSuffix(f, ".pyx") ||
		strings.HasPrefix(f, "<") && f != "<autogenerated>" // "<frozen runpy>", "<string>", "<stdin>"; not Go's compiler-made wrappers
}

func (p *pyParser) emptyError() error {
	return nothingRead(p.first, p.skipped.list, "empty input: no py-spy dump",
		`not a py-spy dump: no thread ("Thread 4137 (idle): \"MainThread\"") with frames ("    main (app.py:12)")`)
}

// pySpyTrace is py-spy's StackTrace as --json writes it.
type pySpyTrace struct {
	Pid         int              `json:"pid"`
	ThreadID    uint64           `json:"thread_id"`
	ThreadName  *string          `json:"thread_name"`
	OSThreadID  *uint64          `json:"os_thread_id"`
	Active      bool             `json:"active"`
	OwnsGIL     bool             `json:"owns_gil"`
	Frames      []pySpyJSONFrame `json:"frames"`
	ProcessInfo *pySpyProcInfo   `json:"process_info"`
}

type pySpyJSONFrame struct {
	Name          string       `json:"name"`
	Filename      string       `json:"filename"`
	Module        *string      `json:"module"`
	ShortFilename *string      `json:"short_filename"`
	Line          int          `json:"line"`
	Locals        []pySpyLocal `json:"locals"`
	IsEntry       bool         `json:"is_entry"`
}

type pySpyLocal struct {
	Name string  `json:"name"`
	Arg  bool    `json:"arg"`
	Repr *string `json:"repr"`
}

type pySpyProcInfo struct {
	Pid         int            `json:"pid"`
	CommandLine string         `json:"command_line"`
	Parent      *pySpyProcInfo `json:"parent"`
}

func parsePySpyJSON(r io.Reader) (*Snapshot, []Skipped, error) {
	b, err := io.ReadAll(r)
	if err != nil && len(b) == 0 {
		return nil, nil, err
	}
	return pySpyFromJSON(b, 0, err)
}

// fromPastedJSON parses a --json dump found inside a fence.
func (p *pyParser) fromPastedJSON(readErr error) (*Snapshot, []Skipped, error) {
	return pySpyFromJSON(p.json.Bytes(), p.jsonStart-1, readErr, p.skipped.list...)
}

// pySpyFromJSON reads --json output; lineBase is added to the line
// numbers of errors (the array's first line in a pasted input).
func pySpyFromJSON(b []byte, lineBase int, readErr error, skipped ...Skipped) (*Snapshot, []Skipped, error) {
	var traces []pySpyTrace
	// Decode, not Unmarshal: prose may follow the array in a paste.
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&traces); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, skipped, &LineError{Line: lineBase + lineOf(b, se.Offset), Msg: "py-spy --json: " + se.Error()}
		case errors.As(err, &te):
			return nil, skipped, &LineError{Line: lineBase + lineOf(b, te.Offset), Msg: "py-spy --json: " + te.Error()}
		}
		end := int64(len(bytes.TrimRight(b, " \t\r\n")))
		return nil, skipped, &LineError{Line: lineBase + lineOf(b, end), Msg: "py-spy --json: " + err.Error()}
	}
	snap := &Snapshot{Schema: Schema, Source: "py-spy", Samples: 1}
	byPid := map[int]*Process{}
	// py-spy's text form prints the traces last first (main thread on top)
	for i := len(traces) - 1; i >= 0; i-- {
		tr := traces[i]
		pid := tr.Pid
		if pid == 0 && tr.ProcessInfo != nil {
			pid = tr.ProcessInfo.Pid
		}
		proc := byPid[pid]
		if proc == nil {
			proc = &Process{Pid: pid, Threads: []*Thread{}}
			if pi := tr.ProcessInfo; pi != nil {
				proc.Cmdline = boundedFields(pi.CommandLine)
				if pi.Parent != nil {
					proc.PPid = pi.Parent.Pid
				}
			}
			byPid[pid] = proc
			snap.Processes = append(snap.Processes, proc)
		}
		th := &Thread{Stack: []Frame{}, State: "S"}
		if tr.OwnsGIL {
			th.Runtime = PythonHoldingGIL()
		}
		if tr.Active {
			th.State = "R"
		}
		if tr.ThreadName != nil {
			th.Name = *tr.ThreadName
		}
		if tr.OSThreadID != nil && *tr.OSThreadID <= 1<<31 {
			th.Tid = int(*tr.OSThreadID)
		} else {
			th.SetHandle(tr.ThreadID)
		}
		for _, jf := range tr.Frames {
			if len(th.Stack) >= maxPyFrames {
				break
			}
			module := ""
			if jf.Module != nil {
				module = *jf.Module
			}
			f := pySpyFrame(jf.Name, jf.Filename, module, jf.Line)
			for _, lv := range jf.Locals {
				if lv.Arg && len(f.Args) < maxPyArgs {
					v := "?"
					if lv.Repr != nil {
						v = capValue(*lv.Repr)
					}
					f.Args = append(f.Args, NewArg(lv.Name, v))
					snap.Evidence.Arguments = true
				}
			}
			th.Stack = append(th.Stack, f)
		}
		proc.Threads = append(proc.Threads, th)
	}
	if len(snap.Processes) == 0 {
		snap = nil
	}
	snap, err := readResult(snap, readErr, func() error {
		return &LineError{Line: lineBase + 1, Msg: "py-spy --json: no thread in the array"}
	})
	return snap, skipped, err
}
