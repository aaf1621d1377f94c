package patient

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// gdb on a patient or its core: the reference stacks tests compare with.

// GDBBacktrace runs
//
//	gdb -batch -nx -ex 'set pagination off' -ex 'thread apply all bt' -p PID
//
// (debuginfod off, so gdb never waits on the network) with a 60 s timeout
// and returns what it printed, stdout and stderr interleaved as gdb wrote
// them. It skips the test when gdb is missing (fails in CI) and fails it
// when gdb fails or times out.
func GDBBacktrace(t testing.TB, pid int) string {
	t.Helper()
	return GDB(t, pid, "thread apply all bt")
}

// GDB is GDBBacktrace with other commands ("thread apply all bt full", …).
func GDB(t testing.TB, pid int, commands ...string) string {
	t.Helper()
	gdb := RequireTool(t, "gdb")
	args := append(gdbArgs(commands), "-p", strconv.Itoa(pid))
	return runGDB(t, fmt.Sprintf("gdb -p %d", pid), gdb, args...)
}

// GDBCore is GDB on a core file instead of a live process (gdb … exe
// core), with the same timeout; it needs no ptrace.
func GDBCore(t testing.TB, exe, core string, commands ...string) string {
	t.Helper()
	gdb := RequireTool(t, "gdb")
	args := append(gdbArgs(commands), exe, core)
	return runGDB(t, "gdb "+core, gdb, args...)
}

// Gcore has gdb's gcore write a core of the running process pid into dir
// and returns its path (dir/core.PID); the process runs on. It skips the
// test when gcore is missing or ptrace is not permitted (fails it when
// CI=true) and fails it when gcore fails or takes over 60 s.
func Gcore(t testing.TB, pid int, dir string) string {
	t.Helper()
	gcore := RequireTool(t, "gcore")
	RequirePtrace(t)
	prefix := filepath.Join(dir, "core")
	runGDB(t, fmt.Sprintf("gcore %d", pid), gcore, "-o", prefix, strconv.Itoa(pid))
	return fmt.Sprintf("%s.%d", prefix, pid)
}

func gdbArgs(commands []string) []string {
	args := []string{"-batch", "-nx", "-iex", "set debuginfod enabled off", "-ex", "set pagination off"}
	for _, c := range commands {
		args = append(args, "-ex", c)
	}
	return args
}

// runGDB runs gdb or one of its scripts (gcore) with a 60 s timeout and
// debuginfod off, and returns what it printed, stdout and stderr
// interleaved. It fails the test, naming the run as what, when the tool
// fails or times out.
func runGDB(t testing.TB, what, tool string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), gdbTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = append(os.Environ(), "DEBUGINFOD_URLS=")
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("%s: timed out after %v\n%s", what, gdbTimeout, out)
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, out)
	}
	return string(out)
}
