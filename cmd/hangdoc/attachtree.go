package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/stacks"
)

// errTreeGone: every process of the tree exited before it could be read.
var errTreeGone = errors.New("every process of the tree exited or could not be read before sampling: nothing to report")

// attachTree samples the processes that are there: it leaves out those
// Attach would refuse (exited meanwhile, zombies, no permission) and,
// when the attach of the set still fails, retries without the failing
// pid. The notes say what was left out and why.
func attachTree(ctx context.Context, pids []int, opts attach.Options) (*stacks.Snapshot, []string, error) {
	var notes []string
	var refused error // the first reason other than "gone"
	leave := func(pid int, err error) {
		notes = append(notes, leftOut(pid, err))
		gone := errors.Is(err, attach.ErrNoProcess) || errors.Is(err, attach.ErrProcessGone) || errors.Is(err, attach.ErrNotTarget)
		if refused == nil && !gone {
			refused = err
		}
	}
	var ok []int
	for _, pid := range pids {
		if err := attach.Attachable(pid); err != nil {
			leave(pid, err)
			continue
		}
		ok = append(ok, pid)
	}
	for len(ok) > 0 {
		snap, err := attach.Attach(ctx, ok, opts)
		if err == nil {
			return snap, notes, nil
		}
		bad := failingPid(ok, err)
		if bad == 0 {
			return nil, notes, err
		}
		leave(bad, err)
		ok = slices.DeleteFunc(ok, func(p int) bool { return p == bad })
	}
	// Nothing left: the processes are gone, or none could be read (no
	// permission), which is worth an exitRunAnalysis.
	if refused != nil {
		return nil, notes, refused
	}
	return nil, notes, errTreeGone
}

// leftOut is the line that says why pid was left out: an attach error
// about it names it already.
func leftOut(pid int, err error) string {
	if e := (*attach.Error)(nil); errors.As(err, &e) && e.Pid == pid {
		return err.Error()
	}
	return fmt.Sprintf("pid %d: %v", pid, err)
}

// failingPid says which pid of the set an Attach error is about: one
// that Attachable now refuses, or else the one the error is about.
func failingPid(pids []int, err error) int {
	for _, pid := range pids {
		if attach.Attachable(pid) != nil {
			return pid
		}
	}
	if e := (*attach.Error)(nil); errors.As(err, &e) && slices.Contains(pids, e.Pid) {
		return e.Pid
	}
	return 0
}
