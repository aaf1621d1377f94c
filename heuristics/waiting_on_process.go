package heuristics

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

func init() {
	register(&Signature{
		ID:    "waiting-on-process",
		Title: "Waits on another process that is stuck",
		Explain: `A thread waits on another process: a parent in wait4 or waitid for its child, a
reader on a pipe or a socket whose other end that process holds (a writer on a
full pipe, for its reader), a thread in flock(2) or a blocking fcntl lock for
the file lock that process holds. hangdoc follows the wait: when the process waited on
is stuck itself (a lock signature names it, it spins, it is stuck in a driver
after fork, or it waits in turn on a stuck process), the waiter is stuck for as
long as it is, and the verdict links the two: "pid 4120 waits for its child
pid 4121, which is stuck in fork-inherited-lock: …". The root cause is that
other diagnosis, which comes first; this one says whom it holds up. Processes
that wait on each other in a ring (a parent in waitpid for a child that blocks
writing to a full pipe only the parent reads; two processes that take two file
locks in opposite orders) are a deadlock of their own.
When the child waited on is not stuck (it runs, sleeps on a timer, waits on
I/O), the verdict says so and claims no deadlock. A live attach of the whole
tree (hangdoc attach --tree PID) gives the evidence: pipe and socket peers are
read from every process's open fds, /proc/net/tcp and the kernel's sock_diag,
file lock holders from /proc/locks.`,
		Fix: `Fix the process at the end of the chain first: its own diagnosis says how. Then
bound the wait, so that a stuck peer fails the waiter instead of hanging it
too: a timeout on the read (poll with a timeout, SO_RCVTIMEO), waitpid with
WNOHANG and a deadline (or a pidfd in poll), and kill a child that misses it.`,
		Derived: true,
		Rank:    60,
		Match:   matchWaitingOnProcess,
	})
}

func matchWaitingOnProcess(a *analysis) []Diagnosis {
	// A ring is a root, and the waits on it follow it: rings come first
	// whatever the order of the processes in the snapshot.
	var ringDs, out []Diagnosis
	stuck := stuckProcs(a)
	rings := map[int]bool{} // by the pid that starts the ring
	for _, p := range a.Snap.Processes {
		ws, unsampled := procWaits(a, p)
		if s := stuck[p.Pid]; s != nil && s.ring != nil {
			if first := s.ring[0].from.Proc.Pid; !rings[first] {
				rings[first] = true
				ringDs = append(ringDs, ringDiagnosis(a, s.ring))
			}
			continue
		}
		// The waits on stuck processes, grouped under the first.
		var onStuck []procWait
		for _, w := range ws {
			if stuck[w.to.Pid] != nil && w.blocked(stuck) {
				onStuck = append(onStuck, w)
			}
		}
		if len(onStuck) > 0 {
			out = append(out, linkedDiagnosis(a, stuck, onStuck))
			continue
		}
		if stuck[p.Pid] != nil {
			continue // a root: its own diagnosis names it
		}
		if v, _ := calmVerdict(a, p); v != "" {
			continue // a verdict of its own already says what it does
		}
		if len(ws) == 0 && len(unsampled) == 0 && len(a.Snap.Processes) == 1 {
			if w, ok := pyProcessWaitIn(a, p); ok {
				out = append(out, pyProcessWaitDiagnosis(a, p, w))
				continue
			}
		}
		if d, ok := calmChildDiagnosis(a, p, ws, unsampled); ok {
			out = append(out, d)
		}
	}
	return append(ringDs, out...)
}

// subject names the waiting thread for a summary: its process when it
// is the main thread, else the thread and its process.
func subject(r ThreadRef) string {
	if r.Thread.Tid == r.Proc.Pid {
		return whoProc(r.Proc)
	}
	return fmt.Sprintf("%s of %s", threadLabel(r.Thread), whoProc(r.Proc))
}

