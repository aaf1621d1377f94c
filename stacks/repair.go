package stacks

import (
	"bufio"
	"bytes"
	"fmt"
	"html"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// The repair step: one pass in front of every parser (Parse runs it) that
// undoes what renderers, log collectors and people do to a dump before it
// is pasted, and says what it undid. It reads one line at a time with one
// line of look-ahead, so it holds no more of the input than a parser does;
// only a journal printed newest first (`journalctl -r`) is read whole
// (up to maxReverse) to be turned back.
//
// Each repaired line keeps the number of the input line it came from, so
// a parser's "line N" still points into what the user pasted.

// repLine is one line after repair: its text keeps its leading blanks
// (call trees and goroutine dumps need them).
type repLine struct {
	no   int // 1-based line of the input
	text string
}

// repairer yields repaired lines.
type repairer struct {
	br          *bufio.Reader
	buf         []byte
	no          int
	err         error
	done        bool
	ahead       []repLine // lines read and cleaned, not yet repaired
	out         []repLine // lines repaired, not yet taken (a chain makes several)
	fixes       map[string]*repairCount
	grepNo      int   // the grep -n line number the next line should carry; 0 when not in grep output
	chainNo     int   // hand-written call chains made into threads so far
	noLook      bool  // cleaning a line read ahead: no further look-ahead
	placeholder int   // goroutine ids made for "goroutine NNNNN"
	binary      int   // bytes of lines that hold a NUL byte
	stop        error // why the input was not read to its end (limits below)
	// pipe is what the parse's side reads at every line: on a cache line
	// of its own, away from the fields the repairing goroutine writes at
	// every line (sharing one, each read of pipe missed: the whole parse
	// of the 32 MB gdb dump took 104 ms, 69-75 ms apart)
	_       [64]byte
	pipe    *repPipe
	_       [64]byte
	arena   []byte      // arenaString's block
	arenaOn atomic.Bool // the piece being parsed keeps no piece of a line (useArena)
	one     [1]repLine  // ahead's room for the one line a peek reads
	inBox   bool        // inside a terminal UI's box (repair_tui.go)
}

// repairCount is how often one kind of repair was made, and where first.
type repairCount struct {
	first, n int
}

// maxReverse bounds the input a reversed journal may have: it is read
// whole to be put back in order.
const maxReverse = 64 << 20

func newRepairer(r io.Reader) *repairer {
	rp := &repairer{br: bufio.NewReaderSize(r, 64<<10), fixes: map[string]*repairCount{}}
	rp.unreverse()
	return rp
}

// fixed records one repair of kind what at line no.
func (rp *repairer) fixed(no int, what string) {
	c := rp.fixes[what]
	if c == nil {
		c = &repairCount{first: no}
		rp.fixes[what] = c
	}
	c.n++
}

// notes says what was repaired, one note a kind: a 20 MB file of damage
// gives a handful of lines, not one a line.
func (rp *repairer) notes() []string {
	var out []string
	for what, c := range rp.fixes {
		if c.n == 1 {
			out = append(out, fmt.Sprintf("repaired: %s (line %d)", what, c.first))
		} else {
			out = append(out, fmt.Sprintf("repaired: %s (%d lines, the first at line %d)", what, c.n, c.first))
		}
	}
	sort.Strings(out)
	if rp.stop != nil {
		out = append(out, "input not read to its end: "+rp.stop.Error())
	}
	return out
}

// Limits that end the reading of an input that is no dump, in bounded
// time and memory: a dump is text, has no NUL byte and no line of
// megabytes; /dev/zero, a binary or random bytes have both.
const (
	maxBinary   = 1 << 20  // bytes of lines holding a NUL byte
	maxLineRead = 16 << 20 // bytes of one line (all but maxLine dropped)
)

// end stops the reading from within: what was read is kept, and why is
// said.
func (rp *repairer) end(why error) {
	rp.done = true
	rp.stop = why
	rp.buf = rp.buf[:0]
}

// raw reads the next input line, cut at maxLine, without its newline.
func (rp *repairer) raw() (repLine, bool) {
	have, n := false, 0
	for !rp.done {
		chunk, isPrefix, err := rp.br.ReadLine()
		if err != nil {
			rp.done = true
			if err != io.EOF {
				rp.err = fmt.Errorf("line %d: %w", rp.no+1, err)
			}
			break
		}
		have = true
		n += len(chunk)
		if bytes.IndexByte(chunk, 0) >= 0 {
			rp.binary += len(chunk)
		}
		switch {
		case rp.binary > maxBinary:
			rp.end(fmt.Errorf("line %d: binary data (NUL bytes), not a text dump: reading stopped after %d MiB of it (hangdoc reads the text of a dump, or an ELF core file)", rp.no+1, maxBinary>>20))
			return repLine{}, false
		case n > maxLineRead:
			rp.end(fmt.Errorf("line %d: over %d MiB without a line break, not a text dump: reading stopped", rp.no+1, maxLineRead>>20))
			return repLine{}, false
		}
		if len(rp.buf) < maxLine {
			rp.buf = append(rp.buf, chunk[:min(len(chunk), maxLine-len(rp.buf))]...)
		}
		if !isPrefix {
			break
		}
	}
	if !have {
		return repLine{}, false
	}
	rp.no++
	l := repLine{no: rp.no, text: rp.arenaString(rp.buf)}
	rp.buf = rp.buf[:0]
	return l, true
}

// useArena says whether the lines repaired from now on may be cut from
// arenas: only for a parser known to copy what it keeps of a line (the
// gdb reader: its memo keys and texts are copies). The lines already
// repaired ahead (a few batches) stay as they were made.
func (rp *repairer) useArena(on bool) { rp.arenaOn.Store(on) }

// arenaSize is the block the lines' texts are cut from: one allocation
// for hundreds of lines, not one a line (on the 100 MB gdb dump of
// `make bench` a string a line was a quarter of the repair's CPU). A
// string taken from a line pins its block, so what a parser keeps it
// copies (memo keys, interned names), as it did so as not to pin the
// line.
const arenaSize = 64 << 10

// arenaString returns b as a string cut from the current arena, when
// the parse asked for them (useArena). The arena's bytes are never
// written again once a string covers them.
func (rp *repairer) arenaString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaSize/8 || !rp.arenaOn.Load() {
		return string(b)
	}
	if cap(rp.arena)-len(rp.arena) < len(b) {
		rp.arena = make([]byte, 0, arenaSize)
	}
	start := len(rp.arena)
	rp.arena = append(rp.arena, b...)
	return unsafe.String(&rp.arena[start], len(b))
}

