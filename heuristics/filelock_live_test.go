package heuristics_test

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
)

// Two processes that take two flock(2) locks in opposite orders
// (testdata/patients/flock_abba.c). flock never fails with EDEADLK, so
// they wait for ever; the kernel's /proc/locks names who holds what. The
// verdict is the ring between the two, each blocked in flock for a lock
// the other holds.
func TestLiveFlockABBA(t *testing.T) {
	bin := patient.Build(t, "flock_abba.c", patient.O2g...)
	l := startLive(t, []string{bin, t.TempDir()}, func(p *patient.Proc) []int {
		p.KillChildAtEnd(t, p.Int(t, "first"))
		p.KillChildAtEnd(t, p.Int(t, "second"))
		return attach.Descendants(p.Pid)
	})
	first, second := l.p.Int(t, "first"), l.p.Int(t, "second")

	// The evidence: each child's flock wait names the other as holder.
	for _, c := range [][2]int{{first, second}, {second, first}} {
		th := l.thread(t, c[0], c[0])
		wantFrames(t, th, "take", "run", "main")
		if w := th.Wait; w == nil || w.Syscall != "flock" || !strings.HasSuffix(w.FdTarget, ".lock") || !slices.Equal(w.PeerPids, []int{c[1]}) {
			t.Errorf("evidence: pid %d: wait %+v, want flock on a .lock file held by %d", c[0], w, c[1])
		}
	}
	if d := l.top(t, "waiting-on-process"); d != nil {
		wantPids(t, d, first, second)
		wantSummary(t, d, "wait on each other", "flock", strconv.Itoa(first), strconv.Itoa(second))
		wantSays(t, d, "/proc/locks")
		if !strings.Contains(d.Fix, "one order") || !slices.Contains(d.Refs, "https://man7.org/linux/man-pages/man2/flock.2.html") {
			t.Errorf("diagnosis: fix %q, refs %v: want the lock order and flock(2)", d.Fix, d.Refs)
		}
	}
	for _, d := range l.diags {
		if d.Deadlock && d.ID != "waiting-on-process" {
			t.Errorf("diagnosis: %s claimed on a file-lock ring: %s", d.ID, d.Summary)
		}
	}
}
