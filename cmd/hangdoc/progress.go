package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/mattn/go-isatty"
)

// progressDelay is how long sampling runs before the progress line
// shows: a quick attach prints nothing.
const progressDelay = 250 * time.Millisecond

// progress is the one-line indicator on stderr while sampling, redrawn
// in place ("sample 2/3 · 201 threads · 4 processes"). It writes only
// when on (stderr is a terminal), and only once sampling has run for
// delay.
type progress struct {
	w     io.Writer
	on    bool
	start time.Time
	delay time.Duration
	width int // of the line on the screen; 0 when none is
}

// newProgress returns the indicator for w: on when w is a terminal.
func newProgress(w io.Writer) *progress {
	return &progress{w: w, on: writerIsTerminal(w), start: time.Now(), delay: progressDelay}
}

// update redraws the line; attach.Options.Progress calls it after each
// sample.
func (p *progress) update(sample, samples, threads, processes int) {
	if !p.on || time.Since(p.start) < p.delay {
		return
	}
	line := fmt.Sprintf("sample %d/%d · %s · %s", sample, samples, countNoun(threads, "thread", "threads"), countNoun(processes, "process", "processes"))
	n := len([]rune(line))
	pad := ""
	if n < p.width {
		pad = strings.Repeat(" ", p.width-n) // cover the longer line before
	}
	fmt.Fprintf(p.w, "\r%s%s", line, pad)
	p.width = max(n, p.width)
}

// clear erases the line, if one was drawn, before a report is written.
func (p *progress) clear() {
	if p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}

func countNoun(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// writerIsTerminal says whether w is a terminal (a file that is a tty).
func writerIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}
