package stacks

import (
	"fmt"
	"hash/fnv"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// Java thread dumps: jstack PID (and jstack -l), jcmd PID Thread.print,
// kill -3's dump on the JVM's stdout, and IntelliJ IDEA's copy of them:
//
//	"transfer-ab" #12 daemon prio=5 os_prio=0 … tid=0x… nid=0x6189 waiting for monitor entry  [0x…]
//	   java.lang.Thread.State: BLOCKED (on object monitor)
//		at Deadlock.monitorAB(Deadlock.java:22)
//		- waiting to lock <0x000000069ebb06f8> (a java.lang.Object)
//		- locked <0x000000069ebb06e8> (a java.lang.Object)
//
//	   Locked ownable synchronizers:
//		- <0x…> (a java.util.concurrent.locks.ReentrantLock$NonfairSync)
//
// and the JVM's own "Found one Java-level deadlock:" summary ("waiting to
// lock monitor …, which is held by "t2""). A Java lock names its owner:
// a monitor is held by the thread that shows "- locked <obj>", a
// j.u.c lock by the one that lists it among its ownable synchronizers
// (or that the summary names), a class being initialised by the thread
// running its <clinit>. Each thread's Java facts are its Runtime (kind
// KindJava): its id, its java.lang.Thread.State, the object it waits on
// with the tid (the nid, the OS thread id) of the thread that holds it,
// and the objects it holds; a lock wait with its owner is
// RuntimeThread.LockWait, so the wait-for graph is the same as a live
// attach's, owners included.

func init() {
	registerFormat(&Format{Name: "jstack", Sniff: sniffJstack, Parse: ParseJstack, Begins: beginsJstack})
}

var (
	jHeaderRE    = lazyre.New(`^"(.*)"(?: #(\d+))?(?: daemon)? (?:prio=\d+ )?(?:os_prio=-?\d+ )?.*?(?:tid=(0x[0-9a-fA-F]+|\d+) )?nid=(0x[0-9a-fA-F]+|\d+|NA)(?:\s+(.*?))?\s*(?:\[0x[0-9a-fA-F]+\])?$`)
	jAtRE        = lazyre.New(`^at (\S+?)\((.*)\)$`)
	jLockRE      = lazyre.New(`^- (waiting to lock|locked|waiting on|parking to wait for|eliminated|waiting to re-lock in wait\(\))\s+<(0x[0-9a-fA-F]+)> \(a ([^)]+)\)`)
	jClassInitRE = lazyre.New(`^- waiting on the Class initialization monitor for (\S+)`)
	jOwnableRE   = lazyre.New(`^- <(0x[0-9a-fA-F]+)> \(a ([^)]+)\)`)
	jSumThreadRE = lazyre.New(`^"(.*)":$`)
	jSumWaitRE   = lazyre.New(`^(?:waiting to lock (?:monitor|Monitor@)\s*(?:0x)?[0-9a-fA-F]+ \((?:object |Object@)(0x[0-9a-fA-F]+), a ([^)]+)\)|waiting for ownable synchronizer (0x[0-9a-fA-F]+), \(a ([^)]+)\))`)
	jHeldByRE    = lazyre.New(`^which is held by "(.*)"`)
	// IntelliJ's "waiting for GstBus@1407 to release lock on <0x5b9> (a X)"
	jIdeaWaitRE = lazyre.New(`^waiting for (\S+) to release lock on <(0x[0-9a-fA-F]+)> \(a ([^)]+)\)`)
	jPidRE      = lazyre.New(`^\d+:$`)
	jHeadingRE  = lazyre.New(`^(?:Found (?:one|a total of \d+) Java-level deadlocks?|Java stack information for the threads listed above)`)
	jDateRE     = lazyre.New(`^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$`)
	jSniffRE    = lazyre.New(`(?m)^[\s>]*"[^"\n]*"(?: #\d+)?(?: daemon)? .*\bnid=|java\.lang\.Thread\.State: |^[\s>]*(?:# )?Found (?:one|\d+) Java-level deadlock|^[\s>]*- (?:waiting to lock|locked|parking to wait for) +<0x`)
)

func sniffJstack(head []byte) int {
	return 3 * len(jSniffRE.FindAllIndex(sniffText(head), 40))
}

func beginsJstack(t, next string) bool {
	return strings.HasPrefix(t, "Full thread dump ") || strings.TrimPrefix(t, "# ") == "Found one Java-level deadlock:"
}

// jThread is a thread as read; the objects it waits on and holds are
// its Runtime's.
type jThread struct {
	t        *Thread
	waitKind string // "monitor", "juc", "class-init"
	ownerBy  string // the owner's name, from the deadlock summary
	// blocks are the threads IntelliJ says wait for a lock this one
	// holds ("blocks GstBus@1407").
	blocks []string
}

// ParseJstack reads a Java thread dump (see above) into one process.
func ParseJstack(r io.Reader) (*Snapshot, []Skipped, error) {
	p := &jParser{byName: map[string]*jThread{}}
	readErr := scanTextLines(r, p.line)
	var snap *Snapshot
	if len(p.threads) > 0 {
		proc := &Process{Pid: p.pid, Threads: []*Thread{}, Runtime: p.runtime}
		p.absentOwners()
		p.resolve()
		for _, jt := range p.threads {
			if jt.t.Stack == nil {
				jt.t.Stack = []Frame{}
			}
			proc.Threads = append(proc.Threads, jt.t)
		}
		if p.summaryOnly {
			withStack := 0
			for _, jt := range p.threads {
				if len(jt.t.Stack) > 0 {
					withStack++
				}
			}
			if withStack == 0 {
				proc.Notes = append(proc.Notes, "only the JVM's deadlock summary is in the paste: the threads' stacks are not; `jstack -l PID` (or `jcmd PID Thread.print -l`) prints them")
			} else {
				proc.Notes = append(proc.Notes, fmt.Sprintf("the paste holds the JVM's deadlock section alone, with the stacks of %d of its %d threads: `jstack -l PID` (or `jcmd PID Thread.print -l`) prints every thread", withStack, len(p.threads)))
			}
		}
		snap = &Snapshot{Schema: Schema, Source: "jstack", Samples: 1, Processes: []*Process{proc}}
		snap.Evidence.Owners = true
	}
	snap, err := readResult(snap, readErr, func() error {
		return nothingRead(p.track.firstText, p.track.skipped.list, "no Java thread dump in the input", "no Java thread found")
	})
	return snap, p.track.skipped.list, err
}

type jParser struct {
	track   lineTrack
	threads []*jThread
	byName  map[string]*jThread
	cur     *jThread
	runtime string
	// in the "Found one Java-level deadlock" summary; then in its
	// repetition of the stacks, which are already read
	summary, repeat bool
	sumCur          *jThread
	summaryOnly     bool
	ownable         bool // under "Locked ownable synchronizers:"
	pid             int  // from jcmd's "PID:" line
	fakeTid         int  // ids given to threads the dump prints none for: 1, 2, …
}

func (p *jParser) line(l textLine) {
	if !p.track.next(l) {
		return
	}
	t := l.text
	if strings.HasPrefix(t, "# ") && jHeadingRE.MatchString(t[2:]) {
		t = t[2:] // Markdown made the JVM's "=====" underlined line a heading
	}
	if len(p.threads) == 0 && p.pid == 0 && jPidRE.MatchString(t) {
		p.pid, _ = strconv.Atoi(strings.TrimSuffix(t, ":")) // jcmd's first line
		return
	}
	switch {
	case strings.HasPrefix(t, "Full thread dump "):
		p.runtime = clipText(strings.TrimSuffix(strings.TrimPrefix(t, "Full thread dump "), ":"), 120)
		p.summary, p.repeat = false, false
		return
	case strings.HasPrefix(t, "Found one Java-level deadlock") || strings.HasPrefix(t, "Found a total of ") && strings.Contains(t, "deadlock"):
		p.summary, p.repeat, p.cur = true, false, nil
		return
	case strings.HasPrefix(t, "Java stack information for the threads listed above"):
		p.summary, p.repeat = false, true
		return
	case strings.HasPrefix(t, "Found ") && strings.HasSuffix(t, " deadlock.") || strings.HasPrefix(t, "====="):
		p.repeat = p.repeat && !strings.HasPrefix(t, "Found ")
		return
	}
	if p.summary && strings.HasPrefix(t, "at ") && p.sumCur != nil {
		// A frame: the stacks of the threads listed above began without
		// their "Java stack information" heading (a paste of two blocks);
		// the thread line just read was the first of them.
		p.summary, p.repeat = false, true
		if len(p.sumCur.t.Stack) == 0 {
			p.cur = p.sumCur
		}
	}
	if p.summary {
		p.summaryLine(l, t)
		return
	}
	if p.repeat {
		if m := jSumThreadRE.FindStringSubmatch(t); m != nil {
			// the stacks again, as read above; but a paste of the
			// deadlock section alone has them only here
			p.cur = nil
			if jt := p.byName[m[1]]; jt != nil && len(jt.t.Stack) == 0 {
				p.cur = jt
			}
			return
		}
		if (strings.HasPrefix(t, "at ") || strings.HasPrefix(t, "- ")) && p.cur == nil {
			return
		}
		if !strings.HasPrefix(t, "at ") && !strings.HasPrefix(t, "- ") {
			p.repeat = false
		}
	}
	if m := jHeaderRE.FindStringSubmatch(t); m != nil && strings.HasPrefix(t, "\"") {
		p.header(m)
		return
	}
	if p.cur == nil {
		p.skipLine(l, t)
		return
	}
	switch {
	case strings.HasPrefix(t, "java.lang.Thread.State: "):
		p.cur.t.Runtime.Status = strings.TrimPrefix(t, "java.lang.Thread.State: ")
		p.cur.t.State = javaState(p.cur.t.Runtime.Status)
		return
	case strings.HasPrefix(t, "at "):
		if m := jAtRE.FindStringSubmatch(t); m != nil {
			p.cur.t.Stack = append(p.cur.t.Stack, javaFrame(m[1], m[2]))
			return
		}
	case t == "Locked ownable synchronizers:":
		p.ownable = true
		return
	case t == "- None":
		return
	case strings.HasPrefix(t, "- "):
		if p.lockLine(t) {
			return
		}
	case strings.HasPrefix(t, "blocks "):
		// IntelliJ: who waits for a lock this thread holds
		for _, n := range strings.Split(strings.TrimPrefix(t, "blocks "), ",") {
			if n = strings.TrimSpace(n); n != "" {
				p.cur.blocks = append(p.cur.blocks, n)
			}
		}
		return
	case strings.HasPrefix(t, "waiting for ") && strings.Contains(t, " to release lock on <"):
		if m := jIdeaWaitRE.FindStringSubmatch(t); m != nil {
			p.cur.setWait(parseJAddr(m[2]), m[3], "monitor")
			p.cur.ownerBy = m[1]
			return
		}
	}
	p.skipLine(l, t)
}

func (p *jParser) skipLine(l textLine, t string) {
	if strings.HasPrefix(t, "Threads class SMR info:") || strings.HasPrefix(t, "_java_thread_list=") || t == "}" ||
		strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "JNI global ") || t == "No compile task" ||
		strings.HasPrefix(t, "Current CompileTask:") || jDateRE.MatchString(t) {
		return // the JVM's own lines around the threads
	}
	p.track.skip(l.no, "not a Java thread")
}

