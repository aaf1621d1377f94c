package main

import (
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach"
)

// terminal is the controlling terminal hangdoc run was started in the
// foreground of. While CMD runs, CMD's process group is the terminal's
// foreground group, as a shell would make it: CMD reads the terminal
// (a background read would stop it with SIGTTIN) and gets Ctrl-C and
// Ctrl-Z itself. When CMD is stopped (Ctrl-Z), hangdoc takes the
// terminal back and stops itself, so that the shell gets it (as sudo
// does); continued, it gives the terminal and SIGCONT back to CMD.
type terminal struct {
	fd    int // hangdoc's descriptor of the terminal
	own   int // hangdoc's process group, the foreground group it found
	group int // CMD's process group (its pid)

	mu   sync.Mutex
	held bool // CMD's group is the foreground group
	stop chan struct{}
	done chan struct{}
}

// foregroundTerminal finds, among hangdoc's stdin, stdout and stderr,
// a terminal whose foreground process group is hangdoc's own; nil when
// there is none (a pipe, a file, hangdoc itself in the background).
func foregroundTerminal(streams ...any) *terminal {
	own := unix.Getpgrp()
	for _, s := range streams {
		f, ok := s.(*os.File)
		if !ok {
			continue
		}
		fd := int(f.Fd())
		if pg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP); err == nil && pg == own {
			return &terminal{fd: fd, own: own}
		}
	}
	return nil
}

// give makes CMD's process group, just started, the terminal's
// foreground group and watches CMD for job-control stops. A read of the
// terminal CMD made before it became the foreground group stopped it
// (SIGTTIN): SIGCONT makes it read again, now in the foreground.
func (t *terminal) give(group int) {
	if t == nil {
		return
	}
	t.group = group
	t.mu.Lock()
	defer t.mu.Unlock()
	// Watch before CMD can get the terminal's Ctrl-Z: a stop whose
	// SIGCHLD came before would leave CMD stopped and the shell waiting.
	chld := make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	if t.setForeground(group) != nil {
		signal.Stop(chld)
		return
	}
	t.held = true
	syscall.Kill(-group, syscall.SIGCONT)
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.done)
		defer signal.Stop(chld)
		for {
			select {
			case <-chld:
				t.suspendIfStopped()
			case <-t.stop:
				return
			}
		}
	}()
}

// suspendIfStopped follows CMD into a job-control stop: the terminal
// goes back to hangdoc's group, hangdoc stops itself (SIGTSTP; the
// kernel drops it when nobody could continue hangdoc: an orphaned
// group), and once continued gives the terminal back and continues
// CMD.
func (t *terminal) suspendIfStopped() {
	t.mu.Lock()
	defer t.mu.Unlock()
	info, err := attach.Stat(t.group)
	if !t.held || err != nil || info.State != 'T' {
		return
	}
	if t.setForeground(t.own) != nil {
		return
	}
	stopSelf()
	// Continued (fg), or the stop was dropped.
	if t.setForeground(t.group) == nil {
		syscall.Kill(-t.group, syscall.SIGCONT)
	}
}

// stopSelf stops hangdoc with SIGTSTP, sent to the calling thread: it
// takes the signal before its kill returns, so hangdoc does nothing
// more until it is continued. (Sent to the process, the signal may be
// taken by another thread while this one runs on.)
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGTSTP)
}

// takeBack makes hangdoc's own group the foreground group again: when
// CMD has finished or before hangdoc reports and kills it. It is safe
// to call more than once, and on nil.
func (t *terminal) takeBack() {
	if t == nil || t.stop == nil {
		return
	}
	close(t.stop)
	<-t.done
	t.stop = nil
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held {
		t.setForeground(t.own)
		t.held = false
	}
}

// setForeground is tcsetpgrp. hangdoc may be in the background group
// when it calls it, and the kernel then stops it with SIGTTOU unless
// the signal is ignored: it is, for the call.
func (t *terminal) setForeground(group int) error {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	return unix.IoctlSetPointerInt(t.fd, unix.TIOCSPGRP, group)
}
