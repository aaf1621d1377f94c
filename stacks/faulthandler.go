package stacks

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// CPython's faulthandler writes, from a signal handler and without the
// GIL, the Python stack of every thread (Python/traceback.c):
//
//	Fatal Python error: Aborted                  (or "Timeout (0:00:05)!")
//
//	Thread 0x00007f0c67fff6c0 (most recent call first):
//	  File "/usr/lib/python3.11/threading.py", line 320 in wait
//	  ...
//
//	Current thread 0x00007f0c6cf2b2c0 (most recent call first):
//	  File "lock.py", line 48 in main
//
// The id is the thread's pthread_t, not its kernel tid; frames come most
// recent first, at most 100 a thread ("  ..." after), at most 100 threads
// ("..."). With all_threads=False there is one "Stack (most recent call
// first):" block. Python 3.14 adds "Current thread's C stack trace" with
// `Binary file "…", at sym+0x… [0x…]` lines.

func init() {
	registerFormat(&Format{Name: "faulthandler", Sniff: sniffFaulthandler, Parse: ParseFaulthandler})
}

var (
	fhHeaderRE  = lazyre.New(`^(Current thread|Thread) 0x([0-9a-fA-F]{1,16})(?: \[(.*)\])? \(most recent call first\):$`)
	fhFrameRE   = lazyre.New(`^File (?:"(.*)"|\?\?\?), line (\d+|\?\?\?) in (.*)$`)
	fhTimeoutRE = lazyre.New(`^Timeout \((\d+):(\d\d):(\d\d)(?:\.(\d+))?\)!$`)
	fhBinaryRE  = lazyre.New(`^Binary file "(.*)", at (.*?)([+-]0x[0-9a-f]+)? \[(0x[0-9a-f]+)\]$`)
	fhShellRE   = lazyre.New(`^(?:.*: line \d+: +\d+ )?(Aborted|Segmentation fault|Bus error|Illegal instruction|Floating point exception|Killed|Trace/breakpoint trap)(?: +\(core dumped\))?(?: .*)?$`)

	fhSniffHeaderRE = lazyre.New(sniffPrefix + `(?:Current thread|Thread) 0x[0-9a-fA-F]+(?: \[.*\])? \(most recent call first\):`)
	fhSniffFrameRE  = lazyre.New(sniffPrefix + `File "[^"\n]*", line \d+ in \S`)
	fhSniffEventRE  = lazyre.New(sniffPrefix + `(?:Fatal Python error: |Timeout \(\d+:\d\d:\d\d(?:\.\d+)?\)!|Stack \(most recent call first\):)`)
)

func sniffFaulthandler(head []byte) int {
	head = sniffText(head)
	return 3*len(fhSniffHeaderRE.FindAllIndex(head, 20)) +
		len(fhSniffFrameRE.FindAllIndex(head, 40)) +
		4*len(fhSniffEventRE.FindAllIndex(head, 10))
}

// ParseFaulthandler reads CPython faulthandler output — a fatal error
// (`python -X faulthandler`, SIGSEGV, SIGABRT), a dump_traceback_later
// timeout, a register()ed signal — as written to stderr or pasted into a
// bug report, a CI log or a Markdown fence.
//
// Each dump becomes a process (faulthandler names no pid). Dumps of the
// same threads one after another (dump_traceback_later with repeat=True,
// a signal sent twice) are samples of one process; a dump starts at its
// "Fatal Python error"/"Timeout" line, or where a thread id comes again
// (a forked child dumping after its parent shows the parent's thread id).
// Threads have no kernel tid: Tid is 0 and Handle is the pthread_t.
// Frames carry Func, File and Line, most recent first.
func ParseFaulthandler(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &fhParser{}
	readErr := scanTextLines(r, p.feed)
	p.endThread()
	snap, err := readResult(p.snapshot(), readErr, p.emptyError)
	return snap, p.skipped.list, err
}

