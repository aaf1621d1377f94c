package stacks

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// go-deadlock's reports (github.com/sasha-s/go-deadlock, deadlock.go):
// a detector in place of sync.(RW)Mutex prints, under a
// "POTENTIAL DEADLOCK:" header, the stacks where locks were taken. Three
// kinds:
//
//	POTENTIAL DEADLOCK: Recursive locking:
//	current goroutine 2 lock 0xc00208a598
//	<stack>
//	Previous place where the lock was grabbed (same goroutine)
//	<stack>
//
//	POTENTIAL DEADLOCK: Inconsistent locking. saw this ordering in one goroutine:
//	happened before / <stack> / happened after / <stack>
//	in another goroutine: happened before / <stack> / happened after / <stack>
//
//	POTENTIAL DEADLOCK:
//	Previous place where the lock was grabbed
//	goroutine 5 lock 0xc…
//	<stack>
//	Have been trying to lock it again for more than 30s
//	goroutine 7 lock 0xc…
//	<stack>
//	Here is what goroutine 5 doing now
//	goroutine 5 [chan receive]: … (runtime.Stack's text)
//
// each possibly followed by "Other goroutines holding locks:" ("goroutine
// N lock 0x…" and a stack each). A stack is printStack's: since v0.2 one
// line a frame, "file:line pkg.func { source }" (" <<<<<" marks the
// lock's line; the line number is one less than the call's), before it
// "  import/path.func()" over "      file:line +0x1f".
//
// Every stack becomes a thread named by the report's claim and the label
// above the stack ("POTENTIAL DEADLOCK: Recursive locking: current
// goroutine 2 lock 0x…"), so that the heuristics know it for a
// detector's claim, never a thread blocked now. The goroutine and the
// lock go in the thread's notes, not in a wait: the report says where a
// lock was taken, not who waits now.

func init() {
	registerFormat(&Format{Name: "go-deadlock", Sniff: sniffGoDeadlock, Parse: ParseGoDeadlock, Begins: beginsGoDeadlock})
}

var (
	gdlHeaderRE = lazyre.New(`(?m)^[\s>]*POTENTIAL DEADLOCK:`)
	gdlLockRE   = lazyre.New(`^(?:current )?goroutine (\d+) lock (0x[0-9a-fA-F]+|%!p\(.*\))$`)
	// "compaction_queue.go:101 datacoord.(*CompactionQueue).Enqueue { q.lock.Lock() } <<<<<"
	gdlFrameRE = lazyre.New(`^(\S+?):(\d+) ([^\s{+][^\s{]*)(?: .*)?$`)
	// "  github.com/x/y.(*T).M()" over "      /x/y.go:12 +0x1f", and
	// runtime.Stack's "main.f(0x1, …)" over "\t/x/main.go:12 +0x1d"
	gdlFuncRE = lazyre.New(`^([^\s(]+)\((.*)\)$`)
	gdlFileRE = lazyre.New(`^(\S+?):(\d+)(?: \+0x[0-9a-fA-F]+)?$`)
	gdlGorRE  = lazyre.New(`^goroutine (\d+) \[([^\]]*)\]:$`)
)

// sniffGoDeadlock: the header is go-deadlock's alone; it outweighs the
// goroutine dump a timeout report may carry.
func sniffGoDeadlock(head []byte) int {
	return 100 * len(gdlHeaderRE.FindAllIndex(sniffText(head), 10))
}

func beginsGoDeadlock(t, next string) bool { return strings.HasPrefix(t, "POTENTIAL DEADLOCK:") }

