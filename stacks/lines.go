package stacks

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
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
	ansiRE      = lazyre.New(`\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)
	timestampRE = lazyre.New(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)? ?`)
	quoteRE     = lazyre.New(`^[ \t]{0,3}>[ \t]?`)
)

func cleanLine(no int, s string, cut bool) textLine {
	s = strings.TrimRight(s, "\r")
	if strings.IndexByte(s, 0x1b) >= 0 {
		s = ansiRE.ReplaceAllString(s, "")
	}
	if strings.IndexByte(s, '\r') >= 0 {
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
// size of the input. (Keeping every line, the goroutine parser peaked at
// 5.2 times a 32 MB dump's size; with scanTextLines at 2.5 times: its
// snapshot's own size, 1.9 times, and the GC's slack.) A read error is
// returned as "line N: …", after fn has seen every line before it.
func scanTextLines(r io.Reader, fn func(textLine)) error {
	sc := newLineScanner(r)
	for {
		l, ok := sc.next()
		if !ok {
			return sc.err
		}
		fn(l)
	}
}

// lineScanner yields the cleaned lines of r one at a time, on demand.
type lineScanner struct {
	src  lineSource // set when r hands out whole lines
	br   *bufio.Reader
	buf  []byte
	no   int
	err  error // the read error that ended the input ("line N: …"), nil at EOF
	done bool
}

// lineSource is a reader that can hand out its lines as strings (a
// piece of repaired input does): the scanner takes them as they are,
// without copying each line into bytes and back.
type lineSource interface {
	nextLine() (string, bool)
}

func newLineScanner(r io.Reader) *lineScanner {
	if src, ok := r.(lineSource); ok {
		return &lineScanner{src: src}
	}
	return &lineScanner{br: bufio.NewReaderSize(r, 64<<10)}
}

// next returns the next line; false at the end of the input or at a read
// error (then err says which).
func (s *lineScanner) next() (textLine, bool) {
	if s.src != nil {
		if s.done {
			return textLine{}, false
		}
		t, ok := s.src.nextLine()
		if !ok {
			s.done = true
			return textLine{}, false
		}
		s.no++
		cut := len(t) >= maxLine
		return cleanLine(s.no, t[:min(len(t), maxLine)], cut), true
	}
	for !s.done {
		chunk, isPrefix, err := s.br.ReadLine()
		var l textLine
		have := false
		if len(chunk) > 0 || isPrefix || err == nil {
			if len(s.buf) < maxLine {
				room := maxLine - len(s.buf)
				if len(chunk) > room {
					chunk = chunk[:room]
				}
				s.buf = append(s.buf, chunk...)
			}
			if isPrefix && len(s.buf) < maxLine {
				continue
			}
			if isPrefix {
				// keep reading to the end of the line, dropping it
				for isPrefix && err == nil {
					_, isPrefix, err = s.br.ReadLine()
				}
			}
			s.no++
			l, have = cleanLine(s.no, string(s.buf), len(s.buf) >= maxLine), true
			s.buf = s.buf[:0]
		}
		if err != nil {
			s.done = true
			if err != io.EOF {
				s.err = fmt.Errorf("line %d: %w", s.no+1, err)
			}
		}
		if have {
			return l, true
		}
	}
	return textLine{}, false
}

// lineWindow gives a parser that looks a few lines ahead (a frame a
// narrow terminal wrapped) the lines it asks for, reading them on
// demand and keeping none it has moved past: the whole input is never
// held.
type lineWindow struct {
	sc   *lineScanner
	buf  []textLine // lines base, base+1, … (0-based indexes)
	base int
}

// line returns line i (0-based); false past the end of the input.
func (w *lineWindow) line(i int) (textLine, bool) {
	for i-w.base >= len(w.buf) {
		l, ok := w.sc.next()
		if !ok {
			return textLine{}, false
		}
		w.buf = append(w.buf, l)
	}
	return w.buf[i-w.base], true
}

// forget drops the lines before i: the parser will not ask for them again.
func (w *lineWindow) forget(i int) {
	if n := i - w.base; n > 0 {
		n = min(n, len(w.buf))
		w.buf = append(w.buf[:0], w.buf[n:]...)
		w.base += n
	}
}
