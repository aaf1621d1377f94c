package stacks

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Small pieces the dump readers share.

// sniffPrefix is what may come before a dump's line in a raw paste: a CI
// timestamp, blanks, "> " quoting.
const sniffPrefix = `(?m)^(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? ?)?[ \t>]*`

// sniffText removes terminal colours from the start of an input, so a
// format's Sniff sees the text a person saw.
func sniffText(head []byte) []byte {
	if bytes.IndexByte(head, 0x1b) < 0 {
		return head
	}
	return ansiRE.ReplaceAll(head, nil)
}

// skipList collects the line ranges a parser did not understand. A range
// grows over blank lines: "lines 3–9 skipped" for a paragraph of prose.
type skipList struct {
	list []Skipped
	open bool // the last range may still grow
}

// add records that non-blank line no was not understood.
func (s *skipList) add(no int, why string) {
	if n := len(s.list); s.open && n > 0 && s.list[n-1].Why == why {
		s.list[n-1].To = no
		return
	}
	s.list = append(s.list, Skipped{From: no, To: no, Why: why})
	s.open = true
}

// close ends the open range: a non-blank line was understood.
func (s *skipList) close() { s.open = false }

// addAfter is add for a reader that knows prev, the non-blank line before
// line no, instead of closing the range at every line it understands:
// the open range grows only when it ends at prev.
func (s *skipList) addAfter(no, prev int, why string) {
	if n := len(s.list); n == 0 || s.list[n-1].To < prev {
		s.open = false
	}
	s.add(no, why)
}

// isFence says whether a line opens or closes a Markdown code fence.
func isFence(t string) bool {
	return strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~")
}

// appendNote adds a note once, and no more than maxNotes of them.
func appendNote(notes []string, n string) []string {
	for _, have := range notes {
		if have == n {
			return notes
		}
	}
	if len(notes) >= maxNotes {
		return notes
	}
	return append(notes, capNote(n))
}

const maxNotes = 20

// capNote bounds a note taken from the input.
func capNote(s string) string { return clipText(s, 300) }

// clipText cuts s to at most max bytes, not inside a UTF-8 sequence, and
// marks the cut with "…".
func clipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut-- // not inside a UTF-8 sequence
	}
	return s[:cut] + "…"
}

// Bounds on what one frame keeps of its arguments (gdb, lldb): a garbled
// or hostile dump must not make every frame carry a megabyte.
const (
	maxArgs     = 32
	maxArgValue = 256
)

// addThreadNote adds a note to t once, capped first (so a long note
// repeated is added once), and no more than maxNotes of them.
func addThreadNote(t *Thread, n string) { t.Notes = appendNote(t.Notes, capNote(n)) }

// missingFrames is the note for the frames a dump left out between frame
// last and frame n (n > last+1).
func missingFrames(last, n int) string {
	if n == last+2 {
		return fmt.Sprintf("frame #%d not in the dump", last+1)
	}
	return fmt.Sprintf("frames #%d–#%d not in the dump", last+1, n-1)
}

// TopCut says whether the dump left out t's innermost frames (its stack
// starts at frame #N > 0), as the parser noted (missingFrames): what the
// thread waits on, or whether it runs, is not in the dump. The notes'
// words are the parsers'; only this package reads them back.
func TopCut(t *Thread) bool {
	for _, n := range t.Notes {
		if strings.HasPrefix(n, missingFrames(-1, 1)) || strings.HasPrefix(n, "frames #0–") {
			return true
		}
	}
	return false
}

// StackCut says whether the parser noted a frame or the header of t cut
// mid-way ("thread header cut", "frame cut mid-way").
func StackCut(t *Thread) bool {
	for _, n := range t.Notes {
		if strings.Contains(n, " cut") {
			return true
		}
	}
	return false
}

// FrameCut says whether the parser noted frame #n of t cut mid-way: the
// paste ends inside it, so its function name may be a prefix of the real
// one ("tcmallo").
func FrameCut(t *Thread, n int) bool {
	mark := fmt.Sprintf(": frame #%d cut mid-way", n)
	for _, note := range t.Notes {
		if strings.Contains(note, mark) {
			return true
		}
	}
	return false
}

