package patient

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
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
		st, err := statState(b)
		if err != nil {
			return nil, fmt.Errorf("%s/%d/stat: %v", dir, tid, err)
		}
		out[tid] = st
	}
	return out, nil
}

// statState reads the state letter from a /proc stat line; the command
// name before it is in parentheses and may hold spaces and parentheses.
func statState(b []byte) (string, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return "", errors.New("no state field")
	}
	return string(b[i+2 : i+3]), nil
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
			if state, perr := statState(st); serr != nil || perr != nil || (state != "S" && state != "D") {
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
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	st, _ := statState(b)
	return st
}