// link says what a wait is, after its subject: "waits in `wait4` for its
// child pid 4121 `worker`", "blocks in `read` on a pipe (fd 3,
// `pipe:[123]`) whose write end only pid 4121 `worker` holds".
func (w procWait) link() string {
	t := w.from.Thread
	wt := factsOf(t).lastWait()
	fd := fmt.Sprintf("fd %d, `%s`", wt.Fd, wt.FdTarget)
	if wt.FdTarget == "" {
		fd = fmt.Sprintf("fd %d", wt.Fd)
	}
	only := ""
	if w.only() {
		only = "only "
	}
	to := whoProc(w.to)
	switch w.kind {
	case "child":
		rel := "its child "
		if w.to.PPid != w.from.Proc.Pid {
			rel = ""
		}
		if !w.only() {
			return fmt.Sprintf("waits in `%s` for any of its children %s, among them %s", wt.Syscall, joinInts(w.peers), to)
		}
		return fmt.Sprintf("waits in `%s` for %s%s", wt.Syscall, rel, to)
	case "pipe-read":
		return fmt.Sprintf("blocks in `%s` on a pipe (%s) whose write end %s%s holds", wt.Syscall, fd, only, to)
	case "pipe-write":
		return fmt.Sprintf("blocks in `%s` on a full pipe (%s) whose read end %s%s holds", wt.Syscall, fd, only, to)
	case "socket":
		return fmt.Sprintf("blocks in `%s` on a socket (%s) whose other end %s%s holds", wt.Syscall, fd, only, to)
	case "file-lock":
		return fmt.Sprintf("blocks in `%s` for a lock on a file (%s) that %s holds", wt.Syscall, fd, to)
	}
	return fmt.Sprintf("blocks in `%s` on %s, whose other end %s%s holds", wt.Syscall, fd, only, to)
}

// linkedDiagnosis says that the threads of one process wait on stuck
// processes, following the first wait to the root finding.
func linkedDiagnosis(a *analysis, stuck map[int]*stuckProc, all []procWait) Diagnosis {
	var ws []procWait // one wait a thread
	for _, w := range all {
		if !slices.ContainsFunc(ws, func(x procWait) bool { return x.from.Thread == w.from.Thread }) {
			ws = append(ws, w)
		}
	}
	w0 := ws[0]
	hops, root, rs := chainFrom(stuck, w0.to.Pid)
	hops = append([]procWait{w0}, hops...)
	if root == nil {
		root = hops[len(hops)-1].to
	}
	// "pid 4120 waits in `wait4` for its child pid 4121, which reads a
	// pipe … whose write end only pid 4122 holds, which is stuck in …"
	var b strings.Builder
	b.WriteString(subject(w0.from) + " " + w0.link())
	for _, h := range hops[1:] {
		b.WriteString(", which ")
		if h.from.Thread.Tid != h.from.Proc.Pid {
			b.WriteString("in " + threadLabel(h.from.Thread) + " ")
		}
		b.WriteString(h.link())
	}
	d := Diagnosis{Deadlock: true, Confidence: High, Refs: waitRefs(hops)}
	switch {
	case rs != nil && rs.ring != nil:
		fmt.Fprintf(&b, ", which waits in a ring of processes: %s", ringText(rs.ring))
		d.Confidence = rs.conf
	case rs != nil:
		fmt.Fprintf(&b, ", which is stuck in %s: %s", rs.id, rs.what)
		d.Confidence = rs.conf
	}
	if len(ws) > 1 {
		fmt.Fprintf(&b, "; %d more of its threads wait on stuck processes", len(ws)-1)
	}
	d.Summary = b.String()

	// Chain: one hop a line, then the root, then what it means.
	var refs []ThreadRef
	for _, w := range ws {
		refs = append(refs, w.from)
	}
	for _, h := range hops {
		d.Chain = append(d.Chain, subject(h.from)+" "+h.link())
		refs = append(refs, h.from)
	}
	for _, w := range ws[1:] {
		if w.from.Thread != w0.from.Thread {
			d.Chain = append(d.Chain, subject(w.from)+" "+w.link())
		}
	}
	d.name(refs...)
	if rs != nil && rs.ring == nil {
		d.Chain = append(d.Chain, fmt.Sprintf("%s is stuck in %s: %s", whoProc(root), rs.id, rs.what))
		for _, tid := range rs.tids {
			d.Tids = appendNew(d.Tids, tid)
		}
		d.Pids = appendNew(d.Pids, root.Pid)
		d.Chain = append(d.Chain, fmt.Sprintf("%s waits for as long as pid %d is stuck: the %s diagnosis is the cause, this one is what it holds up", whoProc(w0.from.Proc), root.Pid, rs.id))
		d.Fix = fmt.Sprintf("Fix pid %d first: the %s diagnosis says how; %s is stuck only because it waits on it. ", root.Pid, rs.id, whoProc(w0.from.Proc))
	} else if rs != nil {
		for _, r := range rs.ring {
			d.Pids = appendNew(d.Pids, r.from.Proc.Pid)
			d.Tids = appendNew(d.Tids, r.from.Thread.Tid)
		}
		d.Chain = append(d.Chain, "the processes of the ring wait on each other: "+ringText(rs.ring))
		d.Fix = "Break the ring the other diagnosis names; "
	}
	d.Fix += boundWaitFix(hops)

	// Evidence: the waits as read, and the waiters' stacks.
	for _, h := range hops {
		d.Evidence = append(d.Evidence, waitEvidence(h)...)
	}
	for _, w := range ws[1:] {
		d.Evidence = append(d.Evidence, waitEvidence(w)...)
	}
	return d
}

