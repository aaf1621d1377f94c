package attach

import (
	"bufio"
	"encoding/binary"
	"os"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/stacks"
)

// maxWaitFds bounds the fds read from one poll, select or epoll wait.
const maxWaitFds = 64

// fdWant is one fd a blocked thread waits on, and which way: to read
// (data from the other end) or to write (room the other end makes).
type fdWant struct {
	fd      int
	in, out bool
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