// peek returns the cleaned line after the current one.
func (rp *repairer) peek() (repLine, bool) {
	if len(rp.ahead) == 0 {
		l, ok := rp.raw()
		if !ok {
			return repLine{}, false
		}
		c := rp.clean(l) // may read a line ahead itself
		if len(rp.ahead) == 0 {
			rp.one[0] = c
			rp.ahead = rp.one[:] // no new slice a peek (joinFlush peeks after every frame)
		} else {
			rp.ahead = append([]repLine{c}, rp.ahead...)
		}
	}
	return rp.ahead[0], true
}

// peekAt returns the cleaned line i+1 lines after the current one (0:
// peek's), reading and cleaning the lines up to it.
func (rp *repairer) peekAt(i int) (repLine, bool) {
	if _, ok := rp.peek(); !ok {
		return repLine{}, false
	}
	for len(rp.ahead) <= i {
		l, ok := rp.raw()
		if !ok {
			return repLine{}, false
		}
		n := len(rp.ahead)
		c := rp.clean(l) // may read a line ahead itself, which comes after c
		rp.ahead = slices.Insert(rp.ahead, n, c)
	}
	return rp.ahead[i], true
}

// take returns the next cleaned line.
func (rp *repairer) take() (repLine, bool) {
	if len(rp.ahead) > 0 {
		l := rp.ahead[0]
		rp.ahead = rp.ahead[1:]
		return l, true
	}
	l, ok := rp.raw()
	if !ok {
		return repLine{}, false
	}
	return rp.clean(l), true
}

