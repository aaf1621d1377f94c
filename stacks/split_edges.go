package stacks

import (
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/internal/lazyre"
)

// Where one dump of a format ends and the next of the same format begins
// when no id repeats (split.go cuts at repeated ids): each tool prints
// something once per dump, or in an order its own dump cannot break.
//
//   - A dump's own header after threads were read: jstack's "Full thread
//     dump", pprof's "goroutine profile: total N". A paste that starts
//     with an excerpt (a deadlock summary, a few threads) and then holds
//     a whole dump is two dumps.
//     A spindump report's "Date/Time:" (its first line) after a heaviest
//     stack or a thread is another report's.
//   - A deadlock summary naming a thread the jstack dump read does not
//     have: the summary of another JVM (jstack prints its own after its
//     threads, about them).
//   - The goroutine that prints a Go dump comes first in it: a running
//     goroutine whose stack is in debug.Stack or pprof's debug=2 writer,
//     after goroutines, begins another dump. It is the only goroutine of
//     its dump shown running with a stack: a second begins another dump.
//   - py-spy's --json array, then a text dump's "Process N:" or thread
//     header: JSON holds no such line.
//   - gdb's thread apply all bt (and pstack) lists threads from the
//     highest number down to 1: after thread 1, a higher number begins
//     another session's list. An info threads table lists every thread
//     with its LWP: a thread header whose number has another LWP in the
//     table, or which the table lacks, is another process's; gdb's
//     "info threads" prompt after a backtrace or a table is another
//     listing, as a table's header is (split.go).
//   - systemd-coredump's frames sit under their thread's header at its
//     indentation (coredumpctl info indents both, the journal's message
//     neither): a header at another indentation than the frame above it
//     is another paste's.
//   - gdb's py-bt prints the current thread's Python stack without a
//     thread header; a thread header after it with no prompt between
//     (the next command's output) is another paste's.
//   - faulthandler's "Extension modules: …" line and the shell's report
//     of the signal that killed the process ("Aborted (core dumped)")
//     come after a dump's last thread: a thread header after them is
//     another dump.
//
// Each rule reads the line and at most the two after it: the splitter
// stays streaming.

// edges is the state the rules keep for one piece.
type edges struct {
	threads bool            // a thread (jstack, pprof record, goroutine) was read
	jNames  map[string]bool // the jstack threads' names
	pyJSON  bool            // a py-spy --json array was opened
	// goRunner: a running goroutine with its stack was read (runsWithStack)
	goRunner bool
	gdbLast  int // the last gdb thread header's number
	gdbDesc  int // the gdb headers in a row, down to gdbLast
	// gdbHeader: a gdb thread header was read; pyBtBare: a py-bt
	// traceback was, before any header and with no prompt since
	gdbHeader, pyBtBare bool
	fhEnded             bool // faulthandler: the process's end was printed
	// indent is the current line's indentation (advance sets it);
	// cdIndent that of the last systemd-coredump frame or header (cdSeen)
	indent, cdIndent int
	cdSeen           bool
}

