package stacks

import (
	"io"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// Python's own tracebacks, as people paste them for a stuck program:
//
//	Traceback (most recent call last):         an exception (KeyboardInterrupt after ^C)
//	  File "app.py", line 12, in main
//	    lock.acquire()
//	KeyboardInterrupt
//
// and the dumps of all threads that watchdogs print with the traceback
// module: pytest-timeout ("+++ Timeout +++", then "~~~ Stack of
// MainThread (1401…) ~~~" a thread), the sys._current_frames() recipe
// ("# Thread: worker(1401…)" or "# ThreadID: 1401…"), and
// traceback.print_stack (frames alone). Frames are printed most recent
// last; they are turned over, innermost first. Each thread's id is its
// threading ident (the pthread_t): Handle.

func init() {
	registerFormat(&Format{Name: "python-traceback", Sniff: sniffPyTraceback, Parse: ParsePyTraceback, Begins: beginsPyTraceback})
}

var (
	pyTBFrameRE  = lazyre.New(`^File:? "([^"]*)", line (\d+), in (.+)$`)
	pyTBStackRE  = lazyre.New(`^~+ Stack of (.+?) \((\d+)\) ~+$`)
	pyTBThreadRE = lazyre.New(`^# Thread(?:ID)?: (?:(.*?)\((\d+)\)|(\d+))$`)
	pyTBSniffRE  = lazyre.New(`(?m)^[\s>]*(?:\^C)?Traceback \(most recent call last\):|~+ Stack of .+ \(\d+\) ~+|^[\s>]*(?:\((?:C|Python)\) )?File:? "[^"\n]*", line \d+, in \S|^# Thread(?:ID)?: |^[\s>]*Traceback for thread \d+ `)
	// pystack (pystack remote PID, pystack core): a thread's header, and
	// with --native its C frames: `(C) File "x.c", line 78, in f (libc.so.6)`
	pyStackThreadRE = lazyre.New(`^Traceback for thread (\d+) \((.*?)\)(?: \[[^\]]*\])* \(most recent call last\):$`)
	pyStackCFrameRE = lazyre.New(`^\(C\) File "([^"]*)", line (\d+), in (.+?) \(([^()]*)\)$`)
)

func sniffPyTraceback(head []byte) int {
	return len(pyTBSniffRE.FindAllIndex(sniffText(head), 40))
}

func beginsPyTraceback(t, next string) bool {
	return strings.HasPrefix(t, "+++") && strings.HasSuffix(t, " Timeout +++++") || t == "Traceback (most recent call last):"
}

// pyTracebackFrame reads `File "x.py", line 3, in f`, and pystack's
// `(Python) File …` and `(C) File "x.c", line 3, in f (lib.so)`.
func pyTracebackFrame(t string) (Frame, bool) {
	if strings.HasPrefix(t, "(C) ") {
		m := pyStackCFrameRE.FindStringSubmatch(t)
		if m == nil {
			return Frame{}, false
		}
		line, _ := strconv.Atoi(m[2])
		f := Frame{Func: m[3], File: m[1], Line: line, Module: m[4]}
		if f.Func == "???" {
			f.Func = ""
		}
		if f.File == "???" {
			f.File, f.Line = "", 0
		}
		return f, true
	}
	t = strings.TrimPrefix(t, "(Python) ")
	m := pyTBFrameRE.FindStringSubmatch(t)
	if m == nil {
		return Frame{}, false
	}
	line, _ := strconv.Atoi(m[2])
	return Frame{Func: m[3], File: m[1], Line: line}, true
}

// ParsePyTraceback reads Python tracebacks and thread dumps (see above).
func ParsePyTraceback(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &pyTBParser{proc: &Process{}}
	readErr := scanTextLines(r, p.line)
	p.end()
	var snap *Snapshot
	if len(p.proc.Threads) > 0 {
		snap = &Snapshot{Schema: Schema, Source: "python-traceback", Samples: 1, Processes: []*Process{p.proc}}
		if len(p.proc.Threads) == 1 && !p.allThreads {
			p.proc.Notes = append(p.proc.Notes, "one traceback: the other threads of the process are not in the paste; `py-spy dump --pid PID` (or faulthandler.dump_traceback(all_threads=True)) shows every thread")
		}
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "no traceback in the input", "no Python traceback found")
	})
	return snap, p.track.skipped.list, err
}

