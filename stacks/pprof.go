package stacks

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// Go's goroutine profile at debug=1, what /debug/pprof/goroutine?debug=1
// serves and pprof.Lookup("goroutine").WriteTo(w, 1) writes: goroutines
// with one stack are one record, counted.
//
//	goroutine profile: total 11
//	8 @ 0x47d94e 0x41590e 0x415452 0x4d9671 0x483e01
//	#	0x4d9670	main.worker+0x30	/tmp/pp/main.go:19
//
// The profile has no goroutine ids, wait reasons or arguments, and hides
// the runtime's frames: each record becomes as many goroutines as it
// counts (numbered in profile order, sharing one stack), their wait told
// from their frames where the sync frames show (a mutex, a WaitGroup), and
// the report says what debug=2 would add.

func init() {
	registerFormat(&Format{Name: "pprof-goroutine", Sniff: sniffPprof, Parse: ParsePprofGoroutine, Begins: beginsPprof})
}

var (
	ppTotalRE    = lazyre.New(`^goroutine profile: total (\d+)$`)
	ppRecordRE   = lazyre.New(`^(\d+) @((?: 0x[0-9a-fA-F]+)+)$`)
	ppFrameRE    = lazyre.New(`^#\s+0x([0-9a-fA-F]+)\s+(\S+?)(?:\+0x[0-9a-fA-F]+)?\s+(\S.*?):(\d+)$`)
	ppCutFrameRE = lazyre.New(`^#\s+0x([0-9a-fA-F]+)\s+(\S+?)\+0x[0-9a-fA-F]+\s+\S*$`)
	ppSniffRE    = lazyre.New(`(?m)^[\s>]*goroutine profile: total \d+|^[\s>]*\d+ @ 0x[0-9a-f]+|^[\s>]*#\s+0x[0-9a-f]+\s+\S+\+0x[0-9a-f]+\s`)
)

// maxProfileGoroutines bounds how many goroutines the records expand to;
// a record past it counts for what is left of it (one at least), and a
// note says so.
const maxProfileGoroutines = 200000

func sniffPprof(head []byte) int {
	return 3 * len(ppSniffRE.FindAllIndex(sniffText(head), 40))
}

func beginsPprof(t, next string) bool {
	// the regexps only where a byte test says they may match: this runs
	// on every line of every dump
	return strings.HasPrefix(t, "goroutine profile: total ") && ppTotalRE.MatchString(t) ||
		strings.HasPrefix(next, "#") && t != "" && isDigit(t[0]) && ppRecordRE.MatchString(t) && strings.Contains(next, "+0x")
}

// ParsePprofGoroutine reads a debug=1 goroutine profile (see above).
func ParsePprofGoroutine(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &ppParser{proc: &Process{Threads: []*Thread{}, Runtime: "go"}}
	readErr := scanTextLines(r, p.line)
	p.end()
	var snap *Snapshot
	if len(p.proc.Threads) > 0 {
		pr := p.proc
		pr.Notes = append(pr.Notes, "a goroutine profile at debug=1: no goroutine ids (numbered here in profile order), wait reasons, wait times or arguments, and the runtime's frames hidden; `/debug/pprof/goroutine?debug=2` or `kill -QUIT` gives every goroutine with them")
		if p.total > 0 && p.total != p.read {
			pr.Notes = append(pr.Notes, fmt.Sprintf("the profile counts %d goroutines and the paste holds records of %d: the rest is not in the paste", p.total, p.read))
		}
		if p.cutLine > 0 {
			pr.Notes = append(pr.Notes, fmt.Sprintf("line %d: a frame cut mid-way inside its file name: its function is kept, its file and line are not", p.cutLine))
		}
		if p.capped {
			pr.Notes = append(pr.Notes, fmt.Sprintf("more than %d goroutines: the records past that count for what is left of it, one at least", maxProfileGoroutines))
		}
		snap = &Snapshot{Schema: Schema, Source: "pprof-goroutine", Samples: 1, Processes: []*Process{pr}}
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "no goroutine profile in the input", "no goroutine profile record found")
	})
	return snap, p.track.skipped.list, err
}

type ppParser struct {
	proc        *Process
	track       lineTrack
	total, read int
	count       int
	pcs         []string // the record's return addresses, innermost first
	stack       []Frame
	inRecord    bool
	nextID      int
	capped      bool
	cutLine     int // the first frame line cut inside its file
}

