// Package report renders a snapshot and its diagnoses for people (text,
// markdown), machines (json) and graph tools (dot, mermaid). Every string
// that came from the target or a dump goes through Sanitize before it is
// written, and is escaped for the format it is written in.
package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/fatih/color"

	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/stacks"
)

// TextOptions shape the terminal report.
type TextOptions struct {
	Color bool
	// Width is the terminal's width in columns: the verdicts (summary,
	// chain, fix, evidence) are wrapped at it, frame lines longer than
	// that are cut with "…". 0 means no limit (a pipe, a file).
	Width int
}

// palette is the report's colors; all plain when color is off.
type palette struct {
	head, fn, module, loc, dim, warn *color.Color
}

func newPalette(on bool) palette {
	p := palette{
		head:   color.New(color.Bold),
		fn:     color.New(color.FgHiWhite, color.Bold),
		module: color.New(color.FgBlue),
		loc:    color.New(color.FgCyan),
		dim:    color.New(color.Faint),
		warn:   color.New(color.FgYellow),
	}
	for _, c := range []*color.Color{p.head, p.fn, p.module, p.loc, p.dim, p.warn} {
		if on {
			c.EnableColor()
		} else {
			c.DisableColor()
		}
	}
	return p
}

// Text writes the report for a terminal: the verdicts first, then per
// process the groups of threads with identical stacks, then the notes.
func Text(w io.Writer, res *heuristics.Result, opt TextOptions) error {
	snap := res.Snap
	p := newPalette(opt.Color)
	ew := &errWriter{w: w}
	writeDiagnoses(ew, p, res.Diagnoses, opt.Width)
	for i, proc := range snap.Processes {
		if i > 0 {
			ew.printf("\n")
		}
		writeProcess(ew, p, snap, proc, opt.Width)
	}
	return ew.err
}

func writeProcess(ew *errWriter, p palette, snap *stacks.Snapshot, proc *stacks.Process, width int) {
	h := headOf(snap, proc)
	ew.printf("%s %s\n", p.head.Sprintf("pid %d", proc.Pid), Sanitize(h.cmd))
	groups := h.groups
	ew.printf("%s\n", p.dim.Sprint(h.summary))
	cpu := snap.Evidence.CPU
	for _, g := range groups {
		ew.printf("\n")
		writeGroup(ew, p, g, width, cpu)
	}
	if len(proc.OSThreads) > 0 {
		osGroups := stacks.GroupThreads(proc.OSThreads)
		ew.printf("\n%s\n", p.dim.Sprintf("the program's %s in %s",
			plural(len(proc.OSThreads), "OS thread"), plural(len(osGroups), "group")))
		for _, g := range osGroups {
			ew.printf("\n")
			writeGroup(ew, p, g, width, cpu)
		}
	}
	if len(proc.Notes) > 0 {
		ew.printf("\n%s\n", p.warn.Sprint("notes:"))
		for _, n := range proc.Notes {
			ew.printf("  %s\n", Sanitize(n))
		}
	}
}

// parentText is " · parent N", or nothing when the source does not
// name the parent (a pasted dump): unknown is not pid 0.
func parentText(proc *stacks.Process) string {
	if proc.PPid == 0 {
		return ""
	}
	return fmt.Sprintf(" · parent %d", proc.PPid)
}

// writeGroup writes one group of threads with the same stack: its
// state, its CPU when the source measured it (cpuKnown), its wait, the
// threads and the frames.
func writeGroup(ew *errWriter, p palette, g stacks.Group, width int, cpuKnown bool) {
	t0 := g.Threads[0]
	var cpu float64
	for _, t := range g.Threads {
		cpu += t.CPU
	}
	ew.printf("%s", p.head.Sprint(plural(len(g.Threads), unit(g.Threads))))
	if t0.State != "" {
		ew.printf("  %s", t0.State)
	}
	if cpuKnown {
		ew.printf("  %.0f%% CPU", cpu/float64(len(g.Threads)))
	}
	if wt := waitText(t0); wt != "" {
		ew.printf("  %s", wt)
	}
	ew.printf("\n  %s\n", p.dim.Sprint(threadList(g.Threads, 8)))
	for i, f := range g.Stack {
		ew.printf("%s\n", frameLine(i, f).render(p, width))
	}
	if len(g.Stack) == 0 {
		ew.printf("  %s\n", p.dim.Sprint("(no stack)"))
	}
	if c := createdBy(t0); c != "" {
		ew.printf("  %s\n", p.dim.Sprint(c))
	}
	for _, t := range g.Threads {
		for _, n := range t.Notes {
			ew.printf("  %s\n", p.warn.Sprintf("thread %d: %s", t.Tid, Sanitize(n)))
		}
	}
}

