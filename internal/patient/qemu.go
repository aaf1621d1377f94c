package patient

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Qemu is the user-mode emulator arm64 patients run under.
const Qemu = "qemu-aarch64-static"

// CrossCC is the compiler arm64 patients are cross-built with (-static:
// qemu-user then needs no arm64 libraries).
const CrossCC = "aarch64-linux-gnu-gcc"

// StartQemu runs a patient cross-built for arm64 (BuildCC with CrossCC
// and -static) under qemu-user, in dir, with core dumps on: qemu writes
// the guest's core itself, as an arm64 core named
// qemu_<name>_<date>-<time>_<pid>.core in its working directory, when
// the guest dies of a signal (QemuCore).
func StartQemu(t testing.TB, dir string, argv ...string) *Proc {
	t.Helper()
	qemu := RequireTool(t, Qemu)
	if !filepath.IsAbs(dir) {
		t.Fatalf("patient.StartQemu: %q is not an absolute directory", dir)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_CORE, &lim); err != nil || lim.Max == 0 {
		Missing(t, "core dumps are off: the hard RLIMIT_CORE is 0 (ulimit -Hc)")
	}
	// qemu dumps the guest only when its own soft limit allows a core;
	// the shell raises it before qemu starts, so that a child the patient
	// forks inherits it too.
	sh := []string{"/bin/sh", "-c", `ulimit -c "$(ulimit -Hc)" && exec "$0" "$@"`, qemu}
	// qemu then re-raises the signal on itself, and the kernel would dump
	// qemu (an x86-64 core of 100 MB and more) into dir as well, when
	// core_pattern is a plain name: a directory of that name is in its
	// way.
	if b, err := os.ReadFile("/proc/sys/kernel/core_pattern"); err == nil {
		if pat := strings.TrimSpace(string(b)); pat != "" && !strings.ContainsAny(pat, "|%/") {
			_ = os.Mkdir(filepath.Join(dir, pat), 0o755)
		}
	}
	return start(t, dir, append(sh, argv...))
}

// QemuCore sends SIGABRT to pid (the patient StartQemu started, or a
// process it forked) and returns the core qemu writes for it into the
// patient's directory, once pid has died. The test fails when no core
// appears within dumpTimeout.
func (p *Proc) QemuCore(t testing.TB, dir string, pid int) string {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGABRT); err != nil {
		t.Fatalf("patient %d: %v", pid, err)
	}
	pattern := filepath.Join(dir, fmt.Sprintf("qemu_*_%d.core", pid))
	end := time.Now().Add(dumpTimeout)
	for time.Now().Before(end) {
		// qemu writes the core, then kills itself: the core is whole
		// once the process is gone (or a zombie).
		if st := State(pid); st == "" || st == "Z" || st == "X" {
			if m, _ := filepath.Glob(pattern); len(m) == 1 {
				return m[0]
			}
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	m, _ := filepath.Glob(pattern)
	t.Fatalf("patient %d: no qemu core %s after SIGABRT (found %q)\nstderr:\n%s", pid, pattern, m, p.Stderr())
	return ""
}

// GDBMultiarch runs gdb-multiarch in batch mode on a core of another
// architecture, for at most timeout, and returns its output and whether
// it finished: gdb 13 loops for ever unwinding qemu-user's arm64 signal
// frame (reinit_frame_cache, again and again), and what it printed before
// is still worth comparing.
func GDBMultiarch(t testing.TB, timeout time.Duration, exe, core string, commands ...string) (string, bool) {
	t.Helper()
	gdb := RequireTool(t, "gdb-multiarch")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The host's libthread_db cannot read an arm64 process: it is kept
	// out, and gdb reads the threads from the core's notes.
	args := append(append([]string{"-iex", "set libthread-db-search-path /nonexistent"}, gdbArgs(commands)...), exe, core)
	cmd := exec.CommandContext(ctx, gdb, args...)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	// SIGTERM, not SIGKILL: gdb then writes out what it buffered.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), false
	}
	if err != nil {
		t.Fatalf("gdb-multiarch %s: %v\n%s", core, err, out)
	}
	return string(out), true
}
