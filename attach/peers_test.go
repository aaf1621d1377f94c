package attach

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

func TestProcAddr(t *testing.T) {
	cases := map[string]string{
		"0100007F:1388":                         "127.0.0.1:5000",
		"00000000000000000000000001000000:0050": "[::1]:80",
		"0000000000000000FFFF00000100007F:1F90": "127.0.0.1:8080", // v4-mapped: meets its v4 peer
	}
	for in, want := range cases {
		got, ok := procAddr(in)
		if !ok || got != netip.MustParseAddrPort(want) {
			t.Errorf("procAddr(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"garbage", "0100007F", "01007F:0050", "zz00007F:0050"} {
		if _, ok := procAddr(bad); ok {
			t.Errorf("procAddr(%q) ok", bad)
		}
	}
}

func TestFdLink(t *testing.T) {
	for link, want := range map[string]string{"pipe:[1234]": "pipe 1234", "socket:[99]": "socket 99"} {
		kind, ino, ok := fdLink(link)
		if got := kind + " " + strconv.FormatUint(ino, 10); !ok || got != want {
			t.Errorf("fdLink(%q) = %q, %v", link, got, ok)
		}
	}
	for _, link := range []string{"/dev/null", "anon_inode:[eventpoll]", "pipe:[x]", "socket:[12"} {
		if _, _, ok := fdLink(link); ok {
			t.Errorf("fdLink(%q) ok", link)
		}
	}
}

func inodeOf(t *testing.T, fd int) uint64 {
	t.Helper()
	link, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		t.Fatal(err)
	}
	_, ino, ok := fdLink(link)
	if !ok {
		t.Fatalf("fd %d is %q", fd, link)
	}
	return ino
}

// The kernel's sock_diag names a unix socket's peer.
func TestUnixPeer(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	a, b := inodeOf(t, fds[0]), inodeOf(t, fds[1])
	me := os.Getpid()
	if got := unixPeer(me, netns(me), a); got != b {
		t.Errorf("unixPeer(%d) = %d, want %d", a, got, b)
	}
	if got := unixPeer(me, netns(me), b); got != a {
		t.Errorf("unixPeer(%d) = %d, want %d", b, got, a)
	}
	if got := unixPeer(me, netns(me), 1); got != 0 {
		t.Errorf("unixPeer(no such socket) = %d", got)
	}
}

// A loopback TCP connection's ends meet in /proc/net/tcp.
func TestTCPPeer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		patient.Missing(t, "no loopback TCP: %v", err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	fdOf := func(c net.Conn) int {
		f, err := c.(*net.TCPConn).File() // a dup: the same socket inode
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return int(f.Fd())
	}
	c, s := inodeOf(t, fdOf(client)), inodeOf(t, fdOf(server))
	x := &peerIndex{}
	me := os.Getpid()
	if got := x.socketPeer(me, c); got != s {
		t.Errorf("socketPeer(client %d) = %d, want the server's %d", c, got, s)
	}
	if got := x.socketPeer(me, s); got != c {
		t.Errorf("socketPeer(server %d) = %d, want the client's %d", s, got, c)
	}
}

// pollFds reads a struct pollfd array; selectFds fd_set bitmaps; both
// from a process's memory (our own here).
func TestPollAndSelectFds(t *testing.T) {
	pfds := []unix.PollFd{{Fd: 3, Events: unix.POLLIN}, {Fd: -1, Events: unix.POLLIN}, {Fd: 7, Events: unix.POLLOUT}}
	got := pollFds(os.Getpid(), uint64(uintptr(unsafe.Pointer(&pfds[0]))), uint64(len(pfds)))
	want := []fdWant{{fd: 3, in: true}, {fd: 7, out: true}}
	if !slices.Equal(got, want) {
		t.Errorf("pollFds = %+v, want %+v", got, want)
	}
	var rd, wr unix.FdSet
	rd.Set(4)
	rd.Set(70)
	wr.Set(70)
	got = selectFds(os.Getpid(), 71, uint64(uintptr(unsafe.Pointer(&rd))), uint64(uintptr(unsafe.Pointer(&wr))))
	want = []fdWant{{fd: 4, in: true}, {fd: 70, in: true, out: true}}
	if !slices.Equal(got, want) {
		t.Errorf("selectFds = %+v, want %+v", got, want)
	}
	if got := pollFds(os.Getpid(), 0, 3); got != nil {
		t.Errorf("pollFds(NULL) = %+v", got)
	}
}

func TestEpollFds(t *testing.T) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ep)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, p[0], &unix.EpollEvent{Events: unix.EPOLLIN})
	unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, p[1], &unix.EpollEvent{Events: unix.EPOLLOUT})
	got := epollFds(os.Getpid(), ep)
	slices.SortFunc(got, func(a, b fdWant) int { return a.fd - b.fd })
	want := []fdWant{{fd: p[0], in: true}, {fd: p[1], out: true}}
	if !slices.Equal(got, want) {
		t.Errorf("epollFds = %+v, want %+v", got, want)
	}
}

