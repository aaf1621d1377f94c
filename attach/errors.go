package attach

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Errors a caller can branch on (errors.Is); their messages are the one
// line a user reads.
var (
	ErrNoProcess   = errors.New("no such process")
	ErrPermission  = errors.New("ptrace not permitted")
	ErrNotTarget   = errors.New("not a process hangdoc can attach to")
	ErrProcessGone = errors.New("process exited before anything could be read")
)

// Error is a failure to read one process: its pid and, where known, its
// kind (one of the Err values above) are data, so a caller that attaches
// to many processes learns which one failed without reading the message.
// Its message is the one line a user reads and names the pid.
type Error struct {
	Pid  int
	Kind error // ErrNoProcess, ErrPermission, ErrNotTarget, ErrProcessGone; nil for other causes
	Err  error // the message and its cause
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// pidError makes err an *Error about pid, its kind found among the Err
// values it wraps; an *Error already (about any pid) is kept as it is.
func pidError(pid int, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	e = &Error{Pid: pid, Err: err}
	for _, k := range []error{ErrNoProcess, ErrPermission, ErrNotTarget, ErrProcessGone} {
		if errors.Is(err, k) {
			e.Kind = k
			break
		}
	}
	return e
}

func isESRCH(err error) bool { return errors.Is(err, syscall.ESRCH) }

func isPermission(err error) bool {
	return errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES)
}

// permissionError explains why the kernel refused and how to get access:
// the message is what an on-call engineer reads at 3 a.m.
func permissionError(pid int, cause error) error {
	var why []string
	if b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope"); err == nil {
		switch strings.TrimSpace(string(b)) {
		case "1":
			why = append(why, "kernel.yama.ptrace_scope=1 allows tracing only descendants (run as root, or `sysctl kernel.yama.ptrace_scope=0`)")
		case "2":
			why = append(why, "kernel.yama.ptrace_scope=2 allows tracing only with CAP_SYS_PTRACE (run with sudo)")
		case "3":
			why = append(why, "kernel.yama.ptrace_scope=3 forbids ptrace until reboot")
		}
	}
	if os.Geteuid() != 0 {
		why = append(why, "hangdoc is not root and may lack CAP_SYS_PTRACE or not own the process (try sudo)")
	} else {
		why = append(why, "hangdoc runs as root, so the target may be in another user namespace or protected by a security module (SELinux, AppArmor, seccomp)")
	}
	why = append(why, "in a container: `docker run --cap-add=SYS_PTRACE`, or `kubectl debug --profile=general`")
	return pidError(pid, fmt.Errorf("%w for pid %d (%v): %s", ErrPermission, pid, cause, strings.Join(why, "; ")))
}

// checkTarget refuses what cannot be attached to, with a reason (an
// *Error).
func checkTarget(pid int) (taskStat, error) {
	st, err := refuseTarget(pid)
	return st, pidError(pid, err)
}

func refuseTarget(pid int) (taskStat, error) {
	if pid <= 0 {
		return taskStat{}, fmt.Errorf("%w: pid %d is not a process id", ErrNotTarget, pid)
	}
	if pid == os.Getpid() {
		return taskStat{}, fmt.Errorf("%w: pid %d is hangdoc itself", ErrNotTarget, pid)
	}
	st, err := readStat(pid, pid)
	switch {
	case isNotExist(err):
		return st, fmt.Errorf("%w: pid %d (check the pid with `ps -p %d`)", ErrNoProcess, pid, pid)
	case err != nil:
		return st, fmt.Errorf("pid %d: %v", pid, err)
	case st.Flags&pfKthread != 0:
		return st, fmt.Errorf("%w: pid %d (%s) is a kernel thread; it has no user stack", ErrNotTarget, pid, st.Name)
	case st.State == 'Z' && !anyThreadAlive(pid):
		return st, fmt.Errorf("%w: pid %d (%s) is a zombie: it has exited and waits for its parent (pid %d) to reap it", ErrNotTarget, pid, st.Name, st.PPid)
	}
	// Reading a thread's syscall state takes the same permission as
	// ptrace: asking now gives the user the reason before any work.
	if _, err := readSyscall(pid, pid); isPermission(err) {
		return st, permissionError(pid, err)
	}
	return st, nil
}

// anyThreadAlive tells a zombie process from one whose main thread
// called pthread_exit while others run on (its main thread shows Z too).
func anyThreadAlive(pid int) bool {
	tids, _ := listTasks(pid)
	for _, tid := range tids {
		if st, err := readStat(pid, tid); err == nil && st.State != 'Z' && st.State != 'X' {
			return true
		}
	}
	return false
}
