package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// TestReadmeClusterPgrep: the README's srun line finds the training
// processes with pgrep inside `sh -c`; its pattern must not match that
// shell (`pgrep -f train.py` does: the shell's command line holds it).
func TestReadmeClusterPgrep(t *testing.T) {
	patient.RequireTool(t, "pgrep")
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`srun [^\n]*sh -c '(hangdoc attach [^']*)'`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("no srun … sh -c 'hangdoc attach …' line in the README")
	}
	// Its pattern (the -P of slurmstepd's children needs a Slurm job:
	// TestSlurmReadmeCluster runs the whole line).
	pat := regexp.MustCompile(`\$\(pgrep [^']*-f ("[^"]*")\)`).FindStringSubmatch(m[1])
	if pat == nil {
		t.Fatalf("the srun line %q finds no pids with pgrep -f", m[1])
	}
	sub := []string{"", `pgrep -d " " -f ` + pat[1]}
	// A stand-in for the training process: its command line names train.py.
	script := filepath.Join(t.TempDir(), "train.py")
	if err := os.WriteFile(script, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	train := exec.Command("tail", "-f", script)
	train.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := train.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { train.Process.Kill(); train.Wait() })
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(train.Process.Pid) + "/cmdline"); strings.Contains(string(b), "train.py") {
			break
		}
	}
	pids := func(pgrep string) []string {
		out, _ := exec.Command("sh", "-c", "echo $("+pgrep+")").Output()
		return strings.Fields(string(out))
	}
	want := []string{strconv.Itoa(train.Process.Pid)}
	if got := pids(sub[1]); !slices.Equal(got, want) {
		t.Errorf("the README's %s inside sh -c finds %v, want only the training process %v", sub[1], got, want)
	}
	if got := pids("pgrep -f train.py"); len(got) < 2 {
		t.Logf("pgrep -f train.py found %v: the shell was not matched (the test's premise)", got)
	}
}
