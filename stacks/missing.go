package stacks

import (
	"fmt"
	"strings"
)

// What a paste leaves out, said in the report: threads the dump itself
// counts but does not show, frames without symbols, and, when nothing
// can be concluded, what to paste instead.

// pieceCounts is what the splitter counted of one gdb piece while
// passing its lines on: the thread numbers its headers showed, and the
// threads gdb announced ("[New LWP …]").
type pieceCounts struct {
	maxThread int
	newLWP    int
}

// noteMissing adds to the processes of one piece's snapshot the notes
// on what the piece shows of itself but does not hold.
func noteMissing(snap *Snapshot, c pieceCounts) {
	for _, p := range snap.Processes {
		n := len(p.Threads)
		want := max(c.maxThread, c.newLWP+1)
		if len(snap.Processes) == 1 && want > n && (c.maxThread > n || c.newLWP > 0) {
			p.Notes = append(p.Notes, fmt.Sprintf("the paste holds %d of the process's %d or more threads (gdb's thread numbers and [New LWP] lines count them): the others may hold the lock; paste the whole `thread apply all bt`", n, want))
		}
		frames, bare := 0, 0
		for _, t := range p.Threads {
			for _, f := range t.Stack {
				frames++
				if f.Func == "" || f.Func == "??" {
					bare++
				}
			}
		}
		if frames >= 4 && bare*2 >= frames {
			p.Notes = append(p.Notes, fmt.Sprintf("%d of %d frames have no symbol: install the program's debug symbols (or let gdb fetch them: `set debuginfod enabled on`) and dump again", bare, frames))
		}
	}
}

// WhatToPaste says which dump would settle a question a snapshot from
// source could not: the command that gives every thread with the most
// evidence.
func WhatToPaste(source string) string {
	switch source {
	case "gdb", "frames":
		return "paste `gdb -p PID -batch -ex 'thread apply all bt full'` (every thread, with arguments), or run `hangdoc attach PID` on the live process"
	case "lldb":
		return "paste lldb's `bt all`, or run `hangdoc attach PID` on the live process"
	case "eu-stack":
		return "paste `eu-stack -p PID -v`, or run `hangdoc attach PID` on the live process"
	case "goroutines", "pprof-goroutine":
		return "paste the whole goroutine dump (`kill -QUIT PID`, or /debug/pprof/goroutine?debug=2), or run `hangdoc attach PID`"
	case "faulthandler", "python-traceback", "py-spy":
		return "paste `py-spy dump --native --pid PID` (every thread, native frames and the GIL), or run `hangdoc attach PID`"
	case "systemd-coredump":
		return "run `coredumpctl debug PID` and paste gdb's `thread apply all bt full` (arguments, every thread), or run `hangdoc analyze` on the core with --exe"
	case "jstack":
		return "paste `jstack -l PID` (or `jcmd PID Thread.print -l`) of the whole JVM"
	case "sample", "spindump":
		return "paste the whole `sample PID` or `spindump PID` report"
	}
	return "run `hangdoc attach PID` on the live process, or paste a tool's dump of every thread"
}

// Holds sums up what a snapshot holds, for a line that says what the
// evidence was: "1 process, 3 threads, 24 frames".
func Holds(s *Snapshot) string {
	threads, frames := 0, 0
	for _, p := range s.Processes {
		threads += len(p.Threads)
		for _, t := range p.Threads {
			frames += len(t.Stack)
		}
	}
	plural := func(n int, what string) string {
		if n == 1 {
			return fmt.Sprintf("1 %s", what)
		}
		return fmt.Sprintf("%d %ss", n, what)
	}
	parts := []string{plural(len(s.Processes), "process"), plural(threads, "thread"), plural(frames, "frame")}
	return strings.ReplaceAll(strings.Join(parts, ", "), "processs", "processes")
}
