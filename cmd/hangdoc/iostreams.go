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
	inIsTerminal  bool
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
		inIsTerminal:  isatty.IsTerminal(os.Stdin.Fd()),
	}
}

// colorEnabled resolves --color for standard output.
func (s *ioStreams) colorEnabled(mode string) bool { return colorFor(mode, s.outIsTerminal) }

// colorFor resolves --color=auto|always|never. auto follows the
// environment's conventions, the first that applies: NO_COLOR set and
// not empty turns color off (no-color.org: an empty one does not);
// CLICOLOR_FORCE set and not "0" turns it on, even into a pipe;
// CLICOLOR=0 or TERM=dumb turn it off; else color only on a terminal.
func colorFor(mode string, terminal bool) bool {
	switch mode {
	case "always":
		return true
	case "never":
		return false
	}
	if os.Getenv("NO_COLOR") != "" {
		return false
	}
	if v, set := os.LookupEnv("CLICOLOR_FORCE"); set && v != "0" {
		return true
	}
	if os.Getenv("CLICOLOR") == "0" || os.Getenv("TERM") == "dumb" {
		return false
	}
	return terminal
}
