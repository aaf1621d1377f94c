package patient

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// The patients of the signature catalogue (heuristics/live_test.go
// diagnoses them): each builds, says "ready" with its threads where they
// hang, and — forked children included — is gone once killed.
func TestHangPatients(t *testing.T) {
	RequireTool(t, "gcc")
	RequireTool(t, "g++")
	accel := Link(BuildLib(t, "fakeaccel.c", O2g...), "fakeaccel")
	withAccel := append(append([]string{}, O2g...), accel...)
	tests := []struct {
		name    string
		argv    []string
		threads int
		busy    bool // some threads run
		fork    bool // prints child=<pid>: a forked child with one thread, asleep
	}{
		{"devicepool_fork", []string{Build(t, "devicepool_fork.cpp", withAccel...)}, 3, false, true},
		{"openblas_relock", []string{Build(t, "openblas_relock.c", O2g...)}, 4, false, true},
		{"fence_spin", []string{Build(t, "fence_spin.c", O2g...)}, 3, true, false},
		{"cuda_fork", []string{Build(t, "cuda_fork.c", withAccel...)}, 2, false, true},
		{"abba", []string{Build(t, "abba.c", O2g...)}, 3, false, false},
		{"cycle3", []string{Build(t, "cycle3.c", O2g...)}, 4, false, false},
		{"sigrelock", []string{Build(t, "sigrelock.c", O2g...)}, 2, false, false},
		{"orphan", []string{Build(t, "orphan.c", O2g...)}, 1, false, false},
		{"pyfork_lock.py", []string{Python, Build(t, "pyfork_lock.py")}, 2, false, true},
		{"busy", []string{Build(t, "busy.c", O2g...)}, 3, true, false},
		{"socket_wait", []string{Build(t, "socket_wait.c", O2g...)}, 2, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.argv[0] == Python {
				RequireTool(t, Python)
			}
			p := Start(t, tt.argv...)
			// orphan's helper thread exits after "ready": let it go.
			var tasks map[int]string
			for end := time.Now().Add(2 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				var err error
				if tasks, err = p.Tasks(); err != nil {
					t.Fatal(err)
				}
				if len(tasks) == tt.threads || time.Now().After(end) {
					break
				}
			}
			if len(tasks) != tt.threads {
				t.Errorf("%d threads, want %d", len(tasks), tt.threads)
			}
			for tid, st := range tasks {
				if st != "S" && (!tt.busy || st != "R") {
					t.Errorf("thread %d in state %s", tid, st)
				}
			}
			child := 0
			if tt.fork {
				child = p.Int(t, "child")
				ct, err := Tasks(child)
				if err != nil {
					t.Fatalf("child %d: %v", child, err)
				}
				if len(ct) != 1 || ct[child] != "S" {
					t.Errorf("child %d: threads %v, want itself alone, asleep", child, ct)
				}
				if pgid, err := syscall.Getpgid(child); err != nil || pgid != p.Pid {
					t.Errorf("child %d: process group %d (%v), want the patient's, %d", child, pgid, err, p.Pid)
				}
			}
			p.Kill(t)
			if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(p.Pid))); err == nil {
				t.Errorf("pid %d still in /proc after Kill (state %s)", p.Pid, State(p.Pid))
			}
			if child != 0 {
				// Reparented and reaped by init, or a zombie on its way.
				for end := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					st := State(child)
					if st == "" || st == "Z" || st == "X" {
						break
					}
					if time.Now().After(end) {
						t.Errorf("child %d alive (state %s) after Kill", child, st)
						_ = syscall.Kill(child, syscall.SIGKILL)
						break
					}
				}
			}
		})
	}
}

// BuildLib gives lib<name>.so in a directory of its own, reused by a
// second build; Link names it for the linker and the loader.
func TestBuildLib(t *testing.T) {
	RequireTool(t, "gcc")
	dir := BuildLib(t, "fakeaccel.c", O2g...)
	so := filepath.Join(dir, "libfakeaccel.so")
	fa, err := os.Stat(so)
	if err != nil {
		t.Fatal(err)
	}
	if again := BuildLib(t, "fakeaccel.c", O2g...); again != dir {
		t.Errorf("second build in %s, first in %s", again, dir)
	} else if fb, _ := os.Stat(so); !fa.ModTime().Equal(fb.ModTime()) {
		t.Errorf("second build rebuilt %s", so)
	}
	if other := BuildLib(t, "fakeaccel.c", O0g...); other == dir {
		t.Errorf("other flags, same directory %s", dir)
	}
	want := []string{"-L" + dir, "-Wl,-rpath," + dir, "-lfakeaccel"}
	if got := Link(dir, "fakeaccel"); len(got) != 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("Link = %q, want %q", got, want)
	}
}

// TestBuildGo: a Go patient builds once and is then taken from the cache.
func TestBuildGo(t *testing.T) {
	first := BuildGo(t, "abba")
	fi, err := os.Stat(first)
	if err != nil || fi.Mode()&0o111 == 0 {
		t.Fatalf("built %s: %v %v", first, fi, err)
	}
	if again := BuildGo(t, "abba"); again != first {
		t.Fatalf("second build %s, want the cached %s", again, first)
	}
}
