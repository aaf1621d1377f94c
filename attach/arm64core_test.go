package attach_test

// arm64 cores made here: patients cross-built statically for arm64, run
// under qemu-user and killed with SIGABRT, which has qemu write an
// aarch64 core. Each core must give its amd64 twin's verdict (the same
// source built for x86-64, its gcore read the same way), and every
// thread's frames must equal gdb-multiarch's on the same core, frame by
// frame, except where gdb-multiarch (13.1) cannot go: it hangs on the
// handler that qemu's signal frame returns to, and lldb stops there, so
// from the handler on a thread's frames are checked against its x86-64
// twin's.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/attach"
	"github.com/hangdoc/hangdoc/attach/core"
	"github.com/hangdoc/hangdoc/heuristics"
	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

func TestARM64Cores(t *testing.T) {
	patient.RequireTool(t, patient.CrossCC)
	patient.RequireTool(t, patient.Qemu)
	for _, c := range []struct {
		src  string
		fork bool     // the stuck process is the child the patient prints as child=
		who  []string // the patient's lines naming the threads the verdict names
	}{
		{"abba.c", false, []string{"ab", "ba"}},
		{"openblas_relock.c", true, []string{"child"}},
		{"sigrelock.c", false, []string{"logger"}},
	} {
		t.Run(strings.TrimSuffix(c.src, ".c"), func(t *testing.T) {
			twin := amd64Core(t, c.src, c.fork)
			want := verdictOf(heuristics.Diagnose(twin, heuristics.Options{}).Diagnoses)

			bin := patient.BuildCC(t, patient.CrossCC, c.src, append([]string{"-static"}, patient.O2g...)...)
			dir := t.TempDir()
			p := patient.StartQemu(t, dir, bin)
			target := p.Pid
			if c.fork {
				target = p.Int(t, "child")
			}
			var tids []int
			for _, w := range c.who {
				tids = append(tids, p.Int(t, w))
			}
			path := p.QemuCore(t, dir, target)
			snap, err := attach.Core(path, attach.CoreOptions{Exe: bin})
			if err != nil {
				t.Fatalf("Core(%s): %v", path, err)
			}
			ds := heuristics.Diagnose(snap, heuristics.Options{}).Diagnoses
			got := verdictOf(ds)
			t.Logf("arm64: %s; amd64: %s", got, want)
			if got != want {
				t.Errorf("arm64 core's verdict %s, its amd64 twin's %s", got, want)
			}
			for _, tid := range tids {
				if len(ds) > 0 && !slices.Contains(ds[0].Tids, tid) {
					t.Errorf("verdict names threads %v, want %d among them", ds[0].Tids, tid)
				}
			}
			// One thread at a time, in gdb's order (the core's). gdb 13
			// loops for ever on the frame of a handler qemu's signal
			// frame returns to (reinit_frame_cache, again and again):
			// for a thread with a signal frame it is asked for the
			// frames below that handler only.
			var cmds []string
			for i, tid := range coreTids(t, path) {
				bt := "bt"
				if k := signalAt(snap.Processes[0], tid); k > 0 {
					bt = fmt.Sprintf("bt %d", k-1)
				}
				cmds = append(cmds, fmt.Sprintf("thread %d", i+1), bt)
			}
			out, whole := patient.GDBMultiarch(t, 10*time.Second, bin, path, cmds...)
			out = switchedThread.ReplaceAllString(out, "Thread $1 (LWP $2):")
			if !whole {
				t.Logf("gdb-multiarch did not finish:\n%s", out)
			}
			compareWithGDBCore(t, snap.Processes[0], twin.Processes[0], out, whole)
		})
	}
}

// coreTids lists a core's thread ids in the order of its notes, which
// is gdb's thread numbering.
func coreTids(t *testing.T, path string) []int {
	t.Helper()
	cf, err := core.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	var tids []int
	for _, th := range cf.Threads {
		tid := th.TID
		if tid == cf.PPID {
			tid = cf.PID // qemu's forked child (corefile.go)
		}
		tids = append(tids, tid)
	}
	return tids
}

// signalAt is the index of thread tid's signal frame, -1 without one.
func signalAt(proc *stacks.Process, tid int) int {
	for _, th := range proc.Threads {
		if th.Tid == tid {
			return slices.IndexFunc(th.Stack, func(f stacks.Frame) bool { return f.Signal })
		}
	}
	return -1
}

// switchedThread is what gdb prints for "thread N" (the switch and the
// thread's frame #0), which stands for the thread header of "thread
// apply all bt".
var switchedThread = regexp.MustCompile(`(?m)^\[Switching to thread (\d+) \(LWP (\d+)\)\]\n#0 .*$`)

