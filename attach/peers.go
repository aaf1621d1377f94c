package attach

// Cross-process waits: a thread blocked reading a pipe or a socket (or
// polling one) waits on whichever process holds the other end; a thread
// in wait4 or waitid on one child waits on that child. This file finds
// those processes, reading only /proc and the netlink sock_diag answers
// about sockets; nothing of the target is written or stopped.

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/stacks"
)

// maxWaitFds bounds the fds read from one poll, select or epoll wait.
const maxWaitFds = 64

// peerScanBudget bounds the one scan of every process's fds.
const peerScanBudget = 3 * time.Second

// fdWant is one fd a blocked thread waits on, and which way: to read
// (data from the other end) or to write (room the other end makes).
type fdWant struct {
	fd      int
	in, out bool
}

// crossProcess adds what a blocked thread's wait says about other
// processes: for wait4/waitid the child it names, for a poll, select or
// epoll wait the fds it watches, and for a wait on pipes or sockets the
// processes holding their other ends (Wait.PeerPids).
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
	wants := waitFds(tg, w, sc)
	if len(wants) == 0 {
		return
	}
	if s.peers == nil {
		s.peers = &peerIndex{}
	}
	w.PeerPids = s.peers.resolve(tg.pid, wants)
	if s.peers.cut {
		addNote(&tg.proc.Notes, fmt.Sprintf("the scan of every process's fds for the other ends of pipes and sockets stopped after %v: peers may be missing", peerScanBudget))
	}
}