var (
	// journalctl's short (syslog) and short-iso prefixes: time, host, unit[pid]:
	journalRE     = lazyre.New(`^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?) \S+ [^\s:\[]+(?:\[\d+\])?: ?`)
	journalMetaRE = lazyre.New(`^-- (?:Logs begin at |Journal begins at |Boot [0-9a-f]+ --|No entries --|Reboot --)`)
	// other time stamps that lead a log line
	stampRE = lazyre.New(`^(?:\[\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z| ?[+-]\d\d:?\d\d)?\]|\d\d:\d\d:\d\d[.,]\d+|\[\s*\d+\.\d+\]|\[\d\d:\d\d:\d\d(?:[.,]\d+)?(?: [A-Z]{2,5})?\])(?:\s+\[[\w:./-]{1,40}\](?: +|$))? ?`)
	grepRE  = lazyre.New(`^(\d+)([:-])`)
	// a reader's mark on a line: "<-- holds the lock", "--->>> takes B", "// here"
	annotRE      = lazyre.New(`\s+(?:<-{1,}|<={1,}|←|-{2,}>+|={2,}>+|//)\s*[^\s)].*$|\s+(?:<-{2,}|←)\s*$`)
	leadArrowRE  = lazyre.New(`^(\s*)(?:-+>+|=+>+|→|>>>)\s+`)
	spacedNumRE  = lazyre.New(`^(\s*)# (\d+)  `)                                      // "# 0  syscall ()": a number kept from GitHub's issue links
	autolinkRE   = lazyre.New(` ?<https?://github\.com/[^>\s]+/(?:issues|pull)/\d+>`) // "#5 <https://github.com/o/r/issues/5>"
	backtickRE   = lazyre.New("^`([^`]+)`$")
	goPlaceRE    = lazyre.New(`^(\s*)goroutine [A-Za-z?]+ \[`)
	logLevelRE   = lazyre.New(`^\s*(?:ERROR|WARN|WARNING|INFO|DEBUG|TRACE)\s+[\w:.-]*\s*\| ?`)
	emptyFrameRE = lazyre.New(`^\s*#\d+\s*$`)
	abridgeRE    = lazyre.New(`^(?:\.{3}|…|\[(?:\.{3}|…)\]|\((?:\.{3}|…)\)|<(?:\.{3}|…)>|[<\[]?snip(?:ped)?[>\]]?|\(?(?:\.{3}|…)?\s*\d+ more(?: frames?)?\)?|\[?\(?\d+ (?:more )?(?:frames?|lines?) (?:omitted|elided|skipped|removed|hidden)\)?\]?)$`)
	htmlTagRE    = lazyre.New(`^</?(?:details|summary|pre|code|p|br|blockquote|div)(?:\s[^<>]*)?/?>`)
	chainSepRE   = lazyre.New(`\s*(?:->|→|<-|←)\s*`)
	chainFuncRE  = lazyre.New(`^[A-Za-z_][\w:.~<>$()*\[\]]*(?:\+0x[0-9a-f]+)?$`)
	wrapStartRE  = lazyre.New(`^(?:#\d+\s|\d+\s{2,}\S|Thread |thread #|\* thread|frame #|goroutine \d|File "|PID |TID |Process \d|created by |Traceback|##\[|Current thread|\d+ @ 0x|0x[0-9a-fA-F]+ is in |---|===|\[|\{|\}|"|</?[a-z])`)
	hexTailRE    = lazyre.New(`0x[0-9a-fA-F]*$`) // an address cut in two
	hexHeadRE    = lazyre.New(`^[0-9a-fA-F]+(?:\s|$)`)
	wrapFrameRE  = lazyre.New(`^\s*(?:#\d+\s|\* frame #|frame #|File "|at )|\.go:\d+|\.(?:c|cc|cpp|h|py|rs):\d|0x[0-9a-f]{6,}`)
)