// waitEvidence says what was read of one wait: the waiter's stack, the
// fd and the processes at its other end, or the child waited for.
func waitEvidence(w procWait) []string {
	t := w.from.Thread
	wt := factsOf(t).lastWait()
	ev := []string{stackLine(t)}
	switch w.kind {
	case "child":
		what := "any child"
		if wt.ChildPid > 0 {
			what = fmt.Sprintf("pid %d", wt.ChildPid)
		}
		ev = append(ev, fmt.Sprintf("%s is in `%s` for %s; pid %d's parent is %d", threadLabel(t), wt.Syscall, what, w.to.Pid, w.to.PPid))
	case "file-lock":
		ev = append(ev, fmt.Sprintf("%s of pid %d blocks in `%s` on fd %d (`%s`); the lock is held by pid %s (read from /proc/locks)",
			threadLabel(t), w.from.Proc.Pid, wt.Syscall, wt.Fd, wt.FdTarget, joinInts(w.peers)))
	default:
		ev = append(ev, fmt.Sprintf("%s of pid %d blocks in `%s` on fd %d (`%s`); the other end is held by pid %s (read from every process's open fds)",
			threadLabel(t), w.from.Proc.Pid, wt.Syscall, wt.Fd, wt.FdTarget, joinInts(w.peers)))
	}
	return ev
}

// boundWaitFix says how to keep the first waiter from hanging with the
// process it waits on.
func boundWaitFix(hops []procWait) string {
	switch hops[0].kind {
	case "child":
		return "Bound the wait for the child: waitpid with WNOHANG and a deadline (or a pidfd in poll with a timeout), then kill it and report the hang; a test runner's per-test timeout does this."
	case "file-lock":
		if len(hops) > 1 {
			return "Take the file locks in one order in every process (these take them in opposite orders; flock and OFD locks are never refused with EDEADLK as POSIX fcntl locks are), or take the second with LOCK_NB / F_OFD_SETLK and back off."
		}
		return "Find why the holder keeps the file locked (its own verdict says what it waits for); wait for the lock with a deadline (LOCK_NB in a loop, `flock -w SECONDS`) and report who holds it instead of hanging."
	case "pipe-write":
		return "Do not block writing to a pipe the other side may never drain: drain it while waiting (communicate(), not wait(), in Python's subprocess), or write with a timeout."
	}
	return "Give the read a timeout (poll or select with one, SO_RCVTIMEO on a socket), so a stuck peer fails the reader instead of hanging it too."
}

