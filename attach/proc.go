package attach

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/hangdoc/hangdoc/attach/unwind"

	"github.com/hangdoc/hangdoc/attach/module"
)

// procRoot is where procfs is mounted; tests never change it, but naming
// it once keeps every path below readable.
const procRoot = "/proc"

func procPath(pid int, parts ...string) string {
	return filepath.Join(append([]string{procRoot, strconv.Itoa(pid)}, parts...)...)
}

func taskPath(pid, tid int, name string) string {
	return procPath(pid, "task", strconv.Itoa(tid), name)
}

// taskStat is the part of /proc/PID/task/TID/stat hangdoc uses.
type taskStat struct {
	Name   string
	State  byte
	PPid   int
	Pgrp   int    // process group
	TTY    uint64 // controlling terminal's device number, 0 for none
	Tpgid  int    // the terminal's foreground process group, -1 for none
	Flags  uint64
	Ticks  uint64 // utime + stime, in clock ticks
	StartT uint64 // start time since boot, in clock ticks: tells a reused tid
}

// pfKthread is PF_KTHREAD from the kernel's sched.h.
const pfKthread = 0x00200000

// parseStat reads a stat line. The name sits between the first '(' and
// the last ')' and may itself contain spaces and parentheses.
func parseStat(b []byte) (taskStat, error) {
	var st taskStat
	open := bytes.IndexByte(b, '(')
	closing := bytes.LastIndexByte(b, ')')
	if open < 0 || closing < open {
		return st, fmt.Errorf("stat: no (name) in %q", truncate(b, 80))
	}
	st.Name = string(b[open+1 : closing])
	f := strings.Fields(string(b[closing+1:]))
	// f[0] is field 3 (state); field n is f[n-3].
	if len(f) < 20 {
		return st, fmt.Errorf("stat: %d fields after the name, want at least 20", len(f))
	}
	st.State = f[0][0]
	var err error
	num := func(field int) uint64 {
		v, e := strconv.ParseUint(f[field-3], 10, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("stat: field %d: %v", field, e)
		}
		return v
	}
	st.PPid = int(num(4))
	st.Pgrp = int(num(5))
	st.TTY = num(7)
	if tp, e := strconv.Atoi(f[8-3]); e == nil {
		st.Tpgid = tp // -1 without a terminal: not a uint
	}
	st.Flags = num(9)
	st.Ticks = num(14) + num(15)
	st.StartT = num(22)
	return st, err
}

func readStat(pid, tid int) (taskStat, error) {
	b, err := os.ReadFile(taskPath(pid, tid, "stat"))
	if err != nil {
		return taskStat{}, err
	}
	return parseStat(b)
}

// syscallState is /proc/PID/task/TID/syscall: what the thread is doing
// in the kernel, with its user stack pointer and program counter, read
// without stopping it.
type syscallState struct {
	Running bool  // "running": in user space, registers need a stop
	Nr      int64 // -1: blocked, but not in a system call
	Args    [6]uint64
	SP, PC  uint64
	// Arch numbers Nr: nil for a live thread (this machine's), a core's
	// machine otherwise.
	Arch *unwind.Arch
}

func parseSyscall(b []byte) (syscallState, error) {
	var s syscallState
	f := strings.Fields(string(b))
	if len(f) == 1 && f[0] == "running" {
		s.Running = true
		return s, nil
	}
	if len(f) != 3 && len(f) != 9 {
		return s, fmt.Errorf("syscall: %d fields in %q", len(f), truncate(b, 120))
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return s, fmt.Errorf("syscall: number %q: %v", f[0], err)
	}
	s.Nr = nr
	hex := func(i int) uint64 {
		v, e := strconv.ParseUint(strings.TrimPrefix(f[i], "0x"), 16, 64)
		if e != nil && err == nil {
			err = fmt.Errorf("syscall: field %d %q: %v", i+1, f[i], e)
		}
		return v
	}
	if len(f) == 9 {
		for i := range s.Args {
			s.Args[i] = hex(1 + i)
		}
	}
	s.SP, s.PC = hex(len(f)-2), hex(len(f)-1)
	return s, err
}

func readSyscall(pid, tid int) (syscallState, error) {
	b, err := os.ReadFile(taskPath(pid, tid, "syscall"))
	if err != nil {
		return syscallState{}, err
	}
	return parseSyscall(b)
}

func readWchan(pid, tid int) string {
	b, err := os.ReadFile(taskPath(pid, tid, "wchan"))
	if err != nil || string(b) == "0" {
		return ""
	}
	return string(b)
}

// listTasks returns the thread ids of a process, sorted.
func listTasks(pid int) ([]int, error) {
	ents, err := os.ReadDir(procPath(pid, "task"))
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	sort.Ints(tids)
	return tids, nil
}

func readCmdline(pid int) []string {
	b, err := os.ReadFile(procPath(pid, "cmdline"))
	if err != nil || len(b) == 0 {
		return nil
	}
	return strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
}

func readMaps(pid int) ([]module.Mapping, error) {
	f, err := os.Open(procPath(pid, "maps"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return module.ParseMaps(f)
}

// findMapping returns the mapping that holds addr.
func findMapping(ms []module.Mapping, addr uint64) (module.Mapping, bool) {
	i := sort.Search(len(ms), func(i int) bool { return ms[i].End > addr })
	if i < len(ms) && ms[i].Start <= addr {
		return ms[i], true
	}
	return module.Mapping{}, false
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, os.ErrNotExist) || isESRCH(err)
}
