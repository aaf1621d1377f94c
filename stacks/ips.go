package stacks

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// macOS's .ips reports (macOS 12 and later, iOS 15): a JSON header line
// ({"app_name":…,"bug_type":"309",…}) and a JSON body whose "threads"
// hold each thread's frames, innermost first, as image index and offset:
//
//	{"id":402967,"name":"worker","queue":"com.apple.main-thread","frames":[
//	  {"imageOffset":14812,"symbol":"__psynch_mutexwait","symbolLocation":8,"imageIndex":3}, …]}
//	…"usedImages":[{"name":"libsystem_kernel.dylib",…}, …]
//
// Pasted, an .ips is mostly cut (a tracker comment holds a part of a
// 100 KB line) and broken across lines anywhere, so it is not decoded as
// a document: its lines are joined and scanned for thread and frame
// objects, which are small; a frame before any thread object belongs to
// a thread whose header was cut. The body's "pid" and "procPath" name
// the process, "usedImages" the modules. Memory is bounded by a window
// of the joined text.

func init() {
	registerFormat(&Format{Name: "ips", Sniff: sniffIPS, Parse: ParseIPS})
}

const jsonStr = `"(?:[^"\\]|\\.)*"`

var (
	ipsSniffRE  = lazyre.New(`"imageOffset":\d+|"symbolLocation":\d+|"bug_type":"\d+"`)
	ipsThreadRE = lazyre.New(`\{(?:"triggered":true,)?"id":(\d+)`)
	ipsFrameRE  = lazyre.New(`\{"imageOffset":(\d+)(?:,"symbol":(` + jsonStr + `))?(?:,"symbolLocation":(\d+))?(?:,"sourceLine":(\d+))?(?:,"sourceFile":(` + jsonStr + `))?,"imageIndex":(\d+)\}`)
	ipsFieldRE  = lazyre.New(`"(name|queue|procPath|pid|usedImages)":(` + jsonStr + `|\d+|\[)`)
	ipsImageRE  = lazyre.New(`\{"source":"\w+",(?:"arch":` + jsonStr + `,)?"base":\d+,[^{}]*?"name":(` + jsonStr + `)`)
)

// ipsWindow bounds the joined text kept between scans.
const ipsWindow = 64 << 10

func sniffIPS(head []byte) int {
	return len(ipsSniffRE.FindAllIndex(head, 60))
}

// ParseIPS reads an .ips report or a part of one (see above).
func ParseIPS(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &ipsParser{proc: &Process{Threads: []*Thread{}}}
	readErr := scanTextLines(r, p.line)
	p.scan(true)
	var snap *Snapshot
	if len(p.proc.Threads) > 0 {
		p.proc.Threads[len(p.proc.Threads)-1].Stack = append([]Frame{}, p.frames...)
		p.modules()
		if p.cutStart {
			p.proc.Notes = append(p.proc.Notes, "the paste starts inside the report: the first thread's header (and earlier threads) are not in it")
		}
		if len(p.images) == 0 {
			p.proc.Notes = append(p.proc.Notes, "the report's usedImages list is not in the paste: frames name their image by index only")
		}
		snap = &Snapshot{Schema: Schema, Source: "ips", Samples: 1, Processes: []*Process{p.proc}}
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "empty input: no .ips report",
			`not an .ips report: no thread ({"id":…,"frames":[…]}) or frame ({"imageOffset":…,"imageIndex":…}) object`)
	})
	return snap, p.track.skipped.list, err
}

type ipsParser struct {
	track    lineTrack
	buf      string
	proc     *Process
	frames   []Frame // of the last thread
	idx      []int   // image index of each frame of every thread, in order
	images   []string
	inImages bool
	cutStart bool
}

func (p *ipsParser) line(l textLine) {
	if !p.track.next(l) {
		return
	}
	p.buf += l.text // a break inside a token is no separator
	if len(p.buf) > ipsWindow/2 {
		p.scan(false)
	}
}

