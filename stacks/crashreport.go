package stacks

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// macOS and iOS crash reports in their text form (.crash, what Xcode's
// Organizer, Console and ReportCrash print; an iOS watchdog kill of a hung
// app, 0x8badf00d, is one): a header of "Key:  value" lines, then each
// thread, innermost frame first:
//
//	Process:             LooseLeaf [914]
//	Path:                /private/var/…/LooseLeaf
//	Thread 0 name:  Dispatch queue: com.apple.main-thread
//	Thread 0 Crashed:
//	0   libsystem_kernel.dylib   0x32750ba8 __psynch_mutexwait + 24
//	1   LooseLeaf                0x002d450a -[MMState add:](MMState.m:364)
//	2   SolutoHomeKit            0x0000000100fcda34 0x100f84000 + 301620
//	Thread 4:: WebThread
//	Thread 0 crashed with ARM Thread State (64-bit):
//	Binary Images:
//
// A report numbers its threads and gives no thread ids: Tid is the
// thread's number, Name "Thread N" with its name or queue. A frame
// without a symbol ("0xLOAD + OFFSET") keeps its module and offset. The
// register dump and the binary images end the threads.

func init() {
	registerFormat(&Format{Name: "crash-report", Sniff: sniffCrashReport, Parse: ParseCrashReport, Begins: beginsCrashReport})
}

var (
	crThreadRE     = lazyre.New(`^Thread (\d+)(?:( Crashed)?::?(?:\s+(.*))?| name:\s+(.*))$`)
	crFrameRE      = lazyre.New(`^(\d+)\s+(\S.*?)\s+0x([0-9a-fA-F]+)\s+(\S.*)$`)
	crOffsetRE     = lazyre.New(`^0x[0-9a-fA-F]+ \+ (0x[0-9a-fA-F]+|\d+)(?:\s+// (.*))?$`)
	crSymbolRE     = lazyre.New(`^(.*?) \+ (0x[0-9a-fA-F]+|\d+)(?: \(([^()]+):(\d+)\))?$`)
	crSourceRE     = lazyre.New(`^(.*?)\s?\(([^()]+\.\w+):(\d+)\)$`)
	crProcessRE    = lazyre.New(`^Process:\s+(.+?) \[(\d+)\]$`)
	crEndRE        = lazyre.New(`^(?:Thread \d+ crashed with .*Thread State|Binary Images:$)`)
	crSniffFrameRE = lazyre.New(`(?m)^[\s>]*\d+\s+\S.*?\s0x[0-9a-fA-F]+ \S`)
	crSniffRE      = lazyre.New(`(?m)^[\s>]*(?:Thread \d+(?: Crashed)?::?(?:\s|$)|Thread \d+ name:\s|Incident Identifier:|Crashed Thread:|Triggered by Thread:|Exception Type:)`)
)

func sniffCrashReport(head []byte) int {
	head = sniffText(head)
	frames := len(crSniffFrameRE.FindAllIndex(head, 40))
	if frames == 0 {
		return 0 // "Thread 7993:" over gdb frames is a person's header, not a report's
	}
	return 3*len(crSniffRE.FindAllIndex(head, 40)) + frames
}

func beginsCrashReport(t, next string) bool {
	if strings.HasPrefix(t, "Incident Identifier: ") || strings.HasPrefix(t, "Thread 0 Crashed:") {
		return true
	}
	if strings.HasPrefix(t, "Exception Type:") {
		return strings.HasPrefix(next, "Exception Codes:") // an excerpt from the exception block on
	}
	// an excerpt of the thread sections alone: a header over frame 0
	return strings.HasPrefix(t, "Thread ") && strings.HasPrefix(next, "0 ") && crThreadRE.MatchString(t) && crFrame0RE.MatchString(next)
}

// crFrame0RE is a thread section's first frame: "0   libsystem_kernel.dylib   0x… __psynch_mutexwait + 8".
var crFrame0RE = lazyre.New(`^0\s+\S+\s+0x[0-9a-fA-F]+ \S`)

// crashProcessNext says whether a "Process:" line begins a crash report,
// not a spindump: a crash report's Path is followed by its Identifier.
func crashProcessNext(next string) bool {
	return strings.Contains(next, "\nIdentifier:") || strings.HasPrefix(next, "Identifier:")
}

// ParseCrashReport reads a macOS or iOS crash report (see above).
func ParseCrashReport(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &crParser{proc: &Process{Threads: []*Thread{}}, names: map[int]string{}}
	readErr := scanTextLines(r, p.line)
	p.endThread()
	var snap *Snapshot
	if len(p.proc.Threads) > 0 {
		snap = &Snapshot{Schema: Schema, Source: "crash-report", Samples: 1, Processes: []*Process{p.proc}}
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "empty input: no crash report",
			`not a crash report: no thread ("Thread 0 Crashed:", "Thread 1:") with frames ("0   libsystem_kernel.dylib   0x… __psynch_mutexwait + 8")`)
	})
	return snap, p.track.skipped.list, err
}

