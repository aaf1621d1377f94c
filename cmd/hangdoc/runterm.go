package main

import (
	"encoding/binary"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// terminal is the controlling terminal hangdoc run was started in the
// foreground of. hangdoc keeps the terminal while CMD runs, so that
// Ctrl-C reaches hangdoc and diagnoses CMD (the point of running it
// under hangdoc) and Ctrl-Z suspends both. A CMD that reads the
// terminal from its background group is stopped by the kernel
// (SIGTTIN; SIGTTOU for a write under `stty tostop`): hangdoc then makes
// CMD's group the foreground group and continues it, as a shell's fg
// does, and from then on CMD gets Ctrl-C and Ctrl-Z itself. When CMD,
// holding the terminal, is stopped (Ctrl-Z), hangdoc takes the terminal
// back and stops itself, so that the shell gets it (as sudo does);
// continued, it gives the terminal and SIGCONT back to CMD.
type terminal struct {
	fd    int // hangdoc's descriptor of the terminal
	own   int // hangdoc's process group, the foreground group it found
	group int // CMD's process group (its pid)

	mu   sync.Mutex
	held bool           // CMD's group is the foreground group
	tstp chan os.Signal // hangdoc's own Ctrl-Z, while it holds the terminal
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

// give watches CMD's process group, just started, for job-control
// stops, and hangdoc for Ctrl-Z. A read of the terminal CMD made before
// the watch began has already stopped it: it is looked at once first.
func (t *terminal) give(group int) {
	if t == nil {
		return
	}
	t.group = group
	chld := make(chan os.Signal, 1)
	t.tstp = make(chan os.Signal, 1)
	signal.Notify(chld, syscall.SIGCHLD)
	signal.Notify(t.tstp, syscall.SIGTSTP)
	t.stop, t.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(t.done)
		defer signal.Stop(chld)
		defer signal.Stop(t.tstp)
		t.followStop()
		for {
			select {
			case <-chld:
				t.followStop()
			case <-t.tstp:
				t.suspendBoth()
			case <-t.stop:
				return
			}
		}
	}()
}

// followStop looks at a stop of CMD: while hangdoc holds the terminal,
// a stop by SIGTTIN or SIGTTOU is CMD asking for the terminal, and it is
// given it; while CMD holds it, a stop is CMD's Ctrl-Z, which hangdoc
// follows. Any other stop (kill -STOP from elsewhere) is left alone: the
// diagnosis names it.
func (t *terminal) followStop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	sig, stopped := stopSignal(t.group)
	if !stopped {
		return
	}
	if !t.held {
		if sig != unix.SIGTTIN && sig != unix.SIGTTOU {
			return
		}
		if t.setForeground(t.group) == nil {
			t.held = true
			syscall.Kill(-t.group, syscall.SIGCONT)
		}
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

// suspendBoth is Ctrl-Z typed at hangdoc: the terminal stopped
// hangdoc's group, and CMD, in a group of its own, would run on. CMD is
// stopped too, then hangdoc; continued, hangdoc continues CMD. CMD may
// have been given the terminal between the keystroke and now (its
// read's SIGTTIN raced the Ctrl-Z): it gets it back after.
func (t *terminal) suspendBoth() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held && t.setForeground(t.own) != nil {
		return
	}
	syscall.Kill(-t.group, syscall.SIGTSTP)
	stopSelf()
	if t.held && t.setForeground(t.group) != nil {
		t.held = false
	}
	syscall.Kill(-t.group, syscall.SIGCONT)
}

// stopSignal is the signal that stopped process pid, read without
// reaping it or consuming its stop (WNOWAIT).
func stopSignal(pid int) (syscall.Signal, bool) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WSTOPPED|unix.WNOHANG|unix.WNOWAIT, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil || info.Signo != int32(unix.SIGCHLD) {
			return 0, false
		}
		break
	}
	// siginfo_t for SIGCHLD: signo, errno, code, a pad, si_pid, si_uid,
	// then si_status (offset 24), which for a stop (CLD_STOPPED) is the
	// stopping signal. x/sys/unix leaves those fields unnamed.
	const cldStopped, statusOffset = 5, 24
	if info.Code != cldStopped {
		return 0, false
	}
	raw := (*[unsafe.Sizeof(unix.Siginfo{})]byte)(unsafe.Pointer(&info))
	return syscall.Signal(int32(binary.NativeEndian.Uint32(raw[statusOffset:]))), true
}

// stopSelf stops hangdoc with SIGTSTP, sent to the calling thread: it
// takes the signal before its kill returns, so hangdoc does nothing
// more until it is continued. (Sent to the process, the signal may be
// taken by another thread while this one runs on.) Once os/signal has
// caught SIGTSTP, Go's handler stays installed and drops the signal
// after signal.Reset; the default action is put back for the kill and
// Go's handler restored after it. An all-zero kernel sigaction is
// SIG_DFL on every architecture; the old one is handed back unread.
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var dfl, old [8]uint64 // at least the kernel's struct sigaction
	const sigsetSize = 8
	_, _, errno := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGTSTP), uintptr(unsafe.Pointer(&dfl)), uintptr(unsafe.Pointer(&old)), sigsetSize, 0, 0)
	unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGTSTP)
	if errno == 0 {
		unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(unix.SIGTSTP), uintptr(unsafe.Pointer(&old)), 0, sigsetSize, 0, 0)
	}
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