// fhDump is one dump: what faulthandler wrote for one event.
type fhDump struct {
	line    int    // where it starts
	event   string // "Fatal Python error: Aborted", "Timeout (0:00:02)!", ""
	fatal   bool
	timeout time.Duration
	threads []*Thread
	current *Thread // the "Current thread"
	seen    map[uint64]bool
	notes   []string
}

type fhParser struct {
	dumps   []*fhDump
	cur     *fhDump
	th      *Thread
	cstack  bool    // inside "Current thread's C stack trace"
	cthread *Thread // the thread the C stack is of
	cframes []string
	skipped skipList
	first   int // first non-blank line
}

func (p *fhParser) dump(no int) *fhDump {
	if p.cur == nil {
		p.newDump(no, "")
	}
	return p.cur
}

func (p *fhParser) newDump(no int, event string) *fhDump {
	p.endThread()
	d := &fhDump{line: no, event: event, seen: map[uint64]bool{}}
	p.dumps = append(p.dumps, d)
	p.cur, p.th = d, nil
	return d
}

func (p *fhParser) endThread() {
	if p.cthread != nil && len(p.cframes) > 0 {
		p.cthread.Notes = appendNote(p.cthread.Notes, "C stack (most recent call first): "+strings.Join(p.cframes, " < "))
	}
	p.cstack, p.cthread, p.cframes = false, nil, nil
}

func (p *fhParser) feed(l textLine) {
	if l.text == "" {
		return
	}
	if p.first == 0 {
		p.first = l.no
	}
	if isFence(l.text) || p.line(l) {
		p.skipped.close()
		return
	}
	p.skipped.add(l.no, "not a faulthandler dump")
}

// line handles one line; it reports whether it was understood.
func (p *fhParser) line(l textLine) bool {
	t := l.text
	switch {
	case strings.HasPrefix(t, "Fatal Python error: "), strings.HasPrefix(t, "Windows fatal exception: "):
		d := p.newDump(l.no, t)
		d.fatal = true
		return true
	case strings.HasPrefix(t, "Timeout ("):
		if m := fhTimeoutRE.FindStringSubmatch(t); m != nil {
			d := p.newDump(l.no, t)
			h, _ := strconv.Atoi(m[1])
			mi, _ := strconv.Atoi(m[2])
			s, _ := strconv.Atoi(m[3])
			d.timeout = time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute + time.Duration(s)*time.Second
			if m[4] != "" {
				frac, _ := strconv.ParseFloat("0."+m[4], 64)
				d.timeout += time.Duration(frac * float64(time.Second))
			}
			return true
		}
	case strings.HasPrefix(t, "Current thread's C stack trace"):
		p.endThread()
		if p.cur != nil {
			p.cstack, p.cthread = true, p.cur.current
			if p.cthread == nil {
				p.cthread = p.th
			}
		}
		return true
	case strings.HasPrefix(t, "Current thread 0x"), strings.HasPrefix(t, "Thread 0x"):
		if m := fhHeaderRE.FindStringSubmatch(t); m != nil {
			id, _ := strconv.ParseUint(m[2], 16, 64)
			p.header(l.no, id, m[1] == "Current thread", m[3])
			return true
		}
		if i := strings.Index(t, " ("); i < 0 || !strings.Contains(t[i:], ")") {
			// a header cut mid-way: "Thread 0x00007f0c67ff"
			p.header(l.no, 0, strings.HasPrefix(t, "Current"), "")
			p.th.Notes = appendNote(p.th.Notes, fmt.Sprintf("line %d: thread header cut", l.no))
			return true
		}
	case t == "Stack (most recent call first):", t == "Traceback (most recent call first):":
		p.header(l.no, 0, true, "")
		return true
	case strings.HasPrefix(t, "File "):
		return p.frame(l)
	case strings.HasPrefix(t, "Binary file \""):
		if p.cstack && p.cthread != nil {
			if m := fhBinaryRE.FindStringSubmatch(t); m != nil {
				if len(p.cframes) < 64 {
					lib := m[1][strings.LastIndexByte(m[1], '/')+1:]
					name := m[2]
					if name == "" {
						name = "?? " + strings.TrimPrefix(m[3], "+")
					}
					p.cframes = append(p.cframes, name+" ("+lib+")")
				}
				return true
			}
		}
	case t == "...":
		if p.th != nil && l.indent > 0 {
			p.th.Notes = appendNote(p.th.Notes, "more than 100 frames: the outermost are not in the dump")
		} else {
			p.dump(l.no).notes = append(p.dump(l.no).notes, "more than 100 threads: the others are not in the dump")
		}
		return true
	case t == "<no Python frame>":
		if p.th != nil {
			p.th.Notes = appendNote(p.th.Notes, "no Python frame")
			return true
		}
	case t == "Garbage-collecting":
		if p.th != nil {
			p.th.Notes = appendNote(p.th.Notes, "garbage-collecting")
			return true
		}
	case t == "<tstate is freed>", t == "<system returned no stack trace>", t == "<truncated rest of calls>",
		t == "<cannot get C stack on this system>":
		if p.cstack && p.cthread != nil {
			p.cframes = append(p.cframes, t)
		} else if p.th != nil {
			p.th.Notes = appendNote(p.th.Notes, strings.Trim(t, "<>"))
		}
		return true
	case strings.HasPrefix(t, "<Cannot show all threads"):
		d := p.dump(l.no)
		d.notes = append(d.notes, strings.Trim(t, "<>"))
		return true
	case strings.HasPrefix(t, "Python runtime state: "), strings.HasPrefix(t, "Extension modules: "):
		d := p.dump(l.no)
		d.notes = append(d.notes, capNote(t))
		return true
	}
	if p.cur != nil && fhShellRE.MatchString(t) {
		// the shell or the test runner saying how the process ended
		p.cur.notes = append(p.cur.notes, capNote(t))
		return true
	}
	return false
}

