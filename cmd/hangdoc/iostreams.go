package main

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"
)

// ioStreams is where commands write, and whether that is a terminal;
// tests give buffers and read plain text.
type ioStreams struct {
	in            io.Reader
	out, errOut   io.Writer
	outIsTerminal bool
	exitCode      int
	// leftOut is set when a process named on the command line could not
	// be read: a report on the others that names no hang exits
	// exitAnalysis, not exitOK.
	leftOut bool
}

func systemStreams() *ioStreams {
	return &ioStreams{
		in:            os.Stdin,
		out:           os.Stdout,
		errOut:        os.Stderr,
		outIsTerminal: isatty.IsTerminal(os.Stdout.Fd()),
	}
}

// colorEnabled resolves --color for standard output.
func (s *ioStreams) colorEnabled(mode string) bool { return colorFor(mode, s.outIsTerminal) }

// colorFor resolves --color=auto|always|never with NO_COLOR
// (no-color.org): auto means color only on a terminal.
func colorFor(mode string, terminal bool) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	return terminal
}