// scan reads the thread, frame and field objects complete in the
// window, and keeps the rest (or, at the end or when the window is full
// of nothing, drops it).
func (p *ipsParser) scan(final bool) {
	s := p.buf
	res := []*lazyre.RE{ipsThreadRE, ipsFrameRE, ipsFieldRE, ipsImageRE}
	// each pattern's next match at or after done (absolute offsets), so
	// that the text is searched once per pattern, not once per object
	next := make([][]int, len(res))
	searched := make([]int, len(res)) // where each cached search began
	for k := range searched {
		searched[k] = -1
	}
	done := 0
	for {
		best := -1
		for k, re := range res {
			if k == 3 && !p.inImages {
				continue
			}
			if searched[k] < 0 || next[k] != nil && next[k][0] < done {
				next[k], searched[k] = nil, done
				if m := re.FindStringSubmatchIndex(s[done:]); m != nil {
					for i := range m {
						if m[i] >= 0 {
							m[i] += done
						}
					}
					next[k] = m
				}
			}
			if m := next[k]; m != nil && (best < 0 || m[0] < next[best][0]) {
				best = k
			}
		}
		if best < 0 {
			break
		}
		m := next[best]
		sub := func(i int) string {
			if m[2*i] < 0 {
				return ""
			}
			return s[m[2*i]:m[2*i+1]]
		}
		switch best {
		case 0:
			p.thread(sub(1))
		case 1:
			p.frame(sub(1), sub(2), sub(4), sub(5), sub(6))
		case 2:
			p.field(sub(1), sub(2))
		case 3:
			p.images = append(p.images, unquoteJSON(sub(1)))
		}
		done = m[1]
	}
	rest := s[done:]
	if final || len(rest) > ipsWindow/2 {
		rest = ""
	}
	p.buf = rest
}

func (p *ipsParser) thread(id string) {
	if n := len(p.proc.Threads); n > 0 {
		p.proc.Threads[n-1].Stack = append([]Frame{}, p.frames...)
	}
	p.frames = p.frames[:0]
	tid, _ := strconv.Atoi(id)
	p.proc.Threads = append(p.proc.Threads, &Thread{Tid: tid})
	p.inImages = false
}

func (p *ipsParser) frame(off, sym, line, file, image string) {
	if len(p.proc.Threads) == 0 {
		p.cutStart = true
		p.proc.Threads = append(p.proc.Threads, &Thread{Notes: []string{"its header was cut: no thread id"}})
	}
	if len(p.frames) >= maxMacFrames {
		return
	}
	f := Frame{Func: unquoteJSON(sym)}
	f.Offset, _ = strconv.ParseUint(off, 10, 64)
	if file != "" {
		f.File = unquoteJSON(file)
		f.Line, _ = strconv.Atoi(line)
	}
	i, _ := strconv.Atoi(image)
	p.frames = append(p.frames, f)
	p.idx = append(p.idx, i)
}

func (p *ipsParser) field(key, val string) {
	th := (*Thread)(nil)
	if n := len(p.proc.Threads); n > 0 && len(p.frames) == 0 {
		th = p.proc.Threads[n-1] // a thread's name and queue come before its frames
	}
	switch key {
	case "name", "queue":
		if th != nil && th.Name == "" {
			th.Name = unquoteJSON(val)
		}
	case "procPath":
		p.proc.Exe = unquoteJSON(val)
	case "pid":
		p.proc.Pid, _ = strconv.Atoi(val)
	case "usedImages":
		p.inImages = true
	}
}

// modules names each frame's image once the image list is read.
func (p *ipsParser) modules() {
	k := 0
	for _, th := range p.proc.Threads {
		for j := range th.Stack {
			if k < len(p.idx) && p.idx[k] < len(p.images) {
				th.Stack[j].Module = p.images[p.idx[k]]
			} else if k < len(p.idx) {
				th.Stack[j].Module = fmt.Sprintf("image %d", p.idx[k])
			}
			k++
		}
	}
}

// unquoteJSON reads a JSON string literal ("" for none or a broken one).
func unquoteJSON(s string) string {
	if s == "" {
		return ""
	}
	var v string
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return strings.Trim(s, `"`)
	}
	return v
}
