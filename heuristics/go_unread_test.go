package heuristics

import (
	"strings"
	"testing"
)

// A Go program read as OS threads (no DWARF: go test's -s -w) shows its
// scheduler idle in epoll_wait and futex whatever its goroutines do: the
// headline must not say "not a deadlock", and the fix says how to read
// the goroutines.
func TestUnreadGoroutinesNotCleared(t *testing.T) {
	p := nbProc(4711,
		nbThread(4711, "app.test", nbTimes(3, nbOnFd("epoll_wait", 4, "anon_inode:[eventpoll]", nbFrames("runtime/internal/syscall.Syscall6", "runtime.netpoll", "runtime.findRunnable", "runtime.schedule", "runtime.park_m", "runtime.mcall")))...),
		nbThread(4712, "app.test", nbTimes(3, nbBlocked("futex", nbFrames("runtime.futex", "runtime.futexsleep", "runtime.notesleep", "runtime.stopm", "runtime.findRunnable", "runtime.schedule")))...),
	)
	p.Runtime = "go1.26.8"
	ds := Diagnose(nbSnap(true, p), Options{}).Diagnoses
	if len(ds) == 0 {
		t.Fatal("no diagnosis")
	}
	for _, d := range ds {
		t.Logf("[%s %s] %s", d.ID, d.Confidence, d.Summary)
		if strings.Contains(strings.ToLower(d.Summary+d.Title), "not a deadlock") {
			t.Errorf("%s: says not a deadlock of a Go program whose goroutines were not read: %s", d.ID, d.Summary)
		}
		if d.Confidence != Low {
			t.Errorf("%s: confidence %s, want low", d.ID, d.Confidence)
		}
		if !d.Deadlock && (!strings.Contains(d.Summary, "not ruled out") || !strings.Contains(d.Fix, "-ldflags='-s=false -w=false'")) {
			t.Errorf("%s: summary %q fix %q: want 'not ruled out' and how to keep DWARF", d.ID, d.Summary, d.Fix)
		}
	}
}
