package stacks

import (
	"fmt"
	"io"
	"sort"
	"strings"
)

// Format is one kind of dump hangdoc reads. Each lives in a file of its
// own and registers itself from init.
type Format struct {
	Name string // "gdb", "lldb", "eu-stack", "goroutines", …; --input-format takes it
	// Sniff scores how much the start of an input (at most sniffBytes,
	// raw as pasted) looks like this format: 0 not at all, higher is surer.
	// It must be cheap and must not fail.
	Sniff func(head []byte) int
	// Parse reads a whole input into a snapshot. It returns what it
	// understood, the line ranges it skipped, and an error only when it
	// understood nothing (or the reader failed).
	Parse func(r io.Reader) (*Snapshot, []Skipped, error)
	// Begins, when set, says whether a repaired, trimmed line (next is
	// the one after it) begins a dump of this format, so that a paste
	// holding several dumps is cut there (split.go). Only a header no
	// other format prints may say yes.
	Begins func(line, next string) bool
	// Fallback marks a reader of last resort: detection picks it only
	// when no other format recognises the input.
	Fallback bool
}

var formats []*Format

// registerFormat adds a format; a parser file calls it from init.
func registerFormat(f *Format) { formats = append(formats, f) }

// Formats lists the formats hangdoc reads, by name.
func Formats() []string {
	var names []string
	for _, f := range formats {
		names = append(names, f.Name)
	}
	sort.Strings(names)
	return names
}

// sniffBytes is how much of an input detection looks at.
const sniffBytes = 64 << 10

// Parse reads a dump in the named format, or detects the format when
// name is "". The input is repaired first (repair.go) and split into
// the dumps it holds (split.go): each piece is read by its own format's
// parser, and the processes of all pieces come in input order. It
// returns the formats used ("gdb", or "gdb+goroutines") with the results;
// the error is non-nil only when no piece could be read.
func Parse(r io.Reader, name string) (*Snapshot, []Skipped, string, error) {
	var forced *Format
	if name != "" {
		for _, f := range formats {
			if f.Name == name {
				forced = f
			}
		}
		if forced == nil {
			return nil, nil, "", fmt.Errorf("unknown input format %q: want one of %s", name, strings.Join(Formats(), ", "))
		}
	}
	src := &pieceSource{rp: newRepairer(r)}
	f := forced
	if f == nil {
		f = src.firstFormat()
		if f == nil {
			src.rp.finish()
			if src.rp.err != nil {
				return nil, nil, "", src.rp.err
			}
			if src.rp.stop != nil {
				return nil, nil, "", src.rp.stop
			}
			return nil, nil, "", fmt.Errorf("not a dump hangdoc knows: none of %s recognised the start of the input (force one with --input-format)", strings.Join(Formats(), ", "))
		}
	}
	return src.parseAll(f, forced != nil)
}

// detect picks the format whose Sniff scores highest; ties go to the one
// registered first.
func detect(head []byte) *Format {
	var best, fallback *Format
	bestScore := 0
	for _, f := range formats {
		if f.Fallback {
			if fallback == nil && f.Sniff(head) > 0 {
				fallback = f
			}
			continue
		}
		if s := f.Sniff(head); s > bestScore {
			best, bestScore = f, s
		}
	}
	if best == nil {
		return fallback
	}
	return best
}

// Skipped is a range of input lines a parser did not understand and left
// out of the snapshot, so a report can say so ("lines 120–160 skipped: not
// a stack"). Lines are numbered from 1; To is inclusive.
type Skipped struct {
	From int    `json:"from"`
	To   int    `json:"to"`
	Why  string `json:"why"`
}

func (s Skipped) String() string {
	if s.From == s.To {
		return fmt.Sprintf("line %d skipped: %s", s.From, s.Why)
	}
	return fmt.Sprintf("lines %d–%d skipped: %s", s.From, s.To, s.Why)
}

// LineError is a parse failure that names the line it happened at.
type LineError struct {
	Line int // 1-based; 0 when no line is to blame
	Msg  string
}

func (e *LineError) Error() string {
	if e.Line <= 0 {
		return e.Msg
	}
	return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
}
