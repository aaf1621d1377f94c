package heuristics

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "stopped",
		Title: "Stopped: the process is stopped by a signal or held by a debugger",
		Explain: `Every thread of the process is stopped (state T or t): a stop signal
(SIGSTOP, SIGTSTP from Ctrl-Z, SIGTTIN for a background read of its terminal,
SIGTTOU for a background write) put it in a group stop, or a tracer (gdb,
strace, another debugger) holds it. It does not run, whatever it was doing, and
it will not run until it is continued or its tracer lets it go. Its stacks show
where it was when it stopped. A deadlock found in it is reported as well.`,
		Fix: `Continue it with kill -CONT PID (fg in the shell that stopped it), or detach
the debugger that holds it (detach or quit in gdb).`,
		Derived: true,
		Rank:    95,
		Match:   matchStopped,
	})
}

// isStopped tells a process none of whose threads can run: its main
// thread and every thread read from the kernel is in state T or t. A
// goroutine's state is the runtime's, not the kernel's: the process's
// own State decides for those.
func isStopped(p *stacks.Process) bool {
	if p.Exited || (p.State != "T" && p.State != "t") {
		return false
	}
	for _, t := range p.Threads {
		if t.Goroutine() != nil || t.State == "Z" || t.State == "X" {
			continue
		}
		if t.State != "T" && t.State != "t" {
			return false
		}
	}
	return true
}

func matchStopped(a *analysis) []Diagnosis {
	var out []Diagnosis
	for _, p := range a.Snap.Processes {
		if isStopped(p) {
			out = append(out, stoppedDiagnosis(p))
		}
	}
	return out
}

func stoppedDiagnosis(p *stacks.Process) Diagnosis {
	d := Diagnosis{Confidence: High, Deadlock: true, Refs: []string{}}
	d.nameIn(p)
	stop := p.Stop
	if stop == nil {
		stop = &stacks.Stop{}
	}
	traced := stop.TracerPid != 0
	tracer := fmt.Sprintf("pid %d", stop.TracerPid)
	if stop.Tracer != "" {
		tracer += fmt.Sprintf(" `%s`", stop.Tracer)
	}
	var threads []*stacks.Thread
	for _, t := range p.Threads {
		if t.Goroutine() == nil && t.State != "Z" && t.State != "X" {
			threads = append(threads, t)
			d.Tids = append(d.Tids, t.Tid)
		}
	}
	sig, why := stopSignal(p, stop, threads)
	switch {
	case traced && p.State == "t":
		d.Summary = fmt.Sprintf("%s is held by tracer %s: it does not run while the tracer keeps it stopped", whoProc(p), tracer)
		d.Fix = fmt.Sprintf("Let the tracer go: detach it (`detach` or `quit` in gdb, Ctrl-C in strace) or end it (`kill %d`); then the process runs on.", stop.TracerPid)
	case traced:
		d.Summary = fmt.Sprintf("%s is stopped by %s and traced by %s: it does not run until it is continued", whoProc(p), sig, tracer)
		d.Fix = fmt.Sprintf("Continue it from its tracer %s (`continue` in gdb), or detach the tracer and run `kill -CONT %d`.", tracer, p.Pid)
	case sig == "SIGTTIN" || sig == "SIGTTOU":
		d.Summary = fmt.Sprintf("%s is stopped by %s: %s", whoProc(p), sig, why)
		d.Fix = fmt.Sprintf("Bring it to the foreground (`fg` in its shell) or give it input that is not the terminal (`< /dev/null`, a file or a pipe), then `kill -CONT %d`.", p.Pid)
	default:
		d.Summary = fmt.Sprintf("%s is stopped by %s: it does not run until it is continued", whoProc(p), sig)
		d.Fix = fmt.Sprintf("Continue it: `kill -CONT %d` (or `fg` in the shell that stopped it).", p.Pid)
	}
	if why != "" && sig != "SIGTTIN" && sig != "SIGTTOU" {
		d.Chain = append(d.Chain, why)
	}
	for _, t := range limitThreads(threads, 6) {
		step := fmt.Sprintf("%s is in state %s", whoThread(t), t.State)
		if t.Wait != nil && t.Wait.Wchan != "" {
			step += fmt.Sprintf(" (kernel: `%s`)", t.Wait.Wchan)
		}
		if len(t.Stack) > 0 {
			step += ", stopped in " + chainOfFrames(t.Stack, 3)
		}
		d.Chain = append(d.Chain, step)
	}
	d.Evidence = append(d.Evidence, fmt.Sprintf("process state %s (%s)", p.State, stateWord(p.State)))
	if traced {
		d.Evidence = append(d.Evidence, fmt.Sprintf("TracerPid %d in /proc/%d/status, read before hangdoc traced anything", stop.TracerPid, p.Pid))
	}
	if stop.BackgroundTTY {
		d.Evidence = append(d.Evidence, "it is not in the foreground process group of its controlling terminal")
	}
	return d
}

// stopSignal names the signal that stopped the process as far as the
// evidence tells it, and why. The kernel does not publish a group stop's
// signal: a background process stopped while it reads (writes) its
// terminal got SIGTTIN (SIGTTOU); any other stop is one of SIGSTOP and
// SIGTSTP.
func stopSignal(p *stacks.Process, stop *stacks.Stop, threads []*stacks.Thread) (string, string) {
	if p.State != "T" {
		return "its tracer", ""
	}
	if stop.BackgroundTTY {
		for _, t := range threads {
			w := t.Wait
			if w == nil || !isTerminal(w.FdTarget) {
				continue
			}
			switch w.Syscall {
			case "read", "readv", "pread64":
				return "SIGTTIN", fmt.Sprintf("%s reads its terminal (fd %d, `%s`) from a background process group, and the kernel stops a background reader", whoThread(t), w.Fd, w.FdTarget)
			case "write", "writev", "pwrite64":
				return "SIGTTOU", fmt.Sprintf("%s writes to its terminal (fd %d, `%s`) from a background process group with `stty tostop` set", whoThread(t), w.Fd, w.FdTarget)
			}
		}
	}
	return "a stop signal (SIGSTOP or SIGTSTP)", "the kernel does not say which stop signal: SIGSTOP (kill -STOP) or SIGTSTP (Ctrl-Z)"
}

// isTerminal tells a terminal device from an fd's target path.
func isTerminal(target string) bool {
	return strings.HasPrefix(target, "/dev/pts/") || strings.HasPrefix(target, "/dev/tty") || target == "/dev/console"
}

func stateWord(s string) string {
	if s == "t" {
		return "tracing stop"
	}
	return "stopped"
}

func limitThreads(ts []*stacks.Thread, n int) []*stacks.Thread {
	if len(ts) > n {
		return ts[:n]
	}
	return ts
}
