package attach

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hangdoc/hangdoc/internal/patient"
)

// TestStopTimeoutReleasesThread: a thread that cannot reach its stop (a
// vfork parent waits in the kernel until its child exits) is abandoned
// after the stop timeout, released, and runs on when its wait ends.
func TestStopTimeoutReleasesThread(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "vfork_stuck.c", patient.O2g...), "1500")
	tid := p.Int(t, "vforker")
	s := &sampler{opts: Options{StopTimeout: 50 * time.Millisecond}, tracer: newTracer()}
	defer func() { s.tracer.close() }()
	if s.tracer.tid == os.Getpid() {
		t.Fatal("the tracer runs on the main thread, which Go never ends: an abandoned tracee would stay stopped")
	}
	tg := &target{pid: p.Pid}
	start := time.Now()
	_, err := s.stop(tg, tid)
	if err == nil || !strings.Contains(err.Error(), "did not stop within") {
		t.Fatalf("stop of a vfork parent: %v, want a timeout", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the stop took %v, want it bounded by the 50ms timeout", d)
	}
	// The old tracer's thread is gone: the kernel has released the thread.
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, _ := os.ReadFile(taskPath(p.Pid, tid, "status"))
		if strings.Contains(string(b), "\nTracerPid:\t0\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d still traced after the stop was abandoned:\n%s", tid, b)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// When the vfork child exits, the thread goes on as if nothing happened.
	p.Expect(t, "vfork done", 5*time.Second)
	// And the new tracer works (with a bound a loaded machine meets: the
	// 50ms one is for the vfork parent above).
	s.opts.StopTimeout = 2 * time.Second
	st, err := s.stop(tg, p.Pid)
	if err != nil || st.Regs.Valid == 0 {
		t.Fatalf("stop with the new tracer: %v", err)
	}
}

// TestPidReusedMidAttach: when the pid names a process that started at
// another time than the one attached to (the target exited and its pid
// was reused), sampling stops and the target counts as exited; the new
// process's threads are not taken for the old one's.
func TestPidReusedMidAttach(t *testing.T) {
	patient.RequirePtrace(t)
	p := patient.Start(t, patient.Build(t, "sleeper.c", patient.O2g...))
	tg, err := openTarget(p.Pid)
	if err != nil {
		t.Fatal(err)
	}
	s := &sampler{opts: Options{StopTimeout: 100 * time.Millisecond, MaxDepth: 64}, tracer: newTracer()}
	defer func() { s.tracer.close() }()
	s.sampleTarget(tg, true)
	if tg.exited || len(tg.proc.Threads) != 2 {
		t.Fatalf("first sample: exited %v, %d threads", tg.exited, len(tg.proc.Threads))
	}
	tg.stat.StartT++ // as if the pid now named a process started later
	s.sampleTarget(tg, false)
	if !tg.exited {
		t.Fatal("a pid with another start time was sampled as the same process")
	}
	for _, th := range tg.proc.Threads {
		if len(th.Samples()) != 1 {
			t.Errorf("thread %d: %d samples, want only the one taken before the pid changed", th.Tid, len(th.Samples()))
		}
	}
}
