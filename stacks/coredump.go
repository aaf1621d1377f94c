package stacks

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// ParseCoredump reads the stack traces systemd-coredump writes to the
// journal when a process dumps core, and that `coredumpctl info` prints
// again:
//
//	Process 2168345 (cache-main) of user 75 dumped core.
//	Module /usr/lib/libfoo.so.1 with build-id 0123abcd…
//	Stack trace of thread 2168492:
//	#0  0x00007fbc8ef52ad6 __futex_abstimed_wait_common (libc.so.6 + 0x82ad6)
//	#1  0x00005bed69c0e8ad n/a (code + 0x56518ad)
//	#2  0x00007f3c8552e6c0 __GI___pthread_mutex_lock (libpthread.so.0)
//
// (systemd before v246 prints no "+ 0x…" offset; "n/a" is a frame
// without a symbol). coredumpctl info's own header ("PID: 2168345
// (cache-main)", "Executable: /usr/sbin/varnishd", "Signal: 6 (ABRT)")
// gives the pid, the executable and the signal. The thread ids are the
// kernel's; systemd prints no thread names and no arguments.
func ParseCoredump(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &cdParser{}
	readErr := scanTextLines(r, p.line)
	p.endProcess()
	var snap *Snapshot
	if p.frames > 0 {
		snap = &Snapshot{Schema: Schema, Source: "systemd-coredump", Samples: 1, Processes: p.procs}
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "empty input: no systemd-coredump stack trace",
			`not a systemd-coredump stack trace: no "Stack trace of thread N:" with frames ("#0  0x… func (libc.so.6 + 0x…)"); paste the journal's whole entry or `+"`coredumpctl info PID`")
	})
	return snap, p.track.skipped.list, err
}

func init() {
	registerFormat(&Format{Name: "systemd-coredump", Sniff: sniffCoredump, Parse: ParseCoredump, Begins: beginsCoredump})
}

var (
	cdThreadRE  = lazyre.New(`^Stack trace of thread (\d+):$`)
	cdFrameRE   = lazyre.New(`^#(\d+)\s+0x([0-9a-fA-F]+) (\S.*?) \(([^()]*?)(?: \+ 0x([0-9a-fA-F]+))?\)$`)
	cdProcessRE = lazyre.New(`^(?:\[\S+\] )?Process (\d+) \((.*)\) of user \d+ (?:dumped core|terminated abnormally)`)
	cdPidRE     = lazyre.New(`^PID: (\d+) \((.*)\)$`)
	// a frame's module as systemd prints it: " (libc.so.6 + 0x82ad6)", " (libpthread.so.0)"
	cdModuleTailRE = lazyre.New(`\s\([^\s()]+(?: \+ 0x[0-9a-fA-F]+)?\)\s*$`)
	cdSniffRE      = lazyre.New(`(?m)^[\s>]*Stack trace of thread \d+:\s*$`)
	cdFrameSnRE    = lazyre.New(`(?m)^[\s>]*#\d+\s+0x[0-9a-fA-F]+ \S+ \([^()\s]+(?: \+ 0x[0-9a-fA-F]+)?\)\s*$`)
)

// cdMeta are the lines of a coredump entry around its stacks that say
// nothing hangdoc keeps.
var cdMeta = []string{"Module ", "ELF object binary architecture:", "UID:", "GID:", "Timestamp:",
	"Command Line:", "Boot ID:", "Machine ID:", "Hostname:", "Storage:", "Size on Disk:", "Disk Size:",
	"Message:", "Found module ", "Package ", "Unit:", "User Unit:", "Slice:", "Owner UID:", "Session:",
	"Coredump:", "Control Group:", "Size:", "Executable:", "Signal:", "Mount:", "Package:"}

func sniffCoredump(head []byte) int {
	head = sniffText(head)
	threads := len(cdSniffRE.FindAllIndex(head, 20))
	if threads == 0 {
		return 0
	}
	// above eu-stack's and gdb's score for the same "#N  0x…" frames
	return 10*threads + 2*len(cdFrameSnRE.FindAllIndex(head, 40))
}

func beginsCoredump(t, next string) bool {
	// byte tests first: begins asks this of every line of every dump
	return strings.HasPrefix(t, "Stack trace of thread ") && cdThreadRE.MatchString(t) ||
		(t[0] == 'P' || t[0] == '[') && strings.Contains(t, " of user ") && cdProcessRE.MatchString(t)
}

type cdParser struct {
	track  lineTrack
	procs  []*Process
	proc   *Process
	cur    *Thread
	tids   map[int]bool
	lastNo int
	signal string
	frames int
}

// process returns the process being read, starting one when none is.
func (p *cdParser) process() *Process {
	if p.proc == nil {
		p.proc = &Process{Threads: []*Thread{}}
		p.tids = map[int]bool{}
	}
	return p.proc
}

