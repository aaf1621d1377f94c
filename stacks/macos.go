package stacks

import (
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// macOS has two samplers whose reports people paste: sample(1) (also
// Activity Monitor's "Sample Process") and spindump(8) (also the .spin
// and .hang reports in /Library/Logs/DiagnosticReports). Both print each
// thread's samples as a call tree, outermost frame first, each node with
// the number of samples that passed through it, children indented two
// columns deeper.
//
// sample:
//
//	Analysis of sampling python3 (pid 41872) every 1 millisecond
//	Process:         python3 [41872]
//	Path:            /opt/homebrew/…/python3.11
//	…
//	Call graph:
//	    2613 Thread_5678418   DispatchQueue_1: com.apple.main-thread  (serial)
//	    + 2613 start  (in dyld) + 1903  [0x18f6fa0e0]
//	    +   2613 main  (in python3.11) + 88  [0x1008f3f7c]  python.c:15
//	    …
//	    2613 Thread_5678431: worker
//	      2613 thread_start  (in libsystem_pthread.dylib) + 8  [0x18fa4ad3c]
//	…
//	Total number in stack (recursive counted multiple, when >=5):
//	Sort by top of stack, same collapsed (when >= 5):
//	Binary Images:
//	       0x1008f0000 -        0x1008f3fff +python3.11 (0) <UUID> /opt/…/python3.11
//
// A line's prefix marks which ancestors have siblings further down: the
// n-th marker on a line is "+", "!", ":", "|", then "+" again; the
// column of the count gives the depth.
//
// spindump (heavy format; the timeline format adds the sample range
// after the address and may list a frame once per run of samples):
//
//	Process:          python3 [41872]
//	Path:             /opt/…/python3.11
//	Parent:           zsh [987]
//	Num samples:      1000 (1-1000)
//	  Thread 0x2c1a0e    DispatchQueue "com.apple.main-thread"(1)    1000 samples (1-1000)    priority 31 (base 31)    cpu time 9.981s (…)
//	  <thread QoS user interactive (requested user interactive), …>
//	  1000  start + 1903 (dyld + 24800) [0x18f6fa0e0]
//	    1000  main + 88 (python.c:15 in python3.11 + 16252) [0x1008f3f7c]
//	      …
//	       *1000  psynch_mtxcontinue + 0 (pthread + 20825) [0xfffffe000a8b4f1c] (blocked by turnstile waiting for python3 [41872] thread 0x2c1a0e)
//
// Kernel frames have a "*" before the count. A thread's stack here is
// its heaviest path: from the root, at each level the child with the
// most samples, stopping where more samples ended in a frame itself
// than passed into any one child. Frame.Samples keeps each frame's
// count, so a leaf whose count equals the thread's samples held every
// sample (a spin: MLX's Fence::wait). Kernel frames are left out of the
// stack (hangdoc's stacks are user stacks); the innermost one becomes
// Wait.Wchan, and a turnstile's "waiting for … [pid] thread 0x…" becomes
// Wait.BlockedByPid and BlockedByTid.

func init() {
	registerFormat(&Format{Name: "sample", Sniff: sniffSample, Parse: ParseSample})
	registerFormat(&Format{Name: "spindump", Sniff: sniffSpindump, Parse: ParseSpindump})
}

var (
	sampleSniffRE  = lazyre.New(sniffPrefix + `Analysis of sampling .* \(pid \d+\)`)
	sampleSniffThr = lazyre.New(sniffPrefix + `\d+ Thread_\d+`)
	sampleSniffFrm = lazyre.New(`\(in [^()\n]+\) \+ \d+ +\[0x[0-9a-f]+\]`)
	sampleSniffCG  = lazyre.New(sniffPrefix + `Call graph:\s*$`)
	spinSniffThr   = lazyre.New(sniffPrefix + `Thread 0x[0-9a-f]+ +.*\d+ samples? \(\d+-\d+\)`)
	spinSniffFrm   = lazyre.New(sniffPrefix + `\*?\d+ +\S.* \([^()\n]*(?: \+ \d+)?\) \[0x[0-9a-f]+\]`)
	spinSniffHdr   = lazyre.New(sniffPrefix + `(?:Heaviest stack for the main thread|Data Source: +Stackshots|Steps: +\d+)`)

	sampleAnalysisRE = lazyre.New(`^Analysis of sampling (.*) \(pid (\d+)\) every (\d+) millisecond`)
	sampleThreadRE   = lazyre.New(`^Thread_(\d+)(.*)$`)
	sampleQueueRE    = lazyre.New(`DispatchQueue_\d+: (.*?)(?:\s+\((?:serial|concurrent)\))?$`)
	macKeyRE         = lazyre.New(`^([A-Z][A-Za-z0-9 /()._-]{0,40}):(?:\s+(.*))?$`)
	macNamePidRE     = lazyre.New(`^(.*?) *\[(\d+)\]`)
	spinThreadRE     = lazyre.New(`^Thread (0x[0-9a-fA-F]+)\b(.*)$`)
	spinTNameRE      = lazyre.New(`Thread name "(.*?)"`)
	spinQueueRE      = lazyre.New(`DispatchQueue "(.*?)"\(\d+\)`)
	spinSamplesRE    = lazyre.New(`(\d+) samples? \((\d+)-(\d+)\)`)
	spinCPURE        = lazyre.New(`cpu time (\d+(?:\.\d+)?)s`)
	spinStepsRE      = lazyre.New(`\((\d+(?:\.\d+)?)\s*ms sampling interval\)`)
	macImageRE       = lazyre.New(`^\*?(0x[0-9a-fA-F]+)\s*-\s*(0x[0-9a-fA-F]+|\?\?\?)\s+\+?(.*?)\s*<([0-9A-Fa-f-]{8,})>\s*(.*)$`)
	turnstileRE      = lazyre.New(`waiting for (?:(this thread)|(.+?) \[(\d+)\](?: \[unique pid \d+\])?(?: thread (0x[0-9a-fA-F]+))?)`)
	sourceLocRE      = lazyre.New(`^(.+?):(\d+)(?:,\d+)?$`)
)

func sniffSample(head []byte) int {
	head = sniffText(head)
	return 20*len(sampleSniffRE.FindAllIndex(head, 2)) + 5*len(sampleSniffCG.FindAllIndex(head, 2)) +
		3*len(sampleSniffThr.FindAllIndex(head, 20)) + len(sampleSniffFrm.FindAllIndex(head, 40))
}

func sniffSpindump(head []byte) int {
	head = sniffText(head)
	return 3*len(spinSniffThr.FindAllIndex(head, 20)) + len(spinSniffFrm.FindAllIndex(head, 40)) +
		8*len(spinSniffHdr.FindAllIndex(head, 3))
}

// ParseSample reads a macOS sample(1) report into a snapshot: one
// process, each thread's heaviest path as its stack. See the comment at
// the top of macos.go for the layout.
func ParseSample(r io.Reader) (*Snapshot, []Skipped, error) {
	return parseMac(r, "sample")
}

// ParseSpindump reads a macOS spindump report (heavy or timeline
// format, one process or the whole system, or a .spin/.hang report with
// only the heaviest stack of the main thread).
func ParseSpindump(r io.Reader) (*Snapshot, []Skipped, error) {
	return parseMac(r, "spindump")
}

func parseMac(r io.Reader, kind string) (*Snapshot, []Skipped, error) {
	p := &macParser{kind: kind}
	readErr := scanTextLines(r, p.feed)
	snap, err := readResult(p.finish(), readErr, p.emptyError)
	return snap, p.skipped.list, err
}

// macThread is a thread being read: its header and its call tree.
type macThread struct {
	t         *Thread
	col       int // the header's column
	total     int // samples, from the header
	cpuSec    float64
	root      macNode
	open      []macLevel
	last      *macNode
	flattened bool
	heaviest  bool // spindump's "Heaviest stack for the main thread" listing
}

type macProcess struct {
	p         *Process
	threads   []*macThread
	images    map[string]string // image name (path base) → path
	samples   int
	interval  time.Duration
	durSample time.Duration
}

type macParser struct {
	kind    string
	procs   []*macProcess
	cur     *macProcess
	th      *macThread
	section string // "graph", "list" (totals, top of stack), "images", "heaviest", ""
	skipped skipList
	first   int

	// spindump's report header, before any "Process:" section
	hdr      *macProcess
	heaviest *macThread
	interval time.Duration
}

func (p *macParser) newProc() *macProcess {
	mp := &macProcess{p: &Process{Threads: []*Thread{}}, images: map[string]string{}}
	p.procs = append(p.procs, mp)
	p.cur, p.th = mp, nil
	return mp
}

func (p *macParser) feed(l textLine) {
	t := l.text
	if t == "" {
		return
	}
	if p.first == 0 {
		p.first = l.no
	}
	if isFence(t) || p.line(l) {
		p.skipped.close()
		return
	}
	p.skipped.add(l.no, "not a "+p.kind+" report")
}

func (p *macParser) line(l textLine) bool {
	t := l.text
	switch {
	case strings.HasPrefix(t, "Analysis of sampling "):
		if m := sampleAnalysisRE.FindStringSubmatch(t); m != nil {
			mp := p.newProc()
			mp.p.Pid, _ = strconv.Atoi(m[2])
			mp.p.Exe = m[1]
			ms, _ := strconv.Atoi(m[3])
			mp.interval = time.Duration(ms) * time.Millisecond
			p.section = ""
			return true
		}
	case strings.HasPrefix(t, "Sampling process "), strings.HasPrefix(t, "Sampling completed"),
		strings.HasPrefix(t, "Sample analysis of process "):
		return true
	case t == "Call graph:":
		p.section = "graph"
		return true
	case strings.HasPrefix(t, "Total number in stack"), strings.HasPrefix(t, "Sort by top of stack"):
		p.endThread()
		p.section = "list"
		return true
	case t == "Binary Images:":
		p.endThread()
		p.section = "images"
		return true
	case strings.HasPrefix(t, "Heaviest stack for the main thread"):
		p.endThread()
		p.section = "heaviest"
		h := &macThread{t: &Thread{Stack: []Frame{}}, heaviest: true, col: -1}
		p.heaviest, p.th = h, h
		return true
	case strings.Trim(t, "-") == "":
		return true // "----" rules
	case strings.HasPrefix(t, "Timeline format:"), strings.HasPrefix(t, "Heavy format:"),
		strings.HasPrefix(t, "Use -i and -"), strings.HasPrefix(t, "Spin Report:"), strings.HasPrefix(t, "Hang Report:"):
		return true
	}
	if strings.HasPrefix(t, "Thread 0x") && p.kind == "spindump" {
		if m := spinThreadRE.FindStringSubmatch(t); m != nil {
			p.spinThread(l, m)
			return true
		}
	}
	if strings.HasPrefix(t, "<") && strings.HasSuffix(t, ">") && p.th != nil && p.th.last == nil {
		// spindump's line of thread facts under the header
		if strings.Contains(t, "suspended") {
			p.th.t.Notes = appendNote(p.th.t.Notes, "spindump: "+strings.Trim(t, "<>"))
		}
		return true
	}
	if p.section == "images" {
		if m := macImageRE.FindStringSubmatch(t); m != nil {
			p.image(m)
			return true
		}
	}
	if isDigit(t[0]) || t[0] == '*' || t[0] == '+' || t[0] == '!' || t[0] == ':' || t[0] == '|' {
		if p.section == "list" {
			return true
		}
		if p.frameOrThread(l) {
			return true
		}
	}
	if p.section == "list" && (l.indent > 0 || isDigit(t[len(t)-1])) {
		return true // "        __psynch_cvwait  (in libsystem_kernel.dylib)        16594"
	}
	if m := macKeyRE.FindStringSubmatch(t); m != nil {
		p.key(m[1], m[2])
		return true
	}
	return false
}

// key handles a "Key:   value" line of a report header.
func (p *macParser) key(k, v string) {
	switch k {
	case "Process":
		m := macNamePidRE.FindStringSubmatch(v)
		if m == nil {
			return
		}
		pid, _ := strconv.Atoi(m[2])
		mp := p.cur
		if mp == nil || p.kind == "spindump" || mp.p.Pid != pid && mp.p.Pid != 0 {
			p.endThread()
			mp = p.newProc()
			p.section = ""
		}
		mp.p.Pid = pid
		if mp.p.Exe == "" {
			mp.p.Exe = m[1]
		}
	case "Command":
		p.header().p.Exe = v
	case "PID":
		p.header().p.Pid, _ = strconv.Atoi(v)
	case "Path":
		mp := p.cur
		if mp == nil {
			mp = p.header()
		}
		mp.p.Exe = v
	case "Parent", "Parent Process":
		mp := p.cur
		if mp == nil {
			mp = p.header()
		}
		if m := macNamePidRE.FindStringSubmatch(v); m != nil {
			mp.p.PPid, _ = strconv.Atoi(m[2])
		}
	case "Num samples":
		if p.cur != nil {
			n, _ := strconv.Atoi(strings.Fields(v + " 0")[0])
			p.cur.samples = n
		}
	case "Steps":
		if m := spinStepsRE.FindStringSubmatch(v); m != nil {
			ms, _ := strconv.ParseFloat(m[1], 64)
			p.interval = time.Duration(ms * float64(time.Millisecond))
		}
	case "Duration Sampled":
		if d, err := time.ParseDuration(strings.Fields(v + " x")[0]); err == nil && p.cur != nil {
			p.cur.durSample = d
		}
	case "Note":
		if p.cur != nil {
			p.cur.p.Notes = appendNote(p.cur.p.Notes, "spindump: "+v)
		}
	}
}

// header is the process the report header of a spindump describes.
func (p *macParser) header() *macProcess {
	if p.hdr == nil {
		p.hdr = &macProcess{p: &Process{Threads: []*Thread{}}, images: map[string]string{}}
	}
	return p.hdr
}

func (p *macParser) image(m []string) {
	mp := p.cur
	if mp == nil {
		return
	}
	file := strings.TrimSpace(m[5])
	if file == "" || len(mp.p.Modules) >= 4096 {
		return
	}
	start, _ := strconv.ParseUint(m[1][2:], 16, 64)
	end, _ := strconv.ParseUint(strings.TrimPrefix(m[2], "0x"), 16, 64)
	mp.p.Modules = append(mp.p.Modules, Module{Path: file, Start: start, End: end, BuildID: strings.ToLower(strings.ReplaceAll(m[4], "-", ""))})
	// frames name an image by its file's base name; two images of one
	// name (an app's executable and its framework) stay unresolved
	base := path.Base(file)
	if have, ok := mp.images[base]; !ok {
		mp.images[base] = file
	} else if have != file {
		mp.images[base] = ""
	}
}

func (p *macParser) endThread() {
	p.th = nil
}

func (p *macParser) spinThread(l textLine, m []string) {
	mp := p.cur
	if mp == nil {
		mp = p.newProc()
	}
	p.section = "graph"
	th := &macThread{t: &Thread{Stack: []Frame{}}, col: l.indent}
	if id, err := strconv.ParseUint(m[1][2:], 16, 63); err == nil {
		th.t.Tid = int(id)
	}
	rest := m[2]
	if n := spinTNameRE.FindStringSubmatch(rest); n != nil {
		th.t.Name = n[1]
	} else if q := spinQueueRE.FindStringSubmatch(rest); q != nil {
		th.t.Name = q[1]
	}
	if s := spinSamplesRE.FindStringSubmatch(rest); s != nil {
		th.total, _ = strconv.Atoi(s[1])
	}
	if c := spinCPURE.FindStringSubmatch(rest); c != nil {
		th.cpuSec, _ = strconv.ParseFloat(c[1], 64)
	}
	if strings.Contains(rest, "(suspended)") {
		th.t.Notes = append(th.t.Notes, "spindump: suspended")
	}
	mp.threads = append(mp.threads, th)
	p.th = th
}

// frameOrThread reads a call-tree line: a sample thread header
// ("2613 Thread_5678418 …") or a frame of either format.
func (p *macParser) frameOrThread(l textLine) bool {
	t := l.text
	i := 0
	for i < len(t) && strings.IndexByte("+!:| ", t[i]) >= 0 {
		i++
	}
	kernel := false
	if i < len(t) && t[i] == '*' {
		kernel = true
		i++
	}
	j := i
	for j < len(t) && isDigit(t[j]) {
		j++
	}
	if j == i || j-i > 9 || j < len(t) && t[j] != ' ' {
		return false
	}
	count, _ := strconv.Atoi(t[i:j])
	rest := strings.TrimSpace(t[j:])
	col := l.indent + i
	if p.kind == "sample" && i == 0 && !kernel && strings.HasPrefix(rest, "Thread_") {
		if m := sampleThreadRE.FindStringSubmatch(rest); m != nil {
			p.sampleThread(col, count, m)
			return true
		}
	}
	// a paste that starts mid-tree (the first thread's header cut) has
	// no section yet: its frames are a thread's all the same
	headless := p.section == "" && p.th == nil
	if rest == "" || p.section != "graph" && p.section != "heaviest" && !headless {
		return false
	}
	var n *macNode
	if p.kind == "sample" {
		n = parseSampleFrame(rest)
	} else {
		n = parseSpindumpFrame(rest)
	}
	if n == nil {
		return false
	}
	if headless {
		p.section = "graph"
	}
	n.count, n.kernel = count, kernel
	th := p.th
	if th == nil {
		// frames with no thread header: pasted without it
		mp := p.cur
		if mp == nil {
			mp = p.newProc()
		}
		th = &macThread{t: &Thread{Stack: []Frame{}}, col: col - 2}
		if p.kind == "spindump" {
			th.col = col
		}
		th.t.Notes = append(th.t.Notes, fmt.Sprintf("line %d: frames without a thread header", l.no))
		mp.threads = append(mp.threads, th)
		p.th = th
	}
	th.add(col, n, p.kind == "sample", l)
	return true
}

func (p *macParser) sampleThread(col, count int, m []string) {
	mp := p.cur
	if mp == nil {
		mp = p.newProc()
	}
	p.section = "graph"
	th := &macThread{t: &Thread{Stack: []Frame{}}, col: col, total: count}
	th.t.Tid, _ = strconv.Atoi(m[1])
	rest := strings.TrimSpace(m[2])
	queue := ""
	if q := strings.Index(rest, "DispatchQueue_"); q >= 0 {
		if qm := sampleQueueRE.FindStringSubmatch(rest[q:]); qm != nil {
			queue = qm[1]
		}
		rest = strings.TrimSpace(rest[:q])
	}
	th.t.Name = strings.TrimSpace(strings.TrimPrefix(rest, ":"))
	if th.t.Name == "" {
		th.t.Name = queue
	}
	mp.threads = append(mp.threads, th)
	p.th = th
}

// parseSampleFrame reads what follows the count on a sample(1) line:
// "sym  (in image) + 12  [0x1f00]  file.c:3", "???  (in image)  load
// address 0x100000000 + 0x3f80  [0x100003f80]".
func parseSampleFrame(rest string) *macNode {
	n := &macNode{key: rest, cut: true}
	body := rest
	if end := strings.LastIndexByte(rest, ']'); end > 0 {
		if start := strings.LastIndex(rest[:end], "[0x"); start >= 0 {
			if pc, err := strconv.ParseUint(rest[start+3:end], 16, 64); err == nil {
				n.f.PC = pc
			}
			if m := sourceLocRE.FindStringSubmatch(strings.TrimSpace(rest[end+1:])); m != nil {
				n.f.File = m[1]
				n.f.Line, _ = strconv.Atoi(m[2])
			}
			body = strings.TrimSpace(rest[:start])
			n.cut = false
		}
	}
	if n.cut {
		if b := strings.LastIndex(body, "  ["); b > 0 {
			body = body[:b]
		}
	}
	sym := body
	if in := strings.LastIndex(body, "(in "); in >= 0 {
		sym = strings.TrimSpace(body[:in])
		after := body[in+len("(in "):]
		image := after
		tail := ""
		if c := strings.IndexByte(after, ')'); c >= 0 {
			image, tail = after[:c], strings.TrimSpace(after[c+1:])
		} else {
			n.cut = true
		}
		if image != "<unknown binary>" {
			n.f.Module = image
		}
		if la, ok := strings.CutPrefix(tail, "load address "); ok {
			if plus := strings.Index(la, " + 0x"); plus > 0 {
				n.f.Offset, _ = strconv.ParseUint(la[plus+len(" + 0x"):], 16, 64)
			}
		}
	}
	if sym != "???" {
		n.f.Func = sym
	}
	n.f.Signal = n.f.Func == "_sigtramp"
	n.key = n.f.Func + "\x00" + n.f.Module + "\x00" + strconv.FormatUint(n.f.PC, 16) + "\x00" + sym
	return n
}

// parseSpindumpFrame reads what follows the count on a spindump line:
// "sym + 12 (image + 3456) [0x1f00] 1-49 (running)", "sym + 12
// (file.swift:31,1 in image + 3456) [0x1f00]", "??? (<UUID> + 3456)
// [0x1f00]", "<truncated backtrace>".
func parseSpindumpFrame(rest string) *macNode {
	n := &macNode{}
	body := rest
	complete := false
	if a := strings.LastIndex(rest, " [0x"); a >= 0 {
		if c := strings.IndexByte(rest[a:], ']'); c > 0 {
			if pc, err := strconv.ParseUint(rest[a+len(" [0x"):a+c], 16, 64); err == nil {
				n.f.PC = pc
			}
			after := strings.TrimSpace(rest[a+c+1:])
			if sp := strings.IndexByte(after, ' '); len(after) > 0 && isDigit(after[0]) {
				tok := after
				if sp > 0 {
					tok = after[:sp]
				}
				if strings.Trim(tok, "0123456789-,") == "" {
					after = strings.TrimSpace(after[len(tok):])
				}
			}
			if strings.HasPrefix(after, "(") && strings.HasSuffix(after, ")") {
				n.note = after[1 : len(after)-1]
			}
			body = strings.TrimSpace(rest[:a])
			complete = true
		}
	}
	if !complete {
		// a heaviest-stack line names the image only; a cut line stops
		// anywhere
		if b := strings.LastIndex(body, " ["); b > 0 {
			body = body[:b]
			n.cut = true
		}
	}
	if strings.HasPrefix(body, "<truncated backtrace>") {
		n.truncTop = true
		n.key = body
		return n
	}
	sym := body
	if i := strings.LastIndex(body, " ("); i > 0 && !strings.HasSuffix(body, ")") {
		body = body[:i] // cut inside "(image + offset)"
		sym = body
		n.cut = true
	}
	if i, info := lastParenGroup(body); i > 0 {
		sym = strings.TrimSpace(body[:i])
		img := info
		if in := strings.LastIndex(info, " in "); in >= 0 {
			src := info[:in]
			img = info[in+len(" in "):]
			if m := sourceLocRE.FindStringSubmatch(src); m != nil {
				n.f.File = m[1]
				n.f.Line, _ = strconv.Atoi(m[2])
			} else {
				n.f.File = src
			}
		}
		if plus := strings.LastIndex(img, " + "); plus > 0 {
			n.f.Offset, _ = strconv.ParseUint(img[plus+len(" + "):], 10, 64)
			img = img[:plus]
		}
		if !strings.HasPrefix(img, "<") {
			n.f.Module = img
		}
	}
	if plus := strings.LastIndex(sym, " + "); plus > 0 && strings.Trim(sym[plus+3:], "0123456789") == "" {
		sym = sym[:plus]
	}
	if sym != "???" {
		n.f.Func = sym
	}
	n.f.Signal = n.f.Func == "_sigtramp"
	n.key = n.f.Func + "\x00" + n.f.Module + "\x00" + strconv.FormatUint(n.f.PC, 16) + "\x00" + strconv.FormatUint(n.f.Offset, 16)
	return n
}

// maxMacFrames bounds one stack read from a call tree.
const maxMacFrames = 4096

// finish turns each thread's tree into its stack and builds the
// snapshot.
func (p *macParser) finish() *Snapshot {
	snap := &Snapshot{Schema: Schema, Source: p.kind, Samples: 1}
	if p.heaviest != nil {
		// a .spin/.hang report: the heaviest stack of the target's main
		// thread, kept when no per-thread tree of that process follows
		hp := p.header()
		var target *macProcess
		for _, mp := range p.procs {
			if mp.p.Pid == hp.p.Pid && hp.p.Pid != 0 || hp.p.Pid == 0 && len(p.procs) == 1 {
				target = mp
			}
		}
		if target == nil || len(target.threads) == 0 {
			if target == nil {
				target = hp
				p.procs = append([]*macProcess{hp}, p.procs...)
			}
			p.heaviest.t.Notes = append(p.heaviest.t.Notes, "only the heaviest stack of the main thread is in the report")
			target.threads = append(target.threads, p.heaviest)
		}
	}
	maxSamples := 0
	for _, mp := range p.procs {
		if mp != p.hdr && p.hdr != nil {
			if mp.p.Exe == "" && mp.p.Pid == p.hdr.p.Pid {
				mp.p.Exe = p.hdr.p.Exe
			}
			if mp.p.PPid == 0 && mp.p.Pid == p.hdr.p.Pid {
				mp.p.PPid = p.hdr.p.PPid
			}
		}
		interval := mp.interval
		if interval == 0 {
			interval = p.interval
		}
		if interval == 0 && mp.durSample > 0 && mp.samples > 0 {
			interval = mp.durSample / time.Duration(mp.samples)
		}
		if snap.Interval == 0 {
			snap.Interval = Duration(interval)
		}
		for _, th := range mp.threads {
			t := th.finish(mp.images, interval)
			if len(t.Stack) == 0 && th.root.children == nil {
				t.Notes = appendNote(t.Notes, "no frames in the report")
			}
			mp.p.Threads = append(mp.p.Threads, t)
			maxSamples = max(maxSamples, th.total)
		}
		if len(mp.p.Threads) > 0 {
			snap.Processes = append(snap.Processes, mp.p)
		}
	}
	if len(snap.Processes) == 0 {
		return nil
	}
	if maxSamples > 0 {
		snap.Samples = maxSamples
	}
	return snap
}

// finish builds the thread's stack from its heaviest path.
func (th *macThread) finish(images map[string]string, interval time.Duration) *Thread {
	t := th.t
	total := th.total
	if total == 0 {
		for _, c := range th.root.children {
			total += c.count
		}
		th.total = total
	}
	path := heaviestPath(&th.root)
	var user []*macNode
	var kernelLeaf *macNode
	note := ""
	for _, n := range path {
		if n.note != "" && !strings.HasPrefix(note, "blocked by") {
			note = n.note
		}
		if n.kernel {
			kernelLeaf = n
			continue
		}
		if n.truncTop {
			t.Notes = appendNote(t.Notes, "backtrace truncated at its outermost end")
			continue
		}
		user = append(user, n)
	}
	if len(user) > maxMacFrames {
		t.Notes = appendNote(t.Notes, fmt.Sprintf("stack of %d frames: the %d innermost kept", len(user), maxMacFrames))
		user = user[len(user)-maxMacFrames:]
	}
	for i := len(user) - 1; i >= 0; i-- {
		f := user[i].f
		f.Samples = user[i].count
		if full := images[f.Module]; full != "" {
			f.Module = full
		}
		t.Stack = append(t.Stack, f)
	}
	if len(path) > 0 && !th.heaviest {
		if leaf := path[len(path)-1]; leaf.count < total {
			t.Notes = appendNote(t.Notes, fmt.Sprintf("stack is the call tree's heaviest path: %d of %d samples", leaf.count, total))
		}
	}
	switch {
	case note == "running":
		t.State = "R"
	case strings.Contains(note, "blocked by"):
		t.State = "S"
		w := &Wait{Nr: -1}
		if m := turnstileRE.FindStringSubmatch(note); m != nil {
			if m[1] != "" {
				w.BlockedByTid = t.Tid
			} else {
				w.BlockedByPid, _ = strconv.Atoi(m[3])
				if m[4] != "" {
					if id, err := strconv.ParseUint(m[4][2:], 16, 63); err == nil {
						w.BlockedByTid = int(id)
					}
				}
			}
		}
		if kernelLeaf != nil && kernelLeaf.f.Func != "" {
			w.Wchan = kernelLeaf.f.Func
		}
		t.Wait = w
		t.Notes = appendNote(t.Notes, "spindump: "+note)
	case strings.HasPrefix(note, "suspended"):
		t.State = "T"
		t.Notes = appendNote(t.Notes, "spindump: "+note)
	case note != "":
		t.Notes = appendNote(t.Notes, "spindump: "+note)
	}
	if th.cpuSec > 0 && interval > 0 && total > 0 {
		window := interval.Seconds() * float64(total)
		t.CPU = min(100, th.cpuSec/window*100)
	}
	return t
}

func (p *macParser) emptyError() error {
	msg := `not a spindump report: no thread ("Thread 0x2c1a0e    1000 samples (1-1000) …") with frames ("1000  start + 1903 (dyld + 24800) [0x…]")`
	if p.kind == "sample" {
		msg = `not a sample report: no call graph ("    2613 Thread_5678418 …" over "    + 2613 start  (in dyld) + 1903  [0x…]")`
	}
	return nothingRead(p.first, p.skipped.list, "empty input: no "+p.kind+" report", msg)
}
