package attach_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
)

func attachOne(pid int, opts attach.Options) error {
	_, err := attach.Attach(context.Background(), []int{pid}, opts)
	return err
}

func TestAttachRefusesWhatIsNotATarget(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	cases := []struct {
		name string
		pid  int
		is   error
		says string
	}{
		{"no such pid", pidMax + 1, attach.ErrNoProcess, "ps -p"},
		{"hangdoc itself", os.Getpid(), attach.ErrNotTarget, "hangdoc itself"},
		{"zero", 0, attach.ErrNotTarget, "not a process id"},
	}
	if k := kernelThread(); k > 0 {
		cases = append(cases, struct {
			name string
			pid  int
			is   error
			says string
		}{"kernel thread", k, attach.ErrNotTarget, "kernel thread"})
	}
	for _, c := range cases {
		err := attachOne(c.pid, attach.Options{Samples: 1})
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.says) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s (pid %d): got %v; want one line, %v, saying %q", c.name, c.pid, err, c.is, c.says)
		}
		if e := (*attach.Error)(nil); !errors.As(err, &e) || e.Pid != c.pid || e.Kind != c.is {
			t.Errorf("%s: error %#v: want an *attach.Error about pid %d of kind %v", c.name, err, c.pid, c.is)
		}
	}
}

// kernelThread finds a kernel thread visible here (none in some
// containers): PF_KTHREAD in the flags field of its stat.
func kernelThread() int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, err := patient.ReadStat(pid); err == nil && st.Flags&patient.PFKthread != 0 {
			return pid
		}
	}
	return 0
}

func TestAttachZombie(t *testing.T) {
	patient.RequirePtrace(t)
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	waitStates(t, cmd.Process.Pid, "Z")
	err := attachOne(cmd.Process.Pid, attach.Options{Samples: 1})
	if !errors.Is(err, attach.ErrNotTarget) || !strings.Contains(err.Error(), "zombie") {
		t.Fatalf("zombie: got %v", err)
	}
	if e := (*attach.Error)(nil); !errors.As(err, &e) || e.Pid != cmd.Process.Pid || e.Kind != attach.ErrNotTarget {
		t.Errorf("zombie: error %#v: want an *attach.Error about pid %d, ErrNotTarget", err, cmd.Process.Pid)
	}
}

// TestAttachMainThreadExited: a process whose main thread called
// pthread_exit shows its main thread as a zombie while others run; it is
// not a zombie process.
func TestAttachMainThreadExited(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "sleeper.c", patient.O2g...), "main-exits")
	for try := 0; ; try++ {
		tasks, _ := patient.Tasks(p.Pid)
		if tasks[p.Pid] == "Z" {
			break
		}
		if try == 200 {
			t.Fatalf("main thread never exited: %v", tasks)
		}
		time.Sleep(5 * time.Millisecond)
	}
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	var napper bool
	for _, th := range snap.Processes[0].Threads {
		napper = napper || (th.Name == "napper" && len(th.Stack) > 0)
	}
	if !napper {
		t.Fatalf("no stack for the napper thread: %+v", snap.Processes[0].Threads)
	}
}

func TestAttachExitMidSample(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "sleeper.c", patient.O2g...))
	// The kill comes after the second of ten samples, whatever the load.
	killAt := func(sample, _, _, _ int) {
		if sample == 2 {
			p.Signal(syscall.SIGKILL)
		}
	}
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 10, Interval: 100 * time.Millisecond, Progress: killAt})
	if err != nil {
		t.Fatalf("a process that exits mid-sample must still report what was read: %v", err)
	}
	proc := snap.Processes[0]
	if !proc.Exited || len(proc.Threads) != 2 || len(proc.Threads[0].Stack) == 0 || len(proc.Threads[1].Stack) == 0 {
		t.Fatalf("exited=%v threads=%d; want exited with the stacks read before", proc.Exited, len(proc.Threads))
	}
}

// TestAttachWithoutPermission runs hangdoc as an unprivileged user
// against a root process: one clear line that says how to get access.
func TestAttachWithoutPermission(t *testing.T) {
	patient.RequirePtrace(t)
	if os.Geteuid() != 0 {
		patient.Missing(t, "needs root to run hangdoc as another user")
	}
	bin := hangdocBinary(t)
	// The nobody user must be able to run the binary: copy it somewhere
	// world-readable.
	dir, err := os.MkdirTemp("", "hangdoc-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	exe := filepath.Join(dir, "hangdoc")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, data, 0o755); err != nil {
		t.Fatal(err)
	}
	p := patient.Start(t, patient.Build(t, "sleeper.c", patient.O2g...))
	cmd := exec.Command(exe, "attach", strconv.Itoa(p.Pid))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("want exit code 3, got %v: %s", err, out)
	}
	msg := strings.TrimSpace(string(out))
	if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "ptrace not permitted") || !strings.Contains(msg, "sudo") || !strings.Contains(msg, "SYS_PTRACE") {
		t.Fatalf("want one line saying ptrace is not permitted and how to fix it, got:\n%s", msg)
	}
}

// TestAttachDeletedBinary: a binary deleted since the process started is
// still symbolised, through /proc/PID/map_files.
func TestAttachDeletedBinary(t *testing.T) {
	patient.RequirePtrace(t)
	src := patient.Build(t, "mutex_o2.c", patient.O2...)
	dir := t.TempDir()
	bin := filepath.Join(dir, "mutex_o2")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	p := patient.Start(t, bin)
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 1})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, th := range snap.Processes[0].Threads {
		for _, f := range th.Stack {
			found = found || f.Func == "ant_bite"
		}
	}
	if !found {
		t.Fatalf("no ant_bite frame from the deleted binary; notes: %v", snap.Processes[0].Notes)
	}
}
