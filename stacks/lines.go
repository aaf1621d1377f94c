package stacks

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// Pasted dumps arrive through terminals, CI logs, bug trackers and
// e-mail. Every text parser reads its input through scanTextLines (or
// readTextLines, which keeps what it yields), so they all survive the same
// damage the same way.

// maxLine caps one line; the rest of a longer line is dropped (and the
// frame on it, if any, marked as cut).
const maxLine = 256 << 10

// textLine is one input line after the clean-up every dump needs:
// terminal colours, CI timestamps, CRLF, Markdown/e-mail quoting removed.
type textLine struct {
	no     int    // 1-based line number in the input
	indent int    // leading blanks after quoting was removed (a tab counts 8)
	text   string // trimmed content
	cut    bool   // the line was longer than maxLine
}

var (
	ansiRE      = regexp.MustCompile(`\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)
	timestampRE = regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? ?`)
	quoteRE     = regexp.MustCompile(`^[ \t]{0,3}>[ \t]?`)
)

// readTextLines returns every cleaned line of r: what scanTextLines
// yields, kept. On a read error it returns the lines before it with the
// error.
func readTextLines(r io.Reader) ([]textLine, error) {
	var lines []textLine
	err := scanTextLines(r, func(l textLine) { lines = append(lines, l) })
	return lines, err
}

func cleanLine(no int, b []byte, cut bool) textLine {
	b = bytes.TrimRight(b, "\r")
	if bytes.IndexByte(b, 0x1b) >= 0 {
		b = ansiRE.ReplaceAll(b, nil)
	}
	s := string(b)
	if strings.ContainsRune(s, '\r') {
		// a progress line overwritten in place: keep what is left visible
		s = s[strings.LastIndexByte(s, '\r')+1:]
	}
	if len(s) > 20 && isDigit(s[0]) && s[4] == '-' {
		s = timestampRE.ReplaceAllString(s, "")
	}
	for strings.IndexByte(s[:min(len(s), 5)], '>') >= 0 {
		loc := quoteRE.FindStringIndex(s)
		if loc == nil {
			break
		}
		s = s[loc[1]:]
	}
	indent := 0
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			indent++
		} else if s[i] == '\t' {
			indent += 8
		} else {
			break
		}
	}
	return textLine{no: no, indent: indent, text: strings.TrimSpace(s), cut: cut}
}

// scanTextLines reads r one line at a time: it calls fn with each
// cleaned line, in input order, and keeps none of them, so a parser that
// needs no look-back holds one line (at most maxLine bytes) whatever the
// size of the input. readTextLines keeps every line: with it the
// goroutine parser peaked at 5.2 times a 32 MB dump's size, with
// scanTextLines at 2.5 times (its snapshot's own size, 1.9 times, and the
// GC's slack). A read error is returned as "line N: …", after fn has seen
// every line before it.
func scanTextLines(r io.Reader, fn func(textLine)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	no := 0
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(chunk) > 0 || isPrefix || err == nil {
			if len(buf) < maxLine {
				room := maxLine - len(buf)
				if len(chunk) > room {
					chunk = chunk[:room]
				}
				buf = append(buf, chunk...)
			}
			if isPrefix {
				if len(buf) >= maxLine {
					// keep reading to the end of the line, dropping it
					for isPrefix && err == nil {
						_, isPrefix, err = br.ReadLine()
					}
				} else {
					continue
				}
			}
			no++
			fn(cleanLine(no, buf, len(buf) >= maxLine))
			buf = buf[:0]
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", no+1, err)
		}
	}
}
