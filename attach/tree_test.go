package attach

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// startTree starts sh -c script in its own process group. When the
// test ends, the tree is killed (processes that left the group too,
// leaves first) and the shell reaped.
func startTree(t *testing.T, script string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	patient.StartKept(t, cmd)
	t.Cleanup(func() {
		tree := Descendants(cmd.Process.Pid)
		for i := len(tree) - 1; i > 0; i-- {
			syscall.Kill(tree[i], syscall.SIGKILL)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

// waitTree polls Descendants(pid) until it has n processes that have
// exec'd (their name is no longer the shell's, or there are n of them
// and the last ones are named want).
func waitTree(t *testing.T, pid, n int, want string) []int {
	t.Helper()
	end := time.Now().Add(10 * time.Second)
	for {
		got := Descendants(pid)
		if len(got) == n && named(got[len(got)-1], want) {
			return got
		}
		if time.Now().After(end) {
			t.Fatalf("Descendants(%d) = %v, want %d processes ending in %s", pid, got, n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func named(pid int, name string) bool {
	st, err := readStat(pid, pid)
	return err == nil && st.Name == name
}

func TestDescendantsShellTree(t *testing.T) {
	cmd := startTree(t, "sleep 100 & sleep 100 & wait")
	sh := cmd.Process.Pid
	got := waitTree(t, sh, 3, "sleep")
	// waitTree waits for the last child's exec; the first may still be
	// the shell's fork for a moment.
	for end := time.Now().Add(10 * time.Second); !named(got[1], "sleep") && time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
	}
	if got[0] != sh {
		t.Fatalf("Descendants(%d) = %v: the process itself first", sh, got)
	}
	for _, pid := range got[1:] {
		info, err := Stat(pid)
		if err != nil || info.PPid != sh || !named(pid, "sleep") || info.PGid != sh || !info.Alive() {
			t.Errorf("pid %d: %+v, %v: want a live sleep, child of %d in its group", pid, info, err, sh)
		}
	}
	// The fallback by parent links sees the same tree.
	links := parentLinks()
	if scan := descendants(sh, func(p int) []int { return links[p] }); !slices.Equal(scan, got) {
		t.Errorf("by /proc scan: %v, by children files: %v", scan, got)
	}
}

// Breadth-first: the children of the root before the grandchildren;
// a grandchild that left the process group (setsid) is still found.
func TestDescendantsBreadthFirst(t *testing.T) {
	cmd := startTree(t, `sh -c 'setsid sleep 101 & wait' & sleep 100 & wait`)
	sh := cmd.Process.Pid
	got := waitTree(t, sh, 4, "sleep")
	if !named(got[3], "sleep") {
		t.Fatalf("tree %v: the last is not the grandchild sleep", got)
	}
	inner, err := Stat(got[3])
	if err != nil {
		t.Fatal(err)
	}
	if inner.PPid == sh || !slices.Contains(got[1:3], inner.PPid) {
		t.Errorf("tree %v: pid %d (parent %d) should be the grandchild", got, got[3], inner.PPid)
	}
	if inner.PGid == sh {
		t.Errorf("pid %d: still in group %d after setsid", got[3], sh)
	}
	links := parentLinks()
	if scan := descendants(sh, func(p int) []int { return links[p] }); !slices.Equal(scan, got) {
		t.Errorf("by /proc scan: %v, by children files: %v", scan, got)
	}
}

// A patient that forks: the parent waits on its hung child.
func TestDescendantsForkingPatient(t *testing.T) {
	p := patient.Start(t, patient.Build(t, "openblas_relock.c", patient.O2g...))
	child := p.Int(t, "child")
	if got := Descendants(p.Pid); !slices.Equal(got, []int{p.Pid, child}) {
		t.Errorf("Descendants(%d) = %v, want [%d %d]", p.Pid, got, p.Pid, child)
	}
	if got := Descendants(child); !slices.Equal(got, []int{child}) {
		t.Errorf("Descendants(%d) = %v, want the child alone", child, got)
	}
}

// A child forked by a thread other than the main one is listed under
// that thread's children file, and found.
func TestDescendantsChildOfOtherThread(t *testing.T) {
	type res struct {
		cmd *exec.Cmd
		tid int
		err error
	}
	done := make(chan res)
	release := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		cmd := exec.Command("sleep", "100")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		err := cmd.Start()
		done <- res{cmd, syscall.Gettid(), err}
		<-release // Pdeathsig follows this thread: keep it
	}()
	r := <-done
	defer close(release)
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer func() { r.cmd.Process.Kill(); r.cmd.Wait() }()
	if r.tid == os.Getpid() {
		t.Skip("the child was forked by the main thread")
	}
	if got := Descendants(os.Getpid()); !slices.Contains(got, r.cmd.Process.Pid) {
		t.Errorf("Descendants(self) = %v, want it to hold %d (forked by thread %d)", got, r.cmd.Process.Pid, r.tid)
	}
}

// A process that is gone has no tree; a zombie is listed.
func TestDescendantsGoneAndZombie(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if got := Descendants(cmd.Process.Pid); got != nil {
		t.Errorf("Descendants of reaped pid %d = %v, want nil", cmd.Process.Pid, got)
	}
	// sh execs sleep, which gets a child that exits unreaped: sleep
	// never waits.
	tree := startTree(t, "true & exec sleep 100")
	pid := tree.Process.Pid
	end := time.Now().Add(10 * time.Second)
	for {
		got := Descendants(pid)
		if len(got) == 2 && named(pid, "sleep") {
			if info, err := Stat(got[1]); err == nil && !info.Alive() {
				if err := Attachable(got[1]); err == nil {
					t.Errorf("Attachable(zombie %d) = nil", got[1])
				}
				break
			}
		}
		if time.Now().After(end) {
			t.Fatalf("Descendants(%d) = %v, want sleep and its zombie child", pid, got)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := Attachable(pid); err != nil {
		t.Errorf("Attachable(%d): %v", pid, err)
	}
}