// clean removes what comes before the dump's own text on a line: CR,
// terminal colours, journal and log prefixes, grep -n context prefixes,
// e-mail and Markdown quoting, HTML a tracker added.
func (rp *repairer) clean(l repLine) repLine {
	s := strings.TrimRight(l.text, "\r")
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansiRE.ReplaceAllString(s, "")
		rp.fixed(l.no, "terminal colours removed")
	}
	if strings.IndexByte(s, '\r') >= 0 { // IndexByte first: LastIndexByte reads byte by byte
		s = s[strings.LastIndexByte(s, '\r')+1:]
	}
	s = rp.grepPrefix(l.no, s) // grep's line numbers come first: grep read the file
	for range 4 {              // prefixes stack up: a journal of a CI log of a quoted paste
		before := len(s)
		s = rp.prefixes(l.no, s)
		if len(s) == before {
			break
		}
	}
	s = rp.tuiBox(l.no, s) // repair_tui.go
	if len(s) > 2 && s[0] == '`' {
		if m := backtickRE.FindStringSubmatch(s); m != nil {
			s = m[1]
			rp.fixed(l.no, "lines quoted as inline code (`…`) unquoted")
		} else if rp.fixes["lines quoted as inline code (`…`) unquoted"] != nil && strings.Count(s, "`") == 1 {
			s = s[1:] // among such lines, one cut before its closing backtick
		}
	}
	if t := strings.TrimSpace(s); t != "" && t[0] == '<' {
		for {
			m := htmlTagRE.FindStringIndex(t)
			if m == nil {
				break
			}
			if strings.HasPrefix(t, "<summary") {
				if end := strings.Index(t, "</summary>"); end >= 0 {
					m[1] = end + len("</summary>")
				} else {
					m[1] = len(t)
				}
			}
			t = strings.TrimSpace(t[m[1]:])
			s = t
			rp.fixed(l.no, "HTML tags of a tracker (<details>, <summary>, <pre>) removed")
		}
	}
	if strings.IndexByte(s, '&') >= 0 && (strings.Contains(s, "&lt;") || strings.Contains(s, "&gt;") || strings.Contains(s, "&amp;") || strings.Contains(s, "&quot;") ||
		strings.Contains(s, "&nbsp;") || strings.Contains(s, "&#")) {
		s = html.UnescapeString(s)
		// a no-break space is a blank, a zero-width space nothing
		s = strings.ReplaceAll(strings.ReplaceAll(s, "\u00a0", " "), "\u200b", "")
		rp.fixed(l.no, "HTML entities (&lt; &gt; &nbsp;) decoded")
	}
	s = rp.mdUnescape(l.no, s) // repair_mdescape.go
	l.text = s
	return l
}

// prefixes removes one layer of what leads a line: a journal's prefix,
// docker compose's service name (repair_compose.go), a time stamp, quote
// markers.
func (rp *repairer) prefixes(no int, s string) string {
	s = rp.composePrefix(no, s)
	if mayJournal(s) {
		if m := journalRE.FindStringIndex(s); m != nil {
			s = s[m[1]:]
			rp.fixed(no, "journalctl prefixes removed")
		}
	} else if strings.HasPrefix(s, "-- ") && journalMetaRE.MatchString(s) {
		rp.fixed(no, "journalctl prefixes removed")
		return ""
	}
	if len(s) > 20 && isDigit(s[0]) && s[4] == '-' {
		if m := timestampRE.FindStringIndex(s); m != nil {
			s = s[m[1]:]
			if m := logLevelRE.FindStringIndex(s); m != nil {
				s = s[m[1]:] // "ERROR deadlock   | ": a logger's level and target
			}
			rp.fixed(no, "time stamps removed")
		}
	} else if len(s) > 8 && (s[0] == '[' || isDigit(s[0])) {
		if m := stampRE.FindStringIndex(s); m != nil {
			s = s[m[1]:]
			rp.fixed(no, "time stamps removed")
		}
	}
	for strings.IndexByte(s[:min(len(s), 5)], '>') >= 0 {
		m := quoteRE.FindStringIndex(s)
		if m == nil {
			break
		}
		s = s[m[1]:]
		rp.fixed(no, "quote markers removed")
	}
	return s
}

// grepPrefix removes "123:" and "123-" that `grep -n` (with -C) puts
// before each line: only while the numbers follow each other, so a
// line that starts with a number is not taken for one.
func (rp *repairer) grepPrefix(no int, s string) string {
	if rp.grepNo > 0 && s == "--" {
		rp.grepNo = -1 // a group separator: the next group's first number is unknown
		return ""
	}
	var m []int
	if s != "" && isDigit(s[0]) && !(len(s) > 10 && s[4] == '-' && s[7] == '-' && timestampRE.MatchString(s)) {
		// (a date's year is no line number: "2024-06-01T10:00:01Z"
		// over "2025-…" looked like grep's 2024- then 2025-)
		m = grepRE.FindStringSubmatchIndex(s)
	}
	if m == nil {
		if rp.grepNo != 0 {
			rp.grepNo = 0
		}
		return s
	}
	n, _ := strconv.Atoi(s[m[2]:m[3]])
	ok := n == rp.grepNo
	if !ok && rp.grepNo <= 0 && !rp.noLook && len(rp.ahead) == 0 {
		// the first of a group: believe it when the next line carries n+1
		if next, more := rp.raw(); more {
			nm := grepRE.FindStringSubmatch(next.text)
			k := -1
			if nm != nil {
				k, _ = strconv.Atoi(nm[1])
			}
			ok = k == n+1
			saved := rp.grepNo
			if ok {
				rp.grepNo = n + 1
			}
			rp.noLook = true
			next = rp.clean(next)
			rp.noLook = false
			rp.ahead = append(rp.ahead, next)
			if ok {
				rp.fixed(no, "grep -n prefixes removed")
				return s[m[1]:] // grepNo is already past the line read ahead
			}
			rp.grepNo = saved
		}
	}
	if !ok {
		rp.grepNo = 0
		return s
	}
	rp.grepNo = n + 1
	rp.fixed(no, "grep -n prefixes removed")
	return s[m[1]:]
}