// cutFrame is the note for frame n, cut mid-way on line no.
func cutFrame(no, n int) string {
	return fmt.Sprintf("line %d: frame #%d cut mid-way; its function name may be partial", no, n)
}

// procNotes gives each process its notes: each once, capped, and no more
// than 50 a process.
type procNotes map[*Process]map[string]bool

func (pn *procNotes) add(pr *Process, n string) {
	if *pn == nil {
		*pn = procNotes{}
	}
	seen := (*pn)[pr]
	if seen == nil {
		seen = map[string]bool{}
		(*pn)[pr] = seen
	}
	n = capNote(n)
	if seen[n] || len(seen) >= 50 {
		return
	}
	seen[n] = true
	pr.Notes = append(pr.Notes, n)
}

// lineTrack is what the lldb and eu-stack readers keep of the lines they
// have read: the first non-blank one, the last two, and the ranges they
// skipped. A range grows over blank lines only.
type lineTrack struct {
	skipped   skipList
	prevNo    int // the last non-blank line before the current one
	lastNo    int // the last non-blank line
	firstText int
}

// next takes note of line l and says whether it is one to read: neither
// blank nor a Markdown fence.
func (k *lineTrack) next(l textLine) bool {
	if l.text == "" {
		return false
	}
	if k.firstText == 0 {
		k.firstText = l.no
	}
	k.prevNo, k.lastNo = k.lastNo, l.no
	return !isFence(l.text)
}

// skip records that line no was not understood.
func (k *lineTrack) skip(no int, why string) { k.skipped.addAfter(no, k.prevNo, why) }

// framePC reads the address ("0x…") that starts a frame's text and
// returns what follows it; ok is false when it does not parse, cut true
// when the text ends inside it (its digits neither 8 nor 16: it may be
// partial).
func framePC(body string) (pc uint64, ok bool, rest string, cut bool) {
	end := 2
	for end < len(body) && isHex(body[end]) {
		end++
	}
	pc, err := strconv.ParseUint(body[2:end], 16, 64)
	rest = body[end:]
	cut = rest == "" && end-2 != 16 && end-2 != 8
	return pc, err == nil, rest, cut
}

// nothingRead is the error of a reader that found no dump in its input:
// empty when the input has no non-blank line (first is 0), else msg at
// the first line skipped, or at the first non-blank one.
func nothingRead(first int, skipped []Skipped, empty, msg string) error {
	if first == 0 {
		return &LineError{Msg: empty}
	}
	line := first
	if len(skipped) > 0 {
		line = skipped[0].From
	}
	return &LineError{Line: line, Msg: msg}
}

// readResult is what a reader returns once its input is read: the
// snapshot it built and the read error, if any; when it built none, the
// read error, or, when reading did not fail, whyEmpty's.
func readResult(snap *Snapshot, readErr error, whyEmpty func() error) (*Snapshot, error) {
	if snap != nil {
		return snap, readErr
	}
	if readErr != nil {
		return nil, readErr
	}
	return nil, whyEmpty()
}

// lastParenGroup finds the parenthesised group that ends s: it returns
// the index of its '(' and its content, or -1 when s does not end with a
// balanced group.
func lastParenGroup(s string) (int, string) {
	if !strings.HasSuffix(s, ")") {
		return -1, ""
	}
	i := matchOpenParen(s, false)
	if i < 0 {
		return -1, ""
	}
	return i, s[i+1 : len(s)-1]
}

// lineOf returns the 1-based line of byte offset off in b; an offset
// past the last non-blank byte counts as that byte's line.
func lineOf(b []byte, off int64) int {
	if end := int64(len(bytes.TrimRight(b, " \t\r\n"))); off > end {
		off = end
	}
	n := 1
	for _, c := range b[:max(off, 0)] {
		if c == '\n' {
			n++
		}
	}
	return n
}

// bufioReader gives a reader that can Peek at the start of the input.
func bufioReader(r io.Reader) *bufio.Reader {
	if br, ok := r.(*bufio.Reader); ok && br.Size() >= 4<<10 {
		return br
	}
	return bufio.NewReaderSize(r, 64<<10)
}