func (p *fhParser) header(no int, id uint64, current bool, name string) {
	p.endThread()
	d := p.dump(no)
	if id != 0 && d.seen[id] {
		// the same thread again: the next dump (a forked child, a
		// second signal) with no event line of its own
		d = p.newDump(no, "")
	}
	if id != 0 {
		d.seen[id] = true
	}
	th := &Thread{Name: name, Stack: []Frame{}, ThreadRare: &ThreadRare{HandleID: id}}
	if current {
		th.Notes = append(th.Notes, "faulthandler's current thread (the one that faulted or took the signal)")
		d.current = th
	}
	d.threads = append(d.threads, th)
	p.th = th
}

func (p *fhParser) frame(l textLine) bool {
	t := l.text
	if p.th == nil {
		// frames pasted without their header
		p.header(l.no, 0, false, "")
		p.th.Notes = append(p.th.Notes, fmt.Sprintf("line %d: frames without a thread header", l.no))
	}
	if len(p.th.Stack) >= maxPyFrames {
		return true
	}
	m := fhFrameRE.FindStringSubmatch(t)
	if m != nil && !l.cut {
		f := Frame{File: m[1], Func: m[3]}
		if f.Func == "???" {
			f.Func = ""
		}
		f.Line, _ = strconv.Atoi(m[2])
		p.th.Stack = append(p.th.Stack, f)
		return true
	}
	// cut mid-way: keep what is there
	rest := strings.TrimPrefix(t, "File ")
	f := Frame{}
	if strings.HasPrefix(rest, `"`) {
		if end := strings.Index(rest[1:], `"`); end >= 0 {
			f.File = rest[1 : 1+end]
			rest = rest[2+end:]
			if i := strings.Index(rest, " in "); i >= 0 {
				f.Line, _ = strconv.Atoi(strings.TrimPrefix(rest[:i], ", line "))
				f.Func = rest[i+len(" in "):]
			}
		} else {
			f.File = rest[1:]
		}
	}
	p.th.Stack = append(p.th.Stack, f)
	p.th.Notes = appendNote(p.th.Notes, fmt.Sprintf("line %d: frame cut mid-way; its name may be partial", l.no))
	return true
}

// maxPyFrames bounds one thread's stack; faulthandler prints at most
// 100 frames, py-spy at most 4096.
const maxPyFrames = 4096

