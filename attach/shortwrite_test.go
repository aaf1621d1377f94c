package attach_test

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// A thread blocked in a pipe write that has already moved part of its
// buffer must not be stopped: the stop would wake it and the write would
// return short (gdb attach does it to this patient). At -O0 its frames
// need registers /proc does not give, so hangdoc reads what it can
// without a stop and says where and why the stack ends.
func TestAttachDoesNotCutAWriteShort(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "big_write.c", "-O0", "-g", "-pthread"))
	writer := p.Int(t, "writer")
	for i := 0; i < 5; i++ {
		snap, err := attach.Attach(context.Background(), []int{p.Pid}, attach.Options{Samples: 3, Interval: 20 * time.Millisecond})
		if err != nil {
			t.Fatalf("attach %d: %v", i, err)
		}
		checkReleased(t, p.Pid)
		th := findThread(snap, writer)
		if th == nil {
			t.Fatalf("attach %d: no thread %d", i, writer)
		}
		var names []string
		for _, f := range th.Stack {
			names = append(names, f.Func)
		}
		if !slices.Contains(names, "write_all_at_once") {
			t.Fatalf("attach %d: writer's stack %v, want write ← write_all_at_once ← …", i, names)
		}
		if !slices.ContainsFunc(th.Notes, func(n string) bool { return strings.Contains(n, "short") }) && !slices.Contains(names, "writer_main") {
			t.Errorf("attach %d: the stack ends at %v with no note saying why: %q", i, names, th.Notes)
		}
	}
	if line := p.Ask(t, syscall.SIGUSR1, "write=", 10*time.Second); line != "write=1048576 drained=1048576" {
		t.Fatalf("the writer's write returned short (%q): an attach cut it", line)
	}
}

func findThread(snap *stacks.Snapshot, tid int) *stacks.Thread {
	for _, pr := range snap.Processes {
		for _, th := range pr.Threads {
			if th.Tid == tid {
				return th
			}
		}
	}
	return nil
}