// amd64Core is the snapshot of a gcore of the x86-64 build of src, of
// the process that hangs.
func amd64Core(t *testing.T, src string, fork bool) *stacks.Snapshot {
	t.Helper()
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, src, patient.O2g...))
	target := p.Pid
	if fork {
		target = p.Int(t, "child")
	}
	path := patient.Gcore(t, target, t.TempDir())
	snap, err := attach.Core(path, attach.CoreOptions{})
	if err != nil {
		t.Fatalf("Core(%s): %v", path, err)
	}
	return snap
}

func verdictOf(ds []heuristics.Diagnosis) string {
	if len(ds) == 0 {
		return "(none)"
	}
	return ds[0].ID + " (" + string(ds[0].Confidence) + ")"
}

// compareWithGDBCore checks that every thread's frames are gdb's, frame
// by frame, down to where gdb stops (main, with backtrace past-main off).
// A thread with a signal frame (gdb was asked for the frames below its
// handler), and the thread gdb hung on when it did not finish (whole is
// false), are compared as far as gdb printed them, and from the signal
// handler's frame on with the x86-64 twin's thread that has a signal
// frame.
func compareWithGDBCore(t *testing.T, proc, twin *stacks.Process, out string, whole bool) {
	t.Helper()
	gsnap, _, err := stacks.ParseGDB(strings.NewReader(out))
	if err != nil || len(gsnap.Processes) == 0 {
		t.Fatalf("parsing gdb's output: %v\n%s", err, out)
	}
	gdbByTid := map[int]*stacks.Thread{}
	gthreads := gsnap.Processes[0].Threads
	for _, th := range gthreads {
		if th.Tid == proc.PPid {
			// qemu-user gives a forked child's thread its parent's id
			// (read as the process's own: corefile.go)
			th.Tid = proc.Pid
		}
		gdbByTid[th.Tid] = th
	}
	if whole && len(gdbByTid) != len(proc.Threads) {
		t.Errorf("%d threads, gdb-multiarch %d", len(proc.Threads), len(gdbByTid))
	}
	for _, th := range proc.Threads {
		g := gdbByTid[th.Tid]
		if g == nil {
			if whole {
				t.Errorf("thread %d: not in gdb-multiarch's backtrace:\n%s", th.Tid, out)
			}
			continue
		}
		ours, theirs := th.Stack, g.Stack
		n := len(theirs)
		cut := signalAt(proc, th.Tid) > 0 || !whole && g == gthreads[len(gthreads)-1] && (n == 0 || theirs[n-1].Func != "main")
		if cut {
			t.Logf("thread %d: %d frames from gdb-multiarch; from its signal handler's on they are compared with the x86-64 twin's", th.Tid, n)
			checkAgainstTwin(t, th, twin)
		}
		if n > 0 && (theirs[n-1].Func == "main" || cut) && len(ours) > n {
			ours = ours[:n]
		}
		same := len(ours) == len(theirs)
		for i := 0; same && i < len(ours); i++ {
			same = sameFrame(ours[i], theirs[i])
		}
		if !same {
			t.Errorf("thread %d: frames differ from gdb-multiarch's\nours:\n%sgdb:\n%s", th.Tid, stackString(ours), stackString(theirs))
		}
	}
}

// checkAgainstTwin compares a thread's frames from its signal handler's
// on, by function, with those of the x86-64 twin's thread that has one, down
// to the thread's start (clone3 on x86-64, thread_start on arm64).
func checkAgainstTwin(t *testing.T, th *stacks.Thread, twin *stacks.Process) {
	t.Helper()
	from := func(st []stacks.Frame) []string {
		for i, f := range st {
			if f.Signal {
				var keys []string
				for _, f := range st[max(i-1, 0):] { // the handler, the signal frame, what it interrupted
					if k := frameKey(f); !f.Inlined && k != "clone3" && k != "thread_start" {
						keys = append(keys, k)
					}
				}
				return keys
			}
		}
		return nil
	}
	ours := from(th.Stack)
	for _, tt := range twin.Threads {
		if theirs := from(tt.Stack); theirs != nil {
			if !slices.Equal(ours, theirs) {
				t.Errorf("thread %d: frames from the signal handler on %q, the x86-64 twin's %q\n%s", th.Tid, ours, theirs, stackString(th.Stack))
			}
			return
		}
	}
	t.Errorf("thread %d: the x86-64 twin has no thread with a signal frame", th.Tid)
}