// waitidChild is the child a waitid(idtype, id, …) waits for: P_PID
// names it, P_PIDFD names a pidfd whose fdinfo says its pid; 0 for any
// child or a process group.
func waitidChild(pid int, idtype, id uint64) int {
	const pPID, pPIDFD = 1, 3
	switch idtype {
	case pPID:
		return int(int32(id))
	case pPIDFD:
		if v, ok := fdinfoField(pid, int(int32(id)), "Pid"); ok {
			if n, err := strconv.Atoi(v); err == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}

// waitFds lists the fds a blocked thread waits on and which way. A
// read, recv, write or send names one fd; a poll's or a select's fds
// are read from the target's memory; an epoll wait's from the epoll
// fd's fdinfo. For a poll or select on exactly one fd, that fd and what
// it is become the wait's Fd and FdTarget; for several, their list is
// the wait's Fds.
func waitFds(tg *target, w *stacks.Wait, sc syscallState) []fdWant {
	pid := tg.pid
	var wants []fdWant
	switch w.Syscall {
	case "read", "readv", "pread64", "recvfrom", "recvmsg", "recvmmsg":
		return []fdWant{{fd: w.Fd, in: true}}
	case "write", "writev", "pwrite64", "sendto", "sendmsg", "sendmmsg":
		return []fdWant{{fd: w.Fd, out: true}}
	case "poll", "ppoll":
		wants = pollFds(pid, sc.Args[0], sc.Args[1])
	case "select", "pselect6":
		wants = selectFds(pid, sc.Args[0], sc.Args[1], sc.Args[2])
	case "epoll_wait", "epoll_pwait", "epoll_pwait2":
		wants = epollFds(pid, w.Fd)
		for _, x := range wants {
			w.Fds = append(w.Fds, x.fd)
		}
		return wants
	default:
		return nil
	}
	switch {
	case len(wants) == 1:
		w.Fd = wants[0].fd
		w.FdTarget = tg.fdTarget(w.Fd)
	case len(wants) > 1:
		for _, x := range wants {
			w.Fds = append(w.Fds, x.fd)
		}
	}
	return wants
}

// pollFds reads a poll's struct pollfd array (int fd; short events;
// short revents) from the target.
func pollFds(pid int, addr, n uint64) []fdWant {
	const pollIn, pollPri, pollOut, pollRdNorm, pollRdBand, pollWrNorm, pollWrBand = 0x1, 0x2, 0x4, 0x40, 0x80, 0x100, 0x200
	if addr == 0 || n == 0 {
		return nil
	}
	n = min(n, maxWaitFds)
	buf := make([]byte, 8*n)
	k, _ := readMemory(pid, buf, addr)
	var out []fdWant
	for i := 0; i+8 <= k; i += 8 {
		fd := int32(binary.LittleEndian.Uint32(buf[i:]))
		ev := binary.LittleEndian.Uint16(buf[i+4:])
		if fd < 0 {
			continue // ignored by poll
		}
		out = append(out, fdWant{fd: int(fd), in: ev&(pollIn|pollPri|pollRdNorm|pollRdBand) != 0, out: ev&(pollOut|pollWrNorm|pollWrBand) != 0})
	}
	return out
}

// selectFds reads a select's read and write fd_set bitmaps.
func selectFds(pid int, nfds, readAddr, writeAddr uint64) []fdWant {
	nfds = min(nfds, 1024) // FD_SETSIZE
	if nfds == 0 {
		return nil
	}
	words := (nfds + 63) / 64
	bits := func(addr uint64) []int {
		if addr == 0 {
			return nil
		}
		buf := make([]byte, 8*words)
		k, _ := readMemory(pid, buf, addr)
		var fds []int
		for fd := 0; fd < int(nfds) && fd/8 < k; fd++ {
			if buf[fd/8]&(1<<(fd%8)) != 0 {
				fds = append(fds, fd)
			}
		}
		return fds
	}
	at := map[int]int{} // fd → index in out
	var out []fdWant
	add := func(fds []int, in bool) {
		for _, fd := range fds {
			if i, ok := at[fd]; ok {
				out[i].in, out[i].out = out[i].in || in, out[i].out || !in
				continue
			}
			if len(out) == maxWaitFds {
				return
			}
			at[fd] = len(out)
			out = append(out, fdWant{fd: fd, in: in, out: !in})
		}
	}
	add(bits(readAddr), true)
	add(bits(writeAddr), false)
	return out
}

// epollFds lists the fds an epoll instance watches, from its fdinfo:
// "tfd:        5 events:       19 data: …".
func epollFds(pid, epfd int) []fdWant {
	const epollIn, epollPri, epollOut = 0x1, 0x2, 0x4
	f, err := os.Open(procPath(pid, "fdinfo", strconv.Itoa(epfd)))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []fdWant
	sc := bufio.NewScanner(f)
	for sc.Scan() && len(out) < maxWaitFds {
		fs := strings.Fields(sc.Text())
		if len(fs) < 4 || fs[0] != "tfd:" || fs[2] != "events:" {
			continue
		}
		fd, err1 := strconv.Atoi(fs[1])
		ev, err2 := strconv.ParseUint(fs[3], 16, 32)
		if err1 != nil || err2 != nil {
			continue
		}
		out = append(out, fdWant{fd: fd, in: ev&(epollIn|epollPri) != 0, out: ev&epollOut != 0})
	}
	return out
}

// fdinfoField reads one "Name:\tvalue" line of /proc/PID/fdinfo/FD.
func fdinfoField(pid, fd int, name string) (string, bool) {
	b, err := os.ReadFile(procPath(pid, "fdinfo", strconv.Itoa(fd)))
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+":"); ok {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// fdLink splits what /proc/PID/fd/N links to: "pipe:[1234]" is ("pipe",
// 1234).
func fdLink(link string) (kind string, ino uint64, ok bool) {
	kind, rest, found := strings.Cut(link, ":[")
	if !found || (kind != "pipe" && kind != "socket") || !strings.HasSuffix(rest, "]") {
		return "", 0, false
	}
	ino, err := strconv.ParseUint(strings.TrimSuffix(rest, "]"), 10, 64)
	return kind, ino, err == nil
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
// of the fds wants names, in pid order.
func (x *peerIndex) resolve(pid int, wants []fdWant) []int {
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
		return nil
	}
	x.build()
	var pids []int
	for _, e := range ends {
		for _, h := range x.holders[e.ino] {
			if h.pid == pid || slices.Contains(pids, h.pid) || !stillHolds(h, e.ino) {
				continue
			}
			if e.pipe && !pipeAccess(h, e.write, e.read) {
				continue
			}
			pids = append(pids, h.pid)
		}
	}
	slices.Sort(pids)
	return pids
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

// netns is the inode of a process's network namespace, 0 when unknown.
func netns(pid int) uint64 {
	fi, err := os.Stat(procPath(pid, "ns", "net"))
	if err != nil {
		return 0
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}

// tcpTable is a namespace's TCP sockets (v4 and v6, v4-mapped addresses
// unmapped) by inode and by their address pair.
type tcpTable struct {
	byIno  map[uint64][2]netip.AddrPort // local, remote
	byPair map[[2]netip.AddrPort]uint64
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

// readTCP reads /proc/PID/net/tcp and tcp6.
func readTCP(pid int) *tcpTable {
	tb := &tcpTable{byIno: map[uint64][2]netip.AddrPort{}, byPair: map[[2]netip.AddrPort]uint64{}}
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(procPath(pid, "net", name))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			ino, err := strconv.ParseUint(fs[9], 10, 64)
			local, ok1 := procAddr(fs[1])
			remote, ok2 := procAddr(fs[2])
			if err != nil || ino == 0 || !ok1 || !ok2 || remote.Port() == 0 {
				continue // a header, a socket in TIME_WAIT, a listener
			}
			pair := [2]netip.AddrPort{local, remote}
			tb.byIno[ino] = pair
			tb.byPair[pair] = ino
		}
		f.Close()
	}
	return tb
}

// procAddr parses /proc/net/tcp's "0100007F:1388" (each 32-bit word in
// host order, little-endian here) into 127.0.0.1:5000; a v4-mapped v6
// address comes out as v4, so both ends of a dual-stack connection
// meet.
func procAddr(s string) (netip.AddrPort, bool) {
	host, port, ok := strings.Cut(s, ":")
	if !ok {
		return netip.AddrPort{}, false
	}
	p, err := strconv.ParseUint(port, 16, 16)
	raw, err2 := hex.DecodeString(host)
	if err != nil || err2 != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	addr, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(addr.Unmap(), uint16(p)), true
}

// unixPeer asks the kernel (NETLINK_SOCK_DIAG, UNIX_DIAG_PEER) for the
// inode of a unix socket's peer, from inside the process's network
// namespace; 0 when it has none or the kernel does not say.
func unixPeer(pid int, ns, ino uint64) uint64 {
	fd, err := diagSocket(pid, ns)
	if err != nil {
		return 0
	}
	defer unix.Close(fd)
	return unixDiagPeer(fd, uint32(ino))
}

// diagSocket opens a sock_diag netlink socket in the namespace ns of
// process pid. A socket keeps the namespace it was made in: when that is
// not hangdoc's, a locked thread enters it, makes the socket, and comes
// back (or, if it cannot, dies with its goroutine).
func diagSocket(pid int, ns uint64) (int, error) {
	open := func() (int, error) {
		fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
		if err != nil {
			return -1, err
		}
		tv := unix.Timeval{Sec: 1}
		_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		return fd, nil
	}
	if ns == 0 || ns == netns(os.Getpid()) {
		return open()
	}
	type result struct {
		fd  int
		err error
	}
	done := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		back, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{-1, err}
			return
		}
		defer back.Close()
		target, err := os.Open(procPath(pid, "ns", "net"))
		if err != nil {
			runtime.UnlockOSThread()
			done <- result{-1, err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			done <- result{-1, err}
			return
		}
		fd, err := open()
		if unix.Setns(int(back.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		} // else the thread stays locked and ends with this goroutine
		done <- result{fd, err}
	}()
	r := <-done
	return r.fd, r.err
}

// unixDiagPeer sends one unix_diag_req for the socket ino and reads the
// UNIX_DIAG_PEER attribute of the answer.
func unixDiagPeer(fd int, ino uint32) uint64 {
	const (
		nlmsgError     = 2
		udiagShowPeer  = 0x4
		unixDiagPeerAt = 2
		hdrLen         = 16
		reqLen         = 24 // struct unix_diag_req
		msgLen         = 16 // struct unix_diag_msg
	)
	req := make([]byte, hdrLen+reqLen)
	le := binary.LittleEndian
	le.PutUint32(req[0:], uint32(len(req)))
	le.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	le.PutUint16(req[6:], unix.NLM_F_REQUEST)
	le.PutUint32(req[8:], 1) // sequence
	r := req[hdrLen:]
	r[0] = unix.AF_UNIX
	le.PutUint32(r[4:], 0xffffffff) // every state
	le.PutUint32(r[8:], ino)
	le.PutUint32(r[12:], udiagShowPeer)
	le.PutUint32(r[16:], 0xffffffff) // INET_DIAG_NOCOOKIE
	le.PutUint32(r[20:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil || n < hdrLen {
		return 0
	}
	buf = buf[:n]
	size := int(le.Uint32(buf[0:]))
	if le.Uint16(buf[4:]) == nlmsgError || size > n || size < hdrLen+msgLen {
		return 0 // no such socket (not unix, or gone)
	}
	msg := buf[hdrLen:size]
	if le.Uint32(msg[4:]) != ino {
		return 0
	}
	for at := msg[msgLen:]; len(at) >= 4; {
		l, typ := int(le.Uint16(at[0:])), le.Uint16(at[2:])
		if l < 4 || l > len(at) {
			break
		}
		if typ == unixDiagPeerAt && l >= 8 {
			return uint64(le.Uint32(at[4:]))
		}
		at = at[min((l+3)&^3, len(at)):]
	}
	return 0
}
