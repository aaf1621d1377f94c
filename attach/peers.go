package attach

// Cross-process waits: a thread blocked reading a pipe or a socket (or
// polling one) waits on whichever process holds the other end; a thread
// in wait4 or waitid on one child waits on that child. This file finds
// those processes, reading only /proc and the netlink sock_diag answers
// about sockets; nothing of the target is written or stopped.

import (
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/hangdoc/hangdoc/stacks"
)

// peerScanBudget bounds the one scan of every process's fds.
const peerScanBudget = 3 * time.Second

// crossProcess adds what a blocked thread's wait says about other
// processes: for wait4/waitid the child it names, for a poll, select or
// epoll wait the fds it watches, for a wait on pipes or sockets the
// processes holding their other ends, and for a file lock its holders
// (Wait.PeerPids).
func (s *sampler) crossProcess(tg *target, w *stacks.Wait, sc syscallState) {
	if w == nil {
		return
	}
	switch w.Syscall {
	case "wait4":
		if pid := int(int32(sc.Args[0])); pid > 0 {
			w.ChildPid = pid
		}
		return
	case "waitid":
		w.ChildPid = waitidChild(tg.pid, sc.Args[0], sc.Args[1])
		return
	}
	if fileLockWait(w.Syscall, sc.Args[1]) {
		w.PeerPids = fileLockHolders(tg.pid, w.Fd)
		return
	}
	wants := waitFds(tg, w, sc)
	if len(wants) == 0 {
		return
	}
	if s.peers == nil {
		s.peers = &peerIndex{}
	}
	w.PeerPids, w.PeerSelf = s.peers.resolve(tg.pid, wants)
	if s.peers.cut {
		addNote(&tg.proc.Notes, fmt.Sprintf("the scan of every process's fds for the other ends of pipes and sockets stopped after %v: peers may be missing", peerScanBudget))
	}
}

// holder is one open fd of a pipe or socket, in some process.
type holder struct{ pid, fd int }

// peerIndex finds the processes at the other end of pipes and sockets.
// Its index of every pipe and socket fd on the machine is built once,
// on first use, and every later sample reads it; a holder is checked
// again (its fd still names the inode) before it is reported.
type peerIndex struct {
	built   bool
	cut     bool // the scan ran out of time
	holders map[uint64][]holder
	// socket peers and TCP tables, by socket inode and network namespace
	sockPeer map[uint64]uint64
	tcp      map[uint64]*tcpTable
}

// resolve returns the processes other than pid that hold the other end
// of the fds wants names, in pid order, and whether, with none, pid holds
// the other end of a pipe itself (self).
func (x *peerIndex) resolve(pid int, wants []fdWant) (pids []int, self bool) {
	type end struct {
		ino         uint64
		pipe        bool
		write, read bool // for a pipe: which access the other end needs
	}
	var ends []end
	for _, w := range wants {
		link, err := os.Readlink(procPath(pid, "fd", strconv.Itoa(w.fd)))
		if err != nil {
			continue
		}
		kind, ino, ok := fdLink(link)
		if !ok {
			continue
		}
		if kind == "pipe" {
			// Data comes from the writers; room from the readers.
			ends = append(ends, end{ino: ino, pipe: true, write: w.in, read: w.out})
			continue
		}
		if peer := x.socketPeer(pid, ino); peer != 0 {
			ends = append(ends, end{ino: peer})
		}
	}
	if len(ends) == 0 {
		return nil, false
	}
	x.build()
	for _, e := range ends {
		for _, h := range x.holders[e.ino] {
			if slices.Contains(pids, h.pid) || !stillHolds(h, e.ino) {
				continue
			}
			if e.pipe && !pipeAccess(h, e.write, e.read) {
				continue
			}
			if h.pid == pid {
				self = self || e.pipe
				continue
			}
			pids = append(pids, h.pid)
		}
	}
	slices.Sort(pids)
	return pids, self && len(pids) == 0
}

// stillHolds checks that a holder found by the scan still has the inode
// open at that fd (it may have closed it, or exited, since).
func stillHolds(h holder, ino uint64) bool {
	link, err := os.Readlink(procPath(h.pid, "fd", strconv.Itoa(h.fd)))
	if err != nil {
		return false
	}
	_, got, ok := fdLink(link)
	return ok && got == ino
}

// pipeAccess says whether a pipe fd is open for writing (write) or for
// reading (read), from the access mode in its fdinfo flags (octal).
func pipeAccess(h holder, write, read bool) bool {
	v, ok := fdinfoField(h.pid, h.fd, "flags")
	if !ok {
		return false
	}
	flags, err := strconv.ParseUint(v, 8, 64)
	if err != nil {
		return false
	}
	switch flags & syscall.O_ACCMODE {
	case syscall.O_RDONLY:
		return read
	case syscall.O_WRONLY:
		return write
	}
	return true // O_RDWR: a FIFO opened both ways
}

// build scans /proc/*/fd once for every pipe and socket, within
// peerScanBudget.
func (x *peerIndex) build() {
	if x.built {
		return
	}
	x.built = true
	x.holders = map[uint64][]holder{}
	deadline := time.Now().Add(peerScanBudget)
	procs, _ := os.ReadDir(procRoot)
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		if time.Now().After(deadline) {
			x.cut = true
			return
		}
		fds, err := os.ReadDir(procPath(pid, "fd"))
		if err != nil {
			continue // gone, a kernel thread, or not ours to read
		}
		for _, f := range fds {
			fd, err := strconv.Atoi(f.Name())
			if err != nil {
				continue
			}
			link, err := os.Readlink(procPath(pid, "fd", f.Name()))
			if err != nil {
				continue
			}
			if _, ino, ok := fdLink(link); ok {
				x.holders[ino] = append(x.holders[ino], holder{pid: pid, fd: fd})
			}
		}
	}
}

// socketPeer returns the inode of the other end of a connected socket
// of process pid: for a unix socket from the kernel's sock_diag, for a
// TCP one by matching the addresses in the namespace's TCP tables; 0
// when there is none or it cannot be told (UDP, a listening socket).
func (x *peerIndex) socketPeer(pid int, ino uint64) uint64 {
	if peer, ok := x.sockPeer[ino]; ok {
		return peer
	}
	if x.sockPeer == nil {
		x.sockPeer = map[uint64]uint64{}
	}
	ns := netns(pid)
	peer := x.tcpPeer(pid, ns, ino)
	if peer == 0 {
		peer = unixPeer(pid, ns, ino)
	}
	x.sockPeer[ino] = peer
	return peer
}

func (x *peerIndex) tcpPeer(pid int, ns, ino uint64) uint64 {
	if x.tcp == nil {
		x.tcp = map[uint64]*tcpTable{}
	}
	tb := x.tcp[ns]
	if tb == nil || ns == 0 {
		tb = readTCP(pid)
		x.tcp[ns] = tb
	}
	pair, ok := tb.byIno[ino]
	if !ok {
		return 0
	}
	return tb.byPair[[2]netip.AddrPort{pair[1], pair[0]}]
}