// lockLine reads "- waiting to lock <0x…> (a X)" and its kin.
func (p *jParser) lockLine(t string) bool {
	if m := jLockRE.FindStringSubmatch(t); m != nil {
		addr := parseJAddr(m[2])
		switch m[1] {
		case "waiting to lock", "waiting to re-lock in wait()":
			p.cur.setWait(addr, m[3], "monitor")
		case "locked":
			p.cur.hold(addr)
		case "parking to wait for":
			if isJavaLockSync(m[3]) {
				p.cur.setWait(addr, m[3], "juc")
			}
		}
		return true
	}
	if m := jClassInitRE.FindStringSubmatch(t); m != nil {
		p.cur.setWait(classInitAddr(m[1]), "initialisation of class "+m[1], "class-init")
		return true
	}
	if p.ownable {
		if m := jOwnableRE.FindStringSubmatch(t); m != nil {
			p.cur.hold(parseJAddr(m[1]))
			return true
		}
	}
	return false
}

// isJavaLockSync says whether a parked thread's blocker is a lock (the
// Sync of a ReentrantLock or ReentrantReadWriteLock), not a condition,
// latch or queue.
func isJavaLockSync(class string) bool {
	return strings.Contains(class, "ReentrantLock$") || strings.Contains(class, "ReentrantReadWriteLock$") ||
		strings.Contains(class, "StampedLock")
}