// endProcess ends the process being read: one with no thread is none.
func (p *cdParser) endProcess() {
	if p.proc != nil && len(p.proc.Threads) > 0 {
		if p.signal != "" && p.proc.Message == "" {
			p.proc.Message = "dumped core on signal " + p.signal
		}
		p.procs = append(p.procs, p.proc)
	}
	p.proc, p.cur, p.signal = nil, nil, ""
}

func (p *cdParser) line(l textLine) {
	if !p.track.next(l) {
		return
	}
	t := l.text
	if m := cdFrameRE.FindStringSubmatch(t); m != nil {
		if p.cur == nil {
			p.thread(0) // frames without their header: an excerpt
			p.threadNote("the paste starts inside a thread's stack: its \"Stack trace of thread N:\" line is not in it")
		}
		p.frame(m)
		return
	}
	if m := cdThreadRE.FindStringSubmatch(t); m != nil {
		tid, _ := strconv.Atoi(m[1])
		if p.proc != nil && p.tids[tid] {
			p.endProcess() // a thread again: another process's entry
		}
		p.thread(tid)
		return
	}
	if m := cdProcessRE.FindStringSubmatch(t); m != nil {
		p.header(m[1], m[2])
		return
	}
	if m := cdPidRE.FindStringSubmatch(t); m != nil {
		p.header(m[1], m[2])
		return
	}
	if v, ok := strings.CutPrefix(t, "Executable:"); ok && p.proc != nil && len(p.proc.Threads) == 0 {
		p.proc.Exe = strings.TrimSpace(v)
		return
	}
	if v, ok := strings.CutPrefix(t, "Signal:"); ok {
		p.signal = strings.TrimSpace(v)
		return
	}
	if strings.HasPrefix(t, "#") && p.cur != nil {
		// a frame line cut mid-way: "#4  0x0000000000472b47 pool_thread (.varnishd-wrapped +"
		if n, ok := frameNumber(t + " "); ok {
			no, _ := strconv.Atoi(n)
			p.threadNote(fmt.Sprintf("line %d: frame #%d cut mid-way", l.no, no))
			if f, ok := cutCoredumpFrame(t[1+len(n):]); ok {
				p.cur.Stack = append(p.cur.Stack, f)
				p.lastNo = no
			}
			return
		}
	}
	for _, m := range cdMeta {
		if strings.HasPrefix(t, m) {
			return
		}
	}
	p.track.skip(l.no, "not a systemd-coredump line")
}

// header begins the process "Process N (comm) …" or "PID: N (comm)" names.
func (p *cdParser) header(pid, comm string) {
	if p.proc != nil && (len(p.proc.Threads) > 0 || p.proc.Pid != 0) {
		p.endProcess()
	}
	pr := p.process()
	pr.Pid, _ = strconv.Atoi(pid)
	pr.Exe = comm
}

func (p *cdParser) thread(tid int) {
	pr := p.process()
	p.cur = &Thread{Tid: tid, Stack: []Frame{}}
	if tid > 0 {
		p.tids[tid] = true
	}
	p.lastNo = -1
	pr.Threads = append(pr.Threads, p.cur)
}

func (p *cdParser) threadNote(n string) {
	if len(p.cur.Notes) < 20 {
		p.cur.Notes = append(p.cur.Notes, n)
	}
}

// frame adds the frame of a line cdFrameRE matched.
func (p *cdParser) frame(m []string) {
	no, _ := strconv.Atoi(m[1])
	if no > p.lastNo+1 {
		p.threadNote(missingFrames(p.lastNo, no))
	}
	p.lastNo = no
	f := Frame{Module: m[4]}
	f.PC, _ = strconv.ParseUint(m[2], 16, 64)
	if m[5] != "" {
		f.Offset, _ = strconv.ParseUint(m[5], 16, 64)
	}
	if m[3] != "n/a" {
		f.Func = m[3]
	}
	if len(p.cur.Stack) < maxMacFrames {
		p.cur.Stack = append(p.cur.Stack, f)
		p.frames++
	}
}

// cutCoredumpFrame reads what is left of a frame line cut before its
// closing parenthesis: its address, and its symbol when it is whole.
func cutCoredumpFrame(body string) (Frame, bool) {
	body = strings.TrimSpace(body)
	if !strings.HasPrefix(body, "0x") {
		return Frame{}, false
	}
	pc, ok, rest, _ := framePC(body)
	if !ok {
		return Frame{}, false
	}
	f := Frame{PC: pc}
	if sym, mod, found := strings.Cut(strings.TrimSpace(rest), " ("); found && sym != "n/a" {
		f.Func = sym
		f.Module, _, _ = strings.Cut(mod, " ")
	}
	return f, true
}
