package patient

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// What a test needs of the machine: a tool, ptrace permission; Missing
// skips locally and fails in CI.

// RequireTool returns the path of an executable on $PATH. When it is
// missing the test is skipped, or fails when CI=true (CI installs every
// tool through scripts/install-deps.sh, so a missing one is a bug there).
func RequireTool(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s not installed (scripts/install-deps.sh installs it): %v", name, err)
	}
	return path
}

// RequirePtrace skips the test (fails it when CI=true) unless this process
// may ptrace its children: it really seizes a short-lived child, so root
// without CAP_SYS_PTRACE, Yama's ptrace_scope, seccomp and LSMs all count.
func RequirePtrace(t testing.TB) {
	t.Helper()
	ptraceOnce.Do(func() { ptraceErr = probePtrace() })
	if ptraceErr != nil {
		Missing(t, "ptrace not permitted: %v", ptraceErr)
	}
}

var (
	ptraceOnce sync.Once
	ptraceErr  error
)

const ptraceSeize = 0x4206 // PTRACE_SEIZE, not in package syscall

func probePtrace() error {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return fmt.Errorf("cannot probe: %v", err)
	}
	// ptrace requests must come from the thread that seized; the child's
	// Pdeathsig is tied to the thread that forked it: one locked thread
	// does both.
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command(sleep, "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			errc <- fmt.Errorf("cannot probe: %v", err)
			return
		}
		_, _, e := syscall.Syscall6(syscall.SYS_PTRACE, ptraceSeize, uintptr(cmd.Process.Pid), 0, 0, 0, 0)
		_ = cmd.Process.Kill() // ends the trace too
		_ = cmd.Wait()
		if e != 0 {
			errc <- fmt.Errorf("PTRACE_SEIZE of a child: %v (euid %d%s%s)", e, os.Geteuid(), capPtraceNote(), yamaNote())
			return
		}
		errc <- nil
	}()
	return <-errc
}

func capPtraceNote() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				return ""
			}
			if caps&(1<<19) != 0 { // CAP_SYS_PTRACE
				return ", CAP_SYS_PTRACE present"
			}
			return ", no CAP_SYS_PTRACE"
		}
	}
	return ""
}

func yamaNote() string {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	if err != nil {
		return ""
	}
	return ", kernel.yama.ptrace_scope=" + strings.TrimSpace(string(b))
}

// Missing is the one way a test says a prerequisite (a tool, a package, a
// permission) is absent: it skips the test locally and fails it when
// CI=true, where scripts/install-deps.sh installs everything and the
// tests run as root.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if inCI() {
		t.Fatalf("CI=true: "+format, args...)
	}
	t.Skipf(format, args...)
}