// newJThread is a Java thread as read: th with its Java facts to come.
func newJThread(th *Thread) *jThread {
	th.Runtime = &RuntimeThread{Kind: KindJava}
	return &jThread{t: th}
}

func (jt *jThread) setWait(addr uint64, class, kind string) {
	jt.t.Runtime.Object, jt.t.Runtime.ObjectType, jt.waitKind = addr, class, kind
}

func (jt *jThread) hold(addr uint64) {
	if r := jt.t.Runtime; !slices.Contains(r.Held, addr) {
		r.Held = append(r.Held, addr)
	}
}

func (p *jParser) header(m []string) {
	p.ownable = false
	th := &Thread{Name: m[1], Stack: []Frame{}}
	switch {
	case m[4] != "NA":
		th.Tid = int(parseJNum(m[4]))
	case m[3] != "":
		th.Tid = int(parseJNum(m[3]))
	case m[2] != "":
		th.Tid, _ = strconv.Atoi(m[2])
	}
	if th.Tid == 0 {
		p.fakeTid++
		th.Tid = p.fakeTid // no id printed: a distinct one, so owners can point at it
	}
	jt := newJThread(th)
	jt.t.Runtime.ID, _ = strconv.Atoi(m[2])
	p.threads = append(p.threads, jt)
	if p.byName[m[1]] == nil {
		p.byName[m[1]] = jt
	}
	p.cur = jt
}