// snapshot groups the dumps into processes: a dump of the same set of
// threads as the one before it is another sample of that process.
func (p *fhParser) snapshot() *Snapshot {
	var procs []*Process
	var groups [][]*fhDump
	var orphan []string // notes of event lines no thread followed
	for _, d := range p.dumps {
		if len(d.threads) == 0 {
			notes := append([]string{eventNote(d)}, d.notes...)
			if n := len(groups); n > 0 {
				prev := groups[n-1][len(groups[n-1])-1]
				prev.notes = append(prev.notes, notes...)
			} else {
				orphan = append(orphan, notes...)
			}
			continue
		}
		if n := len(groups); n > 0 && sameThreads(groups[n-1][len(groups[n-1])-1], d) {
			groups[n-1] = append(groups[n-1], d)
			continue
		}
		if len(groups) == 0 {
			d.notes = append(orphan, d.notes...)
		}
		groups = append(groups, []*fhDump{d})
	}
	snap := &Snapshot{Schema: Schema, Source: "faulthandler", Samples: 1}
	var interval time.Duration
	for gi, g := range groups {
		proc := &Process{Threads: []*Thread{}}
		last := g[len(g)-1]
		if len(g) > 1 {
			// threads by handle, in the last dump's order; each dump is a sample
			for _, th := range last.threads {
				t := &Thread{Name: th.Name, Stack: th.Stack, Notes: th.Notes, ThreadRare: th.ThreadRare}
				for _, d := range g {
					for _, dt := range d.threads {
						if dt.Handle() == th.Handle() {
							t.AddSample(Sample{Stack: dt.Stack})
						}
					}
				}
				proc.Threads = append(proc.Threads, t)
			}
			snap.Samples = max(snap.Samples, len(g))
			if last.timeout > 0 && (interval == 0 || interval == last.timeout) {
				interval = last.timeout
			}
		} else {
			proc.Threads = append(proc.Threads, last.threads...)
		}
		seen := map[string]bool{}
		for _, d := range g {
			for _, n := range append([]string{eventNote(d)}, d.notes...) {
				if n != "" && !seen[n] && len(proc.Notes) < 50 {
					seen[n] = true
					proc.Notes = append(proc.Notes, n)
				}
			}
		}
		if len(groups) > 1 {
			proc.Notes = append(proc.Notes, fmt.Sprintf("faulthandler dump %d of %d in the input (line %d); faulthandler names no pid", gi+1, len(groups), g[0].line))
		}
		if gi > 0 && len(last.threads) == 1 && last.threads[0].Handle() != 0 {
			// a pthread_t is an address: the same one in an earlier dump
			// is the thread that called fork() there
			id := last.threads[0].Handle()
			for pj := gi - 1; pj >= 0; pj-- {
				if prev := groups[pj][len(groups[pj])-1]; prev.seen[id] && len(prev.threads) > 1 {
					proc.Notes = append(proc.Notes, fmt.Sprintf("its only thread, 0x%016x, is also a thread of dump %d: likely a child that dump's process fork()ed", id, pj+1))
					break
				}
			}
		}
		procs = append(procs, proc)
	}
	if len(procs) == 0 {
		return nil
	}
	snap.Interval = Duration(interval)
	snap.Processes = procs
	return snap
}

func eventNote(d *fhDump) string {
	if d.event == "" {
		return ""
	}
	return "faulthandler: " + d.event
}

// sameThreads says whether dump b shows exactly the threads of dump a.
func sameThreads(a, b *fhDump) bool {
	if a.fatal || len(a.threads) != len(b.threads) || len(a.threads) == 0 {
		return false
	}
	for _, t := range a.threads {
		if t.Handle() == 0 || !b.seen[t.Handle()] {
			return false
		}
	}
	return true
}

func (p *fhParser) emptyError() error {
	return nothingRead(p.first, p.skipped.list, "empty input: no faulthandler dump",
		`not a faulthandler dump: no thread ("Thread 0x… (most recent call first):") or frame ("  File \"…\", line N in f")`)
}