// repair returns the next repaired line; false at the end of the input.
func (rp *repairer) repair() (repLine, bool) {
	for {
		if len(rp.out) > 0 {
			l := rp.out[0]
			rp.out = rp.out[1:]
			return l, true
		}
		l, ok := rp.take()
		if !ok {
			return repLine{}, false
		}
		t := strings.TrimSpace(l.text)
		if t == "" {
			if l.text != "" {
				l.text = ""
			}
			return l, true
		}
		if mayAbridge(t[0]) && abridgeRE.MatchString(t) {
			rp.fixed(l.no, "frames left out by hand ('...', 'N more frames'): the stacks are abridged")
			continue
		}
		if rp.chain(l) {
			continue
		}
		// each regexp below runs only on a line a byte test says it may
		// match: most lines of a large dump need no repair at all
		if c := lead(l.text); c == '-' || c == '=' || c == '>' || c == 0xe2 {
			if m := leadArrowRE.FindStringSubmatchIndex(l.text); m != nil {
				l.text = l.text[m[2]:m[3]] + l.text[m[1]:]
				rp.fixed(l.no, "a reader's marks (arrows, '<-- …' notes) removed")
			}
		}
		if mayAnnotate(l.text) {
			if m := annotRE.FindStringIndex(l.text); m != nil && strings.Count(l.text[:m[0]], "\"")%2 == 0 {
				l.text = l.text[:m[0]]
				rp.fixed(l.no, "a reader's marks (arrows, '<-- …' notes) removed")
			}
		}
		linked := false
		if strings.Contains(l.text, "<http") {
			if t := autolinkRE.ReplaceAllString(l.text, ""); t != l.text {
				l.text, linked = t, true
				rp.fixed(l.no, "GitHub's links on frame numbers (#5 <https://github.com/…/issues/5>) removed")
			}
		}
		if lead(l.text) == '#' && strings.Contains(l.text, "# ") {
			if m := spacedNumRE.FindStringSubmatchIndex(l.text); m != nil {
				l.text = l.text[:m[3]] + "#" + l.text[m[4]:m[5]] + "  " + l.text[m[1]:]
				rp.fixed(l.no, "frame numbers written '# 0' read as '#0'")
			}
		}
		if lead(l.text) == 'g' {
			if m := goPlaceRE.FindStringSubmatchIndex(l.text); m != nil {
				rp.placeholder++
				l.text = l.text[:m[3]] + fmt.Sprintf("goroutine %d [", 1000000+rp.placeholder) + l.text[m[1]:]
				rp.fixed(l.no, "goroutine ids written by hand (goroutine NNNNN) numbered from 1000001")
			}
		}
		if t := strings.TrimSpace(l.text); !linked && len(t) > 1 && t[0] == '#' && isDigit(t[1]) && !strings.ContainsAny(t, " \t") && emptyFrameRE.MatchString(l.text) {
			l.text = strings.TrimRight(l.text, " \t") + "  <signal handler called>"
			rp.fixed(l.no, "an empty frame line read as <signal handler called> (Markdown drops text in <…>)")
		}
		l = rp.unwrap(l)
		if lead(l.text) == '#' {
			l = rp.joinFlush(l, linked) // repair_frames.go
		}
		return l, true
	}
}