// ParseGoDeadlock reads go-deadlock's reports (see above) into one
// process.
func ParseGoDeadlock(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &gdlParser{proc: &Process{Threads: []*Thread{}}}
	readErr := scanTextLines(r, p.line)
	var snap *Snapshot
	if len(p.proc.Threads) > 0 {
		p.proc.Notes = append(p.proc.Notes, "read as go-deadlock's report: where its locks were taken, not a dump of the goroutines; `kill -QUIT PID` while it hangs prints every goroutine")
		snap = &Snapshot{Schema: Schema, Source: "go-deadlock", Samples: 1, Processes: []*Process{p.proc}}
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "no go-deadlock report in the input", "no go-deadlock report (\"POTENTIAL DEADLOCK:\") found")
	})
	return snap, p.track.skipped.list, err
}

type gdlParser struct {
	proc  *Process
	track lineTrack
	claim string  // the header: "POTENTIAL DEADLOCK: Recursive locking"
	label string  // the line above the next stack
	cur   *Thread // the stack being read
	note  string  // the goroutine and lock of the stack to come
	// frame is a frame of the two-line style whose file line is to come
	frame *Frame
}

func (p *gdlParser) line(l textLine) {
	if !p.track.next(l) {
		return
	}
	t := l.text
	if i := strings.Index(t, "POTENTIAL DEADLOCK:"); i >= 0 && strings.TrimLeft(t[:i], "> ") == "" {
		p.claim = strings.TrimSuffix(strings.TrimSpace(t[i:]), ":")
		p.label, p.cur, p.frame = "", nil, nil
		return
	}
	if p.claim == "" {
		p.track.skip(l.no, "before go-deadlock's report")
		return
	}
	if p.frame != nil {
		if m := gdlFileRE.FindStringSubmatch(t); m != nil {
			p.frame.File = m[1]
			p.frame.Line, _ = strconv.Atoi(m[2])
			p.frame = nil
			return
		}
		p.frame = nil
	}
	if m := gdlFrameRE.FindStringSubmatch(t); m != nil && !strings.HasPrefix(t, "goroutine ") {
		n, _ := strconv.Atoi(m[2])
		p.add(Frame{Func: m[3], File: m[1], Line: n})
		return
	}
	if m := gdlFuncRE.FindStringSubmatch(t); m != nil && p.label != "" {
		p.add(Frame{Func: m[1]})
		st := p.cur.Stack
		p.frame = &st[len(st)-1]
		return
	}
	if m := gdlLockRE.FindStringSubmatch(t); m != nil {
		// the goroutine and lock of the stack to come; the label above it
		// (if any) says what it is
		if p.label == "" {
			p.label = t
		}
		p.cur = nil
		p.note = fmt.Sprintf("go-deadlock: goroutine %s, lock %s", m[1], m[2])
		return
	}
	if m := gdlGorRE.FindStringSubmatch(t); m != nil && p.label != "" {
		p.note = fmt.Sprintf("go-deadlock: goroutine %s [%s] as runtime.Stack printed it", m[1], m[2])
		p.cur = nil
		return
	}
	if strings.HasPrefix(t, "created by ") {
		p.frame = &Frame{} // its file line is runtime.Stack's, not a frame
		return
	}
	switch t {
	case "Other goroutines holding locks:":
		p.label, p.cur, p.note = "another goroutine holding a lock", nil, ""
		return
	case "All current goroutines:":
		p.label, p.cur, p.note = "all current goroutines", nil, ""
		return
	}
	// a label: "happened before", "Previous place where the lock was
	// grabbed (same goroutine)", "Have been trying to lock it again for
	// more than 30s", "Here is what goroutine 5 doing now"
	p.label, p.cur, p.note = t, nil, ""
}

// add appends a frame to the current stack, beginning a thread when none
// is being read.
func (p *gdlParser) add(f Frame) {
	if p.cur == nil {
		name := p.claim
		if p.label != "" {
			name += ": " + p.label
		}
		p.cur = &Thread{Name: clipText(name, 160), Tid: len(p.proc.Threads) + 1, Stack: []Frame{}}
		if p.note != "" {
			p.cur.Notes = append(p.cur.Notes, p.note)
		}
		p.proc.Threads = append(p.proc.Threads, p.cur)
	}
	p.cur.Stack = append(p.cur.Stack, f)
}