// segKind says which color a piece of a line takes.
type segKind int

const (
	segPlain segKind = iota
	segFunc
	segModule
	segLoc
)

// segment is a piece of a line, already sanitised.
type segment struct {
	text string
	kind segKind
}

// line is a report line in pieces, so it can be cut to a width before the
// colors go in: a cut never splits an escape sequence.
type line []segment

// frameLine is one frame as the text and markdown reports show it:
// "  #3  worker_main  patient+0x1234  patient.c:42".
func frameLine(i int, f stacks.Frame) line {
	l := line{{fmt.Sprintf("  #%-2d ", i), segPlain}, {Sanitize(f.Name()), segFunc}}
	if f.Module != "" {
		l = append(l, segment{"  ", segPlain}, segment{fmt.Sprintf("%s+%#x", Sanitize(filepath.Base(f.Module)), f.Offset), segModule})
	} else if f.PC != 0 && !f.Signal {
		l = append(l, segment{"  ", segPlain}, segment{fmt.Sprintf("%#x", f.PC), segModule})
	}
	if f.File != "" {
		l = append(l, segment{"  ", segPlain}, segment{fmt.Sprintf("%s:%d", Sanitize(f.File), f.Line), segLoc})
	}
	return l
}

// String is the line without colors or a width limit.
func (l line) String() string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(s.text)
	}
	return b.String()
}

// render colors the line, first cutting it to width columns (0: no
// limit) with "…" as its last column. A column is a rune: symbols and
// paths are almost always ASCII.
func (l line) render(p palette, width int) string {
	l = l.cut(width)
	var b strings.Builder
	for _, s := range l {
		switch s.kind {
		case segFunc:
			b.WriteString(p.fn.Sprint(s.text))
		case segModule:
			b.WriteString(p.module.Sprint(s.text))
		case segLoc:
			b.WriteString(p.loc.Sprint(s.text))
		default:
			b.WriteString(s.text)
		}
	}
	return b.String()
}

// cut shortens the line to width runes, the last one "…"; a line that
// fits, or a width of 0, is left as it is.
func (l line) cut(width int) line {
	if width <= 0 || utf8.RuneCountInString(l.String()) <= width {
		return l
	}
	left := max(width-1, 0) // room for the text before "…"
	var out line
	for _, s := range l {
		n := utf8.RuneCountInString(s.text)
		if n <= left {
			out = append(out, s)
			left -= n
			continue
		}
		if left > 0 {
			out = append(out, segment{string([]rune(s.text)[:left]), s.kind})
		}
		break
	}
	return append(out, segment{"…", segPlain})
}

// maxListLines is how many chain and evidence lines of one diagnosis
// the text report shows; a 2,000-thread process would print 2,000.
const maxListLines = 25

// writeDiagnoses puts the verdicts first, as a person reads them: the
// one-line summary, the chain to follow, the evidence, the fix; each
// wrapped at width (0: not wrapped), its continuation lines indented
// under its text.
func writeDiagnoses(ew *errWriter, p palette, diags []heuristics.Diagnosis, width int) {
	for i, d := range diags {
		if i > 0 {
			ew.printf("\n")
		}
		tag := p.warn
		if !d.Deadlock {
			tag = p.dim
		}
		head := fmt.Sprintf("%s (%s confidence):", d.ID, d.Confidence)
		for j, l := range wrapWords(head+" ", "    ", Sanitize(d.Summary), width) {
			if j == 0 {
				ew.printf("%s%s\n", tag.Sprint(head), p.head.Sprint(strings.TrimPrefix(l, head)))
			} else {
				ew.printf("%s\n", p.head.Sprint(l))
			}
		}
		for _, c := range capList(d.Chain) {
			ew.lines(wrapWords("  ", "    ", Sanitize(c), width))
		}
		if k := d.KnownIssue; k != nil {
			for j, l := range wrapWords("  known issue: ", "    ", Sanitize(k.Title), width) {
				if j == 0 {
					l = "  " + p.warn.Sprint("known issue:") + strings.TrimPrefix(l, "  known issue:")
				}
				ew.printf("%s\n", l)
			}
			for _, l := range k.Links {
				ew.printf("    %s\n", p.loc.Sprint(Sanitize(l)))
			}
		}
		if d.Fix != "" {
			for j, l := range wrapWords("  fix: ", "       ", Sanitize(d.Fix), width) {
				if j == 0 {
					l = "  " + p.head.Sprint("fix:") + strings.TrimPrefix(l, "  fix:")
				}
				ew.printf("%s\n", l)
			}
		}
		if len(d.Evidence) > 0 {
			ew.printf("  %s\n", p.dim.Sprint("evidence:"))
			for _, e := range capList(d.Evidence) {
				ew.lines(wrapWords("    ", "      ", Sanitize(e), width))
			}
		}
		for _, h := range d.Hints {
			for j, l := range wrapWords("  next: ", "        ", Sanitize(hintText(h)), width) {
				if j == 0 {
					l = "  " + p.head.Sprint("next:") + strings.TrimPrefix(l, "  next:")
				}
				ew.printf("%s\n", l)
			}
		}
		for _, r := range d.Refs {
			ew.printf("  %s %s\n", p.dim.Sprint("see"), p.loc.Sprint(Sanitize(r)))
		}
	}
	if len(diags) > 0 {
		ew.printf("\n")
	}
}