// isHeaderLine says whether s is a thread header that ends where its
// line does: "goroutine 100 gp=0x… m=nil [chan receive]:", "Thread 7
// (Thread 0x… (LWP 8)):", not a frame wrapped after it.
func isHeaderLine(s string) bool {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "goroutine ") {
		return strings.HasSuffix(t, "]:")
	}
	_, ok := gdbBeginNo(t)
	return ok
}

// lead is the first byte of s after the blanks regexp's \s matches, 0
// for none.
func lead(s string) byte {
	for i := 0; i < len(s); i++ { // not TrimLeft, which builds its set each call
		if c := s[i]; c != ' ' && c != '\t' && c != '\n' && c != '\f' && c != '\r' {
			return c
		}
	}
	return 0
}

// mayAbridge says whether a trimmed line that begins with byte c may be
// one abridgeRE matches: "...", "…", "[...]", "(...)", "<snip>", "snip",
// "12 more frames", "(3 frames omitted)".
func mayAbridge(c byte) bool {
	return c == '.' || c == 0xe2 || c == '[' || c == '(' || c == '<' || c == 's' || isDigit(c)
}

// mayAnnotate says whether s holds one of the marks annotRE looks for.
func mayAnnotate(s string) bool {
	return pairAfter(s, '<', "-=") || pairBefore(s, '>', "-=") || pairAfter(s, '/', "/") || strings.Contains(s, "←")
}

// mayChain says whether s holds an arrow of a hand-written call chain:
// "->", "<-", "→" or "←".
func mayChain(s string) bool {
	return pairAfter(s, '<', "-") || pairBefore(s, '>', "-") || strings.Contains(s, "←") || strings.Contains(s, "→")
}

// pairAfter says whether s holds byte c followed by one of the bytes of
// then; pairBefore, byte c after one of them. Both run on every line:
// they jump from c to c (IndexByte) rather than test each byte.
func pairAfter(s string, c byte, then string) bool {
	for {
		i := strings.IndexByte(s, c)
		if i < 0 || i+1 >= len(s) {
			return false
		}
		if strings.IndexByte(then, s[i+1]) >= 0 {
			return true
		}
		s = s[i+1:]
	}
}

func pairBefore(s string, c byte, before string) bool {
	for {
		i := strings.IndexByte(s, c)
		if i < 0 {
			return false
		}
		if i > 0 && strings.IndexByte(before, s[i-1]) >= 0 {
			return true
		}
		s = s[i+1:]
	}
}

// mayJournal says whether s may begin with a journal's prefix: "Dec 01 "
// or "2026-12-01T".
func mayJournal(s string) bool {
	return len(s) > 16 && (s[0] >= 'A' && s[0] <= 'Z' && s[3] == ' ' || isDigit(s[0]) && s[4] == '-')
}

// unwrap joins to a frame line the line an editor or a mail client
// wrapped it onto at 72–80 columns: the line is that long, and the next
// one starts nothing of its own.
func (rp *repairer) unwrap(l repLine) repLine {
	seg := len(l.text) // the length of the last piece joined
	if seg < 70 || seg > 80 {
		return l
	}
	// the next line first: in a large dump, a line of this width is most
	// often followed by an indented one (a goroutine's file line), which
	// ends the test before any regexp runs
	if next, ok := rp.peek(); !ok || next.text == "" || next.text[0] == ' ' || next.text[0] == '\t' || len(next.text) > 80 {
		return l
	}
	if isHeaderLine(l.text) || !wrapFrameRE.MatchString(l.text) {
		return l
	}
	for joins := 0; joins < 8 && seg >= 70 && seg <= 80; joins++ {
		next, ok := rp.peek()
		if !ok {
			return l
		}
		nt := next.text
		if nt == "" || nt[0] == ' ' || nt[0] == '\t' || len(nt) > 80 || wrapStartRE.MatchString(nt) || abridgeRE.MatchString(nt) {
			return l
		}
		after := ""
		if l2, ok := rp.peekAt(1); ok {
			after = l2.text // a header told by the line under it ("Exception Type:" over "Exception Codes:")
		}
		if beginsOwn(nt, after) {
			return l // the next dump after a frame as wide as a wrap
		}
		if c := nt[0]; (c == '-' || c == '=' || c == '>' || c == 0xe2) && leadArrowRE.MatchString(nt) {
			return l // a line a reader marked with an arrow is a line of its own
		}
		rp.ahead = rp.ahead[1:]
		// a line exactly as wide as a terminal or a mail client's hard
		// wrap (72, 78–80) was cut mid-word; a shorter one at a blank,
		// which the wrap ate
		cut := len(strings.TrimRight(l.text[len(l.text)-seg:], " "))
		if cut != 72 && cut < 78 && !strings.HasSuffix(l.text, "/") && !(hexTailRE.MatchString(l.text) && hexHeadRE.MatchString(nt)) {
			l.text = strings.TrimRight(l.text, " ") + " " + nt
		} else {
			l.text = strings.TrimRight(l.text, " ") + nt
		}
		seg = len(nt)
		rp.fixed(l.no, "lines wrapped at 72–80 columns joined")
	}
	return l
}