type pyTBParser struct {
	proc        *Process
	track       lineTrack
	cur         *Thread
	srcNext     bool // a frame was read: its source line may follow
	frameIndent int  // the frame's indentation: its source line is deeper
	allThreads  bool // a dump of every thread (pytest-timeout, _current_frames)
}

func (p *pyTBParser) line(l textLine) {
	if !p.track.next(l) {
		return
	}
	t := strings.TrimPrefix(l.text, "^C")
	switch {
	case t == "Traceback (most recent call last):":
		if p.cur == nil || len(p.cur.Stack) > 0 {
			p.start(&Thread{})
		}
		return
	case strings.HasPrefix(t, "+++") && strings.Contains(t, " Timeout "):
		p.allThreads = true
		return
	}
	if strings.HasPrefix(t, "Traceback for thread ") {
		if m := pyStackThreadRE.FindStringSubmatch(t); m != nil {
			p.allThreads = true // pystack prints every thread
			tid, _ := strconv.Atoi(m[1])
			p.start(&Thread{Tid: tid, Name: m[2]})
			return
		}
	}
	if m := pyTBStackRE.FindStringSubmatch(t); m != nil {
		p.allThreads = true
		h, _ := strconv.ParseUint(m[2], 10, 64)
		p.start(&Thread{Name: m[1], ThreadRare: &ThreadRare{HandleID: h}})
		return
	}
	if m := pyTBThreadRE.FindStringSubmatch(t); m != nil {
		p.allThreads = true
		id := m[2] + m[3]
		h, _ := strconv.ParseUint(id, 10, 64)
		p.start(&Thread{Name: m[1], ThreadRare: &ThreadRare{HandleID: h}})
		return
	}
	if f, ok := pyTracebackFrame(t); ok {
		if p.cur == nil {
			p.start(&Thread{})
		}
		p.cur.Stack = append(p.cur.Stack, f)
		p.srcNext, p.frameIndent = true, l.indent
		p.track.skipped.close()
		return
	}
	if p.srcNext && l.indent > p.frameIndent {
		p.srcNext = false
		return // the frame's source line
	}
	p.srcNext = false
	if p.cur != nil && len(p.cur.Stack) > 0 && l.indent == 0 && isExceptionLine(t) {
		if p.proc.Message == "" {
			p.proc.Message = clipText(t, 300)
		}
		return
	}
	p.track.skip(l.no, "not a traceback")
}

// isExceptionLine says whether t ends a traceback: "KeyboardInterrupt",
// "ValueError: …", "pkg.Error: …".
func isExceptionLine(t string) bool {
	name := t
	if i := strings.Index(t, ": "); i > 0 {
		name = t[:i]
	}
	if name == "" || strings.ContainsAny(name, " \t()") {
		return false
	}
	return strings.HasSuffix(name, "Error") || strings.HasSuffix(name, "Exception") || strings.HasSuffix(name, "Interrupt") || strings.HasSuffix(name, "Exit") || strings.HasSuffix(name, "Warning") || strings.HasSuffix(name, "Timeout")
}

func (p *pyTBParser) start(t *Thread) {
	p.end()
	p.cur = t
}

// end files the current thread, innermost frame first.
func (p *pyTBParser) end() {
	if p.cur == nil {
		return
	}
	st := p.cur.Stack
	for i, j := 0, len(st)-1; i < j; i, j = i+1, j-1 {
		st[i], st[j] = st[j], st[i]
	}
	if st == nil {
		p.cur.Stack = []Frame{}
	}
	if len(st) > 0 || p.cur.Handle() != 0 {
		p.proc.Threads = append(p.proc.Threads, p.cur)
	}
	p.cur = nil
}