// ringText says a ring of waits: "pid 100 waits in `wait4` for its child
// pid 101, which writes to a full pipe … whose read end only pid 100
// holds".
func ringText(ring []procWait) string {
	var parts []string
	for i, w := range ring {
		s := w.link()
		if i == 0 {
			s = subject(w.from) + " " + s
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", which ")
}

// ringDiagnosis: processes that wait on each other, none of whose threads
// works: nothing from outside the ring will end the waits.
func ringDiagnosis(a *analysis, ring []procWait) Diagnosis {
	d := Diagnosis{Deadlock: true, Confidence: Medium, Refs: waitRefs(ring)}
	var pids []string
	for _, w := range ring {
		pids = append(pids, fmt.Sprint(w.from.Proc.Pid))
		d.Pids = appendNew(d.Pids, w.from.Proc.Pid)
		d.Tids = appendNew(d.Tids, w.from.Thread.Tid)
		d.Chain = append(d.Chain, subject(w.from)+" "+w.link())
		d.Evidence = append(d.Evidence, waitEvidence(w)...)
	}
	d.Summary = fmt.Sprintf("processes %s wait on each other: %s", strings.Join(pids, " and "), ringText(ring))
	d.Chain = append(d.Chain, "no thread of these processes runs: each waits for another of the ring, which waits in turn")
	d.Evidence = append(d.Evidence, "whether another thread could end a wait is judged from the samples: none of these processes has a thread that runs or whose stack moves")
	d.Fix = boundWaitFix(ring)
	for _, w := range ring {
		if w.kind == "pipe-write" {
			d.Fix = boundWaitFix([]procWait{w})
		}
	}
	return d
}

// calmChildDiagnosis: a parent waits for children that are not stuck (or
// were not sampled), and nothing else says what it does.
func calmChildDiagnosis(a *analysis, p *stacks.Process, ws []procWait, unsampled []int) (Diagnosis, bool) {
	var kids []procWait
	for _, w := range ws {
		if w.kind == "child" {
			kids = append(kids, w)
		}
	}
	// A snapshot of this process alone (a paste) whose stack waits for
	// a child says so; with other processes beside it, one may be that
	// child, and their own verdicts speak.
	alone := len(a.Snap.Processes) == 1 && slices.ContainsFunc(p.Threads, func(t *stacks.Thread) bool { return a.samplesOf(t).kind == wkChild })
	if len(kids) == 0 && len(unsampled) == 0 && !alone {
		return Diagnosis{}, false
	}
	d := Diagnosis{Deadlock: false, Refs: waitRefs([]procWait{{kind: "child"}})}
	if len(kids) == 0 {
		// The children are not in the snapshot: say how to see them.
		var t *stacks.Thread
		for _, th := range p.Threads {
			if f := a.samplesOf(th); f.kind == wkChild && t == nil {
				t = th
			}
		}
		d.Confidence = Low
		d.Summary = fmt.Sprintf("not a deadlock as far as this snapshot shows: %s waits in `%s` for its children %s, which were not sampled",
			subject(ThreadRef{Proc: p, Thread: t}), a.samplesOf(t).call, joinInts(unsampled))
		if len(unsampled) == 0 {
			// A pasted dump: the stack says it waits for a child, not which.
			d.Summary = fmt.Sprintf("waits on another process: %s waits in `%s` for a child process, which the dump does not show: "+
				"whatever hangs is in the child; dump the child (gdb -p CHILD)",
				subject(ThreadRef{Proc: p, Thread: t}), a.samplesOf(t).call)
		}
		h := attachHint(p.Pid, "to follow the wait")
		h.Tree = true
		d.Hints = []Hint{h}
		d.Pids, d.Tids = []int{p.Pid}, []int{t.Tid}
		d.Chain = []string{fmt.Sprintf("%s waits for a child process: whether it is stuck depends on the child", threadLabel(t))}
		d.Evidence = []string{stackLine(t)}
		return d, true
	}
	d.Confidence = Medium // its own verdict depends on the children's
	var refs []ThreadRef
	var states []string
	for _, w := range kids {
		refs = append(refs, w.from)
		d.Chain = append(d.Chain, subject(w.from)+" "+w.link())
		d.Evidence = append(d.Evidence, waitEvidence(w)...)
		state := "is not stuck"
		switch v, _ := calmVerdict(a, w.to); v {
		case "progressing":
			state = "is making progress"
		case "io-wait":
			state = "waits on I/O"
		case "sleeping":
			state = "sleeps on a timer"
		}
		states = append(states, fmt.Sprintf("%s %s", whoProc(w.to), state))
	}
	d.name(refs...)
	for _, w := range kids {
		d.Pids = appendNew(d.Pids, w.to.Pid)
	}
	w0 := kids[0]
	d.Summary = fmt.Sprintf("not a deadlock: %s %s, which %s", subject(w0.from), w0.link(), strings.TrimPrefix(states[0], whoProc(w0.to)+" "))
	if len(states) > 1 {
		d.Summary += "; " + strings.Join(states[1:], "; ")
	}
	d.Chain = append(d.Chain, "the children are not stuck: the parent waits for them to finish")
	d.Fix = "Nothing is deadlocked: the parent waits for its children, which are working or waiting themselves. Look at their verdicts to see what they wait for."
	return d, true
}

// waitRefs are the manual pages of the waits a diagnosis names.
func waitRefs(ws []procWait) []string {
	refs := []string{}
	add := func(r string) {
		if !slices.Contains(refs, r) {
			refs = append(refs, r)
		}
	}
	for _, w := range ws {
		switch w.kind {
		case "child":
			add("https://man7.org/linux/man-pages/man2/wait.2.html")
			add("https://man7.org/linux/man-pages/man2/pidfd_open.2.html")
		case "pipe-read", "pipe-write":
			add("https://man7.org/linux/man-pages/man7/pipe.7.html")
			add("https://man7.org/linux/man-pages/man2/poll.2.html")
			if w.kind == "pipe-write" {
				add("https://docs.python.org/3/library/subprocess.html#subprocess.Popen.wait")
			}
		case "file-lock":
			add("https://man7.org/linux/man-pages/man2/flock.2.html")
			add("https://man7.org/linux/man-pages/man2/fcntl.2.html")
		default:
			add("https://man7.org/linux/man-pages/man7/socket.7.html")
			add("https://man7.org/linux/man-pages/man2/poll.2.html")
		}
	}
	return refs
}