// resolve finds the other end of a pipe in another process, by the way
// the waiter uses it: the writers for a read, the readers for a write.
func TestResolvePipePeers(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	holder := func(f *os.File) int {
		cmd := exec.Command("sleep", "100")
		cmd.ExtraFiles = []*os.File{f}
		patient.StartKept(t, cmd)
		return cmd.Process.Pid
	}
	writer, reader := holder(w), holder(r)
	me := os.Getpid()
	x := &peerIndex{}
	if got, self := x.resolve(me, []fdWant{{fd: int(r.Fd()), in: true}}); !slices.Equal(got, []int{writer}) || self {
		t.Errorf("peers of a read = %v, want the writer %d (not the reader %d, not this process)", got, writer, reader)
	}
	if got, self := x.resolve(me, []fdWant{{fd: int(w.Fd()), out: true}}); !slices.Equal(got, []int{reader}) || self {
		t.Errorf("peers of a write = %v, want the reader %d", got, reader)
	}
	if !x.built || x.cut {
		t.Errorf("index built %v, cut %v", x.built, x.cut)
	}
	// A pipe whose write end only this process holds: no peer, itself.
	r2, w2, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	defer w2.Close()
	x = &peerIndex{}
	if got, self := x.resolve(me, []fdWant{{fd: int(r2.Fd()), in: true}}); len(got) != 0 || !self {
		t.Errorf("a pipe only this process writes: peers %v, self %v; want none, true", got, self)
	}
}

// attachPeers starts sh -c script, waits until the process whose pid the
// script prints first blocks in system call nr, attaches to it, and
// returns its main thread's wait and the other pids printed.
func attachPeers(t *testing.T, nr int64, script string) (*stacks.Wait, []int) {
	t.Helper()
	patient.RequirePtrace(t)
	p := patient.Start(t, "sh", "-c", script)
	var pids []int
	for _, f := range strings.Fields(strings.Join(p.Early(), " ")) {
		n, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("early line %q", p.Early())
		}
		pids = append(pids, n)
	}
	if len(pids) < 2 {
		t.Fatalf("want the target's pid and its peers' before ready, got %q", p.Early())
	}
	target := pids[0]
	end := time.Now().Add(10 * time.Second)
	for {
		sc, err := readSyscall(target, target)
		if err == nil && !sc.Running && sc.Nr == nr {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("pid %d never blocked (%+v, %v)", target, sc, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	snap, err := Attach(context.Background(), []int{target}, Options{Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	th := snap.Processes[0].Threads[0]
	if th.Wait == nil {
		t.Fatalf("pid %d: no wait", target)
	}
	return th.Wait, pids[1:]
}

// cat reads a pipe whose only writer is sleep.
func TestAttachPipePeer(t *testing.T) {
	w, others := attachPeers(t, 0, `sleep 1000 | cat & c=$!; sleep 0.2; echo $c $(pgrep -P $$ -x sleep); echo ready; wait`)
	if w.Syscall != "read" || !strings.HasPrefix(w.FdTarget, "pipe:[") || !slices.Equal(w.PeerPids, others) {
		t.Errorf("cat's wait %+v: want a read on a pipe whose peer is sleep %v", w, others)
	}
}

// A Python child polls one pipe (select.poll, one fd) whose writer is
// sleep: the poll's fd is read from memory and resolved.
func TestAttachPollPeer(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	w, others := attachPeers(t, 7, `sleep 1000 | `+patient.Python+` -c 'import select; p = select.poll(); p.register(0, select.POLLIN); p.poll()' & c=$!; sleep 0.3; echo $c $(pgrep -P $$ -x sleep); echo ready; wait`)
	if w.Syscall != "poll" || !strings.HasPrefix(w.FdTarget, "pipe:[") || !slices.Equal(w.PeerPids, others) {
		t.Errorf("poll wait %+v: want a poll on a pipe whose peer is sleep %v", w, others)
	}
}

// A forked Python child waits in recv on a unix socketpair and on a
// loopback TCP connection whose other ends its parent holds.
func TestAttachSocketPeers(t *testing.T) {
	patient.RequireTool(t, patient.Python)
	for _, c := range []struct{ name, setup, wrap string }{
		{"unix", "a, b = socket.socketpair()", ""},
		{"tcp", "l = socket.socket(); l.bind(('127.0.0.1', 0)); l.listen(1); b = socket.create_connection(l.getsockname()); a, _ = l.accept(); l.close()", ""},
		// In a network namespace of their own, the unix socket's peer
		// is asked from inside it.
		{"unix-other-netns", "a, b = socket.socketpair()", "unshare -n "},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.wrap != "" && (os.Geteuid() != 0 || exec.Command("unshare", "-n", "true").Run() != nil) {
				patient.Missing(t, "unshare -n not permitted here (needs root)")
			}
			py := "import os, socket, sys, time\n" + c.setup + "\n" +
				"pid = os.fork()\n" +
				"if pid == 0:\n    a.close(); b.recv(1); os._exit(0)\n" +
				"b.close(); print(pid, os.getpid(), flush=True); print('ready', flush=True); time.sleep(1000)\n"
			w, others := attachPeers(t, 45, "exec "+c.wrap+patient.Python+" -c \""+py+"\"")
			if w.Syscall != "recvfrom" || !strings.HasPrefix(w.FdTarget, "socket:[") || !slices.Equal(w.PeerPids, others) {
				t.Errorf("recv wait %+v: want a socket whose peer is the parent %v", w, others)
			}
		})
	}
}

// wait4 and waitid name the child they wait for.
func TestWaitidChild(t *testing.T) {
	if got := waitidChild(os.Getpid(), 1, 4242); got != 4242 {
		t.Errorf("P_PID: %d", got)
	}
	if got := waitidChild(os.Getpid(), 0, 4242); got != 0 {
		t.Errorf("P_ALL: %d", got)
	}
	cmd := exec.Command("sleep", "100")
	patient.StartKept(t, cmd)
	pidfd, err := unix.PidfdOpen(cmd.Process.Pid, 0)
	if err != nil {
		patient.Missing(t, "pidfd_open: %v", err)
	}
	defer unix.Close(pidfd)
	if got := waitidChild(os.Getpid(), 3, uint64(pidfd)); got != cmd.Process.Pid {
		t.Errorf("P_PIDFD: %d, want %d", got, cmd.Process.Pid)
	}
}