func (p *ppParser) line(l textLine) {
	if !p.track.next(l) {
		return
	}
	t := l.text
	if m := ppTotalRE.FindStringSubmatch(t); m != nil {
		p.end()
		if p.total > 0 || len(p.proc.Threads) > 0 {
			p.track.skip(l.no, "a second profile: read with the first") // split.go cuts a repeated profile before it reaches here
		}
		p.total, _ = strconv.Atoi(m[1])
		return
	}
	if m := ppRecordRE.FindStringSubmatch(t); m != nil {
		p.end()
		p.count, _ = strconv.Atoi(m[1])
		p.pcs = strings.Fields(m[2])
		p.inRecord = true
		return
	}
	if p.inRecord {
		if m := ppFrameRE.FindStringSubmatch(t); m != nil {
			pc, _ := strconv.ParseUint(m[1], 16, 64)
			line, _ := strconv.Atoi(m[4])
			p.stack = append(p.stack, Frame{Func: m[2], PC: pc, File: m[3], Line: line})
			return
		}
		if strings.HasPrefix(t, "# labels: ") {
			return
		}
		if m := ppCutFrameRE.FindStringSubmatch(t); m != nil {
			// a frame cut inside its file: the function is whole
			pc, _ := strconv.ParseUint(m[1], 16, 64)
			p.stack = append(p.stack, Frame{Func: m[2], PC: pc})
			if p.cutLine == 0 {
				p.cutLine = l.no
			}
			return
		}
	}
	p.track.skip(l.no, "not a goroutine profile record")
}

// end files the current record as its goroutines.
func (p *ppParser) end() {
	if !p.inRecord {
		return
	}
	p.inRecord = false
	st := p.stack
	p.stack = nil
	if st == nil {
		st = []Frame{}
	}
	status := goStatusOf(st)
	if status == "" && ppRuntimeHidden(p.pcs, st) {
		status = "waiting"
	}
	n := max(p.count, 1)
	p.read += p.count
	if p.nextID+n > maxProfileGoroutines {
		// as many as are left, one at least: a record too large keeps
		// its lead over the rest
		n, p.capped = max(maxProfileGoroutines-p.nextID, 1), true
	}
	for range n {
		p.nextID++
		p.proc.Threads = append(p.proc.Threads, &Thread{
			Tid: p.nextID, State: GoroutineState(status), Stack: st,
			Runtime: &RuntimeThread{Kind: KindGoroutine, ID: p.nextID, Status: status},
		})
	}
}

// ppRuntimeHidden: the record's first addresses are not its first frame
// shown, so the profile hid runtime frames above it (debug=1 hides the
// runtime's frames at the top of a stack): the goroutine was in the
// runtime, parked for a reason the frames do not tell. Its status is then
// the runtime's own for a parked goroutine with no reason, "waiting".
// The frames print return addresses less one.
func ppRuntimeHidden(pcs []string, st []Frame) bool {
	if len(st) == 0 || st[0].PC == 0 {
		return false
	}
	for i, s := range pcs {
		pc, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
		if err != nil {
			return false
		}
		if pc == st[0].PC || pc == st[0].PC+1 {
			return i > 0
		}
	}
	return false // the first frame is not among the addresses: a cut or wrapped record
}

// goStatusOf gives the wait reason the runtime would print for a stack
// whose sync or channel frames show, "" when they do not.
func goStatusOf(st []Frame) string {
	switch GoWaitOf(st).Kind {
	case GoWaitMutex:
		return "sync.Mutex.Lock"
	case GoWaitRLock:
		return "sync.RWMutex.RLock"
	case GoWaitWLock:
		return "sync.RWMutex.Lock"
	case GoWaitWaitGroup:
		return "sync.WaitGroup.Wait"
	case GoWaitCond:
		return "sync.Cond.Wait"
	case GoWaitSend:
		return "chan send"
	case GoWaitRecv:
		return "chan receive"
	case GoWaitSelect:
		return "select"
	case GoWaitBlock:
		return "select (no cases)"
	case GoWaitSleep:
		return "sleep"
	case GoWaitIO:
		return "IO wait"
	}
	return ""
}
