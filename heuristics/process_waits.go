package heuristics

import (
	"slices"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// ProcessWait is one thread's wait on another process, as
// waiting-on-process reads it: a wait4 or waitid on a child (the one it
// names, or each child when it waits for any), a read or write of a pipe
// or a socket whose other end that process holds.
type ProcessWait struct {
	From ThreadRef
	// To is the process waited on; nil for a child the snapshot does
	// not have (ToPid names it).
	To    *stacks.Process
	ToPid int
	Kind  string // "child", "pipe-read", "pipe-write", "socket"
}

// ProcessWaits lists every thread's waits on other processes, in
// snapshot order: the same waits the verdicts follow, so that a graph
// draws what they name.
func (a *analysis) ProcessWaits() []ProcessWait {
	var out []ProcessWait
	for _, p := range a.Snap.Processes {
		ws, unsampled := procWaits(a, p)
		for _, w := range ws {
			out = append(out, ProcessWait{From: w.from, To: w.to, ToPid: w.to.Pid, Kind: w.kind})
		}
		if len(unsampled) == 0 {
			continue
		}
		// procWaits names the children not sampled, not who waits for
		// them: the threads whose wait4 or waitid takes them.
		for _, t := range p.Threads {
			for _, e := range a.WaitsFor(t) {
				if e.Kind != EdgeChild {
					continue
				}
				kids := e.Children
				if t.Wait.ChildPid > 0 {
					kids = []int{t.Wait.ChildPid}
				}
				for _, pid := range kids {
					if slices.Contains(unsampled, pid) {
						out = append(out, ProcessWait{From: e.From, ToPid: pid, Kind: "child"})
					}
				}
			}
		}
	}
	return out
}

// procWait is one thread's wait on another process of the snapshot.
type procWait struct {
	from ThreadRef
	to   *stacks.Process
	kind string // "child", "pipe-read", "pipe-write", "socket", "file-lock"
	// peers are all the processes at the other end of a pipe or socket
	// (Wait.PeerPids): the wait ends when any of them writes or reads;
	// for a wait4 or waitid, the children it waits for.
	peers []int
}

// only: the process waited on is the only one at the other end, or the
// only child waited for.
func (w procWait) only() bool { return len(w.peers) == 1 }

// blocked says whether the wait can only end when a stuck process moves:
// the child waited for is stuck (for a wait on any child, one stuck
// child is enough: a parent that waits for all of them waits for it),
// or every process at the other end of the pipe or socket is in the
// snapshot and stuck.
func (w procWait) blocked(stuck map[int]*stuckProc) bool {
	if w.kind == "child" {
		return stuck[w.to.Pid] != nil
	}
	for _, pid := range w.peers {
		if stuck[pid] == nil {
			return false
		}
	}
	return true
}

// procWaits lists the waits of every thread of p on other processes of
// the snapshot; unsampled lists the children a wait4 or waitid waits
// for that the snapshot does not have. A poll, select or epoll wait on
// several fds is left out: an event loop with one connection to a stuck
// process is not stuck itself (io-wait names it).
func procWaits(a *analysis, p *stacks.Process) (ws []procWait, unsampled []int) {
	r := memoized(a.procWaits, p, func() procWaitsOf {
		ws, unsampled := findProcWaits(a, p)
		return procWaitsOf{ws, unsampled}
	})
	return r.ws, r.unsampled
}

// procWaitsOf is procWaits' answer for one process, kept by the
// analysis: four signatures ask it.
type procWaitsOf struct {
	ws        []procWait
	unsampled []int
}

func findProcWaits(a *analysis, p *stacks.Process) (ws []procWait, unsampled []int) {
	if p.Exited {
		return nil, nil
	}
	for t, f := range a.samplesIn(p) {
		w := f.lastWait()
		if f.zombie || w == nil {
			continue
		}
		from := ThreadRef{Proc: p, Thread: t}
		switch {
		case f.kind == wkChild:
			var kids []int
			for _, e := range a.WaitsFor(t) {
				if e.Kind == EdgeChild {
					kids = append(kids, e.Children...)
				}
			}
			if w.ChildPid > 0 {
				kids = []int{w.ChildPid}
			}
			for _, c := range kids {
				cp := a.Process(c)
				switch {
				case cp == nil:
					unsampled = appendNew(unsampled, c)
				case !cp.Exited:
					ws = append(ws, procWait{from: from, to: cp, kind: "child", peers: kids})
				}
			}
		case len(w.PeerPids) > 0 && f.kind == wkIO && len(w.Fds) == 0 && w.FdTarget != "":
			kind := "socket"
			switch {
			case isFileLockCall(w.Syscall):
				kind = "file-lock"
			case strings.HasPrefix(w.FdTarget, "pipe:") && isWriteCall(w.Syscall):
				kind = "pipe-write"
			case strings.HasPrefix(w.FdTarget, "pipe:"):
				kind = "pipe-read"
			case !strings.HasPrefix(w.FdTarget, "socket:"):
				continue // an epoll fd: several sources
			}
			for _, pid := range w.PeerPids {
				if q := a.Process(pid); q != nil && q != p && !q.Exited {
					ws = append(ws, procWait{from: from, to: q, kind: kind, peers: w.PeerPids})
				}
			}
		}
	}
	return ws, unsampled
}

// isFileLockCall: the call waits for a file lock (a blocked fcntl is
// F_SETLKW or F_OFD_SETLKW: attach/filelocks.go).
func isFileLockCall(call string) bool { return call == "flock" || call == "fcntl" || call == "fcntl64" }

func isWriteCall(call string) bool {
	switch call {
	case "write", "writev", "pwrite64", "sendto", "sendmsg", "sendmmsg":
		return true
	}
	return false
}
