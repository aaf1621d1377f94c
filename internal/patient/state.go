package patient

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// What /proc says of a patient's threads: their states, and when all of
// them are asleep.

// Tasks returns the state letter (R, S, D, T, t, Z, …) of every thread of
// the patient, by TID, from /proc/PID/task/*/stat.
func (p *Proc) Tasks() (map[int]string, error) { return Tasks(p.Pid) }

// Tasks returns the state letter of every thread of process pid, by TID.
func Tasks(pid int) (map[int]string, error) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make(map[int]string, len(ents))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		st, err := parseStat(b)
		if err != nil {
			return nil, fmt.Errorf("%s/%d/stat: %v", dir, tid, err)
		}
		out[tid] = st.State
	}
	return out, nil
}

// Stat is what tests read of a process's /proc/PID/stat, the fields
// after the command name.
type Stat struct {
	State   string // R, S, D, T, t, Z, …
	Ppid    int
	Pgrp    int
	Session int
	Flags   uint64 // the kernel's PF_* flags (PF_KTHREAD: a kernel thread)
}

// PFKthread is the flag of a kernel thread in Stat.Flags.
const PFKthread = 0x00200000

// ReadStat reads process (or thread) pid's /proc/PID/stat: the one
// reader of it for tests.
func ReadStat(pid int) (Stat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Stat{}, err
	}
	return parseStat(b)
}

// parseStat reads a /proc stat line. The command name before the fields
// is in parentheses and may hold spaces and parentheses: the fields
// start after the last ')'.
func parseStat(b []byte) (Stat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return Stat{}, errors.New("no state field")
	}
	// state ppid pgrp session tty_nr tpgid flags
	f := strings.Fields(string(b[i+1:]))
	st := Stat{State: string(b[i+2 : i+3])}
	num := func(k int) uint64 {
		if k >= len(f) {
			return 0
		}
		n, _ := strconv.ParseUint(f[k], 10, 64)
		return n
	}
	st.Ppid, st.Pgrp, st.Session, st.Flags = int(num(1)), int(num(2)), int(num(3)), num(6)
	return st, nil
}

// Settle waits up to timeout until every thread of the patient sleeps in
// a syscall (its /proc/PID/task/TID/syscall is not "running") in two
// passes in a row, and says whether that happened. A busy patient never
// settles; that is not an error.
func (p *Proc) Settle(timeout time.Duration) bool { return Asleep(p.Pid, timeout) }

// Asleep waits up to timeout until every thread of pid sleeps in a
// syscall in two passes in a row, and says whether that happened: tests
// poll for the state they need instead of sleeping for a fixed time.
func Asleep(pid int, timeout time.Duration) bool {
	end := time.Now().Add(timeout)
	quiet := 0
	for time.Now().Before(end) {
		if allAsleep(pid) {
			quiet++
			if quiet == 2 {
				return true
			}
		} else {
			quiet = 0
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// allAsleep: every thread is blocked in a system call. When the syscall
// file is refused (no ptrace permission), the kernel's state letter
// decides: a thread that cannot be seen asleep is not asleep.
func allAsleep(pid int) bool {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "syscall"))
		if errors.Is(err, os.ErrPermission) {
			st, serr := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
			if s, perr := parseStat(st); serr != nil || perr != nil || (s.State != "S" && s.State != "D") {
				return false
			}
			continue
		}
		if err != nil {
			continue // the thread exited
		}
		if len(b) == 0 || b[0] < '0' || b[0] > '9' {
			return false // "running", or "-1 …" (not in a syscall)
		}
	}
	return true
}

// State is process pid's state letter (R, S, T, Z, …), "" when it is gone.
func State(pid int) string {
	st, _ := ReadStat(pid)
	return st.State
}