// summaryLine reads the JVM's deadlock summary: owners by name. A dump
// with no stacks (only the summary pasted) gets its threads from it.
func (p *jParser) summaryLine(l textLine, t string) {
	if m := jSumThreadRE.FindStringSubmatch(t); m != nil {
		jt := p.byName[m[1]]
		if jt == nil {
			p.fakeTid++
			jt = newJThread(&Thread{Name: m[1], Tid: p.fakeTid, Stack: []Frame{}})
			p.threads = append(p.threads, jt)
			p.byName[m[1]] = jt
			p.summaryOnly = true
		}
		p.sumCur = jt
		return
	}
	if p.sumCur == nil {
		p.track.skip(l.no, "not a Java thread")
		return
	}
	if m := jSumWaitRE.FindStringSubmatch(t); m != nil {
		if m[1] != "" {
			p.sumCur.setWait(parseJAddr(m[1]), strings.ReplaceAll(m[2], "/", "."), "monitor")
		} else {
			p.sumCur.setWait(parseJAddr(m[3]), m[4], "juc")
		}
		return
	}
	if m := jHeldByRE.FindStringSubmatch(t); m != nil {
		p.sumCur.ownerBy = m[1]
		return
	}
	if strings.HasPrefix(t, "waiting ") || strings.HasPrefix(t, "which ") {
		return // another spelling of a wait: the stacks say it
	}
	p.track.skip(l.no, "not a Java thread")
}

