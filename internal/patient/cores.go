package patient

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Patients that may dump core, and the kernel's core of one.

// StartDumpable is Start for a patient the kernel is to dump (see
// KernelCore): it runs in dir, an existing directory where the kernel
// writes the core, with a core size limit as high as the hard limit
// allows. It skips the test (fails it when CI=true) unless
// kernel.core_pattern is a plain file name, the only kind of kernel core
// a test can find, and the hard limit allows cores.
func StartDumpable(t testing.TB, dir string, argv ...string) *Proc {
	t.Helper()
	if !filepath.IsAbs(dir) {
		t.Fatalf("patient.StartDumpable: %q is not an absolute directory", dir)
	}
	b, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		Missing(t, "cannot tell where the kernel writes cores: %v", err)
	}
	pattern := strings.TrimSpace(string(b))
	if pattern == "" || strings.ContainsAny(pattern, "|%/") {
		Missing(t, "kernel.core_pattern is %q, not a plain file name: the kernel does not write the core into the process's directory", pattern)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &lim); err != nil {
		t.Fatalf("patient: getrlimit RLIMIT_CORE: %v", err)
	}
	if lim.Max == 0 {
		Missing(t, "core dumps are off: the hard RLIMIT_CORE is 0 (ulimit -Hc)")
	}
	usesPid, _ := os.ReadFile("/proc/sys/kernel/core_uses_pid")
	p := start(t, dir, argv)
	p.core = filepath.Join(dir, pattern)
	if strings.TrimSpace(string(usesPid)) == "1" {
		p.core += "." + strconv.Itoa(p.Pid)
	}
	// The limit matters only when the patient dies: setting it now, while
	// it waits, is early enough.
	lim.Cur = lim.Max
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(p.Pid), syscall.RLIMIT_CORE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		t.Fatalf("patient %d: prlimit RLIMIT_CORE: %v", p.Pid, e)
	}
	return p
}

// KernelCore has the kernel dump a patient that StartDumpable started: it
// sends SIGABRT, waits up to 60 s for the patient to die by itself (a
// SIGKILL would cut the dump short; the kernel has written the core when
// the patient's stdout closes), reaps it and returns the core's path. The
// test fails when the patient wrote no core.
func (p *Proc) KernelCore(t testing.TB) string {
	t.Helper()
	if p.core == "" {
		t.Fatalf("patient %d: KernelCore of a patient not started by StartDumpable", p.Pid)
	}
	if err := os.Remove(p.core); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("patient %d: a stale core is in the way: %v", p.Pid, err)
	}
	if err := p.Signal(syscall.SIGABRT); err != nil {
		t.Fatalf("patient %d: %v", p.Pid, err)
	}
	end := time.Now().Add(dumpTimeout)
	for {
		_, err := p.NextLine(max(time.Until(end), time.Millisecond))
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("patient %d: alive %v after SIGABRT: %v", p.Pid, dumpTimeout, err)
		}
	}
	p.Kill(t)
	select {
	case <-p.release: // reaped: ProcessState is set
	default:
		t.Fatalf("patient %d: not reaped after SIGABRT (state %s)", p.Pid, State(p.Pid))
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.CoreDump() {
		t.Fatalf("patient %d: %v, no core dumped\nstderr:\n%s", p.Pid, p.cmd.ProcessState, p.Stderr())
	}
	if _, err := os.Stat(p.core); err != nil {
		t.Fatalf("patient %d: the kernel says it dumped a core, but: %v", p.Pid, err)
	}
	return p.core
}