// edge applies the rules to line t of a piece of format; ok says the
// line was decided (again: another process begins), else split.go's
// rules decide.
func (g *pieceIDs) edge(format, t, next string) (again, ok bool) {
	switch format {
	case "jstack":
		return g.jstackEdge(t, next)
	case "pprof-goroutine":
		if isDigit(t[0]) && ppRecordRE.MatchString(t) {
			g.threads = true
		} else if t[0] == 'g' && ppTotalRE.MatchString(t) {
			again := g.threads
			g.threads = true
			return again, true
		}
	case "goroutines":
		if t[0] == 'g' && strings.HasPrefix(t, "goroutine ") {
			runs := runsWithStack(t, next)
			again := g.threads && printsDump(t, next) || runs && g.goRunner
			g.threads, g.goRunner = true, g.goRunner || runs
			return again, again
		}
	case "py-spy":
		if t == "[" {
			g.pyJSON = true
		} else if g.pyJSON && (t[0] == 'P' && beginPySpyRE.MatchString(t) || t[0] == 'T' && pyThreadRE.MatchString(t)) {
			return true, true
		}
	case "gdb":
		if t[0] == 'T' {
			if t == "Traceback (most recent call first):" {
				g.pyBtBare = g.pyBtBare || !g.gdbHeader
				return false, false
			}
			return g.gdbHeaderEdge(t)
		}
		if t[0] == '(' && strings.HasPrefix(t, "(gdb) ") {
			g.pyBtBare = false // the next command's output, same session
			if strings.HasPrefix(t, "(gdb) info thr") {
				again := g.content
				g.rows, g.lwps = nil, nil
				return again, true
			}
		}
	case "spindump":
		if strings.HasPrefix(t, "Heaviest stack for ") || strings.HasPrefix(t, "Thread 0x") {
			g.threads = true
		} else if strings.HasPrefix(t, "Date/Time:") {
			return g.threads, true
		}
	case "systemd-coredump":
		if t[0] == '#' || t[0] == 'S' && strings.HasPrefix(t, "Stack trace of thread ") {
			at := g.indent
			again := t[0] == 'S' && g.cdSeen && at != g.cdIndent
			g.cdIndent, g.cdSeen = at, true
			return again, again
		}
		if (t[0] == 'P' || t[0] == '[') && (cdPidRE.MatchString(t) || cdProcessRE.MatchString(t)) {
			g.cdSeen = false // another entry's header: the coredump reader splits its entries
		}
	case "faulthandler":
		if strings.HasPrefix(t, "Extension modules: ") || shellDeathRE.MatchString(t) {
			g.fhEnded = true
		} else if g.fhEnded && g.content && faultHeaderRE.MatchString(t) {
			return true, true
		}
	}
	return false, false
}

// needsNext says whether edge wants the lines after t: advance reads
// them only for the lines that may need them.
func needsNext(format, t string) bool {
	switch format {
	case "jstack":
		return strings.HasSuffix(t, ":") && strings.Contains(t, "Java-level deadlock")
	case "goroutines":
		return strings.HasSuffix(t, "]:") && strings.Contains(t, "[running")
	}
	return false
}

// jstackEdge: a thread's header (or a summary's "name":) is a thread
// read; a dump's header after one, or a summary about threads the dump
// lacks, begins another dump.
func (g *pieceIDs) jstackEdge(t, next string) (bool, bool) {
	switch {
	case t[0] == '"':
		if name, ok := jQuotedName(t); ok {
			if g.jNames == nil {
				g.jNames = map[string]bool{}
			}
			if !g.jNames[name] {
				g.jNames[strings.Clone(name)] = true
			}
		}
		g.threads = true
	case strings.HasPrefix(t, "Full thread dump "):
		again := g.threads || g.content
		g.content = true
		return again, true
	case strings.HasSuffix(t, ":") && strings.Contains(t, "Java-level deadlock") && len(g.jNames) > 0:
		for _, l := range strings.Split(next, "\n") {
			if l = strings.TrimSpace(l); l != "" && l[0] == '"' {
				if name, ok := jQuotedName(l); ok && !g.jNames[name] {
					return true, true
				}
				break
			}
		}
	}
	return false, false
}

// jQuotedName is the name in quotes that begins a jstack line.
func jQuotedName(t string) (string, bool) {
	end := strings.IndexByte(t[1:], '"')
	if end < 0 {
		return "", false
	}
	return t[1 : 1+end], true
}

// runsWithStack says whether goroutine header t, over next, is a
// running goroutine shown with its stack: in one dump, only the one that
// printed it (the others run on other threads, "stack unavailable", or
// were stopped to be printed). The runtime's own sections under
// GOTRACEBACK=crash (gp=, m=) are left out.
func runsWithStack(t, next string) bool {
	if !strings.HasSuffix(t, "]:") || !strings.Contains(t, "[running") || strings.Contains(t, " gp=") {
		return false
	}
	first, _, _ := strings.Cut(next, "\n")
	first = strings.TrimSpace(first)
	return first != "" && !strings.HasPrefix(first, "goroutine running on other thread") && !strings.HasPrefix(first, "goroutine ")
}

