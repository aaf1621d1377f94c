package stacks

import (
	"bufio"
	"bytes"
	"io"
	"strings"
)

// Small pieces the py-spy, faulthandler, macOS and hangdoc-json readers
// share.

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
func capNote(s string) string {
	const max = 300
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut-- // not inside a UTF-8 sequence
	}
	return s[:cut] + "…"
}

// lastParenGroup finds the parenthesised group that ends s: it returns
// the index of its '(' and its content, or -1 when s does not end with a
// balanced group.
func lastParenGroup(s string) (int, string) {
	if !strings.HasSuffix(s, ")") {
		return -1, ""
	}
	depth := 0
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ')':
			depth++
		case '(':
			depth--
			if depth == 0 {
				return i, s[i+1 : len(s)-1]
			}
		}
	}
	return -1, ""
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
