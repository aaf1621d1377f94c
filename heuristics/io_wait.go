package heuristics

import (
	"fmt"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "io-wait",
		Title: "Not a deadlock: the process waits on I/O",
		Explain: `No thread runs and none is stuck on a lock: threads block in read, recv,
poll, epoll_wait, accept, connect, select or write on a file descriptor, for
input that has not come or room to write. hangdoc names the fd and what it is
(a socket and its peer, a pipe, a file or device). The process is as stuck as
the other end: if that is a hung process, diagnose it. Given only to a process
that no deadlock signature claims.`,
		Fix: `Nothing is deadlocked here. Look at the other end of the fd: the peer of the
socket, the process holding the other end of the pipe (if it is hung too, run
hangdoc attach on it), the device or file. Give the read a timeout if the peer
may never answer.`,
		Derived: true,
		Rank:    120,
		Match:   matchCalm("io-wait", ioWaitDiagnosis),
	})
}

// fdSyscalls take one fd as their first argument.
var fdSyscalls = map[string]bool{
	"read": true, "readv": true, "pread64": true, "write": true, "writev": true, "pwrite64": true,
	"recvfrom": true, "recvmsg": true, "recvmmsg": true, "sendto": true, "sendmsg": true, "sendmmsg": true,
	"accept": true, "accept4": true, "connect": true, "epoll_wait": true, "epoll_pwait": true,
	"epoll_pwait2": true, "fsync": true, "fdatasync": true,
}

// fdText says which fd a thread waits on and what it is:
// "fd 5 (`socket:[1234]`)".
func fdText(f threadFacts) string {
	w := f.lastWait()
	if w == nil {
		return ""
	}
	switch {
	case isFileLockCall(w.Syscall) && len(w.PeerPids) > 0:
		// a file lock's holders (attach/filelocks.go): whom it waits for
		return fmt.Sprintf("`%s`, whose lock pid %s holds", w.FdTarget, joinInts(w.PeerPids))
	case fdSyscalls[w.Syscall] && w.FdTarget != "":
		return fmt.Sprintf("fd %d (`%s`)", w.Fd, w.FdTarget)
	case fdSyscalls[w.Syscall]:
		return fmt.Sprintf("fd %d", w.Fd)
	case w.FdTarget != "":
		return fmt.Sprintf("`%s`", w.FdTarget)
	}
	return "" // poll, select: several fds
}

func ioWaitDiagnosis(a *analysis, p *stacks.Process, all []threadFacts) Diagnosis {
	var io []threadFacts
	for _, f := range all {
		if f.kind == wkIO {
			io = append(io, f)
		}
	}
	f := io[0]
	d := Diagnosis{Confidence: High, Deadlock: false, Refs: []string{}}
	d.nameIn(p, factTids(io)...)
	kernel := true
	for _, x := range io {
		if x.lastWait() == nil {
			kernel = false
		}
	}
	if !kernel {
		d.Confidence = Medium // the call is known from frame names only
	}
	d.Summary = fmt.Sprintf("not a deadlock, waiting on I/O: %s blocks in `%s`", f.label(), f.call)
	if fd := fdText(f); fd != "" {
		d.Summary += " on " + fd
	}
	if len(io) > 1 {
		d.Summary += fmt.Sprintf("; %d more threads wait on I/O", len(io)-1)
	}
	skip := map[int]bool{}
	for _, x := range io {
		skip[x.t.Tid] = true
		step := x.label() + " blocks in `" + x.call + "`"
		if fd := fdText(x); fd != "" {
			step += " on " + fd
		} else if x.call == "poll" || x.call == "ppoll" || x.call == "select" || x.call == "pselect6" || x.call == "epoll_wait" {
			step += " (on several fds)"
		}
		d.Chain = append(d.Chain, step+x.calledFrom())
		d.Evidence = append(d.Evidence, x.stackEvidence())
		if w := x.lastWait(); w != nil && w.Wchan != "" {
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s kernel wait channel: %s", x.label(), w.Wchan))
		}
	}
	behind := heldAcrossWait(a, p, io)
	skipBehind(&d, behind, skip)
	for _, o := range othersText(all, skip) {
		d.Chain = append(d.Chain, o)
	}
	if len(behind) > 0 {
		d.Chain = append(d.Chain, "no lock cycle: the threads queued on the lock wait for the I/O its holder waits for")
	} else {
		d.Chain = append(d.Chain, "nothing is stuck on a lock: the process waits for the other end")
	}
	var fixes []string
	if len(behind) > 0 {
		fixes = append(fixes, fmt.Sprintf("Do not hold %s across a blocking call: copy what the call needs under the lock, release it, then read or write "+
			"(or give the call a timeout, so that the threads queued behind the lock are not held by the other end).", lockName(behind[0])))
	}
	if self := selfPipeWaits(io); len(self) > 0 {
		x := self[0]
		d.Summary += fmt.Sprintf("; the other end of its pipe is held by no other process, only by %s itself", whoProc(p))
		d.Chain = append(d.Chain, fmt.Sprintf("%s waits on a pipe whose other end no other process holds, only its own process (fd %d's peer end is open in pid %d): "+
			"only a thread or a signal handler of pid %d can write the data, or close the end for the EOF, it waits for", x.label(), x.lastWait().Fd, p.Pid, p.Pid))
		fixes = append(fixes, "If it waits for the end of a child's output (EOF), close this process's own copy of the pipe's write end after fork "+
			"(each side closes the end it does not use; spawn with close_fds / O_CLOEXEC); if a thread or a signal handler of the same "+
			"process is meant to write it (a wake-up pipe), look at why that thread does not.")
	}
	if len(fixes) > 0 {
		d.Fix = strings.Join(fixes, " ") + " Otherwise: look at the other end of the fd, and give the call a timeout if it may never complete."
	}
	return d
}

