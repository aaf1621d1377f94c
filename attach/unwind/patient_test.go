package unwind_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Patients are C programs under testdata that block in a known place and
// say "ready" when they do. Each is built, run and dumped with gcore once
// per test binary; the process is killed as soon as its core is written
// (and again in cleanup, whatever happens).

var workDir string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "unwind-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = d
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// Build flags: the two ends of what the unwinder meets.
const (
	optFlags = "-O2 -fomit-frame-pointer"
	dbgFlags = "-O0 -g"
)

type patient struct {
	exe, core string
	pid       int
	err       error
	gdbOnce   sync.Once
	gdb       map[int][]gdbFrame // by TID
	gdbErr    error
}

var (
	patientsMu sync.Mutex
	patients   = map[string]*patient{}
)

func needTools(t testing.TB) {
	t.Helper()
	for _, tool := range []string{"gcc", "gdb", "gcore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
}

// getPatient builds testdata/<prog>.c with flags, runs it and dumps its
// core with gcore.
func getPatient(t testing.TB, prog, flags string) *patient {
	return cachedPatient(t, prog, flags, false)
}

// getKernelPatient is getPatient with a core written by the kernel
// (SIGABRT): no file-backed code in it. It skips when core_pattern does
// not write plain files.
func getKernelPatient(t testing.TB, prog, flags string) *patient {
	pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil || strings.ContainsAny(string(pattern), "|%/") {
		t.Skipf("core_pattern %q: not a plain file name", pattern)
	}
	return cachedPatient(t, prog, flags, true)
}

func cachedPatient(t testing.TB, prog, flags string, kernel bool) *patient {
	t.Helper()
	needTools(t)
	key := fmt.Sprint(prog, "|", flags, "|", kernel)
	patientsMu.Lock()
	defer patientsMu.Unlock()
	p := patients[key]
	if p == nil {
		p = &patient{}
		p.err = p.start(t, prog, flags, kernel)
		patients[key] = p
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p
}

func (p *patient) start(t testing.TB, prog, flags string, kernel bool) error {
	name := fmt.Sprintf("%s-%s", prog, strings.NewReplacer(" ", "", "-", "").Replace(flags))
	dir := workDir
	if kernel {
		// The kernel writes "core" into the patient's directory.
		dir = filepath.Join(workDir, name+"-kernel")
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
	}
	p.exe = filepath.Join(dir, name)
	gcc := append(strings.Fields(flags), "-pthread", "-o", p.exe, filepath.Join("testdata", prog+".c"))
	if out, err := exec.Command("gcc", gcc...).CombinedOutput(); err != nil {
		return fmt.Errorf("gcc %s: %v\n%s", strings.Join(gcc, " "), err, out)
	}
	cmd := exec.Command(p.exe)
	if kernel {
		cmd = exec.Command("sh", "-c", "ulimit -c unlimited && exec "+p.exe)
		cmd.Dir = dir
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	p.pid = cmd.Process.Pid
	var once sync.Once
	kill := func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(kill)
	defer kill() // the core is all we need

	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "ready" {
				ready <- nil
				return
			}
		}
		ready <- fmt.Errorf("%s exited before saying ready", name)
	}()
	select {
	case err := <-ready:
		if err != nil {
			return err
		}
	case <-time.After(20 * time.Second):
		return fmt.Errorf("%s: no ready in 20s", name)
	}
	// "ready" comes just before the blocking call: wait until it blocks.
	if err := waitAsleep(p.pid, 20*time.Second); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	if kernel {
		cmd.Process.Signal(syscall.SIGABRT)
		cmd.Wait()
		p.core = filepath.Join(dir, "core")
		if b, _ := os.ReadFile("/proc/sys/kernel/core_uses_pid"); strings.TrimSpace(string(b)) == "1" {
			p.core += "." + strconv.Itoa(p.pid)
		}
		if _, err := os.Stat(p.core); err != nil {
			return fmt.Errorf("the kernel wrote no core: %v", err)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prefix := filepath.Join(workDir, name+".core")
	if out, err := exec.CommandContext(ctx, "gcore", "-o", prefix, strconv.Itoa(p.pid)).CombinedOutput(); err != nil {
		return fmt.Errorf("gcore: %v\n%s", err, out)
	}
	p.core = fmt.Sprintf("%s.%d", prefix, p.pid)
	return nil
}

// waitAsleep waits until every thread of pid sleeps (state S in
// /proc/PID/task/TID/stat) in two polls 10ms apart.
func waitAsleep(pid int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	calm := 0
	for time.Now().Before(deadline) {
		if allAsleep(pid) {
			if calm++; calm == 2 {
				return nil
			}
		} else {
			calm = 0
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("threads not asleep after %v", timeout)
}

func allAsleep(pid int) bool {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(ents) == 0 {
		return false
	}
	for _, e := range ents {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, e.Name()))
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) || b[i+2] != 'S' {
			return false
		}
	}
	return true
}

// gdbFrame is one line of gdb's backtrace: Addr is 0 when gdb printed no
// "0x… in" (frame 0 at a line start, inline frames, the signal frame).
type gdbFrame struct {
	Addr uint64
	Name string
	Line string
}

var (
	gdbThread = regexp.MustCompile(`^Thread \d+ \(.*LWP (\d+)\)`)
	gdbLine   = regexp.MustCompile(`^#\d+\s+(?:(0x[0-9a-f]+) in )?(<signal handler called>|\S+)`)
)

// gdbStacks runs gdb on the patient's core once and returns its frames
// per thread.
func (p *patient) gdbStacks(t testing.TB) map[int][]gdbFrame {
	t.Helper()
	p.gdbOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, "gdb", "-batch", "-nx",
			"-iex", "set debuginfod enabled off",
			"-ex", "set backtrace past-main on",
			"-ex", "set backtrace limit unlimited",
			"-ex", "thread apply all bt", p.exe, p.core).CombinedOutput()
		if err != nil {
			p.gdbErr = fmt.Errorf("gdb: %v\n%s", err, out)
			return
		}
		p.gdb = map[int][]gdbFrame{}
		tid := -1
		for _, line := range strings.Split(string(out), "\n") {
			if m := gdbThread.FindStringSubmatch(line); m != nil {
				tid, _ = strconv.Atoi(m[1])
				continue
			}
			m := gdbLine.FindStringSubmatch(line)
			if m == nil || tid < 0 {
				continue
			}
			f := gdbFrame{Name: m[2], Line: line}
			if m[1] != "" {
				f.Addr, _ = strconv.ParseUint(m[1][2:], 16, 64)
			}
			p.gdb[tid] = append(p.gdb[tid], f)
		}
	})
	if p.gdbErr != nil {
		t.Fatal(p.gdbErr)
	}
	return p.gdb
}