type crParser struct {
	track  lineTrack
	proc   *Process
	cur    *Thread
	names  map[int]string // "Thread N name:" lines, for the header after them
	ended  bool           // past the threads: registers, binary images
	frames []Frame
}

func (p *crParser) line(l textLine) {
	if !p.track.next(l) {
		return
	}
	t := l.text
	if p.ended {
		return // register dumps and the image list: nothing kept
	}
	if crEndRE.MatchString(t) {
		p.endThread()
		p.ended = true
		return
	}
	if m := crThreadRE.FindStringSubmatch(t); m != nil {
		n, _ := strconv.Atoi(m[1])
		if m[4] != "" {
			p.endThread()
			p.names[n] = m[4]
			return
		}
		p.thread(n, m[2] != "", m[3])
		return
	}
	if m := crFrameRE.FindStringSubmatch(t); m != nil && p.cur != nil {
		if len(p.frames) < maxMacFrames {
			p.frames = append(p.frames, crashFrame(m))
		}
		return
	}
	if p.cur == nil && len(p.proc.Threads) == 0 {
		if m := crProcessRE.FindStringSubmatch(t); m != nil {
			p.proc.Pid, _ = strconv.Atoi(m[2])
			if p.proc.Exe == "" {
				p.proc.Exe = m[1]
			}
			return
		}
		if v, ok := strings.CutPrefix(t, "Path:"); ok {
			p.proc.Exe = strings.TrimSpace(v)
			return
		}
		if strings.HasPrefix(t, "Exception Type:") || strings.HasPrefix(t, "Termination Reason:") || strings.HasPrefix(t, "Exception Codes:") && strings.Contains(t, "8badf00d") {
			if p.proc.Message == "" {
				p.proc.Message = t
			} else if len(p.proc.Message) < 400 {
				p.proc.Message += "; " + t
			}
			return
		}
		return // the report's header: device, versions, times, free text
	}
	p.track.skip(l.no, "not a crash report line")
}

// thread starts thread n.
func (p *crParser) thread(n int, crashed bool, name string) {
	p.endThread()
	if name == "" {
		name = p.names[n]
	}
	th := &Thread{Tid: n, Name: fmt.Sprintf("Thread %d", n)}
	if name != "" {
		th.Name += " " + name
	}
	if crashed {
		th.Notes = append(th.Notes, "the report's crashed (or, for a watchdog kill, blamed) thread")
	}
	p.cur = th
	p.proc.Threads = append(p.proc.Threads, th)
}

func (p *crParser) endThread() {
	if p.cur == nil {
		return
	}
	p.cur.Stack = append([]Frame{}, p.frames...)
	p.frames = p.frames[:0]
	p.cur = nil
}

// crashFrame reads a frame line's module, address and symbol.
func crashFrame(m []string) Frame {
	f := Frame{Module: m[2]}
	f.PC, _ = strconv.ParseUint(m[3], 16, 64)
	rest := m[4]
	if om := crOffsetRE.FindStringSubmatch(rest); om != nil {
		f.Offset, _ = strconv.ParseUint(strings.TrimPrefix(om[1], "0x"), map[bool]int{true: 16, false: 10}[strings.HasPrefix(om[1], "0x")], 64)
		if om[2] == "" {
			return f // no symbol: the image and the offset in it
		}
		rest = om[2] // a symbolicated line's "// sym + 0x…" comment
	}
	if sm := crSymbolRE.FindStringSubmatch(rest); sm != nil {
		f.Func = sm[1]
		if sm[3] != "" {
			f.File = sm[3]
			f.Line, _ = strconv.Atoi(sm[4])
		}
	} else if sm := crSourceRE.FindStringSubmatch(rest); sm != nil {
		f.Func, f.File = sm[1], sm[2] // "-[Obj sel:](File.m:364)"
		f.Line, _ = strconv.Atoi(sm[3])
	} else {
		f.Func = rest
	}
	f.Func = unboldMarkdown(f.Func)
	return f
}

// unboldMarkdown undoes what a tracker's Markdown did to a name pasted
// without a fence: "__psynch_mutexwait" rendered as bold lost its
// underscores to "**" ("**psynch_mutexwait", "__NSThread__main**").
func unboldMarkdown(s string) string {
	if strings.HasPrefix(s, "**") {
		s = "__" + s[2:]
	}
	if strings.HasSuffix(s, "**") {
		s = s[:len(s)-2] + "__"
	}
	return s
}