// printsDump says whether goroutine header t, over next, is the
// goroutine that printed a dump of its own: running, its stack in the
// function that writes the dump (debug.Stack, pprof's debug=2 writer;
// runtime.Stack's trace starts at its caller, which says nothing).
func printsDump(t, next string) bool {
	if !strings.HasSuffix(t, "]:") || !strings.Contains(t, "[running") {
		return false
	}
	first, _, _ := strings.Cut(next, "\n")
	first = strings.TrimSpace(first)
	return strings.HasPrefix(first, "runtime/debug.Stack(") || strings.HasPrefix(first, "runtime/pprof.writeGoroutineStacks(")
}

// gdbHeaderEdge applies the order and table rules to a gdb thread header.
func (g *pieceIDs) gdbHeaderEdge(t string) (bool, bool) {
	no, ok := gdbBeginNo(t)
	if !ok {
		return false, false
	}
	if g.pyBtBare {
		return true, true
	}
	g.gdbHeader = true
	n, err := strconv.Atoi(no)
	if err != nil {
		return false, false // "1.2": inferior.thread, several inferiors
	}
	last, run := g.gdbLast, g.gdbDesc
	if last == 1 && run >= 2 && n > 1 {
		return true, true // thread 1 ended a list that went down
	}
	if last > 0 && n < last {
		g.gdbDesc++
	} else {
		g.gdbDesc = 1
	}
	g.gdbLast = n
	if len(g.lwps) > 0 {
		if lwp := lwpOf(t); lwp != "" {
			row, listed := g.rows[no]
			if listed && row != "" && row != lwp || !listed && !g.lwps[lwp] {
				return true, true
			}
		}
	}
	return false, false
}

// lwpOf gives the LWP a gdb line names ("(LWP 20841)"), "" for none.
func lwpOf(s string) string {
	i := strings.Index(s, "LWP ")
	if i < 0 {
		i = strings.Index(s, "lwp ")
	}
	if i < 0 {
		return ""
	}
	s = s[i+4:]
	if j := digitsEnd(s, 0); j > 0 {
		return s[:j]
	}
	return ""
}

// shellDeathRE is a shell's line for a process a signal killed.
var shellDeathRE = lazyre.New(`^(?:Aborted|Segmentation fault|Bus error|Illegal instruction|Floating point exception|Killed|Quit|Trace/breakpoint trap)(?: \(core dumped\))?$`)

// fhLayoutAhead: faulthandler's header t comes right under a frame, and
// the paste has shown no blank line between threads yet (a dump of one
// thread: fhCut cannot tell whether the paste keeps them). The lines
// after it say: where a frame, a blank line and a header follow each
// other within fhWindow lines, the paste keeps faulthandler's blank
// lines, so t, with none above it, begins another dump.
func (p *piece) fhLayoutAhead(t string) bool {
	g := &p.ids
	if !g.fhFrame || g.blank || g.fhBlanks || !g.content || !faultHeaderRE.MatchString(t) {
		return false
	}
	frame, blank := false, false
	for i := 1; i < fhWindow && p.src.fill(i+1); i++ {
		s := strings.TrimSpace(p.src.ahead[i].text)
		switch {
		case s == "":
			blank = frame
		case faultHeaderRE.MatchString(s):
			if blank {
				return true
			}
			if frame {
				return false // a header right under a frame again: no blank lines in this paste
			}
		default:
			frame, blank = strings.HasPrefix(s, "File ") || strings.HasPrefix(s, "Binary file "), false
		}
	}
	return false
}

// fhWindow is how far fhLayoutAhead looks: a few threads' frames.
const fhWindow = 256
