package stacks

import (
	"bufio"
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
// name is "". It returns the format used with the parse's results.
func Parse(r io.Reader, name string) (*Snapshot, []Skipped, string, error) {
	br := bufio.NewReaderSize(r, sniffBytes)
	if name == "" {
		head, err := br.Peek(sniffBytes)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return nil, nil, "", err
		}
		f := detect(head)
		if f == nil {
			return nil, nil, "", fmt.Errorf("not a dump hangdoc knows: none of %s recognised the start of the input (force one with --input-format)", strings.Join(Formats(), ", "))
		}
		snap, skipped, err := f.Parse(br)
		return snap, skipped, f.Name, err
	}
	for _, f := range formats {
		if f.Name == name {
			snap, skipped, err := f.Parse(br)
			return snap, skipped, f.Name, err
		}
	}
	return nil, nil, "", fmt.Errorf("unknown input format %q: want one of %s", name, strings.Join(Formats(), ", "))
}

// detect picks the format whose Sniff scores highest; ties go to the one
// registered first.
func detect(head []byte) *Format {
	var best *Format
	bestScore := 0
	for _, f := range formats {
		if s := f.Sniff(head); s > bestScore {
			best, bestScore = f, s
		}
	}
	return best
}
