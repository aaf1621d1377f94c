package core_test

import (
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/attach/unwind"
)

// runPatient builds testdata/two.c, runs it through sh (so the test can
// set a core limit), waits for "ready <marker address>" and returns the
// process, the marker address and the TIDs it had. The process is
// killed in cleanup.
func runPatient(t *testing.T, dir, shellPrefix string) (*exec.Cmd, uint64, []int) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("gcc not installed")
	}
	exe := filepath.Join(dir, "two")
	if out, err := exec.Command("gcc", "-O2", "-pthread", "-o", exe, "testdata/two.c").CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	cmd := exec.Command("sh", "-c", shellPrefix+"exec "+exe)
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) })

	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "ready ") {
				line <- sc.Text()
				return
			}
		}
		close(line)
	}()
	var ready string
	select {
	case ready = <-line:
	case <-time.After(20 * time.Second):
	}
	if ready == "" {
		t.Fatal("patient did not say ready")
	}
	marker, err := strconv.ParseUint(strings.TrimPrefix(ready, "ready 0x"), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	var tids []int
	for _, e := range ents {
		tid, _ := strconv.Atoi(e.Name())
		tids = append(tids, tid)
	}
	return cmd, marker, tids
}

// checkCore checks what any core of the patient must show.
func checkCore(t *testing.T, path string, pid int, marker uint64, tids []int) *core.File {
	t.Helper()
	f, err := core.Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { f.Close() })
	if f.PID != pid || f.Name != "two" {
		t.Errorf("process %d %q, want %d two", f.PID, f.Name, pid)
	}
	var got []int
	for _, th := range f.Threads {
		got = append(got, th.TID)
		sp := th.Regs.Val[unwind.RSP]
		p := make([]byte, 8)
		if _, err := f.ReadAt(p, sp); err != nil {
			t.Errorf("thread %d: stack at %#x unreadable: %v", th.TID, sp, err)
		}
		if th.FSBase == 0 {
			t.Errorf("thread %d: no fs_base", th.TID)
		}
	}
	slices.Sort(got)
	slices.Sort(tids)
	if !slices.Equal(got, tids) {
		t.Errorf("threads %v, want %v", got, tids)
	}
	p := make([]byte, 19)
	if _, err := f.ReadAt(p, marker); err != nil || string(p) != "hangdoc-core-marker" {
		t.Errorf("marker at %#x: %q %v", marker, p, err)
	}
	exe := filepath.Join(filepath.Dir(path), "two")
	if !slices.ContainsFunc(f.Mappings, func(m core.Mapping) bool { return m.Path == exe }) {
		t.Errorf("no mapping of %s in %+v", exe, f.Mappings)
	}
	if _, ok := f.AuxVal(core.AtSysinfoEhdr); !ok {
		t.Errorf("no AT_SYSINFO_EHDR in auxv")
	}
	return f
}

func TestGcore(t *testing.T) {
	if _, err := exec.LookPath("gcore"); err != nil {
		t.Skip("gcore not installed")
	}
	dir := t.TempDir()
	cmd, marker, tids := runPatient(t, dir, "")
	pid := cmd.Process.Pid
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prefix := filepath.Join(dir, "core")
	if out, err := exec.CommandContext(ctx, "gcore", "-o", prefix, strconv.Itoa(pid)).CombinedOutput(); err != nil {
		t.Fatalf("gcore: %v\n%s", err, out)
	}
	checkCore(t, fmt.Sprintf("%s.%d", prefix, pid), pid, marker, tids)
}

// TestKernelCore has the kernel dump the patient (SIGABRT), when the
// machine's core_pattern writes plain files. Kernel cores leave out
// file-backed code: FileBacked must read it from the mapped files.
func TestKernelCore(t *testing.T) {
	pattern, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil || strings.ContainsAny(string(pattern), "|%/") {
		t.Skipf("core_pattern %q: not a plain file name", pattern)
	}
	usesPID, _ := os.ReadFile("/proc/sys/kernel/core_uses_pid")
	dir := t.TempDir()
	cmd, marker, tids := runPatient(t, dir, "ulimit -c unlimited && ")
	pid := cmd.Process.Pid
	cmd.Process.Signal(syscall.SIGABRT)
	cmd.Wait()
	path := filepath.Join(dir, strings.TrimSpace(string(pattern)))
	if strings.TrimSpace(string(usesPID)) == "1" {
		path += "." + strconv.Itoa(pid)
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("the kernel wrote no core: %v", err)
	}
	f := checkCore(t, path, pid, marker, tids)

	// The first bytes of the executable's code are not in the core but
	// are in the file.
	exe := filepath.Join(dir, "two")
	ef, err := elf.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	text := ef.Section(".text")
	want, _ := text.Data()
	var base uint64
	for _, m := range f.Mappings {
		if m.Path == exe && m.Offset == 0 {
			base = m.Start // PIE, first PT_LOAD at 0
			break
		}
	}
	addr := base + text.Addr
	for _, m := range f.Mappings {
		if m.Path == exe && addr >= m.Start && addr < m.End && m.Perms != "r-xp" {
			t.Errorf("code mapping %+v: perms %q, want r-xp", m, m.Perms)
		}
	}
	p := make([]byte, 16)
	var ue *unwind.UnreadableError
	if _, err := f.ReadAt(p, addr); !errors.As(err, &ue) {
		t.Errorf("kernel core holds the code at %#x (err %v)?", addr, err)
	}
	mem := f.WithFiles("")
	defer mem.Close()
	if n, err := mem.ReadAt(p, addr); err != nil || !bytes.Equal(p[:n], want[:16]) {
		t.Errorf("code at %#x from the file: % x %v, want % x", addr, p[:n], err, want[:16])
	}
}