// beginsOwn says whether line s begins a dump (split.go) or names the
// process whose dump follows (procheading.go): the next dump after a
// paste cut mid-frame, never the rest of that frame.
func beginsOwn(s, next string) bool {
	t := strings.TrimSpace(s)
	if t == "" {
		return false
	}
	if _, ok := processHeading(t); ok {
		return true
	}
	return begins(t, strings.TrimSpace(next), "(wrap)") != ""
}

// chain reads a hand-written call chain ("main -> run -> lock" or
// "lock <- run <- main") as a thread of frames, innermost first.
func (rp *repairer) chain(l repLine) bool {
	t := strings.TrimSpace(l.text)
	if !mayChain(t) {
		return false
	}
	if rp.threadChain(l) { // repair_chain.go: "thread 8 -> malloc locks … -> …"
		return true
	}
	parts := chainSepRE.Split(t, -1)
	if len(parts) < 3 {
		return false
	}
	for _, p := range parts {
		if !chainFuncRE.MatchString(p) {
			return false
		}
	}
	if strings.Contains(t, "->") || strings.Contains(t, "→") {
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
	}
	rp.chainNo++
	rp.out = append(rp.out, repLine{no: l.no, text: fmt.Sprintf("Thread %d (%s):", rp.chainNo, chainHeader)})
	for i, p := range parts {
		rp.out = append(rp.out, repLine{no: l.no, text: fmt.Sprintf("#%d  %s ()", i, strings.TrimSuffix(p, "()"))})
	}
	rp.fixed(l.no, "a hand-written call chain read as a thread, innermost call first")
	return true
}

// unreverse puts a journal printed newest first back in order: when the
// first journal lines of the input go back in time, the input (at most
// maxReverse bytes) is read whole and its lines reversed.
func (rp *repairer) unreverse() {
	head, _ := rp.br.Peek(16 << 10)
	var stamps []string
	for _, line := range strings.Split(string(head), "\n") {
		if m := journalRE.FindString(line); m != "" {
			stamps = append(stamps, journalStamp(m))
		}
	}
	down, up := 0, 0
	for i := 1; i < len(stamps); i++ {
		switch {
		case stamps[i] < stamps[i-1]:
			down++
		case stamps[i] > stamps[i-1]:
			up++
		}
	}
	if down < 2 || up*4 > down {
		return
	}
	all, err := io.ReadAll(io.LimitReader(rp.br, maxReverse+1))
	if err != nil || len(all) > maxReverse {
		rp.br = bufio.NewReaderSize(io.MultiReader(strings.NewReader(string(all)), rp.br), 64<<10)
		rp.fixes["a journal printed newest first (journalctl -r) is too large to put back in order; run journalctl without -r"] = &repairCount{first: 1, n: 1}
		return
	}
	lines := strings.Split(strings.TrimRight(string(all), "\n"), "\n")
	for i, j := 0, len(lines)-1; i < j; i, j = i+1, j-1 {
		lines[i], lines[j] = lines[j], lines[i]
	}
	rp.br = bufio.NewReaderSize(strings.NewReader(strings.Join(lines, "\n")+"\n"), 64<<10)
	rp.fixes["a journal printed newest first (journalctl -r) put back in order; line numbers count from its oldest line"] = &repairCount{first: 1, n: 1}
}

// journalStamp gives a journal prefix's time as text that sorts as the
// time does ("Dec 01 21:10:48" within one month, ISO times always).
func journalStamp(prefix string) string {
	if isDigit(prefix[0]) {
		return prefix[:19]
	}
	return prefix[4:15]
}
