package attach

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

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

// inetSocket is one line of /proc/PID/net/{tcp,tcp6,udp,udp6}.
type inetSocket struct {
	ino           uint64
	local, remote netip.AddrPort
}

// readInet reads the process's network namespace's table of proto
// ("tcp", "tcp6", "udp", "udp6"): the one reader of those files.
func readInet(pid int, proto string) []inetSocket {
	f, err := os.Open(procPath(pid, "net", proto))
	if err != nil {
		return nil
	}
	defer f.Close()
	var socks []inetSocket
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
		if err != nil || ino == 0 || !ok1 || !ok2 {
			continue // the header, a socket in TIME_WAIT
		}
		socks = append(socks, inetSocket{ino, local, remote})
	}
	return socks
}

// tcpTable is a namespace's connected TCP sockets (v4 and v6, v4-mapped
// addresses unmapped) by inode and by their address pair.
type tcpTable struct {
	byIno  map[uint64][2]netip.AddrPort // local, remote
	byPair map[[2]netip.AddrPort]uint64
}

// readTCP reads /proc/PID/net/tcp and tcp6.
func readTCP(pid int) *tcpTable {
	tb := &tcpTable{byIno: map[uint64][2]netip.AddrPort{}, byPair: map[[2]netip.AddrPort]uint64{}}
	for _, proto := range []string{"tcp", "tcp6"} {
		for _, s := range readInet(pid, proto) {
			if s.remote.Port() == 0 {
				continue // a listener
			}
			pair := [2]netip.AddrPort{s.local, s.remote}
			tb.byIno[s.ino] = pair
			tb.byPair[pair] = s.ino
		}
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

// socketAddrs finds a socket inode in the process's network namespace
// tables (/proc/PID/net/{tcp,tcp6,udp,udp6,unix}).
func socketAddrs(pid int, inode string) string {
	ino, err := strconv.ParseUint(inode, 10, 64)
	if err != nil {
		return ""
	}
	for _, proto := range []string{"tcp", "tcp6", "udp", "udp6"} {
		for _, s := range readInet(pid, proto) {
			if s.ino == ino {
				return fmt.Sprintf("%s %s -> %s", proto, s.local, s.remote)
			}
		}
	}
	f, err := os.Open(procPath(pid, "net", "unix"))
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode [Path]
		fs := strings.Fields(sc.Text())
		if len(fs) > 6 && fs[6] == inode {
			if len(fs) > 7 {
				return "unix " + fs[7]
			}
			return "unix"
		}
	}
	return ""
}
