package unwind_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
	"github.com/hangdoc/hangdoc/stacks"
)

// Patients are C programs under testdata that block in a known place and
// say "ready" when they do. internal/patient builds and runs them; each is
// dumped once per test binary, by gcore or by the kernel, and killed as
// soon as its core is written.

// workDir holds the cores for the whole test binary: a core outlives the
// test that made it.
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

// settleTimeout bounds the wait from "ready" (printed just before the
// blocking call) until every thread blocks.
const settleTimeout = 20 * time.Second

// patientCore is a patient's binary and a core of it.
type patientCore struct {
	exe, core string

	mu  sync.Mutex
	gdb map[int][]stacks.Frame // by TID; nil until gdb ran
}

var (
	patientsMu sync.Mutex
	patients   = map[string]*patientCore{}
)

// getPatient builds testdata/<prog>.c with flags, runs it and dumps its
// core with gcore.
func getPatient(t testing.TB, prog string, flags []string) *patientCore {
	return cachedPatient(t, prog, flags, false)
}

// getKernelPatient is getPatient with a core written by the kernel
// (SIGABRT): no file-backed code in it.
func getKernelPatient(t testing.TB, prog string, flags []string) *patientCore {
	return cachedPatient(t, prog, flags, true)
}

func cachedPatient(t testing.TB, prog string, flags []string, kernel bool) *patientCore {
	t.Helper()
	key := fmt.Sprint(prog, flags, kernel)
	patientsMu.Lock()
	defer patientsMu.Unlock()
	if p := patients[key]; p != nil {
		return p
	}
	p := &patientCore{exe: patient.BuildFile(t, filepath.Join("testdata", prog+".c"), flags...)}
	if kernel {
		// The kernel names every core alike: a directory for each.
		dir, err := os.MkdirTemp(workDir, prog+"-kernel-")
		if err != nil {
			t.Fatal(err)
		}
		proc := patient.StartDumpable(t, dir, p.exe)
		settle(t, proc)
		p.core = proc.KernelCore(t)
	} else {
		proc := patient.Start(t, p.exe)
		settle(t, proc)
		p.core = patient.Gcore(t, proc.Pid, workDir)
		proc.Kill(t) // the core is all we need
	}
	patients[key] = p
	return p
}

// settle waits until every thread of the patient blocks.
func settle(t testing.TB, p *patient.Proc) {
	t.Helper()
	if !p.Settle(settleTimeout) {
		tasks, _ := p.Tasks()
		t.Fatalf("patient %s (pid %d): threads not asleep after %v: %v", filepath.Base(p.Argv[0]), p.Pid, settleTimeout, tasks)
	}
}

// gdbStacks runs gdb on the patient's core (once) and returns its frames
// per thread.
func (p *patientCore) gdbStacks(t testing.TB) map[int][]stacks.Frame {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gdb != nil {
		return p.gdb
	}
	out := patient.GDBCore(t, p.exe, p.core,
		"set backtrace past-main on", "set backtrace limit unlimited", "thread apply all bt")
	snap, _, err := stacks.ParseGDB(strings.NewReader(out))
	if err != nil {
		t.Fatalf("parsing gdb's backtrace: %v\n%s", err, out)
	}
	byTID := map[int][]stacks.Frame{}
	for _, th := range snap.Processes[0].Threads {
		if _, dup := byTID[th.Tid]; dup || th.Tid <= 0 {
			t.Fatalf("gdb's backtrace: thread %d twice or without a TID\n%s", th.Tid, out)
		}
		byTID[th.Tid] = th.Stack
	}
	p.gdb = byTID
	return p.gdb
}