// absentOwners: IntelliJ names the thread a waiter waits for ("waiting
// for GstBus@1407 to release lock on <0x5b9>") and the threads that wait
// for it ("blocks GstBus@1407") even when the paste holds only the
// waiter's stack. A named thread that is not in the paste becomes a
// thread without a stack (a note says so), and one the waiter blocks
// waits for a lock the waiter holds, whose address the dump does not
// print (one is made from the holder's name), so that the wait-for graph
// has both edges the dump states.
func (p *jParser) absentOwners() {
	for _, jt := range append([]*jThread(nil), p.threads...) {
		for _, name := range append([]string{jt.ownerBy}, jt.blocks...) {
			if name == "" || p.byName[name] != nil {
				continue
			}
			p.fakeTid = max(p.fakeTid, p.maxTid()) + 1 // an id no thread of the paste has
			o := newJThread(&Thread{Name: name, Tid: p.fakeTid, Stack: []Frame{},
				Notes: []string{fmt.Sprintf("not in the paste: named by %q's lock lines (IntelliJ's \"waiting for … to release lock\", \"blocks …\")", jt.t.Name)}})
			p.threads = append(p.threads, o)
			p.byName[name] = o
		}
	}
	for _, jt := range p.threads {
		for _, name := range jt.blocks {
			if o := p.byName[name]; o != nil && o.t.Runtime.Object == 0 && o != jt {
				h := fnv.New64a()
				h.Write([]byte("held by " + jt.t.Name))
				addr := h.Sum64() | 1<<63
				o.setWait(addr, "a lock "+jt.t.Name+" holds", "monitor")
				jt.hold(addr)
			}
		}
	}
}

func (p *jParser) maxTid() int {
	m := 0
	for _, jt := range p.threads {
		m = max(m, jt.t.Tid)
	}
	return m
}

// resolve gives each wait the tid of the object's holder.
func (p *jParser) resolve() {
	holder := map[uint64]*jThread{}
	for _, jt := range p.threads {
		for _, f := range jt.t.Stack {
			if cls, ok := strings.CutSuffix(f.Func, ".<clinit>"); ok {
				jt.hold(classInitAddr(cls))
			}
		}
		for _, a := range jt.t.Runtime.Held {
			holder[a] = jt
		}
	}
	for _, jt := range p.threads {
		r := jt.t.Runtime
		if r.Object == 0 {
			continue
		}
		if h := holder[r.Object]; h != nil && h != jt {
			r.Holder = h.t.Tid
		} else if o := p.byName[jt.ownerBy]; o != nil {
			r.Holder = o.t.Tid
		}
		jt.t.State = "S"
	}
}

// javaFrame makes "pkg.Class.method" and "File.java:12" (or "Native
// Method", "Unknown Source", "java.base@17/Thread.java:840") a frame.
func javaFrame(fn, loc string) Frame {
	f := Frame{Func: fn}
	if i := strings.IndexByte(loc, '/'); i >= 0 && strings.Contains(loc[:i], "@") {
		loc = loc[i+1:] // the module: "java.base@17.0.15/"
	}
	if i := strings.LastIndexByte(loc, ':'); i > 0 {
		if n, err := strconv.Atoi(loc[i+1:]); err == nil && n > 0 {
			f.File, f.Line = loc[:i], n
			return f
		}
		loc = loc[:i]
	}
	if loc != "Native Method" && loc != "Unknown Source" && loc != "" {
		f.File = loc
	}
	return f
}

// javaState maps java.lang.Thread.State to the one-letter state; a
// RUNNABLE thread may sit in native code (a read, a class-init wait), so
// it says nothing.
func javaState(s string) string {
	switch {
	case strings.HasPrefix(s, "BLOCKED"), strings.HasPrefix(s, "WAITING"), strings.HasPrefix(s, "TIMED_WAITING"):
		return "S"
	}
	return ""
}

func parseJAddr(s string) uint64 { return parseJNum(s) }

func parseJNum(s string) uint64 {
	if v, ok := strings.CutPrefix(s, "0x"); ok {
		n, _ := strconv.ParseUint(v, 16, 64)
		return n
	}
	n, _ := strconv.ParseUint(s, 10, 64)
	return n
}

// classInitAddr is the address a class's initialisation lock stands at:
// the JVM prints none, so one made from the class name.
func classInitAddr(class string) uint64 {
	h := fnv.New64a()
	h.Write([]byte("class-init " + class))
	return h.Sum64() | 1<<63
}
