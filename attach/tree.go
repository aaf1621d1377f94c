package attach

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// ProcInfo is what /proc/PID/stat says of a process that a caller
// managing a process tree needs.
type ProcInfo struct {
	Pid, PPid, PGid int
	State           byte // R, S, D, T, t, Z, X, …
	// Start is the start time in clock ticks since boot: with the pid
	// it names the process, even after the pid is reused by another.
	Start uint64
}

// Alive says whether the process runs: it exists and is not a zombie.
func (p ProcInfo) Alive() bool { return p.State != 'Z' && p.State != 'X' }

// Stat reads a process's /proc/PID/stat.
func Stat(pid int) (ProcInfo, error) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return ProcInfo{}, err
	}
	st, err := parseStat(b)
	if err != nil {
		return ProcInfo{}, fmt.Errorf("pid %d: %v", pid, err)
	}
	info := ProcInfo{Pid: pid, PPid: st.PPid, State: st.State, Start: st.StartT}
	// Field 5 (pgrp) follows ppid; parseStat keeps only what sampling
	// needs, so read it here.
	if f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:])); len(f) > 2 {
		info.PGid, _ = strconv.Atoi(f[2])
	}
	return info, nil
}

// Descendants returns pid and every process below it, breadth-first:
// pid, its children, their children, …; within one parent, children in
// pid order. Children are read from every thread's
// /proc/PID/task/TID/children (a thread's children are listed under
// that thread); on a kernel without those files, from one scan of
// /proc for parent links. A process that exits meanwhile is left out,
// with whatever was below it and not yet read; zombies are listed. It
// returns nil when pid itself does not exist.
func Descendants(pid int) []int {
	if _, err := os.Stat(procPath(pid)); err != nil {
		return nil
	}
	if childrenFilesWork() {
		return descendants(pid, taskChildren)
	}
	byParent := parentLinks()
	return descendants(pid, func(p int) []int { return byParent[p] })
}

// descendants walks the tree breadth-first with childrenOf, each
// process once (a reused pid cannot loop it).
func descendants(pid int, childrenOf func(int) []int) []int {
	out := []int{pid}
	seen := map[int]bool{pid: true}
	for i := 0; i < len(out); i++ {
		kids := childrenOf(out[i])
		slices.Sort(kids)
		for _, c := range kids {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	return out
}

// taskChildren lists the children of every thread of pid; nothing when
// pid has exited.
func taskChildren(pid int) []int {
	var out []int
	tids, _ := listTasks(pid)
	for _, tid := range tids {
		b, err := os.ReadFile(taskPath(pid, tid, "children"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

var (
	childrenOnce sync.Once
	childrenOK   bool
)

// childrenFilesWork says whether the kernel has /proc/PID/task/TID/children
// (CONFIG_PROC_CHILDREN): hangdoc's own thread has one if any does.
func childrenFilesWork() bool {
	childrenOnce.Do(func() {
		_, err := os.Stat(procRoot + "/thread-self/children")
		childrenOK = err == nil
	})
	return childrenOK
}

// parentLinks scans /proc once: the children of every process.
func parentLinks() map[int][]int {
	byParent := map[int][]int{}
	ents, _ := os.ReadDir(procRoot)
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := readStat(pid, pid); err == nil {
			byParent[st.PPid] = append(byParent[st.PPid], pid)
		}
	}
	return byParent
}

// Attachable says whether Attach would take pid, by the checks Attach
// makes before it samples anything: the process exists, is not a zombie
// or a kernel thread, and hangdoc may read it. A caller attaching to a
// whole tree drops the pids it refuses (errors.Is ErrNoProcess,
// ErrNotTarget, ErrPermission, ErrProcessGone) and attaches to the rest.
// An error is an *Error.
func Attachable(pid int) error {
	_, _, err := targetMaps(pid)
	return err
}

// Children lists the children of pid (of all its threads), in pid order;
// nothing when pid has exited.
func Children(pid int) []int {
	var kids []int
	if childrenFilesWork() {
		kids = taskChildren(pid)
	} else {
		kids = parentLinks()[pid]
	}
	slices.Sort(kids)
	return kids
}
