package attach

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/hangdoc/hangdoc/attach/procmem"
	"github.com/hangdoc/hangdoc/attach/unwind"
)

// tracer owns the one OS thread that issues every ptrace call: the kernel
// ties a tracee to the thread that seized it, not to the process.
//
// If a stop does not complete in time the tracee cannot be detached (the
// kernel only detaches a stopped tracee), so the tracer abandons its
// thread: a locked goroutine that returns without unlocking makes Go end
// the OS thread, and the kernel then detaches every tracee of that thread
// and clears the pending interrupt. The same kernel rule makes hangdoc
// harmless when it is killed: its tracees are released with it.
//
// The main thread is the exception: Go never ends it (a locked goroutine
// that returns there parks the thread forever), so its tracees would stay
// attached and stopped. A tracer that lands on the main thread keeps it
// occupied for good and moves to another thread.
type tracer struct {
	reqs chan func()
	quit chan struct{}
	tid  int // the tracer's OS thread, never the main thread
}

func newTracer() *tracer {
	t := &tracer{reqs: make(chan func()), quit: make(chan struct{})}
	ready := make(chan struct{})
	go t.loop(ready)
	<-ready
	return t
}

func (t *tracer) loop(ready chan struct{}) {
	runtime.LockOSThread()
	// Never UnlockOSThread: when loop returns, the thread dies with it.
	if unix.Gettid() == unix.Getpid() {
		go t.loop(ready)
		select {} // hold the main thread so that no tracer lands here again
	}
	t.tid = unix.Gettid()
	close(ready)
	for {
		select {
		case f := <-t.reqs:
			f()
		case <-t.quit:
			return
		}
	}
}

// do runs f on the tracer's thread and waits for it.
func (t *tracer) do(f func()) {
	done := make(chan struct{})
	t.reqs <- func() { f(); close(done) }
	<-done
}

// close ends the tracer's thread, releasing any tracee still attached.
func (t *tracer) close() { close(t.quit) }

// stopped is what a stop copies out of a thread before letting it go.
type stopped struct {
	Regs  unwind.Regs
	Stack []byte // memory from Regs' RSP - redZone upwards
	Base  uint64 // address of Stack[0]
	Held  time.Duration
}

// errStopTimeout says the thread did not reach its stop in time.
var errStopTimeout = errors.New("thread did not stop in time")

// redZone is the 128 bytes below RSP that a leaf function may use on
// x86-64 without moving RSP (arm64 has none; copying them is harmless).
const redZone = 128

// stopThread seizes tid, interrupts it, copies its registers and the
// top of its stack, and detaches. It never writes to the target and sets
// no ptrace options (no PTRACE_O_EXITKILL). stackBytes bounds the copy;
// stackEnd is the end of the mapping that holds the stack pointer.
//
// On a timeout the caller must replace the tracer (see tracer).
func (t *tracer) stopThread(pid, tid int, timeout time.Duration, stackEnd func(sp uint64) uint64, stackBytes int) (st stopped, err error) {
	t.do(func() { st, err = stopOnThisThread(pid, tid, timeout, stackEnd, stackBytes) })
	return st, err
}

func stopOnThisThread(pid, tid int, timeout time.Duration, stackEnd func(sp uint64) uint64, stackBytes int) (stopped, error) {
	var st stopped
	if err := unix.PtraceSeize(tid); err != nil {
		return st, fmt.Errorf("seize thread %d: %w", tid, err)
	}
	start := time.Now()
	if err := unix.PtraceInterrupt(tid); err != nil {
		detach(tid, 0)
		return st, fmt.Errorf("interrupt thread %d: %w", tid, err)
	}
	pending, err := waitStop(tid, timeout)
	if err != nil {
		return st, err // still attached, maybe stopping later: caller abandons the tracer
	}
	var regs unix.PtraceRegs
	err = unix.PtraceGetRegs(tid, &regs)
	if err == nil {
		st.Regs = regsFromPtrace(&regs)
		rsp := st.Regs.Val[hostArch.SP]
		sp := rsp - redZone
		n := stackBytes
		if end := stackEnd(rsp); end > sp && end-sp < uint64(n) {
			n = int(end - sp)
		}
		st.Base = sp
		st.Stack = make([]byte, n)
		k, _ := readMemory(pid, st.Stack, sp)
		st.Stack = st.Stack[:k]
	}
	derr := detach(tid, pending)
	st.Held = time.Since(start)
	if err != nil {
		return st, fmt.Errorf("registers of thread %d: %w", tid, err)
	}
	if derr != nil && !errors.Is(derr, unix.ESRCH) {
		return st, fmt.Errorf("detach thread %d: %w", tid, derr)
	}
	return st, nil
}

// waitStop waits for the stop of a seized, interrupted thread. The stop
// may be a signal-delivery stop instead of ours (a signal arrived first):
// its signal is returned so that detach delivers it, since detaching with
// signal 0 would swallow it.
func waitStop(tid int, timeout time.Duration) (pending unix.Signal, err error) {
	deadline := time.Now().Add(timeout)
	backoff := 5 * time.Microsecond
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(tid, &ws, unix.WNOHANG|unix.WALL, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 0, fmt.Errorf("wait for thread %d: %w", tid, err)
		case wpid == tid && (ws.Exited() || ws.Signaled()):
			return 0, fmt.Errorf("thread %d exited: %w", tid, unix.ESRCH)
		case wpid == tid && ws.Stopped():
			if uint32(ws)>>16 == 0 {
				return ws.StopSignal(), nil // signal-delivery stop
			}
			return 0, nil // PTRACE_EVENT_STOP: our interrupt, or a group stop
		}
		if time.Now().After(deadline) {
			return 0, errStopTimeout
		}
		// nanosleep on this (locked) thread: time.Sleep parks the
		// goroutine and costs about a millisecond of timer latency here,
		// which the stopped thread would pay.
		ts := unix.NsecToTimespec(backoff.Nanoseconds())
		unix.Nanosleep(&ts, nil)
		if backoff < time.Millisecond {
			backoff *= 2
		}
	}
}

// detach lets the thread go, delivering the signal it was stopped for.
func detach(tid int, sig unix.Signal) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(tid), 0, uintptr(sig), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// readMemory reads the target's memory (procmem: process_vm_readv).
func readMemory(pid int, p []byte, addr uint64) (int, error) { return procmem.Read(pid, p, addr) }

// liveMemory is the target's memory read on demand.
func liveMemory(pid int) procmem.Live { return procmem.Live(pid) }
