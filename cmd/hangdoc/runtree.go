package main

import (
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach"
)

// The process-tree supervisor of hangdoc run: CMD's tree found, watched,
// killed and reaped; run.go decides when.

// killTimeout bounds the wait for the killed tree to be gone: a process
// in uninterruptible sleep (D) dies only when its I/O ends.
const killTimeout = 5 * time.Second

// adoptOrphans makes `hangdoc run` the child subreaper of the command's
// tree (prctl PR_SET_CHILD_SUBREAPER): a process whose parent exits
// (a daemon that double-forks) is re-parented to hangdoc, not to init,
// so it is still found, diagnosed and killed, and hangdoc reaps it.
// Tests that run the command in-process turn it off: the test binary has
// children of its own.
var adoptOrphans = true

// tree is CMD's process tree: CMD (the child), everything below it and,
// with adopt, the orphans hangdoc adopted as their subreaper.
type tree struct {
	child   int
	adopt   bool
	seen    map[int]attach.ProcInfo // every process found, by pid
	reaping sync.Mutex              // held while no orphan may be reaped
}

// members lists the tree's processes now, breadth-first from CMD, and
// remembers each with its start time, which tells it from a later
// process that reuses its pid.
func (t *tree) members() []int {
	pids := attach.Descendants(t.child)
	if t.adopt {
		for _, c := range attach.Children(os.Getpid()) {
			if c != t.child {
				pids = append(pids, attach.Descendants(c)...)
			}
		}
	}
	if t.seen == nil {
		t.seen = map[int]attach.ProcInfo{}
	}
	for _, pid := range pids {
		if info, err := attach.Stat(pid); err == nil {
			t.seen[pid] = info
		}
	}
	return pids
}

// kill SIGKILLs the tree until no process of it is left alive (or
// killTimeout passes). It stops the whole tree first (SIGSTOP): a parent
// that saw its child die could react (exit, retry, start another).
// Then it kills every process below CMD, leaves first (while a parent
// lives, its children's pids stay theirs), the processes found earlier
// that are no longer below CMD (re-parented to init when hangdoc is not
// their subreaper), then CMD's process group. It returns how many
// processes it killed.
func (t *tree) kill() int {
	killed := map[int]bool{}
	end := time.Now().Add(killTimeout)
	for {
		pids := t.alive()
		if len(pids) == 0 {
			return len(killed)
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGSTOP)
		}
		// CMD is unreaped: its pid, the group's id, is still its own.
		syscall.Kill(-t.child, syscall.SIGSTOP)
		waitStopped(pids, stopWait)
		for i := len(pids) - 1; i >= 0; i-- {
			if syscall.Kill(pids[i], syscall.SIGKILL) == nil {
				killed[pids[i]] = true
			}
		}
		syscall.Kill(-t.child, syscall.SIGKILL)
		if time.Now().After(end) {
			return len(killed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// stopWait bounds the wait for the tree to stop before it is killed: a
// process in uninterruptible sleep stops only when its I/O ends.
const stopWait = 200 * time.Millisecond

// alive lists the processes of the tree that live, parents before their
// children: those below CMD now, then those found before and no longer
// below it, when they are still the same processes.
func (t *tree) alive() []int {
	pids := t.members()
	for pid := range t.seen {
		if !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	return slices.DeleteFunc(pids, func(pid int) bool {
		info, err := attach.Stat(pid)
		return err != nil || !info.Alive() || info.Start != t.seen[pid].Start
	})
}

// waitStopped waits up to d for each process to be stopped or dead.
func waitStopped(pids []int, d time.Duration) {
	end := time.Now().Add(d)
	for _, pid := range pids {
		for time.Now().Before(end) {
			info, err := attach.Stat(pid)
			if err != nil || !info.Alive() || info.State == 'T' || info.State == 't' {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// waitExit returns when CMD has exited, leaving it unreaped.
func (t *tree) waitExit() {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, t.child, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// reapAdopted reaps, while CMD runs, the orphans hangdoc adopted that
// exit (CMD itself is left to Wait). It returns the function that stops
// it.
func (t *tree) reapAdopted() (stop func()) {
	if !t.adopt {
		return func() {}
	}
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-chld:
				t.reapAll()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(chld)
		close(done)
	}
}

// reapAll reaps the adopted orphans that have exited.
func (t *tree) reapAll() {
	if !t.adopt {
		return
	}
	t.reaping.Lock()
	defer t.reaping.Unlock()
	for _, c := range attach.Children(os.Getpid()) {
		if c != t.child {
			var ws syscall.WaitStatus
			syscall.Wait4(c, &ws, syscall.WNOHANG, nil)
		}
	}
}
