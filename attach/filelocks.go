package attach

// File locks: a thread blocked in flock(2), or in fcntl(2) with F_SETLKW or
// F_OFD_SETLKW (the only fcntl commands that block), waits for whichever
// process holds a lock on that file. The kernel lists every file lock in
// /proc/locks, a blocked request ("N: -> FLOCK …") right after the lock
// that blocks it ("N: FLOCK …"), each with the locker's pid and the file's
// device and inode. Reading it is all this takes: nothing of the target is
// touched. flock and OFD locks never fail with EDEADLK, so two processes
// that take two such locks in opposite orders wait for ever (a POSIX
// fcntl lock cycle is refused by the kernel instead).

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// fileLockWait says whether a blocked system call waits for a file lock:
// flock, or fcntl with F_SETLKW (F_SETLKW64 on 32-bit ABIs) or
// F_OFD_SETLKW as its command (arg1).
func fileLockWait(call string, arg1 uint64) bool {
	const setlkw, setlkw64, ofdSetlkw = 7, 14, 38
	switch call {
	case "flock":
		return true
	case "fcntl", "fcntl64":
		return arg1 == setlkw || arg1 == setlkw64 || arg1 == ofdSetlkw
	}
	return false
}

// fileLockHolders returns the processes other than pid that hold the
// lock pid's fd waits for, from /proc/locks: the lock listed just before
// pid's own blocked request on that file, else (the request not listed:
// the lock changed hands since the syscall was read) every holder of a
// lock on the file.
func fileLockHolders(pid, fd int) []int {
	fi, err := os.Stat(procPath(pid, "fd", strconv.Itoa(fd)))
	if err != nil {
		return nil
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	f, err := os.Open(procRoot + "/locks")
	if err != nil {
		return nil
	}
	defer f.Close()
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	return lockHolders(f, pid, file)
}

// fileLock is one line of /proc/locks.
type fileLock struct {
	id      string // the lock's number; a blocked request carries its blocker's
	blocked bool   // "->": a request waiting for lock id
	pid     int    // the locker; -1 for an OFD lock, which no process owns
	file    string // "MAJ:MIN:INODE", major and minor in hex
}

// parseFileLock reads "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"
// and "1: -> FLOCK  ADVISORY  WRITE 1240 08:01:5678 0 EOF".
func parseFileLock(line string) (fileLock, bool) {
	fs := strings.Fields(line)
	if len(fs) < 6 || !strings.HasSuffix(fs[0], ":") {
		return fileLock{}, false
	}
	l := fileLock{id: strings.TrimSuffix(fs[0], ":")}
	if fs[1] == "->" {
		l.blocked, fs = true, fs[1:]
	}
	if len(fs) < 6 {
		return fileLock{}, false
	}
	pid, err := strconv.Atoi(fs[4])
	if err != nil {
		return fileLock{}, false
	}
	l.pid, l.file = pid, fs[5]
	return l, true
}

// lockHolders reads a /proc/locks listing for the holders of the lock
// pid waits for on file.
func lockHolders(r io.Reader, pid int, file string) []int {
	held := map[string]fileLock{} // lock id -> the lock (not a request)
	var mine, all []int
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l, ok := parseFileLock(sc.Text())
		if !ok || l.file != file {
			continue
		}
		if !l.blocked {
			held[l.id] = l
			if l.pid > 0 && l.pid != pid && !slices.Contains(all, l.pid) {
				all = append(all, l.pid)
			}
			continue
		}
		if h, ok := held[l.id]; ok && l.pid == pid && h.pid > 0 && h.pid != pid && !slices.Contains(mine, h.pid) {
			mine = append(mine, h.pid)
		}
	}
	if len(mine) == 0 {
		mine = all
	}
	slices.Sort(mine)
	return mine
}