// capList keeps the first maxListLines items of a list and says how
// many were left out (the JSON report has them all).
func capList(items []string) []string {
	if len(items) <= maxListLines {
		return items
	}
	return append(items[:maxListLines:maxListLines], fmt.Sprintf("… and %d more (--format json has them all)", len(items)-maxListLines))
}

// wrapWords wraps text at width columns: the first line after first,
// the others after indent. A word longer than a line is not cut; a
// width of 0 gives one line.
func wrapWords(first, indent, text string, width int) []string {
	if width <= 0 {
		return []string{first + text}
	}
	var out []string
	line, n, empty := first, utf8.RuneCountInString(first), true
	for _, w := range strings.Fields(text) {
		wn := utf8.RuneCountInString(w)
		if !empty && n+1+wn > width {
			out = append(out, line)
			line, n, empty = indent, utf8.RuneCountInString(indent), true
		}
		if !empty {
			line += " "
			n++
		}
		line += w
		n += wn
		empty = false
	}
	return append(out, line)
}

// unit is what a process's threads are called: goroutines for a Go
// program read goroutine by goroutine (or its goroutine dump), threads
// otherwise.
func unit(ts []*stacks.Thread) string {
	for _, t := range ts {
		if t.Goroutine() == nil {
			return "thread"
		}
	}
	if len(ts) == 0 {
		return "thread"
	}
	return "goroutine"
}

// memberName names one thread of a group: "4711 worker"; a goroutine
// by its id alone (its name is only "goroutine N").
func memberName(t *stacks.Thread) string {
	if t.Goroutine() != nil || t.Name == "" {
		return fmt.Sprint(t.Tid)
	}
	return fmt.Sprintf("%d %s", t.Tid, Sanitize(t.Name))
}

// createdBy says where a goroutine was started: "created by main.main
// at main.go:56 in goroutine 1"; "" for a thread or when not known.
func createdBy(t *stacks.Thread) string {
	g := t.Goroutine()
	if g == nil || g.CreatedBy.Func == "" {
		return ""
	}
	s := "created by " + Sanitize(g.CreatedBy.Func)
	if g.CreatedBy.File != "" {
		s += fmt.Sprintf(" at %s:%d", Sanitize(g.CreatedBy.File), g.CreatedBy.Line)
	}
	if g.CreatedByID != 0 {
		s += fmt.Sprintf(" in goroutine %d", g.CreatedByID)
	}
	return s
}

// plural says "1 thread", "2 threads".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// threadList names up to n threads: "1235 worker, 1236 worker, … (+12)".
func threadList(ts []*stacks.Thread, n int) string {
	var parts []string
	for i, t := range ts {
		if i == n {
			parts = append(parts, fmt.Sprintf("… (+%d)", len(ts)-n))
			break
		}
		parts = append(parts, memberName(t))
	}
	return unit(ts) + "s " + strings.Join(parts, ", ")
}

// waitText says what a thread waits on in a few words.
func waitText(t *stacks.Thread) string {
	w := t.Wait
	switch {
	case t.Goroutine() != nil:
		if t.Goroutine().WaitMinutes > 0 {
			return fmt.Sprintf("%s, %d minutes or more", t.Goroutine().Status, t.Goroutine().WaitMinutes)
		}
		return t.Goroutine().Status
	case w == nil && t.State == "R":
		return "running"
	case w == nil:
		return "" // a dump that does not say
	case w.Syscall == "futex":
		return fmt.Sprintf("futex %s %#x", w.Op, w.Addr)
	case w.Fd != 0 || w.Syscall == "read" || w.Syscall == "write":
		return fmt.Sprintf("%s fd %d", w.Syscall, w.Fd)
	case w.Syscall == "none":
		return ""
	default:
		return w.Syscall
	}
}

// errWriter keeps the first write error so the renderers read as prose.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

// lines writes each line and a newline.
func (e *errWriter) lines(ls []string) {
	for _, l := range ls {
		e.printf("%s\n", l)
	}
}