// lockBehind is a thread queued on a mutex whose holder (itself, or at
// the end of a chain of holders) blocks on I/O or sleeps on a timer.
type lockBehind struct {
	t      *stacks.Thread
	edge   Edge
	holder threadFacts
	// inferred: no owner was recorded (a pasted dump); the holder is the
	// one blocked thread, the only one that waits on neither a lock nor a
	// join nor a wake-up
	inferred bool
}

// heldAcrossWait finds the threads of p that wait for a mutex whose
// holder is one of blocked (the I/O waiters, the sleepers), directly or
// through other holders (nonlock.go's heldAcrossCall let the process
// through).
func heldAcrossWait(a *analysis, p *stacks.Process, io []threadFacts) []lockBehind {
	byTid := map[int]threadFacts{}
	for _, x := range io {
		byTid[x.t.Tid] = x
	}
	var out []lockBehind
	for _, t := range p.Threads {
		es := a.WaitsFor(t)
		if len(es) == 0 || es[0].Kind != EdgeMutex || es[0].To.Thread == nil {
			continue
		}
		if x, ok := byTid[holderChainEnd(a, es[0].To.Thread).Tid]; ok {
			out = append(out, lockBehind{t: t, edge: es[0], holder: x})
		}
	}
	if len(out) > 0 || len(io) != 1 || a.Snap.Evidence.Owners {
		return out
	}
	// No owners recorded: lock waiters beside one I/O waiter, every other
	// thread joining or waiting to be woken, nothing running.
	var waiters []*stacks.Thread
	for _, t := range p.Threads {
		if t.Tid == io[0].t.Tid {
			continue
		}
		if a.running(t) {
			return nil
		}
		switch class, _ := a.wait(t); {
		case class.isLock() && len(a.WaitsFor(t)) == 0:
			waiters = append(waiters, t)
		case class == waitJoin || class == waitCond:
		default:
			return nil
		}
	}
	for _, t := range waiters {
		out = append(out, lockBehind{t: t, holder: io[0], inferred: true})
	}
	return out
}

// lockName names the lock a queued thread waits for: "mutex `m` (0x…)".
func lockName(b lockBehind) string {
	if e := b.edge; e.Lock != nil && e.Lock.Mutex != nil {
		return mutexLabel(e.Lock.Mutex)
	}
	return "a mutex"
}

// skipBehind writes the threads queued on a lock held across a blocking
// call into d (a chain step and a stack each, and a clause of the
// summary) and marks them in skip.
func skipBehind(d *Diagnosis, behind []lockBehind, skip map[int]bool) {
	for _, b := range behind {
		skip[b.t.Tid] = true
		if b.inferred {
			d.Chain = append(d.Chain, fmt.Sprintf("%s waits for a lock in %s; no owner is recorded: its holder is most likely %s, which blocks in `%s` "+
				"(the only thread that waits on no lock, join or wake-up): the lock is held across the call", threadLabel(b.t), waitSite(b.t), b.holder.label(), b.holder.call))
		} else {
			d.Chain = append(d.Chain, Step(b.edge)+", which blocks in `"+b.holder.call+"`: the lock is held across the call")
		}
		d.Evidence = append(d.Evidence, stackLine(b.t))
	}
	if len(behind) == 0 {
		return
	}
	b := behind[0]
	who := "1 thread waits"
	if len(behind) > 1 {
		who = fmt.Sprintf("%d threads wait", len(behind))
	}
	if b.inferred {
		d.Summary += fmt.Sprintf("; %s for a lock that %s most likely holds across that call", who, b.holder.label())
	} else {
		d.Summary += fmt.Sprintf("; %s for %s, which %s holds across that call", who, lockName(b), b.holder.label())
	}
}

// selfPipeWaits are the I/O waiters on a pipe only their own process
// holds the other end of (Wait.PeerSelf, read by a live attach).
func selfPipeWaits(io []threadFacts) []threadFacts {
	var out []threadFacts
	for _, x := range io {
		if w := x.lastWait(); w != nil && w.PeerSelf {
			out = append(out, x)
		}
	}
	return out
}
